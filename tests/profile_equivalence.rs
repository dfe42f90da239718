//! Every profiled variant returns the reference traversal's hits (same primitive, t within
//! the tolerance; same occluded flag for any-hit rays), on seeded rays over a generated
//! mesh and the shared bunny and sponza meshes; the stream loop without refill is the
//! shared wave loop; the short-stack strategies really overflow, restart and walk back.

use glam::Vec3;
use std::path::Path;
use wavetrace::bvh::{self, BuildOptions, Mesh};
use wavetrace::counters::Counters;
use wavetrace::hw::NodePointer;
use wavetrace::math::{Hit, Ray};
use wavetrace::profile::rays::{PinholeCamera, SplitMix64};
use wavetrace::profile::{self, QueryKind, RayKind, RaySet, Variant};
use wavetrace::traverse::short_stack::{ChildOrder, TrailStack};
use wavetrace::traverse::stream::{trace_stream, StreamRays, StreamTally};
use wavetrace::traverse::{
    FullStack, LaneOutput, LaneState, LockstepLanes, Query, Strategy, WaveRun,
};
use wavetrace::wave::intersect::RayColumns;
use wavetrace::wave::{BvhMemory, NodeCache, Portable, Wave, WaveIntersector};

fn shared(name: &str) -> Mesh {
    let path = format!(
        "{}/../shared/data/scenes/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    Mesh::load_obj(Path::new(&path)).expect("shared mesh")
}

/// A seeded soup of small random triangles in a unit cube (deep trees, many overlaps).
fn soup(n: usize, seed: u64) -> Mesh {
    let mut rng = SplitMix64(seed);
    let mut p = || Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32());
    let tris: Vec<[[f32; 3]; 3]> = (0..n)
        .map(|_| {
            let c = p();
            let a = c + (p() - 0.5) * 0.08;
            let b = c + (p() - 0.5) * 0.08;
            [c.to_array(), a.to_array(), b.to_array()]
        })
        .collect();
    Mesh::from_triangles(&tris)
}

/// Random rays from inside and around the cube, a few with tmin > 0 or finite tmax.
fn random_rays(n: usize, seed: u64) -> Vec<Ray> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|i| {
            let o = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 1.6 - 0.3;
            let d = Vec3::new(
                rng.next_f32() - 0.5,
                rng.next_f32() - 0.5,
                rng.next_f32() - 0.5,
            );
            let (tmin, tmax) = match i % 4 {
                0 => (0.0, f32::INFINITY),
                1 => (0.05, f32::INFINITY),
                2 => (0.0, 0.7),
                _ => (0.0, 1e30),
            };
            Ray::new(o, d.normalize_or(Vec3::X), tmin, tmax)
        })
        .collect()
}

/// Checks every variant on `set`; returns (variant name, restarts per ray).
fn check_all(mesh: &Mesh, set: &RaySet, reference: &[Hit]) -> Vec<(String, f64)> {
    let variants = profile::all_variants();
    let report = profile::profile(
        "test",
        mesh,
        set,
        &variants,
        &wavetrace::hw::peak::SERIES_X,
        Some(reference),
    )
    .expect("profile");
    assert_eq!(report.variants.len(), variants.len());
    for v in &report.variants {
        assert_eq!(
            v.wrong_rays, 0,
            "{} disagrees with the reference on {} {} rays",
            v.name, v.wrong_rays, set.name
        );
        assert!(v.rank.is_some());
        assert!(v.td_clocks_per_ray > 0.0, "{}", v.name);
    }
    report
        .variants
        .iter()
        .map(|v| (v.name.clone(), v.restarts_per_ray))
        .collect()
}

fn reference(mesh: &Mesh, rays: &[Ray]) -> Vec<Hit> {
    let image = profile::reference_image(mesh).unwrap();
    profile::reference_hits(&image, mesh, rays)
}

