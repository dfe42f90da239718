//! Reports: the documented peak tables beside what a run achieved (table and JSON).
//!
//! Modelled time on a console is the busiest TD's clocks over the clock rate (all TDs run in
//! parallel; waves are placed round-robin, see `wave::td`). "Achieved" rates divide the
//! run's tests by that time; "share of peak" divides them by the documented peak
//! (`rt-hardware.md`, [`crate::hw::peak`]). The host figures are this CPU's emulation speed.

use super::{ratio, Counters, TdCounters};
use crate::hw::peak::{format_giga, ConsoleConfig, CONSOLES, TD_COUNT_NOTE};
use crate::memory::{MemoryReport, MemoryStats};
use serde::Serialize;
use std::fmt::Write;

/// One console's side of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConsoleReport {
    pub name: &'static str,
    pub cli_name: &'static str,
    pub clock_mhz: u32,
    pub wgps: u32,
    pub tds: u32,
    /// Documented peak ray/AABB tests per second.
    pub peak_box_tests_per_second: f64,
    /// Documented peak ray/triangle tests per second.
    pub peak_triangle_tests_per_second: f64,
    /// Busiest TD's clocks / clock rate.
    pub modelled_seconds: f64,
    /// Rays / modelled seconds.
    pub modelled_rays_per_second: f64,
    /// AABB tests / modelled seconds.
    pub achieved_box_tests_per_second: f64,
    pub box_share_of_peak: f64,
    /// Triangle tests / modelled seconds.
    pub achieved_triangle_tests_per_second: f64,
    pub triangle_share_of_peak: f64,
    /// Per-TD clocks: least busy, mean, busiest.
    pub td_clocks_min: u64,
    pub td_clocks_mean: f64,
    pub td_clocks_max: u64,
}

/// This CPU's emulation speed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostReport {
    /// The CPU that ran it ([`crate::host::cpu_name`]): host speeds compare only within one.
    pub cpu: String,
    /// Tracing wall time (seconds).
    pub seconds: f64,
    /// Worker threads.
    pub threads: usize,
    pub rays_per_second: f64,
    /// Lane instructions (box queries + triangle tests) per second.
    pub instructions_per_second: f64,
    /// AABB tests per second.
    pub box_tests_per_second: f64,
    /// Host AABB tests per second over each console's peak (Series S, Series X).
    pub box_rate_share_of_peak: Vec<(String, f64)>,
}

/// Per-ray and per-wave averages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Derived {
    /// `lanes.active / lanes.available` over issued instructions.
    pub simd_efficiency: f64,
    /// `td.instructions / waves`.
    pub instructions_per_wave: f64,
    /// `trav.iterations / waves`.
    pub iterations_per_wave: f64,
    pub box_nodes_per_ray: f64,
    pub aabb_tests_per_ray: f64,
    /// Share of AABB tests on a slot holding a real child.
    pub aabb_useful_share: f64,
    pub triangle_tests_per_ray: f64,
    pub td_clocks_per_ray: f64,
    pub max_stack_depth: u64,
    /// Lanes deactivated by NaN or infinite inputs.
    pub lanes_nan_inf: u64,
    pub hit_share: f64,
}

/// A two-level trace's work split by level, and its traversal shader's work.
///
/// The TD clocks of each level follow from what is counted: every TD clock is one lane's box
/// query or triangle test (`wave::td`); an instance node (type 6) reaches the TD as a user
/// node and costs no clock, and the TLAS holds only box nodes and instance nodes. So the
/// TLAS's clocks are its box queries (`tlas.box_queries`), and the BLASes' are the rest:
/// their box queries, every triangle test (procedural leaves are user nodes too).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelSplit {
    /// TLAS box queries (one clock each).
    pub tlas_box_queries: u64,
    /// TD clocks spent in the TLAS (= its box queries).
    pub tlas_clocks: u64,
    /// Instance-node queries: lanes that reached an instance node (no TD clock).
    pub tlas_instance_node_queries: u64,
    /// BLAS box queries (`td.box_queries - tlas.box_queries`).
    pub blas_box_queries: u64,
    /// BLAS triangle tests (all of `td.triangle_tests`).
    pub blas_triangle_tests: u64,
    /// TD clocks spent in the BLASes (`td.clocks - tlas clocks`).
    pub blas_clocks: u64,
    /// Share of the TD clocks spent in the TLAS.
    pub tlas_clock_share: f64,
    pub tlas_clocks_per_ray: f64,
    pub blas_clocks_per_ray: f64,
    pub instance_transitions: u64,
    pub instance_transitions_per_ray: f64,
    pub instance_node_bytes: u64,
    pub transform_alu_ops: u64,
    pub candidate_hits: u64,
    pub any_hit_invocations: u64,
    pub intersection_invocations: u64,
}

