//! A set-associative LRU cache of line addresses: the set is (address / line) mod sets, a
//! miss allocates (evicting the least recently used way), and nothing is prefetched.

use wide::{i8x16, u32x8};

/// One cache. Each way holds a line and its rank in the set's recency order (0 the most
/// recently used, `ways - 1` the least), so that an access changes no way's place: it
/// ranks its line 0 and ranks the lines that were more recent one older, all in one vector
/// step, and a miss takes the way ranked `ways - 1`. Ranks start as 0..ways over empty
/// ways, so that empty ways are taken before any line is evicted. Lines are kept as u32 (a
/// line number of 2^32 - 1 or more would need an image of 512 GiB).
#[derive(Clone, Debug)]
pub struct Cache {
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (the set is then a mask, not a division).
    set_mask: Option<u64>,
    /// The rank of a set's least recently used way, biased as in `ranks`.
    oldest: i8,
    /// Tags per set: the ways padded to a multiple of eight (padding never holds a line).
    tag_stride: usize,
    /// Ranks per set: the ways padded to a multiple of sixteen.
    rank_stride: usize,
    line_shift: u32,
    /// Per set, `tag_stride` lines (`EMPTY`: none).
    tags: Vec<u32>,
    /// Per set, `rank_stride` ranks minus 128, so that signed byte compares order the 256
    /// ranks of the largest sets. Padding ranks are 127 (rank 255): never the oldest of a
    /// set of fewer than 256 ways, never younger than a way.
    ranks: Vec<i8>,
    /// Per set, the way ranked 0: a repeat of the newest line changes nothing.
    newest: Vec<u8>,
}

/// The tag of an empty way.
const EMPTY: u32 = u32::MAX;

/// A rank as stored (0..=255 to -128..=127).
fn biased(rank: usize) -> i8 {
    (rank as i32 - 128) as i8
}

impl Cache {
    /// A cache of `sets` sets of `ways` (1..=256) lines of `line_bytes` (a power of two).
    pub fn new(sets: u64, ways: u32, line_bytes: u32) -> Cache {
        assert!(sets > 0 && (1..=256).contains(&ways) && line_bytes.is_power_of_two());
        let ways = ways as usize;
        let tag_stride = ways.div_ceil(8) * 8;
        let rank_stride = ways.div_ceil(16) * 16;
        let set_ranks: Vec<i8> = (0..rank_stride)
            .map(|k| if k < ways { biased(k) } else { i8::MAX })
            .collect();
        Cache {
            sets,
            set_mask: sets.is_power_of_two().then(|| sets - 1),
            oldest: biased(ways - 1),
            tag_stride,
            rank_stride,
            line_shift: line_bytes.trailing_zeros(),
            tags: vec![EMPTY; sets as usize * tag_stride],
            ranks: set_ranks.repeat(sets as usize),
            newest: vec![0; sets as usize],
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
        let line = line as u32;
        let tags = &mut self.tags[set * self.tag_stride..(set + 1) * self.tag_stride];
        let newest = &mut self.newest[set];
        if tags[*newest as usize] == line {
            return true;
        }
        let ranks = &mut self.ranks[set * self.rank_stride..(set + 1) * self.rank_stride];
        // The common shapes with their strides known to the compiler (its loops unrolled).
        let (hit, way) = match (tags.len(), ranks.len()) {
            (16, 16) => renew(&mut tags[..16], &mut ranks[..16], line, self.oldest),
            (32, 32) => renew(&mut tags[..32], &mut ranks[..32], line, self.oldest),
            _ => renew(tags, ranks, line, self.oldest),
        };
        *newest = way as u8;
        hit
    }
}

/// Looks `line` up in a set's `tags` and `ranks` (`oldest` the rank of its least recently
/// used way): whether it hit, and the way that now holds it, ranked newest.
#[inline(always)]
fn renew(tags: &mut [u32], ranks: &mut [i8], line: u32, oldest: i8) -> (bool, usize) {
    // The way holding the line: every chunk compared, no early exit, so that where a
    // line sits costs no branch.
    let v8 = u32x8::splat(line);
    let mut way = usize::MAX;
    for (c, chunk) in tags.chunks_exact(8).enumerate() {
        let eight: [u32; 8] = chunk.try_into().expect("eight ways");
        let mask = u32x8::from(eight).simd_eq(v8).to_bitmask();
        if mask != 0 {
            way = 8 * c + mask.trailing_zeros() as usize;
        }
    }
    let hit = way != usize::MAX;
    if !hit {
        let oldest = i8x16::splat(oldest);
        for (c, chunk) in ranks.chunks_exact(16).enumerate() {
            let sixteen: [i8; 16] = chunk.try_into().expect("sixteen ranks");
            let mask = i8x16::from(sixteen).simd_eq(oldest).to_bitmask();
            if mask != 0 {
                way = 16 * c + mask.trailing_zeros() as usize;
            }
        }
        tags[way] = line;
    }
    // Every way more recent than this one ages by one; this one becomes the newest.
    let rank = i8x16::splat(ranks[way]);
    for chunk in ranks.chunks_exact_mut(16) {
        let sixteen: [i8; 16] = (&*chunk).try_into().expect("sixteen ranks");
        let v = i8x16::from(sixteen);
        // A true lane of a compare is -1: subtracting it adds one.
        let aged = v - v.simd_lt(rank);
        chunk.copy_from_slice(&aged.to_array());
    }
    ranks[way] = biased(0);
    (hit, way)
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

    /// The hits of an LRU cache kept as a list per set, most recent first (a second
    /// algorithm: the list moves, nothing is ranked).
    fn list_lru_hits(sets: u64, ways: usize, lines: &[u64]) -> Vec<bool> {
        let mut lists = vec![Vec::<u64>::new(); sets as usize];
        lines
            .iter()
            .map(|&line| {
                let list = &mut lists[(line % sets) as usize];
                let found = list.iter().position(|&l| l == line);
                match found {
                    Some(k) => {
                        list.remove(k);
                    }
                    None if list.len() == ways => {
                        list.pop();
                    }
                    None => {}
                }
                list.insert(0, line);
                found.is_some()
            })
            .collect()
    }

    #[test]
    fn ranks_give_the_hits_of_a_recency_list() {
        // Every padding case (ways below, at and across multiples of 8 and 16, up to 256),
        // power-of-two and other set counts, streams that hit often and rarely.
        let mut random = crate::profile::rays::SplitMix64(0x2545_f491_4f6c_dd1d);
        for &(sets, ways) in &[
            (1, 1),
            (4, 1),
            (1, 2),
            (3, 7),
            (4, 8),
            (5, 9),
            (2, 16),
            (7, 17),
            (4, 32),
            (64, 16),
            (3, 100),
            (1, 255),
            (2, 256),
        ] {
            for span in [ways as u64 * sets, 3 * ways as u64 * sets / 2 + 1, 1 << 20] {
                let lines: Vec<u64> = (0..4000).map(|_| random.next_u64() % span).collect();
                let mut cache = Cache::new(sets, ways as u32, 128);
                let got: Vec<bool> = lines.iter().map(|&l| cache.access(l)).collect();
                let want = list_lru_hits(sets, ways, &lines);
                assert_eq!(got, want, "{sets} sets of {ways} ways, lines below {span}");
                if span <= ways as u64 * sets {
                    assert!(got.iter().filter(|&&h| h).count() > 2000);
                }
            }
        }
    }
}
