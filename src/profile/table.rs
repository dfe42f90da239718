//! The ranked report as a terminal table and as CSV, and the heatmaps' shared scale.

use super::{ProfileReport, QueryKind, VariantResult};

/// Column headers of the table and the CSV.
pub const COLUMNS: [&str; 20] = [
    "rank",
    "variant",
    "axis",
    "wrong_rays",
    "canonical_diffs",
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
];

fn row(r: &VariantResult) -> [String; 20] {
    [
        r.rank.map_or("WRONG".to_string(), |k| k.to_string()),
        r.name.clone(),
        r.axis.to_string(),
        r.wrong_rays.to_string(),
        r.canonical_diffs.to_string(),
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

/// The report as an aligned text table for the terminal.
pub fn to_table(report: &ProfileReport) -> String {
    let short = [
        "#",
        "variant",
        "axis",
        "wrong",
        "vs fp32",
        "Grays/s",
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
    ];
    let rows: Vec<[String; 20]> = report.variants.iter().map(row).collect();
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
    let mut out = format!(
        "{}: {} {} rays ({}), ranked by modelled rays/s on {}\n",
        report.input,
        report.rays,
        report.ray_kind,
        match report.query {
            QueryKind::ClosestHit => "closest hit",
            QueryKind::AnyHit => "any hit",
        },
        report.console
    );
    out.push_str(&line(&short.map(String::from)));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

/// A shared heatmap scale for `results`: the largest of their 99th-percentile per-ray
/// clocks (at least 1), so one outlier ray does not wash out every map.
pub fn shared_heatmap_scale(results: &[VariantResult]) -> u32 {
    results
        .iter()
        .map(|r| {
            let mut c = r.ray_clocks.clone();
            c.sort_unstable();
            c.get((c.len().saturating_sub(1)) * 99 / 100)
                .copied()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
        .max(1)
}
