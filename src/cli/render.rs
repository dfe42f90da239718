//! `wavetrace render SCENE --out FILE`: path-trace a scene through the wave model.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wavetrace::hw::peak::ConsoleConfig;
use wavetrace::memory::MemoryReport;
use wavetrace::outfile::{OutputId, OutputSet};
use wavetrace::render::RenderStats;
use wavetrace::render::{
    self, build_wave_tracer, heatmap_rgb8, Control, ImageFormat, RenderOptions, RenderOutput,
    RenderProgress,
};
use wavetrace::scene::Scene;
use wavetrace::shard::{Digest, JobId, PartHeader, PartKind, Shard};
use wavetrace::traverse::{Strategy, WaveTracerConfig};
use wavetrace::{Error, Result};

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Scene file (TOML), or a glTF file (.gltf, .glb) rendered as a scene: its camera,
    /// materials and instances, on a film 512 pixels high (see --size).
    pub scene: PathBuf,
    /// Output image: .png (sRGB, 8 bit) or .exr (linear, f32).
    #[arg(short = 'o', long)]
    pub out: PathBuf,
    /// Samples per pixel (default: the scene's; with --time, the most to take).
    #[arg(long)]
    pub spp: Option<u32>,
    /// Time budget in seconds: no new pass of samples starts once it would be exceeded.
    #[arg(long)]
    pub time: Option<f64>,
    /// (The image does not depend on the thread count.)
    #[command(flatten)]
    pub threads: super::flags::ThreadsArg,
    #[command(flatten)]
    pub seed: super::flags::SeedArg,
    /// Maximum path segments (default: the scene's).
    #[arg(long)]
    pub max_depth: Option<u32>,
    #[command(flatten)]
    pub wave: super::flags::WaveArg,
    #[command(flatten)]
    pub target: super::flags::TargetArg,
    /// Traversal shader of every ray: full-stack, restart-N, walkback-N or stackless-trail
    /// (the names `profile` uses). The image does not depend on it; the counters do.
    #[arg(long, default_value = "full-stack", value_parser = super::parse_strategy)]
    pub traversal: Strategy,
    /// PNG exposure in stops (the pixel values are multiplied by 2^exposure).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub exposure: f32,
    /// Film size WxH instead of the scene's (the same camera and vertical field of view).
    #[arg(long, value_name = "WxH")]
    pub size: Option<String>,
    /// Render only a crop window, as pbrt's: x0,x1,y0,y1 as fractions of the film in [0, 1]
    /// (rows from the top); the image is the pixels ceil(W x0)..ceil(W x1) x
    /// ceil(H y0)..ceil(H y1), each the same as in the whole render.
    #[arg(long, value_name = "X0,X1,Y0,Y1", allow_hyphen_values = true)]
    pub crop: Option<String>,
    /// The wave-model counters of the whole render (per ray kind).
    #[command(flatten)]
    pub json: super::flags::JsonArg,
    /// Write a PNG heatmap of each pixel's camera rays: their mean modelled clocks with the
    /// memory model (`--memory on`), else their mean TD clocks.
    #[arg(long)]
    pub heatmap: Option<PathBuf>,
    // `--ray-flags` are the shadow rays' (besides the accept-first-hit that makes them
    // any-hit queries); `--mask` is every ray's instance inclusion mask.
    #[command(flatten)]
    pub dxr: super::input::DxrArgs,
    /// The memory model runs when `--stats` or `--heatmap` is given: its figures go to the
    /// summary and the stats, and the heatmap shows its modelled clocks.
    #[command(flatten)]
    pub memory: super::input::MemoryArgs,
    /// (A render part is an EXR of the shard's tiles, the others black, with the job, the
    /// shard and the counters in its header; `merge` writes the image and `--json`.)
    #[command(flatten)]
    pub shard: super::flags::ShardArgs,
}

fn png_path(path: &Path, flag: &str) -> Result<()> {
    match ImageFormat::from_path(path) {
        Ok(ImageFormat::Png) => Ok(()),
        _ => Err(Error::field(
            flag,
            format!("{}: must be a .png file", path.display()),
        )),
    }
}

