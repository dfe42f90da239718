//! The film: per-pixel sums of radiance (and of camera-ray TD clocks) over whole passes,
//! added tile by tile in a fixed order, and their means once the render ends.

use super::tile::{Tile, TileResult};
use super::Image;
use glam::Vec3;

/// Sums of every pixel over the passes finished so far.
pub(super) struct Film {
    width: u32,
    height: u32,
    /// Radiance summed per pixel, row-major.
    sums: Vec<[f64; 3]>,
    /// Camera-ray TD clocks summed per pixel; `None` when clocks are not recorded.
    clocks: Option<Vec<u64>>,
}

impl Film {
    /// A black `width` x `height` film, with clock sums when `record_clocks`.
    pub fn new(width: u32, height: u32, record_clocks: bool) -> Self {
        let n = (width * height) as usize;
        Film {
            width,
            height,
            sums: vec![[0.0f64; 3]; n],
            clocks: record_clocks.then(|| vec![0u64; n]),
        }
    }

    /// Adds the sums of one tile job.
    pub fn add(&mut self, tile: &Tile, r: &TileResult) {
        let tw = tile.width() as usize;
        for (i, s) in r.sums.iter().enumerate() {
            let idx = (tile.y0 as usize + i / tw) * self.width as usize + tile.x0 as usize + i % tw;
            for (sum, v) in self.sums[idx].iter_mut().zip(s) {
                *sum += v;
            }
            if let Some(clocks) = &mut self.clocks {
                clocks[idx] += r.clocks[i];
            }
        }
    }

    /// The mean radiance per pixel over `spp` samples, and the mean camera-ray TD clocks
    /// when recorded (black and zero when `spp` is 0).
    pub fn resolve(self, spp: u32) -> (Image, Option<Vec<f32>>) {
        let inv = if spp > 0 { 1.0 / spp as f64 } else { 0.0 };
        let image = Image {
            width: self.width,
            height: self.height,
            pixels: self
                .sums
                .iter()
                .map(|s| {
                    Vec3::new(
                        (s[0] * inv) as f32,
                        (s[1] * inv) as f32,
                        (s[2] * inv) as f32,
                    )
                })
                .collect(),
        };
        let clocks = self
            .clocks
            .map(|clocks| clocks.iter().map(|&c| (c as f64 * inv) as f32).collect());
        (image, clocks)
    }
}
