//! Per-TD and per-ray counters of the wave model: counted locally per worker, merged once.
//!
//! Every worker (a rayon task, a renderer thread) owns a plain [`Counters`]; the wave model
//! adds to it without atomics, and the caller merges workers with [`Counters::merge`] at the
//! end. Counter names in reports are `area.event` (`td.box_queries`, `lanes.active`,
//! `trav.iterations`); the JSON keys are exactly those names.
//!
//! The TD cost model itself (who is charged what) lives in `wave`; this module only holds
//! the numbers and turns them into reports ([`report`]).

pub mod report;

use crate::hw::peak::{ConsoleConfig, SERIES_S, SERIES_X};
use crate::memory::FetchLog;
use serde::{Deserialize, Serialize};

/// What the traversal shader did besides issuing the instruction: instance transitions and
/// their cost, candidate hits, any-hit and intersection shaders, and the TLAS's share of
/// the box queries (in a flat scene all zero). The TLAS has only box nodes that reach the
/// TD, so its TD clocks are its box queries; the BLAS's are the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShaderCounters {
    /// Instance nodes the shader read (masked and culled instances included).
    #[serde(rename = "shader.instance_nodes")]
    pub instance_nodes: u64,
    /// Instances entered: the ray transformed into object space, the BLAS traversed.
    #[serde(rename = "shader.instance_transitions")]
    pub instance_transitions: u64,
    /// Bytes of instance nodes read (128 each).
    #[serde(rename = "shader.instance_node_bytes")]
    pub instance_node_bytes: u64,
    /// ALU operations per lane for the ray transforms: 36 to enter an instance (origin 9
    /// multiplies and 9 additions, direction 9 and 6, three reciprocals), 3 to leave it
    /// (the world inverse direction again; origin and direction were kept).
    #[serde(rename = "shader.transform_alu_ops")]
    pub transform_alu_ops: u64,
    /// Hits in range that survived the facing and opacity culls (each either committed at
    /// once, opaque, or handed to the any-hit shader).
    #[serde(rename = "shader.candidate_hits")]
    pub candidate_hits: u64,
    /// Any-hit shader calls (candidates on non-opaque geometry).
    #[serde(rename = "shader.any_hit_invocations")]
    pub any_hit_invocations: u64,
    /// Intersection shader calls (procedural leaves reached).
    #[serde(rename = "shader.intersection_invocations")]
    pub intersection_invocations: u64,
    /// Box queries of TLAS nodes (one TD clock each).
    #[serde(rename = "tlas.box_queries")]
    pub tlas_box_queries: u64,
}

impl ShaderCounters {
    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &ShaderCounters) {
        self.instance_nodes += other.instance_nodes;
        self.instance_transitions += other.instance_transitions;
        self.instance_node_bytes += other.instance_node_bytes;
        self.transform_alu_ops += other.transform_alu_ops;
        self.candidate_hits += other.candidate_hits;
        self.any_hit_invocations += other.any_hit_invocations;
        self.intersection_invocations += other.intersection_invocations;
        self.tlas_box_queries += other.tlas_box_queries;
    }

    /// Whether nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == ShaderCounters::default()
    }
}

/// What one TD (texture-data block, the unit that runs `image_bvh_intersect_ray`) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TdCounters {
    /// TD clocks: one per active lane per box or triangle instruction.
    pub clocks: u64,
    /// Wave instructions issued to this TD (with at least one lane that reached the TD).
    pub instructions: u64,
    /// Lane box queries (four AABBs each).
    pub box_queries: u64,
    /// AABB tests issued: four per box query.
    pub aabb_tests: u64,
    /// AABB tests whose slot holds a real child (pointer not 0xFFFFFFFF).
    pub aabb_useful: u64,
    /// Lane triangle tests.
    pub triangle_tests: u64,
    /// Lanes that took part in this TD's instructions (each costs one clock).
    pub lanes_active: u64,
    /// Lanes the instructions could have used (wave width per instruction).
    pub lanes_available: u64,
    /// The traversal shader's work for this TD's waves.
    #[serde(flatten)]
    pub shader: ShaderCounters,
}

impl TdCounters {
    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &TdCounters) {
        self.clocks += other.clocks;
        self.instructions += other.instructions;
        self.box_queries += other.box_queries;
        self.aabb_tests += other.aabb_tests;
        self.aabb_useful += other.aabb_useful;
        self.triangle_tests += other.triangle_tests;
        self.lanes_active += other.lanes_active;
        self.lanes_available += other.lanes_available;
        self.shader.merge(&other.shader);
    }
}

