//! The full-stack traversal: every lane keeps a complete stack of pending nodes.
//!
//! After a box query the lane goes on with the first (nearest, when sorting is on) returned
//! child and pushes the others so that the next nearest is popped first; after a leaf it pops.
//! The stack lives in a `Vec` per lane that keeps its capacity between rays, so the inner loop
//! does not allocate once warmed up.

use super::{is_child, Traversal};

/// Full per-lane stack (the default strategy).
#[derive(Clone, Copy, Debug, Default)]
pub struct FullStack;

/// A lane's stack.
#[derive(Clone, Debug, Default)]
pub struct StackLane {
    stack: Vec<u32>,
}

impl Traversal for FullStack {
    type Lane = StackLane;

    fn name(&self) -> &'static str {
        "full-stack"
    }

    #[inline]
    fn begin(&self, lane: &mut StackLane, root: u32) -> u32 {
        lane.stack.clear();
        root
    }

    #[inline]
    fn after_box(&self, lane: &mut StackLane, _node: u32, children: [u32; 4]) -> Option<u32> {
        let valid = children.map(is_child);
        let n = valid.iter().filter(|&&v| v).count();
        if valid[..n].iter().all(|&v| v) {
            // No holes (always so when sorting is on): go to children[0], push the rest so
            // that children[1] pops first.
            if n == 0 {
                return lane.stack.pop();
            }
            let reversed = [children[3], children[2], children[1]];
            lane.stack.extend_from_slice(&reversed[4 - n..]);
            return Some(children[0]);
        }
        // Unsorted results may have holes: skip invalid slots.
        let mut next = None;
        for &c in children.iter().rev() {
            if is_child(c) {
                if let Some(n) = next.replace(c) {
                    lane.stack.push(n);
                }
            }
        }
        next.or_else(|| lane.stack.pop())
    }

    #[inline]
    fn after_leaf(&self, lane: &mut StackLane, _node: u32) -> Option<u32> {
        lane.stack.pop()
    }

    #[inline]
    fn stack_depth(&self, lane: &StackLane) -> usize {
        lane.stack.len()
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
    fn unsorted_holes_are_skipped() {
        let t = FullStack;
        let mut lane = StackLane::default();
        t.begin(&mut lane, 5);
        assert_eq!(t.after_box(&mut lane, 5, [I, 8, I, 9]), Some(8));
        assert_eq!(t.after_leaf(&mut lane, 8), Some(9));
        assert_eq!(t.after_leaf(&mut lane, 9), None);
    }
}
