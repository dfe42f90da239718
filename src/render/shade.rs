//! Shading one hit of a path: emission with its MIS weight, one light sample (the shadow ray
//! the caller traces), and one BSDF sample (the path's next ray) with Russian roulette.
//!
//! A hit that gets as far as light sampling draws exactly seven numbers from its path's
//! stream, in this order: three for the light sample (drawn even when the BSDF is a delta
//! lobe and takes none), three for the BSDF sample, one for roulette. So the numbers a hit
//! uses depend only on how many hits came before it on its path.
//!
//! The functions on the hit path are `#[inline]`: the tile loop ([`super::tile`]) calls
//! [`Shader::shade`] once per hit from another module, and across modules only inline
//! functions are sure to be compiled into the caller; as calls, each hit would pay for them
//! and return its [`Step`] through memory.

use super::bsdf::Bsdf;
use super::rng::Rng;
use super::texture_filter::{sample_footprint, Footprint};
use super::RenderStats;
use crate::math::{Hit, Ray};
use crate::scene::{BlasShape, Lights, Material, MaterialKind, Scene, SceneInstance};
use glam::{Affine3A, Mat3, Vec2, Vec3};

/// What shading needs of a render: the scene, its lights, its instances' frames and two
/// settings.
pub(super) struct Shader<'a> {
    pub scene: &'a Scene,
    pub lights: Lights,
    /// Per instance of a two-level scene, its transforms for shading.
    pub frames: Vec<InstanceFrame>,
    /// Maximum path segments (camera ray = 1).
    pub max_depth: u32,
    /// Ray cone spread angle per unit distance, for texture footprints.
    pub spread: f32,
}

/// What shading a hit on an instance needs besides its object-to-world matrix.
pub(super) struct InstanceFrame {
    /// The inverse transpose of the matrix's linear part: object-space normals to world
    /// space.
    normal: Mat3,
    /// World to object space (the hit point on a procedural sphere, for its normal).
    world_to_object: Affine3A,
    /// Whether the matrix mirrors: the world-space winding is the reverse of the object
    /// space one.
    mirrored: bool,
}

impl InstanceFrame {
    pub fn new(instance: &SceneInstance) -> InstanceFrame {
        let m = &instance.object_to_world;
        let linear = Mat3::from_cols(
            Vec3::new(m[0][0], m[1][0], m[2][0]),
            Vec3::new(m[0][1], m[1][1], m[2][1]),
            Vec3::new(m[0][2], m[1][2], m[2][2]),
        );
        let object_to_world =
            Affine3A::from_mat3_translation(linear, Vec3::new(m[0][3], m[1][3], m[2][3]));
        InstanceFrame {
            normal: linear.inverse().transpose(),
            world_to_object: object_to_world.inverse(),
            mirrored: instance.is_mirrored(),
        }
    }
}

/// The state of one (pixel, sample) path between its segments.
#[derive(Clone)]
pub(super) struct PathState {
    /// Index of the pixel in its tile.
    pub pixel: u32,
    pub rng: Rng,
    pub throughput: Vec3,
    pub radiance: Vec3,
    /// Solid-angle pdf of the last BSDF sample, and whether it was a delta lobe.
    pub prev_pdf: f32,
    pub prev_delta: bool,
    /// Distance travelled (for the texture-footprint ray cone).
    pub travelled: f32,
}

impl PathState {
    /// A path about to trace its camera ray: full throughput, no radiance, and a camera
    /// ray that counts as a delta lobe (what it sees directly takes no MIS weight).
    pub fn camera(pixel: u32, rng: Rng) -> Self {
        PathState {
            pixel,
            rng,
            throughput: Vec3::ONE,
            radiance: Vec3::ZERO,
            prev_pdf: 0.0,
            prev_delta: true,
            travelled: 0.0,
        }
    }
}

/// What shading one hit produced.
pub(super) struct Step {
    /// A shadow ray and the radiance it adds when unoccluded.
    pub shadow: Option<(Ray, Vec3)>,
    /// The continuation ray.
    pub next: Option<Ray>,
}

impl Step {
    /// The path ends here and casts no shadow ray.
    const END: Step = Step {
        shadow: None,
        next: None,
    };
}

