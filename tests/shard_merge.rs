//! Sharded jobs merged back. For N in {1, 2, 3, 7} the shards run as separate processes and
//! `wavetrace merge` gives the unsharded run's results: the same PNG bytes and stats for a
//! render, the same hit file and counters (per TD too) for a trace, the same rows for a
//! profile, timing fields aside. And the refusals: parts of two jobs, a missing, duplicated
//! or truncated part each exit 2, name the part and leave no output.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const COUNTS: [u32; 4] = [1, 2, 3, 7];

fn wavetrace() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wavetrace"));
    // Neither a scheduler's task index nor a terminal's progress bars leak into the runs.
    for var in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_MAX",
        "SLURM_ARRAY_TASK_STEP",
        "JOB_COMPLETION_INDEX",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `cmd` and asserts it exits 0.
fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run wavetrace");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Merges `parts` into `out`, with one more output: `(flag, path)`, `--json` or `--csv`.
fn merge(parts: &[PathBuf], out: &Path, (flag, path): (&str, &Path)) {
    ok(wavetrace()
        .arg("merge")
        .args(parts)
        .arg("-o")
        .arg(out)
        .arg(flag)
        .arg(path));
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn shared(name: &str) -> PathBuf {
    repo("../shared/data/scenes").join(name)
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read JSON")).expect("parse JSON")
}

/// `v` without its timing fields: every key named `seconds` or ending in `_seconds`, and
/// the host report (rates per host second).
fn without_timing(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| !(k == "seconds" || k.ends_with("_seconds") || k == "host"))
                .map(|(k, v)| (k, without_timing(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_timing).collect()),
        other => other,
    }
}

/// Runs shard `i` of `n` of a command (`args` then `--shard i/n -o PART`) for every `i`,
/// as separate processes; returns the parts, last shard first (merge takes any order).
fn run_shards(dir: &Path, name: &str, n: u32, ext: &str, args: &[&str]) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = (0..n)
        .map(|i| {
            let part = dir.join(format!("{name}-{i}-of-{n}.{ext}"));
            ok(wavetrace()
                .args(args)
                .args(["--shard", &format!("{i}/{n}"), "-o"])
                .arg(&part));
            part
        })
        .collect();
    parts.reverse();
    parts
}

#[test]
fn render_shards_merge_to_the_unsharded_image_and_stats() {
    let dir = tempfile::tempdir().unwrap();
    let scene = repo("scenes/cornell/cornell.toml");
    let scene = scene.to_str().unwrap();
    let common = ["render", scene, "--spp", "16", "--threads", "2"];
    let (whole_png, whole_json) = (dir.path().join("whole.png"), dir.path().join("whole.json"));
    // The merged stats carry no memory-model figures (shards do not run it).
    ok(wavetrace()
        .args(common)
        .args(["--memory", "off", "-o"])
        .arg(&whole_png)
        .arg("--json")
        .arg(&whole_json));
    let whole_stats = without_timing(json(&whole_json));
    for n in COUNTS {
        let parts = run_shards(dir.path(), "render", n, "exr", &common);
        let (png, stats) = (
            dir.path().join(format!("merged-{n}.png")),
            dir.path().join(format!("merged-{n}.json")),
        );
        merge(&parts, &png, ("--json", &stats));
        assert!(
            std::fs::read(&png).unwrap() == std::fs::read(&whole_png).unwrap(),
            "{n} shards: the merged PNG differs from the unsharded render"
        );
        assert_eq!(without_timing(json(&stats)), whole_stats, "{n} shards");
    }
}

#[test]
fn render_parts_are_exr_images_and_merge_to_the_same_exr() {
    let dir = tempfile::tempdir().unwrap();
    let scene = repo("scenes/cornell/cornell.toml");
    let common = [
        "render",
        scene.to_str().unwrap(),
        "--spp",
        "4",
        "--size",
        "80x48",
    ];
    let whole = dir.path().join("whole.exr");
    ok(wavetrace().args(common).arg("-o").arg(&whole));
    let parts = run_shards(dir.path(), "small", 3, "exr", &common);
    // A part is an ordinary EXR: the shard's tiles rendered, the rest black, the job and
    // shard in its header.
    let (image, attributes) = wavetrace::render::read_exr(&parts[0]).unwrap();
    let (whole_image, _) = wavetrace::render::read_exr(&whole).unwrap();
    let rendered = (image.pixels.iter().zip(&whole_image.pixels))
        .filter(|(p, w)| **p == **w && **p != glam::Vec3::ZERO)
        .count();
    let black = image
        .pixels
        .iter()
        .filter(|p| **p == glam::Vec3::ZERO)
        .count();
    assert!(rendered > 0 && black > 0 && rendered + black == image.pixels.len());
    let shard = attributes.iter().find(|(k, _)| k == "wavetrace.shard");
    assert_eq!(shard.map(|(_, v)| v.as_str()), Some("2/3"));
    let merged = dir.path().join("merged.exr");
    ok(wavetrace().arg("merge").args(&parts).arg("-o").arg(&merged));
    assert!(std::fs::read(&merged).unwrap() == std::fs::read(&whole).unwrap());
}

