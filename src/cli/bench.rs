//! `wavetrace bench MESH_OR_SCENE --rays FILE...`: the wave model's trace speed, measured in
//! one process. The BVH (a scene's two-level image) is built once; every ray file is traced
//! `--repeat` times with each requested build of the wave loop and host schedule,
//! alternating them and the files within each repetition so that a shared machine's drift
//! falls on all of them alike. Reports the best and the median rate (the best is the least
//! disturbed run), and checks that every repetition, build and schedule gave the same hits
//! and counters. With `--flatten`, a scene is also traced flattened into one BLAS (every
//! instance's triangles moved to world space), alternating with the instanced image.

use super::bvh::BuildArgs;
use super::input::Input;
use super::trace::ScheduleArg;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;
use wavetrace::bvh;
use wavetrace::bvh::two_level::{flatten, TwoLevelOptions};
use wavetrace::counters::Counters;
use wavetrace::host::cpu_name;
use wavetrace::hw::peak::SERIES_X;
use wavetrace::math::{HitRecord, Ray};
use wavetrace::memory::{Machine, MemoryModel, MemoryReport};
use wavetrace::outfile::OutputSet;
use wavetrace::shard::{write_part, Digest, JobId, PartKind};
use wavetrace::traverse::dxr::RayFlags;
use wavetrace::traverse::rayfile::read_rays;
use wavetrace::traverse::{Schedule, SimdPath, Strategy, WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;
use wavetrace::{Error, Result};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Mesh (.obj, .obj.gz, .ply, .gltf or .glb; glTF flattened to world space), or scene
    /// file (.toml: a two-level image with the scene's alpha test as the any-hit shader).
    #[arg(value_name = "MESH_OR_SCENE")]
    pub mesh: PathBuf,
    /// Ray files (8 x f32 per ray), traced in turn.
    #[arg(long, required = true, num_args = 1..)]
    pub rays: Vec<PathBuf>,
    /// Traces of each ray file with each build.
    #[arg(long, default_value_t = 10)]
    pub repeat: usize,
    /// (For a one-core figure give `--threads 1`, or pin the process to one core.)
    #[command(flatten)]
    pub threads: super::flags::ThreadsArg,
    #[command(flatten)]
    pub wave: super::flags::WaveArg,
    /// (Several builds are timed side by side, e.g. `--simd portable avx2`.)
    #[command(flatten)]
    pub simd: super::flags::SimdArgs,
    /// Traversal shader: full-stack, restart-N, walkback-N or stackless-trail (the names
    /// `profile` uses).
    #[arg(long, default_value = "full-stack", value_parser = super::parse_strategy)]
    pub traversal: Strategy,
    /// Host schedules of a wave's lanes to compare (e.g. `--schedule lockstep by-lane`).
    #[arg(long, value_enum, num_args = 1.., default_value = "lockstep")]
    pub schedule: Vec<ScheduleArg>,
    #[command(flatten)]
    pub build: BuildArgs,
    #[command(flatten)]
    pub dxr: super::input::DxrArgs,
    /// Scene files: also trace the scene flattened into one BLAS (its triangle instances'
    /// vertices transformed to world space; procedural instances left out), to compare
    /// instanced and flattened speed in one run.
    #[arg(long)]
    pub flatten: bool,
    /// Also time every trace with the memory model on (fetches recorded, then run through
    /// the model), alternating with the plain trace in the same rounds; report the speed
    /// ratio and the model's figures.
    #[arg(long)]
    pub memory_model: bool,
    /// The machine of `--memory-model`: series-s, series-x or a TOML file.
    #[arg(long, value_name = "NAME_OR_FILE", default_value = "series-x")]
    pub machine: String,
    /// The results, every repetition's time included.
    #[command(flatten)]
    pub json: super::flags::JsonArg,
    /// (A bench part holds the rows of the shard's ray files, round-robin over `--rays`;
    /// `merge` writes them as one report. Timings are the shard's own.)
    #[command(flatten)]
    pub shard: super::flags::ShardArgs,
    /// With --shard: the part file to write.
    #[arg(short = 'o', long, value_name = "PART")]
    pub out: Option<PathBuf>,
}

