//! The report's charts as SVG documents, drawn with `plotters`' SVG backend (which escapes
//! every label it writes).
//!
//! Three kinds: horizontal bars by name ([`hbars`]: one bar per series for each name, the
//! value printed at the bar's end), one bar per TD with the busiest and the mean TD drawn
//! across ([`td_bars`]), and one bar split into shares ([`shares`]).

use crate::{Error, Result};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Chart width in pixels (the page scales it down on narrow screens).
const WIDTH: u32 = 900;

/// The palette, chosen to stay apart for the common kinds of colour blindness.
pub const BLUE: RGBColor = RGBColor(0x2f, 0x6d, 0xb5);
pub const ORANGE: RGBColor = RGBColor(0xe0, 0x7b, 0x1a);
pub const GREY: RGBColor = RGBColor(0x8a, 0x93, 0xa3);
pub const RED: RGBColor = RGBColor(0xc0, 0x2a, 0x2a);
pub const GREEN: RGBColor = RGBColor(0x3a, 0x9a, 0x5b);
const INK: RGBColor = RGBColor(0x1d, 0x23, 0x30);

/// One series of a bar chart: its name in the legend, its colour, one value per label.
pub struct Series<'a> {
    pub name: &'a str,
    pub colour: RGBColor,
    pub values: Vec<f64>,
}

/// A horizontal bar chart: `labels` down the left, one bar per series for each, values
/// along the bottom axis named `axis`; `value_text` prints a value at its bar's end.
pub struct HBars<'a> {
    pub title: &'a str,
    pub axis: &'a str,
    pub labels: Vec<String>,
    pub series: Vec<Series<'a>>,
    pub value_text: &'a dyn Fn(f64) -> String,
}

fn draw_error(e: impl std::fmt::Display) -> Error {
    Error::Other(format!("cannot draw a report chart: {e}"))
}

fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&INK)
}

/// Draws a legend row of `items` (name, colour, dashed line rather than a box) starting at
/// pixel (`x`, `y`).
fn legend(
    root: &DrawingArea<SVGBackend, Shift>,
    items: &[(&str, RGBColor, bool)],
    (mut x, y): (i32, i32),
) -> Result<()> {
    for (name, colour, line) in items {
        if *line {
            root.draw(&DashedPathElement::new(
                vec![(x, y), (x + 18, y)],
                4,
                3,
                colour.stroke_width(2),
            ))
            .map_err(draw_error)?;
        } else {
            root.draw(&Rectangle::new(
                [(x, y - 6), (x + 18, y + 6)],
                colour.filled(),
            ))
            .map_err(draw_error)?;
        }
        root.draw(&Text::new(
            name.to_string(),
            (x + 24, y),
            font(13).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(draw_error)?;
        // The naive font metrics: about 7 px a character at 13 px.
        x += 24 + 7 * name.chars().count() as i32 + 22;
    }
    Ok(())
}

/// Draws `title` centred at the top of `root` and, when there are any, the legend `items`
/// under it; returns the area left for the chart.
fn frame<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    items: &[(&str, RGBColor, bool)],
) -> Result<DrawingArea<SVGBackend<'a>, Shift>> {
    root.fill(&WHITE).map_err(draw_error)?;
    root.draw(&Text::new(
        title.to_string(),
        (WIDTH as i32 / 2, 8),
        font(16).pos(Pos::new(HPos::Center, VPos::Top)),
    ))
    .map_err(draw_error)?;
    if items.is_empty() {
        return Ok(root.margin(34, 0, 0, 0));
    }
    legend(root, items, (80, 44))?;
    Ok(root.margin(60, 0, 0, 0))
}

