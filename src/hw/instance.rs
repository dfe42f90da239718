//! What the image holds for two-level scenes: instance nodes (pointer type 6) and
//! procedural leaves (type 7). The instruction treats both as user nodes and returns all
//! ones for them (`semantics.md` 3.2, 4.5); the traversal shader reads them. The layouts
//! are AMD GPURT's for RDNA2 (ray-tracing IP 1.1): `InstanceDesc.hlsli` and
//! `gfx10/InstanceNode1_0.hlsli` (struct `InstanceNode`: the D3D12 instance descriptor with
//! the world-to-object matrix, then `InstanceSidebandData1_1`), and
//! `gfx10/ProceduralNode1_0.hlsli` (struct `ProceduralNode`).

use super::NodePointer;
use bytemuck::{Pod, Zeroable};
use std::mem::{offset_of, size_of};

/// Instance flags, with the bit values of `D3D12_RAYTRACING_INSTANCE_FLAGS` (stored in the
/// instance node's flags byte, read by the traversal shader, never by the instruction).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct InstanceFlags(pub u8);

impl InstanceFlags {
    pub const NONE: InstanceFlags = InstanceFlags(0);
    /// No facing culling for this instance's triangles.
    pub const TRIANGLE_CULL_DISABLE: InstanceFlags = InstanceFlags(0x1);
    /// Counter-clockwise triangles (seen from the ray origin, object space) are front faces.
    pub const TRIANGLE_FRONT_COUNTERCLOCKWISE: InstanceFlags = InstanceFlags(0x2);
    /// Every geometry of the instance is opaque.
    pub const FORCE_OPAQUE: InstanceFlags = InstanceFlags(0x4);
    /// Every geometry of the instance is non-opaque.
    pub const FORCE_NON_OPAQUE: InstanceFlags = InstanceFlags(0x8);

    /// The flags and their scene-file names, in bit order.
    pub const NAMES: [(InstanceFlags, &'static str); 4] = [
        (Self::TRIANGLE_CULL_DISABLE, "triangle_cull_disable"),
        (
            Self::TRIANGLE_FRONT_COUNTERCLOCKWISE,
            "triangle_front_counterclockwise",
        ),
        (Self::FORCE_OPAQUE, "force_opaque"),
        (Self::FORCE_NON_OPAQUE, "force_non_opaque"),
    ];

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: InstanceFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flag named `name` (scene-file spelling), if any.
    pub fn from_name(name: &str) -> Option<InstanceFlags> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }
}

