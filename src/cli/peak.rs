//! `wavetrace peak` (being written).

use wavetrace::Result;

#[derive(clap::Args)]
pub struct PeakArgs {}

pub fn run(_args: PeakArgs) -> Result<i32> {
    Err(wavetrace::Error::Other(
        "wavetrace peak is not built yet".into(),
    ))
}
