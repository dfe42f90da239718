//! glTF 2.0 input: a small file written here (JSON with a base64 data-URI buffer, and the
//! same as a .glb), read as a bare mesh (flattened to world space), as a scene (instances,
//! materials, camera), inside a scene file, and through the CLI. Every expected value is
//! computed here, in f64, from the numbers written into the file.

// Matrices are compared element by element, row and column named: index loops read best.
#![allow(clippy::needless_range_loop)]

use glam::{Vec2, Vec3};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use wavetrace::bvh::Mesh;
use wavetrace::scene::{BlasShape, MaterialKind, Scene};

// ---------------------------------------------------------------------------------------
// The file's content.

/// Mesh 0: a unit quad in z = 0 (4 vertices, 2 triangles through u16 indices).
const QUAD: [[f32; 3]; 4] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [1.0, 1.0, 0.0],
    [0.0, 1.0, 0.0],
];
const QUAD_INDICES: [u16; 6] = [0, 1, 2, 0, 2, 3];
/// glTF texture coordinates of the quad (v down).
const QUAD_UV: [[f32; 2]; 4] = [[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]];
/// Mesh 1: one triangle, no indices.
const TRI: [[f32; 3]; 3] = [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -2.0]];

/// A 4x4 column-major matrix as glTF stores one, f64.
type M4 = [[f64; 4]; 4];

fn identity() -> M4 {
    let mut m = [[0.0; 4]; 4];
    for (i, col) in m.iter_mut().enumerate() {
        col[i] = 1.0;
    }
    m
}

/// `a * b` (column-major: `m[col][row]`).
fn mul(a: &M4, b: &M4) -> M4 {
    let mut m = [[0.0; 4]; 4];
    for c in 0..4 {
        for r in 0..4 {
            m[c][r] = (0..4).map(|k| a[k][r] * b[c][k]).sum();
        }
    }
    m
}

/// Translation * rotation (unit quaternion x, y, z, w) * scale, written out entry by entry.
fn trs(t: [f64; 3], q: [f64; 4], s: [f64; 3]) -> M4 {
    let [x, y, z, w] = q;
    let r = [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y + z * w),
            2.0 * (x * z - y * w),
        ],
        [
            2.0 * (x * y - z * w),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z + x * w),
        ],
        [
            2.0 * (x * z + y * w),
            2.0 * (y * z - x * w),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ];
    let mut m = identity();
    for c in 0..3 {
        for row in 0..3 {
            m[c][row] = r[c][row] * s[c];
        }
    }
    m[3] = [t[0], t[1], t[2], 1.0];
    m
}

fn apply(m: &M4, p: [f32; 3]) -> [f64; 3] {
    let p = p.map(f64::from);
    std::array::from_fn(|r| m[0][r] * p[0] + m[1][r] * p[1] + m[2][r] * p[2] + m[3][r])
}

const H: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// Node 1: 90 degrees about +y, scale 2, translation (-4, 0, 0).
const N1: ([f64; 3], [f64; 4], [f64; 3]) = ([-4.0, 0.0, 0.0], [0.0, H, 0.0, H], [2.0; 3]);
/// Node 2 (parent of node 3): 90 degrees about +x, translation (0, 5, 0).
const N2: ([f64; 3], [f64; 4], [f64; 3]) = ([0.0, 5.0, 0.0], [H, 0.0, 0.0, H], [1.0; 3]);

/// Node 3's matrix: scale 0.5, translation (1, 0, 0), column-major.
fn n3() -> M4 {
    let mut m = identity();
    m[0][0] = 0.5;
    m[1][1] = 0.5;
    m[2][2] = 0.5;
    m[3] = [1.0, 0.0, 0.0, 1.0];
    m
}

/// The world matrices of the three mesh nodes, in the file's depth-first node order: node
/// 0 (quad), node 1 (quad), node 3 under node 2 (triangle).
fn world_matrices() -> [(usize, M4); 3] {
    let mut t0 = identity();
    t0[3] = [1.0, 2.0, 3.0, 1.0];
    [
        (0, t0),
        (0, trs(N1.0, N1.1, N1.2)),
        (1, mul(&trs(N2.0, N2.1, N2.2), &n3())),
    ]
}

