//! The encoder: the only code that writes hardware node bytes.
//!
//! Input: the 4-wide intermediate tree ([`Tree4`]). Steps: pack the triangle references into
//! triangle nodes, choose each box node's format, lay the nodes out (depth- or
//! breadth-first, root at block 0), write the bytes, fill the side tables (primitive ids,
//! parents) and measure the result ([`Metrics`]). The layout rules are in the module docs of
//! [`crate::bvh`].

// Slot loops index several parallel per-slot arrays at once; ranges read better here.
#![allow(clippy::needless_range_loop)]

use super::build::{half_area, C_BOX, C_TRI};
use super::cluster::Cluster;
use super::collapse::{Slot, Tree4};
use super::metrics::Metrics;
use super::{BoxFormat, BuildOptions, Mesh, NodeOrder};
use crate::error::{Error, Result};
use crate::hw::node::{f16_round_down, f16_round_up};
use crate::hw::{
    ij_nibble, BoxNodeF16, BoxNodeF32, BvhDescriptor, IjControl, NodePointer, NodeType,
    TriangleNode, TriangleReturnMode, TRIANGLE_VERTICES,
};
use glam::Vec3A;
use half::f16;
use rayon::prelude::*;
use std::collections::VecDeque;

/// A hardware BVH image with its side tables.
#[derive(Clone, Debug, PartialEq)]
pub struct BvhImage {
    /// Node memory; node 0 (the root) at offset 0. Its length is a multiple of 64.
    pub bytes: Vec<u8>,
    /// Base 0, size = 64-byte blocks - 1, grow, sort and return mode from the options.
    pub descriptor: BvhDescriptor,
    /// Root node pointer (a box node at block 0: 0x4 or 0x5).
    pub root: u32,
    /// Per 64-byte block: the ordinal `o` of the triangle node starting there, or `u32::MAX`.
    pub triangle_node_ordinal: Vec<u32>,
    /// Per triangle slot `4 * o + k`: the primitive id, or `u32::MAX` for an unused slot.
    pub slot_primitive: Vec<u32>,
    /// Per 64-byte block: the parent pointer of the box node starting there
    /// (`NodePointer::INVALID` for the root and for other blocks).
    pub box_parent: Vec<u32>,
    /// Per triangle slot `4 * o + k`: the pointer of the box node referencing it.
    pub slot_parent: Vec<u32>,
    /// Most triangles per triangle node the image was built with.
    pub triangles_per_node: u8,
    /// Whether references were split (then one triangle may be stored several times).
    pub spatial_splits: bool,
    /// Leaf chains: a triangle pointer of type k stands for triangles k, k-1, ..., 0 of its
    /// node (see [`BuildOptions::leaf_chains`](super::BuildOptions::leaf_chains)).
    pub leaf_chains: bool,
}

impl BvhImage {
    /// Primitive id of a triangle hit, given the triangle node pointer the instruction was
    /// issued with and the 4 returned dwords. Mode 0: dword 2 (`word@60 + k`) indexes the
    /// side table; mode 1: the pointer does. `u32::MAX` if the pointer or id is not a
    /// triangle slot of this image.
    pub fn primitive_id(&self, triangle_pointer: u32, result: &[u32; 4]) -> u32 {
        let slot = match self.descriptor.triangle_return_mode {
            TriangleReturnMode::TriangleId => Some(result[2] as usize),
            TriangleReturnMode::Barycentrics => self.slot_of(triangle_pointer),
        };
        slot.and_then(|s| self.slot_primitive.get(s).copied())
            .unwrap_or(u32::MAX)
    }

    /// The side-table slot `4 * o + k` of a triangle pointer.
    pub fn slot_of(&self, triangle_pointer: u32) -> Option<usize> {
        let p = NodePointer::from_u32(triangle_pointer);
        let k = p.node_type().triangle_index()?;
        let o = *self.triangle_node_ordinal.get(p.address_64() as usize)?;
        (o != u32::MAX).then(|| 4 * o as usize + k)
    }

    /// Parent node pointer of a node (for stackless walk-back traversals), `None` for the
    /// root and for pointers that name no node of this image.
    pub fn parent(&self, node_pointer: u32) -> Option<u32> {
        let p = NodePointer::from_u32(node_pointer);
        let parent = if p.node_type().is_box() {
            *self.box_parent.get(p.address_64() as usize)?
        } else {
            *self.slot_parent.get(self.slot_of(node_pointer)?)?
        };
        (parent != NodePointer::INVALID).then_some(parent)
    }

