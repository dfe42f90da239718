//! The memory layout of the image ([`Layout`]): the 64-byte block of every box node and
//! triangle node, their memory order, and the per-block and per-slot side tables (triangle
//! node ordinals, parent pointers).
//!
//! The root is box node 0 at block 0; a box node is followed by the triangle nodes its
//! slots open, in slot order. Depth-first order is computed in parallel over fixed runs of
//! box nodes placed by prefix sums ([`layout_depth_first`]), breadth-first by a serial walk
//! ([`layout_serial`], which also computes depth-first order for the tests): the same
//! layout for any thread count.

use super::packing::Packing;
use crate::bvh::collapse::{Slot, Tree4, NO_PARENT};
use crate::bvh::NodeOrder;
use crate::hw::{NodePointer, NodeType};
use rayon::prelude::*;
use std::collections::VecDeque;

/// Marks a triangle node (pack ordinal) in [`Layout::order`]; box nodes are plain indices.
pub(super) const PACK_ITEM: u32 = 1 << 31;

/// Most 64-byte blocks of one treelet of [`NodeOrder::Treelets`] (2 KB: sixteen 128-byte
/// cache lines).
pub const TREELET_BLOCKS: usize = 32;

/// Box nodes per task of [`layout_depth_first`].
const LAYOUT_CHUNK: usize = 4096;

/// The memory layout of the image: the block of every box node and triangle node, the
/// memory order and the per-block and per-slot side tables.
#[derive(Debug, PartialEq)]
pub(super) struct Layout {
    /// Per box node: its first block.
    pub node_block: Vec<u32>,
    /// Per triangle node (pack ordinal): its block.
    pub pack_block: Vec<u32>,
    /// Box nodes (n) and triangle nodes (`PACK_ITEM | o`) in memory order.
    pub order: Vec<u32>,
    /// [`BvhImage::triangle_node_ordinal`](crate::bvh::BvhImage::triangle_node_ordinal).
    pub triangle_node_ordinal: Vec<u32>,
    /// [`BvhImage::box_parent`](crate::bvh::BvhImage::box_parent).
    pub box_parent: Vec<NodePointer>,
    /// [`BvhImage::slot_parent`](crate::bvh::BvhImage::slot_parent).
    pub slot_parent: Vec<NodePointer>,
    /// Blocks in all (may exceed the 29-bit pointer range: checked by the caller).
    pub blocks: u64,
    /// Box-node levels on the longest root-to-leaf path.
    pub max_depth: usize,
    /// Used child slots of all box nodes.
    pub box_slots_used: usize,
}

/// What the layout is computed from: the tree, its packed triangle nodes, each box node's
/// format (`fp16[n]`), and whether leaves are leaf chains (a chain's pointer stands for
/// slots `0..=k` of its triangle node).
#[derive(Clone, Copy)]
pub(super) struct LayoutInput<'a> {
    pub tree: &'a Tree4,
    pub packs: &'a Packing,
    pub fp16: &'a [bool],
    pub chains: bool,
}

impl LayoutInput<'_> {
    /// Blocks of box node `n` (an FP32 node takes two).
    #[inline]
    fn own_blocks(&self, n: usize) -> usize {
        if self.fp16[n] {
            1
        } else {
            2
        }
    }

    /// Triangle nodes opened by the leaves of box node `n`: a node is placed where its
    /// first leaf (slot 0, or its only leaf with leaf chains) is met.
    fn opened(&self, n: usize) -> usize {
        self.tree.nodes[n]
            .slots
            .iter()
            .filter(|s| match s {
                Some(Slot::Leaf(l)) => self.chains || self.packs.place(*l).1 == 0,
                _ => false,
            })
            .count()
    }

    /// The triangle slots `(pack ordinal, k)` a leaf's pointer stands for: its own slot, or
    /// slots `0..=k` of a leaf chain.
    #[inline]
    fn leaf_slots(&self, l: u32) -> (usize, std::ops::RangeInclusive<usize>) {
        let (p, k) = self.packs.place(l);
        let first = if self.chains { 0 } else { k };
        (p as usize, first as usize..=k as usize)
    }
}

/// The box node type of a node in format `fp16`.
pub(super) fn box_type(fp16: bool) -> NodeType {
    if fp16 {
        NodeType::BoxF16
    } else {
        NodeType::BoxF32
    }
}

