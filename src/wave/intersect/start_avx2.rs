//! The AVX2 start of eight lanes at once: their registers, the instruction's checks and
//! the triangle-test set-up, from one transpose of the eight rays.

use super::{EightStarts, RayColumns};
use crate::math::Ray;
use crate::wave::isa::Avx2;
use core::arch::x86_64::*;

impl Avx2 {
    /// Starts lanes `first..first + 8` for `rays` at once, when all eight start (`tmin <=
    /// tmax`, or a NaN `tmax`) and the instruction accepts all eight's registers (no NaN, a
    /// finite origin): their inverse directions, dominant axes and finite-slope bits, and
    /// their origins, directions, inverse directions and extents written to `columns`. One
    /// transpose of the eight rays, then the reciprocals, the checks and the dominant axes
    /// for all eight in AVX2 vectors. `None` (nothing written) when a lane needs the
    /// per-lane start.
    ///
    /// Why: one lane at a time, a ray's start was about 120 host instructions, and a tenth
    /// of the trace time of camera rays.
    #[inline(always)]
    pub fn start_eight(
        self,
        rays: &[Ray; 8],
        columns: &mut RayColumns,
        first: usize,
    ) -> Option<EightStarts> {
        // SAFETY: the token proves AVX2.
        unsafe { start_eight_avx2(self, rays, columns, first) }
    }
}

/// The body of [`Avx2::start_eight`], compiled for AVX2 (its closures inherit the feature).
///
/// # Safety
/// The CPU must support AVX2 (the token proves it).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn start_eight_avx2(
    isa: Avx2,
    rays: &[Ray; 8],
    columns: &mut RayColumns,
    first: usize,
) -> Option<EightStarts> {
    // Ray k as a row of eight f32 (`Ray` is `repr(C)`: origin, direction, tmin, tmax; an
    // unaligned 32-byte load of one ray).
    let row = |k: usize| _mm256_loadu_ps(&rays[k] as *const Ray as *const f32);
    let (r0, r1, r2, r3, r4, r5, r6, r7) = (
        row(0),
        row(1),
        row(2),
        row(3),
        row(4),
        row(5),
        row(6),
        row(7),
    );
    // Transpose: field f of the eight rays in one vector (ray k in element k).
    let t0 = _mm256_unpacklo_ps(r0, r1);
    let t1 = _mm256_unpackhi_ps(r0, r1);
    let t2 = _mm256_unpacklo_ps(r2, r3);
    let t3 = _mm256_unpackhi_ps(r2, r3);
    let t4 = _mm256_unpacklo_ps(r4, r5);
    let t5 = _mm256_unpackhi_ps(r4, r5);
    let t6 = _mm256_unpacklo_ps(r6, r7);
    let t7 = _mm256_unpackhi_ps(r6, r7);
    // Rays 0-3 (s0-s3) and 4-7 (s4-s7): fields 0-3 in the low halves, 4-7 in the high.
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    let origin = [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
    ];
    let dir = [
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
    ];
    let tmin = _mm256_permute2f128_ps::<0x31>(s2, s6);
    let tmax = _mm256_permute2f128_ps::<0x31>(s3, s7);
    // `tmin <= tmax || tmax.is_nan()`, as `start_lane_checked` decides.
    let starts = _mm256_or_ps(
        _mm256_cmp_ps::<_CMP_LE_OQ>(tmin, tmax),
        _mm256_cmp_ps::<_CMP_UNORD_Q>(tmax, tmax),
    );
    if _mm256_movemask_ps(starts) != 0xff {
        return None;
    }
    // The driver's reciprocals (one IEEE division each, as `lane_ray`).
    let one = _mm256_set1_ps(1.0);
    let inv_dir = [
        _mm256_div_ps(one, dir[0]),
        _mm256_div_ps(one, dir[1]),
        _mm256_div_ps(one, dir[2]),
    ];
    // `ray_is_active` on magnitude bits (non-negative as i32, so signed compares serve).
    let magnitude =
        |x: __m256| _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7fff_ffff));
    let max3 = |a: [__m256; 3]| {
        _mm256_max_epu32(
            _mm256_max_epu32(magnitude(a[0]), magnitude(a[1])),
            magnitude(a[2]),
        )
    };
    let inf = _mm256_set1_epi32(0x7f80_0000);
    let origin_max = max3(origin);
    let rest_max = _mm256_max_epu32(_mm256_max_epu32(max3(dir), max3(inv_dir)), magnitude(tmax));
    let active = _mm256_andnot_si256(
        _mm256_cmpgt_epi32(rest_max, inf),
        _mm256_cmpgt_epi32(inf, origin_max),
    );
    if _mm256_movemask_ps(_mm256_castsi256_ps(active)) != 0xff {
        return None;
    }
    // Finite, non-zero slopes: every (magnitude - 1), wrapping, below 0x7F7F_FFFF.
    let minus_one = |x: __m256| _mm256_sub_epi32(magnitude(x), _mm256_set1_epi32(1));
    let slopes = _mm256_max_epu32(
        _mm256_max_epu32(minus_one(inv_dir[0]), minus_one(inv_dir[1])),
        minus_one(inv_dir[2]),
    );
    let below = _mm256_set1_epi32(0x7f7f_fffe);
    let finite = _mm256_cmpeq_epi32(_mm256_min_epu32(slopes, below), slopes);
    let finite = _mm256_movemask_ps(_mm256_castsi256_ps(finite)) as u32;
    // Dominant axis (`dominant_rotation`): not_x * (1 + not_y), from masks of -1 or 0.
    let abs = |x: __m256| _mm256_castsi256_ps(magnitude(x));
    let mag = [abs(dir[0]), abs(dir[1]), abs(dir[2])];
    let max_mag = _mm256_max_ps(mag[0], _mm256_max_ps(mag[1], mag[2]));
    let not_x = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NEQ_UQ>(mag[0], max_mag));
    let not_y = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_NEQ_UQ>(mag[1], max_mag));
    let axis = _mm256_sub_epi32(
        _mm256_sub_epi32(_mm256_setzero_si256(), not_x),
        _mm256_and_si256(not_x, not_y),
    );
    let mut axes = [0u32; 8];
    let mut inv = [[0f32; 8]; 3];
    _mm256_storeu_si256(axes.as_mut_ptr() as *mut __m256i, axis);
    for a in 0..3 {
        _mm256_storeu_ps(inv[a].as_mut_ptr(), inv_dir[a]);
    }
    columns.set_eight(isa, first, [origin, dir, inv_dir], tmax);
    Some(EightStarts {
        inv_dir: inv,
        axes,
        finite_slopes: finite,
    })
}
