//! The 128-bit BVH resource descriptor (T#).
//!
//! Bit layout: `../shared/spec/rt-hardware.md` "The BVH descriptor" and
//! `../shared/spec/semantics.md` section 2 (which names bits 122:121 `llc_noalloc`).
//!
//! | bits    | field                | dword view              |
//! |---------|----------------------|-------------------------|
//! | 39:0    | base address / 256   | dword0, dword1\[7:0\]     |
//! | 54:40   | reserved, must be 0  | dword1\[22:8\]            |
//! | 62:55   | box grow (ULPs)      | dword1\[30:23\]           |
//! | 63      | box sorting enable   | dword1\[31\]              |
//! | 105:64  | size (nodes - 1)     | dword2, dword3\[9:0\]     |
//! | 119:106 | reserved, must be 0  | dword3\[23:10\]           |
//! | 120     | triangle return mode | dword3\[24\]              |
//! | 122:121 | LLC no-alloc         | dword3\[26:25\]           |
//! | 123     | big pages            | dword3\[27\]              |
//! | 127:124 | type, must be 8      | dword3\[31:28\]           |

use crate::error::{Error, Result};

/// What a triangle query returns in dwords 2 and 3 (descriptor bit 120).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TriangleReturnMode {
    /// Mode 0: `{t_num, t_denom, triangle_id, hit_status}`, triangle id = word@60 + k.
    #[default]
    TriangleId = 0,
    /// Mode 1: `{t_num, t_denom, i_num, j_num}`, word@60 is the IJ control word.
    Barycentrics = 1,
}

impl TriangleReturnMode {
    pub fn from_bit(bit: u32) -> Self {
        if bit & 1 == 0 {
            TriangleReturnMode::TriangleId
        } else {
            TriangleReturnMode::Barycentrics
        }
    }
}

/// The descriptor's type field must hold this value (bits 127:124).
pub const BVH_DESCRIPTOR_TYPE: u32 = 8;

/// Largest value of the 40-bit base address field.
pub const MAX_BASE_ADDRESS_256: u64 = (1 << 40) - 1;
/// Largest value of the 42-bit size field.
pub const MAX_SIZE_MINUS_ONE: u64 = (1 << 42) - 1;

/// The 128-bit BVH descriptor, field by field. The type field is implicit (always 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BvhDescriptor {
    /// Bits 39:0: BVH base address in units of 256 bytes.
    pub base_address_256: u64,
    /// Bits 62:55: ULPs of growth applied to the far distance in the ray/box test.
    pub box_grow_ulps: u8,
    /// Bit 63: return hit children sorted nearest first.
    pub box_sort_enable: bool,
    /// Bits 105:64: number of 64-byte nodes minus one, for the bounds check.
    pub size_minus_one: u64,
    /// Bit 120.
    pub triangle_return_mode: TriangleReturnMode,
    /// Bits 122:121: Infinity Cache policy; no functional effect.
    pub llc_noalloc: u8,
    /// Bit 123: whole resource in pages of 64 KiB or more; no functional effect.
    pub big_page: bool,
}

impl Default for BvhDescriptor {
    /// Base 0, no bounds limit, no growth, sorting on, mode 0, big pages (the console's usual
    /// setting, `rt-hardware.md`).
    fn default() -> Self {
        BvhDescriptor {
            base_address_256: 0,
            box_grow_ulps: 0,
            box_sort_enable: true,
            size_minus_one: MAX_SIZE_MINUS_ONE,
            triangle_return_mode: TriangleReturnMode::TriangleId,
            llc_noalloc: 0,
            big_page: true,
        }
    }
}

