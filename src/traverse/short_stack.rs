//! Short-stack and stackless traversals: what a lane does when it keeps only `N`
//! stack entries.
//!
//! - [`TrailStack`]: a short stack of `N` entries backed by a *restart trail* (Laine 2010,
//!   generalized to wide BVHs as in Vaidyanathan et al. 2019). The trail holds, per tree
//!   level, which child of the node on the current path is being traversed and whether it
//!   was the last one. When the stack runs dry while the trail still has unfinished levels,
//!   the lane restarts at the root and follows the trail down to the deepest unfinished
//!   level, where it takes the next child. `N = 0` is the stackless restart-trail traversal;
//!   an unbounded `N` is a plain full stack (the trail is then never used).
//! - [`WalkBack`]: a short stack of `N` entries that drops its oldest entry on overflow;
//!   on underflow after an overflow the lane walks up through parent pointers, re-runs the
//!   parent's box test and continues with the entry after the child it came from in the
//!   result (the approach of the drivers). This needs results in a deterministic order:
//!   hardware-sorted (nearest first), optionally leaf-first.
//!
//! # Child identity across re-tests
//!
//! Both strategies re-run box tests of nodes they visited before, possibly with a shorter
//! ray extent (a closer hit was found meanwhile). A child is named by its *rank* ([`rank`]):
//! its position in the sorted result (nearest first), or its slot when sorting is off; with
//! leaf-first ordering, triangle children come before box children and the rank is
//! `class * 4 + position within the class`. A shorter extent only removes children whose
//! near distance exceeds it, i.e. (sorted) the farthest ones, so the ranks of the children
//! that remain do not change. Equal near distances are the one weak point: the hardware's
//! sorting network is not stable, so two children at the same distance could swap when a
//! third one disappears. The profiler's correctness guard would report a variant that gets
//! a hit wrong this way.

use super::Traversal;
use crate::bvh::BvhImage;
use crate::hw::NodePointer;
use std::collections::VecDeque;

/// The order in which a lane visits the children a box query returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChildOrder {
    /// The descriptor's sorting bit: results come nearest first (else in slot order, with
    /// holes).
    pub sorted: bool,
    /// Visit triangle children before box children (stable within each class).
    pub leaf_first: bool,
}

/// A valid child with its rank (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranked {
    pub ptr: NodePointer,
    pub rank: u8,
}

/// The valid children of a box result in visit order, with their ranks; returns the count.
#[inline]
pub fn rank(children: [NodePointer; 4], order: ChildOrder) -> ([Ranked; 4], usize) {
    let mut out = [Ranked {
        ptr: NodePointer::INVALID,
        rank: u8::MAX,
    }; 4];
    let mut n = 0;
    let classes: &[bool] = if order.leaf_first {
        &[false, true]
    } else {
        &[false]
    };
    for (class, &want_box) in classes.iter().enumerate() {
        let mut position = 0u8;
        for (slot, &c) in children.iter().enumerate() {
            if c.is_invalid() {
                continue;
            }
            if order.leaf_first && c.is_box() != want_box {
                continue;
            }
            let within = if order.sorted { position } else { slot as u8 };
            position += 1;
            out[n] = Ranked {
                ptr: c,
                rank: class as u8 * 4 + within,
            };
            n += 1;
        }
    }
    (out, n)
}

/// Per-lane event counts a profiler collects (restarts, parent-pointer reads, dropped
/// stack entries), drained when the lane's ray is done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneEvents {
    /// Restarts from the root (trail) or walk-back steps to a parent (walk-back).
    pub restarts: u64,
    /// Parent pointers read from memory (4 bytes each).
    pub parent_reads: u64,
    /// Stack entries dropped on overflow.
    pub dropped: u64,
}

impl LaneEvents {
    pub fn merge(&mut self, other: &LaneEvents) {
        self.restarts += other.restarts;
        self.parent_reads += other.parent_reads;
        self.dropped += other.dropped;
    }
}

/// A traversal whose lanes count [`LaneEvents`].
pub trait CountedTraversal: Traversal {
    /// Takes the events counted since the last call (default: none).
    fn take_events(&self, _lane: &mut Self::Lane) -> LaneEvents {
        LaneEvents::default()
    }
}

impl CountedTraversal for super::FullStack {}

/// One pending sibling on a trail lane's short stack.
#[derive(Clone, Copy, Debug)]
struct TrailEntry {
    ptr: NodePointer,
    /// Depth of the node (its parent is at `depth - 1`).
    depth: u32,
    rank: u8,
    last: bool,
}

