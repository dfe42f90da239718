//! `wavetrace isa`: runs instruction test vectors (JSON Lines) through the reference
//! `image_bvh_intersect_ray` and writes each object back with a `"got"` field.
//!
//! Per line: `{"desc": 32 hex digits (dword0 first, each dword MSB first), "node_ptr": 8 hex
//! digits (16 for a 64-bit pointer), "node": hex bytes of the node, "extent": hex f32 bits,
//! "origin"/"dir"/"inv_dir": [3 hex f32 bits], "expect": optional [4 hex u32], ...}`; other
//! fields are passed through. Format: `../shared/data/isa/README.md`.
//!
//! Every line is parsed before any vector runs: a malformed line is an error naming the
//! file, the line and the field (exit code 2), and no output is written.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;
use wavetrace::hw::{
    image_bvh64_intersect_ray, BvhDescriptor, MappedMemory, NodePointer64, NodeType, RayRegisters,
};
use wavetrace::outfile::write_atomic;
use wavetrace::{Error, Result};

#[derive(clap::Args)]
pub struct IsaArgs {
    /// JSON Lines file of vectors; `-` or nothing reads standard input.
    pub input: Option<PathBuf>,
    /// Compare with each vector's "expect", print `N passed, M failed`, exit 1 on a failure.
    /// A malformed line (bad JSON, a missing or bad field) is exit 2 before anything runs.
    #[arg(long)]
    pub check: bool,
    /// Write the vectors with "got" to this file (default: standard output, unless --check).
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
}

/// One parsed vector.
struct Vector {
    descriptor: BvhDescriptor,
    node_pointer: u64,
    node: Vec<u8>,
    ray: RayRegisters,
    expect: Option<[u32; 4]>,
}

/// A well-formed line of the input: its number, text, object and vector.
struct Line {
    number: usize,
    text: String,
    object: serde_json::Map<String, Value>,
    vector: Vector,
}

/// Counts of a run.
#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    unchecked: usize,
}

/// Malformed lines named on stderr before the run is refused; the rest are counted.
const MAX_MALFORMED_SHOWN: usize = 10;

pub fn run(args: IsaArgs) -> Result<i32> {
    let (name, reader): (PathBuf, Box<dyn Read>) = match &args.input {
        None => ("<stdin>".into(), Box::new(io::stdin())),
        Some(p) if p.as_os_str() == "-" => ("<stdin>".into(), Box::new(io::stdin())),
        Some(p) => (
            p.clone(),
            Box::new(File::open(p).map_err(|e| Error::io(p, e))?),
        ),
    };
    // Every line is checked before any is run: malformed input writes nothing.
    let lines = read_lines(&name, reader)?;

    // Output: the given file (whole or not at all), else stdout unless checking.
    let tally = match &args.out {
        Some(path) => {
            let mut tally = Tally::default();
            write_atomic(path, |w| {
                tally = run_vectors(&name, &lines, Some((w, path)), args.check)?;
                Ok(())
            })?;
            tally
        }
        None if !args.check => {
            let mut stdout = BufWriter::new(io::stdout().lock());
            let tally = run_vectors(
                &name,
                &lines,
                Some((&mut stdout, Path::new("<stdout>"))),
                false,
            )?;
            stdout.flush().map_err(|e| Error::io("<stdout>", e))?;
            tally
        }
        None => run_vectors(&name, &lines, None, true)?,
    };

    if args.check {
        let mut summary = format!("{} passed, {} failed", tally.passed, tally.failed);
        if tally.unchecked > 0 {
            summary += &format!(", {} without expect", tally.unchecked);
        }
        println!("{summary}");
        return Ok(i32::from(tally.failed > 0));
    }
    Ok(0)
}

