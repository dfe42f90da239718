//! Wave-model throughput on the shared scenes: one thread, primary and diffuse rays,
//! counters on (they always are). Verifies the hits against Embree's reference after
//! measuring, and measures the scalar reference traversal (`bvh::closest_hit_scalar`) on the
//! same rays as the in-run baseline.
//!
//! `cargo bench --bench trace`; reference figures for this machine class (Mrays/s, one
//! thread): Embree 13.7 / 6.2 (bunny primary / diffuse), 7.2 / 3.5 (sponza); tinybvh
//! BVH4 9.9 / 3.9 and 4.1 / 1.9.
//!
//! The reference tracers were measured on the full 1024x1024 camera rays, of which the
//! shipped `primary` sets keep every 4th pixel in x and y (less coherent, so slower to trace).
//! `NAME_primary_full` regenerates the full set from the camera in `NAME.json` and checks it
//! against the shipped subset bit for bit, so that figure compares with the reference table.
//! `dragon_primary_full` does the same for the dragon (871k triangles; no ray set of it ships),
//! and `dragon_diffuse` traces bounce rays made from those hits the data set's way.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::{Duration, Instant};
use wavetrace::bvh::{build, closest_hit_scalar, BuildOptions, BvhImage, Mesh};
use wavetrace::counters::Counters;
use wavetrace::math::{Hit, HitRecord, Ray};
use wavetrace::traverse::rayfile::{parse_hits, read_rays};
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::{Tracer, WaveWidth};

/// The allocator the `wavetrace` binary runs with, so that the figures are the CLI's.
#[global_allocator]
static ALLOCATOR: wavetrace::host::HugePageAllocator = wavetrace::host::HugePageAllocator;

#[path = "../tests/common/camera_rays.rs"]
mod camera_rays;
use camera_rays::{
    assert_primary_hit_fraction, diagonal, diffuse_rays, full_primary_rays, kept_pixel, scene_json,
    scenes,
};

fn agreement(scene: &str, set: &str, hits: &[HitRecord]) -> f64 {
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

/// The wave model over `image` with `wave`-lane waves, on the calling thread.
fn serial_tracer(image: &BvhImage, mesh: &Mesh, wave: WaveWidth) -> WaveTracer {
    WaveTracer::new(
        image,
        mesh,
        WaveTracerConfig {
            wave,
            parallel: false,
            ..Default::default()
        },
    )
}

/// Criterion group `name`: `tracer` (wave32) on `rays` in `pool`, 10 samples of 8 s (the
/// large ray sets); `records` receives the hits of every trace, as `wavetrace trace` makes
/// and times them ([`Tracer::closest_hit_records`]).
fn bench_wave32(
    c: &mut Criterion,
    pool: &rayon::ThreadPool,
    name: &str,
    tracer: &WaveTracer,
    rays: &[Ray],
    records: &mut [HitRecord],
) {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(rays.len() as u64));
    group.bench_function("wave32", |b| {
        b.iter(|| {
            let mut counters = Counters::default();
            pool.install(|| tracer.closest_hit_records(rays, records, &mut counters));
            counters.td_clocks
        })
    });
    group.finish();
}

/// `tracer`'s hits of `rays` and its records of them, checked to agree (`name` in the
/// message): the hits for the checks, the records for [`bench_wave32`] to overwrite.
fn hits_and_records(
    pool: &rayon::ThreadPool,
    tracer: &WaveTracer,
    rays: &[Ray],
    name: &str,
) -> (Vec<Hit>, Vec<HitRecord>) {
    let mut hits = vec![Hit::MISS; rays.len()];
    pool.install(|| tracer.closest_hits(rays, &mut hits, None, &mut Counters::default()));
    let mut records = vec![HitRecord::MISS; rays.len()];
    pool.install(|| tracer.closest_hit_records(rays, &mut records, &mut Counters::default()));
    let expected: Vec<HitRecord> = hits.iter().map(HitRecord::from).collect();
    assert!(
        records == expected,
        "{name}: the records differ from the hits"
    );
    (hits, records)
}

