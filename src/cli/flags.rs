//! The flags several commands share, defined once so that their names, help and defaults
//! are the same everywhere: `--threads`, `--seed`, `--wave`, `--target`, `--simd`, `--json`
//! and `--shard` (the build options are [`super::bvh::BuildArgs`]).

use super::trace::SimdArg;
use clap::ValueEnum;
use std::path::PathBuf;
use wavetrace::hw::peak::{ConsoleConfig, SERIES_S, SERIES_X};
use wavetrace::outfile::{OutputId, OutputSet};
use wavetrace::traverse::SimdPath;
use wavetrace::wave::WaveWidth;
use wavetrace::{Error, Result};

/// `--threads N`: worker threads; all cores by default.
#[derive(clap::Args, Clone, Debug)]
pub struct ThreadsArg {
    /// Worker threads (default: all cores this process may use).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

impl ThreadsArg {
    /// The thread pool (the count checked, naming `--threads`).
    pub fn pool(&self) -> Result<rayon::ThreadPool> {
        super::thread_pool(self.threads)
    }
}

/// `--seed N`: the seed of everything random a command makes (ray directions, samples).
#[derive(clap::Args, Clone, Debug)]
pub struct SeedArg {
    /// Seed of the random numbers (secondary ray directions, pixel samples); the same seed
    /// gives the same result on any machine and thread count.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
}

/// `--wave 32|64`.
#[derive(clap::Args, Clone, Debug)]
pub struct WaveArg {
    /// Wave width in lanes: 32 or 64.
    #[arg(long, value_name = "32|64", default_value = "32", value_parser = parse_wave)]
    pub wave: WaveWidth,
}

fn parse_wave(s: &str) -> std::result::Result<WaveWidth, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .and_then(WaveWidth::from_lanes)
        .ok_or_else(|| format!("`{s}`: the wave width is 32 or 64"))
}

/// A console of the ray-tracing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Console {
    SeriesS,
    SeriesX,
}

/// `--target series-s|series-x`.
#[derive(clap::Args, Clone, Debug)]
pub struct TargetArg {
    /// Console whose TD array and clock give the modelled rates: series-s or series-x.
    #[arg(long, value_enum, default_value = "series-x")]
    pub target: Console,
}

impl TargetArg {
    /// The console's peak-table configuration.
    pub fn console(&self) -> ConsoleConfig {
        match self.target {
            Console::SeriesS => SERIES_S,
            Console::SeriesX => SERIES_X,
        }
    }
}

/// `--simd auto|portable|avx2` (several for `bench`, which times them side by side).
#[derive(clap::Args, Clone, Debug)]
pub struct SimdArgs {
    /// Build of the wave loop: auto (the fastest this CPU has), portable or avx2; hits and
    /// counters are the same for every build (`bench` takes several and times each).
    #[arg(long, value_enum, num_args = 1.., default_value = "auto")]
    pub simd: Vec<SimdArg>,
}

impl SimdArgs {
    /// The one build of a command that runs one (more than one is refused, naming the flag).
    pub fn one(&self) -> Result<SimdPath> {
        match self.simd.as_slice() {
            [one] => one.path(),
            _ => Err(Error::field(
                "--simd",
                "this command runs one build of the wave loop; give one of auto, portable, avx2",
            )),
        }
    }
}

/// `--json [FILE]`: the machine-readable report.
#[derive(clap::Args, Clone, Debug)]
pub struct JsonArg {
    /// Write the report as JSON to FILE; `-` (or no FILE) writes it to standard output, and
    /// the text report then goes to standard error. `--stats` is the same flag.
    #[arg(
        long = "json",
        visible_alias = "stats",
        value_name = "FILE",
        num_args = 0..=1,
        default_missing_value = "-"
    )]
    pub json: Option<PathBuf>,
}

impl JsonArg {
    /// Registers the report's output in `outputs` (checked before any work starts). When it
    /// is standard output, the command's text report moves to standard error.
    pub fn register(&self, outputs: &mut OutputSet) -> Result<Option<OutputId>> {
        let Some(path) = self.json.as_deref() else {
            return Ok(None);
        };
        let id = outputs.file_or_stdout("--json (--stats)", path)?;
        if outputs.has_stdout() {
            super::text_to_stderr();
        }
        Ok(Some(id))
    }

    /// Refuses `--json` beside `--shard`: `merge --json` writes the job's report.
    pub fn refuse_with_shard(&self) -> Result<()> {
        not_with_shard(
            self.json.is_some(),
            "--json",
            "`merge --json` writes the job's report",
        )
    }
}

/// `--shard I/N|auto` and `--shard-count N`: do one shard of a job and write a part file for
/// `wavetrace merge`.
#[derive(clap::Args, Clone, Debug)]
pub struct ShardArgs {
    /// Do shard I of N (0-based) of the job and write its part file to --out, for `wavetrace
    /// merge`. `auto` takes I and N from the scheduler: a Slurm array task
    /// (SLURM_ARRAY_TASK_ID, with SLURM_ARRAY_TASK_COUNT or _MIN/_MAX) or a Kubernetes
    /// Indexed Job (JOB_COMPLETION_INDEX, with --shard-count).
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// The number of shards for `--shard auto` when the scheduler gives only the index (a
    /// Kubernetes Indexed Job's completions).
    #[arg(long, value_name = "N", requires = "shard")]
    pub shard_count: Option<u32>,
}

impl ShardArgs {
    /// The shard to do, `None` for the whole job.
    pub fn resolve(&self) -> Result<Option<wavetrace::shard::Shard>> {
        use wavetrace::shard::Shard;
        match self.shard.as_deref().map(str::trim) {
            None => Ok(None),
            Some("auto") => {
                Shard::from_env(|name| std::env::var(name).ok(), self.shard_count).map(Some)
            }
            Some(text) => {
                if self.shard_count.is_some() {
                    return Err(Error::field(
                        "--shard-count",
                        "goes with --shard auto (I/N gives the count itself)",
                    ));
                }
                Shard::parse(text).map(Some)
            }
        }
    }
}

/// Refuses `flag` (given when `given`) beside `--shard`: a shard writes only its part, and
/// `merge` writes the job's outputs.
pub fn not_with_shard(given: bool, flag: &str, instead: &str) -> Result<()> {
    if given {
        return Err(Error::field(
            flag,
            format!("not with --shard: a shard writes only its part file (--out); {instead}"),
        ));
    }
    Ok(())
}
