//! The AVX2 box kernels: two lanes at once, and eight lanes at one node or at eight.

use super::avx2::transpose_eight;
use super::{BoxResult, DecodedBox, LaneRay, RayColumns};
use crate::hw::NodePointer;
use crate::wave::isa::Avx2;
use core::arch::x86_64::*;
use wide::f32x4;

impl Avx2 {
    /// Two lanes' box queries at once, one lane per 128-bit half of AVX2 vectors: the same f32
    /// operations as [`box_query`](fn@super::box_query) in the same order (one rounding each), so
    /// each lane's result is [`box_query`](fn@super::box_query)'s. Covers the common case only,
    /// where both nodes are `ordered` and neither lane has a NaN among its products; returns `None`
    /// otherwise (nothing written), and the caller runs [`box_query`](fn@super::box_query) per
    /// lane. Returns each lane's valid mask.
    ///
    /// `finite_slopes` says that both lanes' inverse directions are finite and not zero:
    /// then no product can be NaN and the NaN probe is skipped (six vector operations a
    /// pair).
    #[inline(always)]
    pub fn box_query_pair(
        self,
        node: [&DecodedBox; 2],
        ray: [&LaneRay; 2],
        grow: f32,
        sort: bool,
        finite_slopes: bool,
        out: [&mut [NodePointer; 4]; 2],
    ) -> Option<[u32; 2]> {
        // SAFETY: the token proves AVX2.
        unsafe { box_query_pair_avx2(node, ray, grow, sort, finite_slopes, out) }
    }

    /// The box queries of eight consecutive lanes `first..first + 8` on one node at once, one lane
    /// per 32-bit element of AVX2 vectors, the node's planes broadcast: the same f32 operations as
    /// [`Self::box_query_pair`] and [`box_query`](fn@super::box_query) in the same order (one
    /// rounding each), so each lane's result is [`box_query`](fn@super::box_query)'s with sorting
    /// on. Writes lane `first + k`'s sorted children and valid mask to `out[first + k]`, and
    /// returns whether all eight got the same children (hence the same mask): the wave loop then
    /// consumes one result for the eight lanes of a block that shares one stack.
    ///
    /// The caller guarantees the common case of [`Self::box_query_pair`] without its probe:
    /// `node.ordered`, and every one of the eight lanes' inverse directions finite and not
    /// zero (so no product is NaN); and that `columns` holds the eight lanes' registers,
    /// their current extents included. (Otherwise the results are wrong, not undefined.)
    ///
    /// Why: camera rays of one wave ask for the same node in the same step. On the shared
    /// scenes' camera rays, 55-85 % of box lanes are in groups of at least eight with one
    /// node. Eight lanes then share one decode of the node, one pass over its four children
    /// and one sorting network: about 32 host instructions a lane, against about 87 for a
    /// pair.
    ///
    /// `inline(always)` with no `target_feature`: a `target_feature` function this size was
    /// not inlined, and out of line its single dependency chain cost as much as the pairs it
    /// replaced. Inlined into the AVX2 build of the loop, its intrinsics compile as AVX2.
    #[inline(always)]
    pub fn box_query_eight(
        self,
        node: &DecodedBox,
        columns: &RayColumns,
        first: usize,
        grow: f32,
        out: &mut [BoxResult],
    ) -> bool {
        debug_assert!(node.ordered == 1);
        eight_lanes_test(self, &OneNode(node), columns, first, grow, out)
    }

