//! Quality metrics of an encoded BVH.

use serde::Serialize;

/// What the encoder measured.
///
/// SAH cost: expected TD instructions for a ray that hits the root box, with the surface
/// area heuristic and the costs [`C_BOX`](super::build::C_BOX) = 1 per box-node instruction
/// (four boxes in one TD clock) and [`C_TRI`](super::build::C_TRI) = 1 per triangle
/// instruction (one triangle per TD clock): `C_BOX + sum over non-root box nodes of C_BOX *
/// A(slot box) / A(root) + sum over triangle slots of C_TRI * A(slot box) / A(root)`, with the
/// boxes as stored (FP16 boxes after outward rounding).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub sah_cost: f64,
    pub box16_nodes: usize,
    pub box32_nodes: usize,
    pub triangle_nodes: usize,
    /// Triangles in the mesh (including dropped ones).
    pub triangles: usize,
    /// Triangle references in the tree (more than the triangles with spatial splits).
    pub triangle_references: usize,
    /// Image size.
    pub bytes: usize,
    /// `bytes / triangles`.
    pub bytes_per_triangle: f64,
    /// `triangles_per_node_histogram[i]`: triangle nodes holding i triangles (i = 1..=4).
    pub triangles_per_node_histogram: [usize; 5],
    /// Box-node levels on the longest root-to-leaf path (the root alone is 1).
    pub max_depth: usize,
    /// Used child slots of all box nodes.
    pub box_slots_used: usize,
    /// `box_slots_used / (4 * box nodes)`.
    pub fill_rate: f64,
}

impl Metrics {
    /// Fills the derived figures.
    pub fn finish(&mut self) {
        self.bytes_per_triangle = if self.triangles == 0 {
            0.0
        } else {
            self.bytes as f64 / self.triangles as f64
        };
        let boxes = self.box16_nodes + self.box32_nodes;
        self.fill_rate = if boxes == 0 {
            0.0
        } else {
            self.box_slots_used as f64 / (4 * boxes) as f64
        };
        if !self.sah_cost.is_finite() {
            // A root box of zero area (all triangles in one point): every slot is hit.
            self.sah_cost = (boxes as f64) + self.triangle_references as f64;
        }
    }

    /// Average triangles per triangle node.
    pub fn triangles_per_triangle_node(&self) -> f64 {
        if self.triangle_nodes == 0 {
            0.0
        } else {
            self.triangle_references as f64 / self.triangle_nodes as f64
        }
    }
}
