//! Bad input: scene-file errors name the file, line and field; missing files name their
//! path; output is written to a temporary name and renamed, so a failed or interrupted write
//! leaves nothing behind. Also: the shipped scenes load.

mod common;

use common::repo_path;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use wavetrace::outfile::{partial_path, write_atomic};
use wavetrace::render::{write_image, Control, Image, RenderOptions};
use wavetrace::scene::{MaterialKind, Scene};
use wavetrace::Error;

const GOOD: &str = r#"
[camera]
eye = [0.0, 1.0, 5.0]
look_at = [0.0, 1.0, 0.0]
vfov_deg = 40.0

[film]
width = 8
height = 8

[[mesh]]
obj = "m.obj"
"#;

const OBJ: &str =
    "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nusemtl a\nf 1/1 2/2 3/3\n";
const MTL: &str = "newmtl a\nKd 0.5 0.5 0.5\nmap_Kd tex.png\nTf 1 1 1\nKm 2\nTf 1 1 1\n";

/// A directory with a valid scene (scene.toml, m.obj, m.mtl, tex.png).
fn scene_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scene.toml"), GOOD).unwrap();
    std::fs::write(dir.path().join("m.obj"), OBJ).unwrap();
    std::fs::write(dir.path().join("m.mtl"), MTL).unwrap();
    image::save_buffer(
        dir.path().join("tex.png"),
        &[255u8; 2 * 2 * 3],
        2,
        2,
        image::ExtendedColorType::Rgb8,
    )
    .unwrap();
    dir
}

fn load_with(dir: &Path, toml: &str) -> Result<Scene, Error> {
    let path = dir.join("scene.toml");
    std::fs::write(&path, toml).unwrap();
    Scene::load(&path)
}

#[test]
fn valid_scene_loads_and_unknown_mtl_keys_warn_once() {
    let dir = scene_dir();
    let scene = Scene::load(dir.path().join("scene.toml")).unwrap();
    assert_eq!(scene.geometry.triangle_count(), 1);
    assert_eq!(scene.textures.len(), 1);
    assert!(matches!(
        scene.materials[0].kind,
        MaterialKind::Standard {
            kd_texture: Some(0),
            ..
        }
    ));
    assert_eq!(scene.warnings.len(), 1, "{:?}", scene.warnings);
    let w = &scene.warnings[0];
    assert!(
        w.contains("m.mtl") && w.contains("Tf") && w.contains("Km"),
        "{w}"
    );
    assert_eq!(w.matches("Tf").count(), 1, "{w}");
}

#[test]
fn mtl_read_twice_still_warns_once_and_map_kd_without_kd_is_white() {
    let dir = scene_dir();
    std::fs::write(
        dir.path().join("m.mtl"),
        MTL.replace("Kd 0.5 0.5 0.5\n", ""),
    )
    .unwrap();
    let twice = format!("{GOOD}\n[[mesh]]\nobj = \"m.obj\"\nmtl = \"m.mtl\"\nmaterial = \"a\"\n");
    let scene = load_with(dir.path(), &twice).unwrap();
    assert_eq!(scene.geometry.triangle_count(), 2);
    assert_eq!(scene.warnings.len(), 1, "{:?}", scene.warnings);
    assert!(matches!(
        scene.materials[0].kind,
        MaterialKind::Standard { kd, kd_texture: Some(_), .. } if kd == glam::Vec3::ONE
    ));
}

#[test]
fn wrong_type_names_file_line_and_field() {
    let dir = scene_dir();
    let bad = GOOD.replace("vfov_deg = 40.0", "vfov_deg = \"wide\"");
    let e = load_with(dir.path(), &bad).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Parse { line: 5, .. }), "{msg}");
    assert!(
        msg.contains("scene.toml:5:") && msg.contains("camera.vfov_deg"),
        "{msg}"
    );
}

