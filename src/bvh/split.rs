//! Spatial splits by early split clipping: before the build, the references of triangles
//! whose box is much larger than average are cut at the spatial median of their box's widest
//! axis, recursively, and each piece gets the exact box of the part of the triangle inside it
//! (the triangle clipped to the piece's box, Sutherland-Hodgman). The binned SAH build then
//! sees several tight references instead of one loose box. This is the cheap relative of
//! SBVH's spatial splits (split decisions are made per triangle, not per node).
//!
//! Each reference gets its own triangle slot in the image, so one triangle may be stored
//! several times; its slot boxes cover the triangle together (each piece box is widened by a
//! relative 1e-5 of its extent plus 1e-6 of its coordinates' magnitude, inside the parent box,
//! against rounding in the clipping).

use super::build::{half_area, Bounds, PrimRef};
use super::Mesh;
use glam::Vec3A;

/// References whose box half-area exceeds this many times the mean are split.
const AREA_FACTOR: f32 = 4.0;
/// At most 2^MAX_LEVELS pieces per triangle.
const MAX_LEVELS: u32 = 4;
/// At most this fraction of extra references.
const BUDGET: f32 = 0.3;

/// Splits the references of large triangles; the result keeps the input order with each
/// reference replaced by its pieces.
pub fn presplit(mesh: &Mesh, refs: Vec<PrimRef>) -> Vec<PrimRef> {
    if refs.is_empty() {
        return refs;
    }
    let mean = refs
        .iter()
        .map(|r| half_area(r.min(), r.max()) as f64)
        .sum::<f64>()
        / refs.len() as f64;
    let budget = (refs.len() as f32 * BUDGET) as usize;
    let mut threshold = (mean * AREA_FACTOR as f64) as f32;
    // Raise the threshold until the pieces fit the budget (deterministic).
    loop {
        let extra: usize = refs
            .iter()
            .map(|r| pieces(r.min(), r.max(), threshold, 0) - 1)
            .sum();
        if extra <= budget || !threshold.is_finite() || threshold <= 0.0 {
            break;
        }
        threshold *= 2.0;
    }
    if threshold.is_nan() || threshold <= 0.0 {
        return refs;
    }
    let mut out = Vec::with_capacity(refs.len() + budget);
    for r in refs {
        if half_area(r.min(), r.max()) <= threshold {
            out.push(r);
            continue;
        }
        let tri = mesh.triangle(r.prim()).map(Vec3A::from);
        split_into(&tri, r, threshold, 0, &mut out);
    }
    out
}

/// Pieces a box would be cut into (by box halving only; clipping can only shrink them).
fn pieces(min: Vec3A, max: Vec3A, threshold: f32, level: u32) -> usize {
    if level >= MAX_LEVELS || half_area(min, max) <= threshold {
        return 1;
    }
    let (a, b) = halves(min, max);
    pieces(a.0, a.1, threshold, level + 1) + pieces(b.0, b.1, threshold, level + 1)
}

/// The two halves of the box `min..max`, cut at the middle of its widest axis (x before y
/// before z among equal extents).
fn halves(min: Vec3A, max: Vec3A) -> (Bounds, Bounds) {
    let e = max - min;
    let axis = if e.x >= e.y && e.x >= e.z {
        0
    } else if e.y >= e.z {
        1
    } else {
        2
    };
    let mid = 0.5 * (min[axis] + max[axis]);
    let mut lmax = max;
    lmax[axis] = mid;
    let mut rmin = min;
    rmin[axis] = mid;
    ((min, lmax), (rmin, max))
}

/// Appends the pieces of reference `r` of triangle `tri` to `out`: `r` itself when it is
/// small enough (or `level` is the last), else the pieces of its two halves, each clipped to
/// the triangle (halves the triangle misses are dropped).
fn split_into(tri: &[Vec3A; 3], r: PrimRef, threshold: f32, level: u32, out: &mut Vec<PrimRef>) {
    if level >= MAX_LEVELS || half_area(r.min(), r.max()) <= threshold {
        out.push(r);
        return;
    }
    let (a, b) = halves(r.min(), r.max());
    for (lo, hi) in [a, b] {
        if let Some((cmin, cmax)) = clipped_bounds(tri, lo, hi) {
            // The clipped vertices carry rounding relative to their coordinates' magnitude,
            // not to the piece's extent: widen by both (a thin piece far from the origin
            // otherwise ends up a few ULPs short of the triangle and loses hits).
            let magnitude = cmin.abs().max(cmax.abs());
            let pad = (cmax - cmin) * 1e-5 + magnitude * 1e-6;
            let piece = PrimRef::new(
                (cmin - pad).max(lo),
                (cmax + pad).min(hi),
                r.prim(),
                r.triangles(),
            );
            split_into(tri, piece, threshold, level + 1, out);
        }
    }
}

/// Bounds of the triangle clipped to the box `lo..hi`, or `None` if they do not meet.
fn clipped_bounds(tri: &[Vec3A; 3], lo: Vec3A, hi: Vec3A) -> Option<Bounds> {
    let mut poly = [Vec3A::ZERO; 9];
    let mut n = 3;
    poly[..3].copy_from_slice(tri);
    let mut next = [Vec3A::ZERO; 9];
    for axis in 0..3 {
        for (plane, keep_above) in [(lo[axis], true), (hi[axis], false)] {
            let inside = |p: Vec3A| {
                if keep_above {
                    p[axis] >= plane
                } else {
                    p[axis] <= plane
                }
            };
            let mut m = 0;
            for i in 0..n {
                let p = poly[i];
                let q = poly[(i + 1) % n];
                let (pin, qin) = (inside(p), inside(q));
                if pin {
                    next[m] = p;
                    m += 1;
                }
                if pin != qin && m < 9 {
                    let t = (plane - p[axis]) / (q[axis] - p[axis]);
                    let mut x = p + (q - p) * t;
                    x[axis] = plane;
                    next[m] = x;
                    m += 1;
                }
            }
            n = m.min(9);
            poly[..n].copy_from_slice(&next[..n]);
            if n == 0 {
                return None;
            }
        }
    }
    let (mut min, mut max) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    for p in &poly[..n] {
        min = min.min(*p);
        max = max.max(*p);
    }
    Some((min.max(lo), max.min(hi)))
}
