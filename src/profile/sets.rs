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

/// One ray in this many (and the last) is traced by the scalar traversal as well in
/// [`guard_hits`].
pub const GUARD_SCALAR_STRIDE: usize = 16;

/// The guard's reference hits on a variant's image: [`reference_hits`], found the way
/// [`canonical_hits`] finds them (the wave model's full-stack traversal, held bit-identical
/// to the scalar traversal on every build by the tests), and checked as they are made: every
/// [`GUARD_SCALAR_STRIDE`]-th ray and the last are traced by the scalar traversal too, and
/// if any of them differs in any bit, every ray is traced by the scalar traversal and those
/// hits are returned. So the variants are never compared with anything but the scalar
/// traversal's answer, at about a fifth of its cost.
pub fn guard_hits(image: &BvhImage, mesh: &Mesh, rays: &[Ray]) -> Vec<Hit> {
    let fast = canonical_hits(image, mesh, rays);
    checked_by_scalar(fast, image, mesh, rays, GUARD_SCALAR_STRIDE)
}

/// `fast` if the scalar traversal gives the same hit, bit for bit, on every `stride`-th ray
/// and the last; otherwise the scalar traversal's hits of every ray.
pub fn checked_by_scalar(
    fast: Vec<Hit>,
    image: &BvhImage,
    mesh: &Mesh,
    rays: &[Ray],
    stride: usize,
) -> Vec<Hit> {
    let stride = stride.max(1);
    let last = rays.len().saturating_sub(1);
    let agrees = |i: usize| same_bits(&fast[i], &bvh::closest_hit_scalar(image, mesh, &rays[i]));
    let checked = fast.len() == rays.len()
        && (0..rays.len()).into_par_iter().step_by(stride).all(agrees)
        && (last.is_multiple_of(stride) || agrees(last));
    if checked {
        fast
    } else {
        reference_hits(image, mesh, rays)
    }
}

/// Every field of two hits, bit for bit.
fn same_bits(a: &Hit, b: &Hit) -> bool {
    a.t.to_bits() == b.t.to_bits()
        && a.prim_id == b.prim_id
        && a.bary.map(f32::to_bits) == b.bary.map(f32::to_bits)
        && a.front_face == b.front_face
        && a.instance == b.instance
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

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    /// A ring of quads around the z axis, and rays from the axis through them.
    fn ring() -> (Mesh, Vec<Ray>) {
        let mut tris = Vec::new();
        for k in 0..24 {
            let a = k as f32 * std::f32::consts::TAU / 24.0;
            let b = (k + 1) as f32 * std::f32::consts::TAU / 24.0;
            let (p, q) = (
                Vec3::new(a.cos(), a.sin(), 0.0),
                Vec3::new(b.cos(), b.sin(), 0.0),
            );
            let up = Vec3::Z * 0.5;
            tris.push([p.to_array(), q.to_array(), (q + up).to_array()]);
            tris.push([p.to_array(), (q + up).to_array(), (p + up).to_array()]);
        }
        let rays = (0..100)
            .map(|i| {
                let a = i as f32 * 0.0637;
                let dir = Vec3::new(a.cos(), a.sin(), 0.3 * ((i % 5) as f32 - 2.0) / 2.0);
                Ray::new(
                    Vec3::new(0.0, 0.0, 0.2),
                    dir.normalize(),
                    0.0,
                    f32::INFINITY,
                )
            })
            .collect();
        (Mesh::from_triangles(&tris), rays)
    }

    #[test]
    fn a_fast_answer_that_differs_on_a_checked_ray_is_replaced_by_the_scalar_one() {
        let (mesh, rays) = ring();
        let image = reference_image(&mesh).unwrap();
        let scalar = reference_hits(&image, &mesh, &rays);
        assert!(scalar.iter().filter(|h| h.is_hit()).count() > 60);
        let same = checked_by_scalar(scalar.clone(), &image, &mesh, &rays, 16);
        assert!(same.iter().zip(&scalar).all(|(a, b)| same_bits(a, b)));
        // One bit of t on a checked ray (32, a multiple of the stride), then on the last ray
        // (99, checked though not a multiple).
        for wrong_ray in [32, 99] {
            let mut wrong = scalar.clone();
            wrong[wrong_ray].t = f32::from_bits(wrong[wrong_ray].t.to_bits() ^ 1);
            let fixed = checked_by_scalar(wrong, &image, &mesh, &rays, 16);
            assert!(fixed.iter().zip(&scalar).all(|(a, b)| same_bits(a, b)));
        }
        // A difference on a ray between the checked ones is kept (that is the bargain; the
        // tests hold the fast traversal equal to the scalar one everywhere).
        let mut unchecked = scalar.clone();
        unchecked[33].prim_id ^= 1;
        let kept = checked_by_scalar(unchecked, &image, &mesh, &rays, 16);
        assert_ne!(kept[33].prim_id, scalar[33].prim_id);
    }
}
