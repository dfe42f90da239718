//! Hardware-agnostic build: a binary BVH over primitive references by binned SAH, built in
//! parallel with rayon, with the SAH-optimal collapse costs to a 4-wide tree computed on the
//! way back up (see [`super::collapse`]).
//!
//! - `prim_ref`: the references ([`PrimRef`]), one per finite triangle.
//! - `tree`: the binary tree ([`BinaryTree`] of [`Node2`], leaves as [`LEAF`] references).
//! - `cost`: the SAH costs ([`C_BOX`], [`C_TRI`], [`half_area`]) and each node's collapse
//!   choice ([`collapse_choice`]).
//! - `recurse`: the recursive build ([`build_binary`]): each node's split, written into its
//!   node range, its two sides built as rayon tasks when large.
//! - the split searches: `binning` (binned SAH, sampled on large nodes), `small` (exact SAH
//!   sweep of small nodes), `partition` (the references moved to their sides).
//!
//! Layout: only inner nodes are stored. The subtree over `m` references (`m >= 2`) owns the
//! inner-node index range `[n, n + m - 1)`: itself, then the left subtree's range, then the
//! right subtree's; a child with a single reference is not a node but a leaf reference
//! ([`LEAF`] | its index in the reordered reference array), with the reference's own bounds.
//! (After [`super::optimize`] moves subtrees, the ranges no longer hold; the collapse follows
//! child references and needs only [`BinaryTree::subtree_sizes`].)
//!
//! Determinism: every subtree writes only into its own node range and its own slice of
//! references, so the result does not depend on how rayon schedules the work; the range
//! structure fills the node array exactly (no holes).
//!
//! Large nodes (at least `SAMPLED_BINNING` references) choose their split from bins of
//! every `SAMPLE_STRIDE`-th reference (as Embree-style builders do at the top levels: the
//! SAH of the dragon, bunny and sponza stays within 1 %), and take their children's exact
//! bounds from the partition pass.
//!
//! Hot loop: no heap allocation per node. Bins live on the stack, references are partitioned
//! in place, small nodes sort keys and indices on the stack.

mod binning;
mod cost;
mod partition;
mod prim_ref;
mod recurse;
mod small;
mod tree;

pub use binning::BINS;
pub use cost::{collapse_choice, half_area, leaf_costs, CollapseChoice, CollapseCosts};
pub use cost::{C_BOX, C_TRI};
pub use prim_ref::{triangle_refs, PrimRef};
pub use recurse::build_binary;
pub use tree::{BinaryTree, Node2, COLLAPSE_PARALLEL, LEAF};

use glam::Vec3A;

/// An axis-aligned box, or the bounds of a set of (doubled) centroids: `(min, max)`.
pub type Bounds = (Vec3A, Vec3A);

/// The empty box: `min` +inf, `max` -inf (the identity of the union).
pub const EMPTY_BOUNDS: Bounds = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);

/// One side of a split: the bounds of its references and, when the pass that split them
/// gathered them, their centroid bounds (passed down to spare the child a pass).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Side {
    pub bounds: Bounds,
    pub centroids: Option<Bounds>,
}

/// A split of a node's references, reordered so that the first `left_count` go left.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Split {
    pub left: Side,
    pub right: Side,
    pub left_count: usize,
}

/// A seeded xorshift generator for the tests of the build.
#[cfg(test)]
struct Rng(u64);

#[cfg(test)]
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A coordinate on a coarse grid, so that centroids often tie.
    fn coordinate(&mut self) -> f32 {
        (self.next() % 5) as f32 * 0.5
    }
}
