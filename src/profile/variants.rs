//! The profiled configurations: the baseline and one change along each axis.

use super::rays::RayOrder;
use crate::bvh::{BoxFormat, BuildOptions, NodeOrder};
use crate::traverse::Strategy;
use crate::wave::WaveWidth;
use crate::{Error, Result};

/// One profiled configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Unique name ("restart-5", "fp16", ...).
    pub name: String,
    /// The axis it varies ("traversal", "box format", ...).
    pub axis: &'static str,
    pub traversal: Strategy,
    /// Visit triangle children before box children.
    pub leaf_first: bool,
    /// Build and encoder options (box sorting is its descriptor bit).
    pub build: BuildOptions,
    pub wave: WaveWidth,
    /// Finished lanes take new rays.
    pub refill: bool,
    pub ray_order: RayOrder,
    /// A scene's top level (the TLAS axis; `None`: the scene flattened into one mesh, as
    /// every other variant traces it).
    pub tlas: Option<TlasMode>,
    /// Waves of the traversal shader per SIMD in the memory model (`None`: the machine's).
    pub waves_per_simd: Option<u32>,
}

/// How the TLAS axis traces a scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlasMode {
    /// The two-level image, every instance one TLAS leaf.
    RebraidOff,
    /// The two-level image with large instances opened one level into their BLAS.
    RebraidOn,
    /// The scene flattened into one BLAS (instances' triangles in world space), traced by
    /// the same schedule as the two-level variants.
    Flattened,
}

impl Variant {
    /// The baseline: full stack, sorted nearest first, the builder's defaults (mixed boxes,
    /// two triangles per node, binned SAH), wave32, no refill, rays as given.
    pub fn baseline() -> Variant {
        Variant {
            name: "full-stack".into(),
            axis: "baseline",
            traversal: Strategy::FullStack,
            leaf_first: false,
            build: BuildOptions::default(),
            wave: WaveWidth::W32,
            refill: false,
            ray_order: RayOrder::AsGiven,
            tlas: None,
            waves_per_simd: None,
        }
    }

    /// One line describing what differs from the baseline.
    pub fn description(&self) -> String {
        let b = &self.build;
        let boxes = match b.box_format {
            BoxFormat::Fp32 => "fp32".to_string(),
            BoxFormat::Fp16 => "fp16".to_string(),
            BoxFormat::Mixed { max_area_growth } => format!("mixed({max_area_growth})"),
        };
        let trav = match self.traversal {
            Strategy::FullStack => "full stack".to_string(),
            Strategy::RestartTrail(n) => format!("short stack {n} + restart trail"),
            Strategy::WalkBack(n) => format!("short stack {n} + parent walk-back"),
            Strategy::StacklessTrail => "stackless restart trail".to_string(),
        };
        let tlas = match self.tlas {
            None => "",
            Some(TlasMode::RebraidOff) => "; two-level, rebraid off (lockstep)",
            Some(TlasMode::RebraidOn) => "; two-level, rebraid on (lockstep)",
            Some(TlasMode::Flattened) => "; flattened into one BLAS (lockstep)",
        };
        let order = match b.node_order {
            NodeOrder::DepthFirst => "",
            NodeOrder::BreadthFirst => "; nodes breadth-first",
            NodeOrder::Treelets => "; nodes in treelets",
        };
        let occupancy = match self.waves_per_simd {
            None => String::new(),
            Some(n) => format!("; {n} waves/SIMD"),
        };
        format!(
            "{trav}; sort {}; {}; boxes {boxes}; {} tris/node{}; {}; wave{}{}; rays {}{tlas}{order}{occupancy}",
            if b.box_sort { "on" } else { "off" },
            if self.leaf_first {
                "leaf-first"
            } else {
                "nearest-first"
            },
            b.triangles_per_node,
            if b.leaf_chains { " chained" } else { "" },
            match (b.spatial_splits, b.optimize) {
                (false, false) => "binned SAH",
                (true, false) => "SAH + spatial splits",
                (false, true) => "binned SAH + reinsertion",
                (true, true) => "SAH + spatial splits + reinsertion",
            },
            self.wave.lanes(),
            if self.refill { " + refill" } else { "" },
            self.ray_order.name(),
        )
    }
}

