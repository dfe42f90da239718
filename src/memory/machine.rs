//! The machine description of the memory model: compute units and their grouping, the
//! traversal shader's occupancy and ALU time, the three cache levels and DRAM.
//!
//! Two built-in machines, `series-s` and `series-x`, from public figures (each cited where
//! it is set); `wavetrace machine NAME --toml` prints one, and `--machine FILE.toml` reads a
//! changed copy. Where no public figure exists the value is a documented assumption, and
//! says so.

use crate::error::{Error, Result};
use crate::hw::peak::{ConsoleConfig, SERIES_S, SERIES_X};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One cache level: its size and geometry, hit latency and the bandwidth of its link to
/// the level above (towards DRAM).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheLevel {
    /// Capacity in bytes (per instance: per CU for L0, per shader array for L1).
    pub size_bytes: u64,
    /// Line size in bytes (a power of two, at least 64).
    pub line_bytes: u32,
    /// Associativity.
    pub ways: u32,
    /// Clocks from the request to the data when this level has the line.
    pub hit_latency_clocks: u32,
    /// Bytes per clock the link from this level to the level above moves (one link per
    /// instance of the level; L2's is its link to the memory controllers).
    pub bandwidth_to_above_bytes_per_clock: f64,
}

impl CacheLevel {
    /// Sets of the level: size / (line x ways).
    pub fn sets(&self) -> u64 {
        self.size_bytes / (self.line_bytes as u64 * self.ways as u64)
    }
}

/// The GDDR6 behind L2.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dram {
    /// Load-to-use latency of a line that misses L2, beyond L2's own latency, in ns.
    pub latency_ns: f64,
    /// Peak bandwidth in GB/s (10^9 bytes per second).
    pub bandwidth_gb_per_s: f64,
}

/// A GPU as the memory model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// The name reports print.
    pub name: String,
    /// Active compute units; one TD (ray accelerator) each.
    pub compute_units: u32,
    /// Work-group processors (two CUs each).
    pub wgps: u32,
    /// Shader arrays; each has its own L1.
    pub shader_arrays: u32,
    /// CUs per shader array (CU c is in array floor(c / cus_per_array)).
    pub cus_per_array: u32,
    /// Shader clock in MHz (the clock of the TDs and caches).
    pub clock_mhz: u32,
    /// TDs: one per CU.
    pub tds: u32,
    /// SIMDs per CU.
    pub simds_per_cu: u32,
    /// Waves of the traversal shader resident per SIMD (its occupancy).
    pub waves_per_simd: u32,
    /// Shader ALU clocks between an instruction's result and the next instruction (stack
    /// push and pop, the next pointer, the loop).
    pub alu_clocks_per_step: u32,
    /// Vector L0, one per CU.
    pub l0: CacheLevel,
    /// Graphics L1, one per shader array.
    pub l1: CacheLevel,
    /// L2, one for the GPU.
    pub l2: CacheLevel,
    pub dram: Dram,
}

impl Machine {
    /// The built-in machines' names.
    pub const BUILT_IN: [&'static str; 2] = ["series-s", "series-x"];

    /// A built-in machine by name (`series-s`, `series-x`).
    pub fn built_in(name: &str) -> Option<Machine> {
        match name {
            "series-s" => Some(series_s()),
            "series-x" => Some(series_x()),
            _ => None,
        }
    }

    /// The built-in machine of `console` (Series S or Series X).
    pub fn for_console(console: &ConsoleConfig) -> Machine {
        if console.cli_name == SERIES_S.cli_name {
            series_s()
        } else {
            series_x()
        }
    }

    /// The machine as TOML (what `--machine` reads back).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a machine serializes")
    }