pub fn run(args: RenderArgs) -> Result<i32> {
    let console = check_args(&args)?;
    let shard = args.shard.resolve()?;
    if shard.is_some() {
        check_shard_args(&args)?;
    }
    let mut outputs = OutputSet::new();
    let ids = OutputIds {
        out: outputs.file("--out", &args.out)?,
        stats: args.json.register(&mut outputs)?,
        heatmap: (args.heatmap.as_deref())
            .map(|p| outputs.file("--heatmap", p))
            .transpose()?,
    };
    let shadow_ray_flags = args.dxr.flags()?;
    let instance_mask = args.dxr.mask()?;
    let wave = args.wave.wave;
    let mut scene = Scene::load(&args.scene)?;
    if let Some(size) = &args.size {
        let (width, height) = super::profile::parse_size(size)?;
        scene = scene.with_film_size(width, height)?;
    }
    for w in &scene.warnings {
        eprintln!("warning: {w}");
    }
    let pool = args.threads.pool()?;
    let config = WaveTracerConfig {
        wave,
        console,
        strategy: args.traversal,
        shadow_ray_flags,
        instance_mask,
        ..WaveTracerConfig::default()
    };
    let (tracer, built) = pool.install(|| build_wave_tracer(&scene, config))?;
    super::interrupt::check(&outputs)?;
    let instances = if built.instances > 0 {
        format!(
            " in {} BLASes, {} instances",
            scene.blases.len(),
            built.instances
        )
    } else {
        String::new()
    };
    eprintln!(
        "{}: {} triangles{instances}, {} materials, {} textures; BVH {} bytes in {:.2} s",
        args.scene.display(),
        built.blas_triangles,
        scene.materials.len(),
        scene.textures.len(),
        tracer.image_len(),
        built.build_seconds + built.encode_seconds
    );
    let mut opts = render_options(&args, &scene);
    if let Some(text) = &args.crop {
        opts.crop = Some(parse_crop(text, scene.film.width, scene.film.height)?);
    }
    if args.json.json.is_some() || args.heatmap.is_some() {
        opts.memory = args.memory.machine(&console)?;
    }
    opts.shard = shard;
    let bar = std::io::stderr().is_terminal().then(progress_bar);
    let budget_note = match args.time {
        Some(t) => format!(" (stops at the {t} s budget)"),
        None => String::new(),
    };
    let progress = |p: RenderProgress| {
        if let Some(bar) = &bar {
            // Jobs finish on several threads: the count only moves forward.
            bar.set_length(p.samples_total);
            bar.set_position(p.samples_done.max(bar.position()));
            bar.set_message(format!(
                "{} of {} spp in every pixel{}",
                p.spp_done, p.spp_total, budget_note
            ));
        }
    };
    let control = Control {
        // Checked between tiles.
        cancel: Some(super::interrupt::flag()),
        progress: Some(&progress),
    };
    let out = pool.install(|| render::render(&scene, &tracer, &opts, control))?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    super::interrupt::check(&outputs)?;
    match shard {
        Some(shard) => {
            let id = job_id(&args, &scene, &opts, &tracer)?;
            let part = RenderPart {
                meta: StatsMeta {
                    scene: args.scene.display().to_string(),
                    wave: args.wave.wave.lanes(),
                    target: console.cli_name.to_string(),
                    seed: args.seed.seed,
                },
                exposure: args.exposure,
                width: out.image.width,
                height: out.image.height,
                pixels: tiles_digest(&out.image, &out.tiles),
                tiles: out.tiles.clone(),
                stats: out.stats.clone(),
            };
            print_summary(&args.out, &out.stats);
            eprintln!(
                "part {shard} of job {} ({}): {} tiles",
                id.job,
                id.summary,
                out.tiles.len()
            );
            write_part(&mut outputs, ids.out, &id, shard, &part, &out.image)?;
        }
        None => write_outputs(&args, console, &out, &mut outputs, &ids)?,
    }
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    Ok(0)
}

/// Refuses what a render shard cannot do: its part is an EXR, its stats and heatmap come
/// from `merge` (the memory model needs every tile's fetches in one stream, so a shard does
/// not run it), and a time budget would make shards stop at different sample counts.
fn check_shard_args(args: &RenderArgs) -> Result<()> {
    if ImageFormat::from_path(&args.out)? != ImageFormat::Exr {
        return Err(Error::field(
            "--out",
            format!(
                "{}: a render shard writes an EXR part; give a .exr name",
                args.out.display()
            ),
        ));
    }
    let not = super::flags::not_with_shard;
    args.json.refuse_with_shard()?;
    not(
        args.heatmap.is_some(),
        "--heatmap",
        "render unsharded for a heatmap",
    )?;
    not(
        args.time.is_some(),
        "--time",
        "give --spp, so that every shard takes the same samples",
    )
}

