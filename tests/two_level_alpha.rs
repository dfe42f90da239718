//! The render's alpha test as the two-level any-hit shader, end to end from a scene file: a
//! quad whose `map_d` is an 8 x 8 checkerboard of alpha 0 and 255, in front of an opaque
//! backstop. Each ray's texture coordinates are known from where it crosses the quad, so
//! whether it passes through follows from the checkerboard.

use glam::Vec3;
use std::path::Path;
use std::sync::Arc;
use wavetrace::bvh::two_level::{build_two_level, TwoLevelOptions};
use wavetrace::counters::Counters;
use wavetrace::math::{Hit, Ray};
use wavetrace::render::{two_level_input, AlphaTest};
use wavetrace::scene::Scene;
use wavetrace::traverse::dxr::RayFlags;
use wavetrace::traverse::{Schedule, Strategy, WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;

/// Squares per side of the checkerboard, and texels per square.
const SQUARES: u32 = 8;
const TEXELS: u32 = 8;

/// Whether square `(column, row)` (row 0 at the top of the image) is opaque.
fn opaque_square(column: u32, row: u32) -> bool {
    (column + row).is_multiple_of(2)
}

/// The unit quad in z = 0 with texture coordinates equal to (x, y); tobj splits it into
/// (1 2 3) and (1 3 4).
const QUAD_OBJ: &str = "mtllib checker.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n\
                        vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nusemtl checker\nf 1/1 2/2 3/3 4/4\n";
const CHECKER_MTL: &str = "newmtl checker\nKd 0.5 0.5 0.5\nmap_d checker.png\n";
/// The backstop: the same quad with no material library.
const BACK_OBJ: &str = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n";

/// The scene: the checker quad scaled to [-2, 2]^2 at z = 0 (instance 0) and the backstop
/// scaled to [-5, 5]^2 at z = -1 (instance 1). `opaque` is the checker BLAS's flag,
/// `flags` the checker instance's.
fn scene_text(opaque: bool, flags: &str) -> String {
    format!(
        r#"
[camera]
eye = [0.0, 0.0, 5.0]
look_at = [0.0, 0.0, 0.0]
vfov_deg = 40.0

[film]
width = 8
height = 8

[[blas]]
name = "checker"
obj = "checker.obj"
opaque = {opaque}

[[blas]]
name = "back"
obj = "back.obj"

[[instance]]
blas = "checker"
transform = [[4.0, 0.0, 0.0, -2.0], [0.0, 4.0, 0.0, -2.0], [0.0, 0.0, 1.0, 0.0]]
flags = [{flags}]

[[instance]]
blas = "back"
transform = [[10.0, 0.0, 0.0, -5.0], [0.0, 10.0, 0.0, -5.0], [0.0, 0.0, 1.0, -1.0]]
"#
    )
}

/// Writes the OBJ files, the MTL and the checkerboard PNG (RGBA, alpha 255 on opaque
/// squares, 0 on the others) into `dir`.
fn write_assets(dir: &Path) {
    std::fs::write(dir.join("checker.obj"), QUAD_OBJ).unwrap();
    std::fs::write(dir.join("checker.mtl"), CHECKER_MTL).unwrap();
    std::fs::write(dir.join("back.obj"), BACK_OBJ).unwrap();
    let side = SQUARES * TEXELS;
    let mut rgba = Vec::new();
    for y in 0..side {
        for x in 0..side {
            let alpha = if opaque_square(x / TEXELS, y / TEXELS) {
                255
            } else {
                0
            };
            rgba.extend([200, 100, 50, alpha]);
        }
    }
    image::save_buffer(
        dir.join("checker.png"),
        &rgba,
        side,
        side,
        image::ExtendedColorType::Rgba8,
    )
    .unwrap();
}

fn load(dir: &Path, opaque: bool, flags: &str) -> Scene {
    let path = dir.join("scene.toml");
    std::fs::write(&path, scene_text(opaque, flags)).unwrap();
    Scene::load(&path).unwrap()
}

/// A ray along -z and the quad's texture coordinates where it crosses z = 0 (`None` beside
/// the quad).
struct Probe {
    ray: Ray,
    uv: Option<(f32, f32)>,
}

/// 4 x 4 rays inside each square, at least 0.15 of a square from its edges (and never on
/// the quad's diagonal: the u and v offsets differ), and a ring of rays beside the quad
/// that meet the backstop only.
fn probes() -> Vec<Probe> {
    let (du, dv) = ([0.15, 0.38, 0.62, 0.85], [0.2, 0.4, 0.6, 0.8]);
    let mut probes = Vec::new();
    for i in 0..SQUARES {
        for j in 0..SQUARES {
            for a in du {
                for b in dv {
                    let u = (i as f32 + a) / SQUARES as f32;
                    let v = (j as f32 + b) / SQUARES as f32;
                    let origin = Vec3::new(-2.0 + 4.0 * u, -2.0 + 4.0 * v, 5.0);
                    probes.push(Probe {
                        ray: Ray::new(origin, Vec3::NEG_Z, 0.0, f32::INFINITY),
                        uv: Some((u, v)),
                    });
                }
            }
        }
    }
    for k in 0..32 {
        let angle = k as f32 / 32.0 * std::f32::consts::TAU;
        let origin = Vec3::new(3.5 * angle.cos(), 3.5 * angle.sin(), 5.0);
        probes.push(Probe {
            ray: Ray::new(origin, Vec3::NEG_Z, 0.0, f32::INFINITY),
            uv: None,
        });
    }
    probes
}

/// Whether the texel under `uv` is opaque: column from u, row from the top (v points up).
fn opaque_at((u, v): (f32, f32)) -> bool {
    let column = (u * SQUARES as f32).floor() as u32;
    let row = ((1.0 - v) * SQUARES as f32).floor() as u32;
    opaque_square(column, row)
}

fn configs() -> [WaveTracerConfig; 3] {
    let base = WaveTracerConfig::default();
    [
        base,
        WaveTracerConfig {
            schedule: Schedule::ByLane,
            ..base
        },
        WaveTracerConfig {
            strategy: Strategy::RestartTrail(2),
            ..base
        },
    ]
}

/// Traces the probes through `scene` with the alpha test as any-hit shader and ray flags
/// `flags`.
fn trace(scene: &Scene, config: WaveTracerConfig, rays: &[Ray]) -> (Vec<Hit>, Counters) {
    let input = two_level_input(scene);
    let bvh = build_two_level(&input, &TwoLevelOptions::default()).expect("builds");
    let mut tracer = WaveTracer::two_level(bvh, &input, config);
    tracer.set_any_hit(Arc::new(AlphaTest::new(scene)));
    let mut hits = vec![Hit::MISS; rays.len()];
    let mut counters = Counters::default();
    tracer.closest_hits(rays, &mut hits, None, &mut counters);
    (hits, counters)
}

/// Asserts each probe's hit: the checker quad (t = 5) where `through_checker` says so, else
/// the backstop (t = 6). Returns how many probes cross the quad.
fn check(probes: &[Probe], hits: &[Hit], through_checker: impl Fn((f32, f32)) -> bool) -> u64 {
    let mut on_quad = 0;
    for (p, hit) in probes.iter().zip(hits) {
        let stop = p.uv.is_some_and(|uv| !through_checker(uv));
        let (t, instance) = if stop { (5.0, 0) } else { (6.0, 1) };
        assert!(
            hit.is_hit() && (hit.t - t).abs() <= 1e-5 * t && hit.instance == instance,
            "{:?} (uv {:?}): {hit:?}, expected instance {instance} at t {t}",
            p.ray,
            p.uv
        );
        on_quad += u64::from(p.uv.is_some());
    }
    on_quad
}

#[test]
fn alpha_tested_checkerboard_lets_rays_through_transparent_squares() {
    let dir = tempfile::tempdir().unwrap();
    write_assets(dir.path());
    let probes = probes();
    let rays: Vec<Ray> = probes.iter().map(|p| p.ray).collect();
    let on_quad = probes.iter().filter(|p| p.uv.is_some()).count() as u64;
    assert_eq!(on_quad, (SQUARES * SQUARES * 16) as u64);

    // Non-opaque: the alpha test runs once on every ray that crosses the quad (met first or
    // after the backstop, the quad is nearer, so always in range), and transparent squares
    // let the ray through to the backstop.
    let scene = load(dir.path(), false, "");
    for config in configs() {
        let (hits, counters) = trace(&scene, config, &rays);
        let crossing = check(&probes, &hits, |uv| !opaque_at(uv));
        assert_eq!(counters.shader.any_hit_invocations, crossing, "{config:?}");
        let stopped = probes
            .iter()
            .filter(|p| p.uv.is_some_and(opaque_at))
            .count();
        assert_eq!(stopped, on_quad as usize / 2, "half the squares are opaque");
    }

    // Forced opaque by the ray flag: every ray crossing the quad stops there, no any-hit.
    for config in configs() {
        let config = WaveTracerConfig {
            ray_flags: RayFlags::FORCE_OPAQUE,
            ..config
        };
        let (hits, counters) = trace(&scene, config, &rays);
        check(&probes, &hits, |_| false);
        assert_eq!(counters.shader.any_hit_invocations, 0, "{config:?}");
    }

    // Forced opaque by the instance flag: the same.
    let forced = load(dir.path(), false, "\"force_opaque\"");
    for config in configs() {
        let (hits, counters) = trace(&forced, config, &rays);
        check(&probes, &hits, |_| false);
        assert_eq!(counters.shader.any_hit_invocations, 0, "{config:?}");
    }
}

#[test]
fn an_opaque_blas_is_never_alpha_tested() {
    let dir = tempfile::tempdir().unwrap();
    write_assets(dir.path());
    let probes = probes();
    let rays: Vec<Ray> = probes.iter().map(|p| p.ray).collect();
    let scene = load(dir.path(), true, "");
    for config in configs() {
        let (hits, counters) = trace(&scene, config, &rays);
        check(&probes, &hits, |_| false);
        assert_eq!(counters.shader.any_hit_invocations, 0, "{config:?}");
    }
    // Forced non-opaque by the instance flag: the alpha test runs again.
    let forced = load(dir.path(), true, "\"force_non_opaque\"");
    for config in configs() {
        let (hits, counters) = trace(&forced, config, &rays);
        let crossing = check(&probes, &hits, |uv| !opaque_at(uv));
        assert_eq!(counters.shader.any_hit_invocations, crossing, "{config:?}");
    }
}
