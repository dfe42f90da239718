//! Shared helpers for the two-level tests: instanced scenes with rotated, non-uniformly
//! scaled and mirrored instances, and camera and diffuse rays for them.
// Each test crate compiles this module and uses a part of it, so the lint sees the other
// helpers as dead in every crate that does not call them; they are all called.
#![allow(dead_code)]

use glam::{Mat3, Quat, Vec3};
use wavetrace::bvh::two_level::{BlasGeometry, BlasInput, InstanceInput, Sphere, TwoLevelInput};
use wavetrace::bvh::Mesh;
use wavetrace::hw::InstanceFlags;
use wavetrace::math::Ray;

/// SplitMix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.f32()
    }
    pub fn vec3(&mut self, lo: f32, hi: f32) -> Vec3 {
        Vec3::new(self.range(lo, hi), self.range(lo, hi), self.range(lo, hi))
    }
    pub fn unit(&mut self) -> Vec3 {
        loop {
            let v = self.vec3(-1.0, 1.0);
            let l = v.length();
            if l > 0.1 && l <= 1.0 {
                return v / l;
            }
        }
    }
}

/// A row-major 3x4 matrix: scale `s` first, then rotation `q`, then translation `t`.
pub fn affine(q: Quat, s: Vec3, t: Vec3) -> [[f32; 4]; 3] {
    let m = Mat3::from_quat(q) * Mat3::from_diagonal(s);
    let r = |i: usize| [m.col(0)[i], m.col(1)[i], m.col(2)[i], t[i]];
    [r(0), r(1), r(2)]
}

/// A closed UV sphere of radius 1 (counter-clockwise seen from outside).
pub fn ball(segments: u32, rings: u32) -> Mesh {
    let mut positions = Vec::new();
    for r in 0..=rings {
        let theta = std::f32::consts::PI * r as f32 / rings as f32;
        for s in 0..segments {
            let phi = std::f32::consts::TAU * s as f32 / segments as f32;
            positions.push([
                theta.sin() * phi.cos(),
                theta.cos(),
                theta.sin() * phi.sin(),
            ]);
        }
    }
    let mut indices = Vec::new();
    for r in 0..rings {
        for s in 0..segments {
            let a = r * segments + s;
            let b = r * segments + (s + 1) % segments;
            let (c, d) = (a + segments, b + segments);
            indices.push([a, b, d]);
            indices.push([a, d, c]);
        }
    }
    Mesh { positions, indices }
}

/// A bumpy grid of `n` x `n` quads in the x-z plane, heights from `rng`.
pub fn terrain(rng: &mut Rng, n: u32) -> Mesh {
    let mut positions = Vec::new();
    for i in 0..=n {
        for j in 0..=n {
            positions.push([i as f32, rng.range(-0.3, 0.3), j as f32]);
        }
    }
    let mut indices = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let a = i * (n + 1) + j;
            let (b, c, d) = (a + 1, a + n + 1, a + n + 2);
            indices.push([a, b, d]);
            indices.push([a, d, c]);
        }
    }
    Mesh { positions, indices }
}

/// `n` instances of two triangle BLASes (a ball, a terrain patch), rotated about random
/// axes, non-uniformly scaled, translated into a 60-unit cube; instance 3 mirrored; with
/// `spheres`, a third BLAS of procedural spheres used by every third instance.
pub fn instanced_scene(rng: &mut Rng, n: usize, spheres: bool) -> TwoLevelInput {
    let mut blases = vec![
        BlasInput {
            geometry: BlasGeometry::Triangles(ball(24, 12)),
            opaque: true,
        },
        BlasInput {
            geometry: BlasGeometry::Triangles(terrain(rng, 10)),
            opaque: true,
        },
    ];
    if spheres {
        blases.push(BlasInput {
            geometry: BlasGeometry::Spheres(
                (0..12)
                    .map(|_| Sphere {
                        center: rng.vec3(-2.0, 2.0).to_array(),
                        radius: rng.range(0.2, 0.8),
                    })
                    .collect(),
            ),
            opaque: true,
        });
    }
    let kinds = blases.len();
    let instances = (0..n)
        .map(|i| {
            let q = Quat::from_axis_angle(rng.unit(), rng.range(0.0, std::f32::consts::TAU));
            let mut s = Vec3::new(
                rng.range(0.5, 3.0),
                rng.range(0.5, 3.0),
                rng.range(0.5, 3.0),
            );
            if i == 3 {
                s.y = -s.y;
            }
            InstanceInput {
                blas: (i % kinds) as u32,
                object_to_world: affine(q, s, rng.vec3(-30.0, 30.0)),
                mask: 0xFF,
                id: i as u32,
                flags: InstanceFlags::NONE,
            }
        })
        .collect();
    TwoLevelInput { blases, instances }
}

/// Camera rays: a `w` x `h` pinhole grid from `eye` toward the origin, 60 degrees across.
pub fn camera_rays(eye: Vec3, w: u32, h: u32) -> Vec<Ray> {
    let forward = (-eye).normalize();
    let right = forward.cross(Vec3::Y).normalize();
    let up = right.cross(forward);
    let half = (30.0f32).to_radians().tan();
    let mut rays = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let u = ((x as f32 + 0.5) / w as f32 * 2.0 - 1.0) * half;
            let v = ((y as f32 + 0.5) / h as f32 * 2.0 - 1.0) * half;
            let dir = forward + right * u + up * v;
            rays.push(Ray::new(eye, dir, 0.0, f32::INFINITY));
        }
    }
    rays
}

/// Diffuse rays: from each hit of `rays` (its distance and the hit triangle of `mesh`), a
/// random direction in the hemisphere on the side the ray came from, starting 1e-3 off the
/// surface along its normal (as a renderer offsets a bounce).
pub fn diffuse_rays(rng: &mut Rng, rays: &[Ray], hits: &[(f32, u32)], mesh: &Mesh) -> Vec<Ray> {
    rays.iter()
        .zip(hits)
        .filter(|(_, (t, _))| t.is_finite())
        .map(|(r, &(t, prim))| {
            let [a, b, c] = mesh.triangle(prim).map(Vec3::from);
            let mut n = (b - a).cross(c - a).normalize_or_zero();
            if n.dot(r.dir) > 0.0 {
                n = -n;
            }
            let mut d = rng.unit();
            if d.dot(n) < 0.0 {
                d = -d;
            }
            Ray::new(r.at(t) + n * 1e-3, d, 0.0, f32::INFINITY)
        })
        .collect()
}
