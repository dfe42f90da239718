//! The SIMD intersector: one `image_bvh_intersect_ray` wave instruction for all active lanes.
//!
//! Bit-identical to the scalar reference [`crate::hw::image_bvh_intersect_ray`]
//! (`../shared/spec/semantics.md` section 12); `tests/wave_simd.rs` checks this on millions
//! of seeded random lanes. Built on `wide::f32x4` ([`LANES`] = 4), which `wide` maps to
//! SSE, NEON or WASM SIMD, or plain arrays: no AVX-512 or FMA assumption.
//!
//! - A box query tests the lane's four child boxes at once: vector element c is child c.
//!   Ray values are lane-uniform and broadcast.
//! - Triangle queries are gathered across lanes: vector element j is the j-th lane that
//!   asked for a triangle in this instruction, four lanes per vector step (eight, in one AVX
//!   vector, in the AVX2 wave loop: [`TriangleBatch::run_avx`]).
//!
//! All arithmetic is f32, one rounding per operation, no FMA (`wide`'s `+ - *` are plain
//! IEEE operations; `mul_add` is never used). minNum/maxNum (NaN dropped) come from `wide`'s
//! `min`/`max`, which are NaN-ignoring on every backend (STYLE.md "Traps"); the raw
//! `fast_min`/`fast_max` (x86 `minps`/`maxps`, which return the second operand on NaN) are
//! used only where no operand can be NaN (the ordered-node path, once a probe or the lane's
//! slope flag has ruled NaN products out). `tests/wave_simd.rs` pins this choice.
//!
//! Nodes are read from the BVH byte image; box nodes can be pre-decoded once into
//! [`DecodedBox`] (an exact re-layout: f32 copied, f16 widened exactly) by [`NodeCache`], so
//! that the hot loop loads six aligned vectors instead of transposing 24 scalars.

use crate::hw::descriptor::{BvhDescriptor, TriangleReturnMode};
use crate::hw::node::TRIANGLE_VERTICES;
use crate::hw::pointer::{NodePointer, NodeType};
use half::f16;
use wide::{f32x4, u32x4};

/// CPU SIMD width of the intersector (f32 elements per vector).
pub const LANES: usize = 4;

/// Most triangle queries a [`TriangleBatch`] holds: eight, for the AVX2 wave loop's test of
/// eight at once ([`TriangleBatch::run_avx`]); the portable test runs [`LANES`] at a time.
pub const BATCH_LANES: usize = 8;

/// The bits of [`NodePointer::INVALID`], for the vector code that handles pointers as
/// plain 32-bit elements.
const INVALID_BITS: u32 = NodePointer::INVALID.to_u32();

/// One lane's ray VGPRs 1-10 (A16 = 0): the scalar reference's register type.
pub type LaneRay = crate::hw::instruction::RayRegisters;

/// A box node re-laid out for the vector test: element c of each vector is child c.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug)]
pub struct DecodedBox {
    /// min.x, min.y, min.z of the four children (a slot with an INVALID pointer holds a
    /// copy of the first real child's bounds: see `with_order`).
    pub lo: [f32x4; 3],
    /// max.x, max.y, max.z of the four children (likewise).
    pub hi: [f32x4; 3],
    /// The four child pointers, verbatim.
    pub children: [NodePointer; 4],
    /// Node type the bytes were decoded as (4 or 5; `EMPTY` for an empty cache entry).
    pub ty: u32,
    /// 1 when every child has min <= max on every axis (no NaN): then, without NaN in the
    /// products, `min/max(p_lo, p_hi)` equals the sign-selected near/far plane.
    pub ordered: u32,
    /// Child slots holding a real child (pointer not 0xFFFFFFFF), counted once at decode.
    pub useful: u32,
}

#[inline]
fn f32_at(bytes: &[u8], offset: usize) -> f32 {
    f32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

#[inline]
fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

impl DecodedBox {
    /// From the 128 bytes of an FP32 box node (`semantics.md` 4.1).
    pub fn from_box32(bytes: &[u8]) -> DecodedBox {
        // Child c: min xyz at 16 + 24 c, max xyz 12 bytes later.
        Self::from_bounds(bytes, NodeType::BoxF32, |c, a, max| {
            f32_at(bytes, 16 + 24 * c + 12 * max as usize + 4 * a)
        })
    }

    /// From the 64 bytes of an FP16 box node, widening each binary16 exactly
    /// (`semantics.md` 6.1).
    pub fn from_box16(bytes: &[u8]) -> DecodedBox {
        // Child c: min xyz at 16 + 12 c, max xyz 6 bytes later.
        Self::from_bounds(bytes, NodeType::BoxF16, |c, a, max| {
            let offset = 16 + 12 * c + 6 * max as usize + 2 * a;
            f16::from_bits(u16::from_le_bytes([bytes[offset], bytes[offset + 1]])).to_f32()
        })
    }

    /// The children's pointers from `bytes`, and bound `(c, a, max)` (child c, axis a, min or
    /// max) from `bound`.
    fn from_bounds(
        bytes: &[u8],
        ty: NodeType,
        bound: impl Fn(usize, usize, bool) -> f32,
    ) -> DecodedBox {
        let side = |max: bool| {
            std::array::from_fn(|a| f32x4::new(std::array::from_fn(|c| bound(c, a, max))))
        };
        DecodedBox {
            lo: side(false),
            hi: side(true),
            children: std::array::from_fn(|c| NodePointer::from_u32(u32_at(bytes, 4 * c))),
            ty: ty as u32,
            ordered: 0,
            useful: 0,
        }
        .with_order()
    }

    fn with_order(mut self) -> DecodedBox {
        // A slot whose pointer is INVALID returns INVALID whatever its bounds, and the sort
        // never reads its key (`semantics.md` 5.6, 5.7; `hw::box_test`): its bounds cannot
        // change a result. Encoders give such slots NaN or inverted bounds, which would send
        // every query of the node to the general path; a copy of the first real child's
        // bounds lets the node take the fast path whenever its real children do.
        if let Some(donor) = self.children.iter().position(|c| !c.is_invalid()) {
            let empty = self.children.map(NodePointer::is_invalid);
            for v in self.lo.iter_mut().chain(self.hi.iter_mut()) {
                let x = v.to_array();
                *v = f32x4::new(std::array::from_fn(|c| x[if empty[c] { donor } else { c }]));
            }
        }
        let ordered = (0..3).all(|a| self.lo[a].simd_le(self.hi[a]).to_bitmask() == 0xf);
        self.ordered = ordered as u32;
        self.useful = self.children.iter().filter(|c| !c.is_invalid()).count() as u32;
        self
    }

    /// Child slots that hold a real child (pointer not 0xFFFFFFFF).
    #[inline]
    pub fn useful_slots(&self) -> u32 {
        self.useful
    }
}

/// The f32 factor `1 + G * 2^-24` that grows the far distance (`semantics.md` 5.2), rounded
/// once as f32 like AMD's emulation computes it.
#[inline]
pub fn grow_factor(box_grow_ulps: u8) -> f32 {
    // G * 2^-24 is exact in f32 (G < 256); the sum rounds once.
    1.0f32 + box_grow_ulps as f32 * 5.960_464_5e-8
}

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

/// Two lanes' box queries at once, one lane per 128-bit half of AVX2 vectors: the same f32
/// operations as [`box_query`] in the same order (one rounding each), so each lane's result
/// is [`box_query`]'s. Covers the common case only, where both nodes are `ordered` and
/// neither lane has a NaN among its products; returns `None` otherwise (nothing written),
/// and the caller runs [`box_query`] per lane. Returns each lane's valid mask.
///
/// `finite_slopes` says that both lanes' inverse directions are finite and not zero: then no
/// product can be NaN and the NaN probe is skipped (six vector operations a pair).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn box_query_pair(
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
        // `sort_network_sse2` on both halves at once (AVX2's 32-bit shuffles work per half).
        let key = _mm256_castps_si256(_mm256_add_ps(tnear, zero));
        let mut k = _mm256_or_si256(
            _mm256_andnot_si256(invalid, key),
            _mm256_and_si256(invalid, _mm256_set1_epi32(i32::MAX)),
        );
        // Per stage, each slot compares with its partner: the first slot of a pair swaps when
        // its own key is greater (`k > kp`), the second when the partner's is (`kp > k`); a
        // slot paired with itself never swaps. Keys are non-negative, so flipping every bit
        // of both keys in the second slots (`SECOND`) turns their test into the first slots'
        // one: a single compare per stage. The blends go through `blendv_ps` (only the sign
        // bit of each 32-bit mask matters, which the compiler then does not re-pack).
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

/// The origins, directions, inverse directions and extents of a block of host lanes as
/// columns (`origin[a][i]`: lane i's component a), for [`box_query_eight`] and
/// [`triangle_query_eight`]. Origins and directions are fixed for a ray's whole traversal,
/// so they are written once, when a lane starts; the extent also when a hit shrinks it (the
/// wave loop writes both the lane's register and its column, [`RayColumns::set_extent`]).
#[derive(Clone, Debug)]
pub struct RayColumns {
    origin: [[f32; RayColumns::LANES]; 3],
    dir: [[f32; RayColumns::LANES]; 3],
    inv_dir: [[f32; RayColumns::LANES]; 3],
    extent: [f32; RayColumns::LANES],
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
    fn eight(column: &[f32; RayColumns::LANES], first: usize) -> &[f32; 8] {
        column[first..first + 8].try_into().expect("eight lanes")
    }

    /// Lane `i`'s origin, direction and inverse direction, as recorded.
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(crate) fn lane(&self, i: usize) -> [[f32; 3]; 3] {
        let column = |c: &[[f32; RayColumns::LANES]; 3]| [c[0][i], c[1][i], c[2][i]];
        [
            column(&self.origin),
            column(&self.dir),
            column(&self.inv_dir),
        ]
    }

    /// Records lanes `first..first + 8` at once: element k of `origin[a]`, `dir[a]` and
    /// `inv_dir[a]` is lane `first + k`'s component a, element k of `extent` its extent.
    ///
    /// # Safety
    /// The CPU must support AVX (and the caller be compiled with it, where this inlines).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn set_eight(
        &mut self,
        first: usize,
        [origin, dir, inv_dir]: [[core::arch::x86_64::__m256; 3]; 3],
        extent: core::arch::x86_64::__m256,
    ) {
        use core::arch::x86_64::*;
        let e: &mut [f32; 8] = (&mut self.extent[first..first + 8]).try_into().unwrap();
        // SAFETY: an unaligned 32-byte store of eight f32; AVX (the caller's promise).
        unsafe { _mm256_storeu_ps(e.as_mut_ptr(), extent) };
        for a in 0..3 {
            let o: &mut [f32; 8] = (&mut self.origin[a][first..first + 8]).try_into().unwrap();
            let d: &mut [f32; 8] = (&mut self.dir[a][first..first + 8]).try_into().unwrap();
            let r: &mut [f32; 8] = (&mut self.inv_dir[a][first..first + 8]).try_into().unwrap();
            // SAFETY: unaligned 32-byte stores of eight f32; AVX (the caller's promise).
            unsafe {
                _mm256_storeu_ps(o.as_mut_ptr(), origin[a]);
                _mm256_storeu_ps(d.as_mut_ptr(), dir[a]);
                _mm256_storeu_ps(r.as_mut_ptr(), inv_dir[a]);
            }
        }
    }
}

