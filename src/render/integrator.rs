//! The wavefront path tracer.
//!
//! Work is split into square tiles and passes of a few samples per pixel. One job renders
//! one tile for one pass: it makes a batch of camera rays (every pixel x every sample of the
//! pass), traces it with [`Tracer::closest_hits`], shades every hit (emission, light
//! sampling, BSDF sampling), traces the shadow rays of that step as one batch with
//! [`Tracer::any_hits`], then the surviving bounce rays as the next batch, until no path is
//! left. Each (pixel, sample) has its own random stream, each job sums its pixels in sample
//! order, and the film adds the jobs of a pass in tile order, so the image depends only on
//! the seed, the sample count and the pass size, never on the number of worker threads.

use super::bsdf::Bsdf;
use super::rng::Rng;
use super::Image;
use crate::counters::Counters;
use crate::math::{Hit, Ray};
use crate::scene::{Lights, MaterialKind, Scene, Texture};
use crate::wave::Tracer;
use crate::{Error, Result};
use glam::{Vec2, Vec3};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How to render.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// Samples per pixel (with a time budget: the most to take).
    pub spp: u32,
    /// Maximum path segments (camera ray = 1). Russian roulette starts after 3.
    pub max_depth: u32,
    pub seed: u64,
    /// Tile edge in pixels.
    pub tile_size: u32,
    /// Samples per pixel per pass (part of what makes the image reproducible).
    pub samples_per_pass: u32,
    /// Stop starting passes once this much time has gone (at least one pass is made).
    pub time_budget: Option<Duration>,
    /// Keep the TD clocks of every camera ray (for heatmaps).
    pub record_clocks: bool,
}

impl RenderOptions {
    /// Options from a scene's own `spp` and `max_depth`.
    pub fn for_scene(scene: &Scene) -> Self {
        RenderOptions {
            spp: scene.spp,
            max_depth: scene.max_depth,
            seed: 0,
            tile_size: 16,
            samples_per_pass: 8,
            time_budget: None,
            record_clocks: false,
        }
    }
}

/// Counters of one ray kind: the tracer's hardware counters and the number of queries.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RayKindStats {
    /// Rays traced.
    pub rays: u64,
    /// Batches (calls into the tracer).
    pub batches: u64,
    /// The wave model's counters for these rays.
    pub counters: Counters,
}

impl RayKindStats {
    fn merge(&mut self, o: &RayKindStats) {
        self.rays += o.rays;
        self.batches += o.batches;
        self.counters.merge(&o.counters);
    }
}

/// What a render did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RenderStats {
    pub width: u32,
    pub height: u32,
    /// Samples per pixel actually taken.
    pub spp: u32,
    pub camera: RayKindStats,
    pub bounce: RayKindStats,
    pub shadow: RayKindStats,
    /// Texture lookups (trilinear: 8 texel fetches each) and texel fetches.
    pub texture_lookups: u64,
    pub texture_fetches: u64,
    /// Samples whose radiance was NaN or Inf and were dropped (should stay 0).
    pub nonfinite_samples: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl RenderStats {
    fn merge(&mut self, o: &RenderStats) {
        self.camera.merge(&o.camera);
        self.bounce.merge(&o.bounce);
        self.shadow.merge(&o.shadow);
        self.texture_lookups += o.texture_lookups;
        self.texture_fetches += o.texture_fetches;
        self.nonfinite_samples += o.nonfinite_samples;
    }

    /// All rays of every kind.
    pub fn total_rays(&self) -> u64 {
        self.camera.rays + self.bounce.rays + self.shadow.rays
    }
}

/// Progress of a render, reported after every finished tile.
#[derive(Clone, Copy, Debug)]
pub struct RenderProgress {
    /// Tile jobs finished so far, over all passes.
    pub jobs_done: u64,
    /// Tile jobs to do if every pass runs.
    pub jobs_total: u64,
    /// Samples per pixel finished (whole passes).
    pub spp_done: u32,
}

