//! `wavetrace render SCENE --out FILE`: path-trace a scene through the wave model.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wavetrace::hw::peak::ConsoleConfig;
use wavetrace::memory::MemoryReport;
use wavetrace::outfile::{OutputId, OutputSet};
use wavetrace::render::{
    self, build_wave_tracer, heatmap_rgb8, Control, ImageFormat, RenderOptions, RenderOutput,
    RenderProgress,
};
use wavetrace::scene::Scene;
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
    write_outputs(&args, console, &out, &mut outputs, &ids)?;
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    Ok(0)
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
    let rays = s.total_rays();
    eprintln!(
        "{} ({}x{}, {} spp) in {:.2} s: {} rays ({} camera, {} bounce, {} shadow), {:.2} Mrays/s, {} texture fetches",
        args.out.display(),
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
        let json = serde_json::json!({
            "scene": args.scene.display().to_string(),
            "wave": args.wave.wave.lanes(),
            "target": console.cli_name,
            "seed": args.seed.seed,
            "stats": s,
            "total_counters": total,
            "memory": memory,
        });
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
