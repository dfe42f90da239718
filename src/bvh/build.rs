//! Hardware-agnostic build: a binary BVH over primitive references by binned SAH, built in
//! parallel with rayon, with the SAH-optimal collapse costs to a 4-wide tree computed on the
//! way back up (see [`super::collapse`]).
//!
//! Determinism: node `n` of a subtree with `m` references owns the node index range
//! `[n, n + 2m - 1)`: itself, then the left subtree's range, then the right subtree's. Every
//! subtree writes only into its own range and its own slice of references, so the result
//! does not depend on how rayon schedules the work (unused indices stay as holes).
//!
//! Hot loop: no heap allocation per node. Bins live on the stack, references are partitioned
//! in place.

use glam::Vec3A;

/// Binned SAH: bins per axis.
pub const BINS: usize = 16;
/// Subtrees with at least this many references are split across rayon tasks.
const PARALLEL_THRESHOLD: usize = 4096;
/// Below this depth of the binary tree the split is by binned SAH; deeper (only on
/// pathological inputs) it is an object median split, which bounds the depth.
const MAX_SAH_DEPTH: u32 = 64;

/// SAH cost of one box-node instruction (one TD clock for four boxes).
pub const C_BOX: f32 = 1.0;
/// SAH cost of one triangle instruction (one TD clock for one triangle).
pub const C_TRI: f32 = 1.0;

/// A primitive reference: a triangle (or, with spatial splits, a clipped part of one).
#[derive(Clone, Copy, Debug)]
pub struct PrimRef {
    pub min: Vec3A,
    pub max: Vec3A,
    /// Primitive id in the mesh.
    pub prim: u32,
}

/// A binary node. `count == 1`: leaf holding reference `first`; `count == 0`: inner node with
/// children `first` and `second`.
#[derive(Clone, Copy, Debug)]
pub struct Node2 {
    pub min: Vec3A,
    pub max: Vec3A,
    pub first: u32,
    pub second: u32,
    pub count: u32,
    /// `cost[k-1]`: the least SAH cost (unnormalised, area-weighted) of this subtree when its
    /// parent gives it at most `k` child slots.
    pub cost: [f32; 4],
    /// `split[k-1]`: 0 if the best way to fill `k` slots is to make this node a box node
    /// (one slot); otherwise the slots given to the left child (the rest go right).
    pub split: [u8; 4],
}

impl Node2 {
    const HOLE: Node2 = Node2 {
        min: Vec3A::ZERO,
        max: Vec3A::ZERO,
        first: u32::MAX,
        second: u32::MAX,
        count: u32::MAX,
        cost: [0.0; 4],
        split: [0; 4],
    };

    pub fn is_leaf(&self) -> bool {
        self.count == 1
    }
}

pub fn half_area(min: Vec3A, max: Vec3A) -> f32 {
    let e = (max - min).max(Vec3A::ZERO);
    e.x * e.y + e.y * e.z + e.z * e.x
}

/// Builds the binary tree over `refs` (reordered in place). Node 0 is the root; the vector
/// has `2 * refs.len() - 1` entries (some unused). `refs` must not be empty.
pub fn build_binary(refs: &mut [PrimRef]) -> Vec<Node2> {
    assert!(!refs.is_empty());
    let mut nodes = vec![Node2::HOLE; 2 * refs.len() - 1];
    let (mut min, mut max) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    for r in refs.iter() {
        min = min.min(r.min);
        max = max.max(r.max);
    }
    build_rec(refs, &mut nodes, 0, min, max, 0);
    nodes
}

#[derive(Clone, Copy)]
struct Bin {
    min: Vec3A,
    max: Vec3A,
    count: u32,
}

const EMPTY_BIN: Bin = Bin {
    min: Vec3A::INFINITY,
    max: Vec3A::NEG_INFINITY,
    count: 0,
};