/// The box queries of eight consecutive lanes `first..first + 8` on one node at once, one
/// lane per 32-bit element of AVX2 vectors, the node's planes broadcast: the same f32
/// operations as [`box_query_pair`] and [`box_query`] in the same order (one rounding each),
/// so each lane's result is [`box_query`]'s with sorting on. Writes lane `first + k`'s
/// sorted children and valid mask to `out[first + k]`, and returns whether all eight got
/// the same children (hence the same mask): the wave loop then consumes one result for the
/// eight lanes of a shared block (see `traverse::Traversal::SHARES_LANES`).
///
/// Why: camera rays of one wave ask for the same node in the same step. On the shared
/// scenes' camera rays, 55-85 % of box lanes are in groups of at least eight with one node.
/// Eight lanes then share one decode of the node, one pass over its four children and one
/// sorting network: about 32 host instructions a lane, against about 87 for a pair.
///
/// `inline(always)` with no `target_feature`: a `target_feature` function this size was
/// not inlined, and out of line its single dependency chain cost as much as the pairs it
/// replaced. Inlined into the AVX2 build of the loop, its intrinsics compile as AVX2 there.
///
/// # Safety
/// The CPU must support AVX2 (call it from code compiled for AVX2: elsewhere the results
/// are the same, but its intrinsics stay calls). The caller also guarantees the common case of
/// [`box_query_pair`] without its probe: `node.ordered`, and every one of the eight lanes'
/// inverse directions finite and not zero (so no product is NaN); and that `columns` holds
/// the eight lanes' registers, their current extents included.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn box_query_eight(
    node: &DecodedBox,
    columns: &RayColumns,
    first: usize,
    grow: f32,
    out: &mut [([NodePointer; 4], u32)],
) -> bool {
    debug_assert!(node.ordered == 1);
    // SAFETY: the caller's contract is this function's.
    unsafe { eight_lanes_test(&OneNode(node), columns, first, grow, out) }
}

/// [`box_query_eight`] for eight lanes that ask for different nodes, `nodes[k]` lane
/// `first + k`'s: each node's planes and child pointers are transposed into columns, one
/// lane per element, and the eight lanes are tested as one. The same f32 operations in the
/// same order, so each lane's result is [`box_query`]'s with sorting on.
///
/// Why: lanes that have parted still come in blocks of eight box lanes (on 65,536 of
/// bunny's camera rays, 44 % of the box lanes that were tested in pairs; most box lanes of
/// the diffuse rays), and one pass over eight lanes costs fewer host instructions a lane
/// than [`box_query_pair`] (about 60 against 77): the transposes cost less than the pairs'
/// per-lane shuffles, and one sorting network serves eight lanes instead of two.
///
/// # Safety
/// As [`box_query_eight`], for every one of the eight nodes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn box_query_eight_nodes(
    nodes: &[&DecodedBox; 8],
    columns: &RayColumns,
    first: usize,
    grow: f32,
    out: &mut [([NodePointer; 4], u32)],
) {
    debug_assert!(nodes.iter().all(|n| n.ordered == 1));
    // SAFETY: the caller's contract is this function's.
    unsafe { eight_lanes_test(&EightNodes(nodes), columns, first, grow, out) };
}

/// Where [`eight_lanes_test`] gets its eight lanes' child boxes and pointers: one node for
/// all eight ([`OneNode`]) or one node each ([`EightNodes`]).
#[cfg(target_arch = "x86_64")]
trait EightLaneNodes {
    /// Whether all eight lanes read one node (then the test also says whether their
    /// results are the same).
    const ONE_NODE: bool;

    /// Plane `axis` of the four children's min (`hi` false) or max corners: element k of
    /// vector c is the plane of child c of lane k's node.
    ///
    /// # Safety
    /// AVX2, as [`box_query_eight`].
    unsafe fn planes(&self, hi: bool, axis: usize) -> [core::arch::x86_64::__m256; 4];

    /// The four child pointers, laid out as [`Self::planes`].
    ///
    /// # Safety
    /// AVX2, as [`box_query_eight`].
    unsafe fn pointers(&self) -> [core::arch::x86_64::__m256i; 4];
}

/// One node for all eight lanes: its planes broadcast.
#[cfg(target_arch = "x86_64")]
struct OneNode<'a>(&'a DecodedBox);

