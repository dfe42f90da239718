//! PLY input: one mesh written here in ASCII, binary little-endian and binary big-endian
//! (properties in an unusual order, skipped properties and elements, a quad and a
//! triangle), read as a bare mesh, inside a scene file, and through the CLI; and the
//! errors of bad files, each naming the file.

use std::path::{Path, PathBuf};
use std::process::Command;
use wavetrace::bvh::Mesh;
use wavetrace::scene::Scene;

/// Vertex positions, normals (not unit: the loader normalizes) and texture coordinates.
const POSITIONS: [[f64; 3]; 5] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [1.0, 1.0, 0.0],
    [0.0, 1.0, 0.0],
    [2.0, 0.5, -1.0],
];
const NORMALS: [[f32; 3]; 5] = [[0.0, 0.0, 2.0]; 5];
const UVS: [[f32; 2]; 5] = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.25]];
/// A quad and a triangle.
const FACES: [&[u32]; 2] = [&[0, 1, 2, 3], &[1, 4, 2]];
/// Their fan triangulation, written out.
const TRIANGLES: [[u32; 3]; 3] = [[0, 1, 2], [0, 2, 3], [1, 4, 2]];

/// The header: `confidence` (skipped) first, `z` before `x`, double `y`, `s`/`t` texture
/// coordinates, a face list of uchar counts and int indices with a skipped `flags`
/// property after it, and an `edge` element (skipped) after the faces.
fn header(format: &str) -> String {
    format!(
        "ply\nformat {format} 1.0\ncomment made by a test\nelement vertex 5\n\
         property float confidence\nproperty float z\nproperty float x\nproperty double y\n\
         property float nx\nproperty float ny\nproperty float nz\nproperty float s\n\
         property float t\nelement face 2\nproperty list uchar int vertex_indices\n\
         property ushort flags\nelement edge 1\nproperty int vertex1\nproperty int vertex2\n\
         end_header\n"
    )
}

fn ascii() -> Vec<u8> {
    let mut s = header("ascii");
    for i in 0..5 {
        let [x, y, z] = POSITIONS[i];
        let [nx, ny, nz] = NORMALS[i];
        let [u, v] = UVS[i];
        s += &format!("0.5 {z} {x} {y} {nx} {ny} {nz} {u} {v}\n");
    }
    for f in FACES {
        let list: Vec<String> = f.iter().map(|i| i.to_string()).collect();
        s += &format!("{} {} 7\n", f.len(), list.join(" "));
    }
    s += "0 1\n";
    s.into_bytes()
}

