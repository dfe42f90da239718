//! The f32 instruction against an independent f64 computation, on seeded random inputs.
//!
//! Triangles: Cramer's rule in f64 on the exact (widened) f32 inputs gives t and the
//! barycentrics. Where the f64 answer is clearly inside (all weights >= 1e-3) the f32 test
//! must hit with |t32 - t64| <= 1e-4 * t64 and weights within 1e-4; where clearly outside
//! (some weight <= -1e-3) it must miss. Only rays at least 0.1 off the triangle's plane (sine
//! of the angle) and triangles whose edge-length ratio is moderate are compared; the rest are
//! ill-conditioned and skipped (counted, and required to be a minority).
//!
//! Boxes: the slab test in f64 with the same inputs and the section-12 rules (NaN-ignoring
//! min/max, clamp to [0, E], G = 0). The f32 verdict must agree unless the f64 tnear and tfar
//! lie within 8 ulps (2^-20 relative) of each other.

use wavetrace::hw::box_test::{intersect_box, BoxTest};
use wavetrace::hw::triangle::intersect_triangle;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn f(&mut self, lo: f64, hi: f64) -> f32 {
        (lo + (hi - lo) * self.unit()) as f32
    }
    fn v(&mut self, lo: f64, hi: f64) -> [f32; 3] {
        [self.f(lo, hi), self.f(lo, hi), self.f(lo, hi)]
    }
}

