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