/// World-space corners of every triangle, in flattened order.
fn world_triangles() -> Vec<[[f64; 3]; 3]> {
    let mut out = Vec::new();
    for (mesh, m) in world_matrices() {
        if mesh == 0 {
            for t in QUAD_INDICES.chunks(3) {
                out.push([0, 1, 2].map(|k| apply(&m, QUAD[t[k] as usize])));
            }
        } else {
            out.push([0, 1, 2].map(|k| apply(&m, TRI[k])));
        }
    }
    out
}

const BASE0: [f32; 4] = [0.8, 0.4, 0.2, 1.0];
const ROUGH0: f32 = 0.5;
const EMISSIVE0: [f32; 3] = [1.0, 0.5, 0.25];
const STRENGTH0: f32 = 2.0;
const BASE1: [f32; 4] = [0.9, 0.7, 0.5, 1.0];
const ROUGH1: f32 = 0.3;
const YFOV: f32 = 0.8;
const ASPECT: f32 = 1.5;
const EYE: [f32; 3] = [0.0, 1.0, 10.0];

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn pad4(b: &mut Vec<u8>, fill: u8) {
    while !b.len().is_multiple_of(4) {
        b.push(fill);
    }
}

/// A 2x2 PNG with alpha.
fn png() -> Vec<u8> {
    let img = image::RgbaImage::from_raw(
        2,
        2,
        vec![
            255, 0, 0, 255, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255, 255, 0,
        ],
    )
    .unwrap();
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// How the buffer and the image are stored.
#[derive(Clone, Copy, PartialEq)]
enum Storage {
    /// .gltf: buffer as a data URI, image as an external PNG file beside it.
    DataUri,
    /// .glb: buffer in the BIN chunk, image in a buffer view.
    Glb,
}

/// The binary buffer and the document JSON.
fn document(storage: Storage) -> (Vec<u8>, serde_json::Value) {
    let mut bin = Vec::new();
    let mut views = Vec::new();
    let mut add = |bytes: Vec<u8>, bin: &mut Vec<u8>| -> usize {
        views.push(json!({"buffer": 0, "byteOffset": bin.len(), "byteLength": bytes.len()}));
        bin.extend(bytes);
        pad4(bin, 0);
        views.len() - 1
    };
    let qp = add(f32_bytes(QUAD.as_flattened()), &mut bin);
    let qn = add(f32_bytes(&[0.0, 0.0, 1.0].repeat(4)), &mut bin);
    let qt = add(f32_bytes(QUAD_UV.as_flattened()), &mut bin);
    let qi = add(
        QUAD_INDICES.iter().flat_map(|i| i.to_le_bytes()).collect(),
        &mut bin,
    );
    let tp = add(f32_bytes(TRI.as_flattened()), &mut bin);
    let image = if storage == Storage::Glb {
        let v = add(png(), &mut bin);
        json!({"bufferView": v, "mimeType": "image/png"})
    } else {
        json!({"uri": "tex.png"})
    };
    let acc = |view: usize, count: usize, ty: &str, ct: u32| json!({"bufferView": view, "count": count, "type": ty, "componentType": ct});
    let mut pos_q = acc(qp, 4, "VEC3", 5126);
    pos_q["min"] = json!([0.0, 0.0, 0.0]);
    pos_q["max"] = json!([1.0, 1.0, 0.0]);
    let mut pos_t = acc(tp, 3, "VEC3", 5126);
    pos_t["min"] = json!([0.0, 0.0, -2.0]);
    pos_t["max"] = json!([2.0, 0.0, 0.0]);
    let buffer = match storage {
        Storage::DataUri => json!({"byteLength": bin.len(), "uri": format!(
            "data:application/octet-stream;base64,{}", base64(&bin))}),
        Storage::Glb => json!({"byteLength": bin.len()}),
    };
    let doc = json!({
        "asset": {"version": "2.0"},
        "extensionsUsed": ["KHR_materials_emissive_strength"],
        "scene": 0,
        "scenes": [{"nodes": [0, 1, 2, 4]}],
        "nodes": [
            {"mesh": 0, "translation": [1.0, 2.0, 3.0]},
            {"mesh": 0, "translation": N1.0, "rotation": N1.1, "scale": N1.2},
            {"translation": N2.0, "rotation": N2.1, "children": [3]},
            {"mesh": 1, "matrix": n3().as_flattened()},
            {"camera": 0, "translation": EYE},
        ],
        "meshes": [
            {"name": "quad", "primitives": [{
                "attributes": {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2},
                "indices": 3, "material": 0}]},
            {"primitives": [
                {"attributes": {"POSITION": 4}, "material": 1},
                {"attributes": {"POSITION": 4}, "mode": 0}]},
        ],
        "materials": [
            {"name": "clay",
             "pbrMetallicRoughness": {"baseColorFactor": BASE0, "metallicFactor": 0.0,
                 "roughnessFactor": ROUGH0, "baseColorTexture": {"index": 0}},
             "emissiveFactor": EMISSIVE0,
             "alphaMode": "MASK",
             "extensions": {"KHR_materials_emissive_strength": {"emissiveStrength": STRENGTH0}}},
            {"name": "gold",
             "pbrMetallicRoughness": {"baseColorFactor": BASE1, "metallicFactor": 1.0,
                 "roughnessFactor": ROUGH1}},
        ],
        "textures": [{"source": 0}],
        "images": [image],
        "cameras": [{"type": "perspective",
            "perspective": {"yfov": YFOV, "aspectRatio": ASPECT, "znear": 0.01}}],
        "accessors": [
            pos_q,
            acc(qn, 4, "VEC3", 5126),
            acc(qt, 4, "VEC2", 5126),
            acc(qi, 6, "SCALAR", 5123),
            pos_t,
        ],
        "bufferViews": views,
        "buffers": [buffer],
    });
    (bin, doc)
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                s.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// A GLB container: the JSON chunk (space-padded) and the BIN chunk (zero-padded).
fn glb(doc: &serde_json::Value, bin: &[u8]) -> Vec<u8> {
    let mut json = serde_json::to_vec(doc).unwrap();
    pad4(&mut json, b' ');
    let mut bin = bin.to_vec();
    pad4(&mut bin, 0);
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = Vec::new();
    out.extend(b"glTF");
    out.extend(2u32.to_le_bytes());
    out.extend((total as u32).to_le_bytes());
    out.extend((json.len() as u32).to_le_bytes());
    out.extend(b"JSON");
    out.extend(json);
    out.extend((bin.len() as u32).to_le_bytes());
    out.extend(b"BIN\0");
    out.extend(bin);
    out
}

/// Writes the file in `dir` as `model.gltf` or `model.glb`; returns its path.
fn write(dir: &Path, storage: Storage) -> PathBuf {
    let (bin, doc) = document(storage);
    match storage {
        Storage::DataUri => {
            std::fs::write(dir.join("tex.png"), png()).unwrap();
            let p = dir.join("model.gltf");
            std::fs::write(&p, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
            p
        }
        Storage::Glb => {
            let p = dir.join("model.glb");
            std::fs::write(&p, glb(&doc, &bin)).unwrap();
            p
        }
    }
}

fn close(a: [f64; 3], b: [f32; 3], what: &str) {
    for k in 0..3 {
        assert!(
            (a[k] - b[k] as f64).abs() < 1e-5,
            "{what}: want {a:?}, got {b:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------

#[test]
fn flattened_mesh_has_every_node_in_world_space() {
    let dir = tempfile::tempdir().unwrap();
    for storage in [Storage::DataUri, Storage::Glb] {
        let path = write(dir.path(), storage);
        let (mesh, warnings) = Mesh::load_with_warnings(&path).unwrap();
        let want = world_triangles();
        assert_eq!(mesh.len(), want.len(), "{}", path.display());
        for (i, w) in want.iter().enumerate() {
            let got = mesh.triangle(i as u32);
            for k in 0..3 {
                close(w[k], got[k], &format!("triangle {i} corner {k}"));
            }
        }
        // The POINTS primitive of mesh 1 is skipped with a warning.
        assert!(
            warnings.iter().any(|w| w.contains("mesh 1 primitive 1")),
            "{warnings:?}"
        );
    }
}

#[test]
fn scene_has_one_blas_per_mesh_and_one_instance_per_node() {
    let dir = tempfile::tempdir().unwrap();
    for storage in [Storage::DataUri, Storage::Glb] {
        let path = write(dir.path(), storage);
        let scene = Scene::load(&path).unwrap();
        assert_eq!(scene.blases.len(), 2);
        assert_eq!(scene.instances.len(), 3);
        assert_eq!(scene.blases[0].name, "quad");
        for (i, (mesh, m)) in world_matrices().iter().enumerate() {
            let inst = &scene.instances[i];
            assert_eq!(inst.blas as usize, *mesh);
            assert_eq!(inst.id as usize, i);
            for r in 0..3 {
                for c in 0..4 {
                    let got = inst.object_to_world[r][c] as f64;
                    assert!(
                        (got - m[c][r]).abs() < 1e-6,
                        "instance {i} [{r}][{c}]: {got} vs {}",
                        m[c][r]
                    );
                }
            }
        }
        // Object space is the mesh's own.
        let BlasShape::Triangles(g) = &scene.blases[0].shape else {
            panic!("triangles")
        };
        assert_eq!(g.positions, QUAD.to_vec());
        assert_eq!(g.indices, vec![[0, 1, 2], [0, 2, 3]]);
        // Texture coordinates flipped to v up; unit normals.
        assert_eq!(g.uvs[0], [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]);
        assert_eq!(g.normals[1], [[0.0, 0.0, 1.0]; 3]);
        // MASK with a base colour texture: an alpha-tested, non-opaque BLAS.
        assert!(!scene.blases[0].opaque);
        assert!(scene.blases[1].opaque);
    }
}

#[test]
fn materials_take_the_factors_and_the_texture() {
    let dir = tempfile::tempdir().unwrap();
    for storage in [Storage::DataUri, Storage::Glb] {
        let path = write(dir.path(), storage);
        let scene = Scene::load(&path).unwrap();
        let material_of = |blas: usize| {
            let BlasShape::Triangles(g) = &scene.blases[blas].shape else {
                panic!("triangles")
            };
            &scene.materials[g.materials[0] as usize]
        };
        let clay = material_of(0);
        assert_eq!(clay.name, "clay");
        let MaterialKind::Standard {
            kd,
            kd_texture,
            ks,
            alpha,
        } = &clay.kind
        else {
            panic!("{clay:?}")
        };
        // 0.8 + 0.04 < 1: no scaling.
        assert!(
            (*kd - Vec3::new(BASE0[0], BASE0[1], BASE0[2]))
                .abs()
                .max_element()
                < 1e-6
        );
        assert!((*ks - Vec3::splat(0.04)).abs().max_element() < 1e-6);
        assert!((alpha - ROUGH0 * ROUGH0).abs() < 1e-6);
        let emission = Vec3::from(EMISSIVE0) * STRENGTH0;
        assert!((clay.emission - emission).abs().max_element() < 1e-6);
        let t = kd_texture.expect("base colour texture") as usize;
        assert_eq!(clay.alpha_texture, Some(t as u32));
        assert_eq!(scene.textures.len(), 1);
        assert_eq!(scene.textures[t].size(), (2, 2));
        // Alpha is the PNG's alpha: top-left texel opaque, top-right transparent (v up).
        assert_eq!(scene.textures[t].alpha_at(Vec2::new(0.25, 0.75)), 1.0);
        assert_eq!(scene.textures[t].alpha_at(Vec2::new(0.75, 0.75)), 0.0);
        let gold = material_of(1);
        let MaterialKind::Metal {
            f0,
            f0_texture,
            alpha,
        } = &gold.kind
        else {
            panic!("{gold:?}")
        };
        assert!(
            (*f0 - Vec3::new(BASE1[0], BASE1[1], BASE1[2]))
                .abs()
                .max_element()
                < 1e-6
        );
        assert!(f0_texture.is_none());
        assert!((alpha - ROUGH1 * ROUGH1).abs() < 1e-6);
        assert_eq!(gold.emission, Vec3::ZERO);
    }
}

#[test]
fn camera_is_the_first_perspective_camera() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), Storage::Glb);
    let scene = Scene::load(&path).unwrap();
    let height = wavetrace::scene::GLTF_FILM_HEIGHT;
    let width = (height as f64 * ASPECT as f64).round() as u32;
    assert_eq!((scene.film.width, scene.film.height), (width, height));
    // The centre ray leaves the camera node's origin down its -z.
    let centre = scene.camera.ray(width as f32 / 2.0, height as f32 / 2.0);
    close(EYE.map(f64::from), centre.origin.to_array(), "eye");
    close([0.0, 0.0, -1.0], centre.dir.to_array(), "forward");
    // The top edge's centre is yfov / 2 above it.
    let top = scene.camera.ray(width as f32 / 2.0, 0.0).dir;
    let angle = (top.y as f64).atan2(-top.z as f64);
    assert!((angle - YFOV as f64 / 2.0).abs() < 1e-5, "{angle}");
    // The right edge's centre is atan(aspect * tan(yfov / 2)) to the side.
    let right = scene.camera.ray(width as f32, height as f32 / 2.0).dir;
    let side = (right.x as f64).atan2(-right.z as f64);
    let want = (ASPECT as f64 * (YFOV as f64 / 2.0).tan()).atan();
    assert!((side - want).abs() < 1e-4, "{side} vs {want}");
}

#[test]
fn without_a_camera_the_view_frames_the_scene() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, mut doc) = document(Storage::Glb);
    doc["scenes"] = json!([{"nodes": [0, 1, 2]}]);
    let path = dir.path().join("nocam.glb");
    std::fs::write(&path, glb(&doc, &bin)).unwrap();
    let scene = Scene::load(&path).unwrap();
    assert_eq!((scene.film.width, scene.film.height), (512, 512));
    // The centre ray passes through the centre of the world bounds.
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for t in world_triangles() {
        for p in t {
            for k in 0..3 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
    }
    let c: [f64; 3] = std::array::from_fn(|k| (lo[k] + hi[k]) / 2.0);
    let ray = scene.camera.ray(256.0, 256.0);
    let to_c: [f64; 3] = std::array::from_fn(|k| c[k] - ray.origin[k] as f64);
    let len = to_c.iter().map(|x| x * x).sum::<f64>().sqrt();
    close(
        to_c.map(|x| x / len),
        ray.dir.to_array(),
        "towards the centre",
    );
}

#[test]
fn a_gltf_in_a_scene_file_is_one_mesh() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), Storage::DataUri);
    let toml = "[camera]\neye = [0.0, 0.0, 20.0]\nlook_at = [0.0, 0.0, 0.0]\nvfov_deg = 40.0\n\
                [film]\nwidth = 8\nheight = 8\n[[mesh]]\nobj = \"model.gltf\"\ntranslate = [0.0, 10.0, 0.0]\n\
                [[blas]]\nname = \"m\"\nobj = \"model.gltf\"\n[[instance]]\nblas = \"m\"\n";
    let scene = Scene::from_toml_str(toml, dir.path().join("s.toml")).unwrap();
    let want = world_triangles();
    assert_eq!(scene.blases.len(), 2);
    for (b, lift) in [(0, 10.0), (1, 0.0)] {
        let BlasShape::Triangles(g) = &scene.blases[b].shape else {
            panic!("triangles")
        };
        assert_eq!(g.triangle_count(), want.len());
        for (i, w) in want.iter().enumerate() {
            let got = g.corners(i as u32);
            for k in 0..3 {
                let w = [w[k][0], w[k][1] + lift, w[k][2]];
                close(w, got[k].to_array(), &format!("blas {b} triangle {i}"));
            }
        }
    }
}

