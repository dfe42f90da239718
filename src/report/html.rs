//! The page: escaping, base64 data URIs, sections, tables, and the inline style and script.
//!
//! The script does three things and nothing else: it records errors (`window.onerror` and
//! `console.error`) in the body's `data-errors`, makes every `table.sortable` sortable by a
//! click on a header, and sets `data-status="ok"` on the body once that is done. A check in a
//! headless browser reads those two attributes.

use std::fmt::Write;

/// `text` escaped for HTML text and attribute values (double- or single-quoted).
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            c => s.push(c),
        }
    }
    s
}

/// `bytes` in standard base64 with padding (RFC 4648).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let word = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(ALPHABET[(word >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// A `data:` URI of `bytes` of type `mime`.
pub fn data_uri(mime: &str, bytes: &[u8]) -> String {
    format!("data:{mime};base64,{}", base64(bytes))
}

/// A table cell: its text, and whether it is a number (right-aligned).
pub struct Cell {
    pub text: String,
    pub numeric: bool,
}

impl Cell {
    /// A cell of text (left-aligned).
    pub fn text(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            numeric: false,
        }
    }

    /// A cell holding a number, or a placeholder such as `-` (right-aligned).
    pub fn number(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            numeric: true,
        }
    }
}

/// A table: headers (short text, longer tooltip) and rows; each row may carry a key that
/// lands in its `data-key` attribute.
pub struct Table {
    pub headers: Vec<(String, String)>,
    pub rows: Vec<(Option<String>, Vec<Cell>)>,
    /// The table's class: `sortable` (sorted by a click on a header, numbers right-aligned),
    /// `values` (labels keep their indentation) or `kv` (names and values, values wrap).
    pub class: &'static str,
}