/// One ray file traced with one build.
#[derive(Serialize, Deserialize)]
struct Row {
    rays_file: String,
    /// What was traced: `mesh`, `instanced` (a scene's two-level image) or `flattened`.
    input: String,
    simd: String,
    schedule: String,
    rays: usize,
    /// Rays per second of the fastest repetition, and the median.
    best_rays_per_second: f64,
    median_rays_per_second: f64,
    /// TD clocks (lane steps) per ray, from the counters.
    td_clocks_per_ray: f64,
    /// Host nanoseconds per lane step in the fastest repetition.
    best_ns_per_lane_step: f64,
    /// Every repetition's trace time, seconds.
    seconds: Vec<f64>,
    /// With `--memory-model`: the fastest repetition of trace + memory model, rays per
    /// second, its ratio to `best_rays_per_second`, and the model's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_best_rays_per_second: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_speed_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory: Option<MemoryReport>,
}

#[derive(Serialize, Deserialize)]
struct Results {
    /// The CPU that ran the traces.
    cpu: String,
    mesh: String,
    /// Triangles of a mesh; primitives over all BLASes of a scene.
    triangles: usize,
    /// A scene's instances (absent for a mesh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instances: Option<usize>,
    /// Triangles of the flattened scene (with `--flatten`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flattened_triangles: Option<usize>,
    /// Per ray file, with `--flatten`: rays whose flattened hit is the instanced hit's
    /// instance and primitive (hits exactly on shared edges and procedural hits can differ).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    flattened_agreement: Vec<usize>,
    ray_flags: String,
    instance_mask: u8,
    options: String,
    build_seconds: f64,
    threads: usize,
    wave: usize,
    repeat: usize,
    rows: Vec<Row>,
}

