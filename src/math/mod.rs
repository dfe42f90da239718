//! Geometry shared by every layer above `hw`: rays, hits and boxes.
//!
//! `hw` does not use these types: it speaks raw VGPR values. The builder, the wave model and
//! the renderer do.

use glam::Vec3;

/// A ray as an application states it: origin, direction (not necessarily normalized) and the
/// interval `[tmin, tmax]` in which hits count.
///
/// `repr(C)`: eight f32 in the ray file's order, so that vector code may load a ray as one
/// 32-byte row.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Ray {
    pub origin: Vec3,
    pub dir: Vec3,
    pub tmin: f32,
    pub tmax: f32,
}

const _: () = {
    assert!(std::mem::size_of::<Ray>() == 32);
    assert!(std::mem::offset_of!(Ray, dir) == 12);
    assert!(std::mem::offset_of!(Ray, tmin) == 24);
    assert!(std::mem::offset_of!(Ray, tmax) == 28);
};

impl Ray {
    pub fn new(origin: Vec3, dir: Vec3, tmin: f32, tmax: f32) -> Self {
        Ray {
            origin,
            dir,
            tmin,
            tmax,
        }
    }

    /// The point at parameter `t`.
    pub fn at(&self, t: f32) -> Vec3 {
        self.origin + self.dir * t
    }
}

/// The closest (or any) hit found for a ray.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Hit distance in units of the ray direction; `f32::INFINITY` for a miss.
    pub t: f32,
    /// Primitive id (the triangle's index in file order); [`Hit::NO_PRIMITIVE`] for a miss.
    pub prim_id: u32,
    /// Barycentric weights of the primitive's second and third vertex (in the mesh's own
    /// vertex order).
    pub bary: [f32; 2],
    /// True when the triangle was hit on its front face (counter-clockwise as seen by the ray).
    pub front_face: bool,
    /// The instance hit in a two-level scene ([`Hit::NO_INSTANCE`] in a flat one, and for a
    /// miss); `prim_id` is then the primitive's index in the instance's BLAS.
    pub instance: u32,
}

impl Hit {
    pub const NO_PRIMITIVE: u32 = u32::MAX;
    pub const NO_INSTANCE: u32 = u32::MAX;
    pub const MISS: Hit = Hit {
        t: f32::INFINITY,
        prim_id: Hit::NO_PRIMITIVE,
        bary: [0.0; 2],
        front_face: false,
        instance: Hit::NO_INSTANCE,
    };

    pub fn is_hit(&self) -> bool {
        self.prim_id != Hit::NO_PRIMITIVE
    }
}

/// What a hit file keeps of a ray's closest hit (`traverse::rayfile`): its distance and
/// primitive id, `(+inf, Hit::NO_PRIMITIVE)` for a miss. A tracer can produce it without
/// what a [`Hit`] adds (barycentrics, the facing), which `wavetrace trace` never writes
/// ([`crate::wave::Tracer::closest_hit_records`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HitRecord {
    /// Hit distance in units of the ray direction; `f32::INFINITY` for a miss.
    pub t: f32,
    /// Primitive id; [`Hit::NO_PRIMITIVE`] for a miss.
    pub prim_id: u32,
    /// The instance in a two-level scene; [`Hit::NO_INSTANCE`] in a flat one and for a miss.
    pub instance: u32,
}

impl HitRecord {
    pub const MISS: HitRecord = HitRecord {
        t: f32::INFINITY,
        prim_id: Hit::NO_PRIMITIVE,
        instance: Hit::NO_INSTANCE,
    };

    pub fn is_hit(&self) -> bool {
        self.prim_id != Hit::NO_PRIMITIVE
    }
}

impl From<&Hit> for HitRecord {
    fn from(hit: &Hit) -> HitRecord {
        if hit.is_hit() {
            HitRecord {
                t: hit.t,
                prim_id: hit.prim_id,
                instance: hit.instance,
            }
        } else {
            HitRecord::MISS
        }
    }
}

impl Default for Hit {
    fn default() -> Self {
        Hit::MISS
    }
}

/// An axis-aligned box. The empty box has `min = +inf`, `max = -inf`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Aabb {
    pub const EMPTY: Aabb = Aabb {
        min: Vec3::INFINITY,
        max: Vec3::NEG_INFINITY,
    };

    pub fn from_points(points: &[Vec3]) -> Self {
        points.iter().fold(Aabb::EMPTY, |b, &p| b.grow_point(p))
    }

    pub fn grow_point(self, p: Vec3) -> Self {
        Aabb {
            min: self.min.min(p),
            max: self.max.max(p),
        }
    }

    pub fn union(self, other: Aabb) -> Self {
        Aabb {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y || self.min.z > self.max.z
    }

    pub fn extent(&self) -> Vec3 {
        if self.is_empty() {
            Vec3::ZERO
        } else {
            self.max - self.min
        }
    }

    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// True when `other` lies inside `self` (closed).
    pub fn contains(&self, other: &Aabb) -> bool {
        other.is_empty() || (self.min.cmple(other.min).all() && self.max.cmpge(other.max).all())
    }
}
