//! What the AVX2 kernels share: eight f32 lanes as a vector type ([`Avx8`]) and the
//! transpose of eight rows into columns.

use super::triangle_test::TriangleVector;
use super::BATCH_LANES;
use crate::wave::isa::Avx2;
use core::arch::x86_64::*;

/// Eight f32 lanes in an AVX register, with the token that proves the CPU has AVX2: only
/// code holding an [`Avx2`] makes one, so its safe operations may use AVX intrinsics. They
/// are `inline(always)`, so in the AVX2 build of the wave loop they compile as AVX
/// instructions.
#[derive(Clone, Copy)]
pub(super) struct Avx8(pub __m256, pub Avx2);

macro_rules! avx8_binary {
    ($($trait:ident $method:ident $intrinsic:ident),*) => {$(
        impl core::ops::$trait for Avx8 {
            type Output = Avx8;
            #[inline(always)]
            fn $method(self, rhs: Avx8) -> Avx8 {
                // SAFETY: the vector's token proves AVX.
                Avx8(unsafe { $intrinsic(self.0, rhs.0) }, self.1)
            }
        }
    )*};
}

avx8_binary!(
    Add add _mm256_add_ps,
    Sub sub _mm256_sub_ps,
    Mul mul _mm256_mul_ps,
    BitAnd bitand _mm256_and_ps,
    BitOr bitor _mm256_or_ps,
    BitXor bitxor _mm256_xor_ps
);

// SAFETY (every method): the token (`Avx2`, in the vector or given) proves AVX; the stores
// write eight f32 to an `[f32; 8]`.
impl TriangleVector<BATCH_LANES> for Avx8 {
    type Isa = Avx2;

    #[inline(always)]
    fn splat(isa: Avx2, x: f32) -> Self {
        Avx8(unsafe { _mm256_set1_ps(x) }, isa)
    }
    #[inline(always)]
    fn lt(self, rhs: Self) -> Self {
        Avx8(
            unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(self.0, rhs.0) },
            self.1,
        )
    }
    #[inline(always)]
    fn gt(self, rhs: Self) -> Self {
        Avx8(
            unsafe { _mm256_cmp_ps::<_CMP_GT_OQ>(self.0, rhs.0) },
            self.1,
        )
    }
    #[inline(always)]
    fn eq(self, rhs: Self) -> Self {
        Avx8(
            unsafe { _mm256_cmp_ps::<_CMP_EQ_OQ>(self.0, rhs.0) },
            self.1,
        )
    }
    #[inline(always)]
    fn nan(self) -> Self {
        Avx8(
            unsafe { _mm256_cmp_ps::<_CMP_UNORD_Q>(self.0, self.0) },
            self.1,
        )
    }
    #[inline(always)]
    fn select(self, t: Self, f: Self) -> Self {
        Avx8(unsafe { _mm256_blendv_ps(f.0, t.0, self.0) }, self.1)
    }
    #[inline(always)]
    fn bitmask(self) -> u32 {
        (unsafe { _mm256_movemask_ps(self.0) }) as u32
    }
    #[inline(always)]
    fn to_array(self) -> [f32; BATCH_LANES] {
        let mut out = [0.0; BATCH_LANES];
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), self.0) };
        out
    }
}

/// Eight rows of four f32 as four columns: element k of column c is `rows[k][c]`. Rows k
/// and k + 4 go into one vector (low and high half), then a 4x4 transpose runs in each
/// half. (The eight-nodes box test's node planes and the triangle batch's lane rows; the
/// callers load the rows, so that each chooses its loads.)
#[inline(always)]
pub(super) fn transpose_eight(_: Avx2, rows: [__m128; 8]) -> [__m256; 4] {
    // SAFETY: the token proves AVX.
    unsafe {
        // (A macro, not a closure: a closure is a function of its own, compiled without
        // AVX, and its intrinsics would stay calls.)
        macro_rules! pair {
            ($k:expr) => {
                _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(rows[$k]), rows[$k + 4])
            };
        }
        let (r0, r1, r2, r3) = (pair!(0), pair!(1), pair!(2), pair!(3));
        let t0 = _mm256_unpacklo_ps(r0, r1);
        let t1 = _mm256_unpackhi_ps(r0, r1);
        let t2 = _mm256_unpacklo_ps(r2, r3);
        let t3 = _mm256_unpackhi_ps(r2, r3);
        [
            _mm256_shuffle_ps::<0b01_00_01_00>(t0, t2),
            _mm256_shuffle_ps::<0b11_10_11_10>(t0, t2),
            _mm256_shuffle_ps::<0b01_00_01_00>(t1, t3),
            _mm256_shuffle_ps::<0b11_10_11_10>(t1, t3),
        ]
    }
}