#[cfg(target_arch = "x86_64")]
impl EightLaneNodes for OneNode<'_> {
    const ONE_NODE: bool = true;

    #[inline(always)]
    unsafe fn planes(&self, hi: bool, axis: usize) -> [core::arch::x86_64::__m256; 4] {
        use core::arch::x86_64::*;
        let plane = if hi {
            &self.0.hi[axis]
        } else {
            &self.0.lo[axis]
        };
        let plane: &[f32; 4] = bytemuck::cast_ref(plane);
        // SAFETY: AVX (the caller's promise); one-f32 loads of the node.
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
    unsafe fn pointers(&self) -> [core::arch::x86_64::__m256i; 4] {
        use core::arch::x86_64::*;
        // Broadcast from the node as f32 bits: one load-and-broadcast each.
        let c: &[f32; 4] = bytemuck::cast_ref(&self.0.children);
        // SAFETY: AVX (the caller's promise); one-f32 loads of the node.
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
#[cfg(target_arch = "x86_64")]
struct EightNodes<'a, 'b>(&'b [&'a DecodedBox; 8]);

#[cfg(target_arch = "x86_64")]
impl EightNodes<'_, '_> {
    /// Vector c holds element c of `row(node)` for the eight nodes (lane k's in element k).
    ///
    /// # Safety
    /// AVX (the caller's promise).
    #[inline(always)]
    unsafe fn transpose(
        &self,
        row: impl Fn(&DecodedBox) -> &[f32; 4],
    ) -> [core::arch::x86_64::__m256; 4] {
        let n = self.0;
        // SAFETY: AVX (the caller's promise).
        unsafe {
            transpose_eight_rows::<false>([
                row(n[0]),
                row(n[1]),
                row(n[2]),
                row(n[3]),
                row(n[4]),
                row(n[5]),
                row(n[6]),
                row(n[7]),
            ])
        }
    }
}

/// Eight rows of four f32 as four columns: element k of column c is `rows[k][c]`. Rows k
/// and k + 4 load into one vector (low and high half), then a 4x4 transpose runs in each
/// half. ([`EightNodes`]' node planes and [`TriangleBatch::run_avx`]'s lane rows.)
///
/// `JUST_STORED`: the rows were written a moment ago, 16 bytes at a time (the triangle
/// batch's gather). Each is then read with exactly one 16-byte load. Left to itself, LLVM
/// widens the load of a row whose upper half the insert replaces to 32 bytes, which spans
/// the next row's separate store: the CPU cannot forward two stores into one load, and the
/// load waits for both to reach the cache (measured 1.03x on bunny's primary rays without
/// it). A volatile read is never widened; it needs the row 16-byte aligned.
///
/// # Safety
/// AVX, with the caller compiled for it (this is inlined there); with `JUST_STORED`, every
/// row 16-byte aligned.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn transpose_eight_rows<const JUST_STORED: bool>(
    rows: [&[f32; 4]; 8],
) -> [core::arch::x86_64::__m256; 4] {
    use core::arch::x86_64::*;
    // SAFETY: AVX (the caller's promise); 16-byte loads of `[f32; 4]`s, aligned when
    // volatile (the caller's promise).
    unsafe {
        macro_rules! load {
            ($row:expr) => {
                if JUST_STORED {
                    debug_assert!($row.as_ptr() as usize % 16 == 0);
                    core::ptr::read_volatile($row.as_ptr() as *const __m128)
                } else {
                    _mm_loadu_ps($row.as_ptr())
                }
            };
        }
        macro_rules! pair {
            ($k:expr) => {
                _mm256_insertf128_ps::<1>(
                    _mm256_castps128_ps256(load!(rows[$k])),
                    load!(rows[$k + 4]),
                )
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

/// Word `w` (0-14) of a triangle node as f32: component `w % 3` of vertex `w / 3`. (The mask
/// keeps the compiler from checking bounds it cannot prove.)
#[inline(always)]
fn triangle_node_word(node: &[u8; 64], w: usize) -> f32 {
    let o = 4 * (w & 15);
    f32::from_le_bytes([node[o], node[o + 1], node[o + 2], node[o + 3]])
}

/// A triangle node's word@60: its triangle ID or IJ-control word.
#[inline(always)]
fn triangle_node_id_word(node: &[u8; 64]) -> u32 {
    u32::from_le_bytes([node[60], node[61], node[62], node[63]])
}

/// The dominant-axis rotation of eight lanes whose axes may differ, as selects: component
/// c of a rotated vector is component `ROTATIONS[axis][c]` of the original, lane by lane.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct AxisMasks {
    /// Lanes whose dominant axis is x (all ones), and those where y is as large as the
    /// largest: their axis is y unless x is (a tie goes to x, whose select comes last).
    x: core::arch::x86_64::__m256,
    y: core::arch::x86_64::__m256,
}

#[cfg(target_arch = "x86_64")]
impl AxisMasks {
    /// The masks of the lanes' dominant axes, from their directions `dir` (x, y, z columns):
    /// [`dominant_rotation`]'s choice, ties to x, then y.
    ///
    /// # Safety
    /// AVX, with the caller compiled for it (this is inlined there).
    #[inline(always)]
    unsafe fn of_directions(dir: [core::arch::x86_64::__m256; 3]) -> AxisMasks {
        use core::arch::x86_64::*;
        // SAFETY: AVX (the caller's promise).
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
    /// and [`TriangleBatch::push_prepared_avx`] move, by selects instead of permutes.
    ///
    /// # Safety
    /// AVX, with the caller compiled for it (this is inlined there).
    #[inline(always)]
    unsafe fn rotate(&self, v: [core::arch::x86_64::__m256; 3]) -> [core::arch::x86_64::__m256; 3] {
        use core::arch::x86_64::*;
        let mut out = v;
        // (A loop, not `from_fn`: a closure would be a function compiled without AVX.)
        for c in 0..3 {
            // SAFETY: AVX (the caller's promise).
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

/// The triangle queries of eight consecutive lanes `first..first + 8` on one triangle,
/// triangle `k` of the node `node`, one lane per vector element: the node's vertices
/// broadcast and rotated lane by lane, the lanes' rotated origins and directions read from
/// `columns`. The same f32 operations in the same order as [`TriangleBatch::run_avx`] on
/// the same values, so element j is lane `first + j`'s four dwords, as the scalar reference
/// returns them.
///
/// Why: the eight lanes of a block that shares one stack (`traverse::Traversal::SHARES_LANES`)
/// often ask for one triangle in one step (on sponza's camera rays, 46 % of the triangle lane
/// steps; 8 % more are blocks of eight lanes that have parted). The batch gathers each
/// lane's vertices and ray as rows and transposes them back to columns; here the vertices
/// are three broadcasts each and the rays' columns were written when the lanes started.
///
/// # Safety
/// AVX2, with the caller compiled for it (this is inlined there, without a `target_feature`
/// of its own); `columns` holds the eight lanes' set-ups.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn triangle_query_eight(
    node: &[u8; 64],
    k: usize,
    columns: &RayColumns,
    first: usize,
    mode: TriangleReturnMode,
) -> [[u32; 4]; BATCH_LANES] {
    use core::arch::x86_64::*;
    // SAFETY (every intrinsic below): AVX2, the caller's promise; every load reads eight
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
        let rotation = AxisMasks::of_directions(dir);
        let [v0, v1, v2] = TRIANGLE_VERTICES[k & 3].map(|v| [3 * v, 3 * v + 1, 3 * v + 2]);
        // Columns rotated lane by lane.
        macro_rules! rotated {
            ($v:expr) => {{
                let [x, y, z] = rotation.rotate($v);
                [Avx8(x), Avx8(y), Avx8(z)]
            }};
        }
        // A vertex (its three word indices), the same in every lane.
        macro_rules! vertex {
            ($w:expr) => {
                rotated!([
                    _mm256_set1_ps(triangle_node_word(node, $w[0])),
                    _mm256_set1_ps(triangle_node_word(node, $w[1])),
                    _mm256_set1_ps(triangle_node_word(node, $w[2])),
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
        let id = triangle_node_id_word(node);
        let lanes = (BATCH_LANES, &[id; BATCH_LANES], &[k as u32; BATCH_LANES]);
        triangle_dwords(lanes, mode, columns)
    }
}

#[cfg(target_arch = "x86_64")]
impl EightLaneNodes for EightNodes<'_, '_> {
    const ONE_NODE: bool = false;

    #[inline(always)]
    unsafe fn planes(&self, hi: bool, axis: usize) -> [core::arch::x86_64::__m256; 4] {
        // SAFETY: the caller's promise.
        unsafe {
            self.transpose(|b| bytemuck::cast_ref(if hi { &b.hi[axis] } else { &b.lo[axis] }))
        }
    }

    #[inline(always)]
    unsafe fn pointers(&self) -> [core::arch::x86_64::__m256i; 4] {
        use core::arch::x86_64::*;
        // SAFETY: the caller's promise; the pointers' bits move unchanged.
        unsafe {
            let [c0, c1, c2, c3] = self.transpose(|b| bytemuck::cast_ref(&b.children));
            [
                _mm256_castps_si256(c0),
                _mm256_castps_si256(c1),
                _mm256_castps_si256(c2),
                _mm256_castps_si256(c3),
            ]
        }
    }
}

/// The body of [`box_query_eight`] and [`box_query_eight_nodes`]: returns whether all eight
/// lanes got the same children when `N::ONE_NODE` (else `false`).
///
/// # Safety
/// As [`box_query_eight`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn eight_lanes_test<N: EightLaneNodes>(
    nodes: &N,
    columns: &RayColumns,
    first: usize,
    grow: f32,
    out: &mut [([NodePointer; 4], u32)],
) -> bool {
    use core::arch::x86_64::*;
    let out = &mut out[first..first + 8];
    // SAFETY (every intrinsic below): the caller guarantees AVX2; every load reads eight f32
    // of an `[f32; 8]` or one f32 of the node.
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
            let lo = nodes.planes(false, axis);
            let hi = nodes.planes(true, axis);
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
        let pointers = nodes.pointers();
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
                out[j].0.as_mut_ptr() as *mut __m128i,
                _mm256_castsi256_si128(row),
            );
            _mm_storeu_si128(
                out[j + 4].0.as_mut_ptr() as *mut __m128i,
                _mm256_extracti128_si256::<1>(row),
            );
        }
        for (slot, mask) in out.iter_mut().zip(masks) {
            slot.1 = mask;
        }
        uniform
    }
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
#[allow(unused_assignments)] // the last stage's keys are not read
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
        macro_rules! stage {
            ($imm:expr, $second:expr) => {{
                let pp = _mm_shuffle_epi32::<$imm>(p);
                let kp = _mm_shuffle_epi32::<$imm>(k);
                let flip: __m128i = $second;
                let swap = _mm_cmpgt_epi32(_mm_xor_si128(k, flip), _mm_xor_si128(kp, flip));
                p = _mm_or_si128(_mm_and_si128(swap, pp), _mm_andnot_si128(swap, p));
                k = _mm_or_si128(_mm_and_si128(swap, kp), _mm_andnot_si128(swap, k));
            }};
        }
        // _MM_SHUFFLE(d, c, b, a) = d << 6 | c << 4 | b << 2 | a (element 0 from a).
        // Stage 1: (0,2), (1,3): partners [2, 3, 0, 1].
        stage!(0b01_00_11_10, _mm_setr_epi32(0, 0, -1, -1));
        // Stage 2: (0,1), (2,3): partners [1, 0, 3, 2].
        stage!(0b10_11_00_01, _mm_setr_epi32(0, -1, 0, -1));
        // Stage 3: (1,2): partners [0, 2, 1, 3].
        stage!(0b11_01_10_00, _mm_setr_epi32(0, 0, -1, 0));
        let mut out = [NodePointer::INVALID; 4];
        _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, p);
        out
    }
}

/// The scalar network (the reference the SIMD form is tested against).
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
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

/// Up to [`BATCH_LANES`] triangle queries gathered across lanes: per gathered lane, its triangle's
/// three vertices and its ray's origin and direction as rows (x, y, z, unused), already
/// rotated so that the ray's dominant axis is "z" (`semantics.md` 7.2 step 1).
/// [`Self::run`] turns the rows into columns (element j of each is gathered lane j).
///
/// Why rows: a lane's vertex is then one 16-byte load and one permute by the ray's rotation
/// ([`Self::push_prepared_avx`]), where a column layout took nine scalar loads and stores a
/// lane, and the vector loads of the columns spanned four scalar stores each.
///
/// 16-byte aligned, `rows` first: every row is aligned, for the exact loads of
/// [`Self::run_avx`] (see `transpose_eight_rows`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
pub struct TriangleBatch {
    /// `rows[j]`: gathered lane j's vertices 0-2 (triangle k's, in hardware order), then its
    /// origin and direction.
    rows: [[[f32; 4]; 5]; BATCH_LANES],
    /// Word@60 of each node.
    word: [u32; BATCH_LANES],
    /// Triangle index k (pointer bits 1:0).
    k: [u32; BATCH_LANES],
    len: usize,
}

// Every row of a batch is 16-byte aligned (the exact loads of `TriangleBatch::run_avx`).
const _: () = assert!(
    std::mem::align_of::<TriangleBatch>() == 16 && std::mem::offset_of!(TriangleBatch, rows) == 0
);

// The 16 bytes `TriangleBatch::push_prepared_avx` loads at each vertex stay inside the node.
const _: () = {
    let mut k = 0;
    while k < 4 {
        let mut i = 0;
        while i < 3 {
            assert!(4 * (3 * TRIANGLE_VERTICES[k][i] + 4) <= 64);
            i += 1;
        }
        k += 1;
    }
};

/// A lane's ray prepared for triangle tests (`semantics.md` 7.2 step 1): the dominant-axis
/// rotation and the rotated origin and direction. A traversal never changes a lane's origin
/// or direction (only its extent), so a lane prepares this once per ray.
#[derive(Clone, Copy, Debug, Default)]
pub struct TriangleRay {
    /// Component `rotation[c]` of a vertex becomes its component c; the last element is 3,
    /// so that this is also the `vpermilps` control of the rotation.
    pub rotation: [u32; 4],
    /// Rotated origin (the last element 0).
    pub origin: [f32; 4],
    /// Rotated direction, z the dominant component (the last element 0).
    pub dir: [f32; 4],
}

impl TriangleRay {
    /// Prepares `ray`.
    #[inline(always)]
    pub fn new(ray: &LaneRay) -> TriangleRay {
        TriangleRay::rotated(dominant_rotation(ray.dir), &ray.origin, &ray.dir)
    }

    /// `origin` and `dir` rotated by `rotation` ([`dominant_rotation`] of `dir`).
    #[inline(always)]
    pub fn rotated(rotation: [usize; 3], origin: &[f32; 3], dir: &[f32; 3]) -> TriangleRay {
        let [a, b, c] = rotation;
        // Read in place: a copy of the registers on the stack, indexed by the rotation, made
        // loads that spanned earlier stores (store-forwarding stalls).
        let rotate = |v: &[f32; 3]| [v[a], v[b], v[c], 0.0];
        TriangleRay {
            rotation: [a as u32, b as u32, c as u32, 3],
            origin: rotate(origin),
            dir: rotate(dir),
        }
    }
}

impl TriangleRay {
    /// [`TriangleRay::rotated`] for `ray` with dominant axis `axis` (0..=2, [`ROTATIONS`]),
    /// in vector registers: each rotation is one permute of the ray's 16 bytes from the
    /// origin and from the direction, the last element zeroed.
    ///
    /// # Safety
    /// The CPU must support AVX (the caller compiled with it, where this inlines).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn rotated_avx(axis: u32, ray: &crate::math::Ray, out: &mut TriangleRay) {
        use core::arch::x86_64::*;
        const fn control(r: [usize; 3]) -> [u32; 4] {
            [r[0] as u32, r[1] as u32, r[2] as u32, 3]
        }
        // A fourth entry for the index mask (never taken: axes are 0..=2).
        static CONTROLS: [[u32; 4]; 4] = [
            control(ROTATIONS[0]),
            control(ROTATIONS[1]),
            control(ROTATIONS[2]),
            control(ROTATIONS[2]),
        ];
        let control = &CONTROLS[(axis & 3) as usize];
        let at = ray as *const crate::math::Ray as *const f32;
        // SAFETY: AVX (the caller's promise); 16-byte loads inside the 32-byte `repr(C)`
        // `Ray` (origin at float 0, direction at float 3), stores to `[_; 4]` fields.
        unsafe {
            let index = _mm_loadu_si128(control.as_ptr() as *const __m128i);
            let zero = _mm_setzero_ps();
            let origin = _mm_permutevar_ps(_mm_loadu_ps(at), index);
            let dir = _mm_permutevar_ps(_mm_loadu_ps(at.add(3)), index);
            _mm_storeu_si128(out.rotation.as_mut_ptr() as *mut __m128i, index);
            _mm_storeu_ps(
                out.origin.as_mut_ptr(),
                _mm_blend_ps::<0b1000>(origin, zero),
            );
            _mm_storeu_ps(out.dir.as_mut_ptr(), _mm_blend_ps::<0b1000>(dir, zero));
        }
    }
}

/// The dominant-axis rotation: x dominant -> (y,z,x), y dominant -> (z,x,y), else identity,
/// ties resolved x first, then y. Returns the index permutation.
#[inline(always)]
pub fn dominant_rotation(dir: [f32; 3]) -> [usize; 3] {
    let mag = dir.map(f32::abs);
    // max_mag = max(|x|, max(|y|, |z|)) (NaN-ignoring; direction is never NaN here)
    let max_mag = mag[0].max(mag[1].max(mag[2]));
    // Dominant axis 0, 1 or 2 without branches (the ray's axis is unpredictable per lane).
    let not_x = (mag[0] != max_mag) as usize;
    let not_y = (mag[1] != max_mag) as usize;
    let axis = not_x * (1 + not_y);
    ROTATIONS[axis]
}

/// [`dominant_rotation`] of a ray whose dominant axis is `axis` (0, 1 or 2).
pub const ROTATIONS: [[usize; 3]; 3] = [[1, 2, 0], [2, 0, 1], [0, 1, 2]];

impl TriangleBatch {
    /// Gathered lanes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether [`LANES`] lanes are gathered: what [`Self::run`] tests at once.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.len == LANES
    }

    /// Whether [`BATCH_LANES`] lanes are gathered: what [`Self::run_avx`] tests at once.
    #[inline(always)]
    pub fn is_full_avx(&self) -> bool {
        self.len == BATCH_LANES
    }

    /// Empties the batch.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Gathers triangle `k` of the 64-byte node at `bytes` for `ray` as the next lane.
    /// Panics when the batch is full.
    #[inline(always)]
    pub fn push(&mut self, bytes: &[u8], k: usize, ray: &LaneRay) {
        let node: &[u8; 64] = bytes[..64].try_into().expect("a triangle node is 64 bytes");
        self.push_prepared(node, k, &TriangleRay::new(ray));
    }

    /// [`Self::push`] for a ray prepared once ([`TriangleRay`]).
    #[inline(always)]
    pub fn push_prepared(&mut self, node: &[u8; 64], k: usize, ray: &TriangleRay) {
        let j = self.len;
        // Word index of vertex v's component a: 3v + a <= 14.
        let word = |w: usize| triangle_node_word(node, w);
        for (row, &v) in self.rows[j].iter_mut().zip(&TRIANGLE_VERTICES[k & 3]) {
            for (x, &a) in row.iter_mut().zip(&ray.rotation[..3]) {
                *x = word(3 * v + a as usize);
            }
        }
        self.finish_push(node, k, ray);
    }

    /// [`Self::push_prepared`] with AVX: each vertex is one 16-byte load (its three words and
    /// the next) and one permute by the ray's rotation (`vpermilps`). The same rows.
    ///
    /// # Safety
    /// Only from code compiled with AVX enabled (it is inlined there, with no
    /// `target_feature` of its own, so that the permute compiles as AVX in that code).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn push_prepared_avx(&mut self, node: &[u8; 64], k: usize, ray: &TriangleRay) {
        use core::arch::x86_64::*;
        let j = self.len;
        assert!(j < BATCH_LANES, "the batch is full");
        let words = node.as_ptr() as *const f32;
        // SAFETY: AVX is enabled where this is inlined (the caller's promise); vertex v <= 4
        // (asserted at compile time below) spans words 3v..3v + 3 <= 15, inside the 64-byte
        // node; `j < BATCH_LANES`.
        unsafe {
            let control = _mm_loadu_si128(ray.rotation.as_ptr() as *const __m128i);
            let row = self.rows.as_mut_ptr().add(j) as *mut f32;
            for (i, &v) in TRIANGLE_VERTICES[k & 3].iter().enumerate() {
                let vertex = _mm_loadu_ps(words.add(3 * v));
                _mm_storeu_ps(row.add(4 * i), _mm_permutevar_ps(vertex, control));
            }
        }
        self.finish_push(node, k, ray);
    }

    /// What both pushes share: the ray's rows, the node's word@60 and k, the count.
    #[inline(always)]
    fn finish_push(&mut self, node: &[u8; 64], k: usize, ray: &TriangleRay) {
        let j = self.len;
        self.rows[j][3] = ray.origin;
        self.rows[j][4] = ray.dir;
        self.word[j] = triangle_node_id_word(node);
        self.k[j] = k as u32;
        self.len = j + 1;
    }

    /// Row `r` of the gathered lanes as three columns (x, y, z): element j of each is lane j's.
    #[inline(always)]
    fn columns(&self, r: usize) -> [f32x4; 3] {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::*;
            // SAFETY: SSE is part of x86-64; unaligned 16-byte loads of the four rows.
            unsafe {
                // (No array `map` here: in the wave loop it was left out of line.)
                let a = _mm_loadu_ps(self.rows[0][r].as_ptr());
                let b = _mm_loadu_ps(self.rows[1][r].as_ptr());
                let c = _mm_loadu_ps(self.rows[2][r].as_ptr());
                let d = _mm_loadu_ps(self.rows[3][r].as_ptr());
                let ab_lo = _mm_unpacklo_ps(a, b);
                let cd_lo = _mm_unpacklo_ps(c, d);
                let ab_hi = _mm_unpackhi_ps(a, b);
                let cd_hi = _mm_unpackhi_ps(c, d);
                let column = |v: __m128| core::mem::transmute::<__m128, f32x4>(v);
                [
                    column(_mm_movelh_ps(ab_lo, cd_lo)),
                    column(_mm_movehl_ps(cd_lo, ab_lo)),
                    column(_mm_movelh_ps(ab_hi, cd_hi)),
                ]
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            [0, 1, 2].map(|c| f32x4::new(std::array::from_fn(|j| self.rows[j][r][c])))
        }
    }

    /// Runs the gathered queries at once (`semantics.md` 7.2-7.6): element j of the result
    /// is gathered lane j's four dwords (elements past [`Self::len`] are unspecified).
    /// At most [`LANES`] gathered.
    #[inline(always)]
    pub fn run(&self, mode: TriangleReturnMode) -> [[u32; 4]; LANES] {
        debug_assert!(self.len <= LANES);
        // Rows past `len` hold stale values: computed and ignored.
        let columns = [0, 1, 2, 3, 4].map(|r| self.columns(r));
        triangle_dwords((self.len, &self.word, &self.k), mode, columns)
    }

    /// Row `r` of up to eight gathered lanes as three AVX columns (x, y, z).
    ///
    /// # Safety
    /// AVX, as [`Self::run_avx`].
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn columns_avx(&self, r: usize) -> [Avx8; 3] {
        let b = &self.rows;
        // SAFETY: AVX (the caller's promise); every row is 16-byte aligned (`rows` is the
        // first field of the 16-byte aligned batch, rows are 16 bytes).
        let [x, y, z, _] = unsafe {
            transpose_eight_rows::<true>([
                &b[0][r], &b[1][r], &b[2][r], &b[3][r], &b[4][r], &b[5][r], &b[6][r], &b[7][r],
            ])
        };
        [Avx8(x), Avx8(y), Avx8(z)]
    }

    /// [`Self::run`] for up to [`BATCH_LANES`] gathered lanes, eight per AVX vector: the
    /// same f32 operations in the same order, so each lane's dwords are the same.
    ///
    /// Why: the AVX2 wave loop gathers the triangle lanes of a step and tests them when the
    /// batch is full and at the step's end. With four per test, the step's last test ran
    /// on 1.7 lanes on average (bunny's primary rays); with eight, the shared scenes' ray
    /// sets need 34-42 % fewer tests, at about the same host instructions each.
    ///
    /// # Safety
    /// The CPU must support AVX, and the caller be compiled with it (this is inlined there,
    /// without a `target_feature` of its own, so that the intrinsics compile as AVX).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn run_avx(&self, mode: TriangleReturnMode) -> [[u32; 4]; BATCH_LANES] {
        // SAFETY: AVX (the caller's promise).
        let columns = unsafe {
            [
                self.columns_avx(0),
                self.columns_avx(1),
                self.columns_avx(2),
                self.columns_avx(3),
                self.columns_avx(4),
            ]
        };
        triangle_dwords((self.len, &self.word, &self.k), mode, columns)
    }
}

