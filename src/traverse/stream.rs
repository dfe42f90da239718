//! A wave loop over a stream of rays, with optional lane refill, that also measures what the
//! profiler reports beyond [`Counters`]: mean stack depth, node bytes fetched, restarts.
//!
//! Each step issues the instruction for every active lane first
//! ([`WaveIntersector::issue`](crate::wave::WaveIntersector::issue), the lane kernel's
//! dispatch lane by lane), then lets each lane consume its dwords: the order of a wave's
//! work opposite to the lockstep loop's, and the same hits, clocks and counters
//! (`tests/profile_equivalence.rs` checks this). With refill, one wave takes the whole
//! stream: a lane whose ray finished takes the next ray of the stream before the next
//! instruction, so lanes idle only at the end of the stream (persistent waves).

use super::short_stack::{CountedTraversal, LaneEvents};
use super::{
    start_lane, LaneHit, LaneOutput, LaneState, PrimitiveIds, Query, RegisterChange, WaveRun,
};
use crate::counters::{Counters, ShaderCounters};
use crate::hw::instruction::LaneOutcome;
use crate::hw::pointer::NodePointer;
use crate::math::Ray;
use crate::memory::fetch::node_fetch;
use crate::wave::intersect::TriangleRay;
use crate::wave::td::charge_shader;
use crate::wave::{td, LaneStatus, Wave, WaveIntersector, WaveResults};

/// What a stream measured besides [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StreamStats {
    /// Sum over lane steps of the lane's stack depth after the step.
    pub stack_depth_sum: u64,
    /// Lane steps sampled for `stack_depth_sum`.
    pub stack_depth_samples: u64,
    /// Node bytes the instructions fetched (128 per FP32 box, 64 per FP16 box or triangle
    /// node) plus 4 bytes per parent pointer read.
    pub node_bytes: u64,
    /// Strategy events (restarts, parent reads, dropped entries).
    pub events: LaneEvents,
}

impl StreamStats {
    pub fn merge(&mut self, other: &StreamStats) {
        self.stack_depth_sum += other.stack_depth_sum;
        self.stack_depth_samples += other.stack_depth_samples;
        self.node_bytes += other.node_bytes;
        self.events.merge(&other.events);
    }
}

/// What a stream counts: the wave model's counters and the stream's own measures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamTally {
    pub counters: Counters,
    pub stats: StreamStats,
}

impl StreamTally {
    pub fn merge(&mut self, other: &StreamTally) {
        self.counters.merge(&other.counters);
        self.stats.merge(&other.stats);
    }
}

/// The rays of a stream and how waves take them.
#[derive(Clone, Copy, Debug)]
pub struct StreamRays<'r> {
    pub rays: &'r [Ray],
    /// Index of the first wave (each wave's TD follows from its index).
    pub first_wave_index: u64,
    /// Finished lanes take the stream's next rays (one persistent wave).
    pub refill: bool,
}

/// Runs the stream's rays through waves of `W` lanes and writes one [`LaneOutput`] per ray.
///
/// Without refill, rays are cut into waves of `W` consecutive rays with indices
/// `first_wave_index, first_wave_index + 1, ...`. With refill, one wave (index
/// `first_wave_index`) runs the whole slice, refilling finished lanes from it in order.
pub fn trace_stream<const W: usize, T: CountedTraversal, P: PrimitiveIds + ?Sized>(
    run: &WaveRun<T, P>,
    stream: StreamRays,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    out: &mut [LaneOutput],
    tally: &mut StreamTally,
) {
    let StreamRays {
        rays,
        first_wave_index,
        refill,
    } = stream;
    assert_eq!(rays.len(), out.len(), "one output per ray");
    if refill {
        StreamWave::new(run, rays).run(first_wave_index, wave, out, tally);
    } else {
        for (w, (rays, out)) in rays.chunks(W).zip(out.chunks_mut(W)).enumerate() {
            let index = first_wave_index + w as u64;
            StreamWave::new(run, rays).run(index, wave, out, tally);
        }
    }
}