    /// The triangle pointers a box child pointer stands for, in the order to test them:
    /// the pointer itself, except with leaf chains, where type k expands to the pointers of
    /// triangles k, k-1, ..., 0 of the same node. Empty for box and INVALID pointers.
    pub fn leaf_triangles(&self, pointer: u32) -> impl Iterator<Item = u32> {
        let k = if pointer == NodePointer::INVALID {
            None
        } else {
            NodePointer::from_u32(pointer).node_type().triangle_index()
        };
        let (first, last) = match k {
            None => (1, 0),
            Some(k) if self.leaf_chains => (0, k as u32),
            Some(k) => (k as u32, k as u32),
        };
        let base = pointer & !7;
        (first..=last).rev().map(move |j| base | j)
    }

    /// Number of 64-byte blocks (a box32 node counts two).
    pub fn node_count_64(&self) -> usize {
        self.bytes.len() / 64
    }
}

/// A triangle node being packed.
#[derive(Clone, Copy)]
struct Pack {
    /// Vertex bit patterns; `None` while free.
    verts: [Option<[u32; 3]>; 5],
    /// Per slot: (primitive id, rotation r): mesh vertex j sits at node vertex
    /// `TRIANGLE_VERTICES[k][(j + r) % 3]`.
    used: [Option<(u32, u8)>; 4],
    count: u8,
}

// `Pack::try_place` relies on every slot using node vertex 2.
const _: () = {
    let mut k = 0;
    while k < 4 {
        let v = TRIANGLE_VERTICES[k];
        assert!(v[0] == 2 || v[1] == 2 || v[2] == 2);
        k += 1;
    }
};

const EMPTY_PACK: Pack = Pack {
    verts: [None; 5],
    used: [None; 4],
    count: 0,
};

impl Pack {
    /// Places `tri` (vertex bit patterns in mesh order) in a free slot if it fits; returns
    /// the slot.
    fn try_place(&mut self, tri: &[[u32; 3]; 3], prim: u32) -> Option<usize> {
        // Every slot uses node vertex 2 (`TRIANGLE_VERTICES`): a triangle without it cannot
        // fit anywhere, a cheap early out for most tries.
        if let Some(centre) = self.verts[2] {
            if !tri.contains(&centre) {
                return None;
            }
        }
        for k in 0..4 {
            if self.used[k].is_some() {
                continue;
            }
            let hw = TRIANGLE_VERTICES[k];
            for r in 0..3 {
                let fits = (0..3).all(|j| match self.verts[hw[(j + r) % 3]] {
                    None => true,
                    Some(v) => v == tri[j],
                });
                if fits {
                    for j in 0..3 {
                        self.verts[hw[(j + r) % 3]] = Some(tri[j]);
                    }
                    self.used[k] = Some((prim, r as u8));
                    self.count += 1;
                    return Some(k);
                }
            }
        }
        None
    }
}

/// How many recently opened triangle nodes a triangle may join.
const PACK_WINDOW: usize = 8;

