//! Commands with several outputs write all of them or none: every output path is checked
//! before any work, and a failing output leaves none of the others (nor any temporary file)
//! behind.

use std::path::{Path, PathBuf};

mod cli_common;
use cli_common::wavetrace;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The Cornell box scene at 24x20 pixels, written into `dir`.
fn small_scene(dir: &Path) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let obj = repo.join("scenes/cornell/cornell.obj");
    let text = std::fs::read_to_string(repo.join("scenes/cornell/cornell.toml"))
        .unwrap()
        .replace("width = 512", "width = 24")
        .replace("height = 512", "height = 20")
        .replace(
            "\"cornell.obj\"",
            &format!("{:?}", obj.display().to_string()),
        );
    let path = dir.join("small.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const QUAD: &str = "v -1 -1 5\nv 1 -1 5\nv 1 1 5\nv -1 1 5\nf 1 2 3\nf 1 3 4\n";

/// A quad mesh and a file of two rays at it, in `dir`.
fn quad_and_rays(dir: &Path) -> (PathBuf, PathBuf) {
    let mesh = dir.join("quad.obj");
    std::fs::write(&mesh, QUAD).unwrap();
    let rays = dir.join("r.rays");
    let bytes: Vec<u8> = [
        [0.5f32, -0.5, 0.0, 0.0, 0.0, 1.0, 0.0, 100.0],
        [3.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 100.0],
    ]
    .iter()
    .flatten()
    .flat_map(|v| v.to_le_bytes())
    .collect();
    std::fs::write(&rays, bytes).unwrap();
    (mesh, rays)
}

/// Exit 2, the error names `missing`, and the output directory `out_dir` holds nothing.
fn assert_refused(code: i32, stderr: &str, missing: &Path, out_dir: &Path) {
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(s(missing)), "{stderr}");
    assert_eq!(names(out_dir), Vec::<String>::new(), "{stderr}");
}

#[test]
fn render_with_a_missing_stats_or_heatmap_directory_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scene = small_scene(dir.path());
    let out_dir = dir.path().join("d");
    std::fs::create_dir(&out_dir).unwrap();
    let png = out_dir.join("o.png");
    let missing_stats = out_dir.join("missing").join("s.json");
    let (code, _, err) = wavetrace(&[
        "render",
        s(&scene),
        "--spp",
        "1",
        "--out",
        s(&png),
        "--stats",
        s(&missing_stats),
    ]);
    assert_refused(code, &err, &missing_stats, &out_dir);
    assert!(err.contains("--stats"), "{err}");
    let missing_heatmap = out_dir.join("missing").join("h.png");
    let (code, _, err) = wavetrace(&[
        "render",
        s(&scene),
        "--spp",
        "1",
        "--out",
        s(&png),
        "--heatmap",
        s(&missing_heatmap),
    ]);
    assert_refused(code, &err, &missing_heatmap, &out_dir);
    assert!(err.contains("--heatmap"), "{err}");
}

#[test]
fn render_writes_image_stats_and_heatmap_together() {
    let dir = tempfile::tempdir().unwrap();
    let scene = small_scene(dir.path());
    let out_dir = dir.path().join("d");
    std::fs::create_dir(&out_dir).unwrap();
    let (code, _, err) = wavetrace(&[
        "render",
        s(&scene),
        "--spp",
        "1",
        "--out",
        s(&out_dir.join("o.png")),
        "--stats",
        s(&out_dir.join("s.json")),
        "--heatmap",
        s(&out_dir.join("h.png")),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(names(&out_dir), ["h.png", "o.png", "s.json"]);
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("s.json")).unwrap()).unwrap();
    assert_eq!(stats["seed"], 0);
}

#[test]
fn render_refuses_one_file_for_two_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let scene = small_scene(dir.path());
    let out_dir = dir.path().join("d");
    std::fs::create_dir(&out_dir).unwrap();
    let png = out_dir.join("o.png");
    let (code, _, err) = wavetrace(&[
        "render",
        s(&scene),
        "--spp",
        "1",
        "--out",
        s(&png),
        "--heatmap",
        s(&png),
    ]);
    assert_refused(code, &err, &png, &out_dir);
    assert!(err.contains("--heatmap") && err.contains("--out"), "{err}");
}

