//! Moving a node's references to the sides of its split, in place: by a centroid predicate
//! ([`partition`], gathering the sides' bounds in the same pass), or by count at the object
//! median ([`median_split`]).

use super::prim_ref::bounds;
use super::{PrimRef, Side, Split};
use glam::Vec3A;

/// Moves the references whose (doubled) centroid `c = min + max` satisfies `left(c)` to the
/// front; returns the split with the centroid bounds of both sides, gathered in the same
/// pass, and with `BOUNDS` also the bounds of both sides (else empty boxes).
#[inline(always)]
pub(super) fn partition<const BOUNDS: bool>(
    refs: &mut [PrimRef],
    left: impl Fn(Vec3A) -> bool,
) -> Split {
    let (mut lmin, mut lmax) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut rmin, mut rmax) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut llo, mut lhi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut rlo, mut rhi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut i, mut j) = (0usize, refs.len());
    loop {
        while i < j {
            let c = refs[i].min() + refs[i].max();
            if !left(c) {
                break;
            }
            lmin = lmin.min(c);
            lmax = lmax.max(c);
            if BOUNDS {
                llo = llo.min(refs[i].min());
                lhi = lhi.max(refs[i].max());
            }
            i += 1;
        }
        while i < j {
            let c = refs[j - 1].min() + refs[j - 1].max();
            if left(c) {
                break;
            }
            rmin = rmin.min(c);
            rmax = rmax.max(c);
            if BOUNDS {
                rlo = rlo.min(refs[j - 1].min());
                rhi = rhi.max(refs[j - 1].max());
            }
            j -= 1;
        }
        if i >= j {
            return Split {
                left: Side {
                    bounds: (llo, lhi),
                    centroids: Some((lmin, lmax)),
                },
                right: Side {
                    bounds: (rlo, rhi),
                    centroids: Some((rmin, rmax)),
                },
                left_count: i,
            };
        }
        // refs[i] goes right, refs[j - 1] goes left.
        refs.swap(i, j - 1);
        let c = refs[i].min() + refs[i].max();
        lmin = lmin.min(c);
        lmax = lmax.max(c);
        let c = refs[j - 1].min() + refs[j - 1].max();
        rmin = rmin.min(c);
        rmax = rmax.max(c);
        if BOUNDS {
            llo = llo.min(refs[i].min());
            lhi = lhi.max(refs[i].max());
            rlo = rlo.min(refs[j - 1].min());
            rhi = rhi.max(refs[j - 1].max());
        }
        i += 1;
        j -= 1;
    }
}

/// The object median split on the widest centroid axis of `extent` (x before y before z
/// among equal extents): the first half of the references by centroid go left (the order
/// among equal centroids is the current one). Used where binning finds no split (all
/// centroids coincide) and deeper than `MAX_SAH_DEPTH` levels, where it bounds the depth.
pub(super) fn median_split(refs: &mut [PrimRef], extent: Vec3A) -> Split {
    let half = refs.len() / 2;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let key = |r: &PrimRef| r.min()[axis] + r.max()[axis];
    refs.select_nth_unstable_by(half, |a, b| key(a).total_cmp(&key(b)));
    let (a, b) = refs.split_at(half);
    Split {
        left: Side {
            bounds: bounds(a),
            centroids: None,
        },
        right: Side {
            bounds: bounds(b),
            centroids: None,
        },
        left_count: half,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::Rng;

    /// The partition keeps each reference on the side its centroid says, and with bounds
    /// it returns each side's exact box and centroid bounds.
    #[test]
    fn partition_returns_the_sides_and_their_bounds() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for count in [1usize, 2, 3, 10, 333, 5000] {
            let refs: Vec<PrimRef> = (0..count as u32)
                .map(|prim| {
                    let mut c = || (rng.next() % 10_000) as f32 / 10.0;
                    let a = Vec3A::new(c(), c(), c());
                    PrimRef::new(a, a + Vec3A::new(c(), c(), c()) * 0.01, prim, 1)
                })
                .collect();
            let t = 1000.0;
            let left = |c: Vec3A| c.y <= t;
            let mut parted = refs.clone();
            let split = partition::<true>(&mut parted, left);
            let n = split.left_count;
            let centre = |r: &PrimRef| r.min() + r.max();
            assert!(parted[..n].iter().all(|r| left(centre(r))), "{count}");
            assert!(parted[n..].iter().all(|r| !left(centre(r))), "{count}");
            assert_eq!(n, refs.iter().filter(|r| left(centre(r))).count());
            assert_eq!(split.left.bounds, bounds(&parted[..n]));
            assert_eq!(split.right.bounds, bounds(&parted[n..]));
            let centroid_bounds = |refs: &[PrimRef]| {
                refs.iter()
                    .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                        (lo.min(centre(r)), hi.max(centre(r)))
                    })
            };
            assert_eq!(split.left.centroids, Some(centroid_bounds(&parted[..n])));
            assert_eq!(split.right.centroids, Some(centroid_bounds(&parted[n..])));
        }
    }
}
