//! How a [`WaveTracer`](super::WaveTracer) runs: the traversal strategy, the build of the
//! wave loop, the schedule of a wave's lanes, the wave width and the console.

use super::dxr::RayFlags;
use super::short_stack::{ChildOrder, CountedTraversal, TrailStack, WalkBack};
use super::{FullStack, LeafChains};
use crate::bvh::BvhImage;
use crate::hw::peak::{ConsoleConfig, SERIES_X};
use crate::wave::isa::Avx2;
use crate::wave::WaveWidth;

/// Which traversal shader runs. Names as on the command line and in `profile`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Strategy {
    /// Complete per-lane stack (`full-stack`, [`FullStack`]).
    #[default]
    FullStack,
    /// Short stack of `n` entries, restart from the root along a trail (`restart-N`,
    /// [`TrailStack`]).
    RestartTrail(usize),
    /// Short stack of `n` entries, walk back through parent pointers on underflow
    /// (`walkback-N`, [`WalkBack`]); needs the image's parent
    /// tables and sorted box results.
    WalkBack(usize),
    /// No stack: restart trail only (`stackless-trail`).
    StacklessTrail,
}

impl Strategy {
    /// The largest short stack a name may ask for.
    pub const MAX_SHORT_STACK: usize = 64;

    /// Name used on the command line and in reports.
    pub fn name(self) -> String {
        match self {
            Strategy::FullStack => "full-stack".into(),
            Strategy::RestartTrail(n) => format!("restart-{n}"),
            Strategy::WalkBack(n) => format!("walkback-{n}"),
            Strategy::StacklessTrail => "stackless-trail".into(),
        }
    }

    /// From its name: `full-stack`, `restart-N`, `walkback-N` (N in
    /// 1..=[`Self::MAX_SHORT_STACK`]) or `stackless-trail`.
    pub fn from_name(name: &str) -> Option<Strategy> {
        let entries = |rest: &str| {
            rest.parse::<usize>()
                .ok()
                .filter(|n| (1..=Self::MAX_SHORT_STACK).contains(n))
        };
        match name {
            "full-stack" => Some(Strategy::FullStack),
            "stackless-trail" => Some(Strategy::StacklessTrail),
            _ => {
                if let Some(n) = name.strip_prefix("restart-") {
                    entries(n).map(Strategy::RestartTrail)
                } else {
                    entries(name.strip_prefix("walkback-")?).map(Strategy::WalkBack)
                }
            }
        }
    }

    /// Whether the strategy reads the image's parent tables (walk-back).
    pub fn needs_parents(self) -> bool {
        matches!(self, Strategy::WalkBack(_))
    }

    /// Runs `visitor` with this strategy's traversal for box results in `order`, with the
    /// leaf-chain walk around it when `leaf_chains` (an image built with leaf chains).
    /// `parents` holds the image's side tables, which walk-back reads (it panics without
    /// them, and needs sorted results). A full stack over leaf-first or unsorted results
    /// runs as a trail stack of unbounded capacity: the ranks of its entries give the
    /// order.
    pub fn visit<V: StrategyVisitor>(
        self,
        order: ChildOrder,
        leaf_chains: bool,
        parents: Option<&BvhImage>,
        visitor: V,
    ) -> V::Output {
        let unbounded = TrailStack {
            capacity: usize::MAX,
            order,
        };
        match (self, order.leaf_first || !order.sorted) {
            (Strategy::FullStack, false) => chained(FullStack, leaf_chains, visitor),
            (Strategy::FullStack, true) => chained(unbounded, leaf_chains, visitor),
            (Strategy::RestartTrail(capacity), _) => {
                chained(TrailStack { capacity, order }, leaf_chains, visitor)
            }
            (Strategy::StacklessTrail, _) => {
                chained(TrailStack { capacity: 0, order }, leaf_chains, visitor)
            }
            (Strategy::WalkBack(capacity), _) => {
                let parents = parents.expect("walk-back reads the image's parent tables");
                let walk_back = WalkBack::new(capacity, order, parents);
                chained(walk_back, leaf_chains, visitor)
            }
        }
    }
}

/// Work run with the traversal a [`Strategy`] names ([`Strategy::visit`]).
pub trait StrategyVisitor {
    type Output;

    fn visit<T: CountedTraversal>(self, traversal: T) -> Self::Output;
}

/// `visitor` with `traversal`, wrapped in the leaf-chain walk when `leaf_chains`.
fn chained<T: CountedTraversal, V: StrategyVisitor>(
    traversal: T,
    leaf_chains: bool,
    visitor: V,
) -> V::Output {
    if leaf_chains {
        visitor.visit(LeafChains(traversal))
    } else {
        visitor.visit(traversal)
    }
}