#[test]
fn trace_shards_merge_to_the_unsharded_hits_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = shared("sponza.obj.gz");
    let rays = shared("sponza_diffuse.rays");
    for wave in ["32", "64"] {
        let common = [
            "trace",
            mesh.to_str().unwrap(),
            "--rays",
            rays.to_str().unwrap(),
            "--wave",
            wave,
            "--memory",
            "off",
            "--threads",
            "2",
        ];
        let (whole_hits, whole_json) = (
            dir.path().join(format!("whole-{wave}.hits")),
            dir.path().join(format!("whole-{wave}.json")),
        );
        ok(wavetrace()
            .args(common)
            .arg("-o")
            .arg(&whole_hits)
            .arg("--json")
            .arg(&whole_json));
        let whole_stats = without_timing(json(&whole_json));
        let per_td = &whole_stats["counters"]["per_td"]["series_x"];
        assert_eq!(per_td.as_array().map(Vec::len), Some(52));
        for n in COUNTS {
            let parts = run_shards(dir.path(), &format!("trace{wave}"), n, "wtpart", &common);
            let (hits, stats) = (
                dir.path().join(format!("merged-{wave}-{n}.hits")),
                dir.path().join(format!("merged-{wave}-{n}.json")),
            );
            merge(&parts, &hits, ("--json", &stats));
            assert!(
                std::fs::read(&hits).unwrap() == std::fs::read(&whole_hits).unwrap(),
                "wave{wave}, {n} shards: merged hits differ"
            );
            assert_eq!(
                without_timing(json(&stats)),
                whole_stats,
                "wave{wave}, {n} shards"
            );
        }
    }
}

/// The CSV without the column `drop`.
fn csv_without(text: &str, drop: &str) -> Vec<String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = header.iter().position(|h| *h == drop).expect("column");
    std::iter::once(text.lines().next().unwrap_or(""))
        .chain(lines)
        .map(|line| {
            let mut cells: Vec<&str> = line.split(',').collect();
            cells.remove(col);
            cells.join(",")
        })
        .collect()
}

#[test]
fn profile_shards_merge_to_the_unsharded_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = shared("bunny.obj.gz");
    let common = [
        "profile",
        mesh.to_str().unwrap(),
        "--strategies",
        "all",
        "--threads",
        "2",
    ];
    let (whole_json, whole_csv) = (dir.path().join("whole.json"), dir.path().join("whole.csv"));
    ok(wavetrace()
        .args(common)
        .arg("--json")
        .arg(&whole_json)
        .arg("--csv")
        .arg(&whole_csv));
    let whole = without_timing(json(&whole_json));
    assert!(whole["variants"].as_array().unwrap().len() >= 25);
    let whole_csv = csv_without(
        &std::fs::read_to_string(&whole_csv).unwrap(),
        "host_seconds",
    );
    for n in COUNTS {
        let parts = run_shards(dir.path(), "profile", n, "wtpart", &common);
        let (report, csv) = (
            dir.path().join(format!("merged-{n}.json")),
            dir.path().join(format!("merged-{n}.csv")),
        );
        merge(&parts, &report, ("--csv", &csv));
        assert_eq!(without_timing(json(&report)), whole, "{n} shards");
        let merged_csv = csv_without(&std::fs::read_to_string(&csv).unwrap(), "host_seconds");
        assert_eq!(merged_csv, whole_csv, "{n} shards");
    }
}

