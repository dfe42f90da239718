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

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wavetrace::bvh::{build, closest_hit_scalar, BuildOptions, BvhImage, Mesh};
use wavetrace::counters::Counters;
use wavetrace::math::{Hit, Ray};
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

/// The data set's full camera ray set for `scene` (its README: a pinhole camera at `eye`
/// looking at `target`, up +Y, vertical field of view `fov_deg`, aspect 1, rays through the
/// pixel centres of a `width` x `height` image, row 0 at the top, row-major; tmin 0, tmax 1e30),
/// computed in f64 and rounded to f32, and the image width. Panics unless it equals the
/// shipped `primary` subset (every 4th pixel in x and y) bit for bit. (The profiler's
/// `PinholeCamera::primary_rays` is not used: it computes in f32 with tmax = inf, so its rays
/// are not the data set's bit for bit.)
fn full_primary_rays(scene: &str) -> (Vec<Ray>, usize) {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(scenes().join(format!("{scene}.json"))).unwrap())
            .unwrap();
    let vec3 = |v: &serde_json::Value| -> [f64; 3] {
        std::array::from_fn(|i| v[i].as_f64().expect("a number"))
    };
    let camera = &json["camera"];
    let (eye, target, up) = (
        vec3(&camera["eye"]),
        vec3(&camera["target"]),
        vec3(&camera["up"]),
    );
    let fov = camera["fov_deg"].as_f64().unwrap();
    let (width, height) = (
        json["width"].as_u64().unwrap() as usize,
        json["height"].as_u64().unwrap() as usize,
    );
    let sub = |a: [f64; 3], b: [f64; 3]| std::array::from_fn::<f64, 3, _>(|i| a[i] - b[i]);
    let normalize = |a: [f64; 3]| {
        let l = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
        a.map(|x| x / l)
    };
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let forward = normalize(sub(target, eye));
    let right = normalize(cross(forward, up));
    let upward = cross(right, forward);
    let half = (fov.to_radians() / 2.0).tan();
    let origin = eye.map(|x| x as f32).into();
    let mut rays = Vec::with_capacity(width * height);
    for row in 0..height {
        let y = (1.0 - 2.0 * (row as f64 + 0.5) / height as f64) * half;
        for col in 0..width {
            let x = (2.0 * (col as f64 + 0.5) / width as f64 - 1.0) * half;
            let dir = normalize(std::array::from_fn(|i| {
                forward[i] + x * right[i] + y * upward[i]
            }));
            rays.push(Ray::new(origin, dir.map(|d| d as f32).into(), 0.0, 1e30));
        }
    }
    let shipped = read_rays(&scenes().join(format!("{scene}_primary.rays"))).unwrap();
    let kept = width / 4;
    for (k, s) in shipped.iter().enumerate() {
        let r = &rays[4 * (k / kept) * width + 4 * (k % kept)];
        let bits = |r: &Ray| [r.origin, r.dir].map(|v| v.to_array().map(f32::to_bits));
        assert_eq!(
            bits(r),
            bits(s),
            "{scene}: ray {k} of the shipped primary set"
        );
    }
    (rays, width)
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

/// Hits of the full camera ray set at the pixels the shipped `primary` subset keeps.
fn kept_pixels(hits: &[Hit], width: usize) -> Vec<Hit> {
    let kept = width / 4;
    (0..kept * kept)
        .map(|k| hits[4 * (k / kept) * width + 4 * (k % kept)])
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
                let mut hits = vec![Hit::MISS; rays.len()];
                // Verified by one trace of its own, so that a filtered run (which skips the
                // timed closure) checks the hits too.
                pool.install(|| {
                    tracer.closest_hits(&rays, &mut hits, None, &mut Counters::default())
                });
                group.bench_function(format!("wave{}", wave.lanes()), |b| {
                    b.iter(|| {
                        let mut counters = Counters::default();
                        pool.install(|| tracer.closest_hits(&rays, &mut hits, None, &mut counters));
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
        let mut hits = vec![Hit::MISS; rays.len()];
        pool.install(|| tracer.closest_hits(&rays, &mut hits, None, &mut Counters::default()));
        let mut group = c.benchmark_group(format!("{scene}_primary_full"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(8))
            .throughput(Throughput::Elements(rays.len() as u64));
        group.bench_function("wave32", |b| {
            b.iter(|| {
                let mut counters = Counters::default();
                pool.install(|| tracer.closest_hits(&rays, &mut hits, None, &mut counters));
                counters.td_clocks
            })
        });
        group.finish();
        let share = agreement(scene, "primary", &kept_pixels(&hits, width));
        println!(
            "{scene} primary_full wave32: {:.4} % of the kept pixels agree with Embree",
            100.0 * share
        );
        assert!(share >= 0.9997, "{scene} primary_full: {share}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
