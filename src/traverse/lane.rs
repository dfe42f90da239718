//! A lane's state in the wave loops: the hit bookkeeping every strategy shares, the
//! registers a driver sets up for a ray, and what the lane produced.

use crate::counters::Counters;
use crate::hw::NodePointer;
use crate::math::{Hit, Ray};
use crate::wave::intersect::{LaneRay, TriangleRay};

/// Hit bookkeeping of one lane, common to all strategies.
#[derive(Clone, Copy, Debug)]
pub struct LaneHit {
    /// Software `tmin` (the instruction has none).
    pub tmin: f32,
    /// Current closest t (initially `tmax`); passed to the instruction as the extent.
    pub best_t: f32,
    /// Pointer and dwords of the accepted triangle, if any.
    pub best: Option<(NodePointer, [u32; 4])>,
    /// Primitive id of the accepted triangle.
    pub best_prim: u32,
    /// Instance of the accepted hit (`u32::MAX` in a flat scene).
    pub best_instance: u32,
    /// TD clocks this lane's ray cost. The lockstep wave loop sets it when the lane retires,
    /// from the steps the lane issued and [`Self::free_steps`] (each other step cost one
    /// clock), rather than counting on every step.
    pub clocks: u32,
    /// Steps the lane issued that cost no TD clock (a user node, a pointer out of bounds, the
    /// step that deactivated it), counted by the lockstep wave loop.
    pub free_steps: u32,
}

impl Default for LaneHit {
    fn default() -> Self {
        LaneHit {
            tmin: 0.0,
            best_t: f32::INFINITY,
            best: None,
            best_prim: u32::MAX,
            best_instance: u32::MAX,
            clocks: 0,
            free_steps: 0,
        }
    }
}

impl LaneHit {
    /// Offers a tested triangle's dwords: `t = t_num / t_denom` (a miss is {+inf, 1.0} and
    /// never wins) counts when finite, in `[tmin, best_t]`, of a real primitive, and nearer
    /// than the current hit (at an equal t, only a smaller primitive id wins, so the result
    /// does not depend on the traversal order). Returns the new closest t when accepted.
    #[inline]
    pub fn offer(
        &mut self,
        node: NodePointer,
        dwords: [u32; 4],
        prim_id: impl FnOnce() -> u32,
    ) -> Option<f32> {
        let t = f32::from_bits(dwords[0]) / f32::from_bits(dwords[1]);
        if !(t >= self.tmin && t <= self.best_t && t < f32::INFINITY) {
            return None;
        }
        let prim = prim_id();
        let better =
            prim != u32::MAX && (self.best.is_none() || t < self.best_t || prim < self.best_prim);
        if !better {
            return None;
        }
        self.best_t = t;
        self.best = Some((node, dwords));
        self.best_prim = prim;
        Some(t)
    }
}

impl LaneHit {
    /// What the lane produced, counting a hit in `counters.rays_hit`.
    pub fn output(&self, counters: &mut Counters) -> LaneOutput {
        if self.best.is_some() {
            counters.rays_hit += 1;
        }
        LaneOutput {
            best: self.best,
            prim_id: self.best_prim,
            instance: self.best_instance,
            t: self.best_t,
            clocks: self.clocks,
        }
    }
}

/// A lane's state in the wave loop: the strategy's part and the hit bookkeeping.
#[derive(Debug, Default)]
pub struct LaneState<L> {
    pub trav: L,
    pub hit: LaneHit,
    /// The lane's ray prepared for triangle tests (set when the lane starts).
    pub triangle_ray: TriangleRay,
}

/// The VGPRs a driver sets up for a ray: extent = tmax, inverse direction = 1 / dir (f32
/// division; 1/±0 = ±inf).
pub fn lane_ray(ray: &Ray) -> LaneRay {
    let dir = ray.dir.to_array();
    LaneRay {
        extent: ray.tmax,
        origin: ray.origin.to_array(),
        dir,
        inv_dir: dir.map(|d| 1.0 / d),
    }
}

/// What one wave produced per lane.
#[derive(Clone, Copy, Debug, Default)]
pub struct LaneOutput {
    /// Accepted triangle pointer and dwords, if any.
    pub best: Option<(NodePointer, [u32; 4])>,
    /// Its primitive id.
    pub prim_id: u32,
    /// Its instance (`u32::MAX` in a flat scene).
    pub instance: u32,
    /// Closest t (meaningful only with `best`).
    pub t: f32,
    /// TD clocks the ray cost.
    pub clocks: u32,
}

/// Turns a lane's accepted triangle into a [`Hit`] (mode 1 dwords give barycentrics:
/// `I / t_denom`, `J / t_denom`; front face = `t_denom > 0`, `semantics.md` 7.3).
pub fn hit_from_dwords(t: f32, prim_id: u32, dwords: [u32; 4], barycentrics: bool) -> Hit {
    // (The instance, when there is one, is the caller's to set.)
    let t_denom = f32::from_bits(dwords[1]);
    let bary = if barycentrics {
        [
            f32::from_bits(dwords[2]) / t_denom,
            f32::from_bits(dwords[3]) / t_denom,
        ]
    } else {
        [0.0; 2]
    };
    Hit {
        t,
        prim_id,
        bary,
        front_face: t_denom > 0.0,
        instance: Hit::NO_INSTANCE,
    }
}
