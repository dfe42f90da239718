//! Two-level images: a top-level tree (TLAS) over instances of bottom-level trees
//! (BLASes), all in one image under one descriptor, as a console title's scenes are traced.
//!
//! ```text
//! blocks 0..T        the TLAS: FP32 box nodes (root at block 0, pointer 0x5), then one
//!                    instance node (type 6, 128 bytes) per TLAS leaf
//! blocks T..         each BLAS in turn, built once however many instances use it:
//!                    a triangle BLAS as `bvh::build` encodes a mesh, moved to its blocks
//!                    (`relocate`); a procedural BLAS as FP32 box nodes over procedural
//!                    leaves (type 7, 64 bytes, one per primitive)
//! ```
//!
//! - Node pointers are 32-bit block offsets from the image's base (0), in both levels: an
//!   image holds at most 2^29 blocks (32 GiB), far more than instancing needs.
//! - An instance node follows GPURT's RDNA2 layout ([`InstanceNode`]): the world-to-object
//!   matrix (the f64 inverse of the instance's matrix, rounded to f32), id and mask,
//!   contribution and flags, a BLAS base pointer of 0 with GPURT's geometry-type bit, and in
//!   its sideband the instance index, the BLAS node to start at and the object-to-world
//!   matrix.
//! - A TLAS leaf's box is the instance's world box: the eight corners of the BLAS root's
//!   stored box, transformed in f64 and rounded outward to f32 (drivers transform the same
//!   box; GPURT by centre and extent, in f32).
//! - With rebraiding ([`TwoLevelOptions::rebraid`]) a large instance's TLAS leaf is
//!   replaced by one leaf per child of its BLAS root, each a full instance node whose BLAS
//!   node pointer names that child (GPURT's "rebraid", one level).
//! - Side tables ([`BvhImage`]'s) cover the whole image: triangle node ordinals and slot
//!   primitives (a primitive is the index within its BLAS), and parent pointers for box,
//!   instance and procedural nodes; every root's parent is INVALID.

mod relocate;
mod user_leaves;
mod validate;

pub use relocate::{extract, relocate, RelocatedBlas};
pub use user_leaves::{encode_user_leaves, LeafKind, UserLeafTree};
pub use validate::validate_two_level;

use super::build::{build_binary, PrimRef};
use super::collapse::Tree4;
use super::{build, BuildOptions, BvhImage, Mesh, Metrics};
use crate::error::{Error, Result};
use crate::hw::{
    BoxNodeF16, BoxNodeF32, BvhDescriptor, GeometryFlags, InstanceFlags, InstanceNode, NodePointer,
    NodeType, ProceduralNode, INSTANCE_NODE_TYPE, PROCEDURAL_NODE_TYPE,
};
use glam::{DMat3, DVec3, Vec3A};
use std::time::Instant;

/// A procedural sphere, in object space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sphere {
    pub center: [f32; 3],
    pub radius: f32,
}

impl Sphere {
    /// The sphere's box, rounded outward to f32 (computed in f64).
    pub fn bounds(&self) -> ([f32; 3], [f32; 3]) {
        let r = self.radius as f64;
        let lo = self.center.map(|c| round_down(c as f64 - r));
        let hi = self.center.map(|c| round_up(c as f64 + r));
        (lo, hi)
    }
}

/// What a BLAS holds.
#[derive(Clone, Debug)]
pub enum BlasGeometry {
    Triangles(Mesh),
    Spheres(Vec<Sphere>),
}

/// One BLAS to build.
#[derive(Clone, Debug)]
pub struct BlasInput {
    pub geometry: BlasGeometry,
    /// The DXR geometry flag `OPAQUE`.
    pub opaque: bool,
}

/// One instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstanceInput {
    /// Index into [`TwoLevelInput::blases`].
    pub blas: u32,
    /// Object-to-world 3x4, row-major.
    pub object_to_world: [[f32; 4]; 3],
    pub mask: u8,
    /// 24 bits.
    pub id: u32,
    pub flags: InstanceFlags,
}

/// A scene to build.
#[derive(Clone, Debug, Default)]
pub struct TwoLevelInput {
    pub blases: Vec<BlasInput>,
    pub instances: Vec<InstanceInput>,
}