/// The trail bit that marks the last child of its parent.
const LAST: u8 = 0x80;

/// Short stack of `capacity` entries with a restart trail; `capacity = 0` is stackless.
#[derive(Clone, Copy, Debug)]
pub struct TrailStack {
    pub capacity: usize,
    pub order: ChildOrder,
}

/// A [`TrailStack`] lane.
#[derive(Clone, Debug, Default)]
pub struct TrailLane {
    /// Per level l: rank of the child taken at the node of depth l, `| LAST` if it was the
    /// last one. Its length is the depth of the current node.
    trail: Vec<u8>,
    /// Depth of the node the lane asked for (root = 0).
    depth: u32,
    /// During a restart: the level where the next child is taken.
    restart_to: Option<u32>,
    stack: VecDeque<TrailEntry>,
    root: NodePointer,
    events: LaneEvents,
}

impl TrailStack {
    /// Takes `list[i]` as the child at level `d` and pushes the ones after it.
    fn descend(&self, lane: &mut TrailLane, d: u32, list: &[Ranked], i: usize) -> NodePointer {
        let last = i + 1 == list.len();
        lane.trail.truncate(d as usize);
        lane.trail.push(list[i].rank | if last { LAST } else { 0 });
        self.push_siblings_after(lane, d, list, i);
        lane.depth = d + 1;
        list[i].ptr
    }

    /// Pushes the children after `list[i]` (farthest first, so the nearest pops first) as
    /// pending entries one level below `d`.
    fn push_siblings_after(&self, lane: &mut TrailLane, d: u32, list: &[Ranked], i: usize) {
        for (j, r) in list.iter().enumerate().skip(i + 1).rev() {
            self.push(
                lane,
                TrailEntry {
                    ptr: r.ptr,
                    depth: d + 1,
                    rank: r.rank,
                    last: j + 1 == list.len(),
                },
            );
        }
    }

    fn push(&self, lane: &mut TrailLane, entry: TrailEntry) {
        if self.capacity == 0 {
            lane.events.dropped += 1;
            return;
        }
        if lane.stack.len() == self.capacity {
            lane.stack.pop_front();
            lane.events.dropped += 1;
        }
        lane.stack.push_back(entry);
    }

    /// The subtree of the node at depth `done` is finished: the next node, or `None`.
    fn pop(&self, lane: &mut TrailLane, done: u32) -> Option<NodePointer> {
        lane.restart_to = None;
        if let Some(e) = lane.stack.pop_back() {
            lane.trail.truncate(e.depth as usize - 1);
            lane.trail.push(e.rank | if e.last { LAST } else { 0 });
            lane.depth = e.depth;
            return Some(e.ptr);
        }
        lane.trail.truncate(done as usize);
        // Deepest level whose child was not the last: its later siblings were dropped.
        let level = lane.trail.iter().rposition(|&t| t & LAST == 0)?;
        lane.trail.truncate(level + 1);
        lane.restart_to = Some(level as u32);
        lane.depth = 0;
        lane.events.restarts += 1;
        Some(lane.root)
    }
}

impl Traversal for TrailStack {
    type Lane = TrailLane;

    fn name(&self) -> &'static str {
        "trail-stack"
    }

    fn begin(&self, lane: &mut TrailLane, root: NodePointer) -> NodePointer {
        lane.trail.clear();
        lane.stack.clear();
        lane.depth = 0;
        lane.restart_to = None;
        lane.root = root;
        root
    }

    fn after_box(
        &self,
        lane: &mut TrailLane,
        _node: NodePointer,
        children: [NodePointer; 4],
    ) -> Option<NodePointer> {
        let (list, n) = rank(children, self.order);
        let list = &list[..n];
        let d = lane.depth;
        if let Some(l) = lane.restart_to {
            let target = lane.trail[d as usize] & !LAST;
            let found = list.iter().position(|r| r.rank == target);
            if d < l {
                if let Some(i) = found {
                    // Follow the trail; the siblings after it are pending: push them.
                    self.push_siblings_after(lane, d, list, i);
                    lane.depth = d + 1;
                    return Some(list[i].ptr);
                }
            }
            // d == l (take the next child), or the trail's child is no longer hit (its
            // subtree needs no visit): continue after `target` at this level.
            lane.restart_to = None;
            return match list.iter().position(|r| r.rank > target) {
                Some(i) => Some(self.descend(lane, d, list, i)),
                None => {
                    lane.trail.truncate(d as usize);
                    self.pop(lane, d)
                }
            };
        }
        if n == 0 {
            return self.pop(lane, d);
        }
        Some(self.descend(lane, d, list, 0))
    }

    fn after_leaf(&self, lane: &mut TrailLane, _node: NodePointer) -> Option<NodePointer> {
        let d = lane.depth;
        self.pop(lane, d)
    }

    fn stack_depth(&self, lane: &TrailLane) -> usize {
        lane.stack.len()
    }
}

