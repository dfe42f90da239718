//! The path tracer: every ray goes through a [`crate::wave::Tracer`], so a render is also a
//! hardware profile.
//!
//! [`render()`] is a wavefront unidirectional path tracer (its docs describe the batches):
//! next-event estimation on emissive triangles and the environment with
//! multiple importance sampling (power heuristic), Russian roulette after three segments,
//! any-hit shadow rays, a box pixel filter, and per-(pixel, sample) random streams so the
//! image is the same whatever the thread count.
//!
//! From the top: `integrator` holds [`render()`], its options and output, and runs the
//! passes; `tile` renders one tile for one pass as a wavefront of ray batches; `shade`
//! shades one hit (emission, light sample, BSDF sample) through `bsdf` and
//! `texture_filter`; `film` sums the tiles; `stats` counts; `rng` gives each
//! (pixel, sample) its stream. `output` and `heatmap` turn results into files, and `tracer`
//! builds the hardware model's tracer for a scene.

mod bsdf;
mod film;
mod heatmap;
mod integrator;
mod output;
mod rng;
mod shade;
mod stats;
mod texture_filter;
mod tile;
mod tracer;

pub use bsdf::{fresnel_dielectric, Bsdf, BsdfSample};
pub use heatmap::{heatmap_rgb8, ramp};
pub use integrator::{crop_window, render, Control, RenderOptions, RenderOutput, RenderProgress};
pub use output::{
    check_exposure, encode_exr, encode_exr_with, encode_image, encode_png, read_exr, to_srgb8,
    write_image, ImageFormat,
};
pub use rng::Rng;
pub use stats::{RayKindStats, RenderStats};
pub use tracer::{build_wave_tracer, bvh_mesh, two_level_input, AlphaTest, SceneBuild};

use glam::Vec3;

/// A linear RGB image, row-major, row 0 at the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<Vec3>,
}

impl Image {
    /// The pixel at `(x, y)`.
    pub fn at(&self, x: u32, y: u32) -> Vec3 {
        self.pixels[(y * self.width + x) as usize]
    }

    /// Mean over all pixels.
    pub fn mean(&self) -> Vec3 {
        let s = self.pixels.iter().fold([0.0f64; 3], |a, p| {
            [a[0] + p.x as f64, a[1] + p.y as f64, a[2] + p.z as f64]
        });
        let n = self.pixels.len().max(1) as f64;
        Vec3::new((s[0] / n) as f32, (s[1] / n) as f32, (s[2] / n) as f32)
    }
}
