//! Two-level scenes: bottom-level structures (BLASes: triangle meshes or procedural
//! spheres) and instances of them, as `[[blas]]`, `[[spheres]]` and `[[instance]]` describe
//! them in the scene file (`[[mesh]]` is a triangle BLAS with one identity instance).

use super::Geometry;
use crate::hw::InstanceFlags;
use glam::Vec3;

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

impl SceneBlas {
    /// Number of primitives (triangles or spheres).
    pub fn primitive_count(&self) -> usize {
        match &self.shape {
            BlasShape::Triangles(g) => g.triangle_count(),
            BlasShape::Spheres(s) => s.len(),
        }
    }
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

    /// The world-space position of object-space point `p`: `M [p; 1]`, each row summed
    /// left to right in f32.
    #[inline]
    pub fn world_from_object(&self, p: Vec3) -> Vec3 {
        let row = |r: &[f32; 4]| r[0] * p.x + r[1] * p.y + r[2] * p.z + r[3];
        let [r0, r1, r2] = &self.object_to_world;
        Vec3::new(row(r0), row(r1), row(r2))
    }

    /// Determinant of the matrix's 3x3 (linear) part, in f64.
    pub fn determinant(&self) -> f64 {
        linear_determinant(&self.object_to_world)
    }

    /// Whether the instance mirrors (negative determinant): its triangles' winding, seen
    /// in world space, is the reverse of their winding in object space.
    pub fn is_mirrored(&self) -> bool {
        self.determinant() < 0.0
    }

    /// Whether `m` cannot be an instance matrix: its 3x3 part is singular, or so close to
    /// singular for its size that its inverse means nothing:
    /// `|det| <= 1e-12 * (max |entry|)^3` over the 3x3 part, in f64 (a scale-free test: it
    /// holds for `m` exactly when it holds for `m` times any non-zero number).
    pub fn is_singular(m: &[[f32; 4]; 3]) -> bool {
        let largest = m
            .iter()
            .flat_map(|row| &row[..3])
            .fold(0.0f64, |a, &x| a.max((x as f64).abs()));
        linear_determinant(m).abs() <= 1e-12 * largest * largest * largest
    }
}

/// Determinant of the 3x3 part of a 3x4 row-major matrix, in f64.
fn linear_determinant(m: &[[f32; 4]; 3]) -> f64 {
    let e = |r: usize, c: usize| m[r][c] as f64;
    e(0, 0) * (e(1, 1) * e(2, 2) - e(1, 2) * e(2, 1))
        - e(0, 1) * (e(1, 0) * e(2, 2) - e(1, 2) * e(2, 0))
        + e(0, 2) * (e(1, 0) * e(2, 1) - e(1, 1) * e(2, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(m: [[f32; 4]; 3]) -> SceneInstance {
        SceneInstance {
            object_to_world: m,
            ..SceneInstance::identity(0, 0)
        }
    }

    #[test]
    fn world_from_object_is_the_matrix_times_the_point() {
        let i = instance([
            [0.0, 2.0, 0.0, 1.0],
            [0.0, 0.0, -3.0, 2.0],
            [0.5, 0.0, 0.0, 3.0],
        ]);
        let p = Vec3::new(1.0, 2.0, 4.0);
        assert_eq!(i.world_from_object(p), Vec3::new(5.0, -10.0, 3.5));
        assert_eq!(i.determinant(), -3.0);
        assert!(i.is_mirrored());
        assert!(!SceneInstance::identity(3, 4).is_mirrored());
    }

    #[test]
    fn singular_is_relative_to_the_matrix_size() {
        let scaled = |s: f32, z: f32| {
            [
                [s, 0.0, 0.0, 7.0],
                [0.0, s, 0.0, 0.0],
                [0.0, 0.0, s * z, 0.0],
            ]
        };
        // Scale-free: the same shape at any size is singular or not alike.
        for s in [1e-12, 1e-3, 1.0, 1e3, 1e12] {
            assert!(!SceneInstance::is_singular(&scaled(s, 1.0)), "{s}");
            assert!(!SceneInstance::is_singular(&scaled(s, 1e-11)), "{s}");
            assert!(SceneInstance::is_singular(&scaled(s, 1e-13)), "{s}");
            assert!(SceneInstance::is_singular(&scaled(s, 0.0)), "{s}");
        }
        // The translation column does not count.
        assert!(SceneInstance::is_singular(&[
            [0.0, 0.0, 0.0, 1.0],
            [0.0, 0.0, 0.0, 1.0],
            [0.0, 0.0, 0.0, 1.0],
        ]));
    }
}
