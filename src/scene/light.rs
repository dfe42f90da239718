//! Lights: emissive triangles and the environment, and how to sample them.

use super::{BlasShape, Scene, SceneBlas};
use crate::{Error, Result};
use glam::Vec3;
use std::f32::consts::PI;
use std::path::{Path, PathBuf};

/// Luminance weights (Rec. 709).
pub fn luminance(c: Vec3) -> f32 {
    0.2126 * c.x + 0.7152 * c.y + 0.0722 * c.z
}

/// Radiance arriving from infinitely far away, where rays escape.
#[derive(Clone, Debug)]
pub enum Environment {
    /// The same radiance from every direction.
    Constant(Vec3),
    /// An equirectangular radiance map.
    Map(EnvMap),
}

/// An equirectangular (latitude-longitude) radiance map with an importance-sampling
/// distribution.
///
/// Direction `d` (world, +Y up) maps to `u = 0.5 + atan2(d.x, -d.z) / 2pi`,
/// `v = acos(d.y) / pi`; texel row 0 is straight up, the image centre looks along -Z.
/// Radiance is piecewise constant per texel (nearest lookup), so the sampling density is
/// exactly proportional to luminance x sin(theta) of the texel.
#[derive(Clone, Debug)]
pub struct EnvMap {
    pub path: PathBuf,
    pub width: u32,
    pub height: u32,
    /// Linear radiance, row-major, already multiplied by the scene's scale.
    pub texels: Vec<Vec3>,
    /// Running sum of the texel weights; `cdf[i]` = sum of weights `0..=i`.
    cdf: Vec<f32>,
}

impl EnvMap {
    /// Loads a Radiance `.hdr` file, scaled by `scale`.
    pub fn load(path: &Path, scale: f32) -> Result<EnvMap> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let img = image::load_from_memory(&bytes)
            .map_err(|e| Error::parse(path, 0, format!("cannot decode environment map: {e}")))?
            .to_rgb32f();
        let (w, h) = img.dimensions();
        let texels = img
            .pixels()
            .map(|p| Vec3::from(p.0).max(Vec3::ZERO) * scale)
            .collect();
        EnvMap::new(path, w, h, texels)
    }

    /// A map from row-major linear radiance.
    pub fn new(
        path: impl Into<PathBuf>,
        width: u32,
        height: u32,
        texels: Vec<Vec3>,
    ) -> Result<EnvMap> {
        let path = path.into();
        if width == 0 || height == 0 || texels.len() != (width * height) as usize {
            return Err(Error::parse(&path, 0, "environment map has no texels"));
        }
        if texels.iter().any(|t| !t.is_finite()) {
            return Err(Error::parse(
                &path,
                0,
                "environment map has NaN or Inf texels",
            ));
        }
        let mut cdf = Vec::with_capacity(texels.len());
        let mut sum = 0.0f64;
        for y in 0..height {
            let sin_theta = ((y as f32 + 0.5) / height as f32 * PI).sin();
            for x in 0..width {
                sum += (luminance(texels[(y * width + x) as usize]) * sin_theta) as f64;
                cdf.push(sum as f32);
            }
        }
        Ok(EnvMap {
            path,
            width,
            height,
            texels,
            cdf,
        })
    }

    fn texel_of(&self, dir: Vec3) -> (usize, f32) {
        let d = dir.normalize();
        let u = 0.5 + d.x.atan2(-d.z) / (2.0 * PI);
        let theta = d.y.clamp(-1.0, 1.0).acos();
        let v = theta / PI;
        let x = ((u * self.width as f32) as u32).min(self.width - 1);
        let y = ((v * self.height as f32) as u32).min(self.height - 1);
        ((y * self.width + x) as usize, theta.sin())
    }

    fn total(&self) -> f32 {
        *self.cdf.last().expect("non-empty")
    }
}

impl Environment {
    /// Radiance arriving along `-dir` (i.e. seen when looking along `dir`).
    pub fn radiance(&self, dir: Vec3) -> Vec3 {
        match self {
            Environment::Constant(c) => *c,
            Environment::Map(m) => m.texels[m.texel_of(dir).0],
        }
    }

    /// True when no radiance comes from anywhere.
    pub fn is_black(&self) -> bool {
        match self {
            Environment::Constant(c) => c.max_element() <= 0.0,
            Environment::Map(m) => m.total() <= 0.0,
        }
    }

