//! One job of a render: one tile for one pass of samples, traced as a wavefront.
//!
//! The job makes a batch of camera rays (every pixel x every sample of the pass,
//! sample-major), traces it with [`Tracer::closest_hits`], shades every hit, traces the
//! shadow rays of that step as one batch with [`Tracer::any_hits`], then the surviving
//! bounce rays as the next batch, until no path is left. Each pixel's samples are summed in
//! sample order, so a job's sums depend only on its tile, its samples and the seed.

use super::rng::Rng;
use super::shade::{PathState, Shader};
use super::RenderStats;
use crate::math::{Hit, Ray};
use crate::memory::Dispatch;
use crate::wave::Tracer;
use glam::Vec3;
use std::ops::Range;

/// A rectangle of the film: pixels `x0..x1` x `y0..y1`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tile {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl Tile {
    /// The tiles of a `width` x `height` film, `size` pixels square (smaller at the right
    /// and bottom edges), row by row.
    pub fn grid(width: u32, height: u32, size: u32) -> Vec<Tile> {
        (0..height.div_ceil(size))
            .flat_map(|ty| {
                (0..width.div_ceil(size)).map(move |tx| {
                    let (x0, y0) = (tx * size, ty * size);
                    Tile {
                        x0,
                        y0,
                        x1: (x0 + size).min(width),
                        y1: (y0 + size).min(height),
                    }
                })
            })
            .collect()
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.x1 - self.x0
    }

    /// Number of pixels.
    pub fn pixel_count(&self) -> usize {
        ((self.x1 - self.x0) * (self.y1 - self.y0)) as usize
    }
}

/// What every job of a render shares.
pub(super) struct Context<'a> {
    pub shader: Shader<'a>,
    pub tracer: &'a dyn Tracer,
    pub seed: u64,
    /// Keep the TD clocks of every camera ray.
    pub record_clocks: bool,
    /// Record every tracer call's node fetches for the memory model.
    pub record_fetches: bool,
}

/// Sums of one tile job, per pixel of the tile (row-major in the tile).
pub(super) struct TileResult {
    /// Radiance summed over the job's samples.
    pub sums: Vec<[f64; 3]>,
    /// TD clocks of the camera rays summed over the job's samples (empty without
    /// `record_clocks`).
    pub clocks: Vec<u64>,
    pub stats: RenderStats,
    /// The node fetches of each tracer call, in call order (empty without
    /// `record_fetches`).
    pub dispatches: Vec<Dispatch>,
    /// For each camera-ray call: its index in `dispatches` and each ray's pixel in the tile.
    pub camera_dispatches: Vec<(usize, Vec<u32>)>,
}

/// Which ray kind a batch is (which of the per-kind stats it counts into).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Camera,
    Bounce,
}

/// Renders samples `samples` of every pixel of `tile`.
pub(super) fn render_tile(ctx: &Context, tile: Tile, samples: Range<u32>) -> TileResult {
    let npix = tile.pixel_count();
    let (paths, mut rays) = camera_paths(ctx, tile, samples);
    let mut job = Job {
        ctx,
        paths,
        stats: RenderStats::default(),
        clocks: vec![0u64; if ctx.record_clocks { npix } else { 0 }],
        hits: Vec::new(),
        ray_clocks: Vec::new(),
        shadow: ShadowBatch::default(),
        dispatches: Vec::new(),
        camera_dispatches: Vec::new(),
    };
    for kind in [
        &mut job.stats.camera,
        &mut job.stats.bounce,
        &mut job.stats.shadow,
    ] {
        kind.counters.fetches.enabled = ctx.record_fetches;
    }
    let mut active: Vec<u32> = (0..job.paths.len() as u32).collect();
    let mut depth = 1u32;
    let mut kind = Kind::Camera;
    while !active.is_empty() {
        job.trace(kind, &rays, &active);
        let (next_active, next_rays) = job.shade(&rays, &active, depth);
        job.trace_shadows();
        active = next_active;
        rays = next_rays;
        depth += 1;
        kind = Kind::Bounce;
    }
    job.finish(npix)
}

/// The camera paths of `tile` for `samples` and their first rays, sample-major so that each
/// pixel's samples are summed in order. Each (pixel, sample) gets its own random stream,
/// whose first two numbers jitter the ray in its pixel.
fn camera_paths(ctx: &Context, tile: Tile, samples: Range<u32>) -> (Vec<PathState>, Vec<Ray>) {
    let camera = &ctx.shader.scene.camera;
    let w = ctx.shader.scene.film.width;
    let tw = tile.width();
    let npix = tile.pixel_count();
    let mut paths = Vec::with_capacity(npix * samples.len());
    let mut rays = Vec::with_capacity(paths.capacity());
    for s in samples {
        for i in 0..npix as u32 {
            let (px, py) = (tile.x0 + i % tw, tile.y0 + i / tw);
            let mut rng = Rng::for_sample(ctx.seed, (py * w + px) as u64, s as u64);
            let [jx, jy] = rng.next_2d();
            rays.push(camera.ray(px as f32 + jx, py as f32 + jy));
            paths.push(PathState::camera(i, rng));
        }
    }
    (paths, rays)
}

