//! A wave loop over a stream of rays, with optional lane refill, that also measures what the
//! profiler reports beyond [`Counters`]: mean stack depth, node bytes fetched, restarts.
//!
//! Without refill it runs exactly what [`super::WaveRun::trace_wave`] runs (the same waves, hits,
//! clocks and counters; `tests/profile_equivalence.rs` checks this). With refill, one wave
//! takes the whole stream: a lane whose ray finished takes the next ray of the stream before
//! the next instruction, so lanes idle only at the end of the stream (persistent waves).

use super::short_stack::{CountedTraversal, LaneEvents};
use super::{start_lane, LaneHit, LaneOutput, LaneState, PrimitiveIds, Query, WaveRun};
use crate::counters::Counters;
use crate::hw::instruction::LaneOutcome;
use crate::hw::pointer::NodePointer;
use crate::math::Ray;
use crate::wave::{td, LaneStatus, Wave, WaveResults};

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

/// Runs `rays` through waves of `W` lanes and writes one [`LaneOutput`] per ray.
///
/// Without `refill`, rays are cut into waves of `W` consecutive rays with indices
/// `first_wave_index, first_wave_index + 1, ...`. With `refill`, one wave (index
/// `first_wave_index`) runs the whole slice, refilling finished lanes from it in order.
#[allow(clippy::too_many_arguments)]
pub fn trace_stream<const W: usize, T: CountedTraversal, P: PrimitiveIds + ?Sized>(
    run: &WaveRun<T, P>,
    first_wave_index: u64,
    rays: &[Ray],
    refill: bool,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    out: &mut [LaneOutput],
    counters: &mut Counters,
    stats: &mut StreamStats,
) {
    assert_eq!(rays.len(), out.len(), "one output per ray");
    if refill {
        run_wave(run, first_wave_index, rays, wave, out, counters, stats);
    } else {
        for (w, (rays, out)) in rays.chunks(W).zip(out.chunks_mut(W)).enumerate() {
            run_wave(
                run,
                first_wave_index + w as u64,
                rays,
                wave,
                out,
                counters,
                stats,
            );
        }
    }
}

/// One wave over `rays`: the first `W` start at once; each later ray takes the first lane
/// that finished (so with `rays.len() <= W` this is one plain wave).
fn run_wave<const W: usize, T: CountedTraversal, P: PrimitiveIds + ?Sized>(
    run: &WaveRun<T, P>,
    wave_index: u64,
    rays: &[Ray],
    wave: &mut Wave<W, LaneState<T::Lane>>,
    out: &mut [LaneOutput],
    counters: &mut Counters,
    stats: &mut StreamStats,
) {
    let (intersector, traversal, root, prim_id, query) = (
        run.intersector,
        run.traversal,
        run.root,
        run.prim_id,
        run.query,
    );
    wave.index = wave_index;
    wave.exec = 0;
    // Ray index each lane runs.
    let mut lane_ray_index = [usize::MAX; W];
    // Lanes holding a ray whose output is not written yet.
    let mut assigned: u64 = 0;
    let mut next_ray = 0usize;
    for (i, index) in lane_ray_index.iter_mut().enumerate() {
        wave.state[i].hit = LaneHit::default();
        wave.status[i] = LaneStatus::ExecOff;
        if next_ray < rays.len() {
            *index = next_ray;
            assigned |= 1 << i;
            start_lane(traversal, root, wave, i, &rays[next_ray]);
            next_ray += 1;
        }
    }
    counters.rays += rays.len() as u64;
    counters.waves += 1;
    counters.lanes_empty += W.saturating_sub(rays.len()) as u64;

    let mut results = WaveResults::<W>::default();
    let mut max_depth = 0usize;
    loop {
        // Write out finished lanes and refill them from the stream.
        let mut finished = assigned & !wave.exec;
        while finished != 0 {
            let i = finished.trailing_zeros() as usize;
            finished &= finished - 1;
            finish_lane(
                traversal,
                wave,
                i,
                &mut out[lane_ray_index[i]],
                counters,
                stats,
            );
            assigned &= !(1 << i);
            // Rays that never start (tmin > tmax) are finished at once.
            while next_ray < rays.len() {
                let r = next_ray;
                next_ray += 1;
                lane_ray_index[i] = r;
                if start_lane(traversal, root, wave, i, &rays[r]) {
                    assigned |= 1 << i;
                    break;
                }
                finish_lane(traversal, wave, i, &mut out[r], counters, stats);
            }
        }
        if wave.exec == 0 {
            break;
        }
        let issued = wave.exec.count_ones();
        let cost = intersector.issue(wave, &mut results);
        td::charge(counters, wave.index, W, issued, &cost);
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
                stats.node_bytes += ty.fetch_bytes() as u64;
            }
            let next = if ty.is_box() {
                traversal.after_box(&mut lane.trav, node, dwords.map(NodePointer::from_u32))
            } else {
                let mut done = false;
                if ty.triangle_index().is_some() && outcome == LaneOutcome::Tested {
                    if let Some(t) = lane
                        .hit
                        .offer(node, dwords, || prim_id.primitive_id(node, &dwords))
                    {
                        counters.trav_hits_accepted += 1;
                        wave.ray[i].extent = t;
                        done = query == Query::AnyHit;
                    }
                }
                if done {
                    None
                } else {
                    traversal.after_leaf(&mut lane.trav, node)
                }
            };
            let depth = traversal.stack_depth(&lane.trav);
            max_depth = max_depth.max(depth);
            stats.stack_depth_sum += depth as u64;
            stats.stack_depth_samples += 1;
            match next {
                Some(p) => wave.node[i] = p,
                None => wave.retire(i, LaneStatus::Finished),
            }
        }
    }
    counters.trav_max_stack_depth = counters.trav_max_stack_depth.max(max_depth as u64);
}

fn finish_lane<const W: usize, T: CountedTraversal>(
    traversal: &T,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    i: usize,
    out: &mut LaneOutput,
    counters: &mut Counters,
    stats: &mut StreamStats,
) {
    *out = wave.state[i].hit.output(counters);
    let events = traversal.take_events(&mut wave.state[i].trav);
    stats.node_bytes += 4 * events.parent_reads;
    stats.events.merge(&events);
}
