//! The lane-by-lane schedule of a wave: each lane runs its whole traversal before the next
//! lane starts, and the wave's counters are rebuilt from what each lane did at each step.
//!
//! The lockstep loop ([`WaveRun::trace_wave`]) runs the wave as the hardware does: step s
//! issues one instruction for every lane still active. Lanes of a traversal shader never read
//! each other's state, so lane L's sequence of queries (and its hit) is the same whatever the
//! other lanes do; what the wave adds is only the step structure:
//!
//! - the wave runs `max over lanes of steps(L)` steps (`trav.iterations`), and lane L is in
//!   exec for its first `steps(L)` of them (`trav.lane_steps`);
//! - a step reaches the TD (one wave instruction charged, `td.instructions`, and `W` lanes
//!   available) when at least one lane's query at that step was tested (a box or triangle
//!   query), and the TD clocks are the sums of the tested queries.
//!
//! So running lane after lane, counting each lane's steps and remembering at which steps a
//! lane was not tested (rare: NaN or infinite registers, user nodes, out-of-bounds or unmapped
//! pointers), gives the lockstep loop's hits and every counter exactly. This is a second,
//! independent computation of a wave's counters (`tests/trace_equivalence.rs` compares the
//! two on every build option, with NaN, infinite and out-of-bounds lanes).
//!
//! It is not the default because it is slower on the host: measured 1.45x slower than
//! lockstep on the shared scenes (bunny primary, sponza diffuse) for the same host
//! instruction count (callgrind: 106 M vs 103 M on bunny primary). One lane's steps form one
//! dependency chain (the next node comes out of the sort of the last box test), which lockstep
//! overlaps across the lanes of a wave.
//!
//! The lockstep loop uses it for a wave's last lanes, though: once at most two lanes of the
//! host's waves are left in exec, they run alone to their ends here
//! ([`WaveRun::finish_lanes_alone`]). A wave's last steps often run one or two lanes, and a
//! lockstep step costs the host its set-up and mispredicted loop exits whatever its number
//! of lanes (measured 1.01-1.02x on the shared ray sets). So the lockstep and lane-by-lane
//! schedules share this module's per-lane step ([`WaveRun::run_lane_alone`]) for those last
//! steps; the stream schedule (`traverse::stream`), which shares none of it, still gives the
//! same hits and counters (`tests/profile_equivalence.rs`).

use super::lane::{lane_ray, LaneHit, LaneOutput, LaneState};
use super::lockstep::count_wave;
use super::{PrimitiveIds, Query, RegisterChange, Traversal, WaveRun};
use crate::counters::{Counters, ShaderCounters};
use crate::hw::instruction::{InactiveReason, LaneOutcome};
use crate::hw::NodePointer;
use crate::math::Ray;
use crate::wave::intersect::{LaneRay, TriangleBatch, TriangleRay};
use crate::wave::isa::Isa;
use crate::wave::td::{charge_shader, InstructionCost, LaneTotals, WaveCost};
use crate::wave::{LaneRegisters, LaneResult, LaneStatus, Wave};

/// What one lane did when run alone ([`WaveRun::run_lane_alone`]).
pub(super) struct LaneRun {
    /// Steps it took, the last included.
    pub steps: u32,
    /// Why the instruction turned it off, when it did (else it finished).
    pub deactivated: Option<InactiveReason>,
}

/// A wave's step structure rebuilt from its lanes run alone (see the module documentation):
/// the lanes' totals, the longest lane, the longest lane tested at every one of its steps,
/// and (in `tested`, kept by the caller) the tested steps of the other lanes.
#[derive(Default)]
struct LaneSteps {
    totals: LaneTotals,
    longest: u32,
    clean_max: u32,
}

impl LaneSteps {
    /// Adds a lane that took `steps` steps, `untested` of which reached no TD.
    fn add(&mut self, steps: u32, untested: &[u32], tested: &mut Vec<u64>) {
        self.totals.lane_steps += steps as u64;
        self.longest = self.longest.max(steps);
        if untested.is_empty() {
            self.clean_max = self.clean_max.max(steps);
        } else {
            mark_tested(tested, steps, untested);
        }
    }