impl LevelSplit {
    /// The split of counters `c`.
    pub fn new(c: &Counters) -> LevelSplit {
        let s = &c.shader;
        let tlas_clocks = s.tlas_box_queries;
        let blas_clocks = c.td_clocks.saturating_sub(tlas_clocks);
        LevelSplit {
            tlas_box_queries: s.tlas_box_queries,
            tlas_clocks,
            tlas_instance_node_queries: s.instance_nodes,
            blas_box_queries: c.td_box_queries.saturating_sub(s.tlas_box_queries),
            blas_triangle_tests: c.td_triangle_tests,
            blas_clocks,
            tlas_clock_share: ratio(tlas_clocks, c.td_clocks),
            tlas_clocks_per_ray: ratio(tlas_clocks, c.rays),
            blas_clocks_per_ray: ratio(blas_clocks, c.rays),
            instance_transitions: s.instance_transitions,
            instance_transitions_per_ray: ratio(s.instance_transitions, c.rays),
            instance_node_bytes: s.instance_node_bytes,
            transform_alu_ops: s.transform_alu_ops,
            candidate_hits: s.candidate_hits,
            any_hit_invocations: s.any_hit_invocations,
            intersection_invocations: s.intersection_invocations,
        }
    }
}

/// A full report of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub rays: u64,
    /// Wave width of the run (32 or 64).
    pub wave_lanes: usize,
    /// Traversal strategy name.
    pub strategy: String,
    /// The console the table leads with.
    pub target: &'static str,
    pub consoles: Vec<ConsoleReport>,
    pub host: HostReport,
    pub derived: Derived,
    /// The split by level of a two-level trace (absent for a flat one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub levels: Option<LevelSplit>,
    /// The memory model's figures, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryReport>,
    pub counters: Counters,
}

/// `count / seconds`, or 0 when no time passed.
fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

fn console_report(c: &Counters, console: &ConsoleConfig) -> ConsoleReport {
    let n = console.tds() as usize;
    let tds: &[TdCounters] = c.per_td.for_console(console).unwrap_or(&[]);
    let clocks: Vec<u64> = (0..n).map(|i| tds.get(i).map_or(0, |t| t.clocks)).collect();
    let max = clocks.iter().copied().max().unwrap_or(0);
    let min = clocks.iter().copied().min().unwrap_or(0);
    let mean = clocks.iter().sum::<u64>() as f64 / n.max(1) as f64;
    let seconds = console.seconds_for_clocks(max);
    let box_rate = per_second(c.td_aabb_tests, seconds);
    let tri_rate = per_second(c.td_triangle_tests, seconds);
    ConsoleReport {
        name: console.name,
        cli_name: console.cli_name,
        clock_mhz: console.clock_mhz,
        wgps: console.wgps,
        tds: console.tds(),
        peak_box_tests_per_second: console.peak_box_tests_per_second(),
        peak_triangle_tests_per_second: console.peak_triangle_tests_per_second(),
        modelled_seconds: seconds,
        modelled_rays_per_second: per_second(c.rays, seconds),
        achieved_box_tests_per_second: box_rate,
        box_share_of_peak: box_rate / console.peak_box_tests_per_second(),
        achieved_triangle_tests_per_second: tri_rate,
        triangle_share_of_peak: tri_rate / console.peak_triangle_tests_per_second(),
        td_clocks_min: min,
        td_clocks_mean: mean,
        td_clocks_max: max,
    }
}

