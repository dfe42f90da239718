//! The scene file's two-level tables (`[[blas]]`, `[[spheres]]`, `[[instance]]`): numbering,
//! matrices, masks, ids, flags, materials and alpha textures against known values; flat
//! files unchanged; every bad input an error naming the file, line and key; instanced
//! lights in world space against an f64 computation.

use glam::{DMat3, DVec3, Vec2, Vec3};
use std::path::Path;
use wavetrace::hw::InstanceFlags;
use wavetrace::scene::{BlasShape, Geometry, Lights, Scene, SceneSphere};
use wavetrace::Error;

const CAMERA: &str = r#"
[camera]
eye = [0.0, 1.0, 5.0]
look_at = [0.0, 1.0, 0.0]
vfov_deg = 40.0

[film]
width = 8
height = 8
"#;

/// One triangle, no mtllib (its faces take the default material).
const TRI_OBJ: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";

/// A unit quad in z = 0, front +z, uvs on its corners; tobj splits it into (1 2 3) and
/// (1 3 4).
const QUAD_OBJ: &str = "mtllib quad.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n\
                        vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nusemtl leaf\nf 1/1 2/2 3/3 4/4\n";
const QUAD_CORNERS: [[f64; 3]; 4] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [1.0, 1.0, 0.0],
    [0.0, 1.0, 0.0],
];
const QUAD_TRIANGLES: [[usize; 3]; 2] = [[0, 1, 2], [0, 2, 3]];

const QUAD_MTL: &str = "newmtl leaf\nKd 0.2 0.6 0.2\nmap_Kd leaf.png\nmap_d leaf_alpha.png\n\
                        newmtl glow\nKd 0 0 0\nKe 5 4 3\n\
                        newmtl fence\nKd 0.5 0.5 0.5\nmap_d mask.png\n";
const BALLS_MTL: &str = "newmtl red\nKd 0.8 0.1 0.1\nnewmtl gold\nKd 1 0.8 0.3\nPm 1\n";

/// The alpha codes of leaf_alpha.png (RGBA, 2x2, row-major from the top row) and the
/// grey codes of mask.png (no alpha channel).
const LEAF_ALPHA: [u8; 4] = [0, 64, 128, 255];
const MASK_GREY: [u8; 4] = [10, 20, 30, 40];

/// A directory with the meshes, MTL files and textures the scenes below name.
fn asset_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("tri.obj"), TRI_OBJ).unwrap();
    std::fs::write(p.join("quad.obj"), QUAD_OBJ).unwrap();
    std::fs::write(
        p.join("lamp.obj"),
        QUAD_OBJ.replace("usemtl leaf", "usemtl glow"),
    )
    .unwrap();
    std::fs::write(p.join("quad.mtl"), QUAD_MTL).unwrap();
    std::fs::write(p.join("balls.mtl"), BALLS_MTL).unwrap();
    let save = |name: &str, bytes: &[u8], color: image::ExtendedColorType| {
        image::save_buffer(p.join(name), bytes, 2, 2, color).unwrap();
    };
    save(
        "leaf.png",
        &[200u8; 2 * 2 * 3],
        image::ExtendedColorType::Rgb8,
    );
    let rgba: Vec<u8> = LEAF_ALPHA.iter().flat_map(|&a| [255, 0, 0, a]).collect();
    save("leaf_alpha.png", &rgba, image::ExtendedColorType::Rgba8);
    save("mask.png", &MASK_GREY, image::ExtendedColorType::L8);
    dir
}

/// Writes `CAMERA` + `tables` as scene.toml in `dir` and loads it.
fn load(dir: &Path, tables: &str) -> Result<Scene, Error> {
    let path = dir.join("scene.toml");
    std::fs::write(&path, format!("{CAMERA}{tables}")).unwrap();
    Scene::load(&path)
}

/// 1-based line of the first line of `CAMERA` + `tables` that contains `marker`.
fn line_of(tables: &str, marker: &str) -> usize {
    let text = format!("{CAMERA}{tables}");
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line contains {marker:?}"))
        + 1
}

