//! The AVX2 triangle kernel: eight lanes at one triangle, tested from their ray columns.

use super::avx2::Avx8;
use super::triangle_test::{triangle_dwords, TriangleLanes};
use super::{RayColumns, BATCH_LANES, ROTATIONS};
use crate::hw::descriptor::TriangleReturnMode;
use crate::hw::node::TRIANGLE_VERTICES;
use crate::hw::TriangleNode;
use crate::wave::isa::Avx2;
use core::arch::x86_64::*;

/// The dominant-axis rotation of eight lanes whose axes may differ, as selects: component
/// c of a rotated vector is component `ROTATIONS[axis][c]` of the original, lane by lane.
#[derive(Clone, Copy)]
struct AxisMasks {
    /// Lanes whose dominant axis is x (all ones), and those where y is as large as the
    /// largest: their axis is y unless x is (a tie goes to x, whose select comes last).
    x: __m256,
    y: __m256,
}

impl AxisMasks {
    /// The masks of the lanes' dominant axes, from their directions `dir` (x, y, z columns):
    /// [`dominant_rotation`]'s choice, ties to x, then y.
    ///
    /// [`dominant_rotation`]: super::dominant_rotation
    #[inline(always)]
    fn of_directions(_: Avx2, dir: [__m256; 3]) -> AxisMasks {
        // SAFETY: the token proves AVX.
        unsafe {
            let sign = _mm256_set1_ps(-0.0);
            let [x, y, z] = [
                _mm256_andnot_ps(sign, dir[0]),
                _mm256_andnot_ps(sign, dir[1]),
                _mm256_andnot_ps(sign, dir[2]),
            ];
            let max = _mm256_max_ps(x, _mm256_max_ps(y, z));
            AxisMasks {
                x: _mm256_cmp_ps::<_CMP_EQ_OQ>(x, max),
                y: _mm256_cmp_ps::<_CMP_EQ_OQ>(y, max),
            }
        }
    }

    /// `v` (x, y, z columns) rotated lane by lane: the same values [`TriangleRay::rotated`]
    /// and the AVX2 triangle gather move, by selects instead of permutes.
    ///
    /// [`TriangleRay::rotated`]: super::TriangleRay::rotated
    #[inline(always)]
    fn rotate(&self, v: [__m256; 3]) -> [__m256; 3] {
        let mut out = v;
        // (A loop, not `from_fn`: a closure would be a function compiled without AVX.)
        for c in 0..3 {
            // SAFETY: the masks were made with the token, which proves AVX.
            out[c] = unsafe {
                _mm256_blendv_ps(
                    _mm256_blendv_ps(v[ROTATIONS[2][c]], v[ROTATIONS[1][c]], self.y),
                    v[ROTATIONS[0][c]],
                    self.x,
                )
            };
        }
        out
    }
}

impl Avx2 {
    /// The triangle queries of eight consecutive lanes `first..first + 8` on one triangle,
    /// triangle `k` of `node`, one lane per vector element: the node's vertices broadcast
    /// and rotated lane by lane, the lanes' rotated origins and directions read from
    /// `columns`. The same f32 operations in the same order as the AVX2 triangle batch on
    /// the same values, so element j is lane `first + j`'s four dwords, as the scalar
    /// reference returns them. `columns` must hold the eight lanes' registers.
    ///
    /// Why: the eight lanes of a block that shares one stack often ask for one triangle in
    /// one step (on sponza's camera rays, 46 % of the triangle lane steps; 8 % more are
    /// blocks of eight lanes that have parted). The batch gathers each lane's vertices and
    /// ray as rows and transposes them back to columns; here the vertices are three
    /// broadcasts each and the rays' columns were written when the lanes started.
    #[inline(always)]
    pub fn triangle_query_eight(
        self,
        node: &TriangleNode,
        k: usize,
        columns: &RayColumns,
        first: usize,
        mode: TriangleReturnMode,
    ) -> [[u32; 4]; BATCH_LANES] {
        let dwords = node.dwords();
        // SAFETY (every intrinsic below): the token proves AVX2; every load reads eight
        // values of an `[_; 8]`.
        unsafe {
            macro_rules! load {
                ($c:expr) => {
                    [
                        _mm256_loadu_ps(RayColumns::eight(&$c[0], first).as_ptr()),
                        _mm256_loadu_ps(RayColumns::eight(&$c[1], first).as_ptr()),
                        _mm256_loadu_ps(RayColumns::eight(&$c[2], first).as_ptr()),
                    ]
                };
            }
            let (origin, dir) = (load!(columns.origin), load!(columns.dir));
            let rotation = AxisMasks::of_directions(self, dir);
            // (Not `.map(..)`: LLVM leaves that call out of line.)
            let dword_indices = |v: usize| [3 * v, 3 * v + 1, 3 * v + 2];
            let [a, b, c] = TRIANGLE_VERTICES[k & 3];
            let [v0, v1, v2] = [dword_indices(a), dword_indices(b), dword_indices(c)];
            // Columns rotated lane by lane.
            macro_rules! rotated {
                ($v:expr) => {{
                    let [x, y, z] = rotation.rotate($v);
                    [Avx8(x, self), Avx8(y, self), Avx8(z, self)]
                }};
            }
            // A vertex (its three dword indices), the same in every lane. (The mask keeps
            // the compiler from checking bounds it cannot prove.)
            macro_rules! vertex {
                ($w:expr) => {
                    rotated!([
                        _mm256_set1_ps(f32::from_bits(dwords[$w[0] & 15])),
                        _mm256_set1_ps(f32::from_bits(dwords[$w[1] & 15])),
                        _mm256_set1_ps(f32::from_bits(dwords[$w[2] & 15])),
                    ])
                };
            }
            let columns = [
                vertex!(v0),
                vertex!(v1),
                vertex!(v2),
                rotated!(origin),
                rotated!(dir),
            ];
            let lanes = TriangleLanes {
                count: BATCH_LANES,
                words: &[node.word; BATCH_LANES],
                indices: &[k as u32; BATCH_LANES],
            };
            triangle_dwords(self, lanes, mode, columns)
        }
    }
}
