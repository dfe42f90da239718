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
use rayon::prelude::*;

/// Binned SAH: bins per axis.
pub const BINS: usize = 16;
/// Subtrees with at least this many references are split across rayon tasks.
const PARALLEL_THRESHOLD: usize = 4096;
/// Nodes with at least this many references are binned by rayon tasks.
const PARALLEL_BINNING: usize = 1 << 16;
/// Below this depth of the binary tree the split is by binned SAH; deeper (only on
/// pathological inputs) it is an object median split, which bounds the depth.
const MAX_SAH_DEPTH: u32 = 64;
/// Nodes with at most this many references get an exact SAH sweep instead of bins.
const SMALL_NODE: usize = 12;

/// SAH cost of one box-node instruction (one TD clock for four boxes).
pub const C_BOX: f32 = 1.0;
/// SAH cost of one triangle instruction (one TD clock for one triangle).
pub const C_TRI: f32 = 1.0;

/// A primitive reference: a triangle (or, with spatial splits, a clipped part of one).
#[derive(Clone, Copy, Debug)]
pub struct PrimRef {
    pub min: Vec3A,
    pub max: Vec3A,
    /// Primitive id in the mesh (or cluster index with leaf chains).
    pub prim: u32,
    /// Triangles tested when this reference is reached (1, or the cluster size).
    pub triangles: u32,
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
    build_rec(refs, &mut nodes, 0, min, max, 0, None);
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
    centroid_bounds: Option<(Vec3A, Vec3A)>,
) {
    let m = refs.len();
    debug_assert_eq!(nodes.len(), 2 * m - 1);
    if m == 1 {
        let c = C_TRI * refs[0].triangles as f32 * half_area(min, max);
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

    if m <= SMALL_NODE {
        let (lmin, lmax, rmin, rmax, left_count) = small_split(refs);
        let sides = [(lmin, lmax, None), (rmin, rmax, None)];
        finish_inner(refs, nodes, base, min, max, depth, sides, left_count);
        return;
    }

    // Centroid bounds (centroids kept doubled: min + max).
    // (Passed down from the parent's partition pass when it was binned.)
    let (cmin, cmax) = centroid_bounds.unwrap_or_else(|| {
        refs.iter()
            .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                let c = r.min + r.max;
                (lo.min(c), hi.max(c))
            })
    });
    let extent = cmax - cmin;

    let binned = if depth < MAX_SAH_DEPTH {
        best_binned_split(refs, cmin, extent)
    } else {
        None
    };
    let (left_side, right_side, left_count) = match binned {
        Some((axis, bin, lmin, lmax, rmin, rmax)) => {
            let scale = BINS as f32 * 0.99999 / extent[axis];
            let lo = cmin[axis];
            let (left, lc, rc) = partition(refs, |r| {
                let b = (((r.min[axis] + r.max[axis]) - lo) * scale) as usize;
                b.min(BINS - 1) <= bin
            });
            ((lmin, lmax, Some(lc)), (rmin, rmax, Some(rc)), left)
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
            ((lmin, lmax, None), (rmin, rmax, None), half)
        }
    };
    finish_inner(
        refs,
        nodes,
        base,
        min,
        max,
        depth,
        [left_side, right_side],
        left_count,
    );
}

/// Bounds and (if known) centroid bounds of one side of a split.
type Side = (Vec3A, Vec3A, Option<(Vec3A, Vec3A)>);

