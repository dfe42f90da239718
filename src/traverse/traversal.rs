//! The traversal strategy: what a lane's shader does with the dwords the instruction returns.

use super::LaneHit;
use crate::counters::ShaderCounters;
use crate::hw::NodePointer;
use crate::wave::intersect::LaneRay;
use crate::wave::isa::Isa;

/// What changed in a lane's registers when the shader handled a user node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterChange {
    /// Nothing.
    Kept,
    /// The extent (an accepted procedural hit).
    Extent,
    /// Origin, direction and inverse direction (the ray entered an instance).
    Ray,
}

/// What the shader made of a user node: the lane's next node (`None`: the lane is done)
/// and what changed in its registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserNodeStep {
    pub next: Option<NodePointer>,
    pub registers: RegisterChange,
}

/// A lane's world-space ray, saved while it traverses an instance's BLAS.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WorldRay {
    pub origin: [f32; 3],
    pub dir: [f32; 3],
    pub inv_dir: [f32; 3],
}

/// A traversal strategy: the per-lane part of a traversal shader.
///
/// `Lane` is the lane's private state (its stack, trail, ...). The wave loops call
/// [`Traversal::begin`] once per ray, then after each instruction either
/// [`Traversal::after_box`] (the lane asked for a box node) or [`Traversal::after_leaf`]
/// (triangle, user or failed node), and stop the lane when they return `None`.
pub trait Traversal: Sync {
    type Lane: Default + Send;

    /// Short name for reports ("full-stack").
    fn name(&self) -> &'static str;

    /// Resets `lane` for a new ray; returns the first node to ask for.
    fn begin(&self, lane: &mut Self::Lane, root: NodePointer) -> NodePointer;

    /// The lane's box query returned `children` (nearest first when sorting is on, missed
    /// and empty slots INVALID). Returns the next node, or `None` when the lane is done.
    fn after_box(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
    ) -> Option<NodePointer>;

    /// [`Traversal::after_box`] when the caller knows which entries of `children` are valid
    /// (bit c set = `children[c]` is a child, `valid < 16`), as the vector box tests do, in
    /// code compiled for instruction set `isa` (a strategy may use its vector primitives).
    /// The same lane state and result as `after_box`.
    #[inline(always)]
    fn after_box_masked<I: Isa>(
        &self,
        isa: I,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
        valid: u32,
    ) -> Option<NodePointer> {
        let _ = (isa, valid);
        self.after_box(lane, node, children)
    }

    /// The lane's leaf (triangle, user node, or a node that failed) is done. Returns the next
    /// node, or `None` when the lane is done.
    fn after_leaf(&self, lane: &mut Self::Lane, node: NodePointer) -> Option<NodePointer>;

    /// Current stack depth (entries), for `trav.max_stack_depth`.
    fn stack_depth(&self, lane: &Self::Lane) -> usize;

    /// Whether a block of eight lanes that take the same steps may keep one lane's state for
    /// all eight. The AVX2 wave loop then does the first lane's stack work alone for the
    /// block while its lanes ask for the same nodes and get the same children (camera rays,
    /// near the root), and gives the other seven the state ([`Traversal::copy_lane`]) when
    /// they part.
    const SHARES_LANES: bool = false;

    /// Whether this is a traversal shader beyond the strategy: two-level scenes, ray flags,
    /// any-hit ([`super::two_level::TwoLevel`]). The wave loops then hand it user nodes
    /// ([`Traversal::user_node`]) and restore the registers it gives back
    /// ([`Traversal::take_exit`]); for a plain strategy that code is compiled out.
    const SHADER: bool = false;

    /// A tested triangle's dwords: accept the hit or not (range, tie-break, and for a shader
    /// facing, opacity and any-hit). Returns the new closest t when accepted. By default
    /// [`LaneHit::offer`].
    #[inline(always)]
    fn offer_triangle(
        &self,
        _lane: &mut Self::Lane,
        hit: &mut LaneHit,
        node: NodePointer,
        dwords: [u32; 4],
        prim: impl FnOnce() -> u32,
    ) -> Option<f32> {
        hit.offer(node, dwords, prim)
    }

    /// A user node (types 6 and 7) came back untested. By default a leaf
    /// ([`Traversal::after_leaf`]); a shader enters instances (changing `regs`) and runs
    /// intersection shaders (which may accept a hit into `hit`).
    #[inline(always)]
    fn user_node(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        _regs: &mut LaneRay,
        _hit: &mut LaneHit,
    ) -> UserNodeStep {
        UserNodeStep {
            next: self.after_leaf(lane, node),
            registers: RegisterChange::Kept,
        }
    }

    /// The world ray to restore if the lane left an instance since the last call (its
    /// extent, the closest t, is the same in both spaces).
    #[inline(always)]
    fn take_exit(&self, _lane: &mut Self::Lane) -> Option<WorldRay> {
        None
    }

    /// Adds what the lane's shader did for its ray to `counters` (called once per ray, when
    /// it is done).
    #[inline(always)]
    fn finish_lane(&self, _lane: &Self::Lane, _counters: &mut ShaderCounters) {}

    /// Makes `to` the state `from` has. Called only when [`Traversal::SHARES_LANES`], so a
    /// strategy that shares lanes must give it; the default is never reached (a silent
    /// no-op would leave the parted lanes with stale stacks).
    fn copy_lane(&self, _from: &Self::Lane, _to: &mut Self::Lane) {
        unreachable!("copy_lane is called only for strategies with SHARES_LANES")
    }
}

/// A strategy driven with raw pointer bits, for unit tests that name nodes by small numbers.
#[cfg(test)]
pub(crate) trait RawSteps: Traversal {
    fn begin_raw(&self, lane: &mut Self::Lane, root: u32) -> u32 {
        self.begin(lane, NodePointer::from_u32(root)).to_u32()
    }

    fn after_box_raw(&self, lane: &mut Self::Lane, node: u32, children: [u32; 4]) -> Option<u32> {
        let children = children.map(NodePointer::from_u32);
        self.after_box(lane, NodePointer::from_u32(node), children)
            .map(NodePointer::to_u32)
    }

    fn after_leaf_raw(&self, lane: &mut Self::Lane, node: u32) -> Option<u32> {
        self.after_leaf(lane, NodePointer::from_u32(node))
            .map(NodePointer::to_u32)
    }
}

#[cfg(test)]
impl<T: Traversal> RawSteps for T {}
