//! What the wave loop records for the memory model: each wave instruction's node fetches.
//!
//! A [`Dispatch`] is one call of the tracer (one `DispatchRays`): per wave instruction, the
//! lanes that fetched a node and the lanes among them that reached the TD, and one fetch a
//! lane in lane order. A fetch is the node's 64-byte block within the image and its size:
//! 64 bytes for FP16 box and triangle nodes and procedural nodes, 128 bytes for FP32 box
//! nodes and instance nodes (which the traversal shader loads; they cost no TD clock).

use crate::hw::{NodePointer, NodeType};

/// Set in a fetch word for a 128-byte node (else 64 bytes); the other bits are the block.
pub const FETCH_128: u32 = 1 << 31;

/// One wave instruction's fetches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Instr {
    /// The wave within its dispatch (wave w has rays `width w..width (w + 1)`).
    pub wave: u32,
    /// Index of the instruction's first fetch in [`Dispatch::fetches`].
    pub first: u32,
    /// Lanes that fetched a node (bit i: lane i of the wave), one fetch each in lane order.
    pub lanes: u64,
    /// Lanes whose query reached the TD (box and triangle nodes; a subset of `lanes`).
    pub td: u64,
}

impl Instr {
    /// The instruction's fetch words.
    #[inline]
    pub fn fetches<'d>(&self, dispatch: &'d Dispatch) -> &'d [u32] {
        let first = self.first as usize;
        &dispatch.fetches[first..first + self.lanes.count_ones() as usize]
    }
}

/// The fetches of one tracer call, its instructions sorted by wave (each wave's in issue
/// order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dispatch {
    /// Lanes per wave: 32 or 64.
    pub width: u32,
    /// Rays of the call (ray `r` of wave `w` is lane `r - width w`, and per-ray outputs are
    /// indexed `width w + lane`; an appended dispatch keeps its partial waves' empty lanes).
    pub rays: u64,
    /// Waves of the call (`rays / width` rounded up, unless finished lanes took new rays).
    pub waves: u64,
    pub instrs: Vec<Instr>,
    pub fetches: Vec<u32>,
}

impl Dispatch {
    /// Appends `other`'s waves after this dispatch's, as one dispatch: its wave `w` becomes
    /// wave `self.waves + w` (so its rays' lanes start at `self.waves x width`); the widths
    /// must agree.
    pub fn append(&mut self, other: &Dispatch) {
        if self.instrs.is_empty() && self.rays == 0 {
            self.width = other.width;
        }
        assert_eq!(self.width, other.width, "dispatches of one wave width");
        let wave_base = self.waves as u32;
        let fetch_base = self.fetches.len() as u32;
        self.instrs.extend(other.instrs.iter().map(|i| Instr {
            wave: i.wave + wave_base,
            first: i.first + fetch_base,
            ..*i
        }));
        self.fetches.extend_from_slice(&other.fetches);
        self.rays += other.rays;
        self.waves += other.waves;
    }
}

/// The fetch word and TD flag of a lane's instruction at `node`, or `None` when it fetches
/// nothing (past the image's `blocks`).
#[inline(always)]
pub fn node_fetch(node: NodePointer, blocks: u32) -> Option<(u32, bool)> {
    let (word, fetched, td) = node_fetch_bits(node, blocks);
    (fetched == 1).then_some((word, td == 1))
}

/// [`node_fetch`] without a branch on the node's type (the wave loop records every lane's
/// fetch, and the types of a wave's nodes are data the host cannot predict): the fetch word,
/// whether it fetches (1) or not (0), and whether it takes a TD clock (1) or not (0).
#[inline(always)]
pub fn node_fetch_bits(node: NodePointer, blocks: u32) -> (u32, u32, u32) {
    let ty = node.type_bits();
    // Bit t: whether type t is a 128-byte node (FP32 box, instance) / reaches the TD (all
    // but the two software types).
    const SIZE_128: u32 = (1 << NodeType::BoxF32 as u32) | (1 << NodeType::User6 as u32);
    const ON_TD: u32 = !((1 << NodeType::User6 as u32) | (1 << NodeType::User7 as u32)) & 0xFF;
    let size_128 = (SIZE_128 >> ty) & 1;
    let block = node.address_64();
    let end = block as u64 + 1 + size_128 as u64;
    let fetched = (end <= blocks as u64) as u32;
    (block | (FETCH_128 * size_128), fetched, (ON_TD >> ty) & 1)
}

/// The bytes and first byte address of a fetch word.
#[inline]
pub fn fetch_span(word: u32) -> (u64, u32) {
    let address = ((word & !FETCH_128) as u64) * 64;
    let bytes = if word & FETCH_128 != 0 { 128 } else { 64 };
    (address, bytes)
}

/// The fetch log a [`Counters`](crate::counters::Counters) carries when the memory model is
/// on: sealed dispatches, and the instructions of the call in progress (from any number of
/// workers, merged in any order and sorted by wave when the call ends).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FetchLog {
    /// Whether the wave loop records into this log.
    pub enabled: bool,
    pub dispatches: Vec<Dispatch>,
    pending: Dispatch,
}

impl FetchLog {
    /// An empty log that records.
    pub fn recording() -> FetchLog {
        FetchLog {
            enabled: true,
            ..FetchLog::default()
        }
    }