/// The fields of the `--json` stats besides the counts.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StatsMeta {
    pub scene: String,
    pub wave: usize,
    pub target: String,
    pub seed: u64,
}

/// The `--json` stats of a render.
pub fn stats_json(
    meta: &StatsMeta,
    s: &RenderStats,
    memory: Option<&MemoryReport>,
) -> serde_json::Value {
    let mut total = s.camera.counters.clone();
    total.merge(&s.bounce.counters);
    total.merge(&s.shadow.counters);
    serde_json::json!({
        "scene": meta.scene,
        "wave": meta.wave,
        "target": meta.target,
        "seed": meta.seed,
        "stats": s,
        "total_counters": total,
        "memory": memory,
    })
}

/// Prints the summary line of a render written to `out`.
pub fn print_summary(out: &Path, s: &RenderStats) {
    let rays = s.total_rays();
    eprintln!(
        "{} ({}x{}, {} spp) in {:.2} s: {} rays ({} camera, {} bounce, {} shadow), {:.2} Mrays/s, {} texture fetches",
        out.display(),
        s.width,
        s.height,
        s.spp,
        s.seconds,
        rays,
        s.camera.rays,
        s.bounce.rays,
        s.shadow.rays,
        rays as f64 / s.seconds.max(1e-9) / 1e6,
        s.texture_fetches
    );
}

/// What a render part records besides its pixels.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RenderPart {
    pub meta: StatsMeta,
    /// The PNG exposure of the job (a merge to PNG applies it).
    pub exposure: f32,
    /// The whole image's size.
    pub width: u32,
    pub height: u32,
    /// The tiles of this shard, `[x0, x1, y0, y1]` in image pixels.
    pub tiles: Vec<[u32; 4]>,
    /// [`tiles_digest`] of the part's pixels, to catch a damaged file.
    pub pixels: String,
    /// The shard's counts (its `seconds` are its own wall time).
    pub stats: RenderStats,
}

/// The EXR header attribute that holds a render part's record (the part header as JSON).
pub const PART_ATTRIBUTE: &str = "wavetrace.part";

/// A digest of the bits of `image`'s pixels in `tiles`, tile by tile.
pub fn tiles_digest(image: &wavetrace::render::Image, tiles: &[[u32; 4]]) -> String {
    let mut d = Digest::new();
    for &[x0, x1, y0, y1] in tiles {
        for y in y0..y1 {
            for x in x0..x1 {
                d.bytes(bytemuck::cast_slice(&image.at(x, y).to_array()));
            }
        }
    }
    d.hex()
}

/// The identity of a render job: the scene's contents (geometry, materials, textures,
/// camera, film), the BVH image, and every option that changes a pixel or a counter.
fn job_id(
    args: &RenderArgs,
    scene: &Scene,
    opts: &RenderOptions,
    tracer: &wavetrace::traverse::WaveTracer,
) -> Result<JobId> {
    use std::fmt::Write;
    let mut d = Digest::new();
    scene.add_to_digest(&mut d)?;
    d.field("bvh", tracer.image_bytes());
    let _ = write!(
        d,
        "spp {} depth {} seed {} crop {:?} wave{} {} {} shadow flags {:?} mask {:?} exposure {}",
        opts.spp,
        opts.max_depth,
        opts.seed,
        opts.crop,
        args.wave.wave.lanes(),
        args.target.console().cli_name,
        args.traversal.name(),
        args.dxr.flags()?,
        args.dxr.mask()?,
        args.exposure
    );
    Ok(JobId::new(
        PartKind::Render,
        d,
        format!("render {} --spp {}", args.scene.display(), opts.spp),
    ))
}

/// Writes a render part: `image` as an EXR whose header carries the part record.
fn write_part(
    outputs: &mut OutputSet,
    out: OutputId,
    id: &JobId,
    shard: Shard,
    part: &RenderPart,
    image: &wavetrace::render::Image,
) -> Result<()> {
    let header = PartHeader {
        id: id.clone(),
        shard,
        payload_bytes: 0,
        data: part,
    };
    let record = serde_json::to_string(&header)
        .map_err(|e| Error::Other(format!("cannot encode the part record: {e}")))?;
    let shard_text = shard.to_string();
    let attributes = [
        (PART_ATTRIBUTE, record.as_str()),
        ("wavetrace.job", id.job.as_str()),
        ("wavetrace.summary", id.summary.as_str()),
        ("wavetrace.shard", shard_text.as_str()),
    ];
    outputs.write(out, |w| render::encode_exr_with(w, image, &attributes))
}

