//! Entry points for fuzzing: every parser and decoder a user feeds, on arbitrary bytes.
//!
//! Each target takes the bytes of one input file and runs the parser the program runs on
//! that kind of file (and, where the parse succeeds, what the program does next with the
//! result: a parsed instruction vector runs through the reference instruction, a parsed
//! mesh is built and validated). A target returns whether the input was accepted; it must
//! never panic, hang or read out of bounds, whatever the bytes. The fuzz targets in
//! `fuzz/` (cargo-fuzz, libFuzzer) and the replay test `tests/fuzz_replay.rs` call these
//! same functions.

use crate::bvh::{self, BuildOptions, Mesh};
use crate::hw::{BvhDescriptor, NodePointer};
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// A fuzz target: its name (the corpus directory) and its entry point.
pub type Target = (&'static str, fn(&[u8]) -> bool);

/// Every target, by name.
pub const TARGETS: [Target; 11] = [
    ("obj", obj),
    ("obj_gz", obj_gz),
    ("mtl", mtl),
    ("ply", ply),
    ("gltf", gltf),
    ("scene_toml", scene_toml),
    ("ray_file", ray_file),
    ("isa_jsonl", isa_jsonl),
    ("tiling_json", tiling_json),
    ("texture", texture),
    ("bvh_image", bvh_image),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<fn(&[u8]) -> bool> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Most bytes a gzip stream may inflate to here (a decompression bomb stops at this).
const MAX_INFLATED: u64 = 16 << 20;

/// Most triangles of a mesh that is built and validated after it parsed (the build is the
/// slow part; a parser's own work has no such limit).
const MAX_BUILT_TRIANGLES: usize = 4096;

/// An OBJ file: parsed; a mesh with triangles is built and validated.
pub fn obj(data: &[u8]) -> bool {
    match Mesh::parse_obj(Path::new("fuzz.obj"), data) {
        Ok(mesh) => {
            build_and_validate(&mesh);
            true
        }
        Err(_) => false,
    }
}

/// A gzip-compressed OBJ file (`.obj.gz`).
pub fn obj_gz(data: &[u8]) -> bool {
    let mut text = Vec::new();
    let inflated = flate2::read::GzDecoder::new(data)
        .take(MAX_INFLATED)
        .read_to_end(&mut text);
    inflated.is_ok() && obj(&text)
}

/// An MTL file.
pub fn mtl(data: &[u8]) -> bool {
    crate::scene::fuzz_mtl(Path::new("fuzz.mtl"), data)
}

/// A PLY file (ASCII or binary).
pub fn ply(data: &[u8]) -> bool {
    bvh::ply::parse_ply(Path::new("fuzz.ply"), data).is_ok()
}

/// A glTF 2.0 file (`.gltf` JSON or `.glb`): parsed and flattened to one mesh.
pub fn gltf(data: &[u8]) -> bool {
    let Ok(file) = bvh::gltf_mesh::GltfFile::parse(Path::new("fuzz.glb"), data) else {
        return false;
    };
    let mut warnings = Vec::new();
    match file.flatten(&mut warnings) {
        Ok(mesh) => {
            build_and_validate(&mesh);
            true
        }
        Err(_) => false,
    }
}

/// A scene file (TOML). The files it names are looked up in a directory that does not
/// exist, so only the scene file's own parsing and checks run.
pub fn scene_toml(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    crate::scene::Scene::from_toml_str(text, "/nonexistent-fuzz-dir/fuzz.toml").is_ok()
}

/// A ray file (8 x f32 per ray).
pub fn ray_file(data: &[u8]) -> bool {
    crate::traverse::rayfile::parse_rays(Path::new("fuzz.rays"), data).is_ok()
}

/// Instruction test vectors (JSON Lines): every line that parses runs through the
/// reference instruction.
pub fn isa_jsonl(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let mut all = true;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match crate::vectors::parse_line(line) {
            Ok((_, vector)) => {
                std::hint::black_box(vector.run());
            }
            Err(_) => all = false,
        }
    }
    all
}

/// A tiling reference-vector file (JSON), verified without the exhaustive texel hash.
pub fn tiling_json(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    crate::tiling::reference::verify_str(text, Path::new("fuzz.json"), None, false).is_ok()
}

/// A texture image (PNG or Radiance HDR, by its bytes).
pub fn texture(data: &[u8]) -> bool {
    crate::scene::Texture::decode(Path::new("fuzz.png"), data).is_ok()
}

/// The BVH validator on arbitrary node bytes: a small valid image with its first bytes
/// (and, from the 17th byte on, its descriptor and root pointer) replaced by `data`. The
/// validator must reject what is wrong without panicking or reading out of bounds.
pub fn bvh_image(data: &[u8]) -> bool {
    static BASE: OnceLock<(bvh::BvhImage, Mesh)> = OnceLock::new();
    let (base, mesh) = BASE.get_or_init(|| {
        let mesh = small_grid(6);
        let built = bvh::build(&mesh, &BuildOptions::default()).expect("a grid builds");
        (built.image, mesh)
    });
    let mut image = base.clone();
    let (head, rest) = data.split_at(data.len().min(16));
    if head.len() == 16 {
        let dwords: [u32; 4] = std::array::from_fn(|i| {
            u32::from_le_bytes([
                head[4 * i],
                head[4 * i + 1],
                head[4 * i + 2],
                head[4 * i + 3],
            ])
        });
        if let Ok(descriptor) = BvhDescriptor::from_dwords(dwords) {
            image.descriptor = descriptor;
        }
        image.root = NodePointer::from_u32(dwords[0] ^ dwords[3]);
    }
    let n = rest.len().min(image.bytes.len());
    image.bytes[..n].copy_from_slice(&rest[..n]);
    bvh::validate(&image, mesh).is_empty()
}

/// Builds and validates `mesh` when it is small enough (the build must not panic on any
/// mesh a parser accepts; the validator must find nothing wrong with the build).
fn build_and_validate(mesh: &Mesh) {
    if mesh.is_empty() || mesh.len() > MAX_BUILT_TRIANGLES {
        return;
    }
    if let Ok(built) = bvh::build(mesh, &BuildOptions::default()) {
        let errors = bvh::validate(&built.image, mesh);
        assert!(
            errors.is_empty(),
            "a built image fails validation: {errors:?}"
        );
    }
}

/// An `n` x `n` grid of quads (two triangles each) in the z = 0 plane.
fn small_grid(n: u32) -> Mesh {
    let mut triangles = Vec::new();
    for y in 0..n {
        for x in 0..n {
            let (x0, y0, x1, y1) = (x as f32, y as f32, x as f32 + 1.0, y as f32 + 1.0);
            triangles.push([[x0, y0, 0.0], [x1, y0, 0.0], [x1, y1, 0.0]]);
            triangles.push([[x0, y0, 0.0], [x1, y1, 0.0], [x0, y1, 0.0]]);
        }
    }
    Mesh::from_triangles(&triangles)
}
