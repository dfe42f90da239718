//! `profile --html` and `trace --html`: one self-contained page, checked structurally
//! (balanced tags, one table row per variant of the same run's JSON, every variant named in
//! the charts, nothing fetched from outside), and written with the other outputs or not at
//! all.

use std::path::Path;

mod cli_common;
use cli_common::{wavetrace, write_octahedron};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every `open` has its `close`, and there is at least one.
fn balanced(html: &str, open: &str, close: &str) {
    let (o, c) = (html.matches(open).count(), html.matches(close).count());
    assert!(o > 0, "no {open}");
    assert_eq!(o, c, "{open} x{o} but {close} x{c}");
}

/// The structure every page has: one document, balanced key tags, the script, and no
/// reference to anything outside the file.
fn check_page(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    for tag in ["html", "head", "body", "style"] {
        assert_eq!(html.matches(&format!("<{tag}")).count(), 1, "<{tag}>");
        assert_eq!(html.matches(&format!("</{tag}>")).count(), 1, "</{tag}>");
    }
    balanced(html, "<script>", "</script>");
    balanced(html, "<section", "</section>");
    balanced(html, "<table", "</table>");
    balanced(html, "<tr", "</tr>");
    balanced(html, "<svg", "</svg>");
    balanced(html, "<figure", "</figure>");
    assert!(html.contains("data-status=\"loading\""));
    for attribute in ["src=", "href="] {
        for (i, _) in html.match_indices(attribute) {
            let value = html[i + attribute.len()..].trim_start_matches(['"', '\'']);
            assert!(
                !value.starts_with("http://") && !value.starts_with("https://"),
                "external reference at {i}: {}",
                &html[i..(i + 60).min(html.len())]
            );
            assert!(
                !value.starts_with("//"),
                "protocol-relative reference at {i}"
            );
        }
    }
    assert!(!html.contains("url(http"), "external URL in CSS");
    assert!(!html.contains("@import"), "imported CSS");
}

/// The SVG documents of the page, concatenated.
fn svg_text(html: &str) -> String {
    let mut all = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start;
        all.push_str(&rest[start..end]);
        rest = &rest[end..];
    }
    all
}

/// The `data-key` of each row of the ranked table, in order.
fn table_keys(html: &str) -> Vec<String> {
    let start = html
        .find("<table class=\"sortable\">")
        .expect("the ranked table");
    let end = html[start..].find("</table>").unwrap() + start;
    html[start..end]
        .split("<tr data-key=\"")
        .skip(1)
        .map(|r| r[..r.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn profile_html_has_a_row_and_a_chart_label_per_variant_of_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = write_octahedron(dir.path());
    let (html, json) = (dir.path().join("p.html"), dir.path().join("p.json"));
    let (code, stdout, stderr) = wavetrace(&[
        "profile",
        s(&mesh),
        "--strategies",
        "full-stack,restart-1,fp16,wave64",
        "--size",
        "24x16",
        "--html",
        s(&html),
        "--json",
        s(&json),
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let html = std::fs::read_to_string(&html).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_page(&html);
    let names: Vec<String> = json["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 4);
    // The same variants in the same (rank) order, one row each.
    assert_eq!(table_keys(&html), names);
    // Every column of the terminal table.
    for (short, long) in wavetrace::profile::SHORT_COLUMNS
        .iter()
        .zip(wavetrace::profile::COLUMNS)
    {
        let header = format!("<th title=\"{long}\">{short}</th>");
        let plain = format!("<th>{short}</th>");
        assert!(
            html.contains(&header) || html.contains(&plain),
            "column {long}"
        );
    }
    let svg = svg_text(&html);
    for name in &names {
        assert!(
            svg.contains(&format!("\n{name}\n")),
            "{name} is not labelled in the charts"
        );
    }
    // Rates, clocks per ray, TD balance, the winner's TDs, the heatmap legends: at least 5.
    assert!(html.matches("<svg").count() >= 5);
    // One heatmap per variant (camera rays), each captioned, as PNG data URIs.
    assert!(
        html.matches("src=\"data:image/png;base64,").count() >= names.len(),
        "heatmaps"
    );
    for name in &names {
        assert!(html.contains(&format!("<figcaption>{name}</figcaption>")));
    }
    for parameter in [
        "wavetrace",
        "date",
        "input",
        "ray set",
        "console",
        "memory model",
    ] {
        assert!(
            html.contains(&format!("<td>{parameter}</td>")),
            "{parameter}"
        );
    }
}

#[test]
fn trace_html_has_the_counters_the_tds_and_the_memory_model() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = write_octahedron(dir.path());
    let rays = dir.path().join("r.rays");
    let (code, _, stderr) = wavetrace(&[
        "rays",
        s(&mesh),
        "--kind",
        "diffuse",
        "--size",
        "24x16",
        "-o",
        s(&rays),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (hits, html, json) = (
        dir.path().join("h.bin"),
        dir.path().join("t.html"),
        dir.path().join("t.json"),
    );
    let (code, stdout, stderr) = wavetrace(&[
        "trace",
        s(&mesh),
        "--rays",
        s(&rays),
        "-o",
        s(&hits),
        "--html",
        s(&html),
        "--json",
        s(&json),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let html = std::fs::read_to_string(&html).unwrap();
    check_page(&html);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let report = &json["report"];
    // The counters of the JSON, as the page prints them.
    let clocks = report["counters"]["td.clocks"].as_u64().unwrap();
    assert!(html.contains(&format!("<td class=\"num\">{clocks}</td>")));
    // Both consoles' TDs against the busiest, whose clocks are the JSON's maximum.
    let svg = svg_text(&html);
    for console in report["consoles"].as_array().unwrap() {
        let busiest = console["td_clocks_max"].as_u64().unwrap();
        assert!(
            svg.contains(&format!("busiest TD: {busiest} clocks")),
            "{console}"
        );
    }
    assert!(html.contains("Memory model"));
    assert!(svg.contains("Hit rate by cache level"));

    // Without the memory model, no memory section.
    let plain = dir.path().join("plain.html");
    let (code, _, stderr) = wavetrace(&[
        "trace",
        s(&mesh),
        "--rays",
        s(&rays),
        "-o",
        s(&hits),
        "--html",
        s(&plain),
        "--memory",
        "off",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let plain = std::fs::read_to_string(&plain).unwrap();
    check_page(&plain);
    assert!(!plain.contains("Memory model"));
}

#[test]
fn a_missing_html_directory_is_refused_before_any_output_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = write_octahedron(dir.path());
    let csv = dir.path().join("p.csv");
    let missing = dir.path().join("no-such-dir").join("p.html");
    let (code, _, stderr) = wavetrace(&[
        "profile",
        s(&mesh),
        "--strategies",
        "full-stack",
        "--size",
        "8x8",
        "--csv",
        s(&csv),
        "--html",
        s(&missing),
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--html"), "{stderr}");
    assert!(!csv.exists(), "the CSV was written without the page");
    // The same file for two outputs is refused too.
    let same = dir.path().join("same");
    let (code, _, stderr) = wavetrace(&[
        "profile",
        s(&mesh),
        "--strategies",
        "full-stack",
        "--size",
        "8x8",
        "--json",
        s(&same),
        "--html",
        s(&same),
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--html"), "{stderr}");
    assert!(!same.exists());
}
