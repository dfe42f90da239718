//! Insertion-based optimization of the binary tree, after the top-down build.
//!
//! A top-down binned SAH build chooses each split greedily and never revisits it. Moving a
//! subtree to the place in the tree where it adds the least surface area lowers the SAH cost
//! further: a variant of the insertion-based optimization of Bittner, Hapala and Havran
//! ("Fast insertion-based optimization of bounding volume hierarchies", 2013), which removes
//! a node and reinserts its two children; here the node moves with its subtree. Each round
//! ranks the inner nodes by how badly they fit (their area, against their children's mean
//! and least area) and moves each of the worst, with its subtree, to the sibling position of
//! least cost found by a branch-and-bound search from the root; a move is kept only when it
//! lowers the tree's summed area. The collapse choices ([`Node2::split`], the subtree sizes)
//! are then recomputed bottom-up.
//!
//! Sequential and deterministic: the same tree for any thread count.

use super::build::{collapse_choice, half_area, leaf_costs, BinaryTree, CollapseCosts, Node2};
use super::build::{PrimRef, COLLAPSE_PARALLEL, LEAF};
use glam::Vec3A;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No parent: the root.
const NONE: u32 = u32::MAX;
/// Rounds at most.
const MAX_ROUNDS: u32 = 32;
/// Each round tries to move this share of the inner nodes, in thousandths: those that fit
/// worst. (A tenth does as well as every node, in a tenth of the time: sponza's camera rays
/// take 22.6 TD clocks a ray after it, 23.5 after rounds over every node, 30.4 without.)
const ROUND_SHARE: usize = 100;
/// A search for a subtree's new place visits this many nodes at most (the cheapest first), so
/// that a tree of heavily overlapping boxes does not make each search a walk of the tree (a
/// soup of 20,000 such boxes: 0.15 s instead of 4.6 s; on sponza and the dragon the SAH cost
/// comes out the same as with no limit).
const SEARCH_LIMIT: u32 = 64;
/// The rounds stop when one lowers the summed inner-node area by less than this fraction.
const MIN_ROUND_GAIN: f64 = 1e-4;

struct Tree<'a> {
    nodes: &'a mut [Node2],
    refs: &'a [PrimRef],
    /// Parent of inner node i.
    parent: Vec<u32>,
    /// Parent of leaf reference r.
    leaf_parent: Vec<u32>,
    root: u32,
}