/// The vector operations of the triangle test, for `N` lanes: `wide::f32x4` (every build)
/// and [`Avx8`] (the AVX2 wave loop). Masks are vectors of all-ones or all-zeros lanes.
trait TriangleVector<const N: usize>:
    Copy
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::Mul<Output = Self>
    + core::ops::BitAnd<Output = Self>
    + core::ops::BitOr<Output = Self>
    + core::ops::BitXor<Output = Self>
{
    fn splat(x: f32) -> Self;
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
    #[inline(always)]
    fn splat(x: f32) -> Self {
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

/// Eight f32 lanes in an AVX register. Only made in code that has AVX (its constructors
/// are `unsafe` with that contract), so its safe operations may use AVX intrinsics; they
/// are `inline(always)`, so in the AVX2 wave loop they compile as AVX instructions.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx8(core::arch::x86_64::__m256);

#[cfg(target_arch = "x86_64")]
macro_rules! avx8_binary {
    ($($trait:ident $method:ident $intrinsic:ident),*) => {$(
        impl core::ops::$trait for Avx8 {
            type Output = Avx8;
            #[inline(always)]
            fn $method(self, rhs: Avx8) -> Avx8 {
                // SAFETY: an `Avx8` exists only where the CPU has AVX (see the type).
                Avx8(unsafe { core::arch::x86_64::$intrinsic(self.0, rhs.0) })
            }
        }
    )*};
}

#[cfg(target_arch = "x86_64")]
avx8_binary!(
    Add add _mm256_add_ps,
    Sub sub _mm256_sub_ps,
    Mul mul _mm256_mul_ps,
    BitAnd bitand _mm256_and_ps,
    BitOr bitor _mm256_or_ps,
    BitXor bitxor _mm256_xor_ps
);

// SAFETY (every method): an `Avx8` exists only where the CPU has AVX (see the type); the
// stores write eight f32 to an `[f32; 8]`.
#[cfg(target_arch = "x86_64")]
impl TriangleVector<BATCH_LANES> for Avx8 {
    #[inline(always)]
    fn splat(x: f32) -> Self {
        Avx8(unsafe { core::arch::x86_64::_mm256_set1_ps(x) })
    }
    #[inline(always)]
    fn lt(self, rhs: Self) -> Self {
        use core::arch::x86_64::*;
        Avx8(unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(self.0, rhs.0) })
    }
    #[inline(always)]
    fn gt(self, rhs: Self) -> Self {
        use core::arch::x86_64::*;
        Avx8(unsafe { _mm256_cmp_ps::<_CMP_GT_OQ>(self.0, rhs.0) })
    }
    #[inline(always)]
    fn eq(self, rhs: Self) -> Self {
        use core::arch::x86_64::*;
        Avx8(unsafe { _mm256_cmp_ps::<_CMP_EQ_OQ>(self.0, rhs.0) })
    }
    #[inline(always)]
    fn nan(self) -> Self {
        use core::arch::x86_64::*;
        Avx8(unsafe { _mm256_cmp_ps::<_CMP_UNORD_Q>(self.0, self.0) })
    }
    #[inline(always)]
    fn select(self, t: Self, f: Self) -> Self {
        Avx8(unsafe { core::arch::x86_64::_mm256_blendv_ps(f.0, t.0, self.0) })
    }
    #[inline(always)]
    fn bitmask(self) -> u32 {
        (unsafe { core::arch::x86_64::_mm256_movemask_ps(self.0) }) as u32
    }
    #[inline(always)]
    fn to_array(self) -> [f32; BATCH_LANES] {
        let mut out = [0.0; BATCH_LANES];
        unsafe { core::arch::x86_64::_mm256_storeu_ps(out.as_mut_ptr(), self.0) };
        out
    }
}

/// The triangle test (`semantics.md` 7.2-7.6) of `len` lanes (at most `N`) given as
/// columns (`columns[r]`: row r's x, y, z of a [`TriangleBatch`]; element j is lane j's),
/// lane j's triangle index and node word@60 being `k[j]` and `word[j]`: element j of the
/// result is lane j's four dwords (past `len`: misses).
#[inline(always)]
fn triangle_dwords<V: TriangleVector<N>, const N: usize>(
    (len, word, k): (usize, &[u32; BATCH_LANES], &[u32; BATCH_LANES]),
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
    let zero = V::splat(0.0);
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
    fn tie<V: TriangleVector<N>, const N: usize>(e: V, ay: V, by: V, cy: V, winding: V) -> V {
        let zero = V::splat(0.0);
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
    missed = missed | tie(u, ay_s, by_s, cy_s, winding);
    missed = missed | tie(v, by_s, cy_s, ay_s, winding);
    missed = missed | tie(w, cy_s, ay_s, by_s, winding);

    let missed = missed.bitmask();
    // A hit at t_num = ±0 (origin on the triangle) returns t_denom = 1.0: what the vendor
    // model behind the shared test vectors does (every vector flagged `t_zero`), matching
    // the scalar reference. t = 0 is unaffected; only the sign of t_denom is lost.
    let t_den = t_num.eq(zero).select(V::splat(1.0), t_den);
    let t_num = t_num.to_array();
    let t_den = t_den.to_array();
    let uvw = [u.to_array(), v.to_array(), w.to_array()];
    let dz = dz.to_array();
    let mut out = [crate::hw::TRIANGLE_MISS; N];
    for (j, o) in out.iter_mut().enumerate().take(len) {
        if missed & (1 << j) != 0 {
            continue;
        }
        let (word, k) = (word[j], k[j]);
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

/// Pre-decoded box nodes of one BVH image, and copies of its triangle nodes, stored at their
/// own 64-byte block index (one 128-byte, cache-line aligned `CacheEntry` per block, empty
/// for blocks holding neither) so that a pointer finds its node with one load and can be
/// prefetched without a dependent load. Each entry is tagged with what it holds; a pointer
/// of the other box type at the same address, or a triangle pointer into a box's block,
/// falls back to the image bytes.
#[derive(Clone, Debug, Default)]
pub struct NodeCache {
    entries: Vec<CacheEntry>,
    decoded: usize,
    /// What it was built for (memory length and address, descriptor): an intersector uses
    /// the cache's bounds-checked entries directly only for the same memory and descriptor.
    built_for: Option<(usize, u64, BvhDescriptor)>,
}

/// One cache entry, two cache lines: a decoded box node, a copy of a triangle node with its
/// primitive ids, or empty. The tag at byte 112 (`DecodedBox::ty`, `TriangleCopy::tag`) says
/// which: 4 or 5 for a box of that type, [`TRIANGLE_COPY`], or [`EMPTY`].
///
/// Why triangles too: a lane's next node is then prefetched at the same address whatever its
/// type, without a branch on the type (which the CPU mispredicted often: box or triangle is
/// data), and both lines of the entry are what the lane's step will read.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) union CacheEntry {
    node: DecodedBox,
    triangle: TriangleCopy,
}

/// A triangle node's 64 bytes, copied verbatim, and the primitive ids of its triangles.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct TriangleCopy {
    bytes: [u8; 64],
    /// Primitive id of triangle k (`u32::MAX`: none, or not set).
    prim: [u32; 4],
    /// The pointer block (`pointer >> 3`) of the node.
    pointer_block: u32,
    _unused: [u32; 7],
    /// [`TRIANGLE_COPY`].
    tag: u32,
    _unused_after: [u32; 3],
}

/// The tag of a [`TriangleCopy`] entry (not a node type).
const TRIANGLE_COPY: u32 = 8;
/// The tag of an empty entry (not a node type either). Every tag but 4 and 5 lies outside
/// 0..=7, so that a tag equal to a pointer's type bits (`ptr & 7`) says "a box of that type"
/// in one compare.
const EMPTY: u32 = 16;

const _: () = assert!(std::mem::size_of::<CacheEntry>() == 128);
const _: () = assert!(std::mem::size_of::<TriangleCopy>() == 128);
const _: () =
    assert!(std::mem::offset_of!(TriangleCopy, tag) == std::mem::offset_of!(DecodedBox, ty));

const EMPTY_ENTRY: CacheEntry = CacheEntry {
    node: DecodedBox {
        lo: [f32x4::ZERO; 3],
        hi: [f32x4::ZERO; 3],
        children: [NodePointer::INVALID; 4],
        ty: EMPTY,
        ordered: 0,
        useful: 0,
    },
};

impl CacheEntry {
    /// The tag: 4 or 5 (a decoded box of that type), [`TRIANGLE_COPY`], or [`EMPTY`].
    #[inline(always)]
    fn tag(&self) -> u32 {
        // SAFETY: both variants are plain data (every bit pattern is a valid value) with a
        // u32 at byte 112 (asserted above), and every entry is initialised as a whole.
        unsafe { self.node.ty }
    }

    /// The decoded box, when the entry holds one (tag 4 or 5).
    #[inline(always)]
    pub(crate) fn decoded_box(&self) -> Option<&DecodedBox> {
        // SAFETY: as in `tag`; the tag says the entry was written as a box.
        if self.tag() & !1 == 4 {
            Some(unsafe { &self.node })
        } else {
            None
        }
    }

    /// The decoded box if the entry holds one of type `ty` (`0..=7`: a pointer's type bits).
    #[inline(always)]
    pub(crate) fn decoded_box_of_type(&self, ty: u32) -> Option<&DecodedBox> {
        debug_assert!(ty <= 7);
        // SAFETY: as in `tag`; the tag says the entry was written as a box (the only tags in
        // 0..=7 are the box types 4 and 5).
        if self.tag() == ty {
            Some(unsafe { &self.node })
        } else {
            None
        }
    }

    /// The triangle copy, when the entry holds one.
    #[inline(always)]
    pub(crate) fn triangle_copy(&self) -> Option<&TriangleCopy> {
        // SAFETY: as in `tag`; the tag says the entry was written as a triangle copy.
        if self.tag() == TRIANGLE_COPY {
            Some(unsafe { &self.triangle })
        } else {
            None
        }
    }
}

impl TriangleCopy {
    /// The node's 64 bytes.
    #[inline(always)]
    pub(crate) fn bytes(&self) -> &[u8; 64] {
        &self.bytes
    }

    /// The primitive id of triangle `k` (`u32::MAX` when none or not set).
    #[inline(always)]
    pub(crate) fn primitive_id(&self, k: usize) -> u32 {
        self.prim[k & 3]
    }
}

impl std::fmt::Debug for CacheEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.decoded_box(), self.triangle_copy()) {
            (Some(b), _) => b.fmt(f),
            (_, Some(t)) => f
                .debug_struct("TriangleCopy")
                .field("pointer_block", &t.pointer_block)
                .field("prim", &t.prim)
                .finish(),
            _ => f.write_str("Empty"),
        }
    }
}

