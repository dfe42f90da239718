//! Every case of `../shared/data/tiling/layouts/*.json` (addrlib-generated reference vectors)
//! must match exactly, and every rejected combination must be refused.

use std::path::PathBuf;
use wavetrace::tiling::{reference, Console};

fn data(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/tiling/layouts"
    ))
    .join(name)
}

fn run(name: &str, console: Option<Console>, expected_cases: usize) {
    let report = reference::verify_file(&data(name), console, true).expect("reference file loads");
    let failed: Vec<String> = report
        .cases
        .iter()
        .filter(|c| !c.passed())
        .take(20)
        .map(|c| {
            format!(
                "{}: {}",
                c.id,
                c.failures
                    .iter()
                    .take(4)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n{}",
        report.failed(),
        report.cases.len(),
        failed.join("\n")
    );
    assert_eq!(report.cases.len(), expected_cases);
}

#[test]
fn nonxor_gfx103_all_cases_match() {
    run("nonxor_gfx103.json", None, 338);
}

#[test]
fn nonxor_gfx103_is_configuration_independent() {
    run("nonxor_gfx103.json", Some(Console::SeriesS), 338);
}

#[test]
fn xor_anaconda_all_cases_match() {
    run("xor_anaconda_hyp.json", None, 280);
}

#[test]
fn rejected_combinations_are_refused() {
    run("rejected_gfx10.json", None, 23);
}

#[test]
fn nonxor_gfx103_holds_for_the_navi21_configuration_too() {
    run("nonxor_gfx103.json", Some(Console::Navi21), 338);
}

/// Cases addrlib produced beyond the shipped vectors (`tests/data/tiling/README.md`): the XOR
/// modes for the Series S hypothesis and Navi 21, 3D surfaces of odd sizes with mips, and
/// refused combinations. Each file names its configuration; every field, sample and texel
/// hash must match.
#[test]
fn addrlib_cases_beyond_the_shipped_vectors_match() {
    use std::io::Read;
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiling"));
    for (name, expected_cases) in [
        ("xor_lockhart_hyp.json.gz", 280),
        ("xor_navi21.json.gz", 280),
        ("xor_shapes3d_navi21.json.gz", 350),
        ("nonxor_shapes3d.json.gz", 147),
        ("rejected_new.json.gz", 384),
    ] {
        let path = dir.join(name);
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("test data file"))
            .read_to_string(&mut text)
            .expect("gzip JSON");
        let report = reference::verify_str(&text, &path, None, true).expect("reference loads");
        let failed: Vec<String> = report
            .cases
            .iter()
            .filter(|c| !c.passed())
            .take(10)
            .map(|c| format!("{}: {}", c.id, c.failures.join("; ")))
            .collect();
        assert!(failed.is_empty(), "{name}: {}", failed.join("\n"));
        assert_eq!(report.cases.len(), expected_cases, "{name}");
        let console = report.console.map(|c| c.name());
        let named = if name.contains("lockhart") {
            "series-s"
        } else {
            "navi21"
        };
        assert_eq!(console, Some(named), "{name}: the file's configuration");
    }
}