    /// [`Self::box_query_eight`] for eight lanes that ask for different nodes, `nodes[k]` lane
    /// `first + k`'s: each node's planes and child pointers are transposed into columns, one lane
    /// per element, and the eight lanes are tested as one. The same f32 operations in the same
    /// order, so each lane's result is [`box_query`](fn@super::box_query)'s with sorting on. The
    /// same preconditions, for every one of the eight nodes.
    ///
    /// Why: lanes that have parted still come in blocks of eight box lanes (on 65,536 of
    /// bunny's camera rays, 44 % of the box lanes that were tested in pairs; most box lanes
    /// of the diffuse rays), and one pass over eight lanes costs fewer host instructions a
    /// lane than [`Self::box_query_pair`] (about 60 against 77): the transposes cost less
    /// than the pairs' per-lane shuffles, and one sorting network serves eight lanes instead
    /// of two.
    #[inline(always)]
    pub fn box_query_eight_nodes(
        self,
        nodes: &[&DecodedBox; 8],
        columns: &RayColumns,
        first: usize,
        grow: f32,
        out: &mut [BoxResult],
    ) {
        debug_assert!(nodes.iter().all(|n| n.ordered == 1));
        eight_lanes_test(self, &EightNodes(nodes), columns, first, grow, out);
    }

    /// Whether lanes `first..first + 8` ask for the same node (one vector compare).
    #[inline(always)]
    pub fn eight_lanes_at_one_node(self, nodes: &[NodePointer], first: usize) -> bool {
        let eight: &[NodePointer; 8] = nodes[first..first + 8].try_into().expect("eight lanes");
        // SAFETY: the token proves AVX2; an unaligned 32-byte load of the eight pointers.
        unsafe {
            let v = _mm256_loadu_si256(eight.as_ptr() as *const __m256i);
            let equal = _mm256_cmpeq_epi32(v, _mm256_set1_epi32(eight[0].to_u32() as i32));
            _mm256_movemask_ps(_mm256_castsi256_ps(equal)) == 0xff
        }
    }
}

/// The body of [`Avx2::box_query_pair`], compiled for AVX2 (its closures inherit the
/// feature).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn box_query_pair_avx2(
    node: [&DecodedBox; 2],
    ray: [&LaneRay; 2],
    grow: f32,
    sort: bool,
    finite_slopes: bool,
    out: [&mut [NodePointer; 4]; 2],
) -> Option<[u32; 2]> {
    use core::arch::x86_64::*;
    if node[0].ordered & node[1].ordered == 0 {
        return None;
    }
    let [n0, n1] = node;
    let [r0, r1] = ray;
    let f = |x: &f32x4| -> __m128 { core::mem::transmute::<f32x4, __m128>(*x) };
    let both = |a: __m128, b: __m128| -> __m256 {
        _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(a), b)
    };
    // Registers 0-3 (extent, origin) and 6-9 (dir.z, inverse direction) of both lanes, one
    // lane per half; each value is then splat within its half.
    let regs = |at: usize| -> __m256 {
        let load = |r: &LaneRay| _mm_loadu_ps((r as *const LaneRay as *const f32).add(at));
        both(load(r0), load(r1))
    };
    let (front, back) = (regs(0), regs(6));
    let o = [
        _mm256_shuffle_ps::<0b01_01_01_01>(front, front),
        _mm256_shuffle_ps::<0b10_10_10_10>(front, front),
        _mm256_shuffle_ps::<0b11_11_11_11>(front, front),
    ];
    let r = [
        _mm256_shuffle_ps::<0b01_01_01_01>(back, back),
        _mm256_shuffle_ps::<0b10_10_10_10>(back, back),
        _mm256_shuffle_ps::<0b11_11_11_11>(back, back),
    ];
    let p_lo = [0, 1, 2]
        .map(|a| _mm256_mul_ps(_mm256_sub_ps(both(f(&n0.lo[a]), f(&n1.lo[a])), o[a]), r[a]));
    let p_hi = [0, 1, 2]
        .map(|a| _mm256_mul_ps(_mm256_sub_ps(both(f(&n0.hi[a]), f(&n1.hi[a])), o[a]), r[a]));
    if !finite_slopes {
        let probe = _mm256_add_ps(
            _mm256_add_ps(
                _mm256_add_ps(p_lo[0], p_lo[1]),
                _mm256_add_ps(p_lo[2], p_hi[0]),
            ),
            _mm256_add_ps(p_hi[1], p_hi[2]),
        );
        if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(probe, probe)) != 0 {
            return None;
        }
    }
    let near = [0, 1, 2].map(|a| _mm256_min_ps(p_lo[a], p_hi[a]));
    let far = [0, 1, 2].map(|a| _mm256_max_ps(p_lo[a], p_hi[a]));
    let zero = _mm256_setzero_ps();
    let tnear = _mm256_max_ps(
        _mm256_max_ps(_mm256_max_ps(near[0], near[1]), near[2]),
        zero,
    );
    let e = _mm256_shuffle_ps::<0>(front, front);
    let tfar = _mm256_min_ps(_mm256_min_ps(_mm256_min_ps(far[0], far[1]), far[2]), e);
    let hit = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(
        tnear,
        _mm256_mul_ps(tfar, _mm256_set1_ps(grow)),
    ));
    let children = _mm256_castps_si256(both(
        core::mem::transmute::<[NodePointer; 4], __m128>(n0.children),
        core::mem::transmute::<[NodePointer; 4], __m128>(n1.children),
    ));
    let all = _mm256_set1_epi32(-1);
    // Missed children become INVALID.
    let mut p = _mm256_or_si256(
        _mm256_and_si256(hit, children),
        _mm256_andnot_si256(hit, all),
    );
    let invalid = _mm256_cmpeq_epi32(p, all);
    let bits = !(_mm256_movemask_ps(_mm256_castsi256_ps(invalid)) as u32);
    let mut valid = [bits & 0xf, bits >> 4 & 0xf];
    if sort {
        p = sort_both_halves(p, invalid, tnear);
        valid = [
            (1u32 << valid[0].count_ones()) - 1,
            (1u32 << valid[1].count_ones()) - 1,
        ];
    }
    let [out0, out1] = out;
    _mm_storeu_si128(out0.as_mut_ptr() as *mut __m128i, _mm256_castsi256_si128(p));
    _mm_storeu_si128(
        out1.as_mut_ptr() as *mut __m128i,
        _mm256_extracti128_si256::<1>(p),
    );
    Some(valid)
}

