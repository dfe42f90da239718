//! Whole-image swizzle and unswizzle between the packed linear image and the surface: in
//! parallel over disjoint destination ranges, and as the element-by-element scalar twin.

use super::Layout;
use crate::tiling::mode::{Dimension, SwizzleMode};
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// One unit of parallel swizzle work: the tail block of a chain (`mip: None`) or row of
/// blocks `yb` of a level in a chain, and the surface byte range it fills.
#[derive(Clone, Copy, Debug)]
struct SwizzleJob {
    mip: Option<u32>,
    chain: u32,
    yb: u32,
    start: usize,
    len: usize,
}

/// Rows `rows` of array slice or depth index `slice` of level `mip`.
#[derive(Clone, Debug)]
struct RowSpan {
    mip: u32,
    slice: u32,
    rows: Range<u32>,
}

/// One unit of parallel unswizzle work: rows from `y0` of (mip, slice) of the packed linear
/// image, and the bytes of the linear image they fill (whole rows).
struct RowPiece<'a> {
    mip: u32,
    slice: u32,
    y0: u32,
    bytes: &'a mut [u8],
}

/// Copies `n` bytes from the start of `src` to the start of `dst`, with fixed-size copies
/// for the common run lengths (one or a few elements) so they compile to plain moves.
#[inline(always)]
fn copy_run(dst: &mut [u8], src: &[u8], n: usize) {
    fn fixed<const N: usize>(dst: &mut [u8], src: &[u8]) {
        let s: &[u8; N] = src[..N].try_into().expect("length checked");
        let d: &mut [u8; N] = (&mut dst[..N]).try_into().expect("length checked");
        *d = *s;
    }
    match n {
        4 => fixed::<4>(dst, src),
        8 => fixed::<8>(dst, src),
        16 => fixed::<16>(dst, src),
        32 => fixed::<32>(dst, src),
        _ => dst[..n].copy_from_slice(&src[..n]),
    }
}

impl Layout {
    /// Bytes of the packed linear image: for each mip, for each slice (array index, or depth
    /// index up to `max(1, depth >> mip)`), rows of `ceil(max(1, width >> mip) / block)`
    /// elements, tightly packed, `ceil(max(1, height >> mip) / block)` rows.
    pub fn linear_size(&self) -> u64 {
        (0..self.desc.mip_levels)
            .map(|m| self.linear_mip_size(m))
            .sum()
    }

    /// Elements (w, h) and slice count of a level in the packed linear image (D3D floor sizes).
    pub fn linear_extent(&self, mip: u32) -> (u32, u32, u32) {
        let m = &self.mips[mip as usize];
        let n = if self.desc.dim == Dimension::D3 {
            m.depth
        } else {
            self.desc.depth_or_array_size
        };
        (
            m.width_px.div_ceil(self.element_block),
            m.height_px.div_ceil(self.element_block),
            n,
        )
    }

    /// Bytes of one level (all its slices) in the packed linear image.
    fn linear_mip_size(&self, mip: u32) -> u64 {
        let (w, h, n) = self.linear_extent(mip);
        w as u64 * h as u64 * n as u64 * self.bytes_per_element as u64
    }

    /// Swizzles a packed linear image ([`Layout::linear_size`] bytes) into a surface of
    /// [`Layout::total_size`] bytes (padding zero).
    pub fn swizzle(&self, linear: &[u8]) -> Result<Vec<u8>> {
        self.check_sizes(linear.len(), self.total_size as usize)?;
        let mut out = vec![0u8; self.total_size as usize];
        self.swizzle_into(linear, &mut out)?;
        Ok(out)
    }

    /// [`Layout::swizzle`] into a caller-provided surface buffer.
    pub fn swizzle_into(&self, linear: &[u8], out: &mut [u8]) -> Result<()> {
        self.check_sizes(linear.len(), out.len())?;
        // Disjoint destination ranges (the tail block of a chain, or one row of blocks of a
        // level in a chain), filled in parallel: every texel's offset lies in its job's range
        // because pipe XOR only permutes bits inside a block.
        let jobs = self.swizzle_jobs();
        let mut pieces: Vec<(&SwizzleJob, &mut [u8])> = Vec::with_capacity(jobs.len());
        let mut rest: &mut [u8] = out;
        let mut at = 0usize;
        for job in &jobs {
            let tail = std::mem::take(&mut rest);
            let (_, tail) = tail.split_at_mut(job.start - at);
            let (piece, tail) = tail.split_at_mut(job.len);
            pieces.push((job, piece));
            rest = tail;
            at = job.start + job.len;
        }
        let lin_base = self.linear_bases();
        pieces.into_par_iter().for_each(|(job, piece)| {
            self.run_job(job, &lin_base, |l, t, n| {
                copy_run(&mut piece[t - job.start..], &linear[l..], n)
            })
        });
        Ok(())
    }

