//! `Wave<W>`: the lanes of one wave32 or wave64, their ray VGPRs, exec mask and state, and
//! the wave instruction that runs `image_bvh_intersect_ray` for every active lane.

use super::intersector::{
    box_query, grow_factor, out_of_bounds, prefetch_lines, prefetch_two_lines, BvhMemory,
    CacheEntry, DecodedBox, LaneRay, NodeCache, TriangleBatch, LANES,
};
use crate::hw::descriptor::BvhDescriptor;
use crate::hw::instruction::{miss_encoding, InactiveReason, LaneOutcome, BOX_MISS};
use crate::hw::pointer::{NodePointer, NodeType, VA_MASK};

/// Why a lane is (in)active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LaneStatus {
    /// Running: its exec bit is set.
    Active,
    /// Never given a ray (exec mask off from the start, e.g. a partial last wave).
    #[default]
    ExecOff,
    /// Its traversal ended (stack empty, or an any-hit found).
    Finished,
    /// The instruction found a NaN register or an infinite origin (`semantics.md` 8): the
    /// lane returned the miss encoding, cost nothing, and was retired.
    Deactivated(InactiveReason),
}

/// One wave of `W` lanes (32 or 64): per-lane VGPRs, exec mask, status and traversal state
/// `S` (owned by the traversal shader).
#[derive(Clone, Debug)]
pub struct Wave<const W: usize, S = ()> {
    /// Index of the wave in its dispatch; decides its TD (`wave::td`).
    pub index: u64,
    /// VGPR 0: the node pointer each lane asks for.
    pub node: [NodePointer; W],
    /// VGPRs 1-10: extent, origin, direction, inverse direction.
    pub ray: [LaneRay; W],
    /// Bit i set = lane i executes the next instruction.
    pub exec: u64,
    /// Why each lane is or is not active.
    pub status: [LaneStatus; W],
    /// Per-lane traversal state.
    pub state: [S; W],
}

/// The supported wave widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum WaveWidth {
    /// wave32.
    #[default]
    W32,
    /// wave64.
    W64,
}

impl WaveWidth {
    pub fn lanes(self) -> usize {
        match self {
            WaveWidth::W32 => 32,
            WaveWidth::W64 => 64,
        }
    }

    /// From 32 or 64.
    pub fn from_lanes(lanes: usize) -> Option<WaveWidth> {
        match lanes {
            32 => Some(WaveWidth::W32),
            64 => Some(WaveWidth::W64),
            _ => None,
        }
    }
}

const EMPTY_RAY: LaneRay = LaneRay {
    extent: 0.0,
    origin: [0.0; 3],
    dir: [0.0; 3],
    inv_dir: [0.0; 3],
};

impl<const W: usize, S: Default> Wave<W, S> {
    /// A wave with every lane off.
    pub fn new(index: u64) -> Self {
        assert!(W == 32 || W == 64, "waves have 32 or 64 lanes, not {W}");
        Wave {
            index,
            node: [NodePointer::INVALID; W],
            ray: [EMPTY_RAY; W],
            exec: 0,
            status: [LaneStatus::ExecOff; W],
            state: std::array::from_fn(|_| S::default()),
        }
    }
}

impl<const W: usize, S> Wave<W, S> {
    /// Turns lane `i` on with `node` and `ray`.
    pub fn activate(&mut self, i: usize, node: NodePointer, ray: LaneRay) {
        self.node[i] = node;
        self.ray[i] = ray;
        self.status[i] = LaneStatus::Active;
        self.exec |= 1 << i;
    }

    /// Turns lane `i` off with a reason.
    #[inline]
    pub fn retire(&mut self, i: usize, status: LaneStatus) {
        debug_assert!(status != LaneStatus::Active);
        self.status[i] = status;
        self.exec &= !(1u64 << i);
    }

    /// Number of lanes whose exec bit is set.
    pub fn active_lanes(&self) -> u32 {
        self.exec.count_ones()
    }
}

/// Whether `ray.inactive_reason()` is `None` (`semantics.md` 8): no NaN in any register and
/// a finite origin, tested on the magnitude bits (|x| > inf bits = NaN, >= inf bits = not
/// finite) with no early exits.
#[inline(always)]
pub fn ray_is_active(ray: &LaneRay) -> bool {
    const INF: u32 = 0x7f80_0000;
    let mag = |x: f32| x.to_bits() & 0x7fff_ffff;
    let origin = mag(ray.origin[0])
        .max(mag(ray.origin[1]))
        .max(mag(ray.origin[2]));
    let rest = mag(ray.dir[0])
        .max(mag(ray.dir[1]))
        .max(mag(ray.dir[2]))
        .max(mag(ray.inv_dir[0]))
        .max(mag(ray.inv_dir[1]))
        .max(mag(ray.inv_dir[2]))
        .max(mag(ray.extent));
    (origin < INF) & (rest <= INF)
}