    /// The sums of a `width`-lane wave that ran these lanes: steps `1..=clean_max` are
    /// tested by the clean lanes, later ones only by irregular lanes, marked in `tested`.
    fn wave_cost(&self, width: usize, tested: &[u64]) -> WaveCost {
        let charged = self.clean_max as u64 + count_bits_above(tested, self.clean_max);
        WaveCost::from_lane_totals(width, self.longest as u64, charged, &self.totals)
    }
}

/// Scratch of the lane-by-lane schedule, reused between waves (no allocation once warm).
#[derive(Default)]
pub struct ByLaneScratch<L> {
    /// The traversal state of the lane running now.
    lane: L,
    /// Steps (1-based) at which the lane running now was in exec but not tested.
    untested: Vec<u32>,
    /// Bit s set = some irregular lane (one with an untested step) was tested at step s.
    tested: Vec<u64>,
}

/// A lane run alone ([`WaveRun::run_lane_alone`]): its traversal state, the node it asks
/// for first, its registers (an accepted hit shrinks the extent), their triangle-test
/// set-up, and its hit bookkeeping.
pub(super) struct AloneLane<'l, L> {
    pub trav: &'l mut L,
    pub node: NodePointer,
    pub regs: &'l mut LaneRay,
    pub triangle_ray: &'l mut TriangleRay,
    pub hit: &'l mut LaneHit,
}

/// Where a lane run alone counts what it did: its wave's totals, its untested steps, and
/// the deepest stack.
pub(super) struct LaneTally<'t> {
    pub totals: &'t mut LaneTotals,
    pub untested: &'t mut Vec<u32>,
    pub max_depth: &'t mut usize,
}

