//! Hardware-agnostic build: a binary BVH over primitive references by binned SAH, built in
//! parallel with rayon, with the SAH-optimal collapse costs to a 4-wide tree computed on the
//! way back up (see [`super::collapse`]).
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

use bytemuck::{Pod, Zeroable};
use glam::{Vec3A, Vec3Swizzles};
use rayon::prelude::*;

/// Binned SAH: bins per axis (a power of two: see `bin_of`).
pub const BINS: usize = 16;
const _: () = assert!(BINS.is_power_of_two());
/// Subtrees with at least this many references are split across rayon tasks.
const PARALLEL_THRESHOLD: usize = 4096;
/// Nodes with at least this many references are binned by rayon tasks.
const PARALLEL_BINNING: usize = 1 << 16;
/// Below this depth of the binary tree the split is by binned SAH; deeper (only on
/// pathological inputs) it is an object median split, which bounds the depth.
const MAX_SAH_DEPTH: u32 = 64;
/// Nodes with at least this many references are binned on every `SAMPLE_STRIDE`-th
/// reference only; their partition pass computes the exact bounds of both sides.
const SAMPLED_BINNING: usize = 1 << 12;
/// See [`SAMPLED_BINNING`].
const SAMPLE_STRIDE: usize = 4;
/// Nodes with at most this many references get an exact SAH sweep instead of bins.
const SMALL_NODE: usize = 12;
/// Small nodes with at most this many references sweep only the axis of their widest
/// centroid extent (a third of the work; the SAH of the dragon, bunny and sponza moves by
/// less than 0.05 %: see [`small_split`]).
const ONE_AXIS_MAX: usize = 6;
/// Inner nodes over at least this many references record their 4-wide subtree sizes
/// ([`BinaryTree::subtree_sizes`]), so that the collapse can emit them in parallel.
pub const COLLAPSE_PARALLEL: usize = 8192;
// Two-reference nodes (`pair_node`) record their sizes only as the root.
const _: () = assert!(COLLAPSE_PARALLEL > 2);

/// SAH cost of one box-node instruction (one TD clock for four boxes).
pub const C_BOX: f32 = 1.0;
/// SAH cost of one triangle instruction (one TD clock for one triangle).
pub const C_TRI: f32 = 1.0;

/// A child reference with this bit set names a leaf: the reference at the index in the low
/// bits (of the reordered reference array); otherwise it is an inner-node index.
pub const LEAF: u32 = 1 << 31;

/// A primitive reference: a triangle (or, with spatial splits, a clipped part of one).
///
/// 32 bytes (two 16-byte lanes), so that the passes over the references per level move two
/// thirds of the bytes of a `Vec3A` layout: the primitive id and the triangle count ride in
/// the fourth lane of the bounds, as bits, and are masked off when the bounds are read.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
pub struct PrimRef {
    /// Min x, y, z; lane 3: the primitive id's bits.
    lo: [f32; 4],
    /// Max x, y, z; lane 3: the triangle count's bits.
    hi: [f32; 4],
}

const _: () = assert!(std::mem::size_of::<PrimRef>() == 32);

impl PrimRef {
    /// `prim`: primitive id in the mesh (or cluster index with leaf chains); `triangles`:
    /// triangles tested when this reference is reached (1, or the cluster size).
    #[inline]
    pub fn new(min: Vec3A, max: Vec3A, prim: u32, triangles: u32) -> PrimRef {
        let [x, y, z] = min.to_array();
        let [u, v, w] = max.to_array();
        PrimRef {
            lo: [x, y, z, f32::from_bits(prim)],
            hi: [u, v, w, f32::from_bits(triangles)],
        }
    }

    #[inline(always)]
    pub fn min(&self) -> Vec3A {
        xyz(&self.lo)
    }

    #[inline(always)]
    pub fn max(&self) -> Vec3A {
        xyz(&self.hi)
    }

    /// Primitive id in the mesh (or cluster index with leaf chains).
    #[inline]
    pub fn prim(&self) -> u32 {
        self.lo[3].to_bits()
    }

    /// Triangles tested when this reference is reached (1, or the cluster size).
    #[inline]
    pub fn triangles(&self) -> u32 {
        self.hi[3].to_bits()
    }
}

/// One reference per triangle of `mesh`, in order, leaving out the triangles with a NaN or
/// infinite coordinate; returns the references and how many triangles were left out.
pub fn triangle_refs(mesh: &super::Mesh) -> (Vec<PrimRef>, usize) {
    // An indexed collect (written in place); the rare non-finite triangles are counted as
    // they are met (an atomic touched only for them), marked with no triangles and dropped
    // in order afterwards.
    let dropped = std::sync::atomic::AtomicUsize::new(0);
    let mut refs: Vec<PrimRef> = Vec::with_capacity(mesh.len());
    (0..mesh.len() as u32)
        .into_par_iter()
        .map(|prim| {
            let [a, b, c] = mesh.triangle(prim).map(Vec3A::from);
            // x * 0 is (+ or -) 0 for a finite x and NaN for an infinite or NaN one.
            let finite = (a * 0.0 + b * 0.0 + c * 0.0).cmpeq(Vec3A::ZERO).all();
            if !finite {
                dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            PrimRef::new(a.min(b).min(c), a.max(b).max(c), prim, finite as u32)
        })
        .collect_into_vec(&mut refs);
    let dropped = dropped.into_inner();
    if dropped > 0 {
        refs.retain(|r| r.triangles() != 0);
    }
    (refs, dropped)
}

/// Lanes x, y, z of `v` as a `Vec3A` whose fourth lane is 0 (the id bits would be
/// subnormal floats, slow in arithmetic on some cores).
#[inline(always)]
fn xyz(v: &[f32; 4]) -> Vec3A {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__m128;
        // One aligned load and one andps.
        let lanes: wide::f32x4 = bytemuck::cast(*v);
        let mask: wide::f32x4 = bytemuck::cast([u32::MAX, u32::MAX, u32::MAX, 0]);
        Vec3A::from(bytemuck::cast::<wide::f32x4, __m128>(lanes & mask))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec3A::new(v[0], v[1], v[2])
    }
}

/// An inner node of the binary tree (36 bytes; leaves are references, see [`LEAF`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct Node2 {
    pub min: [f32; 3],
    pub max: [f32; 3],
    /// Left and right child references.
    pub children: [u32; 2],
    /// `split[k-1]`: 0 if the best way to fill `k` child slots of the parent with this
    /// subtree is to make it a box node (one slot); otherwise the slots given to the left
    /// child (the rest go right). The costs behind the choice: see [`build_binary`].
    pub split: [u8; 4],
}

