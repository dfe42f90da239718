//! The vector write of a full stack's push: a sorted box result's children, reversed, in
//! one four-slot store ([`crate::wave::isa::Isa::write_reversed_prefix`]).

use crate::hw::NodePointer;
#[cfg(target_arch = "x86_64")]
use crate::wave::isa::Avx2;

/// The portable form: the four slots ending at `top + n` get `children[3 - j]` where that
/// child is valid and keep their value where it is INVALID, so that the valid prefix lands
/// reversed on `top..top + n` and nothing above `top + n` is written. SSE2 (the x86-64
/// baseline): shuffle, compare, blend, one load and one store.
///
/// # Safety
/// As [`crate::wave::isa::Isa::write_reversed_prefix`]: then `top + n - 4` does not wrap
/// (`top >= 3` with `n >= 1`, `top >= 4` with `n == 0`) and `top + n <= top + 4`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn write_reversed_prefix(
    buf: *mut NodePointer,
    top: usize,
    children: [NodePointer; 4],
    n: usize,
) -> NodePointer {
    use core::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; both accesses are unaligned 16-byte
    // accesses to four pointers inside `buf` (the caller's contract).
    unsafe {
        let dst = buf.add(top + n - 4) as *mut __m128i;
        let c = _mm_loadu_si128(children.as_ptr() as *const __m128i);
        let rev = _mm_shuffle_epi32::<0b00_01_10_11>(c);
        let invalid = _mm_cmpeq_epi32(rev, _mm_set1_epi32(-1));
        let old = _mm_loadu_si128(dst);
        let new = _mm_or_si128(_mm_andnot_si128(invalid, rev), _mm_and_si128(invalid, old));
        _mm_storeu_si128(dst, new);
        let last = _mm_cvtsi128_si32(_mm_shuffle_epi32::<0b11_11_11_11>(new));
        NodePointer::from_u32(last as u32)
    }
}

/// The portable form off x86-64: the same writes, slot by slot.
///
/// # Safety
/// As the x86-64 form.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) unsafe fn write_reversed_prefix(
    buf: *mut NodePointer,
    top: usize,
    children: [NodePointer; 4],
    n: usize,
) -> NodePointer {
    // SAFETY: the four slots from `top + n - 4` lie inside `buf` (the caller's contract).
    let dst = unsafe { core::slice::from_raw_parts_mut(buf.add(top + n - 4), 4) };
    for (j, d) in dst.iter_mut().enumerate() {
        let c = children[3 - j];
        if !c.is_invalid() {
            *d = c;
        }
    }
    dst[3]
}

/// The AVX form: the children's first `n` entries go reversed to the slots from `top` up
/// (`c[n-1]` at `top`, ..., `c[0]` at `top + n - 1`) in one four-slot store, by a variable
/// permute (`vpermilps`); the slots past them get the other entries. The next node is then
/// the slot at `top + n - 1`. No load of the old slots, no blend: the SSE2 form's load of
/// four slots at a moving offset overlaps the previous push's store, and the masked store
/// LLVM makes of its load-blend-store (`vpmaskmovd`) is slow on AMD's cores (this form
/// measured 1.06-1.10x on a Zen 4 EPYC).
///
/// # Safety
/// As [`crate::wave::isa::Isa::write_reversed_prefix`]: then `top..top + 4` and
/// `top + n - 1` (not below 3) lie inside `buf`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn write_reversed_prefix_avx2(
    _: Avx2,
    buf: *mut NodePointer,
    top: usize,
    children: [NodePointer; 4],
    n: usize,
) -> NodePointer {
    use core::arch::x86_64::*;
    // Slot j takes child (n - 1 - j) mod 4: the permute reads the two low bits of each
    // index. From a table, so that the permute takes its control from memory (one
    // instruction, where building it in a register took three).
    static INDEX: [[i32; 4]; 5] = {
        let mut t = [[0; 4]; 5];
        let mut n = 0;
        while n < 5 {
            let mut j = 0;
            while j < 4 {
                t[n][j] = (n as i32 - 1 - j as i32) & 3;
                j += 1;
            }
            n += 1;
        }
        t
    };
    // SAFETY: the token proves AVX; `n <= 4` indexes the table; the accesses lie inside
    // `buf` (the caller's contract).
    unsafe {
        let index = _mm_loadu_si128(INDEX.get_unchecked(n).as_ptr() as *const __m128i);
        let c = _mm_loadu_ps(children.as_ptr() as *const f32);
        _mm_storeu_ps(buf.add(top) as *mut f32, _mm_permutevar_ps(c, index));
        // A load, not a select of `children[0]` against the slot below: `n == 0` is data
        // the CPU cannot predict; the plain select compiled to a branch (0.92-0.98x), and a
        // `cmov` (`select_unpredictable`) measured the same as this load.
        *buf.add(top + n - 1)
    }
}
