//! Surface layout (addrlib's `ComputeSurfaceInfo` quantities) and texel addressing.
//!
//! Rules: `../shared/data/tiling/README.md` ("Layout rules"), written from AMD addrlib's GFX10
//! path (`Gfx10Lib::ComputeSurfaceInfoLinear/MicroTiled/MacroTiled`, `GetMipTailDim`,
//! `GetMaxNumMipsInTail`, the mip-tail coordinate split, `ComputeSurfaceAddrFromCoord*`).
//!
//! This file holds [`Layout`], the steps of [`Layout::new`] and the queries on a finished
//! layout. The steps live beside it:
//!
//! - `surface`: what to lay out ([`SurfaceDesc`], its validation) and the per-level record
//!   ([`MipLayout`]).
//! - `geometry`: the element grid and block shape derived from a description.
//! - `micro_tiled`: LINEAR and 256-byte chains (no mip tail).
//! - `macro_tiled`: 4 KiB, 64 KiB and VAR chains, with their mip tail.
//! - `address`: element to byte (per-level tables, the scalar reference) and the offset hash
//!   of the reference vectors.
//! - `coord`: byte to element, through the equation's inverse.
//! - `swizzle`: whole-image swizzle and unswizzle, in parallel and as a scalar twin.

use super::equation::{Equation, InverseEquation};
use super::mode::{BlockSize, Console, Dimension, SwizzleMode};
use crate::{Error, Result};

mod address;
mod coord;
mod geometry;
mod macro_tiled;
mod micro_tiled;
mod surface;
mod swizzle;

pub use coord::TexelCoord;
pub use surface::{MipLayout, SurfaceDesc};

use address::LevelTables;
use geometry::Geometry;

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

/// What laying out one chain of levels decides for the whole surface.
struct ChainLayout {
    /// Bytes of one chain (one array slice; thick 3D: one depth slice's share).
    slice_size: u64,
    /// The first level in the mip tail (the level count when there is no tail).
    first_mip_in_tail: u32,
    /// Array size, or depth rounded up to whole blocks.
    padded_slices: u32,
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
    ///
    /// Steps: validate the description, derive the element grid and block shape, pad and
    /// place the levels of one chain (micro-tiled or macro-tiled with a mip tail), then attach
    /// the address equation and the per-level tables.
    pub fn new(desc: &SurfaceDesc, console: Console) -> Result<Layout> {
        desc.validate()?;
        let g = Geometry::new(desc, console);
        let mut mips = MipLayout::unpadded_chain(desc, &g);
        let chain = match desc.mode.block_size() {
            BlockSize::Linear | BlockSize::B256 => micro_tiled::lay_out_chain(&g, &mut mips),
            _ => macro_tiled::lay_out_chain(&g, desc.mode.pattern(), &mut mips),
        };
        let mut layout = Layout {
            desc: *desc,
            console,
            bytes_per_element: g.bpe,
            element_block: desc.format.element_block,
            total_size: chain.slice_size * chain.padded_slices as u64,
            slice_size: chain.slice_size,
            base_align: 1 << g.block_bytes_log2,
            pitch: align(g.w_el, g.block_w),
            padded_height: if desc.mode == SwizzleMode::Linear {
                g.h_el
            } else {
                align(g.h_el, g.block_h)
            },
            padded_slices: chain.padded_slices,
            block_w: g.block_w,
            block_h: g.block_h,
            block_d: g.block_d,
            block_bytes_log2: g.block_bytes_log2,
            first_mip_in_tail: chain.first_mip_in_tail,
            // A description has at least one level, so a chain without a tail never starts
            // its tail at level 0.
            mip_chain_in_tail: chain.first_mip_in_tail == 0,
            thick: g.thick,
            mips,
            equation: None,
            inverse: None,
            tables: Vec::new(),
        };
        layout.attach_addressing();
        Ok(layout)
    }

    /// Looks up the address equation and its inverse and builds the per-level tables. LINEAR
    /// gets tables without an equation; a mode addrlib has no equation for gets neither, and
    /// [`Layout::can_address`] is false.
    ///
    /// Panics (a table bug) if an equation's in-block map is not a bijection.
    fn attach_addressing(&mut self) {
        let desc = self.desc;
        if desc.mode != SwizzleMode::Linear {
            let bpe_log2 = log2(self.bytes_per_element);
            let is_3d = desc.dim == Dimension::D3;
            self.equation = Equation::lookup(desc.mode, is_3d, bpe_log2, self.console);
            if let Some(eq) = &self.equation {
                self.inverse = InverseEquation::new(
                    eq,
                    bpe_log2,
                    log2(self.block_w),
                    log2(self.block_h),
                    log2(self.block_d),
                );
                assert!(
                    self.inverse.is_some(),
                    "pattern table for {} {} bpe {} is not a bijection",
                    desc.mode,
                    desc.dim.name(),
                    self.bytes_per_element
                );
            }
        }
        if desc.mode == SwizzleMode::Linear || self.equation.is_some() {
            self.tables = self.build_tables();
        }
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

    /// Array slices (2D) or depth slices (3D, addrlib's ceil) of a level.
    pub fn slices_at(&self, mip: u32) -> u32 {
        if self.desc.dim == Dimension::D3 {
            self.mips[mip as usize].depth_el
        } else {
            self.desc.depth_or_array_size
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
}
