//! Ray sets made the way the shared data set made its own (shared by the trace bench and
//! the scene tests): the full camera sets, regenerated from `NAME.json`, and diffuse bounce
//! rays off their hits.

use std::path::{Path, PathBuf};
use wavetrace::math::Ray;
use wavetrace::traverse::rayfile::read_rays;

/// The shared data set's scene folder (`../shared/data/scenes`).
pub fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scenes")
}

/// The scene's JSON description (`NAME.json`).
pub fn scene_json(scene: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(scenes().join(format!("{scene}.json"))).unwrap()).unwrap()
}

/// f64 vector helpers for the ray generators.
fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|i| a[i] - b[i])
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn normalize(a: [f64; 3]) -> [f64; 3] {
    let l = dot(a, a).sqrt();
    a.map(|x| x / l)
}

/// Index in the full `width`-wide camera set of ray `k` of the shipped `primary` subset
/// (every 4th pixel in x and y).
pub fn kept_pixel(k: usize, width: usize) -> usize {
    let kept = width / 4;
    4 * (k / kept) * width + 4 * (k % kept)
}

/// The scene's bounding-box diagonal, from `NAME.json`'s `diffuse_eps` (1e-4 of it).
pub fn diagonal(scene: &str) -> f64 {
    scene_json(scene)["diffuse_eps"].as_f64().unwrap() / 1e-4
}

/// Panics unless the share of `hits` that hit something is the `primary_hit_fraction`
/// `NAME.json` records for `scene` (the reference tracers' count on the full camera set),
/// within the 0.01 % of rays the agreement rule lets differ. Returns the hit count and the
/// recorded one.
pub fn assert_primary_hit_fraction(scene: &str, hits: &[wavetrace::math::Hit]) -> (usize, f64) {
    let hit = hits.iter().filter(|h| h.is_hit()).count();
    let fraction = scene_json(scene)["primary_hit_fraction"].as_f64().unwrap();
    let expected = fraction * hits.len() as f64;
    assert!(
        (hit as f64 - expected).abs() <= 1e-4 * hits.len() as f64,
        "{scene}: {hit} hits, the reference tracers found {expected}"
    );
    (hit, expected)
}

/// The data set's full camera ray set for `scene` (its README: a pinhole camera at `eye`
/// looking at `target`, up +Y, vertical field of view `fov_deg`, aspect 1, rays through the
/// pixel centres of a `width` x `height` image, row 0 at the top, row-major; tmin 0, tmax 1e30),
/// computed in f64 and rounded to f32, and the image width. Where the scene ships a `primary`
/// subset (every 4th pixel in x and y; the dragon has none), panics unless it equals that
/// subset bit for bit. (The profiler's `PinholeCamera::primary_rays` is not used: it computes
/// in f32 with tmax = inf, so its rays are not the data set's bit for bit.)
pub fn full_primary_rays(scene: &str) -> (Vec<Ray>, usize) {
    let json = scene_json(scene);
    let vec3 = |v: &serde_json::Value| -> [f64; 3] {
        std::array::from_fn(|i| v[i].as_f64().expect("a number"))
    };
    let camera = &json["camera"];
    let (eye, target, up) = (
        vec3(&camera["eye"]),
        vec3(&camera["target"]),
        vec3(&camera["up"]),
    );
    let fov = camera["fov_deg"].as_f64().unwrap();
    let (width, height) = (
        json["width"].as_u64().unwrap() as usize,
        json["height"].as_u64().unwrap() as usize,
    );
    let forward = normalize(sub(target, eye));
    let right = normalize(cross(forward, up));
    let upward = cross(right, forward);
    let half = (fov.to_radians() / 2.0).tan();
    let origin = eye.map(|x| x as f32).into();
    let mut rays = Vec::with_capacity(width * height);
    for row in 0..height {
        let y = (1.0 - 2.0 * (row as f64 + 0.5) / height as f64) * half;
        for col in 0..width {
            let x = (2.0 * (col as f64 + 0.5) / width as f64 - 1.0) * half;
            let dir = normalize(std::array::from_fn(|i| {
                forward[i] + x * right[i] + y * upward[i]
            }));
            rays.push(Ray::new(origin, dir.map(|d| d as f32).into(), 0.0, 1e30));
        }
    }
    let shipped_path = scenes().join(format!("{scene}_primary.rays"));
    if !shipped_path.exists() {
        return (rays, width);
    }
    let shipped = read_rays(&shipped_path).unwrap();
    assert_eq!(shipped.len(), (width / 4) * (height / 4));
    for (k, s) in shipped.iter().enumerate() {
        let r = &rays[kept_pixel(k, width)];
        let bits = |r: &Ray| [r.origin, r.dir].map(|v| v.to_array().map(f32::to_bits));
        assert_eq!(
            bits(r),
            bits(s),
            "{scene}: ray {k} of the shipped primary set"
        );
    }
    (rays, width)
}

