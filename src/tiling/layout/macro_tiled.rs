//! 4 KiB, 64 KiB and VAR layouts (addrlib `ComputeSurfaceInfoMacroTiled`): levels padded to
//! whole blocks, and the smallest levels packed together into one tail block (`GetMipTailDim`,
//! `GetMaxNumMipsInTail`, the mip-tail coordinate split).
//!
//! A chain is the tail block first, then the levels in front of the tail, smallest first.

use super::geometry::{Geometry, BLOCK256_2D, BLOCK256_3D};
use super::{align, ChainLayout, MipLayout};
use crate::tiling::mode::MicroPattern;

/// Lays out one chain of `mips` (all the description's levels, sizes filled in) in a
/// macro-tiled mode of micro-tiling `pattern`.
pub(super) fn lay_out_chain(
    g: &Geometry,
    pattern: MicroPattern,
    mips: &mut [MipLayout],
) -> ChainLayout {
    let chain = Chain::new(g);
    if mips.len() == 1 {
        return chain.single_level(&mut mips[0]);
    }
    let tail = TailShape::new(g, pattern);
    let layout = chain.pad_levels_before_tail(&tail, mips);
    chain.place_levels_before_tail(layout.first_mip_in_tail, mips);
    chain.place_tail_levels(&tail, layout.first_mip_in_tail, mips);
    layout
}

/// The mip tail's shape (`GetMipTailDim`, `GetMaxNumMipsInTail`).
struct TailShape {
    /// Width and height in elements of the largest tail level's slot: half a block wide
    /// (thin), or the block halved along the axis `block_bytes_log2 % 3` picks (thick; when
    /// that axis is depth, width and height stay whole).
    w: u32,
    h: u32,
    /// The largest level, in elements, that may start the tail.
    fit_w: u32,
    fit_h: u32,
    /// The most levels the tail holds.
    max_in_tail: u32,
}

impl TailShape {
    fn new(g: &Geometry, pattern: MicroPattern) -> Self {
        let b_log2 = g.block_bytes_log2;
        let e = g.bpe_log2 as usize;
        let (mut w, mut h) = (g.block_w, g.block_h);
        if g.thick {
            match b_log2 % 3 {
                0 => h /= 2,
                1 => w /= 2,
                _ => {} // depth halves; depth is not tested for tail eligibility
            }
        } else {
            w /= 2;
        }
        let (mut fit_w, mut fit_h) = (w, h);
        if pattern == MicroPattern::Z && e <= 1 {
            // addrlib's dsMipmapHtileFix: scale by the 256-byte block ratio to 4 B/element.
            fit_w /= BLOCK256_2D[e].0 / BLOCK256_2D[2].0;
            fit_h /= BLOCK256_2D[e].1 / BLOCK256_2D[2].1;
        }
        let eff = if g.thick {
            b_log2 - (b_log2 - 8) / 3
        } else {
            b_log2
        };
        let max_in_tail = if eff <= 11 {
            1 + (1 << (eff - 9))
        } else {
            eff - 4
        };
        TailShape {
            w,
            h,
            fit_w,
            fit_h,
            max_in_tail,
        }
    }

    /// True if `mip` starts the tail: it fits, and the levels from it to the end of the chain
    /// (`levels_left`, itself included) are no more than the tail holds.
    fn starts_tail(&self, mip: &MipLayout, levels_left: u32) -> bool {
        mip.width_el <= self.fit_w && mip.height_el <= self.fit_h && levels_left <= self.max_in_tail
    }
}

/// The values every step of one chain's layout shares.
struct Chain<'a> {
    g: &'a Geometry,
    /// Bytes of one block.
    block: u64,
    /// Array size, or depth rounded up to whole blocks.
    padded_slices: u32,
    /// [`MipLayout::padded_d`] of every level: the padded depth (3D), else 1.
    padded_d: u32,
}

impl<'a> Chain<'a> {
    fn new(g: &'a Geometry) -> Self {
        let padded_slices = align(g.num_slices, g.block_d);
        Chain {
            g,
            block: 1u64 << g.block_bytes_log2,
            padded_slices,
            padded_d: if g.is_3d { padded_slices } else { 1 },
        }
    }

    /// Pads `mip` to whole blocks; returns its slice bytes.
    fn pad(&self, mip: &mut MipLayout) -> u64 {
        mip.padded_w_el = align(mip.width_el, self.g.block_w);
        mip.padded_h_el = align(mip.height_el, self.g.block_h);
        mip.padded_d = self.padded_d;
        let slice = mip.padded_w_el as u64 * mip.padded_h_el as u64 * self.g.bpe as u64;
        mip.slice_bytes = Some(slice);
        slice
    }

    /// A single level has no tail: padded to whole blocks, at offset 0.
    fn single_level(&self, mip: &mut MipLayout) -> ChainLayout {
        ChainLayout {
            slice_size: self.pad(mip),
            first_mip_in_tail: 1,
            padded_slices: self.padded_slices,
        }
    }

