//! The validator: walks an image's bytes from the root and reports every inconsistency with
//! its location ("node 0x1c0 (box16) child 2: box does not contain child").
//!
//! Checks: descriptor (base 0, size = blocks - 1, image a whole number of 64-byte blocks);
//! root is a box node; every child pointer is in range, 64-byte aligned to the start of a
//! node of its type (no pointer into the second half of a box32 node, no block used as two
//! node kinds), of a valid type (0-5); no box node reached twice; empty slots (INVALID) have
//! unhittable boxes (NaN or inverted) and used slots hittable ones; every slot box contains
//! the exact f32 bounds of the geometry below it (so FP16 boxes must contain the exact
//! bounds, not just the child's rounded box); each referenced triangle is stored as a
//! rotation of its mesh triangle, its id maps through the side table (mode 0: word@60 + k;
//! mode 1: the IJ nibble selects the mesh's vertex order); parent side tables agree with the
//! walk; every finite mesh triangle is reachable, exactly once without spatial splits, and
//! no triangle slot is referenced twice.
//!
//! With spatial splits a triangle slot's box covers only part of its triangle: the check
//! becomes "overlaps the triangle", the covered part (box and triangle bounds intersected)
//! is what the ancestors must contain, and that containment allows a relative 2^-10 (the part
//! is bounded by the children's possibly FP16-rounded boxes). Coverage of the whole triangle
//! by its pieces is tested by the traversal tests against brute force.

use super::{BvhImage, Mesh};
use crate::hw::{
    ij_nibble, BoxNodeF16, BoxNodeF32, IjControl, NodePointer, NodeType, TriangleNode,
    TriangleReturnMode, TRIANGLE_VERTICES,
};
use std::fmt;

/// One problem found in an image.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidationError {
    /// Byte offset and type of the node where it was found (`None`: the image as a whole).
    pub node: Option<(u64, NodeType)>,
    /// Child slot of that node.
    pub child: Option<usize>,
    /// Mesh triangle concerned, if any.
    pub triangle: Option<u32>,
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node {
            Some((offset, ty)) => write!(f, "node {offset:#x} ({})", ty.name())?,
            None => write!(f, "image")?,
        }
        if let Some(c) = self.child {
            write!(f, " child {c}")?;
        }
        if let Some(t) = self.triangle {
            write!(f, " triangle {t}")?;
        }
        write!(f, ": {}", self.message)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Unseen,
    Box16,
    Box32,
    Box32Tail,
    Triangle,
}

type Bounds = ([f32; 3], [f32; 3]);
const EMPTY_BOUNDS: Bounds = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);

fn grow(b: &mut Bounds, p: [f32; 3]) {
    for (a, &c) in p.iter().enumerate() {
        b.0[a] = b.0[a].min(c);
        b.1[a] = b.1[a].max(c);
    }
}

fn union(b: &mut Bounds, o: &Bounds) {
    grow(b, o.0);
    grow(b, o.1);
}

fn is_empty(b: &Bounds) -> bool {
    (0..3).any(|a| b.0[a] > b.1[a])
}

/// A box that no ray can hit: NaN in any coordinate (the encoder's choice) or inverted.
fn unhittable(b: &Bounds) -> bool {
    b.0.iter().chain(b.1.iter()).any(|c| c.is_nan()) || is_empty(b)
}

fn intersect(a: &Bounds, b: &Bounds) -> Bounds {
    (
        std::array::from_fn(|i| a.0[i].max(b.0[i])),
        std::array::from_fn(|i| a.1[i].min(b.1[i])),
    )
}

/// With spatial splits, the part of a triangle below a box is bounded by the children's
/// (possibly FP16-rounded) slot boxes, not by exact geometry: allow a relative 2^-10 of the
/// box's extent (more than FP16 rounding) around the box.
fn widen(b: &Bounds) -> Bounds {
    let pad: [f32; 3] = std::array::from_fn(|i| {
        (b.1[i] - b.0[i]).abs().max(b.0[i].abs()).max(b.1[i].abs()) / 1024.0
    });
    (
        std::array::from_fn(|i| b.0[i] - pad[i]),
        std::array::from_fn(|i| b.1[i] + pad[i]),
    )
}