impl CountedTraversal for TrailStack {
    fn take_events(&self, lane: &mut TrailLane) -> LaneEvents {
        std::mem::take(&mut lane.events)
    }
}

/// Short stack of `capacity` entries (oldest dropped on overflow) with walk-back through
/// parent pointers on underflow.
#[derive(Clone, Copy, Debug)]
pub struct WalkBack<'a> {
    pub capacity: usize,
    pub order: ChildOrder,
    /// The image whose side tables give parent pointers.
    pub image: &'a BvhImage,
}

/// A [`WalkBack`] lane.
#[derive(Clone, Debug, Default)]
pub struct WalkBackLane {
    stack: VecDeque<NodePointer>,
    /// An entry was dropped since the ray began: underflow walks back instead of ending.
    overflowed: bool,
    /// Walking back: the node whose subtree is finished (the lane asked for its parent).
    from: Option<NodePointer>,
    /// The node the walk began at: a walk back ends there (the image's root, or the node
    /// an instance's BLAS walk entered at, which may be interior with rebraiding).
    root: NodePointer,
    events: LaneEvents,
}

impl<'a> WalkBack<'a> {
    /// A walk-back traversal over `image`. Panics if the order is unsorted (the position of
    /// a child that a re-test no longer returns would be unknown).
    pub fn new(capacity: usize, order: ChildOrder, image: &'a BvhImage) -> Self {
        assert!(order.sorted, "walk-back needs sorted box results");
        WalkBack {
            capacity,
            order,
            image,
        }
    }

    fn push(&self, lane: &mut WalkBackLane, ptr: NodePointer) {
        if lane.stack.len() == self.capacity {
            lane.overflowed = true;
            lane.events.dropped += 1;
            if self.capacity == 0 {
                return;
            }
            lane.stack.pop_front();
        }
        lane.stack.push_back(ptr);
    }

    /// Goes on with `list[i]`, pushing the children after it.
    fn take(&self, lane: &mut WalkBackLane, list: &[Ranked], i: usize) -> NodePointer {
        for r in list[i + 1..].iter().rev() {
            self.push(lane, r.ptr);
        }
        list[i].ptr
    }

    /// The subtree of `done` is finished: pop, walk back, or end.
    fn next_after(&self, lane: &mut WalkBackLane, done: NodePointer) -> Option<NodePointer> {
        if let Some(p) = lane.stack.pop_back() {
            return Some(p);
        }
        if !lane.overflowed {
            return None;
        }
        self.walk_up(lane, done)
    }

    fn walk_up(&self, lane: &mut WalkBackLane, from: NodePointer) -> Option<NodePointer> {
        if from == lane.root && self.image.parent(from).is_some() {
            // An interior entry node (a rebraided instance's): the walk ends without reading
            // its parent, as GPURT compares with `lastInstanceNode` first. A root's parent is
            // read (INVALID), as on the hardware.
            return None;
        }
        lane.events.parent_reads += 1;
        let parent = self.image.parent(from)?;
        lane.events.restarts += 1;
        lane.from = Some(from);
        Some(parent)
    }
}

impl Traversal for WalkBack<'_> {
    type Lane = WalkBackLane;

    fn name(&self) -> &'static str {
        "walk-back"
    }

    fn begin(&self, lane: &mut WalkBackLane, root: NodePointer) -> NodePointer {
        lane.stack.clear();
        lane.overflowed = false;
        lane.from = None;
        lane.root = root;
        root
    }

    fn after_box(
        &self,
        lane: &mut WalkBackLane,
        node: NodePointer,
        children: [NodePointer; 4],
    ) -> Option<NodePointer> {
        let (list, n) = rank(children, self.order);
        let list = &list[..n];
        if let Some(from) = lane.from.take() {
            // Re-tested the parent of `from`: continue after it.
            let next = match list.iter().position(|r| r.ptr == from) {
                Some(i) => i + 1,
                // No longer hit: everything after it in sorted order is farther and gone
                // too; with leaf-first, a culled leaf still leaves the box children.
                None if self.order.leaf_first && !from.is_box() => {
                    list.iter().position(|r| r.ptr.is_box()).unwrap_or(n)
                }
                None => n,
            };
            return if next < n {
                Some(self.take(lane, list, next))
            } else {
                self.walk_up(lane, node)
            };
        }
        if n == 0 {
            return self.next_after(lane, node);
        }
        Some(self.take(lane, list, 0))
    }

    fn after_leaf(&self, lane: &mut WalkBackLane, node: NodePointer) -> Option<NodePointer> {
        self.next_after(lane, node)
    }

    fn stack_depth(&self, lane: &WalkBackLane) -> usize {
        lane.stack.len()
    }
}

