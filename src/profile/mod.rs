//! Traversal strategies and BVH layouts side by side (`wavetrace profile`).
//!
//! A [`Variant`] names one choice on each axis: traversal (full stack, short stack with
//! restart trail, short stack with walk-back, stackless trail), child order (box sorting,
//! leaf-first), box format, triangles per node, builder, wave width, lane refill and ray
//! order. [`profile()`] sends the same rays through every variant's wave model and measures TD
//! clocks, instructions, queries, SIMD efficiency, stack depth, node bytes and the modelled
//! rate on a console.
//!
//! Correctness guard: every variant's hits are checked against the scalar reference
//! traversal's ([`crate::bvh::closest_hit_scalar`]) on the variant's own BVH image, found by
//! [`guard_hits`] (the full-stack wave traversal, spot-checked by the scalar one): same
//! primitive and t within [`T_TOLERANCE_ULPS`] (closest hit), same occluded flag (any hit).
//! A variant that disagrees on any ray is marked wrong and never ranked. Separately, each
//! variant is compared with the reference on a canonical FP32, one-triangle-per-node image
//! (`canonical_diffs`, informational): a layout may legitimately move a hit exactly on a
//! shared edge to the neighbouring triangle (a triangle stored in another vertex rotation),
//! and a builder bug would show there.
//!
//! - [`variants`]: the variants, one axis at a time.
//! - [`measure`](mod@measure): running a variant and measuring it, the guard, the ranking.
//! - [`table`]: the ranked table and CSV.
//! - [`sets`]: the reference image and the ray sets.
//! - [`rays`]: camera and secondary ray sets, ray orderings.
//! - [`heatmap`]: per-pixel clock heatmaps with a legend.

pub mod heatmap;
pub mod measure;
pub mod rays;
pub mod sets;
pub mod table;
pub mod two_level;
pub mod variants;

pub use measure::{
    agrees, agrees_geometrically, count_disagreements, measure, rank, result, trace_variant,
    ulp_distance, Figures, ProfileReport, VariantResult, REFILL_WAVES,
};
pub use sets::{
    canonical_hits, checked_by_scalar, guard_hits, make_rays, mesh_bounds, reference_hits,
    reference_image, scene_mesh, scene_primary_rays, RayKind,
};
pub use table::{
    ranking_summary, row, shared_scale, to_compact_table, to_csv, to_table, COLUMNS, SHORT_COLUMNS,
};
pub use variants::{
    all_variants, select_scene_variants, select_variants, shard_variants, tlas_variants, TlasMode,
    Variant,
};

use crate::bvh::{self, BuildOptions, BvhImage, Mesh};
use crate::hw::peak::ConsoleConfig;
use crate::math::{Hit, Ray};
use crate::memory::Machine;
use crate::traverse::Query;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Closest-hit t of a variant may differ from the reference by this many ULPs. On the same
/// image the instruction is the same, so t should be bit-identical; one ULP of slack.
pub const T_TOLERANCE_ULPS: u32 = 1;

/// What the rays ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueryKind {
    ClosestHit,
    AnyHit,
}

impl QueryKind {
    fn query(self) -> Query {
        match self {
            QueryKind::ClosestHit => Query::ClosestHit,
            QueryKind::AnyHit => Query::AnyHit,
        }
    }
}

/// The rays to profile and how to name them in reports.
#[derive(Clone, Debug)]
pub struct RaySet {
    pub name: String,
    pub rays: Vec<Ray>,
    pub query: QueryKind,
}

/// A built image for each distinct build of `variants` (box sorting is only the
/// descriptor bit, so it shares the build).
struct Builds {
    /// Build options (sorting on), image, reference hits on it.
    entries: Vec<(BuildOptions, BvhImage, Vec<Hit>)>,
}

impl Builds {
    /// The image for `options` and the reference hits of `rays` on it.
    fn get(
        &mut self,
        mesh: &Mesh,
        options: &BuildOptions,
        rays: &[Ray],
    ) -> Result<(BvhImage, &[Hit])> {
        let key = BuildOptions {
            box_sort: true,
            ..*options
        };
        let index = match self.entries.iter().position(|(o, _, _)| *o == key) {
            Some(i) => i,
            None => {
                let image = bvh::build(mesh, &key)?.image;
                let hits = guard_hits(&image, mesh, rays);
                self.entries.push((key, image, hits));
                self.entries.len() - 1
            }
        };
        let (_, image, hits) = &self.entries[index];
        let mut image = image.clone();
        image.descriptor.box_sort_enable = options.box_sort;
        Ok((image, hits))
    }
}

/// Profiles `variants` on `mesh` with the rays of `set`; `console` decides the modelled
/// rate. `canonical` holds the reference hits on the canonical image ([`reference_image`]),
/// computed here when `None`; the guard's reference runs once per distinct build. Returns
/// the ranked report.
pub fn profile(
    input: &str,
    mesh: &Mesh,
    set: &RaySet,
    variants: &[Variant],
    console: &ConsoleConfig,
    canonical: Option<&[Hit]>,
) -> Result<ProfileReport> {
    profile_until(
        input,
        mesh,
        set,
        variants,
        console,
        canonical,
        Run::default(),
    )
}

