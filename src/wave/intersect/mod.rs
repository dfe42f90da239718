//! The SIMD intersector's kernels: the box and triangle tests of `image_bvh_intersect_ray`
//! for many lanes at once, and the node cache they read.
//!
//! Bit-identical to the scalar reference [`crate::hw::image_bvh_intersect_ray`]
//! (`../shared/spec/semantics.md` section 12); `tests/wave_simd.rs` and
//! `tests/wave_kernels.rs` check this on millions of seeded random lanes. The portable
//! kernels are built on `wide::f32x4` ([`LANES`] = 4), which `wide` maps to SSE, NEON or
//! WASM SIMD, or plain arrays; the AVX2 kernels take an [`Avx2`](crate::wave::isa::Avx2)
//! token. No AVX-512 or FMA assumption.
//!
//! - A box query tests the lane's four child boxes at once: vector element c is child c
//!   ([`box_query`](fn@box_query)). The AVX2 kernels test two lanes
//!   ([`Avx2::box_query_pair`]) or eight lanes at once, at one node or at eight
//!   ([`Avx2::box_query_eight`], [`Avx2::box_query_eight_nodes`]), one lane per vector
//!   element.
//! - Triangle queries are gathered across lanes ([`TriangleBatch`]): vector element j is the
//!   j-th lane that asked for a triangle, four lanes per test (eight in the AVX2 build); eight
//!   lanes at one triangle are tested straight from their ray columns
//!   ([`Avx2::triangle_query_eight`]).
//!
//! All arithmetic is f32, one rounding per operation, no FMA (`wide`'s `+ - *` are plain
//! IEEE operations; `mul_add` is never used). minNum/maxNum (NaN dropped) come from `wide`'s
//! `min`/`max`, which are NaN-ignoring on every backend (STYLE.md "Traps"); the raw
//! `fast_min`/`fast_max` (x86 `minps`/`maxps`, which return the second operand on NaN) are
//! used only where no operand can be NaN (the ordered-node path, once a probe or the lane's
//! slope flag has ruled NaN products out). `tests/wave_simd.rs` pins this choice.
//!
//! Box nodes are pre-decoded once into [`DecodedBox`] (an exact re-layout: f32 copied, f16
//! widened exactly) by [`NodeCache`], so that the hot loop loads six aligned vectors instead
//! of transposing 24 scalars.
//!
//! [`Avx2::box_query_pair`]: crate::wave::isa::Avx2::box_query_pair
//! [`Avx2::box_query_eight`]: crate::wave::isa::Avx2::box_query_eight
//! [`Avx2::box_query_eight_nodes`]: crate::wave::isa::Avx2::box_query_eight_nodes
//! [`Avx2::triangle_query_eight`]: crate::wave::isa::Avx2::triangle_query_eight

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(not(target_arch = "x86_64"))]
mod avx2_absent;
#[cfg(target_arch = "x86_64")]
mod box_avx2;
mod box_query;
mod decoded_box;
mod memory;
mod node_cache;
mod ray_columns;
mod stack_write;
#[cfg(target_arch = "x86_64")]
mod start_avx2;
#[cfg(target_arch = "x86_64")]
mod triangle_avx2;
mod triangle_batch;
mod triangle_ray;
mod triangle_test;

pub(crate) use box_query::box_pointer_mask;
#[cfg(target_arch = "x86_64")]
pub(crate) use box_query::box_pointer_mask_avx2;
pub use box_query::box_query;
pub use decoded_box::DecodedBox;
pub use memory::{prefetch_lines, prefetch_two_lines, BvhMemory};
pub(crate) use node_cache::CacheEntry;
pub use node_cache::NodeCache;
pub use ray_columns::RayColumns;
pub(crate) use stack_write::write_reversed_prefix;
#[cfg(target_arch = "x86_64")]
pub(crate) use stack_write::write_reversed_prefix_avx2;
pub use triangle_batch::TriangleBatch;
pub use triangle_ray::{dominant_rotation, TriangleRay, ROTATIONS};

use crate::hw::NodePointer;

/// CPU SIMD width of the portable intersector (f32 elements per vector).
pub const LANES: usize = 4;

/// Most triangle queries a [`TriangleBatch`] holds: eight, for the AVX2 build's test of
/// eight at once; the portable test runs [`LANES`] at a time.
pub const BATCH_LANES: usize = 8;

/// The bits of [`NodePointer::INVALID`], for the vector code that handles pointers as
/// plain 32-bit elements.
const INVALID_BITS: u32 = NodePointer::INVALID.to_u32();

/// One lane's ray VGPRs 1-10 (A16 = 0): the scalar reference's register type.
pub type LaneRay = crate::hw::instruction::RayRegisters;

/// One lane's box query result: the four child pointers (nearest first when sorting is on,
/// missed or empty slots INVALID) and the mask of the entries that hold a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxResult {
    pub children: [NodePointer; 4],
    /// Bit c set = `children[c]` is a child (with sorting on, always a prefix).
    pub valid: u32,
}

impl BoxResult {
    /// All bits zero: a placeholder for a result not yet written.
    pub const ZERO: BoxResult = BoxResult {
        children: [NodePointer::from_u32(0); 4],
        valid: 0,
    };
}

impl Default for BoxResult {
    fn default() -> Self {
        BoxResult {
            children: [NodePointer::INVALID; 4],
            valid: 0,
        }
    }
}

/// What [`Avx2::start_eight`](crate::wave::isa::Avx2::start_eight) computed for eight lanes,
/// element k for lane k.
#[derive(Clone, Copy, Debug)]
pub struct EightStarts {
    /// The driver's inverse directions (x, y, z), one IEEE division each.
    pub inv_dir: [[f32; 8]; 3],
    /// Each ray's dominant axis (0, 1 or 2: the row of [`ROTATIONS`]).
    pub axes: [u32; 8],
    /// Bit k set = lane k's inverse direction is finite and not zero in every component.
    pub finite_slopes: u32,
}

#[cfg(test)]
pub(crate) mod test_rng {
    /// Seeded xorshift64 generator for the unit tests.
    pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// A ray of extent 10 with direction, then origin, drawn from `unit`, and the inverse
    /// direction a driver computes.
    pub(crate) fn random_ray(unit: &mut impl FnMut() -> f32) -> super::LaneRay {
        let dir = [unit(), unit(), unit()];
        super::LaneRay {
            extent: 10.0,
            origin: [unit(), unit(), unit()],
            dir,
            inv_dir: dir.map(|d| 1.0 / d),
        }
    }
}
