//! Node pointers: the 32-bit form ([`NodePointer`]) and the 64-bit form ([`NodePointer64`]).
//!
//! `../shared/spec/rt-hardware.md` "Node pointer", `semantics.md` 3.1: bits 2:0 are the node
//! type, the rest is the node address in 64-byte units relative to the descriptor's base;
//! fetch address = base_address_256 * 256 + address_64 * 64 (kept modulo 2^48, the GPU VA
//! width). `image_bvh_intersect_ray` takes the 32-bit form, `image_bvh64_intersect_ray` the
//! 64-bit one; box nodes store 32-bit child pointers.

use bytemuck::{Pod, Zeroable};

/// The node type / test requested (pointer bits 2:0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// Triangle k (0..=3) of a triangle node.
    Triangle0 = 0,
    Triangle1 = 1,
    Triangle2 = 2,
    Triangle3 = 3,
    /// Four FP16 boxes, 64-byte node.
    BoxF16 = 4,
    /// Four FP32 boxes, 128-byte node.
    BoxF32 = 5,
    /// Reserved / software node (instance nodes on real drivers); the hardware returns all ones.
    User6 = 6,
    /// Reserved / software node (procedural nodes on real drivers); the hardware returns all ones.
    User7 = 7,
}

impl NodeType {
    /// Decodes the low three bits of a pointer.
    pub const fn from_bits(bits: u64) -> Self {
        match bits & 7 {
            0 => NodeType::Triangle0,
            1 => NodeType::Triangle1,
            2 => NodeType::Triangle2,
            3 => NodeType::Triangle3,
            4 => NodeType::BoxF16,
            5 => NodeType::BoxF32,
            6 => NodeType::User6,
            _ => NodeType::User7,
        }
    }

    /// The triangle index 0..=3 for the triangle types.
    pub const fn triangle_index(self) -> Option<usize> {
        match self {
            NodeType::Triangle0 => Some(0),
            NodeType::Triangle1 => Some(1),
            NodeType::Triangle2 => Some(2),
            NodeType::Triangle3 => Some(3),
            _ => None,
        }
    }

    /// The triangle type for index `k` (0..=3).
    pub const fn triangle(k: usize) -> Self {
        assert!(k < 4, "triangle index out of range");
        NodeType::from_bits(k as u64)
    }

    pub const fn is_box(self) -> bool {
        matches!(self, NodeType::BoxF16 | NodeType::BoxF32)
    }

    /// Bytes the hardware fetches for a node of this type.
    pub const fn fetch_bytes(self) -> usize {
        match self {
            NodeType::BoxF32 => 128,
            _ => 64,
        }
    }

    /// Short name used in reports ("tri0".."tri3", "box16", "box32", "user6", "user7").
    pub const fn name(self) -> &'static str {
        match self {
            NodeType::Triangle0 => "tri0",
            NodeType::Triangle1 => "tri1",
            NodeType::Triangle2 => "tri2",
            NodeType::Triangle3 => "tri3",
            NodeType::BoxF16 => "box16",
            NodeType::BoxF32 => "box32",
            NodeType::User6 => "user6",
            NodeType::User7 => "user7",
        }
    }
}

/// Mask of the 48-bit GPU virtual address space in which fetch addresses are computed.
pub const VA_MASK: u64 = (1 << 48) - 1;

/// A node pointer in its 32-bit form: VGPR 0 of `image_bvh_intersect_ray`, and each child
/// slot of a box node (`rt-hardware.md` "Node pointer").
///
/// | bits | field                                               |
/// |------|-----------------------------------------------------|
/// | 2:0  | node type ([`NodeType`]): 0-3 triangle k, 4 box16, 5 box32, 6-7 user |
/// | 31:3 | node address in 64-byte units from the descriptor's base |
///
/// `0xFFFFFFFF` ([`NodePointer::INVALID`]) is "no child": the value an empty box slot holds
/// and a missed child returns.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Pod, Zeroable)]
pub struct NodePointer(u32);

