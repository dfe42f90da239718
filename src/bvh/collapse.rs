//! Collapse of the binary tree into a 4-wide intermediate tree, by SAH.
//!
//! The hardware gives every triangle its own child slot of a box node (a triangle pointer
//! tests one triangle), so the 4-wide tree has two kinds of slots: a box node or a single
//! triangle reference. [`super::build::build_binary`] computes, for every binary node and
//! every slot budget k = 1..4, the cheapest way to represent the subtree in k slots of its
//! parent (either as one box node, or by handing the budget down to its two children).
//! This is the optimal collapse for the SAH with costs [`C_BOX`](super::build::C_BOX) per
//! box node visited and [`C_TRI`](super::build::C_TRI) per triangle tested, not a greedy
//! "open the largest child".

use super::build::{BinaryTree, Node2, PrimRef, LEAF};
use glam::Vec3A;
use rayon::prelude::*;
use rayon::Scope;

/// One child slot of a 4-wide node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slot {
    /// Another box node (index into [`Tree4::nodes`]).
    Node(u32),
    /// One triangle reference (index into [`Tree4::leaves`]).
    Leaf(u32),
}

/// A 4-wide box node of the intermediate tree: up to four slots, each with the binary-tree
/// child reference (see [`LEAF`]) whose exact f32 box it has ([`Tree4::child_box`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node4 {
    pub slots: [Option<Slot>; 4],
    pub sources: [u32; 4],
    /// The parent box node ([`NO_PARENT`] for the root).
    pub parent: u32,
    /// Box nodes from the root down to this one (the root has depth 1).
    pub depth: u32,
}

/// [`Node4::parent`] of the root.
pub const NO_PARENT: u32 = u32::MAX;

/// The intermediate 4-wide tree. Node 0 is the root (always a box node, possibly empty).
/// It keeps the binary tree and the reordered references, which hold the child boxes.
#[derive(Default)]
pub struct Tree4 {
    pub nodes: Vec<Node4>,
    /// Triangle references in depth-first slot order: the primitive id.
    pub leaves: Vec<u32>,
    binary: Option<BinaryTree>,
    refs: Vec<PrimRef>,
}

const EMPTY_NODE: Node4 = Node4 {
    slots: [None; 4],
    sources: [0; 4],
    parent: NO_PARENT,
    depth: 1,
};

impl Tree4 {
    /// The tree of an empty mesh: one root box node without children.
    pub fn empty() -> Tree4 {
        Tree4 {
            nodes: vec![EMPTY_NODE],
            ..Tree4::default()
        }
    }

    /// Collapses the binary tree (over the reordered `refs`) into a 4-wide tree,
    /// depth-first.
    ///
    /// The output is pre-sized (the build counted the box nodes) and subtrees over at least
    /// [`COLLAPSE_PARALLEL`](super::build::COLLAPSE_PARALLEL) references, whose sizes the build
    /// recorded, are emitted by rayon tasks into their own ranges: the same tree as a serial
    /// depth-first walk, for any thread count.
    pub fn collapse(bin: BinaryTree, refs: Vec<PrimRef>) -> Tree4 {
        // Filled in parallel (an indexed collect writes in place), so that the fresh pages
        // are mapped by all threads.
        let mut nodes: Vec<Node4> = Vec::with_capacity(bin.boxes as usize);
        (0..bin.boxes)
            .into_par_iter()
            .map(|_| EMPTY_NODE)
            .collect_into_vec(&mut nodes);
        let mut leaves: Vec<u32> = vec![0; refs.len()];
        let collapser = Collapser {
            nodes: bin.nodes(),
            sizes: &bin.subtree_sizes,
            refs: &refs,
        };
        let (n, l) = collapser.emit_box(bin.root, &mut nodes, &mut leaves, 0, 0, (NO_PARENT, 1));
        debug_assert_eq!((n, l), (nodes.len(), leaves.len()));
        Tree4 {
            nodes,
            leaves,
            binary: Some(bin),
            refs,
        }
    }