impl HostReport {
    /// This CPU's rates for counters `c` traced in `seconds` on `threads` threads.
    fn new(c: &Counters, seconds: f64, threads: usize) -> HostReport {
        let host_box = per_second(c.td_aabb_tests, seconds);
        HostReport {
            cpu: crate::host::cpu_name(),
            seconds,
            threads,
            rays_per_second: per_second(c.rays, seconds),
            instructions_per_second: per_second(c.td_box_queries + c.td_triangle_tests, seconds),
            box_tests_per_second: host_box,
            box_rate_share_of_peak: CONSOLES
                .iter()
                .map(|k| {
                    (
                        k.cli_name.to_string(),
                        host_box / k.peak_box_tests_per_second(),
                    )
                })
                .collect(),
        }
    }
}

impl Derived {
    /// The averages of counters `c` (each 0 where its denominator is).
    fn new(c: &Counters) -> Derived {
        Derived {
            simd_efficiency: c.simd_efficiency(),
            instructions_per_wave: ratio(c.td_instructions, c.waves),
            iterations_per_wave: ratio(c.trav_iterations, c.waves),
            box_nodes_per_ray: ratio(c.trav_box_nodes, c.rays),
            aabb_tests_per_ray: ratio(c.td_aabb_tests, c.rays),
            aabb_useful_share: ratio(c.td_aabb_useful, c.td_aabb_tests),
            triangle_tests_per_ray: ratio(c.td_triangle_tests, c.rays),
            td_clocks_per_ray: ratio(c.td_clocks, c.rays),
            max_stack_depth: c.trav_max_stack_depth,
            lanes_nan_inf: c.lanes_nan_inf(),
            hit_share: ratio(c.rays_hit, c.rays),
        }
    }
}

/// One row of the console section of [`Report::table`]: its label, and its value for one
/// console.
struct ConsoleRow {
    label: &'static str,
    value: fn(&ConsoleReport) -> String,
}

/// The console section's rows, documented figures first, then this run's.
const CONSOLE_ROWS: [ConsoleRow; 10] = [
    ConsoleRow {
        label: "clock MHz / WGPs / TDs",
        value: |k| format!("{}/{}/{}", k.clock_mhz, k.wgps, k.tds),
    },
    ConsoleRow {
        label: "peak ray/AABB tests per s (G)",
        value: |k| format_giga(k.peak_box_tests_per_second),
    },
    ConsoleRow {
        label: "peak ray/triangle tests per s (G)",
        value: |k| format_giga(k.peak_triangle_tests_per_second),
    },
    ConsoleRow {
        label: "modelled TD-busy time (ms)",
        value: |k| format!("{:.4}", k.modelled_seconds * 1e3),
    },
    ConsoleRow {
        label: "modelled rays per s (G)",
        value: |k| format!("{:.3}", k.modelled_rays_per_second / 1e9),
    },
    ConsoleRow {
        label: "achieved AABB tests per s (G)",
        value: |k| format!("{:.2}", k.achieved_box_tests_per_second / 1e9),
    },
    ConsoleRow {
        label: "  share of peak",
        value: |k| format!("{:.1} %", 100.0 * k.box_share_of_peak),
    },
    ConsoleRow {
        label: "achieved triangle tests per s (G)",
        value: |k| format!("{:.2}", k.achieved_triangle_tests_per_second / 1e9),
    },
    ConsoleRow {
        label: "  share of peak",
        value: |k| format!("{:.1} %", 100.0 * k.triangle_share_of_peak),
    },
    ConsoleRow {
        label: "TD clocks min / mean / max",
        value: |k| {
            format!(
                "{}/{:.0}/{}",
                k.td_clocks_min, k.td_clocks_mean, k.td_clocks_max
            )
        },
    },
];

/// Writes a table row: a label column and two value columns.
fn write_row2(s: &mut String, label: &str, a: &str, b: &str) {
    let _ = writeln!(s, "{label:<34} {a:>16} {b:>16}");
}

