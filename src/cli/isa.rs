//! `wavetrace isa` (being written).

use wavetrace::Result;

#[derive(clap::Args)]
pub struct IsaArgs {}

pub fn run(_args: IsaArgs) -> Result<i32> {
    Err(wavetrace::Error::Other(
        "wavetrace isa is not built yet".into(),
    ))
}