/// The four dwords and the outcome of every lane of one wave instruction.
#[derive(Clone, Debug)]
pub struct WaveResults<const W: usize> {
    pub dwords: [[u32; 4]; W],
    pub outcome: [LaneOutcome; W],
}

impl<const W: usize> Default for WaveResults<W> {
    fn default() -> Self {
        WaveResults {
            dwords: [BOX_MISS; W],
            outcome: [LaneOutcome::Inactive(InactiveReason::NanExtent); W],
        }
    }
}

/// What one wave instruction cost, tallied over its lanes (the TD model charges it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstructionCost {
    /// Lanes that ran a box or triangle test: one TD clock each.
    pub clocks: u32,
    pub box_queries: u32,
    /// Box-query slots holding a real child.
    pub aabb_useful: u32,
    pub triangle_tests: u32,
    pub user_nodes: u32,
    pub out_of_bounds: u32,
    /// Lanes deactivated by NaN registers.
    pub nan: u32,
    /// Lanes deactivated by an infinite origin.
    pub inf_origin: u32,
}

/// Executes `image_bvh_intersect_ray` for whole waves: the memory, the descriptor, and an
/// optional cache of decoded box nodes.
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
/// pointer block `b` (`pointer >> 3`: a decoded box or a triangle copy), and
/// `triangles[64 b..64 b + 64]` the bytes of block `b`, cut so that every triangle pointer
/// inside passes the bounds check and is mapped. Entries exist only for nodes that passed
/// the same checks when the cache was built.
#[derive(Clone, Copy, Debug, Default)]
struct FastMap<'a> {
    boxes: &'a [CacheEntry],
    triangles: &'a [u8],
}

impl<'a> FastMap<'a> {
    /// Empty (everything takes the general fetch) when the image base is not a 64-byte block
    /// of memory at or after its start, or when addresses could wrap at 2^48.
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
                triangles: &memory.bytes[start..end],
            })
        };
        try_new().unwrap_or_default()
    }
}

