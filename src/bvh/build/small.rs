//! The exact SAH split of small nodes (at most `SMALL_NODE` references): the references
//! sorted by centroid on stack keys with a branch-free stable sort, and every position
//! swept, instead of binning.

use super::prim_ref::bounds;
use super::{half_area, PrimRef, Side, Split};
use crate::host::{Avx2, Avx2Kernel};
use glam::Vec3A;

/// Nodes with at most this many references get an exact SAH sweep instead of bins.
pub(super) const SMALL_NODE: usize = 12;
/// Small nodes with at most this many references sweep only the axis of their widest
/// centroid extent (a third of the work; the SAH of the dragon, bunny and sponza moves by
/// less than 0.05 %: see [`small_split`]).
const ONE_AXIS_MAX: usize = 6;

/// Exact SAH split of a small node: sorts the references by centroid on each axis and
/// sweeps all `m - 1` positions; leaves `refs` in the order of the best axis.
///
/// The axes are sorted one after the other, each starting from the previous order (stable
/// insertion sorts, so ties keep the order of the previous axis), and the best axis is sorted
/// again from the last order if it is not the last; the sorts run on (key, index) pairs on
/// the stack and `refs` is permuted once at the end.
///
/// Nodes of 3 to [`ONE_AXIS_MAX`] references sort and sweep only the axis of their widest
/// centroid extent (x before y before z among equal extents), starting from the current
/// order. Two references need no sweep (both orders cost the same): they end in the order
/// of the four stable sorts above.
pub(super) fn small_split(refs: &mut [PrimRef]) -> Split {
    match Avx2::detect() {
        Some(avx2) => avx2.run(SmallSplit(refs)),
        None => small_split_any(refs),
    }
}

/// [`small_split_any`] as work for [`Avx2::run`]: compiled for AVX2, the same f32
/// operations (one rounding each; Rust never contracts to FMA), so the same split; VEX
/// encoding saves the register copies of two-operand SSE.
struct SmallSplit<'r>(&'r mut [PrimRef]);

impl Avx2Kernel for SmallSplit<'_> {
    type Output = Split;

    #[inline(always)]
    fn run(self) -> Split {
        small_split_any(self.0)
    }
}

/// [`small_split`] in any instruction set.
#[inline(always)]
fn small_split_any(refs: &mut [PrimRef]) -> Split {
    let m = refs.len();
    debug_assert!((2..=SMALL_NODE).contains(&m));
    if m == 2 {
        order_pair(refs);
        let side = |r: &PrimRef| Side {
            bounds: (r.min(), r.max()),
            centroids: None,
        };
        return Split {
            left: side(&refs[0]),
            right: side(&refs[1]),
            left_count: 1,
        };
    }
    // Doubled centroids per axis.
    let mut keys = [[0.0f32; SMALL_NODE]; 3];
    let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    for (i, r) in refs.iter().enumerate() {
        let c = r.min() + r.max();
        lo = lo.min(c);
        hi = hi.max(c);
        for (keys, c) in keys.iter_mut().zip(c.to_array()) {
            keys[i] = c;
        }
    }
    let mut order: [u8; SMALL_NODE] = std::array::from_fn(|i| i as u8);
    let order = &mut order[..m];
    let mut best = (f32::INFINITY, 0usize, 1usize);
    let mut right_area = [0.0f32; SMALL_NODE];
    // The axes to sweep: all three, or only the widest (the first of equal extents).
    let axes = if m <= ONE_AXIS_MAX {
        let [x, y, z] = (hi - lo).to_array();
        let widest = if x >= y && x >= z {
            0
        } else if y >= z {
            1
        } else {
            2
        };
        widest..widest + 1
    } else {
        0..3
    };
    let all_axes = axes.len() == 3;
    for axis in axes {
        sort_on_keys(order, &keys[axis]);
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for i in (1..m).rev() {
            let r = &refs[order[i] as usize];
            lo = lo.min(r.min());
            hi = hi.max(r.max());
            right_area[i] = half_area(lo, hi);
        }
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for i in 0..m - 1 {
            let r = &refs[order[i] as usize];
            lo = lo.min(r.min());
            hi = hi.max(r.max());
            let c = half_area(lo, hi) * (i + 1) as f32 + right_area[i + 1] * (m - i - 1) as f32;
            if c < best.0 {
                best = (c, axis, i + 1);
            }
        }
    }
    let (_, axis, left_count) = best;
    if all_axes && axis != 2 {
        sort_on_keys(order, &keys[axis]);
    }
    // Permute (unless the order is already the current one, as it often is below a split on
    // the same axis).
    if order.iter().enumerate().any(|(i, &o)| o as usize != i) {
        let mut sorted = [refs[0]; SMALL_NODE];
        for (s, &i) in sorted.iter_mut().zip(order.iter()) {
            *s = refs[i as usize];
        }
        refs.copy_from_slice(&sorted[..m]);
    }
    let side = |refs: &[PrimRef]| Side {
        bounds: bounds(refs),
        centroids: None,
    };
    Split {
        left: side(&refs[..left_count]),
        right: side(&refs[left_count..]),
        left_count,
    }
}

/// The order [`small_split`] leaves two references in. Both orders cost the same (one
/// reference per side, and the sum commutes), so the sweep keeps axis 0 and the result is
/// the order of the four stable sorts (axes 0, 1, 2, then 0 again): two-element sorts are
/// one compare-and-swap each.
#[inline(always)]
pub(super) fn order_pair(refs: &mut [PrimRef]) {
    let (a, b) = (refs[0].min() + refs[0].max(), refs[1].min() + refs[1].max());
    let (a, b) = (a.to_array(), b.to_array());
    let mut swapped = false;
    for axis in [0, 1, 2, 0] {
        let (first, second) = if swapped { (b, a) } else { (a, b) };
        if first[axis] > second[axis] {
            swapped = !swapped;
        }
    }
    if swapped {
        refs.swap(0, 1);
    }
}

