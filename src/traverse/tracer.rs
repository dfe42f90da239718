//! `WaveTracer`: the wave model behind the [`Tracer`] trait.
//!
//! Rays are cut into waves of 32 or 64 consecutive rays; wave `w` of a call runs on TD
//! `w mod TDs` (see [`crate::wave::td`]). Rayon runs blocks of [`CHUNK_WAVES`] waves in
//! parallel; block boundaries and wave indices do not depend on the thread count, and each
//! rayon task counts into its own [`Counters`], merged once at the end (integer sums and
//! maxima, so the order does not matter): hits and counters are identical for any number of
//! threads.

use super::by_lane::ByLaneScratch;
use super::{
    hit_from_dwords, FullStack, LaneOutput, LaneState, LeafChains, PrimitiveIds, Query, Traversal,
    WaveRun,
};
use crate::bvh::query::barycentrics_f64;
use crate::bvh::{BvhImage, Mesh};
use crate::counters::Counters;
use crate::hw::descriptor::{BvhDescriptor, TriangleReturnMode};
use crate::hw::peak::{ConsoleConfig, SERIES_X};
use crate::hw::{NodePointer, NodeType, TriangleNode};
use crate::math::{Hit, HitRecord, Ray};
use crate::wave::intersector::RayColumns;
use crate::wave::{BvhMemory, NodeCache, Tracer, Wave, WaveIntersector, WaveWidth};
use rayon::prelude::*;

/// Waves per parallel block.
pub const CHUNK_WAVES: usize = 16;

/// Which traversal shader runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Strategy {
    /// Complete per-lane stack ([`FullStack`]).
    #[default]
    FullStack,
}

impl Strategy {
    /// Name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::FullStack => "full-stack",
        }
    }

    /// From its name.
    pub fn from_name(name: &str) -> Option<Strategy> {
        match name {
            "full-stack" => Some(Strategy::FullStack),
            _ => None,
        }
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
    /// x86-64 with AVX2: box lanes tested in pairs.
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
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            SimdPath::Avx2 => false,
        }
    }

    /// The build that runs: `Auto` becomes the fastest supported one, and a build the CPU
    /// lacks falls back to the next slower one.
    pub fn resolve(self) -> SimdPath {
        match self {
            SimdPath::Auto | SimdPath::Avx2 if SimdPath::Avx2.is_supported() => SimdPath::Avx2,
            _ => SimdPath::Portable,
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

/// How a [`WaveTracer`] runs.
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
        }
    }
}

/// 64 bytes, cache-line aligned.
#[repr(C, align(64))]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Block([u8; 64]);

/// The wave model as a [`Tracer`]: a BVH byte image, its descriptor and root, a cache of
/// decoded box nodes, and the primitive-id map.
pub struct WaveTracer {
    /// The image, copied into 64-byte aligned blocks so that every node starts a cache line.
    blocks: Vec<Block>,
    /// Image length in bytes (`blocks` may end with padding that is not mapped).
    len: usize,
    va: u64,
    descriptor: BvhDescriptor,
    root: NodePointer,
    cache: NodeCache,
    prim_ids: Ids,
    /// The mesh, for mode-0 barycentrics (computed in f64 as the scalar reference does).
    mesh: Option<Mesh>,
    /// Triangle pointers stand for leaf chains ([`LeafChains`]).
    leaf_chains: bool,
    config: WaveTracerConfig,
}

/// The primitive-id map: the image's own table (called directly, inlined into the wave
/// loop) or any map given to [`WaveTracer::from_parts`] (called through the trait object).
enum Ids {
    Image(ImageIds),
    Other(Box<dyn PrimitiveIds>),
}

/// Primitive ids of a [`BvhImage`] flattened into one table: entry `4 * block + k` is the
/// primitive of triangle `k` of the node at 64-byte block `block` (`u32::MAX` where there is
/// none, or where the id is not one of the mesh's triangles). One load per lookup. The node
/// cache holds a copy of each reachable triangle node's entries ([`CachedIds`]).
struct ImageIds {
    table: Vec<u32>,
}

