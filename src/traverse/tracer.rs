//! `WaveTracer`: the wave model behind the [`Tracer`] trait.
//!
//! Rays are cut into waves of 32 or 64 consecutive rays; wave `w` of a call runs on TD
//! `w mod TDs` (see [`crate::wave::td`]). Rayon runs blocks of [`CHUNK_WAVES`] waves in
//! parallel; block boundaries and wave indices do not depend on the thread count, and each
//! rayon task counts into its own [`Counters`], merged once at the end (integer sums and
//! maxima, so the order does not matter): hits and counters are identical for any number of
//! threads.

use super::by_lane::ByLaneScratch;
use super::config::{Schedule, StrategyVisitor, WaveTracerConfig};
use super::dxr::{AcceptAll, AnyHit, RayFlags};
use super::lane::{hit_from_dwords, LaneOutput, LaneState};
use super::lockstep::{LockstepBlock, LockstepLanes};
use super::short_stack::{ChildOrder, CountedTraversal};
use super::two_level::{SceneShader, TwoLevel};
use super::{PrimitiveIds, Query, Traversal, WaveRun};
use crate::bvh::query::barycentrics_f64;
use crate::bvh::two_level::{affine_f64, BlasGeometry, Sphere, TwoLevelBvh, TwoLevelInput};
use crate::bvh::{BvhImage, Mesh};
use crate::counters::Counters;
use crate::hw::descriptor::{BvhDescriptor, TriangleReturnMode};
use crate::hw::{NodePointer, NodeType, TriangleNode};
use crate::math::{Hit, HitRecord, Ray};
use crate::wave::intersect::RayColumns;
use crate::wave::isa::{Isa, IsaKernel, Portable};
use crate::wave::{BvhMemory, NodeCache, Tracer, Wave, WaveIntersector, WaveWidth};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Waves per parallel block.
pub const CHUNK_WAVES: usize = 16;

/// 64 bytes, cache-line aligned.
#[repr(C, align(64))]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Block([u8; 64]);

/// A BVH image copied into 64-byte aligned blocks, so that every node starts a cache line (a
/// `Vec<u8>` is not aligned).
struct AlignedImage {
    blocks: Vec<Block>,
    /// Image length in bytes (`blocks` may end with padding that is not mapped).
    len: usize,
}

impl AlignedImage {
    fn new(bytes: &[u8]) -> AlignedImage {
        let mut blocks = vec![Block([0; 64]); bytes.len().div_ceil(64)];
        bytemuck::cast_slice_mut::<Block, u8>(&mut blocks)[..bytes.len()].copy_from_slice(bytes);
        AlignedImage {
            blocks,
            len: bytes.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice::<Block, u8>(&self.blocks)[..self.len]
    }
}

/// The wave model as a [`Tracer`]: a BVH byte image, its descriptor and root, the node cache,
/// and the primitive-id map.
pub struct WaveTracer {
    image: AlignedImage,
    va: u64,
    descriptor: BvhDescriptor,
    root: NodePointer,
    cache: NodeCache,
    prim_ids: Ids,
    /// The mesh, for mode-0 barycentrics (computed in f64 as the scalar reference does).
    mesh: Option<Mesh>,
    /// Triangle pointers stand for leaf chains ([`LeafChains`](super::chains::LeafChains)).
    leaf_chains: bool,
    /// The image's side tables without its bytes, kept for a strategy that reads parent
    /// pointers ([`Strategy::needs_parents`](super::Strategy::needs_parents)).
    tables: Option<BvhImage>,
    /// A two-level image's scene: what the shader reads beside the image.
    scene: Option<SceneTables>,
    /// The any-hit shader for non-opaque geometry (default: accept every candidate).
    any_hit: Option<Arc<dyn AnyHit + Send + Sync>>,
    /// Rays traced so far, over every call, for a caller that shows progress
    /// ([`WaveTracer::set_progress`]).
    progress: Option<Arc<AtomicU64>>,
    config: WaveTracerConfig,
}

/// What a two-level image's traversal shader reads beside the image ([`SceneShader`]).
struct SceneTables {
    tlas_blocks: u64,
    instance_blas: Vec<u32>,
    blas_opaque: Vec<bool>,
    spheres: Vec<Vec<Sphere>>,
    /// Per BLAS, its mesh when return mode 0 needs it for barycentrics.
    meshes: Vec<Option<Mesh>>,
    /// Per instance, its object-to-world matrix when return mode 0 needs it (the
    /// barycentrics of the triangle moved into world space, where the ray is).
    object_to_world: Vec<[[f32; 4]; 3]>,
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
/// The copies were set from the same table when the tracer was made.
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
            .field("bytes", &self.image.len)
            .field("va", &self.va)
            .field("descriptor", &self.descriptor)
            .field("root", &self.root)
            .field("decoded_boxes", &self.cache.len())
            .field("config", &self.config)
            .finish()
    }
}