const _: () = assert!(std::mem::size_of::<NodePointer>() == 4);

impl NodePointer {
    /// The pointer the hardware treats as "no child" (and returns for a missed box).
    pub const INVALID: NodePointer = NodePointer(0xFFFF_FFFF);

    /// A pointer to the node at `address_64` (64-byte units from the base) with type `ty`;
    /// panics if the address does not fit the 29 bits of the 32-bit form (a caller's bug).
    pub const fn new(address_64: u64, ty: NodeType) -> Self {
        assert!(
            address_64 < 1 << 29,
            "node address does not fit the 32-bit form"
        );
        NodePointer(((address_64 as u32) << 3) | ty as u32)
    }

    /// From the raw 32 bits.
    #[inline(always)]
    pub const fn from_u32(raw: u32) -> Self {
        NodePointer(raw)
    }

    /// The raw 32 bits.
    #[inline(always)]
    pub const fn to_u32(self) -> u32 {
        self.0
    }

    /// The node type (bits 2:0).
    #[inline(always)]
    pub const fn node_type(self) -> NodeType {
        NodeType::from_bits(self.0 as u64)
    }

    /// The type field's raw bits (2:0): [`Self::node_type`] as a number.
    #[inline(always)]
    pub const fn type_bits(self) -> u32 {
        self.0 & 7
    }

    /// Whether the type is a box node (4 or 5).
    #[inline(always)]
    pub const fn is_box(self) -> bool {
        self.0 & 6 == 4
    }

    /// Whether the type is a triangle of a triangle node (0-3).
    #[inline(always)]
    pub const fn is_triangle(self) -> bool {
        self.0 & 4 == 0
    }

    /// Whether the type is a user node (6 or 7).
    #[inline(always)]
    pub const fn is_user(self) -> bool {
        self.0 & 6 == 6
    }

    /// Whether this is [`NodePointer::INVALID`].
    #[inline(always)]
    pub const fn is_invalid(self) -> bool {
        self.0 == Self::INVALID.0
    }

    /// Triangle k of a triangle pointer (bits 1:0); for other types, the same bits mean
    /// nothing (check [`Self::is_triangle`] first).
    #[inline(always)]
    pub const fn triangle_index(self) -> usize {
        (self.0 & 3) as usize
    }

    /// The address field (bits 31:3): the node's 64-byte block from the base.
    #[inline(always)]
    pub const fn address_64(self) -> u32 {
        self.0 >> 3
    }

    /// The same node with type `ty` (the address kept).
    #[inline(always)]
    pub const fn with_type(self, ty: NodeType) -> Self {
        NodePointer((self.0 & !7) | ty as u32)
    }

    /// The byte address the hardware fetches from, modulo 2^48.
    pub const fn fetch_address(self, base_address_256: u64) -> u64 {
        NodePointer64::from_u64(self.0 as u64).fetch_address(base_address_256)
    }
}

impl std::fmt::Debug for NodePointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_invalid() {
            write!(f, "NodePointer(INVALID)")
        } else {
            let name = self.node_type().name();
            write!(
                f,
                "NodePointer({:#x}: {name} @{})",
                self.0,
                self.address_64()
            )
        }
    }
}

impl std::fmt::LowerHex for NodePointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

/// A node pointer in its 64-bit form (`image_bvh64_intersect_ray`): the same fields, with
/// the address in bits 63:3.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Pod, Zeroable)]
pub struct NodePointer64(u64);

impl NodePointer64 {
    /// A pointer to the node at `address_64` (64-byte units from the base) with type `ty`.
    pub const fn new(address_64: u64, ty: NodeType) -> Self {
        NodePointer64((address_64 << 3) | ty as u64)
    }

    /// From the raw 64 bits.
    pub const fn from_u64(raw: u64) -> Self {
        NodePointer64(raw)
    }

