//! The portable box query: one lane's four child boxes at once, and the sorting network.

use super::{DecodedBox, LaneRay, INVALID_BITS};
use crate::hw::NodePointer;
#[cfg(target_arch = "x86_64")]
use crate::wave::isa::Avx2;
use wide::{f32x4, u32x4};

/// The ray/box test of four children at once and the sorting network
/// (`semantics.md` 5.1-5.7), writing the four result dwords to `out` (element by element:
/// no wide reload of narrow stores). Returns the mask of `out` entries that hold a child
/// (bit c set = `out[c]` is not 0xFFFFFFFF): with sorting on, always a prefix.
#[inline(always)]
pub fn box_query(
    node: &DecodedBox,
    ray: &LaneRay,
    grow: f32,
    sort: bool,
    out: &mut [NodePointer; 4],
) -> u32 {
    let mut p_lo = [f32x4::ZERO; 3];
    let mut p_hi = [f32x4::ZERO; 3];
    let mut r = [f32x4::ZERO; 3];
    for a in 0..3 {
        let o = f32x4::splat(ray.origin[a]);
        r[a] = f32x4::splat(ray.inv_dir[a]);
        // p_lo = (b0.a - o.a) * r.a ; p_hi = (b1.a - o.a) * r.a   (two roundings each)
        p_lo[a] = (node.lo[a] - o) * r[a];
        p_hi[a] = (node.hi[a] - o) * r[a];
    }
    // near = r.a >= 0 ? p_lo : p_hi ; far = r.a >= 0 ? p_hi : p_lo   (-0 >= 0 holds, -inf
    // does not). r.a is lane-uniform; the choice is a branch-free mask select because its
    // outcome differs from lane to lane.
    let select_planes = || {
        let mut near = [f32x4::ZERO; 3];
        let mut far = [f32x4::ZERO; 3];
        for a in 0..3 {
            let keep = r[a].simd_ge(f32x4::ZERO);
            near[a] = keep.select(p_lo[a], p_hi[a]);
            far[a] = keep.select(p_hi[a], p_lo[a]);
        }
        (near, far)
    };
    let e = f32x4::splat(ray.extent);
    // Any NaN among the six products? (NaN or inf - inf makes the sum NaN.)
    let probe = ((p_lo[0] + p_lo[1]) + (p_lo[2] + p_hi[0])) + (p_hi[1] + p_hi[2]);
    let (tnear, hit_mask) = if probe.is_nan().to_bitmask() == 0 {
        let (near, far) = if node.ordered != 0 {
            // min <= max and no NaN: rounding is monotone, so p_lo <= p_hi when r.a >= 0 and
            // p_lo >= p_hi when r.a < 0; min/max pick the same planes as the sign select
            // (equal values differ at most in the sign of a zero, which no later step sees).
            (
                [
                    p_lo[0].fast_min(p_hi[0]),
                    p_lo[1].fast_min(p_hi[1]),
                    p_lo[2].fast_min(p_hi[2]),
                ],
                [
                    p_lo[0].fast_max(p_hi[0]),
                    p_lo[1].fast_max(p_hi[1]),
                    p_lo[2].fast_max(p_hi[2]),
                ],
            )
        } else {
            select_planes()
        };
        // No NaN anywhere: the raw max/min instructions equal maxNum/minNum here.
        // tnear = max(max(max(near.x, near.y), near.z), 0) ; tfar = min(min(...), E)
        let tnear = near[0]
            .fast_max(near[1])
            .fast_max(near[2])
            .fast_max(f32x4::ZERO);
        let tfar = far[0].fast_min(far[1]).fast_min(far[2]).fast_min(e);
        (tnear, tnear.simd_le(tfar * f32x4::splat(grow)))
    } else {
        let (near, far) = select_planes();
        // tnear_raw = maxNum(maxNum(near.x, near.y), near.z) ; tfar_raw = minNum(...)
        // (NaN dropped: wide's max/min are minNum/maxNum on every backend)
        let tnear_raw = near[0].max(near[1]).max(near[2]);
        let tfar_raw = far[0].min(far[1]).min(far[2]);
        // tnear = maxNum(tnear_raw, 0) ; tfar = minNum(tfar_raw, E)
        let tnear = tnear_raw.max(f32x4::ZERO);
        let tfar = tfar_raw.min(e);
        // hit = !isnan(tnear_raw) && !isnan(tfar_raw) && tnear <= tfar * grow
        let nan = tnear_raw.is_nan() | tfar_raw.is_nan();
        let inside = tnear.simd_le(tfar * f32x4::splat(grow));
        (tnear, nan.select(f32x4::ZERO, inside))
    };
    // Missed children become INVALID: a bitwise select on the hit mask, in a vector register
    // (the pointers travel as f32x4 bit patterns; the select never looks at them as floats).
    let children: f32x4 = bytemuck::cast(node.children);
    let ptr = hit_mask.select(children, bytemuck::cast([NodePointer::INVALID; 4]));
    let invalid: u32x4 = bytemuck::cast::<f32x4, u32x4>(ptr).simd_eq(u32x4::splat(INVALID_BITS));
    let valid = !(invalid.to_bitmask() as u32) & 0xf;
    let (r, valid): ([NodePointer; 4], u32) = if sort && valid != 0 {
        // Sorting moves the valid entries to the front.
        (sort_network(ptr, tnear), (1 << valid.count_ones()) - 1)
    } else {
        // Unsorted, or nothing hit (then every entry is INVALID, sorted or not: the caller's
        // test of `valid == 0` decides the same branch, so this costs no prediction).
        (bytemuck::cast(ptr), valid)
    };
    out[0] = r[0];
    out[1] = r[1];
    out[2] = r[2];
    out[3] = r[3];
    valid
}