#[test]
fn out_of_range_value_names_file_line_and_field() {
    let dir = scene_dir();
    for (from, to, line, field) in [
        ("width = 8", "width = 0", 8, "film.width"),
        (
            "width = 8\nheight = 8",
            "width = 100000\nheight = 100000",
            8,
            "film",
        ),
        ("vfov_deg = 40.0", "vfov_deg = 200.0", 5, "camera.vfov_deg"),
        (
            "look_at = [0.0, 1.0, 0.0]",
            "look_at = [0.0, 1.0, 5.0]",
            4,
            "camera",
        ),
    ] {
        let e = load_with(dir.path(), &GOOD.replace(from, to)).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, Error::Parse { line: l, .. } if l == line),
            "{msg}"
        );
        assert!(msg.contains("scene.toml") && msg.contains(field), "{msg}");
    }
}

#[test]
fn unknown_and_missing_fields_are_named() {
    let dir = scene_dir();
    let e = load_with(dir.path(), &GOOD.replace("[film]", "[film]\nwidht = 3")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("widht") && msg.contains("scene.toml:8"),
        "{msg}"
    );
    let e = load_with(dir.path(), &GOOD.replace("eye = [0.0, 1.0, 5.0]\n", "")).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("eye") && msg.contains("scene.toml:"), "{msg}");
    let e = load_with(dir.path(), &GOOD.replace("obj = \"m.obj\"", "obj = 3")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("mesh[0].obj") && msg.contains("scene.toml:12"),
        "{msg}"
    );
}

#[test]
fn toml_syntax_error_names_the_line() {
    let dir = scene_dir();
    let e = load_with(dir.path(), &GOOD.replace("height = 8", "height = = 8")).unwrap_err();
    assert!(matches!(e, Error::Parse { line: 9, .. }), "{e}");
}

#[test]
fn missing_files_name_their_path() {
    let dir = scene_dir();
    // OBJ
    let e = load_with(dir.path(), &GOOD.replace("m.obj", "nothere.obj")).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path.ends_with("nothere.obj")),
        "{e}"
    );
    assert!(e.to_string().contains("nothere.obj"));
    // MTL
    std::fs::write(dir.path().join("m.obj"), OBJ.replace("m.mtl", "gone.mtl")).unwrap();
    let e = load_with(dir.path(), GOOD).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path.ends_with("gone.mtl")),
        "{e}"
    );
    // texture
    std::fs::write(dir.path().join("m.obj"), OBJ).unwrap();
    std::fs::write(dir.path().join("m.mtl"), MTL.replace("tex.png", "lost.png")).unwrap();
    let e = load_with(dir.path(), GOOD).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path.ends_with("lost.png")),
        "{e}"
    );
    // environment map
    std::fs::write(dir.path().join("m.mtl"), MTL).unwrap();
    let with_env = format!("{GOOD}\n[environment]\nhdr = \"nosky.hdr\"\n");
    let e = load_with(dir.path(), &with_env).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path.ends_with("nosky.hdr")),
        "{e}"
    );
    // the scene file itself
    let e = Scene::load(dir.path().join("absent.toml")).unwrap_err();
    assert!(e.to_string().contains("absent.toml"));
}

