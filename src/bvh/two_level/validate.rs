//! The validator of two-level images: the descriptor; the TLAS walked from the root (FP32
//! box nodes inside the TLAS blocks, instance nodes whose fields are the instance's, whose
//! world-to-object matrix is the rounded inverse of its object-to-world one, whose BLAS node
//! lies in that instance's BLAS, and whose slot box contains the BLAS entry's box
//! transformed; parents in the side table); every instance reachable; each triangle BLAS
//! moved back out of the image and checked by [`crate::bvh::validate`] against its mesh;
//! each procedural BLAS walked (leaves inside its blocks, each sphere once, its box stored
//! in the leaf and contained by the parent slot's box).

use super::relocate::extract;
use super::{
    inverse_3x4, transform_box, BlasGeometry, BlasKind, BlasLevel, TwoLevelBvh, TwoLevelInput,
};
use crate::bvh::{validate, ValidationError};
use crate::hw::{
    BoxNodeF16, BoxNodeF32, GeometryFlags, InstanceNode, NodePointer, NodeType, ProceduralNode,
    INSTANCE_NODE_TYPE, PROCEDURAL_NODE_TYPE,
};

type Bounds = ([f32; 3], [f32; 3]);

fn contains(outer: &Bounds, inner: &Bounds) -> bool {
    (0..3).all(|a| outer.0[a] <= inner.0[a] && inner.1[a] <= outer.1[a])
}

/// Reads a box node's used slots: (slot, child pointer, stored box).
fn box_slots(bytes: &[u8], node: NodePointer) -> Option<Vec<(usize, NodePointer, Bounds)>> {
    let at = 64 * node.address_64() as usize;
    match node.node_type() {
        NodeType::BoxF32 => {
            let n: BoxNodeF32 = bytemuck::pod_read_unaligned(bytes.get(at..at + 128)?);
            Some(
                (0..4)
                    .filter(|&s| !n.children[s].is_invalid())
                    .map(|s| (s, n.children[s], n.child_box(s)))
                    .collect(),
            )
        }
        NodeType::BoxF16 => {
            let n: BoxNodeF16 = bytemuck::pod_read_unaligned(bytes.get(at..at + 64)?);
            Some(
                (0..4)
                    .filter(|&s| !n.children[s].is_invalid())
                    .map(|s| (s, n.children[s], n.child_box(s)))
                    .collect(),
            )
        }
        _ => None,
    }
}

struct Checker<'a> {
    bvh: &'a TwoLevelBvh,
    input: &'a TwoLevelInput,
    errors: Vec<ValidationError>,
}