/// `count` diffuse bounce rays made the way the data set's README describes its `diffuse`
/// sets: from primary hits drawn at random (seeded), a cosine-distributed direction about
/// the hit triangle's geometric normal (turned to face the incoming ray), the origin offset
/// along that normal by 1e-4 of the bounding-box diagonal `diagonal` (so `NAME.json`'s
/// `diffuse_eps` is `1e-4 * diagonal`); tmin 0, tmax 1e30.
/// Computed in f64 from the triangle's vertices and the ray, so the set depends on which
/// rays hit what, not on the tracer's rounding of t. Panics if no primary ray hits.
pub fn diffuse_rays(
    mesh: &wavetrace::bvh::Mesh,
    primary: &[Ray],
    hits: &[wavetrace::math::Hit],
    diagonal: f64,
    count: usize,
    seed: u64,
) -> Vec<Ray> {
    let hit: Vec<usize> = (0..hits.len()).filter(|&i| hits[i].is_hit()).collect();
    assert!(!hit.is_empty(), "no primary ray hits");
    // splitmix64
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let unit = |x: u64| (x >> 11) as f64 / (1u64 << 53) as f64;
    let f64x3 = |v: [f32; 3]| v.map(f64::from);
    let mut rays = Vec::with_capacity(count);
    while rays.len() < count {
        let i = hit[(next() % hit.len() as u64) as usize];
        let (ray, h) = (&primary[i], &hits[i]);
        let [a, b, c] = mesh.triangle(h.prim_id).map(f64x3);
        let n = cross(sub(b, a), sub(c, a));
        if dot(n, n) == 0.0 {
            continue;
        }
        let (o, d) = (f64x3(ray.origin.to_array()), f64x3(ray.dir.to_array()));
        let mut n = normalize(n);
        if dot(n, d) > 0.0 {
            n = n.map(|x| -x);
        }
        // The hit point: where the ray meets the triangle's plane.
        let t = dot(sub(a, o), n) / dot(d, n);
        let p: [f64; 3] = std::array::from_fn(|k| o[k] + t * d[k] + 1e-4 * diagonal * n[k]);
        let helper = if n[0].abs() > 0.9 {
            [0.0, 1.0, 0.0]
        } else {
            [1.0, 0.0, 0.0]
        };
        let u = normalize(cross(n, helper));
        let v = cross(n, u);
        let (r1, r2) = (unit(next()), unit(next()));
        let (radius, phi) = (r1.sqrt(), 2.0 * std::f64::consts::PI * r2);
        let (x, y, z) = (
            radius * phi.cos(),
            radius * phi.sin(),
            (1.0 - r1).max(0.0).sqrt(),
        );
        let dir = normalize(std::array::from_fn(|k| x * u[k] + y * v[k] + z * n[k]));
        rays.push(Ray::new(
            p.map(|x| x as f32).into(),
            dir.map(|x| x as f32).into(),
            0.0,
            1e30,
        ));
    }
    rays
}
