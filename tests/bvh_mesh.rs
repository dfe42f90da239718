//! Mesh input: OBJ parsing in file order, gzip, bad input with file:line, empty meshes and
//! NaN vertices (an error in a file, dropped by the builder from a mesh built in memory).

mod bvh_common;

use bvh_common::*;
use std::io::Write;
use std::path::Path;
use wavetrace::bvh::{self, closest_hit_brute_force, closest_hit_scalar, BuildOptions, Mesh};
use wavetrace::hw::{image_bvh_intersect_ray, NodePointer, TriangleReturnMode};
use wavetrace::math::Ray;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const GROUPED: &str = "\
# groups and materials interleave; ids must stay in file order
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 2 0 0
o first
usemtl red
f 1 2 3
g second
usemtl blue
f 1 3 4
usemtl red
f 1 2 3 4
g first
f 2 5 3 4 1
";

/// The triangles of GROUPED in file order, fan-triangulated by hand (vertex numbers 1-based).
const EXPECTED: [[usize; 3]; 6] = [
    [1, 2, 3],
    [1, 3, 4],
    [1, 2, 3],
    [1, 3, 4],
    [2, 5, 3],
    [2, 3, 4],
];

fn expected_triangles() -> Vec<[[f32; 3]; 3]> {
    let v = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
        [2.0, 0.0, 0.0],
    ];
    let mut out: Vec<[[f32; 3]; 3]> = EXPECTED.iter().map(|t| t.map(|i| v[i - 1])).collect();
    out.push([v[1], v[3], v[0]]);
    out
}

#[test]
fn obj_ids_follow_file_order_across_groups_and_materials() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = Mesh::load_obj(&write(dir.path(), "g.obj", GROUPED)).unwrap();
    let want = expected_triangles();
    assert_eq!(mesh.len(), want.len());
    for (i, w) in want.iter().enumerate() {
        assert_eq!(mesh.triangle(i as u32), *w, "triangle {i}");
    }
}

#[test]
fn gzip_is_read_transparently() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.obj.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(GROUPED.as_bytes()).unwrap();
    std::fs::write(&p, enc.finish().unwrap()).unwrap();
    let gz = Mesh::load_obj(&p).unwrap();
    let plain = Mesh::load_obj(&write(dir.path(), "g.obj", GROUPED)).unwrap();
    assert_eq!(gz, plain);
}

#[test]
fn missing_file_names_the_file() {
    let e = Mesh::load_obj(Path::new("/nonexistent/dir/mesh.obj")).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("/nonexistent/dir/mesh.obj"), "{msg}");
    assert!(matches!(e, wavetrace::Error::Io { .. }));
}

#[test]
fn malformed_vertex_gives_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "bad.obj",
        "v 0 0 0\nv 1 0 0\n\nv 1 zz 0\nf 1 2 3\n",
    );
    let msg = Mesh::load_obj(&p).unwrap_err().to_string();
    assert!(msg.contains(&format!("{}:4:", p.display())), "{msg}");
}

#[test]
fn invalid_utf8_gives_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bin.obj");
    std::fs::write(&p, b"v 0 0 0\nv 1 0 0\nv 0 1 0\n# caf\xe9\nf 1 2 3\n").unwrap();
    let msg = Mesh::load_obj(&p).unwrap_err().to_string();
    assert!(msg.contains(&format!("{}:4:", p.display())), "{msg}");
}

#[test]
fn out_of_range_face_index_gives_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "bad.obj",
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 7\n",
    );
    let msg = Mesh::load_obj(&p).unwrap_err().to_string();
    assert!(msg.contains(&format!("{}:5:", p.display())), "{msg}");
}

#[test]
fn empty_mesh_gives_a_valid_image_that_misses_everything() {
    // An OBJ file without faces is refused (see obj_without_faces_is_an_error); a mesh
    // built in memory may be empty.
    let mesh = Mesh {
        positions: vec![[0.0; 3]],
        indices: Vec::new(),
    };
    assert!(mesh.is_empty());
    for options in all_options() {
        let built = bvh::build(&mesh, &options).unwrap();
        assert!(bvh::validate(&built.image, &mesh).is_empty());
        assert!(built.image.root.is_box());
        let mut rng = Rng(3);
        for _ in 0..50 {
            let ray = Ray::new(rng.vec3(-1.0, 1.0), rng.unit(), 0.0, f32::INFINITY);
            let regs = bvh::ray_registers(&ray);
            let r = image_bvh_intersect_ray(
                built.image.bytes.as_slice(),
                &built.image.descriptor,
                built.image.root.to_u32(),
                &regs,
            );
            assert_eq!(r.dwords, [NodePointer::INVALID.to_u32(); 4]);
            assert!(!closest_hit_scalar(&built.image, &mesh, &ray).is_hit());
        }
    }
}

