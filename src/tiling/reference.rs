//! Runs a reference-vector file in the schema of `../shared/data/tiling/README.md`: every
//! surface and mip field, every texel sample and the exhaustive offset hash of each case, and
//! the refusal of every rejected combination.

use super::layout::{Layout, SurfaceDesc};
use super::mode::{BlockSize, Console, Dimension, Format, PipeXor, SwizzleMode};
use crate::{Error, Result};
use serde_json::Value;
use std::path::Path;

/// The outcome of one case: its id and the fields that did not match (empty = passed).
#[derive(Clone, Debug)]
pub struct CaseOutcome {
    pub id: String,
    pub failures: Vec<String>,
}

impl CaseOutcome {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// All outcomes of a file.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The console used for configuration-dependent modes (`None`: none known for the file).
    pub console: Option<Console>,
    pub cases: Vec<CaseOutcome>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed()).count()
    }
    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed()
    }
}

/// Reads and runs the file at `path`. `console` overrides the configuration named in the
/// file's `meta` (`anaconda_hyp` = Series X, `lockhart_hyp` = Series S).
///
/// `check_hashes` compares `all_texels_fnv1a64` too (see [`Layout::texel_hash`] on its basis).
pub fn verify_file(path: &Path, console: Option<Console>, check_hashes: bool) -> Result<Report> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    verify_str(&text, path, console, check_hashes)
}

/// Runs the reference vectors in `text` (read from `path`, used in messages).
///
/// A file that is not JSON, has no `cases` or an empty one, or has a malformed case (a
/// missing or mistyped field, an integer out of its field's range) is an error naming the
/// case and the field; a case that is well formed but does not match is a failure in the
/// report.
pub fn verify_str(
    text: &str,
    path: &Path,
    console: Option<Console>,
    check_hashes: bool,
) -> Result<Report> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| Error::parse(path, e.line(), format!("invalid JSON: {e}")))?;
    let cases = doc
        .get("cases")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::parse(path, 0, "no \"cases\" array"))?;
    if cases.is_empty() {
        return Err(Error::parse(
            path,
            0,
            "the \"cases\" array is empty: nothing to verify",
        ));
    }
    let console = console.or_else(|| doc.get("meta").and_then(console_of_meta));
    let mut report = Report {
        console,
        cases: Vec::with_capacity(cases.len()),
    };
    for (i, case) in cases.iter().enumerate() {
        let given_id = case.get("id").and_then(Value::as_str);
        let id = given_id
            .map(str::to_string)
            .unwrap_or_else(|| format!("case #{i}"));
        let mut failures = Vec::new();
        run_case(case, console, check_hashes, &mut failures).map_err(|e| {
            let case_name = match given_id {
                Some(given) => format!("case #{i} ({given:?})"),
                None => format!("case #{i}"),
            };
            Error::parse(path, 0, format!("{case_name}: {e}"))
        })?;
        report.cases.push(CaseOutcome { id, failures });
    }
    Ok(report)
}

fn console_of_meta(meta: &Value) -> Option<Console> {
    if let Some(p) = meta.get("config_params") {
        let pipes = p.get("num_pipes").and_then(Value::as_u64)?;
        let pkrs = p.get("num_pkrs").and_then(Value::as_u64)?;
        let pipes = u32::try_from(pipes).ok()?;
        let pkrs = u32::try_from(pkrs).ok()?;
        return Console::from_config(pipes, pkrs).ok();
    }
    let name = meta.get("config").and_then(Value::as_str)?;
    if name.starts_with("anaconda") {
        Some(Console::SeriesX)
    } else if name.starts_with("lockhart") {
        Some(Console::SeriesS)
    } else if name.starts_with("navi21") {
        Some(Console::Navi21)
    } else {
        None
    }
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value> {
    v.get(name)
        .ok_or_else(|| Error::field(name, "missing from the case"))
}

fn uint(v: &Value, name: &str) -> Result<u64> {
    field(v, name)?
        .as_u64()
        .ok_or_else(|| Error::field(name, "not a non-negative integer"))
}

fn u32_of(v: &Value, name: &str) -> Result<u32> {
    narrow_u32(uint(v, name)?, name)
}

/// `n` as a u32, or an error naming `name` when it does not fit.
fn narrow_u32(n: u64, name: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        Error::field(
            name,
            format!("{n} does not fit in 32 bits (0..={})", u32::MAX),
        )
    })
}

/// The optional integer field `name` (`default` when absent), range-checked as a u32.
fn optional_u32(v: &Value, name: &str, default: u32) -> Result<u32> {
    match v.get(name) {
        None => Ok(default),
        Some(_) => u32_of(v, name),
    }
}

fn compare<T: PartialEq + std::fmt::Debug>(
    failures: &mut Vec<String>,
    name: &str,
    expected: T,
    got: T,
) {
    if expected != got {
        failures.push(format!("{name}: expected {expected:?}, got {got:?}"));
    }
}

