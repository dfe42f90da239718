//! Checked input, end to end through the built binary: every integer read from a file is
//! range-checked, malformed input is exit code 2 with a message naming the file, line and
//! field (or flag), and input with nothing in it is refused rather than run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `wavetrace args`: exit code, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts exit code 2 and that stderr holds every one of `parts`.
fn assert_refused(result: (i32, String, String), parts: &[&str]) {
    let (code, out, err) = result;
    assert_eq!(code, 2, "stdout: {out}\nstderr: {err}");
    for part in parts {
        assert!(err.contains(part), "expected {part:?} in: {err}");
    }
}

/// A reference-vector file of one linear 2D case with `array_size` set to the JSON text
/// `array_size`.
fn tiling_case(array_size: &str) -> String {
    format!(
        r#"{{"cases": [{{"id": "LINEAR.2D.R32.big", "swizzle": "LINEAR", "dim": "2D",
            "format": "R32", "width": 4, "height": 4, "array_size": {array_size},
            "mip_levels": 1, "surface": {{}}, "mips": [{{}}]}}]}}"#
    )
}

#[test]
fn tiling_verify_refuses_an_array_size_beyond_32_bits() {
    let dir = tempfile::tempdir().unwrap();
    // 2^32 + 1 used to wrap to 1 and pass; 2^40 used to wrap to 0.
    for size in ["4294967297", "1099511627776"] {
        let file = write(dir.path(), "big.json", tiling_case(size));
        assert_refused(
            run(&["tiling", "verify", s(&file)]),
            &["big.json", "LINEAR.2D.R32.big", "array_size", size],
        );
    }
    // In range, the same case is run (and passes: it gives no fields to compare).
    let file = write(dir.path(), "ok.json", tiling_case("3"));
    let (code, out, err) = run(&["tiling", "verify", s(&file)]);
    assert_eq!((code, out.trim()), (0, "1 passed, 0 failed"), "{err}");
}

#[test]
fn tiling_verify_refuses_a_negative_or_fractional_array_size() {
    let dir = tempfile::tempdir().unwrap();
    for size in ["-1", "2.5", "\"4\""] {
        let file = write(dir.path(), "bad.json", tiling_case(size));
        assert_refused(
            run(&["tiling", "verify", s(&file)]),
            &["bad.json", "case #0", "array_size"],
        );
    }
}

#[test]
fn tiling_verify_refuses_a_sample_coordinate_beyond_32_bits() {
    let dir = tempfile::tempdir().unwrap();
    let text = tiling_case("1").replace(
        r#""mips": [{}]"#,
        r#""mips": [{}], "samples": [[0, 0, 4294967296, 0, 0]]"#,
    );
    let file = write(dir.path(), "sample.json", text);
    assert_refused(
        run(&["tiling", "verify", s(&file)]),
        &["sample.json", "LINEAR.2D.R32.big", "samples", "4294967296"],
    );
}

#[test]
fn tiling_verify_refuses_an_empty_case_list() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "empty.json", r#"{"meta": {}, "cases": []}"#);
    assert_refused(
        run(&["tiling", "verify", s(&file)]),
        &["empty.json", "cases", "empty"],
    );
}

const TRI: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\n";

#[test]
fn bvh_refuses_files_without_triangles() {
    let dir = tempfile::tempdir().unwrap();
    let readme = write(
        dir.path(),
        "README.md",
        "# Title\n\nSome prose, no faces.\n",
    );
    assert_refused(run(&["bvh", s(&readme)]), &["README.md", "no faces"]);
    let points = write(dir.path(), "points.obj", TRI);
    assert_refused(run(&["bvh", s(&points)]), &["points.obj", "no faces"]);
}

#[test]
fn bvh_names_the_line_of_a_malformed_statement() {
    let dir = tempfile::tempdir().unwrap();
    for (text, line, what) in [
        (format!("{TRI}vt 0 x\nf 1 2 3\n"), 4, "texture coordinate"),
        (format!("{TRI}f 1 2\n"), 4, "face"),
        (
            format!("{TRI}f 1/1 2/2 3/3\n"),
            4,
            "texture coordinate index",
        ),
        (
            format!("{TRI}vn 0 0 1\nf 1//1 2//1 3//9\n"),
            5,
            "normal index",
        ),
        (
            "v 0 0 0\nv nan 1 0\nv 0 1 0\nf 1 2 3\n".to_string(),
            2,
            "not finite",
        ),
        (
            "v 0 0 0\nv 1 0 0\nv 0 inf 0\nf 1 2 3\n".to_string(),
            3,
            "not finite",
        ),
    ] {
        let obj = write(dir.path(), "m.obj", &text);
        let at = format!("m.obj:{line}:");
        assert_refused(run(&["bvh", s(&obj)]), &[&at, what]);
    }
}

