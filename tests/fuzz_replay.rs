//! The fuzz corpora, replayed: every committed seed of every target (`fuzz/corpus/NAME/`),
//! and a bounded number of fresh deterministic mutations of them, through the same entry
//! points the fuzz targets call (`wavetrace::fuzzing`): no panic, no hang. Then the CLI on
//! a sample of them: a rejected input exits with code 2, never a crash.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use wavetrace::fuzzing::{target, TARGETS};

/// Fresh mutations per target (spread over its seeds).
const MUTATIONS_PER_TARGET: usize = 400;
/// The longest one input may take (a hang shows as far longer).
const MAX_INPUT_TIME: Duration = Duration::from_secs(10);

/// SplitMix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation of `seed`, as a fuzzer makes them: bit flips, interesting bytes and
/// numbers, insertions, deletions, duplicated runs, truncation, and splices with `other`.
fn mutate(seed: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut d = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = d.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                d[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                d[i] = [0, 0xFF, 0x7F, 0x80, b'-', b'9', b'\n', b'"'][rng.below(8)];
            }
            2 => {
                let i = rng.below(len + 1);
                let text: &[u8] = [
                    &b"4294967297"[..],
                    b"-1",
                    b"nan",
                    b"1e39",
                    b"\xFF\xFF\xFF\xFF",
                    b"0",
                ][rng.below(6)];
                d.splice(i..i, text.iter().copied());
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(16));
                d.drain(i..i + n);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let run: Vec<u8> = d[i..i + n].to_vec();
                d.splice(i..i, run);
            }
            5 => d.truncate(rng.below(len + 1)),
            6 if !other.is_empty() => {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                d.truncate(cut);
                d.extend_from_slice(&other[from..]);
            }
            _ if len >= 4 => {
                let i = rng.below(len - 3);
                let v = [0u32, 1, u32::MAX, 0x8000_0000, 0x7F80_0000, 0xFFFF][rng.below(6)];
                d[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => d.push(rng.next() as u8),
        }
    }
    d
}

fn corpus(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Runs `input` through the target `name`; a panic or an input that takes too long fails
/// the test, naming the target and (for a mutation) writing the input beside the target
/// directory's name for a regression seed.
fn run_one(name: &str, f: fn(&[u8]) -> bool, input: &[u8], what: &str) -> bool {
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| f(input)));
    let took = start.elapsed();
    let failed = |why: String| -> ! {
        let keep = std::env::temp_dir().join(format!("fuzz-replay-{name}.bin"));
        let _ = std::fs::write(&keep, input);
        panic!("{name}: {what}: {why} (input kept in {})", keep.display())
    };
    match result {
        Err(_) => failed("panicked".into()),
        Ok(_) if took > MAX_INPUT_TIME => failed(format!("took {took:?}")),
        Ok(accepted) => accepted,
    }
}

#[test]
fn every_corpus_seed_and_fresh_mutations_run_without_panic() {
    let mut rng = Rng(0x5EED);
    for (name, f) in TARGETS {
        let seeds = corpus(name);
        assert!(!seeds.is_empty(), "{name}: no seeds");
        let mut accepted = 0;
        for (path, bytes) in &seeds {
            if run_one(name, f, bytes, &path.display().to_string()) {
                accepted += 1;
            }
        }
        // The seeds are valid inputs (the bvh_image target's are arbitrary bytes).
        if name != "bvh_image" {
            assert_eq!(accepted, seeds.len(), "{name}: a seed is rejected");
        }
        let mut rejected = 0;
        for m in 0..MUTATIONS_PER_TARGET {
            let (_, seed) = &seeds[m % seeds.len()];
            let (_, other) = &seeds[rng.below(seeds.len())];
            let input = mutate(seed, other, &mut rng);
            if !run_one(name, f, &input, &format!("mutation {m}")) {
                rejected += 1;
            }
        }
        // The mutations reach the parsers' error paths, not only their happy paths.
        assert!(rejected > 0, "{name}: no mutation was rejected");
    }
}

#[test]
fn every_target_has_a_fuzz_target_file_and_a_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for (name, _) in TARGETS {
        let file = root.join("fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(&format!("wavetrace::fuzzing::{name}(data)")),
            "{name}"
        );
        assert!(manifest.contains(&format!("name = \"{name}\"")), "{name}");
        assert!(target(name).is_some());
    }
}

/// The command line of a CLI case, given its input file.
type CliArgs = fn(&Path) -> Vec<String>;

/// The CLI on seeds and mutations of the inputs it reads directly: exit 0 or 1 on what the
/// library accepts, 2 on what it rejects, and never a crash.
#[test]
fn the_cli_rejects_what_the_parsers_reject_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xC11);
    let cases: [(&str, &str, CliArgs); 4] = [
        ("obj", "obj", |p| {
            vec!["bvh".into(), p.display().to_string()]
        }),
        ("ply", "ply", |p| {
            vec!["bvh".into(), p.display().to_string()]
        }),
        ("isa_jsonl", "jsonl", |p| {
            vec!["isa".into(), "--check".into(), p.display().to_string()]
        }),
        ("tiling_json", "json", |p| {
            vec![
                "tiling".into(),
                "verify".into(),
                "--no-hash".into(),
                p.display().to_string(),
            ]
        }),
    ];
    for (name, extension, args) in cases {
        let f = target(name).unwrap();
        let seeds = corpus(name);
        for k in 0..12 {
            let (_, seed) = &seeds[k % seeds.len()];
            let input = if k < seeds.len() {
                seed.clone()
            } else {
                mutate(seed, seed, &mut rng)
            };
            let path = dir.path().join(format!("in{k}.{extension}"));
            std::fs::write(&path, &input).unwrap();
            let accepted = f(&input);
            let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
                .args(args(&path))
                .output()
                .unwrap();
            let code = out.status.code();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(code, Some(0..=2)),
                "{name} {k}: {code:?}\n{stderr}"
            );
            if !accepted {
                assert_eq!(code, Some(2), "{name} {k}: rejected, but\n{stderr}");
                assert!(stderr.contains("error"), "{name} {k}: {stderr}");
            }
        }
    }
}

/// Inputs that once crashed a parser (`fuzz/regressions/NAME/`): each is rejected cleanly.
#[test]
fn regressions_are_rejected_without_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut count = 0;
    for (name, f) in TARGETS {
        let dir = root.join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !run_one(name, f, &bytes, &path.display().to_string()),
                "{}: accepted",
                path.display()
            );
            count += 1;
        }
    }
    assert!(count >= 1, "no regression inputs in {}", root.display());
}
