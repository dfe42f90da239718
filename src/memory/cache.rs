//! A set-associative LRU cache of line addresses: the set is (address / line) mod sets, a
//! miss allocates (evicting the least recently used way), and nothing is prefetched.

use wide::u32x8;

/// One cache: per way, the line it holds and when it was last used. Lines are kept as
/// u32 (a line number of 2^32 - 1 or more would need an image of 512 GiB). Each set's ways
/// are padded to a multiple of eight, compared eight at a time; a padding way never holds
/// a line and is never the least recently used.
#[derive(Clone, Debug)]
pub struct Cache {
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (the set is then a mask, not a division).
    set_mask: Option<u64>,
    /// Ways per set, padded to a multiple of eight.
    stride: usize,
    line_shift: u32,
    /// Per way: the line held (`EMPTY`: none).
    tags: Vec<u32>,
    /// Per way: the access count at its last use (0: never used; `u32::MAX`: padding).
    stamps: Vec<u32>,
    clock: u32,
}

/// The tag of an empty way.
const EMPTY: u32 = u32::MAX;

/// Eight ways of a set.
#[inline(always)]
fn eight(values: &[u32], c: usize) -> u32x8 {
    let chunk: [u32; 8] = values[8 * c..8 * c + 8].try_into().expect("eight ways");
    u32x8::from(chunk)
}

/// Index of the first of `values` (a multiple of eight long) equal to `v`.
#[inline(always)]
fn first_equal(values: &[u32], v: u32) -> Option<usize> {
    let v8 = u32x8::splat(v);
    (0..values.len() / 8).find_map(|c| {
        let mask = eight(values, c).simd_eq(v8).to_bitmask();
        (mask != 0).then(|| 8 * c + mask.trailing_zeros() as usize)
    })
}

impl Cache {
    /// A cache of `sets` sets of `ways` lines of `line_bytes` (a power of two).
    pub fn new(sets: u64, ways: u32, line_bytes: u32) -> Cache {
        assert!(sets > 0 && ways > 0 && line_bytes.is_power_of_two());
        let stride = (ways as usize).div_ceil(8) * 8;
        let n = sets as usize * stride;
        let mut stamps = vec![0; n];
        for set in stamps.chunks_exact_mut(stride) {
            set[ways as usize..].fill(u32::MAX);
        }
        Cache {
            sets,
            set_mask: sets.is_power_of_two().then(|| sets - 1),
            stride,
            line_shift: line_bytes.trailing_zeros(),
            tags: vec![EMPTY; n],
            stamps,
            clock: 0,
        }
    }

    /// The line number of byte address `address`.
    #[inline]
    pub fn line_of(&self, address: u64) -> u64 {
        address >> self.line_shift
    }

    /// Line size in bytes.
    pub fn line_bytes(&self) -> u64 {
        1 << self.line_shift
    }

    /// Accesses line `line`: whether it hit. A miss allocates the line in place of the
    /// set's least recently used way (an empty way first).
    #[inline(always)]
    pub fn access(&mut self, line: u64) -> bool {
        assert!(
            line < EMPTY as u64,
            "line number past the cache model's range"
        );
        if self.clock == u32::MAX - 1 {
            self.renumber();
        }
        self.clock += 1;
        let set = match self.set_mask {
            Some(mask) => line & mask,
            None => line % self.sets,
        } as usize;
        let base = set * self.stride;
        let tags = &mut self.tags[base..base + self.stride];
        let stamps = &mut self.stamps[base..base + self.stride];
        let line = line as u32;
        if let Some(k) = first_equal(tags, line) {
            stamps[k] = self.clock;
            return true;
        }
        let mut oldest = eight(stamps, 0);
        for c in 1..self.stride / 8 {
            oldest = oldest.min(eight(stamps, c));
        }
        let victim = first_equal(stamps, oldest.reduce_min()).unwrap_or(0);
        tags[victim] = line;
        stamps[victim] = self.clock;
        false
    }

    /// Renumbers the used ways' stamps 1, 2, ... in the order of their last use, keeping
    /// every set's LRU order (before the access count would reach the padding's stamp).
    #[cold]
    fn renumber(&mut self) {
        let mut order: Vec<(u32, usize)> = (self.stamps.iter().copied())
            .enumerate()
            .filter(|&(_, s)| s != 0 && s != u32::MAX)
            .map(|(i, s)| (s, i))
            .collect();
        order.sort_unstable();
        for (rank, &(_, i)) in order.iter().enumerate() {
            self.stamps[i] = rank as u32 + 1;
        }
        self.clock = order.len() as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_used_way() {
        // One set of two ways.
        let mut c = Cache::new(1, 2, 128);
        assert!(!c.access(1));
        assert!(!c.access(2));
        assert!(c.access(1));
        // 2 is the least recently used: 3 evicts it.
        assert!(!c.access(3));
        assert!(c.access(1));
        assert!(!c.access(2));
        // Now 3 was evicted (1 used after it).
        assert!(c.access(1));
        assert!(!c.access(3));
    }

    #[test]
    fn renumbering_keeps_the_lru_order() {
        let mut c = Cache::new(1, 3, 64);
        for line in [1, 2, 3, 1] {
            c.access(line);
        }
        c.clock = u32::MAX - 1;
        // Renumbered before this access; 2 is the oldest, then 3.
        assert!(!c.access(4));
        assert!(c.access(1));
        assert!(c.access(3));
        assert!(!c.access(2));
        assert!(c.access(3));
    }

    #[test]
    fn sets_are_line_mod_sets() {
        let mut c = Cache::new(4, 1, 64);
        assert_eq!(c.line_of(64 * 9 + 5), 9);
        assert!(!c.access(1));
        assert!(!c.access(5)); // same set as 1: evicts it
        assert!(!c.access(1));
        assert!(!c.access(2)); // another set
        assert!(c.access(1));
    }
}
