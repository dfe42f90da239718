//! The reference `image_bvh_intersect_ray` instruction: scalar, bit-exact to
//! `../shared/spec/semantics.md` section 12. Every fast path in the crate is tested against it.
//!
//! Order of decisions for one lane (section 12):
//!
//! 1. inactive lane (NaN in origin, dir, inv_dir or extent, or an infinite origin): the miss
//!    encoding for the node type, [`LaneOutcome::Inactive`] (`semantics.md` 8);
//! 2. bounds check: `node_addr > size`, or `node_addr + 1 > size` for box32: the miss
//!    encoding, [`LaneOutcome::OutOfBounds`] (3.3);
//! 3. user node (types 6, 7): `4 x 0xFFFFFFFF`, [`LaneOutcome::UserNode`] (3.2);
//! 4. node fetch; outside the given memory: the miss encoding, [`LaneOutcome::Unmapped`];
//! 5. the box test ([`box_test`](super::box_test)) or the triangle test
//!    ([`triangle`](super::triangle)).
//!
//! Miss encodings: box `4 x 0xFFFFFFFF`, triangle `{+inf, 1.0, 0, 0}`, user `4 x 0xFFFFFFFF`.

use bytemuck::pod_read_unaligned;

use super::a16::RayRegistersA16;
use super::box_test::{child_boxes_f16, child_boxes_f32, intersect_box_node, BoxRay};
use super::descriptor::{BvhDescriptor, TriangleReturnMode};
use super::node::{BoxNodeF16, BoxNodeF32, TriangleNode};
use super::pointer::{NodePointer, NodePointer64, NodeType};
use super::triangle::{barycentric_result, intersect_triangle, triangle_id_result, TRIANGLE_MISS};

/// The ray VGPRs of one lane (A16 = 0): extent, origin, direction, inverse direction, in
/// register order (ten f32, no padding: vector code may load four consecutive registers).
#[repr(C)]
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

const _: () = {
    assert!(std::mem::size_of::<RayRegisters>() == 40);
    assert!(std::mem::offset_of!(RayRegisters, origin) == 4);
    assert!(std::mem::offset_of!(RayRegisters, dir) == 16);
    assert!(std::mem::offset_of!(RayRegisters, inv_dir) == 28);
};

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
///
/// ```
/// use wavetrace::hw::{image_bvh_intersect_ray, BoxNodeF32, BvhDescriptor, LaneOutcome, RayRegisters};
/// let unit = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
/// let far = [5.0, 0.0, 0.0, 6.0, 1.0, 1.0];
/// use wavetrace::hw::NodePointer;
/// let children = [0x10, 0x20, 0x30, 0x40].map(NodePointer::from_u32);
/// let node = BoxNodeF32 { children, boxes: [far, unit, [9.0; 6], far], user: [0; 4] };
/// let ray = RayRegisters {
///     extent: f32::INFINITY,
///     origin: [-1.0, 0.5, 0.5],
///     dir: [1.0, 0.0, 0.0],
///     inv_dir: [1.0, f32::INFINITY, f32::INFINITY],
/// };
/// // Pointer 5 = box32 node at address 0; sorted nearest first, misses last.
/// let r = image_bvh_intersect_ray(bytemuck::bytes_of(&node), &BvhDescriptor::default(), 5, &ray);
/// assert_eq!(r.dwords, [0x20, 0x10, 0x40, 0xFFFF_FFFF]);
/// assert_eq!(r.outcome, LaneOutcome::Tested);
/// ```
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
    memory: &M,
    descriptor: &BvhDescriptor,
    node_pointer: u64,
    ray: &RayRegisters,
) -> IntersectResult {
    let pointer = NodePointer64::from_u64(node_pointer);
    let ty = pointer.node_type();
    let miss = miss_encoding(ty);
    let done = |dwords, outcome| IntersectResult { dwords, outcome };

    if let Some(reason) = ray.inactive_reason() {
        return done(miss, LaneOutcome::Inactive(reason));
    }
    if !in_bounds(descriptor, pointer) {
        return done(miss, LaneOutcome::OutOfBounds);
    }
    if matches!(ty, NodeType::User6 | NodeType::User7) {
        return done(USER_NODE_RESULT, LaneOutcome::UserNode);
    }
    let address = pointer.fetch_address(descriptor.base_address_256);
    let Some(bytes) = memory.node_bytes(address, ty.fetch_bytes()) else {
        return done(miss, LaneOutcome::Unmapped);
    };
    let box_ray = BoxRay {
        origin: ray.origin,
        inv_dir: ray.inv_dir,
        extent: ray.extent,
    };
    let grow = descriptor.box_grow_ulps;
    let sort = descriptor.box_sort_enable;
    let dwords = match ty {
        NodeType::BoxF32 => {
            let node: BoxNodeF32 = pod_read_unaligned(bytes);
            intersect_box_node(node.children, &child_boxes_f32(&node), &box_ray, grow, sort)
                .map(NodePointer::to_u32)
        }
        NodeType::BoxF16 => {
            let node: BoxNodeF16 = pod_read_unaligned(bytes);
            intersect_box_node(node.children, &child_boxes_f16(&node), &box_ray, grow, sort)
                .map(NodePointer::to_u32)
        }
        _ => {
            let k = ty.triangle_index().expect("types 0-3 are triangles");
            let node: TriangleNode = pod_read_unaligned(bytes);
            let [v0, v1, v2] = node.triangle(k);
            let test = intersect_triangle(v0, v1, v2, ray.origin, ray.dir);
            match descriptor.triangle_return_mode {
                TriangleReturnMode::TriangleId => triangle_id_result(&test, node.word, k),
                TriangleReturnMode::Barycentrics => barycentric_result(&test, node.word, k),
            }
        }
    };
    done(dwords, LaneOutcome::Tested)
}

