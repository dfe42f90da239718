//! Running a variant and measuring it: the stream schedule on the variant's own image, the
//! correctness guard, and the figures of the ranked table.

use super::{QueryKind, RaySet, Variant, T_TOLERANCE_ULPS};
use crate::bvh::{BvhImage, Mesh};
use crate::counters::Counters;
use crate::hw::peak::ConsoleConfig;
use crate::hw::NodePointer;
use crate::math::{Hit, Ray};
use crate::memory::{Dispatch, Machine, MemoryModel, MemoryReport, MemoryStats};
use crate::traverse::short_stack::{ChildOrder, CountedTraversal};
use crate::traverse::stream::{trace_stream, StreamRays, StreamStats, StreamTally};
use crate::traverse::{LaneOutput, LaneState, StrategyVisitor, WaveRun};
use crate::wave::{td, BvhMemory, NodeCache, Wave, WaveIntersector, WaveWidth};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Rays per parallel block (a multiple of every wave's refill batch).
const BLOCK_RAYS: usize = 2048;

/// With lane refill, one persistent wave runs this many waves' worth of rays.
pub const REFILL_WAVES: usize = 4;

/// One variant's measurements.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VariantResult {
    pub name: String,
    #[serde(deserialize_with = "crate::shard::de::interned")]
    pub axis: crate::shard::de::Name,
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
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub td_clocks_per_ray: f64,
    /// Wave instructions issued per ray (one per wave step, shared by its active lanes).
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub instructions_per_ray: f64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub box_queries_per_ray: f64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub triangle_tests_per_ray: f64,
    /// Active lane slots over available lane slots of issued instructions.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub simd_efficiency: f64,
    pub max_stack_depth: u64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub mean_stack_depth: f64,
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub node_bytes_per_ray: f64,
    /// Restarts from the root (trail) or walk-back steps (walk-back) per ray.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub restarts_per_ray: f64,
    /// Rays per second on the target console (busiest TD's clocks), in 10^9.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub modelled_grays: f64,
    /// Rays per second if the same clocks were spread evenly over all TDs, in 10^9.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub balanced_grays: f64,
    /// Useful box tests per modelled second over the console's peak box-test rate.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub peak_share: f64,
    /// Mean over busiest TD clocks on the target console (1 = perfectly balanced; the
    /// modelled rate follows the busiest TD).
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
    pub td_balance: f64,
    /// Seconds the host took to run the variant.
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
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
    /// The memory model's figures (absent with it off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryReport>,
    /// Modelled clocks of each ray with the memory model, in input order (empty with it
    /// off, or where lanes take new rays and a lane's time is not one ray's).
    #[serde(skip)]
    pub ray_memory_clocks: Vec<u32>,
}

impl VariantResult {
    /// The rate the ranking uses: with the memory model when it ran, else TD only (10^9
    /// rays/s).
    pub fn ranked_grays(&self) -> f64 {
        match &self.memory {
            Some(m) => m.modelled_rays_per_second / 1e9,
            None => self.modelled_grays,
        }
    }
}

/// A whole profile.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProfileReport {
    pub input: String,
    pub rays: usize,
    pub ray_kind: String,
    pub query: QueryKind,
    #[serde(deserialize_with = "crate::shard::de::interned")]
    pub console: crate::shard::de::Name,
    pub t_tolerance_ulps: u32,
    /// Reference host seconds (scalar traversal of every ray).
    #[serde(deserialize_with = "crate::shard::de::f64_or_nan")]
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

/// Runs `rays` through `variant` on `image`; returns per-ray outputs in input order, the
/// counters and the stream stats.
pub fn trace_variant(
    variant: &Variant,
    image: &BvhImage,
    mesh: &Mesh,
    rays: &[Ray],
    query: QueryKind,
) -> (Vec<LaneOutput>, Counters, StreamStats) {
    trace_variant_recording(variant, image, mesh, rays, query, false)
}

