//! `wavetrace profile` (being written).

use wavetrace::Result;

#[derive(clap::Args)]
pub struct ProfileArgs {}

pub fn run(_args: ProfileArgs) -> Result<i32> {
    Err(wavetrace::Error::Other(
        "wavetrace profile is not built yet".into(),
    ))
}
