//! Texel addressing from element coordinates to bytes: the per-level lookup tables (the
//! equation's contribution per x and per y, block index included), the fast offset built from
//! them, the scalar reference evaluated bit by bit from the equation, and the offset hash of
//! the reference vectors.

use super::{log2, Layout};
use crate::tiling::mode::SwizzleMode;
use crate::{Error, Result};

/// Per-level addressing tables: the equation's contribution per x and per y, with the block
/// index in the bits above the block (see [`Layout::offset`]).
#[derive(Clone, Debug)]
pub(super) struct LevelTables {
    pub x: Vec<u64>,
    pub y: Vec<u64>,
    /// Elements per contiguous run along x (power of two), for bulk copies; `u32::MAX` for
    /// LINEAR, whose rows are contiguous whole.
    pub run: u32,
}

impl Layout {
    /// The in-block address bits, where the x, y and z contributions XOR together (above them
    /// they add); none for LINEAR.
    pub(super) fn low_mask(&self) -> u64 {
        if self.desc.mode == SwizzleMode::Linear {
            0
        } else {
            (1u64 << self.block_bytes_log2) - 1
        }
    }

    /// One [`LevelTables`] per level: LINEAR from the padded pitch, tiled modes from the
    /// equation (tail levels shifted by their `mip_tail_coord`).
    pub(super) fn build_tables(&self) -> Vec<LevelTables> {
        let bpe = self.bytes_per_element as u64;
        let linear = self.desc.mode == SwizzleMode::Linear;
        let b = self.block_bytes_log2;
        self.mips
            .iter()
            .map(|m| {
                if linear {
                    let row = m.padded_w_el as u64 * bpe;
                    return LevelTables {
                        x: (0..m.width_el as u64).map(|x| x * bpe).collect(),
                        y: (0..m.height_el as u64).map(|y| y * row).collect(),
                        run: u32::MAX,
                    };
                }
                let eq = self.equation.as_ref().expect("tables need an equation");
                let [tx, ty, _] = m.mip_tail_coord;
                let pitch_blocks = (m.padded_w_el / self.block_w).max(1) as u64;
                let ex = eq.table(0, m.width_el + tx);
                let ey = eq.table(1, m.height_el + ty);
                let x = (0..m.width_el)
                    .map(|x| {
                        let gx = x + tx;
                        (((gx / self.block_w) as u64) << b) | ex[gx as usize] as u64
                    })
                    .collect();
                let y = (0..m.height_el)
                    .map(|y| {
                        let gy = y + ty;
                        ((((gy / self.block_h) as u64) * pitch_blocks) << b)
                            | ey[gy as usize] as u64
                    })
                    .collect();
                let mut run = 1u32 << eq.contiguous_x_log2(log2(self.bytes_per_element));
                if tx % run != 0 {
                    run = 1;
                }
                LevelTables { x, y, run }
            })
            .collect()
    }

    /// Base offset of (mip, slice) and the equation's z contribution.
    #[inline]
    pub(super) fn slice_base(&self, mip: usize, slice: u32) -> (u64, u64) {
        let m = &self.mips[mip];
        if slice == 0 {
            return (m.macro_block_offset, 0);
        }
        if self.desc.mode == SwizzleMode::Linear {
            return (slice as u64 * self.slice_size + m.macro_block_offset, 0);
        }
        let eq = self
            .equation
            .as_ref()
            .expect("addressing needs an equation");
        let chain = if self.thick {
            (slice / self.block_d) as u64 * self.chain_stride()
        } else {
            slice as u64 * self.slice_size
        };
        (chain + m.macro_block_offset, eq.eval(0, 0, slice))
    }

    /// Combines a slice base, z term and the x/y table entries.
    #[inline(always)]
    pub(super) fn combine(base: u64, z: u64, xt: u64, yt: u64, lo: u64) -> u64 {
        base + (xt & !lo) + (yt & !lo) + ((xt ^ yt ^ z) & lo)
    }

