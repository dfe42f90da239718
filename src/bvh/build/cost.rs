//! The SAH costs of the build and the collapse choice of each binary node: for every slot
//! budget k = 1..4, the cheapest way to represent a subtree in k slots of its parent (one
//! box node, or the budget handed down to its two children), computed bottom-up.

use super::{Bounds, PrimRef};
use glam::{Vec3A, Vec3Swizzles};

/// SAH cost of one box-node instruction (one TD clock for four boxes).
pub const C_BOX: f32 = 1.0;
/// SAH cost of one triangle instruction (one TD clock for one triangle).
pub const C_TRI: f32 = 1.0;

/// Half the surface area of the box `min..max` (0 for an empty box).
pub fn half_area(min: Vec3A, max: Vec3A) -> f32 {
    let e = (max - min).max(Vec3A::ZERO);
    // [x*y, y*z, z*x], summed left to right: x*y + y*z + z*x.
    let p = e * e.yzx();
    p.x + p.y + p.z
}

/// The collapse costs of a subtree, per slot budget k = 1..4 its parent gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollapseCosts {
    /// `cost[k-1]`: the least SAH cost (unnormalised, area-weighted) of the subtree in at
    /// most k slots.
    pub cost: [f32; 4],
    /// `boxes[k-1]`: the box nodes of its 4-wide form when it fills k slots.
    pub boxes: [u32; 4],
}

/// The collapse choice of an inner node: its costs, [`Node2::split`](super::Node2::split),
/// and its box count when it is a box node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollapseChoice {
    pub costs: CollapseCosts,
    pub split: [u8; 4],
    pub as_box_nodes: u32,
}

/// The collapse costs of a single reference with bounds `(min, max)`: its triangles tested,
/// whatever the slots given to it.
#[inline(always)]
pub fn leaf_costs(r: &PrimRef, (min, max): Bounds) -> CollapseCosts {
    let cost = C_TRI * r.triangles() as f32 * half_area(min, max);
    CollapseCosts {
        cost: [cost; 4],
        boxes: [0; 4],
    }
}

/// The collapse choice of an inner node with bounds `(min, max)` whose children have the
/// collapse costs `left` and `right`: as a box node it costs `C_BOX * area` plus the best
/// way to fill its 4 slots with its two children; given k >= 2 slots it may instead hand
/// `i` of them to the left child and `k - i` to the right, when that is cheaper.
pub fn collapse_choice(
    (min, max): Bounds,
    left: CollapseCosts,
    right: CollapseCosts,
) -> CollapseChoice {
    let (l, lb) = (left.cost, left.boxes);
    let (r, rb) = (right.cost, right.boxes);
    // g[k-1]: best cost of filling exactly k slots with both children (k >= 2).
    let mut g = [f32::INFINITY; 4];
    let mut g_split = [0u8; 4];
    for k in 2..=4usize {
        for i in 1..k {
            let c = l[i - 1] + r[k - i - 1];
            if c < g[k - 1] {
                g[k - 1] = c;
                g_split[k - 1] = i as u8;
            }
        }
    }
    let as_box = C_BOX * half_area(min, max) + g[3];
    let mut cost = [as_box; 4];
    let mut split = [0u8; 4];
    for k in 2..=4usize {
        if g[k - 1] < as_box {
            cost[k - 1] = g[k - 1];
            split[k - 1] = g_split[k - 1];
        }
    }
    // Box counts, following the collapse (`Collapser::emit_box` and `gather`): as a box
    // node it fills its 4 slots with `split[3]` slots for the left child (2 if 0).
    // (Slot counts are 1..=3 here; the masks only drop bounds checks.)
    let i = if split[3] == 0 { 2 } else { split[3] as usize };
    let as_box_nodes = 1 + lb[(i - 1) & 3] + rb[(3 - i) & 3];
    let mut boxes = [as_box_nodes; 4];
    for k in 2..=4usize {
        let s = split[k - 1] as usize;
        if s != 0 {
            boxes[k - 1] = lb[(s - 1) & 3] + rb[(k - s - 1) & 3];
        }
    }
    CollapseChoice {
        costs: CollapseCosts { cost, boxes },
        split,
        as_box_nodes,
    }
}