/// Where a ray hit a surface (a triangle, or a procedural sphere), in world space.
struct SurfaceHit<'s> {
    /// The primitive: in the flat geometry, or in the instance's BLAS.
    prim: u32,
    /// The instance ([`Hit::NO_INSTANCE`] in a flat scene).
    instance: u32,
    /// Index into [`Scene::materials`].
    material: u32,
    /// Barycentric weights of the corners (`b0 = 1 - b1 - b2`; a sphere's are unused).
    bary: [f32; 3],
    p: Vec3,
    /// Unit geometric normal: a triangle's as wound in world space (`(b - a) x (c - a)`),
    /// a sphere's outward.
    ng: Vec3,
    /// Unit direction back along the ray.
    wo: Vec3,
    /// Whether the ray arrived on the emitting side: the object-space front (the side
    /// the triangle is counter-clockwise from, mirrored with its instance; a sphere's
    /// outside), as [`Lights`] emits.
    front: bool,
    /// Shading normals of the corners in world space (unnormalized; zero where the mesh
    /// has none).
    normals: [Vec3; 3],
    /// A triangle's texture coordinates and world-space corners (for texture footprints);
    /// `None` for a sphere (untextured).
    texturing: Option<(&'s [[f32; 2]; 3], [Vec3; 3])>,
}

/// The normals shading uses at a hit, both on the side of `wo`.
struct ShadingFrame {
    /// The geometric normal turned to `wo`'s side.
    n: Vec3,
    /// The interpolated shading normal turned to that side, or `n` where the mesh has none
    /// or it faces away from `wo`.
    ns: Vec3,
}

/// Power heuristic (exponent 2) weight of a sample with pdf `a` against pdf `b`.
#[inline]
fn power_heuristic(a: f32, b: f32) -> f32 {
    let (a2, b2) = (a * a, b * b);
    if a2 + b2 > 0.0 && a2.is_finite() {
        a2 / (a2 + b2)
    } else if a2.is_infinite() {
        1.0
    } else {
        0.0
    }
}

/// Moves `p` off the surface of unit normal `n` to the side of `dir`.
#[inline]
fn offset_origin(p: Vec3, n: Vec3, dir: Vec3) -> Vec3 {
    let eps = 1e-4 * p.abs().max_element().max(1.0);
    if n.dot(dir) >= 0.0 {
        p + n * eps
    } else {
        p - n * eps
    }
}