impl ImageIds {
    fn new(image: &BvhImage, triangles: u32) -> ImageIds {
        let blocks = image.bytes.len() / 64;
        let mut table = vec![u32::MAX; 4 * blocks];
        for (block, entry) in table.chunks_exact_mut(4).enumerate() {
            if image
                .triangle_node_ordinal
                .get(block)
                .copied()
                .unwrap_or(u32::MAX)
                == u32::MAX
            {
                continue;
            }
            let bytes = &image.bytes[64 * block..64 * block + 64];
            let word = bytemuck::pod_read_unaligned::<TriangleNode>(bytes).word;
            for (k, e) in entry.iter_mut().enumerate() {
                let ptr = NodePointer::new(block as u64, NodeType::triangle(k));
                // The mode-0 dwords carry word@60 + k; mode 1 ignores them.
                let dwords = [0, 0, word.wrapping_add(k as u32), 1];
                let prim = image.primitive_id(ptr, &dwords);
                *e = if prim < triangles { prim } else { u32::MAX };
            }
        }
        ImageIds { table }
    }
}

impl PrimitiveIds for ImageIds {
    #[inline]
    fn primitive_id(&self, triangle_pointer: NodePointer, _dwords: &[u32; 4]) -> u32 {
        let index = triangle_pointer.address_64() as usize * 4 + triangle_pointer.triangle_index();
        self.table.get(index).copied().unwrap_or(u32::MAX)
    }
}

/// The image's primitive ids as the wave loop reads them: from the node cache's copy of the
/// triangle node (on the line the lane's prefetch of the node fetched), else from the table.
/// The copies were set from the same table ([`WaveTracer::with_ids`]).
struct CachedIds<'a> {
    intersector: &'a WaveIntersector<'a>,
    table: &'a ImageIds,
}

impl PrimitiveIds for CachedIds<'_> {
    #[inline(always)]
    fn primitive_id(&self, triangle_pointer: NodePointer, dwords: &[u32; 4]) -> u32 {
        match self.intersector.cached_primitive_id(triangle_pointer) {
            Some(id) => id,
            None => self.table.primitive_id(triangle_pointer, dwords),
        }
    }
}

impl std::fmt::Debug for WaveTracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaveTracer")
            .field("bytes", &self.len)
            .field("va", &self.va)
            .field("descriptor", &self.descriptor)
            .field("root", &self.root)
            .field("decoded_boxes", &self.cache.len())
            .field("config", &self.config)
            .finish()
    }
}

/// `bytes` copied into 64-byte aligned blocks (a `Vec<u8>` is not aligned), and their length.
fn aligned_blocks(bytes: &[u8]) -> (Vec<Block>, usize) {
    let mut blocks = vec![Block([0; 64]); bytes.len().div_ceil(64)];
    bytemuck::cast_slice_mut::<Block, u8>(&mut blocks)[..bytes.len()].copy_from_slice(bytes);
    (blocks, bytes.len())
}

impl WaveTracer {
    /// A tracer over `image`, built from `mesh`.
    ///
    /// An image built with leaf chains (`BuildOptions::leaf_chains`) is traversed with
    /// [`LeafChains`] around the strategy.
    pub fn new(image: &BvhImage, mesh: &Mesh, config: WaveTracerConfig) -> WaveTracer {
        let ids = ImageIds::new(image, mesh.len() as u32);
        let blocks = aligned_blocks(&image.bytes);
        WaveTracer::from_image_parts(blocks, image, ids, mesh, config)
    }

