//! closest_hit_scalar (the instruction per node through the built image) against brute force
//! (the instruction on every triangle), for every encoder option, on random soups with
//! degenerate triangles and on the bunny.

mod bvh_common;

use bvh_common::*;
use wavetrace::bvh::{self, closest_hit_brute_force, closest_hit_scalar, BuildOptions, Mesh};
use wavetrace::hw::TriangleReturnMode;

fn check(
    mesh: &Mesh,
    rays: &[wavetrace::math::Ray],
    options: &BuildOptions,
    want: &[wavetrace::math::Hit],
) {
    let built = bvh::build(mesh, options).expect("build");
    if options.leaf_chains {
        assert!(
            built.references < mesh.len(),
            "chains should cluster triangles"
        );
        assert_eq!(built.metrics.triangle_references, mesh.len());
    } else if options.spatial_splits {
        assert!(
            built.references > mesh.len(),
            "splits should add references"
        );
    } else {
        assert_eq!(built.references, mesh.len());
    }
    let errors = bvh::validate(&built.image, mesh);
    assert!(errors.is_empty(), "{options:?}: {}", errors[0]);
    for (ray, want) in rays.iter().zip(want) {
        let got = closest_hit_scalar(&built.image, mesh, ray);
        assert_same_hit(mesh, ray, &got, want, &format!("{options:?}"));
    }
}

#[test]
fn every_option_matches_brute_force_on_random_soups() {
    for seed in 0..3u64 {
        let mut rng = Rng(seed);
        let mesh = random_soup(&mut rng, 150 + 100 * seed as usize);
        let rays = random_rays(&mut rng, &mesh, 300);
        let want: Vec<_> = rays
            .iter()
            .map(|r| closest_hit_brute_force(&mesh, r, TriangleReturnMode::TriangleId))
            .collect();
        assert!(
            want.iter().filter(|h| h.is_hit()).count() > 100,
            "rays should mostly hit"
        );
        for options in all_options() {
            check(&mesh, &rays, &options, &want);
        }
    }
}

#[test]
fn every_option_value_matches_brute_force_on_the_bunny() {
    let mesh = Mesh::load_obj(&std::path::Path::new(SCENES).join("bunny.obj.gz")).unwrap();
    assert_eq!(mesh.len(), 69_630);
    let mut rng = Rng(7);
    let rays = random_rays(&mut rng, &mesh, 48);
    let want: Vec<_> = rays
        .iter()
        .map(|r| closest_hit_brute_force(&mesh, r, TriangleReturnMode::TriangleId))
        .collect();
    // Each option value at least once (the full cross product runs on the soups).
    let all = all_options();
    let picks: Vec<usize> = (0..all.len()).step_by(7).collect();
    for &i in &picks {
        check(&mesh, &rays, &all[i], &want);
    }
}

/// Reads `NAME_SET.rays/.hits/.agree` (format in `../shared/data/scenes/README.md`).
fn reference_rays(name: &str, set: &str) -> Vec<(wavetrace::math::Ray, f32, u32, u8)> {
    let base = std::path::Path::new(SCENES);
    let rays = std::fs::read(base.join(format!("{name}_{set}.rays"))).unwrap();
    let hits = std::fs::read(base.join(format!("{name}_{set}.hits"))).unwrap();
    let agree = std::fs::read(base.join(format!("{name}_{set}.agree"))).unwrap();
    let f = |b: &[u8], i: usize| f32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
    (0..agree.len())
        .map(|i| {
            let r = &rays[32 * i..32 * i + 32];
            let ray = wavetrace::math::Ray::new(
                glam::Vec3::new(f(r, 0), f(r, 1), f(r, 2)),
                glam::Vec3::new(f(r, 3), f(r, 4), f(r, 5)),
                f(r, 6),
                f(r, 7),
            );
            let h = &hits[8 * i..8 * i + 8];
            (
                ray,
                f(h, 0),
                u32::from_le_bytes(h[4..8].try_into().unwrap()),
                agree[i],
            )
        })
        .collect()
}