#[test]
fn all_variants_agree_on_a_random_soup_closest_and_any_hit() {
    let mesh = soup(3000, 11);
    let rays = random_rays(3000, 12);
    let hits = reference(&mesh, &rays);
    assert!(hits.iter().filter(|h| h.is_hit()).count() > 100);
    for query in [QueryKind::ClosestHit, QueryKind::AnyHit] {
        let set = RaySet {
            name: format!("{query:?}"),
            rays: rays.clone(),
            query,
        };
        let restarts = check_all(&mesh, &set, &hits);
        // The short stacks really ran out: restarts and walk-backs happened.
        for name in ["restart-1", "walkback-1", "stackless-trail"] {
            let r = restarts.iter().find(|(n, _)| n == name).unwrap().1;
            assert!(r > 0.1, "{name}: {r} restarts per ray");
        }
    }
}

#[test]
fn all_variants_agree_on_bunny_and_sponza_rays() {
    for (name, camera) in [
        ("bunny.obj.gz", None),
        (
            "sponza.obj.gz",
            Some(PinholeCamera {
                eye: Vec3::new(13.0, 2.5, 0.0),
                look_at: Vec3::new(-12.0, 5.0, 0.0),
                up: Vec3::Y,
                vfov_deg: 65.0,
            }),
        ),
    ] {
        let mesh = shared(name);
        let image = profile::reference_image(&mesh).unwrap();
        let camera = camera.unwrap_or_else(|| PinholeCamera::framing(&profile::mesh_bounds(&mesh)));
        for kind in [
            RayKind::Primary,
            RayKind::Diffuse,
            RayKind::Ao,
            RayKind::Shadow,
        ] {
            let (mut set, hits) =
                profile::make_rays(kind, &mesh, &image, camera.primary_rays(24, 24), 5);
            set.rays.truncate(400);
            let hits = match hits {
                Some(mut h) => {
                    h.truncate(set.rays.len());
                    h
                }
                None => profile::reference_hits(&image, &mesh, &set.rays),
            };
            assert!(!set.rays.is_empty(), "{name} {kind:?}");
            check_all(&mesh, &set, &hits);
        }
    }
}

#[test]
fn stream_without_refill_is_the_shared_wave_loop() {
    let mesh = soup(1500, 3);
    let image = bvh::build(&mesh, &BuildOptions::default()).unwrap().image;
    let rays = random_rays(32 * 5 + 7, 4);
    let memory = BvhMemory {
        bytes: &image.bytes,
        va: 0,
    };
    let cache = NodeCache::build(&memory, &image.descriptor, image.root);
    let ix = WaveIntersector::new(memory, image.descriptor, Some(&cache));
    let prim = |p: NodePointer, d: &[u32; 4]| image.primitive_id(p, d);
    for query in [Query::ClosestHit, Query::AnyHit] {
        let run = WaveRun {
            intersector: &ix,
            traversal: &FullStack,
            root: image.root,
            prim_id: &prim,
            query,
        };
        let mut a = vec![LaneOutput::default(); rays.len()];
        let mut ca = Counters::default();
        let mut wave: Box<Wave<32, LaneState<_>>> = Box::new(Wave::new(0));
        let mut columns = RayColumns::default();
        for (w, (r, o)) in rays.chunks(32).zip(a.chunks_mut(32)).enumerate() {
            let lanes = LockstepLanes {
                wave: &mut wave,
                columns: &mut columns,
            };
            run.trace_wave(Portable, w as u64, r, lanes, o, &mut ca);
        }
        let mut b = vec![LaneOutput::default(); rays.len()];
        let mut tally = StreamTally::default();
        let mut wave: Box<Wave<32, LaneState<_>>> = Box::new(Wave::new(0));
        let stream = StreamRays {
            rays: &rays,
            first_wave_index: 0,
            refill: false,
        };
        trace_stream(&run, stream, &mut wave, &mut b, &mut tally);
        let StreamTally {
            counters: cb,
            stats,
        } = tally;
        assert_eq!(ca, cb, "{query:?} counters");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.best, x.t.to_bits(), x.clocks),
                (y.best, y.t.to_bits(), y.clocks)
            );
        }
        // Mean depth samples one entry per lane step.
        assert_eq!(stats.stack_depth_samples, cb.trav_lane_steps);
    }
}

