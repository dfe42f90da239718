//! The memory model end to end: its fetch trace replayed through an independent cache
//! simulator written here gives the access and hit counts it reports; FP16 boxes move fewer
//! DRAM bytes than FP32 on every shared scene; the model's figures do not depend on the
//! thread count; machine files round-trip and bad ones are refused by field.

use std::path::{Path, PathBuf};
use std::process::Command;
use wavetrace::memory::Machine;

const SCENES: &str = "../shared/data/scenes";

fn wavetrace(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args(args)
        .output()
        .expect("wavetrace runs")
}

fn run_ok(args: &[&str]) -> String {
    let out = wavetrace(args);
    assert!(
        out.status.success(),
        "wavetrace {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn scene(name: &str) -> String {
    format!("{SCENES}/{name}")
}

fn memory_of(stats: &Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(stats).unwrap()).expect("stats JSON");
    v["report"]["memory"].clone()
}

/// A cache as the model's rules describe it, written plainly: per set a list of lines,
/// most recently used first; a hit moves its line to the front, a miss puts it at the front
/// and drops the last one when the set is full.
struct NaiveCache {
    line: u64,
    ways: usize,
    sets: Vec<Vec<u64>>,
}

impl NaiveCache {
    fn new(size: u64, line: u64, ways: usize) -> NaiveCache {
        let sets = (size / line) as usize / ways;
        NaiveCache {
            line,
            ways,
            sets: vec![Vec::new(); sets],
        }
    }

    fn touch(&mut self, line: u64) -> bool {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(line % n) as usize];
        if let Some(k) = set.iter().position(|&l| l == line) {
            set.remove(k);
            set.insert(0, line);
            true
        } else {
            set.insert(0, line);
            set.truncate(self.ways);
            false
        }
    }
}

/// Accesses and hits per level `[L0, L1, L2]` of a fetch trace replayed on `machine`.
fn replay(trace: &[u8], machine: &Machine) -> [(u64, u64); 3] {
    let level = |l: &wavetrace::memory::machine::CacheLevel| {
        NaiveCache::new(l.size_bytes, l.line_bytes as u64, l.ways as usize)
    };
    let mut l0: Vec<NaiveCache> = (0..machine.compute_units)
        .map(|_| level(&machine.l0))
        .collect();
    let mut l1: Vec<NaiveCache> = (0..machine.shader_arrays)
        .map(|_| level(&machine.l1))
        .collect();
    let mut l2 = level(&machine.l2);
    let mut counts = [(0u64, 0u64); 3];
    assert_eq!(trace.len() % 16, 0, "16-byte records");
    for record in trace.chunks_exact(16) {
        let address = u64::from_le_bytes(record[0..8].try_into().unwrap());
        let bytes = u32::from_le_bytes(record[8..12].try_into().unwrap()) as u64;
        let cu = u16::from_le_bytes(record[12..14].try_into().unwrap()) as usize;
        assert_eq!(&record[14..16], &[0, 0], "reserved field");
        assert!(bytes == 64 || bytes == 128, "node size {bytes}");
        assert!(cu < machine.compute_units as usize);
        let array = cu / machine.cus_per_array as usize;
        let first = address / l0[cu].line;
        let last = (address + bytes - 1) / l0[cu].line;
        for line in first..=last {
            counts[0].0 += 1;
            if l0[cu].touch(line) {
                counts[0].1 += 1;
                continue;
            }
            counts[1].0 += 1;
            if l1[array].touch(line) {
                counts[1].1 += 1;
                continue;
            }
            counts[2].0 += 1;
            if l2.touch(line) {
                counts[2].1 += 1;
            }
        }
    }
    counts
}

/// The replayed accesses and hits of each level equal the report `m`'s.
fn assert_reported(m: &serde_json::Value, counts: &[(u64, u64); 3], what: &str) {
    for (k, name) in ["l0", "l1", "l2"].iter().enumerate() {
        let reported = (
            m[format!("{name}_accesses")].as_u64().unwrap(),
            m[format!("{name}_hits")].as_u64().unwrap(),
        );
        assert_eq!(counts[k], reported, "{what}: {name} accesses and hits");
    }
}

#[test]
fn the_fetch_trace_replays_to_the_reported_hits_on_the_shared_scenes() {
    let dir = tempfile::tempdir().unwrap();
    let machine = Machine::built_in("series-x").unwrap();
    for (mesh, rays) in [
        ("bunny.obj.gz", "bunny_primary.rays"),
        ("bunny.obj.gz", "bunny_diffuse.rays"),
        ("sponza.obj.gz", "sponza_primary.rays"),
        ("sponza.obj.gz", "sponza_diffuse.rays"),
    ] {
        for wave in ["32", "64"] {
            let trace = dir.path().join("fetches.bin");
            let stats = dir.path().join("stats.json");
            let hits = dir.path().join("hits.bin");
            run_ok(&[
                "trace",
                &scene(mesh),
                "--rays",
                &scene(rays),
                "--out",
                hits.to_str().unwrap(),
                "--wave",
                wave,
                "--stats",
                stats.to_str().unwrap(),
                "--fetch-trace",
                trace.to_str().unwrap(),
            ]);
            let m = memory_of(&stats);
            let bytes = std::fs::read(&trace).unwrap();
            assert_eq!(
                bytes.len() as u64 / 16,
                m["fetches"].as_u64().unwrap(),
                "{rays} wave{wave}: one record per fetch"
            );
            let counts = replay(&bytes, &machine);
            assert_reported(&m, &counts, &format!("{rays} wave{wave}"));
            // Every L2 miss reads one line from DRAM.
            assert_eq!(
                (counts[2].0 - counts[2].1) * machine.l2.line_bytes as u64,
                m["dram_bytes"].as_u64().unwrap()
            );
        }
    }
}

