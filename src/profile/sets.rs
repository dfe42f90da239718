//! The ray sets a profile runs: the canonical reference image and its hits, the built-in
//! ray kinds made from a camera, and a scene's camera rays and triangles.

use super::{rays, QueryKind, RaySet};
use crate::bvh::{self, BoxFormat, BuildOptions, BvhImage, Mesh};
use crate::counters::Counters;
use crate::math::{Hit, Ray};
use crate::traverse::{WaveTracer, WaveTracerConfig};
use crate::wave::Tracer;
use crate::Result;
use rayon::prelude::*;

/// The canonical reference image: FP32 boxes, one triangle per node, binned SAH.
pub fn reference_image(mesh: &Mesh) -> Result<BvhImage> {
    let options = BuildOptions {
        box_format: BoxFormat::Fp32,
        triangles_per_node: 1,
        ..BuildOptions::default()
    };
    Ok(bvh::build(mesh, &options)?.image)
}

/// Closest hits of `rays` by [`bvh::closest_hit_scalar`], in parallel.
pub fn reference_hits(image: &BvhImage, mesh: &Mesh, rays: &[Ray]) -> Vec<Hit> {
    rays.par_iter()
        .map(|r| bvh::closest_hit_scalar(image, mesh, r))
        .collect()
}

/// The hits of [`reference_hits`] (t, primitive, barycentrics and facing, bit for bit),
/// found by the wave model's full-stack traversal, several times faster: the wave tracer is
/// held equal to the scalar traversal on every build (`tests/trace_equivalence.rs`, and
/// `tests/profile_equivalence.rs` on the profile's own sets). For the canonical image's
/// hits, which every profile (and every shard of one) computes before its first variant:
/// the ray sets' sources and the `vs fp32` column. Each variant's guard keeps the scalar
/// traversal.
pub fn canonical_hits(image: &BvhImage, mesh: &Mesh, rays: &[Ray]) -> Vec<Hit> {
    let tracer = WaveTracer::new(image, mesh, WaveTracerConfig::default());
    let mut hits = vec![Hit::MISS; rays.len()];
    tracer.closest_hits(rays, &mut hits, None, &mut Counters::default());
    hits
}

/// The built-in ray sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RayKind {
    /// One camera ray per pixel (closest hit).
    Primary,
    /// Cosine bounce rays from the camera rays' hits (closest hit).
    Diffuse,
    /// Rays from the camera rays' hits to a point light above the scene (any hit).
    Shadow,
    /// Ambient-occlusion rays of a tenth of the scene diagonal (any hit).
    Ao,
}

impl RayKind {
    pub fn from_name(name: &str) -> Option<RayKind> {
        match name {
            "primary" => Some(RayKind::Primary),
            "diffuse" => Some(RayKind::Diffuse),
            "shadow" => Some(RayKind::Shadow),
            "ao" => Some(RayKind::Ao),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RayKind::Primary => "primary",
            RayKind::Diffuse => "diffuse",
            RayKind::Shadow => "shadow",
            RayKind::Ao => "ao",
        }
    }
}

/// Builds a ray set: the camera rays `primary`, or secondary rays spawned from their
/// reference hits (offset by 1e-4 of the mesh's diagonal along the normal, `seed` for the
/// random directions). Returns the set and, for primary rays, their reference hits.
pub fn make_rays(
    kind: RayKind,
    mesh: &Mesh,
    reference: &BvhImage,
    primary: Vec<Ray>,
    seed: u64,
) -> (RaySet, Option<Vec<Hit>>) {
    let hits = canonical_hits(reference, mesh, &primary);
    let bounds = mesh_bounds(mesh);
    let diagonal = bounds.extent().length();
    let eps = 1e-4 * diagonal;
    let (rays, query) = match kind {
        RayKind::Primary => {
            return (
                RaySet {
                    name: kind.name().into(),
                    rays: primary,
                    query: QueryKind::ClosestHit,
                },
                Some(hits),
            )
        }
        RayKind::Diffuse => (
            rays::diffuse_rays(mesh, &primary, &hits, eps, seed),
            QueryKind::ClosestHit,
        ),
        RayKind::Ao => (
            rays::ao_rays(mesh, &primary, &hits, eps, 0.1 * diagonal, seed),
            QueryKind::AnyHit,
        ),
        RayKind::Shadow => {
            let light = bounds.center() + glam::Vec3::new(0.15, 0.6, 0.1) * diagonal;
            (
                rays::shadow_rays(mesh, &primary, &hits, eps, light),
                QueryKind::AnyHit,
            )
        }
    };
    (
        RaySet {
            name: kind.name().into(),
            rays,
            query,
        },
        None,
    )
}

/// Camera rays of a scene's camera for a `width x height` grid of pixel centres spread over
/// the scene's film (so the scene's aspect ratio is kept), row-major, row 0 at the top.
pub fn scene_primary_rays(scene: &crate::scene::Scene, width: u32, height: u32) -> Vec<Ray> {
    let (fw, fh) = (scene.film.width as f32, scene.film.height as f32);
    let mut out = Vec::with_capacity(width as usize * height as usize);
    for y in 0..height {
        for x in 0..width {
            let fx = (x as f32 + 0.5) * fw / width as f32;
            let fy = (y as f32 + 0.5) * fh / height as f32;
            out.push(scene.camera.ray(fx, fy));
        }
    }
    out
}

/// A scene's triangles as a [`Mesh`] (triangle i = primitive id i, as the renderer uses).
pub fn scene_mesh(scene: &crate::scene::Scene) -> Mesh {
    Mesh {
        positions: scene.geometry.positions.clone(),
        indices: scene.geometry.indices.clone(),
    }
}

/// Bounding box of the mesh's finite vertices.
pub fn mesh_bounds(mesh: &Mesh) -> crate::math::Aabb {
    let points: Vec<glam::Vec3> = mesh
        .positions
        .iter()
        .filter(|p| p.iter().all(|c| c.is_finite()))
        .map(|&p| glam::Vec3::from(p))
        .collect();
    crate::math::Aabb::from_points(&points)
}