impl CountedTraversal for WalkBack<'_> {
    fn take_events(&self, lane: &mut WalkBackLane) -> LaneEvents {
        std::mem::take(&mut lane.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::pointer::NodeType;

    const I: NodePointer = NodePointer::INVALID;

    fn boxp(a: u64) -> NodePointer {
        NodePointer::new(a, NodeType::BoxF32)
    }

    fn tri(a: u64) -> NodePointer {
        NodePointer::new(a, NodeType::Triangle0)
    }

    fn ranks(children: [NodePointer; 4], sorted: bool, leaf_first: bool) -> Vec<(NodePointer, u8)> {
        let (list, n) = rank(children, ChildOrder { sorted, leaf_first });
        list[..n].iter().map(|r| (r.ptr, r.rank)).collect()
    }

    #[test]
    fn ranks_are_sorted_positions_slots_or_class_positions() {
        let (a, b, t) = (boxp(2), boxp(4), tri(6));
        assert_eq!(ranks([a, t, I, I], true, false), vec![(a, 0), (t, 1)]);
        // Unsorted results keep holes: the rank is the slot.
        assert_eq!(ranks([I, a, I, t], false, false), vec![(a, 1), (t, 3)]);
        // Leaf-first: triangles (class 0) before boxes (class 1), each in result order.
        assert_eq!(
            ranks([a, t, b, I], true, true),
            vec![(t, 0), (a, 4), (b, 5)]
        );
    }

    #[test]
    fn stackless_trail_walks_a_small_tree_by_restarts() {
        // root -> [a (box), b (triangle)]; a -> [c, d (triangles)].
        let (root, a, b, c, d) = (boxp(0), boxp(2), tri(4), tri(5), tri(6));
        let t = TrailStack {
            capacity: 0,
            order: ChildOrder {
                sorted: true,
                leaf_first: false,
            },
        };
        let mut lane = TrailLane::default();
        assert_eq!(t.begin(&mut lane, root), root);
        assert_eq!(t.after_box(&mut lane, root, [a, b, I, I]), Some(a));
        assert_eq!(t.after_box(&mut lane, a, [c, d, I, I]), Some(c));
        // d and b were dropped: restart, follow the trail to a, take the next child d.
        assert_eq!(t.after_leaf(&mut lane, c), Some(root));
        assert_eq!(t.after_box(&mut lane, root, [a, b, I, I]), Some(a));
        assert_eq!(t.after_box(&mut lane, a, [c, d, I, I]), Some(d));
        // Level 1 is finished; restart for b at level 0.
        assert_eq!(t.after_leaf(&mut lane, d), Some(root));
        assert_eq!(t.after_box(&mut lane, root, [a, b, I, I]), Some(b));
        assert_eq!(t.after_leaf(&mut lane, b), None);
        let e = t.take_events(&mut lane);
        assert_eq!((e.restarts, e.dropped), (2, 3));
    }

    #[test]
    fn restart_skips_a_subtree_the_shorter_ray_no_longer_reaches() {
        let (root, a, b, c, d) = (boxp(0), boxp(2), tri(4), tri(5), tri(6));
        let t = TrailStack {
            capacity: 0,
            order: ChildOrder {
                sorted: true,
                leaf_first: false,
            },
        };
        let mut lane = TrailLane::default();
        t.begin(&mut lane, root);
        assert_eq!(t.after_box(&mut lane, root, [a, b, I, I]), Some(a));
        assert_eq!(t.after_box(&mut lane, a, [c, d, I, I]), Some(c));
        assert_eq!(t.after_leaf(&mut lane, c), Some(root));
        // A hit on c shortened the ray: now only a is hit at the root, and a returns only c
        // (d is farther, culled): nothing is left after c at level 1. The trail still says
        // a was not the root's last child, so one more restart finds b culled too.
        assert_eq!(t.after_box(&mut lane, root, [a, I, I, I]), Some(a));
        assert_eq!(t.after_box(&mut lane, a, [c, I, I, I]), Some(root));
        assert_eq!(t.after_box(&mut lane, root, [a, I, I, I]), None);
        assert_eq!(t.take_events(&mut lane).restarts, 2);
    }
}
