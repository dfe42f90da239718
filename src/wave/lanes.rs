//! `Wave<W>`: the lanes of one wave32 or wave64, their ray VGPRs, exec mask and state, and
//! the wave instruction that runs `image_bvh_intersect_ray` for every active lane.

use super::intersector::{
    box_query, grow_factor, out_of_bounds, prefetch_lines, triangle_query_x4, BvhMemory,
    DecodedBox, LaneRay, NodeCache, TriangleLane, BOX_MISS, LANES,
};
use crate::hw::descriptor::BvhDescriptor;
use crate::hw::instruction::{miss_encoding, InactiveReason, LaneOutcome};
use crate::hw::pointer::{NodePointer, NodeType};

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
    pub node: [u32; W],
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
    pub fn activate(&mut self, i: usize, node: u32, ray: LaneRay) {
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
fn ray_is_active(ray: &LaneRay) -> bool {
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
        }
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

    /// Hints the CPU to load the node `ptr` names (no effect on results): called by
    /// traversals as soon as a lane's next node is known, so that the load overlaps the
    /// other lanes' work.
    #[inline]
    pub fn prefetch(&self, ptr: u32) {
        let ptr = NodePointer::from_u32(ptr);
        let ty = ptr.node_type();
        let Some(offset) = self.memory.offset(&self.descriptor, ptr, 64) else {
            return;
        };
        match (ty.is_box(), self.cache) {
            (true, Some(cache)) => cache.prefetch(offset),
            _ => prefetch_lines(self.memory.bytes[offset..].as_ptr(), 1),
        }
    }

    /// One lane on its own (scalar interface; the same code path as [`Self::issue`]).
    pub fn lane(&self, node: u32, ray: &LaneRay) -> ([u32; 4], LaneOutcome) {
        let mut wave: Wave<32> = Wave::new(0);
        wave.activate(0, node, *ray);
        let mut results = WaveResults::default();
        self.issue(&wave, &mut results);
        (results.dwords[0], results.outcome[0])
    }

    /// Runs the instruction for every lane in `wave.exec`; lanes off exec are untouched in
    /// `out`. Returns what it cost.
    pub fn issue<const W: usize, S>(
        &self,
        wave: &Wave<W, S>,
        out: &mut WaveResults<W>,
    ) -> InstructionCost {
        let mut cost = InstructionCost::default();
        let mut tri_lanes = [TriangleLane::default(); LANES];
        let mut tri_index = [0usize; LANES];
        let mut tri_count = 0;
        let mode = self.descriptor.triangle_return_mode;
        let sort = self.descriptor.box_sort_enable;
        let mut exec = wave.exec;
        while exec != 0 {
            let i = exec.trailing_zeros() as usize;
            exec &= exec - 1;
            let ray = &wave.ray[i];
            let ptr = NodePointer::from_u32(wave.node[i]);
            let ty = ptr.node_type();
            // Screen first (cheap, branch-predictable); only a failing lane asks why.
            let reason = if ray_is_active(ray) {
                None
            } else {
                ray.inactive_reason()
            };
            if let Some(reason) = reason {
                out.dwords[i] = miss_encoding(ty);
                out.outcome[i] = LaneOutcome::Inactive(reason);
                if reason == InactiveReason::InfiniteOrigin {
                    cost.inf_origin += 1;
                } else {
                    cost.nan += 1;
                }
                continue;
            }
            match self.fetch(ptr) {
                fetched @ (Fetched::OutOfBounds | Fetched::Unmapped) => {
                    out.dwords[i] = miss_encoding(ty);
                    out.outcome[i] = if matches!(fetched, Fetched::OutOfBounds) {
                        LaneOutcome::OutOfBounds
                    } else {
                        LaneOutcome::Unmapped
                    };
                    cost.out_of_bounds += 1;
                }
                Fetched::User => {
                    out.dwords[i] = [u32::MAX; 4];
                    out.outcome[i] = LaneOutcome::UserNode;
                    cost.user_nodes += 1;
                }
                Fetched::Box(node) => {
                    box_query(node, ray, self.grow, sort, &mut out.dwords[i]);
                    out.outcome[i] = LaneOutcome::Tested;
                    cost.box_queries += 1;
                    cost.aabb_useful += node.useful_slots();
                }
                Fetched::BoxBytes(bytes, ty) => {
                    let node = if ty == NodeType::BoxF32 {
                        DecodedBox::from_box32(bytes)
                    } else {
                        DecodedBox::from_box16(bytes)
                    };
                    box_query(&node, ray, self.grow, sort, &mut out.dwords[i]);
                    out.outcome[i] = LaneOutcome::Tested;
                    cost.box_queries += 1;
                    cost.aabb_useful += node.useful_slots();
                }
                Fetched::Triangle(bytes) => {
                    let k = ty.triangle_index().expect("triangle type");
                    tri_lanes[tri_count].gather(bytes, k, ray);
                    tri_index[tri_count] = i;
                    tri_count += 1;
                    out.outcome[i] = LaneOutcome::Tested;
                    cost.triangle_tests += 1;
                    if tri_count == LANES {
                        self.flush_triangles(&tri_lanes, &tri_index, mode, out);
                        tri_count = 0;
                    }
                }
            }
        }
        if tri_count > 0 {
            self.flush_triangles(&tri_lanes[..tri_count], &tri_index[..tri_count], mode, out);
        }
        cost.clocks = cost.box_queries + cost.triangle_tests;
        cost
    }

    #[inline]
    fn flush_triangles<const W: usize>(
        &self,
        lanes: &[TriangleLane],
        index: &[usize],
        mode: crate::hw::descriptor::TriangleReturnMode,
        out: &mut WaveResults<W>,
    ) {
        triangle_query_x4(lanes, mode, index, &mut out.dwords);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