    /// Reads and checks a machine file.
    pub fn from_file(path: &Path) -> Result<Machine> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| Error::parse(path, 0, format!("not UTF-8 text: {e}")))?;
        Machine::from_toml(text).map_err(|e| match e {
            Error::InvalidField { field, message } => {
                Error::parse(path, 0, format!("field `{field}`: {message}"))
            }
            Error::Other(message) => Error::parse(path, 0, message),
            other => other,
        })
    }

    /// Parses and checks a machine from TOML text.
    pub fn from_toml(text: &str) -> Result<Machine> {
        let machine: Machine = toml::from_str(text).map_err(|e| {
            let mut message = e.message().to_string();
            if let Some(span) = e.span() {
                let line = text[..span.start.min(text.len())].lines().count().max(1);
                message = format!("line {line}: {message}");
            }
            Error::Other(message)
        })?;
        machine.check()?;
        Ok(machine)
    }

    /// Checks every field's range and the fields that must agree.
    pub fn check(&self) -> Result<()> {
        let positive = [
            ("compute_units", self.compute_units),
            ("wgps", self.wgps),
            ("shader_arrays", self.shader_arrays),
            ("cus_per_array", self.cus_per_array),
            ("clock_mhz", self.clock_mhz),
            ("tds", self.tds),
            ("simds_per_cu", self.simds_per_cu),
            ("waves_per_simd", self.waves_per_simd),
        ];
        for (field, value) in positive {
            if value == 0 || value > 1 << 16 {
                return Err(Error::field(field, format!("{value} is not in 1..=65536")));
            }
        }
        if self.alu_clocks_per_step > 1 << 20 {
            return Err(Error::field(
                "alu_clocks_per_step",
                format!("{} is not in 0..=1048576", self.alu_clocks_per_step),
            ));
        }
        if self.shader_arrays * self.cus_per_array < self.compute_units
            || (self.shader_arrays - 1) * self.cus_per_array >= self.compute_units
        {
            return Err(Error::field(
                "shader_arrays",
                format!(
                    "{} arrays of {} CUs do not hold {} CUs with every array used",
                    self.shader_arrays, self.cus_per_array, self.compute_units
                ),
            ));
        }
        if self.tds != self.compute_units {
            return Err(Error::field(
                "tds",
                format!(
                    "{} TDs for {} CUs: the model has one TD per CU",
                    self.tds, self.compute_units
                ),
            ));
        }
        for (name, level) in [("l0", &self.l0), ("l1", &self.l1), ("l2", &self.l2)] {
            let field = |f: &str| format!("{name}.{f}");
            if !level.line_bytes.is_power_of_two() || !(64..=4096).contains(&level.line_bytes) {
                return Err(Error::field(
                    field("line_bytes"),
                    format!("{} is not a power of two in 64..=4096", level.line_bytes),
                ));
            }
            if level.ways == 0 || level.ways > 256 {
                return Err(Error::field(
                    field("ways"),
                    format!("{} is not in 1..=256", level.ways),
                ));
            }
            let way_bytes = level.line_bytes as u64 * level.ways as u64;
            if level.size_bytes == 0
                || level.size_bytes % way_bytes != 0
                || level.size_bytes > 1 << 34
            {
                return Err(Error::field(
                    field("size_bytes"),
                    format!(
                        "{} is not a positive multiple of line_bytes x ways ({way_bytes}) up to 16 GiB",
                        level.size_bytes
                    ),
                ));
            }
            if level.hit_latency_clocks > 1 << 20 {
                return Err(Error::field(
                    field("hit_latency_clocks"),
                    format!("{} is not in 0..=1048576", level.hit_latency_clocks),
                ));
            }
            let bw = level.bandwidth_to_above_bytes_per_clock;
            if !(bw.is_finite() && bw > 0.0 && bw <= 1e6) {
                return Err(Error::field(
                    field("bandwidth_to_above_bytes_per_clock"),
                    format!("{bw} is not in (0, 1e6]"),
                ));
            }
        }
        // The model moves whole lines between levels and looks a missed line up above by
        // its line number, so every level has the L0's line size.
        for (name, level) in [("l1", &self.l1), ("l2", &self.l2)] {
            if level.line_bytes != self.l0.line_bytes {
                return Err(Error::field(
                    format!("{name}.line_bytes"),
                    format!(
                        "{} differs from l0.line_bytes ({}): the model needs one line size at every level",
                        level.line_bytes, self.l0.line_bytes
                    ),
                ));
            }
        }
        let d = &self.dram;
        if !(d.latency_ns.is_finite() && (0.0..=1e6).contains(&d.latency_ns)) {
            return Err(Error::field(
                "dram.latency_ns",
                format!("{} is not in [0, 1e6]", d.latency_ns),
            ));
        }
        if !(d.bandwidth_gb_per_s.is_finite()
            && d.bandwidth_gb_per_s > 0.0
            && d.bandwidth_gb_per_s <= 1e6)
        {
            return Err(Error::field(
                "dram.bandwidth_gb_per_s",
                format!("{} is not in (0, 1e6]", d.bandwidth_gb_per_s),
            ));
        }
        Ok(())
    }

    /// Shader clocks per second.
    pub fn clock_hz(&self) -> f64 {
        self.clock_mhz as f64 * 1e6
    }

    /// DRAM latency in shader clocks.
    pub fn dram_latency_clocks(&self) -> f64 {
        self.dram.latency_ns * 1e-9 * self.clock_hz()
    }

    /// DRAM bandwidth in bytes per shader clock.
    pub fn dram_bytes_per_clock(&self) -> f64 {
        self.dram.bandwidth_gb_per_s * 1e9 / self.clock_hz()
    }

    /// Wave slots of one CU for the traversal shader.
    pub fn wave_slots_per_cu(&self) -> u32 {
        self.simds_per_cu * self.waves_per_simd
    }

    /// The shader array of CU `cu`.
    pub fn array_of(&self, cu: u32) -> u32 {
        cu / self.cus_per_array
    }

    /// Peak box tests per second: four per TD clock.
    pub fn peak_box_tests_per_s(&self) -> f64 {
        4.0 * self.tds as f64 * self.clock_hz()
    }
}