const _: () = assert!(std::mem::size_of::<Node2>() == 36);

/// The binary tree: inner nodes and the root reference.
pub struct BinaryTree {
    /// Allocated as zeroed words (so the pages are mapped lazily, never filled twice), viewed
    /// as [`Node2`] through [`BinaryTree::nodes`].
    words: Vec<[u32; 9]>,
    /// The root: inner node 0, or `LEAF | 0` with a single reference.
    pub root: u32,
    /// Box nodes of the whole 4-wide tree (1 when the root is a single reference).
    pub boxes: u32,
    /// Per inner node over at least [`COLLAPSE_PARALLEL`] references, and the root: (box nodes of its
    /// 4-wide subtree when it is emitted as a box node, its references); `[0, 0]` for the
    /// others (allocated zeroed and written only for these few nodes, so almost no page of it
    /// is ever mapped).
    pub subtree_sizes: Vec<[u32; 2]>,
}

impl BinaryTree {
    pub fn nodes(&self) -> &[Node2] {
        bytemuck::cast_slice(&self.words)
    }

    pub(crate) fn nodes_mut(&mut self) -> &mut [Node2] {
        bytemuck::cast_slice_mut(&mut self.words)
    }
}

pub fn half_area(min: Vec3A, max: Vec3A) -> f32 {
    let e = (max - min).max(Vec3A::ZERO);
    // [x*y, y*z, z*x], summed left to right: x*y + y*z + z*x.
    let p = e * e.yzx();
    p.x + p.y + p.z
}

