//! Scattering functions: Lambert, GGX (Smith height-correlated masking), smooth dielectric.
//!
//! Conventions: `wo` and `wi` are unit vectors pointing away from the surface; `n` is the
//! unit geometric normal turned to the side of `wo` (all reflective lobes are two-sided).
//! `eval` returns `f * |cos(wi)|` and the solid-angle pdf of `sample`.

use glam::Vec3;
use std::f32::consts::PI;

/// A scattering function resolved at one hit (texture already applied).
#[derive(Clone, Copy, Debug)]
pub enum Bsdf {
    /// `kd / pi` plus a GGX lobe of weight `ks` (no Fresnel).
    Standard { kd: Vec3, ks: Vec3, alpha: f32 },
    /// GGX conductor, Schlick Fresnel.
    Metal { f0: Vec3, alpha: f32 },
    /// Smooth dielectric; `eta` = inside / outside.
    Dielectric { eta: f32 },
}

/// One sampled direction.
#[derive(Clone, Copy, Debug)]
pub struct BsdfSample {
    pub wi: Vec3,
    /// `f * |cos| / pdf`.
    pub weight: Vec3,
    /// Solid-angle pdf (meaningless for delta lobes).
    pub pdf: f32,
    pub delta: bool,
}

/// An orthonormal basis around unit `n` (Frisvad / Duff et al. construction).
pub fn basis(n: Vec3) -> (Vec3, Vec3) {
    let sign = 1.0f32.copysign(n.z);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    (
        Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x),
        Vec3::new(b, sign + n.y * n.y * a, -n.y),
    )
}

fn to_world(n: Vec3, local: Vec3) -> Vec3 {
    let (t, b) = basis(n);
    t * local.x + b * local.y + n * local.z
}

/// Cosine-weighted direction around `n`.
pub fn sample_cosine(n: Vec3, u: [f32; 2]) -> Vec3 {
    let r = u[0].sqrt();
    let phi = 2.0 * PI * u[1];
    let z = (1.0 - u[0]).max(0.0).sqrt();
    to_world(n, Vec3::new(r * phi.cos(), r * phi.sin(), z))
}

fn ggx_d(cos_h: f32, alpha: f32) -> f32 {
    let a2 = alpha * alpha;
    let c2 = cos_h * cos_h;
    let d = c2 * (a2 - 1.0) + 1.0;
    a2 / (PI * d * d)
}

fn ggx_lambda(cos: f32, alpha: f32) -> f32 {
    let c2 = (cos * cos).max(1e-12);
    let tan2 = ((1.0 - c2) / c2).max(0.0);
    0.5 * ((1.0 + alpha * alpha * tan2).sqrt() - 1.0)
}

fn ggx_g2(cos_o: f32, cos_i: f32, alpha: f32) -> f32 {
    1.0 / (1.0 + ggx_lambda(cos_o, alpha) + ggx_lambda(cos_i, alpha))
}

/// Samples a microfacet normal with density `D(h) cos(h)`.
fn sample_ggx_h(n: Vec3, alpha: f32, u: [f32; 2]) -> Vec3 {
    let tan2 = alpha * alpha * u[0] / (1.0 - u[0]).max(1e-7);
    let cos = 1.0 / (1.0 + tan2).sqrt();
    let sin = (1.0 - cos * cos).max(0.0).sqrt();
    let phi = 2.0 * PI * u[1];
    to_world(n, Vec3::new(sin * phi.cos(), sin * phi.sin(), cos))
}

/// Unpolarized Fresnel reflectance of a smooth dielectric; `eta` = transmitted / incident
/// index, `cos_i` > 0. Returns (F, cos_t), cos_t = 0 on total internal reflection.
pub fn fresnel_dielectric(cos_i: f32, eta: f32) -> (f32, f32) {
    let sin_t2 = (1.0 - cos_i * cos_i).max(0.0) / (eta * eta);
    if sin_t2 >= 1.0 {
        return (1.0, 0.0);
    }
    let cos_t = (1.0 - sin_t2).sqrt();
    let rs = (cos_i - eta * cos_t) / (cos_i + eta * cos_t);
    let rp = (eta * cos_i - cos_t) / (eta * cos_i + cos_t);
    (0.5 * (rs * rs + rp * rp), cos_t)
}

