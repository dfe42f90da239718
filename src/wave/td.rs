//! The TD cost model: which TD runs a wave, and what each wave instruction costs it.
//!
//! Hardware (`rt-hardware.md` "Where the hardware sits"): every WGP has 2 TDs; per clock a TD
//! runs one lane's box query (four AABBs) or one lane's triangle test. Inactive lanes (exec
//! off, NaN registers, infinite origin) cost nothing; user nodes and out-of-bounds lanes are
//! not tested and cost nothing either.
//!
//! Policy (documented choice, the hardware's wave placement is not public): wave `w` of a
//! dispatch runs on TD `w mod TDs`, round-robin by wave index. A wave instruction with `n`
//! lanes that reach the TD costs that TD `n` clocks, whatever mixture of box and triangle
//! queries the lanes asked for. The modelled time of a dispatch is the busiest TD's clocks
//! divided by the clock rate (all TDs run in parallel).
//!
//! The same waves are assigned to both consoles' TD arrays (Series S: 20, Series X: 52), so
//! one run reports both.

use super::instruction::LaneResult;
use crate::counters::{Counters, ShaderCounters, TdCounters};
use crate::hw::instruction::{InactiveReason, LaneOutcome};
use crate::hw::peak::ConsoleConfig;

/// What lanes' instructions cost, summed: one wave instruction's lanes (the lockstep and
/// stream schedules), or a wave's lanes over all their steps (the by-lane schedule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstructionCost {
    pub box_queries: u64,
    /// Box-query slots holding a real child.
    pub aabb_useful: u64,
    pub triangle_tests: u64,
    pub user_nodes: u64,
    pub out_of_bounds: u64,
    /// Lanes deactivated by NaN registers.
    pub nan: u64,
    /// Lanes deactivated by an infinite origin.
    pub inf_origin: u64,
}

impl InstructionCost {
    /// TD clocks: one per lane that ran a box query or a triangle test.
    #[inline(always)]
    pub fn clocks(&self) -> u64 {
        self.box_queries + self.triangle_tests
    }

    /// Adds one lane's instruction. The one place a lane's result becomes counters: every
    /// schedule's per-lane costs go through here (the lockstep loop's box and triangle
    /// lanes through [`StepCost`], which adds the same sums).
    #[inline(always)]
    pub fn add_lane(&mut self, result: &LaneResult) {
        match *result {
            LaneResult::Box { useful_slots, .. } => {
                self.box_queries += 1;
                self.aabb_useful += useful_slots as u64;
            }
            LaneResult::Triangle(_) => self.triangle_tests += 1,
            LaneResult::Untested { outcome, .. } => match outcome {
                LaneOutcome::UserNode => self.user_nodes += 1,
                LaneOutcome::OutOfBounds | LaneOutcome::Unmapped => self.out_of_bounds += 1,
                LaneOutcome::Inactive(InactiveReason::InfiniteOrigin) => self.inf_origin += 1,
                LaneOutcome::Inactive(_) => self.nan += 1,
                LaneOutcome::Tested => unreachable!("a tested lane is a box or a triangle"),
            },
        }
    }

    /// Adds `other`'s sums.
    #[inline]
    pub fn add(&mut self, other: &InstructionCost) {
        self.box_queries += other.box_queries;
        self.aabb_useful += other.aabb_useful;
        self.triangle_tests += other.triangle_tests;
        self.user_nodes += other.user_nodes;
        self.out_of_bounds += other.out_of_bounds;
        self.nan += other.nan;
        self.inf_origin += other.inf_origin;
    }
}

/// One lockstep step's costs for the one or two waves it runs side by side (wave k's lanes
/// are `W k..W (k + 1)` of the host lanes).
///
/// Box lanes are tallied in one packed sum (box queries at bit 16 k, useful slots at bit
/// 32 + 16 k; at most 64 and 256 a step): adding to `waves[k]` lane by lane (an indexed
/// read-modify-write) made each box lane wait for the previous one's store. Triangle lanes
/// are counted from the mask of the lanes whose test went to the batch.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepCost {
    waves: [InstructionCost; 2],
    box_tally: u64,
    triangle_lanes: u64,
}

impl StepCost {
    /// `lanes` box queries in wave `wave` (0 or 1), with `useful_slots` child slots in all.
    #[inline(always)]
    pub fn box_queries(&mut self, wave: usize, lanes: u32, useful_slots: u32) {
        self.box_tally += (lanes as u64 | (useful_slots as u64) << 32) << (16 * wave);
    }

    /// The lanes in `mask` (bit i: host lane i) each ran a triangle test.
    #[inline(always)]
    pub fn triangle_tests(&mut self, mask: u64) {
        self.triangle_lanes |= mask;
    }

