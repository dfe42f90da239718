//! Traversal "shaders": per-lane loops that issue one intersect instruction per step.
//!
//! A traversal is a [`Traversal`] strategy (what a lane does with the four dwords the
//! instruction returns: which node to ask for next) driven by one shared wave loop
//! ([`WaveRun::trace_wave`]) that, per step, issues the instruction for every active lane at once
//! (lanes may ask for different node types in the same step), then lets each lane consume
//! its result. Hit bookkeeping (closest hit / any hit, software `tmin`, `t = t_num / t_denom`
//! against the current closest, passed back as the ray extent) is common to all strategies.
//!
//! Strategies: [`FullStack`] (the default: a complete per-lane stack). Short stacks with
//! restart or stackless walk-back plug in through the same trait (issue 6).

mod by_lane;
mod chains;
pub mod rayfile;
pub mod short_stack;
mod stack;
pub mod stream;
mod tracer;

pub use chains::LeafChains;
pub use stack::FullStack;
pub use tracer::{Schedule, SimdPath, Strategy, WaveTracer, WaveTracerConfig};

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

use crate::counters::Counters;
use crate::hw::descriptor::TriangleReturnMode;
use crate::hw::instruction::LaneOutcome;
use crate::hw::pointer::NodePointer;
use crate::math::{Hit, Ray};
use crate::wave::intersector::{
    box_query, LaneRay, RayColumns, TriangleBatch, TriangleRay, BATCH_LANES, LANES,
};
#[cfg(target_arch = "x86_64")]
use crate::wave::intersector::{
    box_query_eight, box_query_eight_nodes, box_query_pair, triangle_query_eight, DecodedBox,
};
use crate::wave::lanes::ray_is_active;
use crate::wave::{td, InstructionCost, LaneStatus, Wave, WaveIntersector};
use wide::u32x4;

/// A traversal strategy: the per-lane part of a traversal shader.
///
/// `Lane` is the lane's private state (its stack, trail, ...). The wave loop calls
/// [`Traversal::begin`] once per ray, then after each instruction either
/// [`Traversal::after_box`] (the lane asked for a box node) or [`Traversal::after_leaf`]
/// (triangle, user or failed node), and stops the lane when they return `None`.
pub trait Traversal: Sync {
    type Lane: Default + Send;

    /// Short name for reports ("full-stack").
    fn name(&self) -> &'static str;

    /// Resets `lane` for a new ray; returns the first node to ask for.
    fn begin(&self, lane: &mut Self::Lane, root: NodePointer) -> NodePointer;

    /// The lane's box query returned `children` (nearest first when sorting is on, invalid
    /// pointers as 0xFFFFFFFF). Returns the next node, or `None` when the lane is done.
    fn after_box(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
    ) -> Option<NodePointer>;

    /// [`Traversal::after_box`] when the caller knows which entries of `children` are valid
    /// (bit c set = `children[c]` is a child), as the SIMD box test does.
    #[inline(always)]
    fn after_box_masked(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
        _valid: u32,
    ) -> Option<NodePointer> {
        self.after_box(lane, node, children)
    }

    /// [`Traversal::after_box_masked`] in an AVX build of the wave loop: the same lane state
    /// and result, in code that may use AVX (a strategy overrides it where that is faster).
    ///
    /// # Safety
    /// The CPU must support AVX, and `valid < 16` (a mask of the four slots).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn after_box_masked_avx(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
        valid: u32,
    ) -> Option<NodePointer> {
        self.after_box_masked(lane, node, children, valid)
    }

    /// The lane's leaf (triangle, user node, or a node that failed) is done. Returns the next
    /// node, or `None` when the lane is done.
    fn after_leaf(&self, lane: &mut Self::Lane, node: NodePointer) -> Option<NodePointer>;

    /// Current stack depth (entries), for `trav.max_stack_depth`.
    fn stack_depth(&self, lane: &Self::Lane) -> usize;

    /// Whether a block of eight lanes that take the same steps may keep one lane's state for
    /// all eight. The AVX2 wave loop then does the first lane's stack work alone for the
    /// block while its lanes ask for the same nodes and get the same children (camera rays,
    /// near the root), and gives the other seven the state ([`Traversal::copy_lane`]) when
    /// they part.
    const SHARES_LANES: bool = false;

    /// Makes `to` the state `from` has. Called only when [`Traversal::SHARES_LANES`], so a
    /// strategy that shares lanes must give it; the default is never reached (a silent
    /// no-op would leave the parted lanes with stale stacks).
    fn copy_lane(&self, _from: &Self::Lane, _to: &mut Self::Lane) {
        unreachable!("copy_lane is called only for strategies with SHARES_LANES")
    }
}

/// A strategy driven with raw pointer bits, for unit tests that name nodes by small numbers.
#[cfg(test)]
pub(crate) trait RawSteps: Traversal {
    fn begin_raw(&self, lane: &mut Self::Lane, root: u32) -> u32 {
        self.begin(lane, NodePointer::from_u32(root)).to_u32()
    }

    fn after_box_raw(&self, lane: &mut Self::Lane, node: u32, children: [u32; 4]) -> Option<u32> {
        let children = children.map(NodePointer::from_u32);
        self.after_box(lane, NodePointer::from_u32(node), children)
            .map(NodePointer::to_u32)
    }

    fn after_leaf_raw(&self, lane: &mut Self::Lane, node: u32) -> Option<u32> {
        self.after_leaf(lane, NodePointer::from_u32(node))
            .map(NodePointer::to_u32)
    }
}

#[cfg(test)]
impl<T: Traversal> RawSteps for T {}

/// Closest hit or any hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// Find the nearest hit in `[tmin, tmax]`.
    ClosestHit,
    /// Stop at the first hit in `[tmin, tmax]` (shadow rays).
    AnyHit,
}

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
    /// Closest t (meaningful only with `best`).
    pub t: f32,
    /// TD clocks the ray cost.
    pub clocks: u32,
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