pub fn run(mut args: BenchArgs) -> Result<i32> {
    if args.repeat == 0 {
        return Err(Error::field("--repeat", "must be at least 1"));
    }
    let shard = args.shard.resolve()?;
    let mut outputs = OutputSet::new();
    let part_id = match (shard, &args.out) {
        (Some(_), Some(out)) => Some(outputs.file("--out", out)?),
        (Some(_), None) => {
            return Err(Error::field(
                "--out",
                "--shard writes a part file: give its name with --out",
            ))
        }
        (None, Some(out)) => {
            return Err(Error::field(
                "--out",
                format!(
                    "{}: bench writes a part file only with --shard (the report goes to --json)",
                    out.display()
                ),
            ))
        }
        (None, None) => None,
    };
    // The job's identity is of every ray file; the shard traces its own.
    let job_files = args.rays.clone();
    if let Some(shard) = shard {
        let not = super::flags::not_with_shard;
        args.json.refuse_with_shard()?;
        not(args.flatten, "--flatten", "bench the scene unsharded")?;
        args.rays = (job_files.iter().enumerate())
            .filter(|(k, _)| shard.owns(*k))
            .map(|(_, p)| p.clone())
            .collect();
    }
    let wave = args.wave.wave;
    let ray_flags = args.dxr.flags()?;
    let instance_mask = args.dxr.mask()?;
    let pool = args.threads.pool()?;
    let threads = pool.current_num_threads();
    let loops = builds_to_run(&args)?;
    let json_id = args.json.register(&mut outputs)?;
    let input = super::input::load(&args.mesh)?;
    if args.flatten && matches!(input, Input::Mesh(_)) {
        return Err(Error::field(
            "--flatten",
            "applies to scene files (.toml) only",
        ));
    }
    let ray_sets: Vec<Vec<Ray>> = args
        .rays
        .iter()
        .map(|path| read_rays(path))
        .collect::<Result<_>>()?;
    let config = |simd, schedule| WaveTracerConfig {
        wave,
        strategy: args.traversal,
        parallel: threads > 1,
        simd,
        schedule,
        ray_flags,
        instance_mask,
        ..Default::default()
    };
    let mut builds = Vec::new();
    let mut tracers: Vec<WaveTracer> = Vec::new();
    let mut flat_mesh = None;
    let (primitives, instances, build_seconds) = match &input {
        Input::Mesh(mesh) => {
            let start = Instant::now();
            let built = pool.install(|| bvh::build(mesh, &args.build.options()))?;
            let build_seconds = start.elapsed().as_secs_f64();
            for &(simd, schedule) in &loops {
                builds.push(Build::new("mesh", simd, schedule));
                tracers.push(WaveTracer::new(&built.image, mesh, config(simd, schedule)));
            }
            (mesh.len(), None, build_seconds)
        }
        Input::Scene(scene) => {
            let options = TwoLevelOptions {
                blas: args.build.options(),
                rebraid: false,
            };
            let (built, build_seconds) = pool.install(|| scene.build(&options))?;
            for &(simd, schedule) in &loops {
                builds.push(Build::new("instanced", simd, schedule));
                tracers.push(scene.tracer(built.clone(), config(simd, schedule)));
            }
            if args.flatten {
                let (mesh, origin) = flatten(&scene.input);
                if mesh.is_empty() {
                    return Err(Error::field(
                        "--flatten",
                        format!("{}: the scene has no triangles", args.mesh.display()),
                    ));
                }
                let flat = pool.install(|| bvh::build(&mesh, &args.build.options()))?;
                for &(simd, schedule) in &loops {
                    builds.push(Build::new("flattened", simd, schedule));
                    tracers.push(WaveTracer::new(&flat.image, &mesh, config(simd, schedule)));
                }
                flat_mesh = Some((mesh.len(), origin));
            }
            (
                scene.primitives(),
                Some(scene.input.instances.len()),
                build_seconds,
            )
        }
    };
    super::interrupt::check(&outputs)?;
    let machine = if args.memory_model {
        Some(super::input::resolve_machine(
            Some(&args.machine),
            &SERIES_X,
        )?)
    } else {
        None
    };
    let timed = time_traces(
        &args,
        &pool,
        &builds,
        &tracers,
        &ray_sets,
        &outputs,
        machine.as_ref(),
    )?;
    let rows = rows(&args, &builds, &ray_sets, &timed);
    let cpu = cpu_name();
    let what = match instances {
        None => format!("{primitives} triangles, BVH"),
        Some(n) => format!("{n} instances, {primitives} primitives, two-level BVH"),
    };
    say!(
        "{}: {what} built in {:.3} s; {} thread(s), wave{}, best and median of {}",
        args.mesh.display(),
        build_seconds,
        threads,
        wave.lanes(),
        args.repeat
    );
    if ray_flags != RayFlags::NONE || instance_mask != 0xFF {
        say!(
            "ray flags {}, instance mask 0x{instance_mask:02X}",
            ray_flags.names()
        );
    }
    say!("host CPU: {cpu}");
    print_table(&rows);
    if args.memory_model {
        print_memory_table(&rows);
    }
    say!("hits and counters: identical in every repetition, build and schedule");
    let mut agreement = Vec::new();
    if let Some((triangles, origin)) = &flat_mesh {
        for (f, rays) in ray_sets.iter().enumerate() {
            let (instanced, flattened) = (&timed.hits[f][0], &timed.hits[f][1]);
            let same = instanced
                .iter()
                .zip(flattened)
                .filter(|(a, b)| {
                    let b = match origin.get(b.prim_id as usize) {
                        Some(&(instance, prim)) if b.is_hit() => (instance, prim),
                        _ => (u32::MAX, u32::MAX),
                    };
                    let a = if a.is_hit() {
                        (a.instance, a.prim_id)
                    } else {
                        (u32::MAX, u32::MAX)
                    };
                    a == b
                })
                .count();
            say!(
                "{}: flattened ({triangles} triangles) gives the instanced hit's instance and \
                 primitive for {same} of {} rays",
                args.rays[f].display(),
                rays.len()
            );
            agreement.push(same);
        }
    }
    let results = Results {
        cpu,
        mesh: args.mesh.display().to_string(),
        triangles: primitives,
        instances,
        flattened_triangles: flat_mesh.as_ref().map(|(n, _)| *n),
        flattened_agreement: agreement,
        ray_flags: ray_flags.names(),
        instance_mask,
        options: args.build.options().to_string(),
        build_seconds,
        threads,
        wave: wave.lanes(),
        repeat: args.repeat,
        rows,
    };
    if let (Some(shard), Some(out)) = (shard, part_id) {
        let id = job_id(&args, &job_files, &loops)?;
        say!(
            "{}: {} of the {} ray files; part {shard} of job {} ({})",
            outputs.path(out).display(),
            args.rays.len(),
            job_files.len(),
            id.job,
            id.summary
        );
        let part = BenchPart {
            files: (0..job_files.len()).filter(|&k| shard.owns(k)).collect(),
            results,
        };
        outputs.write(out, |w| write_part(w, &id, shard, &part, &[]))?;
    } else if let Some(id) = json_id {
        super::write_json(&mut outputs, id, &results)?;
    }
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    Ok(0)
}