/// The traversal shader's assumed occupancy and ALU time, the same on both consoles.
///
/// No public figure. RDNA2 holds at most 16 waves per SIMD (Chips and Cheese, "AMD's RDNA 2:
/// Shooting For the Top", 2023); a DXR traversal loop is register-heavy (its stack and the
/// ray), so 8 waves per SIMD is assumed. The ALU time per step (the short stack's push or
/// pop, the next node pointer, the loop branch: about 20 instructions) is assumed to be 20
/// clocks.
const WAVES_PER_SIMD: u32 = 8;
const ALU_CLOCKS_PER_STEP: u32 = 20;

/// What sets one console's machine apart; the rest is RDNA2's and shared.
struct ConsoleParts {
    console: ConsoleConfig,
    name: &'static str,
    shader_arrays: u32,
    cus_per_array: u32,
    /// L2 slices of 256 KB, one per 16-bit GDDR6 channel.
    l2_slices: u64,
    dram_gb_per_s: f64,
}

/// A console's machine: its CUs from the peak table's WGPs (two CUs, one TD each), two
/// SIMD32 per CU (Chips and Cheese, "AMD's RDNA 2: Shooting For the Top"), the shared L0 and
/// L1, an L2 of `l2_slices` slices of 256 KB, 16 ways and 128-byte lines (unofficial AMDGPU
/// docs, "cache"), whose link to the memory controllers moves 64 bytes a clock a slice
/// (assumption; far above DRAM's rate, so it does not bind).
fn console_machine(parts: ConsoleParts) -> Machine {
    let c = parts.console;
    Machine {
        name: parts.name.into(),
        compute_units: c.wgps * c.tds_per_wgp,
        wgps: c.wgps,
        shader_arrays: parts.shader_arrays,
        cus_per_array: parts.cus_per_array,
        clock_mhz: c.clock_mhz,
        tds: c.wgps * c.tds_per_wgp,
        simds_per_cu: 2,
        waves_per_simd: WAVES_PER_SIMD,
        alu_clocks_per_step: ALU_CLOCKS_PER_STEP,
        l0: L0,
        l1: L1,
        l2: CacheLevel {
            size_bytes: parts.l2_slices * (256 << 10),
            line_bytes: 128,
            ways: 16,
            hit_latency_clocks: L2_LATENCY,
            bandwidth_to_above_bytes_per_clock: parts.l2_slices as f64 * 64.0,
        },
        dram: Dram {
            latency_ns: DRAM_LATENCY_NS,
            bandwidth_gb_per_s: parts.dram_gb_per_s,
        },
    }
}

/// XBOX Series X ("Anaconda").
pub fn series_x() -> Machine {
    console_machine(ConsoleParts {
        // 26 WGPs (52 CUs) at 1825 MHz: rt-hardware.md "Where the hardware sits"; Microsoft
        // at Hot Chips 32 (2020), "26 active dual CUs", 1.825 GHz (56 CUs on the die).
        console: SERIES_X,
        name: "Series X",
        // No public figure for the array layout: 2 shader engines of 2 arrays (RDNA2's usual
        // layout; 56 = 4 x 14 CUs on the die) with 13 CUs active per array is assumed.
        shader_arrays: 4,
        cus_per_array: 13,
        // 5 MB (TechPowerUp GPU database, "Xbox Series X GPU"): 20 slices, one per 16-bit
        // channel of the 320-bit bus.
        l2_slices: 20,
        // 560 GB/s for the 10 GB "GPU optimal" memory (Hot Chips 32; 320-bit GDDR6 at
        // 14 Gbps).
        dram_gb_per_s: 560.0,
    })
}