/// Writes a table row: a label column and one value column.
fn write_row(s: &mut String, label: &str, value: &str) {
    let _ = writeln!(s, "{label:<34} {value:>16}");
}

impl Report {
    /// Builds the report of a run: `counters` merged over all workers, `seconds` of tracing
    /// wall time on `threads` threads.
    pub fn new(
        counters: &Counters,
        seconds: f64,
        threads: usize,
        wave_lanes: usize,
        strategy: &str,
        target: &ConsoleConfig,
    ) -> Report {
        Report {
            rays: counters.rays,
            wave_lanes,
            strategy: strategy.to_string(),
            target: target.cli_name,
            consoles: CONSOLES
                .iter()
                .map(|k| console_report(counters, k))
                .collect(),
            host: HostReport::new(counters, seconds, threads),
            derived: Derived::new(counters),
            levels: (counters.shader.instance_nodes > 0).then(|| LevelSplit::new(counters)),
            memory: None,
            counters: Counters {
                fetches: Default::default(),
                ..counters.clone()
            },
        }
    }

    /// The report with its split by level, for a two-level trace (made by [`Self::new`]
    /// already when any lane reached an instance node).
    pub fn with_levels(mut self) -> Report {
        self.levels = Some(LevelSplit::new(&self.counters));
        self
    }

    /// The report with the memory model's figures, beside the TD-only rate of the target
    /// console.
    pub fn with_memory(mut self, stats: &MemoryStats) -> Report {
        let td_only = self
            .consoles
            .iter()
            .find(|c| c.cli_name == self.target)
            .map_or(0.0, |c| c.modelled_rays_per_second);
        self.memory = Some(MemoryReport::new(stats, td_only));
        self
    }

    /// The human-readable table: a title line, then the consoles side by side (documented
    /// peaks, then this run's modelled figures), the per-ray averages and raw counters, and
    /// this CPU's emulation speed.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} rays, wave{}, {} traversal, target {}",
            self.rays, self.wave_lanes, self.strategy, self.target
        );
        let _ = writeln!(s);
        self.write_consoles(&mut s);
        let _ = writeln!(s);
        self.write_per_ray(&mut s);
        let _ = writeln!(s);
        if let Some(levels) = &self.levels {
            write_levels(&mut s, levels);
            let _ = writeln!(s);
        }
        if let Some(memory) = &self.memory {
            s.push_str(&memory.table());
            let _ = writeln!(s);
        }
        self.write_host(&mut s);
        s
    }

    /// The two consoles side by side, with the TD-count note.
    fn write_consoles(&self, s: &mut String) {
        let [a, b] = [&self.consoles[0], &self.consoles[1]];
        write_row2(s, "console (documented | this run)", a.name, b.name);
        for (label, [x, y]) in self.console_rows() {
            write_row2(s, label, &x, &y);
        }
        let _ = writeln!(s, "note: {TD_COUNT_NOTE}");
    }

    /// The console section's rows: a label, then the value for each of [`Self::consoles`]
    /// (documented figures first, then this run's).
    pub fn console_rows(&self) -> Vec<(&'static str, [String; 2])> {
        let [a, b] = [&self.consoles[0], &self.consoles[1]];
        (CONSOLE_ROWS.iter())
            .map(|row| (row.label, [(row.value)(a), (row.value)(b)]))
            .collect()
    }

    /// Per-ray and per-wave averages, then the main counters.
    fn write_per_ray(&self, s: &mut String) {
        write_row(s, "per ray / per wave", "");
        for (label, value) in &self.per_ray_rows() {
            write_row(s, label, value);
        }
    }

    /// The per-ray and per-wave averages, then the main counters: label and value.
    pub fn per_ray_rows(&self) -> Vec<(&'static str, String)> {
        let d = &self.derived;
        let c = &self.counters;
        vec![
            ("box nodes per ray", format!("{:.2}", d.box_nodes_per_ray)),
            ("AABB tests per ray", format!("{:.2}", d.aabb_tests_per_ray)),
            (
                "  useful (real child)",
                format!("{:.1} %", 100.0 * d.aabb_useful_share),
            ),
            (
                "triangle tests per ray",
                format!("{:.2}", d.triangle_tests_per_ray),
            ),
            ("TD clocks per ray", format!("{:.2}", d.td_clocks_per_ray)),
            (
                "SIMD efficiency (lanes.active)",
                format!("{:.1} %", 100.0 * d.simd_efficiency),
            ),
            (
                "instructions per wave",
                format!("{:.1}", d.instructions_per_wave),
            ),
            ("max stack depth", d.max_stack_depth.to_string()),
            ("lanes off by NaN/Inf", d.lanes_nan_inf.to_string()),
            ("hits", format!("{:.1} %", 100.0 * d.hit_share)),
            ("td.clocks", c.td_clocks.to_string()),
            ("td.box_queries", c.td_box_queries.to_string()),
            ("td.triangle_tests", c.td_triangle_tests.to_string()),
            ("trav.iterations", c.trav_iterations.to_string()),
        ]
    }

    /// This CPU's emulation speed, and its AABB rate as a share of each console's peak.
    fn write_host(&self, s: &mut String) {
        let h = &self.host;
        let _ = writeln!(
            s,
            "host emulation ({}, {} thread{}, {:.3} s)",
            h.cpu,
            h.threads,
            if h.threads == 1 { "" } else { "s" },
            h.seconds
        );
        let rows = [
            ("rays per s (M)", h.rays_per_second),
            ("lane instructions per s (M)", h.instructions_per_second),
            ("AABB tests per s (M)", h.box_tests_per_second),
        ];
        for (label, per_second) in rows {
            write_row(s, label, &format!("{:.2}", per_second / 1e6));
        }
        for (name, share) in &h.box_rate_share_of_peak {
            write_row(
                s,
                &format!("  share of {name} peak"),
                &format!("{:.4} %", 100.0 * share),
            );
        }
    }
}