/// Checks the options before any work: the output kinds, the console, and the ranges of
/// `--time`, `--exposure`, `--spp` and `--max-depth`. Returns the console.
fn check_args(args: &RenderArgs) -> Result<ConsoleConfig> {
    ImageFormat::from_path(&args.out)?;
    if let Some(h) = &args.heatmap {
        png_path(h, "--heatmap")?;
    }
    let console = args.target.console();
    if let Some(t) = args.time {
        if !(t.is_finite() && t > 0.0) {
            return Err(Error::field(
                "--time",
                format!("{t}: must be a positive number of seconds"),
            ));
        }
    }
    // Checked before the render, not only when the image is written.
    wavetrace::render::check_exposure("--exposure", args.exposure)?;
    if args.spp == Some(0) {
        return Err(Error::field("--spp", "must be at least 1"));
    }
    if args.max_depth == Some(0) {
        return Err(Error::field("--max-depth", "must be at least 1"));
    }
    Ok(console)
}

/// `--crop x0,x1,y0,y1` on a `width` x `height` film: its pixel rectangle.
fn parse_crop(text: &str, width: u32, height: u32) -> Result<[u32; 4]> {
    let v: Vec<f32> = text
        .split(',')
        .map(|x| x.trim().parse::<f32>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::field("--crop", format!("`{text}`: not 4 comma-separated numbers")))?;
    let window: [f32; 4] = v
        .try_into()
        .map_err(|_| Error::field("--crop", format!("`{text}`: not 4 comma-separated numbers")))?;
    render::crop_window(width, height, window).ok_or_else(|| {
        Error::field(
            "--crop",
            format!(
                "`{text}`: needs 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1, covering at least one \
                 pixel of the {width}x{height} film"
            ),
        )
    })
}

/// The scene's render options with the command line's seed, depth, samples and time.
fn render_options(args: &RenderArgs, scene: &Scene) -> RenderOptions {
    let mut opts = RenderOptions::for_scene(scene);
    opts.seed = args.seed.seed;
    opts.record_clocks = args.heatmap.is_some();
    if let Some(d) = args.max_depth {
        opts.max_depth = d;
    }
    match (args.spp, args.time) {
        (Some(spp), _) => opts.spp = spp,
        (None, Some(_)) => opts.spp = 1 << 16,
        (None, None) => {}
    }
    if let Some(t) = args.time {
        opts.time_budget = Some(Duration::from_secs_f64(t));
    }
    opts
}