fn schlick(f0: Vec3, cos: f32) -> Vec3 {
    let m = (1.0 - cos).clamp(0.0, 1.0);
    let m5 = m * m * m * m * m;
    f0 + (Vec3::ONE - f0) * m5
}

impl Bsdf {
    /// True when the lobe is a delta (no light sampling).
    pub fn is_delta(&self) -> bool {
        matches!(self, Bsdf::Dielectric { .. })
    }

    fn spec_probability(kd: Vec3, ks: Vec3) -> f32 {
        let (d, s) = (kd.element_sum(), ks.element_sum());
        if s <= 0.0 {
            0.0
        } else {
            s / (d + s)
        }
    }

    /// `f * cos(wi)` and the pdf of sampling `wi`.
    pub fn eval(&self, n: Vec3, wo: Vec3, wi: Vec3) -> (Vec3, f32) {
        let cos_o = n.dot(wo);
        let cos_i = n.dot(wi);
        if cos_o <= 0.0 || cos_i <= 0.0 {
            return (Vec3::ZERO, 0.0);
        }
        match *self {
            Bsdf::Standard { kd, ks, alpha } => {
                let ps = Self::spec_probability(kd, ks);
                let mut f = kd / PI;
                let mut pdf = (1.0 - ps) * cos_i / PI;
                if ps > 0.0 {
                    let h = (wo + wi).normalize();
                    let d = ggx_d(n.dot(h), alpha);
                    f += ks * (d * ggx_g2(cos_o, cos_i, alpha) / (4.0 * cos_o * cos_i));
                    pdf += ps * d * n.dot(h) / (4.0 * wo.dot(h));
                }
                (f * cos_i, pdf)
            }
            Bsdf::Metal { f0, alpha } => {
                let h = (wo + wi).normalize();
                let d = ggx_d(n.dot(h), alpha);
                let f = schlick(f0, wo.dot(h)) * (d * ggx_g2(cos_o, cos_i, alpha) / (4.0 * cos_o));
                (f, d * n.dot(h) / (4.0 * wo.dot(h)))
            }
            Bsdf::Dielectric { .. } => (Vec3::ZERO, 0.0),
        }
    }

    /// Samples `wi`. `front_face` tells the dielectric which side is outside. `None` when the
    /// sample carries nothing.
    pub fn sample(&self, n: Vec3, wo: Vec3, front_face: bool, u: [f32; 3]) -> Option<BsdfSample> {
        match *self {
            Bsdf::Standard { kd, ks, alpha } => {
                let ps = Self::spec_probability(kd, ks);
                let wi = if u[0] < ps {
                    let h = sample_ggx_h(n, alpha, [u[1], u[2]]);
                    2.0 * wo.dot(h) * h - wo
                } else {
                    sample_cosine(n, [u[1], u[2]])
                };
                self.finish_sample(n, wo, wi)
            }
            Bsdf::Metal { alpha, .. } => {
                let h = sample_ggx_h(n, alpha, [u[1], u[2]]);
                self.finish_sample(n, wo, 2.0 * wo.dot(h) * h - wo)
            }
            Bsdf::Dielectric { eta } => {
                let eta_rel = if front_face { eta } else { 1.0 / eta };
                let cos_i = n.dot(wo).max(0.0);
                let (f, cos_t) = fresnel_dielectric(cos_i, eta_rel);
                if u[0] < f {
                    Some(BsdfSample {
                        wi: 2.0 * cos_i * n - wo,
                        weight: Vec3::ONE,
                        pdf: 1.0,
                        delta: true,
                    })
                } else {
                    let wi = (-wo / eta_rel + (cos_i / eta_rel - cos_t) * n).normalize();
                    Some(BsdfSample {
                        wi,
                        weight: Vec3::splat(1.0 / (eta_rel * eta_rel)),
                        pdf: 1.0,
                        delta: true,
                    })
                }
            }
        }
    }

    fn finish_sample(&self, n: Vec3, wo: Vec3, wi: Vec3) -> Option<BsdfSample> {
        let (f, pdf) = self.eval(n, wo, wi);
        if pdf.is_nan() || pdf <= 0.0 || !f.is_finite() {
            return None;
        }
        Some(BsdfSample {
            wi,
            weight: f / pdf,
            pdf,
            delta: false,
        })
    }
}
