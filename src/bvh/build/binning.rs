//! The binned SAH split of large nodes: the references' centroids are counted into `BINS`
//! bins per axis (a sample of them on nodes of at least `SAMPLED_BINNING` references, in
//! parallel chunks on nodes of at least `PARALLEL_BINNING`), the SAH is swept over the bin
//! boundaries, and the references are partitioned at the best one with a single compare
//! against [`bin_threshold`].

use super::partition::partition;
use super::{half_area, Bounds, PrimRef, Split, EMPTY_BOUNDS};
use crate::host::{Avx2, Avx2Kernel};
use glam::Vec3A;
use rayon::prelude::*;

/// Binned SAH: bins per axis (a power of two: see `bin_of`).
pub const BINS: usize = 16;
const _: () = assert!(BINS.is_power_of_two());
/// Nodes with at least this many references are binned by rayon tasks.
pub(super) const PARALLEL_BINNING: usize = 1 << 16;
/// Nodes with at least this many references are binned on every `SAMPLE_STRIDE`-th
/// reference only; their partition pass computes the exact bounds of both sides.
const SAMPLED_BINNING: usize = 1 << 12;
/// See [`SAMPLED_BINNING`].
const SAMPLE_STRIDE: usize = 4;

/// The bin of each lane of `v` (scaled centroid offsets, `>= 0`): `v as usize`, at most
/// `BINS - 1` (NaN gives 0, like `as`).
#[inline(always)]
fn bin_of(v: Vec3A) -> [usize; 3] {
    // max(v, 0) turns NaN into 0; then every lane is in [0, BINS - 1] and truncation is
    // exact.
    let v = v.max(Vec3A::ZERO).min(Vec3A::splat((BINS - 1) as f32));
    #[cfg(target_arch = "x86_64")]
    {
        // glam's Vec3A is an SSE register here: one cvttps2dq.
        let lanes: wide::f32x4 = bytemuck::cast(std::arch::x86_64::__m128::from(v));
        let i = lanes.fast_trunc_int().to_array();
        // Each lane is already in 0..BINS: the mask changes nothing but lets the compiler
        // drop the bounds checks (and the sign extensions) of the bin indexing.
        [
            i[0] as u32 as usize & (BINS - 1),
            i[1] as u32 as usize & (BINS - 1),
            i[2] as u32 as usize & (BINS - 1),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        v.to_array().map(|c| c as usize)
    }
}

/// The references counted into one bin, and their bounds.
#[derive(Clone, Copy)]
struct Bin {
    min: Vec3A,
    max: Vec3A,
    count: u32,
}

const EMPTY_BIN: Bin = Bin {
    min: Vec3A::INFINITY,
    max: Vec3A::NEG_INFINITY,
    count: 0,
};

/// The binned SAH split of `refs`, whose (doubled) centroids have the bounds
/// `(cmin, cmax)`: the references partitioned to its sides, or `None` when no axis splits
/// them into two non-empty sides.
pub(super) fn binned_split(refs: &mut [PrimRef], (cmin, cmax): Bounds) -> Option<Split> {
    let extent = cmax - cmin;
    let best = best_binned_split(refs, cmin, extent)?;
    // bin_of((c - cmin) * scale)[axis] <= bin, as one compare.
    let t = Vec3A::splat(bin_threshold(cmin, bin_scale(extent), best.axis, best.bin));
    let mask = 1 << best.axis;
    let left = |c: Vec3A| c.cmple(t).bitmask() & mask != 0;
    if refs.len() >= SAMPLED_BINNING {
        // The bins saw a sample: the sides' bounds come from the partition.
        Some(partition::<true>(refs, left))
    } else {
        let mut split = partition::<false>(refs, left);
        split.left.bounds = best.left;
        split.right.bounds = best.right;
        Some(split)
    }
}

/// The best bin boundary of [`best_binned_split`]: after bin `bin` on `axis`, with the
/// bounds of the references binned on either side.
struct BinnedSplit {
    axis: usize,
    bin: usize,
    left: Bounds,
    right: Bounds,
}

/// Evaluates the binned SAH on all three axes, or `None` when no axis splits the references
/// into two non-empty sides (no centroid extent, or an extent beyond the f32 range).
fn best_binned_split(refs: &[PrimRef], cmin: Vec3A, extent: Vec3A) -> Option<BinnedSplit> {
    let valid = [extent.x > 0.0, extent.y > 0.0, extent.z > 0.0];
    if !valid.iter().any(|&v| v) {
        return None;
    }
    let bins = bin_node(refs, cmin, bin_scale(extent));
    let mut best: Option<(f32, usize, usize)> = None;
    for (axis, b) in bins.iter().enumerate() {
        if !valid[axis] {
            continue;
        }
        if let Some((c, i)) = best_boundary(b) {
            if best.is_none_or(|(bc, _, _)| c < bc) {
                best = Some((c, axis, i));
            }
        }
    }
    let (_, axis, bin) = best?;
    let side = |bins: &[Bin]| {
        bins.iter()
            .fold(EMPTY_BOUNDS, |(lo, hi), b| (lo.min(b.min), hi.max(b.max)))
    };
    Some(BinnedSplit {
        axis,
        bin,
        left: side(&bins[axis][..bin + 1]),
        right: side(&bins[axis][bin + 1..]),
    })
}

/// The bins of a node's references: every `SAMPLE_STRIDE`-th one on large nodes, in
/// parallel chunks of a fixed size (a multiple of the stride) on the largest, merged
/// exactly: the same bins for any thread count.
fn bin_node(refs: &[PrimRef], cmin: Vec3A, scale: Vec3A) -> Bins {
    let stride = if refs.len() >= SAMPLED_BINNING {
        SAMPLE_STRIDE
    } else {
        1
    };
    if refs.len() >= PARALLEL_BINNING {
        refs.par_chunks(PARALLEL_BINNING / 4)
            .map(|chunk| {
                let mut bins = [[EMPTY_BIN; BINS]; 3];
                bin_refs(chunk, stride, cmin, scale, &mut bins);
                bins
            })
            .reduce(
                || [[EMPTY_BIN; BINS]; 3],
                |mut a, b| {
                    merge_bins(&mut a, &b);
                    a
                },
            )
    } else {
        let mut bins = [[EMPTY_BIN; BINS]; 3];
        bin_refs(refs, stride, cmin, scale, &mut bins);
        bins
    }
}

/// The least SAH cost `A(left) * n(left) + A(right) * n(right)` over the boundaries of one
/// axis' bins, and the last bin of its left side (the first of equal ones); `None` when no
/// boundary has references on both sides.
fn best_boundary(b: &[Bin; BINS]) -> Option<(f32, usize)> {
    // Right-to-left sweep: cost of the right side for a split after bin i (None: empty).
    let mut right_cost = [None; BINS];
    let (mut lo, mut hi, mut n) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, 0u32);
    for i in (1..BINS).rev() {
        lo = lo.min(b[i].min);
        hi = hi.max(b[i].max);
        n += b[i].count;
        if n != 0 {
            right_cost[i - 1] = Some(half_area(lo, hi) * n as f32);
        }
    }
    let mut best: Option<(f32, usize)> = None;
    let (mut lo, mut hi, mut n) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, 0u32);
    for i in 0..BINS - 1 {
        lo = lo.min(b[i].min);
        hi = hi.max(b[i].max);
        n += b[i].count;
        // Both sides must hold references. (A side's cost may be infinite, with boxes
        // near the f32 range's end; an axis whose centroid extent overflows to infinity
        // has every reference in bin 0, and so no split.)
        let Some(right_cost) = right_cost[i] else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let c = half_area(lo, hi) * n as f32 + right_cost;
        if best.is_none_or(|(bc, _)| c < bc) {
            best = Some((c, i));
        }
    }
    best
}

