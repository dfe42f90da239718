//! The tree optimization (`BuildOptions::optimize`) on sponza, whose mix of large and small
//! triangles leaves the top-down build room: the SAH cost and the TD clocks the wave model
//! charges go down, and every camera ray finds the same nearest hit as without it (which the
//! brute-force tests pin to the instruction on every triangle).

mod bvh_common;

use bvh_common::{nearest_hit_differences, scene_and_rays};
use wavetrace::bvh::{build, validate, BuildOptions, BuiltBvh, Mesh};
use wavetrace::counters::Counters;
use wavetrace::math::{Hit, Ray};
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;

/// TD clocks per ray of the wave model on `built`.
fn clocks_per_ray(built: &BuiltBvh, mesh: &Mesh, rays: &[Ray]) -> f64 {
    let tracer = WaveTracer::new(&built.image, mesh, WaveTracerConfig::default());
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut counters = Counters::default();
    tracer.closest_hits(rays, &mut hits, None, &mut counters);
    counters.td_clocks as f64 / rays.len() as f64
}

#[test]
fn optimized_trees_cost_fewer_clocks_on_sponza_and_find_the_same_hits() {
    let (mesh, rays) = scene_and_rays("sponza", "primary");
    for splits in [false, true] {
        let plain = build(
            &mesh,
            &BuildOptions {
                spatial_splits: splits,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        let optimized = build(
            &mesh,
            &BuildOptions {
                spatial_splits: splits,
                optimize: true,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        assert!(validate(&optimized.image, &mesh).is_empty());
        let (a, b) = (plain.metrics.sah_cost, optimized.metrics.sah_cost);
        assert!(b < 0.97 * a, "splits {splits}: SAH cost {a} -> {b}");
        let (a, b) = (
            clocks_per_ray(&plain, &mesh, &rays),
            clocks_per_ray(&optimized, &mesh, &rays),
        );
        assert!(b < 0.95 * a, "splits {splits}: TD clocks a ray {a} -> {b}");
        let differing = nearest_hit_differences(&plain.image, &optimized.image, &mesh, &rays);
        assert!(
            differing.is_empty(),
            "splits {splits}: {} rays differ, first {:?}",
            differing.len(),
            &differing[..differing.len().min(5)]
        );
    }
}