/// A pointer, or INVALID past the 29-bit limit (reported once the layout is done).
fn pointer(block: u64, ty: NodeType) -> NodePointer {
    if block < 1 << 29 {
        NodePointer::new(block, ty)
    } else {
        NodePointer::INVALID
    }
}

/// The layout by a walk of the tree (a stack for depth-first order, a queue for
/// breadth-first), one node after the other: a box node, then the triangle nodes its slots
/// open, in slot order.
pub(super) fn layout_serial(input: &LayoutInput, node_order: NodeOrder) -> Layout {
    const UNPLACED: u32 = u32::MAX;
    let LayoutInput {
        tree, packs, fp16, ..
    } = *input;
    let mut node_block = vec![UNPLACED; tree.nodes.len()];
    let mut pack_block = vec![UNPLACED; packs.len()];
    let mut next_block: u64 = 0;
    let mut order: Vec<u32> = Vec::with_capacity(tree.nodes.len() + packs.len());
    let estimate = tree.nodes.len() + packs.len();
    let mut triangle_node_ordinal: Vec<u32> = Vec::with_capacity(estimate);
    let mut box_parent: Vec<NodePointer> = Vec::with_capacity(estimate);
    let mut slot_parent = vec![NodePointer::INVALID; 4 * packs.len()];
    let (mut max_depth, mut box_slots_used) = (0, 0);
    // Places box node n (with its parent's pointer and its depth); returns its pointer.
    let mut place_node = |n: usize, parent: NodePointer, depth: u32| {
        node_block[n] = next_block as u32;
        let here = pointer(next_block, box_type(fp16[n]));
        order.push(n as u32);
        box_parent.push(parent);
        triangle_node_ordinal.push(u32::MAX);
        if !fp16[n] {
            box_parent.push(NodePointer::INVALID);
            triangle_node_ordinal.push(u32::MAX);
        }
        next_block += input.own_blocks(n) as u64;
        max_depth = max_depth.max(depth as usize);
        for slot in tree.nodes[n].slots.iter().flatten() {
            box_slots_used += 1;
            if let Slot::Leaf(l) = *slot {
                let (p, slots) = input.leaf_slots(l);
                for j in slots {
                    slot_parent[4 * p + j] = here;
                }
                if pack_block[p] == UNPLACED {
                    pack_block[p] = next_block as u32;
                    order.push(PACK_ITEM | p as u32);
                    box_parent.push(NodePointer::INVALID);
                    triangle_node_ordinal.push(p as u32);
                    next_block += 1;
                }
            }
        }
        here
    };
    match node_order {
        NodeOrder::DepthFirst => {
            let mut stack = vec![(0usize, NodePointer::INVALID, 1u32)];
            while let Some((n, parent, depth)) = stack.pop() {
                let here = place_node(n, parent, depth);
                for slot in tree.nodes[n].slots.iter().rev().flatten() {
                    if let Slot::Node(c) = *slot {
                        stack.push((c as usize, here, depth + 1));
                    }
                }
            }
        }
        NodeOrder::Treelets => {
            // Treelet roots, popped in depth-first order; each treelet filled level by
            // level while its blocks (box nodes and the triangle nodes they open) fit.
            let mut roots = vec![(0usize, NodePointer::INVALID, 1u32)];
            while let Some(root) = roots.pop() {
                let mut reserved = input.own_blocks(root.0) + input.opened(root.0);
                let mut queue = VecDeque::from([root]);
                let mut spilled = Vec::new();
                while let Some((n, parent, depth)) = queue.pop_front() {
                    let here = place_node(n, parent, depth);
                    for slot in tree.nodes[n].slots.iter().flatten() {
                        if let Slot::Node(c) = *slot {
                            let c = c as usize;
                            let cost = input.own_blocks(c) + input.opened(c);
                            if reserved + cost <= TREELET_BLOCKS {
                                reserved += cost;
                                queue.push_back((c, here, depth + 1));
                            } else {
                                spilled.push((c, here, depth + 1));
                            }
                        }
                    }
                }
                roots.extend(spilled.into_iter().rev());
            }
        }
        NodeOrder::BreadthFirst => {
            let mut queue = VecDeque::from([(0usize, NodePointer::INVALID, 1u32)]);
            while let Some((n, parent, depth)) = queue.pop_front() {
                let here = place_node(n, parent, depth);
                for slot in tree.nodes[n].slots.iter().flatten() {
                    if let Slot::Node(c) = *slot {
                        queue.push_back((c as usize, here, depth + 1));
                    }
                }
            }
        }
    }
    Layout {
        node_block,
        pack_block,
        order,
        triangle_node_ordinal,
        box_parent,
        slot_parent,
        blocks: next_block,
        max_depth,
        box_slots_used,
    }
}

