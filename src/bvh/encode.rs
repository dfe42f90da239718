//! The encoder: the only code that writes hardware node bytes.
//!
//! Input: the 4-wide intermediate tree ([`Tree4`]). Steps: pack the triangle references into
//! triangle nodes, choose each box node's format, lay the nodes out (depth- or
//! breadth-first, root at block 0), write the bytes, fill the side tables (primitive ids,
//! parents) and measure the result ([`Metrics`]). The layout rules are in the module docs of
//! [`crate::bvh`].
//!
//! Parallel, and the same for any thread count: the leaves are packed in fixed runs of
//! `PACK_RUN` (a run never shares a triangle node with another run), the node bytes are
//! written in fixed pieces of the memory order (each piece owns its block range) and the SAH
//! metric is summed per piece, then over the pieces in order. The depth-first layout,
//! which also fills the per-block side tables, runs over fixed runs of box nodes placed by
//! prefix sums (`layout_depth_first`); the breadth-first one is a serial walk.

// Slot loops index several parallel per-slot arrays at once; ranges read better here.
#![allow(clippy::needless_range_loop)]

use super::build::{half_area, C_BOX, C_TRI};
use super::cluster::Cluster;
use super::collapse::{Slot, Tree4, NO_PARENT};
use super::metrics::Metrics;
use super::{BoxFormat, BuildOptions, Mesh, NodeOrder};
use crate::error::{Error, Result};
use crate::hw::{
    ij_nibble, BoxNodeF16, BoxNodeF32, BvhDescriptor, IjControl, NodePointer, NodeType,
    TriangleNode, TriangleReturnMode, TRIANGLE_VERTICES,
};
use glam::Vec3A;
use half::f16;
use rayon::prelude::*;
use std::collections::VecDeque;

/// A hardware BVH image with its side tables.
#[derive(Clone, Debug, PartialEq)]
pub struct BvhImage {
    /// Node memory; node 0 (the root) at offset 0. Its length is a multiple of 64.
    pub bytes: Vec<u8>,
    /// Base 0, size = 64-byte blocks - 1, grow, sort and return mode from the options.
    pub descriptor: BvhDescriptor,
    /// Root node pointer (a box node at block 0: 0x4 or 0x5).
    pub root: NodePointer,
    /// Per 64-byte block: the ordinal `o` of the triangle node starting there, or `u32::MAX`.
    pub triangle_node_ordinal: Vec<u32>,
    /// Per triangle slot `4 * o + k`: the primitive id, or `u32::MAX` for an unused slot.
    pub slot_primitive: Vec<u32>,
    /// Per 64-byte block: the parent pointer of the box node starting there
    /// (`NodePointer::INVALID` for the root and for other blocks).
    pub box_parent: Vec<NodePointer>,
    /// Per triangle slot `4 * o + k`: the pointer of the box node referencing it.
    pub slot_parent: Vec<NodePointer>,
    /// Most triangles per triangle node the image was built with.
    pub triangles_per_node: u8,
    /// Whether references were split (then one triangle may be stored several times).
    pub spatial_splits: bool,
    /// Leaf chains: a triangle pointer of type k stands for triangles k, k-1, ..., 0 of its
    /// node (see [`BuildOptions::leaf_chains`](super::BuildOptions::leaf_chains)).
    pub leaf_chains: bool,
}

impl BvhImage {
    /// The image's settings (descriptor, root, build flags) without its memory or side
    /// tables: what is left in a build report once a tracer has taken the image.
    pub fn settings_only(&self) -> BvhImage {
        BvhImage {
            bytes: Vec::new(),
            descriptor: self.descriptor,
            root: self.root,
            triangle_node_ordinal: Vec::new(),
            slot_primitive: Vec::new(),
            box_parent: Vec::new(),
            slot_parent: Vec::new(),
            triangles_per_node: self.triangles_per_node,
            spatial_splits: self.spatial_splits,
            leaf_chains: self.leaf_chains,
        }
    }

    /// Primitive id of a triangle hit, given the triangle node pointer the instruction was
    /// issued with and the 4 returned dwords. Mode 0: dword 2 (`word@60 + k`) indexes the
    /// side table; mode 1: the pointer does. `u32::MAX` if the pointer or id is not a
    /// triangle slot of this image.
    pub fn primitive_id(&self, triangle_pointer: NodePointer, result: &[u32; 4]) -> u32 {
        let slot = match self.descriptor.triangle_return_mode {
            TriangleReturnMode::TriangleId => Some(result[2] as usize),
            TriangleReturnMode::Barycentrics => self.slot_of(triangle_pointer),
        };
        slot.and_then(|s| self.slot_primitive.get(s).copied())
            .unwrap_or(u32::MAX)
    }

    /// The side-table slot `4 * o + k` of a triangle pointer.
    pub fn slot_of(&self, triangle_pointer: NodePointer) -> Option<usize> {
        let p = triangle_pointer;
        let k = p.node_type().triangle_index()?;
        let o = *self.triangle_node_ordinal.get(p.address_64() as usize)?;
        (o != u32::MAX).then(|| 4 * o as usize + k)
    }

    /// Parent node pointer of a node (for stackless walk-back traversals), `None` for the
    /// root and for pointers that name no node of this image.
    pub fn parent(&self, node_pointer: NodePointer) -> Option<NodePointer> {
        let p = node_pointer;
        let parent = if p.is_box() {
            *self.box_parent.get(p.address_64() as usize)?
        } else {
            *self.slot_parent.get(self.slot_of(node_pointer)?)?
        };
        (!parent.is_invalid()).then_some(parent)
    }

    /// The triangle pointers a box child pointer stands for, in the order to test them:
    /// the pointer itself, except with leaf chains, where type k expands to the pointers of
    /// triangles k, k-1, ..., 0 of the same node. Empty for box and INVALID pointers.
    pub fn leaf_triangles(&self, pointer: NodePointer) -> impl Iterator<Item = NodePointer> {
        let k = if pointer.is_invalid() {
            None
        } else {
            pointer.node_type().triangle_index()
        };
        let (first, last) = match k {
            None => (1, 0),
            Some(k) if self.leaf_chains => (0, k as u32),
            Some(k) => (k as u32, k as u32),
        };
        (first..=last)
            .rev()
            .map(move |j| pointer.with_type(NodeType::triangle(j as usize)))
    }

    /// Number of 64-byte blocks (a box32 node counts two).
    pub fn node_count_64(&self) -> usize {
        self.bytes.len() / 64
    }
}

/// A vertex as its three coordinates' bit patterns (x in bits 0..32, y, z above), so that a
/// vertex comparison is one 128-bit compare.
type VertexBits = u128;

/// A free vertex of a [`Pack`]: three NaN patterns, never the bits of a finite vertex (only
/// finite triangles reach the encoder).
const FREE_VERTEX: VertexBits = u128::MAX;

#[inline]
fn vertex_bits(v: [f32; 3]) -> VertexBits {
    v[0].to_bits() as u128 | (v[1].to_bits() as u128) << 32 | (v[2].to_bits() as u128) << 64
}

fn vertex_f32(v: VertexBits) -> [f32; 3] {
    if v == FREE_VERTEX {
        [f32::NAN; 3]
    } else {
        [
            f32::from_bits(v as u32),
            f32::from_bits((v >> 32) as u32),
            f32::from_bits((v >> 64) as u32),
        ]
    }
}

/// A free slot of a [`Pack`].
const FREE_SLOT: (u32, u8) = (u32::MAX, 0);

/// A triangle node being packed.
#[derive(Clone, Copy)]
struct Pack {
    /// Vertex bit patterns; [`FREE_VERTEX`] while free.
    verts: [VertexBits; 5],
    /// Per slot: (primitive id, rotation r): mesh vertex j sits at node vertex
    /// `TRIANGLE_VERTICES[k][(j + r) % 3]`; [`FREE_SLOT`] while free.
    used: [(u32, u8); 4],
    count: u8,
}

// `Pack::try_place` relies on every slot using node vertex 2.
const _: () = {
    let mut k = 0;
    while k < 4 {
        let v = TRIANGLE_VERTICES[k];
        assert!(v[0] == 2 || v[1] == 2 || v[2] == 2);
        k += 1;
    }
};

const EMPTY_PACK: Pack = Pack {
    verts: [FREE_VERTEX; 5],
    used: [FREE_SLOT; 4],
    count: 0,
};

impl Pack {
    fn slot_used(&self, k: usize) -> bool {
        self.used[k].0 != u32::MAX
    }

