//! The IJ control word of triangle return mode 1 (`rt-hardware.md` "Return mode 1",
//! `semantics.md` 4.4).
//!
//! Byte k of word@60 belongs to triangle k: bits 1:0 name which of the triangle's three
//! vertices (in hardware order, [`TRIANGLE_VERTICES`]) supplies the weight returned as I,
//! bits 3:2 the one returned as J. An application whose vertex order is (a, b, c) wants
//! I = weight of b and J = weight of c, so that its own barycentrics come back.

use super::node::TRIANGLE_VERTICES;

/// The 32-bit IJ control word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct IjControl(pub u32);

impl IjControl {
    /// The control nibble (bits 3:0 of byte k) for triangle `k`.
    pub fn nibble(self, k: usize) -> u8 {
        ((self.0 >> (8 * k)) & 0xf) as u8
    }

    /// Sets triangle `k`'s nibble, keeping the free high bits of its byte.
    pub fn with_nibble(self, k: usize, nibble: u8) -> Self {
        let shift = 8 * k;
        IjControl((self.0 & !(0xf << shift)) | ((nibble as u32 & 0xf) << shift))
    }

    /// Source (0..=3) of I for triangle `k`; 3 is undefined and treated like 0.
    pub fn i_source(self, k: usize) -> u8 {
        self.nibble(k) & 3
    }

    /// Source (0..=3) of J for triangle `k`; 3 is undefined and treated like 0.
    pub fn j_source(self, k: usize) -> u8 {
        (self.nibble(k) >> 2) & 3
    }
}

/// The nibble that makes triangle `k` return barycentrics in the application's vertex order
/// `app_order` (node vertex numbers 0..=4, e.g. `[1, 2, 3]` for "P123" of triangle 1).
/// `None` if `app_order` is not a permutation of triangle k's vertices.
pub fn ij_nibble(k: usize, app_order: [usize; 3]) -> Option<u8> {
    let hw = TRIANGLE_VERTICES[k];
    let slot = |v: usize| hw.iter().position(|&h| h == v);
    let (a, b, c) = (
        slot(app_order[0])?,
        slot(app_order[1])?,
        slot(app_order[2])?,
    );
    if a == b || b == c || a == c {
        return None;
    }
    Some((b as u8) | (c as u8) << 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 24 nibbles of the reverse-engineering note (seed 002), as printed in
    /// `rt-hardware.md`: for each triangle, (application order, nibble).
    const SEED_TABLE: [[([usize; 3], u8); 6]; 4] = [
        [
            ([0, 1, 2], 9),
            ([0, 2, 1], 6),
            ([1, 0, 2], 8),
            ([1, 2, 0], 2),
            ([2, 0, 1], 4),
            ([2, 1, 0], 1),
        ],
        [
            ([1, 2, 3], 6),
            ([1, 3, 2], 9),
            ([2, 1, 3], 4),
            ([2, 3, 1], 1),
            ([3, 1, 2], 8),
            ([3, 2, 1], 2),
        ],
        [
            ([2, 3, 4], 9),
            ([2, 4, 3], 6),
            ([3, 2, 4], 8),
            ([3, 4, 2], 2),
            ([4, 2, 3], 4),
            ([4, 3, 2], 1),
        ],
        [
            ([0, 2, 4], 4),
            ([0, 4, 2], 1),
            ([2, 0, 4], 6),
            ([2, 4, 0], 9),
            ([4, 0, 2], 2),
            ([4, 2, 0], 8),
        ],
    ];

    #[test]
    fn reproduces_the_seed_table_of_24_nibbles() {
        for (k, row) in SEED_TABLE.iter().enumerate() {
            for &(order, nibble) in row {
                assert_eq!(
                    ij_nibble(k, order),
                    Some(nibble),
                    "triangle {k} order {order:?}"
                );
            }
        }
    }

    #[test]
    fn rejects_orders_that_are_not_the_triangles_vertices() {
        assert_eq!(ij_nibble(0, [0, 1, 3]), None);
        assert_eq!(ij_nibble(1, [1, 1, 2]), None);
    }

    #[test]
    fn nibbles_pack_per_byte_and_keep_free_bits() {
        let w = IjControl(0xf0f0_f0f0)
            .with_nibble(0, 9)
            .with_nibble(1, 6)
            .with_nibble(3, 4);
        assert_eq!(w.0, 0xf4f0_f6f9);
        assert_eq!((w.i_source(0), w.j_source(0)), (1, 2));
        assert_eq!((w.i_source(1), w.j_source(1)), (2, 1));
        assert_eq!((w.i_source(3), w.j_source(3)), (0, 1));
    }
}
