//! Moving a triangle BLAS within an image: every node moves by a number of 64-byte blocks,
//! so every child pointer of its box nodes moves with it, and its triangle nodes take other
//! ordinals (in return mode 0, word@60 of triangle node `o` is `4 * o`, the first of the ids
//! that index the image's side table). Bytes are read and written through the `hw` node
//! structs. Moving into a two-level image and back out of it (to validate a BLAS alone) are
//! the same operation with opposite shifts.

use crate::bvh::BvhImage;
use crate::hw::{BoxNodeF16, BoxNodeF32, NodePointer, NodeType, TriangleNode, TriangleReturnMode};

/// A triangle BLAS moved to other blocks.
pub struct RelocatedBlas {
    pub bytes: Vec<u8>,
    pub root: NodePointer,
    /// Per block: the triangle node ordinal (moved), or `u32::MAX`.
    pub triangle_node_ordinal: Vec<u32>,
    /// Per block: the parent of the node starting there (moved), or INVALID.
    pub box_parent: Vec<NodePointer>,
    /// Per triangle slot: the parent box node (moved).
    pub slot_parent: Vec<NodePointer>,
}

/// `p` moved by `blocks` blocks (INVALID stays INVALID).
fn moved(p: NodePointer, blocks: i64) -> NodePointer {
    if p.is_invalid() {
        p
    } else {
        NodePointer::new((p.address_64() as i64 + blocks) as u64, p.node_type())
    }
}

/// A triangle BLAS as it sits in some image: its bytes (whose first byte is block `frame`
/// of the image its pointers name), its root, and its side tables in that frame (per block
/// of `bytes`, per triangle slot).
struct PlacedBlas<'a> {
    bytes: &'a [u8],
    frame: u64,
    root: NodePointer,
    return_mode: TriangleReturnMode,
    ordinals: &'a [u32],
    box_parent: &'a [NodePointer],
    slot_parent: &'a [NodePointer],
}

/// Moves `blas` by `shift` blocks and its triangle node ordinals by `ordinal_shift`.
fn move_blas(blas: PlacedBlas<'_>, shift: i64, ordinal_shift: i64) -> RelocatedBlas {
    let PlacedBlas {
        bytes,
        frame,
        root,
        return_mode,
        ordinals,
        box_parent,
        slot_parent,
    } = blas;
    let mut bytes = bytes.to_vec();
    let local = |p: NodePointer| 64 * (p.address_64() as u64 - frame) as usize;
    // The box nodes, found from the root (the BLAS is a tree).
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        let at = local(node);
        if node.node_type() == NodeType::BoxF32 {
            let mut b: BoxNodeF32 = bytemuck::pod_read_unaligned(&bytes[at..at + 128]);
            pending.extend(b.children.iter().filter(|c| c.is_box()));
            b.children = b.children.map(|c| moved(c, shift));
            bytes[at..at + 128].copy_from_slice(bytemuck::bytes_of(&b));
        } else if node.is_box() {
            let mut b: BoxNodeF16 = bytemuck::pod_read_unaligned(&bytes[at..at + 64]);
            pending.extend(b.children.iter().filter(|c| c.is_box()));
            b.children = b.children.map(|c| moved(c, shift));
            bytes[at..at + 64].copy_from_slice(bytemuck::bytes_of(&b));
        }
    }
    let mode_0 = return_mode == TriangleReturnMode::TriangleId;
    let triangle_node_ordinal = ordinals
        .iter()
        .enumerate()
        .map(|(block, &o)| {
            if o == u32::MAX {
                return o;
            }
            if mode_0 {
                let at = 64 * block;
                let mut t: TriangleNode = bytemuck::pod_read_unaligned(&bytes[at..at + 64]);
                t.word = (t.word as i64 + 4 * ordinal_shift) as u32;
                bytes[at..at + 64].copy_from_slice(bytemuck::bytes_of(&t));
            }
            (o as i64 + ordinal_shift) as u32
        })
        .collect();
    RelocatedBlas {
        bytes,
        root: moved(root, shift),
        triangle_node_ordinal,
        box_parent: box_parent.iter().map(|&p| moved(p, shift)).collect(),
        slot_parent: slot_parent.iter().map(|&p| moved(p, shift)).collect(),
    }
}

/// Moves `image` (a triangle BLAS whose root is at block 0) to block `first_block`, its
/// triangle nodes to ordinals from `first_ordinal`.
pub fn relocate(image: &BvhImage, first_block: u64, first_ordinal: u32) -> RelocatedBlas {
    let placed = PlacedBlas {
        bytes: &image.bytes,
        frame: 0,
        root: image.root,
        return_mode: image.descriptor.triangle_return_mode,
        ordinals: &image.triangle_node_ordinal,
        box_parent: &image.box_parent,
        slot_parent: &image.slot_parent,
    };
    move_blas(placed, first_block as i64, first_ordinal as i64)
}

/// The triangle BLAS at blocks `first_block..first_block + blocks` of `image` (rooted at
/// `root`, its ordinals from `first_ordinal`, `nodes` triangle nodes), moved back to
/// block 0 as an image of its own, as [`crate::bvh::build()`] made it.
pub fn extract(
    image: &BvhImage,
    first_block: u64,
    blocks: u64,
    root: NodePointer,
    first_ordinal: u32,
    nodes: usize,
) -> BvhImage {
    let range = first_block as usize..(first_block + blocks) as usize;
    let slots = 4 * first_ordinal as usize..4 * (first_ordinal as usize + nodes);
    let placed = PlacedBlas {
        bytes: &image.bytes[64 * range.start..64 * range.end],
        frame: first_block,
        root,
        return_mode: image.descriptor.triangle_return_mode,
        ordinals: &image.triangle_node_ordinal[range.clone()],
        box_parent: &image.box_parent[range],
        slot_parent: &image.slot_parent[slots.clone()],
    };
    let back = move_blas(placed, -(first_block as i64), -(first_ordinal as i64));
    BvhImage {
        bytes: back.bytes,
        descriptor: crate::hw::BvhDescriptor {
            size_minus_one: blocks - 1,
            ..image.descriptor
        },
        root: back.root,
        triangle_node_ordinal: back.triangle_node_ordinal,
        slot_primitive: image.slot_primitive[slots].to_vec(),
        box_parent: back.box_parent,
        slot_parent: back.slot_parent,
        triangles_per_node: image.triangles_per_node,
        spatial_splits: image.spatial_splits,
        leaf_chains: image.leaf_chains,
    }
}