#[test]
fn trace_with_a_missing_stats_directory_writes_no_hits() {
    let dir = tempfile::tempdir().unwrap();
    let (mesh, rays) = quad_and_rays(dir.path());
    let out_dir = dir.path().join("d");
    std::fs::create_dir(&out_dir).unwrap();
    let missing = out_dir.join("missing").join("s.json");
    let (code, _, err) = wavetrace(&[
        "trace",
        s(&mesh),
        "--rays",
        s(&rays),
        "--out",
        s(&out_dir.join("o.hits")),
        "--stats",
        s(&missing),
    ]);
    assert_refused(code, &err, &missing, &out_dir);
    // The first output's directory is checked as well.
    let missing = out_dir.join("missing").join("o.hits");
    let (code, _, err) = wavetrace(&[
        "trace",
        s(&mesh),
        "--rays",
        s(&rays),
        "--out",
        s(&missing),
        "--stats",
        s(&out_dir.join("s.json")),
    ]);
    assert_refused(code, &err, &missing, &out_dir);
    assert!(err.contains("--out"), "{err}");
}

#[test]
fn trace_writes_hits_and_stats_together() {
    let dir = tempfile::tempdir().unwrap();
    let (mesh, rays) = quad_and_rays(dir.path());
    let out_dir = dir.path().join("d");
    std::fs::create_dir(&out_dir).unwrap();
    let (code, out, err) = wavetrace(&[
        "trace",
        s(&mesh),
        "--rays",
        s(&rays),
        "--out",
        s(&out_dir.join("o.hits")),
        "--stats",
        s(&out_dir.join("s.json")),
        "--threads",
        "1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(names(&out_dir), ["o.hits", "s.json"]);
    assert_eq!(std::fs::read(out_dir.join("o.hits")).unwrap().len(), 16);
    let stats = std::fs::read_to_string(out_dir.join("s.json")).unwrap();
    assert!(stats.ends_with("}\n"), "{stats}");
}

#[test]
fn profile_with_a_missing_json_directory_writes_no_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (mesh, _) = quad_and_rays(dir.path());
    let out_dir = dir.path().join("d");
    std::fs::create_dir(&out_dir).unwrap();
    let missing = out_dir.join("missing").join("p.json");
    let (code, _, err) = wavetrace(&[
        "profile",
        s(&mesh),
        "--strategies",
        "full-stack",
        "--size",
        "8x8",
        "--csv",
        s(&out_dir.join("p.csv")),
        "--json",
        s(&missing),
        "--heatmaps",
        s(&out_dir.join("maps")),
    ]);
    assert_refused(code, &err, &missing, &out_dir);
    assert!(err.contains("--json"), "{err}");
    // A heatmap directory below a plain file is refused before any work too.
    std::fs::write(dir.path().join("plain"), b"").unwrap();
    let below_file = dir.path().join("plain").join("maps");
    let (code, _, err) = wavetrace(&[
        "profile",
        s(&mesh),
        "--strategies",
        "full-stack",
        "--size",
        "8x8",
        "--csv",
        s(&out_dir.join("p.csv")),
        "--heatmaps",
        s(&below_file),
    ]);
    assert_refused(code, &err, &below_file, &out_dir);
    assert!(err.contains("--heatmaps"), "{err}");
}

#[test]
fn profile_writes_csv_json_and_heatmaps_together() {
    let dir = tempfile::tempdir().unwrap();
    let (mesh, _) = quad_and_rays(dir.path());
    let out_dir = dir.path().join("d");
    std::fs::create_dir(&out_dir).unwrap();
    let (code, out, err) = wavetrace(&[
        "profile",
        s(&mesh),
        "--strategies",
        "full-stack",
        "--size",
        "8x8",
        "--threads",
        "1",
        "--csv",
        s(&out_dir.join("p.csv")),
        "--json",
        s(&out_dir.join("p.json")),
        "--heatmaps",
        s(&out_dir.join("maps").join("deep")),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(names(&out_dir), ["maps", "p.csv", "p.json"]);
    // The TD-clock map and the memory model's map.
    assert_eq!(
        names(&out_dir.join("maps").join("deep")),
        ["full-stack.memory.png", "full-stack.png"]
    );
}
