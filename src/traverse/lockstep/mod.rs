//! The lockstep schedule: one or two waves held in the host's lanes, run step by step as the
//! hardware runs a wave.
//!
//! Each step is one wave instruction: every active lane's query runs and is charged to its
//! wave's TD, then each lane consumes its four dwords. Lanes never read each other's state,
//! so when a lane consumes its result does not matter: the outcome is the same as computing
//! all lanes first and consuming after, which the stream schedule (`traverse::stream`) does
//! (`tests/profile_equivalence.rs` checks both give the same hits and counters).
//!
//! A step runs these phases ([`Lockstep::step`]):
//!
//! 1. retire the lanes whose registers the instruction rejects (first step only);
//! 2. test the box lanes (`boxes`): in the AVX2 build, blocks of eight lanes at once and
//!    the rest in pairs; else lane by lane;
//! 3. let each tested box lane consume its children;
//! 4. test the triangle lanes (`triangles`), gathered into batches, and send every other
//!    lane through the kernel's general arm
//!    ([`WaveIntersector::execute_general`](crate::wave::WaveIntersector::execute_general));
//! 5. charge the step to each wave ([`Lockstep::charge_step`]).
//!
//! When at most two lanes are left, they run alone to their ends with the by-lane step
//! ([`WaveRun::finish_lanes_alone`]): a lockstep step costs the host its set-up and
//! mispredicted loop exits whatever its number of lanes.

mod boxes;
mod triangles;

use super::lane::{LaneOutput, LaneState};
use super::start::{has_finite_slopes, StartLanes};
use super::traversal::RegisterChange;
use super::{PrimitiveIds, Traversal, WaveRun};
use crate::counters::{Counters, ShaderCounters};
use crate::hw::instruction::LaneOutcome;
use crate::hw::NodePointer;
use crate::math::Ray;
use crate::memory::fetch::node_fetch_bits;
use crate::memory::FetchLog;
use crate::wave::intersect::{BoxResult, RayColumns, TriangleRay};
use crate::wave::isa::{Isa, IsaKernel};
use crate::wave::td::{charge_shader, StepCost, WaveCost};
use crate::wave::{LaneResult, LaneStatus, Wave};
use triangles::{Gathered, TriangleHit};

/// When this few lanes of the host's waves are left in exec, the lockstep loop lets them run
/// alone to their ends ([`WaveRun::finish_lanes_alone`]).
const TAIL_LANES: u32 = 2;

/// The lanes of a wave pair and the scratch the lockstep loop reuses between calls: the
/// host lanes (their stacks keep their capacity) and the lanes' registers as columns, for
/// the eight-lane kernels. Each lane's columns are written when it starts, and only started
/// lanes' are read, so they need no clearing between calls (a 3.5 KB `memset` a wave pair).
pub struct LockstepLanes<'w, L, const H: usize> {
    pub wave: &'w mut Wave<H, LaneState<L>>,
    pub columns: &'w mut RayColumns,
}

/// One call of the lockstep loop: one or two waves of `W` lanes held in `H` host lanes
/// (`H` = `W` or 2 `W`; wave `k` has rays `W k..W (k + 1)` and lanes `W k..`). Each wave's
/// steps, counters and TD are its own, as if it ran alone: the host only runs the two
/// waves' steps side by side, so that what each step costs the host whatever its number
/// of lanes (the lane loops' set-up and their mispredicted exits) is paid once for both.
///
/// The loop's own state lives here; the lanes (`wave`) and their ray columns (`columns`)
/// are handed to each phase as parameters: a reference held in a field reaches the
/// compiler without the guarantee that nothing else aliases it, and every load behind the
/// other references (the node cache, the traversal) would then be repeated after each
/// store to a lane.
pub(super) struct Lockstep<'a, T: Traversal, P: ?Sized, I, const W: usize, const H: usize> {
    /// A copy, not a reference: its fields are then locals of the loop (one load less
    /// for each node a lane asks for).
    run: WaveRun<'a, T, P>,
    isa: I,
    /// Lanes the instruction will reject at their first step.
    rejected: u64,
    /// Lanes whose box tests can never make a NaN product.
    finite_slopes: u64,
    /// Blocks of eight lanes that have taken the same steps from the root: only the block's
    /// first lane's traversal state is kept ([`Traversal::SHARES_LANES`]).
    shared: u64,
    /// The deepest stack any lane reached.
    max_depth: usize,
    /// Steps issued so far, the current one included: a lane retiring in a step issued one
    /// instruction in each ([`super::LaneHit::clocks`]).
    steps: u32,
    /// Hits the lanes accepted (`trav.hits_accepted`).
    hits_accepted: u64,
    /// Triangle tests gathered across lanes.
    batch: Gathered,
    /// Each box lane's result in the current step.
    box_results: [BoxResult; H],
    /// Each wave's sums so far.
    wave_cost: [WaveCost; 2],
    /// The node fetches of each step, when the counters record them for the memory model
    /// (the tail then runs in lockstep too, so that every step is recorded as issued).
    recorder: Option<Box<StepRecorder>>,
}