/// One wave over a slice of the stream: the first `W` rays start at once; each later ray
/// takes the first lane that finished (so with at most `W` rays this is one plain wave).
struct StreamWave<'s, 'a, T, P: ?Sized, const W: usize> {
    run: &'s WaveRun<'a, T, P>,
    rays: &'s [Ray],
    /// The ray each lane runs.
    lane_ray: [usize; W],
    /// Lanes holding a ray whose output is not written yet.
    assigned: u64,
    /// The next ray of the slice to start.
    next_ray: usize,
    /// The deepest stack a lane reached.
    max_depth: usize,
}

impl<'s, 'a, T: CountedTraversal, P: PrimitiveIds + ?Sized, const W: usize>
    StreamWave<'s, 'a, T, P, W>
{
    fn new(run: &'s WaveRun<'a, T, P>, rays: &'s [Ray]) -> Self {
        StreamWave {
            run,
            rays,
            lane_ray: [usize::MAX; W],
            assigned: 0,
            next_ray: 0,
            max_depth: 0,
        }
    }

    /// Runs the wave (index `wave_index`) until every ray of the slice is done.
    fn run(
        mut self,
        wave_index: u64,
        wave: &mut Wave<W, LaneState<T::Lane>>,
        out: &mut [LaneOutput],
        tally: &mut StreamTally,
    ) {
        self.start(wave_index, wave, &mut tally.counters);
        let mut results = WaveResults::<W>::default();
        loop {
            self.refill_finished(wave, out, tally);
            if wave.exec == 0 {
                break;
            }
            let issued = wave.exec.count_ones();
            let cost = self.run.intersector.issue(wave, &mut results);
            if tally.counters.fetches.enabled {
                record_issue(self.run.intersector, wave, &results, &mut tally.counters);
            }
            td::charge(&mut tally.counters, wave.index, W, issued, &cost);
            self.consume(wave, &results, tally);
        }
        let depth = &mut tally.counters.trav_max_stack_depth;
        *depth = (*depth).max(self.max_depth as u64);
    }

    /// Starts the first `W` rays of the slice, one per lane, and counts the wave.
    fn start(
        &mut self,
        wave_index: u64,
        wave: &mut Wave<W, LaneState<T::Lane>>,
        counters: &mut Counters,
    ) {
        let (traversal, root) = (self.run.traversal, self.run.root);
        wave.index = wave_index;
        wave.exec = 0;
        for (i, index) in self.lane_ray.iter_mut().enumerate() {
            wave.state[i].hit = LaneHit::default();
            wave.status[i] = LaneStatus::ExecOff;
            if self.next_ray < self.rays.len() {
                *index = self.next_ray;
                self.assigned |= 1 << i;
                start_lane(traversal, root, wave, i, &self.rays[self.next_ray]);
                self.next_ray += 1;
            }
        }
        counters.rays += self.rays.len() as u64;
        counters.waves += 1;
        counters.lanes_empty += W.saturating_sub(self.rays.len()) as u64;
    }

    /// Writes out the lanes that finished and refills them from the slice (rays that never
    /// start, `tmin > tmax`, are finished at once).
    fn refill_finished(
        &mut self,
        wave: &mut Wave<W, LaneState<T::Lane>>,
        out: &mut [LaneOutput],
        tally: &mut StreamTally,
    ) {
        let (traversal, root) = (self.run.traversal, self.run.root);
        let mut finished = self.assigned & !wave.exec;
        while finished != 0 {
            let i = finished.trailing_zeros() as usize;
            finished &= finished - 1;
            finish_lane(traversal, wave, i, &mut out[self.lane_ray[i]], tally);
            self.assigned &= !(1 << i);
            while self.next_ray < self.rays.len() {
                let r = self.next_ray;
                self.next_ray += 1;
                self.lane_ray[i] = r;
                if start_lane(traversal, root, wave, i, &self.rays[r]) {
                    self.assigned |= 1 << i;
                    break;
                }
                finish_lane(traversal, wave, i, &mut out[r], tally);
            }
        }
    }

    /// Lets every lane of the step consume its dwords.
    fn consume(
        &mut self,
        wave: &mut Wave<W, LaneState<T::Lane>>,
        results: &WaveResults<W>,
        tally: &mut StreamTally,
    ) {
        let (traversal, prim_id, query) = (self.run.traversal, self.run.prim_id, self.run.query);
        let mut exec = wave.exec;
        while exec != 0 {
            let i = exec.trailing_zeros() as usize;
            exec &= exec - 1;
            let node = wave.node[i];
            let outcome = results.outcome[i];
            if let LaneOutcome::Inactive(reason) = outcome {
                wave.retire(i, LaneStatus::Deactivated(reason));
                continue;
            }
            let dwords = results.dwords[i];
            let lane = &mut wave.state[i];
            let ty = node.node_type();
            if outcome == LaneOutcome::Tested {
                lane.hit.clocks += 1;
                tally.stats.node_bytes += ty.fetch_bytes() as u64;
            }
            let next = if ty.is_box() {
                traversal.after_box(&mut lane.trav, node, dwords.map(NodePointer::from_u32))
            } else if T::SHADER && outcome == LaneOutcome::UserNode {
                let step =
                    traversal.user_node(&mut lane.trav, node, &mut wave.ray[i], &mut lane.hit);
                if step.registers == RegisterChange::Ray {
                    lane.triangle_ray = TriangleRay::new(&wave.ray[i]);
                }
                step.next
            } else {
                let tested = ty.triangle_index().is_some() && outcome == LaneOutcome::Tested;
                let prim = || prim_id.primitive_id(node, &dwords);
                let accepted = tested
                    .then(|| {
                        traversal.offer_triangle(&mut lane.trav, &mut lane.hit, node, dwords, prim)
                    })
                    .flatten();
                if let Some(t) = accepted {
                    tally.counters.trav_hits_accepted += 1;
                    wave.ray[i].extent = t;
                }
                if accepted.is_some() && query == Query::AnyHit {
                    None
                } else {
                    traversal.after_leaf(&mut lane.trav, node)
                }
            };
            if T::SHADER {
                if let Some(world) = traversal.take_exit(&mut lane.trav) {
                    let ray = &mut wave.ray[i];
                    (ray.origin, ray.dir, ray.inv_dir) = (world.origin, world.dir, world.inv_dir);
                    lane.triangle_ray = TriangleRay::new(ray);
                }
            }
            let depth = traversal.stack_depth(&lane.trav);
            self.max_depth = self.max_depth.max(depth);
            tally.stats.stack_depth_sum += depth as u64;
            tally.stats.stack_depth_samples += 1;
            match next {
                Some(p) => wave.node[i] = p,
                None => wave.retire(i, LaneStatus::Finished),
            }
        }
    }
}