type D3 = [f64; 3];
fn sub(a: D3, b: D3) -> D3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn cross(a: D3, b: D3) -> D3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn dot(a: D3, b: D3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn len(a: D3) -> f64 {
    dot(a, a).sqrt()
}
fn wide(v: [f32; 3]) -> D3 {
    v.map(f64::from)
}

/// Solves o + t d = w0 v0 + w1 v1 + w2 v2 (w0 + w1 + w2 = 1) by Cramer's rule.
fn reference(v0: D3, v1: D3, v2: D3, o: D3, d: D3) -> Option<(f64, [f64; 3])> {
    let e1 = sub(v1, v0);
    let e2 = sub(v2, v0);
    let s = sub(o, v0);
    // [-d e1 e2] (t, w1, w2)^T = s
    let det = dot(cross(e1, e2), [-d[0], -d[1], -d[2]]);
    if det == 0.0 {
        return None;
    }
    let t = dot(cross(e1, e2), s) / det;
    let w1 = dot(cross(s, e2), [-d[0], -d[1], -d[2]]) / det;
    let w2 = dot(cross(e1, s), [-d[0], -d[1], -d[2]]) / det;
    Some((t, [1.0 - w1 - w2, w1, w2]))
}

#[test]
fn triangles_agree_with_f64_cramer() {
    let mut rng = Rng(0xdead_0001);
    let (mut compared_hits, mut compared_misses, mut skipped) = (0, 0, 0);
    for _ in 0..200_000 {
        let (v0, v1, v2) = (rng.v(-10.0, 10.0), rng.v(-10.0, 10.0), rng.v(-10.0, 10.0));
        let origin = rng.v(-30.0, 30.0);
        // Aim at a random point near the triangle so that about half the rays hit.
        let w = [rng.unit(), rng.unit(), rng.unit()];
        let sum = w[0] + w[1] + w[2];
        let p: D3 = std::array::from_fn(|i| {
            (w[0] * wide(v0)[i] + w[1] * wide(v1)[i] + w[2] * wide(v2)[i]) / sum * 1.3 - 0.1
        });
        let mut dir = sub(p, wide(origin)).map(|c| c as f32);
        let scale = rng.f(0.01, 100.0);
        dir = dir.map(|c| c * scale);
        let (a, b, c, o, d) = (wide(v0), wide(v1), wide(v2), wide(origin), wide(dir));
        let n = cross(sub(b, a), sub(c, a));
        let sine = dot(n, d).abs() / (len(n) * len(d));
        let edges = [len(sub(b, a)), len(sub(c, b)), len(sub(a, c))];
        let aspect = len(n) / edges.iter().fold(0.0f64, |m, &e| m.max(e)).powi(2);
        let Some((t64, w64)) = reference(a, b, c, o, d) else {
            skipped += 1;
            continue;
        };
        if sine < 0.1 || aspect < 0.05 || t64.abs() < 1e-3 {
            skipped += 1;
            continue;
        }
        let r = intersect_triangle(v0, v1, v2, origin, dir);
        let min_w = w64.iter().fold(f64::INFINITY, |m, &x| m.min(x));
        if min_w >= 1e-3 && t64 > 0.0 {
            assert!(
                r.hit,
                "f64 inside ({w64:?}, t {t64}) but f32 missed: {v0:?} {v1:?} {v2:?} {origin:?} {dir:?}"
            );
            let t32 = (r.t_num / r.t_denom) as f64;
            assert!((t32 - t64).abs() <= 1e-4 * t64, "t {t32} vs {t64}");
            for (i, (&s, &w)) in r.scaled_weights.iter().zip(&w64).enumerate() {
                let w32 = (s / r.t_denom) as f64;
                assert!((w32 - w).abs() <= 1e-4, "weight {i}: {w32} vs {w}");
            }
            compared_hits += 1;
        } else if min_w <= -1e-3 || t64 < 0.0 {
            assert!(!r.hit, "f64 outside ({w64:?}, t {t64}) but f32 hit");
            compared_misses += 1;
        } else {
            skipped += 1;
        }
    }
    assert!(
        compared_hits > 20_000 && compared_misses > 20_000,
        "{compared_hits} hits, {compared_misses} misses"
    );
    assert!(
        skipped < compared_hits + compared_misses,
        "skipped {skipped}"
    );
}

fn box_f64(min: D3, max: D3, o: D3, r: D3, extent: f64) -> Option<(f64, f64)> {
    let mut near = f64::NAN;
    let mut far = f64::NAN;
    for a in 0..3 {
        let lo = (min[a] - o[a]) * r[a];
        let hi = (max[a] - o[a]) * r[a];
        let (n, f) = if r[a] >= 0.0 { (lo, hi) } else { (hi, lo) };
        near = near.max(n);
        far = far.min(f);
    }
    if near.is_nan() || far.is_nan() {
        return None;
    }
    Some((near.max(0.0), far.min(extent)))
}

#[test]
fn boxes_agree_with_f64_except_within_8_ulps_of_the_boundary() {
    let mut rng = Rng(0xdead_0002);
    let (mut hits, mut misses, mut close, mut nan) = (0, 0, 0, 0);
    for _ in 0..1_000_000 {
        let c = rng.v(-10.0, 10.0);
        let h = rng.v(0.0, 3.0);
        let min = [c[0] - h[0], c[1] - h[1], c[2] - h[2]];
        let max = [c[0] + h[0], c[1] + h[1], c[2] + h[2]];
        let origin = rng.v(-20.0, 20.0);
        // Aim at a point around the box so that both verdicts are common.
        let j = rng.v(-1.6, 1.6);
        let target: [f32; 3] = std::array::from_fn(|i| c[i] + j[i] * h[i]);
        let mut dir: [f32; 3] = std::array::from_fn(|i| (target[i] - origin[i]) * 0.05);
        for d in dir.iter_mut() {
            if rng.unit() < 0.1 {
                *d = if rng.unit() < 0.5 { 0.0 } else { -0.0 };
            }
        }
        let inv_dir = dir.map(|d| 1.0 / d);
        let extent = if rng.unit() < 0.3 {
            f32::INFINITY
        } else {
            rng.f(0.0, 60.0)
        };
        let BoxTest { hit, .. } = intersect_box(min, max, origin, inv_dir, extent, 1.0);
        match box_f64(
            wide(min),
            wide(max),
            wide(origin),
            wide(inv_dir),
            extent as f64,
        ) {
            None => {
                assert!(!hit);
                nan += 1;
            }
            Some((tn, tf)) => {
                // Infinite distances come from exact 1/0 = inf products: no margin.
                let finite = tn.is_finite() && tf.is_finite();
                let margin = 2f64.powi(-20) * tn.abs().max(tf.abs());
                if finite && (tn - tf).abs() <= margin {
                    close += 1;
                } else {
                    assert_eq!(
                        hit,
                        tn <= tf,
                        "{min:?} {max:?} {origin:?} {inv_dir:?} {extent}: f64 [{tn}, {tf}]"
                    );
                    if hit {
                        hits += 1;
                    } else {
                        misses += 1;
                    }
                }
            }
        }
    }
    assert!(
        hits > 50_000 && misses > 50_000,
        "{hits} hits, {misses} misses"
    );
    assert!(
        close < 1_000 && nan < 1_000,
        "{close} within the margin, {nan} NaN"
    );
}
