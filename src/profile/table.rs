//! The ranked report as a terminal table and as CSV, and the heatmaps' shared scale.

use super::{ProfileReport, QueryKind, VariantResult};
use crate::memory::MemoryReport;

/// Column headers of the table and the CSV.
pub const COLUMNS: [&str; 26] = [
    "rank",
    "variant",
    "axis",
    "wrong_rays",
    "canonical_diffs",
    "memory_grays",
    "grays",
    "balanced_grays",
    "peak_share",
    "td_clocks_per_ray",
    "instructions_per_ray",
    "box_queries_per_ray",
    "triangle_tests_per_ray",
    "simd_efficiency",
    "max_stack_depth",
    "mean_stack_depth",
    "node_bytes_per_ray",
    "restarts_per_ray",
    "td_balance",
    "bvh_bytes",
    "host_seconds",
    "dram_bytes_per_ray",
    "l0_hit_rate",
    "l1_hit_rate",
    "l2_hit_rate",
    "bound",
];

/// The table's short headers, one per entry of [`COLUMNS`].
pub const SHORT_COLUMNS: [&str; 26] = [
    "#",
    "variant",
    "axis",
    "wrong",
    "vs fp32",
    "mem G/s",
    "TD G/s",
    "bal G/s",
    "peak",
    "clk/ray",
    "instr/ray",
    "box/ray",
    "tri/ray",
    "simd",
    "maxstk",
    "meanstk",
    "B/ray",
    "rst/ray",
    "TD bal",
    "BVH B",
    "host s",
    "DRAM B",
    "L0",
    "L1",
    "L2",
    "bound",
];

/// One variant's cells, one per entry of [`COLUMNS`], as the table and the CSV print them
/// (`-` where the memory model did not run, `WRONG` for the rank of a wrong variant).
pub fn row(r: &VariantResult) -> [String; 26] {
    let memory = |f: &dyn Fn(&MemoryReport) -> String| r.memory.as_ref().map_or("-".into(), f);
    [
        r.rank.map_or("WRONG".to_string(), |k| k.to_string()),
        r.name.clone(),
        r.axis.to_string(),
        r.wrong_rays.to_string(),
        r.canonical_diffs.to_string(),
        memory(&|m| format!("{:.3}", m.modelled_rays_per_second / 1e9)),
        format!("{:.3}", r.modelled_grays),
        format!("{:.3}", r.balanced_grays),
        format!("{:.4}", r.peak_share),
        format!("{:.2}", r.td_clocks_per_ray),
        format!("{:.3}", r.instructions_per_ray),
        format!("{:.2}", r.box_queries_per_ray),
        format!("{:.2}", r.triangle_tests_per_ray),
        format!("{:.3}", r.simd_efficiency),
        r.max_stack_depth.to_string(),
        format!("{:.2}", r.mean_stack_depth),
        format!("{:.0}", r.node_bytes_per_ray),
        format!("{:.3}", r.restarts_per_ray),
        format!("{:.3}", r.td_balance),
        r.bvh_bytes.to_string(),
        format!("{:.3}", r.host_seconds),
        memory(&|m| format!("{:.1}", m.dram_bytes_per_ray)),
        memory(&|m| format!("{:.3}", m.l0_hit_rate)),
        memory(&|m| format!("{:.3}", m.l1_hit_rate)),
        memory(&|m| format!("{:.3}", m.l2_hit_rate)),
        memory(&|m| m.bound.to_string()),
    ]
}

/// The report as CSV (one header line, one line per variant in rank order).
pub fn to_csv(report: &ProfileReport) -> String {
    let mut s = COLUMNS.join(",");
    s.push('\n');
    for r in &report.variants {
        s.push_str(&row(r).join(","));
        s.push('\n');
    }
    s
}

/// What was ranked and how: "65536 primary rays (closest hit), ranked by modelled rays/s
/// on Series X with the memory model (Series X)".
pub fn ranking_summary(report: &ProfileReport) -> String {
    format!(
        "{} {} rays ({}), ranked by modelled rays/s on {}{}",
        report.rays,
        report.ray_kind,
        match report.query {
            QueryKind::ClosestHit => "closest hit",
            QueryKind::AnyHit => "any hit",
        },
        report.console,
        match report.variants.iter().find_map(|v| v.memory.as_ref()) {
            Some(m) => format!(" with the memory model ({})", m.machine),
            None => " (TD only)".to_string(),
        }
    )
}

/// The report as an aligned text table for the terminal.
pub fn to_table(report: &ProfileReport) -> String {
    table_of(report, &ALL_COLUMNS)
}

/// The columns of [`to_compact_table`]: the rank, the variant and its guard, the two modelled
/// rates, the work per ray, the SIMD efficiency and the memory model's figures.
const COMPACT_COLUMNS: [usize; 14] = [0, 1, 2, 3, 5, 6, 9, 10, 13, 21, 22, 23, 24, 25];
/// Every column of the table.
const ALL_COLUMNS: [usize; 26] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
];

/// [`to_table`] with the columns a reader ranks by (under 120 characters wide for the
/// built-in variants' names): the others are in the CSV and JSON reports, and in
/// [`to_table`].
pub fn to_compact_table(report: &ProfileReport) -> String {
    table_of(report, &COMPACT_COLUMNS)
}

/// The ranked table with the columns `keep` (indices into the full row).
fn table_of(report: &ProfileReport, keep: &[usize]) -> String {
    let pick =
        |cells: &[String]| -> Vec<String> { keep.iter().map(|&i| cells[i].clone()).collect() };
    let rows: Vec<Vec<String>> = report.variants.iter().map(|v| pick(&row(v))).collect();
    let short = pick(&SHORT_COLUMNS.map(String::from));
    let mut widths: Vec<usize> = short.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == 1 || i == 2 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = format!("{}: {}\n", report.input, ranking_summary(report));
    out.push_str(&line(&short));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

/// A shared heatmap scale for per-ray values (TD clocks or the memory model's clocks, one
/// list per variant): the largest of their 99th percentiles (at least 1), so one outlier
/// ray does not wash out every map.
pub fn shared_scale<'a>(values: impl Iterator<Item = &'a [u32]>) -> u32 {
    values
        .map(|v| {
            let mut c = v.to_vec();
            c.sort_unstable();
            c.get((c.len().saturating_sub(1)) * 99 / 100)
                .copied()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
        .max(1)
}
