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