/// Cancellation and progress hooks.
#[derive(Clone, Copy, Default)]
pub struct Control<'a> {
    /// Set to stop: the render returns after the current tiles with `interrupted = true`
    /// and only whole passes in the image.
    pub cancel: Option<&'a AtomicBool>,
    pub progress: Option<&'a (dyn Fn(RenderProgress) + Sync)>,
}

/// The result of [`render`].
#[derive(Clone, Debug)]
pub struct RenderOutput {
    /// Mean radiance per pixel (black when no pass finished).
    pub image: Image,
    pub stats: RenderStats,
    /// Mean TD clocks of the camera rays per pixel (with `record_clocks`).
    pub camera_clocks: Option<Vec<f32>>,
    /// True when stopped through [`Control::cancel`].
    pub interrupted: bool,
}

struct Context<'a> {
    scene: &'a Scene,
    tracer: &'a dyn Tracer,
    lights: Lights,
    opts: &'a RenderOptions,
    /// Ray offset scale.
    spread: f32,
}

/// Sums of one tile job.
struct TileResult {
    sums: Vec<[f64; 3]>,
    clocks: Vec<u64>,
    stats: RenderStats,
}

#[derive(Clone)]
struct PathState {
    pixel: u32,
    rng: Rng,
    throughput: Vec3,
    radiance: Vec3,
    /// Solid-angle pdf of the last BSDF sample, and whether it was a delta lobe.
    prev_pdf: f32,
    prev_delta: bool,
    /// Distance travelled (for the texture-footprint ray cone).
    travelled: f32,
}

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
fn offset_origin(p: Vec3, n: Vec3, dir: Vec3) -> Vec3 {
    let eps = 1e-4 * p.abs().max_element().max(1.0);
    if n.dot(dir) >= 0.0 {
        p + n * eps
    } else {
        p - n * eps
    }
}

