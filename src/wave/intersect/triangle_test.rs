//! The triangle test of `image_bvh_intersect_ray` for a vector of lanes, generic over the
//! vector type (`wide::f32x4`, and eight AVX lanes in the AVX2 build).

use super::{BATCH_LANES, LANES};
use crate::hw::descriptor::TriangleReturnMode;
use crate::hw::TRIANGLE_MISS;
use crate::wave::isa::Portable;
use wide::f32x4;

/// The vector operations of the triangle test, for `N` lanes: `wide::f32x4` (every build)
/// and `Avx8` (the AVX2 build). Masks are vectors of all-ones or all-zeros lanes.
pub(super) trait TriangleVector<const N: usize>:
    Copy
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::Mul<Output = Self>
    + core::ops::BitAnd<Output = Self>
    + core::ops::BitOr<Output = Self>
    + core::ops::BitXor<Output = Self>
{
    /// What a vector of this type may be made with: the proof of its instruction set.
    type Isa: Copy;

    fn splat(isa: Self::Isa, x: f32) -> Self;
    fn lt(self, rhs: Self) -> Self;
    fn gt(self, rhs: Self) -> Self;
    fn eq(self, rhs: Self) -> Self;
    fn nan(self) -> Self;
    /// Lane by lane: `t` where `self` (a mask) is set, else `f`.
    fn select(self, t: Self, f: Self) -> Self;
    /// Bit j: lane j of the mask `self`.
    fn bitmask(self) -> u32;
    fn to_array(self) -> [f32; N];
}

impl TriangleVector<LANES> for f32x4 {
    type Isa = Portable;

    #[inline(always)]
    fn splat(_: Portable, x: f32) -> Self {
        f32x4::splat(x)
    }
    #[inline(always)]
    fn lt(self, rhs: Self) -> Self {
        self.simd_lt(rhs)
    }
    #[inline(always)]
    fn gt(self, rhs: Self) -> Self {
        self.simd_gt(rhs)
    }
    #[inline(always)]
    fn eq(self, rhs: Self) -> Self {
        self.simd_eq(rhs)
    }
    #[inline(always)]
    fn nan(self) -> Self {
        self.is_nan()
    }
    #[inline(always)]
    fn select(self, t: Self, f: Self) -> Self {
        f32x4::select(self, t, f)
    }
    #[inline(always)]
    fn bitmask(self) -> u32 {
        self.to_bitmask()
    }
    #[inline(always)]
    fn to_array(self) -> [f32; LANES] {
        f32x4::to_array(self)
    }
}

/// Which triangle each lane of a triangle test asks for: the first `count` lanes are
/// tested, lane j's triangle index being `indices[j]` and its node's word at byte 60
/// `words[j]` (the triangle ID or IJ-control word the result carries).
#[derive(Clone, Copy, Debug)]
pub(super) struct TriangleLanes<'a> {
    pub count: usize,
    pub words: &'a [u32; BATCH_LANES],
    pub indices: &'a [u32; BATCH_LANES],
}

