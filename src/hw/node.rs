//! The three hardware node formats, byte for byte.
//!
//! Tables: `../shared/spec/rt-hardware.md` "FP16 box node", "FP32 box node", "Triangle node";
//! `semantics.md` 4.1-4.3. All nodes are 64-byte aligned in memory; the structs themselves
//! only need 4-byte alignment, so read them from byte images with
//! [`bytemuck::pod_read_unaligned`].

use super::pointer::NodePointer;
use bytemuck::{Pod, Zeroable};
use half::f16;
use std::mem::{offset_of, size_of};

/// FP32 box node (type 5), 128 bytes.
///
/// | bytes   | data                                   |
/// |---------|----------------------------------------|
/// | 15:0    | child pointers 0-3 (u32)               |
/// | 16+24i  | child i box: min.xyz then max.xyz, f32 |
/// | 127:112 | 16 free bytes (ignored by the hardware)|
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BoxNodeF32 {
    /// Bytes 15:0: child pointers, passed through verbatim by the instruction.
    pub children: [NodePointer; 4],
    /// Bytes 111:16: per child `[min.x, min.y, min.z, max.x, max.y, max.z]`.
    pub boxes: [[f32; 6]; 4],
    /// Bytes 127:112: free for software.
    pub user: [u32; 4],
}

/// FP16 box node (type 4), 64 bytes.
///
/// | bytes  | data                                          |
/// |--------|-----------------------------------------------|
/// | 15:0   | child pointers 0-3 (u32)                      |
/// | 16+12i | child i box: min.xyz then max.xyz, binary16   |
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BoxNodeF16 {
    /// Bytes 15:0: child pointers, passed through verbatim by the instruction.
    pub children: [NodePointer; 4],
    /// Bytes 63:16: per child the binary16 bit patterns of
    /// `[min.x, min.y, min.z, max.x, max.y, max.z]`.
    pub boxes: [[u16; 6]; 4],
}

/// Triangle node (types 0-3), 64 bytes: five vertices and one word.
///
/// | bytes | data                                                        |
/// |-------|-------------------------------------------------------------|
/// | 11:0  | V0.xyz (f32) ... 59:48 V4.xyz                               |
/// | 63:60 | triangle id (mode 0) or IJ control word (mode 1)            |
///
/// Triangle k uses the vertices in [`TRIANGLE_VERTICES`]`[k]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct TriangleNode {
    /// Bytes 59:0: V0..V4.
    pub vertices: [[f32; 3]; 5],
    /// Bytes 63:60: base triangle id (mode 0) or IJ control word (mode 1).
    pub word: u32,
}

/// The fixed connectivity of the five vertices (`rt-hardware.md` "Triangle node"):
/// triangle 0 = V0 V1 V2, 1 = V1 V3 V2, 2 = V2 V3 V4, 3 = V2 V4 V0.
pub const TRIANGLE_VERTICES: [[usize; 3]; 4] = [[0, 1, 2], [1, 3, 2], [2, 3, 4], [2, 4, 0]];

const _: () = {
    assert!(size_of::<BoxNodeF32>() == 128);
    assert!(offset_of!(BoxNodeF32, children) == 0);
    assert!(offset_of!(BoxNodeF32, boxes) == 16);
    assert!(offset_of!(BoxNodeF32, user) == 112);
    assert!(size_of::<BoxNodeF16>() == 64);
    assert!(offset_of!(BoxNodeF16, children) == 0);
    assert!(offset_of!(BoxNodeF16, boxes) == 16);
    assert!(size_of::<TriangleNode>() == 64);
    assert!(offset_of!(TriangleNode, vertices) == 0);
    assert!(offset_of!(TriangleNode, word) == 60);
};

impl BoxNodeF32 {
    /// Child i's box as `(min, max)`.
    pub fn child_box(&self, i: usize) -> ([f32; 3], [f32; 3]) {
        let b = self.boxes[i];
        ([b[0], b[1], b[2]], [b[3], b[4], b[5]])
    }
}

impl BoxNodeF16 {
    /// Child i's box widened exactly to f32, as `(min, max)` (`semantics.md` 6.1).
    pub fn child_box(&self, i: usize) -> ([f32; 3], [f32; 3]) {
        let w = self.boxes[i].map(|h| f16::from_bits(h).to_f32());
        ([w[0], w[1], w[2]], [w[3], w[4], w[5]])
    }
}

impl TriangleNode {
    /// The three vertices of triangle `k` in hardware order.
    pub fn triangle(&self, k: usize) -> [[f32; 3]; 3] {
        TRIANGLE_VERTICES[k].map(|v| self.vertices[v])
    }

    /// The node's sixteen dwords in memory order: V0.x, V0.y, ... V4.z (dwords 0-14, vertex
    /// v's component a at `3 v + a`), then the word at byte 60 (dword 15).
    #[inline(always)]
    pub fn dwords(&self) -> &[u32; 16] {
        bytemuck::cast_ref(self)
    }
}

/// Rounds an f32 to the nearest binary16 not above it (min bounds: `semantics.md` 6.2).
pub fn f16_round_down(x: f32) -> f16 {
    let h = f16::from_f32(x);
    if x.is_nan() || h.to_f32() <= x {
        h
    } else {
        next_f16_down(h)
    }
}

/// Rounds an f32 to the nearest binary16 not below it (max bounds: `semantics.md` 6.2).
pub fn f16_round_up(x: f32) -> f16 {
    let h = f16::from_f32(x);
    if x.is_nan() || h.to_f32() >= x {
        h
    } else {
        -next_f16_down(-h)
    }
}

/// The largest binary16 strictly below `h` (h not NaN, not -inf).
fn next_f16_down(h: f16) -> f16 {
    let bits = h.to_bits();
    if bits == 0x0000 || bits == 0x8000 {
        // Below +-0 lies the negative smallest subnormal.
        return f16::from_bits(0x8001);
    }
    if bits & 0x8000 == 0 {
        f16::from_bits(bits - 1)
    } else {
        f16::from_bits(bits + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_bounds_round_outward() {
        for &x in &[
            0.1f32, -0.1, 1.0, 65504.0, 70000.0, -70000.0, 1e-8, -1e-8, 0.0, 3.3,
        ] {
            let lo = f16_round_down(x).to_f32();
            let hi = f16_round_up(x).to_f32();
            assert!(lo <= x && x <= hi, "{x}: [{lo}, {hi}]");
            // Tight: the neighbours outward are the next representable values.
            if x.is_finite() && x.abs() <= 65504.0 {
                assert!(
                    hi - lo <= (x.abs() / 512.0).max(6.0e-8),
                    "{x}: [{lo}, {hi}]"
                );
            }
        }
        assert_eq!(f16_round_up(70000.0).to_f32(), f32::INFINITY);
        assert_eq!(f16_round_down(70000.0).to_f32(), 65504.0);
        assert_eq!(f16_round_down(1.0).to_f32(), 1.0);
    }

    #[test]
    fn triangle_connectivity_matches_the_table() {
        let mut node = TriangleNode::zeroed();
        for (v, vert) in node.vertices.iter_mut().enumerate() {
            *vert = [v as f32; 3];
        }
        let firsts: Vec<[f32; 3]> = (0..4).map(|k| node.triangle(k).map(|p| p[0])).collect();
        assert_eq!(
            firsts,
            [
                [0.0, 1.0, 2.0],
                [1.0, 3.0, 2.0],
                [2.0, 3.0, 4.0],
                [2.0, 4.0, 0.0]
            ]
        );
    }
}
