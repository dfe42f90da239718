//! Textures (`map_Kd`): sRGB RGBA8 texels with a full mip chain.

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// An RGBA8 sRGB texture with a full mip chain (box-filtered in linear space).
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
    /// Row-major mips, level 0 first.
    Linear(Vec<Vec<[u8; 4]>>),
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
        let mut mips = vec![texels];
        let (mut w, mut h) = (width, height);
        while w > 1 || h > 1 {
            let next = downsample(mips.last().expect("level 0 exists"), w, h);
            w = (w / 2).max(1);
            h = (h / 2).max(1);
            mips.push(next);
        }
        Ok(Texture {
            path,
            width,
            height,
            storage: Storage::Linear(mips),
        })
    }

    /// Size of mip level 0.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Number of mip levels (down to 1x1).
    pub fn mip_count(&self) -> u32 {
        match &self.storage {
            Storage::Linear(m) => m.len() as u32,
        }
    }

    /// Size of mip level `mip`.
    pub fn mip_size(&self, mip: u32) -> (u32, u32) {
        ((self.width >> mip).max(1), (self.height >> mip).max(1))
    }

    /// One texel of one mip (coordinates must be in range).
    pub fn fetch_rgba8(&self, x: u32, y: u32, mip: u32) -> [u8; 4] {
        match &self.storage {
            Storage::Linear(m) => {
                let (w, _) = self.mip_size(mip);
                m[mip as usize][(y * w + x) as usize]
            }
        }
    }

    /// A short description of how the texels are stored.
    pub fn layout_name(&self) -> &'static str {
        match &self.storage {
            Storage::Linear(_) => "linear",
        }
    }
}

/// 2x2 box filter in linear space (odd edges clamp).
fn downsample(src: &[[u8; 4]], w: u32, h: u32) -> Vec<[u8; 4]> {
    let (nw, nh) = ((w / 2).max(1), (h / 2).max(1));
    let lut = srgb_lut();
    let mut out = Vec::with_capacity((nw * nh) as usize);
    for y in 0..nh {
        for x in 0..nw {
            let mut sum = [0.0f32; 4];
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let sx = (2 * x + dx).min(w - 1);
                let sy = (2 * y + dy).min(h - 1);
                let t = src[(sy * w + sx) as usize];
                for c in 0..3 {
                    sum[c] += lut[t[c] as usize];
                }
                sum[3] += t[3] as f32 / 255.0;
            }
            let mut texel = [0u8; 4];
            for c in 0..3 {
                texel[c] = linear_to_srgb8(sum[c] * 0.25);
            }
            texel[3] = (sum[3] * 0.25 * 255.0).round() as u8;
            out.push(texel);
        }
    }
    out
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
