//! Packing the tree's leaves into triangle nodes: [`pack_leaves`] (each triangle joins a
//! recently opened node that shares its vertices, see [`super::pack`]) or, with leaf chains,
//! [`cluster_packs`] (one node per fan cluster). The leaves are cut into fixed runs of
//! `PACK_RUN`, packed independently (in parallel), and [`Packing`] numbers their nodes in
//! run order: the same nodes for any thread count.

use super::pack::{vertex_bits, vertex_f32, Pack, VertexBits, EMPTY_PACK, FREE_VERTEX};
use crate::bvh::cluster::Cluster;
use crate::bvh::Mesh;
use crate::hw::{ij_nibble, IjControl, TriangleNode, TRIANGLE_VERTICES};

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
pub(super) const PACK_RUN: usize = 1 << 14;

/// The triangle nodes of a run of leaves, already encoded.
#[derive(Default)]
pub(super) struct Run {
    /// Node bytes in packing order; word@60 is the IJ control word (the writer replaces it
    /// in mode 0, where it depends on the node's ordinal in the whole image).
    pub nodes: Vec<TriangleNode>,
    /// Per node: the primitive id in each slot, `u32::MAX` when the slot is unused.
    pub prims: Vec<[u32; 4]>,
    /// Per leaf of the run: `4 * (node index within the run) + slot k`.
    pub place: Vec<u32>,
    /// `histogram[i]`: nodes of the run holding i triangles.
    pub histogram: [usize; 5],
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
pub(super) struct Packing {
    pub runs: Vec<Run>,
    /// Per run: the index (triangle node ordinal) of its first node.
    first: Vec<u32>,
}

impl Packing {
    pub fn new(runs: Vec<Run>) -> Packing {
        let mut first = Vec::with_capacity(runs.len());
        let mut total = 0u32;
        for run in &runs {
            first.push(total);
            total += run.nodes.len() as u32;
        }
        Packing { runs, first }
    }

    /// Number of packs (triangle nodes).
    pub fn len(&self) -> usize {
        self.runs.iter().map(|run| run.nodes.len()).sum()
    }

    /// The pack (triangle node ordinal) and slot of leaf `l`.
    #[inline]
    pub fn place(&self, l: u32) -> (u32, u8) {
        let run = l as usize / PACK_RUN;
        let place = self.runs[run].place[l as usize % PACK_RUN];
        (self.first[run] + (place >> 2), (place & 3) as u8)
    }