/// One traced configuration: what is traced, the build of the wave loop, the schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Build {
    input: &'static str,
    simd: SimdPath,
    schedule: Schedule,
}

impl Build {
    fn new(input: &'static str, simd: SimdPath, schedule: Schedule) -> Build {
        Build {
            input,
            simd,
            schedule,
        }
    }
}

/// Each build of the loop and schedule the arguments name, once (`auto` named by the build
/// it resolves to).
fn builds_to_run(args: &BenchArgs) -> Result<Vec<(SimdPath, Schedule)>> {
    let mut builds = Vec::new();
    for arg in &args.simd.simd {
        let simd = arg.path()?.resolve();
        for schedule in &args.schedule {
            let variant = (simd, schedule.schedule());
            if !builds.contains(&variant) {
                builds.push(variant);
            }
        }
    }
    Ok(builds)
}

/// The timed repetitions of every ray set with every build: `seconds[f][b]` are ray set f's
/// times with build b; `hits[f][g]` and `clocks[f][g]` the hits and TD clocks of ray set f
/// on input g (the inputs in the order the builds first name them). Every run must give
/// what the first run of its ray set on its input gave, hits and counters.
struct Timed {
    seconds: Vec<Vec<Vec<f64>>>,
    hits: Vec<Vec<Vec<HitRecord>>>,
    clocks: Vec<Vec<u64>>,
    /// With the memory model: per ray set and build, every repetition's trace + model time,
    /// and the model's report.
    memory_seconds: Vec<Vec<Vec<f64>>>,
    memory: Vec<Vec<Option<MemoryReport>>>,
}

/// Each build's input, numbered in order of first appearance.
fn input_groups(builds: &[Build]) -> Vec<usize> {
    let mut names: Vec<&str> = Vec::new();
    builds
        .iter()
        .map(|b| match names.iter().position(|n| *n == b.input) {
            Some(g) => g,
            None => {
                names.push(b.input);
                names.len() - 1
            }
        })
        .collect()
}

/// The hits and counters of a ray set's first run on one input.
type FirstRun = Option<(Vec<HitRecord>, Counters)>;