impl<T: Traversal, P: PrimitiveIds + ?Sized> WaveRun<'_, T, P> {
    /// Runs one wave over `rays` (at most `W`), lane after lane: the same hits, per-ray
    /// clocks and counters as [`WaveRun::trace_wave`] (see the module documentation).
    #[inline(always)]
    pub(crate) fn trace_wave_by_lane<I: Isa, const W: usize>(
        &self,
        isa: I,
        wave_index: u64,
        rays: &[Ray],
        scratch: &mut ByLaneScratch<T::Lane>,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        let (traversal, root) = (self.traversal, self.root);
        assert!(rays.len() <= W && out.len() >= rays.len());
        count_wave(counters, W, rays.len());

        let mut wave_steps = LaneSteps::default();
        let mut max_depth = 0usize;
        let mut shader = ShaderCounters::default();
        let ByLaneScratch {
            lane,
            untested,
            tested,
        } = scratch;
        tested.clear();
        for (ray, o) in rays.iter().zip(out.iter_mut()) {
            let mut hit = LaneHit::default();
            // `!(tmin <= tmax)` is not traced (a NaN tmax is left to the instruction).
            if !(ray.tmin <= ray.tmax || ray.tmax.is_nan()) {
                *o = hit.output(counters);
                continue;
            }
            let mut regs = lane_ray(ray);
            hit.tmin = ray.tmin;
            hit.best_t = ray.tmax;
            let mut tri_ray = TriangleRay::new(&regs);
            let node = traversal.begin(lane, root);
            untested.clear();
            let run = self.run_lane_alone(
                isa,
                AloneLane {
                    trav: lane,
                    node,
                    regs: &mut regs,
                    triangle_ray: &mut tri_ray,
                    hit: &mut hit,
                },
                LaneTally {
                    totals: &mut wave_steps.totals,
                    untested,
                    max_depth: &mut max_depth,
                },
                counters,
            );
            wave_steps.add(run.steps, untested, tested);
            *o = hit.output(counters);
            traversal.finish_lane(lane, &mut shader);
        }
        wave_steps.wave_cost(W, tested).charge(counters, wave_index);
        charge_shader(counters, wave_index, &shader);
        counters.trav_max_stack_depth = counters.trav_max_stack_depth.max(max_depth as u64);
    }

    /// Runs one lane from its node to its end, alone: each step one instruction
    /// ([`crate::wave::WaveIntersector::execute`]), its cost added to the tally's totals,
    /// the steps at which nothing was tested pushed to its `untested` (numbered from 1 for
    /// the first step of this call). An accepted hit shrinks the lane's extent;
    /// `hit.clocks` grows by one a tested step.
    ///
    /// Whether the instruction accepts the lane's registers is checked once: a lane whose
    /// registers it rejects takes the general arm at its first step, which retires it, and a
    /// lane's registers change only by a finite extent, so a lane that passes once passes at
    /// every step. The lane's registers and bookkeeping stay in locals for the whole run and
    /// are written back at its end: behind the references they come in, every step would
    /// load and store them again.
    #[inline(always)]
    pub(super) fn run_lane_alone<I: Isa>(
        &self,
        isa: I,
        lane: AloneLane<'_, T::Lane>,
        tally: LaneTally<'_>,
        counters: &mut Counters,
    ) -> LaneRun {
        let (intersector, traversal) = (self.intersector, self.traversal);
        let AloneLane {
            trav,
            mut node,
            regs,
            triangle_ray,
            hit,
        } = lane;
        let (mut ray, mut lane_hit, mut tri) = (*regs, *hit, *triangle_ray);
        let mut cost = InstructionCost::default();
        let (mut max_depth, mut hits_accepted) = (*tally.max_depth, 0u64);
        // The lane's triangle test (its rows are 640 bytes, zeroed once a run).
        let mut triangles = TriangleBatch::default();
        let active = crate::wave::lanes::ray_is_active(&ray);
        let mut steps = 0u32;
        let deactivated = loop {
            steps += 1;
            let registers = LaneRegisters {
                ray: &ray,
                triangle_ray: &tri,
                active,
            };
            let result = intersector.execute(node, &registers, &mut triangles);
            cost.add_lane(&result);
            lane_hit.clocks += result.clocks();
            let next = match result {
                LaneResult::Box { result, .. } => {
                    traversal.after_box_masked(isa, trav, node, result.children, result.valid)
                }
                LaneResult::Triangle(dwords) => {
                    let prim_id = || self.prim_id.primitive_id(node, &dwords);
                    let accepted =
                        traversal.offer_triangle(trav, &mut lane_hit, node, dwords, prim_id);
                    if let Some(t) = accepted {
                        hits_accepted += 1;
                        ray.extent = t;
                    }
                    if accepted.is_some() && self.query == Query::AnyHit {
                        None
                    } else {
                        traversal.after_leaf(trav, node)
                    }
                }
                LaneResult::Untested { outcome, .. } => {
                    tally.untested.push(steps);
                    if let LaneOutcome::Inactive(reason) = outcome {
                        max_depth = max_depth.max(traversal.stack_depth(trav));
                        break Some(reason);
                    }
                    if T::SHADER && outcome == LaneOutcome::UserNode {
                        let step = traversal.user_node(trav, node, &mut ray, &mut lane_hit);
                        if step.registers == RegisterChange::Ray {
                            tri = TriangleRay::new(&ray);
                        }
                        step.next
                    } else {
                        traversal.after_leaf(trav, node)
                    }
                }
            };
            if T::SHADER {
                if let Some(world) = traversal.take_exit(trav) {
                    (ray.origin, ray.dir, ray.inv_dir) = (world.origin, world.dir, world.inv_dir);
                    tri = TriangleRay::new(&ray);
                }
            }
            max_depth = max_depth.max(traversal.stack_depth(trav));
            match next {
                Some(p) => node = p,
                None => break None,
            }
        };
        *regs = ray;
        *hit = lane_hit;
        *triangle_ray = tri;
        tally.totals.cost.add(&cost);
        *tally.max_depth = max_depth;
        counters.trav_hits_accepted += hits_accepted;
        LaneRun { steps, deactivated }
    }

    /// Finishes the lanes of `wave` still in exec after `steps` lockstep steps, each alone
    /// to its end ([`Self::run_lane_alone`]), and adds what the lockstep loop would have
    /// counted for the steps left to `wave_cost` (wave k holds lanes `W k..W (k + 1)`):
    /// the same sums, rebuilt from each lane's steps as the lane-by-lane schedule does
    /// (see the module documentation). The lanes retire with their clocks and status.
    ///
    /// Why: a wave's last steps often run one or two lanes; the lockstep step costs the host
    /// the same set-up and mispredicted loop exits whatever its number of lanes.
    pub(super) fn finish_lanes_alone<I: Isa, const W: usize, const H: usize>(
        &self,
        isa: I,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        steps: u32,
        wave_cost: &mut [WaveCost; 2],
        max_depth: &mut usize,
        counters: &mut Counters,
    ) {
        // Per wave: the steps left, rebuilt from its lanes; the tested steps of irregular
        // lanes (usually none: no allocation).
        let mut wave_steps = [LaneSteps::default(), LaneSteps::default()];
        let (mut untested, mut tested) = (Vec::new(), [Vec::new(), Vec::new()]);
        let mut exec = wave.exec;
        while exec != 0 {
            let i = exec.trailing_zeros() as usize;
            exec &= exec - 1;
            let k = (i / W) & 1;
            untested.clear();
            let LaneState {
                trav,
                hit,
                triangle_ray,
            } = &mut wave.state[i];
            let run = self.run_lane_alone(
                isa,
                AloneLane {
                    trav,
                    node: wave.node[i],
                    regs: &mut wave.ray[i],
                    triangle_ray,
                    hit,
                },
                LaneTally {
                    totals: &mut wave_steps[k].totals,
                    untested: &mut untested,
                    max_depth,
                },
                counters,
            );
            wave_steps[k].add(run.steps, &untested, &mut tested[k]);
            // Every step but the free ones cost one clock: those before this call (the
            // lockstep loop's count) and the tested ones of this call (`hit.clocks`).
            let hit = &mut wave.state[i].hit;
            hit.clocks += steps - hit.free_steps;
            let status = match run.deactivated {
                Some(reason) => LaneStatus::Deactivated(reason),
                None => LaneStatus::Finished,
            };
            wave.retire(i, status);
        }
        for k in 0..H / W {
            if wave_steps[k].longest != 0 {
                wave_cost[k].merge(&wave_steps[k].wave_cost(W, &tested[k]));
            }
        }
    }
}