/// Runs one case: describes the surface, lays it out on the case's console, then compares
/// the surface and mip fields the case gives, its samples and (with `check_hashes`) the
/// exhaustive offset hash. A rejected case passes when the layout is refused; a case whose
/// addressing addrlib refuses passes when ours is refused too. Mismatches (a layout or hash
/// that wavetrace refuses included) go to `failures`; a malformed case is the `Err`.
fn run_case(
    case: &Value,
    console: Option<Console>,
    check_hashes: bool,
    failures: &mut Vec<String>,
) -> Result<()> {
    let desc = case_surface(case, failures)?;
    let rejected = case
        .get("rejected_by_addrlib")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let console = case_console(desc.mode, console, rejected)?;
    let layout = Layout::new(&desc, console);
    if rejected {
        if layout.is_ok() {
            failures.push(format!(
                "rejected_by_addrlib: addrlib refuses {} {} {}, wavetrace accepted it",
                desc.mode.name(),
                desc.dim.name(),
                desc.format.name
            ));
        }
        return Ok(());
    }
    let layout = match layout {
        Ok(layout) => layout,
        Err(e) => {
            failures.push(format!(
                "layout: addrlib accepts it, wavetrace refused: {e}"
            ));
            return Ok(());
        }
    };
    check_surface(case, &layout, failures)?;
    check_mips(case, &layout, failures)?;
    if case.get("samples_error").is_some() {
        if layout.can_address() {
            failures.push(
                "samples_error: addrlib refuses texel addressing here, wavetrace addressed it"
                    .into(),
            );
        }
        return Ok(());
    }
    check_samples(case, &layout, failures)?;
    if check_hashes {
        check_texel_hash(case, &layout, failures)?;
    }
    Ok(())
}

/// The surface a case describes; the case's own mode enumerant and format sizes, when given,
/// are compared on the way.
fn case_surface(case: &Value, failures: &mut Vec<String>) -> Result<SurfaceDesc> {
    let mode = case_mode(case, failures)?;
    let dim = case_dim(case)?;
    let format = case_format(case, failures)?;
    let depth_or_array = if dim == Dimension::D3 {
        u32_of(case, "depth")?
    } else {
        optional_u32(case, "array_size", 1)?
    };
    Ok(SurfaceDesc {
        format,
        dim,
        width: u32_of(case, "width")?,
        height: u32_of(case, "height")?,
        depth_or_array_size: depth_or_array,
        mip_levels: u32_of(case, "mip_levels")?,
        mode,
    })
}

/// The case's `swizzle` by name, checked against its `swizzle_enum` if present.
fn case_mode(case: &Value, failures: &mut Vec<String>) -> Result<SwizzleMode> {
    let mode_name = field(case, "swizzle")?
        .as_str()
        .ok_or_else(|| Error::field("swizzle", "not a string"))?;
    let mode = SwizzleMode::from_name(mode_name)?;
    if let Some(e) = case.get("swizzle_enum").and_then(Value::as_u64) {
        compare(failures, "swizzle_enum", e, mode.enumerant() as u64);
    }
    Ok(mode)
}

fn case_dim(case: &Value) -> Result<Dimension> {
    match field(case, "dim")?.as_str() {
        Some("1D") => Ok(Dimension::D1),
        Some("2D") => Ok(Dimension::D2),
        Some("3D") => Ok(Dimension::D3),
        other => Err(Error::field("dim", format!("unknown dimension {other:?}"))),
    }
}

/// The case's `format` by name, checked against its `bytes_per_element` and `element_block`
/// if present.
fn case_format(case: &Value, failures: &mut Vec<String>) -> Result<Format> {
    let format = Format::from_name(
        field(case, "format")?
            .as_str()
            .ok_or_else(|| Error::field("format", "not a string"))?,
    )?;
    if let Some(bpe) = case.get("bytes_per_element").and_then(Value::as_u64) {
        compare(
            failures,
            "bytes_per_element",
            bpe,
            format.bytes_per_element as u64,
        );
    }
    if let Some(b) = case.get("element_block").and_then(Value::as_u64) {
        compare(failures, "element_block", b, format.element_block as u64);
    }
    Ok(format)
}

/// The console to lay the case out on: the one given, else Series X when the mode does not
/// depend on the configuration (or the case is a rejection); an error otherwise.
fn case_console(mode: SwizzleMode, console: Option<Console>, rejected: bool) -> Result<Console> {
    let needs_config = mode.pipe_xor() != PipeXor::None || mode.block_size() == BlockSize::Var;
    match (needs_config, console) {
        (_, Some(c)) => Ok(c),
        (false, None) => Ok(Console::SeriesX),
        (true, None) if rejected => Ok(Console::SeriesX),
        (true, None) => Err(Error::field(
            "configuration",
            "the file names no known console configuration; pass --console",
        )),
    }
}

