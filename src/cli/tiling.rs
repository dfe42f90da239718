//! `wavetrace tiling`: layouts, swizzle/unswizzle, reference vectors.

use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use wavetrace::outfile::OutputSet;
use wavetrace::tiling::{
    reference, rgba8_mip_chain, Console, Dimension, Format, Layout, SurfaceDesc, SwizzleMode,
};
use wavetrace::{Error, Result};

#[derive(Args)]
pub struct TilingArgs {
    #[command(subcommand)]
    command: TilingCommand,
}

#[derive(Subcommand)]
enum TilingCommand {
    /// Print a surface layout: sizes, alignment, mip tail, per-mip padding and offsets.
    Layout(LayoutArgs),
    /// Linear image (PNG or raw) -> swizzled surface.
    #[command(after_help = RAW_HELP)]
    Swizzle(ConvertArgs),
    /// Swizzled surface -> linear image (PNG or raw).
    #[command(after_help = RAW_HELP)]
    Unswizzle(ConvertArgs),
    /// Run a reference-vector file (../shared/data/tiling/layouts/*.json schema); prints
    /// "N passed, M failed" and exits 1 on any failure.
    Verify(VerifyArgs),
}

const RAW_HELP: &str = "\
File formats:
  *.png     an RGBA8 image (format R8G8B8A8; size taken from the file). With --mips N > 1,
            swizzle builds the chain with a 2x2 box filter; unswizzle writes mip 0, slice 0.
  other     raw bytes. A swizzled surface is the resource image exactly as the GPU reads it
            (`layout` prints its total_size). A raw linear image is every subresource packed
            tightly, in this order:
              for mip in 0..mips:
                for slice in 0..n   (n = array size, or max(1, depth >> mip) for 3D)
                  for y in 0..ceil(max(1, height >> mip) / B):
                    for x in 0..ceil(max(1, width >> mip) / B):
                      one element (bytes per element of --format; B = 4 for BC formats, else 1)
            No headers, no row padding.";

#[derive(Args, Clone)]
struct SurfaceArgs {
    /// Element format: R8, R16, R32, R8G8B8A8, R32G32, R32G32B32A32, BC1..BC7, RAW<n>...
    #[arg(long)]
    format: Option<String>,
    /// Size in texels: WxH (2D), or W for a 1D texture.
    #[arg(long)]
    size: Option<String>,
    /// Array size (2D arrays; cube maps use 6n).
    #[arg(long, conflicts_with = "depth")]
    array: Option<u32>,
    /// Cube map (array): N cubes = 6N array slices.
    #[arg(long, conflicts_with_all = ["depth", "array"])]
    cube: Option<u32>,
    /// Depth: makes a 3D (volume) texture.
    #[arg(long)]
    depth: Option<u32>,
    /// Mip levels (default 1; 0 = the full chain).
    #[arg(long, default_value_t = 1)]
    mips: u32,
    /// Swizzle mode by AMD name (4KB_S, 64KB_R_X, LINEAR...) or enumerant.
    #[arg(long)]
    mode: String,
    /// Console configuration for _X, _T and VAR modes: series-x, series-s (or navi21, the PC
    /// reference configuration). `--console` is the same flag.
    #[arg(long = "target", visible_alias = "console", default_value = "series-x")]
    target: String,
}

#[derive(Args)]
struct LayoutArgs {
    #[command(flatten)]
    surface: SurfaceArgs,
    /// The layout as JSON.
    #[command(flatten)]
    json: super::flags::JsonArg,
}

#[derive(Args)]
struct ConvertArgs {
    /// Input file (PNG or raw).
    input: PathBuf,
    /// Output file (PNG or raw).
    #[arg(
        short = 'o',
        long = "out",
        value_name = "FILE",
        required_unless_present = "output"
    )]
    out: Option<PathBuf>,
    /// The output file as a second positional argument (the same as `-o`).
    #[arg(hide = true, conflicts_with = "out")]
    output: Option<PathBuf>,
    #[command(flatten)]
    surface: SurfaceArgs,
}

#[derive(Args)]
struct VerifyArgs {
    /// Reference-vector JSON file.
    file: PathBuf,
    /// Console configuration (default: the one the file's meta names). `--console` is the
    /// same flag.
    #[arg(long = "target", visible_alias = "console")]
    target: Option<String>,
    /// Skip the exhaustive all_texels_fnv1a64 comparison.
    #[arg(long)]
    no_hash: bool,
}

