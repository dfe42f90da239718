//! The lockstep step's triangle lanes, and every lane that is neither a box nor a triangle:
//! triangle tests gathered across lanes into batches (four at a time in the portable build,
//! eight in the AVX2 build), shared blocks of eight tested straight from their ray columns,
//! and the kernel's general arm for the rest.

use super::{Lockstep, Step};
use crate::hw::NodePointer;
use crate::traverse::lane::LaneState;
use crate::traverse::{PrimitiveIds, Query, Traversal};
use crate::wave::instruction::LaneWork;
use crate::wave::intersect::{RayColumns, TriangleBatch, BATCH_LANES};
use crate::wave::isa::{Avx2, Isa};
use crate::wave::Wave;

/// Triangle tests gathered across lanes, with each one's lane and node pointer, and the
/// lanes of this step whose pop was done for their shared block.
#[derive(Default)]
pub(super) struct Gathered {
    tests: TriangleBatch,
    lanes: [(usize, NodePointer); BATCH_LANES],
    pub shared: SharedPops,
}

impl Gathered {
    /// A new step: no shared block has popped yet.
    #[inline(always)]
    pub fn start_step(&mut self) {
        self.shared = SharedPops::default();
    }
}

/// The lanes of shared blocks at a triangle node in this step (bit i: lane i), and the node
/// each block pops (`next[first / 8]`), done once for the block before the test.
#[derive(Default)]
pub(super) struct SharedPops {
    pub lanes: u64,
    pub next: [Option<NodePointer>; 8],
}

/// A lane's triangle test: the lane, the triangle pointer it asked for, and the four dwords.
#[derive(Clone, Copy, Debug)]
pub(super) struct TriangleHit {
    pub lane: usize,
    pub node: NodePointer,
    pub dwords: [u32; 4],
}

impl<T: Traversal, P: PrimitiveIds + ?Sized, I: Isa, const W: usize, const H: usize>
    Lockstep<'_, T, P, I, W, H>
{
    /// Tests the step's triangle lanes and runs every other lane of `step.rest` through the
    /// kernel's general arm (user nodes, the bounds check, unmapped memory, uncached boxes).
    #[inline(always)]
    pub(super) fn test_triangle_lanes(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
        step: &mut Step,
    ) {
        if let Some(avx2) = self.isa.avx2() {
            self.test_shared_triangle_blocks(avx2, wave, columns, step);
        }
        let intersector = self.run.intersector;
        let mut rest = step.rest;
        let mut batched = 0u64;
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let node = wave.node[i];
            // Every lane here has registers the instruction accepts (the rejected ones
            // retired at the first step).
            match intersector.classify(node, true) {
                LaneWork::Triangle(triangle, k) => {
                    self.batch.lanes[self.batch.tests.len()] = (i, node);
                    let ray = &wave.state[i].triangle_ray;
                    self.isa
                        .push_triangle(&mut self.batch.tests, triangle, k, ray);
                    batched |= 1 << i;
                    if self.batch.tests.holds(I::TRIANGLE_BATCH) {
                        self.flush_triangles(wave, columns);
                    }
                }
                LaneWork::Box(b) => {
                    // (Box lanes whose node is cached were tested with the box lanes.)
                    let r = intersector.execute_box(b, &wave.ray[i]);
                    step.cost.lane(Self::wave_of(i), &r);
                    self.consume_general(wave, columns, i, r);
                }
                LaneWork::General => {
                    let r = intersector.execute_general(node, &wave.ray[i]);
                    step.cost.lane(Self::wave_of(i), &r);
                    self.consume_general(wave, columns, i, r);
                }
            }
        }
        if !self.batch.tests.is_empty() {
            self.flush_triangles(wave, columns);
        }
        step.cost.triangle_tests(batched);
    }

    /// A block of eight lanes that shares one stack and is at a triangle (its pop done with
    /// the box blocks, `batch.shared`) is tested as one ([`Avx2::triangle_query_eight`]),
    /// not through the batch. Blocks that have parted and meet at one triangle again are
    /// left to the batch: rare (sponza's camera rays: 8 % of the triangle lane steps against
    /// 46 %), and a check of every full block of triangle lanes cost the bunny's camera rays
    /// 1 %.
    #[inline(always)]
    fn test_shared_triangle_blocks(
        &mut self,
        avx2: Avx2,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
        step: &mut Step,
    ) {
        let intersector = self.run.intersector;
        let mode = intersector.descriptor.triangle_return_mode;
        let mut blocks = self.batch.shared.lanes & 0x0101_0101_0101_0101;
        while blocks != 0 {
            let first = blocks.trailing_zeros() as usize;
            blocks &= blocks - 1;
            let node = wave.node[first];
            let Some(triangle) = intersector.mapped_triangle(node) else {
                continue;
            };
            let k = node.triangle_index();
            let dwords = avx2.triangle_query_eight(triangle, k, columns, first, mode);
            for (j, dwords) in dwords.into_iter().enumerate() {
                let hit = TriangleHit {
                    lane: first + j,
                    node,
                    dwords,
                };
                self.after_triangle(wave, columns, hit, true);
            }
            step.cost.triangle_tests(0xff << first);
            step.rest &= !(0xff << first);
        }
    }

    /// Runs the gathered triangle tests and lets each lane consume its dwords.
    #[inline(always)]
    fn flush_triangles(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
    ) {
        let mode = self.run.intersector.descriptor.triangle_return_mode;
        let dwords = self.isa.run_triangles(&self.batch.tests, mode);
        let n = self.batch.tests.len();
        for (j, &dwords) in dwords.iter().enumerate().take(n) {
            let (lane, node) = self.batch.lanes[j];
            let hit = TriangleHit { lane, node, dwords };
            self.after_triangle(wave, columns, hit, true);
        }
        self.batch.tests.clear();
    }

    /// A lane tested its triangle: offers the hit, then asks the strategy for the next node
    /// (none after an accepted hit of an any-hit query; the node its shared block popped
    /// when `may_share` and the lane is in one). An accepted hit shrinks the lane's extent,
    /// in its register and in its column.
    #[inline(always)]
    pub(super) fn after_triangle(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
        hit: TriangleHit,
        may_share: bool,
    ) {
        let TriangleHit {
            lane: i,
            node,
            dwords,
        } = hit;
        let run = self.run;
        let lane = &mut wave.state[i];
        let mut done = false;
        let prim = || run.prim_id.primitive_id(node, &dwords);
        if let Some(t) =
            run.traversal
                .offer_triangle(&mut lane.trav, &mut lane.hit, node, dwords, prim)
        {
            self.hits_accepted += 1;
            // The current closest t becomes the ray extent.
            wave.ray[i].extent = t;
            // Written here, in the branch the hit takes anyway: a mask of the lanes to
            // update after the step cost a loop whose exit the CPU mispredicted.
            columns.set_extent(i, t);
            done = run.query == Query::AnyHit;
        }
        let shared = &self.batch.shared;
        let next = if done {
            None
        } else if may_share && (shared.lanes >> i) & 1 == 1 {
            shared.next[i / 8]
        } else {
            run.traversal.after_leaf(&mut lane.trav, node)
        };
        self.max_depth = self.max_depth.max(run.traversal.stack_depth(&lane.trav));
        self.go_on(wave, columns, i, next);
    }
}