/// Where a run of [`LAYOUT_CHUNK`] box nodes starts: its first block and first triangle
/// node (pack ordinal).
#[derive(Clone, Copy, Default)]
struct RunStart {
    block: usize,
    pack: usize,
}

/// One run of box nodes of [`layout_depth_first`], with the ranges of the outputs it owns.
struct RunOutput<'a> {
    first_node: usize,
    start: RunStart,
    pack_block: &'a mut [u32],
    order: &'a mut [u32],
    triangle_node_ordinal: &'a mut [u32],
    box_parent: &'a mut [NodePointer],
    slot_parent: &'a mut [NodePointer],
}

/// What a run of [`layout_depth_first`] measured, and the slot parents it could not write
/// itself: `(4 * o + k, parent)` for triangle slots of nodes an earlier run opened.
#[derive(Default)]
struct RunSummary {
    max_depth: usize,
    box_slots_used: usize,
    spilled: Vec<(usize, NodePointer)>,
}

/// The depth-first layout of [`layout_serial`], computed in parallel over runs of box nodes.
///
/// The collapse emits box nodes in depth-first pre-order with children in slot order, and
/// leaves in the order their slots are met on that walk; a triangle node is placed where
/// its first leaf (slot 0, or its only leaf with leaf chains) is met, and packs are numbered
/// in that order. So box node n starts at block `n + (FP32 nodes before n) + (packs opened
/// by leaves of nodes before n)`, its packs follow it in ordinal order, and prefix sums over
/// runs of nodes give every run its blocks, packs and side-table ranges. The few triangle
/// slots whose pack a previous run opened are filled after the parallel pass.
pub(super) fn layout_depth_first(input: &LayoutInput) -> Layout {
    let (nodes, packs) = (&input.tree.nodes, input.packs);
    // Per box node: the packs it opens (at most 4).
    let mut opens = vec![0u8; nodes.len()];
    opens
        .par_chunks_mut(LAYOUT_CHUNK)
        .enumerate()
        .for_each(|(c, out)| {
            for (i, o) in out.iter_mut().enumerate() {
                *o = input.opened(c * LAYOUT_CHUNK + i) as u8;
            }
        });
    let starts = run_starts(input, &opens);
    let end = *starts.last().expect("the end of the last run");
    debug_assert_eq!(end.pack, packs.len());
    let node_block = node_blocks(input, &opens, &starts);

    let mut pack_block = vec![0u32; packs.len()];
    let mut order = vec![0u32; nodes.len() + packs.len()];
    let mut triangle_node_ordinal: Vec<u32> = vec![0; end.block];
    let mut box_parent: Vec<NodePointer> = vec![NodePointer::default(); end.block];
    let mut slot_parent: Vec<NodePointer> = Vec::with_capacity(4 * packs.len());
    slot_parent.resize(4 * packs.len(), NodePointer::INVALID);
    let runs = split_into_runs(
        nodes.len(),
        &starts,
        RunOutput {
            first_node: 0,
            start: RunStart::default(),
            pack_block: &mut pack_block,
            order: &mut order,
            triangle_node_ordinal: &mut triangle_node_ordinal,
            box_parent: &mut box_parent,
            slot_parent: &mut slot_parent,
        },
    );
    let summaries: Vec<RunSummary> = runs
        .into_par_iter()
        .map(|run| lay_out_run(input, &node_block, run))
        .collect();
    let (mut max_depth, mut box_slots_used) = (0, 0);
    for summary in summaries {
        max_depth = max_depth.max(summary.max_depth);
        box_slots_used += summary.box_slots_used;
        for (i, parent) in summary.spilled {
            slot_parent[i] = parent;
        }
    }
    Layout {
        node_block,
        pack_block,
        order,
        triangle_node_ordinal,
        box_parent,
        slot_parent,
        blocks: end.block as u64,
        max_depth,
        box_slots_used,
    }
}

