//! Box nodes decoded for the vector box tests.

use crate::hw::{BoxNodeF16, BoxNodeF32, NodePointer, NodeType};
use wide::f32x4;

/// A box node re-laid out for the vector test: element c of each vector is child c.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug)]
pub struct DecodedBox {
    /// min.x, min.y, min.z of the four children (a slot with an INVALID pointer holds a
    /// copy of the first real child's bounds: see `with_order`).
    pub lo: [f32x4; 3],
    /// max.x, max.y, max.z of the four children (likewise).
    pub hi: [f32x4; 3],
    /// The four child pointers, verbatim.
    pub children: [NodePointer; 4],
    /// Node type the node was decoded from (4 or 5; another tag for an empty cache entry).
    pub ty: u32,
    /// 1 when every child has min <= max on every axis (no NaN): then, without NaN in the
    /// products, `min/max(p_lo, p_hi)` equals the sign-selected near/far plane.
    pub ordered: u32,
    /// Child slots holding a real child (pointer not INVALID), counted once at decode.
    pub useful: u32,
}

impl DecodedBox {
    /// From an FP32 box node (`semantics.md` 4.1).
    pub fn from_box32(node: &BoxNodeF32) -> DecodedBox {
        Self::from_bounds(node.children, NodeType::BoxF32, |c| node.child_box(c))
    }

    /// From an FP16 box node, each binary16 widened exactly (`semantics.md` 6.1).
    pub fn from_box16(node: &BoxNodeF16) -> DecodedBox {
        Self::from_bounds(node.children, NodeType::BoxF16, |c| node.child_box(c))
    }

    /// The node with `children` and child c's `(min, max)` corners from `child_box(c)`.
    fn from_bounds(
        children: [NodePointer; 4],
        ty: NodeType,
        child_box: impl Fn(usize) -> ([f32; 3], [f32; 3]),
    ) -> DecodedBox {
        let boxes: [([f32; 3], [f32; 3]); 4] = std::array::from_fn(child_box);
        let side = |max: bool| {
            std::array::from_fn(|a| {
                f32x4::new(std::array::from_fn(|c| {
                    let (lo, hi) = boxes[c];
                    if max {
                        hi[a]
                    } else {
                        lo[a]
                    }
                }))
            })
        };
        DecodedBox {
            lo: side(false),
            hi: side(true),
            children,
            ty: ty as u32,
            ordered: 0,
            useful: 0,
        }
        .with_order()
    }

    fn with_order(mut self) -> DecodedBox {
        // A slot whose pointer is INVALID returns INVALID whatever its bounds, and the sort
        // never reads its key (`semantics.md` 5.6, 5.7; `hw::box_test`): its bounds cannot
        // change a result. Encoders give such slots NaN or inverted bounds, which would send
        // every query of the node to the general path; a copy of the first real child's
        // bounds lets the node take the fast path whenever its real children do.
        if let Some(donor) = self.children.iter().position(|c| !c.is_invalid()) {
            let empty = self.children.map(NodePointer::is_invalid);
            for v in self.lo.iter_mut().chain(self.hi.iter_mut()) {
                let x = v.to_array();
                *v = f32x4::new(std::array::from_fn(|c| x[if empty[c] { donor } else { c }]));
            }
        }
        let ordered = (0..3).all(|a| self.lo[a].simd_le(self.hi[a]).to_bitmask() == 0xf);
        self.ordered = ordered as u32;
        self.useful = self.children.iter().filter(|c| !c.is_invalid()).count() as u32;
        self
    }

    /// Child slots that hold a real child (pointer not INVALID).
    #[inline]
    pub fn useful_slots(&self) -> u32 {
        self.useful
    }
}

#[cfg(test)]
mod tests {
    use super::super::box_query;
    use super::*;
    use crate::wave::intersect::test_rng::{random_ray, xorshift};

    /// An FP16 node laid out as the encoder writes a partly filled one (empty slots: NaN
    /// bounds, INVALID pointer) decodes to an `ordered` entry, so its queries take the fast
    /// test, and on seeded random rays `box_query` answers what the scalar reference answers
    /// on the node's own bytes, sorted and not.
    #[test]
    fn empty_slots_keep_a_node_on_the_fast_path() {
        use crate::hw::box_test::{child_boxes_f16, intersect_box_node, BoxRay};
        let nan = half::f16::NAN.to_bits();
        let h = |x: f32| half::f16::from_f32(x).to_bits();
        let mut next = xorshift(0xE4_u64);
        let mut unit = move || (next() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0;
        let mut hits = 0;
        for case in 0..4000u32 {
            // One to three real children, in any slots.
            let empty = 1 + case % 14;
            let mut node = BoxNodeF16 {
                children: [NodePointer::INVALID; 4],
                boxes: [[nan; 6]; 4],
            };
            for c in 0..4 {
                if (empty >> c) & 1 == 1 {
                    node.children[c] = NodePointer::INVALID;
                    continue;
                }
                node.children[c] = NodePointer::from_u32(0x200 + 8 * c as u32 + 5);
                for a in 0..3 {
                    let (p, q) = (unit(), unit());
                    node.boxes[c][a] = h(p.min(q));
                    node.boxes[c][3 + a] = h(p.max(q));
                }
            }
            let decoded = DecodedBox::from_box16(&node);
            assert_eq!(decoded.ordered, 1, "case {case}");
            assert_eq!(decoded.children, node.children);
            let ray = random_ray(&mut unit);
            let reference_ray = BoxRay {
                origin: ray.origin,
                inv_dir: ray.inv_dir,
                extent: ray.extent,
            };
            for sort in [false, true] {
                let expect = intersect_box_node(
                    node.children,
                    &child_boxes_f16(&node),
                    &reference_ray,
                    0,
                    sort,
                );
                let mut out = [NodePointer::INVALID; 4];
                box_query(&decoded, &ray, 1.0, sort, &mut out);
                assert_eq!(out, expect, "case {case} sort {sort}");
                hits += expect.iter().filter(|p| !p.is_invalid()).count();
            }
        }
        assert!(hits > 1000, "{hits} children hit");
    }
}