impl std::ops::BitOr for InstanceFlags {
    type Output = InstanceFlags;
    fn bitor(self, rhs: InstanceFlags) -> InstanceFlags {
        InstanceFlags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for InstanceFlags {
    fn bitor_assign(&mut self, rhs: InstanceFlags) {
        self.0 |= rhs.0;
    }
}

/// The pointer type of an instance node: user node 0 (GPURT's and RADV's choice).
pub const INSTANCE_NODE_TYPE: super::NodeType = super::NodeType::User6;

/// The pointer type of a procedural leaf: user node 1 (GPURT's and RADV's choice).
pub const PROCEDURAL_NODE_TYPE: super::NodeType = super::NodeType::User7;

/// GPURT's instance base-pointer flag (64-bit pointer bit 62, bit 30 of the high dword) set
/// when the BLAS holds procedural primitives: the only flag the RDNA2 traversal reads.
pub const BASE_POINTER_PROCEDURAL_BLAS: u32 = 1 << 30;

/// GPURT's instance base-pointer flag (64-bit pointer bit 63, bit 31 of the high dword) set
/// when the BLAS holds triangles.
pub const BASE_POINTER_TRIANGLE_BLAS: u32 = 1 << 31;

/// Instance node (type 6), 128 bytes, 64-byte aligned (GPURT `InstanceNode`, RDNA2).
///
/// | bytes   | data                                                              |
/// |---------|-------------------------------------------------------------------|
/// | 47:0    | world-to-object 3x4 matrix, row-major, f32                        |
/// | 51:48   | instance id (bits 23:0), instance mask (bits 31:24)               |
/// | 55:52   | hit-group contribution (bits 23:0), instance flags (bits 31:24)   |
/// | 63:56   | BLAS base pointer (byte address >> 3), flags in bits 63:54        |
/// | 67:64   | instance index (sideband)                                         |
/// | 71:68   | BLAS node pointer to start at: the BLAS root, or an interior node |
/// | 75:72   | BLAS metadata size                                                |
/// | 79:76   | padding                                                           |
/// | 127:80  | object-to-world 3x4 matrix, row-major, f32 (the instance's own)   |
///
/// The traversal starts the BLAS at `base + blas_node_pointer`. In wavetrace's images every
/// structure lives in one image under one descriptor of base 0, so the base pointer's
/// address bits are 0 and `blas_node_pointer` is the BLAS root's (or entry node's)
/// pointer in that image.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct InstanceNode {
    /// Bytes 47:0: world-to-object, the inverse of `object_to_world`.
    pub world_to_object: [[f32; 4]; 3],
    /// Bytes 51:48: id in bits 23:0, mask in bits 31:24.
    pub id_and_mask: u32,
    /// Bytes 55:52: hit-group contribution in bits 23:0, [`InstanceFlags`] in bits 31:24.
    pub contribution_and_flags: u32,
    /// Bytes 59:56: low dword of the BLAS base pointer.
    pub base_pointer_lo: u32,
    /// Bytes 63:60: high dword of the BLAS base pointer, with the flag bits 31:22.
    pub base_pointer_hi: u32,
    /// Bytes 67:64: the instance's index in the scene.
    pub instance_index: u32,
    /// Bytes 71:68: the BLAS node the traversal continues at.
    pub blas_node_pointer: NodePointer,
    /// Bytes 75:72: BLAS metadata size (0: wavetrace's BLASes have no metadata block).
    pub blas_metadata_size: u32,
    /// Bytes 79:76.
    pub padding: u32,
    /// Bytes 127:80: object-to-world.
    pub object_to_world: [[f32; 4]; 3],
}

/// Procedural leaf (type 7), 64 bytes (GPURT `ProceduralNode`, RDNA2). Its box also sits in
/// the parent box node's child slot, which is the box the instruction tests; the traversal
/// never tests the leaf's own copy.
///
/// | bytes | data                                                        |
/// |-------|-------------------------------------------------------------|
/// | 11:0  | box min.xyz (f32)                                           |
/// | 23:12 | box max.xyz (f32)                                           |
/// | 47:24 | padding                                                     |
/// | 51:48 | geometry index (bits 23:0), geometry flags (bits 25:24)     |
/// | 55:52 | reserved                                                    |
/// | 59:56 | primitive index                                             |
/// | 63:60 | reserved                                                    |
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct ProceduralNode {
    pub box_min: [f32; 3],
    pub box_max: [f32; 3],
    pub padding: [u32; 6],
    /// Bytes 51:48: geometry index in bits 23:0, [`GeometryFlags`] in bits 25:24.
    pub geometry_index_and_flags: u32,
    pub reserved0: u32,
    /// Bytes 59:56: the primitive's index in its BLAS.
    pub primitive_index: u32,
    pub reserved1: u32,
}

/// Geometry flags (`D3D12_RAYTRACING_GEOMETRY_FLAGS`), as a procedural leaf stores them.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GeometryFlags(pub u8);

impl GeometryFlags {
    /// No any-hit shader runs: every hit is accepted.
    pub const OPAQUE: GeometryFlags = GeometryFlags(0x1);
    /// The any-hit shader runs at most once per primitive and ray.
    pub const NO_DUPLICATE_ANYHIT_INVOCATION: GeometryFlags = GeometryFlags(0x2);
}

const _: () = {
    assert!(size_of::<InstanceNode>() == 128);
    assert!(offset_of!(InstanceNode, world_to_object) == 0);
    assert!(offset_of!(InstanceNode, id_and_mask) == 48);
    assert!(offset_of!(InstanceNode, contribution_and_flags) == 52);
    assert!(offset_of!(InstanceNode, base_pointer_lo) == 56);
    assert!(offset_of!(InstanceNode, base_pointer_hi) == 60);
    assert!(offset_of!(InstanceNode, instance_index) == 64);
    assert!(offset_of!(InstanceNode, blas_node_pointer) == 68);
    assert!(offset_of!(InstanceNode, blas_metadata_size) == 72);
    assert!(offset_of!(InstanceNode, object_to_world) == 80);
    assert!(size_of::<ProceduralNode>() == 64);
    assert!(offset_of!(ProceduralNode, box_min) == 0);
    assert!(offset_of!(ProceduralNode, box_max) == 12);
    assert!(offset_of!(ProceduralNode, geometry_index_and_flags) == 48);
    assert!(offset_of!(ProceduralNode, primitive_index) == 56);
};

impl InstanceNode {
    /// The instance id (bits 23:0 of dword 12).
    pub const fn id(&self) -> u32 {
        self.id_and_mask & 0x00FF_FFFF
    }

