//! Collapse of the binary tree into a 4-wide intermediate tree, by SAH.
//!
//! The hardware gives every triangle its own child slot of a box node (a triangle pointer
//! tests one triangle), so the 4-wide tree has two kinds of slots: a box node or a single
//! triangle reference. [`super::build::build_binary`] computes, for every binary node and every slot budget
//! k = 1..4, the cheapest way to represent the subtree in k slots of its parent (either as
//! one box node, or by handing the budget down to its two children). This is the optimal
//! collapse for the SAH with costs [`C_BOX`](super::build::C_BOX) per box node visited and
//! [`C_TRI`](super::build::C_TRI) per triangle tested, not a greedy "open the largest child".

use super::build::Node2;
use glam::Vec3A;

/// One child slot of a 4-wide node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slot {
    /// Another box node (index into [`Tree4::nodes`]).
    Node(u32),
    /// One triangle reference (index into [`Tree4::leaves`]).
    Leaf(u32),
}

/// A 4-wide box node of the intermediate tree: up to four slots, each with its exact f32 box.
#[derive(Clone, Copy, Debug)]
pub struct Node4 {
    pub slots: [Option<Slot>; 4],
    pub boxes: [(Vec3A, Vec3A); 4],
}

/// The intermediate 4-wide tree. Node 0 is the root (always a box node, possibly empty).
#[derive(Clone, Debug, Default)]
pub struct Tree4 {
    pub nodes: Vec<Node4>,
    /// Triangle references in depth-first slot order: the primitive id.
    pub leaves: Vec<u32>,
}

const EMPTY_NODE: Node4 = Node4 {
    slots: [None; 4],
    boxes: [(Vec3A::INFINITY, Vec3A::NEG_INFINITY); 4],
};

impl Tree4 {
    /// The tree of an empty mesh: one root box node without children.
    pub fn empty() -> Tree4 {
        Tree4 {
            nodes: vec![EMPTY_NODE],
            leaves: Vec::new(),
        }
    }

    /// Collapses `bin` (root at index 0) into a 4-wide tree, depth-first.
    pub fn collapse(bin: &[Node2]) -> Tree4 {
        let mut tree = Tree4 {
            nodes: Vec::with_capacity(bin.len() / 3 + 1),
            leaves: Vec::with_capacity(bin.len() / 2 + 1),
        };
        let mut gathered = Vec::with_capacity(4);
        tree.emit_box(bin, 0, &mut gathered);
        tree
    }

    /// Emits binary node `n` as a box node (and, recursively, its subtree); returns its index.
    fn emit_box(&mut self, bin: &[Node2], n: u32, scratch: &mut Vec<u32>) -> u32 {
        let index = self.nodes.len() as u32;
        self.nodes.push(EMPTY_NODE);
        scratch.clear();
        let node = &bin[n as usize];
        if node.is_leaf() {
            scratch.push(n);
        } else {
            let i = node.split[3];
            let i = if i == 0 { 2 } else { i };
            gather(bin, node.first, i as usize, scratch);
            gather(bin, node.second, 4 - i as usize, scratch);
        }
        let children: [Option<u32>; 4] = std::array::from_fn(|s| scratch.get(s).copied());
        debug_assert!(scratch.len() <= 4);
        let mut inner = [(0usize, 0u32); 4];
        let mut inner_count = 0;
        for (s, child) in children.iter().enumerate() {
            let Some(c) = *child else { continue };
            let cn = &bin[c as usize];
            self.nodes[index as usize].boxes[s] = (cn.min, cn.max);
            if cn.is_leaf() {
                let leaf = self.leaves.len() as u32;
                self.leaves.push(cn.first);
                self.nodes[index as usize].slots[s] = Some(Slot::Leaf(leaf));
            } else {
                inner[inner_count] = (s, c);
                inner_count += 1;
            }
        }
        for &(s, c) in &inner[..inner_count] {
            let child = self.emit_box(bin, c, scratch);
            self.nodes[index as usize].slots[s] = Some(Slot::Node(child));
        }
        index
    }
}

/// Appends the binary nodes that fill `k` slots for subtree `n` (each becomes a slot).
fn gather(bin: &[Node2], n: u32, k: usize, out: &mut Vec<u32>) {
    let node = &bin[n as usize];
    let split = node.split[k - 1] as usize;
    if node.is_leaf() || split == 0 {
        out.push(n);
    } else {
        gather(bin, node.first, split, out);
        gather(bin, node.second, k - split, out);
    }
}