/// Per run of [`LAYOUT_CHUNK`] box nodes, where it starts, and after the last run the
/// totals: prefix sums of the blocks and packs of each run (`opens[n]`: the packs box node
/// n opens).
fn run_starts(input: &LayoutInput, opens: &[u8]) -> Vec<RunStart> {
    let counts: Vec<RunStart> = opens
        .par_chunks(LAYOUT_CHUNK)
        .enumerate()
        .map(|(c, opens)| {
            opens
                .iter()
                .enumerate()
                .fold(RunStart::default(), |sum, (i, &o)| RunStart {
                    block: sum.block + input.own_blocks(c * LAYOUT_CHUNK + i) + o as usize,
                    pack: sum.pack + o as usize,
                })
        })
        .collect();
    let mut starts = Vec::with_capacity(counts.len() + 1);
    let mut next = RunStart::default();
    for count in counts {
        starts.push(next);
        next.block += count.block;
        next.pack += count.pack;
    }
    starts.push(next);
    starts
}

/// The first block of every box node: its run's start plus the blocks of the nodes before
/// it in the run and of the packs they open.
fn node_blocks(input: &LayoutInput, opens: &[u8], starts: &[RunStart]) -> Vec<u32> {
    let mut node_block = vec![0u32; opens.len()];
    node_block
        .par_chunks_mut(LAYOUT_CHUNK)
        .zip(starts.par_iter())
        .enumerate()
        .for_each(|(c, (out, start))| {
            let mut block = start.block;
            for (i, b) in out.iter_mut().enumerate() {
                let n = c * LAYOUT_CHUNK + i;
                *b = block as u32;
                block += input.own_blocks(n) + opens[n] as usize;
            }
        });
    node_block
}

/// Cuts the whole outputs (`all`, starting at node, block and pack 0) into the ranges each
/// run of `node_count` box nodes owns, by the prefix sums `starts`.
fn split_into_runs<'a>(
    node_count: usize,
    starts: &[RunStart],
    all: RunOutput<'a>,
) -> Vec<RunOutput<'a>> {
    let mut runs = Vec::with_capacity(starts.len() - 1);
    let mut rest = all;
    for (c, pair) in starts.windows(2).enumerate() {
        let (start, next) = (pair[0], pair[1]);
        let first_node = c * LAYOUT_CHUNK;
        let end_node = (first_node + LAYOUT_CHUNK).min(node_count);
        let (packs, blocks) = (next.pack - start.pack, next.block - start.block);
        let (pack_block, pack_block_rest) = rest.pack_block.split_at_mut(packs);
        let (order, order_rest) = rest.order.split_at_mut(end_node - first_node + packs);
        let (ordinal, ordinal_rest) = rest.triangle_node_ordinal.split_at_mut(blocks);
        let (box_parent, box_parent_rest) = rest.box_parent.split_at_mut(blocks);
        let (slot_parent, slot_parent_rest) = rest.slot_parent.split_at_mut(4 * packs);
        runs.push(RunOutput {
            first_node,
            start,
            pack_block,
            order,
            triangle_node_ordinal: ordinal,
            box_parent,
            slot_parent,
        });
        rest = RunOutput {
            first_node: end_node,
            start: next,
            pack_block: pack_block_rest,
            order: order_rest,
            triangle_node_ordinal: ordinal_rest,
            box_parent: box_parent_rest,
            slot_parent: slot_parent_rest,
        };
    }
    runs
}