impl Checker<'_> {
    fn error(&mut self, node: Option<NodePointer>, child: Option<usize>, message: String) {
        self.errors.push(ValidationError {
            node: node.map(|p| (64 * p.address_64() as u64, p.node_type())),
            child,
            triangle: None,
            message,
        });
    }

    /// The box an instance node's BLAS entry stands for: the BLAS root's used slots'
    /// union, or the slot box of a root child (a rebraided entry).
    fn entry_box(&self, blas: &BlasLevel, entry: NodePointer) -> Option<Bounds> {
        let bytes = &self.bvh.image.bytes;
        let slots = box_slots(bytes, blas.root)?;
        if entry == blas.root {
            let mut b = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
            for (_, _, (lo, hi)) in &slots {
                for a in 0..3 {
                    b.0[a] = b.0[a].min(lo[a]);
                    b.1[a] = b.1[a].max(hi[a]);
                }
            }
            Some(b)
        } else {
            slots.iter().find(|(_, p, _)| *p == entry).map(|s| s.2)
        }
    }

    fn check_instance(
        &mut self,
        parent: NodePointer,
        slot: usize,
        ptr: NodePointer,
        slot_box: Bounds,
        seen: &mut [u32],
    ) {
        let bytes = &self.bvh.image.bytes;
        let at = 64 * ptr.address_64() as usize;
        let Some(raw) = bytes.get(at..at + 128) else {
            self.error(
                Some(parent),
                Some(slot),
                "instance node out of the image".into(),
            );
            return;
        };
        let node: InstanceNode = bytemuck::pod_read_unaligned(raw);
        let index = node.instance_index as usize;
        let Some(instance) = self.input.instances.get(index) else {
            self.error(
                Some(ptr),
                None,
                format!("instance index {index} out of range"),
            );
            return;
        };
        seen[index] += 1;
        let mut problems = Vec::new();
        if node.id() != instance.id
            || node.mask() != instance.mask
            || node.flags() != instance.flags
        {
            problems.push("id, mask or flags differ from the instance's".to_string());
        }
        if node.object_to_world != instance.object_to_world {
            problems.push("object-to-world differs from the instance's".into());
        }
        if Some(node.world_to_object) != inverse_3x4(&instance.object_to_world) {
            problems.push("world-to-object is not the rounded inverse".into());
        }
        let blas = &self.bvh.blases[instance.blas as usize];
        let procedural = blas.kind == BlasKind::Spheres;
        if node.procedural_blas() != procedural || node.base_pointer_lo != 0 {
            problems.push("base pointer does not match the BLAS".into());
        }
        let entry = node.blas_node_pointer;
        let in_blas = (entry.address_64() as u64) >= blas.first_block
            && (entry.address_64() as u64) < blas.first_block + blas.blocks;
        if !in_blas {
            problems.push(format!(
                "BLAS node {entry:#x} is outside BLAS {}",
                instance.blas
            ));
        } else {
            match self.entry_box(blas, entry) {
                None => problems.push(format!(
                    "BLAS node {entry:#x} is not the root or a root child"
                )),
                Some((lo, hi)) => {
                    let world = transform_box(&instance.object_to_world, lo, hi);
                    if !contains(&slot_box, &world) {
                        problems.push("slot box does not contain the instance's world box".into());
                    }
                }
            }
        }
        for p in problems {
            self.error(Some(ptr), None, format!("instance {index}: {p}"));
        }
    }

    /// Walks the TLAS from the root.
    fn walk_tlas(&mut self) {
        let image = &self.bvh.image;
        let tlas_blocks = self.bvh.tlas.blocks;
        let mut seen = vec![0u32; self.input.instances.len()];
        let mut pending = vec![image.root];
        while let Some(node) = pending.pop() {
            if node.node_type() != NodeType::BoxF32 || node.address_64() as u64 + 2 > tlas_blocks {
                self.error(
                    Some(node),
                    None,
                    "TLAS box node is not FP32 inside the TLAS".into(),
                );
                continue;
            }
            let Some(slots) = box_slots(&image.bytes, node) else {
                continue;
            };
            for (s, child, b) in slots {
                if image.box_parent.get(child.address_64() as usize) != Some(&node) {
                    self.error(Some(node), Some(s), "parent table disagrees".into());
                }
                if child.node_type() == INSTANCE_NODE_TYPE
                    && (child.address_64() as u64) + 2 <= tlas_blocks
                {
                    self.check_instance(node, s, child, b, &mut seen);
                } else if child.node_type() == NodeType::BoxF32 {
                    if let Some(kids) = box_slots(&image.bytes, child) {
                        for (_, _, kb) in kids {
                            if !contains(&b, &kb) {
                                self.error(
                                    Some(node),
                                    Some(s),
                                    "box does not contain child".into(),
                                );
                            }
                        }
                    }
                    pending.push(child);
                } else {
                    self.error(
                        Some(node),
                        Some(s),
                        format!("TLAS child {child:#x} is not a box or instance node"),
                    );
                }
            }
        }
        for (i, inst) in self.input.instances.iter().enumerate() {
            let blas = &self.bvh.blases[inst.blas as usize];
            if seen[i] == 0 && blas.primitives > 0 {
                self.error(None, None, format!("instance {i} is unreachable"));
            }
        }
    }

    /// Walks a procedural BLAS.
    fn walk_spheres(&mut self, b: usize) {
        let blas = &self.bvh.blases[b];
        let spheres = &self.bvh.spheres[b];
        let bytes = &self.bvh.image.bytes;
        let range = blas.first_block..blas.first_block + blas.blocks;
        let mut seen = vec![0u32; spheres.len()];
        let mut pending = vec![blas.root];
        while let Some(node) = pending.pop() {
            let Some(slots) = box_slots(bytes, node) else {
                self.error(Some(node), None, format!("BLAS {b}: not a box node"));
                continue;
            };
            for (s, child, slot_box) in slots {
                if !range.contains(&(child.address_64() as u64)) {
                    self.error(
                        Some(node),
                        Some(s),
                        format!("BLAS {b}: child outside the BLAS"),
                    );
                    continue;
                }
                if child.node_type() != PROCEDURAL_NODE_TYPE {
                    pending.push(child);
                    continue;
                }
                let at = 64 * child.address_64() as usize;
                let leaf: ProceduralNode = bytemuck::pod_read_unaligned(&bytes[at..at + 64]);
                let prim = leaf.primitive_index as usize;
                let Some(sphere) = spheres.get(prim) else {
                    self.error(
                        Some(child),
                        None,
                        format!("BLAS {b}: primitive {prim} out of range"),
                    );
                    continue;
                };
                seen[prim] += 1;
                let bounds = sphere.bounds();
                if (leaf.box_min, leaf.box_max) != bounds || !contains(&slot_box, &bounds) {
                    self.error(Some(child), None, format!("BLAS {b} sphere {prim}: box"));
                }
                let opaque = leaf.geometry_flags() == GeometryFlags::OPAQUE;
                if opaque != blas.opaque {
                    self.error(
                        Some(child),
                        None,
                        format!("BLAS {b} sphere {prim}: geometry flags"),
                    );
                }
            }
        }
        for (prim, &n) in seen.iter().enumerate() {
            if n != 1 {
                self.error(
                    None,
                    None,
                    format!("BLAS {b} sphere {prim}: reached {n} times"),
                );
            }
        }
    }
}

