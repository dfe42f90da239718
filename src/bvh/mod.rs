//! Hardware-agnostic BVH build (binned SAH, optional spatial splits, SAH-optimal 4-wide
//! collapse), the encoder that writes the hardware byte image, quality metrics, a validator
//! that reads the image back, and the scalar reference traversal.
//!
//! Pipeline (`STYLE.md` principle 2: build generic, encode late, validate back):
//!
//! ```text
//! Mesh -> PrimRefs (NaN triangles dropped, optional pre-splits)
//!      -> binary tree by binned SAH (build/, rayon, deterministic)
//!      -> 4-wide tree, SAH-optimal collapse (collapse.rs)
//!      -> hardware bytes + side tables (encode/, the only writer of node bytes; image.rs)
//!      -> validate(image, mesh) (validate.rs), metrics (metrics.rs)
//! ```
//!
//! # Image layout
//!
//! - Node 0 (the root, always a box node) sits at byte 0 of [`BvhImage::bytes`]; the
//!   descriptor has base 0 and `size = 64-byte blocks - 1`, so pointers are plain block
//!   offsets. The root pointer is therefore `0x4` (FP16 root) or `0x5` (FP32 root).
//! - Every triangle reference has its own child slot in a box node, with the triangle's own
//!   box, and its pointer names the triangle inside a triangle node (`type = k`). A leaf with
//!   several triangles is therefore several child slots; several slots (of one box node or of
//!   neighbouring ones) point to the same triangle node with different `k`. There are no
//!   chains. Triangles are packed into a node only when their vertices fit the fixed
//!   connectivity (tri0 V0 V1 V2, tri1 V1 V3 V2, tri2 V2 V3 V4, tri3 V2 V4 V0), storing each
//!   triangle as a rotation of the mesh's own vertex order (never a reflection: the sign of
//!   `t_denom` keeps the mesh's winding). Vertices no triangle uses are NaN.
//! - With [`BuildOptions::leaf_chains`] a box slot instead points at a whole fan cluster
//!   stored in slots `0..n` of one triangle node, with `type = n - 1` meaning "triangles
//!   n-1 down to 0" (GPURT's triangle-pair convention, generalised to four); traversals expand
//!   such a pointer with [`BvhImage::leaf_triangles`]. This is what brings FP16 images with 4
//!   triangles per node under 40 bytes per triangle (one box slot per node, not per triangle).
//! - Empty child slots: pointer `0xFFFFFFFF` and NaN bounds (which always miss,
//!   `semantics.md` 5.4), never a hittable box with an INVALID pointer.
//! - Mode 0: word@60 of the `o`-th triangle node (in packing order) is `4 * o`, so the
//!   returned id `word + k` indexes the side table [`BvhImage::slot_primitive`].
//!   Mode 1: word@60 is the IJ control word that makes I and J the weights of the
//!   triangle's second and third vertex in the mesh's order; the primitive id comes from the
//!   same side table, found through the pointer.
//! - Parent pointers are side tables (not in the image): one per 64-byte block for box nodes,
//!   one per triangle slot for triangles.

pub mod build;
pub mod cluster;
pub mod collapse;
pub mod encode;
pub mod gltf_mesh;
pub mod image;
pub mod mesh;
pub mod metrics;
pub mod optimize;
pub mod ply;
pub mod query;
pub mod split;
pub mod two_level;
pub mod validate;

pub use image::BvhImage;
pub use mesh::Mesh;
pub use metrics::Metrics;
pub use query::{
    closest_hit_brute_force, closest_hit_scalar, plane_distance_f64, ray_registers,
    refine_hit_distance, refined_distance,
};
pub use validate::{validate, ValidationError};

use crate::error::{Error, Result};
use crate::hw::TriangleReturnMode;
use build::PrimRef;
use glam::Vec3A;
use rayon::prelude::*;
use std::time::Instant;

/// Which box node format the encoder writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BoxFormat {
    /// All box nodes FP32 (type 5, 128 bytes).
    Fp32,
    /// All box nodes FP16 (type 4, 64 bytes), min rounded toward -inf, max toward +inf.
    Fp16,
    /// FP16 where the summed surface area of the node's rounded child boxes exceeds the
    /// exact one by at most `max_area_growth` (0.05 = 5 %), FP32 elsewhere.
    Mixed { max_area_growth: f32 },
}

