//! The lockstep step's box lanes: tested (in the AVX2 build, eight at once or in pairs),
//! then each consumes its children.

use super::{Lockstep, Step};
use crate::hw::NodePointer;
use crate::traverse::lane::LaneState;
use crate::traverse::{PrimitiveIds, Traversal};
use crate::wave::intersect::{BoxResult, DecodedBox, RayColumns};
use crate::wave::isa::{Avx2, Isa};
use crate::wave::{LaneStatus, Wave, WaveIntersector};

impl<T: Traversal, P: PrimitiveIds + ?Sized, I: Isa, const W: usize, const H: usize>
    Lockstep<'_, T, P, I, W, H>
{
    /// Tests the step's box lanes (box pointers whose node is cached); the others go to
    /// `step.rest`. Box lanes come first: grouping lanes by node type keeps the branches
    /// predictable (lanes are independent, so the order changes no result).
    #[inline(always)]
    pub(super) fn test_box_lanes(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &RayColumns,
        step: &mut Step,
    ) {
        let boxes = self.isa.box_pointer_mask(&wave.node);
        step.box_lanes = step.rest & boxes;
        step.rest &= !boxes;
        if let Some(avx2) = self.isa.avx2() {
            if self.run.intersector.descriptor.box_sort_enable {
                self.test_box_blocks(avx2, wave, columns, step);
            }
        }
        self.test_box_lanes_one_by_one(wave, step);
    }

    /// Records box lane `i`'s result, its node having `useful_slots` child slots.
    #[inline(always)]
    fn record_box(&mut self, step: &mut Step, i: usize, useful_slots: u32, result: BoxResult) {
        step.cost.box_queries(Self::wave_of(i), 1, useful_slots);
        self.box_results[i] = result;
        step.tested |= 1 << i;
    }

    /// The box lanes left after the blocks: in the AVX2 build two at a time
    /// ([`Avx2::box_query_pair`]), else (or when the pair declines) one by one; a lane whose
    /// node is not cached goes to `step.rest`.
    #[inline(always)]
    fn test_box_lanes_one_by_one(&mut self, wave: &Wave<H, LaneState<T::Lane>>, step: &mut Step) {
        let intersector = self.run.intersector;
        let sort = intersector.descriptor.box_sort_enable;
        let grow = intersector.grow();
        while step.box_lanes != 0 {
            let i = step.box_lanes.trailing_zeros() as usize;
            step.box_lanes &= step.box_lanes - 1;
            let Some(b) = intersector.cached_box_of_box_pointer(wave.node[i]) else {
                step.rest |= 1 << i;
                continue;
            };
            if let Some(avx2) = self.isa.avx2().filter(|_| step.box_lanes != 0) {
                // Pair lane i with the next box lane.
                let j = step.box_lanes.trailing_zeros() as usize;
                if let Some(b_j) = intersector.cached_box_of_box_pointer(wave.node[j]) {
                    let mut pair = [BoxResult::default(); 2];
                    let rays = [&wave.ray[i], &wave.ray[j]];
                    let finite = (self.finite_slopes >> i) & (self.finite_slopes >> j) & 1 == 1;
                    let [ri, rj] = &mut pair;
                    let out = [&mut ri.children, &mut rj.children];
                    if let Some([vi, vj]) =
                        avx2.box_query_pair([b, b_j], rays, grow, sort, finite, out)
                    {
                        step.box_lanes &= step.box_lanes - 1;
                        let [mut ri, mut rj] = pair;
                        (ri.valid, rj.valid) = (vi, vj);
                        self.record_box(step, i, b.useful_slots(), ri);
                        self.record_box(step, j, b_j.useful_slots(), rj);
                        continue;
                    }
                }
            }
            let mut result = BoxResult::default();
            result.valid = crate::wave::intersect::box_query(
                b,
                &wave.ray[i],
                grow,
                sort,
                &mut result.children,
            );
            self.record_box(step, i, b.useful_slots(), result);
        }
    }

    /// Lets each tested box lane consume its result. After all are tested: two short loops,
    /// testing then stack work, keep fewer values live than one loop doing both, which
    /// spilled registers (measured 1.02-1.04x).
    #[inline(always)]
    pub(super) fn consume_box_results(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &mut RayColumns,
        step: &mut Step,
    ) {
        while step.tested != 0 {
            let i = step.tested.trailing_zeros() as usize;
            step.tested &= step.tested - 1;
            let BoxResult { children, valid } = self.box_results[i];
            let node = wave.node[i];
            let traversal = self.run.traversal;
            let trav = &mut wave.state[i].trav;
            let next = traversal.after_box_masked(self.isa, trav, node, children, valid);
            self.max_depth = self.max_depth.max(traversal.stack_depth(trav));
            self.go_on(wave, columns, i, next);
        }
    }

    /// Blocks of eight consecutive box lanes, tested together (sorting on): eight lanes at
    /// one node ([`Avx2::box_query_eight`]; camera rays do this a lot), or at eight ordered
    /// cached nodes ([`Avx2::box_query_eight_nodes`]). A block is checked once per step, so
    /// rays that share few nodes pay little. A block that shares one lane's state and got
    /// the same children in all eight lanes consumes them once; every other shared block
    /// parts or pops ([`Self::part_shared_blocks`]).
    #[inline(always)]
    fn test_box_blocks(
        &mut self,
        avx2: Avx2,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        columns: &RayColumns,
        step: &mut Step,
    ) {
        let intersector = self.run.intersector;
        let grow = intersector.grow();
        // Blocks tested here, and the shared ones among them consumed as one. (Two masks
        // applied to `step` after the loop: updating `step` block by block kept more values
        // live across the shared blocks' stack work, which spilled them.)
        let (mut taken, mut consumed) = (0u64, 0u64);
        let mut blocks = full_blocks(step.box_lanes & self.finite_slopes);
        while blocks != 0 {
            let first = blocks.trailing_zeros() as usize;
            blocks &= blocks - 1;
            let block = 0xffu64 << first;
            let block_shared = (self.shared >> first) & 1 == 1;
            if !block_shared && !avx2.eight_lanes_at_one_node(&wave.node, first) {
                // Eight box lanes at different nodes: tested as one when every node is
                // cached and ordered (else in pairs).
                let Some((nodes, useful)) = eight_ordered_boxes(intersector, &wave.node, first)
                else {
                    continue;
                };
                avx2.box_query_eight_nodes(&nodes, columns, first, grow, &mut self.box_results);
                step.cost.box_queries(Self::wave_of(first), 8, useful);
                taken |= block;
                continue;
            }
            let Some(b) = intersector.cached_box_of_box_pointer(wave.node[first]) else {
                continue;
            };
            if b.ordered == 0 {
                continue;
            }
            let uniform = avx2.box_query_eight(b, columns, first, grow, &mut self.box_results);
            // Eight box queries and eight times the useful slots, all in one wave (a block
            // of eight never straddles two).
            step.cost
                .box_queries(Self::wave_of(first), 8, 8 * b.useful_slots());
            taken |= block;
            if block_shared && uniform {
                consumed |= block;
                self.consume_shared_block(avx2, wave, first);
            }
        }
        step.box_lanes &= !taken;
        step.tested |= taken & !consumed;
        // Shared blocks not consumed as one in this step.
        let parting = self.shared & !consumed;
        self.part_shared_blocks(wave, parting, step);
    }

    /// The shared block at lanes `first..first + 8` got the same children in all eight
    /// lanes: one lane's stack work for all eight.
    #[inline(always)]
    fn consume_shared_block(
        &mut self,
        avx2: Avx2,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        first: usize,
    ) {
        let BoxResult { children, valid } = self.box_results[first];
        let node = wave.node[first];
        let traversal = self.run.traversal;
        let trav = &mut wave.state[first].trav;
        let next = traversal.after_box_masked(avx2, trav, node, children, valid);
        self.max_depth = self.max_depth.max(traversal.stack_depth(trav));
        match next {
            Some(p) => {
                self.run.intersector.prefetch_entry(p);
                wave.node[first..first + 8].fill(p);
            }
            None => {
                self.shared &= !(0xff << first);
                for k in first..first + 8 {
                    self.retire(wave, k, LaneStatus::Finished);
                }
            }
        }
    }

    /// The shared blocks in `parting` were not consumed as one in this step. A shared block
    /// at one triangle node stays shared: each lane tests the triangle with its own ray, and
    /// all pop the same node (the stack does not depend on the test), so the pop is done
    /// here, once. A lane whose any-hit query accepts the hit finishes instead; the block
    /// parts in the next step. Any other shared block goes on apart: its lanes get the
    /// block's state.
    #[inline(always)]
    fn part_shared_blocks(
        &mut self,
        wave: &mut Wave<H, LaneState<T::Lane>>,
        mut parting: u64,
        step: &Step,
    ) {
        let (intersector, traversal) = (self.run.intersector, self.run.traversal);
        while parting != 0 {
            let first = parting.trailing_zeros() as usize;
            parting &= !(0xff << first);
            let node = wave.node[first];
            if (step.rest >> first) & 0xff == 0xff
                && node.is_triangle()
                && intersector.mapped_triangle(node).is_some()
            {
                let trav = &mut wave.state[first].trav;
                self.batch.shared.next[first / 8] = traversal.after_leaf(trav, node);
                self.batch.shared.lanes |= 0xff << first;
                continue;
            }
            self.shared &= !(0xff << first);
            let (head, rest) = wave.state.split_at_mut(first + 1);
            for lane in &mut rest[..7] {
                traversal.copy_lane(&head[first].trav, &mut lane.trav);
            }
        }
    }
}

/// Bit `8 k` set for each block of eight lanes (bits `8 k..8 k + 8`) all set in `lanes`.
#[inline(always)]
pub(crate) fn full_blocks(lanes: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let missing = !lanes;
    // High bit of each byte: that byte of `missing` is not zero (no carry leaves a byte).
    let any_missing = ((missing & LOW7) + LOW7) | missing;
    (!any_missing & !LOW7) >> 7
}

/// The cached box nodes of lanes `first..first + 8` and their useful slots in all, when
/// every one is cached and ordered (the case [`Avx2::box_query_eight_nodes`] covers).
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

#[cfg(test)]
mod tests {
    use super::*;

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