impl Shader<'_> {
    /// Shades `hit` of `ray`, the path's segment number `depth`: adds what the path sees
    /// there to its radiance and returns its shadow ray and next ray.
    #[inline]
    pub fn shade(
        &self,
        path: &mut PathState,
        ray: &Ray,
        hit: &Hit,
        depth: u32,
        stats: &mut RenderStats,
    ) -> Step {
        let dir_len = ray.dir.length();
        let dir = ray.dir / dir_len;
        if !hit.is_hit() {
            self.add_environment(path, dir);
            return Step::END;
        }
        let Some(surface) = self.surface_hit(ray, hit, dir) else {
            return Step::END; // degenerate triangle: nothing to shade
        };
        let dist = hit.t * dir_len;
        path.travelled += dist;
        let material = &self.scene.materials[surface.material as usize];
        if surface.front && material.is_emissive() {
            self.add_emission(path, material, &surface, dir, dist);
        }
        if depth >= self.max_depth {
            return Step::END;
        }
        let frame = self.shading_frame(&surface);
        let bsdf = self.bsdf(material, &surface, &frame, path.travelled, stats);
        let shadow = self.sample_light(path, &surface, &frame, &bsdf);
        let next = scatter(path, &surface, &frame, &bsdf, depth);
        Step { shadow, next }
    }

    /// A miss: the environment's radiance along unit `dir`, MIS-weighted against light
    /// sampling unless the last bounce was a delta lobe.
    #[inline]
    fn add_environment(&self, path: &mut PathState, dir: Vec3) {
        let scene = self.scene;
        let le = scene.environment.radiance(dir);
        let weight = if path.prev_delta {
            1.0
        } else {
            power_heuristic(path.prev_pdf, self.lights.pdf_environment(scene, dir))
        };
        path.radiance += path.throughput * le * weight;
    }

    /// The hit point of `ray` (unit direction `dir`) on primitive `hit.prim_id`, in world
    /// space; `None` for a degenerate triangle (no normal).
    #[inline]
    fn surface_hit(&self, ray: &Ray, hit: &Hit, dir: Vec3) -> Option<SurfaceHit<'_>> {
        let prim = hit.prim_id;
        let [b1, b2] = hit.bary;
        let b0 = 1.0 - b1 - b2;
        if hit.instance == Hit::NO_INSTANCE {
            let g = &self.scene.geometry;
            let [a, b, c] = g.corners(prim);
            let p = a * b0 + b * b1 + c * b2;
            let ng = (b - a).cross(c - a).try_normalize()?;
            return Some(SurfaceHit {
                prim,
                instance: hit.instance,
                material: g.materials[prim as usize],
                bary: [b0, b1, b2],
                p,
                ng,
                wo: -dir,
                front: hit.front_face,
                normals: g.normals[prim as usize].map(Vec3::from),
                texturing: Some((&g.uvs[prim as usize], [a, b, c])),
            });
        }
        self.instance_surface_hit(ray, hit, dir)
    }

    /// [`Self::surface_hit`] on an instance: its BLAS's triangle (or sphere) moved into
    /// world space by the instance's matrix; normals by its inverse transpose.
    #[cold]
    fn instance_surface_hit(&self, ray: &Ray, hit: &Hit, dir: Vec3) -> Option<SurfaceHit<'_>> {
        let scene = self.scene;
        let instance = scene.instances.get(hit.instance as usize)?;
        let frame = self.frames.get(hit.instance as usize)?;
        let prim = hit.prim_id;
        match &scene.blases.get(instance.blas as usize)?.shape {
            BlasShape::Triangles(g) => {
                let [b1, b2] = hit.bary;
                let b0 = 1.0 - b1 - b2;
                let [a, b, c] = g.corners(prim).map(|v| instance.world_from_object(v));
                let p = a * b0 + b * b1 + c * b2;
                let ng = (b - a).cross(c - a).try_normalize()?;
                // The object-space front normal in world space: the wound normal, reversed
                // by a mirroring matrix.
                let front_normal = if frame.mirrored { -ng } else { ng };
                Some(SurfaceHit {
                    prim,
                    instance: hit.instance,
                    material: g.materials[prim as usize],
                    bary: [b0, b1, b2],
                    p,
                    ng,
                    wo: -dir,
                    front: dir.dot(front_normal) < 0.0,
                    normals: g.normals[prim as usize].map(|n| frame.normal * Vec3::from(n)),
                    texturing: Some((&g.uvs[prim as usize], [a, b, c])),
                })
            }
            BlasShape::Spheres(spheres) => {
                let sphere = spheres.get(prim as usize)?;
                let p = ray.origin + ray.dir * hit.t;
                let local = frame.world_to_object.transform_point3(p) - Vec3::from(sphere.center);
                let ng = (frame.normal * local).try_normalize()?;
                Some(SurfaceHit {
                    prim,
                    instance: hit.instance,
                    material: sphere.material,
                    bary: [1.0, 0.0, 0.0],
                    p,
                    ng,
                    wo: -dir,
                    front: dir.dot(ng) < 0.0,
                    normals: [ng; 3],
                    texturing: None,
                })
            }
        }
    }

    /// A front-face hit on an emitter: its emission, MIS-weighted against light sampling
    /// (pdf of reaching the hit's triangle at distance `dist` along `dir`; 0 for a sphere,
    /// which is not a light) unless the last bounce was a delta lobe.
    #[inline]
    fn add_emission(
        &self,
        path: &mut PathState,
        material: &Material,
        s: &SurfaceHit,
        dir: Vec3,
        dist: f32,
    ) {
        let weight = if path.prev_delta {
            1.0
        } else {
            let pdf = if s.instance == Hit::NO_INSTANCE {
                self.lights.pdf_triangle(self.scene, s.prim, dir, dist)
            } else {
                self.lights
                    .pdf_instance_triangle(s.instance, s.prim, dir, dist)
            };
            power_heuristic(path.prev_pdf, pdf)
        };
        path.radiance += path.throughput * material.emission * weight;
    }

    /// The geometric normal on the side of wo, and the shading normal turned to that side
    /// (the geometric one where the interpolated normal is missing or faces away from wo).
    #[inline]
    fn shading_frame(&self, s: &SurfaceHit) -> ShadingFrame {
        let n = if s.ng.dot(s.wo) >= 0.0 { s.ng } else { -s.ng };
        let [b0, b1, b2] = s.bary;
        let c = s.normals;
        let interpolated = (c[0] * b0 + c[1] * b1 + c[2] * b2).try_normalize();
        let ns = match interpolated.map(|v| if v.dot(n) < 0.0 { -v } else { v }) {
            Some(v) if v.dot(s.wo) > 1e-4 => v,
            _ => n,
        };
        ShadingFrame { n, ns }
    }

    /// `material` at the hit, with its texture looked up through a ray cone that has
    /// travelled `travelled`.
    #[inline]
    fn bsdf(
        &self,
        material: &Material,
        s: &SurfaceHit,
        frame: &ShadingFrame,
        travelled: f32,
        stats: &mut RenderStats,
    ) -> Bsdf {
        let cos_o = frame.n.dot(s.wo);
        let mut texture = |tex: Option<u32>| self.texture_value(tex, s, travelled, cos_o, stats);
        match &material.kind {
            MaterialKind::Standard {
                kd,
                kd_texture,
                ks,
                alpha,
            } => Bsdf::Standard {
                kd: *kd * texture(*kd_texture),
                ks: *ks,
                alpha: *alpha,
            },
            MaterialKind::Metal {
                f0,
                f0_texture,
                alpha,
            } => Bsdf::Metal {
                f0: *f0 * texture(*f0_texture),
                alpha: *alpha,
            },
            MaterialKind::Dielectric { eta } => Bsdf::Dielectric { eta: *eta },
        }
    }

    /// Texture `tex` at the hit (linear RGB), or white without one. The ray cone is
    /// `spread x travelled` wide, widened by `1 / |cos_o|` (at most 20 times) on the surface.
    fn texture_value(
        &self,
        tex: Option<u32>,
        s: &SurfaceHit,
        travelled: f32,
        cos_o: f32,
        stats: &mut RenderStats,
    ) -> Vec3 {
        let (Some(tex), Some((uvs, corners))) = (tex, s.texturing) else {
            return Vec3::ONE;
        };
        let footprint = Footprint {
            uvs: uvs.map(Vec2::from),
            corners,
            bary: s.bary,
            width: self.spread * travelled / cos_o.abs().max(0.05),
        };
        stats.texture_lookups += 1;
        stats.texture_fetches += 8;
        sample_footprint(&self.scene.textures[tex as usize], &footprint)
    }

    /// Next-event estimation: one light sample (drawing its three numbers whether or not
    /// the BSDF can use it) and, when it carries radiance, the shadow ray that must reach
    /// the light unoccluded for that radiance to count.
    #[inline]
    fn sample_light(
        &self,
        path: &mut PathState,
        s: &SurfaceHit,
        frame: &ShadingFrame,
        bsdf: &Bsdf,
    ) -> Option<(Ray, Vec3)> {
        let u_light = [
            path.rng.next_f32(),
            path.rng.next_f32(),
            path.rng.next_f32(),
        ];
        if bsdf.is_delta() {
            return None;
        }
        let ls = self.lights.sample(self.scene, s.p, u_light)?;
        let (f, bsdf_pdf) = bsdf.eval(frame.ns, s.wo, ls.dir);
        // Reflection only towards the geometric side of wo (no light leaks through
        // shading normals).
        if !(f.max_element() > 0.0 && ls.dir.dot(frame.n) > 0.0) {
            return None;
        }
        let weight = power_heuristic(ls.pdf, bsdf_pdf);
        let value = path.throughput * f * ls.radiance * (weight / ls.pdf);
        if !(value.max_element() > 0.0 && value.is_finite()) {
            return None;
        }
        let origin = offset_origin(s.p, s.ng, ls.dir);
        let tmax = if ls.dist.is_finite() {
            (ls.dist * (1.0 - 1e-3)).max(0.0)
        } else {
            f32::INFINITY
        };
        Some((Ray::new(origin, ls.dir, 0.0, tmax), value))
    }
}

