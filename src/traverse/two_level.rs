//! The traversal shader of two-level scenes: instances, procedural primitives, ray flags and
//! the any-hit shader, around any traversal strategy.
//!
//! [`TwoLevel`] wraps a strategy `T`. Each lane keeps two states of `T`: the TLAS walk and,
//! while the lane is inside an instance, the BLAS walk.
//!
//! - The instruction is issued on an instance node (pointer type 6) like on any node and
//!   returns the user-node result (all ones, no TD clock, `semantics.md` 3.2). The shader
//!   then reads the node ([`InstanceNode`], 128 bytes), skips the instance when its mask
//!   and the ray's inclusion mask share no bit or a ray flag skips its geometry type, else
//!   transforms origin and direction into object space with the stored world-to-object
//!   matrix (f32 fused multiply-adds as GPURT's `InstanceTransform`, the direction not
//!   normalized), recomputes the inverse direction (f32 division, as a
//!   driver's registers), keeps the world ray, and starts the BLAS walk at the node the
//!   instance names. The extent (the closest t) is the same number in both spaces.
//! - When the BLAS walk ends, the lane restores the world ray and the TLAS walk goes on
//!   after the instance node. No marker is pushed: for the full stack this is exactly
//!   GPURT's and RADV's walk (they remember the stack height at the transition and switch
//!   back when the stack returns to it; the BLAS's entries are those above it). For short
//!   stacks each level has its own stack of `N` entries (GPURT shares one ring between the
//!   levels); a walk-back ends at the node the instance entered, as GPURT's does at
//!   `lastInstanceNode`, and the TLAS walk-back continues from the instance node.
//! - A procedural leaf (type 7) inside an instance runs the intersection shader: the
//!   analytic sphere test in f64 on the object-space ray, its nearest root in
//!   `[tmin, closest t]` (inclusive, DXR's procedural range) reported first, the farther
//!   one if the any-hit shader ignores the nearer.
//! - A triangle hit (in range, nearer than the committed hit) is culled by facing and by
//!   opacity as DXR defines them ([`super::dxr`]); a non-opaque one runs the any-hit shader,
//!   and the committed t shrinks only when it accepts.
//!
//! A flat image traced with ray flags runs the same shader with no instances (the whole
//! mesh opaque geometry).

use super::dxr::{
    culled_by_facing, culled_by_opacity, is_front_facing, is_opaque, AnyHit, Candidate, RayFlags,
};
use super::short_stack::{CountedTraversal, LaneEvents};
use super::{LaneHit, RegisterChange, Traversal, UserNodeStep, WorldRay};
use crate::bvh::two_level::Sphere;
use crate::counters::ShaderCounters;
use crate::hw::{
    BvhDescriptor, GeometryFlags, InstanceFlags, InstanceNode, NodePointer, ProceduralNode,
    INSTANCE_NODE_TYPE, PROCEDURAL_NODE_TYPE,
};
use crate::wave::intersect::{BvhMemory, LaneRay};
use crate::wave::isa::Isa;
use crate::wave::lanes::ray_is_active;

/// ALU operations of one lane to enter an instance: origin (9 multiplies, 9 additions),
/// direction (9 and 6), three reciprocals.
pub const ENTER_ALU_OPS: u64 = 36;

/// ALU operations of one lane to leave an instance: the world inverse direction again
/// (the world origin and direction were kept).
pub const LEAVE_ALU_OPS: u64 = 3;

/// Bytes the shader reads of an instance node.
pub const INSTANCE_NODE_BYTES: u64 = 128;

