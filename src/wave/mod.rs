//! The wave execution model: waves of 32 or 64 lanes, exec masks, the instruction's lane
//! kernel, its SIMD kernels and the TD cost model.
//!
//! - [`lanes`]: [`Wave`], the lanes' VGPRs, exec mask and [`LaneStatus`].
//! - [`instruction`]: [`WaveIntersector`], whose lane kernel
//!   ([`WaveIntersector::execute`]) runs `image_bvh_intersect_ray` for one lane and says
//!   what it cost ([`LaneResult`]).
//! - [`intersect`]: the vector box and triangle tests and the node cache, bit-identical to
//!   the scalar reference [`crate::hw::image_bvh_intersect_ray`].
//! - [`isa`]: the instruction sets the wave loop is compiled for ([`Portable`], [`Avx2`]).
//! - [`td`]: which TD runs a wave, and what an instruction costs it.
//! - [`microbench`]: this machine's emulated instruction rate.
//!
//! The traversal shaders that drive waves, and the [`Tracer`] implementation
//! `WaveTracer`, live one layer up in [`crate::traverse`].

pub mod instruction;
pub mod intersect;
pub mod isa;
pub mod lanes;
pub mod microbench;
pub mod td;

pub use instruction::{LaneRegisters, LaneResult, WaveIntersector};
pub use intersect::{BvhMemory, DecodedBox, LaneRay, NodeCache, LANES};
pub use isa::{Avx2, Isa, IsaKernel, Portable};
pub use lanes::{LaneStatus, Wave, WaveResults, WaveWidth};
pub use td::InstructionCost;

use crate::counters::Counters;
use crate::math::{Hit, HitRecord, Ray};

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

    /// [`Self::closest_hits`] as a hit file records it: each ray's distance and primitive
    /// id ([`HitRecord`]). The same rays, hits and counters; a tracer that can leave out
    /// what a [`Hit`] adds overrides it.
    fn closest_hit_records(
        &self,
        rays: &[Ray],
        records: &mut [HitRecord],
        counters: &mut Counters,
    ) {
        assert_eq!(rays.len(), records.len(), "one record per ray");
        let mut hits = vec![Hit::MISS; rays.len()];
        self.closest_hits(rays, &mut hits, None, counters);
        for (record, hit) in records.iter_mut().zip(&hits) {
            *record = HitRecord::from(hit);
        }
    }
}