#[test]
fn refill_keeps_hits_and_fills_lanes() {
    let mesh = soup(1500, 5);
    let image = bvh::build(&mesh, &BuildOptions::default()).unwrap().image;
    let rays = random_rays(1000, 6);
    let base = Variant::baseline();
    let refill = Variant {
        refill: true,
        ..base.clone()
    };
    let (a, ca, _) = profile::trace_variant(&base, &image, &mesh, &rays, QueryKind::ClosestHit);
    let (b, cb, _) = profile::trace_variant(&refill, &image, &mesh, &rays, QueryKind::ClosestHit);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            (x.prim_id, x.t.to_bits(), x.clocks),
            (y.prim_id, y.t.to_bits(), y.clocks)
        );
    }
    // Same lane work, in fewer wave instructions.
    assert_eq!(ca.td_clocks, cb.td_clocks);
    assert!(cb.simd_efficiency() > ca.simd_efficiency());
    assert!(cb.trav_iterations < ca.trav_iterations);
}

#[test]
fn trail_with_unbounded_stack_never_restarts_and_matches_full_stack_work() {
    let mesh = soup(2000, 7);
    let image = bvh::build(&mesh, &BuildOptions::default()).unwrap().image;
    let rays = random_rays(640, 8);
    let (_, full, _) = profile::trace_variant(
        &Variant::baseline(),
        &image,
        &mesh,
        &rays,
        QueryKind::ClosestHit,
    );
    let big = Variant {
        traversal: Strategy::RestartTrail(1 << 20),
        ..Variant::baseline()
    };
    let (_, trail, stats) =
        profile::trace_variant(&big, &image, &mesh, &rays, QueryKind::ClosestHit);
    assert_eq!(stats.events.restarts, 0);
    assert_eq!(stats.events.dropped, 0);
    // The same visit order: the same queries and clocks.
    assert_eq!(full.td_clocks, trail.td_clocks);
    assert_eq!(full.td_box_queries, trail.td_box_queries);
    assert_eq!(full.trav_max_stack_depth, trail.trav_max_stack_depth);
}

#[test]
fn stackless_trail_issues_exactly_one_restart_per_dropped_sibling_subtree() {
    // Hand-checkable: with no stack, every pending sibling is reached by one restart.
    let mesh = soup(400, 9);
    let image = bvh::build(&mesh, &BuildOptions::default()).unwrap().image;
    let rays = random_rays(200, 10);
    let order = ChildOrder {
        sorted: true,
        leaf_first: false,
    };
    let memory = BvhMemory {
        bytes: &image.bytes,
        va: 0,
    };
    let ix = WaveIntersector::new(memory, image.descriptor, None);
    let prim = |p: NodePointer, d: &[u32; 4]| image.primitive_id(p, d);
    let trav = TrailStack { capacity: 0, order };
    let mut out = vec![LaneOutput::default(); rays.len()];
    let mut tally = StreamTally::default();
    let mut wave: Box<Wave<32, LaneState<_>>> = Box::new(Wave::new(0));
    let run = WaveRun {
        intersector: &ix,
        traversal: &trav,
        root: image.root,
        prim_id: &prim,
        query: Query::AnyHit,
    };
    let stream = StreamRays {
        rays: &rays,
        first_wave_index: 0,
        refill: false,
    };
    trace_stream(&run, stream, &mut wave, &mut out, &mut tally);
    let StreamTally {
        counters: c,
        stats: s,
    } = tally;
    // Every restart re-enters at the root: restarts <= dropped siblings (each dropped sibling
    // is reached by at most one restart; culled ones by none).
    assert!(s.events.restarts > 0);
    assert!(s.events.restarts <= s.events.dropped);
    assert_eq!(c.trav_max_stack_depth, 0);
}

