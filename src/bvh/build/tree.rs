//! The binary tree the build writes ([`BinaryTree`]): inner nodes ([`Node2`]) with their
//! collapse choices; leaves are not nodes but [`LEAF`] references to the reordered
//! primitive references.

use bytemuck::{Pod, Zeroable};

/// A child reference with this bit set names a leaf: the reference at the index in the low
/// bits (of the reordered reference array); otherwise it is an inner-node index.
pub const LEAF: u32 = 1 << 31;

/// Inner nodes over at least this many references record their 4-wide subtree sizes
/// ([`BinaryTree::subtree_sizes`]), so that the collapse can emit them in parallel.
pub const COLLAPSE_PARALLEL: usize = 8192;
// Two-reference nodes (`pair_node`) record their sizes only as the root.
const _: () = assert!(COLLAPSE_PARALLEL > 2);

/// An inner node of the binary tree (36 bytes; leaves are references, see [`LEAF`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct Node2 {
    pub min: [f32; 3],
    pub max: [f32; 3],
    /// Left and right child references.
    pub children: [u32; 2],
    /// `split[k-1]`: 0 if the best way to fill `k` child slots of the parent with this
    /// subtree is to make it a box node (one slot); otherwise the slots given to the left
    /// child (the rest go right). The costs behind the choice: see
    /// [`build_binary`](super::build_binary).
    pub split: [u8; 4],
}

const _: () = assert!(std::mem::size_of::<Node2>() == 36);

/// The binary tree: inner nodes and the root reference.
pub struct BinaryTree {
    /// Allocated as zeroed words (so the pages are mapped lazily, never filled twice), viewed
    /// as [`Node2`] through [`BinaryTree::nodes`].
    words: Vec<[u32; 9]>,
    /// The root: inner node 0, or `LEAF | 0` with a single reference.
    pub root: u32,
    /// Box nodes of the whole 4-wide tree (1 when the root is a single reference).
    pub boxes: u32,
    /// Per inner node over at least [`COLLAPSE_PARALLEL`] references, and the root: (box
    /// nodes of its 4-wide subtree when it is emitted as a box node, its references); `[0, 0]`
    /// for the others (allocated zeroed and written only for these few nodes, so almost no
    /// page of it is ever mapped).
    pub subtree_sizes: Vec<[u32; 2]>,
}

impl BinaryTree {
    /// The tree over `references` (at least one) before the build: zeroed inner nodes and
    /// subtree sizes, the root inner node 0 (or `LEAF | 0` with a single reference), no box
    /// count yet.
    pub(super) fn zeroed(references: usize) -> BinaryTree {
        let inner = references - 1;
        BinaryTree {
            words: vec![[0u32; 9]; inner],
            root: if references == 1 { LEAF } else { 0 },
            boxes: 0,
            subtree_sizes: vec![[0u32; 2]; inner],
        }
    }

    /// The inner nodes and the subtree sizes, to write both.
    pub(super) fn nodes_and_sizes_mut(&mut self) -> (&mut [Node2], &mut [[u32; 2]]) {
        (
            bytemuck::cast_slice_mut(&mut self.words),
            &mut self.subtree_sizes,
        )
    }

    /// The inner nodes.
    pub fn nodes(&self) -> &[Node2] {
        bytemuck::cast_slice(&self.words)
    }

    /// The inner nodes, to write.
    pub(crate) fn nodes_mut(&mut self) -> &mut [Node2] {
        bytemuck::cast_slice_mut(&mut self.words)
    }
}