/// Builds the subtree over `refs` into `nodes` (its own index range, starting at `base`),
/// with bounds `min..max` already known.
fn build_rec(
    refs: &mut [PrimRef],
    nodes: &mut [Node2],
    base: u32,
    min: Vec3A,
    max: Vec3A,
    depth: u32,
) {
    let m = refs.len();
    debug_assert_eq!(nodes.len(), 2 * m - 1);
    if m == 1 {
        let c = C_TRI * half_area(min, max);
        nodes[0] = Node2 {
            min,
            max,
            first: refs[0].prim,
            second: 0,
            count: 1,
            cost: [c; 4],
            split: [0; 4],
        };
        return;
    }

    // Centroid bounds (centroids kept doubled: min + max).
    let (mut cmin, mut cmax) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    for r in refs.iter() {
        let c = r.min + r.max;
        cmin = cmin.min(c);
        cmax = cmax.max(c);
    }
    let extent = cmax - cmin;

    let binned = if depth < MAX_SAH_DEPTH {
        best_binned_split(refs, cmin, extent)
    } else {
        None
    };
    let (lmin, lmax, rmin, rmax, left_count) = match binned {
        Some((axis, bin, lmin, lmax, rmin, rmax)) => {
            let scale = BINS as f32 * 0.99999 / extent[axis];
            let lo = cmin[axis];
            let left = partition(refs, |r| {
                let b = (((r.min[axis] + r.max[axis]) - lo) * scale) as usize;
                b.min(BINS - 1) <= bin
            });
            (lmin, lmax, rmin, rmax, left)
        }
        None => {
            // All centroids coincide, or the tree is suspiciously deep: object median split on
            // the widest centroid axis (the order among equal centroids is the current one).
            let half = m / 2;
            let axis = if extent.x >= extent.y && extent.x >= extent.z {
                0
            } else if extent.y >= extent.z {
                1
            } else {
                2
            };
            let key = |r: &PrimRef| r.min[axis] + r.max[axis];
            refs.select_nth_unstable_by(half, |a, b| key(a).total_cmp(&key(b)));
            let (a, b) = refs.split_at(half);
            let bounds = |s: &[PrimRef]| {
                s.iter()
                    .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                        (lo.min(r.min), hi.max(r.max))
                    })
            };
            let (lmin, lmax) = bounds(a);
            let (rmin, rmax) = bounds(b);
            (lmin, lmax, rmin, rmax, half)
        }
    };
    debug_assert!(left_count > 0 && left_count < m);

    let left_base = base + 1;
    let right_base = base + 2 * left_count as u32;
    let (this, rest) = nodes.split_at_mut(1);
    let (left_nodes, right_nodes) = rest.split_at_mut(2 * left_count - 1);
    let (left_refs, right_refs) = refs.split_at_mut(left_count);
    if m >= PARALLEL_THRESHOLD {
        rayon::join(
            || build_rec(left_refs, left_nodes, left_base, lmin, lmax, depth + 1),
            || build_rec(right_refs, right_nodes, right_base, rmin, rmax, depth + 1),
        );
    } else {
        build_rec(left_refs, left_nodes, left_base, lmin, lmax, depth + 1);
        build_rec(right_refs, right_nodes, right_base, rmin, rmax, depth + 1);
    }

    // Collapse costs (semantics in `Node2::cost`).
    let l = &left_nodes[0];
    let r = &right_nodes[0];
    let mut node = Node2 {
        min,
        max,
        first: left_base,
        second: right_base,
        count: 0,
        cost: [0.0; 4],
        split: [0; 4],
    };
    // g[k-1]: best cost of filling exactly k slots with both children (k >= 2).
    let mut g = [f32::INFINITY; 4];
    let mut g_split = [0u8; 4];
    for k in 2..=4usize {
        for i in 1..k {
            let c = l.cost[i - 1] + r.cost[k - i - 1];
            if c < g[k - 1] {
                g[k - 1] = c;
                g_split[k - 1] = i as u8;
            }
        }
    }
    let as_box = C_BOX * half_area(min, max) + g[3];
    node.cost[0] = as_box;
    node.split[0] = 0;
    for k in 2..=4usize {
        if g[k - 1] < as_box {
            node.cost[k - 1] = g[k - 1];
            node.split[k - 1] = g_split[k - 1];
        } else {
            node.cost[k - 1] = as_box;
            node.split[k - 1] = 0;
        }
    }
    this[0] = node;
}

/// Evaluates the binned SAH on all three axes. Returns the axis, the last bin of the left
/// side and the two sides' bounds, or `None` when no axis has a centroid extent.
#[allow(clippy::type_complexity)]
fn best_binned_split(
    refs: &[PrimRef],
    cmin: Vec3A,
    extent: Vec3A,
) -> Option<(usize, usize, Vec3A, Vec3A, Vec3A, Vec3A)> {
    let mut bins = [[EMPTY_BIN; BINS]; 3];
    let valid = [extent.x > 0.0, extent.y > 0.0, extent.z > 0.0];
    if !valid.iter().any(|&v| v) {
        return None;
    }
    let scale = Vec3A::select(
        extent.cmpgt(Vec3A::ZERO),
        Vec3A::splat(BINS as f32 * 0.99999) / extent,
        Vec3A::ZERO,
    );
    for r in refs {
        let b = ((r.min + r.max - cmin) * scale).to_array();
        for axis in 0..3 {
            let bin = &mut bins[axis][(b[axis] as usize).min(BINS - 1)];
            bin.min = bin.min.min(r.min);
            bin.max = bin.max.max(r.max);
            bin.count += 1;
        }
    }
    let mut best: Option<(f32, usize, usize)> = None;
    for axis in 0..3 {
        if !valid[axis] {
            continue;
        }
        let b = &bins[axis];
        // Right-to-left sweep: cost of the right side for a split after bin i.
        let mut right_cost = [0.0f32; BINS];
        let (mut lo, mut hi, mut n) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, 0u32);
        for i in (1..BINS).rev() {
            lo = lo.min(b[i].min);
            hi = hi.max(b[i].max);
            n += b[i].count;
            right_cost[i - 1] = if n == 0 {
                f32::INFINITY
            } else {
                half_area(lo, hi) * n as f32
            };
        }
        let (mut lo, mut hi, mut n) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, 0u32);
        for i in 0..BINS - 1 {
            lo = lo.min(b[i].min);
            hi = hi.max(b[i].max);
            n += b[i].count;
            if n == 0 {
                continue;
            }
            let c = half_area(lo, hi) * n as f32 + right_cost[i];
            if best.is_none_or(|(bc, _, _)| c < bc) {
                best = Some((c, axis, i));
            }
        }
    }
    let (_, axis, split) = best?;
    let b = &bins[axis];
    let side = |range: std::ops::Range<usize>| {
        b[range]
            .iter()
            .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), bin| {
                (lo.min(bin.min), hi.max(bin.max))
            })
    };
    let (lmin, lmax) = side(0..split + 1);
    let (rmin, rmax) = side(split + 1..BINS);
    Some((axis, split, lmin, lmax, rmin, rmax))
}

/// Moves the references for which `left` holds to the front; returns how many there are.
fn partition(refs: &mut [PrimRef], left: impl Fn(&PrimRef) -> bool) -> usize {
    let (mut i, mut j) = (0usize, refs.len());
    loop {
        while i < j && left(&refs[i]) {
            i += 1;
        }
        while i < j && !left(&refs[j - 1]) {
            j -= 1;
        }
        if i >= j {
            return i;
        }
        refs.swap(i, j - 1);
        i += 1;
        j -= 1;
    }
}