/// The sorting network (`sort_network_sse2`) on both 128-bit halves of `p` at once (AVX2's
/// 32-bit shuffles work per half): each half's four pointers by their `tnear`, missed
/// slots (`invalid`) last. Returns the sorted pointers.
///
/// # Safety
/// The CPU must support AVX2 (called only from [`box_query_pair_avx2`], into which it is
/// inlined).
#[inline(always)]
unsafe fn sort_both_halves(
    mut p: core::arch::x86_64::__m256i,
    invalid: core::arch::x86_64::__m256i,
    tnear: core::arch::x86_64::__m256,
) -> core::arch::x86_64::__m256i {
    use core::arch::x86_64::*;
    let key = _mm256_castps_si256(_mm256_add_ps(tnear, _mm256_setzero_ps()));
    let mut k = _mm256_or_si256(
        _mm256_andnot_si256(invalid, key),
        _mm256_and_si256(invalid, _mm256_set1_epi32(i32::MAX)),
    );
    // Per stage, each slot compares with its partner: the first slot of a pair swaps when
    // its own key is greater (`k > kp`), the second when the partner's is (`kp > k`); a
    // slot paired with itself never swaps. Keys are non-negative, so flipping every bit of
    // both keys in the second slots (each stage's `flip` mask) turns their test into the
    // first slots' one: a single compare per stage. The blends go through `blendv_ps` (only
    // the sign bit of each 32-bit mask matters, which the compiler then does not re-pack).
    macro_rules! stage {
        ($imm:expr, $second:expr) => {{
            let pp = _mm256_shuffle_epi32::<$imm>(p);
            let kp = _mm256_shuffle_epi32::<$imm>(k);
            let flip: __m256i = $second;
            let swap = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                _mm256_xor_si256(k, flip),
                _mm256_xor_si256(kp, flip),
            ));
            let blend = |a: __m256i, b: __m256i| {
                _mm256_castps_si256(_mm256_blendv_ps(
                    _mm256_castsi256_ps(a),
                    _mm256_castsi256_ps(b),
                    swap,
                ))
            };
            p = blend(p, pp);
            k = blend(k, kp);
        }};
    }
    // Stage 1: (0,2), (1,3). Stage 2: (0,1), (2,3). Stage 3: (1,2). Both halves alike.
    stage!(0b01_00_11_10, _mm256_setr_epi32(0, 0, -1, -1, 0, 0, -1, -1));
    stage!(0b10_11_00_01, _mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1));
    stage!(0b11_01_10_00, _mm256_setr_epi32(0, 0, -1, 0, 0, 0, -1, 0));
    let _ = k;
    p
}