/// BSDF sampling: the path's next ray from segment `depth`, its throughput updated; `None`
/// when the path ends (no sample, a sample on the wrong geometric side, Russian roulette
/// from segment 3 on, or a throughput that is zero or not finite).
#[inline]
fn scatter(
    path: &mut PathState,
    s: &SurfaceHit,
    frame: &ShadingFrame,
    bsdf: &Bsdf,
    depth: u32,
) -> Option<Ray> {
    let u_bsdf = [
        path.rng.next_f32(),
        path.rng.next_f32(),
        path.rng.next_f32(),
    ];
    let u_rr = path.rng.next_f32();
    let bs = bsdf.sample(frame.ns, s.wo, s.ng.dot(s.wo) >= 0.0, u_bsdf)?;
    // The sampled direction must leave on the geometric side the lobe meant: reflection
    // back to wo's side, transmission through.
    let transmits = bs.delta && bs.wi.dot(frame.ns) < 0.0;
    if (bs.wi.dot(frame.n) > 0.0) == transmits {
        return None;
    }
    path.throughput *= bs.weight;
    path.prev_pdf = bs.pdf;
    path.prev_delta = bs.delta;
    if depth >= 3 {
        let survive = path.throughput.max_element().min(1.0);
        if u_rr >= survive || survive.is_nan() {
            return None;
        }
        path.throughput /= survive;
    }
    if !path.throughput.is_finite() || path.throughput.max_element() <= 0.0 {
        return None;
    }
    let origin = offset_origin(s.p, s.ng, bs.wi);
    Some(Ray::new(origin, bs.wi, 0.0, f32::INFINITY))
}