impl WaveTracer {
    /// A tracer over `image`, built from `mesh`.
    ///
    /// An image built with leaf chains (`BuildOptions::leaf_chains`) is traversed with
    /// [`LeafChains`](super::chains::LeafChains) around the strategy.
    pub fn new(image: &BvhImage, mesh: &Mesh, config: WaveTracerConfig) -> WaveTracer {
        let ids = ImageIds::new(image, mesh.len() as u32);
        let aligned = AlignedImage::new(&image.bytes);
        let tables = config.strategy.needs_parents().then(|| side_tables(image));
        WaveTracer::from_image_parts(aligned, image, tables, ids, mesh, config)
    }

    /// [`WaveTracer::new`], taking the image: its bytes (and its side tables, unless the
    /// strategy reads parent pointers) are freed once the tracer has its aligned copy, before
    /// the node cache is built, so that the image is never held twice beside the cache (the
    /// peak memory of tracing a large mesh).
    pub fn from_image(mut image: BvhImage, mesh: &Mesh, config: WaveTracerConfig) -> WaveTracer {
        let ids = ImageIds::new(&image, mesh.len() as u32);
        let aligned = AlignedImage::new(&image.bytes);
        image.bytes = Vec::new();
        let settings = image.settings_only();
        let tables = config.strategy.needs_parents().then_some(image);
        WaveTracer::from_image_parts(aligned, &settings, tables, ids, mesh, config)
    }

    /// The tracer over `aligned` (the aligned copy of `image`'s bytes, which it need not
    /// hold).
    fn from_image_parts(
        aligned: AlignedImage,
        image: &BvhImage,
        tables: Option<BvhImage>,
        ids: ImageIds,
        mesh: &Mesh,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        let parts = ImageParts {
            va: 0,
            descriptor: image.descriptor,
            root: image.root,
        };
        let mut tracer = WaveTracer::with_image(aligned, parts, Ids::Image(ids), config);
        if image.descriptor.triangle_return_mode == TriangleReturnMode::TriangleId {
            tracer.mesh = Some(mesh.clone());
        }
        tracer.leaf_chains = image.leaf_chains;
        tracer.tables = tables;
        tracer
    }

    /// From raw parts: the image `bytes` mapped at virtual address `va`, its descriptor, the
    /// root node pointer and the primitive-id map. Panics if the strategy reads parent
    /// pointers (there are no side tables here).
    pub fn from_parts(
        bytes: Vec<u8>,
        va: u64,
        descriptor: BvhDescriptor,
        root: NodePointer,
        prim_ids: Box<dyn PrimitiveIds>,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        assert!(
            !config.strategy.needs_parents(),
            "a tracer from raw parts has no parent tables for {}",
            config.strategy.name()
        );
        let aligned = AlignedImage::new(&bytes);
        drop(bytes);
        let parts = ImageParts {
            va,
            descriptor,
            root,
        };
        WaveTracer::with_image(aligned, parts, Ids::Other(prim_ids), config)
    }

    /// The tracer over `image`, with its node cache.
    fn with_image(
        image: AlignedImage,
        parts: ImageParts,
        prim_ids: Ids,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        let root = parts.root;
        WaveTracer::with_image_roots(image, parts, &[root], prim_ids, config)
    }

