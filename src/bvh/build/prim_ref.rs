//! Primitive references ([`PrimRef`]): the boxes the binary tree is built over, one per
//! finite triangle ([`triangle_refs`]), or per clipped piece of one with spatial splits, or
//! per fan cluster with leaf chains.

use super::{Bounds, EMPTY_BOUNDS};
use crate::bvh::Mesh;
use glam::Vec3A;
use rayon::prelude::*;

/// A primitive reference: a triangle (or, with spatial splits, a clipped part of one).
///
/// 32 bytes (two 16-byte lanes), so that the passes over the references per level move two
/// thirds of the bytes of a `Vec3A` layout: the primitive id and the triangle count ride in
/// the fourth lane of the bounds, as bits, and are masked off when the bounds are read.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
pub struct PrimRef {
    /// Min x, y, z; lane 3: the primitive id's bits.
    lo: [f32; 4],
    /// Max x, y, z; lane 3: the triangle count's bits.
    hi: [f32; 4],
}

const _: () = assert!(std::mem::size_of::<PrimRef>() == 32);

impl PrimRef {
    /// `prim`: primitive id in the mesh (or cluster index with leaf chains); `triangles`:
    /// triangles tested when this reference is reached (1, or the cluster size).
    #[inline]
    pub fn new(min: Vec3A, max: Vec3A, prim: u32, triangles: u32) -> PrimRef {
        let [x, y, z] = min.to_array();
        let [u, v, w] = max.to_array();
        PrimRef {
            lo: [x, y, z, f32::from_bits(prim)],
            hi: [u, v, w, f32::from_bits(triangles)],
        }
    }

    #[inline(always)]
    pub fn min(&self) -> Vec3A {
        xyz(&self.lo)
    }

    #[inline(always)]
    pub fn max(&self) -> Vec3A {
        xyz(&self.hi)
    }

    /// Primitive id in the mesh (or cluster index with leaf chains).
    #[inline]
    pub fn prim(&self) -> u32 {
        self.lo[3].to_bits()
    }

    /// Triangles tested when this reference is reached (1, or the cluster size).
    #[inline]
    pub fn triangles(&self) -> u32 {
        self.hi[3].to_bits()
    }
}

/// One reference per triangle of `mesh`, in order, leaving out the triangles with a NaN or
/// infinite coordinate; returns the references and how many triangles were left out.
pub fn triangle_refs(mesh: &Mesh) -> (Vec<PrimRef>, usize) {
    // An indexed collect (written in place); the rare non-finite triangles are counted as
    // they are met (an atomic touched only for them), marked with no triangles and dropped
    // in order afterwards.
    let dropped = std::sync::atomic::AtomicUsize::new(0);
    let mut refs: Vec<PrimRef> = Vec::with_capacity(mesh.len());
    (0..mesh.len() as u32)
        .into_par_iter()
        .map(|prim| {
            let [a, b, c] = mesh.triangle(prim).map(Vec3A::from);
            // x * 0 is (+ or -) 0 for a finite x and NaN for an infinite or NaN one.
            let finite = (a * 0.0 + b * 0.0 + c * 0.0).cmpeq(Vec3A::ZERO).all();
            if !finite {
                dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            PrimRef::new(a.min(b).min(c), a.max(b).max(c), prim, finite as u32)
        })
        .collect_into_vec(&mut refs);
    let dropped = dropped.into_inner();
    if dropped > 0 {
        refs.retain(|r| r.triangles() != 0);
    }
    (refs, dropped)
}

/// Lanes x, y, z of `v` as a `Vec3A` whose fourth lane is 0 (the id bits would be
/// subnormal floats, slow in arithmetic on some cores).
#[inline(always)]
fn xyz(v: &[f32; 4]) -> Vec3A {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__m128;
        // One aligned load and one andps.
        let lanes: wide::f32x4 = bytemuck::cast(*v);
        let mask: wide::f32x4 = bytemuck::cast([u32::MAX, u32::MAX, u32::MAX, 0]);
        Vec3A::from(bytemuck::cast::<wide::f32x4, __m128>(lanes & mask))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec3A::new(v[0], v[1], v[2])
    }
}

/// Bounds of a set of references.
pub(super) fn bounds(refs: &[PrimRef]) -> Bounds {
    refs.iter().fold(EMPTY_BOUNDS, |(lo, hi), r| {
        (lo.min(r.min()), hi.max(r.max()))
    })
}

/// Bounds of the (doubled) centroids `min + max` of a set of references.
pub(super) fn centroid_bounds(refs: &[PrimRef]) -> Bounds {
    refs.iter().fold(EMPTY_BOUNDS, |(lo, hi), r| {
        let c = r.min() + r.max();
        (lo.min(c), hi.max(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::Rng;

    /// The references leave out exactly the triangles with a coordinate that is not finite
    /// (NaN, +inf, -inf in any lane; the largest finite floats kept), in order, with the
    /// triangles' own bounds.
    #[test]
    fn triangle_refs_drop_exactly_the_non_finite_triangles() {
        let mut rng = Rng(0x3c6e_f372_fe94_f82b);
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            -f32::MAX,
        ];
        let positions: Vec<[f32; 3]> = (0..300)
            .map(|_| {
                std::array::from_fn(|_| match rng.next() % 12 {
                    0 => specials[(rng.next() % 5) as usize],
                    _ => rng.coordinate() - 1.0,
                })
            })
            .collect();
        let indices: Vec<[u32; 3]> = (0..2000)
            .map(|_| std::array::from_fn(|_| (rng.next() % 300) as u32))
            .collect();
        let mesh = Mesh { positions, indices };
        let expected: Vec<u32> = (0..mesh.len() as u32)
            .filter(|&p| mesh.triangle(p).iter().flatten().all(|c| c.is_finite()))
            .collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (refs, dropped) = pool.install(|| triangle_refs(&mesh));
        assert!(dropped > 100 && expected.len() > 100, "{dropped}");
        assert_eq!(dropped, mesh.len() - expected.len());
        assert_eq!(refs.iter().map(|r| r.prim()).collect::<Vec<_>>(), expected);
        for r in &refs {
            let t = mesh.triangle(r.prim()).map(Vec3A::from);
            assert_eq!(r.min(), t[0].min(t[1]).min(t[2]));
            assert_eq!(r.max(), t[0].max(t[1]).max(t[2]));
            assert_eq!(r.triangles(), 1);
        }
    }
}