#[test]
fn agrees_with_embree_reference_hits_on_bunny_and_sponza() {
    for (name, set) in [
        ("bunny", "primary"),
        ("bunny", "diffuse"),
        ("sponza", "diffuse"),
    ] {
        let mesh =
            Mesh::load_obj(&std::path::Path::new(SCENES).join(format!("{name}.obj.gz"))).unwrap();
        let refs = reference_rays(name, set);
        for options in [
            BuildOptions::default(),
            BuildOptions {
                box_format: wavetrace::bvh::BoxFormat::Fp16,
                triangles_per_node: 4,
                leaf_chains: true,
                ..BuildOptions::default()
            },
        ] {
            let built = bvh::build(&mesh, &options).unwrap();
            let mut checked = 0;
            for (ray, t, prim, agree) in refs.iter().step_by(97) {
                if *agree != 10 {
                    continue;
                }
                checked += 1;
                let got = closest_hit_scalar(&built.image, &mesh, ray);
                if *prim == u32::MAX {
                    assert!(
                        !got.is_hit(),
                        "{name} {set}: {ray:?} should miss, got {got:?}"
                    );
                    continue;
                }
                assert!(
                    got.is_hit(),
                    "{name} {set}: {ray:?} should hit {prim} at {t}"
                );
                assert!(
                    (got.t - t).abs() <= 1e-4 * t.abs(),
                    "{name} {set}: t {} vs Embree {t} ({ray:?})",
                    got.t
                );
                if got.prim_id != *prim {
                    let other = prim_t(&mesh, ray, *prim);
                    assert!((other - got.t).abs() <= 1e-4 * t.abs());
                }
            }
            assert!(checked > 600, "{checked}");
        }
    }
}

/// A flat grid of quads in the plane y = 0 (edges on the boxes' faces) and rays from above
/// aimed exactly at its grid lines and grid points, in f64 then rounded: the hits must be on
/// the plane, at t = -origin.y / dir.y computed in f64.
///
/// The box test and the watertight triangle test round differently, so a ray that meets the
/// plane on an edge can leave one quad's box before the plane while the triangle test puts
/// the hit in that quad: with no box growth it can slip through (the descriptor's
/// `box_grow_value`, `semantics.md` 5.2: GPURT's "conservative growth ... to cover the
/// box/triangle precision mismatch"). The test first checks that these rays do probe that
/// mismatch (some miss without growth), then that 3 ULPs and GPURT's 6 close every crack,
/// for FP32 and FP16 boxes, in the scalar traversal and in the wave tracer.
#[test]
fn box_growth_closes_the_cracks_between_flat_boxes() {
    use wavetrace::bvh::BoxFormat;
    use wavetrace::counters::Counters;
    use wavetrace::math::{Hit, Ray};
    use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
    use wavetrace::wave::Tracer;

    // 40 x 40 quads of 0.5 (every coordinate exact in f32 and f16).
    let line = |i: i32| -10.0 + 0.5 * i as f32;
    let mut tris = Vec::new();
    for j in 0..40 {
        for i in 0..40 {
            let (x0, x1, z0, z1) = (line(i), line(i + 1), line(j), line(j + 1));
            tris.push([[x0, 0.0, z0], [x1, 0.0, z0], [x1, 0.0, z1]]);
            tris.push([[x0, 0.0, z0], [x1, 0.0, z1], [x0, 0.0, z1]]);
        }
    }
    let mesh = Mesh::from_triangles(&tris);
    let mut rng = Rng(0x6A1D_0001);
    let mut rays = Vec::new();
    let mut want = Vec::new();
    for k in 0..20_000 {
        let origin = [
            rng.range(-9.5, 9.5) as f64,
            rng.range(0.01, 5.0) as f64,
            rng.range(-9.5, 9.5) as f64,
        ];
        // On a line of constant x, of constant z, or on a grid point.
        let on_x = line(1 + rng.below(39) as i32) as f64;
        let on_z = line(1 + rng.below(39) as i32) as f64;
        let target = match k % 3 {
            0 => [on_x, 0.0, rng.range(-9.5, 9.5) as f64],
            1 => [rng.range(-9.5, 9.5) as f64, 0.0, on_z],
            _ => [on_x, 0.0, on_z],
        };
        let d: Vec<f64> = (0..3).map(|a| target[a] - origin[a]).collect();
        let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let o32 = glam::Vec3::new(origin[0] as f32, origin[1] as f32, origin[2] as f32);
        let d32 = glam::Vec3::new(
            (d[0] / len) as f32,
            (d[1] / len) as f32,
            (d[2] / len) as f32,
        );
        rays.push(Ray::new(o32, d32, 0.0, 1e30));
        // The plane's distance for the rounded ray, in f64.
        want.push(-(o32.y as f64) / d32.y as f64);
    }
    let misses = |hits: &[Hit]| {
        for (i, (h, w)) in hits.iter().zip(&want).enumerate() {
            if h.is_hit() {
                let rel = (h.t as f64 - w).abs() / w;
                assert!(rel < 1e-5, "ray {i}: t {} against the plane's {w}", h.t);
            }
        }
        hits.iter().filter(|h| !h.is_hit()).count()
    };
    for box_format in [BoxFormat::Fp32, BoxFormat::Fp16] {
        for grow in [0u8, 3, 6] {
            let options = BuildOptions {
                box_format,
                box_grow_ulps: grow,
                ..BuildOptions::default()
            };
            let built = bvh::build(&mesh, &options).expect("build");
            let scalar: Vec<Hit> = rays
                .iter()
                .map(|r| closest_hit_scalar(&built.image, &mesh, r))
                .collect();
            let tracer = WaveTracer::new(&built.image, &mesh, WaveTracerConfig::default());
            let mut wave = vec![Hit::MISS; rays.len()];
            tracer.closest_hits(&rays, &mut wave, None, &mut Counters::default());
            let (missed, wave_missed) = (misses(&scalar), misses(&wave));
            assert_eq!(missed, wave_missed, "{box_format:?}, grow {grow}");
            if grow == 0 {
                assert!(missed > 0, "{box_format:?}: the rays never probed a crack");
            } else {
                assert_eq!(
                    missed, 0,
                    "{box_format:?}, grow {grow}: rays slipped through"
                );
            }
        }
    }
}