/// The bin of each lane of `v` (scaled centroid offsets, `>= 0`): `v as usize`, at most
/// `BINS - 1` (NaN gives 0, like `as`).
#[inline(always)]
fn bin_of(v: Vec3A) -> [usize; 3] {
    // max(v, 0) turns NaN into 0; then every lane is in [0, BINS - 1] and truncation is
    // exact.
    let v = v.max(Vec3A::ZERO).min(Vec3A::splat((BINS - 1) as f32));
    #[cfg(target_arch = "x86_64")]
    {
        // glam's Vec3A is an SSE register here: one cvttps2dq.
        let lanes: wide::f32x4 = bytemuck::cast(std::arch::x86_64::__m128::from(v));
        let i = lanes.fast_trunc_int().to_array();
        // Each lane is already in 0..BINS: the mask changes nothing but lets the compiler
        // drop the bounds checks (and the sign extensions) of the bin indexing.
        [
            i[0] as u32 as usize & (BINS - 1),
            i[1] as u32 as usize & (BINS - 1),
            i[2] as u32 as usize & (BINS - 1),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        v.to_array().map(|c| c as usize)
    }
}

/// Builds the binary tree over `refs` (reordered in place: leaf references index the
/// reordered slice). `refs` must not be empty.
///
/// On the way back up every node gets its collapse choices ([`Node2::split`]) from the
/// least SAH cost (unnormalised, area-weighted) `cost[k-1]` of its subtree when its parent
/// gives it at most `k` child slots: a leaf costs `C_TRI * triangles * area` whatever `k`;
/// an inner node either becomes a box node (`C_BOX * area` plus the best way to fill 4
/// slots with its two children) or hands `i` slots to the left child and `k - i` to the
/// right (see [`super::collapse`]).
pub fn build_binary(refs: &mut [PrimRef]) -> BinaryTree {
    assert!(!refs.is_empty());
    let mut words = vec![[0u32; 9]; refs.len() - 1];
    let nodes: &mut [Node2] = bytemuck::cast_slice_mut(&mut words);
    let mut subtree_sizes = vec![[0u32; 2]; refs.len() - 1];
    // Bounds and (doubled) centroid bounds in one pass, in chunks of a fixed size merged in
    // order (min and max are exact: the same for any thread count).
    let empty = [
        Vec3A::INFINITY,
        Vec3A::NEG_INFINITY,
        Vec3A::INFINITY,
        Vec3A::NEG_INFINITY,
    ];
    let merge = |a: [Vec3A; 4], b: [Vec3A; 4]| {
        [
            a[0].min(b[0]),
            a[1].max(b[1]),
            a[2].min(b[2]),
            a[3].max(b[3]),
        ]
    };
    let [min, max, cmin, cmax] = refs
        .par_chunks(PARALLEL_BINNING / 4)
        .map(|chunk| {
            chunk.iter().fold(empty, |[lo, hi, clo, chi], r| {
                let c = r.min() + r.max();
                [lo.min(r.min()), hi.max(r.max()), clo.min(c), chi.max(c)]
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .fold(empty, merge);
    let root = if refs.len() == 1 { LEAF } else { 0 };
    build_rec(
        refs,
        nodes,
        &mut subtree_sizes,
        0,
        0,
        min,
        max,
        0,
        Some((cmin, cmax)),
    );
    BinaryTree {
        words,
        root,
        // A single reference is emitted as a box node with one slot.
        boxes: if root & LEAF != 0 {
            1
        } else {
            subtree_sizes[0][0]
        },
        subtree_sizes,
    }
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

/// Builds the subtree over `refs` (starting at index `first_ref` of the whole array) into
/// `nodes` (its own inner-node range, starting at `base`), with bounds `min..max` already
/// known. Returns the subtree's collapse costs (`cost[k-1]`, see [`build_binary`]) and
/// `boxes[k-1]`, the box nodes its 4-wide form has when it fills `k` slots of its parent.
#[allow(clippy::too_many_arguments)]
fn build_rec(
    refs: &mut [PrimRef],
    nodes: &mut [Node2],
    sizes: &mut [[u32; 2]],
    first_ref: u32,
    base: u32,
    min: Vec3A,
    max: Vec3A,
    depth: u32,
    centroid_bounds: Option<(Vec3A, Vec3A)>,
) -> ([f32; 4], [u32; 4]) {
    let m = refs.len();
    if m == 1 {
        return leaf_costs(&refs[0], min, max);
    }
    debug_assert_eq!(nodes.len(), m - 1);

    if m == 2 {
        return pair_node(
            refs,
            &mut nodes[0],
            &mut sizes[0],
            first_ref,
            base,
            min,
            max,
        );
    }
    if m <= SMALL_NODE {
        let (lmin, lmax, rmin, rmax, left_count) = small_split(refs);
        let sides = [(lmin, lmax, None), (rmin, rmax, None)];
        return finish_inner(
            refs, nodes, sizes, first_ref, base, min, max, depth, sides, left_count,
        );
    }

    // Centroid bounds (centroids kept doubled: min + max).
    // (Passed down from the parent's partition pass when it was binned.)
    let (cmin, cmax) = centroid_bounds.unwrap_or_else(|| {
        refs.iter()
            .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                let c = r.min() + r.max();
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
            // bin_of((c - cmin) * scale)[axis] <= bin, as one compare.
            let t = Vec3A::splat(bin_threshold(cmin, bin_scale(extent), axis, bin));
            let mask = 1 << axis;
            let left = |c: Vec3A| c.cmple(t).bitmask() & mask != 0;
            if m >= SAMPLED_BINNING {
                // The bins saw a sample: the sides' bounds come from the partition.
                let (left, lc, rc, (lmin, lmax), (rmin, rmax)) =
                    partition_with_bounds::<true>(refs, left);
                ((lmin, lmax, Some(lc)), (rmin, rmax, Some(rc)), left)
            } else {
                let (left, lc, rc, _, _) = partition_with_bounds::<false>(refs, left);
                ((lmin, lmax, Some(lc)), (rmin, rmax, Some(rc)), left)
            }
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
            let key = |r: &PrimRef| r.min()[axis] + r.max()[axis];
            refs.select_nth_unstable_by(half, |a, b| key(a).total_cmp(&key(b)));
            let (a, b) = refs.split_at(half);
            let (lmin, lmax) = bounds(a);
            let (rmin, rmax) = bounds(b);
            ((lmin, lmax, None), (rmin, rmax, None), half)
        }
    };
    finish_inner(
        refs,
        nodes,
        sizes,
        first_ref,
        base,
        min,
        max,
        depth,
        [left_side, right_side],
        left_count,
    )
}

/// [`build_rec`] for two references: the node [`finish_inner`] writes after the two-reference
/// [`small_split`], with its collapse costs in closed form (both children are leaves, so every
/// way of filling `k >= 2` slots costs the same sum, and the first split, 1, wins).
#[inline(always)]
fn pair_node(
    refs: &mut [PrimRef],
    node: &mut Node2,
    size: &mut [u32; 2],
    first_ref: u32,
    base: u32,
    min: Vec3A,
    max: Vec3A,
) -> ([f32; 4], [u32; 4]) {
    order_pair(refs);
    let [l, r] = [&refs[0], &refs[1]].map(|x| leaf_costs(x, x.min(), x.max()).0[0]);
    // g: the best cost of filling k >= 2 slots with both leaves, as `finish_inner`'s search
    // finds it (a sum that is not below infinity leaves it infinite, with no split).
    let sum = l + r;
    let (g, g_split) = if sum < f32::INFINITY {
        (sum, 1u8)
    } else {
        (f32::INFINITY, 0)
    };
    let as_box = C_BOX * half_area(min, max) + g;
    let (cost, split) = if g < as_box {
        ([as_box, g, g, g], [0, g_split, g_split, g_split])
    } else {
        ([as_box; 4], [0; 4])
    };
    *node = Node2 {
        min: min.to_array(),
        max: max.to_array(),
        children: [LEAF | first_ref, LEAF | (first_ref + 1)],
        split,
    };
    if base == 0 {
        *size = [1, 2];
    }
    (cost, split.map(|s| (s == 0) as u32))
}

/// The collapse costs and box counts of a single reference with bounds `min..max` (see
/// [`build_rec`]): its triangles tested, whatever the slots given to it.
#[inline(always)]
pub(crate) fn leaf_costs(r: &PrimRef, min: Vec3A, max: Vec3A) -> ([f32; 4], [u32; 4]) {
    let cost = C_TRI * r.triangles() as f32 * half_area(min, max);
    ([cost; 4], [0; 4])
}

/// Bounds of a set of references.
fn bounds(refs: &[PrimRef]) -> (Vec3A, Vec3A) {
    refs.iter()
        .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r.min()), hi.max(r.max()))
        })
}

/// Bounds and (if known) centroid bounds of one side of a split.
type Side = (Vec3A, Vec3A, Option<(Vec3A, Vec3A)>);

/// Recurses into the two sides of a split, writes this node and returns its collapse costs
/// and box counts (see [`build_rec`]).
#[allow(clippy::too_many_arguments)]
fn finish_inner(
    refs: &mut [PrimRef],
    nodes: &mut [Node2],
    sizes: &mut [[u32; 2]],
    first_ref: u32,
    base: u32,
    min: Vec3A,
    max: Vec3A,
    depth: u32,
    sides: [Side; 2],
    left_count: usize,
) -> ([f32; 4], [u32; 4]) {
    let [(lmin, lmax, lc), (rmin, rmax, rc)] = sides;
    let m = refs.len();
    debug_assert!(left_count > 0 && left_count < m);

    // Child references: an inner node's range, or a single reference.
    let left_base = base + 1;
    let right_base = base + left_count as u32;
    let right_first = first_ref + left_count as u32;
    let child = |count: usize, node: u32, reference: u32| {
        if count == 1 {
            LEAF | reference
        } else {
            node
        }
    };
    let children = [
        child(left_count, left_base, first_ref),
        child(m - left_count, right_base, right_first),
    ];
    let (this, rest) = nodes.split_at_mut(1);
    let (left_nodes, right_nodes) = rest.split_at_mut(left_count - 1);
    let (this_size, rest) = sizes.split_at_mut(1);
    let (left_sizes, right_sizes) = rest.split_at_mut(left_count - 1);
    let (left_refs, right_refs) = refs.split_at_mut(left_count);
    let left = |refs: &mut [PrimRef], nodes: &mut [Node2], sizes: &mut [[u32; 2]]| {
        if refs.len() == 1 {
            return leaf_costs(&refs[0], lmin, lmax);
        }
        build_rec(
            refs,
            nodes,
            sizes,
            first_ref,
            left_base,
            lmin,
            lmax,
            depth + 1,
            lc,
        )
    };
    let right = |refs: &mut [PrimRef], nodes: &mut [Node2], sizes: &mut [[u32; 2]]| {
        if refs.len() == 1 {
            return leaf_costs(&refs[0], rmin, rmax);
        }
        build_rec(
            refs,
            nodes,
            sizes,
            right_first,
            right_base,
            rmin,
            rmax,
            depth + 1,
            rc,
        )
    };
    let ((l, lb), (r, rb)) = if m >= PARALLEL_THRESHOLD {
        rayon::join(
            || left(left_refs, left_nodes, left_sizes),
            || right(right_refs, right_nodes, right_sizes),
        )
    } else {
        (
            left(left_refs, left_nodes, left_sizes),
            right(right_refs, right_nodes, right_sizes),
        )
    };

    let (cost, split, boxes, as_box_nodes) = collapse_choice(min, max, (l, lb), (r, rb));
    this[0] = Node2 {
        min: min.to_array(),
        max: max.to_array(),
        children,
        split,
    };
    // (The root's too: its box count sizes the collapse's output.)
    if m >= COLLAPSE_PARALLEL || base == 0 {
        this_size[0] = [as_box_nodes, m as u32];
    }
    (cost, boxes)
}

/// The collapse choices of an inner node with bounds `min..max` whose children have the
/// collapse costs and box counts `l` and `r` (see [`build_binary`]): its costs `cost[k-1]`,
/// [`Node2::split`], box counts `boxes[k-1]`, and its box count when it is a box node.
pub(crate) fn collapse_choice(
    min: Vec3A,
    max: Vec3A,
    (l, lb): ([f32; 4], [u32; 4]),
    (r, rb): ([f32; 4], [u32; 4]),
) -> ([f32; 4], [u8; 4], [u32; 4], u32) {
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
    (cost, split, boxes, as_box_nodes)
}

/// Evaluates the binned SAH on all three axes. Returns the axis, the last bin of the left
/// side and the two sides' bounds, or `None` when no axis splits the references into two
/// non-empty sides (no centroid extent, or an extent beyond the f32 range).
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
    let scale = bin_scale(extent);
    let stride = if refs.len() >= SAMPLED_BINNING {
        SAMPLE_STRIDE
    } else {
        1
    };
    let bins = if refs.len() >= PARALLEL_BINNING {
        // Chunks of a fixed size (a multiple of the stride), merged exactly: the same bins
        // for any thread count.
        refs.par_chunks(PARALLEL_BINNING / 4)
            .map(|chunk| {
                let mut bins = [[EMPTY_BIN; BINS]; 3];
                bin_refs(chunk, stride, cmin, scale, &mut bins);
                bins
            })
            .reduce(
                || [[EMPTY_BIN; BINS]; 3],
                |mut a, b| {
                    merge_bins(&mut a, &b);
                    a
                },
            )
    } else {
        let mut bins = [[EMPTY_BIN; BINS]; 3];
        bin_refs(refs, stride, cmin, scale, &mut bins);
        bins
    };
    let mut best: Option<(f32, usize, usize)> = None;
    for axis in 0..3 {
        if !valid[axis] {
            continue;
        }
        let b = &bins[axis];
        // Right-to-left sweep: cost of the right side for a split after bin i (None: empty).
        let mut right_cost = [None; BINS];
        let (mut lo, mut hi, mut n) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, 0u32);
        for i in (1..BINS).rev() {
            lo = lo.min(b[i].min);
            hi = hi.max(b[i].max);
            n += b[i].count;
            if n != 0 {
                right_cost[i - 1] = Some(half_area(lo, hi) * n as f32);
            }
        }
        let (mut lo, mut hi, mut n) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, 0u32);
        for i in 0..BINS - 1 {
            lo = lo.min(b[i].min);
            hi = hi.max(b[i].max);
            n += b[i].count;
            // Both sides must hold references. (A side's cost may be infinite, with boxes
            // near the f32 range's end; an axis whose centroid extent overflows to infinity
            // has every reference in bin 0, and so no split.)
            let Some(right_cost) = right_cost[i] else {
                continue;
            };
            if n == 0 {
                continue;
            }
            let c = half_area(lo, hi) * n as f32 + right_cost;
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

/// Scale from doubled-centroid offsets to bins, per axis (0 on an axis without extent).
fn bin_scale(extent: Vec3A) -> Vec3A {
    Vec3A::select(
        extent.cmpgt(Vec3A::ZERO),
        Vec3A::splat(BINS as f32 * 0.99999) / extent,
        Vec3A::ZERO,
    )
}

/// Adds `b` into `a` (exact: bounds and counts).
fn merge_bins(a: &mut Bins, b: &Bins) {
    for axis in 0..3 {
        for i in 0..BINS {
            let (a, b) = (&mut a[axis][i], &b[axis][i]);
            a.min = a.min.min(b.min);
            a.max = a.max.max(b.max);
            a.count += b.count;
        }
    }
}

/// Bins `refs` on all three axes (`scale` 0 on an axis without extent) into `out` (empty
/// bins).
fn bin_refs(refs: &[PrimRef], stride: usize, cmin: Vec3A, scale: Vec3A, out: &mut Bins) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2.
        unsafe { bin_refs_avx2(refs, stride, cmin, scale, out) };
        return;
    }
    bin_refs_any(refs, stride, cmin, scale, out);
}