/// Lays out one run of box nodes (each followed by the packs it opens) into its own ranges
/// of the outputs (`node_block`: every box node's first block).
fn lay_out_run(input: &LayoutInput, node_block: &[u32], run: RunOutput) -> RunSummary {
    let nodes = &input.tree.nodes;
    let node_pointer = |n: usize| pointer(node_block[n] as u64, box_type(input.fp16[n]));
    let mut summary = RunSummary::default();
    let (mut block, mut pack, mut item) = (run.start.block, run.start.pack, 0);
    let end_node = (run.first_node + LAYOUT_CHUNK).min(nodes.len());
    for (n, node) in (run.first_node..).zip(&nodes[run.first_node..end_node]) {
        debug_assert_eq!(node_block[n] as usize, block);
        let here = node_pointer(n);
        let local = block - run.start.block;
        run.order[item] = n as u32;
        item += 1;
        run.box_parent[local] = if node.parent == NO_PARENT {
            NodePointer::INVALID
        } else {
            node_pointer(node.parent as usize)
        };
        run.triangle_node_ordinal[local] = u32::MAX;
        if !input.fp16[n] {
            run.box_parent[local + 1] = NodePointer::INVALID;
            run.triangle_node_ordinal[local + 1] = u32::MAX;
        }
        block += input.own_blocks(n);
        summary.max_depth = summary.max_depth.max(node.depth as usize);
        for slot in node.slots.iter().flatten() {
            summary.box_slots_used += 1;
            let Slot::Leaf(l) = *slot else { continue };
            let (p, slots) = input.leaf_slots(l);
            let opens = *slots.start() == 0;
            for j in slots {
                if p >= run.start.pack {
                    run.slot_parent[4 * (p - run.start.pack) + j] = here;
                } else {
                    summary.spilled.push((4 * p + j, here));
                }
            }
            if opens {
                debug_assert_eq!(p, pack);
                let local = block - run.start.block;
                run.pack_block[p - run.start.pack] = block as u32;
                run.order[item] = PACK_ITEM | p as u32;
                run.box_parent[local] = NodePointer::INVALID;
                run.triangle_node_ordinal[local] = p as u32;
                item += 1;
                block += 1;
                pack += 1;
            }
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::{build_binary, PrimRef};
    use crate::bvh::cluster::fan_clusters;
    use crate::bvh::encode::packing::{cluster_packs, pack_leaves, PACK_RUN};
    use crate::bvh::Mesh;
    use glam::Vec3A;

    /// The parallel depth-first layout equals the serial walk (blocks, memory order and all
    /// side tables) on a grid mesh of 80 000 triangles (many layout runs and packing runs,
    /// packs shared across run boundaries), with one, two and four triangles per node, leaf
    /// chains, and mixed box formats, on one and three threads.
    #[test]
    fn parallel_layout_matches_the_serial_walk() {
        let size = 201;
        let mut positions = Vec::new();
        for y in 0..size {
            for x in 0..size {
                let h = ((x * 7 + y * 13) % 11) as f32 * 0.1;
                positions.push([x as f32, y as f32, h]);
            }
        }
        let mut indices = Vec::new();
        for y in 0..size - 1 {
            for x in 0..size - 1 {
                let v = (y * size + x) as u32;
                let s = size as u32;
                indices.push([v, v + 1, v + s + 1]);
                indices.push([v, v + s + 1, v + s]);
            }
        }
        let mesh = Mesh { positions, indices };
        let bounds = |tris: &mut dyn Iterator<Item = u32>| {
            let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
            for prim in tris {
                for v in mesh.triangle(prim) {
                    lo = lo.min(Vec3A::from(v));
                    hi = hi.max(Vec3A::from(v));
                }
            }
            (lo, hi)
        };
        for (per_node, chains) in [(1u8, false), (2, false), (4, false), (4, true)] {
            let prims: Vec<u32> = (0..mesh.len() as u32).collect();
            let clusters = if chains {
                fan_clusters(&mesh, &prims, per_node)
            } else {
                Vec::new()
            };
            let mut refs: Vec<PrimRef> = if chains {
                clusters
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let mut tris = c.tris[..c.count as usize].iter().map(|t| t.0);
                        let (lo, hi) = bounds(&mut tris);
                        PrimRef::new(lo, hi, i as u32, c.count as u32)
                    })
                    .collect()
            } else {
                prims
                    .iter()
                    .map(|&p| {
                        let (lo, hi) = bounds(&mut std::iter::once(p));
                        PrimRef::new(lo, hi, p, 1)
                    })
                    .collect()
            };
            let binary = build_binary(&mut refs);
            let tree = Tree4::collapse(binary, refs);
            let runs = tree
                .leaves
                .chunks(PACK_RUN)
                .map(|leaves| {
                    if chains {
                        cluster_packs(leaves, &mesh, &clusters)
                    } else {
                        pack_leaves(leaves, &mesh, per_node)
                    }
                })
                .collect();
            let packs = Packing::new(runs);
            // Mixed formats: every third node FP32.
            let fp16: Vec<bool> = (0..tree.nodes.len()).map(|n| n % 3 != 1).collect();
            let input = LayoutInput {
                tree: &tree,
                packs: &packs,
                fp16: &fp16,
                chains,
            };
            let serial = layout_serial(&input, NodeOrder::DepthFirst);
            assert!(tree.nodes.len() > 2 * LAYOUT_CHUNK, "{}", tree.nodes.len());
            assert!(chains || tree.leaves.len() > 2 * PACK_RUN);
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let parallel = pool.install(|| layout_depth_first(&input));
                assert!(
                    parallel == serial,
                    "{per_node} per node, chains {chains}, {threads} threads"
                );
            }
        }
    }
}