/// Recurses into the two sides of a split and computes this node's collapse costs.
#[allow(clippy::too_many_arguments)]
fn finish_inner(
    refs: &mut [PrimRef],
    nodes: &mut [Node2],
    base: u32,
    min: Vec3A,
    max: Vec3A,
    depth: u32,
    sides: [Side; 2],
    left_count: usize,
) {
    let [(lmin, lmax, lc), (rmin, rmax, rc)] = sides;
    let m = refs.len();
    debug_assert!(left_count > 0 && left_count < m);

    let left_base = base + 1;
    let right_base = base + 2 * left_count as u32;
    let (this, rest) = nodes.split_at_mut(1);
    let (left_nodes, right_nodes) = rest.split_at_mut(2 * left_count - 1);
    let (left_refs, right_refs) = refs.split_at_mut(left_count);
    if m >= PARALLEL_THRESHOLD {
        rayon::join(
            || build_rec(left_refs, left_nodes, left_base, lmin, lmax, depth + 1, lc),
            || {
                build_rec(
                    right_refs,
                    right_nodes,
                    right_base,
                    rmin,
                    rmax,
                    depth + 1,
                    rc,
                )
            },
        );
    } else {
        build_rec(left_refs, left_nodes, left_base, lmin, lmax, depth + 1, lc);
        build_rec(
            right_refs,
            right_nodes,
            right_base,
            rmin,
            rmax,
            depth + 1,
            rc,
        );
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
    let valid = [extent.x > 0.0, extent.y > 0.0, extent.z > 0.0];
    if !valid.iter().any(|&v| v) {
        return None;
    }
    let scale = Vec3A::select(
        extent.cmpgt(Vec3A::ZERO),
        Vec3A::splat(BINS as f32 * 0.99999) / extent,
        Vec3A::ZERO,
    );
    let bins = if refs.len() >= PARALLEL_BINNING {
        // Chunks of a fixed size, merged exactly: the same bins for any thread count.
        refs.par_chunks(PARALLEL_BINNING / 4)
            .map(|chunk| bin_refs(chunk, cmin, scale))
            .reduce(|| [[EMPTY_BIN; BINS]; 3], merge_bins)
    } else {
        bin_refs(refs, cmin, scale)
    };
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

type Bins = [[Bin; BINS]; 3];

/// Adds `b` into `a` (exact: bounds and counts).
fn merge_bins(mut a: Bins, b: Bins) -> Bins {
    for axis in 0..3 {
        for i in 0..BINS {
            let (a, b) = (&mut a[axis][i], &b[axis][i]);
            a.min = a.min.min(b.min);
            a.max = a.max.max(b.max);
            a.count += b.count;
        }
    }
    a
}

/// Bins `refs` on all three axes (`scale` 0 on an axis without extent).
fn bin_refs(refs: &[PrimRef], cmin: Vec3A, scale: Vec3A) -> Bins {
    // Two sets of bins, for even and odd references: neighbouring references often fall in
    // the same bins, and alternating sets halves the chains of dependent loads and stores.
    // Merging is exact (min, max and counts), so the result does not change.
    let mut sets = [[[EMPTY_BIN; BINS]; 3]; 2];
    let add = |bins: &mut Bins, r: &PrimRef| {
        // Non-negative (`cmin` is the least of the same sums) and at most about `BINS`.
        let b = ((r.min + r.max - cmin) * scale).as_ivec3().to_array();
        for axis in 0..3 {
            let bin = &mut bins[axis][(b[axis] as usize).min(BINS - 1)];
            bin.min = bin.min.min(r.min);
            bin.max = bin.max.max(r.max);
            bin.count += 1;
        }
    };
    let (even, odd) = sets.split_at_mut(1);
    let mut pairs = refs.chunks_exact(2);
    for pair in &mut pairs {
        add(&mut even[0], &pair[0]);
        add(&mut odd[0], &pair[1]);
    }
    for r in pairs.remainder() {
        add(&mut even[0], r);
    }
    let [a, b] = sets;
    merge_bins(a, b)
}

/// Exact SAH split of a small node: sorts the references by centroid on each axis and
/// sweeps all `m - 1` positions; leaves `refs` in the order of the best axis.
fn small_split(refs: &mut [PrimRef]) -> (Vec3A, Vec3A, Vec3A, Vec3A, usize) {
    let m = refs.len();
    let mut best = (f32::INFINITY, 0usize, 1usize);
    let mut right_area = [0.0f32; SMALL_NODE];
    for axis in 0..3 {
        sort_on_axis(refs, axis);
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for i in (1..m).rev() {
            lo = lo.min(refs[i].min);
            hi = hi.max(refs[i].max);
            right_area[i] = half_area(lo, hi);
        }
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for i in 0..m - 1 {
            lo = lo.min(refs[i].min);
            hi = hi.max(refs[i].max);
            let c = half_area(lo, hi) * (i + 1) as f32 + right_area[i + 1] * (m - i - 1) as f32;
            if c < best.0 {
                best = (c, axis, i + 1);
            }
        }
    }
    let (_, axis, left_count) = best;
    if axis != 2 {
        sort_on_axis(refs, axis);
    }
    let bounds = |s: &[PrimRef]| {
        s.iter()
            .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                (lo.min(r.min), hi.max(r.max))
            })
    };
    let (lmin, lmax) = bounds(&refs[..left_count]);
    let (rmin, rmax) = bounds(&refs[left_count..]);
    (lmin, lmax, rmin, rmax, left_count)
}

/// Stable insertion sort by doubled centroid on `axis` (small slices only).
fn sort_on_axis(refs: &mut [PrimRef], axis: usize) {
    let key = |r: &PrimRef| r.min[axis] + r.max[axis];
    for i in 1..refs.len() {
        let mut j = i;
        while j > 0 && key(&refs[j - 1]) > key(&refs[j]) {
            refs.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Moves the references for which `left` holds to the front; returns how many there are
/// and the (doubled) centroid bounds of both sides, gathered in the same pass.
#[allow(clippy::type_complexity)]
fn partition(
    refs: &mut [PrimRef],
    left: impl Fn(&PrimRef) -> bool,
) -> (usize, (Vec3A, Vec3A), (Vec3A, Vec3A)) {
    let (mut lmin, mut lmax) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut rmin, mut rmax) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut i, mut j) = (0usize, refs.len());
    loop {
        while i < j && left(&refs[i]) {
            let c = refs[i].min + refs[i].max;
            lmin = lmin.min(c);
            lmax = lmax.max(c);
            i += 1;
        }
        while i < j && !left(&refs[j - 1]) {
            let c = refs[j - 1].min + refs[j - 1].max;
            rmin = rmin.min(c);
            rmax = rmax.max(c);
            j -= 1;
        }
        if i >= j {
            return (i, (lmin, lmax), (rmin, rmax));
        }
        // refs[i] goes right, refs[j - 1] goes left.
        refs.swap(i, j - 1);
        let c = refs[i].min + refs[i].max;
        lmin = lmin.min(c);
        lmax = lmax.max(c);
        let c = refs[j - 1].min + refs[j - 1].max;
        rmin = rmin.min(c);
        rmax = rmax.max(c);
        i += 1;
        j -= 1;
    }
}