    /// Any other lane's instruction, in wave `wave`.
    #[inline(always)]
    pub fn lane(&mut self, wave: usize, result: &LaneResult) {
        self.waves[wave].add_lane(result);
    }

    /// Each wave's instruction cost, `wave_mask[k]` being wave k's host lanes.
    #[inline(always)]
    pub fn finish(mut self, wave_mask: [u64; 2]) -> [InstructionCost; 2] {
        for (k, cost) in self.waves.iter_mut().enumerate() {
            cost.triangle_tests += (self.triangle_lanes & wave_mask[k]).count_ones() as u64;
            cost.box_queries += (self.box_tally >> (16 * k)) & 0xffff;
            cost.aabb_useful += (self.box_tally >> (32 + 16 * k)) & 0xffff;
        }
        self.waves
    }
}

/// TD that runs wave `wave_index` on `console` (round-robin).
#[inline]
pub fn td_of_wave(console: &ConsoleConfig, wave_index: u64) -> usize {
    (wave_index % console.tds() as u64) as usize
}

/// Charges one wave instruction of a `width`-lane wave to `counters`: totals, and the wave's
/// TD on both consoles. `issued_lanes` is the number of lanes in exec when it was issued.
#[inline]
pub fn charge(
    counters: &mut Counters,
    wave_index: u64,
    width: usize,
    issued_lanes: u32,
    cost: &InstructionCost,
) {
    let mut wave = WaveCost::default();
    wave.add(width, issued_lanes, cost);
    wave.charge(counters, wave_index);
}

/// The instructions of one wave, summed; charged to the wave's TD once at the end (every
/// instruction of a wave runs on the same TD, and the counters are sums, so this equals
/// charging each instruction as it issues).
#[derive(Clone, Copy, Debug, Default)]
pub struct WaveCost {
    iterations: u64,
    lane_steps: u64,
    nan: u64,
    inf_origin: u64,
    user_nodes: u64,
    out_of_bounds: u64,
    /// What reached the TD (instructions with at least one tested lane).
    td: TdCounters,
}

impl WaveCost {
    /// Adds one wave instruction of a `width`-lane wave; `issued_lanes` were in exec.
    #[inline]
    pub fn add(&mut self, width: usize, issued_lanes: u32, cost: &InstructionCost) {
        self.iterations += 1;
        self.lane_steps += issued_lanes as u64;
        self.nan += cost.nan;
        self.inf_origin += cost.inf_origin;
        self.user_nodes += cost.user_nodes;
        self.out_of_bounds += cost.out_of_bounds;
        let clocks = cost.clocks();
        if clocks == 0 {
            // Nothing reached a TD: no instruction is charged.
            return;
        }
        self.td.merge(&TdCounters {
            clocks,
            instructions: 1,
            box_queries: cost.box_queries,
            aabb_tests: 4 * cost.box_queries,
            aabb_useful: cost.aabb_useful,
            triangle_tests: cost.triangle_tests,
            lanes_active: clocks,
            lanes_available: width as u64,
            shader: ShaderCounters::default(),
        });
    }

    /// Adds `other`'s sums (more steps of the same wave) into `self`.
    pub fn merge(&mut self, other: &WaveCost) {
        self.iterations += other.iterations;
        self.lane_steps += other.lane_steps;
        self.nan += other.nan;
        self.inf_origin += other.inf_origin;
        self.user_nodes += other.user_nodes;
        self.out_of_bounds += other.out_of_bounds;
        self.td.merge(&other.td);
    }

    /// The sums of a `width`-lane wave that ran `iterations` steps, `charged` of which
    /// reached the TD (had at least one tested lane), from its lanes' totals.
    pub fn from_lane_totals(
        width: usize,
        iterations: u64,
        charged: u64,
        totals: &LaneTotals,
    ) -> WaveCost {
        let cost = &totals.cost;
        let clocks = cost.clocks();
        debug_assert!(charged <= iterations && (charged == 0) == (clocks == 0));
        WaveCost {
            iterations,
            lane_steps: totals.lane_steps,
            nan: cost.nan,
            inf_origin: cost.inf_origin,
            user_nodes: cost.user_nodes,
            out_of_bounds: cost.out_of_bounds,
            td: TdCounters {
                clocks,
                instructions: charged,
                box_queries: cost.box_queries,
                aabb_tests: 4 * cost.box_queries,
                aabb_useful: cost.aabb_useful,
                triangle_tests: cost.triangle_tests,
                lanes_active: clocks,
                lanes_available: width as u64 * charged,
                shader: ShaderCounters::default(),
            },
        }
    }