/// What the lockstep loop records for the memory model: each wave's instructions.
struct StepRecorder {
    /// The image's 64-byte blocks (a node past them fetches nothing).
    blocks: u32,
    /// Index of the first wave (within its call).
    first_index: u32,
    log: FetchLog,
    /// One instruction's fetch words (scratch: a wave has at most 64 lanes).
    words: [u32; 64],
}

/// What a step's phases hand on (bit i: host lane i).
struct Step {
    /// Box lanes not yet tested.
    box_lanes: u64,
    /// Box lanes tested, whose results wait to be consumed.
    tested: u64,
    /// Every other lane of the step (triangles, user nodes, uncached boxes, ...).
    rest: u64,
    cost: StepCost,
}

impl<'a, T: Traversal, P: PrimitiveIds + ?Sized> WaveRun<'a, T, P> {
    /// Runs one wave over `rays` (at most `W`): sets up lanes, loops issuing the instruction
    /// for all active lanes until every lane is off, and writes each lane's result to `out`.
    /// `wave` and `columns` are scratch reused between calls (see [`LockstepLanes`]).
    ///
    /// Acceptance rules (the same as [`crate::bvh::closest_hit_scalar`]): a ray with
    /// `!(tmin <= tmax)` is not traced (its lane stays off; a NaN `tmax` is left to the
    /// instruction, which deactivates the lane). A triangle result counts when
    /// `t = t_num / t_denom` is finite, `tmin <= t <= best_t`, `prim_id(pointer, dwords)` is a
    /// primitive (not `u32::MAX`), and at an equal t only a smaller primitive id replaces the
    /// current hit, so the result does not depend on the traversal order.
    #[inline(always)]
    pub fn trace_wave<I: Isa, const W: usize>(
        &self,
        isa: I,
        wave_index: u64,
        rays: &[Ray],
        lanes: LockstepLanes<'_, T::Lane, W>,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        self.trace_waves::<I, W, W>(isa, wave_index, rays, lanes, out, counters);
    }

    /// [`Self::trace_wave`] for one or two waves of `W` lanes held in `H` host lanes
    /// (`H` = `W` or 2 `W`): wave `first_index + k` has rays `W k..W (k + 1)` and lanes
    /// `W k..` (see [`Lockstep`]).
    #[inline(always)]
    pub(crate) fn trace_waves<I: Isa, const W: usize, const H: usize>(
        &self,
        isa: I,
        first_index: u64,
        rays: &[Ray],
        lanes: LockstepLanes<'_, T::Lane, H>,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        const { assert!(H == W || H == 2 * W) };
        assert!(rays.len() <= H && out.len() >= rays.len());
        let LockstepLanes { wave, columns } = lanes;
        wave.index = first_index;
        wave.exec = 0;
        let share = T::SHARES_LANES && self.intersector.descriptor.box_sort_enable;
        let started = isa.dispatch_out_of_line(StartLanes {
            traversal: self.traversal,
            root: self.root,
            wave: &mut *wave,
            columns: &mut *columns,
            rays,
            share,
        });
        let waves = rays.len().div_ceil(W);
        for k in 0..waves {
            count_wave(counters, W, rays.len().min(W * (k + 1)) - W * k);
        }
        let mut lockstep = Lockstep::<T, P, I, W, H> {
            run: *self,
            isa,
            rejected: started.rejected,
            finite_slopes: started.finite_slopes,
            shared: started.shared,
            max_depth: 0,
            steps: 0,
            hits_accepted: 0,
            batch: Gathered::default(),
            // Written for a lane before it is read in a step; zeros clear in one `memset`.
            box_results: [BoxResult::ZERO; H],
            wave_cost: [WaveCost::default(); 2],
            // The counters' own log, taken for the waves and given back in `finish`: the
            // steps go straight into it, with no per-wave log to grow and copy.
            recorder: counters.fetches.enabled.then(|| {
                Box::new(StepRecorder {
                    blocks: (self.intersector.memory.bytes.len() / 64) as u32,
                    first_index: first_index as u32,
                    log: std::mem::take(&mut counters.fetches),
                    words: [0; 64],
                })
            }),
        };
        while wave.exec != 0 {
            if lockstep.tail_is_left(wave) {
                lockstep.finish_tail(wave, counters);
                break;
            }
            lockstep.step(wave, columns);
        }
        let out = &mut out[..rays.len()];
        lockstep.finish(wave, first_index, waves, out, counters);
    }
}

