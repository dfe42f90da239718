//! What `trace`, `bench` and `profile` read: a bare mesh (.obj, .obj.gz, .ply, .gltf, .glb;
//! a glTF file flattened to world space) or a scene file
//! (.toml, traced as a two-level image), and the DXR ray flags and instance mask they
//! trace with.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use wavetrace::bvh::two_level::{build_two_level, TwoLevelBvh, TwoLevelInput, TwoLevelOptions};
use wavetrace::bvh::Mesh;
use wavetrace::hw::peak::ConsoleConfig;
use wavetrace::memory::Machine;
use wavetrace::render::{two_level_input, AlphaTest};
use wavetrace::scene::Scene;
use wavetrace::traverse::dxr::RayFlags;
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::{Error, Result};

/// `--ray-flags` and `--mask`, shared by the commands that trace.
#[derive(clap::Args, Clone, Debug)]
pub struct DxrArgs {
    /// DXR ray flags, comma-separated lower-case names (force_opaque, force_non_opaque,
    /// accept_first_hit_and_end_search, skip_closest_hit_shader,
    /// cull_back_facing_triangles, cull_front_facing_triangles, cull_opaque,
    /// cull_non_opaque, skip_triangles, skip_procedural_primitives). `render` gives them to
    /// its shadow rays, the other commands to their closest-hit rays.
    #[arg(long = "ray-flags", default_value = "")]
    pub ray_flags: String,
    /// Instance inclusion mask, 8 bits (0x-hex or decimal): an instance is traversed only
    /// when its mask and this share a bit.
    #[arg(long, default_value = "0xFF")]
    pub mask: String,
}

impl DxrArgs {
    /// The parsed flags (errors name `--ray-flags`).
    pub fn flags(&self) -> Result<RayFlags> {
        RayFlags::parse(&self.ray_flags)
    }

    /// The parsed mask (errors name `--mask`).
    pub fn mask(&self) -> Result<u8> {
        parse_mask(&self.mask)
    }
}

/// `--memory` and `--machine`, shared by the commands that trace.
#[derive(clap::Args, Clone, Debug)]
pub struct MemoryArgs {
    /// The memory model: node fetches through the console's L0, L1, L2 and DRAM, with
    /// latency and bandwidth (docs/memory-model.md). `off` reports the TD-only figures.
    #[arg(long, value_enum, default_value = "on")]
    pub memory: Switch,
    /// The machine of the memory model: series-s, series-x, or a TOML file (`wavetrace
    /// machine series-x --toml` prints one to start from). Default: the --target console.
    #[arg(long, value_name = "NAME_OR_FILE")]
    pub machine: Option<String>,
}

/// On or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

impl MemoryArgs {
    /// The machine to model, or `None` with `--memory off`.
    pub fn machine(&self, console: &ConsoleConfig) -> Result<Option<Machine>> {
        if self.memory == Switch::Off {
            return Ok(None);
        }
        resolve_machine(self.machine.as_deref(), console).map(Some)
    }
}

/// A built-in machine by name, or a machine file; without either, `console`'s.
pub fn resolve_machine(name: Option<&str>, console: &ConsoleConfig) -> Result<Machine> {
    match name {
        None => Ok(Machine::for_console(console)),
        Some(name) => match Machine::built_in(name) {
            Some(m) => Ok(m),
            None if Path::new(name).is_file() => Machine::from_file(Path::new(name)),
            None => Err(Error::field(
                "--machine",
                format!(
                    "{name}: neither a built-in machine ({}) nor a file",
                    Machine::BUILT_IN.join(", ")
                ),
            )),
        },
    }
}

/// An 8-bit mask written as `0xNN` (hex) or decimal.
pub fn parse_mask(text: &str) -> Result<u8> {
    let s = text.trim();
    let value = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse::<u64>(),
    }
    .map_err(|_| {
        Error::field(
            "--mask",
            format!("`{text}` is not a number (0x-hex or decimal)"),
        )
    })?;
    u8::try_from(value).map_err(|_| {
        Error::field(
            "--mask",
            format!("`{text}` is above 0xFF (the instance mask has 8 bits)"),
        )
    })
}

/// A scene file and its two-level builder input.
pub struct SceneInput {
    pub scene: Scene,
    pub input: TwoLevelInput,
}

/// A loaded input: a bare mesh or a scene.
pub enum Input {
    Mesh(Mesh),
    Scene(Box<SceneInput>),
}

/// Whether `path` names a scene file (`.toml`).
pub fn is_scene(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

/// Loads a mesh or a scene file; a scene's warnings go to stderr.
pub fn load(path: &Path) -> Result<Input> {
    if !is_scene(path) {
        return Ok(Input::Mesh(load_mesh(path)?));
    }
    Ok(Input::Scene(Box::new(load_scene(path)?)))
}

/// Loads a bare mesh of any format ([`Mesh::load`]); what it skipped goes to stderr.
pub fn load_mesh(path: &Path) -> Result<Mesh> {
    let (mesh, warnings) = Mesh::load_with_warnings(path)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    Ok(mesh)
}

/// Loads a scene file (warnings to stderr) and its two-level input.
pub fn load_scene(path: &Path) -> Result<SceneInput> {
    let scene = Scene::load(path)?;
    for w in &scene.warnings {
        eprintln!("warning: {w}");
    }
    let input = two_level_input(&scene);
    if input.instances.is_empty() {
        return Err(Error::Other(format!("{}: no geometry", path.display())));
    }
    Ok(SceneInput { scene, input })
}

impl SceneInput {
    /// Primitives over all BLASes (each counted once), and instances.
    pub fn primitives(&self) -> usize {
        self.scene
            .blases
            .iter()
            .map(|b| b.primitive_count())
            .sum::<usize>()
            .max(self.scene.geometry.triangle_count())
    }

    /// Builds the two-level image; returns it and its build + encode seconds (wall clock).
    pub fn build(&self, options: &TwoLevelOptions) -> Result<(TwoLevelBvh, f64)> {
        let start = Instant::now();
        let bvh = build_two_level(&self.input, options)?;
        Ok((bvh, start.elapsed().as_secs_f64()))
    }

    /// The tracer of a built image: the two-level shader with the scene's alpha test as
    /// its any-hit shader.
    pub fn tracer(&self, bvh: TwoLevelBvh, config: WaveTracerConfig) -> WaveTracer {
        let mut tracer = WaveTracer::two_level(bvh, &self.input, config);
        tracer.set_any_hit(Arc::new(AlphaTest::new(&self.scene)));
        tracer
    }
}

#[cfg(test)]
mod tests {
    use super::parse_mask;

    #[test]
    fn masks_in_hex_and_decimal_and_out_of_range() {
        assert_eq!(parse_mask("0xFF").unwrap(), 0xFF);
        assert_eq!(parse_mask("0x0f").unwrap(), 0x0F);
        assert_eq!(parse_mask("17").unwrap(), 17);
        assert_eq!(parse_mask("0").unwrap(), 0);
        for bad in ["0x100", "256", "x1", "", "-1", "0x"] {
            let e = parse_mask(bad).unwrap_err().to_string();
            assert!(e.contains("--mask"), "{bad}: {e}");
        }
    }
}
