//! Traversal strategies and BVH layouts side by side (issue 6, `wavetrace profile`).
//!
//! A [`Variant`] names one choice on each axis: traversal (full stack, short stack with
//! restart trail, short stack with walk-back, stackless trail), child order (box sorting,
//! leaf-first), box format, triangles per node, builder, wave width, lane refill and ray
//! order. [`profile()`] sends the same rays through every variant's wave model and measures TD
//! clocks, instructions, queries, SIMD efficiency, stack depth, node bytes and the modelled
//! rate on a console.
//!
//! Correctness guard: every variant's hits are checked against the scalar reference
//! traversal ([`crate::bvh::closest_hit_scalar`]) run on the variant's own BVH image: same
//! primitive and t within [`T_TOLERANCE_ULPS`] (closest hit), same occluded flag (any hit).
//! A variant that disagrees on any ray is marked wrong and never ranked. Separately, each
//! variant is compared with the reference on a canonical FP32, one-triangle-per-node image
//! (`canonical_diffs`, informational): a layout may legitimately move a hit exactly on a
//! shared edge to the neighbouring triangle (a triangle stored in another vertex rotation),
//! and a builder bug would show there.
//!
//! - [`rays`]: camera and secondary ray sets, ray orderings.
//! - [`heatmap`]: per-pixel clock heatmaps with a legend.

pub mod heatmap;
pub mod rays;

use crate::bvh::{self, BoxFormat, BuildOptions, BvhImage, Mesh};
use crate::counters::Counters;
use crate::hw::peak::ConsoleConfig;
use crate::hw::NodePointer;
use crate::math::{Hit, Ray};
use crate::traverse::short_stack::{ChildOrder, CountedTraversal, TrailStack, WalkBack};
use crate::traverse::stream::{trace_stream, StreamStats};
use crate::traverse::{FullStack, LaneOutput, LaneState, Query};
use crate::traverse::{LeafChains, WaveRun};
use crate::wave::{td, BvhMemory, NodeCache, Wave, WaveIntersector, WaveWidth};
use crate::{Error, Result};
use rayon::prelude::*;
use rays::RayOrder;
use serde::Serialize;
use std::time::Instant;

/// Closest-hit t of a variant may differ from the reference by this many ULPs. On the same
/// image the instruction is the same, so t should be bit-identical; one ULP of slack.
pub const T_TOLERANCE_ULPS: u32 = 1;

/// Rays per parallel block (a multiple of every wave's refill batch).
const BLOCK_RAYS: usize = 2048;

/// With lane refill, one persistent wave runs this many waves' worth of rays.
pub const REFILL_WAVES: usize = 4;

/// The traversal shader of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum TraversalKind {
    /// Complete per-lane stack (`traverse::FullStack`).
    FullStack,
    /// Short stack of `n` entries, restart from the root along a trail.
    RestartTrail(usize),
    /// Short stack of `n` entries, walk back through parent pointers on underflow.
    WalkBack(usize),
    /// No stack: restart trail only.
    StacklessTrail,
}

/// One profiled configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Unique name ("restart-5", "fp16", ...).
    pub name: String,
    /// The axis it varies ("traversal", "box format", ...).
    pub axis: &'static str,
    pub traversal: TraversalKind,
    /// Visit triangle children before box children.
    pub leaf_first: bool,
    /// Build and encoder options (box sorting is its descriptor bit).
    pub build: BuildOptions,
    pub wave: WaveWidth,
    /// Finished lanes take new rays.
    pub refill: bool,
    pub ray_order: RayOrder,
}

