//! The ray/triangle test (`semantics.md` 7 and the "triangle", "numerator scale", "t range"
//! and "mode 0 id" rows of section 12): Microsoft's division-free, d.z-scaled edge functions
//! with a top-left tie-break on exactly-zero edge functions, in f32 with one rounding per
//! operation (no `mul_add`).
//!
//! Every operation below is written in the order of the reference formulation, because the
//! result is compared bit for bit: the shear `a.x * d.z - d.x * a.z` (two products, one
//! difference), the edge functions as 2-D cross products, and `t_num`, `t_denom` as sums
//! evaluated left to right.

/// What the triangle test computed. `t = t_num / t_denom`; barycentric weight of the
/// triangle's vertex i = `scaled_weights[i] / t_denom`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TriangleTest {
    /// `U * A.z + V * B.z + W * C.z` (left to right), with A, B, C the vertices relative to
    /// the origin in the rotated frame.
    pub t_num: f32,
    /// `U * d.z + V * d.z + W * d.z` (left to right); its sign is the facing (7.3).
    pub t_denom: f32,
    /// The edge functions (U, V, W): unscaled weights of v0, v1, v2 (7.2 step 4).
    pub edge_functions: [f32; 3],
    /// The edge functions times d.z: what mode 1 returns as I and J (7.4).
    pub scaled_weights: [f32; 3],
    /// The dominant direction component d.z after the rotation (7.2 step 1).
    pub dir_z: f32,
    /// The hit verdict: no mixed edge signs, `t_denom != 0`, `t >= 0` (t = 0 hits), `t_num`
    /// not NaN, and the top-left rule on zero edge functions. No extent check (7.5).
    pub hit: bool,
}

/// Rotates `v` so that the dominant axis `axis` becomes z: x dominant uses (y, z, x),
/// y dominant uses (z, x, y), z keeps (x, y, z) (`semantics.md` 7.2 step 1).
#[inline]
fn rotate(v: [f32; 3], axis: usize) -> [f32; 3] {
    match axis {
        0 => [v[1], v[2], v[0]],
        1 => [v[2], v[0], v[1]],
        _ => v,
    }
}

/// The dominant axis: argmax |d|, ties resolved x first, then y, then z.
#[inline]
pub fn dominant_axis(dir: [f32; 3]) -> usize {
    let mag = dir.map(f32::abs);
    let max_mag = mag[0].max(mag[1].max(mag[2]));
    if mag[0] == max_mag {
        0
    } else if mag[1] == max_mag {
        1
    } else {
        2
    }
}

/// The top-left tie-break for one edge whose edge function is exactly ±0
/// (`semantics.md` 7.2 step 7). `opposite_y` is the ray-space y of the vertex opposite the
/// edge, `first_y`/`second_y` those of the edge's endpoints, `winding` is `t_denom > 0`.
/// Returns true when the edge does not own the ray (bottom or right edge): a miss.
#[inline]
fn edge_rejects(opposite_y: f32, first_y: f32, second_y: f32, winding: bool) -> bool {
    if first_y == 0.0 && second_y == 0.0 {
        // Horizontal edge through the ray: a bottom edge when the opposite vertex is above.
        opposite_y > 0.0
    } else {
        let first_below_second = first_y < 0.0 || (first_y == 0.0 && second_y > 0.0);
        first_below_second ^ winding
    }
}

/// Tests triangle (v0, v1, v2) against the ray (origin, dir) (`semantics.md` 7.2):
///
/// 1. rotate so the dominant |d| component is z;
/// 2. A, B, C = v0, v1, v2 minus the origin;
/// 3. shear without division: `A' = (A.x*d.z - d.x*A.z, A.y*d.z - d.y*A.z, A.z)`;
/// 4. `U = C'.x*B'.y - C'.y*B'.x`, `V = A'.x*C'.y - A'.y*C'.x`, `W = B'.x*A'.y - B'.y*A'.x`;
/// 5. `t_num`, `t_denom` as in [`TriangleTest`];
/// 6. miss on mixed edge signs, `t_denom == ±0`, negative t, NaN `t_num`;
/// 7. top-left tie-break on each exactly-zero edge function.
pub fn intersect_triangle(
    v0: [f32; 3],
    v1: [f32; 3],
    v2: [f32; 3],
    origin: [f32; 3],
    dir: [f32; 3],
) -> TriangleTest {
    let axis = dominant_axis(dir);
    let d = rotate(dir, axis);
    let o = rotate(origin, axis);
    let rel = |v: [f32; 3]| {
        let v = rotate(v, axis);
        [v[0] - o[0], v[1] - o[1], v[2] - o[2]]
    };
    let (a, b, c) = (rel(v0), rel(v1), rel(v2));
    let shear = |v: [f32; 3]| [v[0] * d[2] - d[0] * v[2], v[1] * d[2] - d[1] * v[2], v[2]];
    let (a, b, c) = (shear(a), shear(b), shear(c));

    let u = c[0] * b[1] - c[1] * b[0];
    let v = a[0] * c[1] - a[1] * c[0];
    let w = b[0] * a[1] - b[1] * a[0];

    let t_num = u * a[2] + v * b[2] + w * c[2];
    let t_denom = u * d[2] + v * d[2] + w * d[2];

    let uvw = [u, v, w];
    let mut missed = uvw.iter().any(|&e| e < 0.0) && uvw.iter().any(|&e| e > 0.0);
    missed |= t_denom == 0.0;
    // t < 0: t_num with its sign flipped by the sign of t_denom is negative (-0 is not).
    let signed_num = f32::from_bits(t_num.to_bits() ^ (t_denom.to_bits() & 0x8000_0000));
    missed |= signed_num < 0.0;
    missed |= t_num.is_nan();

    let winding = t_denom > 0.0;
    if u == 0.0 {
        missed |= edge_rejects(a[1], b[1], c[1], winding);
    }
    if v == 0.0 {
        missed |= edge_rejects(b[1], c[1], a[1], winding);
    }
    if w == 0.0 {
        missed |= edge_rejects(c[1], a[1], b[1], winding);
    }

    TriangleTest {
        t_num,
        t_denom,
        edge_functions: uvw,
        scaled_weights: uvw.map(|e| e * d[2]),
        dir_z: d[2],
        hit: !missed,
    }
}