impl NodeCache {
    /// Decodes every box node reachable from `root` in `memory`, and copies every triangle
    /// node reachable from it into its block's entry unless that block holds a box (their
    /// primitive ids unset: see [`Self::set_primitive_ids`]). Pointers that leave the memory
    /// or fail the bounds check are skipped (the instruction handles them).
    pub fn build(memory: &BvhMemory, descriptor: &BvhDescriptor, root: NodePointer) -> NodeCache {
        let blocks = memory.bytes.len() / 64;
        let mut cache = NodeCache {
            entries: vec![EMPTY_ENTRY; blocks],
            decoded: 0,
            built_for: Some((memory.bytes.len(), memory.va, *descriptor)),
        };
        let mut todo = vec![root];
        while let Some(ptr) = todo.pop() {
            if ptr.is_invalid() {
                continue;
            }
            let ty = ptr.node_type();
            if ty.triangle_index().is_some() {
                cache.copy_triangle(memory, descriptor, ptr);
                continue;
            }
            if !ty.is_box() || out_of_bounds(descriptor, ptr) {
                continue;
            }
            let Some(offset) = memory.offset(descriptor, ptr, ty.fetch_bytes()) else {
                continue;
            };
            if offset % 64 != 0 {
                continue;
            }
            let entry = &mut cache.entries[offset / 64];
            if entry.tag() != EMPTY {
                continue;
            }
            let node_bytes = &memory.bytes[offset..offset + ty.fetch_bytes()];
            let node = if ty == NodeType::BoxF32 {
                DecodedBox::from_box32(node_bytes)
            } else {
                DecodedBox::from_box16(node_bytes)
            };
            *entry = CacheEntry { node };
            cache.decoded += 1;
            todo.extend(node.children);
        }
        cache
    }

