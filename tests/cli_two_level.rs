//! `trace`, `bench`, `bvh` and `profile` on a two-level scene file, end to end: hits of
//! hand-placed rays whose answers follow from the scene's construction, the ray flags and
//! instance mask, their errors, the level report and the profile's TLAS axis.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wavetrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavetrace"))
}

/// A unit square in the plane y = 0, x and z in [0, 1]: triangle 0 is the half with
/// x > z, triangle 1 the half with z > x.
const SQUARE_OBJ: &str = "v 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nf 1 2 3\nf 1 3 4\n";

/// Instance 0: the square moved by +10 in x (mask 0x02). Instance 1: the square mirrored in
/// x, then moved by +20 in x (object (x, z) is world (20 - x, z); mask 0xFF). Instance 2: a
/// unit sphere at the origin scaled by 2 and moved to z = 30 (mask 0x04).
const SCENE: &str = r#"
[camera]
eye = [10.0, 40.0, 15.0]
look_at = [10.0, 0.0, 14.0]
vfov_deg = 60.0

[film]
width = 16
height = 16

[[blas]]
name = "square"
obj = "square.obj"

[[spheres]]
name = "ball"
spheres = [{ center = [0.0, 0.0, 0.0], radius = 1.0 }]

[[instance]]
blas = "square"
transform = [[1, 0, 0, 10], [0, 1, 0, 0], [0, 0, 1, 0]]
mask = 0x02

[[instance]]
blas = "square"
transform = [[-1, 0, 0, 20], [0, 1, 0, 0], [0, 0, 1, 0]]

[[instance]]
blas = "ball"
transform = [[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 30]]
mask = 0x04
"#;

const MISS: (f32, u32, u32) = (f32::INFINITY, u32::MAX, u32::MAX);

