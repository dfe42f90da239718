//! Rendering a scene: the options, the passes over the film, and what a render returns.
//!
//! Work is split into square tiles and passes of a few samples per pixel; one job renders
//! one tile for one pass as a wavefront ([`super::tile`]). The film adds the jobs of a pass
//! in tile order, so the image depends only on the seed, the sample count and the pass
//! size, never on the number of worker threads.

use super::film::Film;
use super::shade::{InstanceFrame, Shader};
use super::tile::{render_tile, Context, Tile, TileResult};
use super::{Image, RenderStats};
use crate::memory::{Dispatch, Machine, MemoryModel, MemoryStats};
use crate::scene::{BlasShape, Geometry, Lights, Scene};
use crate::shard::Shard;
use crate::wave::Tracer;
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;
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
    /// Run the memory model of this machine over every tracer call (each pass's calls as one
    /// stream of waves, tile by tile), for the stats and, with `record_clocks`, the modelled
    /// clocks per camera ray.
    pub memory: Option<Machine>,
    /// Render only the film's pixels `x0..x1` x `y0..y1` (a crop window; see
    /// [`crop_window`]); the output image is that rectangle.
    pub crop: Option<[u32; 4]>,
    /// Render only this shard's tiles (round-robin over the tiles of the image, see
    /// [`Shard::owns`]); the other pixels stay black and [`RenderOutput::tiles`] lists the
    /// ones rendered. Every pixel is the same as in the whole render.
    pub shard: Option<Shard>,
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
            memory: None,
            crop: None,
            shard: None,
        }
    }
}

