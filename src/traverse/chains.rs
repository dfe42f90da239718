//! Leaf chains: a triangle pointer of type k stands for triangles k, k-1, ..., 0 of its node.
//!
//! This is how AMD's driver traverses pair-compressed triangle nodes on RDNA2 (a box child
//! names triangle 1 of the node; after testing it the shader asks for triangle 0 of the same
//! node, `ClearNodeType(pointer)`), generalized to the four triangles of a node
//! ([`crate::bvh::BuildOptions::leaf_chains`]). Each triangle is still one instruction: the
//! chain only decides which node a lane asks for next.

use super::short_stack::{CountedTraversal, LaneEvents};
use super::Traversal;
use crate::hw::{NodePointer, NodeType};
use crate::wave::isa::Isa;

/// Walks leaf chains on top of any strategy `T`: after triangle k > 0 the lane asks for
/// triangle k-1 of the same node; after triangle 0 (or any other node) `T` decides.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeafChains<T>(pub T);

impl<T: Traversal> Traversal for LeafChains<T> {
    type Lane = T::Lane;

    fn name(&self) -> &'static str {
        self.0.name()
    }

    #[inline(always)]
    fn begin(&self, lane: &mut Self::Lane, root: NodePointer) -> NodePointer {
        self.0.begin(lane, root)
    }

    #[inline(always)]
    fn after_box(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
    ) -> Option<NodePointer> {
        self.0.after_box(lane, node, children)
    }

    #[inline(always)]
    fn after_box_masked<I: Isa>(
        &self,
        isa: I,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
        valid: u32,
    ) -> Option<NodePointer> {
        self.0.after_box_masked(isa, lane, node, children, valid)
    }

    #[inline(always)]
    fn after_leaf(&self, lane: &mut Self::Lane, node: NodePointer) -> Option<NodePointer> {
        // Types 1-3: the next triangle down in the same node.
        if node.is_triangle() && node.triangle_index() != 0 {
            Some(node.with_type(NodeType::triangle(node.triangle_index() - 1)))
        } else {
            self.0.after_leaf(lane, node)
        }
    }

    #[inline(always)]
    fn stack_depth(&self, lane: &Self::Lane) -> usize {
        self.0.stack_depth(lane)
    }
}

impl<T: CountedTraversal> CountedTraversal for LeafChains<T> {
    fn take_events(&self, lane: &mut Self::Lane) -> LaneEvents {
        self.0.take_events(lane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traverse::FullStack;
    use crate::traverse::RawSteps;

    #[test]
    fn walks_down_to_triangle_zero_then_pops() {
        let t = LeafChains(FullStack);
        let mut lane = Default::default();
        assert_eq!(t.begin_raw(&mut lane, 0x45), 0x45);
        // Box: go to 0x83 (triangle 3 of block 0x10), keep 0x44 on the stack.
        assert_eq!(
            t.after_box_raw(&mut lane, 0x45, [0x83, 0x44, u32::MAX, u32::MAX]),
            Some(0x83)
        );
        assert_eq!(t.after_leaf_raw(&mut lane, 0x83), Some(0x82));
        assert_eq!(t.after_leaf_raw(&mut lane, 0x82), Some(0x81));
        assert_eq!(t.after_leaf_raw(&mut lane, 0x81), Some(0x80));
        assert_eq!(t.after_leaf_raw(&mut lane, 0x80), Some(0x44));
        // A user node (type 7) is not a chain.
        assert_eq!(t.after_leaf_raw(&mut lane, 0x47), None);
    }
}