    /// Places `tri` (vertex bit patterns in mesh order) in a free slot if it fits; returns
    /// the slot. Of the slots and rotations that fit, the one that takes the fewest free node
    /// vertices wins (the first of equal ones).
    fn try_place(&mut self, tri: &[VertexBits; 3], prim: u32) -> Option<usize> {
        // Every slot uses node vertex 2 (`TRIANGLE_VERTICES`), set when the node was
        // opened: a triangle without it cannot fit anywhere, and in a slot it can only take
        // the rotations that put one of its copies of V2 there.
        let centre = self.verts[2];
        debug_assert!(centre != FREE_VERTEX);
        // is_centre bit j: tri[j] == centre
        let is_centre = (tri[0] == centre) as usize
            | ((tri[1] == centre) as usize) << 1
            | ((tri[2] == centre) as usize) << 2;
        if is_centre == 0 {
            return None;
        }
        let best = if is_centre.count_ones() == 1 {
            self.best_slot(tri, is_centre.trailing_zeros() as usize)
        } else {
            self.best_slot_degenerate(tri, is_centre)
        };
        let (k, r) = best?;
        let at = ROTATED[k][r];
        for j in 0..3 {
            self.verts[at[j]] = tri[j];
        }
        self.used[k] = (prim, r as u8);
        self.count += 1;
        Some(k)
    }

    /// The free slot and rotation for a triangle whose vertex `jc` (only) is the centre:
    /// in slot k it takes the rotation that puts `jc` on V2, and its next two vertices land
    /// on the slot's edge `EDGE[k]`. Of the slots that fit, the one that takes the fewest
    /// free node vertices (the first of equal ones).
    #[inline(always)]
    fn best_slot(&self, tri: &[VertexBits; 3], jc: usize) -> Option<(usize, usize)> {
        let (a, b) = (tri[(jc + 1) % 3], tri[(jc + 2) % 3]);
        let mut best: Option<(usize, usize)> = None;
        for k in 0..4 {
            if self.slot_used(k) {
                continue;
            }
            let (x, y) = (self.verts[EDGE[k].0], self.verts[EDGE[k].1]);
            let (x_free, y_free) = (x == FREE_VERTEX, y == FREE_VERTEX);
            if (x_free || x == a) && (y_free || y == b) {
                let opened = x_free as usize + y_free as usize;
                if opened == 0 {
                    return Some((k, ROTATION_OF_CENTRE[k][jc]));
                }
                if best.is_none_or(|(o, _)| opened < o) {
                    best = Some((opened, k));
                }
            }
        }
        best.map(|(_, k)| (k, ROTATION_OF_CENTRE[k][jc]))
    }

    /// [`Pack::best_slot`] for a triangle with the centre at several of its vertices (a
    /// degenerate triangle): every slot and every rotation putting a copy on V2.
    #[cold]
    fn best_slot_degenerate(
        &self,
        tri: &[VertexBits; 3],
        is_centre: usize,
    ) -> Option<(usize, usize)> {
        // Node vertex `at` is free or already holds tri[j].
        let fits = |at: usize, j: usize| {
            let v = self.verts[at];
            v == FREE_VERTEX || v == tri[j]
        };
        let mut best: Option<(usize, usize, usize)> = None;
        for k in 0..4 {
            if self.slot_used(k) {
                continue;
            }
            for r in 0..3 {
                // Mesh vertex j sits at node vertex `ROTATED[k][r][j]`; V2 gets j = CENTRE_J,
                // which holds the centre already: the other two vertices decide.
                let jc = CENTRE_J[k][r];
                if is_centre >> jc & 1 == 0 {
                    continue;
                }
                let at = ROTATED[k][r];
                let (j1, j2) = ((jc + 1) % 3, (jc + 2) % 3);
                if fits(at[j1], j1) && fits(at[j2], j2) {
                    let opened = (self.verts[at[j1]] == FREE_VERTEX) as usize
                        + (self.verts[at[j2]] == FREE_VERTEX) as usize;
                    if best.is_none_or(|(o, _, _)| opened < o) {
                        best = Some((opened, k, r));
                    }
                }
            }
        }
        best.map(|(_, k, r)| (k, r))
    }
}

/// `ROTATED[k][r][j] = TRIANGLE_VERTICES[k][(j + r) % 3]`: the node vertex of mesh vertex j
/// of a triangle in slot k with rotation r.
const ROTATED: [[[usize; 3]; 3]; 4] = {
    let mut t = [[[0; 3]; 3]; 4];
    let mut k = 0;
    while k < 4 {
        let mut r = 0;
        while r < 3 {
            let mut j = 0;
            while j < 3 {
                t[k][r][j] = TRIANGLE_VERTICES[k][(j + r) % 3];
                j += 1;
            }
            r += 1;
        }
        k += 1;
    }
    t
};

/// `EDGE[k]`: the node vertices that follow V2 in slot k's vertex order (`TRIANGLE_VERTICES`
/// read cyclically from V2): a triangle whose vertex j is on V2 puts vertex j + 1 on the
/// first and j + 2 on the second.
const EDGE: [(usize, usize); 4] = {
    let mut t = [(0, 0); 4];
    let mut k = 0;
    while k < 4 {
        let p = V2_POSITION[k];
        t[k] = (
            TRIANGLE_VERTICES[k][(p + 1) % 3],
            TRIANGLE_VERTICES[k][(p + 2) % 3],
        );
        k += 1;
    }
    t
};

/// `ROTATION_OF_CENTRE[k][j]`: the rotation r that puts mesh vertex j on V2 in slot k
/// (`CENTRE_J[k][r] == j`).
const ROTATION_OF_CENTRE: [[usize; 3]; 4] = {
    let mut t = [[0; 3]; 4];
    let mut k = 0;
    while k < 4 {
        let mut r = 0;
        while r < 3 {
            t[k][CENTRE_J[k][r]] = r;
            r += 1;
        }
        k += 1;
    }
    t
};

/// `CENTRE_J[k][r]`: the mesh vertex j that lands on node vertex 2 in slot k with rotation r.
const CENTRE_J: [[usize; 3]; 4] = {
    let mut t = [[0; 3]; 4];
    let mut k = 0;
    while k < 4 {
        let mut r = 0;
        while r < 3 {
            t[k][r] = (V2_POSITION[k] + 3 - r) % 3;
            r += 1;
        }
        k += 1;
    }
    t
};

/// Position of node vertex 2 in each slot's `TRIANGLE_VERTICES`.
const V2_POSITION: [usize; 4] = {
    let mut p = [0; 4];
    let mut k = 0;
    while k < 4 {
        let v = TRIANGLE_VERTICES[k];
        p[k] = if v[0] == 2 {
            0
        } else if v[1] == 2 {
            1
        } else {
            2
        };
        k += 1;
    }
    p
};

/// Marks a triangle node (pack ordinal) in the memory order of the encoder.
const PACK_ITEM: u32 = 1 << 31;

/// Nodes written by one parallel task of the encoder.
const WRITE_PIECE: usize = 4096;

/// How many recently opened triangle nodes a triangle may join (eight: one `u32x8` of
/// centre fingerprints).
const PACK_WINDOW: usize = 8;

/// A 32-bit fingerprint of a vertex: equal vertices have equal fingerprints, so comparing
/// fingerprints first rules most pairs out with one 32-bit compare.
fn fingerprint(v: VertexBits) -> u32 {
    let [x, y, z] = [v as u32, (v >> 32) as u32, (v >> 64) as u32];
    x.wrapping_mul(0x9E37_79B1)
        ^ y.wrapping_mul(0x85EB_CA77).rotate_left(11)
        ^ z.wrapping_mul(0xC2B2_AE3D).rotate_left(22)
}

/// Leaves packed as one independent run: the leaves of the whole tree are cut into runs of
/// this many, packed in parallel; a run's triangles never share a node with another run's
/// (so the image is the same for any thread count).
const PACK_RUN: usize = 1 << 14;

/// The triangle nodes of a run of leaves, already encoded.
#[derive(Default)]
struct Run {
    /// Node bytes in packing order; word@60 is the IJ control word (the writer replaces it
    /// in mode 0, where it depends on the node's ordinal in the whole image).
    nodes: Vec<TriangleNode>,
    /// Per node: the primitive id in each slot, `u32::MAX` when the slot is unused.
    prims: Vec<[u32; 4]>,
    /// Per leaf of the run: `4 * (node index within the run) + slot k`.
    place: Vec<u32>,
    /// `histogram[i]`: nodes of the run holding i triangles.
    histogram: [usize; 5],
}

impl Run {
    fn with_capacity(nodes: usize, leaves: usize) -> Run {
        Run {
            nodes: Vec::with_capacity(nodes),
            prims: Vec::with_capacity(nodes),
            place: Vec::with_capacity(leaves),
            histogram: [0; 5],
        }
    }

