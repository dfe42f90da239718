//! [`BvhImage`]: the hardware byte image the encoder writes, with the side tables that map
//! its triangle slots to mesh primitives and its nodes to their parents.

use crate::hw::{BvhDescriptor, NodePointer, NodeType, TriangleReturnMode};

/// A hardware BVH image with its side tables.
#[derive(Clone, Debug, PartialEq)]
pub struct BvhImage {
    /// Node memory; node 0 (the root) at offset 0. Its length is a multiple of 64.
    pub bytes: Vec<u8>,
    /// Base 0, size = 64-byte blocks - 1, grow, sort and return mode from the options.
    pub descriptor: BvhDescriptor,
    /// Root node pointer (a box node at block 0: 0x4 or 0x5).
    pub root: NodePointer,
    /// Per 64-byte block: the ordinal `o` of the triangle node starting there, or `u32::MAX`.
    pub triangle_node_ordinal: Vec<u32>,
    /// Per triangle slot `4 * o + k`: the primitive id, or `u32::MAX` for an unused slot.
    pub slot_primitive: Vec<u32>,
    /// Per 64-byte block: the parent pointer of the box or user node starting there
    /// (`NodePointer::INVALID` for a root and for other blocks).
    pub box_parent: Vec<NodePointer>,
    /// Per triangle slot `4 * o + k`: the pointer of the box node referencing it.
    pub slot_parent: Vec<NodePointer>,
    /// Most triangles per triangle node the image was built with.
    pub triangles_per_node: u8,
    /// Whether references were split (then one triangle may be stored several times).
    pub spatial_splits: bool,
    /// Leaf chains: a triangle pointer of type k stands for triangles k, k-1, ..., 0 of its
    /// node (see [`BuildOptions::leaf_chains`](super::BuildOptions::leaf_chains)).
    pub leaf_chains: bool,
}

impl BvhImage {
    /// The image's settings (descriptor, root, build flags) without its memory or side
    /// tables: what is left in a build report once a tracer has taken the image.
    pub fn settings_only(&self) -> BvhImage {
        BvhImage {
            bytes: Vec::new(),
            descriptor: self.descriptor,
            root: self.root,
            triangle_node_ordinal: Vec::new(),
            slot_primitive: Vec::new(),
            box_parent: Vec::new(),
            slot_parent: Vec::new(),
            triangles_per_node: self.triangles_per_node,
            spatial_splits: self.spatial_splits,
            leaf_chains: self.leaf_chains,
        }
    }

    /// Primitive id of a triangle hit, given the triangle node pointer the instruction was
    /// issued with and the 4 returned dwords. Mode 0: dword 2 (`word@60 + k`) indexes the
    /// side table; mode 1: the pointer does. `u32::MAX` if the pointer or id is not a
    /// triangle slot of this image.
    pub fn primitive_id(&self, triangle_pointer: NodePointer, result: &[u32; 4]) -> u32 {
        let slot = match self.descriptor.triangle_return_mode {
            TriangleReturnMode::TriangleId => Some(result[2] as usize),
            TriangleReturnMode::Barycentrics => self.slot_of(triangle_pointer),
        };
        slot.and_then(|s| self.slot_primitive.get(s).copied())
            .unwrap_or(u32::MAX)
    }

    /// The side-table slot `4 * o + k` of a triangle pointer.
    pub fn slot_of(&self, triangle_pointer: NodePointer) -> Option<usize> {
        let p = triangle_pointer;
        let k = p.node_type().triangle_index()?;
        let o = *self.triangle_node_ordinal.get(p.address_64() as usize)?;
        (o != u32::MAX).then(|| 4 * o as usize + k)
    }

    /// Parent node pointer of a node (for stackless walk-back traversals), `None` for the
    /// root and for pointers that name no node of this image.
    pub fn parent(&self, node_pointer: NodePointer) -> Option<NodePointer> {
        let p = node_pointer;
        let parent = if !p.is_triangle() {
            // Box nodes, and the user nodes of two-level images (instance and procedural
            // leaves), have one parent per block.
            *self.box_parent.get(p.address_64() as usize)?
        } else {
            *self.slot_parent.get(self.slot_of(node_pointer)?)?
        };
        (!parent.is_invalid()).then_some(parent)
    }

    /// The triangle pointers a box child pointer stands for, in the order to test them:
    /// the pointer itself, except with leaf chains, where type k expands to the pointers of
    /// triangles k, k-1, ..., 0 of the same node. Empty for box and INVALID pointers.
    pub fn leaf_triangles(&self, pointer: NodePointer) -> impl Iterator<Item = NodePointer> {
        let k = if pointer.is_invalid() {
            None
        } else {
            pointer.node_type().triangle_index()
        };
        let (first, last) = match k {
            None => (1, 0),
            Some(k) if self.leaf_chains => (0, k as u32),
            Some(k) => (k as u32, k as u32),
        };
        (first..=last)
            .rev()
            .map(move |j| pointer.with_type(NodeType::triangle(j as usize)))
    }

    /// Number of 64-byte blocks (a box32 node counts two).
    pub fn node_count_64(&self) -> usize {
        self.bytes.len() / 64
    }
}