impl TriangleTest {
    /// The t_denom dword the instruction returns: `t_denom`, except that a hit with
    /// `t_num == ±0` (ray origin on the triangle, a hit by 7.5) returns 1.0, so the pair
    /// reads `t = ±0 / 1`.
    ///
    /// This one rule comes from the instruction vectors (`../shared/data/isa/sample.jsonl`,
    /// every vector flagged `t_zero`), not from the text of `semantics.md`, which otherwise
    /// says t_denom is the signed determinant and never forced positive (7.3). The facing of
    /// a t = 0 hit is therefore not observable. Kept in this one place so it can be changed.
    pub fn returned_t_denom(&self) -> f32 {
        if self.hit && self.t_num == 0.0 {
            1.0
        } else {
            self.t_denom
        }
    }
}

/// The dwords of a triangle miss in both modes: `{+inf, 1.0, 0, 0}` (`semantics.md` 7.6).
pub const TRIANGLE_MISS: [u32; 4] = [0x7f80_0000, 0x3f80_0000, 0, 0];

/// Mode 0 result: `{t_num, t_denom, word + k (mod 2^32), 1}` (t_denom as
/// [`TriangleTest::returned_t_denom`]) on a hit, [`TRIANGLE_MISS`]
/// otherwise (`semantics.md` 7.6).
pub fn triangle_id_result(test: &TriangleTest, word: u32, k: usize) -> [u32; 4] {
    if !test.hit {
        return TRIANGLE_MISS;
    }
    [
        test.t_num.to_bits(),
        test.returned_t_denom().to_bits(),
        word.wrapping_add(k as u32),
        1,
    ]
}

/// Mode 1 result: `{t_num, t_denom, I_num, J_num}` (t_denom as
/// [`TriangleTest::returned_t_denom`]) on a hit, [`TRIANGLE_MISS`] otherwise.
/// I/J are the scaled weights selected by triangle k's nibble of the IJ word; source 3 is
/// treated as source 0 (`semantics.md` 4.4, 7.4).
pub fn barycentric_result(test: &TriangleTest, ij_word: u32, k: usize) -> [u32; 4] {
    if !test.hit {
        return TRIANGLE_MISS;
    }
    let nibble = (ij_word >> (8 * k)) & 0xf;
    let select = |src: u32| {
        let src = if src == 3 { 0 } else { src as usize };
        test.scaled_weights[src].to_bits()
    };
    [
        test.t_num.to_bits(),
        test.returned_t_denom().to_bits(),
        select(nibble & 3),
        select((nibble >> 2) & 3),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_aligned_hit_has_exact_t_and_weights() {
        // Triangle in the plane z = 2, ray down +z from the origin through (0.25, 0.25).
        let t = intersect_triangle(
            [0.0, 0.0, 2.0],
            [1.0, 0.0, 2.0],
            [0.0, 1.0, 2.0],
            [0.25, 0.25, 0.0],
            [0.0, 0.0, 1.0],
        );
        assert!(t.hit);
        assert_eq!(t.t_num / t.t_denom, 2.0);
        let w = t.scaled_weights.map(|e| e / t.t_denom);
        assert_eq!(w, [0.5, 0.25, 0.25]);
    }

    #[test]
    fn dominant_axis_ties_pick_x_then_y() {
        assert_eq!(dominant_axis([1.0, -1.0, 1.0]), 0);
        assert_eq!(dominant_axis([0.5, -1.0, 1.0]), 1);
        assert_eq!(dominant_axis([0.5, 0.0, -1.0]), 2);
        assert_eq!(dominant_axis([0.0, 0.0, 0.0]), 0);
    }
}