/// `image_bvh_intersect_ray` with A16 = 1 and a 32-bit node pointer (`semantics.md` 9): the
/// halves are widened exactly and the same test runs.
pub fn image_bvh_intersect_ray_a16<M: NodeMemory + ?Sized>(
    memory: &M,
    descriptor: &BvhDescriptor,
    node_pointer: u32,
    ray: &RayRegistersA16,
) -> IntersectResult {
    image_bvh64_intersect_ray(memory, descriptor, node_pointer as u64, &ray.unpack())
}

/// `image_bvh64_intersect_ray` with A16 = 1.
pub fn image_bvh64_intersect_ray_a16<M: NodeMemory + ?Sized>(
    memory: &M,
    descriptor: &BvhDescriptor,
    node_pointer: u64,
    ray: &RayRegistersA16,
) -> IntersectResult {
    image_bvh64_intersect_ray(memory, descriptor, node_pointer, &ray.unpack())
}

/// What a user node (types 6, 7) returns: all ones (`semantics.md` 3.2).
pub const USER_NODE_RESULT: [u32; 4] = [0xFFFF_FFFF; 4];

/// What a box node returns when no child is hit: four INVALID pointers (5.6).
pub const BOX_MISS: [u32; 4] = [NodePointer::INVALID.to_u32(); 4];

/// The miss encoding for a node type (section 12 "miss"): box and user `4 x 0xFFFFFFFF`,
/// triangle `{+inf, 1.0, 0, 0}`.
pub fn miss_encoding(ty: NodeType) -> [u32; 4] {
    match ty {
        NodeType::BoxF16 | NodeType::BoxF32 => BOX_MISS,
        NodeType::User6 | NodeType::User7 => USER_NODE_RESULT,
        _ => TRIANGLE_MISS,
    }
}

/// The descriptor's bounds check (`semantics.md` 3.3, section 12 choice): the node address
/// (64-byte units) must not exceed `size_minus_one`; a box32 node also needs its second
/// 64-byte half inside.
pub fn in_bounds(descriptor: &BvhDescriptor, pointer: NodePointer64) -> bool {
    let address = pointer.address_64();
    let last = if pointer.node_type() == NodeType::BoxF32 {
        address.checked_add(1)
    } else {
        Some(address)
    };
    matches!(last, Some(last) if last <= descriptor.size_minus_one)
}

impl RayRegisters {
    /// Why this ray makes its lane inactive, if it does (`semantics.md` 8): a NaN in any
    /// register, or an infinite origin component. Infinities in dir, inv_dir or extent are
    /// valid inputs.
    pub fn inactive_reason(&self) -> Option<InactiveReason> {
        let any_nan = |v: &[f32; 3]| v.iter().any(|x| x.is_nan());
        if any_nan(&self.origin) {
            Some(InactiveReason::NanOrigin)
        } else if self.origin.iter().any(|x| x.is_infinite()) {
            Some(InactiveReason::InfiniteOrigin)
        } else if any_nan(&self.dir) {
            Some(InactiveReason::NanDirection)
        } else if any_nan(&self.inv_dir) {
            Some(InactiveReason::NanInverseDirection)
        } else if self.extent.is_nan() {
            Some(InactiveReason::NanExtent)
        } else {
            None
        }
    }
}
