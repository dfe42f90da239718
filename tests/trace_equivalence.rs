//! WaveTracer against the scalar reference traversal `bvh::closest_hit_scalar` on seeded
//! rays (identical hits, bit for bit), for wave32 and wave64 and several build options;
//! identical hits and counters for any rayon thread count; counters that add up over calls.

mod bvh_common;

use bvh_common::Rng;
use glam::Vec3;
use wavetrace::bvh::{build, closest_hit_scalar, BoxFormat, BuildOptions, BuiltBvh, Mesh};
use wavetrace::counters::Counters;
use wavetrace::hw::{NodePointer, NodeType, TriangleReturnMode};
use wavetrace::math::{Hit, HitRecord, Ray};
use wavetrace::traverse::{PrimitiveIds, Schedule, SimdPath, WaveTracer, WaveTracerConfig};
use wavetrace::wave::{Tracer, WaveWidth};

/// A seeded soup: random small triangles in a box, plus a grid of shared-edge triangles
/// on integer coordinates (exact edge ties).
fn mesh(rng: &mut Rng) -> Mesh {
    let mut tris = Vec::new();
    for _ in 0..3000 {
        let c = Vec3::new(
            rng.range(-10.0, 10.0),
            rng.range(-10.0, 10.0),
            rng.range(-10.0, 10.0),
        );
        let p = |rng: &mut Rng| {
            (c + Vec3::new(
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
            ))
            .to_array()
        };
        tris.push([p(rng), p(rng), p(rng)]);
    }
    for x in -8..8 {
        for y in -8..8 {
            let (x, y) = (x as f32, y as f32);
            tris.push([[x, y, 0.0], [x + 1.0, y, 0.0], [x, y + 1.0, 0.0]]);
            tris.push([
                [x + 1.0, y, 0.0],
                [x + 1.0, y + 1.0, 0.0],
                [x, y + 1.0, 0.0],
            ]);
        }
    }
    Mesh::from_triangles(&tris)
}

/// The seeded soup, `n` rays of [`rays`] and the default build, from one seed.
fn soup(seed: u64, n: usize) -> (Mesh, Vec<Ray>, BuiltBvh) {
    let mut rng = Rng(seed);
    let mesh = mesh(&mut rng);
    let rays = rays(&mut rng, n);
    let built = build(&mesh, &BuildOptions::default()).unwrap();
    (mesh, rays, built)
}

/// The seeded soup, `n` of [`rays`] and then `blocks` of [`coherent_rays`], from one seed.
fn soup_and_blocks(seed: u64, n: usize, blocks: usize) -> (Mesh, Vec<Ray>) {
    let mut rng = Rng(seed);
    let mesh = mesh(&mut rng);
    let mut rays = rays(&mut rng, n);
    rays.extend(coherent_rays(&mut rng, blocks));
    (mesh, rays)
}

fn rays(rng: &mut Rng, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|i| {
            let o = Vec3::new(
                rng.range(-15.0, 15.0),
                rng.range(-15.0, 15.0),
                rng.range(-15.0, 15.0),
            );
            let mut d = Vec3::new(
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
            );
            match i % 17 {
                0 => d.x = 0.0,
                1 => d = Vec3::new(0.0, 0.0, -1.0),
                2 => d.y = -0.0,
                _ => {}
            }
            let (tmin, tmax) = match i % 13 {
                0 => (rng.range(0.0, 5.0), 1e30),
                1 => (0.0, rng.range(0.0, 10.0)),
                2 => (3.0, 2.0),
                _ => (0.0, 1e30),
            };
            let mut r = Ray::new(o, d, tmin, tmax);
            match i % 101 {
                0 => r.origin.x = f32::NAN,
                1 => r.origin.z = f32::INFINITY,
                2 => r.dir.y = f32::NAN,
                3 => r.tmax = f32::NAN,
                _ => {}
            }
            r
        })
        .collect()
}

