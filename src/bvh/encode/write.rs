//! Writing the node bytes: every box node is built as a [`BoxNodeF16`] or [`BoxNodeF32`]
//! value and every triangle node is a [`TriangleNode`], each copied into the image whole
//! with [`bytemuck::bytes_of`], so that the `hw` structs are the only definition of the
//! formats. The writer also sums the SAH cost of the slots as stored.
//!
//! Parallel over fixed pieces of the memory order (`WRITE_PIECE` nodes, each owning the
//! block range from its first node to the next piece's first node); the SAH is summed per
//! piece, then over the pieces in order: the same bytes and the same sum for any thread
//! count.

use super::f16::{f16_box, StoredBox, NAN_BOX_BITS};
use super::layout::{box_type, Layout, PACK_ITEM};
use super::packing::Packing;
use crate::bvh::build::{half_area, C_BOX, C_TRI};
use crate::bvh::collapse::{Slot, Tree4};
use crate::hw::{BoxNodeF16, BoxNodeF32, NodePointer, NodeType, TriangleNode, TriangleReturnMode};
use glam::Vec3A;
use rayon::prelude::*;

/// Nodes written by one parallel task of the encoder.
const WRITE_PIECE: usize = 4096;

/// What the writer reads: the tree, its triangle nodes, the layout (with its block count
/// checked against the 29-bit pointer range), each box node's format, and the options that
/// change bytes.
pub(super) struct NodeWriter<'a> {
    pub tree: &'a Tree4,
    pub packs: &'a Packing,
    pub layout: &'a Layout,
    pub fp16: &'a [bool],
    /// Leaf chains: a leaf's pointer stands for slots `0..=k` of its triangle node.
    pub chains: bool,
    /// Mode 0 puts `4 * o` in word@60 of triangle node `o`; mode 1 keeps the IJ control word.
    pub return_mode: TriangleReturnMode,
    /// Half the surface area of the root's stored box, the SAH's normaliser.
    pub root_area: f32,
}

/// What the writer measured, summed over the pieces in order.
#[derive(Default)]
pub(super) struct WrittenNodes {
    /// The SAH cost ([`Metrics::sah_cost`](crate::bvh::Metrics::sah_cost)): one box-node
    /// instruction for the root, then per slot `C * A(stored slot box) / A(root)`; in a
    /// piece summed in memory order, the pieces' sums added in order to the root's.
    pub sah: f64,
    pub box16: usize,
    pub box32: usize,
}