    /// Samples a direction; returns (unit direction, radiance, solid-angle pdf).
    pub fn sample(&self, u: [f32; 2]) -> (Vec3, Vec3, f32) {
        match self {
            Environment::Constant(c) => {
                let z = 1.0 - 2.0 * u[0];
                let r = (1.0 - z * z).max(0.0).sqrt();
                let phi = 2.0 * PI * u[1];
                (
                    Vec3::new(r * phi.cos(), z, r * phi.sin()),
                    *c,
                    1.0 / (4.0 * PI),
                )
            }
            Environment::Map(m) => {
                let target = u[0] * m.total();
                let i = m.cdf.partition_point(|&c| c <= target).min(m.cdf.len() - 1);
                let (x, y) = (i as u32 % m.width, i as u32 / m.width);
                // Position inside the texel: reuse the remainder of u[0] and u[1].
                let lo = if i == 0 { 0.0 } else { m.cdf[i - 1] };
                let fx =
                    ((target - lo) / (m.cdf[i] - lo).max(f32::MIN_POSITIVE)).clamp(0.0, 0.999_999);
                let uu = (x as f32 + fx) / m.width as f32;
                let vv = (y as f32 + u[1]) / m.height as f32;
                let phi = (uu - 0.5) * 2.0 * PI;
                let theta = vv * PI;
                let dir = Vec3::new(
                    theta.sin() * phi.sin(),
                    theta.cos(),
                    -theta.sin() * phi.cos(),
                );
                let (idx, sin_theta) = m.texel_of(dir);
                let pdf = self.map_pdf(m, idx, sin_theta);
                (dir, m.texels[idx], pdf)
            }
        }
    }

    /// Solid-angle pdf with which [`Environment::sample`] picks `dir`.
    pub fn pdf(&self, dir: Vec3) -> f32 {
        match self {
            Environment::Constant(_) => 1.0 / (4.0 * PI),
            Environment::Map(m) => {
                let (idx, sin_theta) = m.texel_of(dir);
                self.map_pdf(m, idx, sin_theta)
            }
        }
    }

    fn map_pdf(&self, m: &EnvMap, idx: usize, sin_theta: f32) -> f32 {
        if sin_theta <= 1e-6 {
            return 0.0;
        }
        let lo = if idx == 0 { 0.0 } else { m.cdf[idx - 1] };
        let p_texel = (m.cdf[idx] - lo) / m.total();
        let pdf_uv = p_texel * (m.width * m.height) as f32;
        pdf_uv / (2.0 * PI * PI * sin_theta)
    }
}

/// A sampled point on a light, seen from a shading point.
#[derive(Clone, Copy, Debug)]
pub struct LightSample {
    /// Unit direction from the shading point to the light.
    pub dir: Vec3,
    /// Distance to the light point (`f32::INFINITY` for the environment).
    pub dist: f32,
    /// Radiance arriving from it.
    pub radiance: Vec3,
    /// Solid-angle pdf, including the choice of this light.
    pub pdf: f32,
}

/// The lights of a scene: emissive triangles (picked in proportion to power) and the
/// environment.
///
/// In a flat scene the emissive triangles are those of [`Scene::geometry`]; in a two-level
/// scene, every instance's copy of the emissive triangles of its triangle BLAS, in world
/// space. A mirrored instance ([`super::SceneInstance::is_mirrored`]) mirrors its lights:
/// their emitting side is the mirror image of the object-space front (counter-clockwise)
/// side. Instance flags do not change which side emits. Emissive spheres are not lights
/// (they still emit where a path hits them).
#[derive(Clone, Debug)]
pub struct Lights {
    /// Emissive triangles, in the order of `cdf`.
    triangles: Vec<TriangleLight>,
    /// Running sum of the triangles' powers.
    cdf: Vec<f32>,
    /// Flat scene: per primitive, its [`TriangleLight::pdf_area`] (0 for non-emitters).
    prim_pdf_area: Vec<f32>,
    /// Two-level scene: per BLAS, per triangle, its rank among the BLAS's emissive
    /// triangles ([`NOT_EMISSIVE`] for others); empty for a BLAS without them.
    blas_emitter_rank: Vec<Vec<u32>>,
    /// Two-level scene: per instance, its BLAS and where its lights start.
    instance_lights: Vec<InstanceLights>,
    /// Probability of sampling the environment.
    pub env_probability: f32,
}

/// [`Lights::blas_emitter_rank`] of a triangle that does not emit.
const NOT_EMISSIVE: u32 = u32::MAX;

/// Where an instance's lights are in [`Lights::triangles`].
#[derive(Clone, Copy, Debug)]
struct InstanceLights {
    /// The instance's BLAS (index into [`Scene::blases`]).
    blas: u32,
    /// Index of its first light; its lights follow in the order of their rank.
    first: u32,
}