    /// The raw 64 bits.
    pub const fn to_u64(self) -> u64 {
        self.0
    }

    /// The 32-bit form, when the address fits in it.
    pub const fn to_32(self) -> Option<NodePointer> {
        if self.0 <= u32::MAX as u64 {
            Some(NodePointer(self.0 as u32))
        } else {
            None
        }
    }

    /// The node type (bits 2:0).
    pub const fn node_type(self) -> NodeType {
        NodeType::from_bits(self.0)
    }

    /// The address field (bits 63:3): node index in 64-byte units.
    pub const fn address_64(self) -> u64 {
        self.0 >> 3
    }

    /// The byte address the hardware fetches from, modulo 2^48.
    pub const fn fetch_address(self, base_address_256: u64) -> u64 {
        (base_address_256 << 8).wrapping_add(self.address_64().wrapping_mul(64)) & VA_MASK
    }
}

impl From<NodePointer> for NodePointer64 {
    fn from(p: NodePointer) -> Self {
        NodePointer64(p.0 as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_in_low_bits_address_in_64_byte_units() {
        let p = NodePointer::new(3, NodeType::BoxF16);
        assert_eq!(p.to_u32(), 0x1c);
        assert_eq!(p.node_type(), NodeType::BoxF16);
        assert_eq!(p.address_64(), 3);
        // base 1 (= 0x100 bytes) + 3 * 64 = 0x1c0.
        assert_eq!(p.fetch_address(1), 0x1c0);
        assert_eq!(NodePointer::from_u32(0x15).node_type(), NodeType::BoxF32);
        assert_eq!(NodePointer::from_u32(0x15).address_64(), 2);
    }

    #[test]
    fn sixty_four_bit_form_reaches_past_32_gib() {
        let p = NodePointer64::new(1 << 40, NodeType::Triangle3);
        assert_eq!(p.node_type(), NodeType::Triangle3);
        assert_eq!(p.fetch_address(0), (1u64 << 46) & VA_MASK);
        assert_eq!(p.to_32(), None);
        // Addresses wrap in the 48-bit VA space.
        let q = NodePointer64::new(1 << 42, NodeType::BoxF32);
        assert_eq!(q.fetch_address(1), 0x100);
        let small = NodePointer::new(7, NodeType::Triangle1);
        assert_eq!(NodePointer64::from(small).to_32(), Some(small));
    }

    #[test]
    fn all_eight_types_decode() {
        let names: Vec<_> = (0..8).map(|b| NodeType::from_bits(b).name()).collect();
        assert_eq!(
            names,
            ["tri0", "tri1", "tri2", "tri3", "box16", "box32", "user6", "user7"]
        );
        assert_eq!(NodeType::BoxF32.fetch_bytes(), 128);
        assert_eq!(NodeType::BoxF16.fetch_bytes(), 64);
    }

    /// The bit queries against the decoded type, for every type and a spread of addresses.
    #[test]
    fn queries_agree_with_the_decoded_type() {
        for raw in (0u32..64).chain([0xFFFF_FFF8, 0xFFFF_FFFF, 0x8000_0003]) {
            let p = NodePointer::from_u32(raw);
            let ty = p.node_type();
            assert_eq!(p.is_box(), ty.is_box(), "{p:?}");
            assert_eq!(p.is_triangle(), ty.triangle_index().is_some(), "{p:?}");
            assert_eq!(
                p.is_user(),
                matches!(ty, NodeType::User6 | NodeType::User7),
                "{p:?}"
            );
            if let Some(k) = ty.triangle_index() {
                assert_eq!(p.triangle_index(), k);
            }
            assert_eq!(p.with_type(ty), p);
            assert_eq!(p.address_64(), raw >> 3);
        }
        assert!(NodePointer::INVALID.is_invalid() && NodePointer::INVALID.is_user());
    }
}