fn contains(outer: &Bounds, inner: &Bounds) -> bool {
    is_empty(inner) || (0..3).all(|a| outer.0[a] <= inner.0[a] && outer.1[a] >= inner.1[a])
}

struct Walker<'a> {
    image: &'a BvhImage,
    mesh: &'a Mesh,
    blocks: Vec<Block>,
    prim_refs: Vec<u32>,
    slot_refs: Vec<u32>,
    errors: Vec<ValidationError>,
}

impl Walker<'_> {
    fn error(&mut self, node: Option<(u64, NodeType)>, child: Option<usize>, message: String) {
        self.errors.push(ValidationError {
            node,
            child,
            triangle: None,
            message,
        });
    }

    /// Claims the blocks of a node of type `ty` at `block`; false (with an error) on conflict.
    fn claim(&mut self, at: (u64, NodeType), child: usize, block: usize, ty: NodeType) -> bool {
        let n = self.blocks.len();
        let need = if ty == NodeType::BoxF32 { 2 } else { 1 };
        if block + need > n {
            self.error(
                Some(at),
                Some(child),
                format!(
                    "pointer {:#x} out of range ({} blocks of 64 bytes)",
                    NodePointer::new(block as u64, ty),
                    n
                ),
            );
            return false;
        }
        let want = match ty {
            NodeType::BoxF16 => Block::Box16,
            NodeType::BoxF32 => Block::Box32,
            _ => Block::Triangle,
        };
        let have = self.blocks[block];
        let tail_ok = need == 1 || self.blocks[block + 1] == Block::Unseen;
        if (have == Block::Unseen && tail_ok) || (have == want && want == Block::Triangle) {
            self.blocks[block] = want;
            if need == 2 {
                self.blocks[block + 1] = Block::Box32Tail;
            }
            true
        } else {
            let msg = if have == want {
                "box node reached twice (shared subtree or cycle)".to_string()
            } else {
                format!(
                    "pointer {:#x} ({}) overlaps a node of another kind",
                    NodePointer::new(block as u64, ty),
                    ty.name()
                )
            };
            self.error(Some(at), Some(child), msg);
            false
        }
    }

    /// Validates the box node at `pointer` and returns the exact bounds below it.
    fn visit_box(&mut self, pointer: NodePointer, depth: usize) -> Bounds {
        let at = (pointer.address_64() as u64 * 64, pointer.node_type());
        let (children, boxes) = self.read_box(pointer);
        let mut total = EMPTY_BOUNDS;
        if depth > 1000 {
            self.error(Some(at), None, "tree deeper than 1000 levels".into());
            return total;
        }
        for (i, (&child, slot_box)) in children.iter().zip(boxes.iter()).enumerate() {
            if child.is_invalid() {
                if !unhittable(slot_box) {
                    self.error(
                        Some(at),
                        Some(i),
                        "empty slot (INVALID pointer) has a hittable box".into(),
                    );
                }
                continue;
            }
            if unhittable(slot_box) {
                self.error(
                    Some(at),
                    Some(i),
                    "box is NaN or inverted: the child can never be reached".into(),
                );
            }
            let Some(exact) = self.visit_child(at, i, pointer, child, depth) else {
                continue;
            };
            let covered = self.check_slot_box(at, i, child, slot_box, exact);
            union(&mut total, &covered);
        }
        total
    }

    /// The child pointers and slot boxes (as f32, FP16 ones widened exactly) of the box
    /// node at `pointer`, read through the `hw` node structs.
    fn read_box(&self, pointer: NodePointer) -> ([NodePointer; 4], [Bounds; 4]) {
        let o = pointer.address_64() as usize * 64;
        if pointer.node_type() == NodeType::BoxF16 {
            let n: BoxNodeF16 = bytemuck::pod_read_unaligned(&self.image.bytes[o..o + 64]);
            (n.children, std::array::from_fn(|i| n.child_box(i)))
        } else {
            let n: BoxNodeF32 = bytemuck::pod_read_unaligned(&self.image.bytes[o..o + 128]);
            (n.children, std::array::from_fn(|i| n.child_box(i)))
        }
    }

    /// Validates the node (or leaf chain) that `child`, slot `i` of the box node `parent`
    /// (at `at`, at `depth`), points to; returns the exact bounds below it, or `None` when
    /// there is nothing to check it against (an error was reported or nothing valid is
    /// below).
    fn visit_child(
        &mut self,
        at: (u64, NodeType),
        i: usize,
        parent: NodePointer,
        child: NodePointer,
        depth: usize,
    ) -> Option<Bounds> {
        let cty = child.node_type();
        let block = child.address_64() as usize;
        if child.is_user() {
            self.error(
                Some(at),
                Some(i),
                format!(
                    "pointer {child:#x} has the reserved node type {}",
                    cty as u8
                ),
            );
            return None;
        }
        if !self.claim(at, i, block, cty) {
            return None;
        }
        if child.is_box() {
            if self.image.parent(child) != Some(parent) {
                self.error(
                    Some(at),
                    Some(i),
                    format!(
                        "parent table gives {:x?} for child {child:#x}",
                        self.image.parent(child)
                    ),
                );
            }
            return Some(self.visit_box(child, depth + 1));
        }
        // A leaf chain stands for several triangles of the node.
        let mut b = EMPTY_BOUNDS;
        let mut any = false;
        let tris: Vec<NodePointer> = self.image.leaf_triangles(child).collect();
        for tri in tris {
            if let Some(tb) = self.visit_triangle(at, i, parent, tri) {
                union(&mut b, &tb);
                any = true;
            }
        }
        any.then_some(b)
    }

    /// Checks that slot `i`'s box contains the exact bounds `exact` below its `child`;
    /// returns the bounds its ancestors must contain. With spatial splits a triangle
    /// slot's box covers only part of its triangle: it must overlap the triangle, and the
    /// part it covers is what counts (a box slot above such parts is checked with the
    /// tolerance of [`widen`]).
    fn check_slot_box(
        &mut self,
        at: (u64, NodeType),
        i: usize,
        child: NodePointer,
        slot_box: &Bounds,
        exact: Bounds,
    ) -> Bounds {
        let split = self.image.spatial_splits;
        let exact = if split && child.is_triangle() {
            let part = intersect(slot_box, &exact);
            if is_empty(&part) {
                self.error(
                    Some(at),
                    Some(i),
                    "box does not overlap its (split) triangle".into(),
                );
            }
            part
        } else {
            exact
        };
        let ok = if split && !child.is_triangle() {
            contains(&widen(slot_box), &exact)
        } else {
            contains(slot_box, &exact)
        };
        if !ok {
            self.error(
                Some(at),
                Some(i),
                format!(
                    "box does not contain child (box {:?}..{:?}, child bounds {:?}..{:?})",
                    slot_box.0, slot_box.1, exact.0, exact.1
                ),
            );
        }
        exact
    }

    /// Checks a triangle reference; returns its exact bounds.
    fn visit_triangle(
        &mut self,
        at: (u64, NodeType),
        i: usize,
        parent: NodePointer,
        child: NodePointer,
    ) -> Option<Bounds> {
        let cp = child;
        let k = cp.node_type().triangle_index().expect("a triangle type");
        let o = cp.address_64() as usize * 64;
        let node: TriangleNode = bytemuck::pod_read_unaligned(&self.image.bytes[o..o + 64]);
        let tri = node.triangle(k);
        let tri_at = Some((o as u64, cp.node_type()));
        let Some(slot) = self.image.slot_of(child) else {
            self.error(
                Some(at),
                Some(i),
                format!("triangle pointer {child:#x}: no triangle node in the side table"),
            );
            return None;
        };
        self.slot_refs[slot] += 1;
        if self.slot_refs[slot] > 1 {
            self.error(
                tri_at,
                None,
                "triangle slot referenced by more than one box child".into(),
            );
        }
        if self.image.slot_parent.get(slot) != Some(&parent) {
            self.error(
                Some(at),
                Some(i),
                format!("parent table disagrees for triangle pointer {child:#x}"),
            );
        }
        let prim = self.image.slot_primitive[slot];
        if prim as usize >= self.mesh.len() {
            self.error(
                tri_at,
                None,
                format!("side table maps the slot to primitive {prim}, not in the mesh"),
            );
            return None;
        }
        // Mode 0: the returned id word@60 + k must index this slot.
        if self.image.descriptor.triangle_return_mode == TriangleReturnMode::TriangleId {
            let id = node.word.wrapping_add(k as u32) as usize;
            if id != slot {
                self.errors.push(ValidationError {
                    node: tri_at,
                    child: None,
                    triangle: Some(prim),
                    message: format!("returned id {id} (word@60 + k) does not map to slot {slot}"),
                });
            }
        }
        // Stored vertices: a rotation of the mesh triangle.
        let want = self.mesh.triangle(prim).map(|v| v.map(f32::to_bits));
        let got = tri.map(|v| v.map(f32::to_bits));
        let rotation = (0..3).find(|&r| (0..3).all(|j| got[(j + r) % 3] == want[j]));
        match rotation {
            None => self.errors.push(ValidationError {
                node: tri_at,
                child: None,
                triangle: Some(prim),
                message: "stored vertices are not a rotation of the mesh triangle".into(),
            }),
            Some(r) => {
                if self.image.descriptor.triangle_return_mode == TriangleReturnMode::Barycentrics {
                    let hw = TRIANGLE_VERTICES[k];
                    let order = std::array::from_fn(|j| hw[(j + r) % 3]);
                    let want_nibble = ij_nibble(k, order);
                    let have = IjControl(node.word).nibble(k);
                    if want_nibble != Some(have) {
                        self.errors.push(ValidationError {
                            node: tri_at,
                            child: None,
                            triangle: Some(prim),
                            message: format!(
                                "IJ control nibble {have} should be {want_nibble:?} for the mesh's vertex order"
                            ),
                        });
                    }
                }
            }
        }
        self.prim_refs[prim as usize] += 1;
        let mut b = EMPTY_BOUNDS;
        for v in tri {
            grow(&mut b, v);
        }
        Some(b)
    }
}