/// Which build of the wave loop runs. Every build gives the same hits and counters; they
/// differ in speed only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SimdPath {
    /// The fastest build this CPU supports.
    #[default]
    Auto,
    /// `wide` only (SSE2 on x86-64, NEON on aarch64).
    Portable,
    /// x86-64 with AVX2: box lanes tested eight at once and in pairs, triangles eight at
    /// once.
    Avx2,
}

impl SimdPath {
    /// Name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Auto => "auto",
            SimdPath::Portable => "portable",
            SimdPath::Avx2 => "avx2",
        }
    }

    /// Whether this CPU can run the build.
    pub fn is_supported(self) -> bool {
        match self {
            SimdPath::Auto | SimdPath::Portable => true,
            SimdPath::Avx2 => Avx2::detect().is_some(),
        }
    }

    /// The build that runs: `Auto` becomes the fastest supported one, and a build the CPU
    /// lacks falls back to the next slower one.
    pub fn resolve(self) -> SimdPath {
        match self.avx2() {
            Some(_) => SimdPath::Avx2,
            None => SimdPath::Portable,
        }
    }

    /// The AVX2 token when this choice runs the AVX2 build ([`Self::resolve`]).
    pub fn avx2(self) -> Option<Avx2> {
        match self {
            SimdPath::Auto | SimdPath::Avx2 => Avx2::detect(),
            SimdPath::Portable => None,
        }
    }
}

/// In which order the host runs the lanes of a wave. Every schedule gives the same hits and
/// counters (the wave's steps are the hardware's either way); they differ in speed only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Schedule {
    /// Step by step, as the hardware runs a wave: each step issues the instruction for every
    /// active lane ([`super::WaveRun::trace_wave`]). wave32 waves run two at a time, their
    /// steps side by side in 64 host lanes (each wave's steps and counters its own). The
    /// default: the faster one here.
    #[default]
    Lockstep,
    /// Lane by lane: each lane runs its traversal to the end, and the wave's counters are
    /// rebuilt from each lane's steps (see `traverse::by_lane`). An independent second
    /// computation of the wave's counters; about 1.4x slower than lockstep on this machine
    /// (one lane's steps form one dependency chain, where lockstep overlaps 32 or 64).
    ByLane,
}

impl Schedule {
    /// Name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Lockstep => "lockstep",
            Schedule::ByLane => "by-lane",
        }
    }
}

/// How a [`WaveTracer`](super::WaveTracer) runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaveTracerConfig {
    /// wave32 or wave64.
    pub wave: WaveWidth,
    /// The console whose TD count the report leads with (both are always counted).
    pub console: ConsoleConfig,
    /// The traversal shader.
    pub strategy: Strategy,
    /// Run blocks of waves on the rayon pool (results are the same either way).
    pub parallel: bool,
    /// The build of the wave loop (results are the same for every build).
    pub simd: SimdPath,
    /// The host's order of a wave's lanes (results are the same for every schedule).
    pub schedule: Schedule,
    /// DXR ray flags of closest-hit queries (`trace`, `bench`, camera and bounce rays).
    pub ray_flags: RayFlags,
    /// DXR ray flags of any-hit queries (shadow rays), besides the accept-first-hit that
    /// makes them any-hit queries.
    pub shadow_ray_flags: RayFlags,
    /// The instance inclusion mask (ANDed with each instance's mask).
    pub instance_mask: u8,
    /// The global index of the first wave of every call: a wave's TD is its index modulo
    /// the TD count, so a shard of a ray file that starts at its first wave's index counts
    /// into the same TDs as the whole file.
    pub first_wave: u64,
}

impl Default for WaveTracerConfig {
    fn default() -> Self {
        WaveTracerConfig {
            wave: WaveWidth::W32,
            console: SERIES_X,
            strategy: Strategy::FullStack,
            parallel: true,
            simd: SimdPath::Auto,
            schedule: Schedule::default(),
            ray_flags: RayFlags::NONE,
            shadow_ray_flags: RayFlags::NONE,
            instance_mask: 0xFF,
            first_wave: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_names_round_trip_and_reject_the_rest() {
        for s in [
            Strategy::FullStack,
            Strategy::RestartTrail(1),
            Strategy::RestartTrail(64),
            Strategy::WalkBack(5),
            Strategy::StacklessTrail,
        ] {
            assert_eq!(Strategy::from_name(&s.name()), Some(s));
        }
        for bad in [
            "",
            "restart-0",
            "restart-65",
            "walkback-",
            "walkback-x",
            "full",
        ] {
            assert_eq!(Strategy::from_name(bad), None, "{bad}");
        }
    }
}