impl BvhDescriptor {
    /// Packs the descriptor into its four dwords, dword 0 first.
    ///
    /// Panics if a field is wider than its bit range (a bug in the caller: build
    /// descriptors from user input through [`BvhDescriptor::from_dwords`]).
    pub fn to_dwords(&self) -> [u32; 4] {
        assert!(
            self.base_address_256 <= MAX_BASE_ADDRESS_256,
            "base address exceeds 40 bits"
        );
        assert!(
            self.size_minus_one <= MAX_SIZE_MINUS_ONE,
            "size exceeds 42 bits"
        );
        assert!(self.llc_noalloc <= 3, "llc_noalloc exceeds 2 bits");
        let dword0 = self.base_address_256 as u32;
        let dword1 = ((self.base_address_256 >> 32) as u32)
            | (self.box_grow_ulps as u32) << 23
            | (self.box_sort_enable as u32) << 31;
        let dword2 = self.size_minus_one as u32;
        let dword3 = ((self.size_minus_one >> 32) as u32)
            | (self.triangle_return_mode as u32) << 24
            | (self.llc_noalloc as u32) << 25
            | (self.big_page as u32) << 27
            | BVH_DESCRIPTOR_TYPE << 28;
        [dword0, dword1, dword2, dword3]
    }

    /// Unpacks four dwords (dword 0 first). Rejects a type other than 8 and non-zero
    /// reserved bits, naming the bit range.
    pub fn from_dwords(dwords: [u32; 4]) -> Result<Self> {
        let [d0, d1, d2, d3] = dwords;
        let ty = d3 >> 28;
        if ty != BVH_DESCRIPTOR_TYPE {
            return Err(Error::field(
                "descriptor type (bits 127:124)",
                format!("is {ty}, must be {BVH_DESCRIPTOR_TYPE}"),
            ));
        }
        let reserved_lo = (d1 >> 8) & 0x7fff;
        if reserved_lo != 0 {
            return Err(Error::field(
                "descriptor reserved bits 54:40",
                format!("must be zero, are {reserved_lo:#x}"),
            ));
        }
        let reserved_hi = (d3 >> 10) & 0x3fff;
        if reserved_hi != 0 {
            return Err(Error::field(
                "descriptor reserved bits 119:106",
                format!("must be zero, are {reserved_hi:#x}"),
            ));
        }
        Ok(BvhDescriptor {
            base_address_256: d0 as u64 | ((d1 & 0xff) as u64) << 32,
            box_grow_ulps: ((d1 >> 23) & 0xff) as u8,
            box_sort_enable: d1 >> 31 != 0,
            size_minus_one: d2 as u64 | ((d3 & 0x3ff) as u64) << 32,
            triangle_return_mode: TriangleReturnMode::from_bit(d3 >> 24),
            llc_noalloc: ((d3 >> 25) & 3) as u8,
            big_page: (d3 >> 27) & 1 != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_positions_match_the_spec_table() {
        let d = BvhDescriptor {
            base_address_256: 0xAB_1234_5678,
            box_grow_ulps: 6,
            box_sort_enable: true,
            size_minus_one: 0x2_8765_4321,
            triangle_return_mode: TriangleReturnMode::Barycentrics,
            llc_noalloc: 2,
            big_page: true,
        };
        let w = d.to_dwords();
        assert_eq!(w[0], 0x1234_5678);
        // base[39:32] = 0xAB in dword1[7:0], grow 6 at bit 23, sort at bit 31.
        assert_eq!(w[1], 0xAB | (6 << 23) | (1 << 31));
        assert_eq!(w[2], 0x8765_4321);
        // size[41:32] = 2, mode at 24, llc 2 at 25, big page at 27, type 8 at 28.
        assert_eq!(w[3], 2 | (1 << 24) | (2 << 25) | (1 << 27) | (8 << 28));
        assert_eq!(BvhDescriptor::from_dwords(w).unwrap(), d);
    }

    #[test]
    fn rejects_wrong_type_and_reserved_bits() {
        let good = BvhDescriptor::default().to_dwords();
        let mut bad = good;
        bad[3] = (bad[3] & 0x0fff_ffff) | (7 << 28);
        let e = BvhDescriptor::from_dwords(bad).unwrap_err().to_string();
        assert!(e.contains("127:124") && e.contains('7'), "{e}");
        let mut bad = good;
        bad[1] |= 1 << 8;
        assert!(BvhDescriptor::from_dwords(bad)
            .unwrap_err()
            .to_string()
            .contains("54:40"));
        let mut bad = good;
        bad[3] |= 1 << 23;
        assert!(BvhDescriptor::from_dwords(bad)
            .unwrap_err()
            .to_string()
            .contains("119:106"));
    }
}
