//! Surface layout (addrlib's `ComputeSurfaceInfo` quantities) and texel addressing.
//!
//! Rules: `../shared/data/tiling/README.md` ("Layout rules"), written from AMD addrlib's GFX10
//! path (`Gfx10Lib::ComputeSurfaceInfoLinear/MicroTiled/MacroTiled`, `GetMipTailDim`,
//! `GetMaxNumMipsInTail`, the mip-tail coordinate split, `ComputeSurfaceAddrFromCoord*`).

use super::equation::{Equation, InverseEquation};
use super::mode::{check_mode, BlockSize, Console, Dimension, Format, MicroPattern, SwizzleMode};
use crate::{Error, Result};
use rayon::prelude::*;

/// Width and height in elements of a 256-byte micro block, per log2(bytes/element)
/// (addrlib `Block256_2d`).
const BLOCK256_2D: [(u32, u32); 5] = [(16, 16), (16, 8), (8, 8), (8, 4), (4, 4)];
/// Width, height and depth of a 256-byte 3D micro block (addrlib `Block256_3d`).
const BLOCK256_3D: [(u32, u32, u32); 5] = [(8, 4, 8), (4, 4, 8), (4, 4, 4), (4, 2, 4), (2, 2, 4)];
/// The 1 KiB 3D brick of thick modes per log2(bytes/element) (4 x 256-byte micro blocks).
const BRICK_1K_3D: [(u32, u32, u32); 5] = [(16, 8, 8), (8, 8, 8), (8, 8, 4), (8, 4, 4), (4, 4, 4)];

/// What to lay out: format, dimension, size, mip count and swizzle mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurfaceDesc {
    pub format: Format,
    pub dim: Dimension,
    /// Width in texels.
    pub width: u32,
    /// Height in texels (1 for 1D).
    pub height: u32,
    /// Array size (1D/2D; a cube map is an array of 6n slices) or depth (3D).
    pub depth_or_array_size: u32,
    pub mip_levels: u32,
    pub mode: SwizzleMode,
}

impl SurfaceDesc {
    /// A 2D texture (or array) description.
    pub fn new_2d(
        format: Format,
        width: u32,
        height: u32,
        array_size: u32,
        mip_levels: u32,
        mode: SwizzleMode,
    ) -> Self {
        SurfaceDesc {
            format,
            dim: Dimension::D2,
            width,
            height,
            depth_or_array_size: array_size,
            mip_levels,
            mode,
        }
    }

    /// The full mip count of a `width` x `height` x `depth` texture.
    pub fn full_mip_count(width: u32, height: u32, depth: u32) -> u32 {
        32 - width.max(height).max(depth).max(1).leading_zeros()
    }
}

/// One mip level of a layout (one array slice; `../shared/spec/tiling.md`, XG_MIPLEVEL_LAYOUT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MipLayout {
    /// D3D sizes in texels, `max(1, v >> mip)`.
    pub width_px: u32,
    pub height_px: u32,
    /// Depth in slices (3D), else 1.
    pub depth: u32,
    /// Size in elements as addrlib computes it (`ceil(v / 2^mip)` on the element grid): the
    /// addressable extent.
    pub width_el: u32,
    pub height_el: u32,
    pub depth_el: u32,
    /// Padded pitch, height (elements) and depth or array size; for tail levels the tail
    /// slot's dimensions.
    pub padded_w_el: u32,
    pub padded_h_el: u32,
    pub padded_d: u32,
    /// addrlib's "VA/PRT" offset (not for addressing 3D or tail levels).
    pub offset: u64,
    /// Byte offset of the level from the start of its slice (or depth-block) chain; 0 in the tail.
    pub macro_block_offset: u64,
    pub in_tail: bool,
    /// Byte position inside the tail block (tail levels).
    pub mip_tail_offset: u64,
    /// Element offset added to texel coordinates before swizzling (tail levels).
    pub mip_tail_coord: [u32; 3],
    /// `padded_w * padded_h * bpe` for levels outside the tail (XG's `Slice2DSizeBytes`).
    pub slice_bytes: Option<u64>,
}