/// Progress of a render, reported after every finished tile.
#[derive(Clone, Copy, Debug)]
pub struct RenderProgress {
    /// Tile jobs finished so far, over all passes.
    pub jobs_done: u64,
    /// Tile jobs to do if every pass runs.
    pub jobs_total: u64,
    /// Pixel samples finished so far (a finished job adds its tile's pixels times its
    /// pass's samples per pixel).
    pub samples_done: u64,
    /// Pixel samples of the whole render: pixels x samples per pixel (with a time budget,
    /// the most it may take).
    pub samples_total: u64,
    /// Samples per pixel of every pixel so far (whole passes).
    pub spp_done: u32,
    /// Samples per pixel asked for.
    pub spp_total: u32,
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
    /// The memory model's measurements (with [`RenderOptions::memory`]).
    pub memory: Option<MemoryStats>,
    /// Mean modelled clocks of each pixel's camera rays with the memory model (with
    /// [`RenderOptions::memory`] and `record_clocks`).
    pub camera_memory_clocks: Option<Vec<f32>>,
    /// The tiles rendered, as `[x0, x1, y0, y1]` pixel ranges of the output image (every
    /// tile without [`RenderOptions::shard`]).
    pub tiles: Vec<[u32; 4]>,
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
    check_inputs(scene, opts)?;
    let (w, h) = (scene.film.width, scene.film.height);
    let start = Instant::now();
    let ctx = Context {
        shader: Shader {
            scene,
            lights: Lights::new(scene),
            frames: scene.instances.iter().map(InstanceFrame::new).collect(),
            max_depth: opts.max_depth,
            spread: scene.camera.pixel_spread_angle(),
        },
        tracer,
        seed: opts.seed,
        record_clocks: opts.record_clocks,
        record_fetches: opts.memory.is_some(),
    };
    let mut model = opts.memory.as_ref().map(MemoryModel::new);
    let mut memory_clocks = vec![
        0.0f64;
        if opts.record_clocks && model.is_some() {
            (w * h) as usize
        } else {
            0
        }
    ];
    let crop = opts.crop.unwrap_or([0, w, 0, h]);
    let [cx0, cx1, cy0, cy1] = crop;
    if !(cx0 < cx1 && cx1 <= w && cy0 < cy1 && cy1 <= h) {
        return Err(Error::field(
            "crop",
            format!("pixels {cx0}..{cx1} x {cy0}..{cy1} are not a rectangle of the {w}x{h} film"),
        ));
    }
    // The film's tiles cut to the crop window: each pixel keeps its own random stream, so a
    // cropped render's pixels are the full render's.
    let tiles: Vec<Tile> = Tile::grid(w, h, opts.tile_size)
        .into_iter()
        .filter_map(|t| {
            let t = Tile {
                x0: t.x0.max(cx0),
                x1: t.x1.min(cx1),
                y0: t.y0.max(cy0),
                y1: t.y1.min(cy1),
            };
            (t.x0 < t.x1 && t.y0 < t.y1).then_some(t)
        })
        .enumerate()
        .filter(|(k, _)| opts.shard.is_none_or(|s| s.owns(*k)))
        .map(|(_, t)| t)
        .collect();
    let passes = opts.spp.div_ceil(opts.samples_per_pass);
    let jobs = Jobs {
        control,
        done: AtomicU64::new(0),
        total: tiles.len() as u64 * passes as u64,
        samples_done: AtomicU64::new(0),
        samples_total: tiles
            .iter()
            .map(|t| u64::from(t.x1 - t.x0) * u64::from(t.y1 - t.y0))
            .sum::<u64>()
            * u64::from(opts.spp),
        spp_total: opts.spp,
    };
    let mut film = Film::new(w, h, opts.record_clocks);
    let mut stats = RenderStats {
        width: w,
        height: h,
        ..Default::default()
    };
    let mut spp_done = 0u32;
    let mut interrupted = false;
    let mut last_pass = Duration::ZERO;
    while spp_done < opts.spp {
        if let (Some(budget), true) = (opts.time_budget, spp_done > 0) {
            if start.elapsed() + last_pass > budget {
                break;
            }
        }
        let pass_start = Instant::now();
        let samples = spp_done..(spp_done + opts.samples_per_pass).min(opts.spp);
        let Some(results) = jobs.run_pass(&ctx, &tiles, samples.clone()) else {
            interrupted = true;
            break;
        };
        for (tile, r) in tiles.iter().zip(&results) {
            film.add(tile, r);
            stats.merge(&r.stats);
        }
        if let Some(model) = &mut model {
            run_pass_model(model, &tiles, &results, w, &mut memory_clocks);
        }
        spp_done = samples.end;
        last_pass = pass_start.elapsed();
    }
    let (image, camera_clocks) = film.resolve(spp_done);
    let cut = |values: &[f32]| -> Vec<f32> {
        (cy0..cy1)
            .flat_map(|y| (cx0..cx1).map(move |x| (y * w + x) as usize))
            .map(|i| values[i])
            .collect()
    };
    let image = Image {
        width: cx1 - cx0,
        height: cy1 - cy0,
        pixels: (cy0..cy1)
            .flat_map(|y| (cx0..cx1).map(move |x| (y * w + x) as usize))
            .map(|i| image.pixels[i])
            .collect(),
    };
    let camera_clocks = camera_clocks.map(|c| cut(&c));
    stats.width = cx1 - cx0;
    stats.height = cy1 - cy0;
    stats.spp = spp_done;
    stats.seconds = start.elapsed().as_secs_f64();
    let camera_memory_clocks = (!memory_clocks.is_empty()).then(|| {
        let inv = if spp_done > 0 {
            1.0 / spp_done as f64
        } else {
            0.0
        };
        let mean: Vec<f32> = memory_clocks.iter().map(|&c| (c * inv) as f32).collect();
        cut(&mean)
    });
    Ok(RenderOutput {
        image,
        stats,
        camera_clocks,
        interrupted,
        memory: model.as_ref().map(MemoryModel::finish),
        camera_memory_clocks,
        tiles: tiles
            .iter()
            .map(|t| [t.x0 - cx0, t.x1 - cx0, t.y0 - cy0, t.y1 - cy0])
            .collect(),
    })
}

/// The film pixels of a crop window given as fractions of the film, as pbrt's: `x0..x1` x
/// `y0..y1` in [0, 1], pixel rows from the top; the window covers pixels
/// `ceil(w x0)..ceil(w x1)` x `ceil(h y0)..ceil(h y1)`. `None` when that is empty or the
/// fractions are not in order within [0, 1].
pub fn crop_window(width: u32, height: u32, window: [f32; 4]) -> Option<[u32; 4]> {
    let [x0, x1, y0, y1] = window;
    let ordered = |a: f32, b: f32| (0.0..=1.0).contains(&a) && (0.0..=1.0).contains(&b) && a < b;
    if !(ordered(x0, x1) && ordered(y0, y1)) {
        return None;
    }
    // In f32, as pbrt computes it (0.1 x 30 is 3 there, not a hair above).
    let px = |f: f32, n: u32| ((f * n as f32).ceil() as u32).min(n);
    let r = [px(x0, width), px(x1, width), px(y0, height), px(y1, height)];
    (r[0] < r[1] && r[2] < r[3]).then_some(r)
}