/// Bit i set = `nodes[i]` is a box pointer (type 4 or 5): four lanes per vector compare
/// (the scalar loop costs about four host instructions a lane, on every step of a wave).
#[inline(always)]
pub(crate) fn box_pointer_mask(nodes: &[NodePointer]) -> u64 {
    debug_assert!(nodes.len() <= 64);
    let (six, four) = (u32x4::splat(6), u32x4::splat(4));
    let chunks = nodes.chunks_exact(4);
    let rest = chunks.remainder();
    let mut mask = 0u64;
    for (c, chunk) in chunks.enumerate() {
        let v = u32x4::new(std::array::from_fn(|k| chunk[k].to_u32()));
        let m = (v & six).simd_eq(four).to_bitmask();
        mask |= (m as u64) << (4 * c);
    }
    let base = nodes.len() - rest.len();
    for (i, node) in rest.iter().enumerate() {
        mask |= (node.is_box() as u64) << (base + i);
    }
    mask
}

/// [`box_pointer_mask`] with eight lanes per AVX2 compare (`nodes.len()` a multiple of 8).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn box_pointer_mask_avx2(_: Avx2, nodes: &[NodePointer]) -> u64 {
    use core::arch::x86_64::*;
    assert!(nodes.len() <= 64 && nodes.len().is_multiple_of(8));
    let mut mask = 0u64;
    // SAFETY: the token proves AVX2; unaligned 32-byte loads of eight pointers each.
    unsafe {
        let (six, four) = (_mm256_set1_epi32(6), _mm256_set1_epi32(4));
        for (c, chunk) in nodes.chunks_exact(8).enumerate() {
            let v = _mm256_loadu_si256(chunk.as_ptr() as *const __m256i);
            let boxes = _mm256_cmpeq_epi32(_mm256_and_si256(v, six), four);
            let m = _mm256_movemask_ps(_mm256_castsi256_ps(boxes)) as u32 as u64;
            mask |= m << (8 * c);
        }
    }
    mask
}

/// The five-comparator network (0,2),(1,3),(0,1),(2,3),(1,2): swap when the second entry is
/// valid and strictly nearer, or when the first entry is invalid (`semantics.md` 5.7).
/// Branch-free (the swaps are data-dependent and unpredictable).
///
/// Keys of valid entries (pointer not 0xFFFFFFFF) must not be NaN: a box test's tnear never
/// is (it is a maxNum with 0). Keys of invalid entries are never looked at.
#[inline(always)]
fn sort_network(ptr: f32x4, key: f32x4) -> [NodePointer; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        sort_network_sse2(ptr, key)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        sort_network_scalar(bytemuck::cast(ptr), key.to_array()).map(NodePointer::from_u32)
    }
}

