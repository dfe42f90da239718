//! Every `#[target_feature(enable = ...)]` in the crate enables only features that
//! `Avx2::detect` checks: the run-time check that proves a token covers every feature a
//! function compiled for AVX2 may use.

use std::path::Path;
use wavetrace::wave::Avx2;

/// The feature lists of every `#[target_feature(enable = "...")]` under `dir`, with where
/// they stand.
fn enabled_features(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("the source tree") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            enabled_features(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if let Some(rest) = line.strip_prefix("#[target_feature(enable = \"") {
                    let list = rest.split('"').next().expect("a quoted list");
                    out.push((format!("{}:{}", path.display(), n + 1), list.to_string()));
                }
            }
        }
    }
}

#[test]
fn every_enabled_feature_is_one_the_detection_checks() {
    let mut found = Vec::new();
    enabled_features(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    // The AVX2 entry points and the kernels compiled for AVX2 are there.
    assert!(found.len() >= 3, "{found:?}");
    for (place, list) in &found {
        for feature in list.split(',') {
            assert!(
                Avx2::FEATURES.contains(&feature.trim()),
                "{place}: `{feature}` is enabled but not checked by Avx2::detect"
            );
        }
    }
    // The entry points enable every checked feature.
    assert!(
        found
            .iter()
            .any(|(_, list)| list.split(',').count() == Avx2::FEATURES.len()),
        "{found:?}"
    );
}
