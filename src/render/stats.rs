//! What a render counted: rays and the wave model's counters per ray kind, texture work,
//! dropped samples and time. Each tile job counts into its own [`RenderStats`]; the render
//! merges them in tile order.

use crate::counters::Counters;
use serde::{Deserialize, Serialize};

/// Counters of one ray kind: the tracer's hardware counters and the number of queries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RayKindStats {
    /// Rays traced.
    pub rays: u64,
    /// Batches (calls into the tracer).
    pub batches: u64,
    /// The wave model's counters for these rays.
    pub counters: Counters,
}

impl RayKindStats {
    fn merge(&mut self, o: &RayKindStats) {
        self.rays += o.rays;
        self.batches += o.batches;
        self.counters.merge(&o.counters);
    }
}

/// What a render did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RenderStats {
    pub width: u32,
    pub height: u32,
    /// Samples per pixel actually taken.
    pub spp: u32,
    pub camera: RayKindStats,
    pub bounce: RayKindStats,
    pub shadow: RayKindStats,
    /// Texture lookups (trilinear: 8 texel fetches each) and texel fetches.
    pub texture_lookups: u64,
    pub texture_fetches: u64,
    /// Samples whose radiance was NaN or Inf and were dropped (should stay 0).
    pub nonfinite_samples: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl RenderStats {
    /// Adds the counts of `o` (one tile job) into `self`; size, `spp` and time are the
    /// render's own and stay.
    pub fn merge(&mut self, o: &RenderStats) {
        self.camera.merge(&o.camera);
        self.bounce.merge(&o.bounce);
        self.shadow.merge(&o.shadow);
        self.texture_lookups += o.texture_lookups;
        self.texture_fetches += o.texture_fetches;
        self.nonfinite_samples += o.nonfinite_samples;
    }

    /// All rays of every kind.
    pub fn total_rays(&self) -> u64 {
        self.camera.rays + self.bounce.rays + self.shadow.rays
    }
}