/// Stable sort of `order` (indices into `keys`) by key.
///
/// Each entry goes straight to its rank: the number of entries with a smaller key, plus
/// those with an equal key before it. The comparisons run over all [`SMALL_NODE`] slots
/// without branches (the data-dependent branches of an insertion sort mispredict, and the
/// sort is a large part of the small-node split). They compare integers ordered as the
/// floats are, -0 and +0 alike, so that the ranks are always a permutation (keys are
/// centroids of finite boxes, never NaN).
#[inline(always)]
fn sort_on_keys(order: &mut [u8], keys: &[f32; SMALL_NODE]) {
    // `k + 0.0` turns -0 into +0; flipping the magnitude bits of negative values makes
    // signed integer order the float order.
    let ordered = |k: f32| {
        let bits = (k + 0.0).to_bits() as i32;
        bits ^ ((bits >> 31) as u32 >> 1) as i32
    };
    let m = order.len();
    // Keys in the current order; the unused slots get the largest integer and sit after
    // every entry, so they neither precede an entry nor tie with one before it.
    let mut current = [i32::MAX; SMALL_NODE];
    for (c, &o) in current.iter_mut().zip(order.iter()) {
        *c = ordered(keys[o as usize]);
    }
    let mut sorted = [0u8; SMALL_NODE];
    for p in 0..m {
        let key = current[p];
        let mut rank = 0u32;
        for (q, &other) in current.iter().enumerate() {
            rank += (other < key) as u32 + ((other == key) & (q < p)) as u32;
        }
        // The ranks of the m entries are 0..m; the modulo only spares the bounds check.
        sorted[rank as usize % SMALL_NODE] = order[p];
    }
    order.copy_from_slice(&sorted[..m]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::Rng;

    /// The reference small-node split: stable swap-based insertion sorts of the references
    /// themselves, axis after axis, then the best axis again; with 3 to `ONE_AXIS_MAX`
    /// references only the axis of the largest centroid extent (the first of equal ones).
    fn small_split_reference(refs: &mut [PrimRef]) -> usize {
        let key = |r: &PrimRef, axis: usize| (r.min() + r.max()).to_array()[axis];
        let sort = |refs: &mut [PrimRef], axis: usize| {
            for i in 1..refs.len() {
                let mut j = i;
                while j > 0 && key(&refs[j - 1], axis) > key(&refs[j], axis) {
                    refs.swap(j - 1, j);
                    j -= 1;
                }
            }
        };
        let m = refs.len();
        let extent = |axis: usize| {
            let keys = refs.iter().map(|r| key(r, axis));
            keys.clone().fold(f32::NEG_INFINITY, f32::max) - keys.fold(f32::INFINITY, f32::min)
        };
        let (x, y, z) = (extent(0), extent(1), extent(2));
        let axes: Vec<usize> = if !(3..=ONE_AXIS_MAX).contains(&m) {
            vec![0, 1, 2]
        } else if x >= y && x >= z {
            vec![0]
        } else if y >= z {
            vec![1]
        } else {
            vec![2]
        };
        let mut best = (f32::INFINITY, 0usize, 1usize);
        for &axis in &axes {
            sort(refs, axis);
            let mut right_area = vec![0.0f32; m];
            let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
            for i in (1..m).rev() {
                lo = lo.min(refs[i].min());
                hi = hi.max(refs[i].max());
                right_area[i] = half_area(lo, hi);
            }
            let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
            for i in 0..m - 1 {
                lo = lo.min(refs[i].min());
                hi = hi.max(refs[i].max());
                let c = half_area(lo, hi) * (i + 1) as f32 + right_area[i + 1] * (m - i - 1) as f32;
                if c < best.0 {
                    best = (c, axis, i + 1);
                }
            }
        }
        if axes.len() == 3 && best.1 != 2 {
            sort(refs, best.1);
        }
        best.2
    }

    /// The stack-key small split (and its two-reference shortcut), portable and AVX2 builds,
    /// leaves the references in the same order, with the same split, as the swap-based
    /// reference, ties included.
    #[test]
    fn small_split_matches_the_reference_order() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..20_000 {
            let m = 2 + case % (SMALL_NODE - 1);
            let refs: Vec<PrimRef> = (0..m as u32)
                .map(|prim| {
                    let a = Vec3A::new(rng.coordinate(), rng.coordinate(), rng.coordinate());
                    let e = Vec3A::new(rng.coordinate(), rng.coordinate(), rng.coordinate());
                    PrimRef::new(a, a + e, prim, 1)
                })
                .collect();
            let (mut fast, mut portable, mut slow) = (refs.clone(), refs.clone(), refs);
            // The dispatching entry (AVX2 where the CPU has it) and the portable build.
            let split = small_split(&mut fast);
            let left = split.left_count;
            let portable_split = small_split_any(&mut portable);
            assert_eq!(left, small_split_reference(&mut slow), "case {case}");
            let order = |r: &[PrimRef]| r.iter().map(|r| r.prim()).collect::<Vec<_>>();
            assert_eq!(order(&fast), order(&slow), "case {case}");
            assert_eq!(order(&portable), order(&slow), "case {case}");
            assert_eq!(split.left.bounds, bounds(&slow[..left]));
            assert_eq!(split.right.bounds, bounds(&slow[left..]));
            assert_eq!(portable_split, split, "case {case}");
        }
    }
}