impl<T: Traversal, P: PrimitiveIds + ?Sized> WaveRun<'_, T, P> {
    /// Runs one wave over `rays` (at most `W`): sets up lanes, loops issuing the instruction
    /// for all active lanes until every lane is off, and writes each lane's result to `out`.
    /// `wave` is scratch reused between calls (its stacks keep their capacity).
    ///
    /// Acceptance rules (the same as [`crate::bvh::closest_hit_scalar`]): a ray with
    /// `!(tmin <= tmax)` is not traced (its lane stays off; a NaN `tmax` is left to the
    /// instruction, which deactivates the lane). A triangle result counts when
    /// `t = t_num / t_denom` is finite, `tmin <= t <= best_t`, `prim_id(pointer, dwords)` is a
    /// primitive (not `u32::MAX`), and at an equal t only a smaller primitive id replaces the
    /// current hit, so the result does not depend on the traversal order.
    ///
    /// Each step is one wave instruction: every active lane's query runs and is charged to the
    /// wave's TD. Lanes never read each other's state, so when a lane consumes its four dwords
    /// does not matter (box results once all box lanes of the step are tested, triangle results
    /// four lanes at a time as the SIMD triangle test produces them): the outcome is the same as
    /// computing all lanes first and consuming after, which [`stream::trace_stream`] does
    /// (`tests/profile_equivalence.rs` checks both give the same hits and counters).
    #[inline(always)]
    pub fn trace_wave<const W: usize>(
        &self,
        wave_index: u64,
        rays: &[Ray],
        wave: &mut Wave<W, LaneState<T::Lane>>,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        let columns = &mut RayColumns::default();
        self.trace_waves_on::<W, W, false>(wave_index, rays, (wave, columns), out, counters);
    }

    /// [`Self::trace_wave`] for one or two waves of `W` lanes held in `H` host lanes
    /// (`H` = `W` or 2 `W`): wave `first_index + k` has rays `W k..W (k + 1)` and lanes
    /// `W k..`. Each wave's steps, counters and TD are its own, as if it ran alone: the host
    /// only runs the two waves' steps side by side, so that what each step costs the host
    /// whatever its number of lanes (the lane loops' set-up and their mispredicted exits) is
    /// paid once for both. With `AVX2`, box lanes are tested two at a time
    /// ([`box_query_pair`]: the same results).
    ///
    /// `AVX2 = true` only from code that runs after checking that the CPU has AVX2 (the
    /// tracer's AVX2 build of the loop).
    ///
    /// `columns` is scratch too: the lanes' registers as columns, for the SIMD tests. Each
    /// lane's are written when it starts, and only started lanes' are read, so it needs no
    /// clearing between calls (made for each, its 3.5 KB cost a `memset` a wave pair).
    #[inline(always)]
    pub(crate) fn trace_waves_on<const W: usize, const H: usize, const AVX2: bool>(
        &self,
        first_index: u64,
        rays: &[Ray],
        (wave, columns): (&mut Wave<H, LaneState<T::Lane>>, &mut RayColumns),
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        const { assert!(H == W || H == 2 * W) };
        let (intersector, traversal, root) = (self.intersector, self.traversal, self.root);
        assert!(rays.len() <= H && out.len() >= rays.len());
        // The waves held, and the exec bits of each (wave k of lane i: `i / W`).
        let waves = rays.len().div_ceil(W);
        let first_mask = if W == 64 { u64::MAX } else { (1u64 << W) - 1 };
        let wave_mask = [first_mask, !first_mask];
        // The first wave's index; each wave is charged to its own TD at the end.
        wave.index = first_index;
        wave.exec = 0;
        // Lanes whose registers the instruction will reject (NaN, infinite origin): they take
        // the general path once, which retires them. A lane's registers change only by a
        // finite extent, so a lane that passes here passes at every step.
        let mut rejected = 0u64;
        // Lanes whose box tests can never make a NaN product (`LaneStart::finite_slopes`).
        let mut finite_slopes = 0u64;
        let sort = intersector.descriptor.box_sort_enable;
        // Blocks of eight lanes that have taken the same steps from the root: only the
        // block's first lane's traversal state is kept (`Traversal::SHARES_LANES`).
        #[cfg(target_arch = "x86_64")]
        let mut shared = 0u64;
        let mut i = 0;
        while i < H {
            // Eight lanes started at once, when all eight take the common path.
            #[cfg(target_arch = "x86_64")]
            if AVX2 && i % 8 == 0 {
                if let Some(eight) = rays.get(i..i + 8) {
                    let eight: &[Ray; 8] = eight.try_into().expect("eight rays");
                    // SAFETY: AVX2 is set only where the CPU has AVX2 (see above).
                    let started = unsafe {
                        start_eight_lanes_avx2(traversal, root, wave, i, eight, &mut *columns)
                    };
                    if let Some(finite) = started {
                        finite_slopes |= (finite as u64) << i;
                        if T::SHARES_LANES && sort {
                            shared |= 0xff << i;
                        }
                        i += 8;
                        continue;
                    }
                }
            }
            match rays.get(i) {
                Some(ray) => {
                    #[cfg(target_arch = "x86_64")]
                    let start = if AVX2 {
                        // SAFETY: AVX2 is set only where the CPU has AVX2 (see above).
                        unsafe { start_lane_avx2(traversal, root, wave, i, ray) }
                    } else {
                        start_lane_checked(traversal, root, wave, i, ray)
                    };
                    #[cfg(not(target_arch = "x86_64"))]
                    let start = start_lane_checked(traversal, root, wave, i, ray);
                    if let Some(start) = start {
                        #[cfg(target_arch = "x86_64")]
                        if AVX2 {
                            columns.set(i, &wave.ray[i]);
                        }
                        rejected |= (!start.active as u64) << i;
                        finite_slopes |= (start.finite_slopes as u64) << i;
                    }
                }
                None => {
                    wave.state[i].hit = LaneHit::default();
                    wave.status[i] = LaneStatus::ExecOff;
                }
            }
            i += 1;
        }
        // Only the x86-64 box tests use the flags.
        #[cfg(not(target_arch = "x86_64"))]
        let _ = finite_slopes;
        for k in 0..waves {
            count_wave(counters, W, rays.len().min(W * (k + 1)) - W * k);
        }

        let mode = intersector.descriptor.triangle_return_mode;
        let grow = intersector.grow();
        let mut max_depth = 0usize;
        // Triangle lanes gathered for the SIMD test, and who they are.
        let mut batch = Gathered::default();
        let mut wave_cost = [td::WaveCost::default(); 2];
        // The wave that holds lane i.
        let wave_of = |i: usize| (i / W) & 1;
        // Steps issued so far, this one included: a lane retiring in this step issued one
        // instruction in each (`LaneHit::clocks`).
        let mut steps = 0u32;
        // Each box lane's result in the current step: children and valid mask.
        let mut box_results = [([NodePointer::INVALID; 4], 0u32); H];
        // Tests the gathered triangle lanes and lets each consume its result.
        macro_rules! flush {
            () => {
                self.flush::<H, AVX2>(
                    wave,
                    &mut batch,
                    mode,
                    (&mut max_depth, steps),
                    &mut *columns,
                    counters,
                )
            };
        }
        while wave.exec != 0 {
            // The last lanes run alone to their ends (the same results and counters). Not
            // before the first step has retired the rejected lanes; a block of eight that
            // shares one stack cannot be among two lanes, but is ruled out all the same.
            #[cfg(target_arch = "x86_64")]
            let sharing = shared != 0;
            #[cfg(not(target_arch = "x86_64"))]
            let sharing = false;
            if wave.exec.count_ones() <= TAIL_LANES && rejected == 0 && !sharing {
                self.finish_lanes_alone::<W, H>(
                    wave,
                    steps,
                    &mut wave_cost,
                    &mut max_depth,
                    counters,
                );
                break;
            }
            steps += 1;
            let issued = wave_mask.map(|m| (wave.exec & m).count_ones());
            // One instruction of each wave with an issued lane; lane i's costs go to its wave.
            let mut cost = [InstructionCost::default(); 2];
            // This step's box queries and useful AABB slots of wave k, 16 bits each (at most
            // 64 and 256): box queries at bit 16 k, useful slots at bit 32 + 16 k. One sum at
            // a fixed place: adding to `cost[k]` lane by lane (an indexed read-modify-write)
            // made each box lane wait for the previous one's store.
            let mut box_sums = 0u64;
            let mut exec = wave.exec;
            batch.shared = SharedPops::default();
            // First step only: rejected lanes take the general path, which retires them.
            while rejected != 0 {
                let i = rejected.trailing_zeros() as usize;
                rejected &= rejected - 1;
                exec &= !(1 << i);
                let cost = &mut cost[wave_of(i)];
                let (_, outcome) = intersector.lane_general(wave.node[i], &wave.ray[i], cost);
                let LaneOutcome::Inactive(reason) = outcome else {
                    unreachable!("a lane failing ray_is_active is inactive");
                };
                wave.state[i].hit.free_steps += 1;
                retire(wave, i, LaneStatus::Deactivated(reason), steps);
            }
            // Box lanes first, then the rest: grouping lanes by node type keeps the branches
            // predictable (lanes are independent, so the order does not change any result).
            #[cfg(target_arch = "x86_64")]
            let boxes = if AVX2 {
                // SAFETY: AVX2 is set only where the CPU has AVX2 (see above).
                unsafe { box_pointer_mask_avx2(&wave.node) }
            } else {
                box_pointer_mask(&wave.node)
            };
            #[cfg(not(target_arch = "x86_64"))]
            let boxes = box_pointer_mask(&wave.node);
            let mut box_lanes = exec & boxes;
            exec &= !boxes;
            // The box lanes tested below. Each consumes its result once all are tested: two
            // short loops, testing then stack work, keep fewer values live than one loop doing
            // both, which spilled registers (1.02-1.04x).
            let mut tested = 0u64;
            // Lane i's box query on node b returned `children` (entries `valid`).
            macro_rules! record {
                ($i:expr, $b:expr, $children:expr, $valid:expr) => {{
                    box_sums += (1 | ($b.useful_slots() as u64) << 32) << (16 * wave_of($i));
                    box_results[$i] = ($children, $valid);
                    tested |= 1 << $i;
                }};
            }
            // Blocks of eight consecutive box lanes that ask for one node are tested together,
            // one lane per vector element (`box_query_eight`): camera rays do this a lot. A
            // block is checked once per step, so rays that share few nodes pay little.
            #[cfg(target_arch = "x86_64")]
            if AVX2 && sort {
                let candidates = box_lanes & finite_slopes;
                // Shared blocks not consumed as one in this step.
                let mut parting = shared;
                let mut blocks = full_blocks(candidates);
                while blocks != 0 {
                    let first = blocks.trailing_zeros() as usize;
                    blocks &= blocks - 1;
                    let block_shared = (shared >> first) & 1 == 1;
                    // SAFETY: AVX2 is set only where the CPU has AVX2 (see above).
                    if !block_shared && !unsafe { eight_lanes_at_one_node(&wave.node, first) } {
                        // Eight box lanes at different nodes: tested as one when every node
                        // is cached and ordered (else in pairs, below).
                        let Some((nodes, useful)) =
                            eight_ordered_boxes(intersector, &wave.node, first)
                        else {
                            continue;
                        };
                        // SAFETY: AVX2 (see above), and this is its build of the loop; the
                        // nodes are ordered, the eight lanes have finite slopes (`candidates`),
                        // and `columns` has their registers (set when they started).
                        unsafe {
                            box_query_eight_nodes(&nodes, columns, first, grow, &mut box_results)
                        };
                        box_sums += (8 | (useful as u64) << 32) << (16 * wave_of(first));
                        box_lanes &= !(0xff << first);
                        tested |= 0xff << first;
                        continue;
                    }
                    let Some(b) = intersector.cached_box_of_box_pointer(wave.node[first]) else {
                        continue;
                    };
                    if b.ordered == 0 {
                        continue;
                    }
                    // SAFETY: AVX2 (see above), and this is its build of the loop; the node is
                    // ordered, the eight lanes have finite slopes (`candidates`), and
                    // `columns` has their registers (set when they started).
                    let uniform =
                        unsafe { box_query_eight(b, columns, first, grow, &mut box_results) };
                    // Eight box queries and eight times the useful slots, all in one wave (a
                    // block of eight never straddles two).
                    let useful = b.useful_slots() as u64;
                    box_sums += (8 | (8 * useful) << 32) << (16 * wave_of(first));
                    box_lanes &= !(0xff << first);
                    if block_shared && uniform {
                        // The same children for all eight: one lane's stack work for all.
                        parting &= !(0xff << first);
                        let (children, valid) = box_results[first];
                        let node = wave.node[first];
                        let lane = &mut wave.state[first];
                        // SAFETY: AVX2 (so AVX) is set only where the CPU has AVX2 (see above);
                        // `valid` is a box test's mask of four slots.
                        let next = unsafe {
                            traversal.after_box_masked_avx(&mut lane.trav, node, children, valid)
                        };
                        max_depth = max_depth.max(traversal.stack_depth(&lane.trav));
                        match next {
                            Some(p) => {
                                intersector.prefetch_entry(p);
                                wave.node[first..first + 8].fill(p);
                            }
                            None => {
                                shared &= !(0xff << first);
                                for k in first..first + 8 {
                                    retire(wave, k, LaneStatus::Finished, steps);
                                }
                            }
                        }
                        continue;
                    }
                    tested |= 0xff << first;
                }
                // A shared block at one triangle node stays shared: each lane tests the
                // triangle with its own ray, and all pop the same node (the stack does not
                // depend on the test), so the pop is done here, once. A lane whose any-hit
                // query accepts the hit finishes instead; the block parts in the next step.
                // Any other shared block goes on apart: its lanes get the block's state.
                while parting != 0 {
                    let first = parting.trailing_zeros() as usize;
                    parting &= !(0xff << first);
                    let node = wave.node[first];
                    if (exec >> first) & 0xff == 0xff
                        && node.is_triangle()
                        && intersector.mapped_triangle(node).is_some()
                    {
                        let trav = &mut wave.state[first].trav;
                        batch.shared.next[first / 8] = traversal.after_leaf(trav, node);
                        batch.shared.lanes |= 0xff << first;
                        continue;
                    }
                    shared &= !(0xff << first);
                    let (head, rest) = wave.state.split_at_mut(first + 1);
                    for lane in &mut rest[..7] {
                        traversal.copy_lane(&head[first].trav, &mut lane.trav);
                    }
                }
            }
            while box_lanes != 0 {
                let i = box_lanes.trailing_zeros() as usize;
                box_lanes &= box_lanes - 1;
                let node = wave.node[i];
                let Some(b) = intersector.cached_box_of_box_pointer(node) else {
                    exec |= 1 << i;
                    continue;
                };
                #[cfg(target_arch = "x86_64")]
                if AVX2 && box_lanes != 0 {
                    // Pair lane i with the next box lane.
                    let j = box_lanes.trailing_zeros() as usize;
                    let node_j = wave.node[j];
                    if let Some(b_j) = intersector.cached_box_of_box_pointer(node_j) {
                        let (mut ci, mut cj) =
                            ([NodePointer::INVALID; 4], [NodePointer::INVALID; 4]);
                        let rays = [&wave.ray[i], &wave.ray[j]];
                        let finite = (finite_slopes >> i) & (finite_slopes >> j) & 1 == 1;
                        // SAFETY: AVX2 is set only where the CPU has AVX2 (see above).
                        let pair = unsafe {
                            box_query_pair([b, b_j], rays, grow, sort, finite, [&mut ci, &mut cj])
                        };
                        if let Some([vi, vj]) = pair {
                            box_lanes &= box_lanes - 1;
                            record!(i, b, ci, vi);
                            record!(j, b_j, cj, vj);
                            continue;
                        }
                    }
                }
                let mut children = [NodePointer::INVALID; 4];
                let valid = box_query(b, &wave.ray[i], grow, sort, &mut children);
                record!(i, b, children, valid);
            }
            while tested != 0 {
                let i = tested.trailing_zeros() as usize;
                tested &= tested - 1;
                let (children, valid) = box_results[i];
                let lane = &mut wave.state[i];
                let node = wave.node[i];
                #[cfg(target_arch = "x86_64")]
                let next = if AVX2 {
                    // SAFETY: AVX2 (so AVX) is set only where the CPU has AVX2 (see above);
                    // `valid` is a box test's mask of four slots.
                    unsafe { traversal.after_box_masked_avx(&mut lane.trav, node, children, valid) }
                } else {
                    traversal.after_box_masked(&mut lane.trav, node, children, valid)
                };
                #[cfg(not(target_arch = "x86_64"))]
                let next = traversal.after_box_masked(&mut lane.trav, node, children, valid);
                max_depth = max_depth.max(traversal.stack_depth(&lane.trav));
                go_on(wave, intersector, i, next, steps);
            }
            // The lanes whose triangle test went to the batch (counted per wave after the loop).
            let mut batched = 0u64;
            // A block of eight lanes that shares one stack and is at a triangle (its pop done
            // above, `batch.shared`) is tested as one, not through the batch. Blocks that have
            // parted and meet at one triangle again are left to the batch: rare (sponza's
            // camera rays: 8 % of the triangle lane steps against 46 %), and a check of every
            // full block of triangle lanes cost the bunny's camera rays 1 %.
            #[cfg(target_arch = "x86_64")]
            if AVX2 {
                let mut blocks = batch.shared.lanes & 0x0101_0101_0101_0101;
                while blocks != 0 {
                    let first = blocks.trailing_zeros() as usize;
                    blocks &= blocks - 1;
                    let node = wave.node[first];
                    let Some(bytes) = intersector.mapped_triangle(node) else {
                        continue;
                    };
                    let k = node.triangle_index();
                    // SAFETY: AVX2, and this is its build of the loop (see above); `columns`
                    // has the eight lanes' registers (set when they started).
                    let dwords = unsafe { triangle_query_eight(bytes, k, columns, first, mode) };
                    for (j, dwords) in dwords.into_iter().enumerate() {
                        self.after_triangle(
                            wave,
                            (first + j, node),
                            dwords,
                            (&mut max_depth, steps),
                            (&batch.shared, &mut *columns),
                            counters,
                        );
                    }
                    batched |= 0xff << first;
                    exec &= !(0xff << first);
                }
            }
            while exec != 0 {
                let i = exec.trailing_zeros() as usize;
                exec &= exec - 1;
                let node = wave.node[i];
                if let Some(bytes) = intersector
                    .mapped_triangle(node)
                    .filter(|_| node.is_triangle())
                {
                    batch.lanes[batch.tests.len()] = (i, node);
                    let (tri_ray, k) = (&wave.state[i].triangle_ray, node.triangle_index());
                    #[cfg(target_arch = "x86_64")]
                    if AVX2 {
                        // SAFETY: AVX2 (so AVX) is set only where the CPU has AVX2, and this
                        // is its build of the loop (see above).
                        unsafe { batch.tests.push_prepared_avx(bytes, k, tri_ray) };
                    } else {
                        batch.tests.push_prepared(bytes, k, tri_ray);
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    batch.tests.push_prepared(bytes, k, tri_ray);
                    batched |= 1 << i;
                    // The AVX2 build tests eight at once, the portable one four.
                    let full = if AVX2 {
                        batch.tests.is_full_avx()
                    } else {
                        batch.tests.is_full()
                    };
                    if full {
                        flush!();
                    }
                    continue;
                }
                // Everything else: user nodes, the bounds check, unmapped memory, uncached boxes.
                let lane_cost = &mut cost[wave_of(i)];
                let (dwords, outcome) = intersector.lane_general(node, &wave.ray[i], lane_cost);
                match outcome {
                    LaneOutcome::Inactive(reason) => {
                        wave.state[i].hit.free_steps += 1;
                        retire(wave, i, LaneStatus::Deactivated(reason), steps);
                        continue;
                    }
                    LaneOutcome::Tested if node.is_box() => {
                        let lane = &mut wave.state[i];
                        let children = dwords.map(NodePointer::from_u32);
                        let next = traversal.after_box(&mut lane.trav, node, children);
                        max_depth = max_depth.max(traversal.stack_depth(&lane.trav));
                        go_on(wave, intersector, i, next, steps);
                    }
                    LaneOutcome::Tested => self.after_triangle(
                        wave,
                        (i, node),
                        dwords,
                        (&mut max_depth, steps),
                        (&SharedPops::default(), &mut *columns),
                        counters,
                    ),
                    _ => {
                        // User node, out of bounds, unmapped: nothing tested, the lane goes on.
                        let lane = &mut wave.state[i];
                        lane.hit.free_steps += 1;
                        let next = traversal.after_leaf(&mut lane.trav, node);
                        max_depth = max_depth.max(traversal.stack_depth(&lane.trav));
                        go_on(wave, intersector, i, next, steps);
                    }
                }
            }
            if !batch.tests.is_empty() {
                flush!();
            }
            for (k, cost) in cost.iter_mut().enumerate() {
                cost.triangle_tests += (batched & wave_mask[k]).count_ones();
                cost.box_queries += (box_sums >> (16 * k)) as u32 & 0xffff;
                cost.aabb_useful += (box_sums >> (32 + 16 * k)) as u32 & 0xffff;
            }
            for k in 0..H / W {
                // A wave whose lanes are all off has stopped: it issues nothing.
                if issued[k] != 0 {
                    let cost = &mut cost[k];
                    cost.clocks = cost.box_queries + cost.triangle_tests;
                    wave_cost[k].add(W, issued[k], cost);
                }
            }
        }
        for (k, cost) in wave_cost.iter().enumerate().take(waves) {
            cost.charge(counters, first_index + k as u64);
        }
        counters.trav_max_stack_depth = counters.trav_max_stack_depth.max(max_depth as u64);
        for (i, o) in out.iter_mut().enumerate().take(rays.len()) {
            *o = wave.state[i].hit.output(counters);
        }
    }
}

