//! Textures (`map_Kd`): sRGB RGBA8 texels with a full mip chain, stored swizzled as the
//! console GPU would (`4KB_S` on Series X, through [`crate::tiling::SwizzledTexture`]) and
//! read back through the swizzle addressing on every fetch.

use crate::tiling::{Console, SwizzleMode, SwizzledTexture};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The swizzle mode textures are stored in.
pub const TEXTURE_SWIZZLE_MODE: &str = "4KB_S";

/// An RGBA8 sRGB texture with a full mip chain (2x2 box filter on the 8-bit codes, as the
/// tiling module builds it), stored swizzled in [`TEXTURE_SWIZZLE_MODE`] for Series X.
#[derive(Clone, Debug)]
pub struct Texture {
    /// Where it was loaded from (for messages).
    pub path: PathBuf,
    width: u32,
    height: u32,
    storage: Storage,
}

/// Where the texels live.
#[derive(Clone, Debug)]
enum Storage {
    /// The console's swizzled layout.
    Swizzled(SwizzledTexture),
}

impl Texture {
    /// Loads a PNG (or any format the `image` crate reads here); errors name the path.
    pub fn load(path: &Path) -> Result<Texture> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let img = image::load_from_memory(&bytes)
            .map_err(|e| Error::parse(path, 0, format!("cannot decode texture: {e}")))?
            .to_rgba8();
        let (w, h) = img.dimensions();
        let texels: Vec<[u8; 4]> = img.pixels().map(|p| p.0).collect();
        Texture::from_rgba8(path, w, h, texels)
    }

    /// A texture from row-major RGBA8 sRGB texels.
    pub fn from_rgba8(
        path: impl Into<PathBuf>,
        width: u32,
        height: u32,
        texels: Vec<[u8; 4]>,
    ) -> Result<Texture> {
        let path = path.into();
        if width == 0 || height == 0 || texels.len() != width as usize * height as usize {
            return Err(Error::parse(
                &path,
                0,
                format!(
                    "texture is {width}x{height} but has {} texels",
                    texels.len()
                ),
            ));
        }
        let bytes: Vec<u8> = texels.concat();
        let mode = SwizzleMode::from_name(TEXTURE_SWIZZLE_MODE)?;
        let swizzled = SwizzledTexture::from_rgba8(width, height, &bytes, mode, Console::SeriesX)
            .map_err(|e| {
            Error::parse(&path, 0, format!("cannot store texture swizzled: {e}"))
        })?;
        Ok(Texture {
            path,
            width,
            height,
            storage: Storage::Swizzled(swizzled),
        })
    }

    /// Size of mip level 0.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Number of mip levels (down to 1x1).
    pub fn mip_count(&self) -> u32 {
        match &self.storage {
            Storage::Swizzled(t) => t.mip_count(),
        }
    }

    /// Size of mip level `mip`.
    pub fn mip_size(&self, mip: u32) -> (u32, u32) {
        match &self.storage {
            Storage::Swizzled(t) => t.mip_size(mip),
        }
    }

    /// One texel of one mip (coordinates must be in range).
    pub fn fetch_rgba8(&self, x: u32, y: u32, mip: u32) -> [u8; 4] {
        match &self.storage {
            Storage::Swizzled(t) => t.fetch_rgba8(x, y, mip),
        }
    }

    /// A short description of how the texels are stored.
    pub fn layout_name(&self) -> &'static str {
        match &self.storage {
            Storage::Swizzled(_) => "4KB_S (Series X)",
        }
    }
}

fn srgb_lut() -> &'static [f32; 256] {
    static LUT: OnceLock<[f32; 256]> = OnceLock::new();
    LUT.get_or_init(|| {
        let mut t = [0.0; 256];
        for (i, v) in t.iter_mut().enumerate() {
            let c = i as f32 / 255.0;
            *v = if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            };
        }
        t
    })
}

/// The linear value of an 8-bit sRGB code.
pub fn srgb_to_linear(code: u8) -> f32 {
    srgb_lut()[code as usize]
}

/// The 8-bit sRGB code of a linear value (clamped to [0, 1]).
pub fn linear_to_srgb8(v: f32) -> u8 {
    let v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
    let s = if v <= 0.003_130_8 {
        v * 12.92
    } else {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    };
    (s * 255.0 + 0.5) as u8
}
