//! Node pointers: the 32-bit and 64-bit forms.
//!
//! `../shared/spec/rt-hardware.md` "Node pointer", `semantics.md` 3.1: bits 2:0 are the node
//! type, the rest is the node address in 64-byte units relative to the descriptor's base;
//! fetch address = base_address_256 * 256 + address_64 * 64 (kept modulo 2^48, the GPU VA width).

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
    pub fn from_bits(bits: u64) -> Self {
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
    pub fn triangle_index(self) -> Option<usize> {
        match self {
            NodeType::Triangle0 => Some(0),
            NodeType::Triangle1 => Some(1),
            NodeType::Triangle2 => Some(2),
            NodeType::Triangle3 => Some(3),
            _ => None,
        }
    }

    /// The triangle type for index `k` (0..=3).
    pub fn triangle(k: usize) -> Self {
        assert!(k < 4, "triangle index {k} out of range");
        NodeType::from_bits(k as u64)
    }

    pub fn is_box(self) -> bool {
        matches!(self, NodeType::BoxF16 | NodeType::BoxF32)
    }

    /// Bytes the hardware fetches for a node of this type.
    pub fn fetch_bytes(self) -> usize {
        match self {
            NodeType::BoxF32 => 128,
            _ => 64,
        }
    }

    /// Short name used in reports ("tri0".."tri3", "box16", "box32", "user6", "user7").
    pub fn name(self) -> &'static str {
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

/// A node pointer, stored in its 64-bit form. The 32-bit form is the low dword.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodePointer(pub u64);

impl NodePointer {
    /// The 32-bit pointer the hardware treats as "no child" (and returns for a missed box).
    pub const INVALID: u32 = 0xFFFF_FFFF;

    /// A pointer to the node at `address_64` (64-byte units from the base) with type `ty`.
    pub fn new(address_64: u64, ty: NodeType) -> Self {
        NodePointer((address_64 << 3) | ty as u64)
    }

    /// From the 32-bit form.
    pub fn from_u32(raw: u32) -> Self {
        NodePointer(raw as u64)
    }

    /// The 32-bit form; panics if the address does not fit in 29 bits (a bug in the caller).
    pub fn to_u32(self) -> u32 {
        u32::try_from(self.0).expect("node pointer does not fit the 32-bit form")
    }

    pub fn node_type(self) -> NodeType {
        NodeType::from_bits(self.0)
    }

    /// The address field (bits 63:3, or 31:3 in the 32-bit form): node index in 64-byte units.
    pub fn address_64(self) -> u64 {
        self.0 >> 3
    }

    /// The byte address the hardware fetches from, modulo 2^48.
    pub fn fetch_address(self, base_address_256: u64) -> u64 {
        (base_address_256 << 8).wrapping_add(self.address_64().wrapping_mul(64)) & VA_MASK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_in_low_bits_address_in_64_byte_units() {
        let p = NodePointer::new(3, NodeType::BoxF16);
        assert_eq!(p.0, 0x1c);
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
        let p = NodePointer::new(1 << 40, NodeType::Triangle3);
        assert_eq!(p.node_type(), NodeType::Triangle3);
        assert_eq!(p.fetch_address(0), (1u64 << 46) & VA_MASK);
        // Addresses wrap in the 48-bit VA space.
        let q = NodePointer::new(1 << 42, NodeType::BoxF32);
        assert_eq!(q.fetch_address(1), 0x100);
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
}