    /// [`Layout::swizzle_into`] one element at a time through [`Layout::offset_reference`]:
    /// the scalar twin the parallel path is tested against.
    pub fn swizzle_reference(&self, linear: &[u8]) -> Result<Vec<u8>> {
        self.check_sizes(linear.len(), self.total_size as usize)?;
        let mut out = vec![0u8; self.total_size as usize];
        let bpe = self.bytes_per_element as usize;
        let mut lin = 0usize;
        for mip in 0..self.desc.mip_levels {
            let (w, h, n) = self.linear_extent(mip);
            for s in 0..n {
                for y in 0..h {
                    for x in 0..w {
                        let t = self.offset_reference(mip, s, x, y)? as usize;
                        out[t..t + bpe].copy_from_slice(&linear[lin..lin + bpe]);
                        lin += bpe;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Byte offset of each level in the packed linear image.
    fn linear_bases(&self) -> Vec<usize> {
        let mut at = 0u64;
        (0..self.desc.mip_levels)
            .map(|m| {
                let b = at;
                at += self.linear_mip_size(m);
                b as usize
            })
            .collect()
    }

    /// The disjoint destination ranges of a swizzle, in address order.
    fn swizzle_jobs(&self) -> Vec<SwizzleJob> {
        let linear = self.desc.mode == SwizzleMode::Linear;
        let stride = self.chain_stride() as usize;
        let bd = if self.thick { self.block_d } else { 1 };
        let bh = if linear { 1 } else { self.block_h };
        let mut jobs = Vec::new();
        let chains = |n: u32| n.div_ceil(bd);
        let has_tail = self.first_mip_in_tail < self.desc.mip_levels;
        if has_tail {
            let n = (self.first_mip_in_tail..self.desc.mip_levels)
                .map(|m| self.linear_extent(m).2)
                .max()
                .unwrap_or(1);
            for c in 0..chains(n) {
                jobs.push(SwizzleJob {
                    mip: None,
                    chain: c,
                    yb: 0,
                    start: c as usize * stride,
                    len: 1 << self.block_bytes_log2,
                });
            }
        }
        for mip in 0..self.first_mip_in_tail.min(self.desc.mip_levels) {
            let m = &self.mips[mip as usize];
            let (_, h, n) = self.linear_extent(mip);
            let row_bytes = if linear {
                m.padded_w_el as usize * self.bytes_per_element as usize
            } else {
                ((m.padded_w_el / self.block_w) as usize) << self.block_bytes_log2
            };
            for c in 0..chains(n) {
                for yb in 0..h.div_ceil(bh) {
                    jobs.push(SwizzleJob {
                        mip: Some(mip),
                        chain: c,
                        yb,
                        start: c as usize * stride
                            + m.macro_block_offset as usize
                            + yb as usize * row_bytes,
                        len: row_bytes,
                    });
                }
            }
        }
        jobs.sort_by_key(|j| j.start);
        jobs
    }

    /// Calls `f(linear_offset, tiled_offset, bytes)` for every contiguous run of the texels a
    /// job covers.
    fn run_job(
        &self,
        job: &SwizzleJob,
        lin_base: &[usize],
        mut f: impl FnMut(usize, usize, usize),
    ) {
        let bd = if self.thick { self.block_d } else { 1 };
        let bh = if self.desc.mode == SwizzleMode::Linear {
            1
        } else {
            self.block_h
        };
        let levels: Vec<u32> = match job.mip {
            Some(m) => vec![m],
            None => (self.first_mip_in_tail..self.desc.mip_levels).collect(),
        };
        for mip in levels {
            let (w, h, n) = self.linear_extent(mip);
            let (y0, y1) = match job.mip {
                Some(_) => (job.yb * bh, ((job.yb + 1) * bh).min(h)),
                None => (0, h),
            };
            let z0 = job.chain * bd;
            for z in z0..(z0 + bd).min(n) {
                let bpe = self.bytes_per_element as usize;
                let sub = lin_base[mip as usize] + z as usize * h as usize * w as usize * bpe;
                let span = RowSpan {
                    mip,
                    slice: z,
                    rows: y0..y1,
                };
                self.row_runs(span, |y, x, t, len| {
                    let l = sub + (y as usize * w as usize + x as usize) * bpe;
                    f(l, t, len)
                });
            }
        }
    }

    /// Runs of contiguous texels of the rows of `span`: `f(y, x, tiled, bytes)`.
    #[inline]
    fn row_runs(&self, span: RowSpan, mut f: impl FnMut(u32, u32, usize, usize)) {
        let RowSpan { mip, slice, rows } = span;
        let bpe = self.bytes_per_element as usize;
        let lo = self.low_mask();
        let (w, _, _) = self.linear_extent(mip);
        let t = &self.tables[mip as usize];
        let run = if t.run == u32::MAX { w } else { t.run.min(w) }.max(1) as usize;
        let (base, z) = self.slice_base(mip as usize, slice);
        for y in rows {
            let yt = t.y[y as usize];
            let mut x = 0usize;
            while x < w as usize {
                let len = run.min(w as usize - x);
                let off = Self::combine(base, z, t.x[x], yt, lo) as usize;
                f(y, x as u32, off, len * bpe);
                x += len;
            }
        }
    }

    /// Unswizzles a surface back to the packed linear image.
    pub fn unswizzle(&self, surface: &[u8]) -> Result<Vec<u8>> {
        self.check_sizes(self.linear_size() as usize, surface.len())?;
        let mut out = vec![0u8; self.linear_size() as usize];
        self.unswizzle_into(surface, &mut out)?;
        Ok(out)
    }

    /// [`Layout::unswizzle`] into a caller-provided linear buffer.
    pub fn unswizzle_into(&self, surface: &[u8], out: &mut [u8]) -> Result<()> {
        self.check_sizes(out.len(), surface.len())?;
        // Linear rows are disjoint: split the packed image into row groups and fill them in
        // parallel.
        let bpe = self.bytes_per_element as usize;
        self.row_pieces(out).into_par_iter().for_each(|piece| {
            let RowPiece {
                mip,
                slice,
                y0,
                bytes,
            } = piece;
            let row = self.linear_extent(mip).0 as usize * bpe;
            let y1 = y0 + (bytes.len() / row) as u32;
            let span = RowSpan {
                mip,
                slice,
                rows: y0..y1,
            };
            self.row_runs(span, |y, x, t, n| {
                let l = (y - y0) as usize * row + x as usize * bpe;
                copy_run(&mut bytes[l..], &surface[t..], n);
            });
        });
        Ok(())
    }

    /// Cuts the packed linear image `out` into pieces of whole rows of one (mip, slice), about
    /// 64 KiB each (at least one row), in linear order.
    fn row_pieces<'a>(&self, out: &'a mut [u8]) -> Vec<RowPiece<'a>> {
        let bpe = self.bytes_per_element as usize;
        let mut pieces = Vec::new();
        let mut rest: &mut [u8] = out;
        for mip in 0..self.desc.mip_levels {
            let (w, h, n) = self.linear_extent(mip);
            let row = w as usize * bpe;
            let rows_per_piece = (65536 / row).clamp(1, h as usize) as u32;
            for slice in 0..n {
                let mut y = 0;
                while y < h {
                    let rows = rows_per_piece.min(h - y);
                    let tail = std::mem::take(&mut rest);
                    let (bytes, tail) = tail.split_at_mut(rows as usize * row);
                    pieces.push(RowPiece {
                        mip,
                        slice,
                        y0: y,
                        bytes,
                    });
                    rest = tail;
                    y += rows;
                }
            }
        }
        pieces
    }

    /// An error unless texel addressing is available, `linear` is the packed linear image's
    /// size and `tiled` the surface's.
    fn check_sizes(&self, linear: usize, tiled: usize) -> Result<()> {
        if !self.can_address() {
            return Err(self.no_equation());
        }
        if linear as u64 != self.linear_size() {
            return Err(Error::field(
                "linear image",
                format!("{} bytes, expected {}", linear, self.linear_size()),
            ));
        }
        if tiled as u64 != self.total_size {
            return Err(Error::field(
                "surface",
                format!("{} bytes, expected {}", tiled, self.total_size),
            ));
        }
        Ok(())
    }
}