#[test]
fn bad_mtl_lines_name_the_file_and_line() {
    // MTL (line 2 is `Kd 0.5 0.5 0.5`): a short colour made tobj 4.0 panic; non-finite
    // numbers would make NaN pixels; each is an error at its line instead.
    let dir = scene_dir();
    for (from, to, line, words) in [
        ("Kd 0.5 0.5 0.5", "Kd 0.5 0.5", 2, ["`Kd`", "three"]),
        ("Kd 0.5 0.5 0.5", "Ke 17.0", 2, ["`Ke`", "three"]),
        ("Kd 0.5 0.5 0.5", "Kd 0.5 nan 0.5", 2, ["`Kd`", "finite"]),
        ("Kd 0.5 0.5 0.5", "Ks inf 0 0", 2, ["`Ks`", "finite"]),
        (
            "Kd 0.5 0.5 0.5",
            "Kd 0.5 0.5 0.5\nPr nan",
            3,
            ["`Pr`", "finite"],
        ),
        (
            "Kd 0.5 0.5 0.5",
            "Kd 0.5 0.5 0.5\n\nNi",
            4,
            ["`Ni`", "number"],
        ),
        (
            "Kd 0.5 0.5 0.5",
            "Kd 0.5 0.5 0.5\nillum 300",
            3,
            ["`illum`", "0-255"],
        ),
        ("map_Kd tex.png", "map_Kd   ", 3, ["`map_Kd`", "file name"]),
        ("newmtl a", "newmtl", 1, ["newmtl", "name"]),
    ] {
        std::fs::write(dir.path().join("m.mtl"), MTL.replace(from, to)).unwrap();
        let Err(e) = load_with(dir.path(), GOOD) else {
            panic!("{to}: loaded");
        };
        let msg = e.to_string();
        assert!(
            matches!(&e, Error::Parse { path, line: l, .. } if path.ends_with("m.mtl") && *l == line),
            "{to}: {msg}"
        );
        assert!(words.iter().all(|w| msg.contains(w)), "{to}: {msg}");
    }
    // The same file through a mesh's own `mtl`, and bytes that are not UTF-8.
    let mut bytes = MTL.as_bytes().to_vec();
    bytes.splice(0..0, b"# \xff\xfe\n".iter().copied());
    std::fs::write(dir.path().join("m.mtl"), bytes).unwrap();
    let forced = GOOD.replace(
        "obj = \"m.obj\"",
        "obj = \"m.obj\"\nmtl = \"m.mtl\"\nmaterial = \"a\"",
    );
    let e = load_with(dir.path(), &forced).unwrap_err();
    assert!(matches!(&e, Error::Parse { line: 1, .. }), "{e}");
    assert!(e.to_string().contains("UTF-8"), "{e}");
}

#[test]
fn bad_obj_lines_name_the_file_and_line() {
    let dir = scene_dir();
    // Line 9 is the face; line 2 the first vertex.
    for (from, to, line) in [
        ("f 1/1 2/2 3/3", "f 1/1 2/2 9/3", 9),
        ("v 0 0 0", "v 0 zero 0", 2),
    ] {
        std::fs::write(dir.path().join("m.obj"), OBJ.replace(from, to)).unwrap();
        let Err(e) = load_with(dir.path(), GOOD) else {
            panic!("{to}: loaded");
        };
        assert!(
            matches!(&e, Error::Parse { path, line: l, .. } if path.ends_with("m.obj") && *l == line),
            "{to}: {e}"
        );
    }
}

#[test]
fn unknown_material_name_is_an_error_naming_the_field() {
    let dir = scene_dir();
    let bad = GOOD.replace(
        "obj = \"m.obj\"",
        "obj = \"m.obj\"\nmtl = \"m.mtl\"\nmaterial = \"zzz\"",
    );
    let e = load_with(dir.path(), &bad).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("mesh[0].material") && msg.contains("zzz") && msg.contains("scene.toml:14"),
        "{msg}"
    );
}