/// Hits of the full camera ray set at the pixels the shipped `primary` subset keeps.
fn kept_pixels(hits: &[HitRecord], width: usize) -> Vec<HitRecord> {
    let kept = width / 4;
    (0..kept * kept)
        .map(|k| hits[kept_pixel(k, width)])
        .collect()
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
                let tracer = serial_tracer(&built.image, &mesh, wave);
                // What `wavetrace trace` makes and times: distances and primitive ids.
                let mut hits = vec![HitRecord::MISS; rays.len()];
                // Verified by one trace of its own, so that a filtered run (which skips the
                // timed closure) checks the hits too.
                pool.install(|| {
                    tracer.closest_hit_records(&rays, &mut hits, &mut Counters::default())
                });
                group.bench_function(format!("wave{}", wave.lanes()), |b| {
                    b.iter(|| {
                        let mut counters = Counters::default();
                        pool.install(|| {
                            tracer.closest_hit_records(&rays, &mut hits, &mut counters)
                        });
                        counters.td_clocks
                    })
                });
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
            let tracer = serial_tracer(&built.image, &mesh, WaveWidth::W32);
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
        // The reference tracers' own primary workload: the full camera ray set, wave32.
        let (rays, width) = full_primary_rays(scene);
        let tracer = serial_tracer(&built.image, &mesh, WaveWidth::W32);
        let mut hits = vec![HitRecord::MISS; rays.len()];
        pool.install(|| tracer.closest_hit_records(&rays, &mut hits, &mut Counters::default()));
        let name = format!("{scene}_primary_full");
        bench_wave32(c, &pool, &name, &tracer, &rays, &mut hits);
        let share = agreement(scene, "primary", &kept_pixels(&hits, width));
        println!(
            "{scene} primary_full wave32: {:.4} % of the kept pixels agree with Embree",
            100.0 * share
        );
        assert!(share >= 0.9997, "{scene} primary_full: {share}");
    }

    // The dragon at scale (871k triangles): no ray set of it ships, so its full camera set is
    // regenerated and checked by its hit count against the fraction `dragon.json` records.
    let mesh = Mesh::load_obj(&scenes().join("dragon.obj.gz")).unwrap();
    let built = build(&mesh, &BuildOptions::default()).unwrap();
    let (rays, _) = full_primary_rays("dragon");
    let tracer = serial_tracer(&built.image, &mesh, WaveWidth::W32);
    let (hits, mut timed) = hits_and_records(&pool, &tracer, &rays, "dragon primary_full");
    bench_wave32(c, &pool, "dragon_primary_full", &tracer, &rays, &mut timed);
    let (hit, expected) = assert_primary_hit_fraction("dragon", &hits);
    println!("dragon primary_full wave32: {hit} hits, the reference tracers found {expected}");
    let json = scene_json("dragon");

    // Diffuse bounces off the dragon, made the data set's way (the dragon has none shipped):
    // scattered rays over a large tree, where the wave's interleaved lanes overlap their
    // memory misses. Checked against the scalar reference traversal on a sample.
    let diffuse = diffuse_rays(&mesh, &rays, &hits, diagonal("dragon"), 1 << 18, 12350);
    let (hits, mut timed) = hits_and_records(&pool, &tracer, &diffuse, "dragon diffuse");
    bench_wave32(c, &pool, "dragon_diffuse", &tracer, &diffuse, &mut timed);
    for (i, ray) in diffuse.iter().enumerate().step_by(64) {
        let scalar = closest_hit_scalar(&built.image, &mesh, ray);
        assert_eq!(hits[i], scalar, "dragon diffuse ray {i}");
    }
    let hit = hits.iter().filter(|h| h.is_hit()).count() as f64 / hits.len() as f64;
    println!(
        "dragon diffuse wave32: {hit:.4} of the rays hit (the data set's own set: {})",
        json["diffuse_hit_fraction"]
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
