//! `wavetrace render` (being written).

use wavetrace::Result;

#[derive(clap::Args)]
pub struct RenderArgs {}

pub fn run(_args: RenderArgs) -> Result<i32> {
    Err(wavetrace::Error::Other(
        "wavetrace render is not built yet".into(),
    ))
}