enum Fetched<'a> {
    Box(&'a DecodedBox),
    /// A box node not in the cache: its bytes and type.
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
    /// cached, in bounds and mapped); `None` means: take [`Self::lane_general`].
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

    /// The 64 bytes of the triangle node a triangle pointer (types 0-3) names, when the
    /// direct lookup applies; `None` means: take [`Self::lane_general`].
    #[inline(always)]
    pub fn mapped_triangle(&self, node: NodePointer) -> Option<&'a [u8; 64]> {
        // The cache's copy (the line `prefetch` fetched), else the image.
        if let Some(t) = self
            .fast
            .boxes
            .get(node.address_64() as usize)
            .and_then(CacheEntry::triangle_copy)
        {
            return Some(t.bytes());
        }
        let offset = node.address_64() as usize * 64;
        self.fast
            .triangles
            .get(offset..offset + 64)?
            .try_into()
            .ok()
    }

    #[inline(always)]
    fn fetch(&self, ptr: NodePointer) -> Fetched<'a> {
        let ty = ptr.node_type();
        if out_of_bounds(&self.descriptor, ptr) {
            return Fetched::OutOfBounds;
        }
        if matches!(ty, NodeType::User6 | NodeType::User7) {
            return Fetched::User;
        }
        let Some(offset) = self.memory.offset(&self.descriptor, ptr, ty.fetch_bytes()) else {
            return Fetched::Unmapped;
        };
        let bytes: &'a [u8] = &self.memory.bytes[offset..offset + ty.fetch_bytes()];
        match ty {
            NodeType::BoxF32 | NodeType::BoxF16 => {
                if let Some(b) = self.cache.and_then(|c| c.get(ty, offset)) {
                    Fetched::Box(b)
                } else {
                    Fetched::BoxBytes(bytes, ty)
                }
            }
            _ => Fetched::Triangle(bytes),
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
            if let Some(b) = self.fast.triangles.get(block * 64) {
                prefetch_lines(b, 1);
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

    /// One lane on its own (scalar interface; the same code as [`Self::issue`]).
    pub fn lane(&self, node: NodePointer, ray: &LaneRay) -> ([u32; 4], LaneOutcome) {
        let mut wave: Wave<32> = Wave::new(0);
        wave.activate(0, node, *ray);
        let mut results = WaveResults::default();
        self.issue(&wave, &mut results);
        (results.dwords[0], results.outcome[0])
    }

    /// One lane through the general path, every case handled (inactive registers, bounds
    /// check, user nodes, unmapped memory, uncached boxes, any triangle), adding what it
    /// cost to `cost`.
    pub fn lane_general(
        &self,
        node: NodePointer,
        ray: &LaneRay,
        cost: &mut InstructionCost,
    ) -> ([u32; 4], LaneOutcome) {
        let ptr = node;
        let ty = ptr.node_type();
        if let Some(reason) = ray.inactive_reason() {
            if reason == InactiveReason::InfiniteOrigin {
                cost.inf_origin += 1;
            } else {
                cost.nan += 1;
            }
            return (miss_encoding(ty), LaneOutcome::Inactive(reason));
        }
        let mut dwords = BOX_MISS;
        let outcome = match self.fetch(ptr) {
            Fetched::OutOfBounds => {
                cost.out_of_bounds += 1;
                dwords = miss_encoding(ty);
                LaneOutcome::OutOfBounds
            }
            Fetched::Unmapped => {
                cost.out_of_bounds += 1;
                dwords = miss_encoding(ty);
                LaneOutcome::Unmapped
            }
            Fetched::User => {
                cost.user_nodes += 1;
                LaneOutcome::UserNode
            }
            Fetched::Box(b) => self.box_lane(b, ray, &mut dwords, cost),
            Fetched::BoxBytes(bytes, ty) => {
                let b = if ty == NodeType::BoxF32 {
                    DecodedBox::from_box32(bytes)
                } else {
                    DecodedBox::from_box16(bytes)
                };
                self.box_lane(&b, ray, &mut dwords, cost)
            }
            Fetched::Triangle(bytes) => {
                let k = ty.triangle_index().expect("triangle type");
                let mut batch = TriangleBatch::default();
                batch.push(bytes, k, ray);
                dwords = batch.run(self.descriptor.triangle_return_mode)[0];
                cost.triangle_tests += 1;
                LaneOutcome::Tested
            }
        };
        (dwords, outcome)
    }

    /// One lane's box query of a decoded node, counted in `cost`.
    #[inline(always)]
    fn box_lane(
        &self,
        node: &DecodedBox,
        ray: &LaneRay,
        out: &mut [u32; 4],
        cost: &mut InstructionCost,
    ) -> LaneOutcome {
        let sort = self.descriptor.box_sort_enable;
        box_query(node, ray, self.grow, sort, bytemuck::cast_mut(out));
        cost.box_queries += 1;
        cost.aabb_useful += node.useful_slots();
        LaneOutcome::Tested
    }

    /// Runs the instruction for every lane in `wave.exec`; lanes off exec are untouched in
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
        let flush =
            |batch: &TriangleBatch, batch_lane: &[usize; LANES], out: &mut WaveResults<W>| {
                let dwords = batch.run(mode);
                for (j, &i) in batch_lane.iter().enumerate().take(batch.len()) {
                    out.dwords[i] = dwords[j];
                }
            };
        let mut exec = wave.exec;
        while exec != 0 {
            let i = exec.trailing_zeros() as usize;
            exec &= exec - 1;
            let ray = &wave.ray[i];
            let node = wave.node[i];
            // Screen first (cheap, branch-predictable); the general path says why a lane
            // is off.
            if ray_is_active(ray) {
                if let Some(b) = self.cached_box(node) {
                    out.outcome[i] = self.box_lane(b, ray, &mut out.dwords[i], &mut cost);
                    continue;
                }
                if node.is_triangle() {
                    if let Some(bytes) = self.mapped_triangle(node) {
                        batch_lane[batch.len()] = i;
                        batch.push(bytes, node.triangle_index(), ray);
                        out.outcome[i] = LaneOutcome::Tested;
                        cost.triangle_tests += 1;
                        if batch.is_full() {
                            flush(&batch, &batch_lane, out);
                            batch.clear();
                        }
                        continue;
                    }
                }
            }
            let (dwords, outcome) = self.lane_general(node, ray, &mut cost);
            out.dwords[i] = dwords;
            out.outcome[i] = outcome;
        }
        if !batch.is_empty() {
            flush(&batch, &batch_lane, out);
        }
        cost.clocks = cost.box_queries + cost.triangle_tests;
        cost
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
                let image: &[u8; 64] = mem[64 * block..64 * block + 64].try_into().unwrap();
                assert_eq!(wi.mapped_triangle(p), Some(image), "child {c}");
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

    /// The bit screen agrees with `inactive_reason` when any one register holds a special
    /// value (NaN, ±inf, ±0, the largest finite, the smallest subnormal).
    #[test]
    fn active_screen_matches_inactive_reason() {
        let specials = [
            1.5,
            -0.0,
            0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::from_bits(1),
        ];
        let base = LaneRay {
            extent: 10.0,
            origin: [1.0, 2.0, 3.0],
            dir: [0.5, -0.5, 1.0],
            inv_dir: [2.0, -2.0, 1.0],
        };
        let mut cases = 0;
        for reg in 0..10 {
            for &v in &specials {
                let mut r = base;
                match reg {
                    0 => r.extent = v,
                    1..=3 => r.origin[reg - 1] = v,
                    4..=6 => r.dir[reg - 4] = v,
                    _ => r.inv_dir[reg - 7] = v,
                }
                assert_eq!(ray_is_active(&r), r.inactive_reason().is_none(), "{r:?}");
                cases += 1;
            }
        }
        assert_eq!(cases, 90);
    }
}
