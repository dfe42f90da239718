//! The recursive build ([`build_binary`]): each node chooses its split (exact sweep for
//! small nodes, binned SAH for large ones, object median as the fallback), writes itself at
//! the front of its node range, builds its two sides (as two rayon tasks when it has at
//! least `PARALLEL_THRESHOLD` references) and returns its collapse costs to its parent.

use super::binning::{binned_split, PARALLEL_BINNING};
use super::partition::median_split;
use super::prim_ref::centroid_bounds;
use super::small::{order_pair, small_split, SMALL_NODE};
use super::{collapse_choice, half_area, leaf_costs, CollapseCosts, C_BOX};
use super::{BinaryTree, Bounds, Node2, PrimRef, Side, Split, COLLAPSE_PARALLEL, LEAF};
use glam::Vec3A;
use rayon::prelude::*;

/// Subtrees with at least this many references are split across rayon tasks.
const PARALLEL_THRESHOLD: usize = 4096;
/// Below this depth of the binary tree the split is by binned SAH; deeper (only on
/// pathological inputs) it is an object median split, which bounds the depth.
const MAX_SAH_DEPTH: u32 = 64;

/// A subtree being built: its references (reordered in place), its own range of inner
/// nodes and of subtree sizes, and where both start in the whole arrays.
struct Subtree<'a> {
    refs: &'a mut [PrimRef],
    /// Its inner nodes (`refs.len() - 1` of them): itself first.
    nodes: &'a mut [Node2],
    /// Its entries of [`BinaryTree::subtree_sizes`].
    sizes: &'a mut [[u32; 2]],
    /// Index of `refs[0]` in the whole reference array.
    first_ref: u32,
    /// Index of `nodes[0]` in the whole node array.
    base: u32,
}

/// Builds the binary tree over `refs` (reordered in place: leaf references index the
/// reordered slice). `refs` must not be empty.
///
/// On the way back up every node gets its collapse choices ([`Node2::split`]) from the
/// least SAH cost (unnormalised, area-weighted) `cost[k-1]` of its subtree when its parent
/// gives it at most `k` child slots: a leaf costs `C_TRI * triangles * area` whatever `k`;
/// an inner node either becomes a box node (`C_BOX * area` plus the best way to fill 4
/// slots with its two children) or hands `i` slots to the left child and `k - i` to the
/// right (see [`super::super::collapse`] and [`collapse_choice`]).
pub fn build_binary(refs: &mut [PrimRef]) -> BinaryTree {
    assert!(!refs.is_empty());
    let mut tree = BinaryTree::zeroed(refs.len());
    let (bounds, centroids) = root_bounds(refs);
    let (nodes, sizes) = tree.nodes_and_sizes_mut();
    let root = Subtree {
        refs,
        nodes,
        sizes,
        first_ref: 0,
        base: 0,
    };
    build_rec(root, bounds, 0, Some(centroids));
    // A single reference is emitted as a box node with one slot.
    tree.boxes = if tree.root & LEAF != 0 {
        1
    } else {
        tree.subtree_sizes[0][0]
    };
    tree
}

