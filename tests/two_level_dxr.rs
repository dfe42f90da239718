//! The DXR rules of the two-level shader on hand-built scenes whose answers follow from
//! their construction: unit quads at known depths, rays along -z and +z, instances moved to
//! known places. Every ray flag, the instance inclusion mask against the ray's, the instance
//! flags (forced opacity, culling disabled, counter-clockwise front faces), facing through
//! mirrored instances (decided in object space: the expectation is an f64 computation on the
//! object-space ray), and any-hit shaders that ignore candidates.
//!
//! Facing, from `semantics.md` 7.3: the default front face is the one a ray meets with
//! `d . ((v1 - v0) x (v2 - v0)) < 0` in object space; an instance's
//! `TRIANGLE_FRONT_COUNTERCLOCKWISE` swaps front and back. The quads below have the normal
//! `+z` (counter-clockwise seen from `+z`), so a ray along `-z` meets their front.
//!
//! Every case runs under several strategies and both schedules, which must find the same
//! hits.

mod two_level_common;

use glam::{DMat3, DVec3, Quat, Vec3};
use std::sync::{Arc, Mutex};
use two_level_common::{affine, camera_rays, instanced_scene, Rng};
use wavetrace::bvh::two_level::{
    affine_f64, build_two_level, BlasGeometry, BlasInput, InstanceInput, Sphere, TwoLevelInput,
    TwoLevelOptions,
};
use wavetrace::bvh::Mesh;
use wavetrace::counters::Counters;
use wavetrace::hw::InstanceFlags;
use wavetrace::math::{Hit, Ray};
use wavetrace::traverse::dxr::{AnyHit, Candidate, RayFlags};
use wavetrace::traverse::{Schedule, Strategy, WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;

/// The unit quad's corners (z = 0) and its two triangles; both have the normal +z.
const QUAD: [[f32; 3]; 4] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [1.0, 1.0, 0.0],
    [0.0, 1.0, 0.0],
];
const QUAD_TRIANGLES: [[u32; 3]; 2] = [[0, 1, 2], [0, 2, 3]];

/// A point of the quad above its diagonal (in triangle 1) and one below it (in triangle 0).
const ABOVE: (f32, f32) = (0.3, 0.6);
const BELOW: (f32, f32) = (0.7, 0.2);

/// Unit quads at the depths `zs`: quad `k` is triangles `2k` and `2k + 1`.
fn quads(zs: &[f32]) -> Mesh {
    let mut positions = Vec::new();
    let mut indices = Vec::new();
    for (k, &z) in zs.iter().enumerate() {
        let base = 4 * k as u32;
        positions.extend(QUAD.map(|[x, y, _]| [x, y, z]));
        indices.extend(QUAD_TRIANGLES.map(|t| t.map(|i| base + i)));
    }
    Mesh { positions, indices }
}

fn triangle_blas(zs: &[f32], opaque: bool) -> BlasInput {
    BlasInput {
        geometry: BlasGeometry::Triangles(quads(zs)),
        opaque,
    }
}

/// One sphere of radius 0.5 centred on the unit quad's centre.
fn sphere_blas(opaque: bool) -> BlasInput {
    BlasInput {
        geometry: BlasGeometry::Spheres(vec![Sphere {
            center: [0.5, 0.5, 0.0],
            radius: 0.5,
        }]),
        opaque,
    }
}

fn translate(x: f32, y: f32, z: f32) -> [[f32; 4]; 3] {
    [[1.0, 0.0, 0.0, x], [0.0, 1.0, 0.0, y], [0.0, 0.0, 1.0, z]]
}

fn instance(blas: u32, object_to_world: [[f32; 4]; 3], flags: InstanceFlags) -> InstanceInput {
    InstanceInput {
        blas,
        object_to_world,
        mask: 0xFF,
        id: 0,
        flags,
    }
}

/// A ray from z = 5 along -z through (x, y): it meets z = 0 at t = 5.
fn down(x: f32, y: f32) -> Ray {
    Ray::new(Vec3::new(x, y, 5.0), Vec3::NEG_Z, 0.0, f32::INFINITY)
}

/// A ray from z = -5 along +z through (x, y): it meets z = 0 at t = 5.
fn up(x: f32, y: f32) -> Ray {
    Ray::new(Vec3::new(x, y, -5.0), Vec3::Z, 0.0, f32::INFINITY)
}

/// 64 rays along -z through an 8 x 8 grid of the unit quad, none on its diagonal
/// (y - x = (j - i + 0.5) / 8).
fn grid_down() -> Vec<Ray> {
    let mut rays = Vec::new();
    for i in 0..8 {
        for j in 0..8 {
            rays.push(down((i as f32 + 0.25) / 8.0, (j as f32 + 0.75) / 8.0));
        }
    }
    rays
}

/// The triangle of the unit quad a point (x, y) off the diagonal lies in.
fn quad_prim(x: f32, y: f32) -> u32 {
    u32::from(y > x)
}