/// Renders `scene` through `tracer`.
///
/// Wavefront: work is split into square tiles and passes of a few samples per pixel. One
/// job renders one tile for one pass: a batch of camera rays (every pixel x every sample of
/// the pass) goes to [`Tracer::closest_hits`], every hit is shaded (emission with its MIS
/// weight, one light sample, one BSDF sample), the shadow rays of that step go as one batch
/// to [`Tracer::any_hits`], then the surviving bounce rays form the next batch, until no
/// path is left. Every (pixel, sample) has its own random stream and the film adds the jobs
/// of a pass in tile order, so the image and the counters depend only on the seed, `spp`
/// and `samples_per_pass`, never on the number of worker threads.
///
/// NaN or infinite sample values are dropped (counted in
/// [`RenderStats::nonfinite_samples`]), so none reaches the film.
pub fn render(
    scene: &Scene,
    tracer: &dyn Tracer,
    opts: &RenderOptions,
    control: Control<'_>,
) -> Result<RenderOutput> {
    if opts.spp == 0 {
        return Err(Error::field("spp", "must be at least 1"));
    }
    if opts.max_depth == 0 {
        return Err(Error::field("max_depth", "must be at least 1"));
    }
    if opts.tile_size == 0 || opts.samples_per_pass == 0 {
        return Err(Error::field(
            "tile_size",
            "tile size and pass size must be at least 1",
        ));
    }
    let g = &scene.geometry;
    if g.materials.len() != g.indices.len()
        || g.uvs.len() != g.indices.len()
        || g.normals.len() != g.indices.len()
        || g.materials
            .iter()
            .any(|&m| m as usize >= scene.materials.len())
    {
        return Err(Error::Other(
            "scene geometry and materials do not match".into(),
        ));
    }
    let (w, h) = (scene.film.width, scene.film.height);
    if w == 0 || h == 0 || (w as u64) * (h as u64) > 1 << 28 {
        return Err(Error::field(
            "film",
            format!("{w}x{h} is not a film size this renderer takes"),
        ));
    }
    let start = Instant::now();
    let ctx = Context {
        scene,
        tracer,
        lights: Lights::new(scene),
        opts,
        spread: scene.camera.pixel_spread_angle(),
    };
    let ts = opts.tile_size;
    let tiles: Vec<(u32, u32, u32, u32)> = (0..h.div_ceil(ts))
        .flat_map(|ty| {
            (0..w.div_ceil(ts)).map(move |tx| {
                let (x0, y0) = (tx * ts, ty * ts);
                (x0, y0, (x0 + ts).min(w), (y0 + ts).min(h))
            })
        })
        .collect();
    let passes = opts.spp.div_ceil(opts.samples_per_pass);
    let jobs_total = tiles.len() as u64 * passes as u64;
    let jobs_done = AtomicU64::new(0);
    let mut film = vec![[0.0f64; 3]; (w * h) as usize];
    let mut clocks = vec![
        0u64;
        if opts.record_clocks {
            (w * h) as usize
        } else {
            0
        }
    ];
    let mut stats = RenderStats {
        width: w,
        height: h,
        ..Default::default()
    };
    let mut spp_done = 0u32;
    let mut interrupted = false;
    let cancelled = || control.cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let mut last_pass = Duration::ZERO;
    while spp_done < opts.spp {
        if let (Some(budget), true) = (opts.time_budget, spp_done > 0) {
            if start.elapsed() + last_pass > budget {
                break;
            }
        }
        let pass_start = Instant::now();
        let s0 = spp_done;
        let s1 = (s0 + opts.samples_per_pass).min(opts.spp);
        let results: Vec<Option<TileResult>> = tiles
            .par_iter()
            .map(|&tile| {
                if cancelled() {
                    return None;
                }
                let r = render_tile(&ctx, tile, s0, s1);
                let done = jobs_done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(p) = control.progress {
                    p(RenderProgress {
                        jobs_done: done,
                        jobs_total,
                        spp_done: s0,
                    });
                }
                Some(r)
            })
            .collect();
        if results.iter().any(|r| r.is_none()) || cancelled() {
            interrupted = true;
            break;
        }
        for (&(x0, y0, x1, _), r) in tiles.iter().zip(results.iter().flatten()) {
            let tw = (x1 - x0) as usize;
            for (i, s) in r.sums.iter().enumerate() {
                let idx = (y0 as usize + i / tw) * w as usize + x0 as usize + i % tw;
                for c in 0..3 {
                    film[idx][c] += s[c];
                }
                if opts.record_clocks {
                    clocks[idx] += r.clocks[i];
                }
            }
            stats.merge(&r.stats);
        }
        spp_done = s1;
        last_pass = pass_start.elapsed();
    }
    let inv = if spp_done > 0 {
        1.0 / spp_done as f64
    } else {
        0.0
    };
    let image = Image {
        width: w,
        height: h,
        pixels: film
            .iter()
            .map(|s| {
                Vec3::new(
                    (s[0] * inv) as f32,
                    (s[1] * inv) as f32,
                    (s[2] * inv) as f32,
                )
            })
            .collect(),
    };
    stats.spp = spp_done;
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(RenderOutput {
        image,
        stats,
        camera_clocks: opts
            .record_clocks
            .then(|| clocks.iter().map(|&c| (c as f64 * inv) as f32).collect()),
        interrupted,
    })
}

/// Which ray kind a batch is (index into the per-kind stats).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Camera,
    Bounce,
}