/// Options of a two-level build (by default the default BLAS options, no rebraiding).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TwoLevelOptions {
    /// How triangle BLASes are built (and the descriptor's settings: growth, sorting,
    /// return mode).
    pub blas: BuildOptions,
    /// Open large instances one level into their BLAS (GPURT's rebraid).
    pub rebraid: bool,
}

/// Rebraiding's leaf budget: at most this many TLAS leaves per instance (GPURT's
/// `rebraidFactor`; its default is 2).
pub const REBRAID_FACTOR: usize = 2;

/// What a BLAS holds, once built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlasKind {
    Triangles,
    Spheres,
}

/// One built BLAS in the image.
#[derive(Clone, Debug)]
pub struct BlasLevel {
    pub kind: BlasKind,
    pub opaque: bool,
    /// Its first block and number of blocks.
    pub first_block: u64,
    pub blocks: u64,
    pub root: NodePointer,
    /// Its triangle nodes' first ordinal in the image's side tables.
    pub first_ordinal: u32,
    /// The triangle BLAS's metrics as built alone (`None` for spheres).
    pub metrics: Option<Metrics>,
    /// Box nodes (all of them, FP16 and FP32).
    pub box_nodes: usize,
    /// Primitives (triangles or spheres).
    pub primitives: usize,
    /// Box-node levels on the longest path.
    pub max_depth: usize,
    /// Triangles left out because a vertex is not finite.
    pub dropped_nan_triangles: usize,
}

/// The TLAS of a two-level image.
#[derive(Clone, Debug)]
pub struct TlasLevel {
    /// Blocks `0..blocks` of the image.
    pub blocks: u64,
    pub box_nodes: usize,
    /// Instance nodes (one per TLAS leaf: more than the instances when rebraided).
    pub instance_nodes: usize,
    /// Instances opened by rebraiding.
    pub rebraided_instances: usize,
    pub max_depth: usize,
    pub sah_cost: f64,
    /// Per instance node (leaf order): the instance it stands for.
    pub leaf_instance: Vec<u32>,
}

/// A built two-level image.
#[derive(Clone, Debug)]
pub struct TwoLevelBvh {
    /// The whole image and its side tables; its root is the TLAS root.
    pub image: BvhImage,
    pub tlas: TlasLevel,
    pub blases: Vec<BlasLevel>,
    /// Per instance: its BLAS.
    pub instance_blas: Vec<u32>,
    /// The spheres of each procedural BLAS (empty for triangle BLASes), the intersection
    /// shader's data.
    pub spheres: Vec<Vec<Sphere>>,
    /// Building the BLASes and the TLAS (references, trees), seconds.
    pub build_seconds: f64,
    /// Encoding, moving and assembling the bytes, seconds.
    pub encode_seconds: f64,
}

/// The largest f32 not above `x`.
fn round_down(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) > x {
        f.next_down()
    } else {
        f
    }
}

/// The smallest f32 not below `x`.
fn round_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x {
        f.next_up()
    } else {
        f
    }
}

/// The 3x3 part and translation of a row-major 3x4 matrix, in f64.
pub fn affine_f64(m: &[[f32; 4]; 3]) -> (DMat3, DVec3) {
    let col = |c: usize| DVec3::new(m[0][c] as f64, m[1][c] as f64, m[2][c] as f64);
    (DMat3::from_cols(col(0), col(1), col(2)), col(3))
}

/// The inverse of a row-major 3x4 affine matrix, computed in f64 and rounded to f32;
/// `None` when the 3x3 part is singular or the result is not finite.
pub fn inverse_3x4(m: &[[f32; 4]; 3]) -> Option<[[f32; 4]; 3]> {
    let (a, t) = affine_f64(m);
    let det = a.determinant();
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let inv = a.inverse();
    let it = -(inv * t);
    let row = |r: usize| {
        let c = |v: DVec3| v.to_array()[r];
        [
            c(inv.x_axis) as f32,
            c(inv.y_axis) as f32,
            c(inv.z_axis) as f32,
            c(it) as f32,
        ]
    };
    let out = [row(0), row(1), row(2)];
    out.iter().flatten().all(|x| x.is_finite()).then_some(out)
}

