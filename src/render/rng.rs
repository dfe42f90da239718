//! Per-pixel random streams: PCG32 (O'Neill's XSH-RR output on a 64-bit LCG), one stream per
//! (seed, pixel, sample), so results do not depend on which worker renders what.

/// A PCG32 generator.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
    inc: u64,
}

const PCG_MULT: u64 = 6364136223846793005;

/// SplitMix64 finalizer: a bijective 64-bit mix.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The stream of sample `sample` of pixel `pixel` for render seed `seed`.
    pub fn for_sample(seed: u64, pixel: u64, sample: u64) -> Rng {
        let inc = (mix64(seed ^ mix64(pixel)) << 1) | 1;
        let mut rng = Rng { state: 0, inc };
        rng.next_u32();
        rng.state = rng
            .state
            .wrapping_add(mix64(sample ^ mix64(seed.rotate_left(17))));
        rng.next_u32();
        rng
    }

    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// Uniform in [0, 1) with 24 bits.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
    }

    pub fn next_2d(&mut self) -> [f32; 2] {
        [self.next_f32(), self.next_f32()]
    }
}
