//! The exact hardware: descriptor, node pointers, node formats, the scalar reference
//! `image_bvh_intersect_ray`, and the documented peak tables.
//!
//! Pure: no I/O, no threads, no globals. Specs: `../shared/spec/rt-hardware.md` and
//! `../shared/spec/semantics.md` (section 12 is the law here).

pub mod a16;
pub mod box_test;
pub mod descriptor;
pub mod ij;
pub mod instance;
pub mod instruction;
pub mod node;
pub mod peak;
pub mod pointer;
pub mod triangle;

pub use a16::RayRegistersA16;
pub use box_test::{intersect_box, intersect_box_node, sort_children, BoxRay, BoxTest};
pub use descriptor::{BvhDescriptor, TriangleReturnMode};
pub use ij::{ij_nibble, IjControl};
pub use instance::{
    GeometryFlags, InstanceFlags, InstanceNode, ProceduralNode, INSTANCE_NODE_TYPE,
    PROCEDURAL_NODE_TYPE,
};
pub use instruction::{
    image_bvh64_intersect_ray, image_bvh64_intersect_ray_a16, image_bvh_intersect_ray,
    image_bvh_intersect_ray_a16, miss_encoding, InactiveReason, IntersectResult, LaneOutcome,
    MappedMemory, NodeMemory, RayRegisters,
};
pub use node::{BoxNodeF16, BoxNodeF32, TriangleNode, TRIANGLE_VERTICES};
pub use peak::{ConsoleConfig, SERIES_S, SERIES_X};
pub use pointer::{NodePointer, NodePointer64, NodeType};
pub use triangle::{intersect_triangle, TriangleTest, TRIANGLE_MISS};