/// The world box of the object-space box `lo..hi` under `m`: its eight corners
/// transformed in f64, bounds rounded outward to f32.
pub fn transform_box(m: &[[f32; 4]; 3], lo: [f32; 3], hi: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    let (a, t) = affine_f64(m);
    let (mut wlo, mut whi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
    for corner in 0..8 {
        let pick = |axis: usize| {
            if corner >> axis & 1 == 0 {
                lo[axis]
            } else {
                hi[axis]
            }
        };
        let p = DVec3::new(pick(0) as f64, pick(1) as f64, pick(2) as f64);
        let w = a * p + t;
        wlo = wlo.min(w);
        whi = whi.max(w);
    }
    (wlo.to_array().map(round_down), whi.to_array().map(round_up))
}

/// The root at `root` of the image `bytes`, with its children's stored boxes; every pointer
/// moved by `moved`.
fn read_root(
    bytes: &[u8],
    root: NodePointer,
    moved: impl Fn(NodePointer) -> NodePointer,
) -> BlasRoot {
    let at = 64 * root.address_64() as usize;
    let slot = |pointer: NodePointer, (lo, hi): ([f32; 3], [f32; 3])| RootChild {
        pointer: moved(pointer),
        lo,
        hi,
    };
    let children: Vec<RootChild> = if root.node_type() == NodeType::BoxF32 {
        let node: BoxNodeF32 = bytemuck::pod_read_unaligned(&bytes[at..at + 128]);
        (0..4)
            .filter(|&s| !node.children[s].is_invalid())
            .map(|s| slot(node.children[s], node.child_box(s)))
            .collect()
    } else {
        let node: BoxNodeF16 = bytemuck::pod_read_unaligned(&bytes[at..at + 64]);
        (0..4)
            .filter(|&s| !node.children[s].is_invalid())
            .map(|s| slot(node.children[s], node.child_box(s)))
            .collect()
    };
    bounded_root(children, moved(root))
}

/// A root of `children` (its box their union).
fn bounded_root(children: Vec<RootChild>, pointer: NodePointer) -> BlasRoot {
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for c in &children {
        for a in 0..3 {
            lo[a] = lo[a].min(c.lo[a]);
            hi[a] = hi[a].max(c.hi[a]);
        }
    }
    BlasRoot {
        lo,
        hi,
        children,
        pointer,
    }
}

/// A child of a BLAS root: its pointer and its stored box.
#[derive(Clone, Copy, Debug)]
struct RootChild {
    pointer: NodePointer,
    lo: [f32; 3],
    hi: [f32; 3],
}

/// A BLAS root as the TLAS build sees it: its stored box (the union of its used slots'
/// boxes), its children, and its pointer.
#[derive(Clone, Debug)]
struct BlasRoot {
    lo: [f32; 3],
    hi: [f32; 3],
    children: Vec<RootChild>,
    pointer: NodePointer,
}

/// One TLAS leaf: an instance, the BLAS node it starts at, and its world box.
#[derive(Clone, Copy, Debug)]
struct Fragment {
    instance: u32,
    entry: NodePointer,
    lo: [f32; 3],
    hi: [f32; 3],
}

/// A built BLAS before it is placed in the image.
struct BuiltBlas {
    kind: BlasKind,
    opaque: bool,
    /// Triangles: the image built alone (root at block 0); spheres: the tree of user leaves.
    image: Option<BvhImage>,
    spheres: Option<(Tree4, Vec<Sphere>)>,
    metrics: Option<Metrics>,
    dropped_nan_triangles: usize,
    primitives: usize,
}

/// Builds the BLASes, then the TLAS over the instances, into one image.
///
/// Errors: an instance naming a BLAS that does not exist, a singular or non-finite
/// instance matrix, an id over 24 bits, both force flags, a sphere with a radius that is
/// not finite and positive, the options' own errors ([`build()`]), an image beyond 2^29
/// blocks.
pub fn build_two_level(input: &TwoLevelInput, options: &TwoLevelOptions) -> Result<TwoLevelBvh> {
    check_input(input)?;
    let start = Instant::now();
    let mut built = Vec::with_capacity(input.blases.len());
    let mut encode_seconds = 0.0;
    for blas in &input.blases {
        built.push(match &blas.geometry {
            BlasGeometry::Triangles(mesh) => {
                let b = build(mesh, &options.blas)?;
                encode_seconds += b.encode_seconds;
                BuiltBlas {
                    kind: BlasKind::Triangles,
                    opaque: blas.opaque,
                    primitives: mesh.len(),
                    image: Some(b.image),
                    spheres: None,
                    metrics: Some(b.metrics),
                    dropped_nan_triangles: b.dropped_nan_triangles,
                }
            }
            BlasGeometry::Spheres(spheres) => BuiltBlas {
                kind: BlasKind::Spheres,
                opaque: blas.opaque,
                primitives: spheres.len(),
                image: None,
                spheres: Some((sphere_tree(spheres), spheres.clone())),
                metrics: None,
                dropped_nan_triangles: 0,
            },
        });
    }
    let blas_seconds = start.elapsed().as_secs_f64() - encode_seconds;

    // Sizes first: the TLAS needs the BLAS roots, the BLASes start after the TLAS.
    let encode_start = Instant::now();
    let blas_blocks: Vec<u64> = built
        .iter()
        .map(|b| match (&b.image, &b.spheres) {
            (Some(image), _) => image.node_count_64() as u64,
            (None, Some((tree, _))) => 2 * tree.nodes.len() as u64 + tree.leaves.len() as u64,
            _ => unreachable!("a BLAS is triangles or spheres"),
        })
        .collect();
    // The BLASes are placed at offsets relative to the end of the TLAS, known once the
    // TLAS is built; roots are first computed relative to the BLAS region.
    let mut region_first = Vec::with_capacity(built.len());
    let mut next = 0u64;
    for &b in &blas_blocks {
        region_first.push(next);
        next += b;
    }
    let blas_region_blocks = next;
    // Each BLAS's root (pointers relative to the BLAS region).
    let roots: Vec<BlasRoot> = built
        .iter()
        .zip(&region_first)
        .map(|(b, &first)| blas_root(b, first))
        .collect();

    let tlas_start = Instant::now();
    let fragments = fragments(input, &roots, options.rebraid);
    let tree = if fragments.is_empty() {
        Tree4::empty()
    } else {
        let mut refs: Vec<PrimRef> = fragments
            .iter()
            .enumerate()
            .map(|(i, f)| PrimRef::new(Vec3A::from(f.lo), Vec3A::from(f.hi), i as u32, 1))
            .collect();
        let binary = build_binary(&mut refs);
        Tree4::collapse(binary, refs)
    };
    let tlas_tree_seconds = tlas_start.elapsed().as_secs_f64();
    let tlas_blocks = 2 * tree.nodes.len() as u64 + 2 * tree.leaves.len() as u64;
    let total_blocks = tlas_blocks + blas_region_blocks;
    if total_blocks > 1 << 29 {
        return Err(Error::Other(format!(
            "two-level image of {total_blocks} 64-byte nodes does not fit 32-bit node pointers \
             (2^29 max)"
        )));
    }
    let shift =
        |p: NodePointer| NodePointer::new(p.address_64() as u64 + tlas_blocks, p.node_type());
    let mut leaf_instance = Vec::with_capacity(tree.leaves.len());
    let tlas = encode_user_leaves(
        &tree,
        0,
        LeafKind {
            node_type: INSTANCE_NODE_TYPE,
            blocks: 2,
        },
        |_, prim, _, bytes| {
            let f = fragments[prim as usize];
            let instance = &input.instances[f.instance as usize];
            leaf_instance.push(f.instance);
            let node = instance_node(
                instance,
                f.instance,
                shift(f.entry),
                &built[instance.blas as usize],
            );
            bytes.copy_from_slice(bytemuck::bytes_of(&node));
        },
    );

    // The image: the TLAS, then each BLAS at its blocks.
    let blocks = total_blocks as usize;
    let mut bytes = Vec::with_capacity(64 * blocks);
    bytes.extend_from_slice(&tlas.bytes);
    let mut triangle_node_ordinal = vec![u32::MAX; tlas_blocks as usize];
    let mut box_parent = tlas.parent.clone();
    let (mut slot_primitive, mut slot_parent) = (Vec::new(), Vec::new());
    let mut levels = Vec::with_capacity(built.len());
    let mut spheres_out = Vec::with_capacity(built.len());
    let mut ordinal = 0u32;
    for (b, &first) in built.iter().zip(&region_first) {
        let first_block = tlas_blocks + first;
        let first_ordinal = ordinal;
        let (root, box_nodes, max_depth) = match (&b.image, &b.spheres) {
            (Some(image), _) => {
                let moved = relocate(image, first_block, ordinal);
                bytes.extend_from_slice(&moved.bytes);
                triangle_node_ordinal.extend_from_slice(&moved.triangle_node_ordinal);
                box_parent.extend_from_slice(&moved.box_parent);
                slot_primitive.extend_from_slice(&image.slot_primitive);
                slot_parent.extend_from_slice(&moved.slot_parent);
                ordinal += (image.slot_primitive.len() / 4) as u32;
                let m = b.metrics.as_ref().expect("triangle BLASes have metrics");
                spheres_out.push(Vec::new());
                (moved.root, m.box16_nodes + m.box32_nodes, m.max_depth)
            }
            (None, Some((tree, spheres))) => {
                let flags = if b.opaque {
                    GeometryFlags::OPAQUE
                } else {
                    GeometryFlags::default()
                };
                let leaves = encode_user_leaves(
                    tree,
                    first_block,
                    LeafKind {
                        node_type: PROCEDURAL_NODE_TYPE,
                        blocks: 1,
                    },
                    |_, prim, _, bytes| {
                        let (lo, hi) = spheres[prim as usize].bounds();
                        let node = ProceduralNode {
                            box_min: lo,
                            box_max: hi,
                            geometry_index_and_flags: ProceduralNode::pack_geometry(0, flags),
                            primitive_index: prim,
                            ..bytemuck::Zeroable::zeroed()
                        };
                        bytes.copy_from_slice(bytemuck::bytes_of(&node));
                    },
                );
                bytes.extend_from_slice(&leaves.bytes);
                triangle_node_ordinal.extend(std::iter::repeat_n(u32::MAX, leaves.parent.len()));
                box_parent.extend_from_slice(&leaves.parent);
                spheres_out.push(spheres.clone());
                (leaves.root, leaves.box_nodes, leaves.max_depth)
            }
            _ => unreachable!("a BLAS is triangles or spheres"),
        };
        levels.push(BlasLevel {
            kind: b.kind,
            opaque: b.opaque,
            first_block,
            blocks: blas_blocks[levels.len()],
            root,
            first_ordinal,
            metrics: b.metrics.clone(),
            box_nodes,
            primitives: b.primitives,
            max_depth,
            dropped_nan_triangles: b.dropped_nan_triangles,
        });
    }
    debug_assert_eq!(bytes.len(), 64 * blocks);
    let o = &options.blas;
    let descriptor = BvhDescriptor {
        base_address_256: 0,
        box_grow_ulps: o.box_grow_ulps,
        box_sort_enable: o.box_sort,
        size_minus_one: total_blocks - 1,
        triangle_return_mode: o.return_mode,
        ..BvhDescriptor::default()
    };
    let chains = o.leaf_chains && o.triangles_per_node > 1;
    let image = BvhImage {
        bytes,
        descriptor,
        root: tlas.root,
        triangle_node_ordinal,
        slot_primitive,
        box_parent,
        slot_parent,
        triangles_per_node: o.triangles_per_node,
        spatial_splits: o.spatial_splits && !chains,
        leaf_chains: chains,
    };
    let rebraided_instances = {
        let mut seen = vec![0u32; input.instances.len()];
        for &i in &leaf_instance {
            seen[i as usize] += 1;
        }
        seen.iter().filter(|&&n| n > 1).count()
    };
    Ok(TwoLevelBvh {
        image,
        tlas: TlasLevel {
            blocks: tlas_blocks,
            box_nodes: tlas.box_nodes,
            instance_nodes: tree.leaves.len(),
            rebraided_instances,
            max_depth: tlas.max_depth,
            sah_cost: tlas.sah_cost,
            leaf_instance,
        },
        blases: levels,
        instance_blas: input.instances.iter().map(|i| i.blas).collect(),
        spheres: spheres_out,
        build_seconds: blas_seconds + tlas_tree_seconds,
        encode_seconds: encode_seconds + encode_start.elapsed().as_secs_f64() - tlas_tree_seconds,
    })
}

/// The input errors [`build_two_level`] reports.
fn check_input(input: &TwoLevelInput) -> Result<()> {
    for (i, inst) in input.instances.iter().enumerate() {
        let what = || format!("instance {i}");
        if inst.blas as usize >= input.blases.len() {
            return Err(Error::field(
                what(),
                format!("names BLAS {} of {}", inst.blas, input.blases.len()),
            ));
        }
        if inst
            .object_to_world
            .iter()
            .flatten()
            .any(|x| !x.is_finite())
            || inverse_3x4(&inst.object_to_world).is_none()
        {
            return Err(Error::field(what(), "transform is singular or not finite"));
        }
        if inst.id > 0x00FF_FFFF {
            return Err(Error::field(
                what(),
                format!("id {} exceeds 24 bits", inst.id),
            ));
        }
        if inst.flags.contains(InstanceFlags::FORCE_OPAQUE)
            && inst.flags.contains(InstanceFlags::FORCE_NON_OPAQUE)
        {
            return Err(Error::field(
                what(),
                "force_opaque and force_non_opaque exclude each other",
            ));
        }
    }
    for (b, blas) in input.blases.iter().enumerate() {
        if let BlasGeometry::Spheres(spheres) = &blas.geometry {
            for (s, sphere) in spheres.iter().enumerate() {
                if !(sphere.radius.is_finite() && sphere.radius > 0.0)
                    || sphere.center.iter().any(|c| !c.is_finite())
                {
                    return Err(Error::field(
                        format!("BLAS {b} sphere {s}"),
                        "needs a finite centre and a finite radius > 0",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The binary-built, 4-wide tree over a procedural BLAS's spheres.
fn sphere_tree(spheres: &[Sphere]) -> Tree4 {
    if spheres.is_empty() {
        return Tree4::empty();
    }
    let mut refs: Vec<PrimRef> = spheres
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (lo, hi) = s.bounds();
            PrimRef::new(Vec3A::from(lo), Vec3A::from(hi), i as u32, 1)
        })
        .collect();
    let binary = build_binary(&mut refs);
    Tree4::collapse(binary, refs)
}

/// A BLAS's root, its pointers relative to the BLAS region (which starts at `first`).
fn blas_root(b: &BuiltBlas, first: u64) -> BlasRoot {
    let moved = |p: NodePointer| NodePointer::new(p.address_64() as u64 + first, p.node_type());
    match (&b.image, &b.spheres) {
        (Some(image), _) => read_root(&image.bytes, image.root, moved),
        (None, Some((tree, _))) => {
            // The root's slots as `encode_user_leaves` will store them.
            let boxes = tree.nodes.len() as u64;
            let mut children = Vec::new();
            for s in 0..4 {
                let Some(slot) = tree.nodes[0].slots[s] else {
                    continue;
                };
                let (lo, hi) = tree.child_box(0, s);
                let pointer = match slot {
                    super::collapse::Slot::Node(c) => {
                        NodePointer::new(first + 2 * c as u64, NodeType::BoxF32)
                    }
                    super::collapse::Slot::Leaf(l) => {
                        NodePointer::new(first + 2 * boxes + l as u64, PROCEDURAL_NODE_TYPE)
                    }
                };
                children.push(RootChild {
                    pointer,
                    lo: lo.to_array(),
                    hi: hi.to_array(),
                });
            }
            bounded_root(children, NodePointer::new(first, NodeType::BoxF32))
        }
        _ => unreachable!("a BLAS is triangles or spheres"),
    }
}

/// The TLAS leaves: one per instance whose BLAS has a non-empty root box, or with
/// rebraiding, one per root child for the instances chosen to open.
fn fragments(input: &TwoLevelInput, roots: &[BlasRoot], rebraid: bool) -> Vec<Fragment> {
    let mut whole = Vec::with_capacity(input.instances.len());
    for (i, inst) in input.instances.iter().enumerate() {
        let root = &roots[inst.blas as usize];
        if (0..3).any(|a| root.lo[a] > root.hi[a] || root.lo[a].is_nan() || root.hi[a].is_nan()) {
            // An empty BLAS: no leaf (no ray can hit it).
            continue;
        }
        let (wlo, whi) = transform_box(&inst.object_to_world, root.lo, root.hi);
        whole.push(Fragment {
            instance: i as u32,
            entry: root.pointer,
            lo: wlo,
            hi: whi,
        });
    }
    if !rebraid || whole.is_empty() {
        return whole;
    }
    // GPURT's priority: log10 of the area the opening saves, + 1.
    let area = |lo: [f32; 3], hi: [f32; 3]| {
        let e = [0, 1, 2].map(|a| (hi[a] as f64 - lo[a] as f64).max(0.0));
        e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
    };
    let opened: Vec<Vec<Fragment>> = whole
        .iter()
        .map(|f| {
            let inst = &input.instances[f.instance as usize];
            roots[inst.blas as usize]
                .children
                .iter()
                .map(|c| {
                    let (wlo, whi) = transform_box(&inst.object_to_world, c.lo, c.hi);
                    Fragment {
                        instance: f.instance,
                        entry: c.pointer,
                        lo: wlo,
                        hi: whi,
                    }
                })
                .collect()
        })
        .collect();
    let priority: Vec<f64> = whole
        .iter()
        .zip(&opened)
        .map(|(f, kids)| {
            if kids.len() < 2 {
                return 0.0;
            }
            let saved = area(f.lo, f.hi) - kids.iter().map(|k| area(k.lo, k.hi)).sum::<f64>();
            (saved.max(0.0) + 1.0).log10()
        })
        .collect();
    let sum: f64 = priority.iter().sum();
    // The budget of new leaves, shared in proportion to the priorities (GPURT: one round,
    // `maxOpenings = budget / 3 - 1`).
    let budget = (REBRAID_FACTOR - 1) * whole.len();
    let max_openings = (budget / 3).saturating_sub(1) as f64;
    let mut out = Vec::with_capacity(whole.len() + budget);
    for ((f, kids), p) in whole.into_iter().zip(opened).zip(priority) {
        let openings = if sum > 0.0 {
            (max_openings * p / sum).floor()
        } else {
            0.0
        };
        if openings > 0.0 && kids.len() >= 2 {
            out.extend(kids);
        } else {
            out.push(f);
        }
    }
    out
}

/// The instance node of `instance` (index `index`), starting its BLAS at `entry`.
fn instance_node(
    instance: &InstanceInput,
    index: u32,
    entry: NodePointer,
    blas: &BuiltBlas,
) -> InstanceNode {
    let world_to_object =
        inverse_3x4(&instance.object_to_world).expect("checked: the matrix is invertible");
    let geometry_bit = match blas.kind {
        BlasKind::Triangles => crate::hw::instance::BASE_POINTER_TRIANGLE_BLAS,
        BlasKind::Spheres => crate::hw::instance::BASE_POINTER_PROCEDURAL_BLAS,
    };
    InstanceNode {
        world_to_object,
        id_and_mask: InstanceNode::pack_id_and_mask(instance.id, instance.mask),
        contribution_and_flags: InstanceNode::pack_contribution_and_flags(0, instance.flags),
        base_pointer_lo: 0,
        base_pointer_hi: geometry_bit,
        instance_index: index,
        blas_node_pointer: entry,
        blas_metadata_size: 0,
        padding: 0,
        object_to_world: instance.object_to_world,
    }
}

/// The scene as one flat mesh: every triangle instance's triangles, vertices transformed
/// in f64 (rounded to f32), in instance order; returns the mesh and, per triangle, its
/// instance and its primitive index in the instance's BLAS. Procedural BLASes are left out.
pub fn flatten(input: &TwoLevelInput) -> (Mesh, Vec<(u32, u32)>) {
    let mut mesh = Mesh {
        positions: Vec::new(),
        indices: Vec::new(),
    };
    let mut origin = Vec::new();
    for (i, inst) in input.instances.iter().enumerate() {
        let BlasGeometry::Triangles(blas) = &input.blases[inst.blas as usize].geometry else {
            continue;
        };
        let (a, t) = affine_f64(&inst.object_to_world);
        let base = mesh.positions.len() as u32;
        mesh.positions.extend(blas.positions.iter().map(|p| {
            let w = a * DVec3::new(p[0] as f64, p[1] as f64, p[2] as f64) + t;
            [w.x as f32, w.y as f32, w.z as f32]
        }));
        for (prim, tri) in blas.indices.iter().enumerate() {
            mesh.indices.push(tri.map(|v| v + base));
            origin.push((i as u32, prim as u32));
        }
    }
    (mesh, origin)
}