/// Rays that lanes of a wave share steps with: a pinhole camera's rays in pixel order (eight
/// neighbours per block of eight lanes, a fifth of them with a short extent), then blocks of
/// one ray eight times, aimed into the soup. The AVX2 loop keeps one lane's stack for a
/// block of eight while its lanes take the same steps (`Traversal::SHARES_LANES`): these
/// take it through box and triangle steps, parting and finishing together.
fn coherent_rays(rng: &mut Rng, blocks: usize) -> Vec<Ray> {
    let eye = Vec3::new(0.37, 0.21, 30.0);
    let mut out = Vec::new();
    for py in 0..48 {
        for px in 0..64 {
            let at = Vec3::new(
                -12.0 + 24.0 * (px as f32 + 0.5) / 64.0,
                -12.0 + 24.0 * (py as f32 + 0.5) / 48.0,
                0.0,
            );
            let tmax = if py % 5 == 4 { 0.8 } else { 1e30 };
            out.push(Ray::new(eye, at - eye, 0.0, tmax));
        }
    }
    for _ in 0..blocks {
        let o = rng.vec3(-15.0, 15.0);
        let d = rng.vec3(-6.0, 6.0) - o;
        out.extend(std::iter::repeat_n(Ray::new(o, d, 0.0, 1e30), 8));
    }
    out
}

fn assert_same(tracer: &WaveTracer, image: &wavetrace::bvh::BvhImage, mesh: &Mesh, rays: &[Ray]) {
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut counters = Counters::default();
    tracer.closest_hits(rays, &mut hits, None, &mut counters);
    let mut found = 0;
    for (i, (h, r)) in hits.iter().zip(rays).enumerate() {
        let expect = closest_hit_scalar(image, mesh, r);
        assert!(
            h.t.to_bits() == expect.t.to_bits()
                && h.prim_id == expect.prim_id
                && h.bary.map(f32::to_bits) == expect.bary.map(f32::to_bits)
                && h.front_face == expect.front_face,
            "ray {i} {r:?}: wave {h:?}, scalar {expect:?}"
        );
        found += h.is_hit() as usize;
    }
    assert!(found > rays.len() / 10, "too few hits: {found}");
    let mut occluded = vec![false; rays.len()];
    tracer.any_hits(rays, &mut occluded, &mut Counters::default());
    for (i, (o, h)) in occluded.iter().zip(&hits).enumerate() {
        assert_eq!(*o, h.is_hit(), "any hit of ray {i}");
    }
    assert!(counters.lanes_nan + counters.lanes_inf_origin > 0);
}

/// The build settings the equivalence tests run: the default, FP32 with four triangles a
/// node in mode 0, FP16 unsorted with grown boxes, and leaf chains in both modes.
fn build_settings() -> [BuildOptions; 5] {
    [
        BuildOptions::default(),
        BuildOptions {
            box_format: BoxFormat::Fp32,
            triangles_per_node: 4,
            return_mode: TriangleReturnMode::TriangleId,
            ..Default::default()
        },
        BuildOptions {
            box_format: BoxFormat::Fp16,
            triangles_per_node: 1,
            box_sort: false,
            box_grow_ulps: 6,
            ..Default::default()
        },
        // Leaf chains: the wave loop walks triangles k..0 of a node, one instruction each.
        BuildOptions {
            box_format: BoxFormat::Fp16,
            triangles_per_node: 4,
            leaf_chains: true,
            ..Default::default()
        },
        BuildOptions {
            triangles_per_node: 2,
            return_mode: TriangleReturnMode::TriangleId,
            leaf_chains: true,
            ..Default::default()
        },
    ]
}

