//! The wave tracer against Embree's reference hits on the shared scenes
//! (`../shared/data/scenes/README.md`): on the rays where all ten reference tracers agree
//! (`.agree` byte 10), at least 99.99 % must agree (same miss, or t within relative 1e-4).
//!
//! Known exception, sponza diffuse (99.979 %): 27 rays start a few centimetres from long,
//! thin triangles (10.8 x 0.03 units); the hardware's division-free t
//! (`t_num = U*A.z + V*B.z + W*C.z`, `semantics.md` 7.2) cancels there and t is off by up to
//! 3e-3 relative (checked in f64 on two rays: Embree is right). The instruction is bit-exact to the
//! scalar reference on those rays, so this is the modelled hardware's precision, not a
//! traversal error. For that set the test requires 99.97 %, the same primitive as Embree on
//! every disagreement with t within 1e-2, and identity with `closest_hit_scalar` there.
//!
//! What `wavetrace trace` writes, the same hits with t recomputed in f64 from the hit
//! triangle (`bvh::refine_hit_distance`, the hit shader's step), must agree on 99.99 % of
//! every set, sponza diffuse included.

#[path = "common/camera_rays.rs"]
mod camera_rays;

use camera_rays::scenes;

use wavetrace::bvh::{
    build, closest_hit_scalar, refine_hit_distance, BoxFormat, BuildOptions, BvhImage, Mesh,
};
use wavetrace::counters::Counters;
use wavetrace::math::{Hit, Ray};
use wavetrace::traverse::rayfile::{parse_hits, read_rays};
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::{Tracer, WaveWidth};

fn check(image: &BvhImage, mesh: &Mesh, tracer: &WaveTracer, scene: &str, set: &str) {
    let dir = scenes();
    let rays = read_rays(&dir.join(format!("{scene}_{set}.rays"))).unwrap();
    let hits_path = dir.join(format!("{scene}_{set}.hits"));
    let reference = parse_hits(&hits_path, &std::fs::read(&hits_path).unwrap()).unwrap();
    let agree = std::fs::read(dir.join(format!("{scene}_{set}.agree"))).unwrap();
    assert_eq!(rays.len(), reference.len());
    assert_eq!(rays.len(), agree.len());
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut counters = Counters::default();
    tracer.closest_hits(&rays, &mut hits, None, &mut counters);
    let (mut considered, mut agreeing, mut agreeing_refined) = (0u64, 0u64, 0u64);
    for i in 0..rays.len() {
        if agree[i] != 10 {
            continue;
        }
        considered += 1;
        let (t_ref, id_ref) = reference[i];
        let h = &hits[i];
        let agrees = |h: &Hit| {
            if id_ref == u32::MAX {
                !h.is_hit()
            } else {
                h.is_hit() && ((h.t - t_ref).abs() <= 1e-4 * t_ref.abs())
            }
        };
        let ok = agrees(h);
        if agrees(&refine_hit_distance(mesh, &rays[i], *h)) {
            agreeing_refined += 1;
        }
        if ok {
            agreeing += 1;
        } else {
            // Only the precision of the hardware's t may differ (see the module docs).
            assert_eq!(h.prim_id, id_ref, "{scene} {set} ray {i}: other primitive");
            assert!(
                (h.t - t_ref).abs() <= 1e-2 * t_ref.abs(),
                "{scene} {set} ray {i}: {} vs {t_ref}",
                h.t
            );
            assert_eq!(*h, closest_hit_scalar(image, mesh, &rays[i]), "ray {i}");
        }
    }
    let share = agreeing as f64 / considered as f64;
    eprintln!(
        "{scene} {set}: {agreeing}/{considered} agree ({:.5} %), {} mesh triangles",
        100.0 * share,
        mesh.len()
    );
    assert!(considered > 60_000);
    let required = if (scene, set) == ("sponza", "diffuse") {
        0.9997
    } else {
        0.9999
    };
    assert!(
        share >= required,
        "{scene} {set}: only {agreeing}/{considered} agree"
    );
    let refined = agreeing_refined as f64 / considered as f64;
    eprintln!(
        "{scene} {set}: {agreeing_refined}/{considered} agree with refined t ({:.5} %)",
        100.0 * refined
    );
    assert!(
        refined >= 0.9999,
        "{scene} {set}: only {agreeing_refined}/{considered} agree with refined t"
    );
    assert_eq!(counters.rays, rays.len() as u64);
    assert!(counters.td_clocks > 0 && counters.td_box_queries > 0);
}

