//! Scenes: the TOML scene file, OBJ/MTL meshes, camera, materials, textures and lights.
//!
//! A [`Scene`] is plain data, flat or two-level. A flat scene is one triangle soup
//! ([`Geometry`], triangle `i` = primitive id `i`) with a material per triangle. A
//! two-level scene is a list of BLASes ([`SceneBlas`]: triangle meshes or procedural
//! spheres, in object space) and instances of them ([`SceneInstance`]: a BLAS, a 3x4
//! object-to-world matrix, mask, id and flags, as `D3D12_RAYTRACING_INSTANCE_DESC` holds
//! them). Both have textures, an [`Environment`] and a [`Camera`], and their material
//! indices all point into one [`Scene::materials`]. Load one from a scene file with
//! [`Scene::load`], or build one in code (tests do).
//!
//! Scene file (TOML; paths are relative to the file):
//!
//! ```toml
//! [camera]
//! eye = [278.0, 273.0, -800.0]
//! look_at = [278.0, 273.0, 0.0]
//! up = [0.0, 1.0, 0.0]        # optional, default +Y
//! vfov_deg = 39.3
//! [film]
//! width = 512
//! height = 512
//! [render]                    # optional
//! spp = 64                    # default 16
//! max_depth = 16              # path segments, default 8
//! [[mesh]]
//! obj = "cornell.obj"         # .obj or .obj.gz, with its mtllib
//! # optional: mtl = "other.mtl" and material = "name" (assign one material to every face),
//! # scale = 2.0 or [sx, sy, sz], rotate_y_deg = 30.0, translate = [x, y, z]
//! [environment]               # optional, default black
//! radiance = [0.0, 0.0, 0.0]  # constant radiance; or hdr = "sky.hdr" (equirect), scale = 1.0
//! ```
//!
//! A file with only `[[mesh]]` entries is a flat scene: every mesh, placed, goes into
//! [`Scene::geometry`]. Any of the three tables below makes the scene two-level:
//!
//! ```toml
//! [[blas]]                    # a triangle BLAS
//! name = "bunny"              # unique among [[blas]] and [[spheres]] names
//! obj = "bunny.obj"
//! opaque = false              # optional, default true (DXR's OPAQUE geometry flag)
//! # optional, as for [[mesh]] (the placement is baked into the BLAS's vertices):
//! # mtl, material, scale, rotate_y_deg, translate
//! [[spheres]]                 # a procedural BLAS
//! name = "balls"
//! mtl = "balls.mtl"           # optional: where the spheres' materials come from
//! opaque = true               # optional, default true
//! spheres = [                 # at least one; radius finite and > 0
//!     { center = [0.0, 1.0, 0.0], radius = 1.0, material = "red" },
//!     { center = [3.0, 0.5, 0.0], radius = 0.5 },  # no material: grey diffuse 0.8
//! ]
//! [[instance]]
//! blas = "bunny"              # a [[blas]] or [[spheres]] name
//! # optional: the object-to-world matrix, 3 rows of [r0, r1, r2, t], row-major as in
//! # D3D12_RAYTRACING_INSTANCE_DESC (world = M [object; 1]), default identity. Any finite,
//! # non-singular matrix: mirrored and non-uniformly scaled ones too.
//! transform = [[2.0, 0.0, 0.0, 10.0],
//!              [0.0, 1.0, 0.0, 0.0],
//!              [0.0, 0.0, -1.0, 5.0]]
//! mask = 0x0F                 # optional, 0..=255, default 255
//! id = 7                      # optional, 0..=0xFFFFFF, default the instance's number
//! flags = ["triangle_cull_disable", "force_opaque"]  # optional; also
//! #   "triangle_front_counterclockwise", "force_non_opaque" (not with "force_opaque")
//! ```
//!
//! In a two-level scene each `[[mesh]]` entry is a triangle BLAS named `mesh[i]` (opaque,
//! its placement baked in) with one identity instance, and [`Scene::geometry`] is empty.
//! BLASes are numbered `[[mesh]]` entries first, then `[[blas]]` and `[[spheres]]` entries
//! together in file order; instances `[[mesh]]` entries first, then `[[instance]]` entries
//! in file order. A BLAS no instance uses is loaded all the same, with a warning.
//!
//! Materials come from MTL files; see [`Material`] for the mapping.

mod camera;
mod file;
mod gltf_scene;
mod instance;
mod light;
mod material;
mod mesh_file;
mod obj;