impl Table {
    /// The table as HTML.
    pub fn html(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "<div class=\"scroll\"><table class=\"{}\">", self.class);
        s.push_str("<thead><tr>");
        for (text, title) in &self.headers {
            if title.is_empty() || title == text {
                let _ = write!(s, "<th>{}</th>", escape(text));
            } else {
                let _ = write!(s, "<th title=\"{}\">{}</th>", escape(title), escape(text));
            }
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for (key, cells) in &self.rows {
            match key {
                Some(k) => {
                    let _ = write!(s, "<tr data-key=\"{}\">", escape(k));
                }
                None => s.push_str("<tr>"),
            }
            for c in cells {
                let class = if c.numeric { " class=\"num\"" } else { "" };
                let _ = write!(s, "<td{class}>{}</td>", escape(&c.text));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table></div>\n");
        s
    }
}

/// A two-column table of names and values.
pub fn key_values(rows: &[(String, String)]) -> String {
    Table {
        headers: Vec::new(),
        rows: rows
            .iter()
            .map(|(k, v)| (None, vec![Cell::text(k.clone()), Cell::text(v.clone())]))
            .collect(),
        class: "kv",
    }
    .html()
    .replace("<thead><tr></tr></thead>\n", "")
}

/// A page being written: its title and the body's HTML so far.
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    /// An empty page titled `title` (shown as its heading too).
    pub fn new(title: &str) -> Page {
        Page {
            title: title.to_string(),
            body: String::new(),
        }
    }

    /// Opens a section headed `heading`, with an optional note under the heading.
    pub fn section(&mut self, id: &str, heading: &str, note: &str) {
        let _ = writeln!(
            self.body,
            "<section id=\"{}\">\n<h2>{}</h2>",
            escape(id),
            escape(heading)
        );
        if !note.is_empty() {
            let _ = writeln!(self.body, "<p class=\"note\">{}</p>", escape(note));
        }
    }

    /// Closes the open section.
    pub fn end_section(&mut self) {
        self.body.push_str("</section>\n");
    }

    /// A sub-heading.
    pub fn h3(&mut self, text: &str) {
        let _ = writeln!(self.body, "<h3>{}</h3>", escape(text));
    }

    /// A paragraph of text (escaped here).
    pub fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// HTML the caller built and escaped.
    pub fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// A chart: an SVG document (from [`super::chart`]) placed inline in a figure.
    pub fn chart(&mut self, svg: &str) {
        // Inline SVG needs no XML prolog; the chart backend writes none.
        let _ = writeln!(self.body, "<figure class=\"chart\">\n{svg}</figure>");
    }

    /// The whole document.
    pub fn finish(self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{title}</title>\n<style>{STYLE}</style>\n<script>{ERROR_HOOK}</script>\n\
             </head>\n<body data-status=\"loading\">\n<h1>{title}</h1>\n{body}\
             <script>{SCRIPT}</script>\n</body>\n</html>\n",
            title = escape(&self.title),
            body = self.body,
        );
        s
    }
}

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px auto; max-width: 1320px; padding: 0 16px; color: #1d2330; background: #fff; }
h1 { font-size: 22px; margin: 0 0 12px; }
h2 { font-size: 18px; margin: 28px 0 6px; border-bottom: 1px solid #d6dae3; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.note { color: #4a5263; margin: 4px 0 10px; max-width: 900px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 6px 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e4e7ee; text-align: left; white-space: nowrap; }
td.num { text-align: right; }
thead th { background: #eef1f6; position: sticky; top: 0; }
table.sortable { font-size: 12.5px; }
table.sortable th, table.sortable td { padding: 3px 5px; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th:hover { background: #dfe5f0; }
th.asc::after { content: " \25B2"; font-size: 10px; }
th.desc::after { content: " \25BC"; font-size: 10px; }
table.values td:first-child { white-space: pre; }
table.kv td:last-child { white-space: normal; overflow-wrap: anywhere; }
tbody tr:nth-child(even) { background: #f8f9fb; }
p.warning { color: #b00020; font-weight: 600; }
figure.chart { margin: 8px 0 16px; }
figure.chart svg { max-width: 100%; height: auto; }
.maps { display: flex; flex-wrap: wrap; gap: 14px; }
.maps figure { margin: 0; text-align: center; }
.maps img { width: 192px; height: auto; image-rendering: pixelated; border: 1px solid #c8cdd8; display: block; }
.maps figcaption { font-size: 12px; max-width: 192px; overflow-wrap: anywhere; margin-top: 3px; }
.legend svg { display: block; margin: 6px 0 14px; }
"#;

/// Installed first, in the head: every error, thrown or logged, is counted on the body.
const ERROR_HOOK: &str = r#"
window.reportErrors = [];
function recordReportError(message) {
  window.reportErrors.push(String(message));
  if (document.body) {
    document.body.setAttribute("data-errors", window.reportErrors.join(" | "));
  }
}
window.onerror = function (message, source, line) { recordReportError(message + " (line " + line + ")"); };
(function () {
  var original = console.error;
  console.error = function () {
    recordReportError(Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
})();
"#;

/// Run last, at the end of the body: the sort handlers, then the status.
const SCRIPT: &str = r#"
(function () {
  function cellValue(row, column) {
    var cell = row.cells[column];
    return cell ? cell.textContent.trim() : "";
  }
  // A cell's number, or null for text and for placeholders ("-", "WRONG", "NaN").
  function number(text) {
    var v = Number(text);
    return text !== "" && isFinite(v) ? v : null;
  }
  function missing(text) { return text === "" || text === "-" || text === "WRONG" || text === "NaN"; }
  function compare(a, b) {
    var x = number(a), y = number(b);
    if (x !== null && y !== null) { return x - y; }
    if (x !== null) { return -1; }
    if (y !== null) { return 1; }
    return a.localeCompare(b);
  }
  function sortBy(table, column, header) {
    var body = table.tBodies[0];
    var ascending = !header.classList.contains("asc");
    var headers = table.tHead.rows[0].cells;
    for (var i = 0; i < headers.length; i++) { headers[i].classList.remove("asc", "desc"); }
    header.classList.add(ascending ? "asc" : "desc");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r, s) {
      var a = cellValue(r, column), b = cellValue(s, column);
      // Placeholders stay last in either direction.
      if (missing(a) !== missing(b)) { return missing(a) ? 1 : -1; }
      var c = compare(a, b);
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  var tables = document.querySelectorAll("table.sortable");
  var handlers = 0;
  tables.forEach(function (table) {
    var headers = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(headers, function (header, column) {
      header.addEventListener("click", function () { sortBy(table, column, header); });
      handlers++;
    });
  });
  document.body.setAttribute("data-sort-handlers", String(handlers));
  document.body.setAttribute("data-errors", window.reportErrors.join(" | "));
  document.body.setAttribute("data-status", window.reportErrors.length ? "errors" : "ok");
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
        assert_eq!(base64(&[0xFF, 0xFE, 0xFD]), "//79");
    }

    #[test]
    fn text_and_attributes_are_escaped() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let table = Table {
            headers: vec![("a<b".into(), "long \"name\"".into())],
            rows: vec![(Some("k&1".into()), vec![Cell::number("1<2")])],
            class: "sortable",
        }
        .html();
        assert!(table.contains("title=\"long &quot;name&quot;\">a&lt;b</th>"));
        assert!(table.contains("data-key=\"k&amp;1\""));
        assert!(table.contains("<td class=\"num\">1&lt;2</td>"));
    }

    #[test]
    fn the_page_has_its_script_and_no_external_references() {
        let mut page = Page::new("t <1>");
        page.section("s", "S", "a note");
        page.paragraph("x & y");
        page.end_section();
        let html = page.finish();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>t &lt;1&gt;</title>"));
        assert!(html.contains("data-status"));
        assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
        assert_eq!(
            html.matches("<section").count(),
            html.matches("</section>").count()
        );
    }
}
