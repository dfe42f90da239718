//! `wavetrace trace MESH_OR_SCENE --rays FILE --out FILE`: build a BVH for a mesh (or a
//! two-level image for a scene file), trace a ray file through the wave model, write the
//! hits, print the report table (and optionally write it as JSON with `--json`, and as an
//! HTML page with `--html`).

use super::input::Input;
use super::progress::RayProgress;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;
use wavetrace::bvh;
use wavetrace::bvh::two_level::TwoLevelOptions;
use wavetrace::counters::report::Report;
use wavetrace::counters::Counters;
use wavetrace::hw::peak::ConsoleConfig;
use wavetrace::math::HitRecord;
use wavetrace::memory::{Dispatch, Machine, MemoryModel, MemoryStats};
use wavetrace::outfile::{OutputId, OutputSet};
use wavetrace::report::{trace_html, utc_timestamp, Parameters};
use wavetrace::shard::{write_part, Digest, JobId, PartKind};
use wavetrace::traverse::dxr::RayFlags;
use wavetrace::traverse::rayfile::{encode_hits, encode_scene_hits, read_rays};
use wavetrace::traverse::{Schedule, SimdPath, Strategy, WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;
use wavetrace::{Error, Result};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SimdArg {
    Auto,
    Portable,
    Avx2,
}

impl SimdArg {
    /// The build, refused (naming `--simd`) when this CPU lacks its features.
    pub fn path(self) -> Result<SimdPath> {
        let simd = match self {
            SimdArg::Auto => SimdPath::Auto,
            SimdArg::Portable => SimdPath::Portable,
            SimdArg::Avx2 => SimdPath::Avx2,
        };
        if !simd.is_supported() {
            return Err(Error::field(
                "--simd",
                format!("{} needs CPU features this machine lacks", simd.name()),
            ));
        }
        Ok(simd)
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ScheduleArg {
    Lockstep,
    ByLane,
}

impl ScheduleArg {
    pub fn schedule(self) -> Schedule {
        match self {
            ScheduleArg::ByLane => Schedule::ByLane,
            ScheduleArg::Lockstep => Schedule::Lockstep,
        }
    }
}

#[derive(clap::Args)]
pub struct TraceArgs {
    /// Mesh (.obj, .obj.gz, .ply, .gltf or .glb; glTF flattened to world space), or scene
    /// file (.toml: traced as a two-level image, TLAS over instances of BLASes, with the
    /// scene's alpha test as the any-hit shader).
    #[arg(value_name = "MESH_OR_SCENE")]
    pub mesh: PathBuf,
    /// Ray file: little-endian, 8 x f32 per ray (origin xyz, dir xyz, tmin, tmax).
    #[arg(long)]
    pub rays: PathBuf,
    /// Hit file to write: per ray f32 t (+inf for a miss), u32 primitive id (0xFFFFFFFF);
    /// for a scene file 12 bytes per ray: f32 t, u32 instance, u32 primitive within the
    /// instance's BLAS (a miss: +inf, 0xFFFFFFFF, 0xFFFFFFFF).
    #[arg(short = 'o', long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub wave: super::flags::WaveArg,
    /// (Both consoles are counted; the report leads with this one.)
    #[command(flatten)]
    pub target: super::flags::TargetArg,
    /// Traversal shader: full-stack, restart-N, walkback-N or stackless-trail (the names
    /// `profile` uses). Hits are the same for every one; the counters are each one's.
    #[arg(long, default_value = "full-stack", value_parser = super::parse_strategy)]
    pub traversal: Strategy,
    #[command(flatten)]
    pub build: super::bvh::BuildArgs,
    #[command(flatten)]
    pub dxr: super::input::DxrArgs,
    #[command(flatten)]
    pub memory: super::input::MemoryArgs,
    /// Write every node fetch of the memory model, in modelled time order, here: 16 bytes
    /// a fetch, little-endian: u64 byte address within the BVH image, u32 bytes, u16 CU,
    /// u16 0 (needs the memory model on).
    #[arg(long, value_name = "FILE")]
    pub fetch_trace: Option<PathBuf>,
    #[command(flatten)]
    pub threads: super::flags::ThreadsArg,
    /// The report (counters, timings).
    #[command(flatten)]
    pub json: super::flags::JsonArg,
    #[command(flatten)]
    pub simd: super::flags::SimdArgs,
    /// Write one self-contained HTML page here: the summary counters, per-TD clocks against
    /// the busiest TD, the memory model's hit rates and time split, the run's parameters.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Host order of a wave's lanes: lockstep (one step of every lane at a time, as the
    /// hardware) or by-lane (each lane runs to its end and the wave's counters are rebuilt
    /// per step: a slower, independent cross-check). Hits and counters are the same.
    #[arg(long, value_enum, default_value = "lockstep")]
    pub schedule: ScheduleArg,
    /// Write the instruction's own t (t_num / t_denom) instead of recomputing the hit
    /// triangle's plane distance in f64 (see `bvh::plane_distance_f64`). A scene's hits
    /// always keep the instruction's t (in the instance's object space, the same number).
    #[arg(long)]
    pub raw_t: bool,
    /// (A trace part holds the hits and counters of the shard's waves, numbered as in the
    /// whole file; `merge` writes the hit file and `--json`. Needs `--memory off`.)
    #[command(flatten)]
    pub shard: super::flags::ShardArgs,
}

/// Runs the memory model over `dispatches`, writing the fetch trace to output `trace`.
pub fn run_memory_model(
    machine: &Machine,
    dispatches: &[Dispatch],
    outputs: &mut OutputSet,
    trace: Option<OutputId>,
) -> Result<MemoryStats> {
    let mut model = MemoryModel::new(machine);
    match trace {
        Some(id) => {
            let path = outputs.path(id).to_path_buf();
            outputs.write(id, |w| {
                for d in dispatches {
                    model
                        .run_traced(d, None, Some(&mut *w))
                        .map_err(|e| Error::io(&path, e))?;
                }
                Ok(())
            })?;
        }
        None => {
            for d in dispatches {
                model.run(d, None);
            }
        }
    }
    Ok(model.finish())
}

/// The `--json` stats besides the counters and the report: what was traced, how, and how
/// long it took.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceHead {
    pub mesh: String,
    pub rays_file: String,
    pub rays: u64,
    /// Triangles of a mesh; primitives (triangles and spheres) over all BLASes of a scene.
    pub triangles: usize,
    /// A scene's instances and BLASes (absent for a bare mesh).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blases: Option<usize>,
    /// The DXR ray flags of the rays ("none" without any) and the instance mask.
    pub ray_flags: String,
    pub instance_mask: u8,
    /// The BVH build options.
    pub options: String,
    /// BVH build + encode, seconds.
    pub build_seconds: f64,
    /// Tracing only, seconds.
    pub trace_seconds: f64,
    /// The memory model's run over the recorded fetches, seconds (0 with it off).
    pub memory_model_seconds: f64,
    pub threads: usize,
    /// The build of the wave loop that ran (`portable` or `avx2`).
    pub simd: String,
    /// The host order of a wave's lanes (`by-lane` or `lockstep`).
    pub schedule: String,
}

/// The `--json` stats.
#[derive(Serialize)]
struct Stats<'a> {
    #[serde(flatten)]
    head: &'a TraceHead,
    /// The merged counters (also inside `report`).
    counters: &'a Counters,
    report: &'a Report,
}

/// What a trace part records besides its hits (the payload: the shard's hit records, as
/// the hit file has them).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TracePart {
    /// The shard's own figures (`rays` its rays, the seconds its own).
    pub head: TraceHead,
    /// The shard's first ray in the file, and the file's rays.
    pub first_ray: u64,
    pub total_rays: u64,
    /// Bytes of a hit record (8 for a mesh, 12 for a scene).
    pub record_bytes: u64,
    /// What the report is made with.
    pub wave_lanes: usize,
    pub strategy: String,
    pub target: String,
    pub two_level: bool,
    pub counters: Counters,
}