/// Writes `kind` rays of `input` with `wavetrace rays` (a small camera, to keep the test
/// short).
fn make_rays(input: &str, kind: &str, out: &Path) {
    run_ok(&[
        "rays",
        input,
        "--kind",
        kind,
        "--size",
        "128x128",
        "-o",
        out.to_str().unwrap(),
    ]);
}

#[test]
fn fp16_boxes_move_fewer_dram_bytes_per_ray_than_fp32_on_every_shared_scene() {
    let dir = tempfile::tempdir().unwrap();
    for mesh in ["bunny.obj.gz", "sponza.obj.gz", "dragon.obj.gz"] {
        for kind in ["primary", "diffuse"] {
            let rays = dir.path().join("rays.bin");
            make_rays(&scene(mesh), kind, &rays);
            let mut dram = Vec::new();
            for format in ["fp16", "fp32"] {
                let stats = dir.path().join(format!("{format}.json"));
                run_ok(&[
                    "trace",
                    &scene(mesh),
                    "--rays",
                    rays.to_str().unwrap(),
                    "--out",
                    dir.path().join("hits.bin").to_str().unwrap(),
                    "--box",
                    format,
                    "--stats",
                    stats.to_str().unwrap(),
                ]);
                dram.push(memory_of(&stats)["dram_bytes_per_ray"].as_f64().unwrap());
            }
            assert!(
                dram[0] < dram[1],
                "{mesh} {kind}: fp16 {} DRAM bytes/ray, fp32 {}",
                dram[0],
                dram[1]
            );
        }
    }
}

#[test]
fn the_model_does_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut reports = Vec::new();
    for threads in ["1", "2"] {
        let stats = dir.path().join(format!("{threads}.json"));
        run_ok(&[
            "trace",
            &scene("sponza.obj.gz"),
            "--rays",
            &scene("sponza_diffuse.rays"),
            "--out",
            dir.path().join("hits.bin").to_str().unwrap(),
            "--threads",
            threads,
            "--stats",
            stats.to_str().unwrap(),
        ]);
        reports.push(memory_of(&stats));
    }
    assert!(reports[0]["l0_accesses"].as_u64().unwrap() > 0);
    assert_eq!(reports[0], reports[1]);
}

#[test]
fn a_machine_file_round_trips_and_a_bad_field_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("x.toml");
    run_ok(&["machine", "series-x", "-o", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        Machine::from_toml(&text).unwrap(),
        Machine::built_in("series-x").unwrap()
    );
    // A doubled L2 on the same rays: at least as many L2 hits.
    let big = dir.path().join("big.toml");
    std::fs::write(
        &big,
        text.replace("size_bytes = 5242880", "size_bytes = 10485760"),
    )
    .unwrap();
    let mut l2_hits = Vec::new();
    for machine in [file.to_str().unwrap(), big.to_str().unwrap()] {
        let stats = dir.path().join("s.json");
        run_ok(&[
            "trace",
            &scene("bunny.obj.gz"),
            "--rays",
            &scene("bunny_diffuse.rays"),
            "--out",
            dir.path().join("hits.bin").to_str().unwrap(),
            "--machine",
            machine,
            "--stats",
            stats.to_str().unwrap(),
        ]);
        l2_hits.push(memory_of(&stats)["l2_hits"].as_u64().unwrap());
    }
    assert!(l2_hits[1] >= l2_hits[0], "{l2_hits:?}");
    // A bad field: exit 2, the file and the field named, no output left.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, text.replace("ways = 16", "ways = 0")).unwrap();
    let hits = dir.path().join("never.bin");
    let out = wavetrace(&[
        "trace",
        &scene("bunny.obj.gz"),
        "--rays",
        &scene("bunny_primary.rays"),
        "--out",
        hits.to_str().unwrap(),
        "--machine",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("ways"), "{err}");
    assert!(!hits.exists());
}

#[test]
fn a_two_level_scene_replays_too_with_its_instance_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let machine = Machine::built_in("series-s").unwrap();
    let rays = dir.path().join("rays.bin");
    make_rays("scenes/grove/grove.toml", "primary", &rays);
    let trace = dir.path().join("fetches.bin");
    let stats = dir.path().join("stats.json");
    run_ok(&[
        "trace",
        "scenes/grove/grove.toml",
        "--rays",
        rays.to_str().unwrap(),
        "--out",
        dir.path().join("hits.bin").to_str().unwrap(),
        "--target",
        "series-s",
        "--stats",
        stats.to_str().unwrap(),
        "--fetch-trace",
        trace.to_str().unwrap(),
    ]);
    let m = memory_of(&stats);
    assert_eq!(m["machine"], "Series S");
    let bytes = std::fs::read(&trace).unwrap();
    // Instance nodes are 128-byte fetches the shader makes.
    assert!(bytes
        .chunks_exact(16)
        .any(|r| u32::from_le_bytes(r[8..12].try_into().unwrap()) == 128));
    let counts = replay(&bytes, &machine);
    assert_reported(&m, &counts, "grove");
}