/// The shadow rays of one step and the radiance each adds to its path when unoccluded.
#[derive(Default)]
struct ShadowBatch {
    rays: Vec<Ray>,
    /// (path index, radiance) per ray.
    values: Vec<(u32, Vec3)>,
    occluded: Vec<bool>,
}

/// A tile job in flight: its paths, its counts, and buffers reused from step to step.
struct Job<'a> {
    ctx: &'a Context<'a>,
    paths: Vec<PathState>,
    stats: RenderStats,
    /// Camera-ray TD clocks per pixel of the tile (empty without `record_clocks`).
    clocks: Vec<u64>,
    hits: Vec<Hit>,
    ray_clocks: Vec<u32>,
    shadow: ShadowBatch,
    dispatches: Vec<Dispatch>,
    camera_dispatches: Vec<(usize, Vec<u32>)>,
}

impl Job<'_> {
    /// Traces `rays` (one per path in `active`) to their closest hits into `self.hits`,
    /// counting them as `kind`; camera rays also add their TD clocks to their pixels when
    /// clocks are recorded.
    fn trace(&mut self, kind: Kind, rays: &[Ray], active: &[u32]) {
        self.hits.clear();
        self.hits.resize(rays.len(), Hit::MISS);
        let ks = match kind {
            Kind::Camera => &mut self.stats.camera,
            Kind::Bounce => &mut self.stats.bounce,
        };
        ks.rays += rays.len() as u64;
        ks.batches += 1;
        let tracer = self.ctx.tracer;
        if kind == Kind::Camera && self.ctx.record_clocks {
            self.ray_clocks.clear();
            self.ray_clocks.resize(rays.len(), 0u32);
            tracer.closest_hits(
                rays,
                &mut self.hits,
                Some(&mut self.ray_clocks),
                &mut ks.counters,
            );
            for (k, &pi) in active.iter().enumerate() {
                self.clocks[self.paths[pi as usize].pixel as usize] += self.ray_clocks[k] as u64;
            }
        } else {
            tracer.closest_hits(rays, &mut self.hits, None, &mut ks.counters);
        }
        if self.ctx.record_fetches {
            let taken = ks.counters.fetches.take();
            if kind == Kind::Camera {
                let pixels = active
                    .iter()
                    .map(|&pi| self.paths[pi as usize].pixel)
                    .collect();
                self.camera_dispatches.push((self.dispatches.len(), pixels));
            }
            self.dispatches.extend(taken);
        }
    }

    /// Shades the hit of every active path (segment `depth`), collecting the step's
    /// shadow rays; returns the paths that go on and their next rays.
    fn shade(&mut self, rays: &[Ray], active: &[u32], depth: u32) -> (Vec<u32>, Vec<Ray>) {
        self.shadow.rays.clear();
        self.shadow.values.clear();
        let mut next_active = Vec::with_capacity(active.len());
        let mut next_rays = Vec::with_capacity(active.len());
        for (k, &pi) in active.iter().enumerate() {
            let path = &mut self.paths[pi as usize];
            let step = self
                .ctx
                .shader
                .shade(path, &rays[k], &self.hits[k], depth, &mut self.stats);
            if let Some((ray, value)) = step.shadow {
                self.shadow.rays.push(ray);
                self.shadow.values.push((pi, value));
            }
            if let Some(ray) = step.next {
                next_active.push(pi);
                next_rays.push(ray);
            }
        }
        (next_active, next_rays)
    }

    /// Traces the step's shadow rays as one any-hit batch (none when there are none) and
    /// adds each unoccluded ray's radiance to its path.
    fn trace_shadows(&mut self) {
        let shadow = &mut self.shadow;
        if shadow.rays.is_empty() {
            return;
        }
        shadow.occluded.clear();
        shadow.occluded.resize(shadow.rays.len(), false);
        self.stats.shadow.rays += shadow.rays.len() as u64;
        self.stats.shadow.batches += 1;
        self.ctx.tracer.any_hits(
            &shadow.rays,
            &mut shadow.occluded,
            &mut self.stats.shadow.counters,
        );
        if self.ctx.record_fetches {
            let taken = self.stats.shadow.counters.fetches.take();
            self.dispatches.extend(taken);
        }
        for (&(pi, value), &occ) in shadow.values.iter().zip(shadow.occluded.iter()) {
            if !occ {
                self.paths[pi as usize].radiance += value;
            }
        }
    }

    /// Sums every finished path's radiance into its pixel (of `npix`), in path order;
    /// a NaN or infinite radiance is dropped and counted.
    fn finish(mut self, npix: usize) -> TileResult {
        let mut sums = vec![[0.0f64; 3]; npix];
        for p in &self.paths {
            let r = p.radiance;
            if !r.is_finite() {
                self.stats.nonfinite_samples += 1;
                continue;
            }
            let s = &mut sums[p.pixel as usize];
            s[0] += r.x as f64;
            s[1] += r.y as f64;
            s[2] += r.z as f64;
        }
        TileResult {
            sums,
            clocks: self.clocks,
            stats: self.stats,
            dispatches: self.dispatches,
            camera_dispatches: self.camera_dispatches,
        }
    }
}