    /// [`WaveTracer::new`], taking the image: its bytes and side tables are freed once the
    /// tracer has its aligned copy, before the node cache is built, so that the image is
    /// never held twice beside the cache (the peak memory of tracing a large mesh).
    pub fn from_image(image: BvhImage, mesh: &Mesh, config: WaveTracerConfig) -> WaveTracer {
        let ids = ImageIds::new(&image, mesh.len() as u32);
        let blocks = aligned_blocks(&image.bytes);
        let settings = image.settings_only();
        drop(image);
        WaveTracer::from_image_parts(blocks, &settings, ids, mesh, config)
    }

    /// The tracer over `blocks` (the aligned copy of `image`'s bytes, which it need not hold).
    fn from_image_parts(
        (blocks, len): (Vec<Block>, usize),
        image: &BvhImage,
        ids: ImageIds,
        mesh: &Mesh,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        let mut tracer = WaveTracer::with_blocks(
            (blocks, len),
            0,
            image.descriptor,
            image.root,
            Ids::Image(ids),
            config,
        );
        if image.descriptor.triangle_return_mode == TriangleReturnMode::TriangleId {
            tracer.mesh = Some(mesh.clone());
        }
        tracer.leaf_chains = image.leaf_chains;
        tracer
    }

    /// From raw parts: the image `bytes` mapped at virtual address `va`, its descriptor, the
    /// root node pointer and the primitive-id map.
    pub fn from_parts(
        bytes: Vec<u8>,
        va: u64,
        descriptor: BvhDescriptor,
        root: NodePointer,
        prim_ids: Box<dyn PrimitiveIds>,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        let blocks = aligned_blocks(&bytes);
        drop(bytes);
        WaveTracer::with_blocks(blocks, va, descriptor, root, Ids::Other(prim_ids), config)
    }

    /// The tracer over the image in `blocks` (its first `len` bytes), with its node cache.
    fn with_blocks(
        (blocks, len): (Vec<Block>, usize),
        va: u64,
        descriptor: BvhDescriptor,
        root: NodePointer,
        prim_ids: Ids,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        let image = &bytemuck::cast_slice::<Block, u8>(&blocks)[..len];
        let mut cache = NodeCache::build(&BvhMemory { bytes: image, va }, &descriptor, root);
        if let Ids::Image(ids) = &prim_ids {
            cache.set_primitive_ids(|block, k| {
                ids.table
                    .get(4 * block as usize + k as usize)
                    .copied()
                    .unwrap_or(u32::MAX)
            });
        }
        WaveTracer {
            blocks,
            len,
            va,
            descriptor,
            root,
            cache,
            prim_ids,
            mesh: None,
            leaf_chains: false,
            config,
        }
    }

    /// Length in bytes of the BVH image the tracer reads.
    pub fn image_len(&self) -> usize {
        self.len
    }

    pub fn config(&self) -> &WaveTracerConfig {
        &self.config
    }

    /// Changes the configuration (wave width, console, strategy, parallelism).
    pub fn set_config(&mut self, config: WaveTracerConfig) {
        self.config = config;
    }

    pub fn descriptor(&self) -> &BvhDescriptor {
        &self.descriptor
    }

    pub fn root(&self) -> NodePointer {
        self.root
    }

