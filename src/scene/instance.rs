//! Two-level scenes: bottom-level structures (BLASes: triangle meshes or procedural
//! spheres) and instances of them, as `[[blas]]`, `[[spheres]]` and `[[instance]]` describe
//! them in the scene file (`[[mesh]]` is a triangle BLAS with one identity instance).

use super::Geometry;
use crate::hw::InstanceFlags;

/// A procedural sphere of a [`BlasShape::Spheres`] BLAS, in object space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneSphere {
    pub center: [f32; 3],
    pub radius: f32,
    /// Index into [`super::Scene::materials`].
    pub material: u32,
}

/// What a BLAS holds.
#[derive(Clone, Debug)]
pub enum BlasShape {
    /// A triangle mesh; its triangle `i` is primitive `i` of the BLAS.
    Triangles(Geometry),
    /// Procedural spheres; sphere `i` is primitive `i` of the BLAS.
    Spheres(Vec<SceneSphere>),
}

/// A bottom-level structure: built once, however many instances use it.
#[derive(Clone, Debug)]
pub struct SceneBlas {
    /// Its name in the scene file (`mesh[i]` for a `[[mesh]]` entry).
    pub name: String,
    pub shape: BlasShape,
    /// The DXR geometry flag `OPAQUE`: a non-opaque BLAS runs the any-hit shader on each
    /// candidate hit.
    pub opaque: bool,
}

/// An instance of a BLAS, as `D3D12_RAYTRACING_INSTANCE_DESC` describes one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneInstance {
    /// Index into [`super::Scene::blases`].
    pub blas: u32,
    /// Object-to-world 3x4 matrix, row-major: `world = M [object; 1]`. Never singular.
    pub object_to_world: [[f32; 4]; 3],
    /// Instance mask (ANDed with the ray's inclusion mask; 0 = never hit).
    pub mask: u8,
    /// Instance id (24 bits), `InstanceID()` in a shader.
    pub id: u32,
    pub flags: InstanceFlags,
}

impl SceneInstance {
    /// The identity instance of BLAS `blas` with default mask, flags, and id `id`.
    pub fn identity(blas: u32, id: u32) -> SceneInstance {
        SceneInstance {
            blas,
            object_to_world: [
                [1.0, 0.0, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0],
                [0.0, 0.0, 1.0, 0.0],
            ],
            mask: 0xFF,
            id,
            flags: InstanceFlags::NONE,
        }
    }
}