/// Whether this CPU runs the AVX2 builds of the hot loops (x86-64 only).
#[cfg(target_arch = "x86_64")]
#[inline]
fn avx2() -> bool {
    std::is_x86_feature_detected!("avx2")
}

/// [`bin_refs_any`] compiled for AVX2: the same f32 operations (min, max, add, sub, mul, one
/// rounding each; Rust never contracts to FMA), so the same bins; VEX encoding saves the
/// register copies of two-operand SSE.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
unsafe fn bin_refs_avx2(
    refs: &[PrimRef],
    stride: usize,
    cmin: Vec3A,
    scale: Vec3A,
    out: &mut Bins,
) {
    bin_refs_any(refs, stride, cmin, scale, out);
}

#[inline(always)]
fn bin_refs_any(refs: &[PrimRef], stride: usize, cmin: Vec3A, scale: Vec3A, out: &mut Bins) {
    if stride > 1 {
        // Every `stride`-th reference, alternating the two sets of bins as below.
        let mut odd = [[EMPTY_BIN; BINS]; 3];
        let mut i = 0;
        while i + stride < refs.len() {
            bin_one(out, &refs[i], cmin, scale);
            bin_one(&mut odd, &refs[i + stride], cmin, scale);
            i += 2 * stride;
        }
        if i < refs.len() {
            bin_one(out, &refs[i], cmin, scale);
        }
        merge_bins(out, &odd);
        return;
    }
    // Two sets of bins, for even and odd references: neighbouring references often fall in
    // the same bins, and alternating sets halves the chains of dependent loads and stores.
    // Merging is exact (min, max and counts), so the result does not change.
    let add = |bins: &mut Bins, r: &PrimRef| bin_one(bins, r, cmin, scale);
    if refs.len() < 2 * BINS {
        // Few references: the second set is not worth clearing and merging.
        for r in refs {
            add(out, r);
        }
        return;
    }
    let mut odd = [[EMPTY_BIN; BINS]; 3];
    let mut pairs = refs.chunks_exact(2);
    for pair in &mut pairs {
        add(out, &pair[0]);
        add(&mut odd, &pair[1]);
    }
    for r in pairs.remainder() {
        add(out, r);
    }
    merge_bins(out, &odd);
}

