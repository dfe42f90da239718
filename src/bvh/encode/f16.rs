//! Directed rounding of boxes to binary16 for FP16 box nodes: min bounds toward -inf, max
//! bounds toward +inf (`semantics.md` 6.2), so that a stored box always contains the exact
//! one. Computed on the bit patterns, bit for bit the reference
//! [`f16_round_down`](crate::hw::node::f16_round_down) /
//! [`f16_round_up`](crate::hw::node::f16_round_up), with a six-lane path for the usual case
//! of normal binary16 bounds.

use glam::Vec3A;
use half::f16;

/// The binary16 bit pattern of `x` rounded toward -inf (`up` false) or +inf (`up` true):
/// bit for bit [`f16_round_down`](crate::hw::node::f16_round_down) /
/// [`f16_round_up`](crate::hw::node::f16_round_up), computed on the bits (no float
/// conversions): truncate the magnitude, then step one unit away from zero when bits were
/// lost and the direction of rounding points away from zero.
fn f16_bits_directed(x: f32, up: bool) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) as u16 & 0x8000;
    let abs = bits & 0x7fff_ffff;
    let (magnitude, inexact) = if abs > 0x7f80_0000 {
        // NaN: whatever the conversion gives (the hardware never sees one from here).
        return f16::from_f32(x).to_bits();
    } else if abs == 0x7f80_0000 {
        (0x7c00, false)
    } else if abs >= 0x4780_0000 {
        // |x| >= 2^16: above the largest finite binary16 (65504).
        (0x7bff, true)
    } else if abs >= 0x3880_0000 {
        // Normal binary16 (|x| >= 2^-14): rebias the exponent, keep 10 mantissa bits.
        ((abs - 0x3800_0000) >> 13, abs & 0x1fff != 0)
    } else if abs >= 0x0080_0000 {
        // Subnormal binary16: the significand in units of 2^-24.
        let significand = (abs & 0x007f_ffff) | 0x0080_0000;
        let shift = 126 - (abs >> 23);
        if shift >= 32 {
            (0, true)
        } else {
            (significand >> shift, significand & ((1 << shift) - 1) != 0)
        }
    } else {
        // Zero or an f32 subnormal (below 2^-24).
        (0, abs != 0)
    };
    let away = up == (sign == 0);
    sign | (magnitude + (inexact && away) as u32) as u16
}

/// The f32 value of binary16 bits (exact).
fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let magnitude = (h & 0x7fff) as u32;
    if (0x0400..0x7c00).contains(&magnitude) {
        f32::from_bits(sign | ((magnitude << 13) + 0x3800_0000))
    } else if magnitude == 0 {
        f32::from_bits(sign)
    } else {
        f16::from_bits(h).to_f32()
    }
}

/// [`f16_bits_directed`] and the f32 value of its result, with a short path for the usual
/// case of a normal binary16 result below 65504: clear the 13 low mantissa bits (truncation
/// toward zero), then add one unit of binary16 precision when bits were lost and the
/// rounding direction points away from zero (the carry runs into the exponent correctly).
#[inline(always)]
fn f16_directed(x: f32, up: bool) -> (u16, f32) {
    let bits = x.to_bits();
    let abs = bits & 0x7fff_ffff;
    // 2^-14 <= |x| < 65504: the result is normal and finite.
    if abs.wrapping_sub(0x3880_0000) < 0x477f_e000 - 0x3880_0000 {
        let away = up == (bits >> 31 == 0);
        let step = ((abs & 0x1fff != 0) & away) as u32;
        let rounded = (bits & !0x1fff) + (step << 13);
        let h = ((rounded >> 16) & 0x8000) | (((rounded & 0x7fff_ffff) - 0x3800_0000) >> 13);
        (h as u16, f32::from_bits(rounded))
    } else {
        let h = f16_bits_directed(x, up);
        (h, f16_bits_to_f32(h))
    }
}

/// A box as the hardware sees it: `(min, max)` in f32.
pub(super) type StoredBox = ([f32; 3], [f32; 3]);

/// The binary16 bits of an empty slot's box: six NaNs (a box no ray can hit).
pub(super) const NAN_BOX_BITS: [u16; 6] = [0x7e00; 6];

