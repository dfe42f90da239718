//! The node cache: every reachable box node decoded once, and a copy of every reachable
//! triangle node with its primitive ids, at their own 64-byte block index.

use super::memory::{prefetch_lines, BvhMemory};
use super::DecodedBox;
use crate::hw::descriptor::BvhDescriptor;
use crate::hw::instruction::in_bounds;
use crate::hw::{NodePointer, NodeType, TriangleNode};
use bytemuck::pod_read_unaligned;
use wide::f32x4;

/// Pre-decoded box nodes of one BVH image, and copies of its triangle nodes, stored at their
/// own 64-byte block index (one 128-byte, cache-line aligned `CacheEntry` per block, empty
/// for blocks holding neither) so that a pointer finds its node with one load and can be
/// prefetched without a dependent load. Each entry is tagged with what it holds; a pointer
/// of the other box type at the same address, or a triangle pointer into a box's block,
/// falls back to the image bytes.
#[derive(Clone, Debug, Default)]
pub struct NodeCache {
    entries: Vec<CacheEntry>,
    decoded: usize,
    /// What it was built for (memory length and address, descriptor): an intersector uses
    /// the cache's bounds-checked entries directly only for the same memory and descriptor.
    built_for: Option<(usize, u64, BvhDescriptor)>,
}

/// One cache entry, two cache lines: a decoded box node, a copy of a triangle node with its
/// primitive ids, or empty. The tag at byte 112 (`DecodedBox::ty`, `TriangleCopy::tag`) says
/// which: 4 or 5 for a box of that type, [`TRIANGLE_COPY`], or [`EMPTY`].
///
/// Why triangles too: a lane's next node is then prefetched at the same address whatever its
/// type, without a branch on the type (which the CPU mispredicted often: box or triangle is
/// data), and both lines of the entry are what the lane's step will read.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) union CacheEntry {
    node: DecodedBox,
    triangle: TriangleCopy,
}

/// A triangle node, copied verbatim, and the primitive ids of its triangles.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct TriangleCopy {
    node: TriangleNode,
    /// Primitive id of triangle k (`u32::MAX`: none, or not set).
    prim: [u32; 4],
    /// The pointer block (`pointer >> 3`) of the node.
    pointer_block: u32,
    _unused: [u32; 7],
    /// [`TRIANGLE_COPY`].
    tag: u32,
    _unused_after: [u32; 3],
}

/// The tag of a [`TriangleCopy`] entry (not a node type).
const TRIANGLE_COPY: u32 = 8;
/// The tag of an empty entry (not a node type either). Every tag but 4 and 5 lies outside
/// 0..=7, so that a tag equal to a pointer's type bits (`ptr & 7`) says "a box of that type"
/// in one compare.
const EMPTY: u32 = 16;

const _: () = assert!(std::mem::size_of::<CacheEntry>() == 128);
const _: () = assert!(std::mem::size_of::<TriangleCopy>() == 128);
const _: () =
    assert!(std::mem::offset_of!(TriangleCopy, tag) == std::mem::offset_of!(DecodedBox, ty));

const EMPTY_ENTRY: CacheEntry = CacheEntry {
    node: DecodedBox {
        lo: [f32x4::ZERO; 3],
        hi: [f32x4::ZERO; 3],
        children: [NodePointer::INVALID; 4],
        ty: EMPTY,
        ordered: 0,
        useful: 0,
    },
};

impl CacheEntry {
    /// The tag: 4 or 5 (a decoded box of that type), [`TRIANGLE_COPY`], or [`EMPTY`].
    #[inline(always)]
    fn tag(&self) -> u32 {
        // SAFETY: both variants are plain data (every bit pattern is a valid value) with a
        // u32 at byte 112 (asserted above), and every entry is initialised as a whole.
        unsafe { self.node.ty }
    }

    /// The decoded box, when the entry holds one (tag 4 or 5).
    #[inline(always)]
    pub(crate) fn decoded_box(&self) -> Option<&DecodedBox> {
        // SAFETY: as in `tag`; the tag says the entry was written as a box.
        if self.tag() & !1 == 4 {
            Some(unsafe { &self.node })
        } else {
            None
        }
    }

    /// The decoded box if the entry holds one of type `ty` (`0..=7`: a pointer's type bits).
    #[inline(always)]
    pub(crate) fn decoded_box_of_type(&self, ty: u32) -> Option<&DecodedBox> {
        debug_assert!(ty <= 7);
        // SAFETY: as in `tag`; the tag says the entry was written as a box (the only tags in
        // 0..=7 are the box types 4 and 5).
        if self.tag() == ty {
            Some(unsafe { &self.node })
        } else {
            None
        }
    }

    /// The triangle copy, when the entry holds one.
    #[inline(always)]
    pub(crate) fn triangle_copy(&self) -> Option<&TriangleCopy> {
        // SAFETY: as in `tag`; the tag says the entry was written as a triangle copy.
        if self.tag() == TRIANGLE_COPY {
            Some(unsafe { &self.triangle })
        } else {
            None
        }
    }
}

impl TriangleCopy {
    /// The node.
    #[inline(always)]
    pub(crate) fn node(&self) -> &TriangleNode {
        &self.node
    }

    /// The primitive id of triangle `k` (`u32::MAX` when none or not set).
    #[inline(always)]
    pub(crate) fn primitive_id(&self, k: usize) -> u32 {
        self.prim[k & 3]
    }
}

