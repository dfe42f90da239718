//! Spatial splits must not lose hits: on every sponza camera ray (the shared set), the image
//! built with split references finds the same nearest distance as the image built without
//! (which the brute-force tests pin to the instruction on every triangle).
//!
//! A clipped piece's box must be widened by the magnitude of its coordinates, not only
//! relative to the piece's extent: otherwise a thin piece far from the origin can end a few
//! ULPs short of its triangle, and 162 of these rays report a farther hit.

mod bvh_common;

use bvh_common::{nearest_hit_differences, scene_and_rays};
use wavetrace::bvh::{build, BuildOptions};

#[test]
fn spatial_splits_find_the_same_nearest_hits_on_sponza() {
    let (mesh, rays) = scene_and_rays("sponza", "primary");
    let plain = build(&mesh, &BuildOptions::default()).unwrap();
    let split = build(
        &mesh,
        &BuildOptions {
            spatial_splits: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(split.references > mesh.len(), "no reference was split");
    let differing = nearest_hit_differences(&plain.image, &split.image, &mesh, &rays);
    assert!(
        differing.is_empty(),
        "{} rays differ, first {:?}",
        differing.len(),
        &differing[..differing.len().min(5)]
    );
}