/// Refuses what a trace shard cannot do: its stats and page come from `merge`, and the
/// memory model runs over the whole job's stream of waves, so a shard cannot run its part.
fn check_shard_args(args: &TraceArgs, memory_model: bool) -> Result<()> {
    let not = super::flags::not_with_shard;
    args.json.refuse_with_shard()?;
    not(args.html.is_some(), "--html", "trace unsharded for a page")?;
    not(
        args.fetch_trace.is_some(),
        "--fetch-trace",
        "trace unsharded with the memory model",
    )?;
    if memory_model {
        return Err(Error::field(
            "--memory",
            "a shard cannot run the memory model (its caches see the whole job's waves in \
             one stream): give --memory off, or trace unsharded",
        ));
    }
    Ok(())
}

/// The identity of a trace job: the BVH image (the mesh or scene and the build options),
/// the ray file, and every option that changes a hit or a counter.
fn job_id(args: &TraceArgs, image: &[u8], config: &WaveTracerConfig) -> Result<JobId> {
    use std::fmt::Write;
    let mut d = Digest::new();
    d.field("bvh", image);
    d.file("rays", &args.rays)?;
    let _ = write!(
        d,
        "wave{} {} {} flags {:?} mask {} raw_t {} build {:?}",
        config.wave.lanes(),
        config.console.cli_name,
        config.strategy.name(),
        config.ray_flags,
        config.instance_mask,
        args.raw_t,
        args.build.options()
    );
    Ok(JobId::new(
        PartKind::Trace,
        d,
        format!(
            "trace {} --rays {}",
            args.mesh.display(),
            args.rays.display()
        ),
    ))
}

