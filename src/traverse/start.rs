//! Starting lanes: a ray's registers, the instruction's checks on them, the triangle-test
//! set-up and the strategy's first node; eight lanes at once in the AVX2 build.

use super::lane::{lane_ray, LaneHit, LaneState};
use super::Traversal;
use crate::hw::NodePointer;
use crate::math::Ray;
use crate::wave::intersect::{RayColumns, TriangleRay};
use crate::wave::isa::{Avx2, Isa, IsaKernel};
use crate::wave::lanes::ray_is_active;
use crate::wave::{LaneRay, LaneStatus, Wave};

/// Sets lane `i` up for `ray`, or leaves it off if `!(tmin <= tmax)` (a NaN `tmax` is left
/// to the instruction, which deactivates the lane). Returns whether the lane is on.
pub fn start_lane<const W: usize, T: Traversal>(
    traversal: &T,
    root: NodePointer,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    i: usize,
    ray: &Ray,
) -> bool {
    start_lane_checked(traversal, root, wave, i, ray).is_some()
}

/// What [`start_lane_checked`] found in a started lane's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneStart {
    /// The instruction accepts the registers ([`ray_is_active`]).
    pub active: bool,
    /// Every inverse-direction component is finite and not zero. Then no box-test product
    /// `(bound - origin) * inv_dir` can be NaN (an active lane's origin is finite, so the
    /// difference is NaN only for a NaN bound, and an infinite difference times a finite,
    /// non-zero factor is infinite), which lets the AVX2 box kernels skip their NaN probe.
    pub finite_slopes: bool,
}

/// [`start_lane`], also checking the lane's registers: `None` if the lane stays off, else
/// what the registers allow ([`LaneStart`]).
///
/// The check runs on the registers before they are stored, and the triangle-test set-up
/// reads them in place from the wave: a copy on the stack, or a read of the stored registers
/// for the check, makes loads that span several earlier stores (store-forwarding stalls,
/// measured at a third of the time of a ray that misses the root box).
#[inline(always)]
pub fn start_lane_checked<const W: usize, T: Traversal>(
    traversal: &T,
    root: NodePointer,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    i: usize,
    ray: &Ray,
) -> Option<LaneStart> {
    wave.state[i].hit = LaneHit::default();
    wave.status[i] = LaneStatus::ExecOff;
    if ray.tmin <= ray.tmax || ray.tmax.is_nan() {
        let first = traversal.begin(&mut wave.state[i].trav, root);
        let registers = lane_ray(ray);
        let start = LaneStart {
            active: ray_is_active(&registers),
            finite_slopes: has_finite_slopes(&registers.inv_dir),
        };
        wave.activate(i, first, registers);
        wave.state[i].triangle_ray = TriangleRay::new(&wave.ray[i]);
        wave.state[i].hit.tmin = ray.tmin;
        wave.state[i].hit.best_t = ray.tmax;
        Some(start)
    } else {
        None
    }
}

/// Whether every inverse-direction component is finite and not zero ([`LaneStart::finite_slopes`]):
/// magnitude bits in 1..=0x7F7F_FFFF, branch-free (the lazy `all(is_finite && != 0)` cost
/// three data-dependent branches a ray).
#[inline(always)]
pub(crate) fn has_finite_slopes(inv_dir: &[f32; 3]) -> bool {
    inv_dir
        .map(|r| (r.to_bits() & 0x7fff_ffff).wrapping_sub(1))
        .into_iter()
        .fold(0, u32::max)
        < 0x7f7f_ffff
}

/// Starts lanes `first..first + 8` for `rays` at once, when all eight start and the
/// instruction accepts all eight's registers ([`Avx2::start_eight`]): the lane state
/// [`start_lane_checked`] leaves on each, and their registers in `columns`. Returns the
/// lanes' finite-slope bits ([`LaneStart::finite_slopes`]), or `None` (nothing written) when
/// a lane needs the per-lane start.
#[inline(always)]
pub(crate) fn start_eight_lanes<const W: usize, T: Traversal>(
    avx2: Avx2,
    traversal: &T,
    root: NodePointer,
    wave: &mut Wave<W, LaneState<T::Lane>>,
    first: usize,
    rays: &[Ray; 8],
    columns: &mut RayColumns,
) -> Option<u32> {
    let starts = avx2.start_eight(rays, columns, first)?;
    for (k, ray) in rays.iter().enumerate() {
        let i = first + k;
        let node = traversal.begin(&mut wave.state[i].trav, root);
        // Rotated from the ray as given (not from the registers stored just below).
        TriangleRay::rotated_avx2(avx2, starts.axes[k], ray, &mut wave.state[i].triangle_ray);
        wave.state[i].hit = LaneHit {
            tmin: ray.tmin,
            best_t: ray.tmax,
            ..LaneHit::default()
        };
        wave.status[i] = LaneStatus::Active;
        wave.node[i] = node;
        wave.ray[i] = LaneRay {
            extent: ray.tmax,
            origin: ray.origin.to_array(),
            dir: ray.dir.to_array(),
            inv_dir: [
                starts.inv_dir[0][k],
                starts.inv_dir[1][k],
                starts.inv_dir[2][k],
            ],
        };
    }
    wave.exec |= 0xff << first;
    Some(starts.finite_slopes)
}

