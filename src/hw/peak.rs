//! The documented peak tables (`rt-hardware.md` "Where the hardware sits").
//!
//! Each TD does, per clock, one ray/box query against four boxes or one ray/triangle test.
//! Peak = clock x WGPs x TDs per WGP x tests per TD per clock.
//!
//! Note: the console maker's page (seeds 000/001) says 56 TDs for Series X in prose, but its own
//! formula uses 26 WGPs x 2 = 52 TDs and its printed peaks (379.6 G, 94.9 G) follow from 52. We
//! reproduce the printed tables (52 TDs).

/// One console's ray-tracing configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConsoleConfig {
    /// Marketing name ("Series S").
    pub name: &'static str,
    /// Code name ("Lockhart").
    pub codename: &'static str,
    /// Name used on the command line ("series-s").
    pub cli_name: &'static str,
    pub clock_mhz: u32,
    pub wgps: u32,
    pub tds_per_wgp: u32,
    /// Ray/box tests per TD per clock (one query of four boxes).
    pub box_tests_per_td_clock: u32,
    /// Ray/triangle tests per TD per clock.
    pub triangle_tests_per_td_clock: u32,
}

/// XBOX Series S: 1563 MHz, 10 WGPs.
pub const SERIES_S: ConsoleConfig = ConsoleConfig {
    name: "Series S",
    codename: "Lockhart",
    cli_name: "series-s",
    clock_mhz: 1563,
    wgps: 10,
    tds_per_wgp: 2,
    box_tests_per_td_clock: 4,
    triangle_tests_per_td_clock: 1,
};

/// XBOX Series X: 1825 MHz, 26 WGPs.
pub const SERIES_X: ConsoleConfig = ConsoleConfig {
    name: "Series X",
    codename: "Anaconda",
    cli_name: "series-x",
    clock_mhz: 1825,
    wgps: 26,
    tds_per_wgp: 2,
    box_tests_per_td_clock: 4,
    triangle_tests_per_td_clock: 1,
};

/// Both consoles, Series S first.
pub const CONSOLES: [ConsoleConfig; 2] = [SERIES_S, SERIES_X];

/// The footnote to print beside the table.
pub const TD_COUNT_NOTE: &str = "Series X: the source's prose says 56 TDs, but its formula \
(26 WGPs x 2) and its printed peaks use 52; the printed peaks are reproduced here.";

impl ConsoleConfig {
    /// Looks a console up by its CLI name ("series-s", "series-x").
    pub fn by_cli_name(name: &str) -> Option<ConsoleConfig> {
        CONSOLES.iter().copied().find(|c| c.cli_name == name)
    }

    pub fn tds(&self) -> u32 {
        self.wgps * self.tds_per_wgp
    }

    pub fn clock_hz(&self) -> f64 {
        self.clock_mhz as f64 * 1e6
    }

    /// Peak ray/AABB tests per second.
    pub fn peak_box_tests_per_second(&self) -> f64 {
        self.clock_hz() * self.tds() as f64 * self.box_tests_per_td_clock as f64
    }

    /// Peak ray/triangle tests per second.
    pub fn peak_triangle_tests_per_second(&self) -> f64 {
        self.clock_hz() * self.tds() as f64 * self.triangle_tests_per_td_clock as f64
    }

    /// Seconds that `clocks` TD clocks take on one TD.
    pub fn seconds_for_clocks(&self, clocks: u64) -> f64 {
        clocks as f64 / self.clock_hz()
    }
}

/// Formats a rate in units of 10^9 with four significant digits, trailing zeros dropped but
/// one decimal kept, the way the spec tables print them: 125.0, 379.6, 31.26, 94.9.
pub fn format_giga(rate_per_second: f64) -> String {
    let g = rate_per_second / 1e9;
    let int_digits = if g.abs() >= 1.0 {
        g.abs().log10().floor() as i32 + 1
    } else {
        1
    };
    let decimals = (4 - int_digits).max(1) as usize;
    let mut s = format!("{g:.decimals$}");
    while s.ends_with('0') && !s.ends_with(".0") {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_peaks_print_as_the_spec_tables() {
        assert_eq!(SERIES_S.tds(), 20);
        assert_eq!(SERIES_X.tds(), 52);
        assert_eq!(format_giga(SERIES_S.peak_box_tests_per_second()), "125.0");
        assert_eq!(format_giga(SERIES_X.peak_box_tests_per_second()), "379.6");
        assert_eq!(
            format_giga(SERIES_S.peak_triangle_tests_per_second()),
            "31.26"
        );
        assert_eq!(
            format_giga(SERIES_X.peak_triangle_tests_per_second()),
            "94.9"
        );
        // Exact products from the table's formula.
        assert_eq!(
            SERIES_S.peak_box_tests_per_second(),
            1563e6 * 10.0 * 2.0 * 4.0
        );
        assert_eq!(
            SERIES_X.peak_triangle_tests_per_second(),
            1825e6 * 26.0 * 2.0
        );
    }

    #[test]
    fn looks_up_by_cli_name() {
        assert_eq!(ConsoleConfig::by_cli_name("series-x"), Some(SERIES_X));
        assert_eq!(ConsoleConfig::by_cli_name("series-z"), None);
    }
}