/// Runs one pass's tracer calls through the memory model as one stream of waves (tile by
/// tile, each tile's calls in order); with `pixel_clocks` (one per film pixel of a film
/// `width` wide), adds each camera ray's modelled clocks to its pixel.
fn run_pass_model(
    model: &mut MemoryModel,
    tiles: &[Tile],
    results: &[TileResult],
    width: u32,
    pixel_clocks: &mut [f64],
) {
    let mut pass = Dispatch::default();
    // Per camera call: its first ray in `pass`, its tile and its rays' pixels.
    let mut cameras: Vec<(u64, &Tile, &[u32])> = Vec::new();
    for (tile, r) in tiles.iter().zip(results) {
        let mut camera = r.camera_dispatches.iter().peekable();
        for (j, d) in r.dispatches.iter().enumerate() {
            let base = pass.waves * d.width as u64;
            if let Some((_, pixels)) = camera.next_if(|(k, _)| *k == j) {
                cameras.push((base, tile, pixels));
            }
            pass.append(d);
        }
    }
    if pixel_clocks.is_empty() {
        model.run(&pass, None);
        return;
    }
    let mut clocks = vec![0.0f64; (pass.waves * pass.width as u64) as usize];
    model.run(&pass, Some(&mut clocks));
    for (base, tile, pixels) in cameras {
        for (k, &p) in pixels.iter().enumerate() {
            let (x, y) = (tile.x0 + p % tile.width(), tile.y0 + p / tile.width());
            pixel_clocks[(y * width + x) as usize] += clocks[base as usize + k];
        }
    }
}

/// Refuses options and scenes the renderer cannot take: zero samples, depth, tile or pass
/// size, per-triangle attributes that do not match the triangles or name a missing
/// material, and an empty or oversized film.
fn check_inputs(scene: &Scene, opts: &RenderOptions) -> Result<()> {
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
    let materials = scene.materials.len();
    let geometry_ok = |g: &Geometry| {
        g.materials.len() == g.indices.len()
            && g.uvs.len() == g.indices.len()
            && g.normals.len() == g.indices.len()
            && g.materials.iter().all(|&m| (m as usize) < materials)
    };
    let blases_ok = scene.blases.iter().all(|b| match &b.shape {
        BlasShape::Triangles(g) => geometry_ok(g),
        BlasShape::Spheres(s) => s.iter().all(|s| (s.material as usize) < materials),
    });
    let instances_ok = scene
        .instances
        .iter()
        .all(|i| (i.blas as usize) < scene.blases.len());
    if !(geometry_ok(&scene.geometry) && blases_ok && instances_ok) {
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
    Ok(())
}

/// The tile jobs of a render: cancellation, and progress after every finished job.
struct Jobs<'a> {
    control: Control<'a>,
    /// Jobs finished so far, over all passes.
    done: AtomicU64,
    /// Jobs to do if every pass runs.
    total: u64,
    /// Pixel samples finished so far, and of the whole render.
    samples_done: AtomicU64,
    samples_total: u64,
    /// Samples per pixel asked for.
    spp_total: u32,
}

impl Jobs<'_> {
    fn cancelled(&self) -> bool {
        self.control
            .cancel
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Renders `samples` of every tile on the thread pool; the results in tile order, or
    /// `None` when the render was cancelled during the pass (a job not started once
    /// cancelled, or a cancel seen after the last job).
    fn run_pass(
        &self,
        ctx: &Context,
        tiles: &[Tile],
        samples: Range<u32>,
    ) -> Option<Vec<TileResult>> {
        let results: Vec<Option<TileResult>> = tiles
            .par_iter()
            .map(|&tile| {
                if self.cancelled() {
                    return None;
                }
                let r = render_tile(ctx, tile, samples.clone());
                let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
                let pixels = u64::from(tile.x1 - tile.x0) * u64::from(tile.y1 - tile.y0);
                let added = pixels * u64::from(samples.end - samples.start);
                let samples_done = self.samples_done.fetch_add(added, Ordering::Relaxed) + added;
                if let Some(p) = self.control.progress {
                    p(RenderProgress {
                        jobs_done: done,
                        jobs_total: self.total,
                        samples_done,
                        samples_total: self.samples_total,
                        // Every pixel has the pass's samples once its last tile is done.
                        spp_done: if done.is_multiple_of(tiles.len() as u64) {
                            samples.end
                        } else {
                            samples.start
                        },
                        spp_total: self.spp_total,
                    });
                }
                Some(r)
            })
            .collect();
        if results.iter().any(|r| r.is_none()) || self.cancelled() {
            return None;
        }
        results.into_iter().collect()
    }
}