fn render_tile(ctx: &Context, tile: (u32, u32, u32, u32), s0: u32, s1: u32) -> TileResult {
    let (x0, y0, x1, y1) = tile;
    let scene = ctx.scene;
    let w = scene.film.width;
    let tw = x1 - x0;
    let npix = ((x1 - x0) * (y1 - y0)) as usize;
    let mut stats = RenderStats::default();
    let mut sums = vec![[0.0f64; 3]; npix];
    let mut clocks = vec![0u64; if ctx.opts.record_clocks { npix } else { 0 }];

    // Camera rays: sample-major so that each pixel's samples are summed in order.
    let mut paths = Vec::with_capacity(npix * (s1 - s0) as usize);
    let mut rays = Vec::with_capacity(paths.capacity());
    for s in s0..s1 {
        for i in 0..npix as u32 {
            let (px, py) = (x0 + i % tw, y0 + i / tw);
            let mut rng = Rng::for_sample(ctx.opts.seed, (py * w + px) as u64, s as u64);
            let [jx, jy] = rng.next_2d();
            rays.push(scene.camera.ray(px as f32 + jx, py as f32 + jy));
            paths.push(PathState {
                pixel: i,
                rng,
                throughput: Vec3::ONE,
                radiance: Vec3::ZERO,
                prev_pdf: 0.0,
                prev_delta: true,
                travelled: 0.0,
            });
        }
    }
    let mut active: Vec<u32> = (0..paths.len() as u32).collect();
    let mut hits = Vec::new();
    let mut ray_clocks = Vec::new();
    let mut shadow_rays = Vec::new();
    let mut shadow_values: Vec<(u32, Vec3)> = Vec::new();
    let mut occluded = Vec::new();
    let mut depth = 1u32;
    let mut kind = Kind::Camera;
    while !active.is_empty() {
        hits.clear();
        hits.resize(rays.len(), Hit::MISS);
        let ks = match kind {
            Kind::Camera => &mut stats.camera,
            Kind::Bounce => &mut stats.bounce,
        };
        ks.rays += rays.len() as u64;
        ks.batches += 1;
        if kind == Kind::Camera && ctx.opts.record_clocks {
            ray_clocks.clear();
            ray_clocks.resize(rays.len(), 0u32);
            ctx.tracer
                .closest_hits(&rays, &mut hits, Some(&mut ray_clocks), &mut ks.counters);
            for (k, &pi) in active.iter().enumerate() {
                clocks[paths[pi as usize].pixel as usize] += ray_clocks[k] as u64;
            }
        } else {
            ctx.tracer
                .closest_hits(&rays, &mut hits, None, &mut ks.counters);
        }
        shadow_rays.clear();
        shadow_values.clear();
        let mut next_active = Vec::with_capacity(active.len());
        let mut next_rays = Vec::with_capacity(active.len());
        for (k, &pi) in active.iter().enumerate() {
            let path = &mut paths[pi as usize];
            let step = shade(ctx, path, &rays[k], &hits[k], depth, &mut stats);
            if let Some((ray, value)) = step.shadow {
                shadow_rays.push(ray);
                shadow_values.push((pi, value));
            }
            if let Some(ray) = step.next {
                next_active.push(pi);
                next_rays.push(ray);
            }
        }
        if !shadow_rays.is_empty() {
            occluded.clear();
            occluded.resize(shadow_rays.len(), false);
            stats.shadow.rays += shadow_rays.len() as u64;
            stats.shadow.batches += 1;
            ctx.tracer
                .any_hits(&shadow_rays, &mut occluded, &mut stats.shadow.counters);
            for (&(pi, value), &occ) in shadow_values.iter().zip(occluded.iter()) {
                if !occ {
                    paths[pi as usize].radiance += value;
                }
            }
        }
        active = next_active;
        rays = next_rays;
        depth += 1;
        kind = Kind::Bounce;
    }
    for p in &paths {
        let r = p.radiance;
        if !r.is_finite() {
            stats.nonfinite_samples += 1;
            continue;
        }
        let s = &mut sums[p.pixel as usize];
        s[0] += r.x as f64;
        s[1] += r.y as f64;
        s[2] += r.z as f64;
    }
    TileResult {
        sums,
        clocks,
        stats,
    }
}

/// What shading one hit produced.
struct Step {
    /// A shadow ray and the radiance it adds when unoccluded.
    shadow: Option<(Ray, Vec3)>,
    /// The continuation ray.
    next: Option<Ray>,
}