/// Where [`eight_lanes_test`] gets its eight lanes' child boxes and pointers: one node for
/// all eight ([`OneNode`]) or one node each ([`EightNodes`]).
trait EightLaneNodes {
    /// Whether all eight lanes read one node (then the test also says whether their
    /// results are the same).
    const ONE_NODE: bool;

    /// Plane `axis` of the four children's min (`hi` false) or max corners: element k of
    /// vector c is the plane of child c of lane k's node.
    fn planes(&self, isa: Avx2, hi: bool, axis: usize) -> [__m256; 4];

    /// The four child pointers, laid out as [`Self::planes`].
    fn pointers(&self, isa: Avx2) -> [__m256i; 4];
}

/// One node for all eight lanes: its planes broadcast.
struct OneNode<'a>(&'a DecodedBox);

impl EightLaneNodes for OneNode<'_> {
    const ONE_NODE: bool = true;

    #[inline(always)]
    fn planes(&self, _: Avx2, hi: bool, axis: usize) -> [__m256; 4] {
        let plane = if hi {
            &self.0.hi[axis]
        } else {
            &self.0.lo[axis]
        };
        let plane: &[f32; 4] = bytemuck::cast_ref(plane);
        // SAFETY: the token proves AVX; one-f32 loads of the node.
        unsafe {
            [
                _mm256_broadcast_ss(&plane[0]),
                _mm256_broadcast_ss(&plane[1]),
                _mm256_broadcast_ss(&plane[2]),
                _mm256_broadcast_ss(&plane[3]),
            ]
        }
    }

    #[inline(always)]
    fn pointers(&self, _: Avx2) -> [__m256i; 4] {
        // Broadcast from the node as f32 bits: one load-and-broadcast each.
        let c: &[f32; 4] = bytemuck::cast_ref(&self.0.children);
        // SAFETY: the token proves AVX; one-f32 loads of the node.
        unsafe {
            [
                _mm256_castps_si256(_mm256_broadcast_ss(&c[0])),
                _mm256_castps_si256(_mm256_broadcast_ss(&c[1])),
                _mm256_castps_si256(_mm256_broadcast_ss(&c[2])),
                _mm256_castps_si256(_mm256_broadcast_ss(&c[3])),
            ]
        }
    }
}

/// One node per lane: each plane transposed from the eight nodes' rows.
struct EightNodes<'a, 'b>(&'b [&'a DecodedBox; 8]);

impl EightNodes<'_, '_> {
    /// Vector c holds element c of `row(node)` for the eight nodes (lane k's in element k).
    #[inline(always)]
    fn transpose(&self, isa: Avx2, row: impl Fn(&DecodedBox) -> &[f32; 4]) -> [__m256; 4] {
        let n = self.0;
        // (A macro, not a closure: a closure would be compiled without AVX.)
        macro_rules! load {
            ($k:expr) => {
                // SAFETY: SSE is part of x86-64; an unaligned 16-byte load of a row.
                unsafe { _mm_loadu_ps(row(n[$k]).as_ptr()) }
            };
        }
        let rows = [
            load!(0),
            load!(1),
            load!(2),
            load!(3),
            load!(4),
            load!(5),
            load!(6),
            load!(7),
        ];
        transpose_eight(isa, rows)
    }
}