/// [`trace_variant`]; with `record`, the counters carry the node fetches of the run as one
/// sealed dispatch (for the memory model), its rays in the variant's ray order.
pub fn trace_variant_recording(
    variant: &Variant,
    image: &BvhImage,
    mesh: &Mesh,
    rays: &[Ray],
    query: QueryKind,
    record: bool,
) -> (Vec<LaneOutput>, Counters, StreamStats) {
    let order = ChildOrder {
        sorted: image.descriptor.box_sort_enable,
        leaf_first: variant.leaf_first,
    };
    let job = VariantRun {
        variant,
        image,
        mesh,
        rays,
        query,
        record,
    };
    variant
        .traversal
        .visit(order, image.leaf_chains, Some(image), job)
}

/// One variant's rays on its image, run with the variant's traversal
/// ([`Strategy::visit`](crate::traverse::Strategy::visit)) in waves of its width.
struct VariantRun<'v> {
    variant: &'v Variant,
    image: &'v BvhImage,
    mesh: &'v Mesh,
    rays: &'v [Ray],
    query: QueryKind,
    record: bool,
}

impl StrategyVisitor for VariantRun<'_> {
    type Output = (Vec<LaneOutput>, Counters, StreamStats);

    fn visit<T: CountedTraversal>(self, traversal: T) -> Self::Output {
        match self.variant.wave {
            WaveWidth::W32 => run::<32, T>(&self, &traversal),
            WaveWidth::W64 => run::<64, T>(&self, &traversal),
        }
    }
}

fn run<const W: usize, T: CountedTraversal>(
    job: &VariantRun,
    traversal: &T,
) -> (Vec<LaneOutput>, Counters, StreamStats) {
    let VariantRun {
        variant,
        image,
        mesh,
        rays,
        query,
        record,
    } = *job;
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
    let blocks: Vec<StreamTally> = ordered
        .par_chunks(BLOCK_RAYS)
        .zip(out.par_chunks_mut(BLOCK_RAYS))
        .enumerate()
        .map(|(b, (rays, out))| {
            let mut tally = StreamTally::default();
            tally.counters.fetches.enabled = record;
            let mut wave: Box<Wave<W, LaneState<T::Lane>>> = Box::new(Wave::new(0));
            let run = WaveRun {
                intersector: &intersector,
                traversal,
                root: image.root,
                prim_id: &prim_id,
                query: query.query(),
            };
            for (j, (rays, out)) in rays.chunks(batch).zip(out.chunks_mut(batch)).enumerate() {
                let stream = StreamRays {
                    rays,
                    first_wave_index: (b * BLOCK_RAYS / batch + j) as u64,
                    refill: variant.refill,
                };
                trace_stream(&run, stream, &mut wave, out, &mut tally);
            }
            tally
        })
        .collect();
    let mut tally = StreamTally::default();
    for block in &blocks {
        tally.merge(block);
    }
    let StreamTally {
        mut counters,
        stats,
    } = tally;
    if record {
        let waves = rays.len().div_ceil(batch) as u64;
        counters.fetches.seal(W as u32, rays.len() as u64, waves);
    }
    let mut in_order = vec![LaneOutput::default(); rays.len()];
    for (k, &i) in permutation.iter().enumerate() {
        in_order[i as usize] = out[k];
    }
    (in_order, counters, stats)
}

/// Runs and measures one variant (with the memory model of `machine`, when given).
pub fn measure(
    variant: &Variant,
    image: &BvhImage,
    mesh: &Mesh,
    set: &RaySet,
    console: &ConsoleConfig,
    reference: &[Hit],
    machine: Option<&Machine>,
) -> VariantResult {
    let start = Instant::now();
    let (out, mut counters, stats) = trace_variant_recording(
        variant,
        image,
        mesh,
        &set.rays,
        set.query,
        machine.is_some(),
    );
    let dispatches = counters.fetches.take();
    let host_seconds = start.elapsed().as_secs_f64();
    let wrong_rays = count_disagreements(set.query, reference, &out);
    let figures = Figures {
        rays: set.rays.len(),
        host_seconds,
        bvh_bytes: image.bytes.len(),
        stats: Some(&stats),
    };
    let mut r = result(variant, counters, &figures, console);
    r.wrong_rays = wrong_rays;
    r.ray_clocks = out.iter().map(|o| o.clocks).collect();
    r.outputs = out;
    if let Some(machine) = machine {
        // Per-ray times where each lane runs one ray (no refill), back in input order.
        let permutation = (!variant.refill).then(|| variant.ray_order.permutation(&set.rays));
        let (stats, clocks) = run_memory_model(variant, machine, &dispatches, permutation);
        r.memory = Some(MemoryReport::new(&stats, r.modelled_grays * 1e9));
        r.ray_memory_clocks = clocks;
    }
    r
}