/// Runs a merge expected to be refused: exit 2, stderr naming `culprit`, no output left
/// (neither the file nor a temporary beside it).
fn refused(dir: &Path, parts: &[&Path], out: &str, culprit: &str) {
    let out_path = dir.join(out);
    let run = wavetrace()
        .arg("merge")
        .args(parts)
        .arg("-o")
        .arg(&out_path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(culprit), "`{culprit}` not named: {stderr}");
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(out) || name.contains("partial"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn merge_refuses_foreign_missing_duplicate_and_truncated_parts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scene = repo("scenes/cornell/cornell.toml");
    let small = |spp: &'static str| {
        [
            "render",
            scene.to_str().unwrap(),
            "--spp",
            spp,
            "--size",
            "64x64",
        ]
        .map(str::to_string)
    };
    let a = run_shards(d, "a", 3, "exr", &small("2").each_ref().map(String::as_str));
    let b = run_shards(d, "b", 3, "exr", &small("3").each_ref().map(String::as_str));
    // Parts are listed last shard first: a[2] is shard 0.
    let (a0, a1, a2) = (&a[2], &a[1], &a[0]);
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    // Another job's shard 1 in place of this job's.
    refused(d, &[a0, &b[1], a2], "out.png", &name(&b[1]));
    refused(d, &[a0, a2], "out.png", "shard 1/3");
    refused(d, &[a0, a1, a1, a2], "out.png", &name(a1));
    let truncated = d.join("truncated.exr");
    let bytes = std::fs::read(a1).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).unwrap();
    refused(d, &[a0, &truncated, a2], "out.png", "truncated.exr");

    // A trace part cut short, and one altered in place.
    let mesh = shared("bunny.obj.gz");
    let rays = shared("bunny_primary.rays");
    let trace = [
        "trace",
        mesh.to_str().unwrap(),
        "--rays",
        rays.to_str().unwrap(),
        "--memory",
        "off",
    ];
    let t = run_shards(d, "t", 2, "wtpart", &trace);
    let bytes = std::fs::read(&t[0]).unwrap();
    let cut = d.join("cut.wtpart");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    refused(d, &[&t[1], &cut], "out.hits", "cut.wtpart");
    let mut altered = bytes.clone();
    let at = altered.len() - 200;
    altered[at] ^= 0x40;
    let bad = d.join("altered.wtpart");
    std::fs::write(&bad, &altered).unwrap();
    refused(d, &[&t[1], &bad], "out.hits", "altered.wtpart");
    // Parts of two kinds.
    refused(d, &[a0, &t[0]], "out.png", &name(&t[0]));
}

#[test]
fn shard_auto_reads_slurm_and_kubernetes_indices() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scene = repo("scenes/cornell/cornell.toml");
    let common = [
        "render",
        scene.to_str().unwrap(),
        "--spp",
        "2",
        "--size",
        "48x32",
    ];
    let whole = d.join("whole.png");
    ok(wavetrace().args(common).arg("-o").arg(&whole));
    // Shard 0 of 2 as a Slurm array task numbered from 1, shard 1 as an Indexed Job's pod.
    let slurm = d.join("slurm.exr");
    ok(wavetrace()
        .args(common)
        .args(["--shard", "auto", "-o"])
        .arg(&slurm)
        .env("SLURM_ARRAY_TASK_ID", "1")
        .env("SLURM_ARRAY_TASK_MIN", "1")
        .env("SLURM_ARRAY_TASK_MAX", "2"));
    let k8s = d.join("k8s.exr");
    ok(wavetrace()
        .args(common)
        .args(["--shard", "auto", "--shard-count", "2", "-o"])
        .arg(&k8s)
        .env("JOB_COMPLETION_INDEX", "1"));
    let merged = d.join("merged.png");
    ok(wavetrace()
        .args(["merge"])
        .arg(&slurm)
        .arg(&k8s)
        .arg("-o")
        .arg(&merged));
    assert!(std::fs::read(&merged).unwrap() == std::fs::read(&whole).unwrap());

    // Without a task index, or with a shard out of range: exit 2, nothing written.
    for (args, env, says) in [
        (vec!["--shard", "auto"], None, "SLURM_ARRAY_TASK_ID"),
        (vec!["--shard", "2/2"], None, "--shard"),
        (
            vec!["--shard", "auto"],
            Some(("JOB_COMPLETION_INDEX", "0")),
            "--shard-count",
        ),
        (vec!["--shard", "0/2", "--json", "s.json"], None, "--json"),
    ] {
        let part = d.join("refused.exr");
        let mut cmd = wavetrace();
        cmd.args(common).args(&args).arg("-o").arg(&part);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let run = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!part.exists());
    }
}