/// Writes lane `i`'s output and takes its strategy events.
fn finish_lane<const W: usize, T: CountedTraversal>(
    traversal: &T,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    i: usize,
    out: &mut LaneOutput,
    tally: &mut StreamTally,
) {
    *out = wave.state[i].hit.output(&mut tally.counters);
    if T::SHADER {
        let mut shader = ShaderCounters::default();
        traversal.finish_lane(&wave.state[i].trav, &mut shader);
        charge_shader(&mut tally.counters, wave.index, &shader);
    }
    let events = traversal.take_events(&mut wave.state[i].trav);
    tally.stats.node_bytes += 4 * events.parent_reads;
    tally.stats.events.merge(&events);
}

/// Records an issued instruction's node fetches for the memory model: each lane in exec
/// whose query reached the TD, or that read a user node for the shader.
#[inline(never)]
fn record_issue<const W: usize, S>(
    intersector: &WaveIntersector,
    wave: &Wave<W, S>,
    results: &WaveResults<W>,
    counters: &mut Counters,
) {
    let blocks = (intersector.memory.bytes.len() / 64) as u32;
    let mut words = [0u32; 64];
    let (mut n, mut lanes, mut td) = (0, 0u64, 0u64);
    let mut exec = wave.exec;
    while exec != 0 {
        let i = exec.trailing_zeros() as usize;
        exec &= exec - 1;
        if !matches!(
            results.outcome[i],
            LaneOutcome::Tested | LaneOutcome::UserNode
        ) {
            continue;
        }
        if let Some((word, on_td)) = node_fetch(wave.node[i], blocks) {
            words[n] = word;
            n += 1;
            lanes |= 1 << i;
            if on_td {
                td |= 1 << i;
            }
        }
    }
    if lanes != 0 {
        counters
            .fetches
            .push(wave.index as u32, lanes, td, &words[..n]);
    }
}