    /// The exact box of slot `s` of node `n` (a used slot).
    #[inline]
    pub fn child_box(&self, n: usize, s: usize) -> (Vec3A, Vec3A) {
        let source = self.nodes[n].sources[s];
        if source & LEAF != 0 {
            let r = &self.refs[(source & !LEAF) as usize];
            (r.min(), r.max())
        } else {
            let node = &self.binary.as_ref().expect("a binary tree").nodes()[source as usize];
            (Vec3A::from(node.min), Vec3A::from(node.max))
        }
    }
}

/// The binary tree being collapsed.
struct Collapser<'a> {
    nodes: &'a [Node2],
    /// [`BinaryTree::subtree_sizes`].
    sizes: &'a [[u32; 2]],
    refs: &'a [PrimRef],
}

/// The unwritten rest of a box node's output ranges, consumed child subtree by child
/// subtree in slot order.
struct Cursor<'o> {
    nodes: &'o mut [Node4],
    leaves: &'o mut [u32],
    node_base: u32,
    leaf_base: u32,
}

impl<'o> Cursor<'o> {
    /// Emits the box-node subtree of binary node `c` at the front of the rest: in a task of
    /// `scope` when the build recorded its size, here otherwise.
    fn emit<'s>(
        &mut self,
        collapser: &'s Collapser<'s>,
        c: u32,
        above: (u32, u32),
        scope: Option<&Scope<'s>>,
    ) where
        'o: 's,
    {
        let nodes = std::mem::take(&mut self.nodes);
        let leaves = std::mem::take(&mut self.leaves);
        let (node_base, leaf_base) = (self.node_base, self.leaf_base);
        let [boxes, references] = collapser.sizes[c as usize];
        let (used_nodes, used_leaves, rest_nodes, rest_leaves) = match scope {
            Some(scope) if boxes != 0 => {
                let (mine, rest_nodes) = nodes.split_at_mut(boxes as usize);
                let (my_leaves, rest_leaves) = leaves.split_at_mut(references as usize);
                scope.spawn(move |_| {
                    collapser.emit_box(c, mine, my_leaves, node_base, leaf_base, above);
                });
                (boxes as usize, references as usize, rest_nodes, rest_leaves)
            }
            _ => {
                let (n, l) = collapser.emit_box(c, nodes, leaves, node_base, leaf_base, above);
                let (_, rest_nodes) = nodes.split_at_mut(n);
                let (_, rest_leaves) = leaves.split_at_mut(l);
                (n, l, rest_nodes, rest_leaves)
            }
        };
        self.nodes = rest_nodes;
        self.leaves = rest_leaves;
        self.node_base += used_nodes as u32;
        self.leaf_base += used_leaves as u32;
    }
}