/// Adds reference `r` to its bins on all three axes.
#[inline(always)]
fn bin_one(bins: &mut Bins, r: &PrimRef, cmin: Vec3A, scale: Vec3A) {
    // Non-negative (`cmin` is the least of the same sums) and at most about `BINS`.
    let b = bin_of((r.min() + r.max() - cmin) * scale);
    for axis in 0..3 {
        let bin = &mut bins[axis][b[axis]];
        bin.min = bin.min.min(r.min());
        bin.max = bin.max.max(r.max());
        bin.count += 1;
    }
}

/// Exact SAH split of a small node: sorts the references by centroid on each axis and
/// sweeps all `m - 1` positions; leaves `refs` in the order of the best axis.
///
/// The axes are sorted one after the other, each starting from the previous order (stable
/// insertion sorts, so ties keep the order of the previous axis), and the best axis is sorted
/// again from the last order if it is not the last; the sorts run on (key, index) pairs on
/// the stack and `refs` is permuted once at the end.
///
/// Nodes of 3 to [`ONE_AXIS_MAX`] references sort and sweep only the axis of their widest
/// centroid extent (x before y before z among equal extents), starting from the current
/// order. Two references need no sweep (both orders cost the same): they end in the order
/// of the four stable sorts above.
fn small_split(refs: &mut [PrimRef]) -> (Vec3A, Vec3A, Vec3A, Vec3A, usize) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2.
        return unsafe { small_split_avx2(refs) };
    }
    small_split_any(refs)
}

/// [`small_split_any`] compiled for AVX2 (the same f32 operations: the same split, see
/// [`bin_refs_avx2`]).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
unsafe fn small_split_avx2(refs: &mut [PrimRef]) -> (Vec3A, Vec3A, Vec3A, Vec3A, usize) {
    small_split_any(refs)
}

#[inline(always)]
fn small_split_any(refs: &mut [PrimRef]) -> (Vec3A, Vec3A, Vec3A, Vec3A, usize) {
    let m = refs.len();
    debug_assert!((2..=SMALL_NODE).contains(&m));
    if m == 2 {
        order_pair(refs);
        return (
            refs[0].min(),
            refs[0].max(),
            refs[1].min(),
            refs[1].max(),
            1,
        );
    }
    // Doubled centroids per axis.
    let mut keys = [[0.0f32; SMALL_NODE]; 3];
    let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    for (i, r) in refs.iter().enumerate() {
        let c = r.min() + r.max();
        lo = lo.min(c);
        hi = hi.max(c);
        let c = c.to_array();
        for axis in 0..3 {
            keys[axis][i] = c[axis];
        }
    }
    let mut order: [u8; SMALL_NODE] = std::array::from_fn(|i| i as u8);
    let order = &mut order[..m];
    let mut best = (f32::INFINITY, 0usize, 1usize);
    let mut right_area = [0.0f32; SMALL_NODE];
    // The axes to sweep: all three, or only the widest (the first of equal extents).
    let axes = if m <= ONE_AXIS_MAX {
        let [x, y, z] = (hi - lo).to_array();
        let widest = if x >= y && x >= z {
            0
        } else if y >= z {
            1
        } else {
            2
        };
        widest..widest + 1
    } else {
        0..3
    };
    let all_axes = axes.len() == 3;
    for axis in axes {
        sort_on_keys(order, &keys[axis]);
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for i in (1..m).rev() {
            let r = &refs[order[i] as usize];
            lo = lo.min(r.min());
            hi = hi.max(r.max());
            right_area[i] = half_area(lo, hi);
        }
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for i in 0..m - 1 {
            let r = &refs[order[i] as usize];
            lo = lo.min(r.min());
            hi = hi.max(r.max());
            let c = half_area(lo, hi) * (i + 1) as f32 + right_area[i + 1] * (m - i - 1) as f32;
            if c < best.0 {
                best = (c, axis, i + 1);
            }
        }
    }
    let (_, axis, left_count) = best;
    if all_axes && axis != 2 {
        sort_on_keys(order, &keys[axis]);
    }
    // Permute (unless the order is already the current one, as it often is below a split on
    // the same axis).
    if order.iter().enumerate().any(|(i, &o)| o as usize != i) {
        let mut sorted = [refs[0]; SMALL_NODE];
        for (s, &i) in sorted.iter_mut().zip(order.iter()) {
            *s = refs[i as usize];
        }
        refs.copy_from_slice(&sorted[..m]);
    }
    let (lmin, lmax) = bounds(&refs[..left_count]);
    let (rmin, rmax) = bounds(&refs[left_count..]);
    (lmin, lmax, rmin, rmax, left_count)
}

/// The order [`small_split`] leaves two references in. Both orders cost the same (one
/// reference per side, and the sum commutes), so the sweep keeps axis 0 and the result is
/// the order of the four stable sorts (axes 0, 1, 2, then 0 again): two-element sorts are
/// one compare-and-swap each.
#[inline(always)]
fn order_pair(refs: &mut [PrimRef]) {
    let (a, b) = (refs[0].min() + refs[0].max(), refs[1].min() + refs[1].max());
    let (a, b) = (a.to_array(), b.to_array());
    let mut swapped = false;
    for axis in [0, 1, 2, 0] {
        let (first, second) = if swapped { (b, a) } else { (a, b) };
        if first[axis] > second[axis] {
            swapped = !swapped;
        }
    }
    if swapped {
        refs.swap(0, 1);
    }
}

/// Stable sort of `order` (indices into `keys`) by key.
///
/// Each entry goes straight to its rank: the number of entries with a smaller key, plus
/// those with an equal key before it. The comparisons run over all [`SMALL_NODE`] slots
/// without branches (an insertion sort's data-dependent branches mispredicted; this sort
/// was four tenths of the small-node split). They compare integers ordered as the floats
/// are, -0 and +0 alike, so that the ranks are always a permutation (keys are centroids of
/// finite boxes, never NaN).
#[inline(always)]
fn sort_on_keys(order: &mut [u8], keys: &[f32; SMALL_NODE]) {
    // `k + 0.0` turns -0 into +0; flipping the magnitude bits of negative values makes
    // signed integer order the float order.
    let ordered = |k: f32| {
        let bits = (k + 0.0).to_bits() as i32;
        bits ^ ((bits >> 31) as u32 >> 1) as i32
    };
    let m = order.len();
    // Keys in the current order; the unused slots get the largest integer and sit after
    // every entry, so they neither precede an entry nor tie with one before it.
    let mut current = [i32::MAX; SMALL_NODE];
    for (c, &o) in current.iter_mut().zip(order.iter()) {
        *c = ordered(keys[o as usize]);
    }
    let mut sorted = [0u8; SMALL_NODE];
    for p in 0..m {
        let key = current[p];
        let mut rank = 0u32;
        for (q, &other) in current.iter().enumerate() {
            rank += (other < key) as u32 + ((other == key) & (q < p)) as u32;
        }
        // The ranks of the m entries are 0..m; the modulo only spares the bounds check.
        sorted[rank as usize % SMALL_NODE] = order[p];
    }
    order.copy_from_slice(&sorted[..m]);
}