/// Per-level addressing tables: the equation's contribution per x and per y, with the block
/// index in the bits above the block (see [`Layout::offset`]).
#[derive(Clone, Debug)]
struct LevelTables {
    x: Vec<u64>,
    y: Vec<u64>,
    /// Elements per contiguous run along x (power of two), for bulk copies.
    run: u32,
}

/// A computed surface layout, with the tables that address it.
#[derive(Clone, Debug)]
pub struct Layout {
    pub desc: SurfaceDesc,
    pub console: Console,
    pub bytes_per_element: u32,
    /// 1, or 4 for BC formats.
    pub element_block: u32,
    /// Bytes of the whole resource.
    pub total_size: u64,
    /// Bytes of one array slice's mip chain (thick 3D: one depth slice's share).
    pub slice_size: u64,
    pub base_align: u64,
    /// Mip 0 pitch and padded height, in elements.
    pub pitch: u32,
    pub padded_height: u32,
    /// Array size, or depth rounded up to `block_d`.
    pub padded_slices: u32,
    pub block_w: u32,
    pub block_h: u32,
    pub block_d: u32,
    /// log2 of the block size in bytes (8 for LINEAR and 256B).
    pub block_bytes_log2: u32,
    pub first_mip_in_tail: u32,
    pub mip_chain_in_tail: bool,
    /// True for 3D S/D modes (blocks cover a 3D region).
    pub thick: bool,
    pub mips: Vec<MipLayout>,
    equation: Option<Equation>,
    inverse: Option<InverseEquation>,
    tables: Vec<LevelTables>,
}

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

fn align(v: u32, a: u32) -> u32 {
    v.div_ceil(a) * a
}

fn shift_ceil(v: u32, s: u32) -> u32 {
    ((v as u64 + (1u64 << s) - 1) >> s).max(1) as u32
}

fn log2(v: u32) -> u32 {
    v.trailing_zeros()
}

