//! Instancing against flattening: host rays per second and modelled TD clocks per ray of
//! the shipped two-level grove (`scenes/grove/grove.toml`), traced as the console does (a
//! TLAS over instances of shared BLASes, the alpha test as any-hit shader), and of a
//! flattened copy of it (every instance's triangles moved into world space in f64 and
//! built into one BVH; the same alpha test through the flattened triangle's instance).
//! The flattened copy has no procedural spheres, so the instanced scene is also traced
//! without its sphere instances ("triangles only"): that pair traces the same surfaces.
//!
//! Rays: the scene camera's primary rays (one per pixel of a 640x360 film) and one diffuse
//! bounce from each of their hits (cosine-weighted about the geometric normal, a fixed
//! seed), closest-hit queries, wave32, one thread. Each figure is the median of 5 runs.
//!
//! `cargo bench --bench two_level`

use glam::Vec3;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use wavetrace::bvh::two_level::{build_two_level, flatten, TwoLevelInput, TwoLevelOptions};
use wavetrace::bvh::{self, BuildOptions};
use wavetrace::counters::Counters;
use wavetrace::math::{Hit, Ray};
use wavetrace::render::{two_level_input, AlphaTest};
use wavetrace::scene::Scene;
use wavetrace::traverse::dxr::{AnyHit, Candidate, RayFlags};
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;

/// The alpha test of a flattened triangle: the scene's, looked up through the instance and
/// BLAS primitive the triangle came from.
struct FlattenedAlpha {
    alpha: AlphaTest,
    origin: Vec<(u32, u32)>,
}

impl AnyHit for FlattenedAlpha {
    fn any_hit(&self, c: &Candidate) -> bool {
        let (instance, prim) = self.origin[c.prim as usize];
        self.alpha.any_hit(&Candidate {
            instance,
            prim,
            ..*c
        })
    }
}

fn config() -> WaveTracerConfig {
    WaveTracerConfig {
        parallel: false,
        ..WaveTracerConfig::default()
    }
}

fn instanced(scene: &Scene, input: &TwoLevelInput) -> WaveTracer {
    let built = build_two_level(input, &TwoLevelOptions::default()).unwrap();
    let mut tracer = WaveTracer::two_level(built, input, config());
    tracer.set_any_hit(Arc::new(AlphaTest::new(scene)));
    tracer
}

fn flattened(scene: &Scene, input: &TwoLevelInput) -> WaveTracer {
    let (mesh, origin) = flatten(input);
    let built = bvh::build(&mesh, &BuildOptions::default()).unwrap();
    // One flat BVH is opaque; the ray flag makes every triangle run the any-hit shader,
    // which passes all but the canopy's transparent texels.
    let mut tracer = WaveTracer::from_image(
        built.image,
        &mesh,
        WaveTracerConfig {
            ray_flags: RayFlags::FORCE_NON_OPAQUE,
            ..config()
        },
    );
    tracer.set_any_hit(Arc::new(FlattenedAlpha {
        alpha: AlphaTest::new(scene),
        origin,
    }));
    tracer
}

/// Primary rays, then one cosine-weighted bounce from each hit.
fn rays(scene: &Scene, tracer: &WaveTracer) -> Vec<Ray> {
    let (w, h) = (scene.film.width, scene.film.height);
    let mut rays: Vec<Ray> = (0..w * h)
        .map(|i| scene.camera.ray((i % w) as f32 + 0.5, (i / w) as f32 + 0.5))
        .collect();
    let mut hits = vec![Hit::MISS; rays.len()];
    tracer.closest_hits(&rays, &mut hits, None, &mut Counters::default());
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let bounces: Vec<Ray> = rays
        .iter()
        .zip(&hits)
        .filter(|(_, h)| h.is_hit())
        .map(|(r, h)| {
            let p = r.origin + r.dir * h.t;
            // A random direction on the side the ray came from.
            let d = Vec3::new(next() - 0.5, next() - 0.5, next() - 0.5).normalize_or(Vec3::Y);
            let d = if d.dot(r.dir) > 0.0 { -d } else { d };
            Ray::new(p + d * 1e-3, d, 0.0, f32::INFINITY)
        })
        .collect();
    rays.extend(bounces);
    rays
}

/// Median seconds of 5 runs, and the counters of one.
fn time(tracer: &WaveTracer, rays: &[Ray]) -> (f64, Counters) {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut times = Vec::new();
    let mut counters = Counters::default();
    for _ in 0..5 {
        counters = Counters::default();
        let t = Instant::now();
        tracer.closest_hits(rays, &mut hits, None, &mut counters);
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (times[2], counters)
}

fn main() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/grove/grove.toml");
    let scene = Scene::load(&path).unwrap();
    let input = two_level_input(&scene);
    let mut triangles_only = input.clone();
    triangles_only.instances.retain(|i| {
        matches!(
            input.blases[i.blas as usize].geometry,
            wavetrace::bvh::two_level::BlasGeometry::Triangles(_)
        )
    });
    let flat = flattened(&scene, &input);
    let rays = rays(&scene, &flat);
    println!(
        "two-level bench: grove, {} rays (primary + one bounce), wave32, one thread, median of 5",
        rays.len()
    );
    println!(
        "{:<26} {:>9} {:>10} {:>12} {:>12}",
        "variant", "seconds", "Mrays/s", "TD clk/ray", "vs flattened"
    );
    let (flat_secs, flat_counters) = time(&flat, &rays);
    let rows = [
        ("flattened (one BVH)", flat_secs, flat_counters),
        {
            let (s, c) = time(&instanced(&scene, &triangles_only), &rays);
            ("instanced, triangles only", s, c)
        },
        {
            let (s, c) = time(&instanced(&scene, &input), &rays);
            ("instanced (as shipped)", s, c)
        },
    ];
    for (name, secs, counters) in rows {
        println!(
            "{:<26} {:>9.4} {:>10.3} {:>12.2} {:>11.2}x",
            name,
            secs,
            rays.len() as f64 / secs / 1e6,
            counters.td_clocks as f64 / rays.len() as f64,
            flat_secs / secs
        );
    }
}