/// Reads and parses every line of `reader` (named `name` in messages); blank lines are
/// skipped. A line that is not text is the error at once. Malformed lines are all
/// collected: one is the error itself (`name:line: field ...`); with several, the first
/// [`MAX_MALFORMED_SHOWN`] are printed to stderr and the error counts them.
fn read_lines(name: &Path, reader: Box<dyn Read>) -> Result<Vec<Line>> {
    let mut lines = Vec::new();
    let mut malformed = Vec::new();
    for (index, text) in BufReader::new(reader).lines().enumerate() {
        let number = index + 1;
        let text = text.map_err(|e| match e.kind() {
            // Not text: name the line, as for any other malformed input.
            io::ErrorKind::InvalidData => Error::parse(name, number, e.to_string()),
            _ => Error::io(name, e),
        })?;
        if text.trim().is_empty() {
            continue;
        }
        match parse_line(&text) {
            Ok((object, vector)) => lines.push(Line {
                number,
                text,
                object,
                vector,
            }),
            Err(message) => malformed.push(Error::parse(name, number, message)),
        }
    }
    if malformed.len() == 1 {
        return Err(malformed.remove(0));
    }
    if let Some(first) = malformed.first() {
        for e in malformed.iter().take(MAX_MALFORMED_SHOWN) {
            eprintln!("error: {e}");
        }
        let line = match first {
            Error::Parse { line, .. } => *line,
            _ => 0,
        };
        return Err(Error::parse(
            name,
            line,
            format!(
                "{} malformed vector lines (the first {} above); nothing was run",
                malformed.len(),
                malformed.len().min(MAX_MALFORMED_SHOWN)
            ),
        ));
    }
    Ok(lines)
}

/// Runs every vector of `lines` (read from `name`), writes each object with its `"got"`
/// to `out` (a writer and its name for messages) and, with `check`, prints each mismatch
/// to stderr.
fn run_vectors(
    name: &Path,
    lines: &[Line],
    mut out: Option<(&mut dyn Write, &Path)>,
    check: bool,
) -> Result<Tally> {
    let mut tally = Tally::default();
    for line in lines {
        let vector = &line.vector;
        let memory = MappedMemory {
            va: NodePointer64::from_u64(vector.node_pointer)
                .fetch_address(vector.descriptor.base_address_256),
            bytes: &vector.node,
        };
        let got = image_bvh64_intersect_ray(
            &memory,
            &vector.descriptor,
            vector.node_pointer,
            &vector.ray,
        )
        .dwords;
        match vector.expect {
            None => tally.unchecked += 1,
            Some(expect) if expect == got => tally.passed += 1,
            Some(expect) => {
                tally.failed += 1;
                if check {
                    let cat = line
                        .object
                        .get("cat")
                        .and_then(Value::as_str)
                        .unwrap_or("?");
                    eprintln!(
                        "FAIL {}:{} (cat {cat}): expected {}, got {}",
                        name.display(),
                        line.number,
                        hex_words(&expect),
                        hex_words(&got)
                    );
                }
            }
        }
        if let Some((w, out_name)) = out.as_mut() {
            let emitted = with_got(&line.text, line.object.clone(), &got);
            writeln!(w, "{emitted}").map_err(|e| Error::io(*out_name, e))?;
        }
    }
    Ok(tally)
}

fn hex_words(words: &[u32; 4]) -> String {
    let parts: Vec<String> = words.iter().map(|w| format!("{w:08x}")).collect();
    format!("[{}]", parts.join(", "))
}

/// The input line with `"got"` added as the last field (the input text is kept as it was
/// when it is a plain object without "got"; otherwise the object is re-serialised).
fn with_got(line: &str, mut object: serde_json::Map<String, Value>, got: &[u32; 4]) -> String {
    let got_json: Vec<String> = got.iter().map(|w| format!("\"{w:08x}\"")).collect();
    let got_json = format!("[{}]", got_json.join(","));
    let trimmed = line.trim_end();
    if !object.contains_key("got") {
        if let Some(body) = trimmed.strip_suffix('}') {
            let body = body.trim_end();
            let sep = if body.trim_start() == "{" { "" } else { "," };
            return format!("{body}{sep}\"got\":{got_json}}}");
        }
    }
    let got_value = got.iter().map(|w| Value::String(format!("{w:08x}")));
    object.insert("got".into(), Value::Array(got_value.collect()));
    Value::Object(object).to_string()
}

/// Parses one line; the error names the field that is wrong.
fn parse_line(line: &str) -> std::result::Result<(serde_json::Map<String, Value>, Vector), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("bad JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".into());
    };
    let vector = parse_vector(&object)?;
    Ok((object, vector))
}

