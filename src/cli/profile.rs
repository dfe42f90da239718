//! `wavetrace profile SCENE_OR_MESH`: traversal strategies and BVH layouts side by side.
//!
//! Runs the same rays through every selected variant of the wave model, checks each
//! variant's hits against the scalar reference traversal, prints a table ranked by
//! modelled rays/s, and optionally writes CSV, JSON, per-variant heatmaps and an HTML page. A scene file
//! is profiled flattened into one mesh on every axis but the TLAS axis, which traces its
//! two-level image with and without rebraiding beside the flattened mesh.

use glam::Vec3;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use wavetrace::bvh::two_level::flatten;
use wavetrace::bvh::Mesh;
use wavetrace::outfile::{OutputDir, OutputId, OutputSet};
use wavetrace::profile::two_level::{self, SceneRays};
use wavetrace::profile::{self, heatmap, rays::PinholeCamera, QueryKind, RayKind, RaySet};
use wavetrace::report::{profile_html, utc_timestamp, CameraMaps, Parameters};
use wavetrace::shard::{write_part, Digest, JobId, PartKind};
use wavetrace::traverse::dxr::RayFlags;
use wavetrace::traverse::rayfile::read_rays;
use wavetrace::{Error, Result};

#[derive(clap::Args)]
pub struct ProfileArgs {
    /// Scene file (.toml, camera from the scene) or mesh (.obj, .obj.gz, .ply, .gltf or
    /// .glb) to profile.
    pub input: PathBuf,
    /// Ray set: primary, diffuse, shadow, ao, or a ray file (8 x f32 per ray).
    #[arg(long, default_value = "primary")]
    pub rays: String,
    /// Comma-separated variant names, or `all`.
    #[arg(long, default_value = "all")]
    pub strategies: String,
    #[command(flatten)]
    pub target: super::flags::TargetArg,
    /// Write the table as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// The full report: every variant's counters and figures.
    #[command(flatten)]
    pub json: super::flags::JsonArg,
    /// Write one per-pixel clock heatmap PNG per variant into this directory (camera rays).
    #[arg(long)]
    pub heatmaps: Option<PathBuf>,
    /// Print every column of the table (by default it keeps the columns a ranking is read
    /// by, under 120 characters wide; `--csv` and `--json` always have all of them).
    #[arg(long)]
    pub wide: bool,
    /// Write one self-contained HTML page here: the ranked table (sortable), charts of the
    /// rates, clocks and TD balance, the heatmaps (camera rays), the run's parameters.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Image size of the camera rays, WxH.
    #[arg(long, default_value = "256x256")]
    pub size: String,
    /// Camera for a bare mesh: ex,ey,ez,tx,ty,tz,vfov_deg (default: framing the mesh).
    #[arg(long)]
    pub camera: Option<String>,
    /// (The secondary rays' directions.)
    #[command(flatten)]
    pub seed: super::flags::SeedArg,
    #[command(flatten)]
    pub threads: super::flags::ThreadsArg,
    // Ray flags and mask: the TLAS axis's rays (scene files only).
    #[command(flatten)]
    pub dxr: super::input::DxrArgs,
    #[command(flatten)]
    pub memory: super::input::MemoryArgs,
    /// (A profile part holds the rows of the shard's variants: the selected ones split so
    /// that the variants of one BVH build stay together where the balance allows; `merge`
    /// ranks them all and writes the table, CSV and JSON.)
    #[command(flatten)]
    pub shard: super::flags::ShardArgs,
    /// With --shard: the part file to write.
    #[arg(short = 'o', long, value_name = "PART")]
    pub out: Option<PathBuf>,
}

/// The triangles of a mesh or scene file (a scene flattened: its instances' triangles in
/// world space), the scene itself, and the camera rays of a `width x height` grid: through
/// `camera` when given, else the scene's camera, else a camera framing the mesh. A file
/// without triangles is an error naming it.
pub(super) fn camera_rays(
    input: &Path,
    is_scene: bool,
    (width, height): (u32, u32),
    camera: Option<&PinholeCamera>,
) -> Result<(
    Mesh,
    Option<super::input::SceneInput>,
    Vec<wavetrace::math::Ray>,
)> {
    let (mesh, scene) = if is_scene {
        let scene = super::input::load_scene(input)?;
        // A flat scene's one identity instance flattens to its own triangles.
        (flatten(&scene.input).0, Some(scene))
    } else {
        (super::input::load_mesh(input)?, None)
    };
    if mesh.is_empty() {
        return Err(Error::Other(format!("{}: no triangles", input.display())));
    }
    let primary = match (camera, &scene) {
        (Some(c), _) => c.primary_rays(width, height),
        (None, Some(scene)) => profile::scene_primary_rays(&scene.scene, width, height),
        (None, None) => {
            PinholeCamera::framing(&profile::mesh_bounds(&mesh)).primary_rays(width, height)
        }
    };
    Ok((mesh, scene, primary))
}