/// Bins per axis.
type Bins = [[Bin; BINS]; 3];

/// Scale from doubled-centroid offsets to bins, per axis (0 on an axis without extent).
fn bin_scale(extent: Vec3A) -> Vec3A {
    Vec3A::select(
        extent.cmpgt(Vec3A::ZERO),
        Vec3A::splat(BINS as f32 * 0.99999) / extent,
        Vec3A::ZERO,
    )
}

/// Adds `b` into `a` (exact: bounds and counts).
fn merge_bins(a: &mut Bins, b: &Bins) {
    for (a, b) in a.iter_mut().flatten().zip(b.iter().flatten()) {
        a.min = a.min.min(b.min);
        a.max = a.max.max(b.max);
        a.count += b.count;
    }
}

/// Bins `refs` on all three axes (`scale` 0 on an axis without extent) into `out` (empty
/// bins): compiled for AVX2 where the CPU has it ([`BinRefs`]), else for the baseline.
fn bin_refs(refs: &[PrimRef], stride: usize, cmin: Vec3A, scale: Vec3A, out: &mut Bins) {
    let job = BinRefs {
        refs,
        stride,
        cmin,
        scale,
        out,
    };
    match Avx2::detect() {
        Some(avx2) => avx2.run(job),
        None => job.run(),
    }
}