impl Layout {
    /// Computes the layout of `desc` on `console`, or a clear error for invalid input.
    pub fn new(desc: &SurfaceDesc, console: Console) -> Result<Layout> {
        let d = desc;
        if d.width == 0 || d.height == 0 || d.depth_or_array_size == 0 {
            return Err(Error::field(
                "size",
                format!(
                    "width, height and depth/array size must be at least 1 (got {}x{}x{})",
                    d.width, d.height, d.depth_or_array_size
                ),
            ));
        }
        if d.width > 16384 || d.height > 16384 || d.depth_or_array_size > 16384 {
            return Err(Error::field(
                "size",
                format!(
                    "{}x{}x{} exceeds the 16384 limit per dimension",
                    d.width, d.height, d.depth_or_array_size
                ),
            ));
        }
        if d.dim == Dimension::D1 && d.height != 1 {
            return Err(Error::field("size", "a 1D texture has height 1"));
        }
        if d.dim == Dimension::D1 && d.format.is_block_compressed() {
            return Err(Error::field(
                "format",
                "a 1D texture cannot be block-compressed",
            ));
        }
        let depth_px = if d.dim == Dimension::D3 {
            d.depth_or_array_size
        } else {
            1
        };
        let max_mips = SurfaceDesc::full_mip_count(d.width, d.height, depth_px);
        if d.mip_levels == 0 || d.mip_levels > max_mips {
            return Err(Error::field(
                "mips",
                format!(
                    "{} mip levels requested; a {}x{}x{} texture has 1..{max_mips}",
                    d.mip_levels, d.width, d.height, depth_px
                ),
            ));
        }
        check_mode(d.mode, d.dim, &d.format)?;

        let bpe = d.format.bytes_per_element;
        let e = log2(bpe);
        let eb = d.format.element_block;
        let w_el = d.width.div_ceil(eb);
        let h_el = d.height.div_ceil(eb);
        let is_3d = d.dim == Dimension::D3;
        let num_slices = d.depth_or_array_size;
        let thick = is_3d && matches!(d.mode.pattern(), MicroPattern::S | MicroPattern::D);
        let b_log2 = d.mode.block_bytes_log2(console);

        let (bw, bh, bd) = match d.mode.block_size() {
            BlockSize::Linear => (256 / bpe, 1, 1),
            _ if thick => {
                let (w, h, dd) = BRICK_1K_3D[e as usize];
                let k = b_log2 - 10;
                let m = 1 << (k / 3);
                let (w, mut h, mut dd) = (w * m, h * m, dd * m);
                if k % 3 >= 1 {
                    dd *= 2;
                }
                if k % 3 == 2 {
                    h *= 2;
                }
                (w, h, dd)
            }
            _ => {
                let n = b_log2 - e;
                (1 << n.div_ceil(2), 1 << (n / 2), 1)
            }
        };

        let mip_px = |v: u32, m: u32| (v >> m).max(1);
        let mut mips: Vec<MipLayout> = (0..d.mip_levels)
            .map(|m| MipLayout {
                width_px: mip_px(d.width, m),
                height_px: mip_px(d.height, m),
                depth: mip_px(depth_px, m),
                width_el: shift_ceil(w_el, m),
                height_el: shift_ceil(h_el, m),
                depth_el: if is_3d { shift_ceil(num_slices, m) } else { 1 },
                padded_w_el: 0,
                padded_h_el: 0,
                padded_d: 0,
                offset: 0,
                macro_block_offset: 0,
                in_tail: false,
                mip_tail_offset: 0,
                mip_tail_coord: [0; 3],
                slice_bytes: None,
            })
            .collect();

        let mut layout = Layout {
            desc: *d,
            console,
            bytes_per_element: bpe,
            element_block: eb,
            total_size: 0,
            slice_size: 0,
            base_align: 1 << b_log2,
            pitch: 0,
            padded_height: 0,
            padded_slices: num_slices,
            block_w: bw,
            block_h: bh,
            block_d: bd,
            block_bytes_log2: b_log2,
            first_mip_in_tail: d.mip_levels,
            mip_chain_in_tail: false,
            thick,
            mips: Vec::new(),
            equation: None,
            inverse: None,
            tables: Vec::new(),
        };

        match d.mode.block_size() {
            BlockSize::Linear | BlockSize::B256 => {
                // Levels padded to the row piece (LINEAR: pitch to 256 B, height unpadded) or
                // to 256-byte micro blocks, stored smallest first, each 256-byte aligned.
                let mut offset = 0u64;
                for m in (0..d.mip_levels as usize).rev() {
                    let mip = &mut mips[m];
                    mip.padded_w_el = align(mip.width_el, bw);
                    mip.padded_h_el = align(mip.height_el, bh);
                    mip.padded_d = if is_3d { num_slices } else { 1 };
                    mip.offset = offset;
                    mip.macro_block_offset = offset;
                    let bytes = mip.padded_w_el as u64 * mip.padded_h_el as u64 * bpe as u64;
                    mip.slice_bytes = Some(bytes);
                    offset += bytes;
                }
                layout.slice_size = offset;
            }
            _ => Self::macro_tiled(&mut layout, &mut mips, d, e, thick, is_3d)?,
        }
        layout.pitch = align(w_el, bw);
        layout.padded_height = if d.mode == SwizzleMode::Linear {
            h_el
        } else {
            align(h_el, bh)
        };
        if d.mode.block_size() != BlockSize::Linear && d.mode.block_size() != BlockSize::B256 {
            layout.padded_slices = align(num_slices, bd);
        }
        if d.mip_levels == 1 && !matches!(d.mode.block_size(), BlockSize::Linear | BlockSize::B256)
        {
            mips[0].padded_d = if is_3d { layout.padded_slices } else { 1 };
        }
        layout.total_size = layout.slice_size * layout.padded_slices as u64;
        layout.mips = mips;

        if d.mode != SwizzleMode::Linear {
            layout.equation = Equation::lookup(d.mode, is_3d, e, console);
            if let Some(eq) = &layout.equation {
                layout.inverse = InverseEquation::new(eq, e, log2(bw), log2(bh), log2(bd));
                assert!(
                    layout.inverse.is_some(),
                    "pattern table for {} {} bpe {} is not a bijection",
                    d.mode,
                    d.dim.name(),
                    bpe
                );
            }
        }
        if d.mode == SwizzleMode::Linear || layout.equation.is_some() {
            layout.tables = layout.build_tables();
        }
        Ok(layout)
    }

