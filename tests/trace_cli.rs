//! `wavetrace trace` and `wavetrace peak` end to end.

use std::process::Command;

fn wavetrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavetrace"))
}

fn ray_bytes(rays: &[[f32; 8]]) -> Vec<u8> {
    rays.iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

const QUAD: &str = "v -1 -1 5\nv 1 -1 5\nv 1 1 5\nv -1 1 5\nf 1 2 3\nf 1 3 4\n";

#[test]
fn traces_a_ray_file_and_writes_hits_and_stats() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = dir.path().join("quad.obj");
    std::fs::write(&mesh, QUAD).unwrap();
    let rays = dir.path().join("r.rays");
    std::fs::write(
        &rays,
        ray_bytes(&[
            [0.5, -0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 100.0],
            [-0.5, 0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 100.0],
            [3.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 100.0],
            [0.5, -0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 4.0],
        ]),
    )
    .unwrap();
    let hits = dir.path().join("h.hits");
    let stats = dir.path().join("s.json");
    for wave in ["32", "64"] {
        let out = wavetrace()
            .args([
                "trace",
                mesh.to_str().unwrap(),
                "--rays",
                rays.to_str().unwrap(),
            ])
            .args([
                "--out",
                hits.to_str().unwrap(),
                "--wave",
                wave,
                "--threads",
                "2",
            ])
            .args(["--target", "series-s", "--stats", stats.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(
            table.contains("Series X") && table.contains("56 TDs"),
            "{table}"
        );
        let h = std::fs::read(&hits).unwrap();
        assert_eq!(h.len(), 32);
        let rec = |i: usize| {
            (
                f32::from_le_bytes(h[8 * i..8 * i + 4].try_into().unwrap()),
                u32::from_le_bytes(h[8 * i + 4..8 * i + 8].try_into().unwrap()),
            )
        };
        assert_eq!(rec(0), (5.0, 0));
        assert_eq!(rec(1), (5.0, 1));
        assert_eq!(rec(2), (f32::INFINITY, u32::MAX));
        assert_eq!(rec(3), (f32::INFINITY, u32::MAX));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(json["rays"], 4);
        assert!(json["build_seconds"].as_f64().unwrap() >= 0.0);
        assert!(json["trace_seconds"].as_f64().unwrap() >= 0.0);
        assert_eq!(json["counters"]["rays"], 4);
        assert!(json["counters"]["td.clocks"].as_u64().unwrap() >= 4);
        assert_eq!(json["report"]["wave_lanes"], wave.parse::<u64>().unwrap());
    }
    // No temporary files left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.contains("tmp")), "{names:?}");
}

#[test]
fn a_ray_file_of_the_wrong_size_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = dir.path().join("quad.obj");
    std::fs::write(&mesh, QUAD).unwrap();
    let rays = dir.path().join("bad.rays");
    std::fs::write(&rays, vec![0u8; 40]).unwrap();
    let out = wavetrace()
        .args([
            "trace",
            mesh.to_str().unwrap(),
            "--rays",
            rays.to_str().unwrap(),
        ])
        .args(["--out", dir.path().join("h").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.rays") && err.contains("40") && err.contains("32"),
        "{err}"
    );
    assert!(!dir.path().join("h").exists());
}

#[test]
fn peak_prints_the_tables_and_the_host_rate() {
    let out = wavetrace()
        .args(["peak", "--json", "--millis", "20"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["consoles"][0]["tds"], 20);
    assert_eq!(
        json["consoles"][1]["peak_box_tests_per_second"],
        1825e6 * 52.0 * 4.0
    );
    assert!(json["host"]["box_tests_per_second"].as_f64().unwrap() > 0.0);
    assert!(json["td_count_note"].as_str().unwrap().contains("56"));
    let out = wavetrace()
        .args(["peak", "--millis", "20"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("379.6") && text.contains("31.26") && text.contains("56 TDs"));
}

/// A temporary folder holding the quad mesh and a ray file of `rays`: (folder, mesh path,
/// ray file path).
fn quad_and_rays(rays: &[[f32; 8]]) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mesh = dir.path().join("quad.obj");
    std::fs::write(&mesh, QUAD).unwrap();
    let file = dir.path().join("r.rays");
    std::fs::write(&file, ray_bytes(rays)).unwrap();
    let path = |p: std::path::PathBuf| p.to_str().unwrap().to_string();
    (dir, path(mesh), path(file))
}

/// Runs `wavetrace ARGS`, which must succeed; returns its standard output.
fn run_ok(args: &[&str]) -> String {
    let out = wavetrace().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `wavetrace bench`: both builds and both schedules side by side (builds where the CPU has
/// AVX2), the same TD clocks per ray as `trace` reports, the JSON rows; and clear errors for
/// bad arguments.
#[test]
fn bench_compares_builds_and_reports_clocks() {
    // 100 rays through the quad (each hits one of its two triangles) and 100 past it.
    let set: Vec<[f32; 8]> = (0..200)
        .map(|i| {
            let x = if i < 100 {
                -0.9 + 0.018 * i as f32
            } else {
                3.0
            };
            [x, 0.3, 0.0, 0.0, 0.0, 1.0, 0.0, 100.0]
        })
        .collect();
    let (dir, mesh, rays) = quad_and_rays(&set);
    let json = dir.path().join("b.json");
    let table = run_ok(&[
        "bench",
        &mesh,
        "--rays",
        &rays,
        "--repeat",
        "3",
        "--simd",
        "portable",
        "auto",
        "--schedule",
        "lockstep",
        "by-lane",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        table.contains("identical in every repetition, build and schedule"),
        "{table}"
    );
    let v = read_json(&json);
    let rows = v["rows"].as_array().unwrap();
    // `auto` resolves to the AVX2 build where the CPU has it, else to `portable` (listed once).
    let builds: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["simd"].as_str().unwrap(), r["schedule"].as_str().unwrap()))
        .collect();
    let portable = [("portable", "lockstep"), ("portable", "by-lane")];
    let avx2 = [("avx2", "lockstep"), ("avx2", "by-lane")];
    assert!(
        builds == portable || builds == [portable, avx2].concat(),
        "{builds:?}"
    );
    // The same clocks as `trace --stats` on the same rays.
    let stats = dir.path().join("s.json");
    let hits = dir.path().join("h.hits");
    let (hits, stats_path) = (hits.to_str().unwrap(), stats.to_str().unwrap());
    run_ok(&[
        "trace", &mesh, "--rays", &rays, "--out", hits, "--stats", stats_path,
    ]);
    let clocks = read_json(&stats)["counters"]["td.clocks"].as_f64().unwrap();
    assert!(clocks > 200.0, "every ray takes at least its root query");
    for r in rows {
        assert_eq!(r["rays"], 200);
        assert_eq!(r["td_clocks_per_ray"].as_f64().unwrap(), clocks / 200.0);
        assert_eq!(r["seconds"].as_array().unwrap().len(), 3);
        assert!(
            r["best_rays_per_second"].as_f64().unwrap()
                >= r["median_rays_per_second"].as_f64().unwrap()
        );
    }
    // Bad arguments.
    for (arg, value) in [("--repeat", "0"), ("--wave", "48")] {
        let out = wavetrace()
            .args(["bench", &mesh, "--rays", &rays, arg, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(arg));
    }
}

/// `trace --simd portable` gives the same hit file as the default build.
#[test]
fn trace_simd_builds_write_the_same_hits() {
    let set: Vec<[f32; 8]> = (0..64)
        .map(|i| [-1.2 + 0.04 * i as f32, 0.5, 0.0, 0.01, 0.0, 1.0, 0.0, 100.0])
        .collect();
    let (dir, mesh, rays) = quad_and_rays(&set);
    let mut files = Vec::new();
    for simd in ["portable", "auto"] {
        let hits = dir.path().join(format!("{simd}.hits"));
        let out = hits.to_str().unwrap();
        run_ok(&[
            "trace", &mesh, "--rays", &rays, "--out", out, "--simd", simd,
        ]);
        files.push(std::fs::read(&hits).unwrap());
    }
    assert_eq!(files[0].len(), 64 * 8);
    assert_eq!(files[0], files[1]);
    // Some rays hit, some miss.
    let ids: Vec<u32> = files[0]
        .chunks(8)
        .map(|r| u32::from_le_bytes(r[4..8].try_into().unwrap()))
        .collect();
    assert!(ids.contains(&u32::MAX) && ids.iter().any(|&i| i != u32::MAX));
}

/// `trace --traversal NAME` runs the strategy `profile` names so: on the bunny's camera rays
/// each strategy gives the TD clocks per ray that `profile` measures for it. `profile` runs
/// the stream schedule and `trace` the lockstep one, so this is two computations of the same
/// counts; the strategies differ (a short stack restarts and re-tests nodes), so a strategy
/// ignored by `trace` would not match. The hits are the same for every strategy.
#[test]
fn trace_strategies_give_the_clocks_profile_measures() {
    let scenes = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/scenes");
    let mesh = format!("{scenes}/bunny.obj.gz");
    let rays = format!("{scenes}/bunny_primary.rays");
    let dir = tempfile::tempdir().unwrap();
    let strategies = ["full-stack", "restart-3", "walkback-3", "stackless-trail"];
    let json = dir.path().join("profile.json");
    run_ok(&[
        "profile",
        &mesh,
        "--rays",
        &rays,
        "--strategies",
        &strategies.join(","),
        "--json",
        json.to_str().unwrap(),
    ]);
    let profile = read_json(&json);
    let variants = profile["variants"].as_array().unwrap();
    let ray_count = profile["rays"].as_f64().unwrap();
    let mut clocks_seen = Vec::new();
    let mut first_hits: Option<Vec<u8>> = None;
    for name in strategies {
        let variant = variants
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("profile reports {name}"));
        assert_eq!(variant["wrong_rays"], 0, "{name}");
        let stats = dir.path().join(format!("{name}.json"));
        let hits = dir.path().join(format!("{name}.hits"));
        run_ok(&[
            "trace",
            &mesh,
            "--rays",
            &rays,
            "--traversal",
            name,
            "--out",
            hits.to_str().unwrap(),
            "--stats",
            stats.to_str().unwrap(),
        ]);
        let clocks = read_json(&stats)["counters"]["td.clocks"].as_f64().unwrap();
        let per_ray = variant["td_clocks_per_ray"].as_f64().unwrap();
        assert!(
            (clocks / ray_count - per_ray).abs() <= 1e-9 * per_ray,
            "{name}: trace {} clocks per ray, profile {per_ray}",
            clocks / ray_count
        );
        clocks_seen.push(clocks);
        let bytes = std::fs::read(&hits).unwrap();
        match &first_hits {
            None => first_hits = Some(bytes),
            Some(first) => assert!(*first == bytes, "{name}: other hits than full-stack"),
        }
    }
    // The strategies cost differently (so each was really run).
    clocks_seen.sort_by(f64::total_cmp);
    clocks_seen.dedup();
    assert_eq!(clocks_seen.len(), strategies.len(), "{clocks_seen:?}");
}