/// What the start of a host's lanes found (bit i: lane i).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StartedLanes {
    /// Lanes whose registers the instruction will reject (NaN, infinite origin): they take
    /// the general arm once, which retires them. A lane's registers change only by a finite
    /// extent, so a lane that passes here passes at every step.
    pub rejected: u64,
    /// Lanes whose box tests can never make a NaN product ([`LaneStart::finite_slopes`]).
    pub finite_slopes: u64,
    /// Blocks of eight lanes that start sharing one lane's traversal state
    /// ([`Traversal::SHARES_LANES`]).
    pub shared: u64,
}

/// The lockstep loop's start phase, for every host lane (those past `rays` stay off): eight
/// lanes at once where the instruction set can, else lane by lane. Dispatched out of line,
/// compiled for the instruction set: the start of a wave runs once, and kept out of the
/// step loop it leaves that loop's code as it is.
pub(crate) struct StartLanes<'a, T: Traversal, const H: usize> {
    pub traversal: &'a T,
    pub root: NodePointer,
    pub wave: &'a mut Wave<H, LaneState<T::Lane>>,
    pub columns: &'a mut RayColumns,
    pub rays: &'a [Ray],
    /// Blocks of eight may share one lane's state (the strategy allows it and box results
    /// come sorted, so that eight lanes at one node get the same children in the same order).
    pub share: bool,
}