    /// The wave instruction over this tracer's image.
    pub fn intersector(&self) -> WaveIntersector<'_> {
        WaveIntersector::new(
            BvhMemory {
                bytes: &bytemuck::cast_slice::<Block, u8>(&self.blocks)[..self.len],
                va: self.va,
            },
            self.descriptor,
            Some(&self.cache),
        )
    }

    /// Traces `rays` and returns each lane's raw result (accepted triangle pointer and
    /// dwords, t, clocks), adding to `counters`.
    pub fn trace_raw(
        &self,
        rays: &[Ray],
        query: Query,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        self.trace_into(rays, query, out, &|_, o, out| *out = *o, counters);
    }

    /// Traces `rays` and lets `convert(ray, lane output, slot)` write each ray's output to its
    /// slot of `out`, adding to `counters`. The lane outputs of a parallel block stay in a
    /// small buffer that is converted while it is still in cache (a buffer of every ray's
    /// output would be written and read back through memory). The output is written in place:
    /// returned, it went through the stack, stored field by field and read back at once with
    /// wider loads that the CPU could not forward from those stores.
    fn trace_into<O: Send>(
        &self,
        rays: &[Ray],
        query: Query,
        out: &mut [O],
        convert: &(impl Fn(&Ray, &LaneOutput, &mut O) + Sync),
        counters: &mut Counters,
    ) {
        assert_eq!(rays.len(), out.len(), "one output per ray");
        let Strategy::FullStack = self.config.strategy;
        let (full, chains) = (&FullStack, &LeafChains(FullStack));
        match (self.config.wave, self.leaf_chains) {
            (WaveWidth::W32, false) => {
                self.run::<32, 64, _, O>(full, rays, query, out, convert, counters)
            }
            (WaveWidth::W64, false) => {
                self.run::<64, 64, _, O>(full, rays, query, out, convert, counters)
            }
            (WaveWidth::W32, true) => {
                self.run::<32, 64, _, O>(chains, rays, query, out, convert, counters)
            }
            (WaveWidth::W64, true) => {
                self.run::<64, 64, _, O>(chains, rays, query, out, convert, counters)
            }
        }
    }

    /// Traces in waves of `W` lanes, run `H / W` at a time by the lockstep schedule
    /// ([`WaveRun::trace_waves_on`]: the same steps and counters per wave).
    fn run<const W: usize, const H: usize, T: Traversal, O: Send>(
        &self,
        traversal: &T,
        rays: &[Ray],
        query: Query,
        out: &mut [O],
        convert: &(impl Fn(&Ray, &LaneOutput, &mut O) + Sync),
        counters: &mut Counters,
    ) {
        let intersector = self.intersector();
        let run = (&intersector, traversal);
        match &self.prim_ids {
            Ids::Image(table) => {
                let ids = CachedIds {
                    intersector: &intersector,
                    table,
                };
                self.run_with::<W, H, T, _, O>(run, &ids, rays, query, out, convert, counters)
            }
            Ids::Other(ids) => {
                self.run_with::<W, H, T, _, O>(run, &**ids, rays, query, out, convert, counters)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run_with<const W: usize, const H: usize, T: Traversal, P: PrimitiveIds + ?Sized, O: Send>(
        &self,
        (intersector, traversal): (&WaveIntersector, &T),
        prim_id: &P,
        rays: &[Ray],
        query: Query,
        out: &mut [O],
        convert: &(impl Fn(&Ray, &LaneOutput, &mut O) + Sync),
        counters: &mut Counters,
    ) {
        let block = CHUNK_WAVES * W;
        let simd = self.config.simd.resolve();
        let schedule = self.config.schedule;
        let run_block = |scratch: &mut BlockScratch<H, T::Lane>,
                         local: &mut Counters,
                         (b, (rays, out)): (usize, (&[Ray], &mut [O]))| {
            let lanes = &mut scratch.outputs[..rays.len()];
            let job = WaveBlock {
                run: WaveRun {
                    intersector,
                    traversal,
                    root: self.root,
                    prim_id,
                    query,
                },
                first_wave: (b * CHUNK_WAVES) as u64,
            };
            match schedule {
                Schedule::Lockstep => {
                    let wave = (&mut *scratch.wave, &mut *scratch.columns);
                    match simd {
                        // SAFETY: `resolve` returns Avx2 only when the CPU has AVX2.
                        #[cfg(target_arch = "x86_64")]
                        SimdPath::Avx2 => unsafe { job.run_avx2::<W, H>(rays, wave, lanes, local) },
                        _ => job.run::<W, H, false>(rays, wave, lanes, local),
                    }
                }
                Schedule::ByLane => {
                    let by_lane = &mut scratch.by_lane;
                    match simd {
                        // SAFETY: `resolve` returns Avx2 only when the CPU has AVX2.
                        #[cfg(target_arch = "x86_64")]
                        SimdPath::Avx2 => unsafe {
                            job.run_by_lane_avx2::<W>(rays, by_lane, lanes, local)
                        },
                        _ => job.run_by_lane::<W>(rays, by_lane, lanes, local),
                    }
                }
            }
            for ((o, lane), ray) in out.iter_mut().zip(lanes.iter()).zip(rays) {
                convert(ray, lane, o);
            }
        };
        if self.config.parallel && rays.len() > block {
            // One `Counters` per rayon task, merged once at the end: every counter is an
            // integer sum or maximum, so the totals do not depend on how rayon splits the
            // blocks (the same for any thread count).
            let merged = rays
                .par_chunks(block)
                .zip(out.par_chunks_mut(block))
                .enumerate()
                .fold(
                    || (BlockScratch::new(block), Counters::default()),
                    |(mut scratch, mut local), item| {
                        run_block(&mut scratch, &mut local, item);
                        (scratch, local)
                    },
                )
                .map(|(_, local)| local)
                .reduce(Counters::default, |mut a, b| {
                    a.merge(&b);
                    a
                });
            counters.merge(&merged);
        } else {
            let mut scratch = BlockScratch::new(block);
            for item in rays.chunks(block).zip(out.chunks_mut(block)).enumerate() {
                run_block(&mut scratch, counters, item);
            }
        }
    }

    /// Inlined into the callers' conversions, which write its `Hit` in place (see
    /// [`Self::trace_into`]); called, it returned the `Hit` through the stack again.
    #[inline(always)]
    fn to_hit(&self, ray: &Ray, o: &LaneOutput) -> Hit {
        match o.best {
            Some((_, dwords)) => {
                let mut hit = hit_from_dwords(
                    o.t,
                    o.prim_id,
                    dwords,
                    self.descriptor.triangle_return_mode == TriangleReturnMode::Barycentrics,
                );
                if let Some(mesh) = &self.mesh {
                    hit.bary = barycentrics_f64(ray, mesh.triangle(o.prim_id));
                }
                hit
            }
            None => Hit::MISS,
        }
    }
}

/// What a worker reuses from one parallel block to the next: the `H` host lanes of the
/// lockstep schedule (their stacks keep their capacity), the by-lane schedule's buffers, and
/// the block's lane outputs.
struct BlockScratch<const H: usize, L> {
    wave: Box<Wave<H, LaneState<L>>>,
    /// The lockstep loop's columns of its lanes' registers (see `WaveRun::trace_waves_on`).
    columns: Box<RayColumns>,
    by_lane: ByLaneScratch<L>,
    outputs: Box<[LaneOutput]>,
}

impl<const H: usize, L: Default> BlockScratch<H, L> {
    /// For blocks of at most `rays` rays.
    fn new(rays: usize) -> Self {
        BlockScratch {
            wave: Box::new(Wave::new(0)),
            columns: Box::default(),
            by_lane: ByLaneScratch::default(),
            outputs: vec![LaneOutput::default(); rays].into_boxed_slice(),
        }
    }
}

/// Consecutive waves of one parallel block, and what they share.
struct WaveBlock<'a, T, P: ?Sized> {
    run: WaveRun<'a, T, P>,
    first_wave: u64,
}

impl<T: Traversal, P: PrimitiveIds + ?Sized> WaveBlock<'_, T, P> {
    /// Traces `rays` in waves of `W` (wave indices from `first_wave`), `H / W` waves side
    /// by side in the `H` host lanes.
    #[inline(always)]
    fn run<const W: usize, const H: usize, const AVX2: bool>(
        &self,
        rays: &[Ray],
        (wave, columns): (&mut Wave<H, LaneState<T::Lane>>, &mut RayColumns),
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        for (k, (rays, out)) in rays.chunks(H).zip(out.chunks_mut(H)).enumerate() {
            let index = self.first_wave + (k * (H / W)) as u64;
            self.run
                .trace_waves_on::<W, H, AVX2>(index, rays, (wave, columns), out, counters);
        }
    }

    /// [`Self::run`] compiled for AVX2: the same f32 operations, one rounding each (Rust
    /// never contracts to FMA), so results are bit-identical; VEX encoding saves the
    /// register copies of two-operand SSE.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn run_avx2<const W: usize, const H: usize>(
        &self,
        rays: &[Ray],
        wave: (&mut Wave<H, LaneState<T::Lane>>, &mut RayColumns),
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        self.run::<W, H, true>(rays, wave, out, counters);
    }
}