/// A mesh with a few triangles near the end of the f32 range: the top node's doubled
/// centroids then span more than `f32::MAX` (their extent overflows to infinity on every
/// axis, so every reference falls in one bin). No split may leave a side empty there: the
/// build takes the median split instead, and every build option finds brute force's hits on
/// the small triangles near the origin.
#[test]
fn triangles_near_the_f32_limit_build_and_match_brute_force() {
    let mut rng = Rng(41);
    let mut tris: Vec<[[f32; 3]; 3]> = (0..500)
        .map(|_| {
            let c = [0; 3].map(|_| rng.range(-10.0, 10.0));
            [0; 3].map(|_| [0, 1, 2].map(|k| c[k] + rng.range(-1.0, 1.0)))
        })
        .collect();
    for corner in 0..8 {
        let c = [0, 1, 2].map(|k| {
            if corner >> k & 1 == 1 {
                1.5e38
            } else {
                -1.5e38
            }
        });
        tris.push([0; 3].map(|_| [0, 1, 2].map(|k| c[k] + rng.range(-1.0, 1.0) * 1e36)));
    }
    let mesh = Mesh::from_triangles(&tris);
    // Rays at points of the small triangles, from up to 20 away.
    let rays: Vec<wavetrace::math::Ray> = (0..400)
        .map(|_| {
            let [a, b, c] = tris[rng.below(500)].map(glam::Vec3::from);
            let (u, v) = (rng.range(0.0, 0.5), rng.range(0.0, 0.5));
            let target = a + (b - a) * u + (c - a) * v;
            let dir = rng.unit();
            let origin = target - dir * rng.range(0.5, 20.0);
            wavetrace::math::Ray::new(origin, dir, 0.0, f32::INFINITY)
        })
        .collect();
    let want: Vec<_> = rays
        .iter()
        .map(|r| closest_hit_brute_force(&mesh, r, TriangleReturnMode::TriangleId))
        .collect();
    assert!(want.iter().filter(|h| h.is_hit()).count() > 300);
    for options in tree_settings() {
        let built = bvh::build(&mesh, &options).expect("build");
        let errors = bvh::validate(&built.image, &mesh);
        assert!(errors.is_empty(), "{options:?}: {}", errors[0]);
        for (ray, want) in rays.iter().zip(&want) {
            let got = closest_hit_scalar(&built.image, &mesh, ray);
            assert_same_hit(&mesh, ray, &got, want, &format!("{options:?}"));
        }
    }
}
