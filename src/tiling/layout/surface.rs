//! What to lay out ([`SurfaceDesc`]: format, dimension, size, mip count, swizzle mode) and the
//! record each mip level becomes ([`MipLayout`]).

use super::geometry::Geometry;
use super::shift_ceil;
use crate::tiling::mode::{check_mode, Dimension, Format, SwizzleMode};
use crate::{Error, Result};

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

    /// Depth in texels: the depth of a 3D texture, else 1.
    pub(super) fn depth_px(&self) -> u32 {
        if self.dim == Dimension::D3 {
            self.depth_or_array_size
        } else {
            1
        }
    }

    /// Checks, in this order: sizes of at least 1 and at most 16384, the 1D rules (height 1,
    /// not block-compressed), the mip count against the full chain, then the mode's GFX10.3
    /// validity rules ([`check_mode`]). The first rule broken is the error.
    pub(super) fn validate(&self) -> Result<()> {
        let d = self;
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
        let depth_px = d.depth_px();
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
        check_mode(d.mode, d.dim, &d.format)
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

impl MipLayout {
    /// Every level of `desc` with its texel and element sizes filled in; padding, offsets and
    /// tail placement zero, for the chain layout to fill.
    pub(super) fn unpadded_chain(desc: &SurfaceDesc, g: &Geometry) -> Vec<MipLayout> {
        let mip_px = |v: u32, m: u32| (v >> m).max(1);
        (0..desc.mip_levels)
            .map(|m| MipLayout {
                width_px: mip_px(desc.width, m),
                height_px: mip_px(desc.height, m),
                depth: mip_px(desc.depth_px(), m),
                width_el: shift_ceil(g.w_el, m),
                height_el: shift_ceil(g.h_el, m),
                depth_el: if g.is_3d {
                    shift_ceil(g.num_slices, m)
                } else {
                    1
                },
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
            .collect()
    }
}