    /// Appends the finished `pack`; `ij_nibbles` is [`IJ_NIBBLES`] (read once per run).
    #[inline(always)]
    fn push(&mut self, pack: &Pack, ij_nibbles: &[[u8; 3]; 4]) {
        let mut ij = IjControl(0);
        for (k, &(prim, r)) in pack.used.iter().enumerate() {
            if prim != u32::MAX {
                ij = ij.with_nibble(k, ij_nibbles[k][r as usize]);
            }
        }
        self.nodes.push(TriangleNode {
            vertices: pack.verts.map(vertex_f32),
            word: ij.0,
        });
        self.prims.push(pack.used.map(|(prim, _)| prim));
        self.histogram[pack.count as usize] += 1;
    }
}

/// `IJ_NIBBLES[k][r]`: the IJ nibble of slot k holding a triangle with rotation r.
static IJ_NIBBLES: std::sync::LazyLock<[[u8; 3]; 4]> = std::sync::LazyLock::new(|| {
    std::array::from_fn(|k| {
        let hw = TRIANGLE_VERTICES[k];
        std::array::from_fn(|r| {
            let order = std::array::from_fn(|j| hw[(j + r) % 3]);
            ij_nibble(k, order).expect("a rotation of the slot")
        })
    })
});

/// The triangle nodes of all runs of leaves.
struct Packing {
    runs: Vec<Run>,
    /// Per run: the index (triangle node ordinal) of its first node.
    first: Vec<u32>,
}

impl Packing {
    fn new(runs: Vec<Run>) -> Packing {
        let mut first = Vec::with_capacity(runs.len());
        let mut total = 0u32;
        for run in &runs {
            first.push(total);
            total += run.nodes.len() as u32;
        }
        Packing { runs, first }
    }

    /// Number of packs (triangle nodes).
    fn len(&self) -> usize {
        self.runs.iter().map(|run| run.nodes.len()).sum()
    }

    /// The pack (triangle node ordinal) and slot of leaf `l`.
    #[inline]
    fn place(&self, l: u32) -> (u32, u8) {
        let run = l as usize / PACK_RUN;
        let place = self.runs[run].place[l as usize % PACK_RUN];
        (self.first[run] + (place >> 2), (place & 3) as u8)
    }

    /// Triangle node `o` (ordinal), looked up from `run`, the run of the previous lookup
    /// (updated): consecutive lookups in increasing order (the depth-first memory order) stay
    /// in or step to the next run.
    #[inline]
    fn node(&self, o: u32, run: &mut usize) -> &TriangleNode {
        let holds = |r: usize| {
            let first = self.first[r];
            o >= first && o - first < self.runs[r].nodes.len() as u32
        };
        if !holds(*run) {
            *run = if *run + 1 < self.runs.len() && holds(*run + 1) {
                *run + 1
            } else {
                // The last run starting at or before o holds it (of runs starting at the same
                // ordinal, all but the last are empty).
                self.first.partition_point(|&first| first <= o) - 1
            };
        }
        &self.runs[*run].nodes[(o - self.first[*run]) as usize]
    }

    /// Per triangle slot `4 * o + k`: the primitive id, or `u32::MAX`.
    fn slot_primitives(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(4 * self.len());
        for run in &self.runs {
            out.extend_from_slice(bytemuck::cast_slice(&run.prims));
        }
        out
    }
}

/// Look-ahead state of [`pack_leaves`]: the vertices of the current leaf and of at least
/// the next `PACK_WINDOW` leaves, leaf l at entry `l % RING`, read from the mesh once each.
struct Ring {
    bits: [[VertexBits; 3]; RING],
    /// `fingerprints[j][i]` and `fingerprints[j][i + RING]`: the fingerprint of vertex j of
    /// entry i (twice, so that any `PACK_WINDOW` consecutive entries are one load).
    fingerprints: [[u32; 2 * RING]; 3],
}

const RING: usize = 2 * PACK_WINDOW;

impl Ring {
    #[inline]
    fn fill(&mut self, l: usize, mesh: &Mesh, prim: u32) {
        let [a, b, c] = mesh.triangle(prim);
        let bits = [vertex_bits(a), vertex_bits(b), vertex_bits(c)];
        debug_assert!(!bits.contains(&FREE_VERTEX));
        let i = l % RING;
        self.bits[i] = bits;
        for j in 0..3 {
            let f = fingerprint(bits[j]);
            self.fingerprints[j][i] = f;
            self.fingerprints[j][i + RING] = f;
        }
    }
}

/// Packs a run of leaves (in order) into triangle nodes.
///
/// A leaf joins the first of the last `PACK_WINDOW` opened nodes it fits in (`Pack::
/// try_place`), or opens a node with itself in slot 0, rotated so that the vertex shared
/// with most of the next `PACK_WINDOW` leaves becomes V2, the vertex all four slots share.
/// Only the window's nodes are kept open (as vertex bit patterns); a node leaving the
/// window is encoded.
fn pack_leaves(leaves: &[u32], mesh: &Mesh, max_per_node: u8) -> Run {
    let n = leaves.len();
    let ij_nibbles = *IJ_NIBBLES;
    let mut run = Run::with_capacity(n / 2 + 1, n);
    let mut ring = Ring {
        bits: [[FREE_VERTEX; 3]; RING],
        fingerprints: [[0; 2 * RING]; 3],
    };
    for l in 0..PACK_WINDOW.min(n) {
        ring.fill(l, mesh, leaves[l]);
    }
    // The open nodes: node p at `open[p % PACK_WINDOW]` for the last `PACK_WINDOW` ones,
    // with the fingerprint of its centre (V2, set when it is opened and never changed) at
    // `centres[p % PACK_WINDOW]`.
    let mut open = [EMPTY_PACK; PACK_WINDOW];
    let mut centres = [0u32; PACK_WINDOW];
    let mut opened = 0usize;
    for (leaf, &prim) in leaves.iter().enumerate() {
        if leaf % PACK_WINDOW == 0 {
            // The next `PACK_WINDOW` leaves, read in one batch so that the (scattered) mesh
            // reads overlap; the batch after it has its positions prefetched (through its
            // indices, prefetched one batch earlier).
            for l in leaf + PACK_WINDOW..(leaf + 2 * PACK_WINDOW).min(n) {
                ring.fill(l, mesh, leaves[l]);
            }
            for l in leaf + 2 * PACK_WINDOW..(leaf + 3 * PACK_WINDOW).min(n) {
                for v in mesh.indices[leaves[l] as usize] {
                    prefetch(&mesh.positions[v as usize]);
                }
            }
            for l in leaf + 3 * PACK_WINDOW..(leaf + 4 * PACK_WINDOW).min(n) {
                prefetch(&mesh.indices[leaves[l] as usize]);
            }
        }
        let i = leaf % RING;
        let tri = ring.bits[i];
        let f = [0, 1, 2].map(|j| ring.fingerprints[j][i]);
        let mut placed = None;
        if max_per_node > 1 {
            let lo = opened.saturating_sub(PACK_WINDOW);
            // Window nodes whose centre may be a vertex of this triangle (every slot uses
            // V2, so no other node can take it): bit i stands for node `lo + i`.
            // candidates bit i = centres[i] is one of the three fingerprints.
            let [f0, f1, f2] = f.map(wide::u32x8::splat);
            let c = wide::u32x8::new(centres);
            let mut candidates = (c.simd_eq(f0) | c.simd_eq(f1) | c.simd_eq(f2)).to_bitmask();
            let w = PACK_WINDOW as u32;
            let rot = (lo % PACK_WINDOW) as u32;
            candidates = ((candidates >> rot) | (candidates << (w - rot))) & ((1 << w) - 1);
            candidates &= (1u32 << (opened - lo)) - 1;
            while candidates != 0 {
                let p = lo + candidates.trailing_zeros() as usize;
                candidates &= candidates - 1;
                let pack = &mut open[p % PACK_WINDOW];
                if pack.count < max_per_node {
                    if let Some(k) = pack.try_place(&tri, prim) {
                        placed = Some((p, k));
                        break;
                    }
                }
            }
        }
        let (p, k) = placed.unwrap_or_else(|| {
            let mut best_r = 0;
            if max_per_node > 1 {
                // counts[j]: look-ahead leaves with this triangle's vertex j.
                // ahead bit t = leaf + 1 + t < n
                let ahead = (1u32 << (n - leaf - 1).min(PACK_WINDOW)) - 1;
                let s = (leaf + 1) % RING;
                let window = |j: usize| {
                    wide::u32x8::new(
                        ring.fingerprints[j][s..s + PACK_WINDOW]
                            .try_into()
                            .expect("a window of the ring"),
                    )
                };
                let [w0, w1, w2] = [window(0), window(1), window(2)];
                let mut counts = [0u32; 3];
                for (j, count) in counts.iter_mut().enumerate() {
                    // matches bit t = look-ahead leaf t has a vertex with fingerprint f[j]
                    let fj = wide::u32x8::splat(f[j]);
                    let mut matches =
                        (w0.simd_eq(fj) | w1.simd_eq(fj) | w2.simd_eq(fj)).to_bitmask() & ahead;
                    while matches != 0 {
                        let t = matches.trailing_zeros() as usize;
                        matches &= matches - 1;
                        *count += ring.bits[(leaf + 1 + t) % RING].contains(&tri[j]) as u32;
                    }
                }
                let mut best_count = 0;
                for r in 0..3 {
                    let count = counts[(5 - r) % 3];
                    if count > best_count {
                        best_count = count;
                        best_r = r;
                    }
                }
            }
            let slot = opened % PACK_WINDOW;
            if opened >= PACK_WINDOW {
                run.push(&open[slot], &ij_nibbles);
            }
            let mut pack = EMPTY_PACK;
            let hw = TRIANGLE_VERTICES[0];
            for j in 0..3 {
                pack.verts[hw[(j + best_r) % 3]] = tri[j];
            }
            pack.used[0] = (prim, best_r as u8);
            pack.count = 1;
            centres[slot] = fingerprint(pack.verts[2]);
            open[slot] = pack;
            opened += 1;
            (opened - 1, 0)
        });
        run.place.push(4 * p as u32 + k as u32);
    }
    for p in opened.saturating_sub(PACK_WINDOW)..opened {
        run.push(&open[p % PACK_WINDOW], &ij_nibbles);
    }
    run
}