/// When this few lanes of the host's waves are left in exec, the lockstep loop lets them run
/// alone to their ends ([`WaveRun::finish_lanes_alone`]).
const TAIL_LANES: u32 = 2;

/// Bit i set = `nodes[i]` is a box pointer (type 4 or 5): four lanes per vector compare
/// (the scalar loop costs about four host instructions a lane, on every step of a wave).
#[inline(always)]
fn box_pointer_mask(nodes: &[NodePointer]) -> u64 {
    debug_assert!(nodes.len() <= 64);
    let (six, four) = (u32x4::splat(6), u32x4::splat(4));
    let chunks = nodes.chunks_exact(4);
    let rest = chunks.remainder();
    let mut mask = 0u64;
    for (c, chunk) in chunks.enumerate() {
        let v = u32x4::new(std::array::from_fn(|k| chunk[k].to_u32()));
        let m = (v & six).simd_eq(four).to_bitmask();
        mask |= (m as u64) << (4 * c);
    }
    let base = nodes.len() - rest.len();
    for (i, node) in rest.iter().enumerate() {
        mask |= (node.is_box() as u64) << (base + i);
    }
    mask
}

/// [`box_pointer_mask`] with eight lanes per AVX2 compare (`nodes.len()` a multiple of 8).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn box_pointer_mask_avx2(nodes: &[NodePointer]) -> u64 {
    use core::arch::x86_64::*;
    debug_assert!(nodes.len() <= 64 && nodes.len().is_multiple_of(8));
    let (six, four) = (_mm256_set1_epi32(6), _mm256_set1_epi32(4));
    let mut mask = 0u64;
    for (c, chunk) in nodes.chunks_exact(8).enumerate() {
        // SAFETY: an unaligned 32-byte load of the chunk's eight u32.
        let v = unsafe { _mm256_loadu_si256(chunk.as_ptr() as *const __m256i) };
        let boxes = _mm256_cmpeq_epi32(_mm256_and_si256(v, six), four);
        let m = _mm256_movemask_ps(_mm256_castsi256_ps(boxes)) as u32 as u64;
        mask |= m << (8 * c);
    }
    mask
}

