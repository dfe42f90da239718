//! The encoder: the only code that writes hardware node bytes.
//!
//! Input: the 4-wide intermediate tree ([`Tree4`]). Steps, each in its own module:
//!
//! 1. pack the triangle references into triangle nodes (`packing`, fitting triangles
//!    together by `pack`);
//! 2. choose each box node's format (`box_formats`; FP16 boxes are rounded outward by
//!    `f16`);
//! 3. lay the nodes out, depth- or breadth-first, root at block 0, with the side tables
//!    (triangle node ordinals, parents) (`layout`);
//! 4. write the bytes through the `hw` node structs and sum the SAH (`write`);
//! 5. assemble the [`BvhImage`] and its [`Metrics`].
//!
//! The layout rules are in the module docs of [`crate::bvh`]. Every step is parallel and
//! gives the same result for any thread count.

mod f16;
mod layout;
mod pack;
mod packing;
mod write;

pub use crate::bvh::image::BvhImage;

use super::build::{half_area, C_BOX};
use super::cluster::Cluster;
use super::collapse::Tree4;
use super::metrics::Metrics;
use super::{BoxFormat, BuildOptions, Mesh, NodeOrder};
use crate::error::{Error, Result};
use crate::hw::{BvhDescriptor, NodePointer};
use f16::stored_box;
use glam::Vec3A;
pub use layout::TREELET_BLOCKS;
use layout::{box_type, layout_depth_first, layout_serial, Layout, LayoutInput};
use packing::{cluster_packs, pack_leaves, Packing, PACK_RUN};
use rayon::prelude::*;
use write::{stored_half_area, NodeWriter, WrittenNodes};

/// Most 64-byte blocks an image may have: node pointers hold the block in 29 bits.
const MAX_BLOCKS: u64 = 1 << 29;

/// Encodes `tree` into an image and measures it.
/// With `clusters` (leaf chains), leaf `l` of the tree is cluster `tree.leaves[l]`, stored
/// as one triangle node whose slots `0..n` hold it, pointed at with `type = n - 1`.
///
/// Errors: an image of more than 2^29 blocks (beyond 32-bit node pointers).
pub fn encode(
    tree: &Tree4,
    mesh: &Mesh,
    options: &BuildOptions,
    clusters: Option<&[Cluster]>,
) -> Result<(BvhImage, Metrics)> {
    let packs = pack_triangles(tree, mesh, options.triangles_per_node, clusters);
    let chains = clusters.is_some();
    let fp16 = box_formats(tree, options.box_format);
    let input = LayoutInput {
        tree,
        packs: &packs,
        fp16: &fp16,
        chains,
    };
    let layout = match options.node_order {
        NodeOrder::DepthFirst => layout_depth_first(&input),
        NodeOrder::BreadthFirst | NodeOrder::Treelets => layout_serial(&input, options.node_order),
    };
    if layout.blocks > MAX_BLOCKS {
        return Err(Error::Other(format!(
            "BVH image of {} 64-byte nodes does not fit 32-bit node pointers (2^29 max)",
            layout.blocks
        )));
    }
    let blocks = layout.blocks as usize;
    debug_assert_eq!(layout.box_parent.len(), blocks);

    // Written once, in order, just below: fresh huge pages cost more to fault in than they
    // save (`host` module docs; the dragon's first encode: 0.17 s without them, 0.21 s with,
    // median of 6 alternating rounds, with tracing from the image as fast).
    let mut bytes: Vec<u8> = crate::host::without_huge_pages(|| vec![0; blocks * 64]);
    let writer = NodeWriter {
        tree,
        packs: &packs,
        layout: &layout,
        fp16: &fp16,
        chains,
        return_mode: options.return_mode,
        root_area: root_area(tree, fp16[0]),
    };
    let written = writer.write(&mut bytes);
    let mut metrics = measure(&written, &packs, &layout, tree.leaves.is_empty());
    metrics.triangles = mesh.len();
    metrics.bytes = bytes.len();
    metrics.finish();

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
        root: NodePointer::new(layout.node_block[0] as u64, box_type(fp16[0])),
        triangle_node_ordinal: layout.triangle_node_ordinal,
        slot_primitive: packs.slot_primitives(),
        box_parent: layout.box_parent,
        slot_parent: layout.slot_parent,
        triangles_per_node: options.triangles_per_node,
        spatial_splits: options.spatial_splits && !chains,
        leaf_chains: chains,
    };
    Ok((image, metrics))
}