impl Tree<'_> {
    #[inline]
    fn bounds(&self, id: u32) -> (Vec3A, Vec3A) {
        if id & LEAF != 0 {
            let r = &self.refs[(id & !LEAF) as usize];
            (r.min(), r.max())
        } else {
            let n = &self.nodes[id as usize];
            (Vec3A::from(n.min), Vec3A::from(n.max))
        }
    }

    #[inline]
    fn area(&self, id: u32) -> f32 {
        let (lo, hi) = self.bounds(id);
        half_area(lo, hi)
    }

    #[inline]
    fn parent(&self, id: u32) -> u32 {
        if id & LEAF != 0 {
            self.leaf_parent[(id & !LEAF) as usize]
        } else {
            self.parent[id as usize]
        }
    }

    #[inline]
    fn set_parent(&mut self, id: u32, p: u32) {
        if id & LEAF != 0 {
            self.leaf_parent[(id & !LEAF) as usize] = p;
        } else {
            self.parent[id as usize] = p;
        }
    }

    fn replace_child(&mut self, p: u32, old: u32, new: u32) {
        let c = &mut self.nodes[p as usize].children;
        let k = (c[1] == old) as usize;
        debug_assert_eq!(c[k], old);
        c[k] = new;
    }

    /// Recomputes the bounds of `p` and its ancestors from their children; returns the change
    /// of their summed areas.
    fn refit(&mut self, mut p: u32) -> f64 {
        let mut delta = 0f64;
        while p != NONE {
            let [a, b] = self.nodes[p as usize].children;
            let (amin, amax) = self.bounds(a);
            let (bmin, bmax) = self.bounds(b);
            let (lo, hi) = (amin.min(bmin), amax.max(bmax));
            let n = &mut self.nodes[p as usize];
            let (old_lo, old_hi) = (Vec3A::from(n.min), Vec3A::from(n.max));
            if old_lo == lo && old_hi == hi {
                break;
            }
            delta += half_area(lo, hi) as f64 - half_area(old_lo, old_hi) as f64;
            n.min = lo.to_array();
            n.max = hi.to_array();
            p = self.parent[p as usize];
        }
        delta
    }

    /// The sibling position of least cost for a subtree with bounds `lo..hi`: the node `x`
    /// (not the root) minimizing the area of `x` grown by the subtree plus the growth of
    /// every ancestor of `x`. Returns `x` and that cost.
    fn best_sibling(
        &self,
        lo: Vec3A,
        hi: Vec3A,
        heap: &mut BinaryHeap<Reverse<(u32, u32)>>,
    ) -> (u32, f32) {
        let own = half_area(lo, hi);
        let (mut best, mut best_cost) = (NONE, f32::INFINITY);
        heap.clear();
        // Costs are non-negative, so their bits order as the values do.
        heap.push(Reverse((0f32.to_bits(), self.root)));
        let mut visits = 0;
        while let Some(Reverse((induced, x))) = heap.pop() {
            visits += 1;
            if visits > SEARCH_LIMIT {
                break;
            }
            let induced = f32::from_bits(induced);
            if induced + own >= best_cost {
                break;
            }
            let (xlo, xhi) = self.bounds(x);
            let grown = half_area(xlo.min(lo), xhi.max(hi));
            if x != self.root && induced + grown < best_cost {
                best = x;
                best_cost = induced + grown;
            }
            if x & LEAF == 0 {
                let below = induced + (grown - half_area(xlo, xhi)).max(0.0);
                if below + own < best_cost {
                    for c in self.nodes[x as usize].children {
                        heap.push(Reverse((below.to_bits(), c)));
                    }
                }
            }
        }
        (best, best_cost)
    }

    /// Tries to move inner node `n` (with its subtree) elsewhere; returns the change of the
    /// tree's summed inner-node area (negative when kept, 0 when put back).
    fn reinsert(&mut self, n: u32, heap: &mut BinaryHeap<Reverse<(u32, u32)>>) -> f64 {
        let p = self.parent(n);
        if p == NONE || p == self.root {
            return 0.0;
        }
        let g = self.parent[p as usize];
        let [c0, c1] = self.nodes[p as usize].children;
        let (sibling, n_first) = if c0 == n { (c1, true) } else { (c0, false) };
        // Detach: the sibling takes the parent's place; the parent node is free.
        let removed_area = self.area(p) as f64;
        self.replace_child(g, p, sibling);
        self.set_parent(sibling, g);
        let mut delta = -removed_area + self.refit(g);
        let (lo, hi) = self.bounds(n);
        let (x, cost) = self.best_sibling(lo, hi, heap);
        // Put back where it was unless the best place is strictly better.
        let (x, keep) = if x != NONE && (delta + cost as f64) < -1e-6 * removed_area {
            (x, true)
        } else {
            (sibling, false)
        };
        let xp = self.parent(x);
        self.replace_child(xp, x, p);
        let (xlo, xhi) = self.bounds(x);
        let node = &mut self.nodes[p as usize];
        node.children = if keep || !n_first { [x, n] } else { [n, x] };
        node.min = xlo.min(lo).to_array();
        node.max = xhi.max(hi).to_array();
        self.parent[p as usize] = xp;
        self.set_parent(x, p);
        self.set_parent(n, p);
        delta += half_area(xlo.min(lo), xhi.max(hi)) as f64 + self.refit(xp);
        if keep {
            delta
        } else {
            0.0
        }
    }
}