/// Whether a ray with object-space direction `d` meets object-space triangle `tri` on the
/// default front face: `d . ((v1 - v0) x (v2 - v0)) < 0`, in f64.
fn default_front(d: DVec3, tri: [[f32; 3]; 3]) -> bool {
    let [a, b, c] = tri.map(|v| DVec3::from(v.map(f64::from)));
    d.dot((b - a).cross(c - a)) < 0.0
}

fn quad_triangle(prim: u32) -> [[f32; 3]; 3] {
    QUAD_TRIANGLES[prim as usize].map(|i| QUAD[i as usize])
}

/// An any-hit shader that records every candidate and accepts those `decide` accepts.
struct Recorder {
    decide: fn(&Candidate) -> bool,
    seen: Mutex<Vec<Candidate>>,
}

impl AnyHit for Recorder {
    fn any_hit(&self, candidate: &Candidate) -> bool {
        self.seen.lock().unwrap().push(*candidate);
        (self.decide)(candidate)
    }
}

fn accept(_: &Candidate) -> bool {
    true
}

fn reject(_: &Candidate) -> bool {
    false
}

/// What one configuration found.
struct Outcome {
    config: String,
    hits: Vec<Hit>,
    occluded: Vec<bool>,
    counters: Counters,
    candidates: Vec<Candidate>,
}

/// The configurations every case runs under (one thread: the recorder's order is the
/// traversal's).
fn configs() -> Vec<WaveTracerConfig> {
    let base = WaveTracerConfig {
        parallel: false,
        ..WaveTracerConfig::default()
    };
    vec![
        base,
        WaveTracerConfig {
            schedule: Schedule::ByLane,
            ..base
        },
        WaveTracerConfig {
            strategy: Strategy::RestartTrail(1),
            ..base
        },
        WaveTracerConfig {
            strategy: Strategy::WalkBack(1),
            ..base
        },
    ]
}

#[derive(Clone, Copy, PartialEq)]
enum Query {
    /// `closest_hits` with the flags as `ray_flags`.
    Closest,
    /// `any_hits` with the flags as `shadow_ray_flags`.
    Shadow,
}

/// Traces `rays` through `input` under every configuration with ray flags `flags`, ray mask
/// `mask` and a [`Recorder`] deciding by `decide`. Every configuration must find the same
/// hits, and the shader counter of any-hit calls must equal the recorder's count.
fn run_query(
    input: &TwoLevelInput,
    query: Query,
    flags: RayFlags,
    mask: u8,
    decide: fn(&Candidate) -> bool,
    rays: &[Ray],
) -> Vec<Outcome> {
    let mut outcomes: Vec<Outcome> = Vec::new();
    for base in configs() {
        let config = WaveTracerConfig {
            ray_flags: if query == Query::Closest {
                flags
            } else {
                RayFlags::NONE
            },
            shadow_ray_flags: if query == Query::Shadow {
                flags
            } else {
                RayFlags::NONE
            },
            instance_mask: mask,
            ..base
        };
        let bvh = build_two_level(input, &TwoLevelOptions::default()).expect("builds");
        let mut tracer = WaveTracer::two_level(bvh, input, config);
        let recorder = Arc::new(Recorder {
            decide,
            seen: Mutex::new(Vec::new()),
        });
        tracer.set_any_hit(recorder.clone());
        let mut counters = Counters::default();
        let mut hits = vec![Hit::MISS; rays.len()];
        let mut occluded = vec![false; rays.len()];
        match query {
            Query::Closest => tracer.closest_hits(rays, &mut hits, None, &mut counters),
            Query::Shadow => tracer.any_hits(rays, &mut occluded, &mut counters),
        }
        let candidates = recorder.seen.lock().unwrap().clone();
        let name = format!(
            "{} {} flags {} mask {mask:#04x}",
            config.strategy.name(),
            config.schedule.name(),
            flags.names()
        );
        assert_eq!(
            counters.shader.any_hit_invocations,
            candidates.len() as u64,
            "{name}: any-hit counter against the shader's calls"
        );
        if let Some(first) = outcomes.first() {
            assert!(
                first.hits == hits && first.occluded == occluded,
                "{name}: hits differ from {}",
                first.config
            );
        }
        outcomes.push(Outcome {
            config: name,
            hits,
            occluded,
            counters,
            candidates,
        });
    }
    outcomes
}

fn run(
    input: &TwoLevelInput,
    flags: RayFlags,
    decide: fn(&Candidate) -> bool,
    rays: &[Ray],
) -> Vec<Outcome> {
    run_query(input, Query::Closest, flags, 0xFF, decide, rays)
}

/// Asserts a hit of `instance`, `prim` at `t` (relative 1e-5).
fn assert_hit(hit: &Hit, t: f64, instance: u32, prim: u32, what: &str) {
    assert!(
        hit.is_hit() && ((hit.t as f64) - t).abs() <= 1e-5 * t,
        "{what}: {hit:?}, expected t {t}"
    );
    assert_eq!((hit.instance, hit.prim_id), (instance, prim), "{what}");
}