/// A hint to bring `value`'s cache line in (no effect on results).
#[inline(always)]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// One node per cluster, in leaf order; leaf l is pointed at with type `count - 1`.
fn cluster_packs(leaves: &[u32], mesh: &Mesh, clusters: &[Cluster]) -> Run {
    let ij_nibbles = *IJ_NIBBLES;
    let mut run = Run::with_capacity(leaves.len(), leaves.len());
    for (l, &ci) in leaves.iter().enumerate() {
        let c = &clusters[ci as usize];
        let mut pack = EMPTY_PACK;
        for k in 0..c.count as usize {
            let (prim, r) = c.tris[k];
            let tri = mesh.triangle(prim).map(vertex_bits);
            let hw = TRIANGLE_VERTICES[k];
            for j in 0..3 {
                let v = &mut pack.verts[hw[(j + r as usize) % 3]];
                assert!(
                    *v == FREE_VERTEX || *v == tri[j],
                    "cluster {ci} does not fit the node connectivity"
                );
                *v = tri[j];
            }
            pack.used[k] = (prim, r);
        }
        pack.count = c.count;
        run.push(&pack, &ij_nibbles);
        run.place.push(4 * l as u32 + c.count as u32 - 1);
    }
    run
}

/// The binary16 bit pattern of `x` rounded toward -inf (`up` false) or +inf (`up` true):
/// bit for bit [`f16_round_down`](crate::hw::node::f16_round_down) /
/// [`f16_round_up`](crate::hw::node::f16_round_up), computed on the bits (no float
/// conversions): truncate the magnitude, then step one unit away from zero when bits were
/// lost and the direction of rounding points away from zero.
fn f16_bits_directed(x: f32, up: bool) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) as u16 & 0x8000;
    let abs = bits & 0x7fff_ffff;
    let (magnitude, inexact) = if abs > 0x7f80_0000 {
        // NaN: whatever the conversion gives (the hardware never sees one from here).
        return f16::from_f32(x).to_bits();
    } else if abs == 0x7f80_0000 {
        (0x7c00, false)
    } else if abs >= 0x4780_0000 {
        // |x| >= 2^16: above the largest finite binary16 (65504).
        (0x7bff, true)
    } else if abs >= 0x3880_0000 {
        // Normal binary16 (|x| >= 2^-14): rebias the exponent, keep 10 mantissa bits.
        ((abs - 0x3800_0000) >> 13, abs & 0x1fff != 0)
    } else if abs >= 0x0080_0000 {
        // Subnormal binary16: the significand in units of 2^-24.
        let significand = (abs & 0x007f_ffff) | 0x0080_0000;
        let shift = 126 - (abs >> 23);
        if shift >= 32 {
            (0, true)
        } else {
            (significand >> shift, significand & ((1 << shift) - 1) != 0)
        }
    } else {
        // Zero or an f32 subnormal (below 2^-24).
        (0, abs != 0)
    };
    let away = up == (sign == 0);
    sign | (magnitude + (inexact && away) as u32) as u16
}

/// The f32 value of binary16 bits (exact).
fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let magnitude = (h & 0x7fff) as u32;
    if (0x0400..0x7c00).contains(&magnitude) {
        f32::from_bits(sign | ((magnitude << 13) + 0x3800_0000))
    } else if magnitude == 0 {
        f32::from_bits(sign)
    } else {
        f16::from_bits(h).to_f32()
    }
}

/// [`f16_bits_directed`] and the f32 value of its result, with a short path for the usual
/// case of a normal binary16 result below 65504: clear the 13 low mantissa bits (truncation
/// toward zero), then add one unit of binary16 precision when bits were lost and the
/// rounding direction points away from zero (the carry runs into the exponent correctly).
#[inline(always)]
fn f16_directed(x: f32, up: bool) -> (u16, f32) {
    let bits = x.to_bits();
    let abs = bits & 0x7fff_ffff;
    // 2^-14 <= |x| < 65504: the result is normal and finite.
    if abs.wrapping_sub(0x3880_0000) < 0x477f_e000 - 0x3880_0000 {
        let away = up == (bits >> 31 == 0);
        let step = ((abs & 0x1fff != 0) & away) as u32;
        let rounded = (bits & !0x1fff) + (step << 13);
        let h = ((rounded >> 16) & 0x8000) | (((rounded & 0x7fff_ffff) - 0x3800_0000) >> 13);
        (h as u16, f32::from_bits(rounded))
    } else {
        let h = f16_bits_directed(x, up);
        (h, f16_bits_to_f32(h))
    }
}

/// The binary16 bits `[min.xyz, max.xyz]` of a box as the 12 bytes of a box slot, little
/// endian: bytes 0..8 (`min.x | min.y << 16 | min.z << 32 | max.x << 48`) and bytes 8..12
/// (`max.y | max.z << 16`). Two words, so that they reach the image from registers.
#[derive(Clone, Copy, Debug, PartialEq)]
struct F16Bits(u64, u32);

impl F16Bits {
    /// The bits of a box whose six bounds are binary16 NaN (an empty slot).
    const NAN: F16Bits = F16Bits::new([0x7e00; 6]);

    const fn new(h: [u16; 6]) -> F16Bits {
        F16Bits(
            h[0] as u64 | (h[1] as u64) << 16 | (h[2] as u64) << 32 | (h[3] as u64) << 48,
            h[4] as u32 | (h[5] as u32) << 16,
        )
    }

    /// `[min.xyz, max.xyz]`.
    #[cfg(test)]
    fn halves(self) -> [u16; 6] {
        let (a, b) = (self.0, self.1);
        [a, a >> 16, a >> 32, a >> 48, b as u64, (b >> 16) as u64].map(|h| h as u16)
    }

    /// Writes the 12 bytes of the slot.
    #[inline(always)]
    fn write(self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.0.to_le_bytes());
        out[8..12].copy_from_slice(&self.1.to_le_bytes());
    }
}

// The writer puts the children at bytes 0..16 and the boxes from byte 16 on, 12 (FP16) or
// 24 (FP32) bytes per slot.
const _: () = {
    assert!(std::mem::offset_of!(BoxNodeF16, boxes) == 16);
    assert!(std::mem::offset_of!(BoxNodeF32, boxes) == 16);
    assert!(std::mem::size_of::<BoxNodeF16>() == 64);
    assert!(std::mem::size_of::<BoxNodeF32>() == 128);
};

/// The binary16 bits of a box and the f32 box they stand for.
type F16Box = (F16Bits, ([f32; 3], [f32; 3]));

/// A box stored in an FP16 node: its binary16 bits `[min.xyz, max.xyz]` (min rounded toward
/// -inf, max toward +inf) and the f32 box the hardware sees.
#[inline(always)]
fn f16_box(min: Vec3A, max: Vec3A) -> F16Box {
    match f16_box_normal(min, max) {
        Some(out) => out,
        None => f16_box_general(min, max),
    }
}

