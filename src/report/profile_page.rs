//! The page of a `profile` run: the ranked table, the rates and clocks by variant, the TDs'
//! balance, and the camera rays' heatmaps under one legend.

use super::chart::{self, HBars, Series, BLUE, GREY, ORANGE, RED};
use super::html::{data_uri, escape, key_values, Cell, Page, Table};
use super::Parameters;
use crate::hw::peak::ConsoleConfig;
use crate::profile::heatmap::{colormap, heatmap_only, label};
use crate::profile::{self, ProfileReport, VariantResult, COLUMNS, SHORT_COLUMNS};
use crate::{Error, Result};
use std::fmt::Write;

/// The image size of a profile's camera rays (one ray a pixel, row-major), for its heatmaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CameraMaps {
    pub width: u32,
    pub height: u32,
}

/// A variant's name as the charts label it: `WRONG` after a variant that failed the guard.
fn chart_label(v: &VariantResult) -> String {
    match v.rank {
        Some(_) => v.name.clone(),
        None => format!("{} (WRONG)", v.name),
    }
}

/// The TD clocks of `v` on `console`, one per TD (zeros where nothing ran).
fn td_clocks(v: &VariantResult, console: &ConsoleConfig) -> Vec<u64> {
    let tds = v.counters.per_td.for_console(console).unwrap_or(&[]);
    (0..console.tds() as usize)
        .map(|i| tds.get(i).map_or(0, |t| t.clocks))
        .collect()
}

/// The page of `report`, profiled on `console`; with `camera`, the heatmaps of the camera
/// rays too.
pub fn profile_html(
    report: &ProfileReport,
    console: &ConsoleConfig,
    parameters: &Parameters,
    camera: Option<CameraMaps>,
) -> Result<String> {
    let memory = report.variants.iter().find_map(|v| v.memory.as_ref());
    let mut page = Page::new(&format!("wavetrace profile: {}", report.input));
    page.paragraph(&format!("{}.", profile::ranking_summary(report)));
    let wrong: Vec<&str> = (report.variants.iter())
        .filter(|v| v.rank.is_none())
        .map(|v| v.name.as_str())
        .collect();
    if !wrong.is_empty() {
        page.raw(&format!(
            "<p class=\"warning\">WRONG (hits differ from the reference traversal, not \
             ranked): {}</p>\n",
            escape(&wrong.join(", "))
        ));
    }

    page.section("parameters", "Parameters", "");
    page.raw(&key_values(&parameters.0));
    page.end_section();

    page.section(
        "table",
        "Ranked variants",
        &format!(
            "Every column of the terminal table; click a header to sort (hover for the CSV \
             column name). Guard: the scalar reference traversal on each variant's own image, \
             t within {} ULP; `vs fp32` counts rays that differ geometrically from the \
             canonical FP32 image.",
            report.t_tolerance_ulps
        ),
    );
    page.raw(&ranked_table(report));
    page.end_section();

    page.section(
        "rates",
        "Modelled rate and cost by variant",
        "Rays per second on the console's TD array (the busiest TD's clocks set the time); \
         with the memory model, the rate with node fetches through L0/L1/L2 and DRAM beside \
         the TD-only rate.",
    );
    let labels: Vec<String> = report.variants.iter().map(chart_label).collect();
    let mut rate_series = Vec::new();
    if memory.is_some() {
        rate_series.push(Series {
            name: "with the memory model",
            colour: BLUE,
            values: (report.variants.iter())
                .map(|v| {
                    v.memory
                        .as_ref()
                        .map_or(f64::NAN, |m| m.modelled_rays_per_second / 1e9)
                })
                .collect(),
        });
    }
    rate_series.push(Series {
        name: "TD only",
        colour: ORANGE,
        values: report.variants.iter().map(|v| v.modelled_grays).collect(),
    });
    page.chart(&chart::hbars(&HBars {
        title: &format!("Modelled rays/s on {} (10^9)", report.console),
        axis: "G rays/s",
        labels: labels.clone(),
        series: rate_series,
        value_text: &|v| {
            if v.is_finite() {
                format!("{v:.3}")
            } else {
                "-".into()
            }
        },
    })?);
    page.chart(&chart::hbars(&HBars {
        title: "TD clocks per ray",
        axis: "TD clocks per ray",
        labels: labels.clone(),
        series: vec![Series {
            name: "TD clocks per ray",
            colour: BLUE,
            values: report
                .variants
                .iter()
                .map(|v| v.td_clocks_per_ray)
                .collect(),
        }],
        value_text: &|v| format!("{v:.2}"),
    })?);
    page.end_section();

    page.section(
        "tds",
        "TD balance",
        &format!(
            "Waves go to {}'s {} TDs round-robin; the busiest TD's clocks are the modelled \
             time, so clocks above the mean are time the other TDs sit idle.",
            console.name,
            console.tds()
        ),
    );
    let per_variant: Vec<Vec<u64>> = (report.variants.iter())
        .map(|v| td_clocks(v, console))
        .collect();
    page.chart(&chart::hbars(&HBars {
        title: "TD clocks: the busiest TD and the mean TD of each variant",
        axis: "TD clocks",
        labels: labels.clone(),
        series: vec![
            Series {
                name: "busiest TD (the modelled time)",
                colour: RED,
                values: (per_variant.iter())
                    .map(|c| c.iter().copied().max().unwrap_or(0) as f64)
                    .collect(),
            },
            Series {
                name: "mean TD",
                colour: GREY,
                values: (per_variant.iter())
                    .map(|c| c.iter().sum::<u64>() as f64 / c.len().max(1) as f64)
                    .collect(),
            },
        ],
        value_text: &|v| format!("{v:.0}"),
    })?);
    if let (Some(best), Some(clocks)) = (report.variants.first(), per_variant.first()) {
        if best.rank == Some(1) {
            page.chart(&chart::td_bars(
                &format!(
                    "Clocks of each of {}'s TDs, fastest variant ({})",
                    console.name, best.name
                ),
                clocks,
            )?);
        }
    }
    page.end_section();

    if let Some(CameraMaps { width, height }) = camera {
        heatmaps(&mut page, report, width, height)?;
    }
    Ok(page.finish())
}