    /// Copies the triangle node `ptr` names into its empty entry (a block that holds a box
    /// keeps it: such a triangle is read from memory).
    fn copy_triangle(&mut self, memory: &BvhMemory, descriptor: &BvhDescriptor, ptr: NodePointer) {
        if out_of_bounds(descriptor, ptr) {
            return;
        }
        let Some(offset) = memory.offset(descriptor, ptr, 64) else {
            return;
        };
        if offset % 64 != 0 || self.entries[offset / 64].tag() != EMPTY {
            return;
        }
        let mut triangle = TriangleCopy {
            bytes: [0; 64],
            prim: [u32::MAX; 4],
            pointer_block: ptr.to_u32() >> 3,
            _unused: [0; 7],
            tag: TRIANGLE_COPY,
            _unused_after: [0; 3],
        };
        triangle
            .bytes
            .copy_from_slice(&memory.bytes[offset..offset + 64]);
        self.entries[offset / 64] = CacheEntry { triangle };
    }

    /// Sets the primitive ids of the copied triangle nodes: triangle `k` of the node at
    /// pointer block `b` gets `ids(b, k)`.
    pub fn set_primitive_ids(&mut self, ids: impl Fn(u32, u32) -> u32) {
        for e in &mut self.entries {
            if e.tag() == TRIANGLE_COPY {
                // SAFETY: the tag says the entry was written as a triangle copy.
                let t = unsafe { &mut e.triangle };
                t.prim = std::array::from_fn(|k| ids(t.pointer_block, k as u32));
            }
        }
    }

    /// The decoded box for a box node of type `ty` at byte `offset` in memory, if cached.
    #[inline]
    pub fn get(&self, ty: NodeType, offset: usize) -> Option<&DecodedBox> {
        self.entries
            .get(offset / 64)?
            .decoded_box_of_type(ty as u32)
    }

    /// The entries from 64-byte block `first` of memory on (empty past the end).
    pub(crate) fn entries_from(&self, first: usize) -> &[CacheEntry] {
        self.entries.get(first..).unwrap_or(&[])
    }

    /// Whether the cache was built for this memory and descriptor.
    pub fn built_for(&self, memory: &BvhMemory, descriptor: &BvhDescriptor) -> bool {
        self.built_for == Some((memory.bytes.len(), memory.va, *descriptor))
    }

    /// Hints the CPU to load the entry for byte `offset` (no effect on results).
    #[inline]
    pub fn prefetch(&self, offset: usize) {
        if let Some(e) = self.entries.get(offset / 64) {
            prefetch_lines(e as *const CacheEntry as *const u8, 2);
        }
    }

    /// Number of decoded box nodes.
    pub fn len(&self) -> usize {
        self.decoded
    }

    pub fn is_empty(&self) -> bool {
        self.decoded == 0
    }
}