/// The two-level section: TLAS and BLAS side by side, then the shader's work.
fn write_levels(s: &mut String, l: &LevelSplit) {
    write_row2(s, "by level (two-level trace)", "TLAS", "BLAS");
    for (label, a, b) in &l.level_rows() {
        write_row2(s, label, a, b);
    }
    for (label, value) in &l.shader_rows() {
        write_row(s, label, value);
    }
}

impl LevelSplit {
    /// The TLAS and BLAS side by side: label, TLAS value, BLAS value.
    pub fn level_rows(&self) -> Vec<(&'static str, String, String)> {
        let l = self;
        vec![
            (
                "box queries",
                l.tlas_box_queries.to_string(),
                l.blas_box_queries.to_string(),
            ),
            (
                "triangle tests",
                "0".to_string(),
                l.blas_triangle_tests.to_string(),
            ),
            (
                "TD clocks",
                l.tlas_clocks.to_string(),
                l.blas_clocks.to_string(),
            ),
            (
                "TD clocks per ray",
                format!("{:.2}", l.tlas_clocks_per_ray),
                format!("{:.2}", l.blas_clocks_per_ray),
            ),
            (
                "  share of TD clocks",
                format!("{:.1} %", 100.0 * l.tlas_clock_share),
                format!("{:.1} %", 100.0 * (1.0 - l.tlas_clock_share)),
            ),
        ]
    }

    /// The traversal shader's work: label and value.
    pub fn shader_rows(&self) -> Vec<(&'static str, String)> {
        let l = self;
        vec![
            (
                "instance-node queries (no clock)",
                l.tlas_instance_node_queries.to_string(),
            ),
            (
                "shader.instance_transitions",
                l.instance_transitions.to_string(),
            ),
            (
                "  per ray",
                format!("{:.2}", l.instance_transitions_per_ray),
            ),
            (
                "shader.instance_node_bytes",
                l.instance_node_bytes.to_string(),
            ),
            ("shader.transform_alu_ops", l.transform_alu_ops.to_string()),
            ("shader.candidate_hits", l.candidate_hits.to_string()),
            (
                "shader.any_hit_invocations",
                l.any_hit_invocations.to_string(),
            ),
            (
                "shader.intersection_invocations",
                l.intersection_invocations.to_string(),
            ),
        ]
    }
}