/// Per-TD counters of both consoles: the same waves assigned to Series S's 20 TDs and to
/// Series X's 52 TDs (round-robin by wave index, see `wave::td`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerTd {
    /// One entry per Series S TD (20 once anything was counted).
    pub series_s: Vec<TdCounters>,
    /// One entry per Series X TD (52 once anything was counted).
    pub series_x: Vec<TdCounters>,
}

impl PerTd {
    /// The TD array of `console` (matched by CLI name); `None` for an unknown console.
    pub fn for_console(&self, console: &ConsoleConfig) -> Option<&[TdCounters]> {
        if console.cli_name == SERIES_S.cli_name {
            Some(&self.series_s)
        } else if console.cli_name == SERIES_X.cli_name {
            Some(&self.series_x)
        } else {
            None
        }
    }

    /// Makes both arrays full length (no-op when they already are).
    pub fn ensure_len(&mut self) {
        grow_to(&mut self.series_s, SERIES_S.tds() as usize);
        grow_to(&mut self.series_x, SERIES_X.tds() as usize);
    }

    fn merge(&mut self, other: &PerTd) {
        merge_vec(&mut self.series_s, &other.series_s);
        merge_vec(&mut self.series_x, &other.series_x);
    }
}

/// Pads `tds` with zero counters to at least `len` entries.
fn grow_to(tds: &mut Vec<TdCounters>, len: usize) {
    if tds.len() < len {
        tds.resize(len, TdCounters::default());
    }
}

/// Adds `src` into `dst` TD by TD, growing `dst` to `src`'s length first.
fn merge_vec(dst: &mut Vec<TdCounters>, src: &[TdCounters]) {
    grow_to(dst, src.len());
    for (d, s) in dst.iter_mut().zip(src) {
        d.merge(s);
    }
}

/// Counters of one worker (or, after merging, of a whole run).
///
/// Totals over all TDs are kept directly (`td.*`), so they do not depend on the console.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Rays traced.
    pub rays: u64,
    /// Rays that found a hit (closest hit) or an occluder (any hit).
    #[serde(rename = "rays.hit")]
    pub rays_hit: u64,
    /// Waves run.
    pub waves: u64,
    /// Traversal loop iterations: steps of a wave, each issuing one wave instruction.
    #[serde(rename = "trav.iterations")]
    pub trav_iterations: u64,
    /// Lane steps: one per lane and iteration in which the lane issued the instruction.
    #[serde(rename = "trav.lane_steps")]
    pub trav_lane_steps: u64,
    /// Box nodes visited by lanes (= lane box queries).
    #[serde(rename = "trav.box_nodes")]
    pub trav_box_nodes: u64,
    /// Triangle hits accepted as a new closest hit (or as the any-hit occluder).
    #[serde(rename = "trav.hits_accepted")]
    pub trav_hits_accepted: u64,
    /// Deepest per-lane traversal stack seen (entries).
    #[serde(rename = "trav.max_stack_depth")]
    pub trav_max_stack_depth: u64,
    /// Wave instructions issued to TDs (instructions with at least one clocked lane).
    #[serde(rename = "td.instructions")]
    pub td_instructions: u64,
    /// TD clocks over all TDs: one per active lane per box or triangle instruction.
    #[serde(rename = "td.clocks")]
    pub td_clocks: u64,
    /// Lane box queries (one clock, four AABBs each).
    #[serde(rename = "td.box_queries")]
    pub td_box_queries: u64,
    /// AABB tests issued (four per box query).
    #[serde(rename = "td.aabb_tests")]
    pub td_aabb_tests: u64,
    /// AABB tests on a slot holding a real child.
    #[serde(rename = "td.aabb_useful")]
    pub td_aabb_useful: u64,
    /// Lane triangle tests (one clock each).
    #[serde(rename = "td.triangle_tests")]
    pub td_triangle_tests: u64,
    /// Lanes that addressed a user node (types 6/7): all ones returned, no clock.
    #[serde(rename = "td.user_nodes")]
    pub td_user_nodes: u64,
    /// Lanes whose node failed the descriptor's bounds check or was not mapped: no clock.
    #[serde(rename = "td.out_of_bounds")]
    pub td_out_of_bounds: u64,
    /// Lane slots of issued wave instructions whose lane was active (sum over iterations).
    #[serde(rename = "lanes.active")]
    pub lanes_active: u64,
    /// Lane slots of issued wave instructions (wave width per iteration).
    #[serde(rename = "lanes.available")]
    pub lanes_available: u64,
    /// Lanes (rays) deactivated because a ray register was NaN.
    #[serde(rename = "lanes.nan")]
    pub lanes_nan: u64,
    /// Lanes (rays) deactivated because the origin was infinite.
    #[serde(rename = "lanes.inf_origin")]
    pub lanes_inf_origin: u64,
    /// Lane slots never used by a ray (a partial last wave).
    #[serde(rename = "lanes.empty")]
    pub lanes_empty: u64,
    /// The traversal shader's work (instances, candidates, any-hit, intersection shaders).
    #[serde(flatten)]
    pub shader: ShaderCounters,
    /// The same work split per TD, for both consoles.
    pub per_td: PerTd,
    /// Each wave instruction's node fetches, for the memory model: recorded only when
    /// `fetches.enabled` (see [`crate::memory`]).
    #[serde(skip)]
    pub fetches: FetchLog,
}