/// Order of the nodes in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeOrder {
    /// Pre-order: a box node, then the triangle nodes its slots open, then its box children's
    /// subtrees in slot order.
    DepthFirst,
    /// Level by level; a box node's new triangle nodes follow it directly.
    BreadthFirst,
    /// Treelets: the tree cut into subtrees of at most
    /// [`TREELET_BLOCKS`](encode::TREELET_BLOCKS) blocks (2 KB), each laid out level by
    /// level, the treelets in depth-first order. A ray that enters a treelet finds the
    /// nodes it visits next on lines it just fetched.
    Treelets,
}

/// Build and encoder options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BuildOptions {
    pub box_format: BoxFormat,
    /// Most triangles stored per triangle node: 1, 2 or 4.
    pub triangles_per_node: u8,
    /// Descriptor bit 120 and the meaning of word@60.
    pub return_mode: TriangleReturnMode,
    pub node_order: NodeOrder,
    /// Split the references of large triangles before the build (early split clipping, see
    /// [`split`]).
    pub spatial_splits: bool,
    /// Descriptor box growth (`box_grow_value`, ULPs; `semantics.md` 5.2). 0 by default, as
    /// the Xbox DXR runtime sets it. The box test and the watertight triangle test round
    /// differently, so without growth a ray meeting a mesh exactly on an edge that lies on a
    /// box face can miss both boxes beside it; 3 ULPs or more (GPURT's default is 6) closes
    /// those cracks (`tests/bvh_traversal.rs`, `box_growth_closes_the_cracks_between_flat_boxes`).
    pub box_grow_ulps: u8,
    /// Descriptor box sorting.
    pub box_sort: bool,
    /// Leaf chains (only with `triangles_per_node` 2 or 4; [`build()`](fn@build) refuses them with 1):
    /// triangles are first grouped into fan clusters ([`cluster`]) stored in slots `0..n` of
    /// one triangle node, and a single box child slot points at the cluster with
    /// `type = n - 1`, meaning "triangles n-1 down to 0 of this node" (the generalisation of
    /// GPURT's triangle pairs). Traversals issue the instruction once per triangle of the
    /// chain: see [`BvhImage::leaf_triangles`]. Off by default: then every pointer names
    /// exactly one triangle. Spatial splits are ignored with leaf chains.
    pub leaf_chains: bool,
    /// Optimize the binary tree after the top-down build by moving subtrees to where they
    /// add the least surface area ([`optimize`]). Off by default: it is sequential and takes
    /// 2-4 times a single-threaded build (dragon: 0.46 s, then 1.2 s). It gains most on scenes
    /// of mixed triangle sizes (sponza's camera rays: 30.4 TD clocks a ray without, 22.6
    /// with) and little on even meshes (the bunny's: 8.80 either way).
    pub optimize: bool,
}

impl Default for BuildOptions {
    /// Mixed boxes (FP16 where the area grows at most 5 %, as drivers do for BLASes), two
    /// triangles per node (the console driver's choice), return mode 1 (barycentrics, as the
    /// Xbox DXR runtime), depth-first, no spatial splits, no box growth, sorting on, no leaf
    /// chains (one pointer, one triangle), no optimization of the tree.
    fn default() -> Self {
        BuildOptions {
            box_format: BoxFormat::Mixed {
                max_area_growth: 0.05,
            },
            triangles_per_node: 2,
            return_mode: TriangleReturnMode::Barycentrics,
            node_order: NodeOrder::DepthFirst,
            spatial_splits: false,
            box_grow_ulps: 0,
            box_sort: true,
            leaf_chains: false,
            optimize: false,
        }
    }
}