    /// Makes room for the fetches of about `rays` more rays in the call in progress, so that
    /// the log does not grow by copies (each a fresh buffer whose pages the kernel must map:
    /// recording sponza's diffuse rays spent a fifth of its time in page faults). Room that
    /// is not written costs only address space; past it the log grows as before.
    pub fn reserve_for_rays(&mut self, rays: usize) {
        // About the most fetches a ray of the shared sets makes (8-31 a ray), within a bound
        // that keeps the address space reserved modest.
        const FETCHES_PER_RAY: usize = 32;
        const MOST_WORDS: usize = 1 << 24;
        let words = rays.saturating_mul(FETCHES_PER_RAY).min(MOST_WORDS);
        // Instructions carry at least a lane each, and usually a dozen or more.
        let instrs = words / 8;
        crate::host::without_huge_pages(|| {
            self.pending.fetches.reserve(words);
            self.pending.instrs.reserve(instrs);
        });
    }

    /// Records one instruction of wave `wave` of the call in progress: the lanes in
    /// `lanes` (bit i: lane i) with their fetch words, TD lanes in `td`.
    #[inline]
    pub fn push(&mut self, wave: u32, lanes: u64, td: u64, fetches: &[u32]) {
        debug_assert_eq!(lanes.count_ones() as usize, fetches.len());
        let first = self.pending.fetches.len() as u32;
        self.pending.instrs.push(Instr {
            wave,
            first,
            lanes,
            td,
        });
        self.pending.fetches.extend_from_slice(fetches);
    }

    /// Adds `other`'s dispatches and pending instructions after this log's.
    pub fn merge(&mut self, other: &FetchLog) {
        self.dispatches.extend(other.dispatches.iter().cloned());
        let base = self.pending.fetches.len() as u32;
        self.pending
            .instrs
            .extend(other.pending.instrs.iter().map(|i| Instr {
                first: i.first + base,
                ..*i
            }));
        self.pending
            .fetches
            .extend_from_slice(&other.pending.fetches);
        self.enabled |= other.enabled;
    }

    /// Ends the call in progress: `rays` rays in `waves` waves of `width` lanes. Its
    /// instructions are sorted by wave (a stable sort: each wave's stay in issue order).
    pub fn seal(&mut self, width: u32, rays: u64, waves: u64) {
        let mut d = std::mem::take(&mut self.pending);
        // A counting sort by wave (stable): the instructions arrive nearly in wave order,
        // one or two waves at a time, so each wave's words stay together where they are.
        let wave_count = d
            .instrs
            .iter()
            .map(|i| i.wave as usize + 1)
            .max()
            .unwrap_or(0);
        let mut at = vec![0u32; wave_count + 1];
        for i in &d.instrs {
            at[i.wave as usize + 1] += 1;
        }
        for w in 0..wave_count {
            at[w + 1] += at[w];
        }
        let mut sorted = vec![Instr::default(); d.instrs.len()];
        for i in &d.instrs {
            let k = &mut at[i.wave as usize];
            sorted[*k as usize] = *i;
            *k += 1;
        }
        d.instrs = sorted;
        d.width = width;
        d.rays = rays;
        d.waves = waves;
        self.dispatches.push(d);
    }

    /// Takes the sealed dispatches.
    pub fn take(&mut self) -> Vec<Dispatch> {
        std::mem::take(&mut self.dispatches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_fetch_sizes_follow_the_node_type() {
        let p = |block, ty| NodePointer::new(block, ty);
        assert_eq!(node_fetch(p(3, NodeType::BoxF16), 10), Some((3, true)));
        assert_eq!(
            node_fetch(p(3, NodeType::BoxF32), 10),
            Some((3 | FETCH_128, true))
        );
        assert_eq!(
            node_fetch(p(3, NodeType::User6), 10),
            Some((3 | FETCH_128, false))
        );
        assert_eq!(node_fetch(p(3, NodeType::User7), 10), Some((3, false)));
        assert_eq!(node_fetch(p(9, NodeType::Triangle2), 10), Some((9, true)));
        assert_eq!(node_fetch(p(9, NodeType::BoxF32), 10), None);
        assert_eq!(fetch_span(3 | FETCH_128), (192, 128));
        // Every type, from the node formats: (128 bytes, reaches the TD).
        let expected = [
            (NodeType::Triangle0, false, true),
            (NodeType::Triangle1, false, true),
            (NodeType::Triangle2, false, true),
            (NodeType::Triangle3, false, true),
            (NodeType::BoxF16, false, true),
            (NodeType::BoxF32, true, true),
            (NodeType::User6, true, false),
            (NodeType::User7, false, false),
        ];
        for (ty, size_128, td) in expected {
            let word = 5 | if size_128 { FETCH_128 } else { 0 };
            assert_eq!(node_fetch(p(5, ty), 8), Some((word, td)), "{ty:?}");
            // The last block: a 128-byte node would run past the image.
            let last = node_fetch(p(7, ty), 8);
            assert_eq!(last.is_none(), size_128, "{ty:?}");
        }
    }

    #[test]
    fn merged_logs_seal_in_wave_order() {
        let mut a = FetchLog::recording();
        let mut b = FetchLog::recording();
        b.push(1, 0b1, 0b1, &[7]);
        a.push(0, 0b11, 0b01, &[1, 2]);
        b.push(1, 0b10, 0b10, &[8]);
        a.push(0, 0b1, 0b1, &[3]);
        let mut m = FetchLog::recording();
        m.merge(&b);
        m.merge(&a);
        m.seal(32, 64, 2);
        let d = &m.dispatches[0];
        let waves: Vec<u32> = d.instrs.iter().map(|i| i.wave).collect();
        assert_eq!(waves, [0, 0, 1, 1]);
        assert_eq!(d.instrs[0].fetches(d), [1, 2]);
        assert_eq!(d.instrs[1].fetches(d), [3]);
        assert_eq!(d.instrs[3].fetches(d), [8]);
    }
}
