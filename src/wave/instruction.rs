//! `image_bvh_intersect_ray` as the wave model runs it: [`WaveIntersector`] and its lane
//! kernel.
//!
//! [`WaveIntersector::execute`] runs one lane's instruction and returns a [`LaneResult`]:
//! the four dwords and what the lane cost (a box query, a triangle test, or nothing tested).
//! Every schedule of the wave loop calls it (the lockstep loop for the lanes its vector
//! paths do not take, the by-lane and stream schedules for every lane), and
//! [`InstructionCost::add_lane`](super::td::InstructionCost::add_lane) is the one place a
//! lane's result becomes counters. The kernel's fast arms read the node cache (a decoded
//! box, a copied triangle node); every other case (registers that deactivate the lane, the
//! bounds check, user nodes, unmapped memory, uncached nodes) takes the general arm, which
//! follows the reference's order of decisions (`semantics.md` section 12).

use super::intersect::{
    box_query, BoxResult, BvhMemory, CacheEntry, DecodedBox, LaneRay, NodeCache, TriangleBatch,
    TriangleRay, LANES,
};
use super::intersect::{prefetch_lines, prefetch_two_lines};
use super::lanes::{ray_is_active, Wave, WaveResults};
use super::td::InstructionCost;
use crate::hw::box_test::grow_factor;
use crate::hw::descriptor::BvhDescriptor;
use crate::hw::instruction::{in_bounds, miss_encoding, LaneOutcome};
use crate::hw::pointer::VA_MASK;
use crate::hw::{BoxNodeF16, BoxNodeF32, NodePointer, NodeType, TriangleNode};
use bytemuck::pod_read_unaligned;

/// One lane's instruction: what it returned and what it cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneResult {
    /// A box query ran (one TD clock): the children (the four dwords) and their mask, and
    /// the node's slots that hold a real child.
    Box {
        result: BoxResult,
        useful_slots: u32,
    },
    /// A triangle test ran (one TD clock): the four dwords.
    Triangle([u32; 4]),
    /// Nothing was tested (no TD clock): a user node, a pointer the bounds check rejects,
    /// memory outside the model's, or registers that deactivate the lane (`outcome` says
    /// which); `dwords` are what the instruction returns.
    Untested {
        dwords: [u32; 4],
        outcome: LaneOutcome,
    },
}

impl LaneResult {
    /// The four dwords the instruction returns.
    #[inline]
    pub fn dwords(&self) -> [u32; 4] {
        match *self {
            LaneResult::Box { result, .. } => result.children.map(NodePointer::to_u32),
            LaneResult::Triangle(dwords) | LaneResult::Untested { dwords, .. } => dwords,
        }
    }

    /// The reference instruction's outcome.
    #[inline]
    pub fn outcome(&self) -> LaneOutcome {
        match *self {
            LaneResult::Box { .. } | LaneResult::Triangle(_) => LaneOutcome::Tested,
            LaneResult::Untested { outcome, .. } => outcome,
        }
    }

    /// TD clocks the lane cost: one for a box query or a triangle test.
    #[inline]
    pub fn clocks(&self) -> u32 {
        matches!(self, LaneResult::Box { .. } | LaneResult::Triangle(_)) as u32
    }
}

/// Executes `image_bvh_intersect_ray` for waves: the memory, the descriptor, and the node
/// cache of decoded box nodes and copied triangle nodes.
#[derive(Clone, Copy, Debug)]
pub struct WaveIntersector<'a> {
    pub memory: BvhMemory<'a>,
    pub descriptor: BvhDescriptor,
    pub cache: Option<&'a NodeCache>,
    grow: f32,
    /// Direct lookups, when the memory allows them (see [`FastMap`]).
    fast: FastMap<'a>,
}

/// What lets a node pointer skip the general fetch: `boxes[b]` is the node cache's entry for
/// pointer block `b` (`pointer >> 3`: a decoded box or a triangle copy), and `triangles[b]`
/// the triangle node at block `b`, cut so that every triangle pointer inside passes the
/// bounds check and is mapped. Entries exist only for nodes that passed the same checks
/// when the cache was built.
#[derive(Clone, Copy, Debug, Default)]
struct FastMap<'a> {
    boxes: &'a [CacheEntry],
    triangles: &'a [TriangleNode],
}

