//! Building the hardware model's tracer for a scene.

use crate::bvh::{self, BuildOptions, BuiltBvh, Mesh};
use crate::hw::peak::ConsoleConfig;
use crate::scene::Geometry;
use crate::traverse::{WaveTracer, WaveTracerConfig};
use crate::wave::WaveWidth;
use crate::Result;

/// The scene's triangles as the BVH builder's mesh (primitive id = triangle index).
pub fn bvh_mesh(geometry: &Geometry) -> Mesh {
    Mesh {
        positions: geometry.positions.clone(),
        indices: geometry.indices.clone(),
    }
}

/// Builds the BVH image of `geometry` with the default (console driver-like) options and
/// wraps it in a [`WaveTracer`] of `wave` width for `console`. The tracer runs each batch on
/// the calling thread (the renderer already spreads tiles over the pool). Also returns the
/// build report (image without its bytes' copy, metrics, timings).
pub fn build_wave_tracer(
    geometry: &Geometry,
    wave: WaveWidth,
    console: ConsoleConfig,
) -> Result<(WaveTracer, BuiltBvh)> {
    let built = bvh::build(&bvh_mesh(geometry), &BuildOptions::default())?;
    let image = built.image.clone();
    let ids = image.clone();
    let tracer = WaveTracer::from_parts(
        image.bytes,
        0,
        image.descriptor,
        image.root,
        Box::new(move |pointer: u32, dwords: &[u32; 4]| ids.primitive_id(pointer, dwords)),
        WaveTracerConfig {
            wave,
            console,
            parallel: false,
            ..WaveTracerConfig::default()
        },
    );
    Ok((tracer, built))
}
