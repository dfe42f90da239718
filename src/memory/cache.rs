//! A set-associative LRU cache of line addresses: the set is (address / line) mod sets, a
//! miss allocates (evicting the least recently used way), and nothing is prefetched.

/// One cache: tags and last-use stamps, `ways` entries per set.
#[derive(Clone, Debug)]
pub struct Cache {
    sets: u64,
    ways: usize,
    line_shift: u32,
    /// Per way: the line number held (`u64::MAX`: empty).
    tags: Vec<u64>,
    /// Per way: when it was last used (0: never).
    stamps: Vec<u64>,
    clock: u64,
}

impl Cache {
    /// A cache of `sets` sets of `ways` lines of `line_bytes` (a power of two).
    pub fn new(sets: u64, ways: u32, line_bytes: u32) -> Cache {
        assert!(sets > 0 && ways > 0 && line_bytes.is_power_of_two());
        let n = (sets * ways as u64) as usize;
        Cache {
            sets,
            ways: ways as usize,
            line_shift: line_bytes.trailing_zeros(),
            tags: vec![u64::MAX; n],
            stamps: vec![0; n],
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
    #[inline]
    pub fn access(&mut self, line: u64) -> bool {
        self.clock += 1;
        let set = (line % self.sets) as usize;
        let base = set * self.ways;
        let tags = &mut self.tags[base..base + self.ways];
        let stamps = &mut self.stamps[base..base + self.ways];
        let mut victim = 0;
        for (w, &tag) in tags.iter().enumerate() {
            if tag == line {
                stamps[w] = self.clock;
                return true;
            }
            if stamps[w] < stamps[victim] {
                victim = w;
            }
        }
        tags[victim] = line;
        stamps[victim] = self.clock;
        false
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