    /// The tracer over `image`, with its node cache built from `roots`.
    fn with_image_roots(
        image: AlignedImage,
        parts: ImageParts,
        roots: &[NodePointer],
        prim_ids: Ids,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        let ImageParts {
            va,
            descriptor,
            root,
        } = parts;
        let memory = BvhMemory {
            bytes: image.bytes(),
            va,
        };
        let mut cache = NodeCache::build_from(&memory, &descriptor, roots);
        if let Ids::Image(ids) = &prim_ids {
            cache.set_primitive_ids(|block, k| {
                ids.table
                    .get(4 * block as usize + k as usize)
                    .copied()
                    .unwrap_or(u32::MAX)
            });
        }
        WaveTracer {
            image,
            va,
            descriptor,
            root,
            cache,
            prim_ids,
            mesh: None,
            leaf_chains: false,
            tables: None,
            scene: None,
            any_hit: None,
            progress: None,
            config,
        }
    }

    /// A tracer over a two-level image ([`crate::bvh::two_level`]), taking it: the TLAS
    /// over instances of triangle and procedural BLASes, traced by the two-level shader
    /// ([`TwoLevel`]) around the configured strategy. `input` gives the BLAS meshes (for
    /// return mode 0's barycentrics).
    pub fn two_level(
        mut bvh: TwoLevelBvh,
        input: &TwoLevelInput,
        config: WaveTracerConfig,
    ) -> WaveTracer {
        let image = &mut bvh.image;
        let ids = ImageIds::new(image, u32::MAX);
        let aligned = AlignedImage::new(&image.bytes);
        image.bytes = Vec::new();
        let tables = config.strategy.needs_parents().then(|| side_tables(image));
        let parts = ImageParts {
            va: 0,
            descriptor: image.descriptor,
            root: image.root,
        };
        let mut roots = vec![image.root];
        roots.extend(bvh.blases.iter().map(|b| b.root));
        let mut tracer =
            WaveTracer::with_image_roots(aligned, parts, &roots, Ids::Image(ids), config);
        let mode_0 = image.descriptor.triangle_return_mode == TriangleReturnMode::TriangleId;
        tracer.leaf_chains = image.leaf_chains;
        tracer.tables = tables;
        tracer.scene = Some(SceneTables {
            tlas_blocks: bvh.tlas.blocks,
            instance_blas: bvh.instance_blas,
            blas_opaque: bvh.blases.iter().map(|b| b.opaque).collect(),
            spheres: bvh.spheres,
            meshes: input
                .blases
                .iter()
                .map(|b| match (&b.geometry, mode_0) {
                    (BlasGeometry::Triangles(mesh), true) => Some(mesh.clone()),
                    _ => None,
                })
                .collect(),
            object_to_world: if mode_0 {
                input.instances.iter().map(|i| i.object_to_world).collect()
            } else {
                Vec::new()
            },
        });
        tracer
    }

    /// Sets the any-hit shader run on candidate hits of non-opaque geometry (DXR's; the
    /// default accepts every candidate).
    pub fn set_any_hit(&mut self, any_hit: Arc<dyn AnyHit + Send + Sync>) {
        self.any_hit = Some(any_hit);
    }

    /// Counts the rays traced from now on into `rays` (added once per block of waves, so a
    /// caller on another thread can show progress; the cost is one atomic add per block).
    pub fn set_progress(&mut self, rays: Arc<AtomicU64>) {
        self.progress = Some(rays);
    }

    /// Whether the tracer traces a two-level image.
    pub fn is_two_level(&self) -> bool {
        self.scene.is_some()
    }

    /// Whether a query with ray flags `flags` runs the DXR shader rather than the plain
    /// strategy: a two-level image, or ray flags.
    fn uses_shader(&self, flags: RayFlags) -> bool {
        self.scene.is_some() || flags != RayFlags::NONE
    }

    /// The ray flags of a query.
    fn flags(&self, query: Query) -> RayFlags {
        match query {
            Query::ClosestHit => self.config.ray_flags,
            Query::AnyHit => self.config.shadow_ray_flags,
        }
    }

