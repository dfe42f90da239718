//! The encoder of trees whose leaves are user nodes (`semantics.md` 3.2, 4.5): the TLAS,
//! whose leaves are instance nodes (type 6, 128 bytes), and procedural BLASes, whose leaves
//! are procedural nodes (type 7, 64 bytes). Each leaf is a node of its own; its box lives
//! in its parent's child slot.
//!
//! Box nodes are FP32 (the top level is small and its boxes are world-space boxes of whole
//! instances, where FP16's outward rounding would grow every slot), laid out depth-first
//! from the tree's first block, then the leaf nodes in leaf order. Serial: these trees have
//! one leaf per instance or per procedural primitive.

use crate::bvh::build::{half_area, C_BOX, C_TRI};
use crate::bvh::collapse::{Slot, Tree4};
use crate::hw::{BoxNodeF32, NodePointer, NodeType};
use glam::Vec3A;

/// The kind of leaf node a tree of user leaves has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafKind {
    /// The pointer type of a leaf (6 or 7).
    pub node_type: NodeType,
    /// 64-byte blocks a leaf node takes (2 for an instance node, 1 for a procedural node).
    pub blocks: u64,
}

/// A tree of user leaves written at block `first_block` of an image.
#[derive(Clone, Debug)]
pub struct UserLeafTree {
    /// The tree's bytes (its first byte is block `first_block` of the image).
    pub bytes: Vec<u8>,
    /// The root box node.
    pub root: NodePointer,
    /// Per block of the tree: the parent pointer of the node starting there
    /// (`NodePointer::INVALID` for the root and for the second block of each node).
    pub parent: Vec<NodePointer>,
    /// Per leaf (in the tree's leaf order): its node's pointer.
    pub leaf_pointers: Vec<NodePointer>,
    /// Box nodes (all FP32).
    pub box_nodes: usize,
    /// Box-node levels on the longest root-to-leaf path (the root alone is 1).
    pub max_depth: usize,
    /// Used child slots of all box nodes.
    pub box_slots_used: usize,
    /// The SAH cost with the costs of [`crate::bvh::Metrics::sah_cost`], a leaf costing one
    /// instruction.
    pub sah_cost: f64,
}

/// Writes `tree` at block `first_block`: its box nodes, then one leaf node per leaf, whose
/// 64 `kind.blocks` bytes `write_leaf(leaf, prim, pointer, bytes)` fills (`prim` is the
/// leaf's reference id, `pointer` the leaf node's own pointer).
pub fn encode_user_leaves(
    tree: &Tree4,
    first_block: u64,
    kind: LeafKind,
    mut write_leaf: impl FnMut(usize, u32, NodePointer, &mut [u8]),
) -> UserLeafTree {
    let boxes = tree.nodes.len() as u64;
    let leaves = tree.leaves.len() as u64;
    let blocks = 2 * boxes + kind.blocks * leaves;
    let box_block = |n: u32| first_block + 2 * n as u64;
    let leaf_block = |l: u32| first_block + 2 * boxes + kind.blocks * l as u64;
    let box_pointer = |n: u32| NodePointer::new(box_block(n), NodeType::BoxF32);
    let leaf_pointer = |l: u32| NodePointer::new(leaf_block(l), kind.node_type);
    let mut bytes = vec![0u8; 64 * blocks as usize];
    let mut parent = vec![NodePointer::INVALID; blocks as usize];
    let local = |block: u32| (block as u64 - first_block) as usize;

    let root_area = {
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for s in 0..4 {
            if tree.nodes[0].slots[s].is_some() {
                let (l, h) = tree.child_box(0, s);
                lo = lo.min(l);
                hi = hi.max(h);
            }
        }
        half_area(lo, hi)
    };
    let mut sah = C_BOX as f64;
    let mut box_slots_used = 0;
    let mut max_depth = 1;
    for (n, node) in tree.nodes.iter().enumerate() {
        max_depth = max_depth.max(node.depth as usize);
        let this = box_pointer(n as u32);
        let mut stored = BoxNodeF32 {
            children: [NodePointer::INVALID; 4],
            boxes: [[f32::NAN; 6]; 4],
            user: [0; 4],
        };
        for s in 0..4 {
            let Some(slot) = node.slots[s] else { continue };
            box_slots_used += 1;
            let (lo, hi) = tree.child_box(n, s);
            let [x0, y0, z0] = lo.to_array();
            let [x1, y1, z1] = hi.to_array();
            stored.boxes[s] = [x0, y0, z0, x1, y1, z1];
            let (child, cost) = match slot {
                Slot::Node(c) => (box_pointer(c), C_BOX),
                Slot::Leaf(l) => (leaf_pointer(l), C_TRI),
            };
            stored.children[s] = child;
            parent[local(child.address_64())] = this;
            sah += (cost * half_area(lo, hi)) as f64 / root_area as f64;
        }
        let at = 64 * local(this.address_64());
        bytes[at..at + 128].copy_from_slice(bytemuck::bytes_of(&stored));
    }
    let mut leaf_pointers = Vec::with_capacity(leaves as usize);
    for (l, &prim) in tree.leaves.iter().enumerate() {
        let pointer = leaf_pointer(l as u32);
        let at = 64 * local(pointer.address_64());
        let size = 64 * kind.blocks as usize;
        write_leaf(l, prim, pointer, &mut bytes[at..at + size]);
        leaf_pointers.push(pointer);
    }
    UserLeafTree {
        bytes,
        root: box_pointer(0),
        parent,
        leaf_pointers,
        box_nodes: boxes as usize,
        max_depth,
        box_slots_used,
        sah_cost: if sah.is_finite() {
            sah
        } else {
            (boxes + leaves) as f64
        },
    }
}
