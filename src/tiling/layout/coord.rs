//! Texel addressing from bytes back to element coordinates: [`TexelCoord`] and
//! [`Layout::coord`], solving the equation's in-block bits with its GF(2) inverse.

use super::Layout;
use crate::tiling::mode::SwizzleMode;
use crate::Result;

/// A texel coordinate recovered from a byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TexelCoord {
    pub mip: u32,
    /// Array slice (2D) or depth index (3D).
    pub slice: u32,
    pub x: u32,
    pub y: u32,
    /// Byte within the element.
    pub byte: u32,
}

impl Layout {
    /// The element that byte `offset` belongs to, or `None` for padding and unused space.
    pub fn coord(&self, offset: u64) -> Result<Option<TexelCoord>> {
        if !self.can_address() {
            return Err(self.no_equation());
        }
        if offset >= self.total_size {
            return Ok(None);
        }
        let bpe = self.bytes_per_element as u64;
        let stride = self.chain_stride();
        let chain_idx = (offset / stride) as u32;
        let r = offset % stride;
        let found = if self.desc.mode == SwizzleMode::Linear {
            self.coord_linear(chain_idx, r, bpe)
        } else {
            self.coord_tiled(chain_idx, r)
        };
        Ok(found
            .filter(|c| self.offset_unchecked(c.mip, c.slice, c.x, c.y) + c.byte as u64 == offset))
    }

    /// LINEAR: the level whose byte range holds `r` (bytes into the chain of `slice`), then
    /// row, element and byte by division.
    fn coord_linear(&self, slice: u32, r: u64, bpe: u64) -> Option<TexelCoord> {
        let (mip, m) = self.mips.iter().enumerate().find(|(_, m)| {
            let size = m.slice_bytes.unwrap_or(0);
            r >= m.macro_block_offset && r < m.macro_block_offset + size
        })?;
        let rel = r - m.macro_block_offset;
        let row = m.padded_w_el as u64 * bpe;
        let (y, x, byte) = (rel / row, (rel % row) / bpe, rel % bpe);
        let c = TexelCoord {
            mip: mip as u32,
            slice,
            x: x as u32,
            y: y as u32,
            byte: byte as u32,
        };
        (c.x < m.width_el && c.y < m.height_el && slice < self.slices_at(c.mip)).then_some(c)
    }

    /// Tiled modes: the tail block or the level holding `r` (bytes into chain `chain_idx`),
    /// the block's position from its index, then the in-block bits from the inverse equation
    /// with the known contribution of the block position XORed out. In the tail, the level is
    /// the first whose extent, shifted by its `mip_tail_coord`, holds the solved position.
    fn coord_tiled(&self, chain_idx: u32, r: u64) -> Option<TexelCoord> {
        let eq = self.equation.as_ref()?;
        let inv = self.inverse.as_ref()?;
        let b = self.block_bytes_log2;
        let lo = (1u64 << b) - 1;
        let has_tail = self.first_mip_in_tail < self.desc.mip_levels;
        let (level, rel) = if has_tail && r < (1u64 << b) {
            (None, r)
        } else {
            let (i, m) = self.mips.iter().enumerate().find(|(_, m)| {
                !m.in_tail && {
                    let size = m.slice_bytes.unwrap_or(0) * self.block_d as u64;
                    r >= m.macro_block_offset && r < m.macro_block_offset + size
                }
            })?;
            (Some((i, m)), r - m.macro_block_offset)
        };
        let blk = rel >> b;
        let (xb, yb) = match level {
            Some((_, m)) => {
                let pitch_blocks = (m.padded_w_el / self.block_w).max(1) as u64;
                ((blk % pitch_blocks) as u32, (blk / pitch_blocks) as u32)
            }
            None => (0, 0),
        };
        let x_hi = xb * self.block_w;
        let y_hi = yb * self.block_h;
        let (z_known, z_hi) = if self.thick {
            (chain_idx * self.block_d, chain_idx * self.block_d)
        } else {
            (chain_idx, chain_idx)
        };
        let known = eq.eval(x_hi, y_hi, z_known);
        let (xl, yl, zl, byte) = inv.solve((rel & lo) ^ known);
        let gx = x_hi | xl;
        let gy = y_hi | yl;
        let slice = if self.thick { z_hi | zl } else { chain_idx };
        let candidates: Vec<usize> = match level {
            Some((i, _)) => vec![i],
            None => (self.first_mip_in_tail as usize..self.mips.len()).collect(),
        };
        candidates.into_iter().find_map(|i| {
            let m = &self.mips[i];
            let [tx, ty, _] = m.mip_tail_coord;
            let (x, y) = (gx.checked_sub(tx)?, gy.checked_sub(ty)?);
            (x < m.width_el && y < m.height_el && slice < self.slices_at(i as u32)).then_some(
                TexelCoord {
                    mip: i as u32,
                    slice,
                    x,
                    y,
                    byte,
                },
            )
        })
    }
}