/// One quad, identity instance; rays from both sides through both triangles and one beside
/// the quad.
fn one_quad(opaque: bool) -> (TwoLevelInput, Vec<Ray>) {
    let input = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0], opaque)],
        instances: vec![instance(0, translate(0.0, 0.0, 0.0), InstanceFlags::NONE)],
    };
    let rays = vec![
        down(ABOVE.0, ABOVE.1),
        down(BELOW.0, BELOW.1),
        up(ABOVE.0, ABOVE.1),
        up(BELOW.0, BELOW.1),
    ];
    (input, rays)
}

#[test]
fn rays_meet_a_quad_from_both_sides_at_known_distances() {
    let (input, mut rays) = one_quad(true);
    rays.push(down(1.5, 0.5));
    for o in run(&input, RayFlags::NONE, accept, &rays) {
        for (k, (ray, hit)) in rays.iter().zip(&o.hits).enumerate().take(4) {
            let (x, y) = (ray.origin.x, ray.origin.y);
            let prim = quad_prim(x, y);
            assert_hit(hit, 5.0, 0, prim, &o.config);
            let d = DVec3::from(ray.dir.to_array().map(f64::from));
            // The hit's facing is the triangle's winding seen from the ray (k < 2: from +z).
            assert_eq!(hit.front_face, default_front(d, quad_triangle(prim)));
            assert_eq!(hit.front_face, k < 2, "{}", o.config);
        }
        assert!(!o.hits[4].is_hit(), "{}: beside the quad", o.config);
        assert!(o.candidates.is_empty(), "{}: opaque", o.config);
        assert_eq!(o.counters.shader.candidate_hits, 4, "{}", o.config);
    }
}

#[test]
fn force_opaque_commits_non_opaque_hits_without_the_any_hit_shader() {
    let (input, rays) = one_quad(false);
    for o in run(&input, RayFlags::NONE, accept, &rays) {
        assert!(o.hits.iter().all(Hit::is_hit), "{}", o.config);
        assert_eq!(o.candidates.len(), 4, "{}", o.config);
    }
    for o in run(&input, RayFlags::NONE, reject, &rays) {
        assert!(!o.hits.iter().any(Hit::is_hit), "{}", o.config);
        assert_eq!(o.candidates.len(), 4, "{}", o.config);
    }
    for o in run(&input, RayFlags::FORCE_OPAQUE, reject, &rays) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            let prim = quad_prim(ray.origin.x, ray.origin.y);
            assert_hit(hit, 5.0, 0, prim, &o.config);
        }
        assert!(o.candidates.is_empty(), "{}", o.config);
        assert_eq!(o.counters.shader.candidate_hits, 4, "{}", o.config);
    }
}

#[test]
fn force_non_opaque_runs_the_any_hit_shader_on_opaque_geometry() {
    let (input, rays) = one_quad(true);
    for o in run(&input, RayFlags::NONE, reject, &rays) {
        assert!(o.hits.iter().all(Hit::is_hit), "{}", o.config);
        assert!(o.candidates.is_empty(), "{}", o.config);
    }
    for o in run(&input, RayFlags::FORCE_NON_OPAQUE, reject, &rays) {
        assert!(!o.hits.iter().any(Hit::is_hit), "{}", o.config);
        assert_eq!(o.candidates.len(), 4, "{}", o.config);
    }
    for o in run(&input, RayFlags::FORCE_NON_OPAQUE, accept, &rays) {
        assert!(o.hits.iter().all(Hit::is_hit), "{}", o.config);
        assert_eq!(o.candidates.len(), 4, "{}", o.config);
    }
    // An opaque sphere forced non-opaque: an any-hit shader that ignores every candidate
    // sees the entry (t = 4.5, front) and then the exit (t = 5.5, back).
    let spheres = TwoLevelInput {
        blases: vec![sphere_blas(true)],
        instances: vec![instance(0, translate(0.0, 0.0, 0.0), InstanceFlags::NONE)],
    };
    let ray = [down(0.5, 0.5)];
    for o in run(&spheres, RayFlags::FORCE_NON_OPAQUE, reject, &ray) {
        assert!(!o.hits[0].is_hit(), "{}", o.config);
        let seen: Vec<(f32, bool)> = o.candidates.iter().map(|c| (c.t, c.front_face)).collect();
        assert_eq!(seen, [(4.5, true), (5.5, false)], "{}", o.config);
    }
    for o in run(&spheres, RayFlags::NONE, reject, &ray) {
        assert_hit(&o.hits[0], 4.5, 0, 0, &o.config);
        assert!(o.candidates.is_empty(), "{}", o.config);
    }
}

/// Two unit quads, one behind the other: instances 0 (z = 0) and 1 (z = -1) of one quad.
fn stacked(opaque: bool) -> TwoLevelInput {
    TwoLevelInput {
        blases: vec![triangle_blas(&[0.0], opaque)],
        instances: vec![
            instance(0, translate(0.0, 0.0, 0.0), InstanceFlags::NONE),
            instance(0, translate(0.0, 0.0, -1.0), InstanceFlags::NONE),
        ],
    }
}

