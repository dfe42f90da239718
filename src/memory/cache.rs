//! A set-associative LRU cache of line addresses: the set is (address / line) mod sets, a
//! miss allocates (evicting the least recently used way), and nothing is prefetched.

use wide::u32x8;

/// One cache: each set's lines, most recently used first, so that a hit moves its line to
/// the front and a miss drops the set's last line (an empty way while there is one). Lines
/// are kept as u32 (a line number of 2^32 - 1 or more would need an image of 512 GiB). Each
/// set is padded to a multiple of eight ways, searched eight at a time; the padding never
/// holds a line.
#[derive(Clone, Debug)]
pub struct Cache {
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (the set is then a mask, not a division).
    set_mask: Option<u64>,
    ways: usize,
    /// Ways per set, padded to a multiple of eight.
    stride: usize,
    line_shift: u32,
    /// Per set, `stride` entries: the lines held, most recently used first (`EMPTY`: none).
    tags: Vec<u32>,
}

/// The tag of an empty way.
const EMPTY: u32 = u32::MAX;

/// Index of the first of `values` (a multiple of eight long) equal to `v`.
#[inline(always)]
fn first_equal(values: &[u32], v: u32) -> Option<usize> {
    let v8 = u32x8::splat(v);
    for (c, chunk) in values.chunks_exact(8).enumerate() {
        let eight: [u32; 8] = chunk.try_into().expect("eight ways");
        let mask = u32x8::from(eight).simd_eq(v8).to_bitmask();
        if mask != 0 {
            return Some(8 * c + mask.trailing_zeros() as usize);
        }
    }
    None
}

impl Cache {
    /// A cache of `sets` sets of `ways` lines of `line_bytes` (a power of two).
    pub fn new(sets: u64, ways: u32, line_bytes: u32) -> Cache {
        assert!(sets > 0 && ways > 0 && line_bytes.is_power_of_two());
        let stride = (ways as usize).div_ceil(8) * 8;
        Cache {
            sets,
            set_mask: sets.is_power_of_two().then(|| sets - 1),
            ways: ways as usize,
            stride,
            line_shift: line_bytes.trailing_zeros(),
            tags: vec![EMPTY; sets as usize * stride],
        }
    }

    /// The line number of byte address `address`.
    #[inline]
    pub fn line_of(&self, address: u64) -> u64 {
        address >> self.line_shift
    }

    /// Accesses line `line`: whether it hit. A miss allocates the line in place of the
    /// set's least recently used way (an empty way first).
    #[inline(always)]
    pub fn access(&mut self, line: u64) -> bool {
        assert!(
            line < EMPTY as u64,
            "line number past the cache model's range"
        );
        let set = match self.set_mask {
            Some(mask) => line & mask,
            None => line % self.sets,
        } as usize;
        let base = set * self.stride;
        let tags = &mut self.tags[base..base + self.stride];
        let line = line as u32;
        if tags[0] == line {
            return true;
        }
        let (hit, last) = match first_equal(tags, line) {
            Some(k) => (true, k),
            None => (false, self.ways - 1),
        };
        tags.copy_within(0..last, 1);
        tags[0] = line;
        hit
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