fn time_traces(
    args: &BenchArgs,
    pool: &rayon::ThreadPool,
    builds: &[Build],
    tracers: &[WaveTracer],
    ray_sets: &[Vec<Ray>],
    outputs: &OutputSet,
    machine: Option<&Machine>,
) -> Result<Timed> {
    let group = input_groups(builds);
    let groups = group.iter().max().map_or(0, |g| g + 1);
    let mut seconds = vec![vec![Vec::new(); builds.len()]; ray_sets.len()];
    let mut memory_seconds = vec![vec![Vec::new(); builds.len()]; ray_sets.len()];
    let mut memory = vec![vec![None; builds.len()]; ray_sets.len()];
    let mut first: Vec<Vec<FirstRun>> = vec![vec![None; groups]; ray_sets.len()];
    for _ in 0..args.repeat {
        for (f, rays) in ray_sets.iter().enumerate() {
            for (b, tracer) in tracers.iter().enumerate() {
                super::interrupt::check(outputs)?;
                if let Some(machine) = machine {
                    // The same trace recording its fetches, then the model over them.
                    let mut hits = vec![HitRecord::MISS; rays.len()];
                    let mut counters = Counters::recording_fetches();
                    let start = Instant::now();
                    pool.install(|| tracer.closest_hit_records(rays, &mut hits, &mut counters));
                    let mut model = MemoryModel::new(machine);
                    for d in counters.fetches.take() {
                        model.run(&d, None);
                    }
                    let stats = model.finish();
                    memory_seconds[f][b].push(start.elapsed().as_secs_f64());
                    let td_only = counters.rays as f64
                        / wavetrace::wave::td::modelled_seconds(&counters, &SERIES_X).max(1e-300);
                    memory[f][b] = Some(MemoryReport::new(&stats, td_only));
                }
                // What `wavetrace trace` produces and times.
                let mut hits = vec![HitRecord::MISS; rays.len()];
                let mut counters = Counters::default();
                let start = Instant::now();
                pool.install(|| tracer.closest_hit_records(rays, &mut hits, &mut counters));
                seconds[f][b].push(start.elapsed().as_secs_f64());
                let first = &mut first[f][group[b]];
                match first {
                    None => *first = Some((hits, counters)),
                    Some((first_hits, first_counters)) => {
                        if *first_hits != hits || *first_counters != counters {
                            return Err(Error::Other(format!(
                                "{}: the {} build, {} schedule, gave other hits or counters \
                                 than the first run ({})",
                                args.rays[f].display(),
                                builds[b].simd.name(),
                                builds[b].schedule.name(),
                                builds[b].input
                            )));
                        }
                    }
                }
            }
        }
    }
    let mut hits = Vec::with_capacity(ray_sets.len());
    let mut clocks = Vec::with_capacity(ray_sets.len());
    for per_input in first {
        let (h, c): (Vec<_>, Vec<_>) = per_input
            .into_iter()
            .map(|r| r.map_or((Vec::new(), 0), |(h, c)| (h, c.td_clocks)))
            .unzip();
        hits.push(h);
        clocks.push(c);
    }
    Ok(Timed {
        seconds,
        hits,
        clocks,
        memory_seconds,
        memory,
    })
}

/// One row per ray set and build: best and median speed, clocks per ray, host time per lane
/// step.
fn rows(args: &BenchArgs, builds: &[Build], ray_sets: &[Vec<Ray>], timed: &Timed) -> Vec<Row> {
    let group = input_groups(builds);
    let mut rows = Vec::new();
    for (f, rays) in ray_sets.iter().enumerate() {
        for (b, build) in builds.iter().enumerate() {
            let clocks = timed.clocks[f][group[b]];
            let (_, best, median) = super::first_best_median(&timed.seconds[f][b]);
            let n = rays.len() as f64;
            rows.push(Row {
                rays_file: args.rays[f].display().to_string(),
                input: build.input.to_string(),
                simd: build.simd.name().to_string(),
                schedule: build.schedule.name().to_string(),
                rays: rays.len(),
                best_rays_per_second: n / best,
                median_rays_per_second: n / median,
                td_clocks_per_ray: clocks as f64 / n.max(1.0),
                best_ns_per_lane_step: best * 1e9 / (clocks as f64).max(1.0),
                seconds: timed.seconds[f][b].clone(),
                memory_best_rays_per_second: None,
                memory_speed_ratio: None,
                memory: timed.memory[f][b].clone(),
            });
            if !timed.memory_seconds[f][b].is_empty() {
                let (_, best_memory, _) = super::first_best_median(&timed.memory_seconds[f][b]);
                let row = rows.last_mut().expect("just pushed");
                row.memory_best_rays_per_second = Some(n / best_memory);
                row.memory_speed_ratio = Some(best / best_memory);
            }
        }
    }
    rows
}

/// The memory model's rows: host speed with it beside the plain trace's, and its figures.
fn print_memory_table(rows: &[Row]) {
    say!();
    say!("with the memory model (trace recording fetches + the model, same rounds):");
    for r in rows {
        let (Some(with), Some(ratio), Some(m)) = (
            r.memory_best_rays_per_second,
            r.memory_speed_ratio,
            &r.memory,
        ) else {
            continue;
        };
        say!(
            "{} ({}, {}): best {:.3} Mrays/s with it, {:.3} without: {:.2}x",
            r.rays_file,
            r.input,
            r.simd,
            with / 1e6,
            r.best_rays_per_second / 1e6,
            ratio
        );
        say_part!("{}", m.table());
    }
}