#[test]
fn accept_first_hit_and_end_search_ends_at_the_first_hit() {
    let rays = grid_down();
    let n = rays.len() as u64;
    let input = stacked(true);
    for o in run(&input, RayFlags::NONE, accept, &rays) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            assert_hit(
                hit,
                5.0,
                0,
                quad_prim(ray.origin.x, ray.origin.y),
                &o.config,
            );
        }
        // The farther quad is a candidate only when it is met first.
        let c = o.counters.shader.candidate_hits;
        assert!((n..=2 * n).contains(&c), "{}: {c} candidates", o.config);
    }
    for o in run(
        &input,
        RayFlags::ACCEPT_FIRST_HIT_AND_END_SEARCH,
        accept,
        &rays,
    ) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            let prim = quad_prim(ray.origin.x, ray.origin.y);
            let instance = hit.instance;
            assert!(instance < 2, "{}: {hit:?}", o.config);
            assert_hit(hit, 5.0 + instance as f64, instance, prim, &o.config);
        }
        assert_eq!(o.counters.shader.candidate_hits, n, "{}", o.config);
    }
    for o in run_query(&input, Query::Shadow, RayFlags::NONE, 0xFF, accept, &rays) {
        assert!(o.occluded.iter().all(|&b| b), "{}", o.config);
        assert_eq!(o.counters.shader.candidate_hits, n, "{}", o.config);
    }
    // Both quads in one BLAS.
    let one_blas = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0, -1.0], true)],
        instances: vec![instance(0, translate(0.0, 0.0, 0.0), InstanceFlags::NONE)],
    };
    for o in run(
        &one_blas,
        RayFlags::ACCEPT_FIRST_HIT_AND_END_SEARCH,
        accept,
        &rays,
    ) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            let quad = hit.prim_id / 2;
            assert!(quad < 2, "{}: {hit:?}", o.config);
            let prim = 2 * quad + quad_prim(ray.origin.x, ray.origin.y);
            assert_hit(hit, 5.0 + quad as f64, 0, prim, &o.config);
        }
        assert_eq!(o.counters.shader.candidate_hits, n, "{}", o.config);
    }
    // Non-opaque: an ignored candidate does not end the search; the farther quad, accepted,
    // does, and is met exactly once per ray.
    let non_opaque = stacked(false);
    for o in run(
        &non_opaque,
        RayFlags::ACCEPT_FIRST_HIT_AND_END_SEARCH,
        |c| c.instance == 1,
        &rays,
    ) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            assert_hit(
                hit,
                6.0,
                1,
                quad_prim(ray.origin.x, ray.origin.y),
                &o.config,
            );
        }
        let farther = o.candidates.iter().filter(|c| c.instance == 1).count();
        assert_eq!(farther as u64, n, "{}", o.config);
        assert!(o.candidates.len() as u64 <= 2 * n, "{}", o.config);
    }
}

/// The skip-closest-hit flag changes no hit and no counter, on a scene of 40 rotated,
/// scaled and mirrored instances of triangles and spheres.
#[test]
fn skip_closest_hit_shader_changes_no_hit_and_no_counter() {
    let mut rng = Rng(0x5C1B);
    let input = instanced_scene(&mut rng, 40, true);
    let rays = camera_rays(Vec3::new(10.0, -5.0, -90.0), 64, 48);
    let plain = run(&input, RayFlags::NONE, accept, &rays);
    let skip = run(&input, RayFlags::SKIP_CLOSEST_HIT_SHADER, accept, &rays);
    let hits = plain[0].hits.iter().filter(|h| h.is_hit()).count();
    assert!(hits > rays.len() / 10, "only {hits} hits");
    for (p, s) in plain.iter().zip(&skip) {
        assert!(p.hits == s.hits, "{}: hits differ", s.config);
        assert_eq!(p.counters, s.counters, "{}: counters differ", s.config);
    }
}

/// Four instances of one quad, three units apart in x, with the facing flags: none, cull
/// disable, front counter-clockwise, both.
fn facing_scene(opaque: bool) -> (TwoLevelInput, Vec<Ray>) {
    let flags = [
        InstanceFlags::NONE,
        InstanceFlags::TRIANGLE_CULL_DISABLE,
        InstanceFlags::TRIANGLE_FRONT_COUNTERCLOCKWISE,
        InstanceFlags::TRIANGLE_CULL_DISABLE | InstanceFlags::TRIANGLE_FRONT_COUNTERCLOCKWISE,
    ];
    let instances = flags
        .iter()
        .enumerate()
        .map(|(k, &f)| instance(0, translate(3.0 * k as f32, 0.0, 0.0), f))
        .collect();
    let mut rays = Vec::new();
    for k in 0..4 {
        let x = 3.0 * k as f32;
        rays.push(down(x + ABOVE.0, ABOVE.1));
        rays.push(up(x + ABOVE.0, ABOVE.1));
        rays.push(down(x + BELOW.0, BELOW.1));
        rays.push(up(x + BELOW.0, BELOW.1));
    }
    let input = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0], opaque)],
        instances,
    };
    (input, rays)
}