/// Every variant: the baseline and one change along each axis.
pub fn all_variants() -> Vec<Variant> {
    let base = Variant::baseline();
    let with = |name: &str, axis: &'static str, f: &dyn Fn(&mut Variant)| {
        let mut v = base.clone();
        v.name = name.to_string();
        v.axis = axis;
        f(&mut v);
        v
    };
    let mut out = vec![base.clone()];
    for n in [1usize, 3, 5, 8] {
        out.push(with(&format!("restart-{n}"), "traversal", &|v| {
            v.traversal = Strategy::RestartTrail(n)
        }));
    }
    for n in [1usize, 3, 5, 8] {
        out.push(with(&format!("walkback-{n}"), "traversal", &|v| {
            v.traversal = Strategy::WalkBack(n)
        }));
    }
    out.push(with("stackless-trail", "traversal", &|v| {
        v.traversal = Strategy::StacklessTrail
    }));
    out.push(with("sort-off", "child order", &|v| {
        v.build.box_sort = false
    }));
    out.push(with("leaf-first", "child order", &|v| v.leaf_first = true));
    out.push(with("fp32", "box format", &|v| {
        v.build.box_format = BoxFormat::Fp32
    }));
    out.push(with("fp16", "box format", &|v| {
        v.build.box_format = BoxFormat::Fp16
    }));
    out.push(with("tris-1", "triangle node", &|v| {
        v.build.triangles_per_node = 1
    }));
    out.push(with("tris-4", "triangle node", &|v| {
        v.build.triangles_per_node = 4
    }));
    // Leaf chains: one box slot per node, the shader walks triangles k..0 (the driver's pair
    // compression with 2; with FP16 boxes and 4 the smallest image).
    out.push(with("chains-2", "triangle node", &|v| {
        v.build.leaf_chains = true
    }));
    out.push(with("chains-4-fp16", "triangle node", &|v| {
        v.build.leaf_chains = true;
        v.build.triangles_per_node = 4;
        v.build.box_format = BoxFormat::Fp16
    }));
    out.push(with("wave64", "wave", &|v| v.wave = WaveWidth::W64));
    out.push(with("refill-w32", "wave", &|v| v.refill = true));
    out.push(with("refill-w64", "wave", &|v| {
        v.wave = WaveWidth::W64;
        v.refill = true
    }));
    out.push(with("morton", "ray order", &|v| {
        v.ray_order = RayOrder::MortonOrigin
    }));
    out.push(with("dir-bins", "ray order", &|v| {
        v.ray_order = RayOrder::DirectionBins
    }));
    out.push(with("spatial-splits", "builder", &|v| {
        v.build.spatial_splits = true
    }));
    out.push(with("optimize", "builder", &|v| v.build.optimize = true));
    out.push(with("bfs", "node order", &|v| {
        v.build.node_order = NodeOrder::BreadthFirst
    }));
    out.push(with("treelets", "node order", &|v| {
        v.build.node_order = NodeOrder::Treelets
    }));
    for n in [4u32, 16] {
        out.push(with(&format!("occupancy-{n}"), "occupancy", &|v| {
            v.waves_per_simd = Some(n)
        }));
    }
    out
}

/// The TLAS axis of a scene: its two-level image without and with rebraiding, and the
/// scene flattened into one BLAS, each with the baseline's other settings.
pub fn tlas_variants() -> Vec<Variant> {
    [
        ("rebraid-off", TlasMode::RebraidOff),
        ("rebraid-on", TlasMode::RebraidOn),
        ("flattened", TlasMode::Flattened),
    ]
    .into_iter()
    .map(|(name, mode)| Variant {
        name: name.into(),
        axis: "TLAS",
        tlas: Some(mode),
        ..Variant::baseline()
    })
    .collect()
}

/// The variants named in `list` (comma-separated names, or `all`), in list order.
pub fn select_variants(list: &str) -> Result<Vec<Variant>> {
    select_from(all_variants(), list)
}

/// [`select_variants`] for a scene: the TLAS axis ([`tlas_variants`]) besides every other.
pub fn select_scene_variants(list: &str) -> Result<Vec<Variant>> {
    let mut all = all_variants();
    all.extend(tlas_variants());
    select_from(all, list)
}

fn select_from(all: Vec<Variant>, list: &str) -> Result<Vec<Variant>> {
    if list.trim() == "all" {
        return Ok(all);
    }
    let mut out: Vec<Variant> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let v = all.iter().find(|v| v.name == name).ok_or_else(|| {
            if tlas_variants().iter().any(|v| v.name == name) {
                return Error::field(
                    "--strategies",
                    format!("`{name}` is on the TLAS axis: it needs a scene file (.toml)"),
                );
            }
            let names: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
            Error::field(
                "--strategies",
                format!(
                    "unknown variant `{name}` (known: all, {})",
                    names.join(", ")
                ),
            )
        })?;
        if !out.iter().any(|o| o.name == v.name) {
            out.push(v.clone());
        }
    }
    if out.is_empty() {
        return Err(Error::field("--strategies", "names no variant"));
    }
    Ok(out)
}