pub(super) fn parse_size(s: &str) -> Result<(u32, u32)> {
    let bad = || Error::field("--size", format!("`{s}` is not WxH (e.g. 256x256)"));
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if w == 0 || h == 0 || w as u64 * h as u64 > 16 << 20 {
        return Err(Error::field(
            "--size",
            format!("`{s}`: each side must be at least 1 and W*H at most 16M"),
        ));
    }
    Ok((w, h))
}

pub(super) fn parse_camera(s: &str) -> Result<PinholeCamera> {
    let v: Vec<f32> = s
        .split(',')
        .map(|x| x.trim().parse::<f32>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::field("--camera", format!("`{s}`: not 7 comma-separated numbers")))?;
    if v.len() != 7 || v.iter().any(|x| !x.is_finite()) {
        return Err(Error::field(
            "--camera",
            format!("`{s}`: need ex,ey,ez,tx,ty,tz,vfov_deg (7 finite numbers)"),
        ));
    }
    let eye = Vec3::new(v[0], v[1], v[2]);
    let look_at = Vec3::new(v[3], v[4], v[5]);
    if eye == look_at || !(v[6] > 0.0 && v[6] < 180.0) {
        return Err(Error::field(
            "--camera",
            "eye and target must differ and vfov_deg be in (0, 180)",
        ));
    }
    Ok(PinholeCamera {
        eye,
        look_at,
        up: Vec3::Y,
        vfov_deg: v[6],
    })
}