    /// The instance mask (bits 31:24 of dword 12).
    pub const fn mask(&self) -> u8 {
        (self.id_and_mask >> 24) as u8
    }

    /// The instance flags (bits 31:24 of dword 13).
    pub const fn flags(&self) -> InstanceFlags {
        InstanceFlags((self.contribution_and_flags >> 24) as u8)
    }

    /// Whether the BLAS holds procedural primitives (base-pointer bit 62).
    pub const fn procedural_blas(&self) -> bool {
        self.base_pointer_hi & BASE_POINTER_PROCEDURAL_BLAS != 0
    }

    /// Packs id (24 bits) and mask.
    pub const fn pack_id_and_mask(id: u32, mask: u8) -> u32 {
        (id & 0x00FF_FFFF) | (mask as u32) << 24
    }

    /// Packs the hit-group contribution (24 bits) and flags.
    pub const fn pack_contribution_and_flags(contribution: u32, flags: InstanceFlags) -> u32 {
        (contribution & 0x00FF_FFFF) | (flags.0 as u32) << 24
    }
}

impl ProceduralNode {
    /// The geometry flags (bits 25:24 of dword 12).
    pub const fn geometry_flags(&self) -> GeometryFlags {
        GeometryFlags(((self.geometry_index_and_flags >> 24) & 3) as u8)
    }

    /// Packs a geometry index (24 bits) and flags.
    pub const fn pack_geometry(index: u32, flags: GeometryFlags) -> u32 {
        (index & 0x00FF_FFFF) | ((flags.0 as u32) & 3) << 24
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed fields come back out of the bytes where GPURT's offsets put them.
    #[test]
    fn instance_fields_sit_at_gpurt_offsets() {
        let mut node = InstanceNode::zeroed();
        node.id_and_mask = InstanceNode::pack_id_and_mask(0x12_3456, 0xA5);
        node.contribution_and_flags = InstanceNode::pack_contribution_and_flags(
            7,
            InstanceFlags::FORCE_OPAQUE | InstanceFlags::TRIANGLE_CULL_DISABLE,
        );
        node.base_pointer_hi = BASE_POINTER_PROCEDURAL_BLAS;
        node.blas_node_pointer = NodePointer::from_u32(0x0000_0405);
        let bytes = bytemuck::bytes_of(&node);
        assert_eq!(bytes[48..52], [0x56, 0x34, 0x12, 0xA5]);
        assert_eq!(bytes[52..56], [7, 0, 0, 0x05]);
        assert_eq!(bytes[68..72], [0x05, 0x04, 0, 0]);
        assert_eq!(bytes[63], 0x40);
        assert_eq!((node.id(), node.mask()), (0x12_3456, 0xA5));
        assert!(node.flags().contains(InstanceFlags::FORCE_OPAQUE));
        assert!(!node.flags().contains(InstanceFlags::FORCE_NON_OPAQUE));
        assert!(node.procedural_blas());
        let mut leaf = ProceduralNode::zeroed();
        leaf.geometry_index_and_flags = ProceduralNode::pack_geometry(3, GeometryFlags::OPAQUE);
        leaf.primitive_index = 9;
        let bytes = bytemuck::bytes_of(&leaf);
        assert_eq!(bytes[48..52], [3, 0, 0, 0x01]);
        assert_eq!(bytes[56..60], [9, 0, 0, 0]);
        assert_eq!(leaf.geometry_flags(), GeometryFlags::OPAQUE);
    }
}