#[test]
fn wave_tracer_matches_the_scalar_traversal() {
    let (mesh, rays) = soup_and_blocks(0xE0_0001, 12_000, 128);
    let options = build_settings();
    for (k, opts) in options.iter().enumerate() {
        let built = build(&mesh, opts).unwrap();
        assert_eq!(built.image.leaf_chains, opts.leaf_chains);
        for wave in [WaveWidth::W32, WaveWidth::W64] {
            // Every build of the wave loop this CPU runs (the portable one always).
            for simd in [SimdPath::Portable, SimdPath::Avx2] {
                if !simd.is_supported() {
                    continue;
                }
                let tracer = WaveTracer::new(
                    &built.image,
                    &mesh,
                    WaveTracerConfig {
                        wave,
                        simd,
                        ..Default::default()
                    },
                );
                if k == 0 {
                    assert_same(&tracer, &built.image, &mesh, &rays);
                } else {
                    // 4000 of the random rays, and the coherent ones.
                    let some: Vec<Ray> = rays[..4000]
                        .iter()
                        .chain(&rays[12_000..])
                        .copied()
                        .collect();
                    assert_same(&tracer, &built.image, &mesh, &some);
                }
            }
        }
    }
}

/// Every build of the wave loop (portable, AVX2) and both host schedules (lockstep, by-lane):
/// identical hits, per-ray clocks and counters to the portable lockstep loop. The AVX2 build
/// tests box lanes in pairs; the by-lane schedule rebuilds the wave's counters from each
/// lane's steps, so it is checked here on lanes that take every path: NaN and infinite
/// registers, out-of-bounds pointers (a descriptor that maps only part of the image) and user
/// nodes (child pointers turned into type 6), as well as plain box and triangle queries.
#[test]
fn every_build_and_schedule_gives_the_same_hits_and_counters() {
    let (mesh, rays) = soup_and_blocks(0xE0_0004, 20_000, 128);
    let mut images: Vec<(&str, wavetrace::bvh::BvhImage)> = Vec::new();
    for (name, opts) in [
        ("default", BuildOptions::default()),
        (
            "fp32, 1 triangle per node",
            BuildOptions {
                box_format: BoxFormat::Fp32,
                triangles_per_node: 1,
                ..Default::default()
            },
        ),
        (
            "leaf chains",
            BuildOptions {
                triangles_per_node: 4,
                leaf_chains: true,
                ..Default::default()
            },
        ),
    ] {
        images.push((name, build(&mesh, &opts).unwrap().image));
    }
    let default = images[0].1.clone();
    // Half of the image out of the descriptor's range.
    let mut truncated = default.clone();
    truncated.descriptor.size_minus_one = (default.bytes.len() as u64 / 64) / 2;
    images.push(("truncated descriptor", truncated));
    images.push(("user nodes", with_user_nodes(&default)));

    let combos = [
        (SimdPath::Portable, Schedule::Lockstep),
        (SimdPath::Portable, Schedule::ByLane),
        (SimdPath::Avx2, Schedule::Lockstep),
        (SimdPath::Avx2, Schedule::ByLane),
    ];
    for (name, image) in &images {
        let image = std::sync::Arc::new(image.clone());
        for wave in [WaveWidth::W32, WaveWidth::W64] {
            let run = |simd: SimdPath, schedule: Schedule| {
                let config = WaveTracerConfig {
                    wave,
                    simd,
                    schedule,
                    parallel: false,
                    ..Default::default()
                };
                let ids = image.clone();
                let mut tracer = WaveTracer::from_parts(
                    image.bytes.clone(),
                    0,
                    image.descriptor,
                    image.root,
                    Box::new(move |ptr: NodePointer, dwords: &[u32; 4]| {
                        ids.primitive_id(ptr, dwords)
                    }),
                    config,
                );
                if image.leaf_chains {
                    tracer = WaveTracer::new(&image, &mesh, config);
                }
                let mut hits = vec![Hit::MISS; rays.len()];
                let mut clocks = vec![0u32; rays.len()];
                let mut counters = Counters::default();
                tracer.closest_hits(&rays, &mut hits, Some(&mut clocks), &mut counters);
                let mut occluded = vec![false; rays.len()];
                let mut any_counters = Counters::default();
                tracer.any_hits(&rays, &mut occluded, &mut any_counters);
                (hits, clocks, counters, occluded, any_counters)
            };
            let reference = run(combos[0].0, combos[0].1);
            let c = &reference.2;
            assert!(c.td_box_queries > 0 && c.rays_hit > 0, "{name}");
            assert!(c.lanes_nan > 0 && c.lanes_inf_origin > 0, "{name}");
            match *name {
                "truncated descriptor" => assert!(c.td_out_of_bounds > 0),
                "user nodes" => assert!(c.td_user_nodes > 0),
                _ => {}
            }
            for &(simd, schedule) in &combos[1..] {
                if !simd.is_supported() {
                    eprintln!("no {} build on this CPU", simd.name());
                    continue;
                }
                let other = run(simd, schedule);
                let what = format!("{name}, wave{}, {simd:?}, {schedule:?}", wave.lanes());
                assert!(other.0 == reference.0, "hits differ: {what}");
                assert!(other.1 == reference.1, "clocks differ: {what}");
                assert_eq!(other.2, reference.2, "counters differ: {what}");
                assert!(other.3 == reference.3, "any-hit results differ: {what}");
                assert_eq!(other.4, reference.4, "any-hit counters differ: {what}");
            }
        }
    }
}