/// Whether the bytes of an MTL file parse (for [`crate::fuzzing`]).
pub(crate) fn fuzz_mtl(path: &Path, data: &[u8]) -> bool {
    obj::parse_mtl(path, data).is_ok()
}
mod texture;

pub use camera::Camera;
pub use gltf_scene::FILM_HEIGHT as GLTF_FILM_HEIGHT;
pub use instance::{BlasShape, SceneBlas, SceneInstance, SceneSphere};
pub use light::{luminance, EnvMap, Environment, LightSample, Lights, TriangleLight};
pub use material::{Material, MaterialKind};
pub use texture::{linear_to_srgb8, srgb_to_linear, Texture, TEXTURE_SWIZZLE_MODE};

use crate::shard::Digest;
use crate::Result;
use glam::{Vec2, Vec3};
use std::path::Path;

/// Triangle soup with per-triangle attributes. Triangle `i` is primitive id `i` for the
/// tracer.
#[derive(Clone, Debug, Default)]
pub struct Geometry {
    /// Vertex positions.
    pub positions: Vec<[f32; 3]>,
    /// Vertex indices per triangle; counter-clockwise seen from the front.
    pub indices: Vec<[u32; 3]>,
    /// Texture coordinates of the three corners of each triangle (zeros when the mesh has
    /// none).
    pub uvs: Vec<[[f32; 2]; 3]>,
    /// Material index per triangle, into [`Scene::materials`].
    pub materials: Vec<u32>,
    /// Shading normals of the three corners of each triangle (from the OBJ's `vn`); all
    /// zero when the mesh has none (then the geometric normal shades).
    pub normals: Vec<[[f32; 3]; 3]>,
}

impl Geometry {
    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.indices.len()
    }

    /// The three corners of triangle `prim`.
    #[inline]
    pub fn corners(&self, prim: u32) -> [Vec3; 3] {
        let [a, b, c] = self.indices[prim as usize];
        [
            Vec3::from(self.positions[a as usize]),
            Vec3::from(self.positions[b as usize]),
            Vec3::from(self.positions[c as usize]),
        ]
    }

    /// Appends a triangle mesh with one material; returns the first new primitive id.
    pub fn push_mesh(
        &mut self,
        positions: &[[f32; 3]],
        indices: &[[u32; 3]],
        material: u32,
    ) -> u32 {
        let base = self.positions.len() as u32;
        let first = self.indices.len() as u32;
        self.positions.extend_from_slice(positions);
        for tri in indices {
            self.indices.push(tri.map(|i| i + base));
            self.uvs.push([[0.0; 2]; 3]);
            self.normals.push([[0.0; 3]; 3]);
            self.materials.push(material);
        }
        first
    }

    /// Appends every triangle of `other` (its vertex indices offset past this geometry's
    /// vertices).
    pub fn append(&mut self, other: Geometry) {
        let base = self.positions.len() as u32;
        self.positions.extend(other.positions);
        self.indices
            .extend(other.indices.into_iter().map(|tri| tri.map(|i| i + base)));
        self.uvs.extend(other.uvs);
        self.materials.extend(other.materials);
        self.normals.extend(other.normals);
    }
}

/// Output image size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilmSize {
    pub width: u32,
    pub height: u32,
}

/// A loaded scene.
#[derive(Clone, Debug)]
pub struct Scene {
    pub camera: Camera,
    pub film: FilmSize,
    /// Samples per pixel asked by the scene file (the CLI may override it).
    pub spp: u32,
    /// Maximum path segments (camera ray = segment 1).
    pub max_depth: u32,
    /// The triangles of a flat scene (one that has only `[[mesh]]` entries): one BVH, no
    /// instances. Empty in a two-level scene.
    pub geometry: Geometry,
    /// The BLASes of a two-level scene (one with `[[blas]]`, `[[spheres]]` or
    /// `[[instance]]` entries), `[[mesh]]` entries first; empty in a flat scene.
    pub blases: Vec<SceneBlas>,
    /// The instances of a two-level scene, numbered `[[mesh]]` entries first, then
    /// `[[instance]]` entries, in file order; empty in a flat scene.
    pub instances: Vec<SceneInstance>,
    pub materials: Vec<Material>,
    pub textures: Vec<Texture>,
    pub environment: Environment,
    /// Non-fatal problems found while loading (unknown MTL keys...), for the CLI to print.
    pub warnings: Vec<String>,
}