impl EightLaneNodes for EightNodes<'_, '_> {
    const ONE_NODE: bool = false;

    #[inline(always)]
    fn planes(&self, isa: Avx2, hi: bool, axis: usize) -> [__m256; 4] {
        self.transpose(isa, |b| {
            bytemuck::cast_ref(if hi { &b.hi[axis] } else { &b.lo[axis] })
        })
    }

    #[inline(always)]
    fn pointers(&self, isa: Avx2) -> [__m256i; 4] {
        let [c0, c1, c2, c3] = self.transpose(isa, |b| bytemuck::cast_ref(&b.children));
        // SAFETY: the token proves AVX; the pointers' bits move unchanged.
        unsafe {
            [
                _mm256_castps_si256(c0),
                _mm256_castps_si256(c1),
                _mm256_castps_si256(c2),
                _mm256_castps_si256(c3),
            ]
        }
    }
}

/// The body of [`Avx2::box_query_eight`] and [`Avx2::box_query_eight_nodes`]: returns
/// whether all eight lanes got the same children when `N::ONE_NODE` (else `false`).
///
/// One kernel of 140 lines: its values stay in the sixteen AVX registers from the loads to
/// the stores, which a split into functions (closures compiled without AVX, or results
/// passed through memory) would not keep.
#[inline(always)]
fn eight_lanes_test<N: EightLaneNodes>(
    isa: Avx2,
    nodes: &N,
    columns: &RayColumns,
    first: usize,
    grow: f32,
    out: &mut [BoxResult],
) -> bool {
    let out = &mut out[first..first + 8];
    // SAFETY (every intrinsic below): the token proves AVX2; every load reads eight f32 of
    // an `[f32; 8]` or one f32 of the node; every store writes four u32 of a result.
    unsafe {
        // No closures around intrinsics here: a closure is a function of its own, compiled
        // without AVX2, and its intrinsics would stay calls.
        macro_rules! load {
            ($c:expr) => {
                _mm256_loadu_ps(RayColumns::eight(&$c, first).as_ptr())
            };
        }
        let e = load!(columns.extent);
        let zero = _mm256_setzero_ps();
        let all = _mm256_set1_epi32(-1);
        let grow = _mm256_set1_ps(grow);
        // Axis by axis, the near and far planes of the four children, folded in x, y, z
        // order: tnear = max(max(max(near_x, near_y), near_z), 0), tfar likewise with min
        // and the extent, as `box_query` does.
        let (mut tnear, mut tfar) = ([zero; 4], [zero; 4]);
        for axis in 0..3 {
            let (o, r) = (load!(columns.origin[axis]), load!(columns.inv_dir[axis]));
            let lo = nodes.planes(isa, false, axis);
            let hi = nodes.planes(isa, true, axis);
            for c in 0..4 {
                let l = _mm256_mul_ps(_mm256_sub_ps(lo[c], o), r);
                let h = _mm256_mul_ps(_mm256_sub_ps(hi[c], o), r);
                let (near, far) = (_mm256_min_ps(l, h), _mm256_max_ps(l, h));
                if axis == 0 {
                    (tnear[c], tfar[c]) = (near, far);
                } else {
                    tnear[c] = _mm256_max_ps(tnear[c], near);
                    tfar[c] = _mm256_min_ps(tfar[c], far);
                }
            }
        }
        let pointers = nodes.pointers(isa);
        // Per child: pointer or INVALID (`p`), sort key (`k`), and the invalid mask.
        let (mut p, mut k, mut invalid) = ([all; 4], [all; 4], [all; 4]);
        for c in 0..4 {
            let tnear = _mm256_max_ps(tnear[c], zero);
            let tfar = _mm256_min_ps(tfar[c], e);
            let hit = _mm256_cmp_ps::<_CMP_LE_OQ>(tnear, _mm256_mul_ps(tfar, grow));
            // Selects by the masks' sign bits (all ones or all zeros here).
            p[c] = _mm256_castps_si256(_mm256_blendv_ps(
                _mm256_castsi256_ps(all),
                _mm256_castsi256_ps(pointers[c]),
                hit,
            ));
            invalid[c] = _mm256_cmpeq_epi32(p[c], all);
            // The key of `sort_network_sse2`: the bits of tnear + 0 (no -0), INVALID last.
            let key = _mm256_add_ps(tnear, zero);
            k[c] = _mm256_castps_si256(_mm256_blendv_ps(
                key,
                _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX)),
                _mm256_castsi256_ps(invalid[c]),
            ));
        }
        // The network (0,2),(1,3),(0,1),(2,3),(1,2): swap when the first key is greater.
        // The keys after an exchange are their minimum and maximum (equal keys do not swap,
        // and are the same bits), which costs less than two blends on CPUs where a variable
        // blend is several micro-operations.
        macro_rules! exchange {
            ($a:expr, $b:expr) => {{
                let swap = _mm256_cmpgt_epi32(k[$a], k[$b]);
                let (pa, pb, ka, kb) = (p[$a], p[$b], k[$a], k[$b]);
                p[$a] = _mm256_blendv_epi8(pa, pb, swap);
                p[$b] = _mm256_blendv_epi8(pb, pa, swap);
                k[$a] = _mm256_min_epi32(ka, kb);
                k[$b] = _mm256_max_epi32(ka, kb);
            }};
        }
        exchange!(0, 2);
        exchange!(1, 3);
        exchange!(0, 1);
        exchange!(2, 3);
        exchange!(1, 2);
        let _ = k;
        // Valid mask (1 << n) - 1, with n = 4 + the sum of the invalid masks (-1 each).
        let n = _mm256_add_epi32(
            _mm256_set1_epi32(4),
            _mm256_add_epi32(
                _mm256_add_epi32(invalid[0], invalid[1]),
                _mm256_add_epi32(invalid[2], invalid[3]),
            ),
        );
        let one = _mm256_set1_epi32(1);
        let mut masks = [0u32; 8];
        _mm256_storeu_si256(
            masks.as_mut_ptr() as *mut __m256i,
            _mm256_sub_epi32(_mm256_sllv_epi32(one, n), one),
        );
        // All eight lanes got the same children (so the same mask) when each sorted slot
        // equals its lane 0.
        let uniform = N::ONE_NODE && {
            macro_rules! same {
                ($c:expr) => {
                    _mm256_cmpeq_epi32(
                        p[$c],
                        _mm256_broadcastd_epi32(_mm256_castsi256_si128(p[$c])),
                    )
                };
            }
            let eq = _mm256_and_si256(
                _mm256_and_si256(same!(0), same!(1)),
                _mm256_and_si256(same!(2), same!(3)),
            );
            _mm256_movemask_epi8(eq) == -1
        };
        // Transpose: row j holds lane j's children (low half) and lane j + 4's (high half).
        let t0 = _mm256_unpacklo_epi32(p[0], p[1]);
        let t1 = _mm256_unpackhi_epi32(p[0], p[1]);
        let t2 = _mm256_unpacklo_epi32(p[2], p[3]);
        let t3 = _mm256_unpackhi_epi32(p[2], p[3]);
        let rows = [
            _mm256_unpacklo_epi64(t0, t2),
            _mm256_unpackhi_epi64(t0, t2),
            _mm256_unpacklo_epi64(t1, t3),
            _mm256_unpackhi_epi64(t1, t3),
        ];
        for (j, row) in rows.into_iter().enumerate() {
            _mm_storeu_si128(
                out[j].children.as_mut_ptr() as *mut __m128i,
                _mm256_castsi256_si128(row),
            );
            _mm_storeu_si128(
                out[j + 4].children.as_mut_ptr() as *mut __m128i,
                _mm256_extracti128_si256::<1>(row),
            );
        }
        for (slot, mask) in out.iter_mut().zip(masks) {
            slot.valid = mask;
        }
        uniform
    }
}