fn binary(big: bool) -> Vec<u8> {
    let mut b = header(if big {
        "binary_big_endian"
    } else {
        "binary_little_endian"
    })
    .into_bytes();
    macro_rules! put {
        ($v:expr) => {
            if big {
                b.extend($v.to_be_bytes())
            } else {
                b.extend($v.to_le_bytes())
            }
        };
    }
    for i in 0..5 {
        let [x, y, z] = POSITIONS[i];
        put!(0.5f32);
        put!(z as f32);
        put!(x as f32);
        put!(y);
        for n in NORMALS[i] {
            put!(n);
        }
        for t in UVS[i] {
            put!(t);
        }
    }
    for f in FACES {
        b.push(f.len() as u8);
        for &i in f {
            put!(i as i32);
        }
        put!(7u16);
    }
    put!(0i32);
    put!(1i32);
    b
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn files(dir: &Path) -> Vec<PathBuf> {
    vec![
        write(dir, "ascii.ply", &ascii()),
        write(dir, "le.ply", &binary(false)),
        write(dir, "be.ply", &binary(true)),
    ]
}

#[test]
fn three_encodings_give_the_same_mesh() {
    let dir = tempfile::tempdir().unwrap();
    for path in files(dir.path()) {
        let mesh = Mesh::load(&path).unwrap();
        let want: Vec<[f32; 3]> = POSITIONS.iter().map(|p| p.map(|c| c as f32)).collect();
        assert_eq!(mesh.positions, want, "{}", path.display());
        assert_eq!(mesh.indices, TRIANGLES.to_vec(), "{}", path.display());
    }
}

#[test]
fn scene_file_takes_normals_uvs_and_placement() {
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    for name in ["ascii.ply", "le.ply", "be.ply"] {
        let toml = format!(
            "[camera]\neye = [0.0, 0.0, 5.0]\nlook_at = [0.0, 0.0, 0.0]\nvfov_deg = 40.0\n\
             [film]\nwidth = 8\nheight = 8\n[[mesh]]\nobj = \"{name}\"\n\
             translate = [10.0, 0.0, 0.0]\n"
        );
        let scene = Scene::from_toml_str(&toml, dir.path().join("s.toml")).unwrap();
        let g = &scene.geometry;
        assert_eq!(g.triangle_count(), 3);
        for (t, tri) in TRIANGLES.iter().enumerate() {
            let corners = g.corners(t as u32);
            for k in 0..3 {
                let p = POSITIONS[tri[k] as usize];
                let want = [p[0] + 10.0, p[1], p[2]].map(|c| c as f32);
                assert_eq!(corners[k].to_array(), want, "{name} triangle {t}");
                assert_eq!(g.uvs[t][k], UVS[tri[k] as usize]);
                assert_eq!(g.normals[t][k], [0.0, 0.0, 1.0]);
            }
        }
        // No material in a PLY: the default one.
        assert_eq!(scene.materials[g.materials[0] as usize].name, "(default)");
    }
}

#[test]
fn bad_files_are_errors_naming_the_file_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let err = |name: &str, bytes: &[u8]| -> String {
        let path = write(dir.path(), name, bytes);
        let e = Mesh::load(&path).unwrap_err().to_string();
        assert!(e.contains(name), "{e}");
        e
    };
    // Truncated in every encoding: the element and its index are named.
    for (name, bytes) in [
        ("t.ply", ascii()),
        ("tle.ply", binary(false)),
        ("tbe.ply", binary(true)),
    ] {
        let cut = &bytes[..bytes.len() - 12];
        let e = err(name, cut);
        assert!(e.contains("truncated"), "{e}");
        assert!(e.contains("face 1") || e.contains("edge 0"), "{e}");
    }
    // An index past the vertices.
    let text = String::from_utf8(ascii())
        .unwrap()
        .replace("3 1 4 2 7", "3 1 900 2 7");
    let e = err("range.ply", text.as_bytes());
    assert!(
        e.ends_with("range.ply: face 1: vertex index 900 out of range (5 vertices)"),
        "{e}"
    );
    // A huge count with a tiny body: refused, nothing reserved for it.
    let huge = "ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\n\
                property float x\nproperty float y\nproperty float z\nelement face 3000000000\n\
                property list uchar uint vertex_indices\nend_header\n\0\0\0\0";
    let e = err("huge.ply", huge.as_bytes());
    assert!(e.contains("vertex 0") && e.contains("truncated"), "{e}");
    // A list count larger than the rest of the file.
    let mut b = binary(false);
    let face0 = b.len() - 8 - (1 + 16 + 2) - (1 + 12 + 2);
    b[face0] = 255;
    let e = err("list.ply", &b);
    assert!(e.contains("face 0") && e.contains("truncated"), "{e}");
    // A header error names its line.
    let e = err(
        "head.ply",
        header("ascii")
            .replace("property double y", "property dbl y")
            .as_bytes(),
    );
    assert!(e.contains("head.ply:8:"), "{e}");
    let e = err("magic.ply", b"plx\n");
    assert!(e.contains("magic.ply:1:"), "{e}");
    // A face with two vertices, a non-finite position, no faces at all.
    let text = String::from_utf8(ascii())
        .unwrap()
        .replace("3 1 4 2 7", "2 1 4 7");
    assert!(err("two.ply", text.as_bytes()).contains("face 1: 2 vertices"));
    let text = String::from_utf8(ascii())
        .unwrap()
        .replacen("0.5 0 0 0", "0.5 0 nan 0", 1);
    assert!(err("nan.ply", text.as_bytes()).contains("vertex 0"));
    let none = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n\
                property float z\nend_header\n0 0 0\n1 0 0\n0 1 0\n";
    assert!(err("none.ply", none.as_bytes()).contains("no faces"));
}

#[test]
fn cli_bvh_and_trace_take_ply() {
    let dir = tempfile::tempdir().unwrap();
    let paths = files(dir.path());
    for path in &paths {
        let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
            .args(["bvh", path.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["references"].as_u64(), Some(3));
        assert_eq!(json["valid"].as_bool(), Some(true));
    }
    // A ray down -z through the quad at (0.25, 0.75): t = 5, primitive 1 (0, 2, 3).
    let rays: Vec<u8> = [0.25f32, 0.75, 5.0, 0.0, 0.0, -1.0, 0.0, 100.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let rays_path = write(dir.path(), "r.rays", &rays);
    let hits = dir.path().join("h.hits");
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args([
            "trace",
            paths[2].to_str().unwrap(),
            "--rays",
            rays_path.to_str().unwrap(),
        ])
        .args(["--out", hits.to_str().unwrap(), "--threads", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let h = std::fs::read(&hits).unwrap();
    assert_eq!(f32::from_le_bytes(h[0..4].try_into().unwrap()), 5.0);
    assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), 1);
}
