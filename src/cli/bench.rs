//! `wavetrace bench MESH --rays FILE...`: the wave model's trace speed, measured in one
//! process. The BVH is built once; every ray file is traced `--repeat` times with each
//! requested build of the wave loop and host schedule, alternating them and the files within
//! each repetition so that a shared machine's drift falls on all of them alike. Reports the
//! best and the median rate (the best is the least disturbed run), and checks that every
//! repetition, build and schedule gave the same hits and counters.

use super::bvh::BuildArgs;
use super::trace::{ScheduleArg, SimdArg};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;
use wavetrace::bvh::{self, Mesh};
use wavetrace::counters::Counters;
use wavetrace::host::cpu_name;
use wavetrace::math::{HitRecord, Ray};
use wavetrace::traverse::rayfile::read_rays;
use wavetrace::traverse::{Schedule, SimdPath, Strategy, WaveTracer, WaveTracerConfig};
use wavetrace::wave::{Tracer, WaveWidth};
use wavetrace::{Error, Result};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Mesh (.obj or .obj.gz).
    pub mesh: PathBuf,
    /// Ray files (8 x f32 per ray), traced in turn.
    #[arg(long, required = true, num_args = 1..)]
    pub rays: Vec<PathBuf>,
    /// Traces of each ray file with each build.
    #[arg(long, default_value_t = 10)]
    pub repeat: usize,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Wave width: 32 or 64.
    #[arg(long, default_value_t = 32)]
    pub wave: usize,
    /// Builds of the wave loop to compare (e.g. `--simd portable avx2`).
    #[arg(long, value_enum, num_args = 1.., default_value = "auto")]
    pub simd: Vec<SimdArg>,
    /// Traversal shader: full-stack, restart-N, walkback-N or stackless-trail (the names
    /// `profile` uses).
    #[arg(long, default_value = "full-stack", value_parser = super::parse_strategy)]
    pub traversal: Strategy,
    /// Host schedules of a wave's lanes to compare (e.g. `--schedule lockstep by-lane`).
    #[arg(long, value_enum, num_args = 1.., default_value = "lockstep")]
    pub schedule: Vec<ScheduleArg>,
    #[command(flatten)]
    pub build: BuildArgs,
    /// Also write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One ray file traced with one build.
#[derive(Serialize)]
struct Row {
    rays_file: String,
    simd: &'static str,
    schedule: &'static str,
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
}

#[derive(Serialize)]
struct Results<'a> {
    /// The CPU that ran the traces.
    cpu: String,
    mesh: String,
    triangles: usize,
    options: String,
    build_seconds: f64,
    threads: usize,
    wave: usize,
    repeat: usize,
    rows: &'a [Row],
}

pub fn run(args: BenchArgs) -> Result<i32> {
    if args.repeat == 0 {
        return Err(Error::field("--repeat", "must be at least 1"));
    }
    let wave = WaveWidth::from_lanes(args.wave)
        .ok_or_else(|| Error::field("--wave", format!("is {}, must be 32 or 64", args.wave)))?;
    let pool = super::thread_pool(Some(args.threads))?;
    let builds = builds_to_run(&args)?;
    let mesh = Mesh::load_obj(&args.mesh)?;
    let ray_sets: Vec<Vec<Ray>> = args
        .rays
        .iter()
        .map(|path| read_rays(path))
        .collect::<Result<_>>()?;
    let start = Instant::now();
    let built = pool.install(|| bvh::build(&mesh, &args.build.options()))?;
    let build_seconds = start.elapsed().as_secs_f64();
    let tracers: Vec<WaveTracer> = builds
        .iter()
        .map(|&(simd, schedule)| {
            let config = WaveTracerConfig {
                wave,
                strategy: args.traversal,
                parallel: args.threads > 1,
                simd,
                schedule,
                ..Default::default()
            };
            WaveTracer::new(&built.image, &mesh, config)
        })
        .collect();
    let timed = time_traces(&args, &pool, &builds, &tracers, &ray_sets)?;
    let rows = rows(&args, &builds, &ray_sets, &timed);
    let cpu = cpu_name();
    println!(
        "{}: {} triangles, BVH built in {:.3} s; {} thread(s), wave{}, best and median of {}",
        args.mesh.display(),
        mesh.len(),
        build_seconds,
        args.threads,
        args.wave,
        args.repeat
    );
    println!("host CPU: {cpu}");
    print_table(&rows);
    println!("hits and counters: identical in every repetition, build and schedule");
    if let Some(path) = &args.json {
        let results = Results {
            cpu,
            mesh: args.mesh.display().to_string(),
            triangles: mesh.len(),
            options: format!("{:?}", args.build.options()),
            build_seconds,
            threads: args.threads,
            wave: args.wave,
            repeat: args.repeat,
            rows: &rows,
        };
        super::write_json(path, &results)?;
    }
    Ok(0)
}

