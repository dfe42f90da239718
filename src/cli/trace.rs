//! `wavetrace trace` (being written).

use wavetrace::Result;

#[derive(clap::Args)]
pub struct TraceArgs {}

pub fn run(_args: TraceArgs) -> Result<i32> {
    Err(wavetrace::Error::Other(
        "wavetrace trace is not built yet".into(),
    ))
}