/// An axis tick `x` on an axis reaching `max`, with as few decimals as the scale needs.
fn axis_number(x: f64, max: f64) -> String {
    match max {
        m if m >= 20.0 => format!("{x:.0}"),
        m if m >= 2.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

/// The largest of `values`, at least `floor` (finite values only).
fn finite_max(values: impl Iterator<Item = f64>, floor: f64) -> f64 {
    values.filter(|v| v.is_finite()).fold(floor, f64::max)
}

/// The chart `spec` as an SVG document.
pub fn hbars(spec: &HBars) -> Result<String> {
    let n = spec.labels.len().max(1);
    let k = spec.series.len().max(1);
    let band = 8 + 16 * k as u32;
    let legend_rows = if spec.series.len() > 1 { 26 } else { 0 };
    let height = 34 + legend_rows + band * n as u32 + 56;
    let longest = spec.labels.iter().map(|l| l.chars().count()).max();
    let label_width = (longest.unwrap_or(4) as u32 * 7 + 16).clamp(60, 320);
    let max = finite_max(spec.series.iter().flat_map(|s| s.values.clone()), 0.0);
    let x_max = if max > 0.0 { max * 1.18 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let items: Vec<(&str, RGBColor, bool)> = match spec.series.len() {
            0 | 1 => Vec::new(),
            _ => (spec.series.iter())
                .map(|s| (s.name, s.colour, false))
                .collect(),
        };
        let area = frame(&root, spec.title, &items)?;
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(label_width)
            .build_cartesian_2d(0.0..x_max, 0.0..n as f64)
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(spec.axis)
            .x_label_formatter(&|x| axis_number(*x, x_max))
            .axis_desc_style(font(13))
            .label_style(font(12))
            .light_line_style(RGBColor(0xee, 0xf0, 0xf4))
            .draw()
            .map_err(draw_error)?;
        let h = 0.8 / k as f64;
        for (i, label) in spec.labels.iter().enumerate() {
            // Label i's band, top down: [n - i - 1, n - i].
            let top = (n - i) as f64;
            let (px, py) = chart.backend_coord(&(0.0, top - 0.5));
            root.draw(&Text::new(
                label.clone(),
                (px - 8, py),
                font(13).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(draw_error)?;
            for (s, series) in spec.series.iter().enumerate() {
                let value = series.values.get(i).copied().unwrap_or(f64::NAN);
                let y1 = top - 0.1 - s as f64 * h;
                let y0 = y1 - h;
                let shown = if value.is_finite() {
                    value.max(0.0)
                } else {
                    0.0
                };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(0.0, y0), (shown, y1)],
                        series.colour.filled(),
                    )))
                    .map_err(draw_error)?;
                let (vx, vy) = chart.backend_coord(&(shown, (y0 + y1) / 2.0));
                root.draw(&Text::new(
                    (spec.value_text)(value),
                    (vx + 4, vy),
                    font(12).pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(draw_error)?;
            }
        }
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

/// One bar of TD clocks per TD of `console` (in TD order), with the busiest TD (whose clocks
/// are the modelled time) and the mean drawn across: how far the work is from even.
pub fn td_bars(title: &str, clocks: &[u64]) -> Result<String> {
    let n = clocks.len().max(1);
    let busiest = clocks.iter().copied().max().unwrap_or(0);
    let mean = clocks.iter().sum::<u64>() as f64 / n as f64;
    let y_max = (busiest as f64 * 1.12).max(1.0);
    let height = 340;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let busiest_text = format!("busiest TD: {busiest} clocks (the modelled time)");
        let mean_text = format!(
            "mean: {mean:.0} clocks ({:.1} % of the busiest)",
            100.0 * mean / (busiest.max(1)) as f64
        );
        let area = frame(
            &root,
            title,
            &[
                ("TD clocks", BLUE, false),
                (&busiest_text, RED, true),
                (&mean_text, GREY, true),
            ],
        )?;
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..y_max)
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("TD")
            .y_desc("TD clocks")
            .axis_desc_style(font(13))
            .label_style(font(12))
            .x_labels(n.min(27))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 && *x >= 0.0 {
                    format!("{}", x.round() as i64)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| format!("{y:.0}"))
            .light_line_style(RGBColor(0xee, 0xf0, 0xf4))
            .draw()
            .map_err(draw_error)?;
        chart
            .draw_series(clocks.iter().enumerate().map(|(i, &c)| {
                let colour = if c == busiest { ORANGE } else { BLUE };
                Rectangle::new(
                    [(i as f64 - 0.38, 0.0), (i as f64 + 0.38, c as f64)],
                    colour.filled(),
                )
            }))
            .map_err(draw_error)?;
        let (x0, x1) = (-0.5, n as f64 - 0.5);
        for (y, colour) in [(busiest as f64, RED), (mean, GREY)] {
            let a = chart.backend_coord(&(x0, y));
            let b = chart.backend_coord(&(x1, y));
            root.draw(&DashedPathElement::new(
                vec![a, b],
                6,
                4,
                colour.stroke_width(2),
            ))
            .map_err(draw_error)?;
        }
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

/// One horizontal bar split into `parts` (name, share in percent, colour), with each part's
/// name and share under it.
pub fn shares(title: &str, parts: &[(&str, f64, RGBColor)]) -> Result<String> {
    let height = 170;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let texts: Vec<String> = (parts.iter())
            .map(|(name, share, _)| format!("{name} {share:.1} %"))
            .collect();
        let items: Vec<(&str, RGBColor, bool)> = (parts.iter().zip(&texts))
            .map(|((_, _, c), t)| (t.as_str(), *c, false))
            .collect();
        let area = frame(&root, title, &items)?;
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .margin_right(24)
            .x_label_area_size(24)
            .y_label_area_size(20)
            .build_cartesian_2d(0.0..100.0, 0.0..1.0)
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .label_style(font(12))
            .x_label_formatter(&|x| format!("{x:.0} %"))
            .light_line_style(RGBColor(0xee, 0xf0, 0xf4))
            .draw()
            .map_err(draw_error)?;
        let mut start = 0.0;
        for (_, share, colour) in parts {
            let end = (start + share.max(0.0)).min(100.0);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(start, 0.15), (end, 0.85)],
                    colour.filled(),
                )))
                .map_err(draw_error)?;
            start = end;
        }
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_labels_are_escaped_and_every_label_is_drawn() {
        let svg = hbars(&HBars {
            title: "rays/s",
            axis: "G rays/s",
            labels: vec!["full-stack".into(), "a<b&\"c\"".into()],
            series: vec![
                Series {
                    name: "memory",
                    colour: BLUE,
                    values: vec![1.5, f64::NAN],
                },
                Series {
                    name: "TD only",
                    colour: ORANGE,
                    values: vec![2.0, 0.5],
                },
            ],
            value_text: &|v| format!("{v:.2}"),
        })
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg.contains("full-stack"));
        assert!(svg.contains("a&lt;b&amp;&quot;c&quot;"));
        assert!(!svg.contains("a<b"));
        assert!(svg.contains("TD only"));
        assert_eq!(svg.matches("<svg").count(), 1);
    }

    #[test]
    fn td_bars_mark_the_busiest_and_the_mean() {
        let svg = td_bars("Series S", &[10, 20, 30, 40]).unwrap();
        assert!(svg.contains("busiest TD: 40 clocks"));
        assert!(svg.contains("mean: 25 clocks (62.5 % of the busiest)"));
        let svg = shares("CU time", &[("TD", 50.0, BLUE), ("memory", 50.0, GREY)]).unwrap();
        assert!(svg.contains("memory 50.0 %"));
    }
}