/// The largest doubled centroid coordinate `c` on `axis` (from `cmin[axis]` up, infinity
/// included) whose bin, as the binning computes it (`bin_of((c - cmin) * scale)[axis]`), is
/// at most `bin`.
///
/// The bin never decreases as `c` grows (subtracting a constant, multiplying by a
/// non-negative one, the clamp and the truncation are each monotone in f32, and the NaN of
/// `0 * inf` at `c == cmin` gives bin 0, the least), so the references of bins `0..=bin` are
/// exactly those with `c <= threshold`: a bisection over the ordered f32 bit patterns finds
/// it with the binning's own arithmetic.
fn bin_threshold(cmin: Vec3A, scale: Vec3A, axis: usize, bin: usize) -> f32 {
    // Finite and infinite f32 in order as u32 keys (NaNs fall outside ordered(-inf)..=
    // ordered(inf)).
    let ordered = |x: f32| {
        let b = x.to_bits();
        if b >> 31 == 1 {
            !b
        } else {
            b | 0x8000_0000
        }
    };
    let value = |k: u32| f32::from_bits(if k >> 31 == 1 { k & 0x7fff_ffff } else { !k });
    let left = |k: u32| bin_of((Vec3A::splat(value(k)) - cmin) * scale)[axis] <= bin;
    let (first, last) = (ordered(cmin[axis]), ordered(f32::INFINITY));
    debug_assert!(left(first));
    // The threshold is within a few units in the last place of the bins' boundary in
    // centroid space, `cmin + (bin + 1) / scale`: search a window of keys around it first
    // (the invariant is checked, so an estimate that is off only costs the full range).
    const WINDOW: u32 = 64;
    let estimate = cmin[axis] + (bin + 1) as f32 / scale[axis];
    let (mut lo, mut hi) = if estimate.is_nan() {
        (first, last)
    } else {
        let k = ordered(estimate);
        (
            k.saturating_sub(WINDOW).clamp(first, last),
            k.saturating_add(WINDOW).clamp(first, last),
        )
    };
    if !left(lo) {
        lo = first;
    }
    if left(hi) {
        hi = last;
        if left(hi) {
            return f32::INFINITY;
        }
    }
    // left(lo) and !left(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if left(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    value(lo)
}