/// The tree's leaves packed into triangle nodes, in fixed runs of `PACK_RUN` leaves (in
/// parallel): by [`pack_leaves`] (at most `triangles_per_node` a node) or, with leaf chains,
/// one node per cluster.
fn pack_triangles(
    tree: &Tree4,
    mesh: &Mesh,
    triangles_per_node: u8,
    clusters: Option<&[Cluster]>,
) -> Packing {
    let runs = tree
        .leaves
        .par_chunks(PACK_RUN)
        .map(|leaves| match clusters {
            None => pack_leaves(leaves, mesh, triangles_per_node),
            Some(clusters) => cluster_packs(leaves, mesh, clusters),
        })
        .collect();
    Packing::new(runs)
}

/// Per box node: whether it is stored in FP16. With [`BoxFormat::Mixed`], a node is FP16
/// when the summed area of its rounded child boxes exceeds the exact sum by at most the
/// threshold.
fn box_formats(tree: &Tree4, format: BoxFormat) -> Vec<bool> {
    (0..tree.nodes.len())
        .into_par_iter()
        .map(|n| match format {
            BoxFormat::Fp32 => false,
            BoxFormat::Fp16 => true,
            BoxFormat::Mixed { max_area_growth } => {
                let (mut exact, mut rounded) = (0.0f64, 0.0f64);
                for (s, slot) in tree.nodes[n].slots.iter().enumerate() {
                    if slot.is_some() {
                        let (lo, hi) = tree.child_box(n, s);
                        exact += half_area(lo, hi) as f64;
                        rounded += stored_half_area(&stored_box(lo, hi, true)) as f64;
                    }
                }
                rounded <= exact * (1.0 + max_area_growth as f64)
            }
        })
        .collect()
}

/// Half the surface area of the root's box as stored (the union of its slots' stored
/// boxes; the root is FP16 when `fp16`).
fn root_area(tree: &Tree4, fp16: bool) -> f32 {
    let (mut lo, mut hi) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    for (s, slot) in tree.nodes[0].slots.iter().enumerate() {
        if slot.is_some() {
            let (l, h) = tree.child_box(0, s);
            let (l, h) = stored_box(l, h, fp16);
            lo = lo.min(Vec3A::from(l));
            hi = hi.max(Vec3A::from(h));
        }
    }
    half_area(lo, hi)
}

/// The metrics the writer, the packing and the layout measured (without the mesh and
/// image sizes and the derived figures). An empty tree costs the root's box test alone.
fn measure(written: &WrittenNodes, packs: &Packing, layout: &Layout, empty: bool) -> Metrics {
    let mut metrics = Metrics {
        sah_cost: if empty { C_BOX as f64 } else { written.sah },
        box16_nodes: written.box16,
        box32_nodes: written.box32,
        triangle_nodes: packs.len(),
        max_depth: layout.max_depth,
        box_slots_used: layout.box_slots_used,
        ..Metrics::default()
    };
    for run in &packs.runs {
        for (total, n) in metrics
            .triangles_per_node_histogram
            .iter_mut()
            .zip(run.histogram)
        {
            *total += n;
        }
    }
    metrics.triangle_references = packs
        .runs
        .iter()
        .flat_map(|run| run.histogram.iter().enumerate().map(|(i, n)| i * n))
        .sum();
    metrics
}
