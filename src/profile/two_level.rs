//! The TLAS axis of a scene's profile: the scene's two-level image without and with
//! rebraiding, and the scene flattened into one BLAS, run through [`WaveTracer`] (the
//! lockstep schedule, the one that runs the two-level traversal shader; hits and counters
//! are the same in every schedule, the stream schedule's stack and node-byte tallies are not
//! measured and read NaN).
//!
//! Guard: each variant's hits are compared geometrically ([`agrees_geometrically`]) with a
//! reference built independently of the wave model: the scalar reference traversal on the
//! flattened scene's canonical image, and each procedural instance's spheres intersected in
//! f64 with the ray moved into object space by the f64 inverse of the instance's matrix.
//! The any-hit shader accepts every candidate (no alpha test), so the reference needs no
//! materials.

use super::measure::{agrees_geometrically, result, run_memory_model, Figures};
use super::{QueryKind, RaySet, TlasMode, Variant, VariantResult};
use crate::bvh::two_level::{
    affine_f64, build_two_level, BlasGeometry, TwoLevelInput, TwoLevelOptions,
};
use crate::bvh::{self, Mesh};
use crate::counters::Counters;
use crate::hw::peak::ConsoleConfig;
use crate::math::{Hit, Ray};
use crate::memory::{Machine, MemoryReport};
use crate::traverse::dxr::RayFlags;
use crate::traverse::{Schedule, SimdPath, WaveTracer, WaveTracerConfig};
use crate::wave::Tracer;
use crate::Result;
use glam::DVec3;
use rayon::prelude::*;
use std::time::Instant;

/// The ray flags and instance mask the TLAS axis traces with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SceneRays {
    pub flags: RayFlags,
    pub mask: u8,
}

/// The reference hits of a scene: `triangles` (the scalar reference on the flattened
/// scene, one per ray) merged with the nearest sphere hit of every procedural instance
/// (t in `[tmin, tmax]`, computed in f64). A sphere hit has primitive 0 of its instance.
pub fn scene_reference_hits(input: &TwoLevelInput, rays: &[Ray], triangles: &[Hit]) -> Vec<Hit> {
    // Each procedural instance: the inverse of its matrix, its translation, its spheres.
    let procedural: Vec<_> = input
        .instances
        .iter()
        .enumerate()
        .filter_map(
            |(i, inst)| match &input.blases[inst.blas as usize].geometry {
                BlasGeometry::Spheres(spheres) => {
                    let (a, t) = affine_f64(&inst.object_to_world);
                    Some((i as u32, a.inverse(), t, spheres))
                }
                BlasGeometry::Triangles(_) => None,
            },
        )
        .collect();
    rays.par_iter()
        .zip(triangles)
        .map(|(ray, &tri)| {
            let mut best = tri;
            let o = DVec3::new(
                ray.origin.x as f64,
                ray.origin.y as f64,
                ray.origin.z as f64,
            );
            let d = DVec3::new(ray.dir.x as f64, ray.dir.y as f64, ray.dir.z as f64);
            let (tmin, tmax) = (ray.tmin as f64, ray.tmax as f64);
            for (instance, inv, t, spheres) in &procedural {
                let (oo, od) = (*inv * (o - *t), *inv * d);
                for s in spheres.iter() {
                    let c = DVec3::new(s.center[0] as f64, s.center[1] as f64, s.center[2] as f64);
                    let oc = oo - c;
                    let (a, b) = (od.length_squared(), od.dot(oc));
                    let r = s.radius as f64;
                    let disc = b * b - a * (oc.length_squared() - r * r);
                    if a == 0.0 || disc.is_nan() || disc < 0.0 {
                        continue;
                    }
                    let root = [(-b - disc.sqrt()) / a, (-b + disc.sqrt()) / a]
                        .into_iter()
                        .find(|&x| x >= tmin && x <= tmax);
                    if let Some(x) = root {
                        if (x as f32) < best.t {
                            best = Hit {
                                t: x as f32,
                                prim_id: 0,
                                instance: *instance,
                                ..Hit::MISS
                            };
                        }
                    }
                }
            }
            best
        })
        .collect()
}

/// What a TLAS-axis variant is compared with.
#[derive(Clone, Copy, Debug)]
pub struct References<'a> {
    /// The guard ([`reference_for`]): disagreeing rays make the variant wrong; `None`
    /// leaves it unchecked (ray flags or a mask the reference does not apply).
    pub checked: Option<&'a [Hit]>,
    /// The flattened triangles' canonical reference: rays that differ from it are counted
    /// as `canonical_diffs` (informational; sphere hits among them).
    pub canonical: &'a [Hit],
    /// The memory model's machine (`None`: the TD model only).
    pub machine: Option<&'a Machine>,
}

