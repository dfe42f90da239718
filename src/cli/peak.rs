//! `wavetrace peak [--json FILE]`: the documented peak tables and, beside them, this machine's
//! emulated instruction rate (one thread) as a share of each console's peak.

use serde::Serialize;
use std::time::Duration;
use wavetrace::counters::report::peak_table;
use wavetrace::host::cpu_name;
use wavetrace::hw::peak::{format_giga, CONSOLES, TD_COUNT_NOTE};
use wavetrace::outfile::OutputSet;
use wavetrace::wave::microbench::{measure, InstructionRate};
use wavetrace::Result;

#[derive(clap::Args)]
pub struct PeakArgs {
    /// The tables and the host's rate as one JSON object.
    #[command(flatten)]
    pub json: super::flags::JsonArg,
    /// Microbenchmark time per instruction kind, milliseconds.
    #[arg(long, default_value_t = 300)]
    pub millis: u64,
}

#[derive(Serialize)]
struct ConsolePeak {
    name: &'static str,
    codename: &'static str,
    clock_mhz: u32,
    wgps: u32,
    tds: u32,
    peak_box_tests_per_second: f64,
    peak_triangle_tests_per_second: f64,
    host_box_share: f64,
    host_triangle_share: f64,
}

#[derive(Serialize)]
struct PeakJson {
    consoles: Vec<ConsolePeak>,
    td_count_note: &'static str,
    /// The CPU the microbenchmark ran on.
    host_cpu: String,
    host: InstructionRate,
}

pub fn run(args: PeakArgs) -> Result<i32> {
    let mut outputs = OutputSet::new();
    let json_id = args.json.register(&mut outputs)?;
    let host = measure(Duration::from_millis(args.millis));
    let consoles: Vec<ConsolePeak> = CONSOLES
        .iter()
        .map(|c| ConsolePeak {
            name: c.name,
            codename: c.codename,
            clock_mhz: c.clock_mhz,
            wgps: c.wgps,
            tds: c.tds(),
            peak_box_tests_per_second: c.peak_box_tests_per_second(),
            peak_triangle_tests_per_second: c.peak_triangle_tests_per_second(),
            host_box_share: host.box_tests_per_second / c.peak_box_tests_per_second(),
            host_triangle_share: host.triangle_tests_per_second
                / c.peak_triangle_tests_per_second(),
        })
        .collect();
    say_part!("{}", peak_table());
    say!();
    say!(
        "this machine ({}), 1 thread, wave{} instructions (emulated):",
        cpu_name(),
        host.wave_lanes
    );
    say!(
        "  AABB tests per s:     {:>10} G ({:.2} M box queries/s)",
        format_giga(host.box_tests_per_second),
        host.box_queries_per_second / 1e6
    );
    say!(
        "  triangle tests per s: {:>10} G",
        format_giga(host.triangle_tests_per_second)
    );
    for c in &consoles {
        say!(
            "  share of {} peak: AABB {:.4} %, triangle {:.4} %",
            c.name,
            100.0 * c.host_box_share,
            100.0 * c.host_triangle_share
        );
    }
    if let Some(id) = json_id {
        let json = PeakJson {
            consoles,
            td_count_note: TD_COUNT_NOTE,
            host_cpu: cpu_name(),
            host,
        };
        super::write_json(&mut outputs, id, &json)?;
    }
    outputs.commit()?;
    Ok(0)
}
