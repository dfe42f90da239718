//! Per-TD and per-ray counters of the wave model: counted locally per worker, merged once.
//!
//! (Fields are being added by the wave model; the renderer only needs `Default`, `merge`
//! and `Serialize`.)

use serde::Serialize;

/// Counters of one worker (or, after merging, of a whole run).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    /// Rays traced.
    pub rays: u64,
}

impl Counters {
    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Counters) {
        self.rays += other.rays;
    }
}