/// Rays straight down from y = 10 and what each hits by construction: (t, instance, prim).
fn rays_and_answers() -> Vec<([f32; 3], (f32, u32, u32))> {
    vec![
        // Instance 0 at object (0.7, 0.2): x > z, triangle 0.
        ([10.7, 10.0, 0.2], (10.0, 0, 0)),
        // Instance 0 at object (0.2, 0.7): triangle 1.
        ([10.2, 10.0, 0.7], (10.0, 0, 1)),
        // World x = 19.8 is object x = 0.2 of the mirrored instance 1 only (an unmirrored
        // square there would cover x 20..21): object (0.2, 0.5), triangle 1.
        ([19.8, 10.0, 0.5], (10.0, 1, 1)),
        // The top of the sphere of radius 2 at (0, 0, 30) is at y = 2.
        ([0.0, 10.0, 30.0], (8.0, 2, 0)),
        // Nothing below.
        ([5.0, 10.0, 5.0], MISS),
    ]
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    scene: PathBuf,
    rays: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::write(root.join("square.obj"), SQUARE_OBJ).unwrap();
    let scene = root.join("scene.toml");
    std::fs::write(&scene, SCENE).unwrap();
    let rays = root.join("down.rays");
    let bytes: Vec<u8> = rays_and_answers()
        .iter()
        .flat_map(|(o, _)| [o[0], o[1], o[2], 0.0, -1.0, 0.0, 0.0, 100.0])
        .flat_map(f32::to_le_bytes)
        .collect();
    std::fs::write(&rays, bytes).unwrap();
    Fixture {
        _dir: dir,
        root,
        scene,
        rays,
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run(args: &[&str]) -> Output {
    wavetrace().args(args).output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `trace` with extra arguments; the 12-byte records it wrote.
fn trace(f: &Fixture, extra: &[&str]) -> Vec<(f32, u32, u32)> {
    let hits = f.root.join("out.hits");
    let mut args = vec![
        "trace",
        path(&f.scene),
        "--rays",
        path(&f.rays),
        "--out",
        path(&hits),
        "--threads",
        "1",
    ];
    args.extend_from_slice(extra);
    ok(&run(&args));
    let bytes = std::fs::read(&hits).unwrap();
    assert_eq!(
        bytes.len(),
        12 * rays_and_answers().len(),
        "12 bytes per ray"
    );
    bytes
        .chunks_exact(12)
        .map(|r| {
            let word = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().unwrap());
            (f32::from_bits(word(0)), word(4), word(8))
        })
        .collect()
}

fn assert_hits(got: &[(f32, u32, u32)], want: &[(f32, u32, u32)]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!((g.1, g.2), (w.1, w.2), "ray {i}: {g:?} vs {w:?}");
        if w.0.is_finite() {
            assert!(
                (g.0 - w.0).abs() <= 1e-5 * w.0,
                "ray {i}: t {} vs {}",
                g.0,
                w.0
            );
        } else {
            assert_eq!(g.0, f32::INFINITY, "ray {i}");
        }
    }
}

fn answers() -> Vec<(f32, u32, u32)> {
    rays_and_answers().into_iter().map(|(_, a)| a).collect()
}

#[test]
fn trace_writes_instance_and_primitive_of_each_hit() {
    let f = fixture();
    assert_hits(&trace(&f, &[]), &answers());
    // Every schedule, wave width and strategy gives the same records.
    for extra in [
        &["--schedule", "by-lane"][..],
        &["--wave", "64"],
        &["--traversal", "walkback-3"],
        &["--traversal", "stackless-trail"],
    ] {
        assert_hits(&trace(&f, extra), &answers());
    }
}

#[test]
fn mask_and_ray_flags_select_what_is_traversed() {
    let f = fixture();
    // No instance shares a bit with mask 0.
    let all_miss = vec![MISS; answers().len()];
    assert_hits(&trace(&f, &["--mask", "0x00"]), &all_miss);
    // A ray mask keeps the instances whose mask shares a bit with it: instance 1 (0xFF)
    // always, instance 0 (0x02) and instance 2 (0x04) by their bit.
    let keep = |instances: &[u32]| -> Vec<(f32, u32, u32)> {
        answers()
            .into_iter()
            .map(|a| if instances.contains(&a.1) { a } else { MISS })
            .collect()
    };
    assert_hits(&trace(&f, &["--mask", "0x01"]), &keep(&[1]));
    assert_hits(&trace(&f, &["--mask", "2"]), &keep(&[0, 1]));
    assert_hits(&trace(&f, &["--mask", "0x04"]), &keep(&[1, 2]));
    assert_hits(&trace(&f, &["--mask", "255"]), &answers());
    // The sphere is the only procedural primitive; skip_triangles keeps only it.
    let mut no_sphere = answers();
    no_sphere[3] = MISS;
    assert_hits(
        &trace(&f, &["--ray-flags", "skip_procedural_primitives"]),
        &no_sphere,
    );
    assert_hits(&trace(&f, &["--ray-flags", "skip_triangles"]), &keep(&[2]));
}

#[test]
fn bad_flags_and_masks_are_errors_naming_the_option() {
    let f = fixture();
    let hits = f.root.join("bad.hits");
    for (extra, name) in [
        (
            ["--ray-flags", "force_opaque,force_non_opaque"],
            "--ray-flags",
        ),
        (["--ray-flags", "no_such_flag"], "--ray-flags"),
        (["--mask", "0x100"], "--mask"),
        (["--mask", "256"], "--mask"),
        (["--mask", "ff"], "--mask"),
    ] {
        let mut args = vec![
            "trace",
            path(&f.scene),
            "--rays",
            path(&f.rays),
            "--out",
            path(&hits),
        ];
        args.extend_from_slice(&extra);
        let out = run(&args);
        assert!(!out.status.success(), "{extra:?} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name), "{extra:?}: {err}");
        assert!(!hits.exists(), "{extra:?} wrote a hit file");
    }
}

#[test]
fn render_takes_flags_and_mask_and_names_them_in_errors() {
    let f = fixture();
    // A flat scene: the square as a [[mesh]] below the camera.
    let flat = f.root.join("flat.toml");
    let camera = &SCENE[..SCENE.find("[[blas]]").unwrap()];
    std::fs::write(&flat, format!("{camera}[[mesh]]\nobj = \"square.obj\"\n")).unwrap();
    let png = f.root.join("img.png");
    let render = |extra: &[&str]| {
        let mut args = vec!["render", path(&flat), "--out", path(&png)];
        args.extend_from_slice(&["--spp", "1", "--threads", "1"]);
        args.extend_from_slice(extra);
        run(&args)
    };
    ok(&render(&[
        "--ray-flags",
        "cull_back_facing_triangles",
        "--mask",
        "0x05",
    ]));
    assert!(png.exists());
    for (extra, name) in [
        (["--mask", "0x100"], "--mask"),
        (
            ["--ray-flags", "cull_opaque,cull_non_opaque"],
            "--ray-flags",
        ),
    ] {
        let out = render(&extra);
        assert!(!out.status.success(), "{extra:?} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name), "{extra:?}: {err}");
    }
}

#[test]
fn a_bad_scene_is_an_error_naming_the_file() {
    let f = fixture();
    let bad = f.root.join("bad.toml");
    std::fs::write(&bad, SCENE.replace("blas = \"ball\"", "blas = \"nope\"")).unwrap();
    let out = run(&[
        "trace",
        path(&bad),
        "--rays",
        path(&f.rays),
        "--out",
        path(&f.root.join("x.hits")),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("nope"), "{err}");
}

#[test]
fn stats_hold_the_shader_counters_and_the_table_splits_levels() {
    let f = fixture();
    let stats = f.root.join("stats.json");
    let hits = f.root.join("s.hits");
    let table = ok(&run(&[
        "trace",
        path(&f.scene),
        "--rays",
        path(&f.rays),
        "--out",
        path(&hits),
        "--stats",
        path(&stats),
    ]));
    for line in [
        "TLAS",
        "BLAS",
        "shader.instance_transitions",
        "shader.intersection_invocations",
    ] {
        assert!(table.contains(line), "missing {line}:\n{table}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let counters = &json["counters"];
    // Each of the four hits entered its instance.
    assert!(counters["shader.instance_transitions"].as_u64().unwrap() >= 4);
    // The sphere ray reached the sphere's procedural leaf.
    assert!(
        counters["shader.intersection_invocations"]
            .as_u64()
            .unwrap()
            >= 1
    );
    assert!(counters["tlas.box_queries"].as_u64().unwrap() >= 1);
    assert_eq!(json["instances"], 3);
    assert_eq!(json["blases"], 2);
    let levels = &json["report"]["levels"];
    let total = counters["td.clocks"].as_u64().unwrap();
    assert_eq!(
        levels["tlas_clocks"].as_u64().unwrap() + levels["blas_clocks"].as_u64().unwrap(),
        total
    );
}

#[test]
fn a_bare_mesh_keeps_its_report_and_8_byte_records() {
    let f = fixture();
    let hits = f.root.join("m.hits");
    let table = ok(&run(&[
        "trace",
        path(&f.root.join("square.obj")),
        "--rays",
        path(&f.rays),
        "--out",
        path(&hits),
    ]));
    assert!(!table.contains("TLAS"), "{table}");
    assert_eq!(std::fs::read(&hits).unwrap().len(), 8 * answers().len());
}

#[test]
fn bvh_reports_both_levels_and_validates() {
    let f = fixture();
    let text = ok(&run(&["bvh", path(&f.scene)]));
    for line in ["TLAS", "instances           3", "square", "ball", "spheres"] {
        assert!(text.contains(line), "missing {line}:\n{text}");
    }
    assert!(text.contains("validator           valid"), "{text}");
    let json = ok(&run(&["bvh", path(&f.scene), "--json", "--rebraid"]));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["tlas"]["instances"], 3);
    assert_eq!(v["blases"].as_array().unwrap().len(), 2);
    assert_eq!(v["blases"][0]["instances"], 2);
    assert_eq!(v["blases"][1]["kind"], "spheres");
}

#[test]
fn profile_lists_the_tlas_axis() {
    let f = fixture();
    let text = ok(&run(&[
        "profile",
        path(&f.scene),
        "--strategies",
        "full-stack,rebraid-on,rebraid-off,flattened",
        "--size",
        "16x16",
    ]));
    for name in ["rebraid-on", "rebraid-off", "flattened"] {
        assert!(text.contains(name), "missing {name}:\n{text}");
    }
    assert!(!text.contains("WRONG"), "{text}");
}

#[test]
fn bench_compares_instanced_and_flattened() {
    let f = fixture();
    let text = ok(&run(&[
        "bench",
        path(&f.scene),
        "--rays",
        path(&f.rays),
        "--repeat",
        "2",
        "--flatten",
    ]));
    assert!(
        text.contains("instanced") && text.contains("flattened"),
        "{text}"
    );
}