impl<'a> FastMap<'a> {
    /// Empty (everything takes the general fetch) when the image base is not a 64-byte block
    /// of memory at or after its start, when addresses could wrap at 2^48, or when the
    /// memory is not 4-byte aligned (triangle nodes are read in place).
    fn new(
        memory: &BvhMemory<'a>,
        descriptor: &BvhDescriptor,
        cache: Option<&'a NodeCache>,
    ) -> FastMap<'a> {
        let try_new = || -> Option<FastMap<'a>> {
            let base = descriptor.base_address_256.checked_mul(256)?;
            let len = memory.bytes.len() as u64;
            let base_offset = base.checked_sub(memory.va)?;
            if base_offset % 64 != 0 || memory.va.checked_add(len)? > VA_MASK || base_offset > len {
                return None;
            }
            // In bounds: address <= size_minus_one. Mapped: 64 (block + 1) <= len - base.
            let blocks =
                ((len - base_offset) / 64).min(descriptor.size_minus_one.saturating_add(1));
            let start = usize::try_from(base_offset).ok()?;
            let end = start + usize::try_from(blocks).ok()? * 64;
            let boxes = cache
                .filter(|c| c.built_for(memory, descriptor))
                .map_or(&[][..], |c| c.entries_from(start / 64));
            Some(FastMap {
                boxes,
                triangles: bytemuck::try_cast_slice(&memory.bytes[start..end]).ok()?,
            })
        };
        try_new().unwrap_or_default()
    }
}