/// Bit `8 k` set for each block of eight lanes (bits `8 k..8 k + 8`) all set in `lanes`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn full_blocks(lanes: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let missing = !lanes;
    // High bit of each byte: that byte of `missing` is not zero (no carry leaves a byte).
    let any_missing = ((missing & LOW7) + LOW7) | missing;
    (!any_missing & !LOW7) >> 7
}

/// Counts a wave of `width` lanes that was given `rays` rays (the other lanes stay empty).
#[inline]
fn count_wave(counters: &mut Counters, width: usize, rays: usize) {
    counters.rays += rays as u64;
    counters.waves += 1;
    counters.lanes_empty += (width - rays) as u64;
}

/// Whether lanes `first..first + 8` ask for the same node (one vector compare).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn eight_lanes_at_one_node(nodes: &[NodePointer], first: usize) -> bool {
    use core::arch::x86_64::*;
    let eight: &[NodePointer; 8] = nodes[first..first + 8].try_into().expect("eight lanes");
    // SAFETY: an unaligned 32-byte load of the eight u32 of `eight`.
    let v = unsafe { _mm256_loadu_si256(eight.as_ptr() as *const __m256i) };
    let equal = _mm256_cmpeq_epi32(v, _mm256_set1_epi32(eight[0].to_u32() as i32));
    _mm256_movemask_ps(_mm256_castsi256_ps(equal)) == 0xff
}