impl<T: Traversal, P: PrimitiveIds + ?Sized, I: Isa, const W: usize, const H: usize>
    Lockstep<'_, T, P, I, W, H>
{
    /// Exec bits of each wave (wave k of lane i: `i / W`).
    const WAVE_MASK: [u64; 2] = {
        let first = if W == 64 { u64::MAX } else { (1u64 << W) - 1 };
        [first, !first]
    };

    /// The wave that holds lane `i`.
    #[inline(always)]
    fn wave_of(i: usize) -> usize {
        (i / W) & 1
    }

    /// Whether the last lanes may run alone to their ends: at most [`TAIL_LANES`] left, and
    /// not before the first step has retired the rejected lanes (a block of eight that
    /// shares one stack cannot be among two lanes, but is ruled out all the same).
    #[inline(always)]
    fn tail_is_left(&self, wave: &Wave<H, LaneState<T::Lane>>) -> bool {
        wave.exec.count_ones() <= TAIL_LANES
            && self.rejected == 0
            && self.shared == 0
            && self.recorder.is_none()
    }

    /// Runs the last lanes alone to their ends (the same results and counters).
    fn finish_tail(&mut self, wave: &mut Wave<H, LaneState<T::Lane>>, counters: &mut Counters) {
        self.run.finish_lanes_alone::<I, W, H>(
            self.isa,
            wave,
            self.steps,
            &mut self.wave_cost,
            &mut self.max_depth,
            counters,
        );
    }

    /// One step: one instruction of each wave with a lane in exec, then each lane consumes
    /// its result (see the module documentation).
    #[inline(always)]
    fn step(&mut self, wave: &mut Wave<H, LaneState<T::Lane>>, columns: &mut RayColumns) {
        self.steps += 1;
        let [low, high] = Self::WAVE_MASK;
        let issued = [
            (wave.exec & low).count_ones(),
            (wave.exec & high).count_ones(),
        ];
        let mut step = Step {
            box_lanes: 0,
            tested: 0,
            rest: wave.exec,
            cost: StepCost::default(),
        };
        self.batch.start_step();
        if self.recorder.is_some() {
            self.record_step(wave);
        }
        self.retire_rejected(wave, &mut step);
        self.test_box_lanes(wave, columns, &mut step);
        self.consume_box_results(wave, columns, &mut step);
        self.test_triangle_lanes(wave, columns, &mut step);
        self.charge_step(step.cost, issued);
    }

    /// Records the step's node fetches: per wave, each lane in exec that the instruction
    /// does not reject, at the node its pointer names.
    #[inline(never)]
    fn record_step(&mut self, wave: &Wave<H, LaneState<T::Lane>>) {
        let Some(rec) = self.recorder.as_deref_mut() else {
            return;
        };
        let lanes = wave.exec & !self.rejected;
        for k in 0..H / W {
            let mut mask = lanes & Self::WAVE_MASK[k];
            let mut count = 0;
            let (mut fetched, mut td) = (0u64, 0u64);
            while mask != 0 {
                let i = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let (word, fetches, on_td) = node_fetch_bits(wave.node[i], rec.blocks);
                // Written in any case, kept only when the lane fetches.
                rec.words[count] = word;
                count += fetches as usize;
                let bit = (fetches as u64) << (i - W * k);
                fetched |= bit;
                td |= bit * on_td as u64;
            }
            if fetched != 0 {
                rec.log
                    .push(rec.first_index + k as u32, fetched, td, &rec.words[..count]);
            }
        }
    }

    /// First step only: the lanes whose registers the instruction rejects take the general
    /// arm, which retires them (no TD clock).
    #[inline(always)]
    fn retire_rejected(&mut self, wave: &mut Wave<H, LaneState<T::Lane>>, step: &mut Step) {
        while self.rejected != 0 {
            let i = self.rejected.trailing_zeros() as usize;
            self.rejected &= self.rejected - 1;
            step.rest &= !(1 << i);
            let r = self
                .run
                .intersector
                .execute_general(wave.node[i], &wave.ray[i]);
            step.cost.lane(Self::wave_of(i), &r);
            let LaneOutcome::Inactive(reason) = r.outcome() else {
                unreachable!("a lane failing ray_is_active is inactive");
            };
            wave.state[i].hit.free_steps += 1;
            self.retire(wave, i, LaneStatus::Deactivated(reason));
        }
    }

    /// Adds the step's costs to each wave that issued it (a wave whose lanes are all off has
    /// stopped: it issues nothing).
    #[inline(always)]
    fn charge_step(&mut self, cost: StepCost, issued: [u32; 2]) {
        let costs = cost.finish(Self::WAVE_MASK);
        for k in 0..H / W {
            if issued[k] != 0 {
                self.wave_cost[k].add(W, issued[k], &costs[k]);
            }
        }
    }

    /// Charges each wave's sums to its TD, and writes each lane's result to `out`.
    fn finish(
        &mut self,
        wave: &Wave<H, LaneState<T::Lane>>,
        first_index: u64,
        waves: usize,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        for (k, cost) in self.wave_cost.iter().enumerate().take(waves) {
            cost.charge(counters, first_index + k as u64);
        }
        if let Some(rec) = self.recorder.take() {
            counters.fetches = rec.log;
        }
        counters.trav_max_stack_depth = counters.trav_max_stack_depth.max(self.max_depth as u64);
        counters.trav_hits_accepted += self.hits_accepted;
        for (i, o) in out.iter_mut().enumerate() {
            *o = wave.state[i].hit.output(counters);
        }
        if T::SHADER {
            let mut shader = [ShaderCounters::default(); 2];
            for i in 0..out.len() {
                let k = Self::wave_of(i);
                self.run
                    .traversal
                    .finish_lane(&wave.state[i].trav, &mut shader[k]);
            }
            for (k, shader) in shader.iter().enumerate().take(waves) {
                charge_shader(counters, first_index + k as u64, shader);
            }
        }
    }

    /// Lane `i` asks for `next`, or finishes.
    #[inline(always)]
    fn go_on(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
        i: usize,
        next: Option<NodePointer>,
    ) {
        if T::SHADER {
            if let Some(world) = self.run.traversal.take_exit(&mut wave.state[i].trav) {
                let ray = &mut wave.ray[i];
                (ray.origin, ray.dir, ray.inv_dir) = (world.origin, world.dir, world.inv_dir);
                self.registers_changed(wave, columns, i);
            }
        }
        match next {
            Some(p) => {
                // The node's cache entry (a triangle's holds its primitive ids too).
                self.run.intersector.prefetch_entry(p);
                wave.node[i] = p;
            }
            None => self.retire(wave, i, LaneStatus::Finished),
        }
    }

    /// Lane `i`'s origin, direction and inverse direction changed (it entered or left an
    /// instance): its triangle set-up, its columns and its finite-slope bit follow.
    #[cold]
    fn registers_changed(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
        i: usize,
    ) {
        let ray = wave.ray[i];
        wave.state[i].triangle_ray = TriangleRay::new(&ray);
        columns.set(i, &ray);
        if has_finite_slopes(&ray.inv_dir) {
            self.finite_slopes |= 1 << i;
        } else {
            self.finite_slopes &= !(1 << i);
        }
    }

    /// Lane `i` stops: every step it issued but its free ones cost one TD clock (one box
    /// query or one triangle test).
    #[inline(always)]
    fn retire(&self, wave: &mut Wave<H, LaneState<T::Lane>>, i: usize, status: LaneStatus) {
        let hit = &mut wave.state[i].hit;
        hit.clocks = self.steps - hit.free_steps;
        wave.retire(i, status);
    }

    /// Lane `i`'s instruction went through the kernel's general arm and returned `result`
    /// (already charged): the lane consumes it, or retires when the instruction turned it
    /// off.
    #[inline(always)]
    fn consume_general(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
        i: usize,
        result: LaneResult,
    ) {
        let node = wave.node[i];
        let traversal = self.run.traversal;
        match result {
            LaneResult::Box { result, .. } => {
                let trav = &mut wave.state[i].trav;
                let (children, valid) = (result.children, result.valid);
                let next = traversal.after_box_masked(self.isa, trav, node, children, valid);
                self.max_depth = self.max_depth.max(traversal.stack_depth(trav));
                self.go_on(wave, columns, i, next);
            }
            LaneResult::Triangle(dwords) => {
                let hit = TriangleHit {
                    lane: i,
                    node,
                    dwords,
                };
                self.after_triangle(wave, columns, hit, false);
            }
            LaneResult::Untested {
                outcome: LaneOutcome::Inactive(reason),
                ..
            } => {
                wave.state[i].hit.free_steps += 1;
                self.retire(wave, i, LaneStatus::Deactivated(reason));
            }
            LaneResult::Untested {
                outcome: LaneOutcome::UserNode,
                ..
            } if T::SHADER => {
                // The shader's user node: an instance to enter, a procedural primitive.
                let lane = &mut wave.state[i];
                lane.hit.free_steps += 1;
                let step =
                    traversal.user_node(&mut lane.trav, node, &mut wave.ray[i], &mut lane.hit);
                self.max_depth = self.max_depth.max(traversal.stack_depth(&lane.trav));
                match step.registers {
                    RegisterChange::Kept => {}
                    RegisterChange::Extent => columns.set_extent(i, wave.ray[i].extent),
                    RegisterChange::Ray => self.registers_changed(wave, columns, i),
                }
                self.go_on(wave, columns, i, step.next);
            }
            LaneResult::Untested { .. } => {
                // User node, out of bounds, unmapped: nothing tested, the lane goes on.
                let lane = &mut wave.state[i];
                lane.hit.free_steps += 1;
                let next = traversal.after_leaf(&mut lane.trav, node);
                self.max_depth = self.max_depth.max(traversal.stack_depth(&lane.trav));
                self.go_on(wave, columns, i, next);
            }
        }
    }
}