/// What the shader reads beside the instruction: the image (instance and procedural nodes),
/// the scene's per-BLAS data, the ray's flags and mask, and the any-hit shader.
pub struct SceneShader<'a> {
    pub memory: BvhMemory<'a>,
    pub descriptor: BvhDescriptor,
    pub flags: RayFlags,
    /// The instance inclusion mask.
    pub mask: u8,
    /// The lane ends its ray at its first accepted hit.
    pub end_on_first_hit: bool,
    /// Blocks `0..tlas_blocks` are the TLAS (0 in a flat image).
    pub tlas_blocks: u64,
    /// Per instance: its BLAS.
    pub instance_blas: &'a [u32],
    /// Per BLAS: the geometry flag `OPAQUE`.
    pub blas_opaque: &'a [bool],
    /// Per BLAS: its spheres (empty for a triangle BLAS).
    pub spheres: &'a [Vec<Sphere>],
    /// Whether a flat image's mesh is opaque geometry.
    pub flat_opaque: bool,
    /// Return mode 1: triangle dwords carry barycentrics for the any-hit shader.
    pub barycentrics: bool,
    pub any_hit: &'a dyn AnyHit,
}

/// The two-level traversal shader around strategy `T` (see the module documentation).
pub struct TwoLevel<'a, T> {
    pub inner: T,
    pub shader: &'a SceneShader<'a>,
}

/// A lane of [`TwoLevel`]: its TLAS and BLAS walks, the instance it is in, its saved world
/// ray, and what its shader did for its ray.
#[derive(Debug)]
pub struct TwoLevelLane<L> {
    top: L,
    bottom: L,
    /// The instance being traversed (`NO_INSTANCE` on the top level).
    instance: u32,
    /// Its node, where the TLAS walk goes on.
    instance_node: NodePointer,
    instance_flags: InstanceFlags,
    /// Its BLAS.
    blas: u32,
    world: WorldRay,
    /// The lane left an instance: its world ray waits to be restored.
    exited: bool,
    events: ShaderCounters,
}

const NO_INSTANCE: u32 = u32::MAX;

impl<L: Default> Default for TwoLevelLane<L> {
    fn default() -> Self {
        TwoLevelLane {
            top: L::default(),
            bottom: L::default(),
            instance: NO_INSTANCE,
            instance_node: NodePointer::INVALID,
            instance_flags: InstanceFlags::NONE,
            blas: 0,
            world: WorldRay::default(),
            exited: false,
            events: ShaderCounters::default(),
        }
    }
}

/// `m` applied to the point `o` and to the direction `d` (row-major 3x4, f32), as GPURT's
/// `InstanceTransform` computes it: fused multiply-adds, z first, then y, then x
/// (`fma(o.x, m0, fma(o.y, m1, fma(o.z, m2, t)))`; the direction without `t`, its first
/// product rounded). `f32::mul_add` is IEEE's fused operation on every target, so the
/// result is the same bits everywhere.
pub fn transform_ray(m: &[[f32; 4]; 3], o: [f32; 3], d: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    let point = |r: &[f32; 4]| o[0].mul_add(r[0], o[1].mul_add(r[1], o[2].mul_add(r[2], r[3])));
    let vector = |r: &[f32; 4]| d[0].mul_add(r[0], d[1].mul_add(r[1], d[2] * r[2]));
    (
        [point(&m[0]), point(&m[1]), point(&m[2])],
        [vector(&m[0]), vector(&m[1]), vector(&m[2])],
    )
}

/// The sphere's intersections with the ray `o + t d`, nearer first, in f64 (`None` when the
/// line misses it); and whether the origin is outside the sphere.
pub fn sphere_roots(sphere: &Sphere, o: [f32; 3], d: [f32; 3]) -> Option<([f64; 2], bool)> {
    let c = sphere.center.map(f64::from);
    let oc = [0, 1, 2].map(|a| o[a] as f64 - c[a]);
    let d = d.map(f64::from);
    let a = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    let b = d[0] * oc[0] + d[1] * oc[1] + d[2] * oc[2];
    let r = sphere.radius as f64;
    let cc = oc[0] * oc[0] + oc[1] * oc[1] + oc[2] * oc[2] - r * r;
    let disc = b * b - a * cc;
    if disc.is_nan() || disc < 0.0 || a == 0.0 {
        return None;
    }
    let s = disc.sqrt();
    Some(([(-b - s) / a, (-b + s) / a], cc > 0.0))
}