impl<T: Traversal, const H: usize> IsaKernel for StartLanes<'_, T, H> {
    type Output = StartedLanes;

    #[inline(always)]
    fn run<I: Isa>(self, isa: I) -> StartedLanes {
        let StartLanes {
            traversal,
            root,
            wave,
            columns,
            rays,
            share,
        } = self;
        let mut started = StartedLanes::default();
        let mut i = 0;
        while i < H {
            if let Some(avx2) = isa.avx2().filter(|_| i % 8 == 0) {
                if let Some(eight) = rays.get(i..i + 8) {
                    let eight: &[Ray; 8] = eight.try_into().expect("eight rays");
                    let eight_started =
                        start_eight_lanes(avx2, traversal, root, wave, i, eight, columns);
                    if let Some(finite) = eight_started {
                        started.finite_slopes |= (finite as u64) << i;
                        if share {
                            started.shared |= 0xff << i;
                        }
                        i += 8;
                        continue;
                    }
                }
            }
            match rays.get(i) {
                Some(ray) => {
                    if let Some(start) = start_lane_checked(traversal, root, wave, i, ray) {
                        columns.set(i, &wave.ray[i]);
                        started.rejected |= (!start.active as u64) << i;
                        started.finite_slopes |= (start.finite_slopes as u64) << i;
                    }
                }
                None => {
                    wave.state[i].hit = LaneHit::default();
                    wave.status[i] = LaneStatus::ExecOff;
                }
            }
            i += 1;
        }
        started
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traverse::stack::{FullStack, StackLane};
    use crate::wave::intersect::test_rng::xorshift;

    /// Eight lanes started at once are the eight lanes `start_lane_checked` starts one by one:
    /// the same registers, node, status, exec bits, hit bookkeeping, triangle set-up, stack
    /// and finite-slope verdicts, and the same columns; and the block falls back (writing
    /// nothing) exactly when a lane does not start or the instruction would reject it.
    /// Seeded random rays at every block of a 64-lane wave, some fields special (NaN,
    /// infinities, zeros, denormals), some directions with tied magnitudes.
    #[test]
    fn eight_lanes_start_as_start_lane_checked_starts_each() {
        let Some(avx2) = Avx2::detect() else {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        };
        let mut next = xorshift(0x3C6E_F372_FE94_F82B_u64);
        let (mut eight, mut fallback) = (0u32, 0u32);
        let mut got = Wave::<64, LaneState<StackLane>>::new(0);
        let mut want = Wave::<64, LaneState<StackLane>>::new(0);
        let root = NodePointer::from_u32(0x0000_0105);
        for case in 0..20_000u32 {
            let first = 8 * (case as usize % 8);
            let rays: [Ray; 8] = std::array::from_fn(|_| random_start_ray(&mut next));
            got.exec = 0;
            want.exec = 0;
            let mut columns = RayColumns::default();
            // (Called from code not compiled for AVX2, its intrinsics are calls: the same
            // results.)
            let started =
                start_eight_lanes(avx2, &FullStack, root, &mut got, first, &rays, &mut columns);
            let verdicts: Vec<Option<LaneStart>> = (0..8)
                .map(|k| start_lane_checked(&FullStack, root, &mut want, first + k, &rays[k]))
                .collect();
            let common = verdicts.iter().all(|v| v.is_some_and(|v| v.active));
            assert_eq!(started.is_some(), common, "case {case}: {rays:?}");
            let Some(finite) = started else {
                assert_eq!(
                    got.exec, 0,
                    "case {case}: a block that fell back wrote exec bits"
                );
                fallback += 1;
                continue;
            };
            eight += 1;
            assert_eq!(got.exec, want.exec, "case {case}");
            for (k, verdict) in verdicts.iter().enumerate() {
                let verdict = verdict.expect("started");
                assert_eq!(
                    finite >> k & 1 == 1,
                    verdict.finite_slopes,
                    "case {case} lane {k}"
                );
                assert_same_start(&got, &want, &columns, first + k, case);
            }
        }
        // Both paths occur often.
        assert!(
            eight > 1000 && fallback > 1000,
            "{eight} started at once, {fallback} not"
        );
    }

    /// A seeded ray for the start tests: components in [-2, 2), `tmin` in [0, 1), `tmax` in
    /// [1, 2); one field in 200 special (zeros, NaN, infinities, a denormal), one direction
    /// in 8 with two tied magnitudes, and one ray in 50 with `tmin > tmax` or `tmin == tmax`.
    fn random_start_ray(next: &mut impl FnMut() -> u64) -> Ray {
        let specials = [
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1),
        ];
        let mut v = [0f32; 8];
        for (f, x) in v.iter_mut().enumerate() {
            let r = next();
            *x = if r.is_multiple_of(200) {
                specials[(r >> 8) as usize % specials.len()]
            } else {
                let unit = (r >> 40) as f32 / (1u64 << 24) as f32;
                match f {
                    6 => unit,       // tmin
                    7 => 1.0 + unit, // tmax
                    _ => 4.0 * unit - 2.0,
                }
            };
        }
        if next().is_multiple_of(8) {
            // Tied magnitudes: the dominant axis is decided by the tie rule.
            v[4] = -v[3];
        }
        match next() % 50 {
            // tmin > tmax: the lane does not start.
            0 => v.swap(6, 7),
            // tmin == tmax: it does.
            1 => v[6] = v[7],
            _ => {}
        }
        Ray::new(
            glam::Vec3::new(v[0], v[1], v[2]),
            glam::Vec3::new(v[3], v[4], v[5]),
            v[6],
            v[7],
        )
    }

    /// Lane `i` of `got` started as lane `i` of `want`: the same registers (bit for bit),
    /// node, status, hit bookkeeping, triangle set-up and stack, and `columns` holds its
    /// registers.
    fn assert_same_start(
        got: &Wave<64, LaneState<StackLane>>,
        want: &Wave<64, LaneState<StackLane>>,
        columns: &RayColumns,
        i: usize,
        case: u32,
    ) {
        let bits = |r: &LaneRay| {
            let mut b = vec![r.extent.to_bits()];
            b.extend(
                r.origin
                    .iter()
                    .chain(&r.dir)
                    .chain(&r.inv_dir)
                    .map(|x| x.to_bits()),
            );
            b
        };
        assert_eq!(
            bits(&got.ray[i]),
            bits(&want.ray[i]),
            "case {case} lane {i}"
        );
        assert_eq!(got.node[i], want.node[i]);
        assert_eq!(got.status[i], want.status[i]);
        let (g, w) = (&got.state[i], &want.state[i]);
        assert_eq!(g.hit.tmin.to_bits(), w.hit.tmin.to_bits());
        assert_eq!(g.hit.best_t.to_bits(), w.hit.best_t.to_bits());
        assert_eq!((g.hit.best, g.hit.best_prim), (w.hit.best, w.hit.best_prim));
        assert_eq!(
            (g.hit.clocks, g.hit.free_steps),
            (w.hit.clocks, w.hit.free_steps)
        );
        assert_eq!(
            g.triangle_ray.rotation, w.triangle_ray.rotation,
            "case {case}"
        );
        let bits4 = |v: [f32; 4]| v.map(f32::to_bits);
        assert_eq!(bits4(g.triangle_ray.origin), bits4(w.triangle_ray.origin));
        assert_eq!(bits4(g.triangle_ray.dir), bits4(w.triangle_ray.dir));
        assert_eq!(
            FullStack.stack_depth(&g.trav),
            FullStack.stack_depth(&w.trav)
        );
        let [origin, dir, inv_dir] = columns.lane(i);
        let bits3 = |v: [f32; 3]| v.map(f32::to_bits);
        assert_eq!(bits3(origin), bits3(want.ray[i].origin));
        assert_eq!(bits3(dir), bits3(want.ray[i].dir));
        assert_eq!(bits3(inv_dir), bits3(want.ray[i].inv_dir));
    }

    /// `start_lane_checked` on rays with every kind of special value in every field: the lane
    /// starts exactly when `tmin <= tmax` or `tmax` is NaN, holds the registers a driver sets
    /// up (1/d computed here in f64 and rounded once, which is the correctly rounded f32
    /// quotient), its triangle-test set-up is the one prepared from those registers, and the
    /// verdict it returns is the reference's `inactive_reason` on them.
    #[test]
    fn start_lane_checked_reports_the_reference_verdict_on_the_stored_registers() {
        let specials = [
            1.5,
            -0.25,
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1),
        ];
        let mut wave = Wave::<32, LaneState<StackLane>>::new(0);
        let start = NodePointer::from_u32(0x1234_5678);
        let (mut started, mut rejected, mut slopes_flagged) = (0, 0, 0);
        for field in 0..8 {
            for (k, &special) in specials.iter().enumerate() {
                let mut v = [0.5f32, -1.0, 2.0, 0.3, -0.7, 0.6, 0.0, 100.0];
                v[field] = special;
                let ray = Ray {
                    origin: glam::Vec3::new(v[0], v[1], v[2]),
                    dir: glam::Vec3::new(v[3], v[4], v[5]),
                    tmin: v[6],
                    tmax: v[7],
                };
                let i = (field * specials.len() + k) % 32;
                let verdict = start_lane_checked(&FullStack, start, &mut wave, i, &ray);
                let should_start = ray.tmin <= ray.tmax || ray.tmax.is_nan();
                assert_eq!(verdict.is_some(), should_start, "{ray:?}");
                let Some(LaneStart {
                    active,
                    finite_slopes,
                }) = verdict
                else {
                    continue;
                };
                started += 1;
                let regs = &wave.ray[i];
                let bits = |v: [f32; 3]| v.map(f32::to_bits);
                assert_eq!(bits(regs.origin), bits([v[0], v[1], v[2]]));
                assert_eq!(bits(regs.dir), bits([v[3], v[4], v[5]]));
                let reciprocal = [v[3], v[4], v[5]].map(|d| (1.0 / d as f64) as f32);
                for (got, want) in regs.inv_dir.into_iter().zip(reciprocal) {
                    let same = got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan();
                    assert!(same, "{ray:?}: 1/d {got} against {want}");
                }
                assert_eq!(regs.extent.to_bits(), ray.tmax.to_bits());
                assert_eq!(active, regs.inactive_reason().is_none(), "{ray:?}");
                // Finite, non-zero slopes exactly when the direction is finite and non-zero.
                let direction_ok = [v[3], v[4], v[5]].iter().all(|&d| {
                    d.is_finite() && d != 0.0 && (1.0 / d as f64).abs() < f32::MAX as f64
                });
                assert_eq!(finite_slopes, direction_ok, "{ray:?}");
                slopes_flagged += finite_slopes as usize;
                rejected += !active as usize;
                let prepared = TriangleRay::new(regs);
                let tri = &wave.state[i].triangle_ray;
                assert_eq!(tri.rotation, prepared.rotation);
                let bits4 = |v: [f32; 4]| v.map(f32::to_bits);
                assert_eq!(bits4(tri.origin), bits4(prepared.origin));
                assert_eq!(bits4(tri.dir), bits4(prepared.dir));
                assert_eq!(wave.node[i], start);
                assert!(wave.exec & 1 << i != 0);
            }
        }
        // Both verdicts occur (NaN and infinite origins are rejected, the rest accepted).
        assert!(
            rejected > 0 && rejected < started,
            "{rejected} of {started}"
        );
        // Both slope verdicts occur.
        assert!(
            slopes_flagged > 0 && slopes_flagged < started,
            "{slopes_flagged} of {started}"
        );
    }
}