impl std::fmt::Debug for CacheEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.decoded_box(), self.triangle_copy()) {
            (Some(b), _) => b.fmt(f),
            (_, Some(t)) => f
                .debug_struct("TriangleCopy")
                .field("pointer_block", &t.pointer_block)
                .field("prim", &t.prim)
                .finish(),
            _ => f.write_str("Empty"),
        }
    }
}

impl NodeCache {
    /// Decodes every box node reachable from `root` in `memory`, and copies every triangle
    /// node reachable from it into its block's entry unless that block holds a box (their
    /// primitive ids unset: see [`Self::set_primitive_ids`]). Pointers that leave the memory
    /// or fail the bounds check are skipped (the instruction handles them).
    pub fn build(memory: &BvhMemory, descriptor: &BvhDescriptor, root: NodePointer) -> NodeCache {
        NodeCache::build_from(memory, descriptor, &[root])
    }

    /// [`NodeCache::build`] from several roots: a two-level image's TLAS root and each
    /// BLAS's root (the walk does not enter instance nodes, and every BLAS is cached once,
    /// however many instances use it).
    pub fn build_from(
        memory: &BvhMemory,
        descriptor: &BvhDescriptor,
        roots: &[NodePointer],
    ) -> NodeCache {
        let blocks = memory.bytes.len() / 64;
        let mut cache = NodeCache {
            entries: vec![EMPTY_ENTRY; blocks],
            decoded: 0,
            built_for: Some((memory.bytes.len(), memory.va, *descriptor)),
        };
        let mut todo = roots.to_vec();
        while let Some(ptr) = todo.pop() {
            if ptr.is_invalid() {
                continue;
            }
            let ty = ptr.node_type();
            if ty.triangle_index().is_some() {
                cache.copy_triangle(memory, descriptor, ptr);
                continue;
            }
            if !ty.is_box() || !in_bounds(descriptor, ptr.into()) {
                continue;
            }
            let Some(offset) = memory.offset(descriptor, ptr, ty.fetch_bytes()) else {
                continue;
            };
            if offset % 64 != 0 {
                continue;
            }
            let entry = &mut cache.entries[offset / 64];
            if entry.tag() != EMPTY {
                continue;
            }
            let node_bytes = &memory.bytes[offset..offset + ty.fetch_bytes()];
            let node = if ty == NodeType::BoxF32 {
                DecodedBox::from_box32(&pod_read_unaligned(node_bytes))
            } else {
                DecodedBox::from_box16(&pod_read_unaligned(node_bytes))
            };
            *entry = CacheEntry { node };
            cache.decoded += 1;
            todo.extend(node.children);
        }
        cache
    }

    /// Copies the triangle node `ptr` names into its empty entry (a block that holds a box
    /// keeps it: such a triangle is read from memory).
    fn copy_triangle(&mut self, memory: &BvhMemory, descriptor: &BvhDescriptor, ptr: NodePointer) {
        if !in_bounds(descriptor, ptr.into()) {
            return;
        }
        let Some(offset) = memory.offset(descriptor, ptr, 64) else {
            return;
        };
        if offset % 64 != 0 || self.entries[offset / 64].tag() != EMPTY {
            return;
        }
        let triangle = TriangleCopy {
            node: pod_read_unaligned(&memory.bytes[offset..offset + 64]),
            prim: [u32::MAX; 4],
            pointer_block: ptr.address_64(),
            _unused: [0; 7],
            tag: TRIANGLE_COPY,
            _unused_after: [0; 3],
        };
        self.entries[offset / 64] = CacheEntry { triangle };
    }

    /// Sets the primitive ids of the copied triangle nodes: triangle `k` of the node at
    /// pointer block `b` gets `ids(b, k)`.
    pub fn set_primitive_ids(&mut self, ids: impl Fn(u32, u32) -> u32) {
        for e in &mut self.entries {
            if e.tag() == TRIANGLE_COPY {
                // SAFETY: the tag says the entry was written as a triangle copy.
                let t = unsafe { &mut e.triangle };
                t.prim = std::array::from_fn(|k| ids(t.pointer_block, k as u32));
            }
        }
    }

    /// The decoded box for a box node of type `ty` at byte `offset` in memory, if cached.
    #[inline]
    pub fn get(&self, ty: NodeType, offset: usize) -> Option<&DecodedBox> {
        self.entries
            .get(offset / 64)?
            .decoded_box_of_type(ty as u32)
    }

    /// The entries from 64-byte block `first` of memory on (empty past the end).
    pub(crate) fn entries_from(&self, first: usize) -> &[CacheEntry] {
        self.entries.get(first..).unwrap_or(&[])
    }

    /// Whether the cache was built for this memory and descriptor.
    pub fn built_for(&self, memory: &BvhMemory, descriptor: &BvhDescriptor) -> bool {
        self.built_for == Some((memory.bytes.len(), memory.va, *descriptor))
    }

    /// Hints the CPU to load the entry for byte `offset` (no effect on results).
    #[inline]
    pub fn prefetch(&self, offset: usize) {
        if let Some(e) = self.entries.get(offset / 64) {
            prefetch_lines(e as *const CacheEntry as *const u8, 2);
        }
    }

    /// Number of decoded box nodes.
    pub fn len(&self) -> usize {
        self.decoded
    }

    pub fn is_empty(&self) -> bool {
        self.decoded == 0
    }
}