fn scene(scene: &str, wave: WaveWidth, options: &BuildOptions) {
    let mesh = Mesh::load_obj(&scenes().join(format!("{scene}.obj.gz"))).unwrap();
    let built = build(&mesh, options).unwrap();
    assert_eq!(built.image.leaf_chains, options.leaf_chains);
    let tracer = WaveTracer::new(
        &built.image,
        &mesh,
        WaveTracerConfig {
            wave,
            ..Default::default()
        },
    );
    check(&built.image, &mesh, &tracer, scene, "primary");
    check(&built.image, &mesh, &tracer, scene, "diffuse");
}

#[test]
fn bunny_agrees_with_embree() {
    scene("bunny", WaveWidth::W32, &BuildOptions::default());
}

#[test]
fn sponza_agrees_with_embree() {
    scene("sponza", WaveWidth::W64, &BuildOptions::default());
}

/// The smallest image: FP16 boxes, four triangles per node behind one box slot (leaf
/// chains, walked by the traversal shader).
#[test]
fn sponza_chain_image_agrees_with_embree() {
    let options = BuildOptions {
        box_format: BoxFormat::Fp16,
        triangles_per_node: 4,
        leaf_chains: true,
        ..Default::default()
    };
    scene("sponza", WaveWidth::W32, &options);
}

/// The full 1024x1024 camera ray sets of all three scenes, the dragon's included (no ray
/// set of it ships), regenerated from `NAME.json`: the share of rays that hit something
/// equals the `primary_hit_fraction` the reference tracers recorded there, within the
/// 0.01 % of rays the agreement rule lets differ. On the dragon, bounce rays off those hits
/// follow ([`dragon_diffuse_matches_the_scalar_reference`]).
#[test]
fn full_camera_rays_hit_the_recorded_fraction() {
    for scene in ["bunny", "sponza", "dragon"] {
        let mesh = Mesh::load_obj(&scenes().join(format!("{scene}.obj.gz"))).unwrap();
        let built = build(&mesh, &BuildOptions::default()).unwrap();
        let tracer = WaveTracer::new(&built.image, &mesh, WaveTracerConfig::default());
        let (rays, _) = camera_rays::full_primary_rays(scene);
        let mut hits = vec![Hit::MISS; rays.len()];
        tracer.closest_hits(&rays, &mut hits, None, &mut Counters::default());
        assert_eq!(rays.len(), 1 << 20);
        let (hit, expected) = camera_rays::assert_primary_hit_fraction(scene, &hits);
        eprintln!(
            "{scene}: {hit} of {} camera rays hit, reference {expected}",
            rays.len()
        );
        if scene == "dragon" {
            dragon_diffuse_matches_the_scalar_reference(&built.image, &mesh, &rays, &hits);
        }
    }
}

