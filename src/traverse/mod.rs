//! Traversal "shaders": per-lane loops that issue one intersect instruction per step.
//!
//! A traversal is a [`Traversal`] strategy (what a lane does with the four dwords the
//! instruction returns: which node to ask for next) driven by a wave loop that, per step,
//! issues the instruction for every active lane at once (lanes may ask for different node
//! types in the same step), then lets each lane consume its result. Hit bookkeeping
//! ([`LaneHit`]: closest hit or any hit, software `tmin`, `t = t_num / t_denom` against the
//! current closest, passed back as the ray extent) is common to all strategies.
//!
//! - Strategies: [`FullStack`] (the default: a complete per-lane stack), and in
//!   [`short_stack`] short stacks with a restart trail or parent walk-back, and the
//!   stackless trail; [`LeafChains`] walks leaf chains around any of them.
//! - Schedules of a wave's lanes (the same hits and counters):
//!   - `lockstep` ([`WaveRun::trace_wave`]): step by step, as the hardware runs a wave, in
//!     named phases; the default.
//!   - `by_lane`: each lane to its end, the wave's counters rebuilt from its steps.
//!   - [`stream`]: issue all, then consume, with optional lane refill (the profiler's).
//! - [`WaveTracer`]: the [`Tracer`](crate::wave::Tracer) over a BVH image.
//! - [`rayfile`]: ray and hit files.

mod by_lane;
mod chains;
mod config;
pub mod dxr;
mod lane;
mod lockstep;
pub mod rayfile;
pub mod short_stack;
mod stack;
mod start;
pub mod stream;
mod tracer;
mod traversal;
pub mod two_level;

pub use chains::LeafChains;
pub use config::{Schedule, SimdPath, Strategy, StrategyVisitor, WaveTracerConfig};
pub use lane::{hit_from_dwords, lane_ray, LaneHit, LaneOutput, LaneState};
pub use lockstep::LockstepLanes;
pub use stack::FullStack;
pub use start::{start_lane, start_lane_checked, LaneStart};
pub use tracer::WaveTracer;
#[cfg(test)]
pub(crate) use traversal::RawSteps;
pub use traversal::{RegisterChange, Traversal, UserNodeStep, WorldRay};

use crate::hw::NodePointer;
use crate::wave::WaveIntersector;

/// Maps an accepted triangle (its pointer and the instruction's four dwords) to the
/// application's primitive id (`u32::MAX` for none).
pub trait PrimitiveIds: Send + Sync {
    fn primitive_id(&self, triangle_pointer: NodePointer, dwords: &[u32; 4]) -> u32;
}

impl<F: Fn(NodePointer, &[u32; 4]) -> u32 + Send + Sync> PrimitiveIds for F {
    fn primitive_id(&self, triangle_pointer: NodePointer, dwords: &[u32; 4]) -> u32 {
        self(triangle_pointer, dwords)
    }
}

/// Closest hit or any hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// Find the nearest hit in `[tmin, tmax]`.
    ClosestHit,
    /// Stop at the first hit in `[tmin, tmax]` (shadow rays).
    AnyHit,
}

/// What every wave of a dispatch shares: the instruction, the traversal shader, the root
/// node, the primitive-id map and the query.
pub struct WaveRun<'a, T, P: ?Sized> {
    pub intersector: &'a WaveIntersector<'a>,
    pub traversal: &'a T,
    pub root: NodePointer,
    pub prim_id: &'a P,
    pub query: Query,
}

// (Written out: a derive would ask `T: Copy` and `P: Copy`, and the fields are references.)
impl<T, P: ?Sized> Clone for WaveRun<'_, T, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, P: ?Sized> Copy for WaveRun<'_, T, P> {}