/// Packs the leaves (in order) into triangle nodes. Returns the packs and, per leaf, its
/// (pack, slot k).
fn pack_leaves(tree: &Tree4, mesh: &Mesh, max_per_node: u8) -> (Vec<Pack>, Vec<(u32, u8)>) {
    let mut packs: Vec<Pack> = Vec::with_capacity(tree.leaves.len() / max_per_node as usize + 1);
    let mut place = Vec::with_capacity(tree.leaves.len());
    // Vertex bit patterns of every leaf, gathered once (the look-ahead reads them again).
    let bits: Vec<[[u32; 3]; 3]> = tree
        .leaves
        .par_iter()
        .map(|&prim| mesh.triangle(prim).map(|v| v.map(f32::to_bits)))
        .collect();
    for (leaf, &prim) in tree.leaves.iter().enumerate() {
        let tri = bits[leaf];
        let mut placed = None;
        if max_per_node > 1 {
            let lo = packs.len().saturating_sub(PACK_WINDOW);
            for (p, pack) in packs.iter_mut().enumerate().skip(lo) {
                if pack.count < max_per_node {
                    if let Some(k) = pack.try_place(&tri, prim) {
                        placed = Some((p, k));
                        break;
                    }
                }
            }
        }
        let (p, k) = placed.unwrap_or_else(|| {
            // Open a node with the triangle in slot 0, rotated so that the vertex shared
            // with most of the next few leaves becomes V2, the vertex all four slots share.
            let mut best_r = 0;
            if max_per_node > 1 {
                let mut best_count = 0;
                let ahead = &bits[leaf + 1..(leaf + 1 + PACK_WINDOW).min(bits.len())];
                for r in 0..3 {
                    let centre = tri[(5 - r) % 3];
                    let count = ahead.iter().filter(|t| t.contains(&centre)).count();
                    if count > best_count {
                        best_count = count;
                        best_r = r;
                    }
                }
            }
            let mut pack = EMPTY_PACK;
            let hw = TRIANGLE_VERTICES[0];
            for j in 0..3 {
                pack.verts[hw[(j + best_r) % 3]] = Some(tri[j]);
            }
            pack.used[0] = Some((prim, best_r as u8));
            pack.count = 1;
            packs.push(pack);
            (packs.len() - 1, 0)
        });
        place.push((p as u32, k as u8));
    }
    (packs, place)
}

/// One pack per cluster, in leaf order; leaf l is pointed at with type `count - 1`.
fn cluster_packs(tree: &Tree4, mesh: &Mesh, clusters: &[Cluster]) -> (Vec<Pack>, Vec<(u32, u8)>) {
    let mut packs = Vec::with_capacity(tree.leaves.len());
    let mut place = Vec::with_capacity(tree.leaves.len());
    for (l, &ci) in tree.leaves.iter().enumerate() {
        let c = &clusters[ci as usize];
        let mut pack = EMPTY_PACK;
        for k in 0..c.count as usize {
            let (prim, r) = c.tris[k];
            let tri = mesh.triangle(prim).map(|v| v.map(f32::to_bits));
            let hw = TRIANGLE_VERTICES[k];
            for j in 0..3 {
                let v = &mut pack.verts[hw[(j + r as usize) % 3]];
                assert!(
                    v.is_none() || *v == Some(tri[j]),
                    "cluster {ci} does not fit the node connectivity"
                );
                *v = Some(tri[j]);
            }
            pack.used[k] = Some((prim, r));
        }
        pack.count = c.count;
        packs.push(pack);
        place.push((l as u32, c.count - 1));
    }
    (packs, place)
}

/// The f32 box as the hardware will see it for a node of type `fp16`.
fn stored_box(min: Vec3A, max: Vec3A, fp16: bool) -> ([f32; 3], [f32; 3]) {
    if fp16 {
        (
            min.to_array().map(|c| f16_round_down(c).to_f32()),
            max.to_array().map(|c| f16_round_up(c).to_f32()),
        )
    } else {
        (min.to_array(), max.to_array())
    }
}

fn half_area_arr(b: &([f32; 3], [f32; 3])) -> f32 {
    half_area(Vec3A::from(b.0), Vec3A::from(b.1))
}

