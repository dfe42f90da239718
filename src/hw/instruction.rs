//! The reference `image_bvh_intersect_ray` instruction: scalar, bit-exact to
//! `../shared/spec/semantics.md` section 12. Every fast path in the crate is tested against it.
//!
//! (Interface fixed; the implementation is being written.)

use super::descriptor::BvhDescriptor;

/// The ray VGPRs of one lane (A16 = 0): extent, origin, direction, inverse direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayRegisters {
    /// VGPR 1: the largest t at which a box counts as hit.
    pub extent: f32,
    /// VGPRs 2-4.
    pub origin: [f32; 3],
    /// VGPRs 5-7.
    pub dir: [f32; 3],
    /// VGPRs 8-10; infinities are valid where a direction component is 0.
    pub inv_dir: [f32; 3],
}

/// Why a lane's ray makes it inactive (`semantics.md` 8): such a lane returns the miss
/// encoding and costs nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InactiveReason {
    NanOrigin,
    NanDirection,
    NanInverseDirection,
    NanExtent,
    InfiniteOrigin,
}

/// What happened on the lane, for the cost model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneOutcome {
    /// A box or triangle test ran (one TD clock).
    Tested,
    /// User node (types 6/7): all ones returned.
    UserNode,
    /// The ray deactivated the lane; nothing fetched, nothing charged.
    Inactive(InactiveReason),
    /// The node address failed the descriptor's bounds check (`semantics.md` 3.3).
    OutOfBounds,
    /// The node address is inside `size` but outside the memory given to the model.
    Unmapped,
}

/// The four returned dwords and what happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntersectResult {
    pub dwords: [u32; 4],
    pub outcome: LaneOutcome,
}

/// Memory the instruction fetches nodes from.
pub trait NodeMemory {
    /// `len` bytes at `byte_address`, or `None` when not mapped.
    fn node_bytes(&self, byte_address: u64, len: usize) -> Option<&[u8]>;
}

/// A byte slice is memory starting at address 0.
impl NodeMemory for [u8] {
    fn node_bytes(&self, byte_address: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(byte_address).ok()?;
        self.get(start..start.checked_add(len)?)
    }
}

/// Bytes mapped at virtual address `va`.
#[derive(Clone, Copy, Debug)]
pub struct MappedMemory<'a> {
    pub va: u64,
    pub bytes: &'a [u8],
}

impl NodeMemory for MappedMemory<'_> {
    fn node_bytes(&self, byte_address: u64, len: usize) -> Option<&[u8]> {
        self.bytes
            .node_bytes(byte_address.checked_sub(self.va)?, len)
    }
}

/// `image_bvh_intersect_ray` with a 32-bit node pointer.
pub fn image_bvh_intersect_ray<M: NodeMemory + ?Sized>(
    memory: &M,
    descriptor: &BvhDescriptor,
    node_pointer: u32,
    ray: &RayRegisters,
) -> IntersectResult {
    image_bvh64_intersect_ray(memory, descriptor, node_pointer as u64, ray)
}

/// `image_bvh64_intersect_ray`: the same with a 64-bit node pointer.
pub fn image_bvh64_intersect_ray<M: NodeMemory + ?Sized>(
    _memory: &M,
    _descriptor: &BvhDescriptor,
    _node_pointer: u64,
    _ray: &RayRegisters,
) -> IntersectResult {
    unimplemented!("being written")
}