/// Each build of the loop and schedule the arguments name, once (`auto` named by the build
/// it resolves to).
fn builds_to_run(args: &BenchArgs) -> Result<Vec<(SimdPath, Schedule)>> {
    let mut builds = Vec::new();
    for arg in &args.simd {
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
/// times with build b, `clocks[f]` its TD clocks. Every run must give what the first run of
/// its ray set gave, hits and counters.
struct Timed {
    seconds: Vec<Vec<Vec<f64>>>,
    clocks: Vec<u64>,
}

fn time_traces(
    args: &BenchArgs,
    pool: &rayon::ThreadPool,
    builds: &[(SimdPath, Schedule)],
    tracers: &[WaveTracer],
    ray_sets: &[Vec<Ray>],
) -> Result<Timed> {
    let mut seconds = vec![vec![Vec::new(); builds.len()]; ray_sets.len()];
    let mut first: Vec<Option<(Vec<HitRecord>, Counters)>> = vec![None; ray_sets.len()];
    for _ in 0..args.repeat {
        for (f, rays) in ray_sets.iter().enumerate() {
            for (b, tracer) in tracers.iter().enumerate() {
                // What `wavetrace trace` produces and times.
                let mut hits = vec![HitRecord::MISS; rays.len()];
                let mut counters = Counters::default();
                let start = Instant::now();
                pool.install(|| tracer.closest_hit_records(rays, &mut hits, &mut counters));
                seconds[f][b].push(start.elapsed().as_secs_f64());
                match &first[f] {
                    None => first[f] = Some((hits, counters)),
                    Some((first_hits, first_counters)) => {
                        if *first_hits != hits || *first_counters != counters {
                            return Err(Error::Other(format!(
                                "{}: the {} build, {} schedule, gave other hits or counters \
                                 than the first run",
                                args.rays[f].display(),
                                builds[b].0.name(),
                                builds[b].1.name()
                            )));
                        }
                    }
                }
            }
        }
    }
    let clocks = first
        .iter()
        .map(|r| r.as_ref().map_or(0, |(_, c)| c.td_clocks))
        .collect();
    Ok(Timed { seconds, clocks })
}

/// One row per ray set and build: best and median speed, clocks per ray, host time per lane
/// step.
fn rows(
    args: &BenchArgs,
    builds: &[(SimdPath, Schedule)],
    ray_sets: &[Vec<Ray>],
    timed: &Timed,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for (f, rays) in ray_sets.iter().enumerate() {
        let clocks = timed.clocks[f];
        for (b, (simd, schedule)) in builds.iter().enumerate() {
            let (_, best, median) = super::first_best_median(&timed.seconds[f][b]);
            let n = rays.len() as f64;
            rows.push(Row {
                rays_file: args.rays[f].display().to_string(),
                simd: simd.name(),
                schedule: schedule.name(),
                rays: rays.len(),
                best_rays_per_second: n / best,
                median_rays_per_second: n / median,
                td_clocks_per_ray: clocks as f64 / n.max(1.0),
                best_ns_per_lane_step: best * 1e9 / (clocks as f64).max(1.0),
                seconds: timed.seconds[f][b].clone(),
            });
        }
    }
    rows
}

fn print_table(rows: &[Row]) {
    let width = rows
        .iter()
        .map(|r| r.rays_file.len())
        .max()
        .unwrap_or(0)
        .max(4);
    println!(
        "{:<width$} {:>9} {:>9} {:>8} {:>11} {:>11} {:>10} {:>10}",
        "rays", "build", "schedule", "rays", "best Mr/s", "median Mr/s", "clocks/ray", "ns/step"
    );
    for r in rows {
        println!(
            "{:<width$} {:>9} {:>9} {:>8} {:>11.3} {:>11.3} {:>10.2} {:>10.2}",
            r.rays_file,
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