/// Encodes `tree` into an image and measures it.
/// With `clusters` (leaf chains), leaf `l` of the tree is cluster `tree.leaves[l]`, stored
/// as one triangle node whose slots `0..n` hold it, pointed at with `type = n - 1`.
pub fn encode(
    tree: &Tree4,
    mesh: &Mesh,
    options: &BuildOptions,
    clusters: Option<&[Cluster]>,
) -> Result<(BvhImage, Metrics)> {
    let (packs, leaf_place) = match clusters {
        None => pack_leaves(tree, mesh, options.triangles_per_node),
        Some(clusters) => cluster_packs(tree, mesh, clusters),
    };
    let chains = clusters.is_some();

    // Box formats.
    let fp16: Vec<bool> = tree
        .nodes
        .par_iter()
        .map(|n| match options.box_format {
            BoxFormat::Fp32 => false,
            BoxFormat::Fp16 => true,
            BoxFormat::Mixed { max_area_growth } => {
                let (mut exact, mut rounded) = (0.0f64, 0.0f64);
                for s in 0..4 {
                    if n.slots[s].is_some() {
                        let (lo, hi) = n.boxes[s];
                        exact += half_area(lo, hi) as f64;
                        rounded += half_area_arr(&stored_box(lo, hi, true)) as f64;
                    }
                }
                rounded <= exact * (1.0 + max_area_growth as f64)
            }
        })
        .collect();

    // Layout: block address of every box node and every pack.
    const UNPLACED: u32 = u32::MAX;
    let mut node_block = vec![UNPLACED; tree.nodes.len()];
    let mut pack_block = vec![UNPLACED; packs.len()];
    let mut next_block: u64 = 0;
    let mut place_node = |n: usize, next_block: &mut u64, pack_block: &mut Vec<u32>| {
        node_block[n] = *next_block as u32;
        *next_block += if fp16[n] { 1 } else { 2 };
        for slot in tree.nodes[n].slots.iter().flatten() {
            if let Slot::Leaf(l) = *slot {
                let p = leaf_place[l as usize].0 as usize;
                if pack_block[p] == UNPLACED {
                    pack_block[p] = *next_block as u32;
                    *next_block += 1;
                }
            }
        }
    };
    match options.node_order {
        NodeOrder::DepthFirst => {
            let mut stack = vec![0usize];
            while let Some(n) = stack.pop() {
                place_node(n, &mut next_block, &mut pack_block);
                for slot in tree.nodes[n].slots.iter().rev().flatten() {
                    if let Slot::Node(c) = *slot {
                        stack.push(c as usize);
                    }
                }
            }
        }
        NodeOrder::BreadthFirst => {
            let mut queue = VecDeque::from([0usize]);
            while let Some(n) = queue.pop_front() {
                place_node(n, &mut next_block, &mut pack_block);
                for slot in tree.nodes[n].slots.iter().flatten() {
                    if let Slot::Node(c) = *slot {
                        queue.push_back(c as usize);
                    }
                }
            }
        }
    }
    let blocks = next_block;
    if blocks > 1 << 29 {
        return Err(Error::Other(format!(
            "BVH image of {blocks} 64-byte nodes does not fit 32-bit node pointers (2^29 max)"
        )));
    }
    let blocks = blocks as usize;
    let node_pointer = |n: usize| {
        let ty = if fp16[n] {
            NodeType::BoxF16
        } else {
            NodeType::BoxF32
        };
        NodePointer::new(node_block[n] as u64, ty).to_u32()
    };
    let leaf_pointer = |l: u32| {
        let (p, k) = leaf_place[l as usize];
        NodePointer::new(
            pack_block[p as usize] as u64,
            NodeType::triangle(k as usize),
        )
        .to_u32()
    };

    let mut bytes = vec![0u8; blocks * 64];
    let mut triangle_node_ordinal = vec![u32::MAX; blocks];
    let mut slot_primitive = vec![u32::MAX; 4 * packs.len()];
    let mut box_parent = vec![NodePointer::INVALID; blocks];
    let mut slot_parent = vec![NodePointer::INVALID; 4 * packs.len()];
    let mut metrics = Metrics::default();

    // Box nodes.
    let mut depth = vec![0u32; tree.nodes.len()];
    depth[0] = 1;
    let mut root_area = 0.0f32;
    // Box-node visit cost: the root is always visited; others when their parent slot is hit.
    let mut sah = C_BOX as f64;
    for (n, node) in tree.nodes.iter().enumerate() {
        let is16 = fp16[n];
        let here = node_pointer(n);
        let mut children = [NodePointer::INVALID; 4];
        let mut boxes = [([f32::NAN; 3], [f32::NAN; 3]); 4];
        let mut slots_used = 0;
        let mut leaf_tris = [1u32; 4];
        for s in 0..4 {
            let Some(slot) = node.slots[s] else { continue };
            slots_used += 1;
            let (lo, hi) = node.boxes[s];
            boxes[s] = stored_box(lo, hi, is16);
            children[s] = match slot {
                Slot::Node(c) => {
                    let c = c as usize;
                    box_parent[node_block[c] as usize] = here;
                    depth[c] = depth[n] + 1;
                    node_pointer(c)
                }
                Slot::Leaf(l) => {
                    let (p, k) = leaf_place[l as usize];
                    let first = if chains { 0 } else { k };
                    for j in first..=k {
                        slot_parent[4 * p as usize + j as usize] = here;
                    }
                    leaf_tris[s] = k as u32 + 1 - first as u32;
                    leaf_pointer(l)
                }
            };
        }
        // Metrics for this node.
        let area_of = |s: usize| half_area_arr(&boxes[s]);
        if n == 0 {
            let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
            for s in 0..4 {
                if node.slots[s].is_some() {
                    lo = lo.min(Vec3A::from(boxes[s].0));
                    hi = hi.max(Vec3A::from(boxes[s].1));
                }
            }
            root_area = half_area(lo, hi);
        }
        for s in 0..4 {
            match node.slots[s] {
                Some(Slot::Node(_)) => sah += (C_BOX * area_of(s)) as f64 / root_area as f64,
                Some(Slot::Leaf(_)) => {
                    sah += (C_TRI * leaf_tris[s] as f32 * area_of(s)) as f64 / root_area as f64
                }
                None => {}
            }
        }
        metrics.box_slots_used += slots_used;
        metrics.max_depth = metrics.max_depth.max(depth[n] as usize);
        if is16 {
            metrics.box16_nodes += 1;
        } else {
            metrics.box32_nodes += 1;
        }

        let offset = node_block[n] as usize * 64;
        if is16 {
            let b = BoxNodeF16 {
                children,
                boxes: std::array::from_fn(|s| {
                    if node.slots[s].is_some() {
                        let (lo, hi) = boxes[s];
                        [lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]]
                            .map(|c| f16::from_f32(c).to_bits())
                    } else {
                        [f16::NAN.to_bits(); 6]
                    }
                }),
            };
            bytes[offset..offset + 64].copy_from_slice(bytemuck::bytes_of(&b));
        } else {
            let b = BoxNodeF32 {
                children,
                boxes: std::array::from_fn(|s| {
                    let (lo, hi) = boxes[s];
                    [lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]]
                }),
                user: [0; 4],
            };
            bytes[offset..offset + 128].copy_from_slice(bytemuck::bytes_of(&b));
        }
    }
    if tree.leaves.is_empty() {
        sah = C_BOX as f64;
    }

    // Triangle nodes.
    for (o, pack) in packs.iter().enumerate() {
        let mut node = TriangleNode {
            vertices: pack
                .verts
                .map(|v| v.map_or([f32::NAN; 3], |b| b.map(f32::from_bits))),
            word: 0,
        };
        let mut ij = IjControl(0);
        for (k, used) in pack.used.iter().enumerate() {
            let Some((prim, r)) = *used else { continue };
            slot_primitive[4 * o + k] = prim;
            let hw = TRIANGLE_VERTICES[k];
            let order = std::array::from_fn(|j| hw[(j + r as usize) % 3]);
            ij = ij.with_nibble(k, ij_nibble(k, order).expect("a rotation of the slot"));
        }
        node.word = match options.return_mode {
            TriangleReturnMode::TriangleId => 4 * o as u32,
            TriangleReturnMode::Barycentrics => ij.0,
        };
        let block = pack_block[o] as usize;
        triangle_node_ordinal[block] = o as u32;
        bytes[block * 64..block * 64 + 64].copy_from_slice(bytemuck::bytes_of(&node));
        metrics.triangles_per_node_histogram[pack.count as usize] += 1;
        metrics.triangle_nodes += 1;
    }

    let descriptor = BvhDescriptor {
        base_address_256: 0,
        box_grow_ulps: options.box_grow_ulps,
        box_sort_enable: options.box_sort,
        size_minus_one: blocks as u64 - 1,
        triangle_return_mode: options.return_mode,
        ..BvhDescriptor::default()
    };
    let image = BvhImage {
        bytes,
        descriptor,
        root: node_pointer(0),
        triangle_node_ordinal,
        slot_primitive,
        box_parent,
        slot_parent,
        triangles_per_node: options.triangles_per_node,
        spatial_splits: options.spatial_splits && !chains,
        leaf_chains: chains,
    };
    metrics.sah_cost = sah;
    metrics.triangle_references = packs.iter().map(|p| p.count as usize).sum();
    metrics.triangles = mesh.len();
    metrics.bytes = image.bytes.len();
    metrics.finish();
    Ok((image, metrics))
}