    fn macro_tiled(
        layout: &mut Layout,
        mips: &mut [MipLayout],
        d: &SurfaceDesc,
        e: u32,
        thick: bool,
        is_3d: bool,
    ) -> Result<()> {
        let (bw, bh, bd) = (layout.block_w, layout.block_h, layout.block_d);
        let b_log2 = layout.block_bytes_log2;
        let block = 1u64 << b_log2;
        let bpe = d.format.bytes_per_element as u64;
        let num_slices = align(d.depth_or_array_size, bd);
        let padded_d_field = if is_3d { num_slices } else { 1 };

        if d.mip_levels == 1 {
            let mip = &mut mips[0];
            mip.padded_w_el = align(mip.width_el, bw);
            mip.padded_h_el = align(mip.height_el, bh);
            mip.padded_d = padded_d_field;
            layout.slice_size = mip.padded_w_el as u64 * mip.padded_h_el as u64 * bpe;
            mip.slice_bytes = Some(layout.slice_size);
            return Ok(());
        }

        // Mip tail: the largest level that fits (thin: half a block wide; thick: halved along
        // the axis B % 3 picks) and has at most max-in-tail levels after it.
        let (mut tail_w, mut tail_h) = (bw, bh);
        if thick {
            match b_log2 % 3 {
                0 => tail_h /= 2,
                1 => tail_w /= 2,
                _ => {} // depth halves; depth is not tested for tail eligibility
            }
        } else {
            tail_w /= 2;
        }
        let (mut fit_w, mut fit_h) = (tail_w, tail_h);
        if d.mode.pattern() == MicroPattern::Z && e <= 1 {
            // addrlib's dsMipmapHtileFix: scale by the 256-byte block ratio to 4 B/element.
            fit_w /= BLOCK256_2D[e as usize].0 / BLOCK256_2D[2].0;
            fit_h /= BLOCK256_2D[e as usize].1 / BLOCK256_2D[2].1;
        }
        let eff = if thick {
            b_log2 - (b_log2 - 8) / 3
        } else {
            b_log2
        };
        let max_in_tail = if eff <= 11 {
            1 + (1 << (eff - 9))
        } else {
            eff - 4
        };

        let levels = d.mip_levels;
        let mut first_tail = levels;
        let mut chain = 0u64;
        let mut mip_size = vec![0u64; levels as usize];
        let mut mip_slice_size = vec![0u64; levels as usize];
        for i in 0..levels {
            let mip = &mut mips[i as usize];
            let (w, h) = (mip.width_el, mip.height_el);
            let dd = if thick { mip.depth_el } else { 1 };
            if w <= fit_w && h <= fit_h && levels - i <= max_in_tail {
                first_tail = i;
                chain += block / bd as u64;
                break;
            }
            mip.padded_w_el = align(w, bw);
            mip.padded_h_el = align(h, bh);
            mip.padded_d = padded_d_field;
            let slice = mip.padded_w_el as u64 * mip.padded_h_el as u64 * bpe;
            mip.slice_bytes = Some(slice);
            mip_size[i as usize] = slice * align(dd, bd) as u64;
            mip_slice_size[i as usize] = slice * bd as u64;
            chain += slice;
        }
        layout.slice_size = chain;
        layout.first_mip_in_tail = first_tail;
        layout.mip_chain_in_tail = first_tail == 0;

        let mut offset = 0u64;
        let mut mbo = 0u64;
        let mut tail_depth = 0u32;
        if first_tail != levels {
            tail_depth = if thick {
                mips[first_tail as usize].depth_el
            } else {
                1
            };
            offset = block * align(tail_depth, bd) as u64 / bd as u64;
            mbo = block;
        }
        for i in (0..first_tail as usize).rev() {
            mips[i].offset = offset;
            mips[i].macro_block_offset = mbo;
            offset += mip_size[i];
            mbo += mip_slice_size[i];
        }

        let (b256w, b256h) = if thick {
            let t = BLOCK256_3D[e as usize];
            (t.0, t.1)
        } else {
            BLOCK256_2D[e as usize]
        };
        let tail_max_depth = if thick {
            align(tail_depth, BLOCK256_3D[e as usize].2) / BLOCK256_3D[e as usize].2
        } else {
            1
        };
        let (mut pitch, mut height) = (tail_w, tail_h);
        for i in first_tail..levels {
            let m = max_in_tail - 1 - (i - first_tail);
            let mip_offset: u64 = if m > 6 { 16u64 << m } else { (m as u64) << 8 };
            let mip = &mut mips[i as usize];
            mip.in_tail = true;
            mip.offset = mip_offset * tail_max_depth as u64;
            mip.mip_tail_offset = mip_offset;
            mip.macro_block_offset = 0;
            mip.padded_w_el = pitch;
            mip.padded_h_el = height;
            mip.padded_d = padded_d_field;
            // Offset bits 8, 10, 12... are y, bits 9, 11, 13... are x (256-byte units).
            let (mut mx, mut my) = (0u32, 0u32);
            for j in 0..6 {
                mx |= (((mip_offset >> (9 + 2 * j)) & 1) as u32) << j;
                my |= (((mip_offset >> (8 + 2 * j)) & 1) as u32) << j;
            }
            if b_log2 & 1 == 1 {
                std::mem::swap(&mut mx, &mut my);
                if e & 1 == 1 {
                    my = (my << 1) | (mx & 1);
                    mx >>= 1;
                }
            }
            mip.mip_tail_coord = [mx * b256w, my * b256h, 0];
            pitch = (pitch >> 1).max(b256w);
            height = (height >> 1).max(b256h);
        }
        Ok(())
    }

