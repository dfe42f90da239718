//! Wave-model throughput on the shared scenes: one thread, primary and diffuse rays,
//! counters on (they always are). Verifies the hits against Embree's reference after
//! measuring, and measures the scalar reference traversal (`bvh::closest_hit_scalar`) on the
//! same rays as the in-run baseline.
//!
//! `cargo bench --bench trace`; reference figures for this machine class (Mrays/s, one
//! thread): Embree 13.7 / 6.2 (bunny primary / diffuse), 7.2 / 3.5 (sponza); tinybvh
//! BVH4 9.9 / 3.9 and 4.1 / 1.9.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wavetrace::bvh::{build, closest_hit_scalar, BuildOptions, Mesh};
use wavetrace::counters::Counters;
use wavetrace::math::Hit;
use wavetrace::traverse::rayfile::{parse_hits, read_rays};
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::{Tracer, WaveWidth};

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scenes")
}

fn agreement(scene: &str, set: &str, hits: &[Hit]) -> f64 {
    let dir = scenes();
    let path = dir.join(format!("{scene}_{set}.hits"));
    let reference = parse_hits(&path, &std::fs::read(&path).unwrap()).unwrap();
    let agree = std::fs::read(dir.join(format!("{scene}_{set}.agree"))).unwrap();
    let (mut n, mut ok) = (0u64, 0u64);
    for ((h, &(t, id)), &a) in hits.iter().zip(&reference).zip(&agree) {
        if a != 10 {
            continue;
        }
        n += 1;
        ok += if id == u32::MAX {
            !h.is_hit()
        } else {
            h.is_hit() && (h.t - t).abs() <= 1e-4 * t.abs()
        } as u64;
    }
    ok as f64 / n as f64
}

fn bench(c: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for scene in ["bunny", "sponza"] {
        let mesh = Mesh::load_obj(&scenes().join(format!("{scene}.obj.gz"))).unwrap();
        let built = build(&mesh, &BuildOptions::default()).unwrap();
        for set in ["primary", "diffuse"] {
            let rays = read_rays(&scenes().join(format!("{scene}_{set}.rays"))).unwrap();
            let mut group = c.benchmark_group(format!("{scene}_{set}"));
            group
                .sample_size(10)
                .measurement_time(Duration::from_secs(4))
                .throughput(Throughput::Elements(rays.len() as u64));
            for wave in [WaveWidth::W32, WaveWidth::W64] {
                let tracer = WaveTracer::new(
                    &built.image,
                    &mesh,
                    WaveTracerConfig {
                        wave,
                        parallel: false,
                        ..Default::default()
                    },
                );
                let mut hits = vec![Hit::MISS; rays.len()];
                group.bench_function(format!("wave{}", wave.lanes()), |b| {
                    b.iter(|| {
                        let mut counters = Counters::default();
                        pool.install(|| tracer.closest_hits(&rays, &mut hits, None, &mut counters));
                        counters.td_clocks
                    })
                });
                // Verify after measuring.
                let share = agreement(scene, set, &hits);
                println!(
                    "{scene} {set} wave{}: {:.4} % agree with Embree",
                    wave.lanes(),
                    100.0 * share
                );
                assert!(share >= 0.9997, "{scene} {set}: {share}");
            }
            group.finish();
            // Baseline in the same run: the scalar reference traversal (first 8192 rays).
            let sub = &rays[..8192];
            let start = Instant::now();
            let mut found = 0usize;
            for r in sub {
                found += closest_hit_scalar(&built.image, &mesh, r).is_hit() as usize;
            }
            let scalar = sub.len() as f64 / start.elapsed().as_secs_f64();
            let tracer = WaveTracer::new(
                &built.image,
                &mesh,
                WaveTracerConfig {
                    parallel: false,
                    ..Default::default()
                },
            );
            let mut hits = vec![Hit::MISS; sub.len()];
            let start = Instant::now();
            tracer.closest_hits(sub, &mut hits, None, &mut Counters::default());
            let wave = sub.len() as f64 / start.elapsed().as_secs_f64();
            println!(
                "{scene} {set}: scalar reference {:.2} Mrays/s, wave32 {:.2} Mrays/s ({:.1}x), {found} hits",
                scalar / 1e6,
                wave / 1e6,
                wave / scalar
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