/// Validates `image` against the mesh it was built from; an empty vector means valid.
pub fn validate(image: &BvhImage, mesh: &Mesh) -> Vec<ValidationError> {
    let mut w = Walker {
        image,
        mesh,
        blocks: vec![Block::Unseen; image.bytes.len() / 64],
        prim_refs: vec![0; mesh.len()],
        slot_refs: vec![0; image.slot_primitive.len()],
        errors: Vec::new(),
    };
    let d = &image.descriptor;
    if !image.bytes.len().is_multiple_of(64) || image.bytes.is_empty() {
        w.error(
            None,
            None,
            format!(
                "image of {} bytes is not a positive multiple of 64",
                image.bytes.len()
            ),
        );
        return w.errors;
    }
    if d.base_address_256 != 0 {
        w.error(
            None,
            None,
            format!("descriptor base {:#x}, expected 0", d.base_address_256),
        );
    }
    if d.size_minus_one + 1 != w.blocks.len() as u64 {
        w.error(
            None,
            None,
            format!(
                "descriptor size {} + 1 does not match the {} blocks of the image",
                d.size_minus_one,
                w.blocks.len()
            ),
        );
    }
    if image.triangle_node_ordinal.len() != w.blocks.len()
        || image.box_parent.len() != w.blocks.len()
        || image.slot_parent.len() != image.slot_primitive.len()
    {
        w.error(None, None, "side tables do not match the image size".into());
        return w.errors;
    }
    let root = image.root;
    if !root.node_type().is_box() {
        w.error(
            None,
            None,
            format!("root pointer {:#x} is not a box node", image.root),
        );
        return w.errors;
    }
    let root_block = root.address_64() as usize;
    if w.claim((0, root.node_type()), 0, root_block, root.node_type()) {
        if image.parent(image.root).is_some() {
            w.error(None, None, "the root has a parent in the side table".into());
        }
        w.visit_box(image.root, 1);
    }
    for prim in 0..mesh.len() {
        let finite = mesh
            .triangle(prim as u32)
            .iter()
            .flatten()
            .all(|c| c.is_finite());
        let n = w.prim_refs[prim];
        let message = if n == 0 && finite {
            "unreachable from the root".to_string()
        } else if n > 1 && !image.spatial_splits {
            format!("reachable {n} times (expected once)")
        } else {
            continue;
        };
        w.errors.push(ValidationError {
            node: None,
            child: None,
            triangle: Some(prim as u32),
            message,
        });
    }
    w.errors
}