/// An emissive triangle as a light, in world space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TriangleLight {
    /// World-space corners, counter-clockwise seen from the emitting side.
    pub corners: [Vec3; 3],
    /// Emitted radiance (its material's).
    pub emission: Vec3,
    /// The instance it belongs to; `None` in a flat scene.
    pub instance: Option<u32>,
    /// Its primitive: in [`Scene::geometry`] (flat) or in the instance's BLAS.
    pub prim: u32,
    /// Probability of picking it over its area, times the probability of picking a
    /// triangle rather than the environment; 0 when its world area is 0 (never picked).
    pub pdf_area: f32,
}

impl Lights {
    /// Collects the emitters of `scene`: emissive triangles of the flat geometry, then of
    /// each instance in order.
    pub fn new(scene: &Scene) -> Lights {
        let g = &scene.geometry;
        let mut triangles = Vec::new();
        let mut cdf = Vec::new();
        let mut sum = 0.0f64;
        let mut areas = Vec::new();
        for prim in 0..g.triangle_count() as u32 {
            let m = &scene.materials[g.materials[prim as usize] as usize];
            if !m.is_emissive() {
                continue;
            }
            let [a, b, c] = g.corners(prim);
            let area = 0.5 * (b - a).cross(c - a).length();
            if area.is_nan() || area <= 0.0 {
                continue;
            }
            sum += (area * luminance(m.emission)) as f64;
            triangles.push(TriangleLight {
                corners: [a, b, c],
                emission: m.emission,
                instance: None,
                prim,
                pdf_area: 0.0,
            });
            cdf.push(sum as f32);
            areas.push(area);
        }
        let blas_emitter_rank: Vec<Vec<u32>> = scene
            .blases
            .iter()
            .map(|b| emitter_ranks(scene, b))
            .collect();
        let mut instance_lights = Vec::with_capacity(scene.instances.len());
        for (index, instance) in scene.instances.iter().enumerate() {
            instance_lights.push(InstanceLights {
                blas: instance.blas,
                first: triangles.len() as u32,
            });
            let BlasShape::Triangles(g) = &scene.blases[instance.blas as usize].shape else {
                continue;
            };
            let ranks = &blas_emitter_rank[instance.blas as usize];
            let mirrored = instance.is_mirrored();
            for (prim, _) in ranks.iter().enumerate().filter(|(_, &r)| r != NOT_EMISSIVE) {
                let prim = prim as u32;
                let m = &scene.materials[g.materials[prim as usize] as usize];
                let [a, mut b, mut c] = g.corners(prim).map(|p| instance.world_from_object(p));
                if mirrored {
                    std::mem::swap(&mut b, &mut c);
                }
                let area = 0.5 * (b - a).cross(c - a).length();
                // A triangle that vanishes in world space keeps its place (its rank) with
                // no power.
                let area = if area > 0.0 { area } else { 0.0 };
                sum += (area * luminance(m.emission)) as f64;
                triangles.push(TriangleLight {
                    corners: [a, b, c],
                    emission: m.emission,
                    instance: Some(index as u32),
                    prim,
                    pdf_area: 0.0,
                });
                cdf.push(sum as f32);
                areas.push(area);
            }
        }
        if sum.is_nan() || sum <= 0.0 {
            // Nothing emits a positive power: no triangle lights.
            triangles.clear();
            cdf.clear();
            instance_lights.clear();
        }
        let env_black = scene.environment.is_black();
        let env_probability = match (env_black, triangles.is_empty()) {
            (true, _) => 0.0,
            (false, true) => 1.0,
            (false, false) => 0.5,
        };
        let mut prim_pdf_area = vec![0.0; g.triangle_count()];
        let total = sum as f32;
        for (i, light) in triangles.iter_mut().enumerate() {
            let lo = if i == 0 { 0.0 } else { cdf[i - 1] };
            if areas[i] > 0.0 {
                light.pdf_area = (1.0 - env_probability) * (cdf[i] - lo) / total / areas[i];
            }
            if light.instance.is_none() {
                prim_pdf_area[light.prim as usize] = light.pdf_area;
            }
        }
        Lights {
            triangles,
            cdf,
            prim_pdf_area,
            blas_emitter_rank,
            instance_lights,
            env_probability,
        }
    }

    /// The emissive triangles, in world space: the flat geometry's, then each instance's.
    pub fn triangles(&self) -> &[TriangleLight] {
        &self.triangles
    }

