//! Materials, and how MTL keys map to them.

use glam::Vec3;

/// A surface material. Emission is a property of every kind.
///
/// MTL mapping (see [`Material::from_mtl`]):
///
/// | MTL | meaning here |
/// |---|---|
/// | `Kd` | Lambertian albedo, both sides (default 0.8 when a face has no material; 0 when the material omits it, 1 when it omits it but has `map_Kd`) |
/// | `map_Kd` | texture multiplying `Kd` (sRGB PNG, repeat wrap, trilinear) |
/// | `map_d` | alpha texture (see below) |
/// | `Ke` | emitted radiance of an area light, front side only (counter-clockwise side) |
/// | `Ks`, `Ns` | a GGX microfacet lobe of weight `Ks` beside the diffuse one, roughness `alpha = sqrt(2 / (Ns + 2))` (the Blinn-Phong exponent matched to a Beckmann/GGX width); `Kd + Ks` is scaled down if it exceeds 1 in any channel |
/// | `Pr` | (PBR extension) perceptual roughness: `alpha = Pr^2`, overrides `Ns` |
/// | `Pm` | (PBR extension) metalness: `Pm >= 0.5` makes a GGX conductor with Schlick Fresnel, `F0 = Kd` |
/// | `Ni` with `d < 1`, or `illum` 4, 6, 7 | smooth clear dielectric of index `Ni` (default 1.5) |
///
/// Alpha (`map_d`, [`Material::alpha_texture`]) is coverage for an any-hit test: the
/// texture's alpha channel when its image has one, else its first (red or grey) channel,
/// as the 8-bit code over 255, a value in [0, 1] with no sRGB decoding. Repeat wrap, v up
/// as for `map_Kd`; [`super::Scene::alpha_at`] reads the nearest texel of mip 0. A material
/// without `map_d` has alpha 1 everywhere. The scalar `d` does not set alpha.
///
/// Every number these keys take must be finite, and the colours (`Kd`, `Ks`, `Ke`, `Ka`)
/// need three: the loader refuses anything else at the line it is on. Negative colours are
/// taken as 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    pub name: String,
    pub kind: MaterialKind,
    /// Emitted radiance (front side only).
    pub emission: Vec3,
    /// Index into [`super::Scene::textures`] of the alpha texture (`map_d`); `None`: alpha 1.
    pub alpha_texture: Option<u32>,
}

/// The scattering part of a [`Material`].
#[derive(Clone, Debug, PartialEq)]
pub enum MaterialKind {
    /// Lambertian `kd` (times a texture) plus a GGX lobe of weight `ks`; both sides.
    Standard {
        kd: Vec3,
        kd_texture: Option<u32>,
        ks: Vec3,
        alpha: f32,
    },
    /// GGX conductor with Schlick Fresnel from `f0` (times a texture).
    Metal {
        f0: Vec3,
        f0_texture: Option<u32>,
        alpha: f32,
    },
    /// Smooth dielectric of relative index `eta` (inside over outside; front side is outside).
    Dielectric { eta: f32 },
}

/// Smallest GGX roughness (keeps the lobe finite).
pub const MIN_ALPHA: f32 = 1e-3;

impl Material {
    /// Lambertian albedo `kd`, no emission.
    pub fn diffuse(name: &str, kd: Vec3) -> Self {
        Material {
            name: name.to_string(),
            kind: MaterialKind::Standard {
                kd,
                kd_texture: None,
                ks: Vec3::ZERO,
                alpha: 1.0,
            },
            emission: Vec3::ZERO,
            alpha_texture: None,
        }
    }

    /// Lambertian albedo `kd` that also emits `emission` from its front side.
    pub fn emissive(name: &str, kd: Vec3, emission: Vec3) -> Self {
        Material {
            emission,
            ..Material::diffuse(name, kd)
        }
    }

    /// The material of faces that have none.
    pub fn default_material() -> Self {
        Material::diffuse("(default)", Vec3::splat(0.8))
    }

    /// Maps parsed MTL values to a material (see the table on [`Material`]). `kd_texture` is
    /// the index of the already-loaded `map_Kd` texture; the alpha texture is left `None`
    /// (the scene loader sets it from `map_d`).
    pub fn from_mtl(m: &tobj::Material, kd_texture: Option<u32>) -> Self {
        let v3 = |v: Option<[f32; 3]>| v.map(Vec3::from).unwrap_or(Vec3::ZERO);
        let param = |key: &str| -> Option<f32> {
            m.unknown_param
                .get(key)
                .and_then(|s| s.split_whitespace().next()?.parse::<f32>().ok())
        };
        // A texture with no `Kd` is used as is (Kd = 1).
        let kd = match (m.diffuse, kd_texture) {
            (None, Some(_)) => Vec3::ONE,
            (d, _) => v3(d).max(Vec3::ZERO),
        };
        let ks = v3(m.specular).max(Vec3::ZERO);
        let emission = v3(m.emissive).max(Vec3::ZERO);
        let metalness = param("Pm").unwrap_or(0.0);
        let alpha = match param("Pr") {
            Some(pr) => pr * pr,
            None => (2.0 / (m.shininess.unwrap_or(0.0).max(0.0) + 2.0)).sqrt(),
        }
        .clamp(MIN_ALPHA, 1.0);
        let dissolve = m.dissolve.unwrap_or(1.0);
        let illum = m.illumination_model.unwrap_or(2);
        let kind = if matches!(illum, 4 | 6 | 7) || (dissolve < 1.0 && m.optical_density.is_some())
        {
            let eta = m.optical_density.filter(|&n| n > 0.0).unwrap_or(1.5);
            MaterialKind::Dielectric { eta }
        } else if metalness >= 0.5 {
            MaterialKind::Metal {
                f0: kd.min(Vec3::ONE),
                f0_texture: kd_texture,
                alpha,
            }
        } else {
            let total = (kd + ks).max_element();
            let scale = if total > 1.0 { 1.0 / total } else { 1.0 };
            MaterialKind::Standard {
                kd: kd * scale,
                kd_texture,
                ks: ks * scale,
                alpha,
            }
        };
        Material {
            name: m.name.clone(),
            kind,
            emission,
            alpha_texture: None,
        }
    }

    /// True when the material emits light.
    pub fn is_emissive(&self) -> bool {
        self.emission.max_element() > 0.0
    }
}