pub fn run(args: ProfileArgs) -> Result<i32> {
    let console = args.target.console();
    let is_scene = super::input::is_scene(&args.input);
    let variants = if is_scene {
        profile::select_scene_variants(&args.strategies)?
    } else {
        profile::select_variants(&args.strategies)?
    };
    let shard = args.shard.resolve()?;
    let job_variants: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let variants = match shard {
        Some(shard) => {
            check_shard_args(&args)?;
            profile::shard_variants(&variants, shard)
        }
        None => {
            if let Some(out) = &args.out {
                return Err(Error::field(
                    "--out",
                    format!(
                        "{}: profile writes a part file only with --shard (the report goes to \
                         --csv, --json and --html)",
                        out.display()
                    ),
                ));
            }
            variants
        }
    };
    let scene_rays = SceneRays {
        flags: args.dxr.flags()?,
        mask: args.dxr.mask()?,
    };
    let plain_rays = scene_rays.flags == RayFlags::NONE && scene_rays.mask == 0xFF;
    if !plain_rays && !is_scene {
        return Err(Error::field(
            if scene_rays.flags == RayFlags::NONE {
                "--mask"
            } else {
                "--ray-flags"
            },
            "applies to the TLAS axis of a scene file (.toml) only",
        ));
    }
    let (width, height) = parse_size(&args.size)?;
    let machine = args.memory.machine(&console)?;
    let camera_override = args.camera.as_deref().map(parse_camera).transpose()?;
    let pool = args.threads.pool()?;
    let started = std::time::SystemTime::now();
    let mut outputs = OutputSet::new();
    let part_id = (args.out.as_deref())
        .map(|p| outputs.file("--out", p))
        .transpose()?;
    let csv_id = (args.csv.as_deref())
        .map(|p| outputs.file("--csv", p))
        .transpose()?;
    let json_id = args.json.register(&mut outputs)?;
    let html_id = (args.html.as_deref())
        .map(|p| outputs.file("--html", p))
        .transpose()?;
    // Heatmaps are drawn for camera rays only; the directory is not touched otherwise.
    let heatmaps_id = match &args.heatmaps {
        Some(dir) if args.rays == "primary" => Some(outputs.dir("--heatmaps", dir)?),
        _ => None,
    };

    let (mesh, scene, primary) = camera_rays(
        &args.input,
        is_scene,
        (width, height),
        camera_override.as_ref(),
    )?;
    let input = args.input.display().to_string();

    let report = pool.install(|| -> Result<profile::ProfileReport> {
        let start = std::time::Instant::now();
        let (set, reference) = match RayKind::from_name(&args.rays) {
            Some(kind) => {
                let image = profile::reference_image(&mesh)?;
                profile::make_rays(kind, &mesh, &image, primary, args.seed.seed)
            }
            None => {
                let rays = read_rays(Path::new(&args.rays))?;
                let name = format!("file {}", args.rays);
                (
                    RaySet {
                        name,
                        rays,
                        query: QueryKind::ClosestHit,
                    },
                    None,
                )
            }
        };
        let ray_seconds = start.elapsed().as_secs_f64();
        let (tlas, flat): (Vec<_>, Vec<_>) =
            variants.iter().cloned().partition(|v| v.tlas.is_some());
        let reference = match (reference, &scene) {
            // The scene's variants all need the canonical reference: computed once here.
            (None, Some(_)) => Some(profile::canonical_hits(
                &profile::reference_image(&mesh)?,
                &mesh,
                &set.rays,
            )),
            (r, _) => r,
        };
        super::interrupt::check(&outputs)?;
        let progress = super::progress::RayProgress::start(
            (set.rays.len() * variants.len()) as u64,
            &format!("over {} variants", variants.len()),
        );
        let mut report = profile::profile_until(
            &input,
            &mesh,
            &set,
            &flat,
            &console,
            reference.as_deref(),
            profile::Run {
                cancel: Some(super::interrupt::flag()),
                machine: machine.as_ref(),
                progress: Some(&progress.rays),
            },
        )?;
        report.reference_seconds += ray_seconds;
        if let (Some(scene), Some(canonical), false) = (&scene, &reference, tlas.is_empty()) {
            let start = std::time::Instant::now();
            let whole = two_level::scene_reference_hits(&scene.input, &set.rays, canonical);
            report.reference_seconds += start.elapsed().as_secs_f64();
            for v in &tlas {
                super::interrupt::check(&outputs)?;
                let checked = plain_rays.then(|| two_level::reference_for(v, &whole, canonical));
                let references = two_level::References {
                    checked,
                    canonical,
                    machine: machine.as_ref(),
                };
                let r = two_level::measure_tlas(
                    v,
                    &scene.input,
                    &mesh,
                    &set,
                    &console,
                    scene_rays,
                    references,
                )?;
                report.variants.push(r);
                (progress.rays).fetch_add(set.rays.len() as u64, Ordering::Relaxed);
            }
            profile::rank(&mut report.variants);
        }
        Ok(report)
    });
    // A cancelled profile reports the interrupt, not its own error.
    super::interrupt::check(&outputs)?;
    let report = report?;
    super::interrupt::check(&outputs)?;
    if let (Some(shard), Some(out)) = (shard, part_id) {
        let id = job_id(&args, &mesh, &job_variants, machine.as_ref())?;
        say!(
            "{}: variants {} of {} ({}); part {shard} of job {} ({})",
            outputs.path(out).display(),
            report.variants.len(),
            job_variants.len(),
            (report.variants.iter())
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            id.job,
            id.summary
        );
        let part = ProfilePart {
            job_variants,
            seed: args.seed.seed,
            size: (width, height),
            report,
        };
        outputs.write(out, |w| write_part(w, &id, shard, &part, &[]))?;
        super::interrupt::check(&outputs)?;
        outputs.commit()?;
        return Ok(0);
    }
    if report.variants.iter().any(|v| v.axis == "TLAS") {
        say!(
            "TLAS axis: traced by the lockstep schedule (NaN: the stream schedule's stack and \
             node-byte tallies, not measured); guard: hit or miss and t within 1e-4 of \
             max(t, scene diagonal / 1000) of the flattened scene's scalar reference and f64 \
             sphere hits; any-hit accepts all"
        );
    }
    if !plain_rays {
        say!(
            "TLAS axis traced with ray flags {} and instance mask 0x{:02X} (not checked \
             against the reference; the other axes trace without them)",
            scene_rays.flags.names(),
            scene_rays.mask
        );
    }

    let wrong = print_report(&report, args.wide);
    write_report(&mut outputs, &report, csv_id, json_id)?;
    if let Some(id) = html_id {
        let parameters = Parameters::new(&utc_timestamp(started))
            .with("input", report.input.clone())
            .with(
                "ray set",
                format!(
                    "{} ({} rays, seed {})",
                    report.ray_kind, report.rays, args.seed.seed
                ),
            )
            .with("camera rays", format!("{width}x{height}"))
            .with("variants", args.strategies.clone())
            .with(
                "console",
                format!("{} ({})", console.name, console.cli_name),
            )
            .with(
                "memory model",
                machine
                    .as_ref()
                    .map_or("off (TD only)".to_string(), |m| m.name.clone()),
            )
            .with("threads", pool.current_num_threads().to_string())
            .with("host CPU", wavetrace::host::cpu_name());
        let camera = (args.rays == "primary").then_some(CameraMaps { width, height });
        let html = profile_html(&report, &console, &parameters, camera)?;
        outputs.write_bytes(id, html.as_bytes())?;
    }
    if let Some(dir) = &args.heatmaps {
        match heatmaps_id {
            Some(id) => write_heatmaps(&mut outputs, id, dir, &report, width, height)?,
            None => say!("heatmaps: only for camera rays (--rays primary); none written"),
        }
    }
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    Ok(if wrong { 1 } else { 0 })
}