/// Every inconsistency of `bvh` with `input` (empty when the image is right).
pub fn validate_two_level(bvh: &TwoLevelBvh, input: &TwoLevelInput) -> Vec<ValidationError> {
    let mut c = Checker {
        bvh,
        input,
        errors: Vec::new(),
    };
    let image = &bvh.image;
    let blocks = image.bytes.len() as u64 / 64;
    if image.descriptor.base_address_256 != 0 || image.descriptor.size_minus_one + 1 != blocks {
        c.error(
            None,
            None,
            "descriptor base or size does not match the image".into(),
        );
    }
    if image.root != NodePointer::new(0, NodeType::BoxF32) {
        c.error(
            None,
            None,
            format!("root {:#x} is not the FP32 box at block 0", image.root),
        );
    }
    c.walk_tlas();
    for (b, blas) in bvh.blases.iter().enumerate() {
        match (&input.blases[b].geometry, blas.kind) {
            (BlasGeometry::Triangles(mesh), BlasKind::Triangles) => {
                let nodes = blas.metrics.as_ref().map_or(0, |m| m.triangle_nodes);
                let alone = extract(
                    image,
                    blas.first_block,
                    blas.blocks,
                    blas.root,
                    blas.first_ordinal,
                    nodes,
                );
                for mut e in validate(&alone, mesh) {
                    e.message = format!("BLAS {b}: {}", e.message);
                    c.errors.push(e);
                }
            }
            (BlasGeometry::Spheres(_), BlasKind::Spheres) => c.walk_spheres(b),
            _ => c.error(None, None, format!("BLAS {b}: kind differs from the input")),
        }
    }
    c.errors
}