/// The DXR facing of a ray of [`facing_scene`] (instance, triangle), from the winding and the
/// instance flags.
fn facing_of(input: &TwoLevelInput, ray: &Ray) -> (u32, u32, bool, bool) {
    let instance = (ray.origin.x / 3.0).floor() as u32;
    let x = ray.origin.x - 3.0 * instance as f32;
    let prim = quad_prim(x, ray.origin.y);
    let d = DVec3::from(ray.dir.to_array().map(f64::from));
    let geometric = default_front(d, quad_triangle(prim));
    let ccw = input.instances[instance as usize]
        .flags
        .contains(InstanceFlags::TRIANGLE_FRONT_COUNTERCLOCKWISE);
    (instance, prim, geometric, geometric != ccw)
}

#[test]
fn facing_culls_follow_the_winding_and_the_instance_flags() {
    let (input, rays) = facing_scene(true);
    for flags in [
        RayFlags::NONE,
        RayFlags::CULL_BACK_FACING_TRIANGLES,
        RayFlags::CULL_FRONT_FACING_TRIANGLES,
    ] {
        for o in run(&input, flags, accept, &rays) {
            let mut kept = 0;
            for (ray, hit) in rays.iter().zip(&o.hits) {
                let (instance, prim, geometric, front) = facing_of(&input, ray);
                let disabled = input.instances[instance as usize]
                    .flags
                    .contains(InstanceFlags::TRIANGLE_CULL_DISABLE);
                let culled = !disabled
                    && ((flags == RayFlags::CULL_BACK_FACING_TRIANGLES && !front)
                        || (flags == RayFlags::CULL_FRONT_FACING_TRIANGLES && front));
                let what = format!("{}: {ray:?}", o.config);
                if culled {
                    assert!(!hit.is_hit(), "{what}: culled, yet {hit:?}");
                } else {
                    kept += 1;
                    assert_hit(hit, 5.0, instance, prim, &what);
                    // A hit reports its winding as the ray saw it (the instance flag aside).
                    assert_eq!(hit.front_face, geometric, "{what}");
                }
            }
            // Per cull: instances 1 and 3 keep all four rays, 0 and 2 two each.
            let want = if flags == RayFlags::NONE { 16 } else { 12 };
            assert_eq!(kept, want, "{}", o.config);
        }
    }
}

/// The any-hit shader sees each candidate's DXR facing (the winding, swapped by the
/// instance's counter-clockwise flag), its distance and its barycentrics.
#[test]
fn any_hit_candidates_carry_facing_distance_and_barycentrics() {
    let (input, mut rays) = facing_scene(false);
    // Ray k starts k / 4 further back: its candidate is the one at t = 5 + k / 4.
    for (k, ray) in rays.iter_mut().enumerate() {
        ray.origin -= ray.dir * (k as f32 * 0.25);
    }
    for o in run(&input, RayFlags::NONE, accept, &rays) {
        assert_eq!(o.candidates.len(), rays.len(), "{}", o.config);
        for (k, (ray, hit)) in rays.iter().zip(&o.hits).enumerate() {
            let (instance, prim, _, front) = facing_of(&input, ray);
            let what = format!("{}: {ray:?}", o.config);
            let t = 5.0 + k as f32 * 0.25;
            assert_hit(hit, t as f64, instance, prim, &what);
            let c = o
                .candidates
                .iter()
                .find(|c| (c.t - t).abs() <= 1e-4)
                .unwrap_or_else(|| panic!("{what}: no candidate at t {t}"));
            assert_eq!((c.instance, c.prim), (instance, prim), "{what}");
            assert_eq!(c.front_face, front, "{what}: {c:?}");
            // Weights of the second and third corner: triangle 0 is (0,0) (1,0) (1,1), so
            // (x - y, y); triangle 1 is (0,0) (1,1) (0,1), so (x, y - x).
            let x = ray.origin.x - 3.0 * instance as f32;
            let y = ray.origin.y;
            let want = if prim == 0 { [x - y, y] } else { [x, y - x] };
            for a in 0..2 {
                assert!(
                    (c.barycentrics[a] - want[a]).abs() <= 1e-5,
                    "{what}: {c:?}, expected {want:?}"
                );
            }
        }
    }
}

