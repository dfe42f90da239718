//! Ray sets for profiling: camera rays, and secondary rays (diffuse bounce, shadow, ambient
//! occlusion) spawned from the camera rays' hits; and the ray orderings a traversal study
//! compares (as given, Morton order of origins, binned by direction).

use glam::Vec3;

use crate::bvh::Mesh;
use crate::math::{Aabb, Hit, Ray};

/// A pinhole camera: eye, target, up, vertical field of view; square pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PinholeCamera {
    pub eye: Vec3,
    pub look_at: Vec3,
    pub up: Vec3,
    pub vfov_deg: f32,
}

impl PinholeCamera {
    /// A camera that looks at the box from the front-right-above at 40 degrees and sees all of
    /// it (for meshes that come without a camera).
    pub fn framing(bounds: &Aabb) -> Self {
        let center = bounds.center();
        let radius = (bounds.extent().length() * 0.5).max(1e-6);
        let vfov_deg = 40.0f32;
        let distance = radius / (vfov_deg.to_radians() * 0.5).sin();
        let dir = Vec3::new(0.45, 0.35, 1.0).normalize();
        PinholeCamera {
            eye: center + dir * distance,
            look_at: center,
            up: Vec3::Y,
            vfov_deg,
        }
    }

    /// One ray through each pixel centre, row 0 at the top, row-major; unit directions,
    /// `tmin = 0`, `tmax = inf`.
    pub fn primary_rays(&self, width: u32, height: u32) -> Vec<Ray> {
        let forward = (self.look_at - self.eye).normalize();
        let right = forward.cross(self.up).normalize();
        let up = right.cross(forward);
        let half_h = (self.vfov_deg.to_radians() * 0.5).tan();
        let half_w = half_h * width as f32 / height as f32;
        let mut rays = Vec::with_capacity(width as usize * height as usize);
        for y in 0..height {
            let v = 1.0 - 2.0 * (y as f32 + 0.5) / height as f32;
            for x in 0..width {
                let u = 2.0 * (x as f32 + 0.5) / width as f32 - 1.0;
                let dir = (forward + right * (u * half_w) + up * (v * half_h)).normalize();
                rays.push(Ray::new(self.eye, dir, 0.0, f32::INFINITY));
            }
        }
        rays
    }
}

/// A small deterministic generator (SplitMix64) for seeded ray sets.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }
}

/// Unit geometric normal of a triangle, facing against `towards` (the incoming direction).
fn facing_normal(mesh: &Mesh, prim_id: u32, incoming: Vec3) -> Vec3 {
    let [a, b, c] = mesh.triangle(prim_id).map(Vec3::from);
    let n = (b - a).cross(c - a).normalize_or_zero();
    if n.dot(incoming) > 0.0 {
        -n
    } else {
        n
    }
}

/// A cosine-distributed direction around `n`.
fn cosine_direction(n: Vec3, rng: &mut SplitMix64) -> Vec3 {
    let (u1, u2) = (rng.next_f32(), rng.next_f32());
    let r = u1.sqrt();
    let phi = 2.0 * std::f32::consts::PI * u2;
    let local = Vec3::new(r * phi.cos(), r * phi.sin(), (1.0 - u1).max(0.0).sqrt());
    let (t, b) = n.any_orthonormal_pair();
    (t * local.x + b * local.y + n * local.z).normalize()
}

/// The hit points of `primary` (skipping misses) with the normal facing the ray, offset by
/// `epsilon` along it.
fn hit_points<'a>(
    mesh: &'a Mesh,
    primary: &'a [Ray],
    hits: &'a [Hit],
    epsilon: f32,
) -> impl Iterator<Item = (Vec3, Vec3)> + 'a {
    primary
        .iter()
        .zip(hits)
        .filter(|(_, h)| h.is_hit())
        .map(move |(r, h)| {
            let n = facing_normal(mesh, h.prim_id, r.dir);
            (r.at(h.t) + n * epsilon, n)
        })
}

/// Cosine-distributed bounce rays leaving the hit points (closest-hit queries).
pub fn diffuse_rays(
    mesh: &Mesh,
    primary: &[Ray],
    hits: &[Hit],
    epsilon: f32,
    seed: u64,
) -> Vec<Ray> {
    let mut rng = SplitMix64(seed);
    hit_points(mesh, primary, hits, epsilon)
        .map(|(p, n)| Ray::new(p, cosine_direction(n, &mut rng), 0.0, f32::INFINITY))
        .collect()
}

/// Ambient-occlusion rays: cosine-distributed, of length `length` (any-hit queries).
pub fn ao_rays(
    mesh: &Mesh,
    primary: &[Ray],
    hits: &[Hit],
    epsilon: f32,
    length: f32,
    seed: u64,
) -> Vec<Ray> {
    let mut rng = SplitMix64(seed);
    hit_points(mesh, primary, hits, epsilon)
        .map(|(p, n)| Ray::new(p, cosine_direction(n, &mut rng), 0.0, length))
        .collect()
}

/// Shadow rays from the hit points to a point light (any-hit queries): direction = light - p,
/// so the light sits at t = 1; `tmax` stops just short of it.
pub fn shadow_rays(
    mesh: &Mesh,
    primary: &[Ray],
    hits: &[Hit],
    epsilon: f32,
    light: Vec3,
) -> Vec<Ray> {
    hit_points(mesh, primary, hits, epsilon)
        .map(|(p, _)| Ray::new(p, light - p, 0.0, 1.0 - 1e-4))
        .collect()
}