fn shade(
    ctx: &Context,
    path: &mut PathState,
    ray: &Ray,
    hit: &Hit,
    depth: u32,
    stats: &mut RenderStats,
) -> Step {
    let scene = ctx.scene;
    let none = Step {
        shadow: None,
        next: None,
    };
    let dir_len = ray.dir.length();
    let dir = ray.dir / dir_len;
    if !hit.is_hit() {
        let le = scene.environment.radiance(dir);
        let weight = if path.prev_delta {
            1.0
        } else {
            power_heuristic(path.prev_pdf, ctx.lights.pdf_environment(scene, dir))
        };
        path.radiance += path.throughput * le * weight;
        return none;
    }
    let prim = hit.prim_id;
    let g = &scene.geometry;
    let [a, b, c] = g.corners(prim);
    let [b1, b2] = hit.bary;
    let b0 = 1.0 - b1 - b2;
    let p = a * b0 + b * b1 + c * b2;
    let cross = (b - a).cross(c - a);
    let Some(ng) = cross.try_normalize() else {
        return none; // degenerate triangle: nothing to shade
    };
    let wo = -dir;
    let dist = hit.t * dir_len;
    path.travelled += dist;
    let material = &scene.materials[g.materials[prim as usize] as usize];

    // Emission (front side only).
    if hit.front_face && material.is_emissive() {
        let weight = if path.prev_delta {
            1.0
        } else {
            power_heuristic(
                path.prev_pdf,
                ctx.lights.pdf_triangle(scene, prim, dir, dist),
            )
        };
        path.radiance += path.throughput * material.emission * weight;
    }
    if depth >= ctx.opts.max_depth {
        return none;
    }

    // Geometric normal on the side of wo, and the shading normal turned to that side (the
    // geometric one where the interpolated normal is missing or faces away from wo).
    let n = if ng.dot(wo) >= 0.0 { ng } else { -ng };
    let ns = {
        let c = g.normals[prim as usize].map(Vec3::from);
        let s = (c[0] * b0 + c[1] * b1 + c[2] * b2).try_normalize();
        match s.map(|s| if s.dot(n) < 0.0 { -s } else { s }) {
            Some(s) if s.dot(wo) > 1e-4 => s,
            _ => n,
        }
    };
    let cos_o = n.dot(wo);
    let bsdf = match &material.kind {
        MaterialKind::Standard {
            kd,
            kd_texture,
            ks,
            alpha,
        } => Bsdf::Standard {
            kd: *kd * texture_value(ctx, *kd_texture, prim, [b0, b1, b2], path, cos_o, stats),
            ks: *ks,
            alpha: *alpha,
        },
        MaterialKind::Metal {
            f0,
            f0_texture,
            alpha,
        } => Bsdf::Metal {
            f0: *f0 * texture_value(ctx, *f0_texture, prim, [b0, b1, b2], path, cos_o, stats),
            alpha: *alpha,
        },
        MaterialKind::Dielectric { eta } => Bsdf::Dielectric { eta: *eta },
    };

    // Next-event estimation.
    let mut shadow = None;
    let u_light = [
        path.rng.next_f32(),
        path.rng.next_f32(),
        path.rng.next_f32(),
    ];
    if !bsdf.is_delta() {
        if let Some(ls) = ctx.lights.sample(scene, p, u_light) {
            let (f, bsdf_pdf) = bsdf.eval(ns, wo, ls.dir);
            // Reflection only towards the geometric side of wo (no light leaks through
            // shading normals).
            if f.max_element() > 0.0 && ls.dir.dot(n) > 0.0 {
                let weight = power_heuristic(ls.pdf, bsdf_pdf);
                let value = path.throughput * f * ls.radiance * (weight / ls.pdf);
                if value.max_element() > 0.0 && value.is_finite() {
                    let origin = offset_origin(p, ng, ls.dir);
                    let tmax = if ls.dist.is_finite() {
                        (ls.dist * (1.0 - 1e-3)).max(0.0)
                    } else {
                        f32::INFINITY
                    };
                    shadow = Some((Ray::new(origin, ls.dir, 0.0, tmax), value));
                }
            }
        }
    }

    // BSDF sampling.
    let u_bsdf = [
        path.rng.next_f32(),
        path.rng.next_f32(),
        path.rng.next_f32(),
    ];
    let u_rr = path.rng.next_f32();
    let Some(bs) = bsdf.sample(ns, wo, ng.dot(wo) >= 0.0, u_bsdf) else {
        return Step { shadow, next: None };
    };
    // The sampled direction must leave on the geometric side the lobe meant: reflection
    // back to wo's side, transmission through.
    let transmits = bs.delta && bs.wi.dot(ns) < 0.0;
    if (bs.wi.dot(n) > 0.0) == transmits {
        return Step { shadow, next: None };
    }
    path.throughput *= bs.weight;
    path.prev_pdf = bs.pdf;
    path.prev_delta = bs.delta;
    if depth >= 3 {
        let survive = path.throughput.max_element().min(1.0);
        if u_rr >= survive || survive.is_nan() {
            return Step { shadow, next: None };
        }
        path.throughput /= survive;
    }
    if !path.throughput.is_finite() || path.throughput.max_element() <= 0.0 {
        return Step { shadow, next: None };
    }
    let origin = offset_origin(p, ng, bs.wi);
    Step {
        shadow,
        next: Some(Ray::new(origin, bs.wi, 0.0, f32::INFINITY)),
    }
}