/// The progress bar of a render on a terminal.
fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {percent}% {human_pos}/{human_len} samples, {msg} (eta {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// The registered outputs of a render.
struct OutputIds {
    out: OutputId,
    stats: Option<OutputId>,
    heatmap: Option<OutputId>,
}

/// Writes the image, the summary line, and the `--stats` and `--heatmap` files, each to
/// its temporary file in `outputs`.
fn write_outputs(
    args: &RenderArgs,
    console: ConsoleConfig,
    out: &RenderOutput,
    outputs: &mut OutputSet,
    ids: &OutputIds,
) -> Result<()> {
    let format = ImageFormat::from_path(&args.out)?;
    outputs.write(ids.out, |w| {
        render::encode_image(w, format, &out.image, args.exposure)
    })?;
    let s = &out.stats;
    print_summary(&args.out, s);
    let mut total = s.camera.counters.clone();
    total.merge(&s.bounce.counters);
    total.merge(&s.shadow.counters);
    // The memory model runs each pass's calls as one stream of waves over every CU, so
    // the TD-only figure beside it is the balanced one (every TD's clocks spread evenly),
    // not the busiest TD of each call.
    let memory = out.memory.as_ref().map(|m| {
        let td_only = if total.td_clocks > 0 {
            total.rays as f64 * console.tds() as f64 * console.clock_hz() / total.td_clocks as f64
        } else {
            0.0
        };
        MemoryReport::new(m, td_only)
    });
    if let Some(m) = &memory {
        eprint!("{}", m.table());
    }
    if let Some(id) = ids.stats {
        let meta = StatsMeta {
            scene: args.scene.display().to_string(),
            wave: args.wave.wave.lanes(),
            target: console.cli_name.to_string(),
            seed: args.seed.seed,
        };
        let json = stats_json(&meta, s, memory.as_ref());
        super::write_json(outputs, id, &json)?;
    }
    let heatmap = match (&out.camera_memory_clocks, &out.camera_clocks) {
        (Some(c), _) => Some((c, "MEAN MODELLED CLOCKS PER CAMERA RAY (MEMORY MODEL)")),
        (None, Some(c)) => Some((c, "MEAN TD CLOCKS PER CAMERA RAY")),
        (None, None) => None,
    };
    if let (Some(id), Some((clocks, title))) = (ids.heatmap, heatmap) {
        let (w, h, rgb) = heatmap_rgb8(clocks, s.width, s.height, title);
        outputs.write(id, |wr| render::encode_png(wr, w, h, &rgb))?;
    }
    Ok(())
}

/// Merges render parts: each part's tiles into one image (every pixel from exactly one
/// part), its counts summed; writes the image (PNG with the job's exposure, or EXR) and
/// the `--json` stats of the unsharded render (its `seconds` the sum of the shards').
pub fn merge(
    parts: &super::merge::Parts,
    args: &super::merge::MergeArgs,
    outputs: &mut OutputSet,
    ids: &super::merge::MergeOutputs,
) -> Result<()> {
    use super::merge::Part;
    let format = ImageFormat::from_path(&args.out)?;
    let mut first: Option<&RenderPart> = None;
    let mut image = wavetrace::render::Image {
        width: 0,
        height: 0,
        pixels: Vec::new(),
    };
    let mut covered: Vec<bool> = Vec::new();
    let mut stats = RenderStats::default();
    for (path, part) in parts.paths.iter().zip(&parts.parts) {
        let Part::Render {
            image: pixels,
            header,
        } = part
        else {
            return Err(Error::Other(format!(
                "{}: not a render part",
                path.display()
            )));
        };
        let data = &header.data;
        let bad = |message: String| Error::Parse {
            path: path.clone(),
            line: 0,
            message,
        };
        match first {
            None => {
                image.width = data.width;
                image.height = data.height;
                image.pixels =
                    vec![glam::Vec3::ZERO; (data.width as usize) * (data.height as usize)];
                covered = vec![false; image.pixels.len()];
                stats.width = data.stats.width;
                stats.height = data.stats.height;
                stats.spp = data.stats.spp;
                first = Some(data);
            }
            Some(f) => {
                // The job digest covers the rest; the paths in `meta` may differ from node
                // to node, and the first part's are kept.
                if (data.width, data.height, data.stats.spp) != (f.width, f.height, f.stats.spp)
                    || data.exposure.to_bits() != f.exposure.to_bits()
                {
                    return Err(bad(format!(
                        "a {}x{} image at {} spp, not the {}x{} at {} spp of the other parts",
                        data.width, data.height, data.stats.spp, f.width, f.height, f.stats.spp
                    )));
                }
            }
        }
        if (pixels.width, pixels.height) != (data.width, data.height) {
            return Err(bad(format!(
                "its pixels are {}x{}, its record says {}x{}",
                pixels.width, pixels.height, data.width, data.height
            )));
        }
        for &[x0, x1, y0, y1] in &data.tiles {
            if !(x0 < x1 && x1 <= data.width && y0 < y1 && y1 <= data.height) {
                return Err(bad(format!(
                    "tile {x0}..{x1} x {y0}..{y1} is not in the {}x{} image",
                    data.width, data.height
                )));
            }
        }
        if tiles_digest(pixels, &data.tiles) != data.pixels {
            return Err(bad(
                "damaged part: its pixels do not match the digest in its header".into(),
            ));
        }
        for &[x0, x1, y0, y1] in &data.tiles {
            for y in y0..y1 {
                for x in x0..x1 {
                    let i = (y * data.width + x) as usize;
                    if std::mem::replace(&mut covered[i], true) {
                        return Err(bad(format!("pixel ({x}, {y}) is in another part too")));
                    }
                    image.pixels[i] = pixels.pixels[i];
                }
            }
        }
        stats.merge(&data.stats);
        stats.seconds += data.stats.seconds;
    }
    let Some(first) = first else {
        return Err(Error::Other("merge: no render parts".into()));
    };
    if let Some(i) = covered.iter().position(|&c| !c) {
        return Err(Error::Other(format!(
            "the parts leave pixel ({}, {}) of the {}x{} image unrendered",
            i as u32 % first.width,
            i as u32 / first.width,
            first.width,
            first.height
        )));
    }
    outputs.write(ids.out, |w| {
        render::encode_image(w, format, &image, first.exposure)
    })?;
    print_summary(&args.out, &stats);
    if let Some(id) = ids.json {
        super::write_json(outputs, id, &stats_json(&first.meta, &stats, None))?;
    }
    Ok(())
}