/// Marks in `tested` (bit s = step s) the steps `1..=steps` of a lane, except `untested`.
fn mark_tested(tested: &mut Vec<u64>, steps: u32, untested: &[u32]) {
    let words = steps as usize / 64 + 1;
    if tested.len() < words {
        tested.resize(words, 0);
    }
    let mut u = untested.iter().peekable();
    for s in 1..=steps {
        if u.next_if_eq(&&s).is_none() {
            tested[s as usize / 64] |= 1 << (s % 64);
        }
    }
}

/// Number of bits set in `bits` above bit `from`.
fn count_bits_above(bits: &[u64], from: u32) -> u64 {
    bits.iter()
        .enumerate()
        .map(|(w, &b)| {
            let first = 64 * w as u32;
            let keep = match from.checked_sub(first) {
                None => b,
                Some(d) if d >= 63 => 0,
                Some(d) => b & (u64::MAX << (d + 1)),
            };
            keep.count_ones() as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// `mark_tested` and `count_bits_above` against a set of step numbers, for lanes of up to
    /// 200 steps (several words) with random untested steps, thresholds across word edges.
    #[test]
    fn tested_steps_match_a_set_of_steps() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as u32
        };
        for _ in 0..300 {
            let mut tested = Vec::new();
            let mut model = BTreeSet::new();
            for _ in 0..1 + next(4) {
                let steps = 1 + next(200);
                let untested: Vec<u32> = (1..=steps).filter(|_| next(5) == 0).collect();
                mark_tested(&mut tested, steps, &untested);
                model.extend((1..=steps).filter(|s| !untested.contains(s)));
            }
            for from in [0, 1, 62, 63, 64, 65, 127, 128, 150, 300, next(220)] {
                let expect = model.iter().filter(|&&s| s > from).count() as u64;
                assert_eq!(count_bits_above(&tested, from), expect, "from {from}");
            }
        }
    }
}
