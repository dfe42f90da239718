//! The lanes' ray registers as columns, for the eight-lane kernels.

use crate::wave::intersect::LaneRay;
#[cfg(target_arch = "x86_64")]
use crate::wave::isa::Avx2;

/// The origins, directions, inverse directions and extents of a block of host lanes as
/// columns (`origin[a][i]`: lane i's component a), for the eight-lane kernels
/// ([`Avx2::box_query_eight`](crate::wave::isa::Avx2::box_query_eight),
/// [`Avx2::triangle_query_eight`](crate::wave::isa::Avx2::triangle_query_eight)). Origins and
/// directions change only where a two-level traversal enters or leaves an instance (the
/// ray moved into object space and back), so they are written when a lane starts and at
/// those transitions; the extent also when a hit shrinks it (the wave loop writes both the
/// lane's register and its column, [`RayColumns::set_extent`]).
#[derive(Clone, Debug)]
pub struct RayColumns {
    pub(super) origin: [[f32; RayColumns::LANES]; 3],
    pub(super) dir: [[f32; RayColumns::LANES]; 3],
    pub(super) inv_dir: [[f32; RayColumns::LANES]; 3],
    pub(super) extent: [f32; RayColumns::LANES],
}

impl Default for RayColumns {
    fn default() -> Self {
        RayColumns {
            origin: [[0.0; RayColumns::LANES]; 3],
            dir: [[0.0; RayColumns::LANES]; 3],
            inv_dir: [[0.0; RayColumns::LANES]; 3],
            extent: [0.0; RayColumns::LANES],
        }
    }
}

impl RayColumns {
    /// Host lanes held (a wave64, or two wave32).
    pub const LANES: usize = 64;

    /// Records lane `i`'s registers.
    #[inline(always)]
    pub fn set(&mut self, i: usize, ray: &LaneRay) {
        for a in 0..3 {
            self.origin[a][i] = ray.origin[a];
            self.dir[a][i] = ray.dir[a];
            self.inv_dir[a][i] = ray.inv_dir[a];
        }
        self.extent[i] = ray.extent;
    }

    /// Records lane `i`'s new extent.
    #[inline(always)]
    pub fn set_extent(&mut self, i: usize, extent: f32) {
        self.extent[i] = extent;
    }

    /// Elements `first..first + 8` of one column: the block of eight lanes that the
    /// eight-lane tests load as one vector.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn eight(column: &[f32; RayColumns::LANES], first: usize) -> &[f32; 8] {
        column[first..first + 8].try_into().expect("eight lanes")
    }

    /// Lane `i`'s origin, direction and inverse direction, as recorded.
    pub fn lane(&self, i: usize) -> [[f32; 3]; 3] {
        let column = |c: &[[f32; RayColumns::LANES]; 3]| [c[0][i], c[1][i], c[2][i]];
        [
            column(&self.origin),
            column(&self.dir),
            column(&self.inv_dir),
        ]
    }

    /// Records lanes `first..first + 8` at once: element k of `origin[a]`, `dir[a]` and
    /// `inv_dir[a]` is lane `first + k`'s component a, element k of `extent` its extent.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn set_eight(
        &mut self,
        _: Avx2,
        first: usize,
        [origin, dir, inv_dir]: [[core::arch::x86_64::__m256; 3]; 3],
        extent: core::arch::x86_64::__m256,
    ) {
        use core::arch::x86_64::*;
        let e: &mut [f32; 8] = (&mut self.extent[first..first + 8]).try_into().unwrap();
        // SAFETY: an unaligned 32-byte store of eight f32; the token proves AVX.
        unsafe { _mm256_storeu_ps(e.as_mut_ptr(), extent) };
        for a in 0..3 {
            let o: &mut [f32; 8] = (&mut self.origin[a][first..first + 8]).try_into().unwrap();
            let d: &mut [f32; 8] = (&mut self.dir[a][first..first + 8]).try_into().unwrap();
            let r: &mut [f32; 8] = (&mut self.inv_dir[a][first..first + 8]).try_into().unwrap();
            // SAFETY: unaligned 32-byte stores of eight f32; the token proves AVX.
            unsafe {
                _mm256_storeu_ps(o.as_mut_ptr(), origin[a]);
                _mm256_storeu_ps(d.as_mut_ptr(), dir[a]);
                _mm256_storeu_ps(r.as_mut_ptr(), inv_dir[a]);
            }
        }
    }
}
