//! The scalar reference traversal: a plain stack walk that issues
//! [`hw::image_bvh_intersect_ray`](crate::hw::image_bvh_intersect_ray) for every node, and a
//! brute-force loop that issues it on every triangle. The wave model and the profiler
//! compare against these.
//!
//! Conventions (shared by both functions):
//!
//! - **t range.** The instruction has no tmin (boxes are clamped to `[0, extent]`, triangles
//!   hit at `t >= 0`). Software rejects triangle hits with `t < ray.tmin`; the origin is
//!   never moved (moving it would change the watertight results). Hits count for
//!   `tmin <= t <= tmax`, t = `t_num / t_denom` in f32, finite (the miss encoding has
//!   t = +inf, which never counts, even when tmax is infinite).
//! - **Ties.** Of hits at the same t, the one with the smaller primitive id wins, so the
//!   result does not depend on the traversal order.
//! - **front_face** is `t_denom > 0` (`semantics.md` 7.3: `t_denom > 0` iff
//!   `d . ((v1 - v0) x (v2 - v0)) < 0`). The mesh's convention is counter-clockwise front
//!   faces in a right-handed frame, whose outward normal is `(v1 - v0) x (v2 - v0)`; a ray
//!   that meets that face has `d . n < 0`, so it is the D3D "clockwise" front of
//!   `semantics.md` seen from a right-handed frame. The encoder stores every triangle as a
//!   rotation of the mesh's vertex order, so the sign is the mesh's.
//! - **bary** are the weights of the triangle's second and third vertex in the mesh's own
//!   order: in mode 1 `(i_num / t_denom, j_num / t_denom)` from the instruction (the encoder's
//!   IJ control word selects them); in mode 0 computed in f64 from the ray and the triangle
//!   (Möller-Trumbore), then rounded to f32.

use super::{BvhImage, Mesh};
use crate::hw::{
    image_bvh_intersect_ray, BvhDescriptor, IjControl, NodePointer, RayRegisters, TriangleNode,
    TriangleReturnMode,
};
use crate::math::{Hit, Ray};

/// The ray VGPRs for `ray`: extent = tmax, inverse direction = 1 / dir (infinite where a
/// component is zero).
pub fn ray_registers(ray: &Ray) -> RayRegisters {
    RayRegisters {
        extent: ray.tmax,
        origin: ray.origin.to_array(),
        dir: ray.dir.to_array(),
        inv_dir: ray.dir.to_array().map(|d| 1.0 / d),
    }
}

/// Closest hit by a stack traversal of `image` (built from `mesh`), one instruction per node.
pub fn closest_hit_scalar(image: &BvhImage, mesh: &Mesh, ray: &Ray) -> Hit {
    let mut best = Hit::MISS;
    // Also rejects NaN bounds.
    if ray.tmin.partial_cmp(&ray.tmax).is_none_or(|o| o.is_gt()) {
        return best;
    }
    let mut best_t = ray.tmax;
    let mut regs = ray_registers(ray);
    let mode = image.descriptor.triangle_return_mode;
    let mut stack: Vec<NodePointer> = Vec::with_capacity(64);
    stack.push(image.root);
    let intersect = |pointer: NodePointer, regs: &RayRegisters| {
        let memory = image.bytes.as_slice();
        image_bvh_intersect_ray(memory, &image.descriptor, pointer.to_u32(), regs)
    };
    while let Some(pointer) = stack.pop() {
        regs.extent = best_t;
        let r = intersect(pointer, &regs);
        let ty = pointer.node_type();
        if ty.is_box() {
            // Sorted nearest first when sorting is on: push in reverse so the nearest pops first.
            for child in r.dwords.map(NodePointer::from_u32).into_iter().rev() {
                if !child.is_invalid() {
                    stack.push(child);
                }
            }
        } else if ty.triangle_index().is_some() {
            // One instruction per triangle the pointer stands for (a leaf chain: k..0).
            for tri in image.leaf_triangles(pointer) {
                let r = if tri == pointer {
                    r
                } else {
                    intersect(tri, &regs)
                };
                if mode == TriangleReturnMode::TriangleId && r.dwords[3] == 0 {
                    continue;
                }
                let prim = image.primitive_id(tri, &r.dwords);
                if let Some(hit) = accept(&r.dwords, mode, ray, best_t, &best, prim, mesh) {
                    best = hit;
                    best_t = hit.t;
                    regs.extent = best_t;
                }
            }
        }
    }
    best
}

/// Closest hit by issuing the instruction on every triangle of `mesh`, each stored alone in
/// a triangle node in the mesh's own vertex order (triangle 0, IJ control 9 = P012), with the
/// given return mode. Triangles with a NaN or infinite vertex are skipped (the builder drops
/// them).
pub fn closest_hit_brute_force(mesh: &Mesh, ray: &Ray, mode: TriangleReturnMode) -> Hit {
    let mut best = Hit::MISS;
    if ray.tmin.partial_cmp(&ray.tmax).is_none_or(|o| o.is_gt()) {
        return best;
    }
    let descriptor = BvhDescriptor {
        size_minus_one: 0,
        triangle_return_mode: mode,
        ..BvhDescriptor::default()
    };
    let regs = ray_registers(ray);
    let mut best_t = ray.tmax;
    for prim in 0..mesh.len() as u32 {
        let [a, b, c] = mesh.triangle(prim);
        if ![a, b, c].iter().flatten().all(|v| v.is_finite()) {
            continue;
        }
        let node = TriangleNode {
            vertices: [a, b, c, [f32::NAN; 3], [f32::NAN; 3]],
            word: match mode {
                TriangleReturnMode::TriangleId => prim,
                TriangleReturnMode::Barycentrics => IjControl(0).with_nibble(0, 9).0,
            },
        };
        let r = image_bvh_intersect_ray(bytemuck::bytes_of(&node), &descriptor, 0, &regs);
        if mode == TriangleReturnMode::TriangleId && r.dwords[3] == 0 {
            continue;
        }
        if let Some(hit) = accept(&r.dwords, mode, ray, best_t, &best, prim, mesh) {
            best = hit;
            best_t = hit.t;
        }
    }
    best
}