/// [`f16_box`] one bound at a time (subnormal, huge or zero bounds).
#[cold]
#[inline(never)]
fn f16_box_general(min: Vec3A, max: Vec3A) -> F16Box {
    let (x0, x0f) = f16_directed(min.x, false);
    let (y0, y0f) = f16_directed(min.y, false);
    let (z0, z0f) = f16_directed(min.z, false);
    let (x1, x1f) = f16_directed(max.x, true);
    let (y1, y1f) = f16_directed(max.y, true);
    let (z1, z1f) = f16_directed(max.z, true);
    (
        F16Bits::new([x0, y0, z0, x1, y1, z1]),
        ([x0f, y0f, z0f], [x1f, y1f, z1f]),
    )
}

/// The bit patterns of x, y, z, and 1.0 in the fourth lane (which passes the range check of
/// [`f16_box_normal`]).
#[inline(always)]
fn box_lane_bits(v: Vec3A) -> wide::i32x4 {
    use wide::i32x4;
    #[cfg(target_arch = "x86_64")]
    {
        let bits: i32x4 = bytemuck::cast(std::arch::x86_64::__m128::from(v));
        (bits & i32x4::new([-1, -1, -1, 0])) | i32x4::new([0, 0, 0, 0x3f80_0000])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let [x, y, z] = v.to_array().map(|c| c.to_bits() as i32);
        i32x4::new([x, y, z, 0x3f80_0000])
    }
}

/// The short path of [`f16_directed`] on the six bounds at once, `None` unless all six take
/// it (2^-14 <= |c| < 65504).
#[inline(always)]
fn f16_box_normal(min: Vec3A, max: Vec3A) -> Option<F16Box> {
    use wide::i32x4;
    let (lo, hi) = (box_lane_bits(min), box_lane_bits(max));
    let magnitude = i32x4::splat(0x7fff_ffff);
    // outside = abs < 2^-14 || abs >= 65504, per lane
    let outside = |bits: i32x4| {
        let abs = bits & magnitude;
        abs.simd_lt(i32x4::splat(0x3880_0000)) | abs.simd_gt(i32x4::splat(0x477f_dfff))
    };
    if (outside(lo) | outside(hi)).to_bitmask() != 0 {
        return None;
    }
    // rounded = (bits & !0x1fff) + (inexact && away) << 13, where away (the rounding
    // direction points away from zero) is x < 0 for the min and x >= 0 for the max.
    let step = |bits: i32x4, away: i32x4| {
        let inexact = !(bits & i32x4::splat(0x1fff)).simd_eq(i32x4::splat(0));
        (bits & i32x4::splat(!0x1fff)) + (inexact & away & i32x4::splat(0x2000))
    };
    let negative = |bits: i32x4| bits.simd_lt(i32x4::splat(0));
    let lo = step(lo, negative(lo));
    let hi = step(hi, !negative(hi));
    // h = sign >> 16 | (|rounded| - 0x3800_0000) >> 13
    let half = |r: i32x4| {
        (((r >> 16_i32) & i32x4::splat(0x8000))
            | (((r & magnitude) - i32x4::splat(0x3800_0000)) >> 13_i32))
            .to_array()
    };
    let (hl, hh) = (half(lo), half(hi));
    let (lo, hi) = (lo.to_array(), hi.to_array());
    let value = |b: i32| f32::from_bits(b as u32);
    // Every h is in 0..=0xffff: packed with shifts and ors, in registers.
    let h = |x: i32| x as u64;
    let bits = F16Bits(
        h(hl[0]) | h(hl[1]) << 16 | h(hl[2]) << 32 | h(hh[0]) << 48,
        (h(hh[1]) | h(hh[2]) << 16) as u32,
    );
    Some((
        bits,
        (
            [value(lo[0]), value(lo[1]), value(lo[2])],
            [value(hi[0]), value(hi[1]), value(hi[2])],
        ),
    ))
}

/// The f32 box as the hardware will see it for a node of type `fp16`.
fn stored_box(min: Vec3A, max: Vec3A, fp16: bool) -> ([f32; 3], [f32; 3]) {
    if fp16 {
        f16_box(min, max).1
    } else {
        (min.to_array(), max.to_array())
    }
}

/// Writes box slot `s` of a box node into `boxes` (the node's bytes from 16 on): `bounds`
/// rounded outward in an FP16 node, copied in an FP32 one, or NaN bounds for an empty slot
/// (which can never be hit). Returns the box the hardware sees.
#[inline(always)]
fn write_slot_box(
    boxes: &mut [u8],
    s: usize,
    fp16: bool,
    bounds: Option<(Vec3A, Vec3A)>,
) -> ([f32; 3], [f32; 3]) {
    match (fp16, bounds) {
        (true, Some((lo, hi))) => {
            let (bits, stored) = f16_box(lo, hi);
            bits.write(&mut boxes[12 * s..]);
            stored
        }
        (true, None) => {
            F16Bits::NAN.write(&mut boxes[12 * s..]);
            ([f32::NAN; 3], [f32::NAN; 3])
        }
        (false, bounds) => {
            let (lo, hi) = bounds.map_or(([f32::NAN; 3], [f32::NAN; 3]), |(lo, hi)| {
                (lo.to_array(), hi.to_array())
            });
            let b = [lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]];
            boxes[24 * s..24 * s + 24].copy_from_slice(bytemuck::bytes_of(&b));
            (lo, hi)
        }
    }
}

fn half_area_arr(b: &([f32; 3], [f32; 3])) -> f32 {
    half_area(Vec3A::from(b.0), Vec3A::from(b.1))
}

/// The memory layout of the image: the block of every box node and triangle node, the
/// memory order and the per-block and per-slot side tables.
#[derive(Debug, PartialEq)]
struct Layout {
    node_block: Vec<u32>,
    pack_block: Vec<u32>,
    /// Box nodes (n) and triangle nodes (`PACK_ITEM | o`) in memory order.
    order: Vec<u32>,
    triangle_node_ordinal: Vec<u32>,
    box_parent: Vec<NodePointer>,
    slot_parent: Vec<NodePointer>,
    /// Blocks in all (may exceed the 29-bit pointer range: checked by the caller).
    blocks: u64,
    max_depth: usize,
    box_slots_used: usize,
}

fn box_type(fp16: bool) -> NodeType {
    if fp16 {
        NodeType::BoxF16
    } else {
        NodeType::BoxF32
    }
}

/// A pointer, or INVALID past the 29-bit limit (reported once the layout is done).
fn pointer(block: u64, ty: NodeType) -> NodePointer {
    if block < 1 << 29 {
        NodePointer::new(block, ty)
    } else {
        NodePointer::INVALID
    }
}

/// The layout by a walk of the tree (a stack for depth-first order, a queue for
/// breadth-first), one node after the other: a box node, then the triangle nodes its slots
/// open, in slot order.
fn layout_serial(
    tree: &Tree4,
    packs: &Packing,
    fp16: &[bool],
    chains: bool,
    node_order: NodeOrder,
) -> Layout {
    const UNPLACED: u32 = u32::MAX;
    let mut node_block = vec![UNPLACED; tree.nodes.len()];
    let mut pack_block = vec![UNPLACED; packs.len()];
    let mut next_block: u64 = 0;
    let mut order: Vec<u32> = Vec::with_capacity(tree.nodes.len() + packs.len());
    let estimate = tree.nodes.len() + packs.len();
    let mut triangle_node_ordinal: Vec<u32> = Vec::with_capacity(estimate);
    let mut box_parent: Vec<NodePointer> = Vec::with_capacity(estimate);
    let mut slot_parent = vec![NodePointer::INVALID; 4 * packs.len()];
    let (mut max_depth, mut box_slots_used) = (0, 0);
    // Places box node n (with its parent's pointer and its depth); returns its pointer.
    let mut place_node = |n: usize, parent: NodePointer, depth: u32| {
        node_block[n] = next_block as u32;
        let here = pointer(next_block, box_type(fp16[n]));
        order.push(n as u32);
        box_parent.push(parent);
        triangle_node_ordinal.push(u32::MAX);
        if !fp16[n] {
            box_parent.push(NodePointer::INVALID);
            triangle_node_ordinal.push(u32::MAX);
        }
        next_block += if fp16[n] { 1 } else { 2 };
        max_depth = max_depth.max(depth as usize);
        for slot in tree.nodes[n].slots.iter().flatten() {
            box_slots_used += 1;
            if let Slot::Leaf(l) = *slot {
                let (p, k) = packs.place(l);
                let first = if chains { 0 } else { k };
                for j in first..=k {
                    slot_parent[4 * p as usize + j as usize] = here;
                }
                if pack_block[p as usize] == UNPLACED {
                    pack_block[p as usize] = next_block as u32;
                    order.push(PACK_ITEM | p);
                    box_parent.push(NodePointer::INVALID);
                    triangle_node_ordinal.push(p);
                    next_block += 1;
                }
            }
        }
        here
    };
    match node_order {
        NodeOrder::DepthFirst => {
            let mut stack = vec![(0usize, NodePointer::INVALID, 1u32)];
            while let Some((n, parent, depth)) = stack.pop() {
                let here = place_node(n, parent, depth);
                for slot in tree.nodes[n].slots.iter().rev().flatten() {
                    if let Slot::Node(c) = *slot {
                        stack.push((c as usize, here, depth + 1));
                    }
                }
            }
        }
        NodeOrder::BreadthFirst => {
            let mut queue = VecDeque::from([(0usize, NodePointer::INVALID, 1u32)]);
            while let Some((n, parent, depth)) = queue.pop_front() {
                let here = place_node(n, parent, depth);
                for slot in tree.nodes[n].slots.iter().flatten() {
                    if let Slot::Node(c) = *slot {
                        queue.push_back((c as usize, here, depth + 1));
                    }
                }
            }
        }
    }
    Layout {
        node_block,
        pack_block,
        order,
        triangle_node_ordinal,
        box_parent,
        slot_parent,
        blocks: next_block,
        max_depth,
        box_slots_used,
    }
}