/// [`bin_refs_any`] as work for [`Avx2::run`]: compiled for AVX2, the same f32 operations
/// (min, max, add, sub, mul, one rounding each; Rust never contracts to FMA), so the same
/// bins; VEX encoding saves the register copies of two-operand SSE.
struct BinRefs<'b> {
    refs: &'b [PrimRef],
    stride: usize,
    cmin: Vec3A,
    scale: Vec3A,
    out: &'b mut Bins,
}

impl Avx2Kernel for BinRefs<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        bin_refs_any(self.refs, self.stride, self.cmin, self.scale, self.out);
    }
}

/// Bins `refs` (every `stride`-th one) into `out`: see [`bin_refs`].
#[inline(always)]
fn bin_refs_any(refs: &[PrimRef], stride: usize, cmin: Vec3A, scale: Vec3A, out: &mut Bins) {
    if stride > 1 {
        // Every `stride`-th reference, alternating the two sets of bins as below.
        let mut odd = [[EMPTY_BIN; BINS]; 3];
        let mut i = 0;
        while i + stride < refs.len() {
            bin_one(out, &refs[i], cmin, scale);
            bin_one(&mut odd, &refs[i + stride], cmin, scale);
            i += 2 * stride;
        }
        if i < refs.len() {
            bin_one(out, &refs[i], cmin, scale);
        }
        merge_bins(out, &odd);
        return;
    }
    // Two sets of bins, for even and odd references: neighbouring references often fall in
    // the same bins, and alternating sets halves the chains of dependent loads and stores.
    // Merging is exact (min, max and counts), so the result does not change.
    let add = |bins: &mut Bins, r: &PrimRef| bin_one(bins, r, cmin, scale);
    if refs.len() < 2 * BINS {
        // Few references: the second set is not worth clearing and merging.
        for r in refs {
            add(out, r);
        }
        return;
    }
    let mut odd = [[EMPTY_BIN; BINS]; 3];
    let mut pairs = refs.chunks_exact(2);
    for pair in &mut pairs {
        add(out, &pair[0]);
        add(&mut odd, &pair[1]);
    }
    for r in pairs.remainder() {
        add(out, r);
    }
    merge_bins(out, &odd);
}

