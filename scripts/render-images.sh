#!/usr/bin/env bash
# Renders the small pictures of the shipped scenes into docs/images/ (the README shows them).
# Run from anywhere after `cargo build --release`; `scenes/bunny` reads the shared bunny mesh
# from ../shared/data/scenes.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${WAVETRACE:-target/release/wavetrace}
mkdir -p docs/images
"$BIN" render scenes/cornell/cornell.toml --size 256x256 --spp 64 --out docs/images/cornell.png
"$BIN" render scenes/bunny/bunny.toml --size 256x256 --spp 64 --out docs/images/bunny.png
"$BIN" render scenes/sky/sky.toml --size 320x180 --spp 64 --out docs/images/sky.png
"$BIN" render scenes/grove/grove.toml --size 320x180 --spp 64 --out docs/images/grove.png