/// Box nodes per task of [`layout_depth_first`].
const LAYOUT_CHUNK: usize = 4096;

/// The depth-first layout of [`layout_serial`], computed in parallel over runs of box nodes.
///
/// The collapse emits box nodes in depth-first pre-order with children in slot order, and
/// leaves in the order their slots are met on that walk; a triangle node is placed where
/// its first leaf (slot 0, or its only leaf with leaf chains) is met, and packs are numbered
/// in that order. So box node n starts at block `n + (FP32 nodes before n) + (packs opened
/// by leaves of nodes before n)`, its packs follow it in ordinal order, and prefix sums over
/// runs of nodes give every run its blocks, packs and side-table ranges. The few triangle
/// slots whose pack a previous run opened are filled after the parallel pass.
fn layout_depth_first(tree: &Tree4, packs: &Packing, fp16: &[bool], chains: bool) -> Layout {
    let nodes = &tree.nodes;
    // Packs opened by the leaves of box node n, and its blocks.
    let opened = |n: usize| {
        nodes[n]
            .slots
            .iter()
            .filter(|s| match s {
                Some(Slot::Leaf(l)) => chains || packs.place(*l).1 == 0,
                _ => false,
            })
            .count()
    };
    let own_blocks = |n: usize| if fp16[n] { 1 } else { 2 };
    // Per box node: the packs it opens (at most 4).
    let mut opens = vec![0u8; nodes.len()];
    opens
        .par_chunks_mut(LAYOUT_CHUNK)
        .enumerate()
        .for_each(|(c, out)| {
            for (i, o) in out.iter_mut().enumerate() {
                *o = opened(c * LAYOUT_CHUNK + i) as u8;
            }
        });
    // Per run of nodes: (blocks, packs) in it.
    let counts: Vec<(usize, usize)> = opens
        .par_chunks(LAYOUT_CHUNK)
        .enumerate()
        .map(|(c, opens)| {
            opens.iter().enumerate().fold((0, 0), |(b, p), (i, &o)| {
                let n = c * LAYOUT_CHUNK + i;
                (b + own_blocks(n) + o as usize, p + o as usize)
            })
        })
        .collect();
    let mut starts = Vec::with_capacity(counts.len() + 1);
    let (mut blocks, mut pack_count) = (0usize, 0usize);
    for &(b, p) in &counts {
        starts.push((blocks, pack_count));
        blocks += b;
        pack_count += p;
    }
    starts.push((blocks, pack_count));
    debug_assert_eq!(pack_count, packs.len());

    // Node blocks.
    let mut node_block = vec![0u32; nodes.len()];
    node_block
        .par_chunks_mut(LAYOUT_CHUNK)
        .zip(starts.par_iter())
        .enumerate()
        .for_each(|(c, (out, &(block, _)))| {
            let mut block = block;
            for (i, b) in out.iter_mut().enumerate() {
                let n = c * LAYOUT_CHUNK + i;
                *b = block as u32;
                block += own_blocks(n) + opens[n] as usize;
            }
        });

    // Everything else, each run in its own ranges of the outputs.
    let mut pack_block = vec![0u32; packs.len()];
    let mut order = vec![0u32; nodes.len() + packs.len()];
    let mut triangle_node_ordinal: Vec<u32> = vec![0; blocks];
    let mut box_parent: Vec<NodePointer> = vec![NodePointer::from_u32(0); blocks];
    let mut slot_parent: Vec<NodePointer> = Vec::with_capacity(4 * packs.len());
    slot_parent.resize(4 * packs.len(), NodePointer::INVALID);
    struct Run<'a> {
        first_node: usize,
        first_block: usize,
        first_pack: usize,
        pack_block: &'a mut [u32],
        order: &'a mut [u32],
        triangle_node_ordinal: &'a mut [u32],
        box_parent: &'a mut [NodePointer],
        slot_parent: &'a mut [NodePointer],
    }
    let mut runs = Vec::with_capacity(counts.len());
    {
        let (mut pb, mut or, mut tn, mut bp, mut sp) = (
            &mut pack_block[..],
            &mut order[..],
            &mut triangle_node_ordinal[..],
            &mut box_parent[..],
            &mut slot_parent[..],
        );
        for c in 0..counts.len() {
            let ((b0, p0), (b1, p1)) = (starts[c], starts[c + 1]);
            let n0 = c * LAYOUT_CHUNK;
            let n1 = (n0 + LAYOUT_CHUNK).min(nodes.len());
            let (pb_run, pb_rest) = std::mem::take(&mut pb).split_at_mut(p1 - p0);
            let (or_run, or_rest) = std::mem::take(&mut or).split_at_mut(n1 - n0 + p1 - p0);
            let (tn_run, tn_rest) = std::mem::take(&mut tn).split_at_mut(b1 - b0);
            let (bp_run, bp_rest) = std::mem::take(&mut bp).split_at_mut(b1 - b0);
            let (sp_run, sp_rest) = std::mem::take(&mut sp).split_at_mut(4 * (p1 - p0));
            (pb, or, tn, bp, sp) = (pb_rest, or_rest, tn_rest, bp_rest, sp_rest);
            runs.push(Run {
                first_node: n0,
                first_block: b0,
                first_pack: p0,
                pack_block: pb_run,
                order: or_run,
                triangle_node_ordinal: tn_run,
                box_parent: bp_run,
                slot_parent: sp_run,
            });
        }
    }
    let node_pointer = |n: usize| pointer(node_block[n] as u64, box_type(fp16[n]));
    // Per run: (max depth, used slots, slot-parent writes into earlier runs' packs).
    type RunResult = (usize, usize, Vec<(usize, NodePointer)>);
    let results: Vec<RunResult> = runs
        .into_par_iter()
        .map(|run| {
            let (mut max_depth, mut used) = (0usize, 0usize);
            let mut spilled = Vec::new();
            let (mut block, mut pack, mut item) = (run.first_block, run.first_pack, 0);
            let n1 = (run.first_node + LAYOUT_CHUNK).min(nodes.len());
            for n in run.first_node..n1 {
                let node = &nodes[n];
                debug_assert_eq!(node_block[n] as usize, block);
                let here = node_pointer(n);
                let local = block - run.first_block;
                run.order[item] = n as u32;
                item += 1;
                run.box_parent[local] = if node.parent == NO_PARENT {
                    NodePointer::INVALID
                } else {
                    node_pointer(node.parent as usize)
                };
                run.triangle_node_ordinal[local] = u32::MAX;
                if !fp16[n] {
                    run.box_parent[local + 1] = NodePointer::INVALID;
                    run.triangle_node_ordinal[local + 1] = u32::MAX;
                }
                block += own_blocks(n);
                max_depth = max_depth.max(node.depth as usize);
                for slot in node.slots.iter().flatten() {
                    used += 1;
                    let Slot::Leaf(l) = *slot else { continue };
                    let (p, k) = packs.place(l);
                    let p = p as usize;
                    let first = if chains { 0 } else { k };
                    for j in first as usize..=k as usize {
                        if p >= run.first_pack {
                            run.slot_parent[4 * (p - run.first_pack) + j] = here;
                        } else {
                            spilled.push((4 * p + j, here));
                        }
                    }
                    if chains || k == 0 {
                        debug_assert_eq!(p, pack);
                        let local = block - run.first_block;
                        run.pack_block[p - run.first_pack] = block as u32;
                        run.order[item] = PACK_ITEM | p as u32;
                        run.box_parent[local] = NodePointer::INVALID;
                        run.triangle_node_ordinal[local] = p as u32;
                        item += 1;
                        block += 1;
                        pack += 1;
                    }
                }
            }
            (max_depth, used, spilled)
        })
        .collect();
    let (mut max_depth, mut box_slots_used) = (0, 0);
    for (depth, used, spilled) in results {
        max_depth = max_depth.max(depth);
        box_slots_used += used;
        for (i, parent) in spilled {
            slot_parent[i] = parent;
        }
    }
    Layout {
        node_block,
        pack_block,
        order,
        triangle_node_ordinal,
        box_parent,
        slot_parent,
        blocks: blocks as u64,
        max_depth,
        box_slots_used,
    }
}