    /// True when there is nothing to sample.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty() && self.env_probability == 0.0
    }

    /// Samples a light as seen from `p`; `None` when the sample carries nothing (no lights,
    /// or the back of a triangle light).
    pub fn sample(&self, scene: &Scene, p: Vec3, u: [f32; 3]) -> Option<LightSample> {
        if self.is_empty() {
            return None;
        }
        if u[0] < self.env_probability {
            let (dir, radiance, pdf) = scene.environment.sample([u[1], u[2]]);
            let pdf = pdf * self.env_probability;
            return (pdf > 0.0).then_some(LightSample {
                dir,
                dist: f32::INFINITY,
                radiance,
                pdf,
            });
        }
        let u0 = (u[0] - self.env_probability) / (1.0 - self.env_probability);
        let total = *self.cdf.last()?;
        let i = self
            .cdf
            .partition_point(|&c| c <= u0 * total)
            .min(self.triangles.len() - 1);
        let light = &self.triangles[i];
        let [a, b, c] = light.corners;
        let su = u[1].sqrt();
        let (b1, b2) = (1.0 - su, u[2] * su);
        let x = a * (1.0 - b1 - b2) + b * b1 + c * b2;
        let n = (b - a).cross(c - a);
        let to_light = x - p;
        let dist2 = to_light.length_squared();
        let dist = dist2.sqrt();
        if dist.is_nan() || dist <= 0.0 {
            return None;
        }
        let dir = to_light / dist;
        let cos_light = -dir.dot(n.normalize());
        if cos_light <= 0.0 {
            return None; // the back of an emitter sends nothing
        }
        let pdf = light.pdf_area * dist2 / cos_light;
        Some(LightSample {
            dir,
            dist,
            radiance: light.emission,
            pdf,
        })
    }

    /// Solid-angle pdf with which [`Lights::sample`] would pick the point of `prim` (of a
    /// flat scene's geometry) at distance `dist` along `dir` (unit) from the shading point,
    /// hit on its front.
    pub fn pdf_triangle(&self, scene: &Scene, prim: u32, dir: Vec3, dist: f32) -> f32 {
        let pa = self.prim_pdf_area[prim as usize];
        if pa == 0.0 {
            return 0.0;
        }
        let [a, b, c] = scene.geometry.corners(prim);
        let cos_light = dir.dot((b - a).cross(c - a).normalize()).abs();
        if cos_light <= 0.0 {
            return 0.0;
        }
        pa * dist * dist / cos_light
    }

    /// The light that triangle `prim` of instance `instance`'s BLAS is, if it is one.
    pub fn instance_triangle(&self, instance: u32, prim: u32) -> Option<&TriangleLight> {
        let lights = self.instance_lights.get(instance as usize)?;
        let ranks = &self.blas_emitter_rank[lights.blas as usize];
        match *ranks.get(prim as usize)? {
            NOT_EMISSIVE => None,
            rank => self.triangles.get((lights.first + rank) as usize),
        }
    }

    /// Solid-angle pdf with which [`Lights::sample`] would pick the point of triangle `prim`
    /// of instance `instance` (two-level scene) at distance `dist` along `dir` (unit) from
    /// the shading point, hit on its front.
    pub fn pdf_instance_triangle(&self, instance: u32, prim: u32, dir: Vec3, dist: f32) -> f32 {
        let Some(light) = self.instance_triangle(instance, prim) else {
            return 0.0;
        };
        if light.pdf_area == 0.0 {
            return 0.0;
        }
        let [a, b, c] = light.corners;
        let cos_light = dir.dot((b - a).cross(c - a).normalize()).abs();
        if cos_light <= 0.0 {
            return 0.0;
        }
        light.pdf_area * dist * dist / cos_light
    }

    /// Solid-angle pdf with which [`Lights::sample`] would pick the environment along `dir`.
    pub fn pdf_environment(&self, scene: &Scene, dir: Vec3) -> f32 {
        if self.env_probability == 0.0 {
            0.0
        } else {
            self.env_probability * scene.environment.pdf(dir)
        }
    }
}

/// Per triangle of `blas`, its rank among the BLAS's emissive triangles ([`NOT_EMISSIVE`]
/// for the others); empty when none emits or the BLAS holds spheres.
fn emitter_ranks(scene: &Scene, blas: &SceneBlas) -> Vec<u32> {
    let BlasShape::Triangles(g) = &blas.shape else {
        return Vec::new();
    };
    let emits = |prim: usize| scene.materials[g.materials[prim] as usize].is_emissive();
    if !(0..g.triangle_count()).any(emits) {
        return Vec::new();
    }
    let mut next = 0;
    (0..g.triangle_count())
        .map(|prim| {
            if emits(prim) {
                next += 1;
                next - 1
            } else {
                NOT_EMISSIVE
            }
        })
        .collect()
}
