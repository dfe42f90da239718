//! `wavetrace tiling` (being written).

use wavetrace::Result;

#[derive(clap::Args)]
pub struct TilingArgs {}

pub fn run(_args: TilingArgs) -> Result<i32> {
    Err(wavetrace::Error::Other(
        "wavetrace tiling is not built yet".into(),
    ))
}