impl Scene {
    /// Adds everything a render of the scene depends on to `digest` (the job identity of a
    /// sharded render): geometry and instances, materials, camera, film, environment, and
    /// each texture's and environment map's file. Errors name a file that cannot be read
    /// again.
    pub fn add_to_digest(&self, digest: &mut Digest) -> Result<()> {
        use std::fmt::Write;
        let geometry = |d: &mut Digest, g: &Geometry| {
            d.field("positions", bytemuck::cast_slice(&g.positions))
                .field("indices", bytemuck::cast_slice(&g.indices))
                .field("uvs", bytemuck::cast_slice(&g.uvs))
                .field("normals", bytemuck::cast_slice(&g.normals))
                .field("materials", bytemuck::cast_slice(&g.materials));
        };
        geometry(digest, &self.geometry);
        for b in &self.blases {
            let _ = write!(digest, "blas {} opaque {}", b.name, b.opaque);
            match &b.shape {
                BlasShape::Triangles(g) => geometry(digest, g),
                BlasShape::Spheres(s) => {
                    let _ = write!(digest, "{s:?}");
                }
            }
        }
        let _ = write!(
            digest,
            "{:?} {:?} {:?} spp {} depth {} {:?}",
            self.instances, self.materials, self.camera, self.spp, self.max_depth, self.film
        );
        for t in &self.textures {
            digest.file("texture", &t.path)?;
        }
        match &self.environment {
            Environment::Constant(c) => {
                let _ = write!(digest, "environment {c:?}");
            }
            Environment::Map(m) => {
                let _ = write!(digest, "environment map {}x{}", m.width, m.height);
                for t in &m.texels {
                    digest.bytes(bytemuck::cast_slice(&t.to_array()));
                }
            }
        }
        Ok(())
    }
    /// An empty scene (no geometry, black environment) seen by `camera`.
    pub fn new(camera: Camera, film: FilmSize) -> Self {
        Scene {
            camera,
            film,
            spp: 16,
            max_depth: 8,
            geometry: Geometry::default(),
            blases: Vec::new(),
            instances: Vec::new(),
            materials: Vec::new(),
            textures: Vec::new(),
            environment: Environment::Constant(Vec3::ZERO),
            warnings: Vec::new(),
        }
    }

    /// The scene on a `width` x `height` film: the same camera and field of view (a film of
    /// another aspect shows more or less to the sides).
    pub fn with_film_size(mut self, width: u32, height: u32) -> Result<Scene> {
        self.camera = self.camera.resized(width, height)?;
        self.film = FilmSize { width, height };
        Ok(self)
    }

    /// Loads a scene file and everything it references; a glTF file (`.gltf`, `.glb`) is
    /// loaded as a scene of its own (its camera, materials and instances; see
    /// [`Scene::load_gltf`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Scene> {
        let path = path.as_ref();
        match crate::bvh::mesh::MeshFormat::of(path) {
            crate::bvh::mesh::MeshFormat::Gltf => Self::load_gltf(path),
            _ => file::load(path),
        }
    }

    /// Loads a glTF 2.0 file as a two-level scene: one BLAS per glTF mesh that a node
    /// places, one instance per such node (its world matrix), the materials mapped as the
    /// table in `docs/scene-format.md` says, the first perspective camera (else a camera
    /// framing the scene) and a film [`GLTF_FILM_HEIGHT`] pixels high, as wide as the
    /// camera's aspect ratio asks (square without one).
    pub fn load_gltf(path: impl AsRef<Path>) -> Result<Scene> {
        gltf_scene::load(path.as_ref())
    }

    /// Parses scene-file text; `path` names the file in errors and relative paths are taken
    /// from its directory.
    pub fn from_toml_str(text: &str, path: impl AsRef<Path>) -> Result<Scene> {
        file::parse(text, path.as_ref())
    }

    /// Whether the scene is two-level (instances of BLASes) rather than one flat mesh.
    pub fn is_instanced(&self) -> bool {
        !self.instances.is_empty()
    }

    /// Adds a material; returns its index.
    pub fn add_material(&mut self, material: Material) -> u32 {
        self.materials.push(material);
        (self.materials.len() - 1) as u32
    }

    /// Alpha in [0, 1] of material `material` at texture coordinates `uv`: its alpha
    /// texture's value there ([`Texture::alpha_at`]), 1 without one. `material` must be an
    /// index into [`Scene::materials`].
    pub fn alpha_at(&self, material: u32, uv: Vec2) -> f32 {
        match self.materials[material as usize].alpha_texture {
            Some(t) => self.textures[t as usize].alpha_at(uv),
            None => 1.0,
        }
    }
}