fn parse_vector(o: &serde_json::Map<String, Value>) -> std::result::Result<Vector, String> {
    let desc_hex = string_field(o, "desc")?;
    if desc_hex.len() != 32 {
        return Err(format!(
            "field \"desc\": {} hex digits, need 32",
            desc_hex.len()
        ));
    }
    let mut dwords = [0u32; 4];
    for (i, d) in dwords.iter_mut().enumerate() {
        *d = hex_u32(&desc_hex[8 * i..8 * i + 8]).map_err(|e| format!("field \"desc\": {e}"))?;
    }
    let descriptor =
        BvhDescriptor::from_dwords(dwords).map_err(|e| format!("field \"desc\": {e}"))?;

    let ptr_hex = string_field(o, "node_ptr")?;
    let node_pointer = match ptr_hex.len() {
        8 => hex_u32(ptr_hex).map(u64::from),
        16 => u64::from_str_radix(ptr_hex, 16).map_err(|_| format!("{ptr_hex:?} is not hex")),
        n => Err(format!(
            "{n} hex digits, need 8 (or 16 for a 64-bit pointer)"
        )),
    }
    .map_err(|e| format!("field \"node_ptr\": {e}"))?;

    let node_hex = string_field(o, "node")?;
    let node = hex_bytes(node_hex).map_err(|e| format!("field \"node\": {e}"))?;
    let ty = NodePointer64::from_u64(node_pointer).node_type();
    let need = ty.fetch_bytes();
    let size_ok = match ty {
        NodeType::User6 | NodeType::User7 => node.len() == 64 || node.len() == 128,
        _ => node.len() == need,
    };
    if !size_ok {
        return Err(format!(
            "field \"node\": {} bytes, a {} node has {need}",
            node.len(),
            ty.name()
        ));
    }

    let ray = RayRegisters {
        extent: f32::from_bits(
            hex_u32(string_field(o, "extent")?).map_err(|e| format!("field \"extent\": {e}"))?,
        ),
        origin: hex_array::<3>(o, "origin")?.map(f32::from_bits),
        dir: hex_array::<3>(o, "dir")?.map(f32::from_bits),
        inv_dir: hex_array::<3>(o, "inv_dir")?.map(f32::from_bits),
    };
    let expect = match o.get("expect") {
        None | Some(Value::Null) => None,
        Some(_) => Some(hex_array::<4>(o, "expect")?),
    };
    Ok(Vector {
        descriptor,
        node_pointer,
        node,
        ray,
        expect,
    })
}

fn string_field<'a>(
    o: &'a serde_json::Map<String, Value>,
    field: &str,
) -> std::result::Result<&'a str, String> {
    match o.get(field) {
        None => Err(format!("field \"{field}\" is missing")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("field \"{field}\" must be a hex string")),
    }
}

fn hex_array<const N: usize>(
    o: &serde_json::Map<String, Value>,
    field: &str,
) -> std::result::Result<[u32; N], String> {
    let items = match o.get(field) {
        None => return Err(format!("field \"{field}\" is missing")),
        Some(Value::Array(items)) if items.len() == N => items,
        Some(_) => {
            return Err(format!(
                "field \"{field}\" must be an array of {N} hex strings"
            ))
        }
    };
    let mut out = [0u32; N];
    for (i, (slot, item)) in out.iter_mut().zip(items).enumerate() {
        let s = item
            .as_str()
            .ok_or_else(|| format!("field \"{field}\"[{i}] must be a hex string"))?;
        *slot = hex_u32(s).map_err(|e| format!("field \"{field}\"[{i}]: {e}"))?;
    }
    Ok(out)
}

/// Exactly 8 hex digits.
fn hex_u32(s: &str) -> std::result::Result<u32, String> {
    if s.len() != 8 {
        return Err(format!("{s:?} has {} hex digits, need 8", s.len()));
    }
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{s:?} is not hex"));
    }
    u32::from_str_radix(s, 16).map_err(|_| format!("{s:?} is not hex"))
}

fn hex_bytes(s: &str) -> std::result::Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", s.len()));
    }
    s.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |b: u8| (b as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(h), Some(l)) => Ok((h * 16 + l) as u8),
                _ => Err("not hex".to_string()),
            }
        })
        .collect()
}