/// The message of the error that loading `tables` gives; it must name scene.toml at the
/// line holding `marker` and the dotted `field`.
fn error_names_line_and_field(tables: &str, marker: &str, field: &str) -> String {
    let dir = asset_dir();
    let e = match load(dir.path(), tables) {
        Ok(_) => panic!("loaded without error:\n{tables}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    let at = format!("scene.toml:{}:", line_of(tables, marker));
    assert!(
        msg.contains(&at) && msg.contains(field),
        "expected {at} and {field} in: {msg}"
    );
    msg
}

const TWO_LEVEL: &str = r#"
[[mesh]]
obj = "tri.obj"
translate = [0.0, 0.0, -1.0]

[[spheres]]
name = "balls"
mtl = "balls.mtl"
opaque = false
spheres = [
    { center = [0.0, 1.0, 0.0], radius = 1.0, material = "red" },
    { center = [3.0, 0.5, -2.0], radius = 0.25 },
    { center = [-1, 2, 3], radius = 2, material = "gold" },
]

[[blas]]
name = "leaf"
obj = "quad.obj"
scale = [2.0, 1.0, 1.0]
opaque = false

[[blas]]
name = "glow"
obj = "quad.obj"
mtl = "quad.mtl"
material = "glow"

[[instance]]   # rotated 90 degrees about y, moved
blas = "leaf"
transform = [[0.0, 0.0, 1.0, 5.0], [0.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 2.0]]
mask = 0x0F
flags = ["triangle_cull_disable"]

[[instance]]   # non-uniform scale, integers
blas = "balls"
transform = [
    [2, 0, 0, 0],
    [0, 0.5, 0, 1],
    [0, 0, 3, 0],
]
id = 0xABCDEF
flags = ["force_opaque", "triangle_front_counterclockwise"]

[[instance]]   # mirrored in x
blas = "leaf"
transform = [[-1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
mask = 0
flags = ["force_non_opaque"]
"#;

const IDENTITY: [[f32; 4]; 3] = [
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
];

fn triangles(shape: &BlasShape) -> &Geometry {
    match shape {
        BlasShape::Triangles(g) => g,
        BlasShape::Spheres(_) => panic!("a sphere BLAS"),
    }
}

#[test]
fn two_level_scene_numbers_blases_and_instances() {
    let dir = asset_dir();
    let scene = load(dir.path(), TWO_LEVEL).unwrap();
    assert!(scene.is_instanced());
    assert_eq!(scene.geometry.triangle_count(), 0);

    // BLASes: [[mesh]] first, then [[spheres]] and [[blas]] in file order.
    let names: Vec<&str> = scene.blases.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["mesh[0]", "balls", "leaf", "glow"]);
    let opaque: Vec<bool> = scene.blases.iter().map(|b| b.opaque).collect();
    assert_eq!(opaque, [true, false, false, true]);
    let counts: Vec<usize> = scene.blases.iter().map(|b| b.primitive_count()).collect();
    assert_eq!(counts, [1, 3, 2, 2]);

    // Placements are baked into the vertices.
    let mesh = triangles(&scene.blases[0].shape);
    assert_eq!(
        mesh.positions,
        [[0.0, 0.0, -1.0], [1.0, 0.0, -1.0], [0.0, 1.0, -1.0]]
    );
    let leaf = triangles(&scene.blases[2].shape);
    assert_eq!(
        leaf.positions,
        [
            [0.0, 0.0, 0.0],
            [2.0, 0.0, 0.0],
            [2.0, 1.0, 0.0],
            [0.0, 1.0, 0.0]
        ]
    );
    assert_eq!(leaf.indices, [[0, 1, 2], [0, 2, 3]]);
    assert_eq!(leaf.uvs[1], [[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]]);

    // Materials: every MTL read appends all of its materials to the one global list.
    // tri.obj: the default (0); balls.mtl: red (1), gold (2), then the default of the
    // sphere without one (3); leaf's quad.mtl: leaf, glow, fence (4-6); glow's OBJ reads
    // quad.mtl (7-9) and its `mtl` reads it again (10-12).
    let material_names: Vec<&str> = scene.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        material_names,
        [
            "(default)",
            "red",
            "gold",
            "(default)",
            "leaf",
            "glow",
            "fence",
            "leaf",
            "glow",
            "fence",
            "leaf",
            "glow",
            "fence"
        ]
    );
    assert_eq!(mesh.materials, [0]);
    assert_eq!(leaf.materials, [4, 4]);
    assert_eq!(triangles(&scene.blases[3].shape).materials, [11, 11]);
    assert_eq!(scene.materials[11].emission, Vec3::new(5.0, 4.0, 3.0));
    let BlasShape::Spheres(balls) = &scene.blases[1].shape else {
        panic!("balls is not a sphere BLAS");
    };
    assert_eq!(
        balls,
        &[
            SceneSphere {
                center: [0.0, 1.0, 0.0],
                radius: 1.0,
                material: 1
            },
            SceneSphere {
                center: [3.0, 0.5, -2.0],
                radius: 0.25,
                material: 3
            },
            SceneSphere {
                center: [-1.0, 2.0, 3.0],
                radius: 2.0,
                material: 2
            },
        ]
    );
    assert_eq!(scene.materials[3].kind, scene.materials[0].kind);

    // Instances: [[mesh]] first, then [[instance]] in file order; default id = number.
    let blas_of: Vec<u32> = scene.instances.iter().map(|i| i.blas).collect();
    assert_eq!(blas_of, [0, 2, 1, 2]);
    let ids: Vec<u32> = scene.instances.iter().map(|i| i.id).collect();
    assert_eq!(ids, [0, 1, 0xAB_CDEF, 3]);
    let masks: Vec<u8> = scene.instances.iter().map(|i| i.mask).collect();
    assert_eq!(masks, [0xFF, 0x0F, 0xFF, 0]);
    let flags: Vec<InstanceFlags> = scene.instances.iter().map(|i| i.flags).collect();
    assert_eq!(
        flags,
        [
            InstanceFlags::NONE,
            InstanceFlags::TRIANGLE_CULL_DISABLE,
            InstanceFlags::FORCE_OPAQUE | InstanceFlags::TRIANGLE_FRONT_COUNTERCLOCKWISE,
            InstanceFlags::FORCE_NON_OPAQUE,
        ]
    );
    let matrices: Vec<[[f32; 4]; 3]> = scene.instances.iter().map(|i| i.object_to_world).collect();
    assert_eq!(
        matrices,
        [
            IDENTITY,
            [
                [0.0, 0.0, 1.0, 5.0],
                [0.0, 1.0, 0.0, 0.0],
                [-1.0, 0.0, 0.0, 2.0]
            ],
            [
                [2.0, 0.0, 0.0, 0.0],
                [0.0, 0.5, 0.0, 1.0],
                [0.0, 0.0, 3.0, 0.0]
            ],
            [
                [-1.0, 0.0, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0],
                [0.0, 0.0, 1.0, 0.0]
            ],
        ]
    );
    let mirrored: Vec<bool> = scene.instances.iter().map(|i| i.is_mirrored()).collect();
    assert_eq!(mirrored, [false, false, false, true]);
    // The rotated instance maps the leaf's (2, 1, 0) corner to (5, 1, 0).
    assert_eq!(
        scene.instances[1].world_from_object(Vec3::new(2.0, 1.0, 0.0)),
        Vec3::new(5.0, 1.0, 0.0)
    );

    // "glow" has no instance: loaded, and reported.
    let unused: Vec<&String> = scene
        .warnings
        .iter()
        .filter(|w| w.contains("no instance"))
        .collect();
    assert_eq!(unused.len(), 1, "{:?}", scene.warnings);
    assert!(
        unused[0].contains("glow") && unused[0].contains("blas[1]"),
        "{}",
        unused[0]
    );
}

#[test]
fn map_d_is_alpha_from_the_alpha_channel_or_the_first_channel() {
    let dir = asset_dir();
    let scene = load(dir.path(), TWO_LEVEL).unwrap();
    let (leaf, glow, fence) = (4, 5, 6);
    let names: Vec<&str> = scene
        .textures
        .iter()
        .map(|t| t.path.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(names, ["leaf.png", "leaf_alpha.png", "mask.png"]);
    assert_eq!(scene.materials[leaf].alpha_texture, Some(1));
    assert_eq!(scene.materials[glow].alpha_texture, None);
    assert_eq!(scene.materials[fence].alpha_texture, Some(2));
    // The second read of quad.mtl shares the texture files.
    assert_eq!(scene.materials[7].alpha_texture, Some(1));
    assert!(scene.textures[1].has_alpha_channel());
    assert!(!scene.textures[2].has_alpha_channel());
    assert!(
        !scene.warnings.iter().any(|w| w.contains("map_d")),
        "{:?}",
        scene.warnings
    );

    // Texel (x, y) of the 2x2 image covers uv around ((x + 0.5) / 2, 1 - (y + 0.5) / 2).
    let texel_uv = [
        Vec2::new(0.25, 0.75),
        Vec2::new(0.75, 0.75),
        Vec2::new(0.25, 0.25),
        Vec2::new(0.75, 0.25),
    ];
    for (i, uv) in texel_uv.into_iter().enumerate() {
        let alpha = scene.alpha_at(leaf as u32, uv);
        assert_eq!(alpha, LEAF_ALPHA[i] as f32 / 255.0, "leaf texel {i}");
        let alpha = scene.alpha_at(fence as u32, uv);
        assert_eq!(alpha, MASK_GREY[i] as f32 / 255.0, "fence texel {i}");
        assert_eq!(scene.alpha_at(glow as u32, uv), 1.0);
        assert_eq!(scene.alpha_at(0, uv), 1.0);
        // Repeat wrap, both ways.
        let shifted = uv + Vec2::new(-3.0, 2.0);
        assert_eq!(
            scene.alpha_at(leaf as u32, shifted),
            LEAF_ALPHA[i] as f32 / 255.0
        );
    }
    // Not a number: read as uv (0, 0).
    assert_eq!(
        scene.alpha_at(leaf as u32, Vec2::new(f32::NAN, 0.5)),
        scene.alpha_at(leaf as u32, Vec2::ZERO)
    );
}

const FLAT: &str = r#"
[[mesh]]
obj = "tri.obj"
translate = [0.0, 0.0, -1.0]

[[mesh]]
obj = "quad.obj"
scale = [2.0, 1.0, 1.0]
rotate_y_deg = 180.0
"#;

#[test]
fn flat_scene_is_one_geometry_and_the_same_meshes_become_blases() {
    let dir = asset_dir();
    let flat = load(dir.path(), FLAT).unwrap();
    assert!(!flat.is_instanced());
    assert!(flat.blases.is_empty() && flat.instances.is_empty());
    let g = &flat.geometry;
    assert_eq!(g.triangle_count(), 3);
    assert_eq!(g.indices, [[0, 1, 2], [3, 4, 5], [3, 5, 6]]);
    assert_eq!(g.materials, [0, 1, 1]);
    assert_eq!(
        &g.positions[..3],
        [[0.0, 0.0, -1.0], [1.0, 0.0, -1.0], [0.0, 1.0, -1.0]]
    );
    // The quad turned half a turn about y: x -> -x, z -> -z (up to rounding of pi).
    let expected = [[0.0, 0.0], [-2.0, 0.0], [-2.0, 0.0], [0.0, 0.0]];
    for (p, [x, z]) in g.positions[3..].iter().zip(expected) {
        assert!((p[0] - x).abs() < 1e-6 && (p[2] - z).abs() < 1e-6, "{p:?}");
    }
    assert_eq!(g.uvs[2], [[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]]);
    let names: Vec<&str> = flat.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["(default)", "leaf", "glow", "fence"]);
    assert_eq!(flat.textures.len(), 3);
    assert!(flat.warnings.is_empty(), "{:?}", flat.warnings);

    // The same meshes in a two-level file: one BLAS and one identity instance each, with
    // the same triangles.
    let spheres = "\n[[spheres]]\nname = \"s\"\nspheres = [{ center = [0, 0, 0], radius = 1 }]\n";
    let two = load(dir.path(), &format!("{FLAT}{spheres}")).unwrap();
    assert!(two.is_instanced());
    assert_eq!(two.geometry.triangle_count(), 0);
    assert_eq!(two.blases.len(), 3);
    assert_eq!(two.instances.len(), 2);
    for (i, instance) in two.instances.iter().enumerate() {
        assert_eq!(instance.blas, i as u32);
        assert_eq!(instance.id, i as u32);
        assert_eq!(instance.object_to_world, IDENTITY);
        assert_eq!(instance.mask, 0xFF);
        assert_eq!(instance.flags, InstanceFlags::NONE);
    }
    let mut rebuilt = Geometry::default();
    for blas in &two.blases[..2] {
        assert!(blas.opaque);
        rebuilt.append(triangles(&blas.shape).clone());
    }
    assert_eq!(rebuilt.positions, g.positions);
    assert_eq!(rebuilt.indices, g.indices);
    assert_eq!(rebuilt.uvs, g.uvs);
    assert_eq!(rebuilt.normals, g.normals);
    assert_eq!(rebuilt.materials, g.materials);
    assert_eq!(two.materials[..4], flat.materials[..]);
    // The spheres' default material comes after the meshes' materials.
    assert_eq!(two.materials.len(), 5);
    assert!(
        two.warnings.iter().any(|w| w.contains("spheres[0]")),
        "{:?}",
        two.warnings
    );
}

#[test]
fn instance_of_an_unknown_blas_is_an_error() {
    let tables = "\n[[instance]]\nblas = \"nope\"\n";
    let msg = error_names_line_and_field(tables, "nope", "instance[0].blas");
    assert!(msg.contains("\"nope\""), "{msg}");
}

#[test]
fn instance_of_a_mesh_entry_is_an_error() {
    let tables = "\n[[mesh]]\nobj = \"tri.obj\"\n\n[[instance]]\nblas = \"mesh[0]\"\n";
    let msg = error_names_line_and_field(tables, "blas = ", "instance[0].blas");
    assert!(msg.contains("[[mesh]]"), "{msg}");
}

const SPHERES_A: &str =
    "\n[[spheres]]\nname = \"a\"\nspheres = [{ center = [0, 0, 0], radius = 1 }]\n";

#[test]
fn transform_of_the_wrong_shape_is_an_error() {
    let cases = [
        (
            "transform = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]",
            "2 rows",
        ),
        (
            "transform = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]",
            "row 0 has 3",
        ),
        (
            "transform = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]",
            "4 rows",
        ),
        (
            "transform = [[1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0]]",
            "row 1 has 5",
        ),
    ];
    for (transform, words) in cases {
        let tables = format!("{SPHERES_A}\n[[instance]]\nblas = \"a\"\n{transform}\n");
        let msg = error_names_line_and_field(&tables, "transform", "instance[0].transform");
        assert!(msg.contains(words) && msg.contains("3 rows of 4"), "{msg}");
    }
    // Not numbers: the TOML schema error names the line and field too.
    for transform in [
        "transform = [[\"1\", 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]",
        "transform = 1.0",
        "transform = [1, 0, 0, 0]",
    ] {
        let tables = format!("{SPHERES_A}\n[[instance]]\nblas = \"a\"\n{transform}\n");
        error_names_line_and_field(&tables, "transform", "instance[0].transform");
    }
}

#[test]
fn transform_that_is_not_finite_is_an_error() {
    for entry in ["nan", "inf", "-inf", "1e39"] {
        let tables = format!(
            "{SPHERES_A}\n[[instance]]\nblas = \"a\"\n\
             transform = [[1, 0, 0, 0], [0, 1, 0, {entry}], [0, 0, 1, 0]]\n"
        );
        let msg = error_names_line_and_field(&tables, "transform", "instance[0].transform");
        assert!(
            msg.contains("entry [1][3]") && msg.contains("finite"),
            "{msg}"
        );
    }
}

#[test]
fn singular_transform_is_an_error_naming_the_instance() {
    let singular = [
        // A zero column, a repeated row, all zero, rank 2 by a combination.
        "[[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]",
        "[[0, 0, 0, 1], [0, 0, 0, 2], [0, 0, 0, 3]]",
        "[[1, 2, 3, 0], [4, 5, 6, 0], [7, 8, 9, 0]]",
        "[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]",
        // Nearly singular for its size: det 1e-15 against entries of 1.
        "[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1e-15, 0]]",
    ];
    for m in singular {
        // Instance number 2: the [[mesh]] is instance 0, then instance[0] is 1.
        let tables = format!(
            "\n[[mesh]]\nobj = \"tri.obj\"\n{SPHERES_A}\n[[instance]]\nblas = \"a\"\n\n\
             [[instance]]\nblas = \"a\"\ntransform = {m}\n"
        );
        let msg = error_names_line_and_field(&tables, "transform", "instance[1].transform");
        assert!(
            msg.contains("singular") && msg.contains("instance 2"),
            "{m}: {msg}"
        );
    }
    // The test is relative: a uniformly tiny (or huge) matrix is fine, and so are mirrored
    // and non-uniformly scaled ones.
    let dir = asset_dir();
    for m in [
        "[[1e-6, 0, 0, 0], [0, 1e-6, 0, 0], [0, 0, 1e-6, 0]]",
        "[[1e12, 0, 0, 0], [0, 0, 1e12, 0], [0, 1e12, 0, 0]]",
        "[[-1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]",
        "[[100, 0, 0, 0], [0, 0.01, 0, 0], [0, 0, 1, 0]]",
    ] {
        let tables = format!("{SPHERES_A}\n[[instance]]\nblas = \"a\"\ntransform = {m}\n");
        let scene = load(dir.path(), &tables).unwrap_or_else(|e| panic!("{m}: {e}"));
        assert_eq!(scene.instances.len(), 1);
    }
}

#[test]
fn mask_over_8_bits_is_an_error() {
    for mask in ["256", "-1", "0x100"] {
        let tables = format!("{SPHERES_A}\n[[instance]]\nblas = \"a\"\nmask = {mask}\n");
        let msg = error_names_line_and_field(&tables, "mask", "instance[0].mask");
        assert!(msg.contains("8 bits"), "{msg}");
    }
    let tables = format!("{SPHERES_A}\n[[instance]]\nblas = \"a\"\nmask = 1.5\n");
    error_names_line_and_field(&tables, "mask", "instance[0].mask");
}

#[test]
fn id_over_24_bits_is_an_error() {
    for id in ["0x1000000", "-1", "4294967296"] {
        let tables = format!("{SPHERES_A}\n[[instance]]\nblas = \"a\"\nid = {id}\n");
        let msg = error_names_line_and_field(&tables, "id =", "instance[0].id");
        assert!(msg.contains("24 bits"), "{msg}");
    }
    let dir = asset_dir();
    let tables = format!("{SPHERES_A}\n[[instance]]\nblas = \"a\"\nid = 0xFFFFFF\n");
    assert_eq!(
        load(dir.path(), &tables).unwrap().instances[0].id,
        0xFF_FFFF
    );
}

#[test]
fn unknown_flag_is_an_error() {
    let tables = format!(
        "{SPHERES_A}\n[[instance]]\nblas = \"a\"\n\
         flags = [\"force_opaque\", \"cull_everything\"]\n"
    );
    let msg = error_names_line_and_field(&tables, "flags", "instance[0].flags");
    assert!(
        msg.contains("cull_everything") && msg.contains("triangle_cull_disable"),
        "{msg}"
    );
}

#[test]
fn force_opaque_with_force_non_opaque_is_an_error() {
    let tables = format!(
        "{SPHERES_A}\n[[instance]]\nblas = \"a\"\n\
         flags = [\"force_non_opaque\", \"force_opaque\"]\n"
    );
    let msg = error_names_line_and_field(&tables, "flags", "instance[0].flags");
    assert!(
        msg.contains("force_opaque") && msg.contains("force_non_opaque"),
        "{msg}"
    );
}

#[test]
fn duplicate_blas_names_are_an_error() {
    let blas = |name: &str, tag: &str| {
        format!("\n[[blas]]\nname = \"{name}\"  # {tag}\nobj = \"tri.obj\"\n")
    };
    // A [[spheres]] and a [[blas]] entry with one name.
    let tables = format!("{SPHERES_A}{}", blas("a", "second"));
    let msg = error_names_line_and_field(&tables, "second", "blas[0].name");
    assert!(msg.contains("spheres[0]"), "{msg}");
    // Two [[blas]] entries.
    let tables = format!("{}{}", blas("x", "first"), blas("x", "second"));
    let msg = error_names_line_and_field(&tables, "second", "blas[1].name");
    assert!(msg.contains("blas[0]"), "{msg}");
    let tables = format!("{}{}", blas("x", "first"), blas("x ", "second"));
    assert!(
        load(asset_dir().path(), &tables).is_ok(),
        "names that differ"
    );
    // The name of a [[mesh]] entry's BLAS.
    let tables = format!(
        "\n[[mesh]]\nobj = \"tri.obj\"\n{}",
        blas("mesh[0]", "taken")
    );
    let msg = error_names_line_and_field(&tables, "taken", "blas[0].name");
    assert!(msg.contains("mesh[0]"), "{msg}");
    // An empty name.
    error_names_line_and_field(&blas("", "empty"), "empty", "blas[0].name");
}

#[test]
fn spheres_without_spheres_is_an_error() {
    let tables = "\n[[spheres]]\nname = \"s\"\nspheres = []\n";
    let msg = error_names_line_and_field(tables, "spheres = []", "spheres[0].spheres");
    assert!(msg.contains("at least one"), "{msg}");
    let tables = "\n[[spheres]]\nname = \"s\"\nopaque = false\n";
    let msg = error_names_line_and_field(tables, "name = \"s\"", "spheres[0].spheres");
    assert!(msg.contains("at least one"), "{msg}");
}

#[test]
fn bad_radius_or_center_is_an_error() {
    for radius in ["0", "-1.0", "nan", "inf", "-0.0"] {
        let tables = format!(
            "\n[[spheres]]\nname = \"s\"\nspheres = [\n  {{ center = [0, 0, 0], radius = 1 }},\n  \
             {{ center = [0, 1, 0], radius = {radius} }},\n]\n"
        );
        let msg = error_names_line_and_field(
            &tables,
            "center = [0, 1, 0]",
            "spheres[0].spheres[1].radius",
        );
        assert!(msg.contains("> 0"), "{msg}");
    }
    let tables = "\n[[spheres]]\nname = \"s\"\nspheres = [{ center = [0, nan, 0], radius = 1 }]\n";
    error_names_line_and_field(tables, "center", "spheres[0].spheres[0].center");
    let tables = "\n[[spheres]]\nname = \"s\"\nspheres = [{ center = [0, 0, 0] }]\n";
    error_names_line_and_field(tables, "center", "spheres[0].spheres");
}

#[test]
fn sphere_material_must_name_a_material_of_the_mtl() {
    let tables = "\n[[spheres]]\nname = \"s\"\nmtl = \"balls.mtl\"\n\
                  spheres = [{ center = [0, 0, 0], radius = 1, material = \"blue\" }]\n";
    let msg = error_names_line_and_field(tables, "blue", "spheres[0].spheres[0].material");
    assert!(msg.contains("balls.mtl"), "{msg}");
    let tables = "\n[[spheres]]\nname = \"s\"\n\
                  spheres = [{ center = [0, 0, 0], radius = 1, material = \"red\" }]\n";
    let msg = error_names_line_and_field(tables, "red", "spheres[0].spheres[0].material");
    assert!(msg.contains("mtl"), "{msg}");
}

#[test]
fn texture_that_is_not_an_image_is_an_error_naming_it() {
    for key in ["map_Kd", "map_d"] {
        let dir = asset_dir();
        std::fs::write(dir.path().join("broken.png"), "not an image").unwrap();
        std::fs::write(
            dir.path().join("broken.mtl"),
            format!("newmtl m\nKd 1 1 1\n{key} broken.png\n"),
        )
        .unwrap();
        let tables = "\n[[blas]]\nname = \"b\"\nobj = \"tri.obj\"\nmtl = \"broken.mtl\"\n\
                      material = \"m\"\n";
        let e = load(dir.path(), tables).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("broken.png") && msg.contains(key) && msg.contains("broken.mtl"),
            "{msg}"
        );
        // The same for a sphere BLAS's MTL.
        let tables = "\n[[spheres]]\nname = \"s\"\nmtl = \"broken.mtl\"\n\
                      spheres = [{ center = [0, 0, 0], radius = 1 }]\n";
        let msg = load(dir.path(), tables).unwrap_err().to_string();
        assert!(msg.contains("broken.png") && msg.contains(key), "{msg}");
    }
}

/// A point of the quad's front half-space, in world space, is on the side a world-space
/// light's counter-clockwise corners face: the emitting side moves with the instance.
fn assert_emits_to_the_transformed_front(m: &[[f64; 4]; 3], corners: [Vec3; 3]) {
    let linear = DMat3::from_cols_array_2d(&[
        [m[0][0], m[1][0], m[2][0]],
        [m[0][1], m[1][1], m[2][1]],
        [m[0][2], m[1][2], m[2][2]],
    ]);
    // The object front is +z; the image of the front half-space lies along the normal
    // transformed by the inverse transpose.
    let front = linear.inverse().transpose() * DVec3::Z;
    let [a, b, c] = corners.map(|p| p.as_dvec3());
    let n = (b - a).cross(c - a);
    assert!(n.dot(front) > 0.0, "{corners:?} face away from {front:?}");
}

#[test]
fn instanced_emissive_quad_lights_are_the_quad_transformed() {
    let dir = asset_dir();
    let tables = r#"
[[mesh]]
obj = "tri.obj"

[[blas]]
name = "lamp"
obj = "lamp.obj"

[[instance]]   # scaled, turned about x, moved
blas = "lamp"
transform = [[2.0, 0.0, 0.0, 1.0], [0.0, 0.0, -1.0, 3.0], [0.0, 3.0, 0.0, -2.0]]

[[instance]]   # mirrored in x
blas = "lamp"
transform = [[-1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 4.0]]

[[instance]]   # sheared and rotated about y by 30 degrees
blas = "lamp"
transform = [[0.8660254, 0.5, 0.5, -1.0], [0.0, 1.0, 0.0, 0.5], [-0.5, 0.0, 0.8660254, 7.0]]
"#;
    let scene = load(dir.path(), tables).unwrap();
    let lights = Lights::new(&scene);
    let list = lights.triangles();
    assert_eq!(
        list.len(),
        6,
        "two triangles per lamp instance; the mesh is dark"
    );
    let emission = Vec3::new(5.0, 4.0, 3.0);
    let mut total_probability = 0.0f64;
    for (k, light) in list.iter().enumerate() {
        let instance = (1 + k / 2) as u32;
        let prim = (k % 2) as u32;
        assert_eq!(light.instance, Some(instance));
        assert_eq!(light.prim, prim);
        assert_eq!(light.emission, emission);

        // world = M [object; 1] in f64, from the matrix as written in the file.
        let m = scene.instances[instance as usize]
            .object_to_world
            .map(|row| row.map(|x| x as f64));
        let world = |p: [f64; 3]| {
            let row = |r: [f64; 4]| r[0] * p[0] + r[1] * p[1] + r[2] * p[2] + r[3];
            DVec3::new(row(m[0]), row(m[1]), row(m[2]))
        };
        let mut expected = QUAD_TRIANGLES[prim as usize].map(|i| world(QUAD_CORNERS[i]));
        let det = DMat3::from_cols_array_2d(&[
            [m[0][0], m[1][0], m[2][0]],
            [m[0][1], m[1][1], m[2][1]],
            [m[0][2], m[1][2], m[2][2]],
        ])
        .determinant();
        if det < 0.0 {
            expected.swap(1, 2);
        }
        for (got, want) in light.corners.iter().zip(expected) {
            assert!(
                (got.as_dvec3() - want).length() <= 1e-6 * want.length().max(1.0),
                "light {k}: {got:?} vs {want:?}"
            );
        }
        assert_emits_to_the_transformed_front(&m, light.corners);
        let [a, b, c] = expected;
        let area = 0.5 * (b - a).cross(c - a).length();
        total_probability += light.pdf_area as f64 * area;
    }
    // The environment is black: the triangles share all of the probability.
    assert_eq!(lights.env_probability, 0.0);
    assert!(
        (total_probability - 1.0).abs() < 1e-5,
        "{total_probability}"
    );

    // Lookup by (instance, primitive), and the pdf of a sample agrees with it.
    assert_eq!(lights.instance_triangle(2, 1), Some(&list[3]));
    assert_eq!(lights.instance_triangle(0, 0), None);
    assert_eq!(lights.instance_triangle(9, 0), None);
    let p = Vec3::new(0.3, 0.2, 5.0);
    let mut sampled = 0;
    for i in 0..64 {
        let u = [(i as f32 + 0.5) / 64.0, 0.37, 0.61];
        let Some(s) = lights.sample(&scene, p, u) else {
            continue;
        };
        sampled += 1;
        // Every light of instance 2 lies in the plane z = 4, facing +z (a mirror in x
        // keeps it): the sample's pdf is the one for either triangle.
        let hit = p + s.dir * s.dist;
        if (hit.z - 4.0).abs() < 1e-4 {
            let pdf = lights.pdf_instance_triangle(2, 0, s.dir, s.dist);
            assert!((pdf - s.pdf).abs() <= 1e-4 * s.pdf, "{pdf} vs {}", s.pdf);
        }
    }
    assert!(sampled > 0);
}

#[test]
fn flat_emissive_quad_lights_stay_in_the_geometry() {
    let dir = asset_dir();
    let tables = "\n[[mesh]]\nobj = \"lamp.obj\"\ntranslate = [0.0, 0.0, -3.0]\n";
    let scene = load(dir.path(), tables).unwrap();
    let lights = Lights::new(&scene);
    let list = lights.triangles();
    assert_eq!(list.len(), 2);
    for (prim, light) in list.iter().enumerate() {
        assert_eq!(light.instance, None);
        assert_eq!(light.prim, prim as u32);
        assert_eq!(light.corners, scene.geometry.corners(prim as u32));
        assert_eq!(light.pdf_area, 0.5 / 0.5, "half the power on half the area");
    }
    assert_eq!(lights.instance_triangle(0, 0), None);
    let dir_to = Vec3::new(0.0, 0.0, -1.0);
    assert_eq!(lights.pdf_triangle(&scene, 0, dir_to, 2.0), 4.0);
}

/// Every value of every line of the two-level scene replaced by something odd: loading
/// returns, an error or a scene, and never panics.
#[test]
fn odd_values_anywhere_never_panic() {
    let dir = asset_dir();
    let odd = [
        "\"x\"",
        "-1",
        "0",
        "1e40",
        "nan",
        "[]",
        "[[]]",
        "[[1, 2, 3, 4]]",
        "[0, 0]",
        "{}",
        "true",
        "0xFFFFFFFF",
        "\"\"",
    ];
    let lines: Vec<&str> = TWO_LEVEL.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        for value in odd {
            let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            edited[i] = format!("{key}= {value}");
            let _ = load(dir.path(), &edited.join("\n"));
        }
    }
}