pub fn run(args: TilingArgs) -> Result<i32> {
    match args.command {
        TilingCommand::Layout(a) => layout(a),
        TilingCommand::Swizzle(a) => swizzle(a),
        TilingCommand::Unswizzle(a) => unswizzle(a),
        TilingCommand::Verify(a) => verify(a),
    }
}

fn parse_size(s: &str) -> Result<(u32, Option<u32>)> {
    let bad = || Error::field("--size", format!("'{s}' is not WxH or W"));
    let mut it = s.split(['x', 'X']);
    let w = it
        .next()
        .ok_or_else(bad)?
        .trim()
        .parse()
        .map_err(|_| bad())?;
    let h = match it.next() {
        Some(v) => Some(v.trim().parse().map_err(|_| bad())?),
        None => None,
    };
    if it.next().is_some() {
        return Err(bad());
    }
    Ok((w, h))
}

fn describe(a: &SurfaceArgs, png: Option<(u32, u32)>) -> Result<(SurfaceDesc, Console)> {
    let mode = SwizzleMode::from_name(&a.mode)?;
    let console = Console::from_name(&a.target).map_err(|e| retarget(e, "--target"))?;
    let format = match (&a.format, png) {
        (Some(f), _) => Format::from_name(f)?,
        (None, Some(_)) => Format::RGBA8,
        (None, None) => return Err(Error::field("--format", "required for raw files")),
    };
    let (w, h) = match (&a.size, png) {
        (Some(s), _) => parse_size(s)?,
        (None, Some((w, h))) => (w, Some(h)),
        (None, None) => return Err(Error::field("--size", "required for raw files")),
    };
    let array = match a.cube {
        Some(c) => c
            .checked_mul(6)
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::field("--cube", "must be 1 or more cubes"))?,
        None => a.array.unwrap_or(1),
    };
    let (dim, h, n) = match (h, a.depth) {
        (_, Some(d)) => (Dimension::D3, h.unwrap_or(1), d),
        (Some(h), None) => (Dimension::D2, h, array),
        (None, None) if a.cube.is_some() => {
            return Err(Error::field("--size", "a cube map needs WxH"))
        }
        (None, None) => (Dimension::D1, 1, array),
    };
    let depth = if dim == Dimension::D3 { n } else { 1 };
    let mips = if a.mips == 0 {
        SurfaceDesc::full_mip_count(w, h, depth)
    } else {
        a.mips
    };
    let desc = SurfaceDesc {
        format,
        dim,
        width: w,
        height: h,
        depth_or_array_size: n,
        mip_levels: mips,
        mode,
    };
    Ok((desc, console))
}

fn layout(a: LayoutArgs) -> Result<i32> {
    let (desc, console) = describe(&a.surface, None)?;
    let l = Layout::new(&desc, console)?;
    let mut outputs = OutputSet::new();
    let json_id = a.json.register(&mut outputs)?;
    print_layout_table(&l);
    if let Some(id) = json_id {
        outputs.write_bytes(id, format!("{}\n", layout_json(&l)).as_bytes())?;
    }
    outputs.commit()?;
    Ok(0)
}

/// `error` of a console name, its field renamed to the flag that gave it.
fn retarget(error: Error, flag: &str) -> Error {
    match error {
        Error::InvalidField { message, .. } => Error::field(flag, message),
        other => other,
    }
}

impl ConvertArgs {
    /// The output file: `-o/--out`, or the second positional argument.
    fn output(&self) -> Result<&Path> {
        (self.out.as_deref())
            .or(self.output.as_deref())
            .ok_or_else(|| Error::field("--out", "the output file is missing"))
    }
}

/// The table of `tiling layout`: the surface on three lines, one line per mip level, and a
/// note when texel addressing is refused.
fn print_layout_table(l: &Layout) {
    print_surface_summary(l);
    print_mip_rows(l);
    if !l.can_address() {
        say!("note: addrlib has no address equation for this mode and element size; texel addressing is refused");
    }
}