/// [`sort_network`] on SSE2 (baseline on x86-64), on integer keys: a valid entry's key is
/// the bit pattern of `tnear + 0` (non-negative, not NaN, -0 turned into +0, so integer
/// order is float order), an invalid entry's key is 0x7FFFFFFF, above every valid key. Then
/// "b valid and nearer, or a invalid" is `key[b] < key[a]` (two invalid entries then do not
/// swap where the network swaps them, which changes nothing: both hold 0xFFFFFFFF and their
/// keys are never compared again with effect).
///
/// Each stage compares every slot with its partner at once: the first slot of a pair swaps
/// when its own key is greater (`key[s] > key[partner]`), the second when its partner's is; a
/// slot paired with itself never swaps. Keys are non-negative as i32, so flipping every bit of
/// both keys in the second slots (`!x` reverses the order) makes both tests one compare.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sort_network_sse2(ptr: f32x4, key: f32x4) -> [NodePointer; 4] {
    use core::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; the one store is an unaligned 16-byte
    // store into a 16-byte array; f32x4 and __m128 are both 16 plain bytes.
    unsafe {
        let mut p = _mm_castps_si128(core::mem::transmute::<f32x4, __m128>(ptr));
        let key = _mm_add_ps(core::mem::transmute::<f32x4, __m128>(key), _mm_setzero_ps());
        let invalid = _mm_cmpeq_epi32(p, _mm_set1_epi32(-1));
        let mut k = _mm_or_si128(
            _mm_andnot_si128(invalid, _mm_castps_si128(key)),
            _mm_and_si128(invalid, _mm_set1_epi32(i32::MAX)),
        );
        // One stage: the swap mask, then the pointers (and, but for the last stage, the keys)
        // exchanged with their partners.
        macro_rules! stage {
            ($imm:expr, $second:expr $(, $keys:ident)?) => {{
                let pp = _mm_shuffle_epi32::<$imm>(p);
                let kp = _mm_shuffle_epi32::<$imm>(k);
                let flip: __m128i = $second;
                let swap = _mm_cmpgt_epi32(_mm_xor_si128(k, flip), _mm_xor_si128(kp, flip));
                p = _mm_or_si128(_mm_and_si128(swap, pp), _mm_andnot_si128(swap, p));
                $($keys = _mm_or_si128(_mm_and_si128(swap, kp), _mm_andnot_si128(swap, $keys));)?
            }};
        }
        // _MM_SHUFFLE(d, c, b, a) = d << 6 | c << 4 | b << 2 | a (element 0 from a).
        // Stage 1: (0,2), (1,3): partners [2, 3, 0, 1].
        stage!(0b01_00_11_10, _mm_setr_epi32(0, 0, -1, -1), k);
        // Stage 2: (0,1), (2,3): partners [1, 0, 3, 2].
        stage!(0b10_11_00_01, _mm_setr_epi32(0, -1, 0, -1), k);
        // Stage 3: (1,2): partners [0, 2, 1, 3]; the keys are not read after it.
        stage!(0b11_01_10_00, _mm_setr_epi32(0, 0, -1, 0));
        let mut out = [NodePointer::INVALID; 4];
        _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, p);
        out
    }
}

