//! The data sets' full camera ray sets, regenerated from `NAME.json` (shared by the trace
//! bench and the scene tests).

use std::path::{Path, PathBuf};
use wavetrace::math::Ray;
use wavetrace::traverse::rayfile::read_rays;

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scenes")
}

/// The scene's JSON description (`NAME.json`).
pub fn scene_json(scene: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(scenes().join(format!("{scene}.json"))).unwrap()).unwrap()
}

/// The data set's full camera ray set for `scene` (its README: a pinhole camera at `eye`
/// looking at `target`, up +Y, vertical field of view `fov_deg`, aspect 1, rays through the
/// pixel centres of a `width` x `height` image, row 0 at the top, row-major; tmin 0, tmax 1e30),
/// computed in f64 and rounded to f32, and the image width. Where the scene ships a `primary`
/// subset (every 4th pixel in x and y; the dragon has none), panics unless it equals that
/// subset bit for bit. (The profiler's
/// `PinholeCamera::primary_rays` is not used: it computes in f32 with tmax = inf, so its rays
/// are not the data set's bit for bit.)
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
    let sub = |a: [f64; 3], b: [f64; 3]| std::array::from_fn::<f64, 3, _>(|i| a[i] - b[i]);
    let normalize = |a: [f64; 3]| {
        let l = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
        a.map(|x| x / l)
    };
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
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
    let kept = width / 4;
    for (k, s) in shipped.iter().enumerate() {
        let r = &rays[4 * (k / kept) * width + 4 * (k % kept)];
        let bits = |r: &Ray| [r.origin, r.dir].map(|v| v.to_array().map(f32::to_bits));
        assert_eq!(
            bits(r),
            bits(s),
            "{scene}: ray {k} of the shipped primary set"
        );
    }
    (rays, width)
}