#[test]
fn bad_files_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |name: &str, doc: &serde_json::Value, bin: &[u8], want: &[&str]| {
        let path = dir.path().join(name);
        std::fs::write(&path, glb(doc, bin)).unwrap();
        for e in [
            Mesh::load(&path).unwrap_err().to_string(),
            Scene::load(&path).unwrap_err().to_string(),
        ] {
            for w in want.iter().chain(&[name]) {
                assert!(e.contains(w), "{name}: `{e}` lacks `{w}`");
            }
        }
    };
    let (bin, doc) = document(Storage::Glb);
    // An index past the vertices.
    let mut b = bin.clone();
    let offset = doc["bufferViews"][3]["byteOffset"].as_u64().unwrap() as usize;
    b[offset + 2..offset + 4].copy_from_slice(&9u16.to_le_bytes());
    bad(
        "index.glb",
        &doc,
        &b,
        &[
            "mesh 0 primitive 0",
            "vertex index 9 out of range (4 vertices)",
        ],
    );
    // A BIN chunk shorter than the buffer says.
    let mut d = doc.clone();
    d["buffers"][0]["byteLength"] = json!(bin.len() + 64);
    bad("short.glb", &d, &bin, &["buffer 0"]);
    // An accessor running past its view.
    let mut d = doc.clone();
    d["accessors"][0]["count"] = json!(400);
    bad("count.glb", &d, &bin, &["accessor 0"]);
    // No triangles at all: the one rule of every mesh format.
    let mut d = doc.clone();
    d["scenes"] = json!([{"nodes": [4]}]);
    bad("empty.glb", &d, &bin, &["no faces"]);
    // Not glTF.
    let path = dir.path().join("junk.gltf");
    std::fs::write(&path, b"{ not json").unwrap();
    let e = Mesh::load(&path).unwrap_err().to_string();
    assert!(e.contains("junk.gltf"), "{e}");
}