impl NodeWriter<'_> {
    /// Writes every node into `bytes` (zeroed, `64 * blocks` long) and measures the slots.
    pub fn write(&self, bytes: &mut [u8]) -> WrittenNodes {
        let pieces: Vec<&[u32]> = self.layout.order.chunks(WRITE_PIECE).collect();
        let slices = self.piece_bytes(&pieces, bytes);
        let measured: Vec<WrittenNodes> = pieces
            .into_par_iter()
            .zip(slices.into_par_iter())
            .map(|(piece, bytes)| self.write_piece(piece, bytes))
            .collect();
        let mut total = WrittenNodes {
            sah: C_BOX as f64,
            ..WrittenNodes::default()
        };
        for m in &measured {
            total.sah += m.sah;
            total.box16 += m.box16;
            total.box32 += m.box32;
        }
        total
    }

    /// The first block of a node of the memory order.
    #[inline]
    fn item_block(&self, item: u32) -> usize {
        if item & PACK_ITEM != 0 {
            self.layout.pack_block[(item & !PACK_ITEM) as usize] as usize
        } else {
            self.layout.node_block[item as usize] as usize
        }
    }

    /// The bytes each piece owns: from its first node's block to the next piece's.
    fn piece_bytes<'b>(&self, pieces: &[&[u32]], bytes: &'b mut [u8]) -> Vec<&'b mut [u8]> {
        let blocks = bytes.len() / 64;
        let mut slices = Vec::with_capacity(pieces.len());
        let mut rest = bytes;
        for (i, piece) in pieces.iter().enumerate() {
            let end = pieces
                .get(i + 1)
                .map_or(blocks, |next| self.item_block(next[0]));
            let (mine, others) = rest.split_at_mut((end - self.item_block(piece[0])) * 64);
            rest = others;
            slices.push(mine);
        }
        slices
    }

    /// Writes the nodes of one piece into its bytes.
    fn write_piece(&self, piece: &[u32], bytes: &mut [u8]) -> WrittenNodes {
        let start = self.item_block(piece[0]);
        let mut m = WrittenNodes::default();
        // The run of the last triangle node written (see `Packing::node`).
        let mut run = 0;
        for &item in piece {
            let offset = (self.item_block(item) - start) * 64;
            if item & PACK_ITEM != 0 {
                let node = self.triangle_node(item & !PACK_ITEM, &mut run);
                bytes[offset..offset + 64].copy_from_slice(bytemuck::bytes_of(&node));
            } else if self.fp16[item as usize] {
                let node = self.box_node_f16(item as usize, &mut m.sah);
                bytes[offset..offset + 64].copy_from_slice(bytemuck::bytes_of(&node));
                m.box16 += 1;
            } else {
                let node = self.box_node_f32(item as usize, &mut m.sah);
                bytes[offset..offset + 128].copy_from_slice(bytemuck::bytes_of(&node));
                m.box32 += 1;
            }
        }
        m
    }

    /// Triangle node `o` (ordinal) as stored: in mode 0 its word is `4 * o`, the first of
    /// the ids `word + k` that index the side table.
    #[inline]
    fn triangle_node(&self, o: u32, run: &mut usize) -> TriangleNode {
        let mut node = *self.packs.node(o, run);
        if self.return_mode == TriangleReturnMode::TriangleId {
            node.word = 4 * o;
        }
        node
    }

    /// Box node `n` in FP16: each used slot's box rounded outward, empty slots INVALID with
    /// NaN bounds (which no ray can hit). Adds its slots' SAH to `sah`, in slot order.
    ///
    /// The node is assembled from the four slots' values (no indexed stores into it), then
    /// copied into the image once.
    #[inline]
    fn box_node_f16(&self, n: usize, sah: &mut f64) -> BoxNodeF16 {
        let [(b0, c0), (b1, c1), (b2, c2), (b3, c3)] = [
            self.slot_f16(n, 0, sah),
            self.slot_f16(n, 1, sah),
            self.slot_f16(n, 2, sah),
            self.slot_f16(n, 3, sah),
        ];
        BoxNodeF16 {
            children: [c0, c1, c2, c3],
            boxes: [b0, b1, b2, b3],
        }
    }

    /// Slot `s` of box node `n` in FP16: its box's binary16 bits and its pointer.
    #[inline(always)]
    fn slot_f16(&self, n: usize, s: usize, sah: &mut f64) -> ([u16; 6], NodePointer) {
        match self.tree.nodes[n].slots[s] {
            None => (NAN_BOX_BITS, NodePointer::INVALID),
            Some(slot) => {
                let (lo, hi) = self.tree.child_box(n, s);
                let rounded = f16_box(lo, hi);
                (rounded.bits, self.child_pointer(slot, &rounded.stored, sah))
            }
        }
    }

    /// Box node `n` in FP32: each used slot's exact box, empty slots INVALID with NaN
    /// bounds, the user words zero. Adds its slots' SAH to `sah`, in slot order (assembled
    /// as [`Self::box_node_f16`] is).
    #[inline]
    fn box_node_f32(&self, n: usize, sah: &mut f64) -> BoxNodeF32 {
        let [(b0, c0), (b1, c1), (b2, c2), (b3, c3)] = [
            self.slot_f32(n, 0, sah),
            self.slot_f32(n, 1, sah),
            self.slot_f32(n, 2, sah),
            self.slot_f32(n, 3, sah),
        ];
        BoxNodeF32 {
            children: [c0, c1, c2, c3],
            boxes: [b0, b1, b2, b3],
            user: [0; 4],
        }
    }

    /// Slot `s` of box node `n` in FP32: its box `[min.xyz, max.xyz]` and its pointer.
    #[inline(always)]
    fn slot_f32(&self, n: usize, s: usize, sah: &mut f64) -> ([f32; 6], NodePointer) {
        match self.tree.nodes[n].slots[s] {
            None => ([f32::NAN; 6], NodePointer::INVALID),
            Some(slot) => {
                let (lo, hi) = self.tree.child_box(n, s);
                let stored = (lo.to_array(), hi.to_array());
                let ([x0, y0, z0], [x1, y1, z1]) = stored;
                let pointer = self.child_pointer(slot, &stored, sah);
                ([x0, y0, z0, x1, y1, z1], pointer)
            }
        }
    }

    /// The pointer of a used slot storing box `stored`; adds the slot's SAH to `sah`: one
    /// box-node instruction for a box child, one triangle instruction per triangle its
    /// pointer stands for.
    #[inline(always)]
    fn child_pointer(&self, slot: Slot, stored: &StoredBox, sah: &mut f64) -> NodePointer {
        let area = stored_half_area(stored);
        match slot {
            Slot::Node(c) => {
                *sah += (C_BOX * area) as f64 / self.root_area as f64;
                let c = c as usize;
                NodePointer::new(self.layout.node_block[c] as u64, box_type(self.fp16[c]))
            }
            Slot::Leaf(l) => {
                let (p, k) = self.packs.place(l);
                let first = if self.chains { 0 } else { k };
                let triangles = k as u32 + 1 - first as u32;
                *sah += (C_TRI * triangles as f32 * area) as f64 / self.root_area as f64;
                NodePointer::new(
                    self.layout.pack_block[p as usize] as u64,
                    NodeType::triangle(k as usize),
                )
            }
        }
    }
}

/// Half the surface area of a stored box.
pub(super) fn stored_half_area(b: &StoredBox) -> f32 {
    half_area(Vec3A::from(b.0), Vec3A::from(b.1))
}