impl<T: Traversal> TwoLevel<'_, T> {
    /// The lane's BLAS walk ended: back to the TLAS after the instance node.
    fn leave(&self, lane: &mut TwoLevelLane<T::Lane>) -> Option<NodePointer> {
        lane.instance = NO_INSTANCE;
        lane.exited = true;
        lane.events.transform_alu_ops += LEAVE_ALU_OPS;
        self.inner.after_leaf(&mut lane.top, lane.instance_node)
    }

    /// The level's next node after `next` of the level's walk (`None` in a BLAS: leave).
    #[inline(always)]
    fn in_level(
        &self,
        lane: &mut TwoLevelLane<T::Lane>,
        step: impl FnOnce(&T, &mut T::Lane) -> Option<NodePointer>,
    ) -> Option<NodePointer> {
        if lane.instance == NO_INSTANCE {
            step(&self.inner, &mut lane.top)
        } else {
            match step(&self.inner, &mut lane.bottom) {
                Some(next) => Some(next),
                None => self.leave(lane),
            }
        }
    }

    /// Counts a box query of a TLAS node.
    #[inline(always)]
    fn count_box(&self, lane: &mut TwoLevelLane<T::Lane>, node: NodePointer) {
        if (node.address_64() as u64) < self.shader.tlas_blocks {
            lane.events.tlas_box_queries += 1;
        }
    }

    /// A leaf done at the lane's level.
    fn leaf(&self, lane: &mut TwoLevelLane<T::Lane>, node: NodePointer) -> UserNodeStep {
        UserNodeStep {
            next: self.in_level(lane, |t, l| t.after_leaf(l, node)),
            registers: RegisterChange::Kept,
        }
    }

    /// The lane reached instance node `node` in the TLAS.
    fn enter(
        &self,
        lane: &mut TwoLevelLane<T::Lane>,
        node: NodePointer,
        regs: &mut LaneRay,
    ) -> UserNodeStep {
        let shader = self.shader;
        lane.events.instance_nodes += 1;
        lane.events.instance_node_bytes += INSTANCE_NODE_BYTES;
        let Some(at) = shader.memory.offset(&shader.descriptor, node, 128) else {
            return self.leaf(lane, node);
        };
        let inst: InstanceNode = bytemuck::pod_read_unaligned(&shader.memory.bytes[at..at + 128]);
        let procedural = inst.procedural_blas();
        let skipped = inst.mask() & shader.mask == 0
            || (procedural && shader.flags.contains(RayFlags::SKIP_PROCEDURAL_PRIMITIVES))
            || (!procedural && shader.flags.contains(RayFlags::SKIP_TRIANGLES));
        let blas = shader
            .instance_blas
            .get(inst.instance_index as usize)
            .copied();
        let (Some(blas), false) = (blas, skipped) else {
            return self.leaf(lane, node);
        };
        let (origin, dir) = transform_ray(&inst.world_to_object, regs.origin, regs.dir);
        let object = LaneRay {
            extent: regs.extent,
            origin,
            dir,
            inv_dir: dir.map(|d| 1.0 / d),
        };
        if !ray_is_active(&object) {
            // A transform that overflows the ray: the instance is skipped (the instruction
            // would turn the lane off in object space).
            return self.leaf(lane, node);
        }
        lane.world = WorldRay {
            origin: regs.origin,
            dir: regs.dir,
            inv_dir: regs.inv_dir,
        };
        *regs = object;
        lane.instance = inst.instance_index;
        lane.instance_node = node;
        lane.instance_flags = inst.flags();
        lane.blas = blas;
        lane.events.instance_transitions += 1;
        lane.events.transform_alu_ops += ENTER_ALU_OPS;
        let first = self.inner.begin(&mut lane.bottom, inst.blas_node_pointer);
        UserNodeStep {
            next: Some(first),
            registers: RegisterChange::Ray,
        }
    }

    /// Whether a hit at `t` on `(instance, prim)` beats the committed one (nearer, or as
    /// near with a smaller instance and primitive: the result does not depend on the
    /// traversal order).
    fn beats(hit: &LaneHit, t: f32, instance: u32, prim: u32) -> bool {
        hit.best.is_none()
            || t < hit.best_t
            || (t == hit.best_t && (instance, prim) < (hit.best_instance, hit.best_prim))
    }

    /// The lane reached procedural leaf `node` inside an instance: the intersection shader.
    fn procedural(
        &self,
        lane: &mut TwoLevelLane<T::Lane>,
        node: NodePointer,
        regs: &mut LaneRay,
        hit: &mut LaneHit,
    ) -> UserNodeStep {
        let shader = self.shader;
        lane.events.intersection_invocations += 1;
        let leaf = shader
            .memory
            .offset(&shader.descriptor, node, 64)
            .map(|at| {
                bytemuck::pod_read_unaligned::<ProceduralNode>(&shader.memory.bytes[at..at + 64])
            });
        let sphere = leaf.and_then(|l| {
            shader
                .spheres
                .get(lane.blas as usize)?
                .get(l.primitive_index as usize)
                .map(|s| (l, *s))
        });
        let Some((leaf, sphere)) = sphere else {
            return self.leaf(lane, node);
        };
        let geometry_opaque = leaf.geometry_flags().0 & GeometryFlags::OPAQUE.0 != 0;
        let opaque = is_opaque(geometry_opaque, lane.instance_flags, shader.flags);
        let mut accepted = false;
        if !culled_by_opacity(opaque, shader.flags) {
            if let Some((roots, outside)) = sphere_roots(&sphere, regs.origin, regs.dir) {
                let prim = leaf.primitive_index;
                for (k, root) in roots.into_iter().enumerate() {
                    let t = root as f32;
                    let in_range = t >= hit.tmin && t <= hit.best_t;
                    if !(in_range && Self::beats(hit, t, lane.instance, prim)) {
                        continue;
                    }
                    // Entering the sphere from outside is its front face.
                    let front = outside && k == 0;
                    lane.events.candidate_hits += 1;
                    if !opaque {
                        lane.events.any_hit_invocations += 1;
                        let candidate = Candidate {
                            instance: lane.instance,
                            prim,
                            t,
                            barycentrics: [0.0; 2],
                            front_face: front,
                        };
                        if !shader.any_hit.any_hit(&candidate) {
                            continue;
                        }
                    }
                    // Dwords as a triangle's: t = t_num / t_denom, the facing in the sign.
                    let t_denom: f32 = if front { 1.0 } else { -1.0 };
                    hit.best = Some((node, [(t * t_denom).to_bits(), t_denom.to_bits(), 0, 0]));
                    hit.best_t = t;
                    hit.best_prim = prim;
                    hit.best_instance = lane.instance;
                    regs.extent = t;
                    accepted = true;
                    break;
                }
            }
        }
        if accepted && shader.end_on_first_hit {
            return UserNodeStep {
                next: None,
                registers: RegisterChange::Extent,
            };
        }
        let step = self.leaf(lane, node);
        UserNodeStep {
            next: step.next,
            registers: if accepted {
                RegisterChange::Extent
            } else {
                RegisterChange::Kept
            },
        }
    }
}

