//! The profiled configurations: the baseline and one change along each axis.

use super::rays::RayOrder;
use crate::bvh::{BoxFormat, BuildOptions, NodeOrder};
use crate::shard::Shard;
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

/// The variants shard `shard` profiles: a deterministic split of `variants` that keeps the
/// variants of one build together where the balance allows, since each shard builds the
/// image and runs the scalar guard reference once per distinct build it has (a round-robin
/// split repeats both in most shards).
///
/// Variants are grouped by build (box sorting aside: it is a descriptor bit on the same
/// image; each TLAS variant alone). A group is cut into the fewest runs of at most `cut`
/// variants, dealt out in turn (run k of n takes the group's variants k, k + n, ...: the
/// variants of one axis, such as the costly short-stack traversals, sit next to each other
/// in the selection and so spread over the runs). The runs, largest first, go to the shard
/// with the least work so far (a run costs its variants plus one for its build; the lowest
/// index on a tie). `cut` is the largest run size whose busiest shard stays within an
/// eighth of the even share, so a large group is cut only as much as the balance needs.
/// Every variant goes to exactly one shard; the order within a shard is the selection
/// order.
pub fn shard_variants(variants: &[Variant], shard: Shard) -> Vec<Variant> {
    let owner = shard_owners(variants, shard.count as usize);
    (variants.iter().zip(&owner))
        .filter(|(_, &o)| o == shard.index as usize)
        .map(|(v, _)| v.clone())
        .collect()
}

/// The shard of each variant of [`shard_variants`] among `count` shards.
fn shard_owners(variants: &[Variant], count: usize) -> Vec<usize> {
    let key = |v: &Variant| {
        (v.tlas.is_none()).then_some(BuildOptions {
            box_sort: true,
            ..v.build
        })
    };
    // Groups in order of first appearance: the indices of their variants.
    let mut groups: Vec<(Option<BuildOptions>, Vec<usize>)> = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        let k = key(v);
        match groups.iter_mut().find(|(g, _)| k.is_some() && *g == k) {
            Some((_, members)) => members.push(i),
            None => groups.push((k, vec![i])),
        }
    }
    let largest = groups.iter().map(|(_, m)| m.len()).max().unwrap_or(1);
    // (busiest shard's load, owners) for runs of at most `cut` variants.
    let split = |cut: usize| {
        let mut runs: Vec<Vec<usize>> = (groups.iter())
            .flat_map(|(_, members)| {
                let n = members.len().div_ceil(cut);
                (0..n).map(move |k| members.iter().skip(k).step_by(n).copied().collect())
            })
            .collect();
        // Largest first; the sort is stable, so equal runs keep their order.
        runs.sort_by_key(|r| std::cmp::Reverse(r.len()));
        let mut load = vec![0usize; count];
        let mut owner = vec![0usize; variants.len()];
        for run in &runs {
            let (target, _) = (load.iter().enumerate())
                .min_by_key(|&(s, &l)| (l, s))
                .expect("at least one shard");
            load[target] += run.len() + 1;
            for &i in run {
                owner[i] = target;
            }
        }
        let even = load.iter().sum::<usize>().div_ceil(count);
        (load.iter().copied().max().unwrap_or(0), even, owner)
    };
    let mut best: Option<(usize, Vec<usize>)> = None;
    for cut in (1..=largest).rev() {
        let (busiest, even, owner) = split(cut);
        if 8 * busiest <= 9 * even {
            return owner;
        }
        if best.as_ref().is_none_or(|(b, _)| busiest < *b) {
            best = Some((busiest, owner));
        }
    }
    best.map(|(_, owner)| owner).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_take_every_variant_once_keep_builds_together_and_stay_balanced() {
        let all = all_variants();
        let build = |v: &Variant| BuildOptions {
            box_sort: true,
            ..v.build
        };
        let mut builds: Vec<BuildOptions> = Vec::new();
        for v in &all {
            if !builds.contains(&build(v)) {
                builds.push(build(v));
            }
        }
        for count in [1u32, 2, 3, 4, 7, 40] {
            let shards: Vec<Vec<Variant>> = (0..count)
                .map(|index| shard_variants(&all, Shard { index, count }))
                .collect();
            // Each variant once, in selection order within its shard.
            let mut names: Vec<&str> = shards.iter().flatten().map(|v| v.name.as_str()).collect();
            assert_eq!(names.len(), all.len());
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), all.len(), "{count} shards");
            for s in &shards {
                let order: Vec<usize> = (s.iter())
                    .map(|v| all.iter().position(|a| a.name == v.name).unwrap())
                    .collect();
                assert!(order.windows(2).all(|w| w[0] < w[1]));
            }
            // The builds made over all shards: at most one per build and per cut of a large
            // group (cut no finer than an even share), where round-robin repeats most.
            let most = all.len().div_ceil(count as usize);
            let cuts: usize = (builds.iter())
                .map(|b| all.iter().filter(|v| build(v) == *b).count().div_ceil(most))
                .sum();
            let made: usize = (shards.iter())
                .map(|s| {
                    let mut seen: Vec<BuildOptions> = Vec::new();
                    for v in s {
                        if !seen.contains(&build(v)) {
                            seen.push(build(v));
                        }
                    }
                    seen.len()
                })
                .sum();
            assert!(made <= cuts, "{count} shards: {made} builds > {cuts}");
            // No shard has more than twice its share of variants (plus one).
            let largest = shards.iter().map(Vec::len).max().unwrap();
            assert!(largest <= 2 * most + 1, "{count} shards: {largest}");
            // Where the default build's group is cut, its costly short-stack traversals
            // (adjacent in the selection) are dealt over its runs, not kept in one.
            let short_stack = |v: &Variant| v.axis == "traversal" && v.name != "full-stack";
            let holding: Vec<usize> = (shards.iter())
                .map(|s| s.iter().filter(|v| short_stack(v)).count())
                .collect();
            let default_build = build(&all[0]);
            let runs = (shards.iter())
                .filter(|s| s.iter().any(|v| build(v) == default_build))
                .count();
            if runs > 1 {
                let most_held = holding.iter().max().unwrap();
                assert!(*most_held < 9, "{count} shards: {holding:?}");
            }
        }
    }
}
