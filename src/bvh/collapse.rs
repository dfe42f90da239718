//! Collapse of the binary tree into a 4-wide intermediate tree, by SAH.
//!
//! The hardware gives every triangle its own child slot of a box node (a triangle pointer
//! tests one triangle), so the 4-wide tree has two kinds of slots: a box node or a single
//! triangle reference. [`super::build::build_binary`] computes, for every binary node and
//! every slot budget k = 1..4, the cheapest way to represent the subtree in k slots of its parent (either as
//! one box node, or by handing the budget down to its two children). This is the optimal
//! collapse for the SAH with costs [`C_BOX`](super::build::C_BOX) per box node visited and
//! [`C_TRI`](super::build::C_TRI) per triangle tested, not a greedy "open the largest child".

use super::build::{BinaryTree, Node2, PrimRef, LEAF};
use glam::Vec3A;

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
#[derive(Clone, Copy, Debug)]
pub struct Node4 {
    pub slots: [Option<Slot>; 4],
    pub sources: [u32; 4],
}

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
    pub fn collapse(bin: BinaryTree, refs: Vec<PrimRef>) -> Tree4 {
        let mut tree = Tree4 {
            nodes: Vec::with_capacity(refs.len() / 2 + 1),
            leaves: Vec::with_capacity(refs.len()),
            ..Tree4::default()
        };
        let collapser = Collapser {
            nodes: bin.nodes(),
            refs: &refs,
        };
        collapser.emit_box(&mut tree, bin.root);
        tree.binary = Some(bin);
        tree.refs = refs;
        tree
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
    refs: &'a [PrimRef],
}

impl Collapser<'_> {
    /// Emits binary child reference `n` as a box node (and, recursively, its subtree);
    /// returns its index.
    fn emit_box(&self, tree: &mut Tree4, n: u32) -> u32 {
        let index = tree.nodes.len() as u32;
        tree.nodes.push(EMPTY_NODE);
        let mut children = [0u32; 4];
        let mut count = 0;
        if n & LEAF != 0 {
            children[0] = n;
            count = 1;
        } else {
            let node = &self.nodes[n as usize];
            let i = node.split[3];
            let i = if i == 0 { 2 } else { i };
            self.gather(node.children[0], i as usize, &mut children, &mut count);
            self.gather(node.children[1], 4 - i as usize, &mut children, &mut count);
        }
        let mut inner = [(0usize, 0u32); 4];
        let mut inner_count = 0;
        for (s, &c) in children[..count].iter().enumerate() {
            let out = &mut tree.nodes[index as usize];
            out.sources[s] = c;
            if c & LEAF != 0 {
                out.slots[s] = Some(Slot::Leaf(tree.leaves.len() as u32));
                tree.leaves.push(self.refs[(c & !LEAF) as usize].prim());
            } else {
                inner[inner_count] = (s, c);
                inner_count += 1;
            }
        }
        for &(s, c) in &inner[..inner_count] {
            let child = self.emit_box(tree, c);
            tree.nodes[index as usize].slots[s] = Some(Slot::Node(child));
        }
        index
    }

    /// Appends the binary child references that fill `k` slots for subtree `n` (each
    /// becomes a slot).
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