    /// An error unless (x, y) and `slice` lie inside level `mip`.
    pub(super) fn check_coord(&self, mip: u32, slice: u32, x: u32, y: u32) -> Result<()> {
        let Some(m) = self.mips.get(mip as usize) else {
            return Err(Error::field(
                "mip",
                format!("mip {mip} out of range (0..{})", self.mips.len()),
            ));
        };
        let n = self.slices_at(mip);
        if x >= m.width_el || y >= m.height_el || slice >= n {
            return Err(Error::field(
                "coordinate",
                format!(
                    "element ({x}, {y}) slice {slice} is outside mip {mip} ({}x{} elements, {n} slices)",
                    m.width_el, m.height_el
                ),
            ));
        }
        Ok(())
    }

    /// Byte offset from the resource base of element (x, y) (BC: block coordinates) of array
    /// slice or depth index `slice` in level `mip`.
    pub fn offset(&self, mip: u32, slice: u32, x: u32, y: u32) -> Result<u64> {
        if !self.can_address() {
            return Err(self.no_equation());
        }
        self.check_coord(mip, slice, x, y)?;
        Ok(self.offset_unchecked(mip, slice, x, y))
    }

    /// [`Layout::offset`] without checks. Panics (a bug) if out of range.
    #[inline]
    pub fn offset_unchecked(&self, mip: u32, slice: u32, x: u32, y: u32) -> u64 {
        let t = &self.tables[mip as usize];
        let (base, z) = self.slice_base(mip as usize, slice);
        Self::combine(base, z, t.x[x as usize], t.y[y as usize], self.low_mask())
    }

    /// The scalar reference: the same address evaluated bit by bit from the equation, without
    /// tables (the fast path is tested against this).
    pub fn offset_reference(&self, mip: u32, slice: u32, x: u32, y: u32) -> Result<u64> {
        self.check_coord(mip, slice, x, y)?;
        let m = &self.mips[mip as usize];
        let bpe = self.bytes_per_element as u64;
        if self.desc.mode == SwizzleMode::Linear {
            return Ok(slice as u64 * self.slice_size
                + m.macro_block_offset
                + (y as u64 * m.padded_w_el as u64 + x as u64) * bpe);
        }
        let eq = self.equation.as_ref().ok_or_else(|| self.no_equation())?;
        let (gx, gy) = (x + m.mip_tail_coord[0], y + m.mip_tail_coord[1]);
        let chain = if self.thick {
            (slice / self.block_d) as u64 * self.chain_stride()
        } else {
            slice as u64 * self.slice_size
        };
        let pitch_blocks = (m.padded_w_el / self.block_w).max(1) as u64;
        let block = (gy / self.block_h) as u64 * pitch_blocks + (gx / self.block_w) as u64;
        Ok(
            chain
                + m.macro_block_offset
                + (block << self.block_bytes_log2)
                + eq.eval(gx, gy, slice),
        )
    }

    /// FNV-1a 64 over the byte offset (8 bytes little-endian) of every element, in packed
    /// linear order (the reference vectors' `all_texels_fnv1a64`).
    ///
    /// The offset basis is `TEXEL_HASH_BASIS`, not FNV's published 0xcbf29ce484222325: the
    /// reference vectors were made with it (every 1x1 case, one offset 0, hashes to
    /// 0x47fe0d7eaf8e51e3, which this basis gives and the published one does not).
    pub fn texel_hash(&self) -> Result<(u64, u64)> {
        if !self.can_address() {
            return Err(self.no_equation());
        }
        let mut h = TEXEL_HASH_BASIS;
        let mut count = 0u64;
        let lo = self.low_mask();
        for mip in 0..self.desc.mip_levels {
            let (w, hh, n) = self.linear_extent(mip);
            let t = &self.tables[mip as usize];
            for s in 0..n {
                let (base, z) = self.slice_base(mip as usize, s);
                for y in 0..hh as usize {
                    let yt = t.y[y];
                    for &xt in &t.x[..w as usize] {
                        let off = Self::combine(base, z, xt, yt, lo);
                        for byte in off.to_le_bytes() {
                            h ^= byte as u64;
                            h = h.wrapping_mul(0x0100_0000_01b3);
                        }
                    }
                    count += w as u64;
                }
            }
        }
        Ok((h, count))
    }
}

/// Offset basis of the texel hash in the reference vectors (see [`Layout::texel_hash`]): not
/// FNV's published basis, while the prime is FNV's.
const TEXEL_HASH_BASIS: u64 = 0x1465_0fb0_739d_0383;
