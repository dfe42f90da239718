//! Memory of a large instanced scene: 10,000 instances of the dragon
//! (`../shared/data/scenes/dragon.obj.gz`, 871,414 triangles), built two-level and traced
//! with 1,048,576 camera rays in batches, must stay under 1 GiB of peak resident memory.
//! Flattened, the scene would be 10,000 x 871,414 = 8,714,140,000 triangles (some 314 GB
//! of f32 vertex positions alone, three corners of 12 bytes each); instanced, the dragon is
//! built once and each instance is one 128-byte node.
//!
//! Alone in its file so that the process's peak (`VmHWM` of `/proc/self/status`) measures
//! this test only.

mod two_level_common;

use glam::{Quat, Vec3};
use std::path::Path;
use std::time::Instant;
use two_level_common::{affine, Rng};
use wavetrace::bvh::two_level::{
    build_two_level, BlasGeometry, BlasInput, InstanceInput, TwoLevelInput, TwoLevelOptions,
};
use wavetrace::bvh::Mesh;
use wavetrace::counters::Counters;
use wavetrace::hw::InstanceFlags;
use wavetrace::math::{Hit, Ray};
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;

const INSTANCES: usize = 10_000;
/// Instances per side of the square grid.
const GRID: usize = 100;
/// Camera image: 1024 x 1024 = 1,048,576 rays.
const WIDTH: u32 = 1024;
const HEIGHT: u32 = 1024;
/// Rays traced at a time (ray and hit buffers of 2 and 1.3 MB).
const BATCH: usize = 65_536;
const GIB: u64 = 1 << 30;

/// Peak resident memory of this process in bytes (`VmHWM`), `None` without `/proc`.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[test]
fn ten_thousand_dragons_trace_a_million_rays_in_under_a_gib() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scenes/dragon.obj.gz");
    let mesh = Mesh::load_obj(&path).unwrap();
    let triangles = mesh.indices.len() as u64;
    println!(
        "dragon: {triangles} triangles; flattened: {INSTANCES} x {triangles} = {} triangles",
        INSTANCES as u64 * triangles
    );

    // The dragon's bounds: a grid cell is 0.7 times its diagonal, so that instances turned
    // about any axis and moved by a tenth of a cell overlap their neighbours a little at most.
    let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    for p in &mesh.positions {
        lo = lo.min(Vec3::from(*p));
        hi = hi.max(Vec3::from(*p));
    }
    let centre = (lo + hi) * 0.5;
    let cell = 0.7 * (hi - lo).length();
    let mut rng = Rng(0xD4A6_0000);
    let instances: Vec<InstanceInput> = (0..INSTANCES)
        .map(|i| {
            let (gx, gz) = ((i % GRID) as f32, (i / GRID) as f32);
            let q = Quat::from_axis_angle(rng.unit(), rng.range(0.0, std::f32::consts::TAU));
            let jitter = Vec3::new(rng.range(-0.1, 0.1), 0.0, rng.range(-0.1, 0.1)) * cell;
            let place = Vec3::new(gx * cell, 0.0, gz * cell) + jitter;
            // Turn about the dragon's centre, then move it to its cell.
            let t = place - q * centre;
            InstanceInput {
                blas: 0,
                object_to_world: affine(q, Vec3::ONE, t),
                mask: 0xFF,
                id: i as u32,
                flags: InstanceFlags::NONE,
            }
        })
        .collect();
    let input = TwoLevelInput {
        blases: vec![BlasInput {
            geometry: BlasGeometry::Triangles(mesh),
            opaque: true,
        }],
        instances,
    };

    let start = Instant::now();
    let bvh = build_two_level(&input, &TwoLevelOptions::default()).expect("builds");
    let tracer = WaveTracer::two_level(bvh, &input, WaveTracerConfig::default());
    let build_seconds = start.elapsed().as_secs_f64();
    println!(
        "build: {build_seconds:.2} s, image {:.1} MB",
        tracer.image_len() as f64 / 1e6
    );
    let BlasGeometry::Triangles(mesh) = &input.blases[0].geometry else {
        unreachable!("BLAS 0 holds the dragon")
    };
    let triangles = mesh.indices.len() as u32;

    // A pinhole camera high above the grid's near half, looking down at its middle, 60
    // degrees across: the view holds most of the grid.
    let side = GRID as f32 * cell;
    let target = Vec3::new(side * 0.5, 0.0, side * 0.5);
    let eye = Vec3::new(side * 0.5, side * 0.8, side * 0.1);
    let forward = (target - eye).normalize();
    let right = forward.cross(Vec3::Y).normalize();
    let up = right.cross(forward);
    let half = 30f32.to_radians().tan();
    let camera_ray = |k: usize| {
        let (x, y) = ((k as u32 % WIDTH) as f32, (k as u32 / WIDTH) as f32);
        let u = ((x + 0.5) / WIDTH as f32 * 2.0 - 1.0) * half;
        let v = ((y + 0.5) / HEIGHT as f32 * 2.0 - 1.0) * half;
        Ray::new(eye, forward + right * u + up * v, 0.0, f32::INFINITY)
    };

    let total = (WIDTH * HEIGHT) as usize;
    let start = Instant::now();
    let mut counters = Counters::default();
    let mut rays = Vec::with_capacity(BATCH);
    let mut hits = vec![Hit::MISS; BATCH];
    let mut hit_count = 0usize;
    let mut instances_hit = vec![false; INSTANCES];
    for first in (0..total).step_by(BATCH) {
        let n = BATCH.min(total - first);
        rays.clear();
        rays.extend((first..first + n).map(camera_ray));
        tracer.closest_hits(&rays, &mut hits[..n], None, &mut counters);
        for hit in &hits[..n] {
            if hit.is_hit() {
                assert!(hit.t.is_finite() && hit.t > 0.0, "{hit:?}");
                assert!((hit.instance as usize) < INSTANCES, "{hit:?}");
                assert!(hit.prim_id < triangles, "{hit:?}");
                instances_hit[hit.instance as usize] = true;
                hit_count += 1;
            }
        }
    }
    let trace_seconds = start.elapsed().as_secs_f64();
    let distinct = instances_hit.iter().filter(|&&h| h).count();
    println!(
        "trace: {total} rays in {trace_seconds:.2} s ({:.2} Mrays/s), {hit_count} hits \
         ({:.1} %), {distinct} instances hit, {} instance transitions",
        total as f64 / trace_seconds / 1e6,
        100.0 * hit_count as f64 / total as f64,
        counters.shader.instance_transitions
    );
    let peak = peak_rss();
    match peak {
        Some(peak) => println!("peak RSS: {:.1} MiB", peak as f64 / (1 << 20) as f64),
        None => println!("no /proc/self/status here: peak RSS not checked"),
    }
    assert_eq!(counters.rays, total as u64);
    assert_eq!(counters.rays_hit, hit_count as u64);
    assert!(
        hit_count > total / 5,
        "only {hit_count} of {total} rays hit"
    );
    assert!(distinct > INSTANCES / 10, "only {distinct} instances hit");

    if let Some(peak) = peak {
        assert!(
            peak < GIB,
            "peak RSS {peak} bytes is not under 1 GiB ({GIB})"
        );
    }
}