/// Encodes `tree` into an image and measures it.
/// With `clusters` (leaf chains), leaf `l` of the tree is cluster `tree.leaves[l]`, stored
/// as one triangle node whose slots `0..n` hold it, pointed at with `type = n - 1`.
pub fn encode(
    tree: &Tree4,
    mesh: &Mesh,
    options: &BuildOptions,
    clusters: Option<&[Cluster]>,
) -> Result<(BvhImage, Metrics)> {
    let runs = tree
        .leaves
        .par_chunks(PACK_RUN)
        .map(|leaves| match clusters {
            None => pack_leaves(leaves, mesh, options.triangles_per_node),
            Some(clusters) => cluster_packs(leaves, mesh, clusters),
        })
        .collect();
    let packs = Packing::new(runs);
    let chains = clusters.is_some();

    // Box formats.
    let fp16: Vec<bool> = (0..tree.nodes.len())
        .into_par_iter()
        .map(|n| match options.box_format {
            BoxFormat::Fp32 => false,
            BoxFormat::Fp16 => true,
            BoxFormat::Mixed { max_area_growth } => {
                let (mut exact, mut rounded) = (0.0f64, 0.0f64);
                for s in 0..4 {
                    if tree.nodes[n].slots[s].is_some() {
                        let (lo, hi) = tree.child_box(n, s);
                        exact += half_area(lo, hi) as f64;
                        rounded += half_area_arr(&stored_box(lo, hi, true)) as f64;
                    }
                }
                rounded <= exact * (1.0 + max_area_growth as f64)
            }
        })
        .collect();

    let Layout {
        node_block,
        pack_block,
        order,
        triangle_node_ordinal,
        box_parent,
        slot_parent,
        blocks: next_block,
        max_depth,
        box_slots_used,
    } = match options.node_order {
        NodeOrder::DepthFirst => layout_depth_first(tree, &packs, &fp16, chains),
        NodeOrder::BreadthFirst => layout_serial(tree, &packs, &fp16, chains, options.node_order),
    };
    let mut metrics = Metrics {
        max_depth,
        box_slots_used,
        ..Metrics::default()
    };
    let blocks = next_block;
    if blocks > 1 << 29 {
        return Err(Error::Other(format!(
            "BVH image of {blocks} 64-byte nodes does not fit 32-bit node pointers (2^29 max)"
        )));
    }
    let blocks = blocks as usize;
    debug_assert_eq!(box_parent.len(), blocks);
    let box_type = |n: usize| box_type(fp16[n]);
    let node_pointer = |n: usize| NodePointer::new(node_block[n] as u64, box_type(n));
    let leaf_pointer = |l: u32| {
        let (p, k) = packs.place(l);
        NodePointer::new(
            pack_block[p as usize] as u64,
            NodeType::triangle(k as usize),
        )
    };

    // Written once, in order, just below: fresh huge pages would cost more to fault in than
    // they save (`host` module docs; the dragon's first encode took 0.17 s instead of 0.21 s,
    // median of 6 alternating rounds, and tracing from the image was as fast).
    let mut bytes: Vec<u8> = crate::host::without_huge_pages(|| vec![0; blocks * 64]);
    let slot_primitive = packs.slot_primitives();

    let root_area = {
        let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
        for s in 0..4 {
            if tree.nodes[0].slots[s].is_some() {
                let (l, h) = tree.child_box(0, s);
                let (l, h) = stored_box(l, h, fp16[0]);
                lo = lo.min(Vec3A::from(l));
                hi = hi.max(Vec3A::from(h));
            }
        }
        half_area(lo, hi)
    };

    // Node bytes, in parallel over pieces of the memory order (each piece owns the block
    // range from its first node to the next piece's first node).
    let item_block = |item: u32| {
        if item & PACK_ITEM != 0 {
            pack_block[(item & !PACK_ITEM) as usize] as usize
        } else {
            node_block[item as usize] as usize
        }
    };
    let pieces: Vec<&[u32]> = order.chunks(WRITE_PIECE).collect();
    let mut slices = Vec::with_capacity(pieces.len());
    let mut rest = &mut bytes[..];
    for (i, piece) in pieces.iter().enumerate() {
        let end = pieces.get(i + 1).map_or(blocks, |next| item_block(next[0]));
        let (b, r) = rest.split_at_mut((end - item_block(piece[0])) * 64);
        rest = r;
        slices.push(b);
    }
    /// What a piece measured.
    #[derive(Default)]
    struct PieceMetrics {
        sah: f64,
        box16: usize,
        box32: usize,
    }
    let measured: Vec<PieceMetrics> = pieces
        .into_par_iter()
        .zip(slices.into_par_iter())
        .map(|(piece, bytes)| {
            let start = item_block(piece[0]);
            let mut m = PieceMetrics::default();
            // The run of the last triangle node written (see `Packing::node`).
            let mut run = 0;
            for &item in piece {
                let offset = (item_block(item) - start) * 64;
                if item & PACK_ITEM != 0 {
                    let o = (item & !PACK_ITEM) as usize;
                    let mut node = *packs.node(o as u32, &mut run);
                    if options.return_mode == TriangleReturnMode::TriangleId {
                        node.word = 4 * o as u32;
                    }
                    bytes[offset..offset + 64].copy_from_slice(bytemuck::bytes_of(&node));
                    continue;
                }
                let n = item as usize;
                let node = &tree.nodes[n];
                // The node is written in place (children, then the boxes slot by slot), each
                // box as the hardware sees it (rounded outward in FP16 nodes).
                let out = &mut bytes[offset..offset + if fp16[n] { 64 } else { 128 }];
                let (children_bytes, boxes_bytes) = out.split_at_mut(16);
                let mut children = [NodePointer::INVALID; 4];
                for s in 0..4 {
                    let bounds = node.slots[s].map(|_| tree.child_box(n, s));
                    let stored = write_slot_box(boxes_bytes, s, fp16[n], bounds);
                    let Some(slot) = node.slots[s] else { continue };
                    let area = half_area_arr(&stored);
                    match slot {
                        Slot::Node(c) => {
                            children[s] = node_pointer(c as usize);
                            m.sah += (C_BOX * area) as f64 / root_area as f64;
                        }
                        Slot::Leaf(l) => {
                            let (_, k) = packs.place(l);
                            let first = if chains { 0 } else { k };
                            let tris = k as u32 + 1 - first as u32;
                            children[s] = leaf_pointer(l);
                            m.sah += (C_TRI * tris as f32 * area) as f64 / root_area as f64;
                        }
                    }
                }
                children_bytes.copy_from_slice(bytemuck::bytes_of(&children));
                // (The user words of an FP32 node stay zero.)
                if fp16[n] {
                    m.box16 += 1;
                } else {
                    m.box32 += 1;
                }
            }
            m
        })
        .collect();
    // Box-node visit cost: the root is always visited; others when their parent slot is hit.
    let mut sah = C_BOX as f64;
    for m in &measured {
        sah += m.sah;
        metrics.box16_nodes += m.box16;
        metrics.box32_nodes += m.box32;
    }
    for run in &packs.runs {
        for i in 0..5 {
            metrics.triangles_per_node_histogram[i] += run.histogram[i];
        }
    }
    metrics.triangle_nodes = packs.len();
    if tree.leaves.is_empty() {
        sah = C_BOX as f64;
    }

    let descriptor = BvhDescriptor {
        base_address_256: 0,
        box_grow_ulps: options.box_grow_ulps,
        box_sort_enable: options.box_sort,
        size_minus_one: blocks as u64 - 1,
        triangle_return_mode: options.return_mode,
        ..BvhDescriptor::default()
    };
    let image = BvhImage {
        bytes,
        descriptor,
        root: node_pointer(0),
        triangle_node_ordinal,
        slot_primitive,
        box_parent,
        slot_parent,
        triangles_per_node: options.triangles_per_node,
        spatial_splits: options.spatial_splits && !chains,
        leaf_chains: chains,
    };
    metrics.sah_cost = sah;
    metrics.triangle_references = packs
        .runs
        .iter()
        .flat_map(|run| run.histogram.iter().enumerate().map(|(i, n)| i * n))
        .sum();
    metrics.triangles = mesh.len();
    metrics.bytes = image.bytes.len();
    metrics.finish();
    Ok((image, metrics))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::node::{f16_round_down, f16_round_up};

    /// The parallel depth-first layout equals the serial walk (blocks, memory order and all
    /// side tables) on a grid mesh of 80 000 triangles (many layout runs and packing runs,
    /// packs shared across run boundaries), with one, two and four triangles per node, leaf
    /// chains, and mixed box formats, on one and three threads.
    #[test]
    fn parallel_layout_matches_the_serial_walk() {
        use crate::bvh::build::{build_binary, PrimRef};
        use crate::bvh::cluster::fan_clusters;
        let size = 201;
        let mut positions = Vec::new();
        for y in 0..size {
            for x in 0..size {
                let h = ((x * 7 + y * 13) % 11) as f32 * 0.1;
                positions.push([x as f32, y as f32, h]);
            }
        }
        let mut indices = Vec::new();
        for y in 0..size - 1 {
            for x in 0..size - 1 {
                let v = (y * size + x) as u32;
                let s = size as u32;
                indices.push([v, v + 1, v + s + 1]);
                indices.push([v, v + s + 1, v + s]);
            }
        }
        let mesh = Mesh { positions, indices };
        let bounds = |tris: &mut dyn Iterator<Item = u32>| {
            let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
            for prim in tris {
                for v in mesh.triangle(prim) {
                    lo = lo.min(Vec3A::from(v));
                    hi = hi.max(Vec3A::from(v));
                }
            }
            (lo, hi)
        };
        for (per_node, chains) in [(1u8, false), (2, false), (4, false), (4, true)] {
            let prims: Vec<u32> = (0..mesh.len() as u32).collect();
            let clusters = if chains {
                fan_clusters(&mesh, &prims, per_node)
            } else {
                Vec::new()
            };
            let mut refs: Vec<PrimRef> = if chains {
                clusters
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let mut tris = c.tris[..c.count as usize].iter().map(|t| t.0);
                        let (lo, hi) = bounds(&mut tris);
                        PrimRef::new(lo, hi, i as u32, c.count as u32)
                    })
                    .collect()
            } else {
                prims
                    .iter()
                    .map(|&p| {
                        let (lo, hi) = bounds(&mut std::iter::once(p));
                        PrimRef::new(lo, hi, p, 1)
                    })
                    .collect()
            };
            let binary = build_binary(&mut refs);
            let tree = Tree4::collapse(binary, refs);
            let runs = tree
                .leaves
                .chunks(PACK_RUN)
                .map(|leaves| {
                    if chains {
                        cluster_packs(leaves, &mesh, &clusters)
                    } else {
                        pack_leaves(leaves, &mesh, per_node)
                    }
                })
                .collect();
            let packs = Packing::new(runs);
            // Mixed formats: every third node FP32.
            let fp16: Vec<bool> = (0..tree.nodes.len()).map(|n| n % 3 != 1).collect();
            let serial = layout_serial(&tree, &packs, &fp16, chains, NodeOrder::DepthFirst);
            assert!(tree.nodes.len() > 2 * LAYOUT_CHUNK, "{}", tree.nodes.len());
            assert!(chains || tree.leaves.len() > 2 * PACK_RUN);
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let parallel = pool.install(|| layout_depth_first(&tree, &packs, &fp16, chains));
                assert!(
                    parallel == serial,
                    "{per_node} per node, chains {chains}, {threads} threads"
                );
            }
        }
    }

    /// The one-rotation-per-slot search of a node's best slot agrees with the search over
    /// every slot and rotation, on random partly filled nodes drawn from a few vertices (so
    /// that shared edges are common).
    #[test]
    fn best_slot_matches_the_search_over_all_rotations() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let vertex = |i: u64| vertex_bits([i as f32, 0.0, 1.0]);
        let mut agreed = 0;
        for _ in 0..200_000 {
            let mut pack = EMPTY_PACK;
            pack.verts[2] = vertex(0);
            for v in [0, 1, 3, 4] {
                if next(3) != 0 {
                    pack.verts[v] = vertex(1 + next(5));
                }
            }
            for k in 0..4 {
                if next(4) == 0 {
                    pack.used[k] = (k as u32, 0);
                }
            }
            // A triangle with the centre at one vertex and two others from the same few.
            let jc = next(3) as usize;
            let mut tri = [
                vertex(1 + next(5)),
                vertex(1 + next(5)),
                vertex(1 + next(5)),
            ];
            tri[jc] = vertex(0);
            let fast = pack.best_slot(&tri, jc);
            let general = pack.best_slot_degenerate(&tri, 1 << jc);
            assert_eq!(fast, general, "{:?} {:?}", pack.verts, tri);
            agreed += fast.is_some() as usize;
        }
        assert!(agreed > 10_000, "{agreed}");
    }

    /// The bit-level directed rounding agrees with the reference (`hw::node`) on edge cases
    /// and on a million seeded random bit patterns of every magnitude.
    #[test]
    fn f16_directed_rounding_matches_the_reference() {
        let mut edge: Vec<u32> = vec![
            0,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x3380_0000,
            0x3380_0001,
            0x337f_ffff,
            0x3880_0000,
            0x387f_ffff,
            0x3880_0001,
            0x477f_e000,
            0x477f_e001,
            0x477f_f000,
            0x477f_ffff,
            0x4780_0000,
            0x7f7f_ffff,
            0x7f80_0000,
            0x3f80_0000,
            0x3f80_0001,
            0x3fff_ffff,
        ];
        edge.extend(edge.clone().iter().map(|b| b | 0x8000_0000));
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let random = (0..1_000_000).map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u32
        });
        for bits in edge.into_iter().chain(random) {
            let x = f32::from_bits(bits);
            if x.is_nan() {
                continue;
            }
            let down = f16_round_down(x);
            let up = f16_round_up(x);
            assert_eq!(
                f16_bits_directed(x, false),
                down.to_bits(),
                "down {bits:#x}"
            );
            assert_eq!(f16_bits_directed(x, true), up.to_bits(), "up {bits:#x}");
            let (h, v) = f16_directed(x, false);
            assert_eq!((h, v.to_bits()), (down.to_bits(), down.to_f32().to_bits()));
            let (h, v) = f16_directed(x, true);
            assert_eq!((h, v.to_bits()), (up.to_bits(), up.to_f32().to_bits()));
            for h in [down, up] {
                assert_eq!(
                    f16_bits_to_f32(h.to_bits()).to_bits(),
                    h.to_f32().to_bits(),
                    "{h:?}"
                );
            }
        }
        // The six-lane path (taken when every lane is a normal binary16 below 65504)
        // agrees with the scalar one.
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly moderate magnitudes, some tiny, huge and zero ones.
            let x = f32::from_bits(state as u32);
            match state >> 61 {
                0 => 0.0,
                1 | 2 => x,
                _ => ((state >> 8) as u32 as f32 / u32::MAX as f32 - 0.5) * 2000.0,
            }
        };
        for _ in 0..200_000 {
            let min = Vec3A::new(next(), next(), next());
            let max = Vec3A::new(next(), next(), next());
            if min.is_nan() || max.is_nan() {
                continue;
            }
            let (bits, (lo, hi)) = f16_box(min, max);
            let scalar: Vec<(u16, f32)> = min
                .to_array()
                .iter()
                .map(|&c| f16_directed(c, false))
                .chain(max.to_array().iter().map(|&c| f16_directed(c, true)))
                .collect();
            let values = [lo, hi].concat();
            let bits = bits.halves();
            for i in 0..6 {
                assert_eq!(bits[i], scalar[i].0, "{min} {max}");
                assert_eq!(values[i].to_bits(), scalar[i].1.to_bits(), "{min} {max}");
            }
        }
        assert_eq!(F16Bits::NAN.halves(), [f16::NAN.to_bits(); 6]);
        for h in 0..=u16::MAX {
            let reference = f16::from_bits(h).to_f32();
            let fast = f16_bits_to_f32(h);
            assert!(fast.to_bits() == reference.to_bits() || (fast.is_nan() && reference.is_nan()));
        }
    }
}