    /// The shader of a query with ray flags `flags` over this tracer's image.
    fn scene_shader(&self, query: Query, flags: RayFlags) -> SceneShader<'_> {
        let empty: (&[u32], &[bool], &[Vec<Sphere>], u64) = (&[], &[], &[], 0);
        let (instance_blas, blas_opaque, spheres, tlas_blocks) = match &self.scene {
            Some(s) => (
                &s.instance_blas[..],
                &s.blas_opaque[..],
                &s.spheres[..],
                s.tlas_blocks,
            ),
            None => empty,
        };
        SceneShader {
            memory: BvhMemory {
                bytes: self.image.bytes(),
                va: self.va,
            },
            descriptor: self.descriptor,
            flags,
            mask: self.config.instance_mask,
            end_on_first_hit: query == Query::AnyHit
                || flags.contains(RayFlags::ACCEPT_FIRST_HIT_AND_END_SEARCH),
            tlas_blocks,
            instance_blas,
            blas_opaque,
            spheres,
            flat_opaque: true,
            barycentrics: self.descriptor.triangle_return_mode == TriangleReturnMode::Barycentrics,
            any_hit: match &self.any_hit {
                Some(a) => &**a,
                None => &AcceptAll,
            },
        }
    }

    /// Length in bytes of the BVH image the tracer reads.
    pub fn image_len(&self) -> usize {
        self.image.len
    }

    /// The BVH image the tracer reads (a two-level image: TLAS and BLASes).
    pub fn image_bytes(&self) -> &[u8] {
        self.image.bytes()
    }

    pub fn config(&self) -> &WaveTracerConfig {
        &self.config
    }

    /// Changes the configuration (wave width, console, strategy, parallelism). Panics if the
    /// new strategy reads parent pointers and the tracer was made without them (make it with
    /// that strategy).
    pub fn set_config(&mut self, config: WaveTracerConfig) {
        assert!(
            !config.strategy.needs_parents() || self.tables.is_some(),
            "{} needs the image's parent tables: make the tracer with it",
            config.strategy.name()
        );
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
        let memory = BvhMemory {
            bytes: self.image.bytes(),
            va: self.va,
        };
        WaveIntersector::new(memory, self.descriptor, Some(&self.cache))
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
        // A closest-hit query whose flags accept the first hit ends as an any-hit one; it
        // keeps its own flags (not the shadow rays').
        let flags = self.flags(query);
        let query = if flags.contains(RayFlags::ACCEPT_FIRST_HIT_AND_END_SEARCH) {
            Query::AnyHit
        } else {
            query
        };
        let job = TraceJob {
            rays,
            query,
            flags,
            out,
            convert,
            counters,
        };
        let order = ChildOrder {
            sorted: self.descriptor.box_sort_enable,
            leaf_first: false,
        };
        let tables = self.tables.as_ref();
        let visit = TraceWith { tracer: self, job };
        self.config
            .strategy
            .visit(order, self.leaf_chains, tables, visit);
    }

    /// Traces in waves of `W` lanes, run `H / W` at a time by the lockstep schedule (the
    /// same steps and counters per wave).
    fn run<const W: usize, const H: usize, T: Traversal, O: Send>(
        &self,
        traversal: &T,
        job: TraceJob<'_, O, impl Fn(&Ray, &LaneOutput, &mut O) + Sync>,
    ) {
        let intersector = self.intersector();
        let (root, query) = (self.root, job.query);
        match &self.prim_ids {
            Ids::Image(table) => {
                let ids = CachedIds {
                    intersector: &intersector,
                    table,
                };
                let run = WaveRun {
                    intersector: &intersector,
                    traversal,
                    root,
                    prim_id: &ids,
                    query,
                };
                self.run_blocks::<W, H, T, _, O>(&run, job)
            }
            Ids::Other(ids) => {
                let run = WaveRun {
                    intersector: &intersector,
                    traversal,
                    root,
                    prim_id: &**ids,
                    query,
                };
                self.run_blocks::<W, H, T, _, O>(&run, job)
            }
        }
    }

    /// Runs the blocks of [`CHUNK_WAVES`] waves, in parallel when configured, each with the
    /// configured schedule and build of the wave loop.
    fn run_blocks<const W: usize, const H: usize, T: Traversal, P, O: Send>(
        &self,
        run: &WaveRun<'_, T, P>,
        job: TraceJob<'_, O, impl Fn(&Ray, &LaneOutput, &mut O) + Sync>,
    ) where
        P: PrimitiveIds + ?Sized,
    {
        let block = CHUNK_WAVES * W;
        let avx2 = self.config.simd.avx2();
        let TraceJob {
            rays,
            out,
            convert,
            counters,
            ..
        } = job;
        let recording = counters.fetches.enabled;
        // The memory model records the lockstep schedule's instructions (every schedule
        // issues the same ones).
        let schedule = if recording {
            Schedule::Lockstep
        } else {
            self.config.schedule
        };
        let run_block = |scratch: &mut BlockScratch<H, T::Lane>,
                         local: &mut Counters,
                         (b, (rays, out)): (usize, (&[Ray], &mut [O]))| {
            let outputs = &mut scratch.outputs[..rays.len()];
            let first_wave = self.config.first_wave + (b * CHUNK_WAVES) as u64;
            match schedule {
                Schedule::Lockstep => {
                    let kernel = LockstepBlock::<T, P, W, H> {
                        run,
                        first_wave,
                        rays,
                        lanes: LockstepLanes {
                            wave: &mut scratch.wave,
                            columns: &mut scratch.columns,
                        },
                        out: outputs,
                        counters: local,
                    };
                    match avx2 {
                        Some(isa) => isa.dispatch(kernel),
                        None => Portable.dispatch(kernel),
                    }
                }
                Schedule::ByLane => {
                    let kernel = ByLaneBlock::<T, P, W> {
                        run,
                        first_wave,
                        rays,
                        scratch: &mut scratch.by_lane,
                        out: outputs,
                        counters: local,
                    };
                    match avx2 {
                        Some(isa) => isa.dispatch(kernel),
                        None => Portable.dispatch(kernel),
                    }
                }
            }
            for ((o, lane), ray) in out.iter_mut().zip(outputs.iter()).zip(rays) {
                convert(ray, lane, o);
            }
            if let Some(progress) = &self.progress {
                progress.fetch_add(rays.len() as u64, Ordering::Relaxed);
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
                    || {
                        let local = if recording {
                            Counters::recording_fetches()
                        } else {
                            Counters::default()
                        };
                        (BlockScratch::new(block), local)
                    },
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
            if recording {
                counters.fetches.reserve_for_rays(rays.len());
            }
            let mut scratch = BlockScratch::new(block);
            for item in rays.chunks(block).zip(out.chunks_mut(block)).enumerate() {
                run_block(&mut scratch, counters, item);
            }
        }
        if recording {
            counters
                .fetches
                .seal(W as u32, rays.len() as u64, rays.len().div_ceil(W) as u64);
        }
    }

    /// Inlined into the callers' conversions, which write its `Hit` in place (see
    /// [`Self::trace_into`]): a `Hit` returned from a call goes through the stack again.
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
                hit.instance = o.instance;
                if let Some(triangle) = self.mode_0_triangle(o) {
                    hit.bary = barycentrics_f64(ray, triangle);
                }
                hit
            }
            None => Hit::MISS,
        }
    }
}