/// A node the general arm fetched.
enum Fetched<'a> {
    Box(&'a DecodedBox),
    /// A box node not in the cache.
    BoxBytes(&'a [u8], NodeType),
    Triangle(&'a [u8]),
    User,
    OutOfBounds,
    Unmapped,
}

impl<'a> WaveIntersector<'a> {
    pub fn new(
        memory: BvhMemory<'a>,
        descriptor: BvhDescriptor,
        cache: Option<&'a NodeCache>,
    ) -> Self {
        WaveIntersector {
            memory,
            descriptor,
            cache,
            grow: grow_factor(descriptor.box_grow_ulps),
            fast: FastMap::new(&memory, &descriptor, cache),
        }
    }

    /// The far-distance growth factor of the descriptor.
    #[inline(always)]
    pub fn grow(&self) -> f32 {
        self.grow
    }

    /// The decoded box a box pointer names, when the direct lookup applies (the node is
    /// cached, in bounds and mapped); `None` means: take [`Self::execute_general`].
    #[inline(always)]
    pub fn cached_box(&self, node: NodePointer) -> Option<&'a DecodedBox> {
        // Types 4 and 5 only (the lookup below compares the entry tag with the type bits).
        if !node.is_box() {
            return None;
        }
        self.cached_box_of_box_pointer(node)
    }

    /// [`Self::cached_box`] for a pointer the caller knows is of type 4 or 5.
    #[inline(always)]
    pub fn cached_box_of_box_pointer(&self, node: NodePointer) -> Option<&'a DecodedBox> {
        debug_assert!(node.is_box());
        self.fast
            .boxes
            .get(node.address_64() as usize)?
            .decoded_box_of_type(node.type_bits())
    }

    /// The primitive id the cache holds for triangle pointer `node` (types 0-3), if its node
    /// was copied (`u32::MAX` until ids are set: [`NodeCache::set_primitive_ids`]).
    #[inline(always)]
    pub fn cached_primitive_id(&self, node: NodePointer) -> Option<u32> {
        let t = self
            .fast
            .boxes
            .get(node.address_64() as usize)?
            .triangle_copy()?;
        Some(t.primitive_id(node.triangle_index()))
    }

    /// The triangle node a triangle pointer (types 0-3) names, when the direct lookup
    /// applies; `None` means: take [`Self::execute_general`].
    #[inline(always)]
    pub fn mapped_triangle(&self, node: NodePointer) -> Option<&'a TriangleNode> {
        let block = node.address_64() as usize;
        // The cache's copy (the line `prefetch` fetched), else the image.
        if let Some(t) = self
            .fast
            .boxes
            .get(block)
            .and_then(CacheEntry::triangle_copy)
        {
            return Some(t.node());
        }
        self.fast.triangles.get(block)
    }

    /// Which arm of the kernel runs lane pointer `node`: the node cache's decoded box or
    /// the mapped triangle node when the direct lookups apply and the instruction accepts
    /// the lane's registers (`active`), else the general arm. The one per-lane dispatch of
    /// every schedule.
    #[inline(always)]
    pub fn classify(&self, node: NodePointer, active: bool) -> LaneWork<'a> {
        if active {
            if node.is_triangle() {
                if let Some(t) = self.mapped_triangle(node) {
                    return LaneWork::Triangle(t, node.triangle_index());
                }
            } else if node.is_box() {
                if let Some(b) = self.cached_box_of_box_pointer(node) {
                    return LaneWork::Box(b);
                }
            }
        }
        LaneWork::General
    }

    /// One lane's instruction ([`Self::classify`], then the arm). `registers` are the
    /// lane's registers, and `scratch` a batch the triangle arm may use.
    #[inline(always)]
    pub fn execute(
        &self,
        node: NodePointer,
        registers: &LaneRegisters,
        scratch: &mut TriangleBatch,
    ) -> LaneResult {
        match self.classify(node, registers.active) {
            LaneWork::Box(b) => self.execute_box(b, registers.ray),
            LaneWork::Triangle(t, k) => {
                scratch.clear();
                scratch.push_prepared(t, k, registers.triangle_ray);
                LaneResult::Triangle(scratch.run(self.descriptor.triangle_return_mode)[0])
            }
            LaneWork::General => self.execute_general(node, registers.ray),
        }
    }

    /// The box arm: the lane's box query of a decoded node.
    #[inline(always)]
    pub fn execute_box(&self, node: &DecodedBox, ray: &LaneRay) -> LaneResult {
        let mut result = BoxResult::default();
        let sort = self.descriptor.box_sort_enable;
        result.valid = box_query(node, ray, self.grow, sort, &mut result.children);
        LaneResult::Box {
            result,
            useful_slots: node.useful_slots(),
        }
    }

    /// The general arm, every case handled in the reference's order (`semantics.md`
    /// section 12): inactive registers, the bounds check, user nodes, unmapped memory,
    /// uncached boxes, any triangle.
    pub fn execute_general(&self, node: NodePointer, ray: &LaneRay) -> LaneResult {
        let ty = node.node_type();
        let untested = |outcome| LaneResult::Untested {
            dwords: miss_encoding(ty),
            outcome,
        };
        if let Some(reason) = ray.inactive_reason() {
            return untested(LaneOutcome::Inactive(reason));
        }
        match self.fetch(node) {
            Fetched::OutOfBounds => untested(LaneOutcome::OutOfBounds),
            Fetched::Unmapped => untested(LaneOutcome::Unmapped),
            Fetched::User => untested(LaneOutcome::UserNode),
            Fetched::Box(b) => self.execute_box(b, ray),
            Fetched::BoxBytes(bytes, ty) => {
                let b = if ty == NodeType::BoxF32 {
                    DecodedBox::from_box32(&pod_read_unaligned::<BoxNodeF32>(bytes))
                } else {
                    DecodedBox::from_box16(&pod_read_unaligned::<BoxNodeF16>(bytes))
                };
                self.execute_box(&b, ray)
            }
            Fetched::Triangle(bytes) => {
                let triangle: TriangleNode = pod_read_unaligned(bytes);
                let mut batch = TriangleBatch::default();
                batch.push(&triangle, node.triangle_index(), ray);
                LaneResult::Triangle(batch.run(self.descriptor.triangle_return_mode)[0])
            }
        }
    }

    /// The general arm's fetch: the bounds check, user nodes, the memory map, the cache.
    fn fetch(&self, ptr: NodePointer) -> Fetched<'a> {
        let ty = ptr.node_type();
        if !in_bounds(&self.descriptor, ptr.into()) {
            return Fetched::OutOfBounds;
        }
        if ptr.is_user() {
            return Fetched::User;
        }
        let Some(offset) = self.memory.offset(&self.descriptor, ptr, ty.fetch_bytes()) else {
            return Fetched::Unmapped;
        };
        let bytes: &'a [u8] = &self.memory.bytes[offset..offset + ty.fetch_bytes()];
        if !ty.is_box() {
            return Fetched::Triangle(bytes);
        }
        match self.cache.and_then(|c| c.get(ty, offset)) {
            Some(b) => Fetched::Box(b),
            None => Fetched::BoxBytes(bytes, ty),
        }
    }

    /// [`Self::prefetch`] without its checks, for the wave loops: the node cache's entry for
    /// `ptr` (both lines), whatever the entry holds. Every tracer has a cache; without one,
    /// or past its end, this prefetches an address that holds no node: a wasted hint, never
    /// a fault.
    ///
    /// Why: the check of [`Self::prefetch`] for a cache (a load, a compare and a branch) ran
    /// once a lane step, on a field the loop could not keep in a register.
    #[inline(always)]
    pub fn prefetch_entry(&self, ptr: NodePointer) {
        prefetch_two_lines(
            self.fast.boxes.as_ptr() as *const u8,
            ptr.address_64() as usize * size_of::<CacheEntry>(),
        );
    }

    /// Hints the CPU to load the node `ptr` names (no effect on results): called by
    /// traversals as soon as a lane's next node is known, so that the load overlaps the
    /// other lanes' work.
    #[inline]
    pub fn prefetch(&self, ptr: NodePointer) {
        let block = ptr.address_64() as usize;
        if !self.fast.boxes.is_empty() {
            // A box's decode or a triangle's copy: the same two lines whatever the type, so
            // no branch on it (box or triangle is data the CPU mispredicts). A pointer past
            // the cache gives an address past its end, which is only prefetched.
            prefetch_two_lines(
                self.fast.boxes.as_ptr() as *const u8,
                block * size_of::<CacheEntry>(),
            );
            return;
        }
        // No direct cache lookup here: a triangle's image bytes, else the general address.
        if !ptr.is_box() {
            if let Some(t) = self.fast.triangles.get(block) {
                prefetch_lines(t as *const TriangleNode as *const u8, 1);
                return;
            }
        }
        let ty = ptr.node_type();
        let Some(offset) = self.memory.offset(&self.descriptor, ptr, 64) else {
            return;
        };
        match (ty.is_box(), self.cache) {
            (true, Some(cache)) => cache.prefetch(offset),
            _ => prefetch_lines(self.memory.bytes[offset..].as_ptr(), 1),
        }
    }

    /// One lane on its own (scalar interface; the same kernel as every schedule).
    pub fn lane(&self, node: NodePointer, ray: &LaneRay) -> ([u32; 4], LaneOutcome) {
        let triangle_ray = TriangleRay::new(ray);
        let registers = LaneRegisters::of(ray, &triangle_ray);
        let r = self.execute(node, &registers, &mut TriangleBatch::default());
        (r.dwords(), r.outcome())
    }

    /// Runs the instruction for every lane in `wave.exec` ([`Self::classify`] per lane,
    /// the triangle lanes tested [`LANES`] at a time); lanes off exec are untouched in
    /// `out`. Returns what it cost.
    pub fn issue<const W: usize, S>(
        &self,
        wave: &Wave<W, S>,
        out: &mut WaveResults<W>,
    ) -> InstructionCost {
        let mut cost = InstructionCost::default();
        let mut batch = TriangleBatch::default();
        let mut batch_lane = [0usize; LANES];
        let mode = self.descriptor.triangle_return_mode;
        let mut record = |i: usize, r: &LaneResult, cost: &mut InstructionCost| {
            cost.add_lane(r);
            out.dwords[i] = r.dwords();
            out.outcome[i] = r.outcome();
        };
        let mut exec = wave.exec;
        while exec != 0 {
            let i = exec.trailing_zeros() as usize;
            exec &= exec - 1;
            let ray = &wave.ray[i];
            match self.classify(wave.node[i], ray_is_active(ray)) {
                LaneWork::Box(b) => record(i, &self.execute_box(b, ray), &mut cost),
                LaneWork::Triangle(t, k) => {
                    batch_lane[batch.len()] = i;
                    batch.push(t, k, ray);
                    if batch.holds(LANES) {
                        let dwords = batch.run(mode);
                        for (j, &lane) in batch_lane.iter().enumerate().take(batch.len()) {
                            record(lane, &LaneResult::Triangle(dwords[j]), &mut cost);
                        }
                        batch.clear();
                    }
                }
                LaneWork::General => {
                    record(i, &self.execute_general(wave.node[i], ray), &mut cost);
                }
            }
        }
        if !batch.is_empty() {
            let dwords = batch.run(mode);
            for (j, &lane) in batch_lane.iter().enumerate().take(batch.len()) {
                record(lane, &LaneResult::Triangle(dwords[j]), &mut cost);
            }
        }
        cost
    }
}