/// The triangle test (`semantics.md` 7.2-7.6) of `lanes.count` lanes (at most `N`) given
/// as columns (`columns[r]`: row r's x, y, z of a [`TriangleBatch`]; element j is lane
/// j's): element j of the result is lane j's four dwords (past the count: misses).
///
/// [`TriangleBatch`]: super::TriangleBatch
#[inline(always)]
pub(super) fn triangle_dwords<V: TriangleVector<N>, const N: usize>(
    isa: V::Isa,
    lanes: TriangleLanes,
    mode: TriangleReturnMode,
    columns: [[V; 3]; 5],
) -> [[u32; 4]; N] {
    let [[v0x, v0y, v0z], [v1x, v1y, v1z], [v2x, v2y, v2z], [ox, oy, oz], [dx, dy, dz]] = columns;
    // A = v0 - o, B = v1 - o, C = v2 - o
    let ax = v0x - ox;
    let ay = v0y - oy;
    let az = v0z - oz;
    let bx = v1x - ox;
    let by = v1y - oy;
    let bz = v1z - oz;
    let cx = v2x - ox;
    let cy = v2y - oy;
    let cz = v2z - oz;
    // Shear without division: A'.x = A.x*d.z - d.x*A.z ; A'.y = A.y*d.z - d.y*A.z (same B, C)
    let ax_s = ax * dz - dx * az;
    let ay_s = ay * dz - dy * az;
    let bx_s = bx * dz - dx * bz;
    let by_s = by * dz - dy * bz;
    let cx_s = cx * dz - dx * cz;
    let cy_s = cy * dz - dy * cz;
    // U = C'.x*B'.y - C'.y*B'.x ; V = A'.x*C'.y - A'.y*C'.x ; W = B'.x*A'.y - B'.y*A'.x
    let u = cx_s * by_s - cy_s * bx_s;
    let v = ax_s * cy_s - ay_s * cx_s;
    let w = bx_s * ay_s - by_s * ax_s;
    // t_num = (U*A.z + V*B.z) + W*C.z ; t_denom = (U*d.z + V*d.z) + W*d.z
    let t_num = (u * az + v * bz) + w * cz;
    let t_den = (u * dz + v * dz) + w * dz;

    // The hit/miss decision.
    let zero = V::splat(isa, 0.0);
    // Mixed signs: any(U,V,W < 0) && any(U,V,W > 0)
    let any_neg = u.lt(zero) | v.lt(zero) | w.lt(zero);
    let any_pos = u.gt(zero) | v.gt(zero) | w.gt(zero);
    let mut missed = any_neg & any_pos;
    // Degenerate: t_denom == 0 (either sign)
    missed = missed | t_den.eq(zero);
    // Behind: t_num with t_denom's sign applied is < 0 (t = 0 hits: -0 < 0 is false)
    let t_den_neg = t_den.lt(zero);
    let t_num_neg = t_num.lt(zero);
    let t_num_pos = t_num.gt(zero);
    missed = missed | t_den_neg.select(t_num_pos, t_num_neg);
    // Not enough precision: t_num is NaN
    missed = missed | t_num.nan();
    // Exact-zero edge tie-break; winding = t_denom > 0
    let winding = t_den.gt(zero);
    /// Whether an edge function `e` that is exactly 0 makes a miss (the edge's vertices'
    /// sheared y: `ay`, `by`, `cy`).
    #[inline(always)]
    fn tie<V: TriangleVector<N>, const N: usize>(
        zero: V,
        [e, ay, by, cy]: [V; 4],
        winding: V,
    ) -> V {
        // horizontal = By == 0 && Cy == 0 -> miss when Ay > 0 (bottom edge)
        let by0 = by.eq(zero);
        let horizontal = by0 & cy.eq(zero);
        let bottom = ay.gt(zero);
        // else: first vertex below second = By < 0 || (By == 0 && Cy > 0); miss when
        // that XOR winding (right edge)
        let below = by.lt(zero) | (by0 & cy.gt(zero));
        let right = below ^ winding;
        e.eq(zero) & horizontal.select(bottom, right)
    }
    missed = missed | tie(zero, [u, ay_s, by_s, cy_s], winding);
    missed = missed | tie(zero, [v, by_s, cy_s, ay_s], winding);
    missed = missed | tie(zero, [w, cy_s, ay_s, by_s], winding);

    let missed = missed.bitmask();
    // A hit at t_num = ±0 (origin on the triangle) returns t_denom = 1.0: what the vendor
    // model behind the shared test vectors does (every vector flagged `t_zero`), matching
    // the scalar reference. t = 0 is unaffected; only the sign of t_denom is lost.
    let t_den = t_num.eq(zero).select(V::splat(isa, 1.0), t_den);
    let t_num = t_num.to_array();
    let t_den = t_den.to_array();
    let uvw = [u.to_array(), v.to_array(), w.to_array()];
    let dz = dz.to_array();
    let mut out = [TRIANGLE_MISS; N];
    for (j, o) in out.iter_mut().enumerate().take(lanes.count) {
        if missed & (1 << j) != 0 {
            continue;
        }
        let (word, k) = (lanes.words[j], lanes.indices[j]);
        *o = match mode {
            TriangleReturnMode::TriangleId => [
                t_num[j].to_bits(),
                t_den[j].to_bits(),
                word.wrapping_add(k),
                1,
            ],
            TriangleReturnMode::Barycentrics => {
                let nibble = word >> (8 * k);
                // Source 3 is undefined; treated like 0 (semantics.md 4.4).
                let src = |s: u32| if s == 3 { 0 } else { s as usize };
                let i_src = src(nibble & 3);
                let j_src = src((nibble >> 2) & 3);
                // I_num = E_I * d.z ; J_num = E_J * d.z
                [
                    t_num[j].to_bits(),
                    t_den[j].to_bits(),
                    (uvw[i_src][j] * dz[j]).to_bits(),
                    (uvw[j_src][j] * dz[j]).to_bits(),
                ]
            }
        };
    }
    out
}
