//! A lane's ray prepared once for its triangle tests: the dominant-axis rotation.

#[cfg(target_arch = "x86_64")]
use crate::math::Ray;
use crate::wave::intersect::LaneRay;
#[cfg(target_arch = "x86_64")]
use crate::wave::isa::Avx2;

/// A lane's ray prepared for triangle tests (`semantics.md` 7.2 step 1): the dominant-axis
/// rotation and the rotated origin and direction. A traversal changes a lane's origin and
/// direction only at instance transitions (otherwise only its extent), so a lane prepares
/// this once per ray and again at each transition.
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
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn rotated_avx2(_: Avx2, axis: u32, ray: &Ray, out: &mut TriangleRay) {
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
        let at = ray as *const Ray as *const f32;
        // SAFETY: the token proves AVX; 16-byte loads inside the 32-byte `repr(C)` `Ray`
        // (origin at float 0, direction at float 3), stores to `[_; 4]` fields.
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