fn write_heatmaps(
    outputs: &mut OutputSet,
    id: OutputDir,
    dir: &Path,
    report: &profile::ProfileReport,
    width: u32,
    height: u32,
) -> Result<()> {
    let all: Vec<&profile::VariantResult> = report.variants.iter().collect();
    let scale = write_maps(outputs, id, &all, (width, height), "png", |v| &v.ray_clocks)?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "heatmaps: {} PNGs in {} (TD clocks per pixel, shared scale 0..{scale})",
        report.variants.len(),
        dir.display()
    );
    // The memory model's time per pixel, where each lane ran one ray.
    let timed: Vec<&profile::VariantResult> = (report.variants.iter())
        .filter(|v| !v.ray_memory_clocks.is_empty())
        .collect();
    if !timed.is_empty() {
        let scale = write_maps(outputs, id, &timed, (width, height), "memory.png", |v| {
            &v.ray_memory_clocks
        })?;
        let _ = writeln!(
            out,
            "memory heatmaps: {} PNGs NAME.memory.png (modelled clocks per pixel with the \
             memory model, shared scale 0..{scale}; none for refill variants)",
            timed.len()
        );
    }
    Ok(())
}

/// Writes one heatmap of `values(v)` per variant as `NAME.EXTENSION` in `id`, on a scale
/// the variants share; returns that scale.
fn write_maps(
    outputs: &mut OutputSet,
    id: OutputDir,
    variants: &[&profile::VariantResult],
    (width, height): (u32, u32),
    extension: &str,
    values: impl Fn(&profile::VariantResult) -> &Vec<u32>,
) -> Result<u32> {
    let scale = profile::shared_scale(variants.iter().map(|v| &values(v)[..]));
    for v in variants {
        let img = heatmap::heatmap_image(values(v), width, height, scale, &v.name);
        let mut bytes = Vec::new();
        img.write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .map_err(|e| Error::Other(format!("cannot encode the heatmap PNG: {e}")))?;
        outputs.write_in_dir(id, &format!("{}.{extension}", v.name), &bytes)?;
    }
    Ok(scale)
}

/// Prints the table (every column with `wide`), the wrong variants and the guard; returns
/// whether any variant's hits were wrong.
fn print_report(report: &profile::ProfileReport, wide: bool) -> bool {
    if wide {
        say_part!("{}", profile::to_table(report));
    } else {
        say_part!("{}", profile::to_compact_table(report));
    }
    let wrong: Vec<&str> = report
        .variants
        .iter()
        .filter(|v| v.wrong_rays > 0)
        .map(|v| v.name.as_str())
        .collect();
    if !wrong.is_empty() {
        say!(
            "WRONG (hits differ from the reference traversal, not ranked): {}",
            wrong.join(", ")
        );
    }
    say!(
        "guard: scalar reference traversal on each variant's own image, t within {} ULP\n\
         `vs fp32` (with --wide): rays that differ geometrically from the canonical FP32 image\n\
         ray set and canonical reference: {:.2} s",
        report.t_tolerance_ulps,
        report.reference_seconds
    );
    !wrong.is_empty()
}

/// Writes the report as CSV and JSON to the outputs given.
fn write_report(
    outputs: &mut OutputSet,
    report: &profile::ProfileReport,
    csv: Option<OutputId>,
    json: Option<OutputId>,
) -> Result<()> {
    if let Some(id) = csv {
        outputs.write_bytes(id, profile::to_csv(report).as_bytes())?;
    }
    if let Some(id) = json {
        outputs.write_bytes(id, report_json(report)?.as_bytes())?;
    }
    Ok(())
}

fn report_json(report: &profile::ProfileReport) -> Result<String> {
    serde_json::to_string_pretty(report)
        .map_err(|e| Error::Other(format!("cannot encode the report: {e}")))
}

/// What a profile part records: the rows of its variants and the job's variant list.
#[derive(serde::Serialize, serde::Deserialize)]
struct ProfilePart {
    /// Every variant of the job, in selection order (see `profile::shard_variants`).
    job_variants: Vec<String>,
    seed: u64,
    size: (u32, u32),
    /// The shard's report: its variants, ranked among themselves.
    report: profile::ProfileReport,
}