    /// Pads the levels from mip 0 up to the first that starts the tail, and sums the chain's
    /// bytes: those levels' slices plus the tail block's share of one slice.
    fn pad_levels_before_tail(&self, tail: &TailShape, mips: &mut [MipLayout]) -> ChainLayout {
        let levels = mips.len() as u32;
        let mut slice_size = 0u64;
        let mut first_mip_in_tail = levels;
        for (i, mip) in (0u32..).zip(mips.iter_mut()) {
            if tail.starts_tail(mip, levels - i) {
                first_mip_in_tail = i;
                slice_size += self.block / self.g.block_d as u64;
                break;
            }
            slice_size += self.pad(mip);
        }
        ChainLayout {
            slice_size,
            first_mip_in_tail,
            padded_slices: self.padded_slices,
        }
    }

    /// Depth in elements that the tail block covers: the first tail level's (thick), else 1.
    fn tail_depth(&self, first_tail_mip: &MipLayout) -> u32 {
        if self.g.thick {
            first_tail_mip.depth_el
        } else {
            1
        }
    }

    /// Offsets of the levels in front of the tail: after the tail block (if any), smallest
    /// level first.
    fn place_levels_before_tail(&self, first_tail: u32, mips: &mut [MipLayout]) {
        let bd = self.g.block_d;
        let (mut offset, mut mbo) = (0u64, 0u64);
        if let Some(first) = mips.get(first_tail as usize) {
            offset = self.block * align(self.tail_depth(first), bd) as u64 / bd as u64;
            mbo = self.block;
        }
        for mip in mips[..first_tail as usize].iter_mut().rev() {
            let slice = mip
                .slice_bytes
                .expect("levels in front of the tail are padded");
            let depth = if self.g.thick { mip.depth_el } else { 1 };
            mip.offset = offset;
            mip.macro_block_offset = mbo;
            offset += slice * align(depth, bd) as u64;
            mbo += slice * bd as u64;
        }
    }

    /// Slots of the tail levels inside the tail block. The first tail level takes slot
    /// `max_in_tail - 1` and each smaller level the slot below; slot m starts at byte
    /// `m * 256`, or `16 << m` above slot 6. Slot dimensions halve per level, down to one
    /// 256-byte micro block.
    fn place_tail_levels(&self, tail: &TailShape, first_tail: u32, mips: &mut [MipLayout]) {
        let g = self.g;
        let e = g.bpe_log2 as usize;
        let Some(first) = mips.get(first_tail as usize) else {
            return;
        };
        let (b256w, b256h, tail_max_depth) = if g.thick {
            let (w, h, d) = BLOCK256_3D[e];
            (w, h, align(self.tail_depth(first), d) / d)
        } else {
            let (w, h) = BLOCK256_2D[e];
            (w, h, 1)
        };
        let (mut pitch, mut height) = (tail.w, tail.h);
        for (n, mip) in (0u32..).zip(mips[first_tail as usize..].iter_mut()) {
            let slot = tail.max_in_tail - 1 - n;
            let mip_offset: u64 = if slot > 6 {
                16u64 << slot
            } else {
                (slot as u64) << 8
            };
            mip.in_tail = true;
            mip.offset = mip_offset * tail_max_depth as u64;
            mip.mip_tail_offset = mip_offset;
            mip.macro_block_offset = 0;
            mip.padded_w_el = pitch;
            mip.padded_h_el = height;
            mip.padded_d = self.padded_d;
            let (mx, my) = slot_position(mip_offset, g.block_bytes_log2, g.bpe_log2);
            mip.mip_tail_coord = [mx * b256w, my * b256h, 0];
            pitch = (pitch >> 1).max(b256w);
            height = (height >> 1).max(b256h);
        }
    }
}

/// The position (x, y) in 256-byte micro blocks of the tail slot at byte `mip_offset`: offset
/// bits 8, 10, 12... are y and bits 9, 11, 13... are x. In a block of odd log2 size x and y
/// swap, and at odd log2 bytes per element the low bit of x moves below the bits of y.
fn slot_position(mip_offset: u64, block_bytes_log2: u32, bpe_log2: u32) -> (u32, u32) {
    let (mut mx, mut my) = (0u32, 0u32);
    for j in 0..6 {
        mx |= (((mip_offset >> (9 + 2 * j)) & 1) as u32) << j;
        my |= (((mip_offset >> (8 + 2 * j)) & 1) as u32) << j;
    }
    if block_bytes_log2 & 1 == 1 {
        std::mem::swap(&mut mx, &mut my);
        if bpe_log2 & 1 == 1 {
            my = (my << 1) | (mx & 1);
            mx >>= 1;
        }
    }
    (mx, my)
}
