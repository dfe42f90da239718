//! `wavetrace bvh` (being written).

use wavetrace::Result;

#[derive(clap::Args)]
pub struct BvhArgs {}

pub fn run(_args: BvhArgs) -> Result<i32> {
    Err(wavetrace::Error::Other(
        "wavetrace bvh is not built yet".into(),
    ))
}