/// The cached box nodes of lanes `first..first + 8` and their useful slots in all, when
/// every one is cached and ordered (the case [`box_query_eight_nodes`] covers).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn eight_ordered_boxes<'a>(
    intersector: &WaveIntersector<'a>,
    nodes: &[NodePointer],
    first: usize,
) -> Option<([&'a DecodedBox; 8], u32)> {
    let b0 = intersector.cached_box_of_box_pointer(nodes[first])?;
    let (mut boxes, mut ordered, mut useful) = ([b0; 8], b0.ordered, b0.useful);
    for k in 1..8 {
        let b = intersector.cached_box_of_box_pointer(nodes[first + k])?;
        boxes[k] = b;
        ordered &= b.ordered;
        useful += b.useful;
    }
    (ordered == 1).then_some((boxes, useful))
}

/// Triangle tests gathered across lanes, with each one's lane and node pointer, and the
/// lanes of this step whose pop was done for their shared block.
#[derive(Default)]
struct Gathered {
    tests: TriangleBatch,
    lanes: [(usize, NodePointer); BATCH_LANES],
    shared: SharedPops,
}

/// Sets lane `i` up for `ray`, or leaves it off if `!(tmin <= tmax)` (a NaN `tmax` is left
/// to the instruction, which deactivates the lane). Returns whether the lane is on.
pub(crate) fn start_lane<const W: usize, T: Traversal>(
    traversal: &T,
    root: NodePointer,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    i: usize,
    ray: &Ray,
) -> bool {
    start_lane_checked(traversal, root, wave, i, ray).is_some()
}

/// [`start_lane_checked`] compiled for AVX2, out of line. It used to run in the baseline
/// (SSE2) build, not inlined: a third of the time of a ray that misses the root box. For
/// AVX2 it gets three-operand encodings and its vector register checks; kept out of the
/// wave loop, it leaves the loop's code as it was.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn start_lane_avx2<const W: usize, T: Traversal>(
    traversal: &T,
    root: NodePointer,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    i: usize,
    ray: &Ray,
) -> Option<LaneStart> {
    start_lane_checked(traversal, root, wave, i, ray)
}