#[test]
fn all_variants_agree_on_the_shipped_cornell_scene() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/cornell/cornell.toml");
    let scene = wavetrace::scene::Scene::load(path).expect("shipped scene");
    let mesh = profile::scene_mesh(&scene);
    let image = profile::reference_image(&mesh).unwrap();
    for kind in [RayKind::Primary, RayKind::Diffuse, RayKind::Shadow] {
        let primary = profile::scene_primary_rays(&scene, 20, 20);
        let (set, hits) = profile::make_rays(kind, &mesh, &image, primary, 3);
        let hits = hits.unwrap_or_else(|| profile::reference_hits(&image, &mesh, &set.rays));
        assert!(hits.iter().any(|h| h.is_hit()), "{kind:?}");
        check_all(&mesh, &set, &hits);
    }
}

/// Every field of two hits, bit for bit. Written here rather than taken from the profile's
/// own comparison, which the guard uses: these tests check the guard, so they do not share
/// its code.
fn bit_identical(a: &Hit, b: &Hit) -> bool {
    a.t.to_bits() == b.t.to_bits()
        && a.prim_id == b.prim_id
        && a.bary.map(f32::to_bits) == b.bary.map(f32::to_bits)
        && a.front_face == b.front_face
        && a.instance == b.instance
}

/// The canonical image's hits that every profile computes first (the ray sets' sources and
/// the `vs fp32` column) come from the wave model; they must be the scalar traversal's
/// hits, every field bit for bit, on the profile's own ray sets over the shared meshes.
#[test]
fn canonical_hits_are_the_scalar_traversals_hits() {
    for name in ["bunny.obj.gz", "sponza.obj.gz"] {
        let mesh = shared(name);
        let image = profile::reference_image(&mesh).unwrap();
        let camera = PinholeCamera::framing(&profile::mesh_bounds(&mesh));
        let primary = camera.primary_rays(96, 96);
        let mut sets = vec![primary.clone()];
        for kind in [RayKind::Diffuse, RayKind::Ao, RayKind::Shadow] {
            sets.push(
                profile::make_rays(kind, &mesh, &image, primary.clone(), 7)
                    .0
                    .rays,
            );
        }
        sets.push(random_rays(4000, 13));
        let mut found = 0;
        for rays in &sets {
            let fast = profile::canonical_hits(&image, &mesh, rays);
            let scalar = profile::reference_hits(&image, &mesh, rays);
            found += scalar.iter().filter(|h| h.is_hit()).count();
            for (i, (f, s)) in fast.iter().zip(&scalar).enumerate() {
                assert!(
                    bit_identical(f, s),
                    "{name} ray {i}: wave {f:?}, scalar {s:?}"
                );
            }
        }
        assert!(found > 5000, "{name}: {found} hits");
    }
}

/// The guard's reference on every build a profile makes, and the fast traversal it comes
/// from, are the scalar traversal's hits, bit for bit, on the shared bunny's camera and
/// diffuse rays.
#[test]
fn guard_hits_are_the_scalar_traversals_hits_on_every_build() {
    let mesh = shared("bunny.obj.gz");
    let image = profile::reference_image(&mesh).unwrap();
    let camera = PinholeCamera::framing(&profile::mesh_bounds(&mesh));
    let primary = camera.primary_rays(64, 64);
    let diffuse = profile::make_rays(RayKind::Diffuse, &mesh, &image, primary.clone(), 3)
        .0
        .rays;
    let mut builds: Vec<BuildOptions> = Vec::new();
    for v in profile::all_variants() {
        let key = BuildOptions {
            box_sort: true,
            ..v.build
        };
        if !builds.contains(&key) {
            builds.push(key);
        }
    }
    assert!(builds.len() >= 8, "{} builds", builds.len());
    for options in &builds {
        let image = bvh::build(&mesh, options).unwrap().image;
        for rays in [&primary, &diffuse] {
            let scalar = profile::reference_hits(&image, &mesh, rays);
            // The fast traversal alone (so the scalar fallback is never what passes), then
            // the guard's answer.
            let fast = profile::canonical_hits(&image, &mesh, rays);
            let guard = profile::guard_hits(&image, &mesh, rays);
            for (i, (g, s)) in fast
                .iter()
                .chain(&guard)
                .zip(scalar.iter().cycle())
                .enumerate()
            {
                assert!(
                    bit_identical(g, s),
                    "{options:?} ray {i}: guard {g:?}, scalar {s:?}"
                );
            }
        }
    }
}