/// The description, then XG's surface sizes, then the block and padding.
fn print_surface_summary(l: &Layout) {
    let desc = &l.desc;
    say!(
        "{} {} {}x{}{} {} mips, {} ({}), console {}",
        desc.format.name,
        desc.dim.name(),
        desc.width,
        desc.height,
        match desc.dim {
            Dimension::D3 => format!("x{}", desc.depth_or_array_size),
            _ if desc.depth_or_array_size > 1 => format!(" array {}", desc.depth_or_array_size),
            _ => String::new(),
        },
        desc.mip_levels,
        desc.mode,
        desc.mode.enumerant(),
        l.console.name()
    );
    say!(
        "SizeBytes {}  BaseAlignmentBytes {}  SliceSizeBytes {}  StandardMipCount {}  MipTailMipCount {}",
        l.total_size,
        l.base_align,
        l.slice_size,
        l.standard_mip_count(),
        l.mip_tail_mip_count()
    );
    say!(
        "block {}x{}x{} elements ({} bytes)  pitch {}  padded height {}  padded slices {}  element {} B{}",
        l.block_w,
        l.block_h,
        l.block_d,
        1u64 << l.block_bytes_log2,
        l.pitch,
        l.padded_height,
        l.padded_slices,
        l.bytes_per_element,
        if l.element_block > 1 { " (4x4 texels)" } else { "" }
    );
}

/// A header, then per level: texels, padded elements, offset in the chain, XG sizes and the
/// tail placement.
fn print_mip_rows(l: &Layout) {
    say!(
        "{:>3} {:>11} {:>17} {:>10} {:>10} {:>10} {:>4} {:>9} {:>11}",
        "mip",
        "texels",
        "padded el w*h*d",
        "offset",
        "size",
        "slice2d",
        "tail",
        "tail_off",
        "tail_coord"
    );
    for (i, m) in l.mips.iter().enumerate() {
        let texels = if l.desc.dim == Dimension::D3 {
            format!("{}x{}x{}", m.width_px, m.height_px, m.depth)
        } else {
            format!("{}x{}", m.width_px, m.height_px)
        };
        say!(
            "{:>3} {:>11} {:>17} {:>10} {:>10} {:>10} {:>4} {:>9} {:>11}",
            i,
            texels,
            format!("{}x{}x{}", m.padded_w_el, m.padded_h_el, m.padded_d),
            m.macro_block_offset,
            l.mip_size_bytes(i as u32),
            m.slice_bytes.map_or("-".to_string(), |v| v.to_string()),
            if m.in_tail { "yes" } else { "no" },
            m.mip_tail_offset,
            format!(
                "{},{},{}",
                m.mip_tail_coord[0], m.mip_tail_coord[1], m.mip_tail_coord[2]
            )
        );
    }
}

fn layout_json(l: &Layout) -> String {
    let mips: Vec<serde_json::Value> = l
        .mips
        .iter()
        .enumerate()
        .map(|(i, m)| {
            serde_json::json!({
                "mip": i,
                "width_px": m.width_px, "height_px": m.height_px, "depth": m.depth,
                "padded_w_el": m.padded_w_el, "padded_h_el": m.padded_h_el, "padded_d": m.padded_d,
                "offset": m.offset, "macro_block_offset": m.macro_block_offset,
                "size_bytes": l.mip_size_bytes(i as u32), "slice_bytes": m.slice_bytes,
                "in_tail": m.in_tail, "mip_tail_offset": m.mip_tail_offset,
                "mip_tail_coord": m.mip_tail_coord,
            })
        })
        .collect();
    let d = &l.desc;
    let v = serde_json::json!({
        "swizzle": d.mode.name(), "swizzle_enum": d.mode.enumerant(), "dim": d.dim.name(),
        "format": d.format.name, "bytes_per_element": l.bytes_per_element,
        "element_block": l.element_block, "width": d.width, "height": d.height,
        "depth_or_array_size": d.depth_or_array_size, "mip_levels": d.mip_levels,
        "console": l.console.name(),
        "surface": {
            "total_size": l.total_size, "slice_size": l.slice_size, "base_align": l.base_align,
            "pitch": l.pitch, "padded_height": l.padded_height, "padded_slices": l.padded_slices,
            "block_w": l.block_w, "block_h": l.block_h, "block_d": l.block_d,
            "first_mip_in_tail": l.first_mip_in_tail, "mip_chain_in_tail": l.mip_chain_in_tail,
            "standard_mip_count": l.standard_mip_count(),
            "mip_tail_mip_count": l.mip_tail_mip_count(),
        },
        "mips": mips,
    });
    serde_json::to_string_pretty(&v).expect("JSON of plain values")
}

fn is_png(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("png"))
}

