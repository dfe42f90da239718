//! The ray/box test of a box node and the sorting network (`semantics.md` 5, 6 and the
//! "box math", "box grow", "sort" and "child pointers" rows of section 12).
//!
//! All arithmetic is f32 with one rounding per operation (no `mul_add`). Min/max are the
//! NaN-ignoring IEEE-754-2008 `minNum`/`maxNum` ([`min_num`], [`max_num`]): a SIMD twin must
//! reproduce them explicitly, because x86 `minps`/`maxps` return the second operand on NaN.

use super::node::{BoxNodeF16, BoxNodeF32};
use super::pointer::NodePointer;

/// IEEE-754-2008 `minNum`: if exactly one operand is NaN the other is returned
/// (`semantics.md` 5.1 step 3). Which zero `min(-0, +0)` returns is not observable in the box
/// test (keys are only compared, and `-0 == +0`).
#[inline]
pub fn min_num(a: f32, b: f32) -> f32 {
    // `f32::min` is documented as NaN-ignoring.
    a.min(b)
}

/// IEEE-754-2008 `maxNum`: if exactly one operand is NaN the other is returned.
#[inline]
pub fn max_num(a: f32, b: f32) -> f32 {
    a.max(b)
}

/// The f32 factor `1 + G * 2^-24` the clamped far distance is multiplied by
/// (`semantics.md` 5.2): `G * 2^-24` is exact, the addition rounds to nearest even, so
/// G = 1 gives exactly 1.0, G = 3..=5 give `1 + 4 * 2^-24`, G = 6 gives `1 + 6 * 2^-24`.
#[inline]
pub fn grow_factor(box_grow_ulps: u8) -> f32 {
    // 2^-24 as an exact f32 constant.
    const TWO_POW_MINUS_24: f32 = 1.0 / 16_777_216.0;
    1.0f32 + (box_grow_ulps as f32) * TWO_POW_MINUS_24
}

/// The entry/exit distances of one child after clamping, and the verdict.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxTest {
    /// `max(tnear_raw, 0)`: the sort key of a hit child.
    pub tnear: f32,
    /// `min(tfar_raw, extent)`, before the grow factor is applied.
    pub tfar: f32,
    /// `tnear <= tfar * grow`, and neither raw distance was NaN.
    pub hit: bool,
}

/// Tests one box against a ray (`semantics.md` 5.1):
///
/// 1. per axis `p_lo = (min - o) * r`, `p_hi = (max - o) * r`, each op rounded;
/// 2. `r >= 0` (true for -0) keeps (lo, hi) as (near, far), else they swap;
/// 3. `tnear_raw = maxNum` of the three nears, `tfar_raw = minNum` of the three fars;
/// 4. a NaN raw distance (all three candidates NaN) misses;
/// 5. clamp to `[0, extent]`;
/// 6. hit iff `tnear <= tfar * grow` ([`grow_factor`]).
///
/// Only `inv_dir` is used, never the direction (5.8).
#[inline]
pub fn intersect_box(
    min: [f32; 3],
    max: [f32; 3],
    origin: [f32; 3],
    inv_dir: [f32; 3],
    extent: f32,
    grow: f32,
) -> BoxTest {
    let mut near = [0.0f32; 3];
    let mut far = [0.0f32; 3];
    for a in 0..3 {
        let p_lo = (min[a] - origin[a]) * inv_dir[a];
        let p_hi = (max[a] - origin[a]) * inv_dir[a];
        if inv_dir[a] >= 0.0 {
            near[a] = p_lo;
            far[a] = p_hi;
        } else {
            // Also taken for a NaN inverse direction (the comparison is false).
            near[a] = p_hi;
            far[a] = p_lo;
        }
    }
    let tnear_raw = max_num(max_num(near[0], near[1]), near[2]);
    let tfar_raw = min_num(min_num(far[0], far[1]), far[2]);
    let tnear = max_num(tnear_raw, 0.0);
    let tfar = min_num(tfar_raw, extent);
    let hit = !tnear_raw.is_nan() && !tfar_raw.is_nan() && tnear <= tfar * grow;
    BoxTest { tnear, tfar, hit }
}

/// The ray inputs of a box test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxRay {
    pub origin: [f32; 3],
    pub inv_dir: [f32; 3],
    pub extent: f32,
}