/// `image` with one child pointer of every fifth box node (from the root, depth first)
/// turned into a user node (type 6, same address): lanes that reach it are not tested and
/// go on with their stack.
fn with_user_nodes(image: &wavetrace::bvh::BvhImage) -> wavetrace::bvh::BvhImage {
    let mut out = image.clone();
    let mut todo = vec![image.root];
    let mut boxes = 0;
    while let Some(p) = todo.pop() {
        if !p.is_box() {
            continue;
        }
        // Both box formats hold their four child pointers in bytes 0..16.
        let at = p.address_64() as usize * 64;
        let mut children: [NodePointer; 4] =
            bytemuck::pod_read_unaligned(&image.bytes[at..at + 16]);
        todo.extend(children);
        boxes += 1;
        if boxes % 5 == 0 {
            if let Some(c) = children.iter().position(|c| !c.is_invalid()) {
                children[c] = children[c].with_type(NodeType::User6);
                out.bytes[at..at + 16].copy_from_slice(bytemuck::bytes_of(&children));
            }
        }
    }
    out
}

#[test]
fn hits_and_counters_do_not_depend_on_the_thread_count() {
    let (mesh, rays, built) = soup(0xE0_0002, 20_000);
    for wave in [WaveWidth::W32, WaveWidth::W64] {
        let tracer = WaveTracer::new(
            &built.image,
            &mesh,
            WaveTracerConfig {
                wave,
                ..Default::default()
            },
        );
        let mut runs = Vec::new();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut hits = vec![Hit::MISS; rays.len()];
            let mut clocks = vec![0u32; rays.len()];
            let mut counters = Counters::default();
            pool.install(|| {
                tracer.closest_hits(&rays, &mut hits, Some(&mut clocks), &mut counters)
            });
            runs.push((hits, clocks, counters));
        }
        // Serial (no rayon) too.
        let mut serial = WaveTracer::new(&built.image, &mesh, *tracer.config());
        serial.set_config(WaveTracerConfig {
            parallel: false,
            ..*tracer.config()
        });
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut clocks = vec![0u32; rays.len()];
        let mut counters = Counters::default();
        serial.closest_hits(&rays, &mut hits, Some(&mut clocks), &mut counters);
        runs.push((hits, clocks, counters));
        for r in &runs[1..] {
            assert!(r.0 == runs[0].0, "hits differ");
            assert!(r.1 == runs[0].1, "clocks differ");
            assert!(r.2 == runs[0].2, "counters differ");
        }
        let c = &runs[0].2;
        assert_eq!(c.rays, rays.len() as u64);
        assert_eq!(
            c.td_clocks,
            runs[0].1.iter().map(|&x| x as u64).sum::<u64>()
        );
        assert!(c.per_td.series_x.iter().all(|t| t.clocks > 0));
    }
}