/// Starts lanes `first..first + 8` for `rays` at once, when all eight start (`tmin <= tmax`,
/// or a NaN `tmax`) and the instruction accepts all eight's registers ([`ray_is_active`]):
/// the lane state [`start_lane_checked`] leaves on each, and their origins and inverse
/// directions in `columns`. One transpose of the eight rays, then the reciprocals, the
/// checks and the dominant axes for all eight in AVX2 vectors. Returns the lanes'
/// finite-slope bits ([`LaneStart::finite_slopes`]), or `None` (nothing written) when a lane
/// needs the per-lane path.
///
/// Why: one lane at a time, a ray's start was about 120 host instructions, and a tenth of
/// the trace time of camera rays.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn start_eight_lanes_avx2<const W: usize, T: Traversal>(
    traversal: &T,
    root: NodePointer,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    first: usize,
    rays: &[Ray; 8],
    columns: &mut RayColumns,
) -> Option<u32> {
    use core::arch::x86_64::*;
    // Ray k as a row of eight f32 (`Ray` is `repr(C)`: origin, direction, tmin, tmax).
    // SAFETY: a 32-byte unaligned load of one ray.
    let row = |k: usize| unsafe { _mm256_loadu_ps(&rays[k] as *const Ray as *const f32) };
    let (r0, r1, r2, r3, r4, r5, r6, r7) = (
        row(0),
        row(1),
        row(2),
        row(3),
        row(4),
        row(5),
        row(6),
        row(7),
    );
    // Transpose: field f of the eight rays in one vector (ray k in element k).
    let t0 = _mm256_unpacklo_ps(r0, r1);
    let t1 = _mm256_unpackhi_ps(r0, r1);
    let t2 = _mm256_unpacklo_ps(r2, r3);
    let t3 = _mm256_unpackhi_ps(r2, r3);
    let t4 = _mm256_unpacklo_ps(r4, r5);
    let t5 = _mm256_unpackhi_ps(r4, r5);
    let t6 = _mm256_unpacklo_ps(r6, r7);
    let t7 = _mm256_unpackhi_ps(r6, r7);
    // Rays 0-3 (s0-s3) and 4-7 (s4-s7): fields 0-3 in the low halves, 4-7 in the high.
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    let origin = [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
    ];
    let dir = [
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
    ];
    let tmin = _mm256_permute2f128_ps::<0x31>(s2, s6);
    let tmax = _mm256_permute2f128_ps::<0x31>(s3, s7);
    // `tmin <= tmax || tmax.is_nan()`, as `start_lane_checked` decides.
    let starts = _mm256_or_ps(
        _mm256_cmp_ps::<_CMP_LE_OQ>(tmin, tmax),
        _mm256_cmp_ps::<_CMP_UNORD_Q>(tmax, tmax),
    );
    if _mm256_movemask_ps(starts) != 0xff {
        return None;
    }
    // The driver's reciprocals (one IEEE division each, as `lane_ray`).
    let one = _mm256_set1_ps(1.0);
    let inv_dir = [
        _mm256_div_ps(one, dir[0]),
        _mm256_div_ps(one, dir[1]),
        _mm256_div_ps(one, dir[2]),
    ];
    // `ray_is_active` on magnitude bits (non-negative as i32, so signed compares serve).
    let magnitude =
        |x: __m256| _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7fff_ffff));
    let max3 = |a: [__m256; 3]| {
        _mm256_max_epu32(
            _mm256_max_epu32(magnitude(a[0]), magnitude(a[1])),
            magnitude(a[2]),
        )
    };
    let inf = _mm256_set1_epi32(0x7f80_0000);
    let origin_max = max3(origin);
    let rest_max = _mm256_max_epu32(_mm256_max_epu32(max3(dir), max3(inv_dir)), magnitude(tmax));
    let active = _mm256_andnot_si256(
        _mm256_cmpgt_epi32(rest_max, inf),
        _mm256_cmpgt_epi32(inf, origin_max),
    );
    if _mm256_movemask_ps(_mm256_castsi256_ps(active)) != 0xff {
        return None;
    }
    // Finite, non-zero slopes: every (magnitude - 1), wrapping, below 0x7F7F_FFFF.
    let minus_one = |x: __m256| _mm256_sub_epi32(magnitude(x), _mm256_set1_epi32(1));
    let slopes = _mm256_max_epu32(
        _mm256_max_epu32(minus_one(inv_dir[0]), minus_one(inv_dir[1])),
        minus_one(inv_dir[2]),
    );
    let below = _mm256_set1_epi32(0x7f7f_fffe);
    let finite = _mm256_cmpeq_epi32(_mm256_min_epu32(slopes, below), slopes);
    let finite = _mm256_movemask_ps(_mm256_castsi256_ps(finite)) as u32;
    // Dominant axis (`dominant_rotation`): not_x * (1 + not_y), from masks of -1 or 0.
    let abs = |x: __m256| _mm256_castsi256_ps(magnitude(x));
    let mag = [abs(dir[0]), abs(dir[1]), abs(dir[2])];
    let max_mag = _mm256_max_ps(mag[0], _mm256_max_ps(mag[1], mag[2]));
    let not_x = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NEQ_UQ>(mag[0], max_mag));
    let not_y = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NEQ_UQ>(mag[1], max_mag));
    let axis = _mm256_sub_epi32(
        _mm256_sub_epi32(_mm256_setzero_si256(), not_x),
        _mm256_and_si256(not_x, not_y),
    );
    let mut axes = [0u32; 8];
    let mut inv = [[0f32; 8]; 3];
    // SAFETY: unaligned 32-byte stores into local arrays of eight.
    unsafe {
        _mm256_storeu_si256(axes.as_mut_ptr() as *mut __m256i, axis);
        for a in 0..3 {
            _mm256_storeu_ps(inv[a].as_mut_ptr(), inv_dir[a]);
        }
        columns.set_eight(first, [origin, dir, inv_dir], tmax);
    }
    for (k, ray) in rays.iter().enumerate() {
        let i = first + k;
        let node = traversal.begin(&mut wave.state[i].trav, root);
        // Rotated from the ray as given (not from the registers stored just below).
        // SAFETY: AVX2 (so AVX), the caller's promise.
        unsafe { TriangleRay::rotated_avx(axes[k], ray, &mut wave.state[i].triangle_ray) };
        wave.state[i].hit = LaneHit {
            tmin: ray.tmin,
            best_t: ray.tmax,
            ..LaneHit::default()
        };
        wave.status[i] = LaneStatus::Active;
        wave.node[i] = node;
        wave.ray[i] = LaneRay {
            extent: ray.tmax,
            origin: ray.origin.to_array(),
            dir: ray.dir.to_array(),
            inv_dir: [inv[0][k], inv[1][k], inv[2][k]],
        };
    }
    wave.exec |= 0xff << first;
    Some(finite)
}

/// What [`start_lane_checked`] found in a started lane's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneStart {
    /// The instruction accepts the registers ([`ray_is_active`]).
    pub active: bool,
    /// Every inverse-direction component is finite and not zero. Then no box-test product
    /// `(bound - origin) * inv_dir` can be NaN (an active lane's origin is finite, so the
    /// difference is NaN only for a NaN bound, and an infinite difference times a finite,
    /// non-zero factor is infinite), which lets [`box_query_pair`] skip its NaN probe.
    pub finite_slopes: bool,
}

/// [`start_lane`], also checking the lane's registers: `None` if the lane stays off, else
/// what the registers allow ([`LaneStart`]).
///
/// Why this order: the check runs on the registers before they are stored, and the
/// triangle-test set-up reads them in place from the wave. A local copy indexed by the
/// rotation lived on the stack, and moving it into the wave, or reading the stored registers
/// back for the check, used loads that spanned several earlier stores (store-forwarding
/// stalls: a third of the time of a ray that misses the root box).
#[inline(always)]
pub(crate) fn start_lane_checked<const W: usize, T: Traversal>(
    traversal: &T,
    root: NodePointer,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    i: usize,
    ray: &Ray,
) -> Option<LaneStart> {
    wave.state[i].hit = LaneHit::default();
    wave.status[i] = LaneStatus::ExecOff;
    if ray.tmin <= ray.tmax || ray.tmax.is_nan() {
        let first = traversal.begin(&mut wave.state[i].trav, root);
        let registers = lane_ray(ray);
        let start = LaneStart {
            active: ray_is_active(&registers),
            // Finite and not zero: magnitude bits in 1..=0x7F7F_FFFF (branch-free: the
            // lazy `all(is_finite && != 0)` cost three data-dependent branches a ray).
            finite_slopes: registers
                .inv_dir
                .map(|r| (r.to_bits() & 0x7fff_ffff).wrapping_sub(1))
                .into_iter()
                .fold(0, u32::max)
                < 0x7f7f_ffff,
        };
        wave.activate(i, first, registers);
        wave.state[i].triangle_ray = TriangleRay::new(&wave.ray[i]);
        wave.state[i].hit.tmin = ray.tmin;
        wave.state[i].hit.best_t = ray.tmax;
        Some(start)
    } else {
        None
    }
}

