//! One triangle node being packed ([`Pack`]): which mesh triangles fit its fixed
//! connectivity (tri0 V0 V1 V2, tri1 V1 V3 V2, tri2 V2 V3 V4, tri3 V2 V4 V0) together, and
//! in which slot and rotation, with the vertex-sharing tables the search reads.
//!
//! Vertices are compared by their exact bit patterns ([`VertexBits`]), and a triangle is
//! only ever stored as a rotation of its mesh vertex order (never a reflection), so that
//! the sign of `t_denom` keeps the mesh's winding.

use crate::hw::TRIANGLE_VERTICES;

/// A vertex as its three coordinates' bit patterns (x in bits 0..32, y, z above), so that a
/// vertex comparison is one 128-bit compare.
pub(super) type VertexBits = u128;

/// A free vertex of a [`Pack`]: three NaN patterns, never the bits of a finite vertex (only
/// finite triangles reach the encoder).
pub(super) const FREE_VERTEX: VertexBits = u128::MAX;

#[inline]
pub(super) fn vertex_bits(v: [f32; 3]) -> VertexBits {
    v[0].to_bits() as u128 | (v[1].to_bits() as u128) << 32 | (v[2].to_bits() as u128) << 64
}

pub(super) fn vertex_f32(v: VertexBits) -> [f32; 3] {
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
pub(super) struct Pack {
    /// Vertex bit patterns; [`FREE_VERTEX`] while free.
    pub verts: [VertexBits; 5],
    /// Per slot: (primitive id, rotation r): mesh vertex j sits at node vertex
    /// `TRIANGLE_VERTICES[k][(j + r) % 3]`; [`FREE_SLOT`] while free.
    pub used: [(u32, u8); 4],
    /// Slots used.
    pub count: u8,
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

pub(super) const EMPTY_PACK: Pack = Pack {
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
    pub fn try_place(&mut self, tri: &[VertexBits; 3], prim: u32) -> Option<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
