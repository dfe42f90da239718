//! Shared test helpers: a brute-force reference tracer (f64 Moller-Trumbore over every
//! triangle, independent of the BVH and wave model) and small procedural meshes.
// Each test crate compiles this module and uses a part of it, so the lint sees the other
// helpers as dead in every crate that does not call them; they are all called.
#![allow(dead_code)]

use glam::{DVec3, Vec3};
use wavetrace::counters::Counters;
use wavetrace::math::{Hit, Ray};
use wavetrace::scene::{Camera, FilmSize, Geometry, Scene};
use wavetrace::wave::Tracer;

/// Tests every triangle for every ray, in f64. "Clocks" per ray = triangles tested + 1.
pub struct BruteForceTracer {
    tris: Vec<[DVec3; 3]>,
}

impl BruteForceTracer {
    pub fn new(geometry: &Geometry) -> Self {
        let tris = (0..geometry.triangle_count() as u32)
            .map(|i| geometry.corners(i).map(|v| v.as_dvec3()))
            .collect();
        BruteForceTracer { tris }
    }

    fn intersect(&self, ray: &Ray, any: bool) -> Hit {
        let o = ray.origin.as_dvec3();
        let d = ray.dir.as_dvec3();
        let (tmin, mut tmax) = (ray.tmin as f64, ray.tmax as f64);
        let mut best = Hit::MISS;
        for (i, [v0, v1, v2]) in self.tris.iter().enumerate() {
            let e1 = *v1 - *v0;
            let e2 = *v2 - *v0;
            let p = d.cross(e2);
            let det = e1.dot(p);
            if det == 0.0 || !det.is_finite() {
                continue;
            }
            let inv = 1.0 / det;
            let s = o - *v0;
            let u = s.dot(p) * inv;
            if !(0.0..=1.0).contains(&u) {
                continue;
            }
            let q = s.cross(e1);
            let v = d.dot(q) * inv;
            if v < 0.0 || u + v > 1.0 {
                continue;
            }
            let t = e2.dot(q) * inv;
            if t >= tmin && t <= tmax {
                tmax = t;
                best = Hit {
                    t: t as f32,
                    prim_id: i as u32,
                    bary: [u as f32, v as f32],
                    front_face: det > 0.0,
                    instance: Hit::NO_INSTANCE,
                };
                if any {
                    break;
                }
            }
        }
        best
    }
}

impl Tracer for BruteForceTracer {
    fn closest_hits(
        &self,
        rays: &[Ray],
        hits: &mut [Hit],
        ray_clocks: Option<&mut [u32]>,
        counters: &mut Counters,
    ) {
        for (r, h) in rays.iter().zip(hits.iter_mut()) {
            *h = self.intersect(r, false);
        }
        if let Some(c) = ray_clocks {
            c.fill(self.tris.len() as u32 + 1);
        }
        counters.rays += rays.len() as u64;
    }

    fn any_hits(&self, rays: &[Ray], occluded: &mut [bool], counters: &mut Counters) {
        for (r, o) in rays.iter().zip(occluded.iter_mut()) {
            *o = self.intersect(r, true).is_hit();
        }
        counters.rays += rays.len() as u64;
    }
}

/// A UV sphere of `radius` at `center`, counter-clockwise seen from outside (or from
/// inside when `inward`). `rings` latitude bands, `segments` longitude slices.
pub fn uv_sphere(
    center: Vec3,
    radius: f32,
    rings: u32,
    segments: u32,
    inward: bool,
) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let mut pos = Vec::new();
    for r in 0..=rings {
        let theta = std::f32::consts::PI * r as f32 / rings as f32;
        for s in 0..segments {
            let phi = 2.0 * std::f32::consts::PI * s as f32 / segments as f32;
            let d = Vec3::new(
                theta.sin() * phi.cos(),
                theta.cos(),
                theta.sin() * phi.sin(),
            );
            pos.push((center + d * radius).to_array());
        }
    }
    let idx = |r: u32, s: u32| r * segments + s % segments;
    let mut tris = Vec::new();
    for r in 0..rings {
        for s in 0..segments {
            let (a, b, c, d) = (idx(r, s), idx(r, s + 1), idx(r + 1, s), idx(r + 1, s + 1));
            // Seen from outside, (a, b, d) with theta down and phi around +Y is clockwise;
            // pick the order by testing the normal against the outward direction.
            for tri in [[a, c, d], [a, d, b]] {
                let [p0, p1, p2] = tri.map(|i| Vec3::from(pos[i as usize]));
                let n = (p1 - p0).cross(p2 - p0);
                if n.length_squared() < 1e-12 {
                    continue; // collapsed at a pole
                }
                let outward = ((p0 + p1 + p2) / 3.0 - center).dot(n) > 0.0;
                tris.push(if outward != inward {
                    tri
                } else {
                    [tri[0], tri[2], tri[1]]
                });
            }
        }
    }
    (pos, tris)
}

/// A scene with a `width` x `height` film and a camera at `eye` looking at `look_at`.
pub fn empty_scene(eye: Vec3, look_at: Vec3, vfov_deg: f32, width: u32, height: u32) -> Scene {
    let camera = Camera::new(eye, look_at, Vec3::Y, vfov_deg, width, height).unwrap();
    Scene::new(camera, FilmSize { width, height })
}

/// Path of a file in the repository.
pub fn repo_path(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Root-mean-square difference of two images (all channels).
pub fn rmse(a: &wavetrace::render::Image, b: &wavetrace::render::Image) -> f64 {
    let mut s = 0.0f64;
    for (p, q) in a.pixels.iter().zip(&b.pixels) {
        let d = (*p - *q).as_dvec3();
        s += d.length_squared();
    }
    (s / (3 * a.pixels.len()) as f64).sqrt()
}