/// The documented peak tables (`rt-hardware.md`), with the TD-count note.
pub fn peak_table() -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<24} {:>6} {:>5} {:>4} {:>22} {:>22}",
        "console", "MHz", "WGPs", "TDs", "peak AABB tests/s (G)", "peak tri tests/s (G)"
    );
    for c in CONSOLES {
        let _ = writeln!(
            s,
            "{:<24} {:>6} {:>5} {:>4} {:>22} {:>22}",
            format!("{} ({})", c.name, c.codename),
            c.clock_mhz,
            c.wgps,
            c.tds(),
            format_giga(c.peak_box_tests_per_second()),
            format_giga(c.peak_triangle_tests_per_second())
        );
    }
    let _ = writeln!(s, "note: {TD_COUNT_NOTE}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::peak::{SERIES_S, SERIES_X};

    #[test]
    fn modelled_time_is_the_busiest_td() {
        let mut c = Counters {
            rays: 1000,
            td_aabb_tests: 4000,
            td_triangle_tests: 500,
            ..Default::default()
        };
        c.per_td.ensure_len();
        c.per_td.series_s[0].clocks = 1563;
        c.per_td.series_s[1].clocks = 500;
        c.per_td.series_x[0].clocks = 1825;
        let r = Report::new(&c, 0.5, 1, 32, "full-stack", &SERIES_X);
        let s = &r.consoles[0];
        assert_eq!(s.name, "Series S");
        assert!((s.modelled_seconds - 1e-6).abs() < 1e-18);
        assert!((s.modelled_rays_per_second - 1e9).abs() < 1.0);
        assert!((s.achieved_box_tests_per_second - 4e9).abs() < 10.0);
        assert!((s.box_share_of_peak - 4e9 / SERIES_S.peak_box_tests_per_second()).abs() < 1e-12);
        assert_eq!((s.td_clocks_min, s.td_clocks_max), (0, 1563));
        assert!((r.host.rays_per_second - 2000.0).abs() < 1e-9);
        let table = r.table();
        assert!(table.contains(TD_COUNT_NOTE));
        assert!(table.contains("379.6") && table.contains("125.0"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["counters"]["rays"], 1000);
    }

    #[test]
    fn levels_split_the_clocks_and_appear_only_for_two_level_traces() {
        let mut c = Counters {
            rays: 10,
            td_clocks: 100,
            td_box_queries: 70,
            td_triangle_tests: 30,
            ..Default::default()
        };
        let flat = Report::new(&c, 1.0, 1, 32, "full-stack", &SERIES_X);
        assert!(flat.levels.is_none());
        assert!(!flat.table().contains("TLAS"));
        assert!(serde_json::to_value(&flat).unwrap().get("levels").is_none());
        c.shader.instance_nodes = 12;
        c.shader.tlas_box_queries = 25;
        c.shader.instance_transitions = 8;
        let r = Report::new(&c, 1.0, 1, 32, "full-stack", &SERIES_X);
        let l = r.levels.as_ref().unwrap();
        assert_eq!((l.tlas_clocks, l.blas_clocks), (25, 75));
        assert_eq!((l.blas_box_queries, l.blas_triangle_tests), (45, 30));
        assert_eq!(l.tlas_clocks_per_ray, 2.5);
        let table = r.table();
        assert!(table.contains("TLAS") && table.contains("shader.instance_transitions"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["counters"]["shader.instance_transitions"], 8);
        assert_eq!(json["levels"]["tlas_clocks"], 25);
    }

    #[test]
    fn peak_table_prints_the_documented_values_and_the_note() {
        let t = peak_table();
        for v in [
            "125.0",
            "31.26",
            "379.6",
            "94.9",
            "1563",
            "1825",
            TD_COUNT_NOTE,
        ] {
            assert!(t.contains(v), "missing {v}");
        }
    }
}
