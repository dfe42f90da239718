//! An RGBA8 texture stored swizzled, sampled through the addressing (the renderer's entry).

use super::layout::{Layout, SurfaceDesc};
use super::mode::{Console, Format, SwizzleMode};
use crate::{Error, Result};

/// An RGBA8 2D texture with a full mip chain, stored in a console swizzle mode.
#[derive(Clone, Debug)]
pub struct SwizzledTexture {
    layout: Layout,
    data: Vec<u8>,
}

/// The next level of an RGBA8 image with a 2x2 box filter (D3D floor sizes; an odd edge
/// repeats its last texel).
fn downsample(src: &[u8], w: u32, h: u32) -> (Vec<u8>, u32, u32) {
    let (nw, nh) = ((w / 2).max(1), (h / 2).max(1));
    let mut out = vec![0u8; (nw * nh * 4) as usize];
    for y in 0..nh {
        let (y0, y1) = ((2 * y).min(h - 1), (2 * y + 1).min(h - 1));
        for x in 0..nw {
            let (x0, x1) = ((2 * x).min(w - 1), (2 * x + 1).min(w - 1));
            for c in 0..4 {
                let at = |xx: u32, yy: u32| src[((yy * w + xx) * 4 + c) as usize] as u32;
                let sum = at(x0, y0) + at(x1, y0) + at(x0, y1) + at(x1, y1);
                out[((y * nw + x) * 4 + c) as usize] = ((sum + 2) / 4) as u8;
            }
        }
    }
    (out, nw, nh)
}

/// The packed mip chain (levels 0..`levels`, each row-major) of an RGBA8 image, each level
/// made from the previous one with a 2x2 box filter. `texels` must hold `width * height * 4`
/// bytes (panics otherwise: a bug in the caller).
pub fn rgba8_mip_chain(width: u32, height: u32, texels: &[u8], levels: u32) -> Vec<u8> {
    assert_eq!(texels.len() as u64, width as u64 * height as u64 * 4);
    let mut linear = texels.to_vec();
    let (mut start, mut w, mut h) = (0usize, width, height);
    for _ in 1..levels {
        let (next, nw, nh) = downsample(&linear[start..], w, h);
        start = linear.len();
        linear.extend_from_slice(&next);
        w = nw;
        h = nh;
    }
    linear
}

impl SwizzledTexture {
    /// RGBA8 texels, row-major, full mip chain built with a 2x2 box filter, stored in `mode`.
    pub fn from_rgba8(
        width: u32,
        height: u32,
        texels: &[u8],
        mode: SwizzleMode,
        console: Console,
    ) -> Result<Self> {
        let expected = width as u64 * height as u64 * 4;
        if texels.len() as u64 != expected {
            return Err(Error::field(
                "texels",
                format!(
                    "{} bytes for a {width}x{height} RGBA8 image, expected {expected}",
                    texels.len()
                ),
            ));
        }
        let mips = SurfaceDesc::full_mip_count(width, height, 1);
        let desc = SurfaceDesc::new_2d(Format::RGBA8, width, height, 1, mips, mode);
        let layout = Layout::new(&desc, console)?;
        let linear = rgba8_mip_chain(width, height, texels, mips);
        let data = layout.swizzle(&linear)?;
        Ok(SwizzledTexture { layout, data })
    }

    pub fn mip_count(&self) -> u32 {
        self.layout.desc.mip_levels
    }

    /// (width, height) of a level in texels; the last level for `mip` past the chain.
    pub fn mip_size(&self, mip: u32) -> (u32, u32) {
        let m = &self.layout.mips[mip.min(self.mip_count() - 1) as usize];
        (m.width_px, m.height_px)
    }

    /// One texel through the swizzled addressing. Coordinates clamp to the level and `mip`
    /// to the chain (clamp addressing), so any input is safe.
    #[inline]
    pub fn fetch_rgba8(&self, x: u32, y: u32, mip: u32) -> [u8; 4] {
        let mip = mip.min(self.mip_count() - 1);
        let m = &self.layout.mips[mip as usize];
        let (x, y) = (x.min(m.width_px - 1), y.min(m.height_px - 1));
        let off = self.layout.offset_unchecked(mip, 0, x, y) as usize;
        let mut t = [0u8; 4];
        t.copy_from_slice(&self.data[off..off + 4]);
        t
    }

    /// The layout the texels are stored in.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The swizzled bytes (`layout().total_size` of them).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }
}