/// A box rounded outward to binary16.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct F16Box {
    /// The bit patterns `[min.xyz, max.xyz]`, as
    /// [`BoxNodeF16::boxes`](crate::hw::BoxNodeF16::boxes) holds them: min rounded toward
    /// -inf, max toward +inf.
    pub bits: [u16; 6],
    /// The f32 box these bits stand for (the box the hardware tests).
    pub stored: StoredBox,
}

/// A box stored in an FP16 node: its binary16 bits and the f32 box the hardware sees.
#[inline(always)]
pub(super) fn f16_box(min: Vec3A, max: Vec3A) -> F16Box {
    match f16_box_normal(min, max) {
        Some(out) => out,
        None => f16_box_general(min, max),
    }
}

/// [`f16_box`] one bound at a time (subnormal, huge or zero bounds).
#[cold]
#[inline(never)]
fn f16_box_general(min: Vec3A, max: Vec3A) -> F16Box {
    let (x0, x0f) = f16_directed(min.x, false);
    let (y0, y0f) = f16_directed(min.y, false);
    let (z0, z0f) = f16_directed(min.z, false);
    let (x1, x1f) = f16_directed(max.x, true);
    let (y1, y1f) = f16_directed(max.y, true);
    let (z1, z1f) = f16_directed(max.z, true);
    F16Box {
        bits: [x0, y0, z0, x1, y1, z1],
        stored: ([x0f, y0f, z0f], [x1f, y1f, z1f]),
    }
}

/// The bit patterns of x, y, z, and 1.0 in the fourth lane (which passes the range check of
/// [`f16_box_normal`]).
#[inline(always)]
fn box_lane_bits(v: Vec3A) -> wide::i32x4 {
    use wide::i32x4;
    #[cfg(target_arch = "x86_64")]
    {
        let bits: i32x4 = bytemuck::cast(std::arch::x86_64::__m128::from(v));
        (bits & i32x4::new([-1, -1, -1, 0])) | i32x4::new([0, 0, 0, 0x3f80_0000])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let [x, y, z] = v.to_array().map(|c| c.to_bits() as i32);
        i32x4::new([x, y, z, 0x3f80_0000])
    }
}

/// The short path of [`f16_directed`] on the six bounds at once, `None` unless all six take
/// it (2^-14 <= |c| < 65504).
#[inline(always)]
fn f16_box_normal(min: Vec3A, max: Vec3A) -> Option<F16Box> {
    use wide::i32x4;
    let (lo, hi) = (box_lane_bits(min), box_lane_bits(max));
    let magnitude = i32x4::splat(0x7fff_ffff);
    // outside = abs < 2^-14 || abs >= 65504, per lane
    let outside = |bits: i32x4| {
        let abs = bits & magnitude;
        abs.simd_lt(i32x4::splat(0x3880_0000)) | abs.simd_gt(i32x4::splat(0x477f_dfff))
    };
    if (outside(lo) | outside(hi)).to_bitmask() != 0 {
        return None;
    }
    // rounded = (bits & !0x1fff) + (inexact && away) << 13, where away (the rounding
    // direction points away from zero) is x < 0 for the min and x >= 0 for the max.
    let step = |bits: i32x4, away: i32x4| {
        let inexact = !(bits & i32x4::splat(0x1fff)).simd_eq(i32x4::splat(0));
        (bits & i32x4::splat(!0x1fff)) + (inexact & away & i32x4::splat(0x2000))
    };
    let negative = |bits: i32x4| bits.simd_lt(i32x4::splat(0));
    let lo = step(lo, negative(lo));
    let hi = step(hi, !negative(hi));
    // h = sign >> 16 | (|rounded| - 0x3800_0000) >> 13
    let half = |r: i32x4| {
        (((r >> 16_i32) & i32x4::splat(0x8000))
            | (((r & magnitude) - i32x4::splat(0x3800_0000)) >> 13_i32))
            .to_array()
    };
    let (hl, hh) = (half(lo), half(hi));
    let (lo, hi) = (lo.to_array(), hi.to_array());
    let value = |b: i32| f32::from_bits(b as u32);
    // Every h is in 0..=0xffff.
    let h = |x: i32| x as u16;
    Some(F16Box {
        bits: [h(hl[0]), h(hl[1]), h(hl[2]), h(hh[0]), h(hh[1]), h(hh[2])],
        stored: (
            [value(lo[0]), value(lo[1]), value(lo[2])],
            [value(hi[0]), value(hi[1]), value(hi[2])],
        ),
    })
}

