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