/// XBOX Series S ("Lockhart").
pub fn series_s() -> Machine {
    console_machine(ConsoleParts {
        // 10 WGPs (20 CUs): rt-hardware.md "Where the hardware sits". Its peak table follows
        // 1563 MHz (Microsoft's specification sheet says 1.565 GHz); the table's clock is
        // kept, so that the model's peak box rate is the documented 125.0 G/s.
        console: SERIES_S,
        name: "Series S",
        // No public figure: one shader engine of 2 arrays, 10 CUs active in each, assumed.
        shader_arrays: 2,
        cus_per_array: 10,
        // 2 MB (TechPowerUp GPU database, "Xbox Series S GPU"): 8 slices on the 128-bit bus.
        l2_slices: 8,
        // 224 GB/s for the 8 GB pool (Microsoft's specification sheet, September 2020;
        // 128-bit GDDR6 at 14 Gbps).
        dram_gb_per_s: 224.0,
    })
}

/// The vector L0 of a CU: 16 KB (AMD ROCm documentation, "GPU architecture specifications",
/// gfx1030), 128-byte lines, 32 ways (unofficial AMDGPU docs, "cache"). No public figure for
/// its hit latency or its link to L1: 100 clocks and 64 bytes a clock are assumed (latencies
/// are counted in shader clocks: RDNA's caches run on the shader clock, Chips and Cheese,
/// "Latency Testing is Hard", 2023).
const L0: CacheLevel = CacheLevel {
    size_bytes: 16 << 10,
    line_bytes: 128,
    ways: 32,
    hit_latency_clocks: 100,
    bandwidth_to_above_bytes_per_clock: 64.0,
};

/// The graphics L1 of a shader array: 128 KB (ROCm, as above), 16 ways (unofficial AMDGPU
/// docs), 128-byte lines assumed as L0's and L2's. No public figure for its latency or its
/// link to L2: 60 clocks more than L0, and 4 x 64 bytes a clock, are assumed.
const L1: CacheLevel = CacheLevel {
    size_bytes: 128 << 10,
    line_bytes: 128,
    ways: 16,
    hit_latency_clocks: 60,
    bandwidth_to_above_bytes_per_clock: 256.0,
};

/// L2 is about 66 ns beyond L0 on an RX 6800 XT (Chips and Cheese, "Measuring GPU Memory
/// Latency", 2021), ~150 clocks at ~2.25 GHz: L1's 60 and L2's own 90.
const L2_LATENCY: u32 = 90;

/// No public figure for GDDR6 latency on RDNA2 (Chips and Cheese only compares it with
/// Ampere's): about 350 ns from the shader in all is assumed, of which the caches' 250
/// clocks (~137 ns at 1825 MHz) leave 210 ns beyond L2. Held in ns: DRAM is not on the
/// shader clock.
const DRAM_LATENCY_NS: f64 = 210.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_machines_check_and_round_trip_through_toml() {
        for name in Machine::BUILT_IN {
            let m = Machine::built_in(name).unwrap();
            m.check().unwrap();
            assert_eq!(Machine::from_toml(&m.to_toml()).unwrap(), m);
        }
    }

    #[test]
    fn the_peak_box_rate_is_the_spec_table() {
        // rt-hardware.md: 379.6 G box tests/s (Series X), 125.0 G (Series S).
        let x = series_x().peak_box_tests_per_s() / 1e9;
        let s = series_s().peak_box_tests_per_s() / 1e9;
        assert!((x - 379.6).abs() < 0.05, "{x}");
        assert!((s - 125.0).abs() < 0.05, "{s}");
    }

    #[test]
    fn a_bad_field_is_named() {
        let mut m = series_x();
        m.l1.ways = 0;
        let e = Machine::from_toml(&m.to_toml()).unwrap_err().to_string();
        assert!(e.contains("l1.ways"), "{e}");
        let mut m = series_x();
        m.cus_per_array = 5;
        let e = Machine::from_toml(&m.to_toml()).unwrap_err().to_string();
        assert!(e.contains("shader_arrays"), "{e}");
        let mut m = series_x();
        m.l2.line_bytes = 64;
        m.l2.size_bytes = 64 * m.l2.ways as u64 * 1024;
        let e = Machine::from_toml(&m.to_toml()).unwrap_err().to_string();
        assert!(
            e.contains("l2.line_bytes") && e.contains("l0.line_bytes"),
            "{e}"
        );
        let e = Machine::from_toml("name = 1").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