impl Counters {
    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Counters) {
        self.rays += other.rays;
        self.rays_hit += other.rays_hit;
        self.waves += other.waves;
        self.trav_iterations += other.trav_iterations;
        self.trav_lane_steps += other.trav_lane_steps;
        self.trav_box_nodes += other.trav_box_nodes;
        self.trav_hits_accepted += other.trav_hits_accepted;
        self.trav_max_stack_depth = self.trav_max_stack_depth.max(other.trav_max_stack_depth);
        self.td_instructions += other.td_instructions;
        self.td_clocks += other.td_clocks;
        self.td_box_queries += other.td_box_queries;
        self.td_aabb_tests += other.td_aabb_tests;
        self.td_aabb_useful += other.td_aabb_useful;
        self.td_triangle_tests += other.td_triangle_tests;
        self.td_user_nodes += other.td_user_nodes;
        self.td_out_of_bounds += other.td_out_of_bounds;
        self.lanes_active += other.lanes_active;
        self.lanes_available += other.lanes_available;
        self.lanes_nan += other.lanes_nan;
        self.lanes_inf_origin += other.lanes_inf_origin;
        self.lanes_empty += other.lanes_empty;
        self.shader.merge(&other.shader);
        self.per_td.merge(&other.per_td);
        if other.fetches.enabled {
            self.fetches.merge(&other.fetches);
        }
    }

    /// Empty counters that record node fetches for the memory model.
    pub fn recording_fetches() -> Counters {
        Counters {
            fetches: FetchLog::recording(),
            ..Counters::default()
        }
    }

    /// SIMD efficiency: active lane slots over available lane slots (0 when nothing ran).
    pub fn simd_efficiency(&self) -> f64 {
        ratio(self.lanes_active, self.lanes_available)
    }

    /// Lanes deactivated by NaN or infinite inputs.
    pub fn lanes_nan_inf(&self) -> u64 {
        self.lanes_nan + self.lanes_inf_origin
    }
}

/// `num / den`, or 0 when `den` is 0.
pub fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_sums_and_keeps_the_max_depth() {
        let mut a = Counters {
            rays: 3,
            td_clocks: 10,
            trav_max_stack_depth: 7,
            ..Default::default()
        };
        a.per_td.ensure_len();
        a.per_td.series_s[4].clocks = 5;
        let mut b = Counters {
            rays: 2,
            td_clocks: 1,
            trav_max_stack_depth: 4,
            ..Default::default()
        };
        b.per_td.ensure_len();
        b.per_td.series_s[4].clocks = 2;
        b.per_td.series_x[51].box_queries = 9;
        let mut empty = Counters::default();
        empty.merge(&a);
        empty.merge(&b);
        assert_eq!(empty.rays, 5);
        assert_eq!(empty.td_clocks, 11);
        assert_eq!(empty.trav_max_stack_depth, 7);
        assert_eq!(empty.per_td.series_s.len(), 20);
        assert_eq!(empty.per_td.series_s[4].clocks, 7);
        assert_eq!(empty.per_td.series_x[51].box_queries, 9);
    }

    #[test]
    fn json_uses_dotted_counter_names() {
        let c = Counters::default();
        let v = serde_json::to_value(&c).unwrap();
        for key in ["rays", "td.box_queries", "lanes.active", "trav.iterations"] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
    }
}
