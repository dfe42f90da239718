//! LINEAR and 256-byte layouts (addrlib `ComputeSurfaceInfoLinear` and `MicroTiled`): every
//! level padded on its own, with no mip tail.

use super::geometry::Geometry;
use super::{align, ChainLayout, MipLayout};

/// Pads each level to the row piece (LINEAR: pitch to 256 bytes, height unpadded) or to whole
/// 256-byte micro blocks, and stores the levels smallest first, so each starts at a multiple
/// of 256 bytes.
pub(super) fn lay_out_chain(g: &Geometry, mips: &mut [MipLayout]) -> ChainLayout {
    let mut offset = 0u64;
    for mip in mips.iter_mut().rev() {
        mip.padded_w_el = align(mip.width_el, g.block_w);
        mip.padded_h_el = align(mip.height_el, g.block_h);
        mip.padded_d = if g.is_3d { g.num_slices } else { 1 };
        mip.offset = offset;
        mip.macro_block_offset = offset;
        let bytes = mip.padded_w_el as u64 * mip.padded_h_el as u64 * g.bpe as u64;
        mip.slice_bytes = Some(bytes);
        offset += bytes;
    }
    ChainLayout {
        slice_size: offset,
        first_mip_in_tail: mips.len() as u32,
        padded_slices: g.num_slices,
    }
}