/// Counts a wave of `width` lanes that was given `rays` rays (the other lanes stay empty).
#[inline]
pub(super) fn count_wave(counters: &mut Counters, width: usize, rays: usize) {
    counters.rays += rays as u64;
    counters.waves += 1;
    counters.lanes_empty += (width - rays) as u64;
}

/// The lockstep loop over waves of `W` lanes, `H / W` of them side by side, as a kernel for
/// [`Isa::dispatch`]: every wave of a parallel block, compiled for the instruction set.
pub(crate) struct LockstepBlock<'b, 'a, T: Traversal, P: ?Sized, const W: usize, const H: usize> {
    pub run: &'b WaveRun<'a, T, P>,
    /// Index of the block's first wave.
    pub first_wave: u64,
    pub rays: &'b [Ray],
    pub lanes: LockstepLanes<'b, T::Lane, H>,
    pub out: &'b mut [LaneOutput],
    pub counters: &'b mut Counters,
}

impl<T: Traversal, P: PrimitiveIds + ?Sized, const W: usize, const H: usize> IsaKernel
    for LockstepBlock<'_, '_, T, P, W, H>
{
    type Output = ();

    #[inline(always)]
    fn run<I: Isa>(self, isa: I) {
        let LockstepBlock {
            run,
            first_wave,
            rays,
            lanes,
            out,
            counters,
        } = self;
        for (k, (rays, out)) in rays.chunks(H).zip(out.chunks_mut(H)).enumerate() {
            let index = first_wave + (k * (H / W)) as u64;
            let lanes = LockstepLanes {
                wave: &mut *lanes.wave,
                columns: &mut *lanes.columns,
            };
            run.trace_waves::<I, W, H>(isa, index, rays, lanes, out, counters);
        }
    }
}
