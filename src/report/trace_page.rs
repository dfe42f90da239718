//! The page of a `trace` run: the summary counters, each console's TDs against the busiest,
//! the memory model's hit rates and time split, and this CPU's emulation speed.

use super::chart::{self, HBars, Series, BLUE, GREEN, GREY, ORANGE};
use super::html::{key_values, Cell, Page, Table};
use super::Parameters;
use crate::counters::report::Report;
use crate::hw::peak::{CONSOLES, TD_COUNT_NOTE};
use crate::memory::MemoryReport;
use crate::Result;

/// A table of labels and one or more value columns under `headers`.
fn value_table(headers: &[&str], rows: Vec<(String, Vec<String>)>) -> String {
    Table {
        headers: (headers.iter())
            .map(|h| (h.to_string(), String::new()))
            .collect(),
        rows: rows
            .into_iter()
            .map(|(label, values)| {
                let mut cells = vec![Cell::text(label)];
                cells.extend(values.into_iter().map(Cell::number));
                (None, cells)
            })
            .collect(),
        class: "values",
    }
    .html()
}

/// The page of the trace `report`.
pub fn trace_html(report: &Report, parameters: &Parameters) -> Result<String> {
    let mut page = Page::new(&format!(
        "wavetrace trace: {} rays, wave{}, {}",
        report.rays, report.wave_lanes, report.strategy
    ));
    page.paragraph(&format!(
        "{} rays, wave{}, {} traversal, target {}.",
        report.rays, report.wave_lanes, report.strategy, report.target
    ));

    page.section("parameters", "Parameters", "");
    page.raw(&key_values(&parameters.0));
    page.end_section();

    page.section("summary", "Summary", TD_COUNT_NOTE);
    let names: Vec<&str> = report.consoles.iter().map(|c| c.name).collect();
    let mut headers = vec!["console (documented | this run)"];
    headers.extend(&names);
    page.raw(&value_table(
        &headers,
        (report.console_rows().into_iter())
            .map(|(label, values)| (label.to_string(), values.to_vec()))
            .collect(),
    ));
    page.h3("Per ray and per wave");
    page.raw(&value_table(
        &["counter", "value"],
        (report.per_ray_rows().into_iter())
            .map(|(label, value)| (label.to_string(), vec![value]))
            .collect(),
    ));
    if let Some(levels) = &report.levels {
        page.h3("By level (two-level trace)");
        page.raw(&value_table(
            &["", "TLAS", "BLAS"],
            (levels.level_rows().into_iter())
                .map(|(label, a, b)| (label.to_string(), vec![a, b]))
                .collect(),
        ));
        page.raw(&value_table(
            &["traversal shader", "value"],
            (levels.shader_rows().into_iter())
                .map(|(label, value)| (label.to_string(), vec![value]))
                .collect(),
        ));
    }
    page.end_section();

    page.section(
        "tds",
        "TD clocks against the busiest TD",
        "The same waves placed round-robin on each console's TDs; the busiest TD's clocks \
         are the modelled time, so the gap between a TD's bar and the red line is time that \
         TD sits idle.",
    );
    // The target console first.
    let mut consoles: Vec<_> = CONSOLES.iter().collect();
    consoles.sort_by_key(|c| c.cli_name != report.target);
    for console in consoles {
        let tds = report.counters.per_td.for_console(console).unwrap_or(&[]);
        let clocks: Vec<u64> = (0..console.tds() as usize)
            .map(|i| tds.get(i).map_or(0, |t| t.clocks))
            .collect();
        page.chart(&chart::td_bars(
            &format!(
                "{}: {} TDs at {} MHz",
                console.name,
                console.tds(),
                console.clock_mhz
            ),
            &clocks,
        )?);
    }
    page.end_section();

    if let Some(memory) = &report.memory {
        memory_section(&mut page, memory)?;
    }

    let h = &report.host;
    page.section(
        "host",
        "Host emulation",
        "This CPU's speed running the model: compare only runs on the same CPU.",
    );
    let mut host = vec![
        ("CPU".to_string(), h.cpu.clone()),
        ("threads".to_string(), h.threads.to_string()),
        ("tracing seconds".to_string(), format!("{:.3}", h.seconds)),
        (
            "rays per s (M)".to_string(),
            format!("{:.2}", h.rays_per_second / 1e6),
        ),
        (
            "lane instructions per s (M)".to_string(),
            format!("{:.2}", h.instructions_per_second / 1e6),
        ),
        (
            "AABB tests per s (M)".to_string(),
            format!("{:.2}", h.box_tests_per_second / 1e6),
        ),
    ];
    for (name, share) in &h.box_rate_share_of_peak {
        host.push((
            format!("AABB rate, share of {name} peak"),
            format!("{:.4} %", 100.0 * share),
        ));
    }
    page.raw(&key_values(&host));
    page.end_section();
    Ok(page.finish())
}

/// The memory model's figures: hit rates by level, where the CUs' time went, the rate with
/// and without memory, and the rest as a table.
fn memory_section(page: &mut Page, m: &MemoryReport) -> Result<()> {
    page.section(
        "memory",
        &format!("Memory model ({})", m.machine),
        &format!(
            "Node fetches through L0, L1, L2 and DRAM with latency and bandwidth; bound: {}{}.",
            m.bound,
            m.busiest_link
                .map_or(String::new(), |link| format!(" ({link})"))
        ),
    );
    let percent = |v: f64| format!("{v:.1} %");
    page.chart(&chart::hbars(&HBars {
        title: "Hit rate by cache level",
        axis: "hit rate (%)",
        labels: vec![
            format!("L0 ({} accesses)", m.l0_accesses),
            format!("L1 ({} accesses)", m.l1_accesses),
            format!("L2 ({} accesses)", m.l2_accesses),
        ],
        series: vec![Series {
            name: "hit rate",
            colour: BLUE,
            values: vec![
                100.0 * m.l0_hit_rate,
                100.0 * m.l1_hit_rate,
                100.0 * m.l2_hit_rate,
            ],
        }],
        value_text: &percent,
    })?);
    page.chart(&chart::shares(
        "Where the CUs' time went",
        &[
            ("TD accepting lanes", m.cu_td_percent, BLUE),
            ("waiting on memory", m.cu_memory_percent, ORANGE),
            ("shader ALU", m.cu_alu_percent, GREEN),
        ],
    )?);
    page.chart(&chart::hbars(&HBars {
        title: "Modelled rays/s (10^9)",
        axis: "G rays/s",
        labels: vec!["with the memory model".into(), "TD only".into()],
        series: vec![Series {
            name: "rate",
            colour: GREY,
            values: vec![
                m.modelled_rays_per_second / 1e9,
                m.td_only_rays_per_second / 1e9,
            ],
        }],
        value_text: &|v| format!("{v:.3}"),
    })?);
    page.raw(&key_values(&[
        ("node fetches".into(), m.fetches.to_string()),
        ("fetched bytes".into(), m.fetch_bytes.to_string()),
        ("DRAM bytes".into(), m.dram_bytes.to_string()),
        (
            "DRAM bytes per ray".into(),
            format!("{:.1}", m.dram_bytes_per_ray),
        ),
        (
            "instruction latency mean / p99 (clocks)".into(),
            format!(
                "{:.0} / {:.0}",
                m.instruction_latency_mean_clocks, m.instruction_latency_p99_clocks
            ),
        ),
        (
            "1080p frame, one ray a pixel (ms)".into(),
            format!("{:.2}", m.frame_ms_1080p),
        ),
    ]));
    page.end_section();
    Ok(())
}