/// Runs and measures a TLAS-axis variant on the scene `input` (`flat` its flattened mesh).
pub fn measure_tlas(
    variant: &Variant,
    input: &TwoLevelInput,
    flat: &Mesh,
    set: &RaySet,
    console: &ConsoleConfig,
    scene_rays: SceneRays,
    references: References,
) -> Result<VariantResult> {
    let machine = references.machine;
    let config = WaveTracerConfig {
        wave: variant.wave,
        console: *console,
        strategy: variant.traversal,
        parallel: true,
        simd: SimdPath::Auto,
        schedule: Schedule::Lockstep,
        ray_flags: scene_rays.flags,
        shadow_ray_flags: scene_rays.flags,
        instance_mask: scene_rays.mask,
        first_wave: 0,
    };
    let (tracer, bytes) = match variant.tlas {
        Some(TlasMode::Flattened) | None => {
            let built = bvh::build(flat, &variant.build)?;
            let bytes = built.image.bytes.len();
            (WaveTracer::from_image(built.image, flat, config), bytes)
        }
        Some(mode) => {
            let options = TwoLevelOptions {
                blas: variant.build,
                rebraid: mode == TlasMode::RebraidOn,
            };
            let built = build_two_level(input, &options)?;
            let bytes = built.image.bytes.len();
            (WaveTracer::two_level(built, input, config), bytes)
        }
    };
    let n = set.rays.len();
    let mut counters = if machine.is_some() {
        Counters::recording_fetches()
    } else {
        Counters::default()
    };
    let mut clocks = vec![0u32; n];
    let start = Instant::now();
    // (t, hit) per ray.
    let outcome: Vec<(f32, bool)> = match set.query {
        QueryKind::ClosestHit => {
            let mut hits = vec![Hit::MISS; n];
            tracer.closest_hits(&set.rays, &mut hits, Some(&mut clocks), &mut counters);
            hits.iter().map(|h| (h.t, h.is_hit())).collect()
        }
        QueryKind::AnyHit => {
            let mut occluded = vec![false; n];
            tracer.any_hits(&set.rays, &mut occluded, &mut counters);
            occluded.iter().map(|&o| (0.0, o)).collect()
        }
    };
    let host_seconds = start.elapsed().as_secs_f64();
    let dispatches = counters.fetches.take();
    let figures = Figures {
        rays: n,
        host_seconds,
        bvh_bytes: bytes,
        stats: None,
    };
    let mut r = result(variant, counters, &figures, console);
    if let Some(machine) = machine {
        // One call: rays in input order.
        let identity = Some((0..n as u32).collect());
        let (stats, clocks) = run_memory_model(variant, machine, &dispatches, identity);
        r.memory = Some(MemoryReport::new(&stats, r.modelled_grays * 1e9));
        r.ray_memory_clocks = clocks;
    }
    let disagree = |reference: &[Hit]| {
        outcome
            .iter()
            .zip(reference)
            .filter(|((t, hit), h)| !agrees_geometrically(set.query, h, *t, *hit))
            .count() as u64
    };
    // The guard compares a two-level trace with the flattened scene, whose vertices were
    // moved into world space in f64: the same surfaces, rounded elsewhere by a few ulps of
    // the world's coordinates. So t agrees to 1e-4 of itself, but no closer than 1e-4 of a
    // thousandth of the scene's diagonal (secondary rays that leave a surface meet the next
    // one at tiny t, where those ulps are a large part of t).
    let t_floor = 1e-3 * super::mesh_bounds(flat).extent().length();
    if let Some(reference) = references.checked {
        r.wrong_rays = outcome
            .iter()
            .zip(reference)
            .zip(&set.rays)
            .filter(|(((t, hit), h), ray)| {
                let floor = t_floor / ray.dir.length().max(f32::MIN_POSITIVE);
                !agrees_across_levels(set.query, h, *t, *hit, floor)
            })
            .count() as u64;
    }
    r.canonical_diffs = disagree(references.canonical);
    r.ray_clocks = clocks;
    Ok(r)
}

/// The guard's comparison of a two-level trace with a reference: the same hit or miss
/// (occluded flag for any hit) and, for closest hits, t within 1e-4 of `max(t, t_floor)`.
pub fn agrees_across_levels(
    query: QueryKind,
    reference: &Hit,
    t: f32,
    hit: bool,
    t_floor: f32,
) -> bool {
    if reference.is_hit() != hit {
        return false;
    }
    query == QueryKind::AnyHit
        || !hit
        || (t - reference.t).abs() <= 1e-4 * reference.t.abs().max(t_floor)
}

/// The reference of a variant: the flattened mode has no procedural primitives and is
/// checked against the triangles alone (`triangles`), the two-level modes against the whole
/// scene (`scene`).
pub fn reference_for<'a>(variant: &Variant, scene: &'a [Hit], triangles: &'a [Hit]) -> &'a [Hit] {
    match variant.tlas {
        Some(TlasMode::Flattened) => triangles,
        _ => scene,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit_at(t: f32) -> Hit {
        Hit {
            t,
            prim_id: 0,
            ..Hit::MISS
        }
    }

    #[test]
    fn the_guard_tolerance_is_relative_above_its_floor() {
        let closest = QueryKind::ClosestHit;
        let r = hit_at(100.0);
        assert!(r.is_hit());
        assert!(agrees_across_levels(closest, &r, 100.009, true, 0.5));
        assert!(!agrees_across_levels(closest, &r, 100.02, true, 0.5));
        // Below the floor, the floor's 1e-4 is the tolerance.
        let near = hit_at(0.001);
        assert!(agrees_across_levels(closest, &near, 0.00104, true, 0.5));
        assert!(!agrees_across_levels(closest, &near, 0.0011, true, 0.5));
        assert!(!agrees_across_levels(closest, &near, 0.00104, true, 0.0));
        // Hit against miss never agrees; any-hit compares the flag alone.
        assert!(!agrees_across_levels(
            closest,
            &r,
            f32::INFINITY,
            false,
            0.5
        ));
        assert!(agrees_across_levels(QueryKind::AnyHit, &r, 0.0, true, 0.5));
    }
}