/// The f32 box as the hardware will see it in an FP16 (`fp16`) or FP32 node.
pub(super) fn stored_box(min: Vec3A, max: Vec3A, fp16: bool) -> StoredBox {
    if fp16 {
        f16_box(min, max).stored
    } else {
        (min.to_array(), max.to_array())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::node::{f16_round_down, f16_round_up};

    /// The bit-level directed rounding agrees with the reference (`hw::node`) on edge cases
    /// and on a million seeded random bit patterns of every magnitude.
    #[test]
    fn f16_directed_rounding_matches_the_reference() {
        let mut edge: Vec<u32> = vec![
            0,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x3380_0000,
            0x3380_0001,
            0x337f_ffff,
            0x3880_0000,
            0x387f_ffff,
            0x3880_0001,
            0x477f_e000,
            0x477f_e001,
            0x477f_f000,
            0x477f_ffff,
            0x4780_0000,
            0x7f7f_ffff,
            0x7f80_0000,
            0x3f80_0000,
            0x3f80_0001,
            0x3fff_ffff,
        ];
        edge.extend(edge.clone().iter().map(|b| b | 0x8000_0000));
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let random = (0..1_000_000).map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u32
        });
        for bits in edge.into_iter().chain(random) {
            let x = f32::from_bits(bits);
            if x.is_nan() {
                continue;
            }
            let down = f16_round_down(x);
            let up = f16_round_up(x);
            assert_eq!(
                f16_bits_directed(x, false),
                down.to_bits(),
                "down {bits:#x}"
            );
            assert_eq!(f16_bits_directed(x, true), up.to_bits(), "up {bits:#x}");
            let (h, v) = f16_directed(x, false);
            assert_eq!((h, v.to_bits()), (down.to_bits(), down.to_f32().to_bits()));
            let (h, v) = f16_directed(x, true);
            assert_eq!((h, v.to_bits()), (up.to_bits(), up.to_f32().to_bits()));
            for h in [down, up] {
                assert_eq!(
                    f16_bits_to_f32(h.to_bits()).to_bits(),
                    h.to_f32().to_bits(),
                    "{h:?}"
                );
            }
        }
        // The six-lane path (taken when every lane is a normal binary16 below 65504)
        // agrees with the scalar one.
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Mostly moderate magnitudes, some tiny, huge and zero ones.
            let x = f32::from_bits(state as u32);
            match state >> 61 {
                0 => 0.0,
                1 | 2 => x,
                _ => ((state >> 8) as u32 as f32 / u32::MAX as f32 - 0.5) * 2000.0,
            }
        };
        for _ in 0..200_000 {
            let min = Vec3A::new(next(), next(), next());
            let max = Vec3A::new(next(), next(), next());
            if min.is_nan() || max.is_nan() {
                continue;
            }
            let F16Box {
                bits,
                stored: (lo, hi),
            } = f16_box(min, max);
            let scalar: Vec<(u16, f32)> = min
                .to_array()
                .iter()
                .map(|&c| f16_directed(c, false))
                .chain(max.to_array().iter().map(|&c| f16_directed(c, true)))
                .collect();
            let values = [lo, hi].concat();
            for i in 0..6 {
                assert_eq!(bits[i], scalar[i].0, "{min} {max}");
                assert_eq!(values[i].to_bits(), scalar[i].1.to_bits(), "{min} {max}");
            }
        }
        assert_eq!(NAN_BOX_BITS, [f16::NAN.to_bits(); 6]);
        for h in 0..=u16::MAX {
            let reference = f16::from_bits(h).to_f32();
            let fast = f16_bits_to_f32(h);
            assert!(fast.to_bits() == reference.to_bits() || (fast.is_nan() && reference.is_nan()));
        }
    }
}