pub fn run(args: TraceArgs) -> Result<i32> {
    let pool = args.threads.pool()?;
    let threads = pool.current_num_threads();
    let simd = args.simd.one()?;
    let ray_flags = args.dxr.flags()?;
    let instance_mask = args.dxr.mask()?;
    let mut config = WaveTracerConfig {
        wave: args.wave.wave,
        console: args.target.console(),
        strategy: args.traversal,
        parallel: threads > 1,
        simd,
        schedule: args.schedule.schedule(),
        ray_flags,
        instance_mask,
        ..WaveTracerConfig::default()
    };
    let mut outputs = OutputSet::new();
    let out_id = outputs.file("--out", &args.out)?;
    let stats_id = args.json.register(&mut outputs)?;
    let html_id = (args.html.as_deref())
        .map(|p| outputs.file("--html", p))
        .transpose()?;
    let started = std::time::SystemTime::now();
    let machine = args.memory.machine(&config.console)?;
    let shard = args.shard.resolve()?;
    if shard.is_some() {
        check_shard_args(&args, machine.is_some())?;
    }
    if args.fetch_trace.is_some() && machine.is_none() {
        return Err(Error::field(
            "--fetch-trace",
            "needs the memory model (--memory on)",
        ));
    }
    let trace_id = (args.fetch_trace.as_deref())
        .map(|p| outputs.file("--fetch-trace", p))
        .transpose()?;
    let input = super::input::load(&args.mesh)?;
    let all_rays = read_rays(&args.rays)?;
    let lanes = config.wave.lanes() as u64;
    // A shard traces its run of whole waves, numbered as in the whole file.
    let (first_ray, rays) = match shard {
        Some(shard) => {
            let waves = shard.waves((all_rays.len() as u64).div_ceil(lanes));
            config.first_wave = waves.start;
            let start = (waves.start * lanes).min(all_rays.len() as u64) as usize;
            let end = (waves.end * lanes).min(all_rays.len() as u64) as usize;
            (start, &all_rays[start..end])
        }
        None => (0, &all_rays[..]),
    };
    super::interrupt::check(&outputs)?;
    // What the hit file keeps (no barycentrics or facing: they are not computed).
    let mut hits = vec![HitRecord::MISS; rays.len()];
    let mut counters = if machine.is_some() {
        Counters::recording_fetches()
    } else {
        Counters::default()
    };
    let (primitives, scene_sizes, build_seconds, trace_seconds, bytes, job) = match &input {
        Input::Mesh(mesh) => {
            let start = Instant::now();
            let built = pool.install(|| bvh::build(mesh, &args.build.options()))?;
            let build_seconds = start.elapsed().as_secs_f64();
            super::interrupt::check(&outputs)?;
            // The image moves into the tracer, which frees it once it has its aligned copy.
            let mut tracer = WaveTracer::from_image(built.image, mesh, config);
            let job = (shard.is_some())
                .then(|| job_id(&args, tracer.image_bytes(), &config))
                .transpose()?;
            let progress = RayProgress::start(rays.len() as u64, "traced");
            tracer.set_progress(progress.rays.clone());
            let start = Instant::now();
            pool.install(|| tracer.closest_hit_records(rays, &mut hits, &mut counters));
            drop(progress);
            let trace_seconds = start.elapsed().as_secs_f64();
            if !args.raw_t {
                // The hit shader's step, after traversal: an accurate distance for the
                // chosen hit.
                for (hit, ray) in hits.iter_mut().zip(rays) {
                    hit.t = bvh::refined_distance(mesh, ray, hit.t, hit.prim_id);
                }
            }
            (
                mesh.len(),
                None,
                build_seconds,
                trace_seconds,
                encode_hits(&hits),
                job,
            )
        }
        Input::Scene(scene) => {
            let options = TwoLevelOptions {
                blas: args.build.options(),
                rebraid: false,
            };
            let (built, build_seconds) = pool.install(|| scene.build(&options))?;
            super::interrupt::check(&outputs)?;
            let mut tracer = scene.tracer(built, config);
            let job = (shard.is_some())
                .then(|| job_id(&args, tracer.image_bytes(), &config))
                .transpose()?;
            let progress = RayProgress::start(rays.len() as u64, "traced");
            tracer.set_progress(progress.rays.clone());
            let start = Instant::now();
            pool.install(|| tracer.closest_hit_records(rays, &mut hits, &mut counters));
            drop(progress);
            let trace_seconds = start.elapsed().as_secs_f64();
            (
                scene.primitives(),
                Some((scene.input.instances.len(), scene.input.blases.len())),
                build_seconds,
                trace_seconds,
                encode_scene_hits(&hits),
                job,
            )
        }
    };
    super::interrupt::check(&outputs)?;
    let dispatches = counters.fetches.take();
    let start = Instant::now();
    let memory = match &machine {
        Some(machine) => Some(run_memory_model(
            machine,
            &dispatches,
            &mut outputs,
            trace_id,
        )?),
        None => None,
    };
    drop(dispatches);
    let memory_seconds = start.elapsed().as_secs_f64();
    super::interrupt::check(&outputs)?;
    let head = TraceHead {
        mesh: args.mesh.display().to_string(),
        rays_file: args.rays.display().to_string(),
        rays: counters.rays,
        triangles: primitives,
        instances: scene_sizes.map(|s| s.0),
        blases: scene_sizes.map(|s| s.1),
        ray_flags: ray_flags.names(),
        instance_mask,
        options: args.build.options().to_string(),
        build_seconds,
        trace_seconds,
        memory_model_seconds: if memory.is_some() {
            memory_seconds
        } else {
            0.0
        },
        threads,
        simd: config.simd.resolve().name().to_string(),
        schedule: config.schedule.name().to_string(),
    };
    if let (Some(shard), Some(job)) = (shard, job) {
        let part = TracePart {
            head,
            first_ray: first_ray as u64,
            total_rays: all_rays.len() as u64,
            record_bytes: if scene_sizes.is_some() { 12 } else { 8 },
            wave_lanes: config.wave.lanes(),
            strategy: config.strategy.name(),
            target: config.console.cli_name.to_string(),
            two_level: scene_sizes.is_some(),
            counters,
        };
        say!(
            "{}: rays {}..{} of {} ({} waves from wave {}) traced in {trace_seconds:.3} s; \
             part {shard} of job {} ({})",
            args.out.display(),
            first_ray,
            first_ray + rays.len(),
            all_rays.len(),
            (rays.len() as u64).div_ceil(lanes),
            config.first_wave,
            job.job,
            job.summary
        );
        outputs.write(out_id, |w| write_part(w, &job, shard, &part, &bytes))?;
        super::interrupt::check(&outputs)?;
        outputs.commit()?;
        return Ok(0);
    }
    outputs.write_bytes(out_id, &bytes)?;
    let mut report = Report::new(
        &counters,
        trace_seconds,
        threads,
        config.wave.lanes(),
        &config.strategy.name(),
        &config.console,
    );
    if scene_sizes.is_some() {
        report = report.with_levels();
    }
    if let Some(memory) = &memory {
        report = report.with_memory(memory);
    }
    let what = match scene_sizes {
        None => format!("{primitives} triangles, BVH"),
        Some((instances, blases)) => format!(
            "{instances} instances of {blases} BLASes ({primitives} primitives), two-level BVH"
        ),
    };
    say!(
        "{}: {what} built in {:.3} s; {}: traced in {:.3} s ({} build, {}){}",
        args.mesh.display(),
        build_seconds,
        args.rays.display(),
        trace_seconds,
        config.simd.resolve().name(),
        config.schedule.name(),
        match memory {
            Some(_) => format!(", memory model {memory_seconds:.3} s"),
            None => String::new(),
        }
    );
    if ray_flags != RayFlags::NONE || instance_mask != 0xFF {
        say!(
            "ray flags {}, instance mask 0x{instance_mask:02X}",
            ray_flags.names()
        );
    }
    say_part!("{}", report.table());
    if let Some(id) = stats_id {
        let stats = Stats {
            head: &head,
            counters: &counters,
            report: &report,
        };
        super::write_json(&mut outputs, id, &stats)?;
    }
    if let Some(id) = html_id {
        let parameters = Parameters::new(&utc_timestamp(started))
            .with("input", format!("{} ({what})", args.mesh.display()))
            .with(
                "ray set",
                format!("{} ({} rays)", args.rays.display(), counters.rays),
            )
            .with("traversal", config.strategy.name())
            .with("wave", format!("wave{}", args.wave.wave.lanes()))
            .with(
                "console",
                format!("{} ({})", config.console.name, config.console.cli_name),
            )
            .with(
                "memory model",
                machine
                    .as_ref()
                    .map_or("off (TD only)".to_string(), |m| m.name.clone()),
            )
            .with("BVH build", format!("{:?}", args.build.options()))
            .with(
                "ray flags, instance mask",
                format!("{}, 0x{instance_mask:02X}", ray_flags.names()),
            )
            .with(
                "build, schedule",
                format!(
                    "{}, {}",
                    config.simd.resolve().name(),
                    config.schedule.name()
                ),
            )
            .with("threads", threads.to_string())
            .with("host CPU", report.host.cpu.clone());
        let html = trace_html(&report, &parameters)?;
        outputs.write_bytes(id, html.as_bytes())?;
    }
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    Ok(0)
}