    /// Triangle node `o` (ordinal), looked up from `run`, the run of the previous lookup
    /// (updated): consecutive lookups in increasing order (the depth-first memory order) stay
    /// in or step to the next run.
    #[inline]
    pub fn node(&self, o: u32, run: &mut usize) -> &TriangleNode {
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
    pub fn slot_primitives(&self) -> Vec<u32> {
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
    /// The ring with the first `PACK_WINDOW` leaves read.
    fn new(leaves: &[u32], mesh: &Mesh) -> Ring {
        let mut ring = Ring {
            bits: [[FREE_VERTEX; 3]; RING],
            fingerprints: [[0; 2 * RING]; 3],
        };
        for (l, &prim) in leaves.iter().enumerate().take(PACK_WINDOW) {
            ring.fill(l, mesh, prim);
        }
        ring
    }

    #[inline]
    fn fill(&mut self, l: usize, mesh: &Mesh, prim: u32) {
        let [a, b, c] = mesh.triangle(prim);
        let bits = [vertex_bits(a), vertex_bits(b), vertex_bits(c)];
        debug_assert!(!bits.contains(&FREE_VERTEX));
        let i = l % RING;
        self.bits[i] = bits;
        for (fingerprints, &v) in self.fingerprints.iter_mut().zip(&bits) {
            let f = fingerprint(v);
            fingerprints[i] = f;
            fingerprints[i + RING] = f;
        }
    }

    /// At the first leaf of a window (`leaf % PACK_WINDOW == 0`): reads the next
    /// `PACK_WINDOW` leaves in one batch, so that the (scattered) mesh reads overlap, and
    /// prefetches the positions of the batch after it (through its indices, prefetched one
    /// batch earlier).
    #[inline(always)]
    fn read_ahead(&mut self, leaf: usize, leaves: &[u32], mesh: &Mesh) {
        let batch = |b: usize| {
            let start = (leaf + b * PACK_WINDOW).min(leaves.len());
            let end = (start + PACK_WINDOW).min(leaves.len());
            (start, &leaves[start..end])
        };
        let (start, next) = batch(1);
        for (l, &prim) in (start..).zip(next) {
            self.fill(l, mesh, prim);
        }
        for &prim in batch(2).1 {
            for v in mesh.indices[prim as usize] {
                prefetch(&mesh.positions[v as usize]);
            }
        }
        for &prim in batch(3).1 {
            prefetch(&mesh.indices[prim as usize]);
        }
    }

    /// The rotation that puts on V2 the vertex of `leaf`'s triangle that the most of the
    /// next `PACK_WINDOW` leaves (of `n`) share (the first of equal ones, rotation 0 when
    /// none is shared).
    #[inline(always)]
    fn centre_rotation(&self, leaf: usize, n: usize) -> usize {
        let i = leaf % RING;
        let tri = &self.bits[i];
        // ahead bit t = leaf + 1 + t < n
        let ahead = (1u32 << (n - leaf - 1).min(PACK_WINDOW)) - 1;
        let s = (leaf + 1) % RING;
        let window = |j: usize| {
            wide::u32x8::new(
                self.fingerprints[j][s..s + PACK_WINDOW]
                    .try_into()
                    .expect("a window of the ring"),
            )
        };
        let [w0, w1, w2] = [window(0), window(1), window(2)];
        // counts[j]: look-ahead leaves with this triangle's vertex j.
        let mut counts = [0u32; 3];
        for (j, count) in counts.iter_mut().enumerate() {
            // matches bit t = look-ahead leaf t has a vertex with fingerprint f[j]
            let fj = wide::u32x8::splat(self.fingerprints[j][i]);
            let mut matches =
                (w0.simd_eq(fj) | w1.simd_eq(fj) | w2.simd_eq(fj)).to_bitmask() & ahead;
            while matches != 0 {
                let t = matches.trailing_zeros() as usize;
                matches &= matches - 1;
                *count += self.bits[(leaf + 1 + t) % RING].contains(&tri[j]) as u32;
            }
        }
        // Rotation r puts mesh vertex (5 - r) % 3 on V2 (slot 0 of `TRIANGLE_VERTICES`).
        let (mut best_r, mut best_count) = (0, 0);
        for r in 0..3 {
            let count = counts[(5 - r) % 3];
            if count > best_count {
                best_count = count;
                best_r = r;
            }
        }
        best_r
    }
}

/// The open triangle nodes of [`pack_leaves`]: node p at `packs[p % PACK_WINDOW]` for the
/// last `PACK_WINDOW` opened, with the fingerprint of its centre (V2, set when it is opened
/// and never changed) at `centres[p % PACK_WINDOW]`. A node leaving the window is encoded.
struct Window {
    packs: [Pack; PACK_WINDOW],
    centres: [u32; PACK_WINDOW],
    /// Nodes opened so far.
    opened: usize,
}

impl Window {
    /// Places `tri` (leaf `prim`, vertex fingerprints `f`) in the first window node it fits
    /// in, holding fewer than `max_per_node` triangles; returns the node and the slot.
    #[inline(always)]
    fn join(
        &mut self,
        tri: &[VertexBits; 3],
        f: [u32; 3],
        prim: u32,
        max_per_node: u8,
    ) -> Option<(usize, usize)> {
        let lo = self.opened.saturating_sub(PACK_WINDOW);
        // Window nodes whose centre may be a vertex of this triangle (every slot uses
        // V2, so no other node can take it): bit i stands for node `lo + i`.
        // candidates bit i = centres[i] is one of the three fingerprints.
        let [f0, f1, f2] = f.map(wide::u32x8::splat);
        let c = wide::u32x8::new(self.centres);
        let mut candidates = (c.simd_eq(f0) | c.simd_eq(f1) | c.simd_eq(f2)).to_bitmask();
        let w = PACK_WINDOW as u32;
        let rot = (lo % PACK_WINDOW) as u32;
        candidates = ((candidates >> rot) | (candidates << (w - rot))) & ((1 << w) - 1);
        candidates &= (1u32 << (self.opened - lo)) - 1;
        while candidates != 0 {
            let p = lo + candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let pack = &mut self.packs[p % PACK_WINDOW];
            if pack.count < max_per_node {
                if let Some(k) = pack.try_place(tri, prim) {
                    return Some((p, k));
                }
            }
        }
        None
    }

    /// Opens a node with `tri` (leaf `prim`) in slot 0 with rotation `r`, encoding the node
    /// it pushes out of the window into `run`; returns the new node and its slot (0).
    #[inline(always)]
    fn open(
        &mut self,
        tri: &[VertexBits; 3],
        prim: u32,
        r: usize,
        run: &mut Run,
        ij_nibbles: &[[u8; 3]; 4],
    ) -> (usize, usize) {
        let slot = self.opened % PACK_WINDOW;
        if self.opened >= PACK_WINDOW {
            run.push(&self.packs[slot], ij_nibbles);
        }
        let mut pack = EMPTY_PACK;
        let hw = TRIANGLE_VERTICES[0];
        for (j, &v) in tri.iter().enumerate() {
            pack.verts[hw[(j + r) % 3]] = v;
        }
        pack.used[0] = (prim, r as u8);
        pack.count = 1;
        self.centres[slot] = fingerprint(pack.verts[2]);
        self.packs[slot] = pack;
        self.opened += 1;
        (self.opened - 1, 0)
    }

    /// Encodes the nodes still open into `run`, in the order they were opened.
    fn close(&self, run: &mut Run, ij_nibbles: &[[u8; 3]; 4]) {
        for p in self.opened.saturating_sub(PACK_WINDOW)..self.opened {
            run.push(&self.packs[p % PACK_WINDOW], ij_nibbles);
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
pub(super) fn pack_leaves(leaves: &[u32], mesh: &Mesh, max_per_node: u8) -> Run {
    let n = leaves.len();
    let ij_nibbles = *IJ_NIBBLES;
    let mut run = Run::with_capacity(n / 2 + 1, n);
    let mut ring = Ring::new(leaves, mesh);
    let mut window = Window {
        packs: [EMPTY_PACK; PACK_WINDOW],
        centres: [0; PACK_WINDOW],
        opened: 0,
    };
    for (leaf, &prim) in leaves.iter().enumerate() {
        if leaf % PACK_WINDOW == 0 {
            ring.read_ahead(leaf, leaves, mesh);
        }
        let i = leaf % RING;
        let tri = ring.bits[i];
        let placed = if max_per_node > 1 {
            let f = [0, 1, 2].map(|j| ring.fingerprints[j][i]);
            window.join(&tri, f, prim, max_per_node)
        } else {
            None
        };
        let (p, k) = placed.unwrap_or_else(|| {
            let r = if max_per_node > 1 {
                ring.centre_rotation(leaf, n)
            } else {
                0
            };
            window.open(&tri, prim, r, &mut run, &ij_nibbles)
        });
        run.place.push(4 * p as u32 + k as u32);
    }
    window.close(&mut run, &ij_nibbles);
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
pub(super) fn cluster_packs(leaves: &[u32], mesh: &Mesh, clusters: &[Cluster]) -> Run {
    let ij_nibbles = *IJ_NIBBLES;
    let mut run = Run::with_capacity(leaves.len(), leaves.len());
    for (l, &ci) in leaves.iter().enumerate() {
        let c = &clusters[ci as usize];
        let mut pack = EMPTY_PACK;
        for (k, &(prim, r)) in c.tris[..c.count as usize].iter().enumerate() {
            let tri = mesh.triangle(prim).map(vertex_bits);
            let hw = TRIANGLE_VERTICES[k];
            for (j, &vertex) in tri.iter().enumerate() {
                let v = &mut pack.verts[hw[(j + r as usize) % 3]];
                assert!(
                    *v == FREE_VERTEX || *v == vertex,
                    "cluster {ci} does not fit the node connectivity"
                );
                *v = vertex;
            }
            pack.used[k] = (prim, r);
        }
        pack.count = c.count;
        run.push(&pack, &ij_nibbles);
        run.place.push(4 * l as u32 + c.count as u32 - 1);
    }
    run
}
