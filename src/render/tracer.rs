//! Building the hardware model's tracer for a scene.

use crate::bvh::{self, BuildOptions, BuiltBvh, Mesh};
use crate::scene::Geometry;
use crate::traverse::{WaveTracer, WaveTracerConfig};
use crate::Result;

/// The scene's triangles as the BVH builder's mesh (primitive id = triangle index).
pub fn bvh_mesh(geometry: &Geometry) -> Mesh {
    Mesh {
        positions: geometry.positions.clone(),
        indices: geometry.indices.clone(),
    }
}

/// Builds the BVH image of `geometry` with the default (console driver-like) options and
/// wraps it in a [`WaveTracer`] configured by `config`. The tracer runs each batch on the
/// calling thread (the renderer already spreads tiles over the pool), whatever
/// `config.parallel` says. Also returns the build report (metrics, timings, and the image's
/// settings: the tracer takes the image itself, so that it is never held twice;
/// [`WaveTracer::image_len`] gives its size).
pub fn build_wave_tracer(
    geometry: &Geometry,
    config: WaveTracerConfig,
) -> Result<(WaveTracer, BuiltBvh)> {
    let mesh = bvh_mesh(geometry);
    let mut built = bvh::build(&mesh, &BuildOptions::default())?;
    let settings = built.image.settings_only();
    let tracer = WaveTracer::from_image(
        std::mem::replace(&mut built.image, settings),
        &mesh,
        WaveTracerConfig {
            parallel: false,
            ..config
        },
    );
    Ok((tracer, built))
}
