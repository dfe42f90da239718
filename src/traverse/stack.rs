//! The full-stack traversal: every lane keeps a complete stack of pending nodes.
//!
//! After a box query the lane goes on with the first (nearest, when sorting is on) returned
//! child and pushes the others so that the next nearest is popped first; after a leaf it pops.
//! The stack is a buffer per lane that keeps its size between rays (it only grows, doubling,
//! when a deeper tree needs it), so the inner loop does not allocate once warmed up; pushes
//! write three entries unconditionally and advance by the number of valid ones.

use super::{is_child, Traversal};

/// Full per-lane stack (the default strategy).
#[derive(Clone, Copy, Debug, Default)]
pub struct FullStack;

/// A lane's stack: `buf[..len]` holds the pending nodes, top last.
#[derive(Clone, Debug)]
pub struct StackLane {
    buf: Vec<u32>,
    len: usize,
}

impl Default for StackLane {
    fn default() -> Self {
        StackLane {
            buf: vec![0; 64],
            len: 0,
        }
    }
}

impl StackLane {
    #[inline]
    fn pop(&mut self) -> Option<u32> {
        if self.len == 0 {
            None
        } else {
            self.len -= 1;
            Some(self.buf[self.len])
        }
    }

    #[inline]
    fn push(&mut self, v: u32) {
        if self.len == self.buf.len() {
            self.grow();
        }
        self.buf[self.len] = v;
        self.len += 1;
    }

    /// Pushes `entries[3 - n..]` (n <= 3), branch-free: each entry is stored either at its
    /// place among the kept ones or at a scratch slot past them (overwritten by a later push),
    /// so no variable-length copy is needed.
    #[inline]
    fn push_last(&mut self, entries: [u32; 3], n: usize) {
        debug_assert!(n <= 3);
        if self.len + 4 > self.buf.len() {
            self.grow();
        }
        // Invariant: len + 4 <= buf.len(), so every index below is in bounds.
        let base = self.len;
        let buf = &mut self.buf[base..base + 4];
        // entries[j] is kept iff j >= 3 - n; kept entry j goes to j - (3 - n).
        let skip = 3 - n;
        for (j, &e) in entries.iter().enumerate() {
            let slot = if j >= skip { j - skip } else { 3 };
            buf[slot] = e;
        }
        self.len += n;
    }

    #[cold]
    fn grow(&mut self) {
        let n = self.buf.len().max(16) * 2;
        self.buf.resize(n, 0);
    }
}

impl Traversal for FullStack {
    type Lane = StackLane;

    fn name(&self) -> &'static str {
        "full-stack"
    }

    #[inline]
    fn begin(&self, lane: &mut StackLane, root: u32) -> u32 {
        lane.len = 0;
        root
    }

    #[inline(always)]
    fn after_box(&self, lane: &mut StackLane, node: u32, children: [u32; 4]) -> Option<u32> {
        // Bit c set = children[c] is a child.
        let valid = (is_child(children[0]) as u32)
            | (is_child(children[1]) as u32) << 1
            | (is_child(children[2]) as u32) << 2
            | (is_child(children[3]) as u32) << 3;
        self.after_box_masked(lane, node, children, valid)
    }

    #[inline(always)]
    fn after_box_masked(
        &self,
        lane: &mut StackLane,
        _node: u32,
        children: [u32; 4],
        valid: u32,
    ) -> Option<u32> {
        // No holes = the valid slots are a prefix (valid is 0b0..01..1).
        if valid & (valid + 1) == 0 {
            // No holes (always so when sorting is on): go to children[0], push the rest so
            // that children[1] pops first.
            let n = valid.count_ones() as usize;
            if n == 0 {
                return lane.pop();
            }
            lane.push_last([children[3], children[2], children[1]], n - 1);
            return Some(children[0]);
        }
        // Unsorted results may have holes: skip invalid slots.
        let mut next = None;
        for &c in children.iter().rev() {
            if is_child(c) {
                if let Some(n) = next.replace(c) {
                    lane.push(n);
                }
            }
        }
        next.or_else(|| lane.pop())
    }

    #[inline]
    fn after_leaf(&self, lane: &mut StackLane, _node: u32) -> Option<u32> {
        lane.pop()
    }

    #[inline]
    fn stack_depth(&self, lane: &StackLane) -> usize {
        lane.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: u32 = u32::MAX;

    #[test]
    fn goes_nearest_first_and_pops_in_order() {
        let t = FullStack;
        let mut lane = StackLane::default();
        assert_eq!(t.begin(&mut lane, 5), 5);
        assert_eq!(t.after_box(&mut lane, 5, [10, 20, 30, I]), Some(10));
        assert_eq!(t.stack_depth(&lane), 2);
        assert_eq!(t.after_leaf(&mut lane, 10), Some(20));
        assert_eq!(t.after_box(&mut lane, 20, [I, I, I, I]), Some(30));
        assert_eq!(t.after_leaf(&mut lane, 30), None);
    }

    #[test]
    fn grows_past_its_initial_size() {
        let t = FullStack;
        let mut lane = StackLane::default();
        t.begin(&mut lane, 5);
        for i in 0..100u32 {
            assert_eq!(
                t.after_box(&mut lane, 5, [4 * i, 4 * i + 1, 4 * i + 2, I]),
                Some(4 * i)
            );
        }
        assert_eq!(t.stack_depth(&lane), 200);
        for i in (0..100u32).rev() {
            assert_eq!(t.after_leaf(&mut lane, 0), Some(4 * i + 1));
            assert_eq!(t.after_leaf(&mut lane, 0), Some(4 * i + 2));
        }
        assert_eq!(t.after_leaf(&mut lane, 0), None);
    }

    #[test]
    fn unsorted_holes_are_skipped() {
        let t = FullStack;
        let mut lane = StackLane::default();
        t.begin(&mut lane, 5);
        assert_eq!(t.after_box(&mut lane, 5, [I, 8, I, 9]), Some(8));
        assert_eq!(t.after_leaf(&mut lane, 8), Some(9));
        assert_eq!(t.after_leaf(&mut lane, 9), None);
    }
}