/// The bounds and the (doubled) centroid bounds of all references, in one pass over chunks
/// of a fixed size merged in order (min and max are exact: the same for any thread count).
fn root_bounds(refs: &[PrimRef]) -> (Bounds, Bounds) {
    let empty = [
        Vec3A::INFINITY,
        Vec3A::NEG_INFINITY,
        Vec3A::INFINITY,
        Vec3A::NEG_INFINITY,
    ];
    let merge = |a: [Vec3A; 4], b: [Vec3A; 4]| {
        [
            a[0].min(b[0]),
            a[1].max(b[1]),
            a[2].min(b[2]),
            a[3].max(b[3]),
        ]
    };
    let [min, max, cmin, cmax] = refs
        .par_chunks(PARALLEL_BINNING / 4)
        .map(|chunk| {
            chunk.iter().fold(empty, |[lo, hi, clo, chi], r| {
                let c = r.min() + r.max();
                [lo.min(r.min()), hi.max(r.max()), clo.min(c), chi.max(c)]
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .fold(empty, merge);
    ((min, max), (cmin, cmax))
}

/// Builds `sub`, whose references have the bounds `bounds` (already known) and, when the
/// parent's pass gathered them, the centroid bounds `centroids`, at `depth` in the binary
/// tree. Returns its collapse costs.
fn build_rec(sub: Subtree, bounds: Bounds, depth: u32, centroids: Option<Bounds>) -> CollapseCosts {
    let m = sub.refs.len();
    if m == 1 {
        return leaf_costs(&sub.refs[0], bounds);
    }
    debug_assert_eq!(sub.nodes.len(), m - 1);
    if m == 2 {
        return pair_node(sub, bounds);
    }
    let split = if m <= SMALL_NODE {
        small_split(sub.refs)
    } else {
        large_split(sub.refs, depth, centroids)
    };
    finish_inner(sub, bounds, depth, split)
}

/// The split of a node of more than `SMALL_NODE` references: binned SAH, or the object
/// median when all centroids coincide or the tree is deeper than `MAX_SAH_DEPTH`.
fn large_split(refs: &mut [PrimRef], depth: u32, centroids: Option<Bounds>) -> Split {
    // Centroids kept doubled: min + max.
    let (cmin, cmax) = centroids.unwrap_or_else(|| centroid_bounds(refs));
    let binned = if depth < MAX_SAH_DEPTH {
        binned_split(refs, (cmin, cmax))
    } else {
        None
    };
    binned.unwrap_or_else(|| median_split(refs, cmax - cmin))
}

/// [`build_rec`] for two references: the node [`finish_inner`] writes after the two-reference
/// [`small_split`], with its collapse costs in closed form (both children are leaves, so every
/// way of filling `k >= 2` slots costs the same sum, and the first split, 1, wins).
#[inline(always)]
fn pair_node(sub: Subtree, (min, max): Bounds) -> CollapseCosts {
    order_pair(sub.refs);
    let [l, r] = [&sub.refs[0], &sub.refs[1]].map(|x| leaf_costs(x, (x.min(), x.max())).cost[0]);
    // g: the best cost of filling k >= 2 slots with both leaves, as `finish_inner`'s search
    // finds it (a sum that is not below infinity leaves it infinite, with no split).
    let sum = l + r;
    let (g, g_split) = if sum < f32::INFINITY {
        (sum, 1u8)
    } else {
        (f32::INFINITY, 0)
    };
    let as_box = C_BOX * half_area(min, max) + g;
    let (cost, split) = if g < as_box {
        ([as_box, g, g, g], [0, g_split, g_split, g_split])
    } else {
        ([as_box; 4], [0; 4])
    };
    sub.nodes[0] = Node2 {
        min: min.to_array(),
        max: max.to_array(),
        children: [LEAF | sub.first_ref, LEAF | (sub.first_ref + 1)],
        split,
    };
    if sub.base == 0 {
        sub.sizes[0] = [1, 2];
    }
    CollapseCosts {
        cost,
        boxes: split.map(|s| (s == 0) as u32),
    }
}

/// Builds the two sides of `split` (of `sub`, with bounds `(min, max)`, at `depth`), writes
/// this node and returns its collapse costs.
fn finish_inner(sub: Subtree, (min, max): Bounds, depth: u32, split: Split) -> CollapseCosts {
    let Subtree {
        refs,
        nodes,
        sizes,
        first_ref,
        base,
    } = sub;
    let left_count = split.left_count;
    let m = refs.len();
    debug_assert!(left_count > 0 && left_count < m);

    // The left side's node range follows this node, the right side's follows the left's.
    let (this, rest) = nodes.split_at_mut(1);
    let (left_nodes, right_nodes) = rest.split_at_mut(left_count - 1);
    let (this_size, rest) = sizes.split_at_mut(1);
    let (left_sizes, right_sizes) = rest.split_at_mut(left_count - 1);
    let (left_refs, right_refs) = refs.split_at_mut(left_count);
    let left = Subtree {
        refs: left_refs,
        nodes: left_nodes,
        sizes: left_sizes,
        first_ref,
        base: base + 1,
    };
    let right = Subtree {
        refs: right_refs,
        nodes: right_nodes,
        sizes: right_sizes,
        first_ref: first_ref + left_count as u32,
        base: base + left_count as u32,
    };
    // Child references: an inner node's range, or a single reference.
    let child_reference = |side: &Subtree| {
        if side.refs.len() == 1 {
            LEAF | side.first_ref
        } else {
            side.base
        }
    };
    let children = [child_reference(&left), child_reference(&right)];
    let build_side = |side: Subtree, s: Side| {
        if side.refs.len() == 1 {
            return leaf_costs(&side.refs[0], s.bounds);
        }
        build_rec(side, s.bounds, depth + 1, s.centroids)
    };
    let (l, r) = if m >= PARALLEL_THRESHOLD {
        rayon::join(
            || build_side(left, split.left),
            || build_side(right, split.right),
        )
    } else {
        (build_side(left, split.left), build_side(right, split.right))
    };

    let choice = collapse_choice((min, max), l, r);
    this[0] = Node2 {
        min: min.to_array(),
        max: max.to_array(),
        children,
        split: choice.split,
    };
    // (The root's too: its box count sizes the collapse's output.)
    if m >= COLLAPSE_PARALLEL || base == 0 {
        this_size[0] = [choice.as_box_nodes, m as u32];
    }
    choice.costs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::prim_ref::bounds;
    use crate::bvh::build::Rng;

    /// The closed-form two-reference node equals the general path (the two-reference
    /// `small_split`, then `finish_inner`): order, node, recorded sizes, costs and box counts,
    /// on random pairs including flat, point and huge boxes (infinite and NaN costs).
    #[test]
    fn pair_node_matches_the_general_node() {
        let mut rng = Rng(0x6a09_e667_f3bc_c908);
        for case in 0..20_000 {
            let corner = |rng: &mut Rng| match rng.next() % 8 {
                0 => Vec3A::ZERO,
                1 => Vec3A::splat(3e38),
                _ => Vec3A::new(rng.coordinate(), rng.coordinate(), rng.coordinate()),
            };
            let refs: Vec<PrimRef> = (0..2u32)
                .map(|prim| {
                    let a = corner(&mut rng);
                    let e = corner(&mut rng);
                    PrimRef::new(a, a + e, prim, 1 + (rng.next() % 3) as u32)
                })
                .collect();
            let node_bounds = bounds(&refs);
            let base = (case % 2) as u32;
            let (mut fast, mut general) = (refs.clone(), refs);
            let mut fast_nodes = [Node2::default()];
            let mut fast_sizes = [[0u32; 2]];
            let fast_sub = Subtree {
                refs: &mut fast,
                nodes: &mut fast_nodes,
                sizes: &mut fast_sizes,
                first_ref: 7,
                base,
            };
            let fast_out = pair_node(fast_sub, node_bounds);
            let mut general_nodes = [Node2::default()];
            let mut general_sizes = [[0u32; 2]];
            let split = small_split(&mut general);
            let general_sub = Subtree {
                refs: &mut general,
                nodes: &mut general_nodes,
                sizes: &mut general_sizes,
                first_ref: 7,
                base,
            };
            let general_out = finish_inner(general_sub, node_bounds, 0, split);
            let order = |r: &[PrimRef]| r.iter().map(|r| r.prim()).collect::<Vec<_>>();
            assert_eq!(order(&fast), order(&general), "case {case}");
            let bits = |c: [f32; 4]| c.map(f32::to_bits);
            assert_eq!(bits(fast_out.cost), bits(general_out.cost), "case {case}");
            assert_eq!(fast_out.boxes, general_out.boxes, "case {case}");
            assert_eq!(
                bytemuck::bytes_of(&fast_nodes[0]),
                bytemuck::bytes_of(&general_nodes[0]),
                "case {case}"
            );
            assert_eq!(fast_sizes, general_sizes, "case {case}");
        }
    }
}