/// The four child boxes of a box node, widened to f32, as `(min, max)` per child.
pub type ChildBoxes = [([f32; 3], [f32; 3]); 4];

/// The children of an FP32 box node.
pub fn child_boxes_f32(node: &BoxNodeF32) -> ChildBoxes {
    std::array::from_fn(|i| node.child_box(i))
}

/// The children of an FP16 box node, each binary16 widened exactly (`semantics.md` 6.1).
pub fn child_boxes_f16(node: &BoxNodeF16) -> ChildBoxes {
    std::array::from_fn(|i| node.child_box(i))
}

/// The whole box-node operation on decoded data: the four child tests, misses replaced by
/// [`NodePointer::INVALID`], then (if `sort`) the sorting network. Child pointers of hits are
/// returned verbatim (`semantics.md` 5.5, 5.6).
pub fn intersect_box_node(
    children: [NodePointer; 4],
    boxes: &ChildBoxes,
    ray: &BoxRay,
    box_grow_ulps: u8,
    sort: bool,
) -> [NodePointer; 4] {
    let grow = grow_factor(box_grow_ulps);
    let mut pointers = [NodePointer::INVALID; 4];
    let mut keys = [0.0f32; 4];
    for i in 0..4 {
        let (min, max) = boxes[i];
        let t = intersect_box(min, max, ray.origin, ray.inv_dir, ray.extent, grow);
        if t.hit {
            pointers[i] = children[i];
        }
        keys[i] = t.tnear;
    }
    if sort {
        sort_children(pointers, keys)
    } else {
        pointers
    }
}

/// The five comparator pairs of the sorting network, in order (`semantics.md` 5.7).
pub const SORT_NETWORK: [(usize, usize); 5] = [(0, 2), (1, 3), (0, 1), (2, 3), (1, 2)];

/// Sorts hit children nearest first with the hardware's network (`semantics.md` 5.7):
/// comparators [`SORT_NETWORK`], each swapping slots (a, b) iff
/// slot a holds [`NodePointer::INVALID`] or (slot b is valid and `key[b] < key[a]`, strict).
/// INVALID pointers therefore compare as larger than everything and end up last; keys of
/// INVALID slots are never looked at. The network is not stable: equal keys can reorder.
pub fn sort_children(mut pointers: [NodePointer; 4], mut keys: [f32; 4]) -> [NodePointer; 4] {
    for &(a, b) in &SORT_NETWORK {
        let a_invalid = pointers[a].is_invalid();
        let b_valid = !pointers[b].is_invalid();
        if a_invalid || (b_valid && keys[b] < keys[a]) {
            pointers.swap(a, b);
            keys.swap(a, b);
        }
    }
    pointers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grow_factor_values_from_the_spec() {
        let ulp24 = 2f32.powi(-24);
        assert_eq!(grow_factor(0), 1.0);
        assert_eq!(grow_factor(1), 1.0);
        assert_eq!(grow_factor(2), 1.0 + 2.0 * ulp24);
        for g in 3..=5 {
            assert_eq!(grow_factor(g), 1.0 + 4.0 * ulp24, "G = {g}");
        }
        assert_eq!(grow_factor(6), 1.0 + 6.0 * ulp24);
        assert_eq!(grow_factor(7), 1.0 + 8.0 * ulp24);
        assert_eq!(grow_factor(8), 1.0 + 8.0 * ulp24);
    }

    #[test]
    fn min_max_ignore_nan() {
        assert_eq!(min_num(f32::NAN, 2.0), 2.0);
        assert_eq!(min_num(2.0, f32::NAN), 2.0);
        assert_eq!(max_num(f32::NAN, -3.0), -3.0);
        assert_eq!(max_num(-3.0, f32::NAN), -3.0);
        assert!(max_num(f32::NAN, f32::NAN).is_nan());
    }

    #[test]
    fn unit_box_hit_and_miss() {
        let o = [-1.0, 0.5, 0.5];
        let r = [1.0, f32::INFINITY, f32::INFINITY];
        let t = intersect_box([0.0; 3], [1.0; 3], o, r, f32::INFINITY, 1.0);
        assert!(t.hit);
        assert_eq!((t.tnear, t.tfar), (1.0, 2.0));
        let t = intersect_box([0.0; 3], [1.0; 3], o, r, 0.5, 1.0);
        assert!(!t.hit);
    }
}