fn print_table(rows: &[Row]) {
    let width = rows
        .iter()
        .map(|r| r.rays_file.len())
        .max()
        .unwrap_or(0)
        .max(4);
    say!(
        "{:<width$} {:>9} {:>9} {:>9} {:>8} {:>11} {:>11} {:>10} {:>10}",
        "rays",
        "input",
        "build",
        "schedule",
        "rays",
        "best Mr/s",
        "median Mr/s",
        "clocks/ray",
        "ns/step"
    );
    for r in rows {
        say!(
            "{:<width$} {:>9} {:>9} {:>9} {:>8} {:>11.3} {:>11.3} {:>10.2} {:>10.2}",
            r.rays_file,
            r.input,
            r.simd,
            r.schedule,
            r.rays,
            r.best_rays_per_second / 1e6,
            r.median_rays_per_second / 1e6,
            r.td_clocks_per_ray,
            r.best_ns_per_lane_step
        );
    }
}

/// What a bench part records: the job's indices of its ray files and its report.
#[derive(Serialize, Deserialize)]
struct BenchPart {
    files: Vec<usize>,
    results: Results,
}

/// The identity of a bench job: the mesh or scene file, every ray file, and the options
/// that choose what is traced.
fn job_id(args: &BenchArgs, files: &[PathBuf], loops: &[(SimdPath, Schedule)]) -> Result<JobId> {
    use std::fmt::Write;
    let mut d = Digest::new();
    d.file("input", &args.mesh)?;
    for f in files {
        d.file("rays", f)?;
    }
    let _ = write!(
        d,
        "repeat {} wave{} {} builds {:?} build {:?} flags {:?} mask {:?} memory {} {}",
        args.repeat,
        args.wave.wave.lanes(),
        args.traversal.name(),
        loops,
        args.build.options(),
        args.dxr.flags()?,
        args.dxr.mask()?,
        args.memory_model,
        args.machine
    );
    Ok(JobId::new(
        PartKind::Bench,
        d,
        format!("bench {} ({} ray files)", args.mesh.display(), files.len()),
    ))
}

/// Merges bench parts: the rows of every ray file in `--rays` order, as one report (its
/// `build_seconds` the sum of the shards'); prints the table and writes it to `--out` and
/// `--json`.
pub fn merge(
    parts: &super::merge::Parts,
    _args: &super::merge::MergeArgs,
    outputs: &mut OutputSet,
    ids: &super::merge::MergeOutputs,
) -> Result<()> {
    let mut by_file: Vec<(usize, Vec<Row>)> = Vec::new();
    let mut merged: Option<Results> = None;
    for (path, raw) in parts.containers() {
        let mut part: BenchPart = raw.data()?;
        let rows = std::mem::take(&mut part.results.rows);
        let files = part.files.len().max(1);
        if !rows.len().is_multiple_of(files) || (rows.is_empty() != part.files.is_empty()) {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: 0,
                message: format!("{} rows for {} ray files", rows.len(), part.files.len()),
            });
        }
        let per_file = rows.len() / files;
        let mut rows = rows.into_iter();
        for &f in &part.files {
            by_file.push((f, rows.by_ref().take(per_file).collect()));
        }
        match &mut merged {
            None => merged = Some(part.results),
            Some(m) => m.build_seconds += part.results.build_seconds,
        }
    }
    let Some(mut results) = merged else {
        return Err(Error::Other("merge: no bench parts".into()));
    };
    by_file.sort_by_key(|(f, _)| *f);
    results.rows = by_file.into_iter().flat_map(|(_, rows)| rows).collect();
    print_table(&results.rows);
    let text = serde_json::to_string_pretty(&results)
        .map_err(|e| Error::Other(format!("cannot encode the report: {e}")))?;
    outputs.write_bytes(ids.out, text.as_bytes())?;
    if let Some(id) = ids.json {
        super::write_json(outputs, id, &results)?;
    }
    Ok(())
}