/// How rays are ordered before they are packed into waves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RayOrder {
    /// The order of the input.
    AsGiven,
    /// Sorted by the 30-bit Morton code of the origin in the rays' bounding box.
    MortonOrigin,
    /// Binned by direction: octant, then a 16 x 16 grid over the two minor components.
    DirectionBins,
}

impl RayOrder {
    pub fn name(self) -> &'static str {
        match self {
            RayOrder::AsGiven => "as-given",
            RayOrder::MortonOrigin => "morton",
            RayOrder::DirectionBins => "dir-bins",
        }
    }

    /// The permutation that puts `rays` in this order (stable: equal keys keep input order).
    pub fn permutation(self, rays: &[Ray]) -> Vec<u32> {
        let mut order: Vec<u32> = (0..rays.len() as u32).collect();
        match self {
            RayOrder::AsGiven => {}
            RayOrder::MortonOrigin => {
                let bounds = Aabb::from_points(&rays.iter().map(|r| r.origin).collect::<Vec<_>>());
                let scale = bounds.extent().max(Vec3::splat(1e-30)).recip() * 1023.0;
                let key = |r: &Ray| {
                    let q =
                        ((r.origin - bounds.min) * scale).clamp(Vec3::ZERO, Vec3::splat(1023.0));
                    morton3(q.x as u32, q.y as u32, q.z as u32)
                };
                order.sort_by_key(|&i| key(&rays[i as usize]));
            }
            RayOrder::DirectionBins => order.sort_by_key(|&i| direction_bin(rays[i as usize].dir)),
        }
        order
    }
}

/// Interleaves the low 10 bits of x, y, z (x lowest).
pub fn morton3(x: u32, y: u32, z: u32) -> u32 {
    fn spread(v: u32) -> u32 {
        let mut v = v & 0x3ff;
        v = (v | (v << 16)) & 0x0300_00ff;
        v = (v | (v << 8)) & 0x0300_f00f;
        v = (v | (v << 4)) & 0x030c_30c3;
        (v | (v << 2)) & 0x0924_9249
    }
    spread(x) | spread(y) << 1 | spread(z) << 2
}

/// Octant (3 bits) then the dominant axis and a 16 x 16 grid over the other two components
/// divided by the dominant one.
fn direction_bin(d: Vec3) -> u32 {
    let octant = (d.x < 0.0) as u32 | ((d.y < 0.0) as u32) << 1 | ((d.z < 0.0) as u32) << 2;
    let a = d.abs();
    let (axis, u, v) = if a.x >= a.y && a.x >= a.z {
        (0, a.y / a.x, a.z / a.x)
    } else if a.y >= a.z {
        (1, a.z / a.y, a.x / a.y)
    } else {
        (2, a.x / a.z, a.y / a.z)
    };
    let q = |t: f32| {
        if t.is_finite() {
            (t * 15.999) as u32
        } else {
            0
        }
    };
    (octant << 10) | (axis << 8) | (q(u) << 4) | q(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_interleaves_bits() {
        // Independent: set bit i of x/y/z -> bit 3i/3i+1/3i+2.
        for i in 0..10 {
            assert_eq!(morton3(1 << i, 0, 0), 1 << (3 * i));
            assert_eq!(morton3(0, 1 << i, 0), 1 << (3 * i + 1));
            assert_eq!(morton3(0, 0, 1 << i), 1 << (3 * i + 2));
        }
    }

    #[test]
    fn orderings_are_permutations() {
        let mut rng = SplitMix64(7);
        let rays: Vec<Ray> = (0..500)
            .map(|_| {
                let o = Vec3::new(rng.next_f32(), rng.next_f32(), rng.next_f32()) * 10.0;
                let d = Vec3::new(
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                    rng.next_f32() - 0.5,
                );
                Ray::new(o, d, 0.0, 1.0)
            })
            .collect();
        for order in [
            RayOrder::AsGiven,
            RayOrder::MortonOrigin,
            RayOrder::DirectionBins,
        ] {
            let mut p = order.permutation(&rays);
            p.sort_unstable();
            assert_eq!(p, (0..500).collect::<Vec<u32>>(), "{order:?}");
        }
        // Direction bins group octants together.
        let p = RayOrder::DirectionBins.permutation(&rays);
        let octants: Vec<u32> = p
            .iter()
            .map(|&i| direction_bin(rays[i as usize].dir) >> 10)
            .collect();
        assert!(octants.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn camera_centre_ray_points_at_target() {
        let cam = PinholeCamera {
            eye: Vec3::ZERO,
            look_at: Vec3::new(0.0, 0.0, -5.0),
            up: Vec3::Y,
            vfov_deg: 60.0,
        };
        let rays = cam.primary_rays(3, 3);
        assert!((rays[4].dir - Vec3::NEG_Z).length() < 1e-6);
        // Row 0 is the top: its rays point up.
        assert!(rays[1].dir.y > 0.0 && rays[7].dir.y < 0.0);
        // The top edge of the image is at vfov/2: the top-centre pixel centre is at 2/3 of it.
        let expected = (30f32.to_radians().tan() * 2.0 / 3.0).atan();
        assert!((rays[1].dir.y.asin() - expected).abs() < 1e-5);
    }
}