#[test]
fn nan_vertices_are_dropped_and_counted() {
    // In an OBJ file a NaN vertex is an error at its line (nan_or_inf_vertex_in_a_file_is_
    // an_error_at_its_line); the builder drops the triangles of a mesh built in memory.
    let mesh = Mesh {
        positions: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [f32::NAN, 0.0, 0.0],
            [0.0, 0.0, 1.0],
        ],
        indices: vec![[0, 1, 2], [0, 3, 2], [0, 1, 4], [3, 1, 4]],
    };
    assert_eq!(mesh.len(), 4);
    let built = bvh::build(&mesh, &BuildOptions::default()).unwrap();
    assert_eq!(built.dropped_nan_triangles, 2);
    assert_eq!(built.metrics.triangle_references, 2);
    assert!(bvh::validate(&built.image, &mesh).is_empty());
    let mut rng = Rng(5);
    for ray in random_rays(&mut rng, &mesh, 200) {
        let want = closest_hit_brute_force(&mesh, &ray, TriangleReturnMode::Barycentrics);
        let got = closest_hit_scalar(&built.image, &mesh, &ray);
        assert_same_hit(&mesh, &ray, &got, &want, "nan mesh");
        assert!(!got.is_hit() || got.prim_id == 0 || got.prim_id == 2);
    }
}

#[test]
fn bad_options_and_indices_are_errors() {
    let mesh = Mesh::from_triangles(&[[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]);
    let options = BuildOptions {
        triangles_per_node: 3,
        ..BuildOptions::default()
    };
    let msg = bvh::build(&mesh, &options).unwrap_err().to_string();
    assert!(msg.contains("triangles_per_node"), "{msg}");
    let bad = Mesh {
        positions: vec![[0.0; 3]],
        indices: vec![[0, 0, 5]],
    };
    let msg = bvh::build(&bad, &BuildOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("triangle 0") && msg.contains('5'), "{msg}");
}

/// Loads `text` as an OBJ file and returns the error message, which must name the file at
/// `line`.
fn error_at_line(text: &str, line: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "bad.obj", text);
    let msg = match Mesh::load_obj(&p) {
        Ok(m) => panic!("loaded {} triangles from:\n{text}", m.len()),
        Err(e) => e.to_string(),
    };
    assert!(msg.contains(&format!("{}:{line}:", p.display())), "{msg}");
    msg
}

const TRI: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\n";

#[test]
fn nan_or_inf_vertex_in_a_file_is_an_error_at_its_line() {
    for bad in ["nan", "inf", "-inf", "1e39"] {
        let msg = error_at_line(&format!("{TRI}v 0 {bad} 0\nf 1 2 3\n"), 4);
        assert!(
            msg.contains("not finite") && msg.contains("vertex position"),
            "{msg}"
        );
    }
    // A weight that makes the position infinite.
    let msg = error_at_line(&format!("{TRI}v 1 1 1 1e-45\nf 1 2 3\n"), 4);
    assert!(msg.contains("weight"), "{msg}");
}

#[test]
fn bad_texture_coordinate_or_normal_is_an_error_at_its_line() {
    let msg = error_at_line(&format!("{TRI}vt 0 0\nvt 0 x\nf 1 2 3\n"), 5);
    assert!(
        msg.contains("texture coordinate") && msg.contains("`x`"),
        "{msg}"
    );
    let msg = error_at_line(&format!("{TRI}vt 0\nf 1 2 3\n"), 4);
    assert!(msg.contains("texture coordinate"), "{msg}");
    let msg = error_at_line(&format!("{TRI}vn 0 nan 1\nf 1 2 3\n"), 4);
    assert!(msg.contains("normal") && msg.contains("finite"), "{msg}");
}

#[test]
fn faces_with_fewer_than_three_vertices_are_errors() {
    let msg = error_at_line(&format!("{TRI}f 1 2 3\nf 1 2\n"), 5);
    assert!(msg.contains("face") && msg.contains("at least 3"), "{msg}");
    error_at_line(&format!("{TRI}f 1\nf 1 2 3\n"), 4);
}

#[test]
fn out_of_range_texcoord_or_normal_index_is_an_error() {
    let msg = error_at_line(&format!("{TRI}f 1/1 2/2 3/3\n"), 4);
    assert!(msg.contains("texture coordinate index `1`"), "{msg}");
    let msg = error_at_line(&format!("{TRI}vn 0 0 1\nf 1//1 2//1 3//2\n"), 5);
    assert!(msg.contains("normal index `2`"), "{msg}");
    let msg = error_at_line(&format!("{TRI}f -1 -2 -4\n"), 4);
    assert!(msg.contains("position index `-4`"), "{msg}");
    // Corners of one face with different attributes, and a zero index.
    error_at_line(&format!("{TRI}vt 0 0\nf 1/1 2 3\n"), 5);
    error_at_line(&format!("{TRI}f 0 1 2\n"), 4);
    // In range, the same forms load.
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{TRI}vt 0 0\nvn 0 0 1\nf 1/1/1 2/1/1 3/-1/-1\nf -3//1 -2//1 -1//1\n");
    let mesh = Mesh::load_obj(&write(dir.path(), "ok.obj", &text)).unwrap();
    assert_eq!(mesh.len(), 2);
}

#[test]
fn obj_without_faces_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for text in ["", "# nothing\nv 0 0 0\n", "# Title\n\nSome prose.\n"] {
        let p = write(dir.path(), "e.obj", text);
        let msg = Mesh::load_obj(&p).unwrap_err().to_string();
        assert!(msg.contains("e.obj") && msg.contains("no faces"), "{msg}");
    }
}
