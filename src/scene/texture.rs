//! Textures (`map_Kd`, `map_d`): RGBA8 texels with a full mip chain, stored swizzled as the
//! console GPU would (`4KB_S` on Series X, through [`crate::tiling::SwizzledTexture`]) and
//! read back through the swizzle addressing on every fetch.

use crate::tiling::{Console, SwizzleMode, SwizzledTexture};
use crate::{Error, Result};
use glam::Vec2;
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
    /// The image had an alpha channel (else alpha reads its first channel, and the stored
    /// alpha is 255).
    has_alpha_channel: bool,
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
        Texture::decode(path, &bytes)
    }

    /// Decodes an encoded image (PNG, as [`Texture::load`] reads); `path` names it in
    /// errors and messages (for an image inside a glTF file, the file and the image).
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<Texture> {
        let decoded = image::load_from_memory(bytes)
            .map_err(|e| Error::parse(path, 0, format!("cannot decode texture: {e}")))?;
        let has_alpha_channel = decoded.color().has_alpha();
        let img = decoded.to_rgba8();
        let (w, h) = img.dimensions();
        let texels: Vec<[u8; 4]> = img.pixels().map(|p| p.0).collect();
        let mut texture = Texture::from_rgba8(path, w, h, texels)?;
        texture.has_alpha_channel = has_alpha_channel;
        Ok(texture)
    }

    /// A texture from row-major RGBA8 texels (sRGB colour, linear alpha); its alpha is
    /// the fourth channel.
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
            has_alpha_channel: true,
            storage: Storage::Swizzled(swizzled),
        })
    }

    /// Whether alpha is the image's alpha channel (else its first channel: an image
    /// without alpha used as an alpha texture is a grey mask).
    pub fn has_alpha_channel(&self) -> bool {
        self.has_alpha_channel
    }

    /// Alpha in [0, 1] at `uv` (OBJ convention: v up; repeat wrap): the nearest texel of
    /// mip 0, its alpha channel (or first channel without one) as code / 255, no sRGB
    /// decoding. A non-finite `uv` reads at (0, 0).
    pub fn alpha_at(&self, uv: Vec2) -> f32 {
        let uv = if uv.is_finite() { uv } else { Vec2::ZERO };
        let texel = |t: f32, n: u32| -> u32 {
            // floor(t * n) mod n; the f64 product keeps large coordinates exact enough.
            ((t as f64 * n as f64).floor() as i64).rem_euclid(n as i64) as u32
        };
        let x = texel(uv.x, self.width);
        let y = texel(1.0 - uv.y, self.height); // OBJ v points up, rows go down
        let rgba = self.fetch_rgba8(x, y, 0);
        let code = if self.has_alpha_channel {
            rgba[3]
        } else {
            rgba[0]
        };
        code as f32 / 255.0
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_is_the_nearest_texel_of_mip_0_with_v_up_and_repeat_wrap() {
        // 4x2: alpha codes 0..8 row-major from the top row.
        let texels: Vec<[u8; 4]> = (0..8u8).map(|i| [255, 255, 255, i * 30]).collect();
        let t = Texture::from_rgba8("a.png", 4, 2, texels).unwrap();
        assert!(t.has_alpha_channel());
        let code = |u: f32, v: f32| (t.alpha_at(Vec2::new(u, v)) * 255.0).round() as u8;
        assert_eq!(code(0.1, 0.9), 0); // top-left
        assert_eq!(code(0.9, 0.9), 90); // top-right
        assert_eq!(code(0.1, 0.1), 120); // bottom-left
        assert_eq!(code(0.6, 0.4), 180); // bottom row, third column
        assert_eq!(code(1.1, -0.1), code(0.1, 0.9));
        assert_eq!(code(-0.9, 1.1), code(0.1, 0.1));
        assert_eq!(code(f32::INFINITY, 0.5), code(0.0, 0.0));
    }
}