/// DXR's opacity order (geometry, then instance force flags, then ray force flags), the
/// opacity culls, and the any-hit calls that follow, for a triangle and a sphere BLAS.
#[test]
fn opacity_follows_geometry_instance_and_ray_flags() {
    let instance_flags = [
        InstanceFlags::NONE,
        InstanceFlags::FORCE_OPAQUE,
        InstanceFlags::FORCE_NON_OPAQUE,
    ];
    let ray_flags = [
        RayFlags::NONE,
        RayFlags::FORCE_OPAQUE,
        RayFlags::FORCE_NON_OPAQUE,
        RayFlags::CULL_OPAQUE,
        RayFlags::CULL_NON_OPAQUE,
    ];
    // The ray meets the quad at t = 5 and the sphere at 5 -+ sqrt(0.25 - 0.05).
    let ray = [down(ABOVE.0, ABOVE.1)];
    let sphere_near = 5.0 - 0.2f64.sqrt();
    let mut cases = 0;
    for sphere in [false, true] {
        for geometry_opaque in [true, false] {
            for &iflags in &instance_flags {
                let blas = if sphere {
                    sphere_blas(geometry_opaque)
                } else {
                    triangle_blas(&[0.0], geometry_opaque)
                };
                let input = TwoLevelInput {
                    blases: vec![blas],
                    instances: vec![instance(0, translate(0.0, 0.0, 0.0), iflags)],
                };
                for &rflags in &ray_flags {
                    let opaque = if rflags == RayFlags::FORCE_OPAQUE {
                        true
                    } else if rflags == RayFlags::FORCE_NON_OPAQUE {
                        false
                    } else if iflags == InstanceFlags::FORCE_OPAQUE {
                        true
                    } else if iflags == InstanceFlags::FORCE_NON_OPAQUE {
                        false
                    } else {
                        geometry_opaque
                    };
                    let culled = (opaque && rflags == RayFlags::CULL_OPAQUE)
                        || (!opaque && rflags == RayFlags::CULL_NON_OPAQUE);
                    for accepts in [true, false] {
                        let decide = if accepts { accept } else { reject };
                        let hit = !culled && (opaque || accepts);
                        // An ignored sphere entry hands the exit to the shader as well.
                        let calls = match (culled || opaque, sphere, accepts) {
                            (true, _, _) => 0,
                            (false, true, false) => 2,
                            (false, _, _) => 1,
                        };
                        for o in run(&input, rflags, decide, &ray) {
                            let what = format!(
                                "{} ({}, geometry opaque {geometry_opaque}, instance {:?}, \
                                 any-hit accepts {accepts})",
                                o.config,
                                if sphere { "sphere" } else { "triangles" },
                                iflags
                            );
                            if hit {
                                let t = if sphere { sphere_near } else { 5.0 };
                                let prim = if sphere {
                                    0
                                } else {
                                    quad_prim(ABOVE.0, ABOVE.1)
                                };
                                assert_hit(&o.hits[0], t, 0, prim, &what);
                            } else {
                                assert!(!o.hits[0].is_hit(), "{what}: {:?}", o.hits[0]);
                            }
                            assert_eq!(o.candidates.len(), calls, "{what}");
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 2 * 2 * 3 * 5 * 2 * configs().len());
}

/// The case the rules single out: non-opaque geometry, an instance that forces it opaque,
/// a ray that culls non-opaque hits: the hit is kept and no any-hit shader runs.
#[test]
fn instance_force_opaque_survives_cull_non_opaque() {
    let input = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0], false)],
        instances: vec![instance(
            0,
            translate(0.0, 0.0, 0.0),
            InstanceFlags::FORCE_OPAQUE,
        )],
    };
    let rays = grid_down();
    for o in run(&input, RayFlags::CULL_NON_OPAQUE, reject, &rays) {
        assert!(o.hits.iter().all(Hit::is_hit), "{}", o.config);
        assert!(o.candidates.is_empty(), "{}", o.config);
    }
    // The same instance forced non-opaque instead is culled whole.
    let mut forced = input.clone();
    forced.instances[0].flags = InstanceFlags::FORCE_NON_OPAQUE;
    forced.blases[0].opaque = true;
    for o in run(&forced, RayFlags::CULL_NON_OPAQUE, accept, &rays) {
        assert!(!o.hits.iter().any(Hit::is_hit), "{}", o.config);
        assert!(o.candidates.is_empty(), "{}", o.config);
    }
}

#[test]
fn skip_triangles_and_skip_procedural_primitives_skip_whole_instances() {
    let input = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0], true), sphere_blas(true)],
        instances: vec![
            instance(0, translate(0.0, 0.0, 0.0), InstanceFlags::NONE),
            instance(1, translate(3.0, 0.0, 0.0), InstanceFlags::NONE),
        ],
    };
    let rays = [down(ABOVE.0, ABOVE.1), down(3.5, 0.5)];
    let cases = [
        (RayFlags::NONE, [true, true]),
        (RayFlags::SKIP_TRIANGLES, [false, true]),
        (RayFlags::SKIP_PROCEDURAL_PRIMITIVES, [true, false]),
    ];
    for (flags, want) in cases {
        for o in run(&input, flags, accept, &rays) {
            let what = &o.config;
            if want[0] {
                assert_hit(&o.hits[0], 5.0, 0, quad_prim(ABOVE.0, ABOVE.1), what);
            } else {
                assert!(!o.hits[0].is_hit(), "{what}: {:?}", o.hits[0]);
            }
            if want[1] {
                assert_hit(&o.hits[1], 4.5, 1, 0, what);
            } else {
                assert!(!o.hits[1].is_hit(), "{what}: {:?}", o.hits[1]);
            }
            // Each ray reaches its own instance only; a skipped one is never entered.
            let s = &o.counters.shader;
            let entered = want.iter().filter(|&&w| w).count() as u64;
            assert_eq!(s.instance_transitions, entered, "{what}");
            assert_eq!(s.intersection_invocations, u64::from(want[1]), "{what}");
        }
        for o in run_query(&input, Query::Shadow, flags, 0xFF, accept, &rays) {
            assert_eq!(o.occluded, want, "{}", o.config);
        }
    }
}