// ---------------------------------------------------------------------------------------
// The CLI.

fn wavetrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavetrace"))
}

fn ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn cli_bvh_trace_and_render_take_gltf() {
    let dir = tempfile::tempdir().unwrap();
    let glb = write(dir.path(), Storage::Glb);
    let g = glb.to_str().unwrap();
    let table = ok(wavetrace().args(["bvh", g, "--json"]).output().unwrap());
    let json: serde_json::Value = serde_json::from_str(&table).unwrap();
    assert_eq!(json["references"].as_u64(), Some(5), "{json}");
    assert_eq!(json["valid"].as_bool(), Some(true), "{json}");
    // One ray down -z into node 0's quad (z = 3, x in [1, 2], y in [2, 3]) from z = 10,
    // above its diagonal (triangle 1: corners 0, 2, 3), one that misses everything.
    let rays: Vec<u8> = [
        [1.25f32, 2.75, 10.0, 0.0, 0.0, -1.0, 0.0, 100.0],
        [50.0, 50.0, 10.0, 0.0, 0.0, -1.0, 0.0, 100.0],
    ]
    .iter()
    .flatten()
    .flat_map(|v| v.to_le_bytes())
    .collect();
    let rays_path = dir.path().join("r.rays");
    std::fs::write(&rays_path, rays).unwrap();
    let hits = dir.path().join("h.hits");
    ok(wavetrace()
        .args([
            "trace",
            g,
            "--rays",
            rays_path.to_str().unwrap(),
            "--out",
            hits.to_str().unwrap(),
            "--threads",
            "1",
        ])
        .output()
        .unwrap());
    let h = std::fs::read(&hits).unwrap();
    assert_eq!(h.len(), 16);
    let t = f32::from_le_bytes(h[0..4].try_into().unwrap());
    assert!((t - 7.0).abs() < 1e-5, "{t}");
    let prim = u32::from_le_bytes(h[4..8].try_into().unwrap());
    assert_eq!(prim, 1);
    assert_eq!(
        f32::from_le_bytes(h[8..12].try_into().unwrap()),
        f32::INFINITY
    );
    // Render: the file's camera and film, --size overriding the film.
    let png = dir.path().join("out.png");
    ok(wavetrace()
        .args([
            "render",
            g,
            "-o",
            png.to_str().unwrap(),
            "--spp",
            "1",
            "--size",
            "12x8",
            "--threads",
            "1",
        ])
        .output()
        .unwrap());
    let img = image::open(&png).unwrap();
    assert_eq!((img.width(), img.height()), (12, 8));
}