impl WaveTracer {
    /// In return mode 0, the world-space triangle of a triangle hit (for its barycentrics,
    /// which the dwords do not carry); `None` in mode 1 and for procedural hits.
    fn mode_0_triangle(&self, o: &LaneOutput) -> Option<[[f32; 3]; 3]> {
        if o.best.is_some_and(|(p, _)| p.is_user()) {
            return None;
        }
        let Some(scene) = &self.scene else {
            return self.mesh.as_ref().map(|mesh| mesh.triangle(o.prim_id));
        };
        let blas = *scene.instance_blas.get(o.instance as usize)?;
        let mesh = scene.meshes.get(blas as usize)?.as_ref()?;
        let m = scene.object_to_world.get(o.instance as usize)?;
        let (a, t) = affine_f64(m);
        Some(mesh.triangle(o.prim_id).map(|v| {
            let w = a * glam::DVec3::new(v[0] as f64, v[1] as f64, v[2] as f64) + t;
            [w.x as f32, w.y as f32, w.z as f32]
        }))
    }
}

/// A trace job run with the traversal of the tracer's strategy, in waves of the configured
/// width.
struct TraceWith<'t, 'j, O, C> {
    tracer: &'t WaveTracer,
    job: TraceJob<'j, O, C>,
}

impl<O: Send, C: Fn(&Ray, &LaneOutput, &mut O) + Sync> StrategyVisitor for TraceWith<'_, '_, O, C> {
    type Output = ();