#[test]
fn instance_mask_against_ray_mask() {
    let masks: [u8; 6] = [0x00, 0x01, 0x02, 0x0C, 0x80, 0xFF];
    let input = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0], true)],
        instances: masks
            .iter()
            .enumerate()
            .map(|(k, &mask)| InstanceInput {
                mask,
                id: 100 + k as u32,
                ..instance(0, translate(3.0 * k as f32, 0.0, 0.0), InstanceFlags::NONE)
            })
            .collect(),
    };
    let rays: Vec<Ray> = (0..masks.len())
        .map(|k| down(3.0 * k as f32 + ABOVE.0, ABOVE.1))
        .collect();
    for ray_mask in [
        0x00u8, 0x01, 0x02, 0x04, 0x08, 0x03, 0x0C, 0x7F, 0x80, 0xF0, 0xFF,
    ] {
        for query in [Query::Closest, Query::Shadow] {
            for o in run_query(&input, query, RayFlags::NONE, ray_mask, accept, &rays) {
                for (k, &mask) in masks.iter().enumerate() {
                    let want = mask & ray_mask != 0;
                    let what = format!("{}: instance mask {mask:#04x}", o.config);
                    if query == Query::Shadow {
                        assert_eq!(o.occluded[k], want, "{what}");
                    } else if want {
                        assert_hit(&o.hits[k], 5.0, k as u32, 1, &what);
                    } else {
                        assert!(!o.hits[k].is_hit(), "{what}: {:?}", o.hits[k]);
                    }
                }
                let entered = masks.iter().filter(|&&m| m & ray_mask != 0).count() as u64;
                assert_eq!(
                    o.counters.shader.instance_transitions, entered,
                    "{}",
                    o.config
                );
            }
        }
    }
}

/// Facing through mirrored (negative determinant), rotated and scaled instances is decided in
/// object space: the expectation maps each world ray into object space with the f64 inverse
/// of the instance matrix and takes the sign of `d . n` there. For the mirrored instances the
/// world-space winding gives the opposite answer, which the test checks of its own
/// construction.
#[test]
fn facing_through_mirrored_instances_is_decided_in_object_space() {
    let transforms: Vec<(&str, [[f32; 4]; 3])> = vec![
        ("identity", affine(Quat::IDENTITY, Vec3::ONE, Vec3::ZERO)),
        (
            "mirrored in x",
            affine(
                Quat::IDENTITY,
                Vec3::new(-1.0, 1.0, 1.0),
                Vec3::new(10.0, 0.0, 0.0),
            ),
        ),
        (
            "mirrored in z",
            affine(
                Quat::IDENTITY,
                Vec3::new(1.0, 1.0, -1.0),
                Vec3::new(20.0, 0.0, 0.0),
            ),
        ),
        (
            "turned 30 degrees about y, mirrored in y, scaled",
            affine(
                Quat::from_rotation_y(30f32.to_radians()),
                Vec3::new(2.0, -1.0, 0.5),
                Vec3::new(30.0, 1.0, 0.5),
            ),
        ),
        (
            "turned 180 degrees about x",
            affine(
                Quat::from_rotation_x(std::f32::consts::PI),
                Vec3::ONE,
                Vec3::new(40.0, 0.0, 0.0),
            ),
        ),
        (
            "turned 50 degrees about (1, 1, 0), scaled, mirrored in z",
            affine(
                Quat::from_axis_angle(Vec3::new(1.0, 1.0, 0.0).normalize(), 50f32.to_radians()),
                Vec3::new(1.5, 0.8, -1.2),
                Vec3::new(50.0, -1.0, 2.0),
            ),
        ),
    ];
    let input = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0], true)],
        instances: transforms
            .iter()
            .map(|(_, m)| instance(0, *m, InstanceFlags::NONE))
            .collect(),
    };
    // World directions: about -z and about +z, a little oblique.
    let dirs = [DVec3::new(0.1, -0.05, -1.0), DVec3::new(-0.08, 0.1, 1.0)];
    struct Expect {
        instance: u32,
        prim: u32,
        front: bool,
    }
    let mut rays = Vec::new();
    let mut expect = Vec::new();
    let mut mirrored = 0;
    for (k, (name, m)) in transforms.iter().enumerate() {
        let (a, t): (DMat3, DVec3) = affine_f64(m);
        let inv = a.inverse();
        for (x, y) in [ABOVE, BELOW] {
            let prim = quad_prim(x, y);
            let target = a * DVec3::new(x as f64, y as f64, 0.0) + t;
            for d in dirs {
                let origin = target - 5.0 * d;
                rays.push(Ray::new(
                    Vec3::new(origin.x as f32, origin.y as f32, origin.z as f32),
                    Vec3::new(d.x as f32, d.y as f32, d.z as f32),
                    0.0,
                    f32::INFINITY,
                ));
                let front = default_front(inv * d, quad_triangle(prim));
                // The same winding judged in world space, from the world vertices.
                let world = quad_triangle(prim).map(|v| {
                    let w = a * DVec3::from(v.map(f64::from)) + t;
                    [w.x as f32, w.y as f32, w.z as f32]
                });
                let world_front = default_front(d, world);
                if a.determinant() < 0.0 {
                    assert_ne!(front, world_front, "{name}: the construction");
                    mirrored += 1;
                } else {
                    assert_eq!(front, world_front, "{name}: the construction");
                }
                expect.push(Expect {
                    instance: k as u32,
                    prim,
                    front,
                });
            }
        }
    }
    assert_eq!(mirrored, 4 * 4);
    for flags in [
        RayFlags::NONE,
        RayFlags::CULL_BACK_FACING_TRIANGLES,
        RayFlags::CULL_FRONT_FACING_TRIANGLES,
    ] {
        for o in run(&input, flags, accept, &rays) {
            for ((ray, hit), e) in rays.iter().zip(&o.hits).zip(&expect) {
                let what = format!(
                    "{}: {} {ray:?}",
                    o.config, transforms[e.instance as usize].0
                );
                let culled = (flags == RayFlags::CULL_BACK_FACING_TRIANGLES && !e.front)
                    || (flags == RayFlags::CULL_FRONT_FACING_TRIANGLES && e.front);
                if culled {
                    assert!(!hit.is_hit(), "{what}: culled, yet {hit:?}");
                } else {
                    // The object-space ray has the world ray's parameter: t = 5 in both.
                    assert!((hit.t - 5.0).abs() <= 1e-4, "{what}: {hit:?}");
                    assert_eq!((hit.instance, hit.prim_id), (e.instance, e.prim), "{what}");
                    assert_eq!(hit.front_face, e.front, "{what}");
                }
            }
        }
    }
}

