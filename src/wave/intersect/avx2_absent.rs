//! The AVX2 kernels' signatures off x86-64, where no [`Avx2`] value exists: each is
//! unreachable, so that the wave loop compiles unchanged on every target.

use super::{BoxResult, DecodedBox, EightStarts, LaneRay, RayColumns, TriangleRay, BATCH_LANES};
use crate::hw::descriptor::TriangleReturnMode;
use crate::hw::{NodePointer, TriangleNode};
use crate::math::Ray;
use crate::wave::isa::Avx2;

impl Avx2 {
    pub fn box_query_pair(
        self,
        _: [&DecodedBox; 2],
        _: [&LaneRay; 2],
        _: f32,
        _: bool,
        _: bool,
        _: [&mut [NodePointer; 4]; 2],
    ) -> Option<[u32; 2]> {
        match self {}
    }

    pub fn box_query_eight(
        self,
        _: &DecodedBox,
        _: &RayColumns,
        _: usize,
        _: f32,
        _: &mut [BoxResult],
    ) -> bool {
        match self {}
    }

    pub fn box_query_eight_nodes(
        self,
        _: &[&DecodedBox; 8],
        _: &RayColumns,
        _: usize,
        _: f32,
        _: &mut [BoxResult],
    ) {
        match self {}
    }

    pub fn eight_lanes_at_one_node(self, _: &[NodePointer], _: usize) -> bool {
        match self {}
    }

    pub fn triangle_query_eight(
        self,
        _: &TriangleNode,
        _: usize,
        _: &RayColumns,
        _: usize,
        _: TriangleReturnMode,
    ) -> [[u32; 4]; BATCH_LANES] {
        match self {}
    }

    pub fn start_eight(self, _: &[Ray; 8], _: &mut RayColumns, _: usize) -> Option<EightStarts> {
        match self {}
    }
}

impl TriangleRay {
    pub fn rotated_avx2(isa: Avx2, _: u32, _: &Ray, _: &mut TriangleRay) {
        match isa {}
    }
}