    /// Levels outside the tail (XG `StandardMipCount`).
    pub fn standard_mip_count(&self) -> u32 {
        self.first_mip_in_tail
    }

    /// Levels inside the tail (XG `MipTailMipCount`).
    pub fn mip_tail_mip_count(&self) -> u32 {
        self.desc.mip_levels - self.first_mip_in_tail
    }

    /// Bytes per array slice (2D) or per depth block of `block_d` slices (3D thick): the
    /// distance between two consecutive chains.
    pub fn chain_stride(&self) -> u64 {
        if self.thick {
            self.slice_size * self.block_d as u64
        } else {
            self.slice_size
        }
    }

    /// XG's `MipLayout.SizeBytes`: one array slice of the level; for volumes all depth slices
    /// (not contiguous); for tail levels the tail block's share.
    pub fn mip_size_bytes(&self, mip: u32) -> u64 {
        let m = &self.mips[mip as usize];
        match m.slice_bytes {
            Some(s) if self.desc.dim == Dimension::D3 => s * align(m.depth_el, self.block_d) as u64,
            Some(s) => s,
            None => {
                let tail = 1u64 << self.block_bytes_log2;
                if self.desc.dim == Dimension::D3 && !self.thick {
                    tail * m.depth_el as u64
                } else {
                    tail / self.block_d as u64 * align(m.depth_el, self.block_d) as u64
                }
            }
        }
    }

    /// The address-bit equation in use (`None` for LINEAR, or when addrlib has none).
    pub fn equation(&self) -> Option<&Equation> {
        self.equation.as_ref()
    }