/// Runs the memory model of `machine` (with the variant's occupancy) over `dispatches`;
/// with the permutation of the traced ray order, each ray's modelled clocks in input order.
pub fn run_memory_model(
    variant: &Variant,
    machine: &Machine,
    dispatches: &[Dispatch],
    permutation: Option<Vec<u32>>,
) -> (MemoryStats, Vec<u32>) {
    let mut machine = machine.clone();
    if let Some(n) = variant.waves_per_simd {
        machine.waves_per_simd = n;
    }
    let mut model = MemoryModel::new(&machine);
    let mut clocks = Vec::new();
    for d in dispatches {
        match &permutation {
            Some(p) if dispatches.len() == 1 => {
                let mut traced = vec![0.0; d.rays as usize];
                model.run(d, Some(&mut traced));
                clocks = vec![0u32; p.len()];
                for (k, &i) in p.iter().enumerate() {
                    clocks[i as usize] = traced.get(k).copied().unwrap_or(0.0).round() as u32;
                }
            }
            _ => model.run(d, None),
        }
    }
    (model.finish(), clocks)
}

/// What a variant's figures come from besides its counters.
pub struct Figures<'a> {
    pub rays: usize,
    pub host_seconds: f64,
    pub bvh_bytes: usize,
    /// The stream schedule's stack, node-byte and restart tallies (`None`: not measured,
    /// those figures are NaN).
    pub stats: Option<&'a StreamStats>,
}

/// A variant's result from its counters (no wrong rays, clocks or outputs yet).
pub fn result(
    variant: &Variant,
    counters: Counters,
    figures: &Figures,
    console: &ConsoleConfig,
) -> VariantResult {
    let n = figures.rays as f64;
    let seconds = td::modelled_seconds(&counters, console);
    let per = |x: u64| x as f64 / n;
    let (grays, useful_per_second) = if seconds > 0.0 {
        (n / seconds / 1e9, counters.td_aabb_useful as f64 / seconds)
    } else {
        (0.0, 0.0)
    };
    let stats = figures.stats;
    VariantResult {
        name: variant.name.clone(),
        axis: variant.axis,
        description: variant.description(),
        wrong_rays: 0,
        canonical_diffs: 0,
        rank: None,
        td_clocks_per_ray: per(counters.td_clocks),
        instructions_per_ray: per(counters.trav_iterations),
        box_queries_per_ray: per(counters.td_box_queries),
        triangle_tests_per_ray: per(counters.td_triangle_tests),
        simd_efficiency: counters.simd_efficiency(),
        max_stack_depth: counters.trav_max_stack_depth,
        mean_stack_depth: match stats {
            None => f64::NAN,
            Some(s) if s.stack_depth_samples == 0 => 0.0,
            Some(s) => s.stack_depth_sum as f64 / s.stack_depth_samples as f64,
        },
        node_bytes_per_ray: stats.map_or(f64::NAN, |s| per(s.node_bytes)),
        restarts_per_ray: stats.map_or(f64::NAN, |s| per(s.events.restarts)),
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
        host_seconds: figures.host_seconds,
        bvh_bytes: figures.bvh_bytes,
        counters,
        ray_clocks: Vec::new(),
        outputs: Vec::new(),
        memory: None,
        ray_memory_clocks: Vec::new(),
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

/// Sorts correct variants by modelled rate (with the memory model when it ran; fastest
/// first; ties by name) and gives them ranks; wrong variants follow, unranked.
pub fn rank(results: &mut [VariantResult]) {
    results.sort_by(|a, b| {
        (a.wrong_rays > 0)
            .cmp(&(b.wrong_rays > 0))
            .then(b.ranked_grays().total_cmp(&a.ranked_grays()))
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