/// How [`profile_until`] runs besides what it profiles.
#[derive(Clone, Copy, Debug, Default)]
pub struct Run<'a> {
    /// Stop with an error before the next variant once this is set.
    pub cancel: Option<&'a AtomicBool>,
    /// Run the memory model of this machine over every variant (the ranking then follows
    /// its rate).
    pub machine: Option<&'a Machine>,
    /// Rays traced so far: each finished variant adds its ray count (for a progress
    /// display).
    pub progress: Option<&'a AtomicU64>,
}

/// [`profile`], run as `run` says: cancellable, and with the memory model when it names a
/// machine.
pub fn profile_until(
    input: &str,
    mesh: &Mesh,
    set: &RaySet,
    variants: &[Variant],
    console: &ConsoleConfig,
    canonical: Option<&[Hit]>,
    run: Run<'_>,
) -> Result<ProfileReport> {
    let Run {
        cancel,
        machine,
        progress,
    } = run;
    if set.rays.is_empty() {
        return Err(Error::Other(format!("{input}: no rays to profile")));
    }
    let start = Instant::now();
    let owned;
    let reference = match canonical {
        Some(r) => r,
        None => {
            let image = reference_image(mesh)?;
            owned = canonical_hits(&image, mesh, &set.rays);
            &owned
        }
    };
    let reference_seconds = start.elapsed().as_secs_f64();
    let mut builds = Builds {
        entries: Vec::new(),
    };
    let mut results = Vec::with_capacity(variants.len());
    for v in variants {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Error::Other(format!("{input}: profile cancelled")));
        }
        let (image, own) = builds.get(mesh, &v.build, &set.rays)?;
        let mut r = measure(v, &image, mesh, set, console, own, machine);
        r.canonical_diffs = r
            .outputs
            .iter()
            .zip(reference)
            .filter(|(o, h)| !agrees_geometrically(set.query, h, o.t, o.best.is_some()))
            .count() as u64;
        results.push(r);
        if let Some(p) = progress {
            p.fetch_add(set.rays.len() as u64, Ordering::Relaxed);
        }
    }
    rank(&mut results);
    Ok(ProfileReport {
        input: input.to_string(),
        rays: set.rays.len(),
        ray_kind: set.name.clone(),
        query: set.query,
        console: console.name,
        t_tolerance_ulps: T_TOLERANCE_ULPS,
        reference_seconds,
        variants: results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    #[test]
    fn wrong_variants_are_never_ranked() {
        let mesh = Mesh::from_triangles(&[
            [[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 1.0, 0.0]],
            [[-1.0, -1.0, 2.0], [1.0, -1.0, 2.0], [0.0, 1.0, 2.0]],
        ]);
        let rays: Vec<Ray> = (0..40)
            .map(|i| {
                let x = i as f32 / 40.0 - 0.5;
                Ray::new(Vec3::new(x, 0.0, -3.0), Vec3::Z, 0.0, f32::INFINITY)
            })
            .collect();
        let set = RaySet {
            name: "test".into(),
            rays,
            query: QueryKind::ClosestHit,
        };
        let report = profile(
            "t",
            &mesh,
            &set,
            &select_variants("full-stack,fp16").unwrap(),
            &crate::hw::peak::SERIES_S,
            None,
        )
        .unwrap();
        assert!(report.variants.iter().all(|v| v.wrong_rays == 0));
        // Every ray hits the nearer triangle (prim 0) at t = 3.
        let base = &report
            .variants
            .iter()
            .find(|v| v.name == "full-stack")
            .unwrap();
        assert!(base.outputs.iter().all(|o| o.prim_id == 0 && o.t == 3.0));
        let mut results = report.variants.clone();
        let mut fast_but_wrong = results[0].clone();
        fast_but_wrong.name = "zz-wrong".into();
        fast_but_wrong.wrong_rays = 1;
        fast_but_wrong.modelled_grays = 1e9;
        results.push(fast_but_wrong);
        rank(&mut results);
        assert_eq!(results.last().unwrap().name, "zz-wrong");
        assert_eq!(results.last().unwrap().rank, None);
        assert_eq!(results[0].rank, Some(1));
        assert_eq!(results[1].rank, Some(2));
        assert!(to_table(&ProfileReport {
            variants: results.clone(),
            ..report.clone()
        })
        .contains("WRONG"));
        // The compact table: the same rows, fewer columns, under 120 characters a line.
        let compact = to_compact_table(&ProfileReport {
            variants: results.clone(),
            ..report.clone()
        });
        assert!(compact.contains("WRONG"));
        assert_eq!(compact.lines().count(), 2 + results.len());
        for line in compact.lines().skip(1) {
            assert!(line.len() < 120, "{} wide: {line}", line.len());
            assert!(
                !line.contains("maxstk") && !line.contains("BVH B"),
                "{line}"
            );
        }
    }
}
