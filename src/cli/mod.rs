//! clap command line: one file per subcommand.

use clap::{Parser, Subcommand};
use std::sync::atomic::{AtomicBool, Ordering};
use wavetrace::outfile::{OutputId, OutputSet};

/// Prints a line of a command's text report: to standard output, or to standard error when
/// the machine-readable report has standard output (`--json -`).
macro_rules! say {
    ($($arg:tt)*) => {
        if $crate::cli::text_on_stderr() {
            eprintln!($($arg)*)
        } else {
            println!($($arg)*)
        }
    };
}

/// [`say!`] without the newline.
macro_rules! say_part {
    ($($arg:tt)*) => {
        if $crate::cli::text_on_stderr() {
            eprint!($($arg)*)
        } else {
            print!($($arg)*)
        }
    };
}

mod bench;
mod bvh;
mod flags;
mod input;
mod interrupt;
mod isa;
mod machine;
mod merge;
mod peak;
mod profile;
mod progress;
mod rays;
mod render;
mod tiling;
mod trace;

#[derive(Parser)]
#[command(
    name = "wavetrace",
    version,
    about = "XBOX Series X|S ray-tracing hardware model"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate instruction test vectors (JSON Lines) with the reference instruction.
    Isa(isa::IsaArgs),
    /// Build a BVH for a mesh and report its quality.
    Bvh(bvh::BvhArgs),
    /// Trace a ray file through the wave model.
    Trace(trace::TraceArgs),
    /// The wave model's trace speed on ray files: repeated, builds side by side.
    Bench(bench::BenchArgs),
    /// The documented peak tables and this machine's emulation rate.
    Peak(peak::PeakArgs),
    /// Render a scene to PNG or EXR.
    Render(render::RenderArgs),
    /// Compare traversal strategies and BVH layouts on a scene.
    Profile(profile::ProfileArgs),
    /// Write the ray sets profile makes (camera, diffuse, shadow, ao) as a ray file.
    Rays(rays::RaysArgs),
    /// Texture tiling: layouts, swizzling, reference vectors.
    Tiling(tiling::TilingArgs),
    /// A machine of the memory model (caches, latencies, bandwidths), or its TOML.
    Machine(machine::MachineArgs),
    /// Merge the part files of a sharded job (`--shard`) into the job's outputs.
    Merge(merge::MergeArgs),
}

/// Runs the CLI; returns the process exit code.
pub fn main() -> i32 {
    default_sigpipe();
    let cli = Cli::parse();
    // The long commands stop cleanly on SIGINT and SIGTERM; `isa` (which may wait on stdin)
    // and `peak` keep the default actions.
    if !matches!(
        cli.command,
        Command::Isa(_) | Command::Peak(_) | Command::Machine(_)
    ) {
        interrupt::install();
    }
    let result = match cli.command {
        Command::Isa(a) => isa::run(a),
        Command::Bvh(a) => bvh::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Peak(a) => peak::run(a),
        Command::Render(a) => render::run(a),
        Command::Profile(a) => profile::run(a),
        Command::Rays(a) => rays::run(a),
        Command::Tiling(a) => tiling::run(a),
        Command::Machine(a) => machine::run(a),
        Command::Merge(a) => merge::run(a),
    };
    match result {
        Ok(code) => code,
        // An interrupted command says so, whatever stopped it.
        Err(e) => match interrupt::received() {
            Some(signal) => {
                eprintln!("{e}");
                interrupt::exit_code(signal)
            }
            None => {
                eprintln!("error: {e}");
                2
            }
        },
    }
}

/// Gives SIGPIPE its default action, so that a reader closing the pipe early (`wavetrace bvh
/// MESH | head`) ends the process quietly, as it ends other command-line tools, instead of
/// a panic in `println!` (Rust ignores SIGPIPE by default). Output files are unaffected:
/// they are written to a temporary name and renamed, and SIGPIPE comes only from a write to
/// the closed pipe.
fn default_sigpipe() {
    #[cfg(unix)]
    {
        // libc is linked into every Rust program on unix; SIGPIPE is 13 and SIG_DFL is 0 on
        // Linux and the BSDs (macOS included).
        unsafe extern "C" {
            fn signal(signum: i32, handler: usize) -> usize;
        }
        const SIGPIPE: i32 = 13;
        const SIG_DFL: usize = 0;
        // SAFETY: sets the action of one signal to the default, before any thread starts.
        unsafe {
            signal(SIGPIPE, SIG_DFL);
        }
    }
}

/// Set when standard output carries a machine-readable report: the text report then goes to
/// standard error ([`say!`]).
static TEXT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Sends the rest of the text report to standard error.
fn text_to_stderr() {
    TEXT_TO_STDERR.store(true, Ordering::Relaxed);
}

/// Whether the text report goes to standard error.
fn text_on_stderr() -> bool {
    TEXT_TO_STDERR.load(Ordering::Relaxed)
}

/// Writes `value` as pretty JSON (and a final newline) to the output `id` of `outputs`.
fn write_json(
    outputs: &mut OutputSet,
    id: OutputId,
    value: &impl serde::Serialize,
) -> wavetrace::Result<()> {
    let mut json = serde_json::to_string_pretty(value).map_err(|e| {
        wavetrace::Error::Other(format!("cannot encode {}: {e}", outputs.path(id).display()))
    })?;
    json.push('\n');
    outputs.write_bytes(id, json.as_bytes())
}

/// Most worker threads a command's `--threads` may ask for: far more than any machine this
/// runs on has cores, and few enough that starting them stays quick.
pub(crate) const MAX_THREADS: usize = 1024;

/// The rayon pool for a command's `--threads` (all cores when absent; 0 and more than
/// [`MAX_THREADS`] are refused).
fn thread_pool(threads: Option<usize>) -> wavetrace::Result<rayon::ThreadPool> {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        if !(1..=MAX_THREADS).contains(&n) {
            return Err(wavetrace::Error::field(
                "--threads",
                format!("{n} is not from 1 to {MAX_THREADS}"),
            ));
        }
        builder = builder.num_threads(n);
    }
    builder
        .build()
        .map_err(|e| wavetrace::Error::Other(format!("cannot start the thread pool: {e}")))
}

/// `--traversal`: a traversal strategy by the name `profile` gives it.
fn parse_strategy(name: &str) -> std::result::Result<wavetrace::traverse::Strategy, String> {
    wavetrace::traverse::Strategy::from_name(name).ok_or_else(|| {
        format!(
            "unknown traversal `{name}`: full-stack, restart-N, walkback-N (N from 1 to {}) \
             or stackless-trail",
            wavetrace::traverse::Strategy::MAX_SHORT_STACK
        )
    })
}

/// The first, smallest and median of `seconds` (not empty; the median of an even count is
/// the mean of the two middle values).
pub(crate) fn first_best_median(seconds: &[f64]) -> (f64, f64, f64) {
    let mut sorted = seconds.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    (seconds[0], sorted[0], median)
}

#[cfg(test)]
mod tests {
    use super::first_best_median;

    #[test]
    fn first_best_median_of_odd_and_even_counts() {
        assert_eq!(first_best_median(&[0.5]), (0.5, 0.5, 0.5));
        assert_eq!(first_best_median(&[0.9, 0.4, 0.6]), (0.9, 0.4, 0.6));
        assert_eq!(first_best_median(&[0.7, 0.2, 0.5, 0.3]), (0.7, 0.2, 0.4));
    }
}