    fn visit<T: CountedTraversal>(self, traversal: T) {
        let TraceWith { tracer, job } = self;
        if tracer.uses_shader(job.flags) {
            let shader = tracer.scene_shader(job.query, job.flags);
            let traversal = TwoLevel {
                inner: traversal,
                shader: &shader,
            };
            match tracer.config.wave {
                WaveWidth::W32 => tracer.run::<32, 64, _, O>(&traversal, job),
                WaveWidth::W64 => tracer.run::<64, 64, _, O>(&traversal, job),
            }
        } else {
            match tracer.config.wave {
                WaveWidth::W32 => tracer.run::<32, 64, _, O>(&traversal, job),
                WaveWidth::W64 => tracer.run::<64, 64, _, O>(&traversal, job),
            }
        }
    }
}

/// `image`'s settings and side tables, without its bytes.
fn side_tables(image: &BvhImage) -> BvhImage {
    BvhImage {
        triangle_node_ordinal: image.triangle_node_ordinal.clone(),
        slot_primitive: image.slot_primitive.clone(),
        box_parent: image.box_parent.clone(),
        slot_parent: image.slot_parent.clone(),
        ..image.settings_only()
    }
}

/// The image's descriptor, root and virtual address, as a tracer is made from them.
struct ImageParts {
    va: u64,
    descriptor: BvhDescriptor,
    root: NodePointer,
}

/// One call's rays, query and outputs: `convert(ray, lane output, slot)` writes each ray's
/// output, and the counters are added to `counters`.
struct TraceJob<'j, O, C> {
    rays: &'j [Ray],
    query: Query,
    /// The ray flags of the query as it was asked.
    flags: RayFlags,
    out: &'j mut [O],
    convert: &'j C,
    counters: &'j mut Counters,
}

/// What a worker reuses from one parallel block to the next: the `H` host lanes of the
/// lockstep schedule (their stacks keep their capacity) and their ray columns, the by-lane
/// schedule's buffers, and the block's lane outputs.
struct BlockScratch<const H: usize, L> {
    wave: Box<Wave<H, LaneState<L>>>,
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

/// The by-lane schedule over waves of `W` lanes, as a kernel for [`Isa::dispatch`]: every
/// wave of a parallel block, compiled for the instruction set.
struct ByLaneBlock<'b, 'a, T: Traversal, P: ?Sized, const W: usize> {
    run: &'b WaveRun<'a, T, P>,
    first_wave: u64,
    rays: &'b [Ray],
    scratch: &'b mut ByLaneScratch<T::Lane>,
    out: &'b mut [LaneOutput],
    counters: &'b mut Counters,
}

impl<T: Traversal, P: PrimitiveIds + ?Sized, const W: usize> IsaKernel
    for ByLaneBlock<'_, '_, T, P, W>
{
    type Output = ();

    #[inline(always)]
    fn run<I: Isa>(self, isa: I) {
        let ByLaneBlock {
            run,
            first_wave,
            rays,
            scratch,
            out,
            counters,
        } = self;
        for (w, (rays, out)) in rays.chunks(W).zip(out.chunks_mut(W)).enumerate() {
            let index = first_wave + w as u64;
            run.trace_wave_by_lane::<I, W>(isa, index, rays, scratch, out, counters);
        }
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
                        instance: o.instance,
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