/// `tiling swizzle`: a PNG (RGBA8, its mip chain box-filtered) or a raw packed linear image
/// to a swizzled surface.
fn swizzle(a: ConvertArgs) -> Result<i32> {
    let mut outputs = OutputSet::new();
    let output = a.output()?.to_path_buf();
    let out = outputs.file("--out", &output)?;
    let png_in = is_png(&a.input);
    let (input, png_size) = if png_in {
        let img = image::open(&a.input)
            .map_err(|e| Error::parse(&a.input, 0, format!("cannot read PNG: {e}")))?
            .to_rgba8();
        let (w, h) = img.dimensions();
        (img.into_raw(), Some((w, h)))
    } else {
        let bytes = std::fs::read(&a.input).map_err(|e| Error::io(&a.input, e))?;
        (bytes, None)
    };
    let (desc, console) = describe(&a.surface, png_size)?;
    let l = Layout::new(&desc, console)?;
    let linear = if png_in {
        if desc.format.bytes_per_element != 4
            || desc.format.is_block_compressed()
            || desc.dim != Dimension::D2
            || desc.depth_or_array_size != 1
        {
            return Err(Error::field(
                "--format",
                "a PNG input is one 2D R8G8B8A8 image",
            ));
        }
        rgba8_mip_chain(desc.width, desc.height, &input, desc.mip_levels)
    } else {
        input
    };
    let tiled = l
        .swizzle(&linear)
        .map_err(|e| Error::field(a.input.display().to_string(), e.to_string()))?;
    super::interrupt::check(&outputs)?;
    outputs.write_bytes(out, &tiled)?;
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    say!(
        "{}: {} bytes linear -> {} bytes {} ({})",
        output.display(),
        linear.len(),
        tiled.len(),
        desc.mode,
        console.name()
    );
    Ok(0)
}

/// `tiling unswizzle`: a raw swizzled surface to the packed linear image, or to a PNG of mip
/// 0, slice 0.
fn unswizzle(a: ConvertArgs) -> Result<i32> {
    let mut outputs = OutputSet::new();
    let output = a.output()?.to_path_buf();
    let out = outputs.file("--out", &output)?;
    let input = std::fs::read(&a.input).map_err(|e| Error::io(&a.input, e))?;
    let (desc, console) = describe(&a.surface, None)?;
    let l = Layout::new(&desc, console)?;
    let linear = l
        .unswizzle(&input)
        .map_err(|e| Error::field(a.input.display().to_string(), e.to_string()))?;
    super::interrupt::check(&outputs)?;
    if is_png(&output) {
        outputs.write_bytes(out, &png_of_mip0(&l, &linear)?)?;
    } else {
        outputs.write_bytes(out, &linear)?;
    }
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    say!(
        "{}: {} bytes {} -> {} bytes linear",
        output.display(),
        input.len(),
        desc.mode,
        linear.len()
    );
    Ok(0)
}

/// Encodes mip 0, slice 0 of the packed linear image `linear` as a PNG; the format must be a
/// 4-byte uncompressed one (read as RGBA8).
fn png_of_mip0(l: &Layout, linear: &[u8]) -> Result<Vec<u8>> {
    let format = &l.desc.format;
    if format.bytes_per_element != 4 || format.is_block_compressed() {
        return Err(Error::field(
            "--format",
            "a PNG output needs a 4-byte RGBA8 format",
        ));
    }
    let (w, h, _) = l.linear_extent(0);
    let mip0 = linear[..(w * h * 4) as usize].to_vec();
    let img = image::RgbaImage::from_raw(w, h, mip0).expect("mip 0 size matches");
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| Error::Other(format!("PNG encoding failed: {e}")))?;
    Ok(png)
}

fn verify(a: VerifyArgs) -> Result<i32> {
    let console = (a.target.as_deref())
        .map(Console::from_name)
        .transpose()
        .map_err(|e| retarget(e, "--target"))?;
    let report = reference::verify_file(&a.file, console, !a.no_hash)?;
    for case in report.cases.iter().filter(|c| !c.passed()) {
        for f in &case.failures {
            say!("FAIL {}: {}", case.id, f);
        }
    }
    say!("{} passed, {} failed", report.passed(), report.failed());
    let hash_only = report
        .cases
        .iter()
        .filter(|c| {
            !c.passed()
                && c.failures
                    .iter()
                    .all(|f| f.starts_with("all_texels_fnv1a64"))
        })
        .count();
    if hash_only > 0 {
        say!(
            "note: {hash_only} of the failing cases differ only in all_texels_fnv1a64 (every \
             field and sample matches); --no-hash skips that comparison"
        );
    }
    Ok(if report.failed() == 0 { 0 } else { 1 })
}