/// Adds reference `r` to its bins on all three axes.
#[inline(always)]
fn bin_one(bins: &mut Bins, r: &PrimRef, cmin: Vec3A, scale: Vec3A) {
    // Non-negative (`cmin` is the least of the same sums) and at most about `BINS`.
    let b = bin_of((r.min() + r.max() - cmin) * scale);
    for (axis_bins, &i) in bins.iter_mut().zip(&b) {
        let bin = &mut axis_bins[i];
        bin.min = bin.min.min(r.min());
        bin.max = bin.max.max(r.max());
        bin.count += 1;
    }
}

/// The largest doubled centroid coordinate `c` on `axis` (from `cmin[axis]` up, infinity
/// included) whose bin, as the binning computes it (`bin_of((c - cmin) * scale)[axis]`), is
/// at most `bin`.
///
/// The bin never decreases as `c` grows (subtracting a constant, multiplying by a
/// non-negative one, the clamp and the truncation are each monotone in f32, and the NaN of
/// `0 * inf` at `c == cmin` gives bin 0, the least), so the references of bins `0..=bin` are
/// exactly those with `c <= threshold`: a bisection over the ordered f32 bit patterns finds
/// it with the binning's own arithmetic.
pub(super) fn bin_threshold(cmin: Vec3A, scale: Vec3A, axis: usize, bin: usize) -> f32 {
    // Finite and infinite f32 in order as u32 keys (NaNs fall outside ordered(-inf)..=
    // ordered(inf)).
    let ordered = |x: f32| {
        let b = x.to_bits();
        if b >> 31 == 1 {
            !b
        } else {
            b | 0x8000_0000
        }
    };
    let value = |k: u32| f32::from_bits(if k >> 31 == 1 { k & 0x7fff_ffff } else { !k });
    let left = |k: u32| bin_of((Vec3A::splat(value(k)) - cmin) * scale)[axis] <= bin;
    let (first, last) = (ordered(cmin[axis]), ordered(f32::INFINITY));
    debug_assert!(left(first));
    // The threshold is within a few units in the last place of the bins' boundary in
    // centroid space, `cmin + (bin + 1) / scale`: search a window of keys around it first
    // (the invariant is checked, so an estimate that is off only costs the full range).
    const WINDOW: u32 = 64;
    let estimate = cmin[axis] + (bin + 1) as f32 / scale[axis];
    let (mut lo, mut hi) = if estimate.is_nan() {
        (first, last)
    } else {
        let k = ordered(estimate);
        (
            k.saturating_sub(WINDOW).clamp(first, last),
            k.saturating_add(WINDOW).clamp(first, last),
        )
    };
    if !left(lo) {
        lo = first;
    }
    if left(hi) {
        hi = last;
        if left(hi) {
            return f32::INFINITY;
        }
    }
    // left(lo) and !left(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if left(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    value(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bvh::build::Rng;

    /// The partition's one compare against `bin_threshold` sends every centroid to the side
    /// its bin (as the binning computes it) says, on random and on boundary centroids, for
    /// wide, narrow and subnormal extents (an infinite scale included).
    #[test]
    fn bin_threshold_matches_the_bins() {
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let mut unit = || (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
        for case in 0..20_000 {
            let cmin = Vec3A::new(unit() * 200.0 - 100.0, unit() - 0.5, unit() * 1e-3);
            let extent = match case % 4 {
                0 => Vec3A::new(unit() * 100.0 + 1e-3, unit() * 1e-3 + 1e-9, 1.0),
                1 => Vec3A::new(1e-40, 1e-30, unit() * 1e6 + 1.0),
                2 => Vec3A::splat(unit() * 10.0 + 1e-6),
                _ => Vec3A::new(f32::MIN_POSITIVE, unit(), 3.0),
            };
            let scale = bin_scale(extent);
            let axis = case % 3;
            let bin = case / 3 % (BINS - 1);
            let t = bin_threshold(cmin, scale, axis, bin);
            let check = |c: f32| {
                let binned = bin_of((Vec3A::splat(c) - cmin) * scale)[axis] <= bin;
                assert_eq!(c <= t, binned, "case {case}: c {c} t {t} bin {bin}");
            };
            for _ in 0..8 {
                check(cmin[axis] + extent[axis] * unit());
            }
            check(cmin[axis]);
            check(cmin[axis] + extent[axis]);
            if t.is_finite() {
                check(t);
                check(f32::from_bits(t.to_bits().wrapping_add(if t > 0.0 {
                    1
                } else {
                    u32::MAX
                })));
                check(t.next_up());
            }
        }
    }

    /// The portable and AVX2 builds of the binning, on all references and on every
    /// `SAMPLE_STRIDE`-th one, give the bins of adding the (sampled) references one by one,
    /// bit for bit.
    #[test]
    fn avx2_binning_matches_the_portable_binning() {
        let Some(avx2) = Avx2::detect() else {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        };
        let mut rng = Rng(0xda94_2042_e4dd_58b5);
        for count in [1usize, 7, 31, 32, 33, 1000, 5001] {
            let refs: Vec<PrimRef> = (0..count as u32)
                .map(|prim| {
                    let mut c = || (rng.next() % 100_000) as f32 / 7.0 - 5000.0;
                    let a = Vec3A::new(c(), c(), c());
                    let e = Vec3A::new(c(), c(), c()).abs() * 0.01;
                    PrimRef::new(a, a + e, prim, 1)
                })
                .collect();
            let (cmin, cmax) = refs
                .iter()
                .fold((Vec3A::INFINITY, Vec3A::NEG_INFINITY), |(lo, hi), r| {
                    (lo.min(r.min() + r.max()), hi.max(r.min() + r.max()))
                });
            let scale = bin_scale(cmax - cmin);
            for stride in [1, SAMPLE_STRIDE] {
                let mut portable = [[EMPTY_BIN; BINS]; 3];
                bin_refs_any(&refs, stride, cmin, scale, &mut portable);
                let mut fast = [[EMPTY_BIN; BINS]; 3];
                let job = BinRefs {
                    refs: &refs,
                    stride,
                    cmin,
                    scale,
                    out: &mut fast,
                };
                avx2.run(job);
                // The sample: every stride-th reference, binned one by one.
                let mut sample = [[EMPTY_BIN; BINS]; 3];
                for r in refs.iter().step_by(stride) {
                    bin_one(&mut sample, r, cmin, scale);
                }
                for axis in 0..3 {
                    for i in 0..BINS {
                        let (a, b) = (&portable[axis][i], &fast[axis][i]);
                        let c = &sample[axis][i];
                        let what = format!("{count} refs, stride {stride}, axis {axis} bin {i}");
                        assert_eq!((a.count, b.count), (c.count, c.count), "{what}");
                        let bits = |v: Vec3A| v.to_array().map(f32::to_bits);
                        assert_eq!((bits(a.min), bits(b.min)), (bits(c.min), bits(c.min)));
                        assert_eq!((bits(a.max), bits(b.max)), (bits(c.max), bits(c.max)));
                    }
                }
            }
        }
    }

    /// The SIMD bin index is `as usize` clamped to the last bin, NaN giving 0.
    #[test]
    fn bin_of_matches_the_scalar_conversion() {
        let mut rng = Rng(7);
        let scalar = |c: f32| (c as usize).min(BINS - 1);
        let specials = [
            0.0,
            -0.0,
            0.99999,
            1.0,
            15.0,
            15.99,
            16.0,
            1e30,
            f32::INFINITY,
        ];
        for _ in 0..100_000 {
            let mut lane = || match rng.next() % 4 {
                0 => specials[(rng.next() % specials.len() as u64) as usize],
                1 => f32::NAN,
                _ => (rng.next() % 1_000_000) as f32 / 1_000_000.0 * 17.0,
            };
            let v = Vec3A::new(lane(), lane(), lane());
            assert_eq!(bin_of(v), v.to_array().map(scalar), "{v}");
        }
    }
}