impl Collapser<'_> {
    /// Emits binary child reference `n` as a box node (and, recursively, its subtree) at
    /// `nodes[0]` (global index `node_base`), its triangle references from `leaves[0]`
    /// (global index `leaf_base`), under the box node `above` = (parent index, its depth);
    /// returns the box nodes and leaves written.
    fn emit_box(
        &self,
        n: u32,
        nodes: &mut [Node4],
        leaves: &mut [u32],
        node_base: u32,
        leaf_base: u32,
        (parent, parent_depth): (u32, u32),
    ) -> (usize, usize) {
        let (children, count) = self.children_of(n);
        let mut out = EMPTY_NODE;
        out.parent = parent;
        out.depth = if parent == NO_PARENT {
            1
        } else {
            parent_depth + 1
        };
        let above = (node_base, out.depth);
        let mut inner = [(0usize, 0u32); 4];
        let mut inner_count = 0;
        let mut used_leaves = 0;
        let mut parallel = false;
        for (s, &c) in children[..count].iter().enumerate() {
            out.sources[s] = c;
            if c & LEAF != 0 {
                out.slots[s] = Some(Slot::Leaf(leaf_base + used_leaves as u32));
                leaves[used_leaves] = self.refs[(c & !LEAF) as usize].prim();
                used_leaves += 1;
            } else {
                inner[inner_count] = (s, c);
                inner_count += 1;
                parallel |= self.sizes[c as usize][0] != 0;
            }
        }
        let (this, rest_nodes) = nodes.split_at_mut(1);
        let rest_leaves = &mut leaves[used_leaves..];
        let mut cursor = Cursor {
            nodes: rest_nodes,
            leaves: rest_leaves,
            node_base: node_base + 1,
            leaf_base: leaf_base + used_leaves as u32,
        };
        if parallel {
            rayon::scope(|scope| {
                for &(s, c) in &inner[..inner_count] {
                    out.slots[s] = Some(Slot::Node(cursor.node_base));
                    cursor.emit(self, c, above, Some(scope));
                }
            });
        } else {
            for &(s, c) in &inner[..inner_count] {
                out.slots[s] = Some(Slot::Node(cursor.node_base));
                cursor.emit(self, c, above, None);
            }
        }
        this[0] = out;
        (
            (cursor.node_base - node_base) as usize,
            (cursor.leaf_base - leaf_base) as usize,
        )
    }

    /// The up to four children of the box node that binary child reference `n` becomes:
    /// `n` itself when it is a leaf, else the subtrees its collapse choice gathers.
    fn children_of(&self, n: u32) -> ([u32; 4], usize) {
        let mut children = [0u32; 4];
        let mut count = 0;
        if n & LEAF != 0 {
            children[0] = n;
            count = 1;
        } else {
            let node = &self.nodes[n as usize];
            let i = match node.split[3] {
                0 => 2,
                i => i as usize,
            };
            self.gather(node.children[0], i, &mut children, &mut count);
            self.gather(node.children[1], 4 - i, &mut children, &mut count);
        }
        (children, count)
    }

    /// Appends to `out` the binary child references that fill `k` slots for subtree `n`
    /// (each becomes a slot), following the collapse choices.
    fn gather(&self, n: u32, k: usize, out: &mut [u32; 4], count: &mut usize) {
        let split = if n & LEAF != 0 {
            0
        } else {
            self.nodes[n as usize].split[k - 1] as usize
        };
        if split == 0 {
            out[*count] = n;
            *count += 1;
        } else {
            let node = &self.nodes[n as usize];
            self.gather(node.children[0], split, out, count);
            self.gather(node.children[1], k - split, out, count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::build_binary;

    /// The reference collapse: one serial depth-first walk pushing nodes and leaves (the
    /// collapse choice itself, `children_of`, is shared).
    fn emit_reference(
        c: &Collapser,
        out: &mut (Vec<Node4>, Vec<u32>),
        n: u32,
        parent: u32,
        depth: u32,
    ) -> u32 {
        let index = out.0.len() as u32;
        out.0.push(Node4 {
            parent,
            depth,
            ..EMPTY_NODE
        });
        let (children, count) = c.children_of(n);
        let mut inner = Vec::new();
        for (s, &child) in children[..count].iter().enumerate() {
            out.0[index as usize].sources[s] = child;
            if child & LEAF != 0 {
                out.0[index as usize].slots[s] = Some(Slot::Leaf(out.1.len() as u32));
                out.1.push(c.refs[(child & !LEAF) as usize].prim());
            } else {
                inner.push((s, child));
            }
        }
        for (s, child) in inner {
            let node = emit_reference(c, out, child, index, depth + 1);
            out.0[index as usize].slots[s] = Some(Slot::Node(node));
        }
        index
    }

    /// The pre-sized collapse, with subtrees emitted by rayon tasks, gives the nodes and
    /// leaves of the serial depth-first walk, on one, two and three threads.
    #[test]
    fn parallel_collapse_matches_the_serial_walk() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 10_000) as f32 / 100.0
        };
        for count in [1usize, 2, 5, 100, 40_000] {
            let refs: Vec<PrimRef> = (0..count as u32)
                .map(|prim| {
                    let a = Vec3A::new(next(), next(), next());
                    let e = Vec3A::new(next(), next(), next()) * 0.05;
                    PrimRef::new(a, a + e, prim, 1)
                })
                .collect();
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut refs = refs.clone();
                let bin = pool.install(|| build_binary(&mut refs));
                let mut expected = (Vec::new(), Vec::new());
                let collapser = Collapser {
                    nodes: bin.nodes(),
                    sizes: &bin.subtree_sizes,
                    refs: &refs,
                };
                emit_reference(&collapser, &mut expected, bin.root, NO_PARENT, 1);
                let tree = pool.install(|| Tree4::collapse(bin, refs));
                assert_eq!(tree.nodes, expected.0, "{count} refs, {threads} threads");
                assert_eq!(tree.leaves, expected.1, "{count} refs, {threads} threads");
            }
        }
    }
}