/// Moves the references whose (doubled) centroid `c = min + max` satisfies `left(c)` to the
/// front; returns how many there are and the centroid bounds of both sides, gathered in the
/// same pass.
/// With `BOUNDS`, also the bounds of both sides (else infinite empty boxes).
#[allow(clippy::type_complexity)]
#[inline(always)]
fn partition_with_bounds<const BOUNDS: bool>(
    refs: &mut [PrimRef],
    left: impl Fn(Vec3A) -> bool,
) -> (
    usize,
    (Vec3A, Vec3A),
    (Vec3A, Vec3A),
    (Vec3A, Vec3A),
    (Vec3A, Vec3A),
) {
    let (mut lmin, mut lmax) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut rmin, mut rmax) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut llo, mut lhi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut rlo, mut rhi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    let (mut i, mut j) = (0usize, refs.len());
    loop {
        while i < j {
            let c = refs[i].min() + refs[i].max();
            if !left(c) {
                break;
            }
            lmin = lmin.min(c);
            lmax = lmax.max(c);
            if BOUNDS {
                llo = llo.min(refs[i].min());
                lhi = lhi.max(refs[i].max());
            }
            i += 1;
        }
        while i < j {
            let c = refs[j - 1].min() + refs[j - 1].max();
            if left(c) {
                break;
            }
            rmin = rmin.min(c);
            rmax = rmax.max(c);
            if BOUNDS {
                rlo = rlo.min(refs[j - 1].min());
                rhi = rhi.max(refs[j - 1].max());
            }
            j -= 1;
        }
        if i >= j {
            return (i, (lmin, lmax), (rmin, rmax), (llo, lhi), (rlo, rhi));
        }
        // refs[i] goes right, refs[j - 1] goes left.
        refs.swap(i, j - 1);
        let c = refs[i].min() + refs[i].max();
        lmin = lmin.min(c);
        lmax = lmax.max(c);
        let c = refs[j - 1].min() + refs[j - 1].max();
        rmin = rmin.min(c);
        rmax = rmax.max(c);
        if BOUNDS {
            llo = llo.min(refs[i].min());
            lhi = lhi.max(refs[i].max());
            rlo = rlo.min(refs[j - 1].min());
            rhi = rhi.max(refs[j - 1].max());
        }
        i += 1;
        j -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact small-node split as first written: stable swap-based insertion sorts of
    /// the references themselves, axis after axis, then the best axis again; with 3 to
    /// `ONE_AXIS_MAX` references only the axis of the largest centroid extent (the first
    /// of equal ones).
    fn small_split_reference(refs: &mut [PrimRef]) -> usize {
        let key = |r: &PrimRef, axis: usize| (r.min() + r.max()).to_array()[axis];
        let sort = |refs: &mut [PrimRef], axis: usize| {
            for i in 1..refs.len() {
                let mut j = i;
                while j > 0 && key(&refs[j - 1], axis) > key(&refs[j], axis) {
                    refs.swap(j - 1, j);
                    j -= 1;
                }
            }
        };
        let m = refs.len();
        let extent = |axis: usize| {
            let keys = refs.iter().map(|r| key(r, axis));
            keys.clone().fold(f32::NEG_INFINITY, f32::max) - keys.fold(f32::INFINITY, f32::min)
        };
        let (x, y, z) = (extent(0), extent(1), extent(2));
        let axes: Vec<usize> = if !(3..=ONE_AXIS_MAX).contains(&m) {
            vec![0, 1, 2]
        } else if x >= y && x >= z {
            vec![0]
        } else if y >= z {
            vec![1]
        } else {
            vec![2]
        };
        let mut best = (f32::INFINITY, 0usize, 1usize);
        for &axis in &axes {
            sort(refs, axis);
            let mut right_area = vec![0.0f32; m];
            let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
            for i in (1..m).rev() {
                lo = lo.min(refs[i].min());
                hi = hi.max(refs[i].max());
                right_area[i] = half_area(lo, hi);
            }
            let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
            for i in 0..m - 1 {
                lo = lo.min(refs[i].min());
                hi = hi.max(refs[i].max());
                let c = half_area(lo, hi) * (i + 1) as f32 + right_area[i + 1] * (m - i - 1) as f32;
                if c < best.0 {
                    best = (c, axis, i + 1);
                }
            }
        }
        if axes.len() == 3 && best.1 != 2 {
            sort(refs, best.1);
        }
        best.2
    }

    struct Rng(u64);
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

    /// The stack-key small split (and its two-reference shortcut), portable and AVX2 builds,
    /// leaves the references in the same order, with the same split, as the swap-based
    /// reference, ties included.
    #[test]
    fn small_split_matches_the_reference_order() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..20_000 {
            let m = 2 + case % (SMALL_NODE - 1);
            let refs: Vec<PrimRef> = (0..m as u32)
                .map(|prim| {
                    let a = Vec3A::new(rng.coordinate(), rng.coordinate(), rng.coordinate());
                    let e = Vec3A::new(rng.coordinate(), rng.coordinate(), rng.coordinate());
                    PrimRef::new(a, a + e, prim, 1)
                })
                .collect();
            let (mut fast, mut portable, mut slow) = (refs.clone(), refs.clone(), refs);
            // The dispatching entry (AVX2 where the CPU has it) and the portable build.
            let (lmin, lmax, rmin, rmax, left) = small_split(&mut fast);
            let portable_split = small_split_any(&mut portable);
            assert_eq!(left, small_split_reference(&mut slow), "case {case}");
            let order = |r: &[PrimRef]| r.iter().map(|r| r.prim()).collect::<Vec<_>>();
            assert_eq!(order(&fast), order(&slow), "case {case}");
            assert_eq!(order(&portable), order(&slow), "case {case}");
            assert_eq!((lmin, lmax), bounds(&slow[..left]));
            assert_eq!((rmin, rmax), bounds(&slow[left..]));
            assert_eq!(
                portable_split,
                (lmin, lmax, rmin, rmax, left),
                "case {case}"
            );
        }
    }

    /// The closed-form two-reference node equals the general path (the two-reference
    /// `small_split`, then `finish_inner`): order, node, recorded sizes, costs and box counts,
    /// on random pairs including flat, point and huge boxes (infinite and NaN costs).
    #[test]
    fn pair_node_matches_the_general_node() {
        let mut rng = Rng(0x6a09_e667_f3bc_c908);
        for case in 0..20_000 {
            let corner = |rng: &mut Rng| match rng.next() % 8 {
                0 => Vec3A::ZERO,
                1 => Vec3A::splat(3e38),
                _ => Vec3A::new(rng.coordinate(), rng.coordinate(), rng.coordinate()),
            };
            let refs: Vec<PrimRef> = (0..2u32)
                .map(|prim| {
                    let a = corner(&mut rng);
                    let e = corner(&mut rng);
                    PrimRef::new(a, a + e, prim, 1 + (rng.next() % 3) as u32)
                })
                .collect();
            let (min, max) = bounds(&refs);
            let base = (case % 2) as u32;
            let (mut fast, mut general) = (refs.clone(), refs);
            let mut fast_nodes = [Node2::default()];
            let mut fast_sizes = [[0u32; 2]];
            let fast_out = pair_node(
                &mut fast,
                &mut fast_nodes[0],
                &mut fast_sizes[0],
                7,
                base,
                min,
                max,
            );
            let mut general_nodes = [Node2::default()];
            let mut general_sizes = [[0u32; 2]];
            let (lmin, lmax, rmin, rmax, left) = small_split(&mut general);
            let general_out = finish_inner(
                &mut general,
                &mut general_nodes,
                &mut general_sizes,
                7,
                base,
                min,
                max,
                0,
                [(lmin, lmax, None), (rmin, rmax, None)],
                left,
            );
            let order = |r: &[PrimRef]| r.iter().map(|r| r.prim()).collect::<Vec<_>>();
            assert_eq!(order(&fast), order(&general), "case {case}");
            let bits = |c: [f32; 4]| c.map(f32::to_bits);
            assert_eq!(bits(fast_out.0), bits(general_out.0), "case {case}");
            assert_eq!(fast_out.1, general_out.1, "case {case}");
            assert_eq!(
                bytemuck::bytes_of(&fast_nodes[0]),
                bytemuck::bytes_of(&general_nodes[0]),
                "case {case}"
            );
            assert_eq!(fast_sizes, general_sizes, "case {case}");
        }
    }

    /// The references leave out exactly the triangles with a coordinate that is not finite
    /// (NaN, +inf, -inf in any lane; the largest finite floats kept), in order, with the
    /// triangles' own bounds.
    #[test]
    fn triangle_refs_drop_exactly_the_non_finite_triangles() {
        let mut rng = Rng(0x3c6e_f372_fe94_f82b);
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            -f32::MAX,
        ];
        let positions: Vec<[f32; 3]> = (0..300)
            .map(|_| {
                std::array::from_fn(|_| match rng.next() % 12 {
                    0 => specials[(rng.next() % 5) as usize],
                    _ => rng.coordinate() - 1.0,
                })
            })
            .collect();
        let indices: Vec<[u32; 3]> = (0..2000)
            .map(|_| std::array::from_fn(|_| (rng.next() % 300) as u32))
            .collect();
        let mesh = crate::bvh::Mesh { positions, indices };
        let expected: Vec<u32> = (0..mesh.len() as u32)
            .filter(|&p| mesh.triangle(p).iter().flatten().all(|c| c.is_finite()))
            .collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (refs, dropped) = pool.install(|| triangle_refs(&mesh));
        assert!(dropped > 100 && expected.len() > 100, "{dropped}");
        assert_eq!(dropped, mesh.len() - expected.len());
        assert_eq!(refs.iter().map(|r| r.prim()).collect::<Vec<_>>(), expected);
        for r in &refs {
            let t = mesh.triangle(r.prim()).map(Vec3A::from);
            assert_eq!(r.min(), t[0].min(t[1]).min(t[2]));
            assert_eq!(r.max(), t[0].max(t[1]).max(t[2]));
            assert_eq!(r.triangles(), 1);
        }
    }

    /// The partition's one compare against `bin_threshold` sends every centroid to the side
    /// its bin (as the binning computes it) says, on random and on boundary centroids, for
    /// wide, narrow and subnormal extents (an infinite scale included).
    #[test]
    fn bin_threshold_matches_the_bins() {
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let mut unit = || (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
        for case in 0..20_000 {
            let cmin = Vec3A::new(unit() * 200.0 - 100.0, unit() - 0.5, unit() * 1e-3);
            let extent = match case % 4 {
                0 => Vec3A::new(unit() * 100.0 + 1e-3, unit() * 1e-3 + 1e-9, 1.0),
                1 => Vec3A::new(1e-40, 1e-30, unit() * 1e6 + 1.0),
                2 => Vec3A::splat(unit() * 10.0 + 1e-6),
                _ => Vec3A::new(f32::MIN_POSITIVE, unit(), 3.0),
            };
            let scale = bin_scale(extent);
            let axis = case % 3;
            let bin = case / 3 % (BINS - 1);
            let t = bin_threshold(cmin, scale, axis, bin);
            let check = |c: f32| {
                let binned = bin_of((Vec3A::splat(c) - cmin) * scale)[axis] <= bin;
                assert_eq!(c <= t, binned, "case {case}: c {c} t {t} bin {bin}");
            };
            for _ in 0..8 {
                check(cmin[axis] + extent[axis] * unit());
            }
            check(cmin[axis]);
            check(cmin[axis] + extent[axis]);
            if t.is_finite() {
                check(t);
                check(f32::from_bits(t.to_bits().wrapping_add(if t > 0.0 {
                    1
                } else {
                    u32::MAX
                })));
                check(t.next_up());
            }
        }
    }

    /// The portable and AVX2 builds of the binning, on all references and on every
    /// `SAMPLE_STRIDE`-th one, give the bins of adding the (sampled) references one by one,
    /// bit for bit.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_binning_matches_the_portable_binning() {
        if !avx2() {
            return;
        }
        let mut rng = Rng(0xda94_2042_e4dd_58b5);
        for count in [1usize, 7, 31, 32, 33, 1000, 5001] {
            let refs: Vec<PrimRef> = (0..count as u32)
                .map(|prim| {
                    let mut c = || (rng.next() % 100_000) as f32 / 7.0 - 5000.0;
                    let a = Vec3A::new(c(), c(), c());
                    let e = Vec3A::new(c(), c(), c()).abs() * 0.01;
                    PrimRef::new(a, a + e, prim, 1)
                })
                .collect();
            let (cmin, cmax) = refs
                .iter()
                .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                    (lo.min(r.min() + r.max()), hi.max(r.min() + r.max()))
                });
            let scale = bin_scale(cmax - cmin);
            for stride in [1, SAMPLE_STRIDE] {
                let mut portable = [[EMPTY_BIN; BINS]; 3];
                bin_refs_any(&refs, stride, cmin, scale, &mut portable);
                let mut fast = [[EMPTY_BIN; BINS]; 3];
                // SAFETY: the CPU supports AVX2 (checked above).
                unsafe { bin_refs_avx2(&refs, stride, cmin, scale, &mut fast) };
                // The sample: every stride-th reference, binned one by one.
                let mut sample = [[EMPTY_BIN; BINS]; 3];
                for r in refs.iter().step_by(stride) {
                    bin_one(&mut sample, r, cmin, scale);
                }
                for axis in 0..3 {
                    for i in 0..BINS {
                        let (a, b) = (&portable[axis][i], &fast[axis][i]);
                        let c = &sample[axis][i];
                        let what = format!("{count} refs, stride {stride}, axis {axis} bin {i}");
                        assert_eq!((a.count, b.count), (c.count, c.count), "{what}");
                        let bits = |v: Vec3A| v.to_array().map(f32::to_bits);
                        assert_eq!((bits(a.min), bits(b.min)), (bits(c.min), bits(c.min)));
                        assert_eq!((bits(a.max), bits(b.max)), (bits(c.max), bits(c.max)));
                    }
                }
            }
        }
    }

    /// The partition keeps each reference on the side its centroid says, and with bounds
    /// it returns each side's exact box and centroid bounds.
    #[test]
    fn partition_returns_the_sides_and_their_bounds() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for count in [1usize, 2, 3, 10, 333, 5000] {
            let refs: Vec<PrimRef> = (0..count as u32)
                .map(|prim| {
                    let mut c = || (rng.next() % 10_000) as f32 / 10.0;
                    let a = Vec3A::new(c(), c(), c());
                    PrimRef::new(a, a + Vec3A::new(c(), c(), c()) * 0.01, prim, 1)
                })
                .collect();
            let t = 1000.0;
            let left = |c: Vec3A| c.y <= t;
            let mut parted = refs.clone();
            let (n, lc, rc, lb, rb) = partition_with_bounds::<true>(&mut parted, left);
            let centre = |r: &PrimRef| r.min() + r.max();
            assert!(parted[..n].iter().all(|r| left(centre(r))), "{count}");
            assert!(parted[n..].iter().all(|r| !left(centre(r))), "{count}");
            assert_eq!(n, refs.iter().filter(|r| left(centre(r))).count());
            assert_eq!(lb, bounds(&parted[..n]));
            assert_eq!(rb, bounds(&parted[n..]));
            let centroid_bounds = |refs: &[PrimRef]| {
                refs.iter()
                    .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                        (lo.min(centre(r)), hi.max(centre(r)))
                    })
            };
            assert_eq!(lc, centroid_bounds(&parted[..n]));
            assert_eq!(rc, centroid_bounds(&parted[n..]));
        }
    }

    /// The SIMD bin index is `as usize` clamped to the last bin, NaN giving 0.
    #[test]
    fn bin_of_matches_the_scalar_conversion() {
        let mut rng = Rng(7);
        let scalar = |c: f32| (c as usize).min(BINS - 1);
        let specials = [
            0.0,
            -0.0,
            0.99999,
            1.0,
            15.0,
            15.99,
            16.0,
            1e30,
            f32::INFINITY,
        ];
        for _ in 0..100_000 {
            let mut lane = || match rng.next() % 4 {
                0 => specials[(rng.next() % specials.len() as u64) as usize],
                1 => f32::NAN,
                _ => (rng.next() % 1_000_000) as f32 / 1_000_000.0 * 17.0,
            };
            let v = Vec3A::new(lane(), lane(), lane());
            assert_eq!(bin_of(v), v.to_array().map(scalar), "{v}");
        }
    }
}