/// Trilinear lookup of texture `tex` (linear RGB), or white without one. The mip level
/// comes from a ray cone: footprint width = pixel spread x distance travelled, divided by
/// the cosine at the hit, against the triangle's texel density.
fn texture_value(
    ctx: &Context,
    tex: Option<u32>,
    prim: u32,
    bary: [f32; 3],
    path: &PathState,
    cos_o: f32,
    stats: &mut RenderStats,
) -> Vec3 {
    let Some(tex) = tex else {
        return Vec3::ONE;
    };
    let t = &ctx.scene.textures[tex as usize];
    let g = &ctx.scene.geometry;
    let uvs = g.uvs[prim as usize].map(Vec2::from);
    let uv = uvs[0] * bary[0] + uvs[1] * bary[1] + uvs[2] * bary[2];
    let [a, b, c] = g.corners(prim);
    let world_area = (b - a).cross(c - a).length();
    let uv_area = (uvs[1] - uvs[0]).perp_dot(uvs[2] - uvs[0]).abs();
    let (tw, th) = t.size();
    let texels_per_area = uv_area * (tw * th) as f32 / world_area.max(f32::MIN_POSITIVE);
    let width = ctx.spread * path.travelled / cos_o.abs().max(0.05);
    let lod = if texels_per_area > 0.0 && width > 0.0 {
        (width * texels_per_area.sqrt()).log2()
    } else {
        0.0
    };
    stats.texture_lookups += 1;
    stats.texture_fetches += 8;
    sample_trilinear(t, uv, lod)
}

fn sample_bilinear(t: &Texture, uv: Vec2, mip: u32) -> Vec3 {
    let (w, h) = t.mip_size(mip);
    let x = uv.x * w as f32 - 0.5;
    let y = (1.0 - uv.y) * h as f32 - 0.5; // OBJ v points up, rows go down
    let (fx, fy) = (x.floor(), y.floor());
    let (ax, ay) = (x - fx, y - fy);
    let wrap = |v: f32, n: u32| -> u32 { (v as i64).rem_euclid(n as i64) as u32 };
    let (xi, yi) = (wrap(fx, w), wrap(fy, h));
    let (xj, yj) = ((xi + 1) % w, (yi + 1) % h);
    let texel = |x: u32, y: u32| -> Vec3 {
        let c = t.fetch_rgba8(x, y, mip);
        Vec3::new(
            crate::scene::srgb_to_linear(c[0]),
            crate::scene::srgb_to_linear(c[1]),
            crate::scene::srgb_to_linear(c[2]),
        )
    };
    let top = texel(xi, yi) * (1.0 - ax) + texel(xj, yi) * ax;
    let bottom = texel(xi, yj) * (1.0 - ax) + texel(xj, yj) * ax;
    top * (1.0 - ay) + bottom * ay
}

fn sample_trilinear(t: &Texture, uv: Vec2, lod: f32) -> Vec3 {
    let uv = if uv.is_finite() { uv } else { Vec2::ZERO };
    let max = (t.mip_count() - 1) as f32;
    let lod = if lod.is_finite() {
        lod.clamp(0.0, max)
    } else {
        0.0
    };
    let m0 = lod.floor() as u32;
    let m1 = (m0 + 1).min(t.mip_count() - 1);
    let f = lod - m0 as f32;
    sample_bilinear(t, uv, m0) * (1.0 - f) + sample_bilinear(t, uv, m1) * f
}
