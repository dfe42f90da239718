//! `wavetrace machine NAME [--toml]`: a built-in machine of the memory model, as a summary
//! or as the TOML that `--machine FILE` reads.

use std::path::PathBuf;
use wavetrace::hw::peak::SERIES_X;
use wavetrace::memory::Machine;
use wavetrace::outfile::OutputSet;
use wavetrace::Result;

#[derive(clap::Args)]
pub struct MachineArgs {
    /// series-s, series-x, or a machine file to check and print.
    #[arg(value_name = "NAME_OR_FILE")]
    pub name: String,
    /// Print the machine as TOML (edit it and pass it back with `--machine FILE`).
    #[arg(long)]
    pub toml: bool,
    /// Write the TOML here rather than to stdout.
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: MachineArgs) -> Result<i32> {
    let machine = super::input::resolve_machine(Some(&args.name), &SERIES_X)?;
    if let Some(out) = &args.out {
        let mut outputs = OutputSet::new();
        let id = outputs.file("--out", out)?;
        outputs.write_bytes(id, machine.to_toml().as_bytes())?;
        outputs.commit()?;
        return Ok(0);
    }
    if args.toml {
        print!("{}", machine.to_toml());
    } else {
        print!("{}", summary(&machine));
    }
    Ok(0)
}

/// The machine in a few lines.
fn summary(m: &Machine) -> String {
    let kib = |b: u64| format!("{} KB", b >> 10);
    let level = |name: &str, l: &wavetrace::memory::machine::CacheLevel, per: &str| {
        format!(
            "{name:<4} {:>8} {per}, {} B lines, {} ways, {} sets, hit {} clocks, {} B/clock to the level above\n",
            kib(l.size_bytes),
            l.line_bytes,
            l.ways,
            l.sets(),
            l.hit_latency_clocks,
            l.bandwidth_to_above_bytes_per_clock
        )
    };
    let mut s = format!(
        "{}: {} CUs ({} WGPs) in {} shader arrays of {}, {} MHz, {} TDs\n\
         traversal shader: {} waves a SIMD x {} SIMDs = {} waves a CU, {} ALU clocks a step\n",
        m.name,
        m.compute_units,
        m.wgps,
        m.shader_arrays,
        m.cus_per_array,
        m.clock_mhz,
        m.tds,
        m.waves_per_simd,
        m.simds_per_cu,
        m.wave_slots_per_cu(),
        m.alu_clocks_per_step
    );
    s += &level("L0", &m.l0, "per CU");
    s += &level("L1", &m.l1, "per array");
    s += &level("L2", &m.l2, "");
    s += &format!(
        "DRAM {} GB/s ({:.1} B/clock), {} ns ({:.0} clocks) beyond L2\n",
        m.dram.bandwidth_gb_per_s,
        m.dram_bytes_per_clock(),
        m.dram.latency_ns,
        m.dram_latency_clocks()
    );
    s
}