/// Compares the case's `surface` fields that it gives.
fn check_surface(case: &Value, layout: &Layout, failures: &mut Vec<String>) -> Result<()> {
    let s = field(case, "surface")?;
    let surf: [(&str, u64); 12] = [
        ("total_size", layout.total_size),
        ("slice_size", layout.slice_size),
        ("base_align", layout.base_align),
        ("pitch", layout.pitch as u64),
        ("padded_height", layout.padded_height as u64),
        ("padded_slices", layout.padded_slices as u64),
        ("block_w", layout.block_w as u64),
        ("block_h", layout.block_h as u64),
        ("block_d", layout.block_d as u64),
        ("first_mip_in_tail", layout.first_mip_in_tail as u64),
        ("standard_mip_count", layout.standard_mip_count() as u64),
        ("mip_tail_mip_count", layout.mip_tail_mip_count() as u64),
    ];
    for (name, got) in surf {
        if let Some(v) = s.get(name).and_then(Value::as_u64) {
            compare(failures, &format!("surface.{name}"), v, got);
        }
    }
    if let Some(v) = s.get("mip_chain_in_tail").and_then(Value::as_bool) {
        compare(
            failures,
            "surface.mip_chain_in_tail",
            v,
            layout.mip_chain_in_tail,
        );
    }
    Ok(())
}

/// Compares the number of levels, then the fields each of the case's `mips` gives.
fn check_mips(case: &Value, layout: &Layout, failures: &mut Vec<String>) -> Result<()> {
    let mips = field(case, "mips")?
        .as_array()
        .ok_or_else(|| Error::field("mips", "not an array"))?;
    compare(failures, "mips.len", mips.len(), layout.mips.len());
    for (i, (m, ours)) in mips.iter().zip(&layout.mips).enumerate() {
        let fields: [(&str, u64); 10] = [
            ("width_px", ours.width_px as u64),
            ("height_px", ours.height_px as u64),
            ("depth", ours.depth as u64),
            ("padded_w_el", ours.padded_w_el as u64),
            ("padded_h_el", ours.padded_h_el as u64),
            ("padded_d", ours.padded_d as u64),
            ("offset", ours.offset),
            ("macro_block_offset", ours.macro_block_offset),
            ("mip_tail_offset", ours.mip_tail_offset),
            ("slice_bytes", ours.slice_bytes.unwrap_or(u64::MAX)),
        ];
        for (name, got) in fields {
            match m.get(name) {
                Some(Value::Null) if name == "slice_bytes" => compare(
                    failures,
                    &format!("mips[{i}].slice_bytes"),
                    None,
                    ours.slice_bytes,
                ),
                Some(v) => {
                    if let Some(v) = v.as_u64() {
                        compare(failures, &format!("mips[{i}].{name}"), v, got);
                    }
                }
                None => {}
            }
        }
        if let Some(v) = m.get("in_tail").and_then(Value::as_bool) {
            compare(failures, &format!("mips[{i}].in_tail"), v, ours.in_tail);
        }
        if let Some(c) = m.get("mip_tail_coord").and_then(Value::as_array) {
            let c: Vec<u64> = c.iter().filter_map(Value::as_u64).collect();
            let o: Vec<u64> = ours.mip_tail_coord.iter().map(|&v| v as u64).collect();
            compare(failures, &format!("mips[{i}].mip_tail_coord"), c, o);
        }
    }
    Ok(())
}

/// Compares the offset of every `[mip, slice, x, y, offset]` sample of the case.
fn check_samples(case: &Value, layout: &Layout, failures: &mut Vec<String>) -> Result<()> {
    let Some(samples) = case.get("samples").and_then(Value::as_array) else {
        return Ok(());
    };
    for sample in samples {
        let v: Vec<u64> = sample
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        if v.len() != 5 {
            return Err(Error::field(
                "samples",
                format!("malformed sample {sample}"),
            ));
        }
        let coordinate = |i: usize, name: &str| narrow_u32(v[i], &format!("samples ({name})"));
        let (mip, sl) = (coordinate(0, "mip")?, coordinate(1, "slice")?);
        let (x, y) = (coordinate(2, "x")?, coordinate(3, "y")?);
        match layout.offset(mip, sl, x, y) {
            Ok(got) => compare(
                failures,
                &format!("samples[mip {mip}, slice {sl}, x {x}, y {y}]"),
                v[4],
                got,
            ),
            Err(e) => failures.push(format!("samples[mip {mip}, slice {sl}, x {x}, y {y}]: {e}")),
        }
    }
    Ok(())
}

/// Compares the case's `all_texels_fnv1a64` (and `texel_count`) with [`Layout::texel_hash`].
fn check_texel_hash(case: &Value, layout: &Layout, failures: &mut Vec<String>) -> Result<()> {
    let Some(hash) = case.get("all_texels_fnv1a64").and_then(Value::as_str) else {
        return Ok(());
    };
    let expected = u64::from_str_radix(hash, 16)
        .map_err(|_| Error::field("all_texels_fnv1a64", format!("not hex: {hash}")))?;
    let (got, count) = match layout.texel_hash() {
        Ok(hashed) => hashed,
        Err(e) => {
            failures.push(format!("all_texels_fnv1a64: wavetrace cannot hash: {e}"));
            return Ok(());
        }
    };
    if let Some(n) = case.get("texel_count").and_then(Value::as_u64) {
        compare(failures, "texel_count", n, count);
    }
    if expected != got {
        failures.push(format!(
            "all_texels_fnv1a64: expected {expected:016x}, got {got:016x}"
        ));
    }
    Ok(())
}
