//! Self-contained HTML reports of a `profile` or `trace` run: one page with its own CSS,
//! script, SVG charts and base64 images, readable offline and safe to mail or archive.
//!
//! - [`html`]: escaping, data URIs and the page skeleton (sortable tables, the script that
//!   marks the page as built).
//! - [`chart`]: the SVG charts, drawn with `plotters`' SVG backend.
//! - [`profile_html`] and [`trace_html`]: the two pages.
//!
//! The pages only present what the run already computed ([`crate::profile::ProfileReport`],
//! [`crate::counters::report::Report`]); nothing here measures.

pub mod chart;
pub mod html;
mod profile_page;
mod trace_page;

pub use profile_page::{profile_html, CameraMaps};
pub use trace_page::trace_html;

use std::time::{SystemTime, UNIX_EPOCH};

/// A run's parameters as the page lists them: name and value, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parameters(pub Vec<(String, String)>);

impl Parameters {
    /// The parameters every page starts with: the wavetrace version and `date`.
    pub fn new(date: &str) -> Parameters {
        Parameters(vec![
            (
                "wavetrace".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
            ("date".to_string(), date.to_string()),
        ])
    }

    /// Adds `name = value`.
    pub fn with(mut self, name: &str, value: impl Into<String>) -> Parameters {
        self.0.push((name.to_string(), value.into()));
        self
    }
}

/// `time` as an ISO 8601 UTC timestamp to the second (`2026-12-06T03:08:29Z`).
pub fn utc_timestamp(time: SystemTime) -> String {
    let seconds = time
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), in 400-year eras.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_civil_dates() {
        let at = |s: u64| utc_timestamp(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a year divisible by 400), its last second, the next day.
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(at(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(at(1_796_526_509), "2026-12-06T03:08:29Z");
    }
}