/// The hit for a triangle result if it beats `best` (see the module docs for the rules).
fn accept(
    dwords: &[u32; 4],
    mode: TriangleReturnMode,
    ray: &Ray,
    best_t: f32,
    best: &Hit,
    prim: u32,
    mesh: &Mesh,
) -> Option<Hit> {
    let t_num = f32::from_bits(dwords[0]);
    let t_denom = f32::from_bits(dwords[1]);
    let t = t_num / t_denom;
    // The miss encoding is {+inf, 1.0, ...}: an infinite t is never a hit.
    if !(t >= ray.tmin && t <= best_t && t < f32::INFINITY) {
        return None;
    }
    if best.is_hit() && t == best_t && prim >= best.prim_id {
        return None;
    }
    if prim as usize >= mesh.len() {
        return None;
    }
    let bary = match mode {
        TriangleReturnMode::Barycentrics => [
            f32::from_bits(dwords[2]) / t_denom,
            f32::from_bits(dwords[3]) / t_denom,
        ],
        TriangleReturnMode::TriangleId => barycentrics_f64(ray, mesh.triangle(prim)),
    };
    Some(Hit {
        t,
        prim_id: prim,
        bary,
        front_face: t_denom > 0.0,
        instance: Hit::NO_INSTANCE,
    })
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Weights of the second and third vertex where the ray's line meets the triangle's plane
/// (Möller-Trumbore in f64); zeros for a degenerate configuration.
pub fn barycentrics_f64(ray: &Ray, tri: [[f32; 3]; 3]) -> [f32; 2] {
    let v = tri.map(|p| p.map(f64::from));
    let o = ray.origin.to_array().map(f64::from);
    let d = ray.dir.to_array().map(f64::from);
    let e1 = sub(v[1], v[0]);
    let e2 = sub(v[2], v[0]);
    let p = cross(d, e2);
    let det = dot(e1, p);
    if det == 0.0 || !det.is_finite() {
        return [0.0, 0.0];
    }
    let s = sub(o, v[0]);
    let u = dot(s, p) / det;
    let q = cross(s, e1);
    let w = dot(d, q) / det;
    [u as f32, w as f32]
}

/// The distance along `ray` to the plane of `tri`, in f64 (Möller-Trumbore's t), or `None`
/// when the ray is parallel to the plane or the result is not finite.
///
/// The instruction's division-free `t = t_num / t_denom` (`semantics.md` 7.2) is exact in
/// its hit/miss decision but loses relative precision where its edge functions cancel (long,
/// thin triangles seen from close by: up to ~3e-3 relative on the shared sponza set). An
/// application's hit shader that needs an accurate distance recomputes it from the hit
/// triangle; `wavetrace trace` does so for the t it writes (the traversal itself, its
/// decisions and its counters, use the instruction's t).
pub fn plane_distance_f64(ray: &Ray, tri: [[f32; 3]; 3]) -> Option<f32> {
    let v = tri.map(|p| p.map(f64::from));
    let o = ray.origin.to_array().map(f64::from);
    let d = ray.dir.to_array().map(f64::from);
    let n = cross(sub(v[1], v[0]), sub(v[2], v[0]));
    let denom = dot(d, n);
    let t = dot(sub(v[0], o), n) / denom;
    (denom != 0.0 && t.is_finite()).then_some(t as f32)
}

/// `hit` with its t replaced by [`plane_distance_f64`] of its triangle (misses unchanged).
pub fn refine_hit_distance(mesh: &Mesh, ray: &Ray, hit: Hit) -> Hit {
    Hit {
        t: refined_distance(mesh, ray, hit.t, hit.prim_id),
        ..hit
    }
}

/// [`refine_hit_distance`] of a hit at `t` on primitive `prim_id` (`t` itself for a miss,
/// [`Hit::NO_PRIMITIVE`], or where the plane distance is not finite).
pub fn refined_distance(mesh: &Mesh, ray: &Ray, t: f32, prim_id: u32) -> f32 {
    if prim_id == Hit::NO_PRIMITIVE {
        return t;
    }
    plane_distance_f64(ray, mesh.triangle(prim_id)).unwrap_or(t)
}

#[cfg(test)]
mod refine_tests {
    use super::*;
    use glam::Vec3;

    #[test]
    fn plane_distance_is_exact_on_simple_planes() {
        let tri = [[0.0, 0.0, 5.0], [1.0, 0.0, 5.0], [0.0, 1.0, 5.0]];
        let ray = Ray::new(
            Vec3::new(0.2, 0.3, 1.0),
            Vec3::new(0.0, 0.0, 2.0),
            0.0,
            f32::INFINITY,
        );
        assert_eq!(plane_distance_f64(&ray, tri), Some(2.0));
        let parallel = Ray::new(Vec3::ZERO, Vec3::X, 0.0, 1.0);
        assert_eq!(plane_distance_f64(&parallel, tri), None);
    }
}