    /// Adds the sums to `counters`: totals, and TD `wave_index mod TDs` on both consoles.
    pub fn charge(&self, counters: &mut Counters, wave_index: u64) {
        let td = &self.td;
        counters.trav_iterations += self.iterations;
        counters.trav_lane_steps += self.lane_steps;
        counters.lanes_nan += self.nan;
        counters.lanes_inf_origin += self.inf_origin;
        counters.td_user_nodes += self.user_nodes;
        counters.td_out_of_bounds += self.out_of_bounds;
        counters.trav_box_nodes += td.box_queries;
        if td.instructions == 0 {
            return;
        }
        counters.td_instructions += td.instructions;
        counters.td_clocks += td.clocks;
        counters.td_box_queries += td.box_queries;
        counters.td_aabb_tests += td.aabb_tests;
        counters.td_aabb_useful += td.aabb_useful;
        counters.td_triangle_tests += td.triangle_tests;
        counters.lanes_active += td.lanes_active;
        counters.lanes_available += td.lanes_available;
        counters.per_td.ensure_len();
        let s = (wave_index % counters.per_td.series_s.len() as u64) as usize;
        counters.per_td.series_s[s].merge(td);
        let x = (wave_index % counters.per_td.series_x.len() as u64) as usize;
        counters.per_td.series_x[x].merge(td);
    }
}

/// Charges the traversal shader's work of wave `wave_index` to `counters`: totals, and the
/// wave's TD on both consoles (nothing when there is none).
pub fn charge_shader(counters: &mut Counters, wave_index: u64, shader: &ShaderCounters) {
    if shader.is_zero() {
        return;
    }
    counters.shader.merge(shader);
    counters.per_td.ensure_len();
    let s = (wave_index % counters.per_td.series_s.len() as u64) as usize;
    counters.per_td.series_s[s].shader.merge(shader);
    let x = (wave_index % counters.per_td.series_x.len() as u64) as usize;
    counters.per_td.series_x[x].shader.merge(shader);
}

/// What the lanes of one wave did, summed over lanes and steps (the lane-by-lane schedule
/// counts these, then [`WaveCost::from_lane_totals`] rebuilds the wave's sums).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneTotals {
    /// Steps the lanes were in exec.
    pub lane_steps: u64,
    /// Their instructions' costs.
    pub cost: InstructionCost,
}

/// Busiest / mean / least busy TD clocks of `console` in `counters`.
pub fn td_balance(counters: &Counters, console: &ConsoleConfig) -> (u64, f64, u64) {
    let tds = counters.per_td.for_console(console).unwrap_or(&[]);
    let n = console.tds() as usize;
    let clocks: Vec<u64> = (0..n).map(|i| tds.get(i).map_or(0, |t| t.clocks)).collect();
    let max = clocks.iter().copied().max().unwrap_or(0);
    let min = clocks.iter().copied().min().unwrap_or(0);
    let mean = clocks.iter().sum::<u64>() as f64 / n.max(1) as f64;
    (min, mean, max)
}

/// Modelled TD-busy seconds of `console`: the busiest TD's clocks over the clock rate.
pub fn modelled_seconds(counters: &Counters, console: &ConsoleConfig) -> f64 {
    let (_, _, max) = td_balance(counters, console);
    console.seconds_for_clocks(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::peak::{SERIES_S, SERIES_X};

    #[test]
    fn round_robin_by_wave_index() {
        assert_eq!(td_of_wave(&SERIES_S, 0), 0);
        assert_eq!(td_of_wave(&SERIES_S, 21), 1);
        assert_eq!(td_of_wave(&SERIES_X, 51), 51);
        assert_eq!(td_of_wave(&SERIES_X, 52), 0);
    }

    #[test]
    fn an_instruction_charges_its_wave_td_on_both_consoles() {
        let mut c = Counters::default();
        let cost = InstructionCost {
            box_queries: 12,
            aabb_useful: 40,
            triangle_tests: 5,
            ..Default::default()
        };
        charge(&mut c, 25, 64, 20, &cost);
        assert_eq!(c.per_td.series_s[5].clocks, 17);
        assert_eq!(c.per_td.series_x[25].clocks, 17);
        assert_eq!(c.per_td.series_s[5].aabb_tests, 48);
        assert_eq!(c.lanes_available, 64);
        assert_eq!(c.trav_lane_steps, 20);
        assert_eq!(td_balance(&c, &SERIES_S), (0, 17.0 / 20.0, 17));
        assert_eq!(modelled_seconds(&c, &SERIES_X), 17.0 / 1825e6);
    }
}