/// Optimizes `tree` (over `refs`) by reinsertion and recomputes its collapse choices. Returns
/// the summed surface area (half areas) of the inner nodes before and after.
pub fn optimize(tree: &mut BinaryTree, refs: &[PrimRef]) -> (f64, f64) {
    let root = tree.root;
    if root & LEAF != 0 {
        return (0.0, 0.0);
    }
    let inner = tree.nodes().len();
    let mut t = Tree {
        nodes: tree.nodes_mut(),
        refs,
        parent: vec![NONE; inner],
        leaf_parent: vec![NONE; refs.len()],
        root,
    };
    for i in 0..inner as u32 {
        for c in t.nodes[i as usize].children {
            t.set_parent(c, i);
        }
    }
    let before: f64 = (0..inner as u32).map(|i| t.area(i) as f64).sum();
    let mut total = before;
    let mut heap = BinaryHeap::new();
    let mut ranked: Vec<(f32, u32)> = Vec::with_capacity(inner);
    for _ in 0..MAX_ROUNDS {
        // Rank by area x (area / mean child area) x (area / least child area).
        ranked.clear();
        for i in 0..inner as u32 {
            let [a, b] = t.nodes[i as usize].children;
            let (s, sa, sb) = (t.area(i), t.area(a), t.area(b));
            let m = s
                * (2.0 * s / (sa + sb).max(f32::MIN_POSITIVE))
                * (s / sa.min(sb).max(f32::MIN_POSITIVE));
            ranked.push((m, i));
        }
        let take = (inner * ROUND_SHARE / 1000).max(1);
        ranked.select_nth_unstable_by(take - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked[..take].sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut gain = 0f64;
        for &(_, n) in &ranked[..take] {
            gain += t.reinsert(n, &mut heap);
        }
        total += gain;
        if -gain < MIN_ROUND_GAIN * total {
            break;
        }
    }
    let after: f64 = (0..inner as u32).map(|i| t.area(i) as f64).sum();
    recompute_collapse(tree, refs);
    (before, after)
}

/// Recomputes every inner node's collapse choices, the subtree sizes and the box count of
/// `tree` bottom-up (as [`super::build::build_binary`] computes them on its way up).
fn recompute_collapse(tree: &mut BinaryTree, refs: &[PrimRef]) {
    let root = tree.root;
    let mut sizes = vec![[0u32; 2]; tree.nodes().len()];
    let nodes = tree.nodes_mut();
    // (collapse costs, references) per inner node, filled in post-order.
    let unset = CollapseCosts {
        cost: [0.0; 4],
        boxes: [0; 4],
    };
    let mut done: Vec<(CollapseCosts, u32)> = vec![(unset, 0); nodes.len()];
    let of = |id: u32, done: &[(CollapseCosts, u32)]| {
        if id & LEAF != 0 {
            let r = &refs[(id & !LEAF) as usize];
            (leaf_costs(r, (r.min(), r.max())), 1u32)
        } else {
            done[id as usize]
        }
    };
    let mut stack = vec![(root, false)];
    while let Some((n, expanded)) = stack.pop() {
        let [a, b] = nodes[n as usize].children;
        if !expanded {
            stack.push((n, true));
            for c in [b, a] {
                if c & LEAF == 0 {
                    stack.push((c, false));
                }
            }
            continue;
        }
        let (l, lm) = of(a, &done);
        let (r, rm) = of(b, &done);
        let node = &mut nodes[n as usize];
        let bounds = (Vec3A::from(node.min), Vec3A::from(node.max));
        let choice = collapse_choice(bounds, l, r);
        node.split = choice.split;
        let m = lm + rm;
        if m as usize >= COLLAPSE_PARALLEL || n == root {
            sizes[n as usize] = [choice.as_box_nodes, m];
        }
        done[n as usize] = (choice.costs, m);
    }
    tree.boxes = sizes[root as usize][0];
    tree.subtree_sizes = sizes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::build_binary;

    /// Seeded triangle boxes of sizes over three orders of magnitude, some long and thin (the
    /// mix on which a top-down binned build leaves room for moves).
    fn mixed_refs(seed: u64, n: usize) -> Vec<PrimRef> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n as u32)
            .map(|i| {
                let c = Vec3A::new(next(), next(), next()) * 100.0;
                let size = 10f32.powf(3.0 * next() - 1.0);
                let mut e = Vec3A::new(next(), next(), next()) * size;
                if i % 7 == 0 {
                    e.x *= 50.0;
                }
                PrimRef::new(c - e, c + e, i, 1)
            })
            .collect()
    }

    /// Walks the tree from the root: every reference reached once, every inner node's box the
    /// exact union of its children's. Returns the summed half area of the inner nodes.
    fn checked_area(tree: &BinaryTree, refs: &[PrimRef]) -> f64 {
        fn walk(
            id: u32,
            tree: &BinaryTree,
            refs: &[PrimRef],
            seen: &mut [bool],
            inner: &mut [bool],
            area: &mut f64,
        ) -> (Vec3A, Vec3A) {
            if id & LEAF != 0 {
                let r = (id & !LEAF) as usize;
                assert!(!seen[r], "reference {r} reached twice");
                seen[r] = true;
                return (refs[r].min(), refs[r].max());
            }
            assert!(!inner[id as usize], "inner node {id} reached twice");
            inner[id as usize] = true;
            let n = tree.nodes()[id as usize];
            let (a, b) = (n.children[0], n.children[1]);
            let (alo, ahi) = walk(a, tree, refs, seen, inner, area);
            let (blo, bhi) = walk(b, tree, refs, seen, inner, area);
            let (lo, hi) = (alo.min(blo), ahi.max(bhi));
            assert_eq!((n.min, n.max), (lo.to_array(), hi.to_array()), "node {id}");
            *area += half_area(lo, hi) as f64;
            (lo, hi)
        }
        let mut seen = vec![false; refs.len()];
        let mut inner = vec![false; tree.nodes().len()];
        let mut area = 0.0;
        walk(tree.root, tree, refs, &mut seen, &mut inner, &mut area);
        assert!(seen.iter().all(|&s| s), "a reference is not reachable");
        assert!(inner.iter().all(|&s| s), "an inner node is not reachable");
        area
    }

    #[test]
    fn recomputed_collapse_choices_are_the_builds() {
        for (seed, n) in [(1, 2), (2, 3), (3, 40), (4, 3000), (5, 9000)] {
            let mut refs = mixed_refs(seed, n);
            let mut tree = build_binary(&mut refs);
            let splits: Vec<[u8; 4]> = tree.nodes().iter().map(|n| n.split).collect();
            let (sizes, boxes) = (tree.subtree_sizes.clone(), tree.boxes);
            for n in tree.nodes_mut() {
                n.split = [9; 4];
            }
            tree.subtree_sizes.fill([7, 7]);
            recompute_collapse(&mut tree, &refs);
            let again: Vec<[u8; 4]> = tree.nodes().iter().map(|n| n.split).collect();
            assert_eq!(again, splits, "{n} references");
            assert_eq!(tree.subtree_sizes, sizes, "{n} references");
            assert_eq!(tree.boxes, boxes, "{n} references");
        }
    }

    #[test]
    fn moves_lower_the_area_and_keep_a_well_formed_tree() {
        for (seed, n) in [(11, 3), (12, 50), (13, 5000), (14, 20000)] {
            let mut refs = mixed_refs(seed, n);
            let mut tree = build_binary(&mut refs);
            let start = checked_area(&tree, &refs);
            let (before, after) = optimize(&mut tree, &refs);
            let end = checked_area(&tree, &refs);
            assert!((before - start).abs() <= 1e-9 * start, "{before} {start}");
            assert!((after - end).abs() <= 1e-9 * end, "{after} {end}");
            assert!(end <= start, "{n}: {start} -> {end}");
            if n >= 5000 {
                // The greedy build leaves room on this mix: at least 1 % of the area goes.
                assert!(end < 0.99 * start, "{n}: {start} -> {end}");
            }
            // The collapse choices are those of the new tree.
            let splits: Vec<[u8; 4]> = tree.nodes().iter().map(|n| n.split).collect();
            recompute_collapse(&mut tree, &refs);
            assert!(tree.nodes().iter().map(|n| n.split).eq(splits));
        }
    }
}