/// The scalar network: the form off x86-64, and the reference the SIMD form is tested
/// against.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline]
fn sort_network_scalar(ptr: [u32; 4], key: [f32; 4]) -> [u32; 4] {
    let mut p = ptr;
    let mut k = key.map(f32::to_bits);
    #[inline(always)]
    fn cmp_swap(p: &mut [u32; 4], k: &mut [u32; 4], a: usize, b: usize) {
        // swap = (p[b] != INVALID && key[b] < key[a]) || p[a] == INVALID
        let swap = ((p[b] != INVALID_BITS) & (f32::from_bits(k[b]) < f32::from_bits(k[a])))
            | (p[a] == INVALID_BITS);
        let m = (swap as u32).wrapping_neg();
        let dp = (p[a] ^ p[b]) & m;
        p[a] ^= dp;
        p[b] ^= dp;
        let dk = (k[a] ^ k[b]) & m;
        k[a] ^= dk;
        k[b] ^= dk;
    }
    cmp_swap(&mut p, &mut k, 0, 2);
    cmp_swap(&mut p, &mut k, 1, 3);
    cmp_swap(&mut p, &mut k, 0, 1);
    cmp_swap(&mut p, &mut k, 2, 3);
    cmp_swap(&mut p, &mut k, 1, 2);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::{BoxNodeF32, NodeType};
    use crate::wave::intersect::test_rng::{random_ray, xorshift};
    use crate::wave::intersect::DecodedBox;
    use bytemuck::Zeroable;

    const INVALID: u32 = INVALID_BITS;

    /// The mask `box_query` returns names exactly the entries it wrote that are children,
    /// sorted or not, on seeded random boxes (some inverted, some slots empty) and rays.
    #[test]
    fn box_query_mask_names_the_valid_entries() {
        let mut next = xorshift(0x5EED_u64);
        let mut unit = move || (next() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0;
        let mut seen = [0u32; 5];
        for case in 0..20_000u32 {
            let mut node = BoxNodeF32::zeroed();
            for c in 0..4 {
                node.children[c] = if (case >> c) & 1 == 1 {
                    NodePointer::INVALID
                } else {
                    NodePointer::from_u32(0x100 + c as u32)
                };
                for a in 0..3 {
                    let (p, q) = (unit(), unit());
                    // Ordered bounds, inverted in one case of eight.
                    let (lo, hi) = if case % 8 == 7 {
                        (p.max(q), p.min(q))
                    } else {
                        (p.min(q), p.max(q))
                    };
                    node.boxes[c][a] = lo;
                    node.boxes[c][3 + a] = hi;
                }
            }
            let node = DecodedBox::from_box32(&node);
            let ray = random_ray(&mut unit);
            for sort in [false, true] {
                let mut out = [NodePointer::INVALID; 4];
                let mask = box_query(&node, &ray, 1.0, sort, &mut out);
                let expect = (0..4)
                    .filter(|&c| !out[c].is_invalid())
                    .fold(0, |m, c| m | 1 << c);
                assert_eq!(mask, expect, "case {case} sort {sort}: {out:x?}");
                seen[mask.count_ones() as usize] += 1;
            }
        }
        // Every count of hits occurred.
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    }

    /// The SIMD sorting network against the scalar one (an independent formulation: five
    /// sequential compare-swaps on f32 keys) on every pattern of valid/invalid slots with
    /// keys drawn from a small set that forces ties, zeros of both signs, the smallest
    /// subnormal and infinity; invalid slots also get NaN (valid keys never are NaN).
    #[test]
    fn simd_sort_network_matches_the_scalar_network() {
        let keys = [
            0.0,
            -0.0,
            f32::from_bits(1),
            1.0,
            2.0,
            f32::INFINITY,
            f32::NAN,
        ];
        let n = keys.len();
        let mut cases = 0;
        for valid in 0..16u32 {
            for code in 0..n.pow(4) {
                let k: [f32; 4] = std::array::from_fn(|c| keys[code / n.pow(c as u32) % n]);
                if (0..4).any(|c| valid >> c & 1 != 0 && k[c].is_nan()) {
                    continue;
                }
                let p: [u32; 4] = std::array::from_fn(|c| {
                    if valid >> c & 1 != 0 {
                        100 + c as u32
                    } else {
                        INVALID
                    }
                });
                let simd = sort_network(bytemuck::cast(p), f32x4::new(k));
                let scalar = sort_network_scalar(p, k).map(NodePointer::from_u32);
                assert_eq!(simd, scalar, "ptr {p:x?} keys {k:?}");
                cases += 1;
            }
        }
        // Per slot: 6 non-NaN keys when valid, 7 keys when invalid: (6 + 7)^4 cases.
        assert_eq!(cases, 13usize.pow(4));
    }

    /// Both box-pointer masks against the decoded type, for every node type in every
    /// position and lengths with and without a remainder.
    #[test]
    fn box_pointer_mask_marks_types_4_and_5() {
        let mut next = xorshift(0x9e37_79b9);
        for len in [0usize, 1, 3, 4, 7, 32, 61, 64] {
            for _ in 0..200 {
                let nodes: Vec<NodePointer> = (0..len)
                    .map(|_| NodePointer::from_u32(next() as u32))
                    .collect();
                let expected = nodes.iter().enumerate().fold(0u64, |m, (i, &p)| {
                    let ty = p.node_type();
                    m | ((matches!(ty, NodeType::BoxF32 | NodeType::BoxF16) as u64) << i)
                });
                assert_eq!(box_pointer_mask(&nodes), expected, "len {len}");
                #[cfg(target_arch = "x86_64")]
                if let Some(avx2) = Avx2::detect().filter(|_| len.is_multiple_of(8)) {
                    assert_eq!(box_pointer_mask_avx2(avx2, &nodes), expected, "len {len}");
                }
            }
        }
    }
}