impl std::fmt::Display for BuildOptions {
    /// The options in words, as the CLI flags name them: "mixed FP16/FP32 boxes (at most
    /// 5 % more area), 2 triangles per node, return mode 1 (barycentrics), depth-first
    /// order, box sorting on, no box growth, no spatial splits, no leaf chains, no
    /// optimization".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.box_format {
            BoxFormat::Fp32 => write!(f, "FP32 boxes")?,
            BoxFormat::Fp16 => write!(f, "FP16 boxes")?,
            BoxFormat::Mixed { max_area_growth } => write!(
                f,
                "mixed FP16/FP32 boxes (at most {} % more area)",
                max_area_growth * 100.0
            )?,
        }
        let plural = if self.triangles_per_node == 1 {
            ""
        } else {
            "s"
        };
        write!(
            f,
            ", {} triangle{plural} per node, return mode {} ({})",
            self.triangles_per_node,
            self.return_mode as u8,
            match self.return_mode {
                TriangleReturnMode::TriangleId => "triangle id",
                TriangleReturnMode::Barycentrics => "barycentrics",
            }
        )?;
        let order = match self.node_order {
            NodeOrder::DepthFirst => "depth-first",
            NodeOrder::BreadthFirst => "breadth-first",
            NodeOrder::Treelets => "treelet",
        };
        write!(f, ", {order} order")?;
        write!(
            f,
            ", box sorting {}",
            if self.box_sort { "on" } else { "off" }
        )?;
        match self.box_grow_ulps {
            0 => write!(f, ", no box growth")?,
            n => write!(f, ", boxes grown by {n} ULPs")?,
        }
        let on_off = |on: bool, what: &str| {
            if on {
                what.to_string()
            } else {
                format!("no {what}")
            }
        };
        write!(
            f,
            ", {}, {}, {}",
            on_off(self.spatial_splits, "spatial splits"),
            on_off(self.leaf_chains, "leaf chains"),
            on_off(self.optimize, "optimization")
        )
    }
}

/// A built BVH: the image, its metrics and timings.
#[derive(Clone, Debug)]
pub struct BuiltBvh {
    pub image: BvhImage,
    pub metrics: Metrics,
    /// Hardware-agnostic build (references, binary tree, collapse), seconds.
    pub build_seconds: f64,
    /// Encoding to bytes (packing, layout, side tables) and metrics, seconds.
    pub encode_seconds: f64,
    /// Triangles left out because a vertex is NaN or infinite.
    pub dropped_nan_triangles: usize,
    /// References the binary tree was built over: triangles (minus dropped ones), more with
    /// spatial splits, or clusters with leaf chains.
    pub references: usize,
}

/// Builds and encodes `mesh`.
///
/// Errors: `triangles_per_node` not 1, 2 or 4; `leaf_chains` with `triangles_per_node` 1; a
/// negative or NaN mixed threshold; an index out of range; an image too large for 32-bit
/// node pointers.
pub fn build(mesh: &Mesh, options: &BuildOptions) -> Result<BuiltBvh> {
    if !matches!(options.triangles_per_node, 1 | 2 | 4) {
        return Err(Error::field(
            "triangles_per_node",
            format!("is {}, must be 1, 2 or 4", options.triangles_per_node),
        ));
    }
    if options.leaf_chains && options.triangles_per_node == 1 {
        return Err(Error::field(
            "leaf_chains (--chains)",
            "needs triangles_per_node (--tris-per-node) 2 or 4, not 1: a chain packs 2 or 4 \
             triangles into one node",
        ));
    }
    if let BoxFormat::Mixed { max_area_growth } = options.box_format {
        if max_area_growth.is_nan() || max_area_growth < 0.0 {
            return Err(Error::field(
                "max_area_growth",
                format!("is {max_area_growth}, must be >= 0"),
            ));
        }
    }
    mesh.check_indices()?;
    let start = Instant::now();
    let chains = options.leaf_chains && options.triangles_per_node > 1;
    let (mut refs, dropped_nan_triangles) = build::triangle_refs(mesh);
    let mut clusters = Vec::new();
    if chains {
        let prims: Vec<u32> = refs.iter().map(|r| r.prim()).collect();
        clusters = cluster::fan_clusters(mesh, &prims, options.triangles_per_node);
        refs = clusters
            .par_iter()
            .enumerate()
            .map(|(i, c)| {
                let (mut min, mut max) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
                for &(p, _) in &c.tris[..c.count as usize] {
                    for v in mesh.triangle(p) {
                        min = min.min(Vec3A::from(v));
                        max = max.max(Vec3A::from(v));
                    }
                }
                PrimRef::new(min, max, i as u32, c.count as u32)
            })
            .collect();
    } else if options.spatial_splits {
        refs = split::presplit(mesh, refs);
    }
    let references = refs.len();
    let tree = if refs.is_empty() {
        collapse::Tree4::empty()
    } else {
        let mut binary = build::build_binary(&mut refs);
        if options.optimize {
            optimize::optimize(&mut binary, &refs);
        }
        collapse::Tree4::collapse(binary, refs)
    };
    let build_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let (image, metrics) = encode::encode(&tree, mesh, options, chains.then_some(&clusters[..]))?;
    let encode_seconds = start.elapsed().as_secs_f64();
    Ok(BuiltBvh {
        image,
        metrics,
        build_seconds,
        encode_seconds,
        dropped_nan_triangles,
        references,
    })
}