impl Variant {
    /// The baseline: full stack, sorted nearest first, the builder's defaults (mixed boxes,
    /// two triangles per node, binned SAH), wave32, no refill, rays as given.
    pub fn baseline() -> Variant {
        Variant {
            name: "full-stack".into(),
            axis: "baseline",
            traversal: TraversalKind::FullStack,
            leaf_first: false,
            build: BuildOptions::default(),
            wave: WaveWidth::W32,
            refill: false,
            ray_order: RayOrder::AsGiven,
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
            TraversalKind::FullStack => "full stack".to_string(),
            TraversalKind::RestartTrail(n) => format!("short stack {n} + restart trail"),
            TraversalKind::WalkBack(n) => format!("short stack {n} + parent walk-back"),
            TraversalKind::StacklessTrail => "stackless restart trail".to_string(),
        };
        format!(
            "{trav}; sort {}; {}; boxes {boxes}; {} tris/node{}; {}; wave{}{}; rays {}",
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
            v.traversal = TraversalKind::RestartTrail(n)
        }));
    }
    for n in [1usize, 3, 5, 8] {
        out.push(with(&format!("walkback-{n}"), "traversal", &|v| {
            v.traversal = TraversalKind::WalkBack(n)
        }));
    }
    out.push(with("stackless-trail", "traversal", &|v| {
        v.traversal = TraversalKind::StacklessTrail
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
    out
}

/// The variants named in `list` (comma-separated names, or `all`), in list order.
pub fn select_variants(list: &str) -> Result<Vec<Variant>> {
    let all = all_variants();
    if list.trim() == "all" {
        return Ok(all);
    }
    let mut out: Vec<Variant> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let v = all.iter().find(|v| v.name == name).ok_or_else(|| {
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

/// What the rays ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum QueryKind {
    ClosestHit,
    AnyHit,
}

impl QueryKind {
    fn query(self) -> Query {
        match self {
            QueryKind::ClosestHit => Query::ClosestHit,
            QueryKind::AnyHit => Query::AnyHit,
        }
    }
}

/// One variant's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct VariantResult {
    pub name: String,
    pub axis: &'static str,
    pub description: String,
    /// Rays whose hit disagrees with the reference on the same image (0 for a correct
    /// variant).
    pub wrong_rays: u64,
    /// Rays whose hit differs geometrically from the reference on the canonical FP32 image
    /// (hit vs miss, or t off by more than 1e-4 relative; informational, see the module
    /// docs).
    pub canonical_diffs: u64,
    /// Position in the ranking by modelled rays/s (1 = fastest); `None` when wrong.
    pub rank: Option<usize>,
    pub td_clocks_per_ray: f64,
    /// Wave instructions issued per ray (one per wave step, shared by its active lanes).
    pub instructions_per_ray: f64,
    pub box_queries_per_ray: f64,
    pub triangle_tests_per_ray: f64,
    /// Active lane slots over available lane slots of issued instructions.
    pub simd_efficiency: f64,
    pub max_stack_depth: u64,
    pub mean_stack_depth: f64,
    pub node_bytes_per_ray: f64,
    /// Restarts from the root (trail) or walk-back steps (walk-back) per ray.
    pub restarts_per_ray: f64,
    /// Rays per second on the target console (busiest TD's clocks), in 10^9.
    pub modelled_grays: f64,
    /// Rays per second if the same clocks were spread evenly over all TDs, in 10^9.
    pub balanced_grays: f64,
    /// Useful box tests per modelled second over the console's peak box-test rate.
    pub peak_share: f64,
    /// Mean over busiest TD clocks on the target console (1 = perfectly balanced; the
    /// modelled rate follows the busiest TD).
    pub td_balance: f64,
    /// Seconds the host took to run the variant.
    pub host_seconds: f64,
    /// BVH image bytes.
    pub bvh_bytes: usize,
    #[serde(skip)]
    pub counters: Counters,
    /// TD clocks of each ray, in input order.
    #[serde(skip)]
    pub ray_clocks: Vec<u32>,
    /// Each ray's raw result, in input order.
    #[serde(skip)]
    pub outputs: Vec<LaneOutput>,
}

/// A whole profile.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileReport {
    pub input: String,
    pub rays: usize,
    pub ray_kind: String,
    pub query: QueryKind,
    pub console: &'static str,
    pub t_tolerance_ulps: u32,
    /// Reference host seconds (scalar traversal of every ray).
    pub reference_seconds: f64,
    /// In rank order; wrong variants last.
    pub variants: Vec<VariantResult>,
}

/// Distance in representable f32 values between two finite floats.
pub fn ulp_distance(a: f32, b: f32) -> u64 {
    fn key(x: f32) -> i64 {
        let bits = x.to_bits() as i32 as i64;
        if bits < 0 {
            i32::MIN as i64 - bits
        } else {
            bits
        }
    }
    (key(a) - key(b)).unsigned_abs()
}

/// Whether a variant's result matches the reference (see the module docs).
pub fn agrees(query: QueryKind, reference: &Hit, t: f32, prim_id: u32, hit: bool) -> bool {
    match query {
        QueryKind::AnyHit => reference.is_hit() == hit,
        QueryKind::ClosestHit => match (reference.is_hit(), hit) {
            (false, false) => true,
            (true, true) => {
                prim_id == reference.prim_id
                    && ulp_distance(t, reference.t) <= T_TOLERANCE_ULPS as u64
            }
            _ => false,
        },
    }
}

/// The canonical reference image: FP32 boxes, one triangle per node, binned SAH.
pub fn reference_image(mesh: &Mesh) -> Result<BvhImage> {
    let options = BuildOptions {
        box_format: BoxFormat::Fp32,
        triangles_per_node: 1,
        ..BuildOptions::default()
    };
    Ok(bvh::build(mesh, &options)?.image)
}

/// Closest hits of `rays` by [`bvh::closest_hit_scalar`], in parallel.
pub fn reference_hits(image: &BvhImage, mesh: &Mesh, rays: &[Ray]) -> Vec<Hit> {
    rays.par_iter()
        .map(|r| bvh::closest_hit_scalar(image, mesh, r))
        .collect()
}

/// A built image for each distinct build of `variants` (box sorting is only the
/// descriptor bit, so it shares the build).
struct Builds {
    /// Build options (sorting on), image, reference hits on it.
    entries: Vec<(BuildOptions, BvhImage, Vec<Hit>)>,
}

impl Builds {
    /// The image for `options` and the reference hits of `rays` on it.
    fn get(
        &mut self,
        mesh: &Mesh,
        options: &BuildOptions,
        rays: &[Ray],
    ) -> Result<(BvhImage, &[Hit])> {
        let key = BuildOptions {
            box_sort: true,
            ..*options
        };
        let index = match self.entries.iter().position(|(o, _, _)| *o == key) {
            Some(i) => i,
            None => {
                let image = bvh::build(mesh, &key)?.image;
                let hits = reference_hits(&image, mesh, rays);
                self.entries.push((key, image, hits));
                self.entries.len() - 1
            }
        };
        let (_, image, hits) = &self.entries[index];
        let mut image = image.clone();
        image.descriptor.box_sort_enable = options.box_sort;
        Ok((image, hits))
    }
}

/// Runs `rays` through `variant` on `image`; returns per-ray outputs in input order, the
/// counters and the stream stats.
pub fn trace_variant(
    variant: &Variant,
    image: &BvhImage,
    mesh: &Mesh,
    rays: &[Ray],
    query: QueryKind,
) -> (Vec<LaneOutput>, Counters, StreamStats) {
    let order = ChildOrder {
        sorted: image.descriptor.box_sort_enable,
        leaf_first: variant.leaf_first,
    };
    let leaf_first_stack = TrailStack {
        capacity: usize::MAX,
        order,
    };
    // Chain images: the same strategy with the chain walk around it.
    macro_rules! go {
        ($traversal:expr) => {
            if image.leaf_chains {
                run_width(variant, image, mesh, rays, query, &LeafChains($traversal))
            } else {
                run_width(variant, image, mesh, rays, query, &$traversal)
            }
        };
    }
    match (variant.traversal, variant.leaf_first || !order.sorted) {
        (TraversalKind::FullStack, false) => go!(FullStack),
        (TraversalKind::FullStack, true) => go!(leaf_first_stack),
        (TraversalKind::RestartTrail(n), _) => go!(TrailStack { capacity: n, order }),
        (TraversalKind::StacklessTrail, _) => go!(TrailStack { capacity: 0, order }),
        (TraversalKind::WalkBack(n), _) => go!(WalkBack::new(n, order, image)),
    }
}

fn run_width<T: CountedTraversal>(
    variant: &Variant,
    image: &BvhImage,
    mesh: &Mesh,
    rays: &[Ray],
    query: QueryKind,
    traversal: &T,
) -> (Vec<LaneOutput>, Counters, StreamStats) {
    match variant.wave {
        WaveWidth::W32 => run::<32, T>(variant, image, mesh, rays, query, traversal),
        WaveWidth::W64 => run::<64, T>(variant, image, mesh, rays, query, traversal),
    }
}

fn run<const W: usize, T: CountedTraversal>(
    variant: &Variant,
    image: &BvhImage,
    mesh: &Mesh,
    rays: &[Ray],
    query: QueryKind,
    traversal: &T,
) -> (Vec<LaneOutput>, Counters, StreamStats) {
    let memory = BvhMemory {
        bytes: &image.bytes,
        va: 0,
    };
    let cache = NodeCache::build(&memory, &image.descriptor, image.root);
    let intersector = WaveIntersector::new(memory, image.descriptor, Some(&cache));
    let triangles = mesh.len() as u32;
    let prim_id = |ptr: NodePointer, dwords: &[u32; 4]| {
        let p = image.primitive_id(ptr, dwords);
        if p < triangles {
            p
        } else {
            u32::MAX
        }
    };
    // Ray order: trace a permuted copy, then put outputs back in input order.
    let permutation = variant.ray_order.permutation(rays);
    let ordered: Vec<Ray> = permutation.iter().map(|&i| rays[i as usize]).collect();
    let mut out = vec![LaneOutput::default(); rays.len()];
    let batch = if variant.refill { REFILL_WAVES * W } else { W };
    let blocks: Vec<(Counters, StreamStats)> = ordered
        .par_chunks(BLOCK_RAYS)
        .zip(out.par_chunks_mut(BLOCK_RAYS))
        .enumerate()
        .map(|(b, (rays, out))| {
            let mut counters = Counters::default();
            let mut stats = StreamStats::default();
            let mut wave: Box<Wave<W, LaneState<T::Lane>>> = Box::new(Wave::new(0));
            let run = WaveRun {
                intersector: &intersector,
                traversal,
                root: image.root,
                prim_id: &prim_id,
                query: query.query(),
            };
            for (j, (rays, out)) in rays.chunks(batch).zip(out.chunks_mut(batch)).enumerate() {
                let first = (b * BLOCK_RAYS / batch + j) as u64;
                trace_stream(
                    &run,
                    first,
                    rays,
                    variant.refill,
                    &mut wave,
                    out,
                    &mut counters,
                    &mut stats,
                );
            }
            (counters, stats)
        })
        .collect();
    let mut counters = Counters::default();
    let mut stats = StreamStats::default();
    for (c, s) in &blocks {
        counters.merge(c);
        stats.merge(s);
    }
    let mut in_order = vec![LaneOutput::default(); rays.len()];
    for (k, &i) in permutation.iter().enumerate() {
        in_order[i as usize] = out[k];
    }
    (in_order, counters, stats)
}

/// The rays to profile and how to name them in reports.
#[derive(Clone, Debug)]
pub struct RaySet {
    pub name: String,
    pub rays: Vec<Ray>,
    pub query: QueryKind,
}

/// Profiles `variants` on `mesh` with the rays of `set`; `console` decides the modelled
/// rate. `canonical` holds the reference hits on the canonical image ([`reference_image`]),
/// computed here when `None`; the guard's reference runs once per distinct build. Returns
/// the ranked report.
pub fn profile(
    input: &str,
    mesh: &Mesh,
    set: &RaySet,
    variants: &[Variant],
    console: &ConsoleConfig,
    canonical: Option<&[Hit]>,
) -> Result<ProfileReport> {
    if set.rays.is_empty() {
        return Err(Error::Other(format!("{input}: no rays to profile")));
    }
    let start = Instant::now();
    let owned;
    let reference = match canonical {
        Some(r) => r,
        None => {
            let image = reference_image(mesh)?;
            owned = reference_hits(&image, mesh, &set.rays);
            &owned
        }
    };
    let reference_seconds = start.elapsed().as_secs_f64();
    let mut builds = Builds {
        entries: Vec::new(),
    };
    let mut results = Vec::with_capacity(variants.len());
    for v in variants {
        let (image, own) = builds.get(mesh, &v.build, &set.rays)?;
        let mut r = measure(v, &image, mesh, set, console, own);
        r.canonical_diffs = r
            .outputs
            .iter()
            .zip(reference)
            .filter(|(o, h)| !agrees_geometrically(set.query, h, o.t, o.best.is_some()))
            .count() as u64;
        results.push(r);
    }
    rank(&mut results);
    Ok(ProfileReport {
        input: input.to_string(),
        rays: set.rays.len(),
        ray_kind: set.name.clone(),
        query: set.query,
        console: console.name,
        t_tolerance_ulps: T_TOLERANCE_ULPS,
        reference_seconds,
        variants: results,
    })
}

/// Runs and measures one variant.
pub fn measure(
    variant: &Variant,
    image: &BvhImage,
    mesh: &Mesh,
    set: &RaySet,
    console: &ConsoleConfig,
    reference: &[Hit],
) -> VariantResult {
    let start = Instant::now();
    let (out, counters, stats) = trace_variant(variant, image, mesh, &set.rays, set.query);
    let host_seconds = start.elapsed().as_secs_f64();
    let wrong_rays = count_disagreements(set.query, reference, &out);
    let n = set.rays.len() as f64;
    let seconds = td::modelled_seconds(&counters, console);
    let per = |x: u64| x as f64 / n;
    let (grays, useful_per_second) = if seconds > 0.0 {
        (n / seconds / 1e9, counters.td_aabb_useful as f64 / seconds)
    } else {
        (0.0, 0.0)
    };
    VariantResult {
        name: variant.name.clone(),
        axis: variant.axis,
        description: variant.description(),
        wrong_rays,
        canonical_diffs: 0,
        rank: None,
        td_clocks_per_ray: per(counters.td_clocks),
        instructions_per_ray: per(counters.trav_iterations),
        box_queries_per_ray: per(counters.td_box_queries),
        triangle_tests_per_ray: per(counters.td_triangle_tests),
        simd_efficiency: counters.simd_efficiency(),
        max_stack_depth: counters.trav_max_stack_depth,
        mean_stack_depth: if stats.stack_depth_samples == 0 {
            0.0
        } else {
            stats.stack_depth_sum as f64 / stats.stack_depth_samples as f64
        },
        node_bytes_per_ray: per(stats.node_bytes),
        restarts_per_ray: per(stats.events.restarts),
        modelled_grays: grays,
        balanced_grays: if counters.td_clocks == 0 {
            0.0
        } else {
            n * console.tds() as f64 * console.clock_hz() / counters.td_clocks as f64 / 1e9
        },
        peak_share: useful_per_second / console.peak_box_tests_per_second(),
        td_balance: {
            let (_, mean, max) = td::td_balance(&counters, console);
            if max == 0 {
                0.0
            } else {
                mean / max as f64
            }
        },
        host_seconds,
        bvh_bytes: image.bytes.len(),
        counters,
        ray_clocks: out.iter().map(|o| o.clocks).collect(),
        outputs: out,
    }
}

/// The looser comparison with the canonical image: the same hit or miss (occluded flag for
/// any hit) and, for closest hits, t within a relative 1e-4 (the primitive may differ where
/// two triangles meet).
pub fn agrees_geometrically(query: QueryKind, reference: &Hit, t: f32, hit: bool) -> bool {
    if reference.is_hit() != hit {
        return false;
    }
    query == QueryKind::AnyHit || !hit || (t - reference.t).abs() <= 1e-4 * reference.t.abs()
}

/// Rays whose output disagrees with `reference` (see [`agrees`]).
pub fn count_disagreements(query: QueryKind, reference: &[Hit], out: &[LaneOutput]) -> u64 {
    out.iter()
        .zip(reference)
        .filter(|(o, r)| !agrees(query, r, o.t, o.prim_id, o.best.is_some()))
        .count() as u64
}

/// Sorts correct variants by modelled rate (fastest first; ties by name) and gives them
/// ranks; wrong variants follow, unranked.
pub fn rank(results: &mut [VariantResult]) {
    results.sort_by(|a, b| {
        (a.wrong_rays > 0)
            .cmp(&(b.wrong_rays > 0))
            .then(b.modelled_grays.total_cmp(&a.modelled_grays))
            .then(a.name.cmp(&b.name))
    });
    let mut next = 1;
    for r in results.iter_mut() {
        r.rank = if r.wrong_rays == 0 {
            next += 1;
            Some(next - 1)
        } else {
            None
        };
    }
}

/// Column headers of the table and the CSV.
pub const COLUMNS: [&str; 20] = [
    "rank",
    "variant",
    "axis",
    "wrong_rays",
    "canonical_diffs",
    "grays",
    "balanced_grays",
    "peak_share",
    "td_clocks_per_ray",
    "instructions_per_ray",
    "box_queries_per_ray",
    "triangle_tests_per_ray",
    "simd_efficiency",
    "max_stack_depth",
    "mean_stack_depth",
    "node_bytes_per_ray",
    "restarts_per_ray",
    "td_balance",
    "bvh_bytes",
    "host_seconds",
];

fn row(r: &VariantResult) -> [String; 20] {
    [
        r.rank.map_or("WRONG".to_string(), |k| k.to_string()),
        r.name.clone(),
        r.axis.to_string(),
        r.wrong_rays.to_string(),
        r.canonical_diffs.to_string(),
        format!("{:.3}", r.modelled_grays),
        format!("{:.3}", r.balanced_grays),
        format!("{:.4}", r.peak_share),
        format!("{:.2}", r.td_clocks_per_ray),
        format!("{:.3}", r.instructions_per_ray),
        format!("{:.2}", r.box_queries_per_ray),
        format!("{:.2}", r.triangle_tests_per_ray),
        format!("{:.3}", r.simd_efficiency),
        r.max_stack_depth.to_string(),
        format!("{:.2}", r.mean_stack_depth),
        format!("{:.0}", r.node_bytes_per_ray),
        format!("{:.3}", r.restarts_per_ray),
        format!("{:.3}", r.td_balance),
        r.bvh_bytes.to_string(),
        format!("{:.3}", r.host_seconds),
    ]
}

/// The report as CSV (one header line, one line per variant in rank order).
pub fn to_csv(report: &ProfileReport) -> String {
    let mut s = COLUMNS.join(",");
    s.push('\n');
    for r in &report.variants {
        s.push_str(&row(r).join(","));
        s.push('\n');
    }
    s
}

/// The report as an aligned text table for the terminal.
pub fn to_table(report: &ProfileReport) -> String {
    let short = [
        "#",
        "variant",
        "axis",
        "wrong",
        "vs fp32",
        "Grays/s",
        "bal G/s",
        "peak",
        "clk/ray",
        "instr/ray",
        "box/ray",
        "tri/ray",
        "simd",
        "maxstk",
        "meanstk",
        "B/ray",
        "rst/ray",
        "TD bal",
        "BVH B",
        "host s",
    ];
    let rows: Vec<[String; 20]> = report.variants.iter().map(row).collect();
    let mut widths: Vec<usize> = short.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == 1 || i == 2 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = format!(
        "{}: {} {} rays ({}), ranked by modelled rays/s on {}\n",
        report.input,
        report.rays,
        report.ray_kind,
        match report.query {
            QueryKind::ClosestHit => "closest hit",
            QueryKind::AnyHit => "any hit",
        },
        report.console
    );
    out.push_str(&line(&short.map(String::from)));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

/// A shared heatmap scale for `results`: the largest of their 99th-percentile per-ray
/// clocks (at least 1), so one outlier ray does not wash out every map.
pub fn shared_heatmap_scale(results: &[VariantResult]) -> u32 {
    results
        .iter()
        .map(|r| {
            let mut c = r.ray_clocks.clone();
            c.sort_unstable();
            c.get((c.len().saturating_sub(1)) * 99 / 100)
                .copied()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
        .max(1)
}

/// The built-in ray sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RayKind {
    /// One camera ray per pixel (closest hit).
    Primary,
    /// Cosine bounce rays from the camera rays' hits (closest hit).
    Diffuse,
    /// Rays from the camera rays' hits to a point light above the scene (any hit).
    Shadow,
    /// Ambient-occlusion rays of a tenth of the scene diagonal (any hit).
    Ao,
}

impl RayKind {
    pub fn from_name(name: &str) -> Option<RayKind> {
        match name {
            "primary" => Some(RayKind::Primary),
            "diffuse" => Some(RayKind::Diffuse),
            "shadow" => Some(RayKind::Shadow),
            "ao" => Some(RayKind::Ao),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RayKind::Primary => "primary",
            RayKind::Diffuse => "diffuse",
            RayKind::Shadow => "shadow",
            RayKind::Ao => "ao",
        }
    }
}

/// Builds a ray set: the camera rays `primary`, or secondary rays spawned from their
/// reference hits (offset by 1e-4 of the mesh's diagonal along the normal, `seed` for the
/// random directions). Returns the set and, for primary rays, their reference hits.
pub fn make_rays(
    kind: RayKind,
    mesh: &Mesh,
    reference: &BvhImage,
    primary: Vec<Ray>,
    seed: u64,
) -> (RaySet, Option<Vec<Hit>>) {
    let hits = reference_hits(reference, mesh, &primary);
    let bounds = mesh_bounds(mesh);
    let diagonal = bounds.extent().length();
    let eps = 1e-4 * diagonal;
    let (rays, query) = match kind {
        RayKind::Primary => {
            return (
                RaySet {
                    name: kind.name().into(),
                    rays: primary,
                    query: QueryKind::ClosestHit,
                },
                Some(hits),
            )
        }
        RayKind::Diffuse => (
            rays::diffuse_rays(mesh, &primary, &hits, eps, seed),
            QueryKind::ClosestHit,
        ),
        RayKind::Ao => (
            rays::ao_rays(mesh, &primary, &hits, eps, 0.1 * diagonal, seed),
            QueryKind::AnyHit,
        ),
        RayKind::Shadow => {
            let light = bounds.center() + glam::Vec3::new(0.15, 0.6, 0.1) * diagonal;
            (
                rays::shadow_rays(mesh, &primary, &hits, eps, light),
                QueryKind::AnyHit,
            )
        }
    };
    (
        RaySet {
            name: kind.name().into(),
            rays,
            query,
        },
        None,
    )
}

/// Camera rays of a scene's camera for a `width x height` grid of pixel centres spread over
/// the scene's film (so the scene's aspect ratio is kept), row-major, row 0 at the top.
pub fn scene_primary_rays(scene: &crate::scene::Scene, width: u32, height: u32) -> Vec<Ray> {
    let (fw, fh) = (scene.film.width as f32, scene.film.height as f32);
    let mut out = Vec::with_capacity(width as usize * height as usize);
    for y in 0..height {
        for x in 0..width {
            let fx = (x as f32 + 0.5) * fw / width as f32;
            let fy = (y as f32 + 0.5) * fh / height as f32;
            out.push(scene.camera.ray(fx, fy));
        }
    }
    out
}

/// A scene's triangles as a [`Mesh`] (triangle i = primitive id i, as the renderer uses).
pub fn scene_mesh(scene: &crate::scene::Scene) -> Mesh {
    Mesh {
        positions: scene.geometry.positions.clone(),
        indices: scene.geometry.indices.clone(),
    }
}

/// Bounding box of the mesh's finite vertices.
pub fn mesh_bounds(mesh: &Mesh) -> crate::math::Aabb {
    let points: Vec<glam::Vec3> = mesh
        .positions
        .iter()
        .filter(|p| p.iter().all(|c| c.is_finite()))
        .map(|&p| glam::Vec3::from(p))
        .collect();
    crate::math::Aabb::from_points(&points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    #[test]
    fn wrong_variants_are_never_ranked() {
        let mesh = Mesh::from_triangles(&[
            [[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 1.0, 0.0]],
            [[-1.0, -1.0, 2.0], [1.0, -1.0, 2.0], [0.0, 1.0, 2.0]],
        ]);
        let rays: Vec<Ray> = (0..40)
            .map(|i| {
                let x = i as f32 / 40.0 - 0.5;
                Ray::new(Vec3::new(x, 0.0, -3.0), Vec3::Z, 0.0, f32::INFINITY)
            })
            .collect();
        let set = RaySet {
            name: "test".into(),
            rays,
            query: QueryKind::ClosestHit,
        };
        let report = profile(
            "t",
            &mesh,
            &set,
            &select_variants("full-stack,fp16").unwrap(),
            &crate::hw::peak::SERIES_S,
            None,
        )
        .unwrap();
        assert!(report.variants.iter().all(|v| v.wrong_rays == 0));
        // Every ray hits the nearer triangle (prim 0) at t = 3.
        let base = &report
            .variants
            .iter()
            .find(|v| v.name == "full-stack")
            .unwrap();
        assert!(base.outputs.iter().all(|o| o.prim_id == 0 && o.t == 3.0));
        let mut results = report.variants.clone();
        let mut fast_but_wrong = results[0].clone();
        fast_but_wrong.name = "zz-wrong".into();
        fast_but_wrong.wrong_rays = 1;
        fast_but_wrong.modelled_grays = 1e9;
        results.push(fast_but_wrong);
        rank(&mut results);
        assert_eq!(results.last().unwrap().name, "zz-wrong");
        assert_eq!(results.last().unwrap().rank, None);
        assert_eq!(results[0].rank, Some(1));
        assert_eq!(results[1].rank, Some(2));
        assert!(to_table(&ProfileReport {
            variants: results.clone(),
            ..report.clone()
        })
        .contains("WRONG"));
    }
}