/// The arm of the lane kernel a lane takes ([`WaveIntersector::classify`]).
#[derive(Clone, Copy, Debug)]
pub enum LaneWork<'a> {
    /// The node cache's decoded box node.
    Box(&'a DecodedBox),
    /// Triangle `k` of a mapped triangle node.
    Triangle(&'a TriangleNode, usize),
    /// Everything else (see [`WaveIntersector::execute_general`]).
    General,
}

/// A lane's registers as the kernel reads them: the ray VGPRs, their triangle-test set-up,
/// and whether the instruction accepts them ([`ray_is_active`]).
#[derive(Clone, Copy, Debug)]
pub struct LaneRegisters<'r> {
    pub ray: &'r LaneRay,
    pub triangle_ray: &'r TriangleRay,
    pub active: bool,
}

impl<'r> LaneRegisters<'r> {
    /// `ray` with its set-up `triangle_ray` ([`TriangleRay::new`] of it), checked now.
    #[inline(always)]
    pub fn of(ray: &'r LaneRay, triangle_ray: &'r TriangleRay) -> Self {
        LaneRegisters {
            ray,
            triangle_ray,
            active: ray_is_active(ray),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The node cache's triangle copies. Memory: block 0-1 a box32 root whose children are
    /// tri0 at block 2, tri3 at block 3, a box16 at block 4 and tri1 at block 0 (the root's
    /// own block). Every triangle pointer reads its node's 64 image bytes, from the copy
    /// where the block holds no box (and then with the ids it was given), from the image
    /// where it does (no cached id); box pointers still find their decode.
    #[test]
    fn triangle_copies_hold_the_image_bytes_and_their_ids() {
        use crate::hw::node::{BoxNodeF16, BoxNodeF32, TriangleNode};
        use crate::hw::pointer::{NodePointer, NodeType};
        let ptr = NodePointer::new;
        let children = [
            ptr(2, NodeType::Triangle0),
            ptr(3, NodeType::Triangle3),
            ptr(4, NodeType::BoxF16),
            ptr(0, NodeType::Triangle1),
        ];
        let root = BoxNodeF32 {
            children,
            boxes: [[-1.0, -1.0, -1.0, 1.0, 1.0, 1.0]; 4],
            user: [0; 4],
        };
        let tri = |z: f32| TriangleNode {
            vertices: std::array::from_fn(|v| [v as f32, 2.0 * v as f32, z]),
            word: 0x1234_0000 | z as u32,
        };
        let b16 = BoxNodeF16 {
            children: [NodePointer::INVALID; 4],
            boxes: [[0; 6]; 4],
        };
        let mut mem = Vec::new();
        mem.extend_from_slice(bytemuck::bytes_of(&root));
        mem.extend_from_slice(bytemuck::bytes_of(&tri(2.0)));
        mem.extend_from_slice(bytemuck::bytes_of(&tri(3.0)));
        mem.extend_from_slice(bytemuck::bytes_of(&b16));
        let memory = BvhMemory { bytes: &mem, va: 0 };
        let descriptor = BvhDescriptor {
            size_minus_one: 4,
            ..BvhDescriptor::default()
        };
        let root_ptr = ptr(0, NodeType::BoxF32);
        let mut cache = NodeCache::build(&memory, &descriptor, root_ptr);
        cache.set_primitive_ids(|block, k| 100 * block + k);
        let wi = WaveIntersector::new(memory, descriptor, Some(&cache));
        for (c, &p) in children.iter().enumerate() {
            let block = p.address_64() as usize;
            if p.is_triangle() {
                let image: TriangleNode =
                    bytemuck::pod_read_unaligned(&mem[64 * block..64 * block + 64]);
                assert_eq!(wi.mapped_triangle(p), Some(&image), "child {c}");
                let expect = (block != 0).then_some(100 * block as u32 + p.triangle_index() as u32);
                assert_eq!(wi.cached_primitive_id(p), expect, "child {c}");
            } else {
                assert!(wi.cached_box_of_box_pointer(p).is_some(), "child {c}");
            }
        }
        assert!(wi.cached_box_of_box_pointer(root_ptr).is_some());
        // A pointer of the other box type at the root's block has no decode.
        assert!(wi
            .cached_box_of_box_pointer(ptr(0, NodeType::BoxF16))
            .is_none());
        // Past the memory: nothing cached, nothing mapped.
        let far = ptr(9, NodeType::Triangle0);
        assert_eq!(wi.mapped_triangle(far), None);
        assert_eq!(wi.cached_primitive_id(far), None);
    }
}
