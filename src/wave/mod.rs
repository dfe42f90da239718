//! The wave execution model: waves of 32 or 64 lanes, exec masks, the SIMD intersector and
//! the TD cost model.
//!
//! (Being written. The [`Tracer`] trait is the contract the renderer and profiler use.)

use crate::counters::Counters;
use crate::math::{Hit, Ray};

/// Something that traces batches of rays and counts what the hardware would do.
///
/// Implementations are deterministic: the same rays give the same hits and counters,
/// whatever the thread count. Callers parallelize across batches and merge counters.
pub trait Tracer: Sync {
    /// Closest hit per ray within `[tmin, tmax]`. When `ray_clocks` is given, it receives the
    /// TD clocks each ray cost (for heatmaps).
    fn closest_hits(
        &self,
        rays: &[Ray],
        hits: &mut [Hit],
        ray_clocks: Option<&mut [u32]>,
        counters: &mut Counters,
    );

    /// Whether each ray hits anything within `[tmin, tmax]` (shadow rays; any hit ends the ray).
    fn any_hits(&self, rays: &[Ray], occluded: &mut [bool], counters: &mut Counters);
}