#[test]
fn atomic_writer_leaves_nothing_when_the_producer_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.png");
    // A writer that fails half way (as an interrupted encoder would).
    let e = write_atomic(&out, |w| {
        w.write_all(b"half an image").unwrap();
        Err(Error::Other("interrupted".into()))
    });
    assert!(e.is_err());
    assert!(!out.exists());
    assert!(!partial_path(&out).exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // An existing file is kept intact by a failed write, replaced by a good one.
    std::fs::write(&out, b"old").unwrap();
    let _ = write_atomic(&out, |w| {
        w.write_all(b"new but broken").unwrap();
        Err(Error::Other("interrupted".into()))
    });
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    write_atomic(&out, |w| w.write_all(b"new").map_err(|e| Error::io("x", e))).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"new");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn png_and_exr_outputs_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let image = Image {
        width: 3,
        height: 2,
        pixels: (0..6)
            .map(|i| glam::Vec3::new(i as f32 * 0.2, 0.5, 2.0))
            .collect(),
    };
    let png = dir.path().join("a.png");
    write_image(&png, &image, 0.0).unwrap();
    let back = image::open(&png).unwrap().to_rgb8();
    assert_eq!(back.dimensions(), (3, 2));
    assert_eq!(back.get_pixel(0, 0).0, [0, 188, 255]); // sRGB(0.5) = 188, 2.0 clips
    let exr = dir.path().join("a.exr");
    write_image(&exr, &image, 0.0).unwrap();
    // Read back with the exr crate: linear f32, exactly the values written.
    let read = exr::prelude::read_first_rgba_layer_from_file(
        &exr,
        |res, _| vec![[0.0f32; 3]; res.width() * res.height()],
        |px: &mut Vec<[f32; 3]>, pos, (r, g, b, _a): (f32, f32, f32, f32)| {
            px[pos.y() * 3 + pos.x()] = [r, g, b];
        },
    )
    .unwrap();
    let px = &read.layer_data.channel_data.pixels;
    for (got, want) in px.iter().zip(&image.pixels) {
        assert_eq!(*got, want.to_array());
    }
    let e = write_image(&dir.path().join("a.jpg"), &image, 0.0).unwrap_err();
    assert!(e.to_string().contains("a.jpg"));
    // A NaN exposure would write a black PNG; it is refused, and nothing is written.
    let e = write_image(&dir.path().join("b.png"), &image, f32::NAN).unwrap_err();
    assert!(e.to_string().contains("exposure"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

/// The same pixels give the same EXR bytes: tiles stored in increasing order, not in the
/// order exr's parallel compressor finishes them (before, renders of one scene gave files
/// with different bytes from run to run).
#[test]
fn exr_output_is_the_same_bytes_every_time() {
    // 300 x 200: 20 tiles of 64 x 64 of varying content, so that the compressor's workers
    // finish them out of order.
    let (width, height) = (300u32, 200u32);
    let image = Image {
        width,
        height,
        pixels: (0..width * height)
            .map(|i| {
                let (x, y) = ((i % width) as f32, (i / width) as f32);
                // Flat tiles (RLE-cheap) beside noisy ones (RLE-expensive).
                let noisy = (x as u32 / 64 + y as u32 / 64).is_multiple_of(2);
                let n = if noisy {
                    (x * 12.9898 + y * 78.233).sin()
                } else {
                    0.25
                };
                glam::Vec3::new(n, x / 300.0, y / 200.0)
            })
            .collect(),
    };
    let encode = || {
        let mut bytes = Vec::new();
        wavetrace::render::encode_exr(&mut bytes, &image).unwrap();
        bytes
    };
    let first = encode();
    for _ in 0..8 {
        assert!(encode() == first, "the same image encoded to other bytes");
    }
    let meta =
        exr::meta::MetaData::read_from_buffered(std::io::Cursor::new(&first), false).unwrap();
    assert_eq!(
        meta.headers[0].line_order,
        exr::meta::attribute::LineOrder::Increasing
    );
}

/// A cancelled render returns `interrupted` with no partial pass in the image.
#[test]
fn cancelled_render_reports_interrupted() {
    let dir = scene_dir();
    let scene = Scene::load(dir.path().join("scene.toml")).unwrap();
    let tracer = common::BruteForceTracer::new(&scene.geometry);
    let cancel = AtomicBool::new(true);
    let out = wavetrace::render::render(
        &scene,
        &tracer,
        &RenderOptions::for_scene(&scene),
        Control {
            cancel: Some(&cancel),
            progress: None,
        },
    )
    .unwrap();
    assert!(out.interrupted);
    assert_eq!(out.stats.spp, 0);
}

#[test]
fn shipped_scenes_load() {
    let cornell = Scene::load(repo_path("scenes/cornell/cornell.toml")).unwrap();
    assert_eq!(cornell.geometry.triangle_count(), 32);
    let lights: Vec<_> = cornell
        .materials
        .iter()
        .filter(|m| m.is_emissive())
        .collect();
    assert_eq!(lights.len(), 1);
    assert!(cornell.warnings.is_empty(), "{:?}", cornell.warnings);
    let sky = Scene::load(repo_path("scenes/sky/sky.toml")).unwrap();
    assert!(matches!(
        sky.environment,
        wavetrace::scene::Environment::Map(_)
    ));
    assert_eq!(sky.textures.len(), 1);
    // The bunny scene reads the shared data (see scenes/bunny/bunny.toml).
    let bunny = Scene::load(repo_path("scenes/bunny/bunny.toml")).unwrap();
    assert!(bunny.geometry.triangle_count() > 69_630);
}