/// `WaveTracer::from_image`, which takes the image and frees it before building its node
/// cache, traces as `WaveTracer::new` does: the scalar traversal's hits, and the same
/// counters, with the settings the tracer keeps from the image (return mode 0 reads the
/// mesh, leaf chains change the walk).
#[test]
fn a_tracer_taking_the_image_traces_as_one_borrowing_it() {
    let mut rng = Rng(0xE0_0006);
    let mesh = mesh(&mut rng);
    let rays = rays(&mut rng, 6000);
    let options = build_settings();
    for opts in &options {
        let built = build(&mesh, opts).unwrap();
        let run = |tracer: &WaveTracer| {
            let mut hits = vec![Hit::MISS; rays.len()];
            let mut counters = Counters::default();
            tracer.closest_hits(&rays, &mut hits, None, &mut counters);
            (hits, counters)
        };
        let borrowing = WaveTracer::new(&built.image, &mesh, WaveTracerConfig::default());
        let taking =
            WaveTracer::from_image(built.image.clone(), &mesh, WaveTracerConfig::default());
        assert_eq!(format!("{borrowing:?}"), format!("{taking:?}"), "{opts:?}");
        assert_same(&taking, &built.image, &mesh, &rays);
        let (hits, counters) = run(&taking);
        let (expect_hits, expect_counters) = run(&borrowing);
        assert!(hits == expect_hits, "hits differ: {opts:?}");
        assert_eq!(counters, expect_counters, "{opts:?}");
    }
}

/// Two calls that add to one `Counters` count what one call over all the rays counts (the
/// renderer traces batch after batch into one), in the parallel and the serial path. The
/// split falls after 260 waves, a multiple of both consoles' TD counts (20 and 52), so every
/// wave keeps its TD and the per-TD arrays must match too.
#[test]
fn counters_of_consecutive_calls_add_up() {
    let (mesh, rays, built) = soup(0xE0_0005, 20_000);
    let split = 260 * 32;
    for parallel in [true, false] {
        let config = WaveTracerConfig {
            parallel,
            ..Default::default()
        };
        let tracer = WaveTracer::new(&built.image, &mesh, config);
        let mut whole = Counters::default();
        let mut hits = vec![Hit::MISS; rays.len()];
        tracer.closest_hits(&rays, &mut hits, None, &mut whole);
        let mut parts = Counters::default();
        let mut part_hits = vec![Hit::MISS; rays.len()];
        let (first, second) = part_hits.split_at_mut(split);
        tracer.closest_hits(&rays[..split], first, None, &mut parts);
        tracer.closest_hits(&rays[split..], second, None, &mut parts);
        assert!(part_hits == hits, "hits differ (parallel: {parallel})");
        assert_eq!(parts, whole, "parallel: {parallel}");
        assert_eq!(whole.rays, rays.len() as u64);
        assert!(whole.per_td.series_s.iter().all(|t| t.clocks > 0));
        assert!(whole.per_td.series_x.iter().all(|t| t.clocks > 0));
    }
}

/// The same image mapped elsewhere: at a nonzero base address with its bytes three blocks
/// into the mapped memory (the direct node lookups are shifted), and ending at the top of
/// the 48-bit address space (where the direct lookups are not used, everything takes the
/// general fetch). Identical hits and counters to the plain image.
#[test]
fn the_image_address_does_not_change_hits_or_counters() {
    let (mesh, rays, built) = soup(0xE0_0003, 6000);
    let config = WaveTracerConfig {
        parallel: false,
        ..Default::default()
    };
    let run = |tracer: &WaveTracer| {
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut counters = Counters::default();
        tracer.closest_hits(&rays, &mut hits, None, &mut counters);
        (hits, counters)
    };
    let (plain_hits, plain_counters) = run(&WaveTracer::new(&built.image, &mesh, config));
    let image = std::sync::Arc::new(built.image.clone());
    let ids = |image: std::sync::Arc<wavetrace::bvh::BvhImage>| -> Box<dyn PrimitiveIds> {
        Box::new(move |ptr: NodePointer, dwords: &[u32; 4]| image.primitive_id(ptr, dwords))
    };
    // Three blocks of other memory, then the image at base * 256.
    let mut shifted = vec![0xABu8; 192];
    shifted.extend_from_slice(&image.bytes);
    let shifted_base = 0x100u64;
    // The image padded to 256-byte units, ending at 2^48.
    let mut top = image.bytes.clone();
    top.resize(image.bytes.len().div_ceil(256) * 256, 0);
    let top_base = ((1u64 << 48) - top.len() as u64) / 256;
    let cases = [
        (shifted, shifted_base * 256 - 192, shifted_base),
        (top, top_base * 256, top_base),
    ];
    for (bytes, va, base) in cases {
        let descriptor = wavetrace::hw::BvhDescriptor {
            base_address_256: base,
            ..image.descriptor
        };
        let tracer = WaveTracer::from_parts(
            bytes,
            va,
            descriptor,
            image.root,
            ids(image.clone()),
            config,
        );
        let (hits, counters) = run(&tracer);
        assert_eq!(counters, plain_counters, "va {va:#x}");
        for (i, (a, b)) in hits.iter().zip(&plain_hits).enumerate() {
            assert!(
                a.t.to_bits() == b.t.to_bits() && a.prim_id == b.prim_id && a.bary == b.bary,
                "ray {i}: {a:?} vs {b:?}"
            );
        }
    }
}

