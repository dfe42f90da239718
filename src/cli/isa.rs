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
use wavetrace::outfile::write_atomic;
use wavetrace::vectors::{parse_line, Vector};
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
        let got = vector.run();
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
