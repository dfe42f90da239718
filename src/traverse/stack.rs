//! The full-stack traversal: every lane keeps a complete stack of pending nodes.
//!
//! After a box query the lane goes on with the first (nearest, when sorting is on) returned
//! child and pushes the others so that the next nearest is popped first; after a leaf it pops.
//! The stack is a buffer per lane that keeps its size between rays (it only grows, doubling,
//! when a deeper tree needs it), so the inner loop does not allocate once warmed up; a push
//! after a sorted box result is one four-slot write.

use super::Traversal;
use crate::hw::NodePointer;
use crate::wave::isa::{Isa, Portable};

/// Full per-lane stack (the default strategy).
#[derive(Clone, Copy, Debug, Default)]
pub struct FullStack;

/// Slots kept free below the first entry, so that a push may write four slots ending at the
/// new top whatever the number of entries (see [`StackLane::push_sorted_or_pop`]).
const FLOOR: usize = 3;

/// A lane's stack: `buf[FLOOR..top]` holds the pending nodes, top last.
#[derive(Clone, Debug)]
pub struct StackLane {
    buf: Vec<NodePointer>,
    top: usize,
}

impl Default for StackLane {
    fn default() -> Self {
        StackLane {
            buf: vec![NodePointer::INVALID; 64],
            top: FLOOR,
        }
    }
}

impl StackLane {
    /// Number of entries.
    #[inline]
    fn len(&self) -> usize {
        self.top - FLOOR
    }

    #[inline]
    fn pop(&mut self) -> Option<NodePointer> {
        if self.top == FLOOR {
            None
        } else {
            self.top -= 1;
            self.buf.get(self.top).copied()
        }
    }

    #[inline]
    fn push(&mut self, v: NodePointer) {
        if self.top == self.buf.len() {
            self.grow();
        }
        self.buf[self.top] = v;
        self.top += 1;
    }

    /// Pushes `children[1..n]` so that `children[1]` is on top and goes to `children[0]`
    /// when `n >= 1`; pops when `n == 0` (`0 <= n <= 4`; entries from `n` on are INVALID, as
    /// a sorted box result has them).
    ///
    /// One four-slot vector write of the children in reverse order
    /// ([`Isa::write_reversed_prefix`]), without a branch on `n`: whether a box query hit
    /// nothing is data the CPU cannot predict. The write leaves `children[n - 1..=0]` on
    /// the slots from the old top up, and the next node is the slot at `top + n - 1`:
    /// `children[0]`, or, with `n == 0`, the entry a pop takes. The new top is `top + n - 1`
    /// in both cases.
    #[inline(always)]
    fn push_sorted_or_pop<I: Isa>(
        &mut self,
        isa: I,
        children: [NodePointer; 4],
        n: usize,
    ) -> Option<NodePointer> {
        let top = self.window(n)?;
        // SAFETY: `n <= 4`; `window` leaves `top + 4 <= buf.len()`, `top >= FLOOR = 3`, and
        // `top > FLOOR` when `n == 0`.
        let next = unsafe { isa.write_reversed_prefix(self.buf.as_mut_ptr(), top, children, n) };
        self.top = top + n - 1;
        Some(next)
    }

    /// What both push forms start with: `None` at the end of a ray (no child hit, nothing
    /// pending; one test for both), else the top, with four free slots from it up (the
    /// buffer grown if needed). After `Some`, `top > FLOOR` when `n == 0`.
    #[inline(always)]
    fn window(&mut self, n: usize) -> Option<usize> {
        debug_assert!(n <= 4);
        let top = self.top;
        if n | (top - FLOOR) == 0 {
            return None;
        }
        if top + 4 > self.buf.len() {
            self.grow();
        }
        Some(top)
    }

    #[cold]
    fn grow(&mut self) {
        let n = self.buf.len().max(16) * 2;
        self.buf.resize(n, NodePointer::INVALID);
    }
}

impl Traversal for FullStack {
    type Lane = StackLane;