/// Merges trace parts: their hit records in ray order into the hit file, their counters
/// summed (per TD too: each shard numbered its waves as in the whole file), and the
/// `--json` stats of the unsharded trace (build and trace seconds the sums of the shards').
pub fn merge(
    parts: &super::merge::Parts,
    args: &super::merge::MergeArgs,
    outputs: &mut OutputSet,
    ids: &super::merge::MergeOutputs,
) -> Result<()> {
    let mut hits = Vec::new();
    let mut counters = Counters::default();
    let mut first: Option<TracePart> = None;
    let (mut build_seconds, mut trace_seconds) = (0.0, 0.0);
    for (path, raw) in parts.containers() {
        let part: TracePart = raw.data()?;
        let bad = |message: String| Error::Parse {
            path: path.to_path_buf(),
            line: 0,
            message,
        };
        let next_ray = (hits.len() as u64) / part.record_bytes.max(1);
        if part.first_ray != next_ray
            || raw.payload.len() as u64 != part.head.rays * part.record_bytes
        {
            return Err(bad(format!(
                "rays {}..{} where the parts before it end at ray {next_ray}",
                part.first_ray,
                part.first_ray + part.head.rays
            )));
        }
        if let Some(f) = &first {
            if (part.total_rays, part.record_bytes) != (f.total_rays, f.record_bytes) {
                return Err(bad(format!(
                    "a part of a {}-ray file, not the {} rays of the others",
                    part.total_rays, f.total_rays
                )));
            }
        }
        hits.extend_from_slice(&raw.payload);
        counters.merge(&part.counters);
        build_seconds += part.head.build_seconds;
        trace_seconds += part.head.trace_seconds;
        first.get_or_insert(part);
    }
    let Some(first) = first else {
        return Err(Error::Other("merge: no trace parts".into()));
    };
    if (hits.len() as u64) != first.total_rays * first.record_bytes {
        return Err(Error::Other(format!(
            "the parts hold {} of the {} rays",
            hits.len() as u64 / first.record_bytes,
            first.total_rays
        )));
    }
    outputs.write_bytes(ids.out, &hits)?;
    let console = ConsoleConfig::by_cli_name(&first.target).ok_or_else(|| Error::Parse {
        path: parts.paths[0].clone(),
        line: 0,
        message: format!("unknown console `{}`", first.target),
    })?;
    let mut report = Report::new(
        &counters,
        trace_seconds,
        first.head.threads,
        first.wave_lanes,
        &first.strategy,
        &console,
    );
    if first.two_level {
        report = report.with_levels();
    }
    say!(
        "{}: {} rays traced in {trace_seconds:.3} s over {} shards",
        args.out.display(),
        first.total_rays,
        parts.parts.len()
    );
    say_part!("{}", report.table());
    if let Some(id) = ids.json {
        let head = TraceHead {
            rays: counters.rays,
            build_seconds,
            trace_seconds,
            ..first.head
        };
        let stats = Stats {
            head: &head,
            counters: &counters,
            report: &report,
        };
        super::write_json(outputs, id, &stats)?;
    }
    Ok(())
}