impl<T: Traversal, P: PrimitiveIds + ?Sized> WaveBlock<'_, T, P> {
    /// Traces `rays` in waves of `W` (wave indices from `first_wave`), lane by lane.
    #[inline(always)]
    fn run_by_lane<const W: usize>(
        &self,
        rays: &[Ray],
        scratch: &mut ByLaneScratch<T::Lane>,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        for (w, (rays, out)) in rays.chunks(W).zip(out.chunks_mut(W)).enumerate() {
            let index = self.first_wave + w as u64;
            self.run
                .trace_wave_by_lane::<W>(index, rays, scratch, out, counters);
        }
    }

    /// [`Self::run_by_lane`] compiled for AVX2 (the same f32 operations: bit-identical).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn run_by_lane_avx2<const W: usize>(
        &self,
        rays: &[Ray],
        scratch: &mut ByLaneScratch<T::Lane>,
        out: &mut [LaneOutput],
        counters: &mut Counters,
    ) {
        self.run_by_lane::<W>(rays, scratch, out, counters);
    }
}

impl Tracer for WaveTracer {
    fn closest_hits(
        &self,
        rays: &[Ray],
        hits: &mut [Hit],
        ray_clocks: Option<&mut [u32]>,
        counters: &mut Counters,
    ) {
        assert_eq!(rays.len(), hits.len(), "one hit per ray");
        match ray_clocks {
            None => self.trace_into(
                rays,
                Query::ClosestHit,
                hits,
                &|ray, o, hit| *hit = self.to_hit(ray, o),
                counters,
            ),
            Some(clocks) => {
                assert_eq!(clocks.len(), rays.len(), "one clock count per ray");
                let mut out = vec![(Hit::MISS, 0u32); rays.len()];
                self.trace_into(
                    rays,
                    Query::ClosestHit,
                    &mut out,
                    &|ray, o, out| *out = (self.to_hit(ray, o), o.clocks),
                    counters,
                );
                for ((h, c), (hit, clock)) in hits.iter_mut().zip(clocks.iter_mut()).zip(out) {
                    (*h, *c) = (hit, clock);
                }
            }
        }
    }

    /// Without the barycentrics and facing of [`Self::closest_hits`]: with a mesh, each hit's
    /// barycentrics are recomputed in f64 from its triangle (a load of the triangle and two
    /// f64 divisions a hit), which a hit file never keeps; and each record is 8 bytes
    /// against a [`Hit`]'s 20, written while the block's outputs are still in cache.
    fn closest_hit_records(
        &self,
        rays: &[Ray],
        records: &mut [HitRecord],
        counters: &mut Counters,
    ) {
        self.trace_into(
            rays,
            Query::ClosestHit,
            records,
            &|_, o, record| {
                *record = match o.best {
                    Some(_) => HitRecord {
                        t: o.t,
                        prim_id: o.prim_id,
                    },
                    None => HitRecord::MISS,
                }
            },
            counters,
        );
    }

    fn any_hits(&self, rays: &[Ray], occluded: &mut [bool], counters: &mut Counters) {
        assert_eq!(rays.len(), occluded.len(), "one flag per ray");
        self.trace_into(
            rays,
            Query::AnyHit,
            occluded,
            &|_, o, occluded| *occluded = o.best.is_some(),
            counters,
        );
    }
}