/// Prefetches `lines` 64-byte cache lines from `p` (a hint; no-op off x86-64).
#[inline(always)]
pub fn prefetch_lines(p: *const u8, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for l in 0..lines {
        // SAFETY: prefetching is a hint and never faults, whatever the address.
        unsafe {
            core::arch::x86_64::_mm_prefetch(
                p.wrapping_add(64 * l) as *const i8,
                core::arch::x86_64::_MM_HINT_T0,
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, lines);
}

/// Prefetches the two 64-byte lines at byte `offset` from `base` (a hint; no-op off x86-64).
///
/// Written as two `prefetcht0` with the base and offset registers and a displacement: LLVM
/// computes the second line's address with two extra additions (this is run once a lane
/// step).
#[inline(always)]
pub fn prefetch_two_lines(base: *const u8, offset: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint and never faults, whatever the address; the instructions
    // write no register, memory or flag.
    unsafe {
        core::arch::asm!(
            "prefetcht0 [{b} + {o}]",
            "prefetcht0 [{b} + {o} + 64]",
            b = in(reg) base,
            o = in(reg) offset,
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (base, offset);
}

/// The descriptor's bounds check (`semantics.md` 3.3): out of range iff node_addr > size, or
/// for a box32 node node_addr + 1 > size.
#[inline]
pub fn out_of_bounds(descriptor: &BvhDescriptor, ptr: NodePointer) -> bool {
    let addr = ptr.address_64() as u64;
    let size = descriptor.size_minus_one;
    addr > size || (ptr.node_type() == NodeType::BoxF32 && addr.saturating_add(1) > size)
}

/// The memory the instruction fetches from: `bytes` mapped at virtual address `va`.
#[derive(Clone, Copy, Debug)]
pub struct BvhMemory<'a> {
    pub bytes: &'a [u8],
    pub va: u64,
}

impl BvhMemory<'_> {
    /// Byte offset in `bytes` of the node `ptr` points to, if `len` bytes are mapped there
    /// and the offset is 64-byte aligned.
    #[inline]
    pub fn offset(
        &self,
        descriptor: &BvhDescriptor,
        ptr: NodePointer,
        len: usize,
    ) -> Option<usize> {
        let address = ptr.fetch_address(descriptor.base_address_256);
        let offset = usize::try_from(address.checked_sub(self.va)?).ok()?;
        if offset.checked_add(len)? <= self.bytes.len() {
            Some(offset)
        } else {
            None
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::hw::TRIANGLE_MISS;

    const INVALID: u32 = NodePointer::INVALID.to_u32();

    /// Seeded xorshift64 generator for the tests below.
    pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// A ray of extent 10 with direction, then origin, drawn from `unit`, and the inverse
    /// direction a driver computes.
    fn random_ray(unit: &mut impl FnMut() -> f32) -> LaneRay {
        let dir = [unit(), unit(), unit()];
        LaneRay {
            extent: 10.0,
            origin: [unit(), unit(), unit()],
            dir,
            inv_dir: dir.map(|d| 1.0 / d),
        }
    }

    /// The mask `box_query` returns names exactly the entries it wrote that are children,
    /// sorted or not, on seeded random boxes (some inverted, some slots empty) and rays.
    #[test]
    fn box_query_mask_names_the_valid_entries() {
        let mut next = xorshift(0x5EED_u64);
        let mut unit = move || (next() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0;
        let mut seen = [0u32; 5];
        for case in 0..20_000u32 {
            let mut bytes = [0u8; 128];
            for c in 0..4 {
                let ptr = if (case >> c) & 1 == 1 {
                    INVALID
                } else {
                    0x100 + c as u32
                };
                bytes[4 * c..4 * c + 4].copy_from_slice(&ptr.to_le_bytes());
                for a in 0..3 {
                    let (p, q) = (unit(), unit());
                    // Ordered bounds, inverted in one case of eight.
                    let (lo, hi) = if case % 8 == 7 {
                        (p.max(q), p.min(q))
                    } else {
                        (p.min(q), p.max(q))
                    };
                    let o = 16 + 24 * c + 4 * a;
                    bytes[o..o + 4].copy_from_slice(&lo.to_le_bytes());
                    bytes[o + 12..o + 16].copy_from_slice(&hi.to_le_bytes());
                }
            }
            let node = DecodedBox::from_box32(&bytes);
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

    /// The two-lane AVX2 box test against [`box_query`] per lane, on random nodes and rays
    /// with ordered, inverted and NaN bounds, invalid slots, zero direction components
    /// (infinite inverse) and zero origins: whenever it answers, both lanes' dwords and
    /// masks are `box_query`'s; it answers for the common case and declines the rest.
    #[cfg(target_arch = "x86_64")]
    /// `n` random lanes for the multi-lane box tests: FP32 nodes on a coarse grid (ties, equal
    /// planes), some inverted or NaN bounds and invalid slots; rays with zero direction
    /// components (NaN products), signed zeros and two extents.
    #[cfg(target_arch = "x86_64")]
    fn random_box_lanes(next: &mut impl FnMut() -> u64, n: usize) -> Vec<(DecodedBox, LaneRay)> {
        let value = |r: u64| -> f32 {
            match r % 128 {
                0 => 0.0,
                1 => -0.0,
                2 => f32::NAN,
                3 => 1.0,
                _ => ((r >> 8) % 4096) as f32 / 1024.0 - 2.0,
            }
        };
        (0..n)
            .map(|_| {
                let mut bytes = [0u8; 128];
                for c in 0..4 {
                    let ptr = if next().is_multiple_of(5) {
                        INVALID
                    } else {
                        0x100 + c as u32
                    };
                    bytes[4 * c..4 * c + 4].copy_from_slice(&ptr.to_le_bytes());
                    for a in 0..3 {
                        let (p, q) = (value(next()), value(next()));
                        let (lo, hi) = if next().is_multiple_of(64) {
                            (p.max(q), p.min(q))
                        } else {
                            (p.min(q), p.max(q))
                        };
                        let o = 16 + 24 * c + 4 * a;
                        bytes[o..o + 4].copy_from_slice(&lo.to_le_bytes());
                        bytes[o + 12..o + 16].copy_from_slice(&hi.to_le_bytes());
                    }
                }
                let dir = [0; 3].map(|_| {
                    if next().is_multiple_of(8) {
                        0.0
                    } else {
                        value(next() | 4)
                    }
                });
                let ray = LaneRay {
                    extent: if next().is_multiple_of(4) { 0.5 } else { 100.0 },
                    origin: [0; 3].map(|_| value(next() & !3)),
                    dir,
                    inv_dir: dir.map(|d| 1.0 / d),
                };
                (DecodedBox::from_box32(&bytes), ray)
            })
            .collect()
    }

    /// Checks each lane's `(dwords, mask)` against the one-lane [`box_query`].
    #[cfg(target_arch = "x86_64")]
    fn assert_lanes_match(
        lanes: &[(DecodedBox, LaneRay)],
        got: &[([NodePointer; 4], u32)],
        grow: f32,
        sort: bool,
        case: u32,
    ) {
        for (lane, ((node, ray), got)) in lanes.iter().zip(got).enumerate() {
            let mut expect = [NodePointer::INVALID; 4];
            let expect_mask = box_query(node, ray, grow, sort, &mut expect);
            assert_eq!(
                *got,
                (expect, expect_mask),
                "case {case} lane {lane} sort {sort}"
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn box_query_pair_matches_box_query() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15_u64);
        let (mut answered, mut total, mut unprobed) = (0, 0, 0);
        for case in 0..40_000u32 {
            let lanes = random_box_lanes(&mut next, 2);
            let both_ordered = lanes[0].0.ordered & lanes[1].0.ordered == 1;
            let finite = slopes_ok(&lanes[0].1) && slopes_ok(&lanes[1].1);
            // The NaN probe is skipped only where the caller may skip it.
            for finite_slopes in [false, true].into_iter().filter(|&f| !f || finite) {
                for sort in [false, true] {
                    let grow = if case % 2 == 0 { 1.0 } else { grow_factor(3) };
                    let (mut a, mut b) = ([NodePointer::INVALID; 4], [NodePointer::INVALID; 4]);
                    // SAFETY: AVX2 checked above.
                    let pair = unsafe {
                        box_query_pair(
                            [&lanes[0].0, &lanes[1].0],
                            [&lanes[0].1, &lanes[1].1],
                            grow,
                            sort,
                            finite_slopes,
                            [&mut a, &mut b],
                        )
                    };
                    total += 1;
                    // Without the probe, ordered nodes are always answered.
                    assert!(
                        pair.is_some() || !(finite_slopes && both_ordered),
                        "case {case}: declined a pair with finite slopes and ordered nodes"
                    );
                    let Some([va, vb]) = pair else { continue };
                    answered += 1;
                    unprobed += finite_slopes as u32;
                    assert_lanes_match(&lanes, &[(a, va), (b, vb)], grow, sort, case);
                }
            }
        }
        // The common case is answered, the rest is declined; both forms ran.
        assert!(
            answered > total / 4 && answered < total && unprobed > total / 8,
            "{answered} of {total} ({unprobed} without the probe)"
        );
    }

    /// Seeded values for triangle tests: mostly small integers (exact zeros on edges and at
    /// vertices), some halves and quarters, the rest uniform in [-4, 4).
    #[cfg(target_arch = "x86_64")]
    fn grid_values(seed: u64) -> impl FnMut() -> f32 {
        let mut next = xorshift(seed);
        move || {
            let r = next();
            match r % 16 {
                0..=5 => (r >> 8) as f32 % 7.0 - 3.0,
                6 => 0.5,
                7 => -0.25,
                _ => (r >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0,
            }
        }
    }

    /// Fills a 64-byte triangle node: its 15 vertex words from `value`, one in `nan_one_in`
    /// NaN and as often a repeat of the word before (shared or degenerate vertices), and a
    /// word@60 whose top four bits come from `case`.
    #[cfg(target_arch = "x86_64")]
    fn fill_triangle_node(
        node: &mut [u8],
        value: &mut impl FnMut() -> f32,
        nan_one_in: u32,
        case: u32,
    ) {
        for w in 0..15 {
            let v = match value().to_bits() % nan_one_in {
                0 => f32::NAN,
                1 if w > 0 => f32::from_le_bytes(node[4 * w - 4..4 * w].try_into().unwrap()),
                _ => value(),
            };
            node[4 * w..4 * w + 4].copy_from_slice(&v.to_le_bytes());
        }
        let word = (value().to_bits() & 0x0fff_ffff) | (case << 28);
        node[60..64].copy_from_slice(&word.to_le_bytes());
    }

    /// Triangle `k`'s three vertices in `node`, in hardware order.
    #[cfg(target_arch = "x86_64")]
    fn triangle_vertices(node: &[u8], k: usize) -> [[f32; 3]; 3] {
        TRIANGLE_VERTICES[k].map(|v| {
            std::array::from_fn(|a| {
                let o = 4 * (3 * v + a);
                f32::from_le_bytes(node[o..o + 4].try_into().expect("a word"))
            })
        })
    }

    /// Where a test ray aims, by `choice`: the triangle's centroid (0, 1), its first vertex
    /// exactly (2), or nowhere in particular (3).
    #[cfg(target_arch = "x86_64")]
    fn aim(ray: &mut LaneRay, [a, b, c]: [[f32; 3]; 3], choice: usize) {
        let target: Option<[f32; 3]> = match choice % 4 {
            0 | 1 => Some(std::array::from_fn(|x| (a[x] + b[x] + c[x]) / 3.0)),
            2 => Some(a),
            _ => None,
        };
        if let Some(target) = target {
            ray.dir = std::array::from_fn(|x| target[x] - ray.origin[x]);
        }
    }

    /// The eight-lane triangle test against the scalar reference instruction, lane by
    /// lane, in both return modes, on batches of 1 to 8 seeded random lanes: vertices on a
    /// small integer grid (exact zeros on edges and at vertices, edge-on and degenerate
    /// triangles), random and repeated vertices, NaN vertices, and rays with zero direction
    /// components. Rows past the batch's length hold stale lanes, as in the wave loop.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn run_avx_matches_the_scalar_reference() {
        use crate::hw::image_bvh_intersect_ray;
        use crate::hw::instruction::LaneOutcome;
        if !std::is_x86_feature_detected!("avx") {
            return;
        }
        let mut value = grid_values(0x5EED_0008);
        // Eight triangle nodes, lane j's at 64-byte block j.
        let mut mem = vec![0u8; 8 * 64];
        let (mut lanes, mut hits, mut misses) = (0u64, 0u64, 0u64);
        let mut batch = TriangleBatch::default();
        for case in 0..50_000u32 {
            let len = 1 + case as usize % BATCH_LANES;
            let mode = if case % 3 == 0 {
                TriangleReturnMode::TriangleId
            } else {
                TriangleReturnMode::Barycentrics
            };
            let descriptor = BvhDescriptor {
                triangle_return_mode: mode,
                ..BvhDescriptor::default()
            };
            let mut lane = [(0u32, random_ray(&mut value)); BATCH_LANES];
            batch.clear();
            for (j, (pointer, ray)) in lane.iter_mut().enumerate().take(len) {
                let node = &mut mem[64 * j..64 * j + 64];
                fill_triangle_node(node, &mut value, 23, case);
                // Every triangle index at every lane.
                let k = (case / 8 + j as u32) % 4;
                *pointer = (j as u32) << 3 | k;
                *ray = random_ray(&mut value);
                // Most rays aim at the triangle: at its centroid, or exactly at a vertex.
                aim(ray, triangle_vertices(node, k as usize), case as usize);
                if case % 5 == 0 {
                    ray.dir[case as usize % 3] = 0.0;
                }
                ray.inv_dir = ray.dir.map(|d| 1.0 / d);
                let bytes: &[u8; 64] = node[..64].try_into().expect("64 bytes");
                // SAFETY: AVX checked above.
                unsafe { batch.push_prepared_avx(bytes, k as usize, &TriangleRay::new(ray)) };
            }
            // SAFETY: AVX checked above (called from code not compiled for AVX, the
            // intrinsics are calls: the same results).
            let got = unsafe { batch.run_avx(mode) };
            for (j, (pointer, ray)) in lane.iter().enumerate().take(len) {
                let expect = image_bvh_intersect_ray(&mem[..], &descriptor, *pointer, ray);
                if expect.outcome != LaneOutcome::Tested {
                    continue;
                }
                assert_eq!(got[j], expect.dwords, "case {case} lane {j} ray {ray:?}");
                lanes += 1;
                if expect.dwords == TRIANGLE_MISS {
                    misses += 1;
                } else {
                    hits += 1;
                }
            }
        }
        // Most lanes were tested, with hits and misses in quantity.
        assert!(
            lanes > 150_000 && hits > 20_000 && misses > 20_000,
            "{lanes} {hits} {misses}"
        );
    }

    /// The eight-lane test of one triangle against the scalar reference instruction, lane by
    /// lane, in both return modes, for every triangle index, at every block of a 64-lane
    /// wave: vertices on a small integer grid (exact zeros on edges and at vertices, edge-on
    /// and degenerate triangles), repeated and NaN vertex words; rays mostly aimed at the
    /// triangle (its centroid or a vertex), each lane's dominant axis its own (ties among
    /// them), some direction components zero, and blocks of one ray eight times.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn triangle_query_eight_matches_the_scalar_reference() {
        use crate::hw::image_bvh_intersect_ray;
        use crate::hw::instruction::LaneOutcome;
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut value = grid_values(0x510E_527F_ADE6_82D1_u64);
        let mut columns = RayColumns::default();
        let (mut hits, mut misses, mut axes) = (0u64, 0u64, [0u64; 3]);
        for case in 0..20_000u32 {
            let mode = if case % 3 == 0 {
                TriangleReturnMode::TriangleId
            } else {
                TriangleReturnMode::Barycentrics
            };
            let descriptor = BvhDescriptor {
                triangle_return_mode: mode,
                ..BvhDescriptor::default()
            };
            let mut node = [0u8; 64];
            fill_triangle_node(&mut node, &mut value, 29, case);
            let k = case as usize / 3 % 4;
            let triangle = triangle_vertices(&node, k);
            let first = 8 * (case as usize % 8);
            let mut rays = [random_ray(&mut value); 8];
            for (j, ray) in rays.iter_mut().enumerate() {
                if case % 4 == 3 && j > 0 {
                    // One ray eight times, as a block that shares a stack.
                    continue;
                }
                *ray = random_ray(&mut value);
                aim(ray, triangle, case as usize + j);
                match (case as usize + 3 * j) % 7 {
                    0 => ray.dir[j % 3] = 0.0,
                    // Tied magnitudes: the tie rule picks the axis.
                    1 => ray.dir[(j + 1) % 3] = -ray.dir[j % 3],
                    _ => {}
                }
                ray.inv_dir = ray.dir.map(|d| 1.0 / d);
            }
            if case % 4 == 3 {
                rays = [rays[0]; 8];
            }
            for (j, ray) in rays.iter().enumerate() {
                columns.set(first + j, ray);
            }
            // SAFETY: AVX2 checked above (called from code not compiled for AVX2, the
            // intrinsics are calls: the same results).
            let got = unsafe { triangle_query_eight(&node, k, &columns, first, mode) };
            for (j, ray) in rays.iter().enumerate() {
                if ray.dir.iter().all(|&d| d == 0.0) || ray.dir.iter().any(|d| d.is_nan()) {
                    continue;
                }
                let expect = image_bvh_intersect_ray(&node[..], &descriptor, k as u32, ray);
                assert_eq!(expect.outcome, LaneOutcome::Tested, "case {case} lane {j}");
                assert_eq!(got[j], expect.dwords, "case {case} lane {j} ray {ray:?}");
                axes[TriangleRay::new(ray).rotation[2] as usize] += 1;
                if expect.dwords == TRIANGLE_MISS {
                    misses += 1;
                } else {
                    hits += 1;
                }
            }
        }
        // Hits and misses in quantity, and every dominant axis.
        assert!(
            hits > 20_000 && misses > 50_000 && axes.iter().all(|&n| n > 20_000),
            "{hits} {misses} {axes:?}"
        );
    }

    /// The AVX push gathers what the indexed push gathers: the same vertex components, origin
    /// and direction for every triangle slot and every dominant axis (ties included), so the
    /// batch returns the same dwords in both modes. Nodes hold random words, zeros and
    /// repeated values.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn push_prepared_avx_gathers_what_push_prepared_gathers() {
        if !std::is_x86_feature_detected!("avx") {
            return;
        }
        let mut next = xorshift(0xBB67_AE85_84CA_A73B_u64);
        let mut value = || {
            let r = next();
            match r % 8 {
                0 => 0.0,
                1 => 1.0,
                2 => -1.0,
                _ => {
                    f32::from_bits(0x3000_0000 + (r >> 40) as u32 % 0x1800_0000)
                        * if r & 1 << 20 == 0 { 1.0 } else { -1.0 }
                }
            }
        };
        let mut axes = [0u32; 3];
        for case in 0..5_000u32 {
            let (mut indexed, mut permuted) = (TriangleBatch::default(), TriangleBatch::default());
            let mut nodes = [[0u8; 64]; LANES];
            for (j, node) in nodes.iter_mut().enumerate() {
                for w in 0..16 {
                    node[4 * w..4 * w + 4].copy_from_slice(&value().to_le_bytes());
                }
                let ray = random_ray(&mut value);
                let prepared = TriangleRay::new(&ray);
                axes[prepared.rotation[2] as usize] += 1;
                let k = (case as usize + j) % 4;
                indexed.push_prepared(node, k, &prepared);
                // SAFETY: AVX checked above (called from code not compiled for AVX, the
                // intrinsics are calls: the same results).
                unsafe { permuted.push_prepared_avx(node, k, &prepared) };
            }
            let bits = |b: &TriangleBatch, j: usize, r: usize| b.rows[j][r].map(f32::to_bits);
            for j in 0..LANES {
                for r in 0..5 {
                    // The vertex rows' last element is unused (the AVX push loads the next word).
                    let n = if r < 3 { 3 } else { 4 };
                    assert_eq!(
                        bits(&indexed, j, r)[..n],
                        bits(&permuted, j, r)[..n],
                        "{case}"
                    );
                }
                assert_eq!(
                    (indexed.word[j], indexed.k[j]),
                    (permuted.word[j], permuted.k[j])
                );
            }
            for mode in [
                TriangleReturnMode::TriangleId,
                TriangleReturnMode::Barycentrics,
            ] {
                assert_eq!(indexed.run(mode), permuted.run(mode), "case {case}");
            }
        }
        // Every dominant axis occurred.
        assert!(axes.iter().all(|&n| n > 1000), "{axes:?}");
    }

    /// The eight-lane test against `box_query` (sorting on), on seeded random nodes and rays
    /// (ties, zeros and infinities among the products), where the loop uses it: ordered
    /// nodes, finite slopes. The eight lanes sit at every block of a 64-lane wave. Its
    /// verdict that all eight got the same children is checked against the eight results,
    /// on groups of eight different rays, of one ray eight times, and of one ray seven
    /// times with another.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn box_query_eight_matches_box_query() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut next = xorshift(0x6A09_E667_F3BC_C908_u64);
        let (mut groups, mut counts, mut uniform_groups) = (0u32, [0u32; 5], [0u32; 2]);
        let mut columns = RayColumns::default();
        for case in 0..20_000u32 {
            let lanes = random_box_lanes(&mut next, 24);
            let node = &lanes[0].0;
            let usable: Vec<LaneRay> = lanes[1..].iter().map(|l| l.1).filter(slopes_ok).collect();
            if node.ordered != 1 || usable.len() < 8 {
                continue;
            }
            let first = 8 * (case as usize % 8);
            // Eight rays; one ray eight times; one ray, and another in one lane.
            let odd = (case as usize / 3) % 8;
            let source = |k: usize| match case % 3 {
                0 => k,
                1 => 0,
                _ => (k == odd) as usize,
            };
            for k in 0..8 {
                columns.set(first + k, &usable[source(k)]);
            }
            let grow = if case % 2 == 0 { 1.0 } else { grow_factor(3) };
            let mut out = vec![([NodePointer::INVALID; 4], 0u32); RayColumns::LANES];
            // SAFETY: AVX2 checked above; the node is ordered, the eight lanes have finite
            // slopes, and `columns` holds their registers. (Called from code not compiled
            // for AVX2, its intrinsics are calls: slower, the same results.)
            let uniform = unsafe { box_query_eight(node, &columns, first, grow, &mut out) };
            let mut expected = Vec::new();
            for k in 0..8 {
                let mut expect = [NodePointer::INVALID; 4];
                let mask = box_query(node, &usable[source(k)], grow, true, &mut expect);
                assert_eq!(out[first + k], (expect, mask), "case {case} lane {k}");
                counts[mask.count_ones() as usize] += 1;
                expected.push((expect, mask));
            }
            let same = expected.iter().all(|e| *e == expected[0]);
            assert_eq!(uniform, same, "case {case}");
            uniform_groups[same as usize] += 1;
            assert_only_eight_written(&out, first, case);
            groups += 1;
        }
        // Many groups ran, with every number of children, and both verdicts.
        assert!(
            groups > 2_000 && counts.iter().all(|&c| c > 20),
            "{groups} {counts:?}"
        );
        assert!(
            uniform_groups.iter().all(|&n| n > 500),
            "{uniform_groups:?}"
        );
    }

    /// Every inverse-direction component finite and not zero: the lanes the AVX2 box tests
    /// take without their NaN probe.
    #[cfg(target_arch = "x86_64")]
    fn slopes_ok(r: &LaneRay) -> bool {
        r.inv_dir.iter().all(|x| x.is_finite() && *x != 0.0)
    }

    /// Of the results `out` (all zero before the test), only lanes `first..first + 8` were
    /// written.
    #[cfg(target_arch = "x86_64")]
    fn assert_only_eight_written(out: &[([NodePointer; 4], u32)], first: usize, case: u32) {
        let untouched = out
            .iter()
            .enumerate()
            .filter(|(i, _)| !(first..first + 8).contains(i));
        assert!(
            untouched
                .into_iter()
                .all(|(_, o)| *o == ([NodePointer::INVALID; 4], 0)),
            "case {case}"
        );
    }

    /// Eight lanes at eight nodes (some repeated), each with its own ray or one ray for all,
    /// against [`box_query`] lane by lane; each node's child pointers are its own, so a
    /// result read from another lane's node or another child's slot shows.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn box_query_eight_nodes_matches_box_query() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut next = xorshift(0x3C6E_F372_FE94_F82B_u64);
        let (mut groups, mut counts) = (0u32, [0u32; 5]);
        let mut columns = RayColumns::default();
        for case in 0..20_000u32 {
            let lanes = random_box_lanes(&mut next, 32);
            let mut nodes: Vec<DecodedBox> = lanes
                .iter()
                .map(|l| l.0)
                .filter(|n| n.ordered == 1)
                .take(8)
                .collect();
            let usable: Vec<LaneRay> = lanes.iter().map(|l| l.1).filter(slopes_ok).collect();
            if nodes.len() < 8 || usable.len() < 8 {
                continue;
            }
            for (k, node) in nodes.iter_mut().enumerate() {
                for c in node.children.iter_mut().filter(|c| !c.is_invalid()) {
                    *c = NodePointer::from_u32(c.to_u32() + 0x1000 * (k as u32 + 1));
                }
            }
            // Every third case, lanes 5-7 ask for lane 1's node.
            if case % 3 == 2 {
                for k in 5..8 {
                    nodes[k] = nodes[1];
                }
            }
            let first = 8 * (case as usize % 8);
            // Eight rays, or one ray eight times.
            let source = |k: usize| if case % 4 == 1 { 0 } else { k };
            for k in 0..8 {
                columns.set(first + k, &usable[source(k)]);
            }
            let grow = if case % 2 == 0 { 1.0 } else { grow_factor(3) };
            let mut out = vec![([NodePointer::INVALID; 4], 0u32); RayColumns::LANES];
            let refs: [&DecodedBox; 8] = std::array::from_fn(|k| &nodes[k]);
            // SAFETY: AVX2 checked above; the nodes are ordered, the eight lanes have finite
            // slopes, and `columns` holds their registers.
            unsafe { box_query_eight_nodes(&refs, &columns, first, grow, &mut out) };
            for k in 0..8 {
                let mut expect = [NodePointer::INVALID; 4];
                let mask = box_query(&nodes[k], &usable[source(k)], grow, true, &mut expect);
                assert_eq!(out[first + k], (expect, mask), "case {case} lane {k}");
                counts[mask.count_ones() as usize] += 1;
            }
            assert_only_eight_written(&out, first, case);
            groups += 1;
        }
        assert!(
            groups > 2_000 && counts.iter().all(|&c| c > 20),
            "{groups} {counts:?}"
        );
    }

    /// The branch-free rotation against the reference's dominant axis
    /// (`hw::triangle::dominant_axis`, written independently) on every sign and tie pattern
    /// of magnitudes drawn from {0, 1, 2}, zeros of both signs and infinities included.
    #[test]
    fn dominant_rotation_matches_the_reference_axis() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let mut cases = 0;
        for &x in &values {
            for &y in &values {
                for &z in &values {
                    let dir = [x, y, z];
                    let axis = crate::hw::triangle::dominant_axis(dir);
                    // The rotation puts the dominant axis last ("z").
                    assert_eq!(dominant_rotation(dir)[2], axis, "{dir:?}");
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 512);
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

    /// An FP16 node laid out as the encoder writes a partly filled one (empty slots: NaN
    /// bounds, INVALID pointer) decodes to an `ordered` entry, so its queries take the fast
    /// test, and on seeded random rays `box_query` answers what the scalar reference answers
    /// on the node's own bytes, sorted and not.
    #[test]
    fn empty_slots_keep_a_node_on_the_fast_path() {
        use crate::hw::box_test::{child_boxes_f16, intersect_box_node, BoxRay};
        use crate::hw::node::BoxNodeF16;
        let nan = half::f16::NAN.to_bits();
        let h = |x: f32| half::f16::from_f32(x).to_bits();
        let mut next = xorshift(0xE4_u64);
        let mut unit = move || (next() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0;
        let mut hits = 0;
        for case in 0..4000u32 {
            // One to three real children, in any slots.
            let empty = 1 + case % 14;
            let mut node = BoxNodeF16 {
                children: [NodePointer::INVALID; 4],
                boxes: [[nan; 6]; 4],
            };
            for c in 0..4 {
                if (empty >> c) & 1 == 1 {
                    node.children[c] = NodePointer::INVALID;
                    continue;
                }
                node.children[c] = NodePointer::from_u32(0x200 + 8 * c as u32 + 5);
                for a in 0..3 {
                    let (p, q) = (unit(), unit());
                    node.boxes[c][a] = h(p.min(q));
                    node.boxes[c][3 + a] = h(p.max(q));
                }
            }
            let bytes = bytemuck::bytes_of(&node);
            let decoded = DecodedBox::from_box16(bytes);
            assert_eq!(decoded.ordered, 1, "case {case}");
            assert_eq!(decoded.children, node.children);
            let ray = random_ray(&mut unit);
            let reference_ray = BoxRay {
                origin: ray.origin,
                inv_dir: ray.inv_dir,
                extent: ray.extent,
            };
            for sort in [false, true] {
                let expect = intersect_box_node(
                    node.children,
                    &child_boxes_f16(&node),
                    &reference_ray,
                    0,
                    sort,
                );
                let mut out = [NodePointer::INVALID; 4];
                box_query(&decoded, &ray, 1.0, sort, &mut out);
                assert_eq!(out, expect, "case {case} sort {sort}");
                hits += expect.iter().filter(|p| !p.is_invalid()).count();
            }
        }
        assert!(hits > 1000, "{hits} children hit");
    }
}
