//! `wavetrace profile` end to end: table, CSV, JSON and heatmaps on a small generated mesh;
//! clear errors on bad input; the guard's tolerance.

mod cli_common;
use cli_common::{wavetrace, write_octahedron};
use wavetrace::math::Hit;
use wavetrace::profile::{self, agrees, ulp_distance, QueryKind};

#[test]
fn writes_table_csv_json_and_heatmaps() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = write_octahedron(dir.path()).to_str().unwrap().to_string();
    let csv = dir.path().join("p.csv");
    let json = dir.path().join("p.json");
    let heat = dir.path().join("heat");
    let (code, stdout, stderr) = wavetrace(&[
        "profile",
        &mesh,
        "--strategies",
        "full-stack,restart-1,stackless-trail,fp16,wave64",
        "--size",
        "40x30",
        "--target",
        "series-s",
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--heatmaps",
        heat.to_str().unwrap(),
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("1200 primary rays"), "{stdout}");
    assert!(stdout.contains("Series S"), "{stdout}");
    assert!(!stdout.contains("WRONG"), "{stdout}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[0], profile::COLUMNS.join(","));
    assert!(lines[1].starts_with("1,"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["rays"], 1200);
    assert_eq!(v["variants"].as_array().unwrap().len(), 5);
    // Ranked by modelled rays/s with the memory model (on by default), fastest first.
    let rates: Vec<f64> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["memory"]["modelled_rays_per_second"].as_f64().unwrap())
        .collect();
    assert!(rates.windows(2).all(|w| w[0] >= w[1]), "{rates:?}");
    for name in [
        "full-stack",
        "restart-1",
        "stackless-trail",
        "fp16",
        "wave64",
    ] {
        let img = image::open(heat.join(format!("{name}.png"))).unwrap();
        // The map plus the legend strip (colour bar, scale labels, the variant's name).
        assert_eq!((img.width(), img.height()), (40, 30 + 38), "{name}");
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = write_octahedron(dir.path()).to_str().unwrap().to_string();
    let (code, _, err) = wavetrace(&["profile", &mesh, "--size", "0x5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--size"), "{err}");
    let (code, _, err) = wavetrace(&["profile", &mesh, "--strategies", "full-stack,nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("nope"), "{err}");
    let (code, _, err) = wavetrace(&["profile", &mesh, "--target", "ps5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--target"), "{err}");
    let (code, _, err) = wavetrace(&["profile", &mesh, "--camera", "1,2,3"]);
    assert_eq!(code, 2);
    assert!(err.contains("--camera"), "{err}");
    let missing = dir.path().join("missing.obj");
    let (code, _, err) = wavetrace(&["profile", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.obj"), "{err}");
    // A ray file whose length is not a multiple of 32 bytes.
    let rays = dir.path().join("bad.rays");
    std::fs::write(&rays, [0u8; 40]).unwrap();
    let (code, _, err) = wavetrace(&["profile", &mesh, "--rays", rays.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.rays"), "{err}");
}

#[test]
fn guard_tolerance_rules() {
    // ULP distance by an independent route: stepping through representable values.
    let a = 1.5f32;
    let b = f32::from_bits(a.to_bits() + 3);
    assert_eq!(ulp_distance(a, b), 3);
    assert_eq!(ulp_distance(-0.0, 0.0), 0);
    assert_eq!(ulp_distance(-f32::from_bits(1), f32::from_bits(1)), 2);
    let r = Hit {
        t: 2.0,
        prim_id: 7,
        ..Hit::MISS
    };
    let next = f32::from_bits(2.0f32.to_bits() + 1);
    let next2 = f32::from_bits(2.0f32.to_bits() + 2);
    assert!(agrees(QueryKind::ClosestHit, &r, next, 7, true));
    assert!(!agrees(QueryKind::ClosestHit, &r, next2, 7, true));
    assert!(!agrees(QueryKind::ClosestHit, &r, 2.0, 8, true));
    assert!(!agrees(
        QueryKind::ClosestHit,
        &r,
        f32::INFINITY,
        u32::MAX,
        false
    ));
    assert!(agrees(
        QueryKind::ClosestHit,
        &Hit::MISS,
        f32::INFINITY,
        u32::MAX,
        false
    ));
    // Any hit: only the occluded flag counts.
    assert!(agrees(QueryKind::AnyHit, &r, 5.0, 9, true));
    assert!(!agrees(QueryKind::AnyHit, &Hit::MISS, 5.0, 9, true));
}