#[test]
fn threads_beyond_the_bound_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let obj = write(dir.path(), "m.obj", format!("{TRI}f 1 2 3\n"));
    for n in ["1025", "100000", "4294967296"] {
        assert_refused(
            run(&["bvh", s(&obj), "--threads", n]),
            &["--threads", n, "1024"],
        );
    }
    assert_refused(run(&["bvh", s(&obj), "--threads", "0"]), &["--threads"]);
    let (code, _, err) = run(&["bvh", s(&obj), "--threads", "2"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn chains_with_one_triangle_per_node_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let obj = write(dir.path(), "m.obj", format!("{TRI}f 1 2 3\n"));
    assert_refused(
        run(&["bvh", s(&obj), "--chains", "--tris-per-node", "1"]),
        &["--chains", "--tris-per-node"],
    );
    for n in ["2", "4"] {
        let (code, _, err) = run(&["bvh", s(&obj), "--chains", "--tris-per-node", n]);
        assert_eq!(code, 0, "--tris-per-node {n}: {err}");
    }
}

const CAMERA: &str = "[camera]\neye = [0.0, 0.5, 3.0]\nlook_at = [0.0, 0.5, 0.0]\n\
                      vfov_deg = 40.0\n\n[film]\nwidth = 4\nheight = 4\n";

/// Renders `scene` (written as scene.toml in `dir`) to out.png; returns the result.
fn render(dir: &Path, scene: &str) -> (i32, String, String) {
    let path = write(dir, "scene.toml", scene);
    let out = dir.join("out.png");
    let result = run(&["render", s(&path), "--out", s(&out), "--spp", "1"]);
    if result.0 != 0 {
        assert!(!out.exists(), "a failed render wrote {}", out.display());
    }
    result
}

#[test]
fn render_refuses_a_scene_with_nothing_in_it() {
    let dir = tempfile::tempdir().unwrap();
    assert_refused(
        render(dir.path(), CAMERA),
        &["scene.toml", "no triangles and no spheres"],
    );
}

#[test]
fn render_refuses_a_scene_that_is_its_own_obj() {
    let dir = tempfile::tempdir().unwrap();
    let scene = format!("{CAMERA}\n[[mesh]]\nobj = \"scene.toml\"\n");
    let line = scene.lines().position(|l| l.starts_with("obj")).unwrap() + 1;
    let at = format!("scene.toml:{line}:");
    assert_refused(
        render(dir.path(), &scene),
        &[&at, "mesh[0].obj", "scene file"],
    );
    // The same through another spelling of the path.
    let scene = format!("{CAMERA}\n[[mesh]]\nobj = \"./scene.toml\"\n");
    assert_refused(render(dir.path(), &scene), &["mesh[0].obj", "scene file"]);
}

#[test]
fn render_refuses_a_scene_file_that_is_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scene.toml");
    let mut bytes = CAMERA.as_bytes().to_vec();
    bytes.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(&path, bytes).unwrap();
    let out = dir.path().join("out.png");
    let line = CAMERA.lines().count() + 1;
    assert_refused(
        run(&["render", s(&path), "--out", s(&out)]),
        &[&format!("scene.toml:{line}:"), "UTF-8"],
    );
}

#[test]
fn render_names_the_obj_line_of_a_bad_vertex_or_index() {
    let dir = tempfile::tempdir().unwrap();
    let scene = format!("{CAMERA}\n[[mesh]]\nobj = \"m.obj\"\n");
    for (obj, at) in [
        ("v 0 0 0\nv 1 nan 0\nv 0 1 0\nf 1 2 3\n", "m.obj:2:"),
        ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/1 2/2 3/3\n", "m.obj:4:"),
        ("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 x\nf 1 2 3\n", "m.obj:4:"),
        ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", "m.obj:4:"),
        ("v 0 0 0\nv 1 0 0\nv 0 1 0\n", "no faces"),
    ] {
        write(dir.path(), "m.obj", obj);
        assert_refused(render(dir.path(), &scene), &[at]);
    }
}

#[test]
fn a_two_level_scene_of_spheres_alone_still_loads() {
    let dir = tempfile::tempdir().unwrap();
    let scene = format!(
        "{CAMERA}\n[[spheres]]\nname = \"balls\"\n\
         spheres = [{{ center = [0, 0.5, 0], radius = 0.5 }}]\n\n[[instance]]\nblas = \"balls\"\n"
    );
    let path = write(dir.path(), "scene.toml", &scene);
    let loaded = wavetrace::scene::Scene::load(&path).unwrap();
    assert_eq!(loaded.blases.len(), 1);
    assert_eq!(loaded.geometry.triangle_count(), 0);
}