/// Refuses what a profile shard cannot write: the report's outputs come from `merge`, and
/// the heatmaps and page need every variant (their scales are shared).
fn check_shard_args(args: &ProfileArgs) -> Result<()> {
    let not = super::flags::not_with_shard;
    if args.out.is_none() {
        return Err(Error::field(
            "--out",
            "--shard writes a part file: give its name with --out",
        ));
    }
    not(args.csv.is_some(), "--csv", "`merge --csv` writes the CSV")?;
    args.json.refuse_with_shard()?;
    not(
        args.html.is_some(),
        "--html",
        "profile unsharded for a page",
    )?;
    not(
        args.heatmaps.is_some(),
        "--heatmaps",
        "profile unsharded for heatmaps (their scale is shared by every variant)",
    )
}

/// The identity of a profile job: the input file and its triangles, the ray set, the
/// variants, and every option that changes a row.
fn job_id(
    args: &ProfileArgs,
    mesh: &Mesh,
    variants: &[String],
    machine: Option<&wavetrace::memory::Machine>,
) -> Result<JobId> {
    use std::fmt::Write;
    let mut d = Digest::new();
    d.file("input", &args.input)?;
    d.field("positions", bytemuck::cast_slice(&mesh.positions))
        .field("indices", bytemuck::cast_slice(&mesh.indices));
    if RayKind::from_name(&args.rays).is_none() {
        d.file("rays", Path::new(&args.rays))?;
    }
    let _ = write!(
        d,
        "rays {} variants {} size {} camera {:?} seed {} {} flags {:?} mask {:?} machine {:?}",
        args.rays,
        variants.join(","),
        args.size,
        args.camera,
        args.seed.seed,
        args.target.console().cli_name,
        args.dxr.flags()?,
        args.dxr.mask()?,
        machine
    );
    Ok(JobId::new(
        PartKind::Profile,
        d,
        format!(
            "profile {} --rays {} ({} variants)",
            args.input.display(),
            args.rays,
            variants.len()
        ),
    ))
}

/// Merges profile parts: every variant's row once, ranked together as the unsharded run
/// ranks them; prints the table and writes `--out` (.csv, .json, else the text table),
/// `--csv` and `--json`. Exit code 1 when a variant's hits were wrong, as `profile`.
pub fn merge(
    parts: &super::merge::Parts,
    args: &super::merge::MergeArgs,
    outputs: &mut OutputSet,
    ids: &super::merge::MergeOutputs,
) -> Result<bool> {
    let mut merged: Option<(profile::ProfileReport, Vec<String>)> = None;
    for (path, raw) in parts.containers() {
        let part: ProfilePart = raw.data()?;
        let bad = |message: String| Error::Parse {
            path: path.to_path_buf(),
            line: 0,
            message,
        };
        match &mut merged {
            None => merged = Some((part.report, part.job_variants)),
            Some((report, job_variants)) => {
                let r = &part.report;
                if *job_variants != part.job_variants
                    || (r.rays, &r.ray_kind, r.query, r.console)
                        != (report.rays, &report.ray_kind, report.query, report.console)
                {
                    return Err(bad("a part of another profile than the others".into()));
                }
                report.reference_seconds += r.reference_seconds;
                report.variants.extend(part.report.variants);
            }
        }
    }
    let Some((mut report, job_variants)) = merged else {
        return Err(Error::Other("merge: no profile parts".into()));
    };
    // Every variant of the job exactly once (parts of one job split it the same way).
    let mut rows: Vec<&str> = report.variants.iter().map(|v| v.name.as_str()).collect();
    let mut want: Vec<&str> = job_variants.iter().map(String::as_str).collect();
    rows.sort_unstable();
    want.sort_unstable();
    if rows != want {
        return Err(Error::Other(format!(
            "the parts hold {} rows for the job's {} variants",
            rows.len(),
            want.len()
        )));
    }
    profile::rank(&mut report.variants);
    let wrong = print_report(&report, args.wide);
    let out = args.out.to_string_lossy().to_ascii_lowercase();
    let text = if out.ends_with(".csv") {
        profile::to_csv(&report)
    } else if out.ends_with(".json") {
        report_json(&report)?
    } else if args.wide {
        profile::to_table(&report)
    } else {
        profile::to_compact_table(&report)
    };
    outputs.write_bytes(ids.out, text.as_bytes())?;
    write_report(outputs, &report, ids.csv, ids.json)?;
    Ok(wrong)
}