impl<T: Traversal, P: PrimitiveIds + ?Sized> WaveRun<'_, T, P> {
    /// Runs the gathered triangle tests and lets each lane consume its dwords.
    #[inline(always)]
    fn flush<const W: usize, const AVX2: bool>(
        &self,
        wave: &mut Wave<W, LaneState<T::Lane>>,
        batch: &mut Gathered,
        mode: TriangleReturnMode,
        (max_depth, steps): (&mut usize, u32),
        columns: &mut RayColumns,
        counters: &mut Counters,
    ) {
        let mut dwords = [[0u32; 4]; BATCH_LANES];
        #[cfg(target_arch = "x86_64")]
        if AVX2 {
            // SAFETY: AVX2 (so AVX) is set only where the CPU has AVX2, and this is its
            // build of the loop (see `trace_waves_on`).
            dwords = unsafe { batch.tests.run_avx(mode) };
        } else {
            dwords[..LANES].copy_from_slice(&batch.tests.run(mode));
        }
        #[cfg(not(target_arch = "x86_64"))]
        dwords[..LANES].copy_from_slice(&batch.tests.run(mode));
        for (j, &(i, node)) in batch.lanes.iter().enumerate().take(batch.tests.len()) {
            self.after_triangle(
                wave,
                (i, node),
                dwords[j],
                (&mut *max_depth, steps),
                (&batch.shared, &mut *columns),
                counters,
            );
        }
        batch.tests.clear();
    }

    /// Lane `i` tested triangle `node` and got `dwords` in step `steps`: offers the hit, then
    /// asks the strategy for the next node (none after an accepted hit of an any-hit query).
    /// An accepted hit shrinks the lane's extent, in its register and in `columns`.
    #[inline(always)]
    fn after_triangle<const W: usize>(
        &self,
        wave: &mut Wave<W, LaneState<T::Lane>>,
        (i, node): (usize, NodePointer),
        dwords: [u32; 4],
        (max_depth, steps): (&mut usize, u32),
        (sharing, columns): (&SharedPops, &mut RayColumns),
        counters: &mut Counters,
    ) {
        let lane = &mut wave.state[i];
        let mut done = false;
        if let Some(t) = lane
            .hit
            .offer(node, dwords, || self.prim_id.primitive_id(node, &dwords))
        {
            counters.trav_hits_accepted += 1;
            // The current closest t becomes the ray extent.
            wave.ray[i].extent = t;
            // Written here, in the branch the hit takes anyway: a mask of the lanes to
            // update after the step cost a loop whose exit the CPU mispredicted.
            columns.set_extent(i, t);
            done = self.query == Query::AnyHit;
        }
        let next = if done {
            None
        } else if (sharing.lanes >> i) & 1 == 1 {
            sharing.next[i / 8]
        } else {
            self.traversal.after_leaf(&mut lane.trav, node)
        };
        *max_depth = (*max_depth).max(self.traversal.stack_depth(&lane.trav));
        go_on(wave, self.intersector, i, next, steps);
    }
}

/// The lanes of shared blocks at a triangle node in this step (bit i: lane i), and the node
/// each block pops (`next[first / 8]`), done once for the block before the test.
#[derive(Default)]
struct SharedPops {
    lanes: u64,
    next: [Option<NodePointer>; 8],
}

/// Lane `i` asks for `next`, or finishes (having issued `steps` steps).
#[inline(always)]
fn go_on<const W: usize, L>(
    wave: &mut Wave<W, LaneState<L>>,
    intersector: &WaveIntersector,
    i: usize,
    next: Option<NodePointer>,
    steps: u32,
) {
    match next {
        Some(p) => {
            // The node's cache entry (a triangle's holds its primitive ids too).
            intersector.prefetch_entry(p);
            wave.node[i] = p;
        }
        None => retire(wave, i, LaneStatus::Finished, steps),
    }
}

/// Lane `i` stops after issuing `steps` steps: every step but its free ones cost one TD clock
/// (one box query or one triangle test).
#[inline(always)]
fn retire<const W: usize, L>(
    wave: &mut Wave<W, LaneState<L>>,
    i: usize,
    status: LaneStatus,
    steps: u32,
) {
    let hit = &mut wave.state[i].hit;
    hit.clocks = steps - hit.free_steps;
    wave.retire(i, status);
}