/// What `wavetrace trace` writes (`Tracer::closest_hit_records`: distances and primitive
/// ids, without barycentrics) is the scalar reference traversal's hit for every ray, with
/// the counters of `closest_hits`: wave32 and wave64, serial and parallel, both return
/// modes, random rays (NaN, infinite and empty ones among them) and coherent ones. The
/// trait's own version (built on `closest_hits`) gives the same.
#[test]
fn hit_records_are_the_reference_hits_with_the_same_counters() {
    /// Forwards to a tracer without its own `closest_hit_records` (the trait's is used).
    struct Plain<'a>(&'a WaveTracer);
    impl Tracer for Plain<'_> {
        fn closest_hits(
            &self,
            rays: &[Ray],
            hits: &mut [Hit],
            clocks: Option<&mut [u32]>,
            counters: &mut Counters,
        ) {
            self.0.closest_hits(rays, hits, clocks, counters);
        }
        fn any_hits(&self, rays: &[Ray], occluded: &mut [bool], counters: &mut Counters) {
            self.0.any_hits(rays, occluded, counters);
        }
    }
    let (mesh, rays) = soup_and_blocks(0xE0_0006, 3000, 40);
    for mode in [
        TriangleReturnMode::Barycentrics,
        TriangleReturnMode::TriangleId,
    ] {
        let options = BuildOptions {
            return_mode: mode,
            ..Default::default()
        };
        let built = build(&mesh, &options).unwrap();
        let reference: Vec<HitRecord> = rays
            .iter()
            .map(|r| HitRecord::from(&closest_hit_scalar(&built.image, &mesh, r)))
            .collect();
        assert!(reference.iter().filter(|r| r.is_hit()).count() > rays.len() / 4);
        for wave in [WaveWidth::W32, WaveWidth::W64] {
            for parallel in [false, true] {
                let config = WaveTracerConfig {
                    wave,
                    parallel,
                    ..Default::default()
                };
                let tracer = WaveTracer::new(&built.image, &mesh, config);
                let mut hits = vec![Hit::MISS; rays.len()];
                let mut hit_counters = Counters::default();
                tracer.closest_hits(&rays, &mut hits, None, &mut hit_counters);
                for (name, traced) in [
                    ("own", &tracer as &dyn Tracer),
                    ("trait's", &Plain(&tracer)),
                ] {
                    let mut records = vec![
                        HitRecord {
                            t: -1.0,
                            prim_id: 7,
                            instance: 9,
                        };
                        rays.len()
                    ];
                    let mut counters = Counters::default();
                    traced.closest_hit_records(&rays, &mut records, &mut counters);
                    let what = format!("{name} records, {mode:?}, {wave:?}, parallel {parallel}");
                    for (i, (r, e)) in records.iter().zip(&reference).enumerate() {
                        assert_eq!(r, e, "{what}: ray {i}");
                    }
                    assert_eq!(counters, hit_counters, "{what}");
                }
            }
        }
    }
}