    /// True when texel addressing is available (addrlib has no equation for 3D 64KB_D_X at
    /// 8 and 16 bytes per element).
    pub fn can_address(&self) -> bool {
        !self.tables.is_empty()
    }

    fn no_equation(&self) -> Error {
        Error::field(
            "swizzle mode",
            format!(
                "{} has no address equation for a {} surface of {} bytes/element (addrlib \
                 refuses texel addressing here too)",
                self.desc.mode,
                self.desc.dim.name(),
                self.bytes_per_element
            ),
        )
    }

    fn low_mask(&self) -> u64 {
        if self.desc.mode == SwizzleMode::Linear {
            0
        } else {
            (1u64 << self.block_bytes_log2) - 1
        }
    }

    fn build_tables(&self) -> Vec<LevelTables> {
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
    fn slice_base(&self, mip: usize, slice: u32) -> (u64, u64) {
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
    fn combine(base: u64, z: u64, xt: u64, yt: u64, lo: u64) -> u64 {
        base + (xt & !lo) + (yt & !lo) + ((xt ^ yt ^ z) & lo)
    }

    fn check_coord(&self, mip: u32, slice: u32, x: u32, y: u32) -> Result<()> {
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

    /// Array slices (2D) or depth slices (3D, addrlib's ceil) of a level.
    pub fn slices_at(&self, mip: u32) -> u32 {
        if self.desc.dim == Dimension::D3 {
            self.mips[mip as usize].depth_el
        } else {
            self.desc.depth_or_array_size
        }
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
                self.row_runs(mip, z, y0, y1, |y, x, t, len| {
                    let l = sub + (y as usize * w as usize + x as usize) * bpe;
                    f(l, t, len)
                });
            }
        }
    }

    /// Runs of contiguous texels of rows `y0..y1` of (mip, slice): `f(y, x, tiled, bytes)`.
    #[inline]
    fn row_runs(
        &self,
        mip: u32,
        slice: u32,
        y0: u32,
        y1: u32,
        mut f: impl FnMut(u32, u32, usize, usize),
    ) {
        let bpe = self.bytes_per_element as usize;
        let lo = self.low_mask();
        let (w, _, _) = self.linear_extent(mip);
        let t = &self.tables[mip as usize];
        let run = if t.run == u32::MAX { w } else { t.run.min(w) }.max(1) as usize;
        let (base, z) = self.slice_base(mip as usize, slice);
        for y in y0..y1 {
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
        let mut pieces: Vec<(u32, u32, u32, &mut [u8])> = Vec::new();
        let mut rest: &mut [u8] = out;
        for mip in 0..self.desc.mip_levels {
            let (w, h, n) = self.linear_extent(mip);
            let row = w as usize * bpe;
            let rows_per_piece = (65536 / row).clamp(1, h as usize) as u32;
            for s in 0..n {
                let mut y = 0;
                while y < h {
                    let rows = rows_per_piece.min(h - y);
                    let tail = std::mem::take(&mut rest);
                    let (piece, tail) = tail.split_at_mut(rows as usize * row);
                    pieces.push((mip, s, y, piece));
                    rest = tail;
                    y += rows;
                }
            }
        }
        pieces.into_par_iter().for_each(|(mip, s, y0, piece)| {
            let row = self.linear_extent(mip).0 as usize * bpe;
            let y1 = y0 + (piece.len() / row) as u32;
            self.row_runs(mip, s, y0, y1, |y, x, t, n| {
                let l = (y - y0) as usize * row + x as usize * bpe;
                copy_run(&mut piece[l..], &surface[t..], n);
            });
        });
        Ok(())
    }

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

/// Offset basis of the texel hash in the reference vectors (see `Layout::texel_hash`).
/// A non-standard basis (found by testing candidates against the 1x1 cases); the prime is FNV's.
pub const TEXEL_HASH_BASIS: u64 = 0x1465_0fb0_739d_0383;