/// Turns a lane's accepted triangle into a [`Hit`] (mode 1 dwords give barycentrics:
/// `I / t_denom`, `J / t_denom`; front face = `t_denom > 0`, `semantics.md` 7.3).
pub fn hit_from_dwords(t: f32, prim_id: u32, dwords: [u32; 4], barycentrics: bool) -> Hit {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::NodeType;

    /// Eight lanes started at once are the eight lanes `start_lane_checked` starts one by one:
    /// the same registers, node, status, exec bits, hit bookkeeping, triangle set-up, stack
    /// and finite-slope verdicts, and the same columns; and the block falls back (writing
    /// nothing) exactly when a lane does not start or the instruction would reject it.
    /// Seeded random rays at every block of a 64-lane wave, some fields special (NaN,
    /// infinities, zeros, denormals), some directions with tied magnitudes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn eight_lanes_start_as_start_lane_checked_starts_each() {
        use super::stack::{FullStack, StackLane};
        use crate::wave::intersector::RayColumns;
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let specials = [
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1),
        ];
        let mut next = crate::wave::intersector::tests::xorshift(0x3C6E_F372_FE94_F82B_u64);
        let (mut eight, mut fallback) = (0u32, 0u32);
        let mut got = Wave::<64, LaneState<StackLane>>::new(0);
        let mut want = Wave::<64, LaneState<StackLane>>::new(0);
        let root = NodePointer::from_u32(0x0000_0105);
        for case in 0..20_000u32 {
            let first = 8 * (case as usize % 8);
            let mut rays = [Ray::new(glam::Vec3::ZERO, glam::Vec3::ONE, 0.0, 1.0); 8];
            for ray in &mut rays {
                let mut v = [0f32; 8];
                for (f, x) in v.iter_mut().enumerate() {
                    let r = next();
                    *x = if r.is_multiple_of(200) {
                        specials[(r >> 8) as usize % specials.len()]
                    } else {
                        let unit = (r >> 40) as f32 / (1u64 << 24) as f32;
                        match f {
                            6 => unit,       // tmin
                            7 => 1.0 + unit, // tmax
                            _ => 4.0 * unit - 2.0,
                        }
                    };
                }
                if next().is_multiple_of(8) {
                    // Tied magnitudes: the dominant axis is decided by the tie rule.
                    v[4] = -v[3];
                }
                match next() % 50 {
                    // tmin > tmax: the lane does not start.
                    0 => v.swap(6, 7),
                    // tmin == tmax: it does.
                    1 => v[6] = v[7],
                    _ => {}
                }
                *ray = Ray::new(
                    glam::Vec3::new(v[0], v[1], v[2]),
                    glam::Vec3::new(v[3], v[4], v[5]),
                    v[6],
                    v[7],
                );
            }
            got.exec = 0;
            want.exec = 0;
            let mut columns = RayColumns::default();
            // SAFETY: AVX2 checked above (called from code not compiled for AVX2, its
            // intrinsics are calls: the same results).
            let started = unsafe {
                start_eight_lanes_avx2(&FullStack, root, &mut got, first, &rays, &mut columns)
            };
            let verdicts: Vec<Option<LaneStart>> = (0..8)
                .map(|k| start_lane_checked(&FullStack, root, &mut want, first + k, &rays[k]))
                .collect();
            let common = verdicts.iter().all(|v| v.is_some_and(|v| v.active));
            assert_eq!(started.is_some(), common, "case {case}: {rays:?}");
            let Some(finite) = started else {
                assert_eq!(
                    got.exec, 0,
                    "case {case}: a block that fell back wrote exec bits"
                );
                fallback += 1;
                continue;
            };
            eight += 1;
            assert_eq!(got.exec, want.exec, "case {case}");
            let bits = |r: &LaneRay| {
                let mut b = vec![r.extent.to_bits()];
                b.extend(
                    r.origin
                        .iter()
                        .chain(&r.dir)
                        .chain(&r.inv_dir)
                        .map(|x| x.to_bits()),
                );
                b
            };
            for (k, verdict) in verdicts.iter().enumerate() {
                let i = first + k;
                let verdict = verdict.expect("started");
                assert_eq!(
                    finite >> k & 1 == 1,
                    verdict.finite_slopes,
                    "case {case} lane {k}"
                );
                assert_eq!(
                    bits(&got.ray[i]),
                    bits(&want.ray[i]),
                    "case {case} lane {k}"
                );
                assert_eq!(got.node[i], want.node[i]);
                assert_eq!(got.status[i], want.status[i]);
                let (g, w) = (&got.state[i], &want.state[i]);
                assert_eq!(g.hit.tmin.to_bits(), w.hit.tmin.to_bits());
                assert_eq!(g.hit.best_t.to_bits(), w.hit.best_t.to_bits());
                assert_eq!((g.hit.best, g.hit.best_prim), (w.hit.best, w.hit.best_prim));
                assert_eq!(
                    (g.hit.clocks, g.hit.free_steps),
                    (w.hit.clocks, w.hit.free_steps)
                );
                assert_eq!(
                    g.triangle_ray.rotation, w.triangle_ray.rotation,
                    "case {case}"
                );
                let bits4 = |v: [f32; 4]| v.map(f32::to_bits);
                assert_eq!(bits4(g.triangle_ray.origin), bits4(w.triangle_ray.origin));
                assert_eq!(bits4(g.triangle_ray.dir), bits4(w.triangle_ray.dir));
                assert_eq!(
                    FullStack.stack_depth(&g.trav),
                    FullStack.stack_depth(&w.trav)
                );
                let [origin, dir, inv_dir] = columns.lane(i);
                let bits3 = |v: [f32; 3]| v.map(f32::to_bits);
                assert_eq!(bits3(origin), bits3(want.ray[i].origin));
                assert_eq!(bits3(dir), bits3(want.ray[i].dir));
                assert_eq!(bits3(inv_dir), bits3(want.ray[i].inv_dir));
            }
        }
        // Both paths occur often.
        assert!(
            eight > 1000 && fallback > 1000,
            "{eight} started at once, {fallback} not"
        );
    }

    /// `start_lane_checked` on rays with every kind of special value in every field: the lane
    /// starts exactly when `tmin <= tmax` or `tmax` is NaN, holds the registers a driver sets
    /// up (1/d computed here in f64 and rounded once, which is the correctly rounded f32
    /// quotient), its triangle-test set-up is the one prepared from those registers, and the
    /// verdict it returns is the reference's `inactive_reason` on them.
    #[test]
    fn start_lane_checked_reports_the_reference_verdict_on_the_stored_registers() {
        use super::stack::{FullStack, StackLane};
        let specials = [
            1.5,
            -0.25,
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1),
        ];
        let mut wave = Wave::<32, LaneState<StackLane>>::new(0);
        let start = NodePointer::from_u32(0x1234_5678);
        let (mut started, mut rejected, mut slopes_flagged) = (0, 0, 0);
        for field in 0..8 {
            for (k, &special) in specials.iter().enumerate() {
                let mut v = [0.5f32, -1.0, 2.0, 0.3, -0.7, 0.6, 0.0, 100.0];
                v[field] = special;
                let ray = Ray {
                    origin: glam::Vec3::new(v[0], v[1], v[2]),
                    dir: glam::Vec3::new(v[3], v[4], v[5]),
                    tmin: v[6],
                    tmax: v[7],
                };
                let i = (field * specials.len() + k) % 32;
                let verdict = start_lane_checked(&FullStack, start, &mut wave, i, &ray);
                let should_start = ray.tmin <= ray.tmax || ray.tmax.is_nan();
                assert_eq!(verdict.is_some(), should_start, "{ray:?}");
                let Some(LaneStart {
                    active,
                    finite_slopes,
                }) = verdict
                else {
                    continue;
                };
                started += 1;
                let regs = &wave.ray[i];
                let bits = |v: [f32; 3]| v.map(f32::to_bits);
                assert_eq!(bits(regs.origin), bits([v[0], v[1], v[2]]));
                assert_eq!(bits(regs.dir), bits([v[3], v[4], v[5]]));
                let reciprocal = [v[3], v[4], v[5]].map(|d| (1.0 / d as f64) as f32);
                for (got, want) in regs.inv_dir.into_iter().zip(reciprocal) {
                    let same = got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan();
                    assert!(same, "{ray:?}: 1/d {got} against {want}");
                }
                assert_eq!(regs.extent.to_bits(), ray.tmax.to_bits());
                assert_eq!(active, regs.inactive_reason().is_none(), "{ray:?}");
                // Finite, non-zero slopes exactly when the direction is finite and non-zero.
                let direction_ok = [v[3], v[4], v[5]].iter().all(|&d| {
                    d.is_finite() && d != 0.0 && (1.0 / d as f64).abs() < f32::MAX as f64
                });
                assert_eq!(finite_slopes, direction_ok, "{ray:?}");
                slopes_flagged += finite_slopes as usize;
                rejected += !active as usize;
                let prepared = TriangleRay::new(regs);
                let tri = &wave.state[i].triangle_ray;
                assert_eq!(tri.rotation, prepared.rotation);
                let bits4 = |v: [f32; 4]| v.map(f32::to_bits);
                assert_eq!(bits4(tri.origin), bits4(prepared.origin));
                assert_eq!(bits4(tri.dir), bits4(prepared.dir));
                assert_eq!(wave.node[i], start);
                assert!(wave.exec & 1 << i != 0);
            }
        }
        // Both verdicts occur (NaN and infinite origins are rejected, the rest accepted).
        assert!(
            rejected > 0 && rejected < started,
            "{rejected} of {started}"
        );
        // Both slope verdicts occur.
        assert!(
            slopes_flagged > 0 && slopes_flagged < started,
            "{slopes_flagged} of {started}"
        );
    }

    #[test]
    fn box_pointer_mask_marks_types_4_and_5() {
        // Every node type in every position, for lengths with and without a remainder.
        let mut state = 0x9e37_79b9u32;
        for len in [0usize, 1, 3, 4, 7, 32, 61, 64] {
            for _ in 0..200 {
                let nodes: Vec<NodePointer> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 17;
                        state ^= state << 5;
                        NodePointer::from_u32(state)
                    })
                    .collect();
                let expected = nodes.iter().enumerate().fold(0u64, |m, (i, &p)| {
                    let ty = p.node_type();
                    m | ((matches!(ty, NodeType::BoxF32 | NodeType::BoxF16) as u64) << i)
                });
                assert_eq!(box_pointer_mask(&nodes), expected, "len {len}");
                #[cfg(target_arch = "x86_64")]
                if len.is_multiple_of(8) && std::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 checked just above.
                    let avx2 = unsafe { box_pointer_mask_avx2(&nodes) };
                    assert_eq!(avx2, expected, "len {len}");
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn full_blocks_marks_the_blocks_of_eight_set_lanes() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for case in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly full bytes, so that every count of full blocks shows up.
            let holes = state & (state >> 3) & (state >> 11) & (state >> 29);
            let lanes = if case % 2 == 0 { !holes } else { state };
            let expected = (0..8)
                .filter(|b| (lanes >> (8 * b)) & 0xff == 0xff)
                .fold(0u64, |m, b| m | 1 << (8 * b));
            assert_eq!(full_blocks(lanes), expected, "{lanes:#x}");
        }
        assert_eq!(full_blocks(u64::MAX), 0x0101_0101_0101_0101);
        assert_eq!(full_blocks(0), 0);
        // Bytes from the low end: 00 ff fe ff ff 7f ff 00.
        assert_eq!(
            full_blocks(0x00ff_7fff_fffe_ff00),
            1 << 8 | 1 << 24 | 1 << 32 | 1 << 48
        );
    }
}