/// The ranked table with every column of the terminal table, one row per variant keyed by
/// its name.
fn ranked_table(report: &ProfileReport) -> String {
    Table {
        headers: SHORT_COLUMNS
            .iter()
            .zip(COLUMNS)
            .map(|(short, long)| (short.to_string(), long.to_string()))
            .collect(),
        rows: (report.variants.iter())
            .map(|v| {
                let cells = profile::row(v)
                    .into_iter()
                    .enumerate()
                    .map(|(i, text)| match i {
                        1 | 2 => Cell::text(text),
                        _ => Cell::number(text),
                    })
                    .collect();
                (Some(v.name.clone()), cells)
            })
            .collect(),
        class: "sortable",
    }
    .html()
}

/// The heatmaps of the camera rays: TD clocks per pixel for every variant, then the memory
/// model's clocks per pixel where it timed each ray; each set on one scale with one legend.
fn heatmaps(page: &mut Page, report: &ProfileReport, width: u32, height: u32) -> Result<()> {
    page.section(
        "heatmaps",
        "Heatmaps (camera rays)",
        "Cost per pixel; every map of a set shares the scale in its legend, whose top is \
         the largest of the maps' 99th percentiles (pixels above it are white).",
    );
    let all: Vec<&VariantResult> = report.variants.iter().collect();
    map_set(
        page,
        &all,
        width,
        height,
        "TD clocks per pixel",
        "td",
        |v| &v.ray_clocks,
    )?;
    let timed: Vec<&VariantResult> = (report.variants.iter())
        .filter(|v| !v.ray_memory_clocks.is_empty())
        .collect();
    if !timed.is_empty() {
        map_set(
            page,
            &timed,
            width,
            height,
            "Modelled clocks per pixel with the memory model (none for refill variants)",
            "memory",
            |v| &v.ray_memory_clocks,
        )?;
    }
    page.end_section();
    Ok(())
}

/// One set of heatmaps of `values(v)` for `variants`, under a heading and a legend.
fn map_set(
    page: &mut Page,
    variants: &[&VariantResult],
    width: u32,
    height: u32,
    heading: &str,
    id: &str,
    values: impl Fn(&VariantResult) -> &Vec<u32>,
) -> Result<()> {
    let pixels = width as usize * height as usize;
    let variants: Vec<&VariantResult> = (variants.iter())
        .copied()
        .filter(|v| values(v).len() == pixels)
        .collect();
    if variants.is_empty() {
        return Ok(());
    }
    let scale = profile::shared_scale(variants.iter().map(|v| &values(v)[..]));
    page.h3(heading);
    page.raw(&legend_svg(id, scale));
    page.raw("<div class=\"maps\">\n");
    for v in &variants {
        let img = heatmap_only(values(v), width, height, scale);
        let mut png = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .map_err(|e| Error::Other(format!("cannot encode a heatmap PNG: {e}")))?;
        let name = escape(&chart_label(v));
        page.raw(&format!(
            "<figure><img alt=\"{name}\" width=\"{width}\" height=\"{height}\" \
             src=\"{}\"><figcaption>{name}</figcaption></figure>\n",
            data_uri("image/png", &png)
        ));
    }
    page.raw("</div>\n");
    Ok(())
}

/// The heatmaps' colour scale from 0 to `scale` clocks, with ticks at each quarter.
fn legend_svg(id: &str, scale: u32) -> String {
    let (width, bar) = (560.0, 18.0);
    let mut s = String::new();
    let _ = write!(
        s,
        "<div class=\"legend\"><svg width=\"600\" height=\"48\" viewBox=\"0 0 600 48\" \
         role=\"img\" aria-label=\"colour scale 0 to {scale} clocks\">\
         <defs><linearGradient id=\"scale-{id}\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">"
    );
    for i in 0..=20 {
        let t = i as f32 / 20.0;
        let [r, g, b] = colormap(t);
        let _ = write!(
            s,
            "<stop offset=\"{:.2}\" stop-color=\"#{r:02x}{g:02x}{b:02x}\"/>",
            t
        );
    }
    let _ = write!(
        s,
        "</linearGradient></defs><rect x=\"20\" y=\"4\" width=\"{width}\" height=\"{bar}\" \
         fill=\"url(#scale-{id})\" stroke=\"#8a93a3\" stroke-width=\"0.5\"/>"
    );
    for q in 0..=4 {
        let x = 20.0 + width * q as f64 / 4.0;
        let value = scale as f64 * q as f64 / 4.0;
        let text = if q == 4 {
            format!("{} clocks", label(value))
        } else {
            label(value)
        };
        let anchor = match q {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = write!(
            s,
            "<line x1=\"{x}\" x2=\"{x}\" y1=\"22\" y2=\"27\" stroke=\"#1d2330\"/>\
             <text x=\"{x}\" y=\"40\" font-size=\"12\" text-anchor=\"{anchor}\" \
             font-family=\"sans-serif\" fill=\"#1d2330\">{}</text>",
            escape(&text)
        );
    }
    s.push_str("</svg></div>\n");
    s
}