/// Bounce rays off the dragon made the data set's way (none ships): the wave tracer equals
/// the scalar reference traversal on every one, and about the share the data set recorded
/// for its own (held-back) set hits (that set is another sample: within 0.02).
fn dragon_diffuse_matches_the_scalar_reference(
    image: &BvhImage,
    mesh: &Mesh,
    primary: &[Ray],
    primary_hits: &[Hit],
) {
    let json = camera_rays::scene_json("dragon");
    let diagonal = camera_rays::diagonal("dragon");
    let rays = camera_rays::diffuse_rays(mesh, primary, primary_hits, diagonal, 1 << 13, 7);
    let tracer = WaveTracer::new(image, mesh, WaveTracerConfig::default());
    let mut hits = vec![Hit::MISS; rays.len()];
    tracer.closest_hits(&rays, &mut hits, None, &mut Counters::default());
    for (i, ray) in rays.iter().enumerate() {
        assert_eq!(hits[i], closest_hit_scalar(image, mesh, ray), "ray {i}");
    }
    let share = hits.iter().filter(|h| h.is_hit()).count() as f64 / hits.len() as f64;
    let recorded = json["diffuse_hit_fraction"].as_f64().unwrap();
    eprintln!(
        "dragon diffuse: {share:.4} of {} rays hit, recorded {recorded}",
        rays.len()
    );
    assert!((share - recorded).abs() < 0.02, "{share} vs {recorded}");
}

/// The bunny scaled by 2^14 (coordinates up to about 1.6e5, past 65504, the largest finite
/// FP16 value) and by 2^-18 (every box bound in FP16's subnormal range), with FP16 and mixed
/// boxes. A power-of-two scale is exact in f32, so Embree's reference hits hold for the
/// scaled scene and rays with t scaled the same way: FP16 bounds must round outwards (to
/// infinity past 65504, through the subnormals near zero) and the triangle test must not
/// depend on the scene's scale. The same agreement rule as the shipped scenes.
#[test]
fn bunny_scaled_past_the_fp16_range_agrees_with_embree() {
    let dir = scenes();
    let mesh = Mesh::load_obj(&dir.join("bunny.obj.gz")).unwrap();
    let rays = read_rays(&dir.join("bunny_primary.rays")).unwrap();
    let hits_path = dir.join("bunny_primary.hits");
    let reference = parse_hits(&hits_path, &std::fs::read(&hits_path).unwrap()).unwrap();
    let agree = std::fs::read(dir.join("bunny_primary.agree")).unwrap();
    for scale in [16384.0f32, 1.0 / 262_144.0] {
        let triangles: Vec<[[f32; 3]; 3]> = (0..mesh.len() as u32)
            .map(|i| mesh.triangle(i).map(|v| v.map(|c| c * scale)))
            .collect();
        let scaled = Mesh::from_triangles(&triangles);
        let scaled_rays: Vec<Ray> = rays
            .iter()
            .map(|r| Ray {
                origin: r.origin * scale,
                ..*r
            })
            .collect();
        for box_format in [BoxFormat::Fp16, BuildOptions::default().box_format] {
            let options = BuildOptions {
                box_format,
                ..Default::default()
            };
            let built = build(&scaled, &options).unwrap();
            let tracer = WaveTracer::new(&built.image, &scaled, WaveTracerConfig::default());
            let mut hits = vec![Hit::MISS; rays.len()];
            tracer.closest_hits(&scaled_rays, &mut hits, None, &mut Counters::default());
            let (mut considered, mut agreeing) = (0u32, 0u32);
            for (i, h) in hits.iter().enumerate() {
                if agree[i] != 10 {
                    continue;
                }
                considered += 1;
                let (t_ref, id_ref) = reference[i];
                let t_ref = f64::from(t_ref) * f64::from(scale);
                let ok = if id_ref == u32::MAX {
                    !h.is_hit()
                } else {
                    h.is_hit() && (f64::from(h.t) - t_ref).abs() <= 1e-4 * t_ref.abs()
                };
                agreeing += u32::from(ok);
            }
            eprintln!("bunny x {scale} ({box_format:?}): {agreeing}/{considered} agree");
            assert!(considered > 60_000);
            assert!(
                f64::from(agreeing) >= 0.9999 * f64::from(considered),
                "bunny x {scale} ({box_format:?}): only {agreeing}/{considered} agree"
            );
        }
    }
}