#[test]
fn an_any_hit_shader_that_ignores_the_nearer_quad_leaves_the_farther() {
    let rays = grid_down();
    let n = rays.len();
    let input = stacked(false);
    // Ignoring instance 0: every ray ends on instance 1 at t = 6 after exactly two calls
    // (whichever quad it meets first, the nearer is always in range).
    for o in run(&input, RayFlags::NONE, |c| c.instance != 0, &rays) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            assert_hit(
                hit,
                6.0,
                1,
                quad_prim(ray.origin.x, ray.origin.y),
                &o.config,
            );
        }
        assert_eq!(o.candidates.len(), 2 * n, "{}", o.config);
        assert_eq!(
            o.candidates.iter().filter(|c| c.instance == 0).count(),
            n,
            "{}",
            o.config
        );
    }
    // Accepting all: the nearer; the farther is a candidate only when met first.
    for o in run(&input, RayFlags::NONE, accept, &rays) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            assert_hit(
                hit,
                5.0,
                0,
                quad_prim(ray.origin.x, ray.origin.y),
                &o.config,
            );
        }
        assert!((n..=2 * n).contains(&o.candidates.len()), "{}", o.config);
    }
    // Ignoring all: a miss after two calls.
    for o in run(&input, RayFlags::NONE, reject, &rays) {
        assert!(!o.hits.iter().any(Hit::is_hit), "{}", o.config);
        assert_eq!(o.candidates.len(), 2 * n, "{}", o.config);
    }
    // Both quads in one BLAS, the shader ignoring candidates nearer than 5.5.
    let one_blas = TwoLevelInput {
        blases: vec![triangle_blas(&[0.0, -1.0], false)],
        instances: vec![instance(0, translate(0.0, 0.0, 0.0), InstanceFlags::NONE)],
    };
    for o in run(&one_blas, RayFlags::NONE, |c| c.t > 5.5, &rays) {
        for (ray, hit) in rays.iter().zip(&o.hits) {
            let prim = 2 + quad_prim(ray.origin.x, ray.origin.y);
            assert_hit(hit, 6.0, 0, prim, &o.config);
        }
        assert_eq!(o.candidates.len(), 2 * n, "{}", o.config);
    }
}

/// A closest-hit query whose ray flags hold accept-first-hit together with other flags
/// applies those other flags too.
#[test]
fn accept_first_hit_keeps_the_other_ray_flags() {
    let (input, rays) = one_quad(true);
    // Rays 0 and 1 meet the front, 2 and 3 the back.
    let first = RayFlags::ACCEPT_FIRST_HIT_AND_END_SEARCH;
    for o in run(
        &input,
        first.union(RayFlags::CULL_BACK_FACING_TRIANGLES),
        accept,
        &rays,
    ) {
        let hit: Vec<bool> = o.hits.iter().map(Hit::is_hit).collect();
        assert_eq!(hit, [true, true, false, false], "{}", o.config);
    }
    for o in run(
        &input,
        first.union(RayFlags::FORCE_NON_OPAQUE),
        reject,
        &rays,
    ) {
        assert!(!o.hits.iter().any(Hit::is_hit), "{}", o.config);
        assert_eq!(o.candidates.len(), 4, "{}", o.config);
    }
    for o in run_query(
        &input,
        Query::Shadow,
        RayFlags::CULL_BACK_FACING_TRIANGLES,
        0xFF,
        accept,
        &rays,
    ) {
        assert_eq!(o.occluded, [true, true, false, false], "{}", o.config);
    }
}
