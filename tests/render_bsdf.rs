//! BSDF sampling agrees with BSDF evaluation (what MIS relies on), checked by a second
//! estimator: uniform sphere sampling of `eval`.
//!
//! For each lobe and view angle, with N = 200k samples each:
//! - the probability that `sample` succeeds equals the integral of `eval`'s pdf over the
//!   sphere (estimated by uniform sampling), within 0.01;
//! - the directional albedo E[weight] from `sample` equals the integral of `f cos` from
//!   uniform sampling, within 2% (+0.005);
//! - for every successful sample, weight = f cos / pdf of `eval` at the same direction.

use glam::Vec3;
use std::f32::consts::PI;
use wavetrace::render::{Bsdf, Rng};

fn uniform_sphere(u: [f32; 2]) -> Vec3 {
    let z = 1.0 - 2.0 * u[0];
    let r = (1.0 - z * z).max(0.0).sqrt();
    let phi = 2.0 * PI * u[1];
    Vec3::new(r * phi.cos(), r * phi.sin(), z)
}

fn check(bsdf: Bsdf, cos_o: f32) {
    let n = Vec3::Z;
    let wo = Vec3::new((1.0 - cos_o * cos_o).sqrt(), 0.0, cos_o);
    let count = 200_000;
    let mut rng = Rng::for_sample(5, 6, 7);
    // Uniform-sphere estimates of the pdf's integral and of the albedo.
    let (mut pdf_int, mut albedo_u) = (0.0f64, Vec3::ZERO.as_dvec3());
    for _ in 0..count {
        let wi = uniform_sphere(rng.next_2d());
        let (f, pdf) = bsdf.eval(n, wo, wi);
        pdf_int += (pdf * 4.0 * PI) as f64;
        albedo_u += (f * 4.0 * PI).as_dvec3();
    }
    pdf_int /= count as f64;
    albedo_u /= count as f64;
    // The sampler's success rate and albedo.
    let (mut ok, mut albedo_s) = (0usize, Vec3::ZERO.as_dvec3());
    for _ in 0..count {
        let u = [rng.next_f32(), rng.next_f32(), rng.next_f32()];
        if let Some(s) = bsdf.sample(n, wo, true, u) {
            ok += 1;
            albedo_s += s.weight.as_dvec3();
            let (f, pdf) = bsdf.eval(n, wo, s.wi);
            assert!(
                (pdf - s.pdf).abs() <= 1e-4 * pdf.max(1.0),
                "{bsdf:?}: pdf {} vs {pdf}",
                s.pdf
            );
            let w = f / pdf;
            assert!((w - s.weight).abs().max_element() <= 1e-3 * w.max_element().max(1.0));
        }
    }
    albedo_s /= count as f64;
    let p_ok = ok as f64 / count as f64;
    assert!(
        (p_ok - pdf_int).abs() < 0.01,
        "{bsdf:?} cos {cos_o}: success {p_ok} vs pdf integral {pdf_int}"
    );
    let diff = (albedo_s - albedo_u).abs().max_element();
    assert!(
        diff < 0.02 * albedo_u.max_element() + 0.005,
        "{bsdf:?} cos {cos_o}: albedo sampled {albedo_s} vs uniform {albedo_u}"
    );
}

#[test]
fn lambert_sampling_matches_evaluation_and_albedo() {
    let b = Bsdf::Standard {
        kd: Vec3::new(0.8, 0.5, 0.2),
        ks: Vec3::ZERO,
        alpha: 1.0,
    };
    check(b, 0.7);
    // Albedo of Lambert is kd exactly (checked against the closed form too).
    let mut rng = Rng::for_sample(1, 1, 1);
    let mut sum = Vec3::ZERO;
    for _ in 0..10_000 {
        let s = b
            .sample(
                Vec3::Z,
                Vec3::Z,
                true,
                [rng.next_f32(), rng.next_f32(), rng.next_f32()],
            )
            .unwrap();
        sum += s.weight;
    }
    assert!(
        (sum / 10_000.0 - Vec3::new(0.8, 0.5, 0.2))
            .abs()
            .max_element()
            < 1e-4
    );
}

#[test]
fn glossy_and_metal_sampling_match_evaluation() {
    for alpha in [0.15f32, 0.5, 1.0] {
        for cos_o in [0.9f32, 0.4] {
            check(
                Bsdf::Standard {
                    kd: Vec3::splat(0.4),
                    ks: Vec3::splat(0.5),
                    alpha,
                },
                cos_o,
            );
            check(
                Bsdf::Metal {
                    f0: Vec3::new(0.95, 0.7, 0.3),
                    alpha,
                },
                cos_o,
            );
        }
    }
}

/// The smooth dielectric: reflection probability is the Fresnel term (checked against the
/// closed form at normal incidence, ((n-1)/(n+1))^2), refraction obeys Snell's law.
#[test]
fn dielectric_follows_fresnel_and_snell() {
    let b = Bsdf::Dielectric { eta: 1.5 };
    let mut rng = Rng::for_sample(2, 3, 4);
    let mut reflected = 0;
    let count = 100_000;
    for _ in 0..count {
        let s = b
            .sample(Vec3::Z, Vec3::Z, true, [rng.next_f32(), 0.5, 0.5])
            .unwrap();
        if s.wi.z > 0.0 {
            reflected += 1;
        }
    }
    let f0 = (0.5f64 / 2.5).powi(2);
    let p = reflected as f64 / count as f64;
    assert!(
        (p - f0).abs() < 4.0 * (f0 * (1.0 - f0) / count as f64).sqrt(),
        "{p} vs {f0}"
    );
    // Snell at 45 degrees, entering: sin_t = sin_i / 1.5.
    let wo = Vec3::new(-(0.5f32.sqrt()), 0.0, 0.5f32.sqrt());
    let s = b.sample(Vec3::Z, wo, true, [0.999, 0.5, 0.5]).unwrap();
    assert!(s.wi.z < 0.0);
    let sin_t = (s.wi.x * s.wi.x + s.wi.y * s.wi.y).sqrt();
    assert!((sin_t - 0.5f32.sqrt() / 1.5).abs() < 1e-5, "{sin_t}");
}