impl<T: Traversal> Traversal for TwoLevel<'_, T> {
    type Lane = TwoLevelLane<T::Lane>;

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn begin(&self, lane: &mut Self::Lane, root: NodePointer) -> NodePointer {
        lane.instance = NO_INSTANCE;
        lane.exited = false;
        lane.events = ShaderCounters::default();
        self.inner.begin(&mut lane.top, root)
    }

    #[inline(always)]
    fn after_box(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
    ) -> Option<NodePointer> {
        self.count_box(lane, node);
        self.in_level(lane, |t, l| t.after_box(l, node, children))
    }

    #[inline(always)]
    fn after_box_masked<I: Isa>(
        &self,
        isa: I,
        lane: &mut Self::Lane,
        node: NodePointer,
        children: [NodePointer; 4],
        valid: u32,
    ) -> Option<NodePointer> {
        self.count_box(lane, node);
        self.in_level(lane, |t, l| {
            t.after_box_masked(isa, l, node, children, valid)
        })
    }

    #[inline(always)]
    fn after_leaf(&self, lane: &mut Self::Lane, node: NodePointer) -> Option<NodePointer> {
        self.in_level(lane, |t, l| t.after_leaf(l, node))
    }

    fn stack_depth(&self, lane: &Self::Lane) -> usize {
        let bottom = if lane.instance == NO_INSTANCE {
            0
        } else {
            self.inner.stack_depth(&lane.bottom)
        };
        self.inner.stack_depth(&lane.top) + bottom
    }

    const SHADER: bool = true;

    fn offer_triangle(
        &self,
        lane: &mut Self::Lane,
        hit: &mut LaneHit,
        node: NodePointer,
        dwords: [u32; 4],
        prim: impl FnOnce() -> u32,
    ) -> Option<f32> {
        let shader = self.shader;
        let t_denom = f32::from_bits(dwords[1]);
        let t = f32::from_bits(dwords[0]) / t_denom;
        if !(t >= hit.tmin && t <= hit.best_t && t < f32::INFINITY) {
            return None;
        }
        let flags = lane.instance_flags;
        let front = is_front_facing(t_denom, flags);
        if culled_by_facing(front, flags, shader.flags) {
            return None;
        }
        let geometry_opaque = if lane.instance == NO_INSTANCE {
            shader.flat_opaque
        } else {
            shader
                .blas_opaque
                .get(lane.blas as usize)
                .copied()
                .unwrap_or(true)
        };
        let opaque = is_opaque(geometry_opaque, flags, shader.flags);
        if culled_by_opacity(opaque, shader.flags) {
            return None;
        }
        let prim = prim();
        if prim == u32::MAX || !Self::beats(hit, t, lane.instance, prim) {
            return None;
        }
        lane.events.candidate_hits += 1;
        if !opaque {
            lane.events.any_hit_invocations += 1;
            let barycentrics = if shader.barycentrics {
                [
                    f32::from_bits(dwords[2]) / t_denom,
                    f32::from_bits(dwords[3]) / t_denom,
                ]
            } else {
                [0.0; 2]
            };
            let candidate = Candidate {
                instance: lane.instance,
                prim,
                t,
                barycentrics,
                front_face: front,
            };
            if !shader.any_hit.any_hit(&candidate) {
                return None;
            }
        }
        hit.best_t = t;
        hit.best = Some((node, dwords));
        hit.best_prim = prim;
        hit.best_instance = lane.instance;
        Some(t)
    }

    fn user_node(
        &self,
        lane: &mut Self::Lane,
        node: NodePointer,
        regs: &mut LaneRay,
        hit: &mut LaneHit,
    ) -> UserNodeStep {
        let ty = node.node_type();
        let inside = lane.instance != NO_INSTANCE;
        if ty == INSTANCE_NODE_TYPE && !inside {
            self.enter(lane, node, regs)
        } else if ty == PROCEDURAL_NODE_TYPE && inside {
            self.procedural(lane, node, regs, hit)
        } else {
            self.leaf(lane, node)
        }
    }

    fn take_exit(&self, lane: &mut Self::Lane) -> Option<WorldRay> {
        if lane.exited {
            lane.exited = false;
            Some(lane.world)
        } else {
            None
        }
    }

    fn finish_lane(&self, lane: &Self::Lane, counters: &mut ShaderCounters) {
        counters.merge(&lane.events);
    }
}

impl<T: CountedTraversal> CountedTraversal for TwoLevel<'_, T> {
    fn take_events(&self, lane: &mut Self::Lane) -> LaneEvents {
        let mut events = self.inner.take_events(&mut lane.top);
        events.merge(&self.inner.take_events(&mut lane.bottom));
        events
    }
}
