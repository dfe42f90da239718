//! Reports: the documented peak tables beside what a run achieved (table and JSON).
//!
//! Modelled time on a console is the busiest TD's clocks over the clock rate (all TDs run in
//! parallel; waves are placed round-robin, see `wave::td`). "Achieved" rates divide the
//! run's tests by that time; "share of peak" divides them by the documented peak
//! (`rt-hardware.md`, [`crate::hw::peak`]). The host figures are this CPU's emulation speed.

use super::{ratio, Counters, TdCounters};
use crate::hw::peak::{format_giga, ConsoleConfig, CONSOLES, TD_COUNT_NOTE};
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
    pub counters: Counters,
}

fn console_report(c: &Counters, console: &ConsoleConfig) -> ConsoleReport {
    let n = console.tds() as usize;
    let tds: &[TdCounters] = c.per_td.for_console(console).unwrap_or(&[]);
    let clocks: Vec<u64> = (0..n).map(|i| tds.get(i).map_or(0, |t| t.clocks)).collect();
    let max = clocks.iter().copied().max().unwrap_or(0);
    let min = clocks.iter().copied().min().unwrap_or(0);
    let mean = clocks.iter().sum::<u64>() as f64 / n.max(1) as f64;
    let seconds = console.seconds_for_clocks(max);
    let per_s = |x: u64| {
        if seconds > 0.0 {
            x as f64 / seconds
        } else {
            0.0
        }
    };
    let box_rate = per_s(c.td_aabb_tests);
    let tri_rate = per_s(c.td_triangle_tests);
    ConsoleReport {
        name: console.name,
        cli_name: console.cli_name,
        clock_mhz: console.clock_mhz,
        wgps: console.wgps,
        tds: console.tds(),
        peak_box_tests_per_second: console.peak_box_tests_per_second(),
        peak_triangle_tests_per_second: console.peak_triangle_tests_per_second(),
        modelled_seconds: seconds,
        modelled_rays_per_second: per_s(c.rays),
        achieved_box_tests_per_second: box_rate,
        box_share_of_peak: box_rate / console.peak_box_tests_per_second(),
        achieved_triangle_tests_per_second: tri_rate,
        triangle_share_of_peak: tri_rate / console.peak_triangle_tests_per_second(),
        td_clocks_min: min,
        td_clocks_mean: mean,
        td_clocks_max: max,
    }
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
        let c = counters;
        let per_s = |x: u64| {
            if seconds > 0.0 {
                x as f64 / seconds
            } else {
                0.0
            }
        };
        let host_box = per_s(c.td_aabb_tests);
        Report {
            rays: c.rays,
            wave_lanes,
            strategy: strategy.to_string(),
            target: target.cli_name,
            consoles: CONSOLES.iter().map(|k| console_report(c, k)).collect(),
            host: HostReport {
                cpu: crate::host::cpu_name(),
                seconds,
                threads,
                rays_per_second: per_s(c.rays),
                instructions_per_second: per_s(c.td_box_queries + c.td_triangle_tests),
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
            },
            derived: Derived {
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
            },
            counters: c.clone(),
        }
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let d = &self.derived;
        let c = &self.counters;
        let _ = writeln!(
            s,
            "{} rays, wave{}, {} traversal, target {}",
            self.rays, self.wave_lanes, self.strategy, self.target
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<34} {:>16} {:>16}",
            "console (documented | this run)", self.consoles[0].name, self.consoles[1].name
        );
        let row = |s: &mut String, name: &str, f: &dyn Fn(&ConsoleReport) -> String| {
            let _ = writeln!(
                s,
                "{:<34} {:>16} {:>16}",
                name,
                f(&self.consoles[0]),
                f(&self.consoles[1])
            );
        };
        row(&mut s, "clock MHz / WGPs / TDs", &|k| {
            format!("{}/{}/{}", k.clock_mhz, k.wgps, k.tds)
        });
        row(&mut s, "peak ray/AABB tests per s (G)", &|k| {
            format_giga(k.peak_box_tests_per_second)
        });
        row(&mut s, "peak ray/triangle tests per s (G)", &|k| {
            format_giga(k.peak_triangle_tests_per_second)
        });
        row(&mut s, "modelled TD-busy time (ms)", &|k| {
            format!("{:.4}", k.modelled_seconds * 1e3)
        });
        row(&mut s, "modelled rays per s (G)", &|k| {
            format!("{:.3}", k.modelled_rays_per_second / 1e9)
        });
        row(&mut s, "achieved AABB tests per s (G)", &|k| {
            format!("{:.2}", k.achieved_box_tests_per_second / 1e9)
        });
        row(&mut s, "  share of peak", &|k| {
            format!("{:.1} %", 100.0 * k.box_share_of_peak)
        });
        row(&mut s, "achieved triangle tests per s (G)", &|k| {
            format!("{:.2}", k.achieved_triangle_tests_per_second / 1e9)
        });
        row(&mut s, "  share of peak", &|k| {
            format!("{:.1} %", 100.0 * k.triangle_share_of_peak)
        });
        row(&mut s, "TD clocks min / mean / max", &|k| {
            format!(
                "{}/{:.0}/{}",
                k.td_clocks_min, k.td_clocks_mean, k.td_clocks_max
            )
        });
        let _ = writeln!(s, "note: {TD_COUNT_NOTE}");
        let _ = writeln!(s);
        let _ = writeln!(s, "{:<34} {:>16}", "per ray / per wave", "");
        let kv = |s: &mut String, k: &str, v: String| {
            let _ = writeln!(s, "{k:<34} {v:>16}");
        };
        kv(
            &mut s,
            "box nodes per ray",
            format!("{:.2}", d.box_nodes_per_ray),
        );
        kv(
            &mut s,
            "AABB tests per ray",
            format!("{:.2}", d.aabb_tests_per_ray),
        );
        kv(
            &mut s,
            "  useful (real child)",
            format!("{:.1} %", 100.0 * d.aabb_useful_share),
        );
        kv(
            &mut s,
            "triangle tests per ray",
            format!("{:.2}", d.triangle_tests_per_ray),
        );
        kv(
            &mut s,
            "TD clocks per ray",
            format!("{:.2}", d.td_clocks_per_ray),
        );
        kv(
            &mut s,
            "SIMD efficiency (lanes.active)",
            format!("{:.1} %", 100.0 * d.simd_efficiency),
        );
        kv(
            &mut s,
            "instructions per wave",
            format!("{:.1}", d.instructions_per_wave),
        );
        kv(&mut s, "max stack depth", d.max_stack_depth.to_string());
        kv(&mut s, "lanes off by NaN/Inf", d.lanes_nan_inf.to_string());
        kv(&mut s, "hits", format!("{:.1} %", 100.0 * d.hit_share));
        kv(&mut s, "td.clocks", c.td_clocks.to_string());
        kv(&mut s, "td.box_queries", c.td_box_queries.to_string());
        kv(&mut s, "td.triangle_tests", c.td_triangle_tests.to_string());
        kv(&mut s, "trav.iterations", c.trav_iterations.to_string());
        let _ = writeln!(s);
        let h = &self.host;
        let _ = writeln!(
            s,
            "host emulation ({}, {} thread{}, {:.3} s)",
            h.cpu,
            h.threads,
            if h.threads == 1 { "" } else { "s" },
            h.seconds
        );
        kv(
            &mut s,
            "rays per s (M)",
            format!("{:.2}", h.rays_per_second / 1e6),
        );
        kv(
            &mut s,
            "lane instructions per s (M)",
            format!("{:.2}", h.instructions_per_second / 1e6),
        );
        kv(
            &mut s,
            "AABB tests per s (M)",
            format!("{:.2}", h.box_tests_per_second / 1e6),
        );
        for (name, share) in &h.box_rate_share_of_peak {
            kv(
                &mut s,
                &format!("  share of {name} peak"),
                format!("{:.4} %", 100.0 * share),
            );
        }
        s
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