    fn name(&self) -> &'static str {
        "full-stack"
    }

    #[inline]
    fn begin(&self, lane: &mut StackLane, root: NodePointer) -> NodePointer {
        lane.top = FLOOR;
        root
    }

    #[inline(always)]
    fn after_box(
        &self,
        lane: &mut StackLane,
        node: NodePointer,
        children: [NodePointer; 4],
    ) -> Option<NodePointer> {
        // Bit c set = children[c] is a child.
        let valid = (!children[0].is_invalid() as u32)
            | (!children[1].is_invalid() as u32) << 1
            | (!children[2].is_invalid() as u32) << 2
            | (!children[3].is_invalid() as u32) << 3;
        self.after_box_masked(Portable, lane, node, children, valid)
    }

    #[inline(always)]
    fn after_box_masked<I: Isa>(
        &self,
        isa: I,
        lane: &mut StackLane,
        _node: NodePointer,
        children: [NodePointer; 4],
        valid: u32,
    ) -> Option<NodePointer> {
        // No holes = the valid slots are a prefix (valid is 0b0..01..1).
        if valid & (valid + 1) == 0 {
            // No holes (always so when sorting is on): go to children[0], push the rest so
            // that children[1] pops first; with no child, pop.
            let n = valid.count_ones() as usize;
            return lane.push_sorted_or_pop(isa, children, n);
        }
        // Unsorted results may have holes: skip invalid slots.
        let mut next = None;
        for &c in children.iter().rev() {
            if !c.is_invalid() {
                if let Some(n) = next.replace(c) {
                    lane.push(n);
                }
            }
        }
        next.or_else(|| lane.pop())
    }

    #[inline]
    fn after_leaf(&self, lane: &mut StackLane, _node: NodePointer) -> Option<NodePointer> {
        lane.pop()
    }

    #[inline]
    fn stack_depth(&self, lane: &StackLane) -> usize {
        lane.len()
    }

    const SHARES_LANES: bool = true;

    #[inline]
    fn copy_lane(&self, from: &StackLane, to: &mut StackLane) {
        if to.buf.len() < from.buf.len() {
            to.buf.resize(from.buf.len(), NodePointer::INVALID);
        }
        to.buf[FLOOR..from.top].copy_from_slice(&from.buf[FLOOR..from.top]);
        to.top = from.top;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traverse::RawSteps;

    const I: u32 = u32::MAX;

    #[test]
    fn goes_nearest_first_and_pops_in_order() {
        let t = FullStack;
        let mut lane = StackLane::default();
        assert_eq!(t.begin_raw(&mut lane, 5), 5);
        assert_eq!(t.after_box_raw(&mut lane, 5, [10, 20, 30, I]), Some(10));
        assert_eq!(t.stack_depth(&lane), 2);
        assert_eq!(t.after_leaf_raw(&mut lane, 10), Some(20));
        assert_eq!(t.after_box_raw(&mut lane, 20, [I, I, I, I]), Some(30));
        assert_eq!(t.after_leaf_raw(&mut lane, 30), None);
    }

    #[test]
    fn grows_past_its_initial_size() {
        let t = FullStack;
        let mut lane = StackLane::default();
        t.begin_raw(&mut lane, 5);
        for i in 0..100u32 {
            assert_eq!(
                t.after_box_raw(&mut lane, 5, [4 * i, 4 * i + 1, 4 * i + 2, I]),
                Some(4 * i)
            );
        }
        assert_eq!(t.stack_depth(&lane), 200);
        for i in (0..100u32).rev() {
            assert_eq!(t.after_leaf_raw(&mut lane, 0), Some(4 * i + 1));
            assert_eq!(t.after_leaf_raw(&mut lane, 0), Some(4 * i + 2));
        }
        assert_eq!(t.after_leaf_raw(&mut lane, 0), None);
    }

    /// Random box results (sorted prefixes of 0-4 children, and unsorted ones with holes)
    /// and leaves against a plain `Vec` stack: the same nodes come out in the same order,
    /// through growth past the initial buffer.
    #[test]
    fn matches_a_plain_vec_stack() {
        matches_a_plain_vec_stack_with(|t, lane, children| t.after_box_raw(lane, 0, children));
    }

    /// The AVX2 build's box step (its vector stack write) against the same model.
    #[test]
    fn avx2_build_matches_a_plain_vec_stack() {
        let Some(avx2) = crate::wave::isa::Avx2::detect() else {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        };
        matches_a_plain_vec_stack_with(|t, lane, children| {
            let valid = (0..4).fold(0, |v, c| v | ((children[c] != u32::MAX) as u32) << c);
            let children = children.map(NodePointer::from_u32);
            let node = NodePointer::from_u32(0);
            t.after_box_masked(avx2, lane, node, children, valid)
                .map(NodePointer::to_u32)
        });
    }

    fn matches_a_plain_vec_stack_with(
        after_box: impl Fn(&FullStack, &mut StackLane, [u32; 4]) -> Option<u32>,
    ) {
        let t = FullStack;
        let mut lane = StackLane::default();
        let mut model: Vec<u32> = Vec::new();
        let mut state = 0x1234_5678_9abc_def0_u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        let mut id = 0u32;
        t.begin_raw(&mut lane, 0);
        for step in 0..20_000 {
            let r = next();
            let got;
            let expect;
            if r % 3 == 0 && step % 4000 > 100 {
                got = t.after_leaf_raw(&mut lane, 0);
                expect = model.pop();
            } else {
                // Deep phases (the first 100 steps of every 4000) push mostly.
                let n = (r >> 2) % 5;
                let mut children = [I; 4];
                for c in children.iter_mut().take(n as usize) {
                    id += 1;
                    *c = id;
                }
                if r & 2 != 0 && n < 4 {
                    // Unsorted: move one child into a hole.
                    children.swap(0, 3);
                }
                let valid: Vec<u32> = children.iter().copied().filter(|&c| c != I).collect();
                expect = match valid.split_first() {
                    Some((&first, rest)) => {
                        model.extend(rest.iter().rev());
                        Some(first)
                    }
                    None => model.pop(),
                };
                got = after_box(&t, &mut lane, children);
            }
            assert_eq!(got, expect, "step {step}");
            assert_eq!(t.stack_depth(&lane), model.len(), "step {step}");
            if got.is_none() {
                t.begin_raw(&mut lane, 0);
            }
        }
    }

    /// A copied lane pops what the lane it was copied from pops, for stacks of every depth
    /// up to past the initial buffer (and into a lane with a smaller buffer), whatever the
    /// copy held before.
    #[test]
    fn a_copied_lane_pops_what_its_source_pops() {
        let t = FullStack;
        for depth in 0..150u32 {
            let mut from = StackLane::default();
            t.begin_raw(&mut from, 1);
            for d in 0..depth {
                assert_eq!(t.after_box_raw(&mut from, 1, [7, 1000 + d, I, I]), Some(7));
            }
            // A stale lane: deeper or shallower than `from`, with other entries.
            let mut to = StackLane::default();
            t.begin_raw(&mut to, 1);
            for d in 0..(depth * 7) % 90 {
                t.after_box_raw(&mut to, 1, [7, 5000 + d, I, I]);
            }
            t.copy_lane(&from, &mut to);
            assert_eq!(t.stack_depth(&to), depth as usize);
            for d in (0..depth).rev() {
                assert_eq!(
                    t.after_leaf_raw(&mut to, 0),
                    Some(1000 + d),
                    "depth {depth}"
                );
            }
            assert_eq!(t.after_leaf_raw(&mut to, 0), None, "depth {depth}");
            // `from` is untouched.
            assert_eq!(t.stack_depth(&from), depth as usize);
        }
    }

    #[test]
    fn unsorted_holes_are_skipped() {
        let t = FullStack;
        let mut lane = StackLane::default();
        t.begin_raw(&mut lane, 5);
        assert_eq!(t.after_box_raw(&mut lane, 5, [I, 8, I, 9]), Some(8));
        assert_eq!(t.after_leaf_raw(&mut lane, 8), Some(9));
        assert_eq!(t.after_leaf_raw(&mut lane, 9), None);
    }
}
