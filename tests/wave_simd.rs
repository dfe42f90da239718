//! The SIMD wave intersector against the scalar reference `hw::image_bvh_intersect_ray`,
//! bit for bit, on more than 10^6 seeded random lanes issued as whole waves (mixed node
//! types per wave, random exec masks): NaN, infinities, ±0 and denormal direction
//! components, inconsistent inverse directions, degenerate, edge-on and exactly-tied
//! triangles, inverted / NaN / infinite boxes, user nodes, out-of-bounds and unmapped nodes.

use wavetrace::hw::{
    image_bvh_intersect_ray, BvhDescriptor, LaneOutcome, NodePointer, NodeType, RayRegisters,
    TriangleReturnMode,
};
use wavetrace::wave::{BvhMemory, NodeCache, Wave, WaveIntersector, WaveResults};

/// splitmix64: a small seeded generator (no dependency, stable across versions).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    /// A coordinate: mostly ordinary values at one of several scales, sometimes small
    /// integers (exact products, ties) or specials.
    fn coord(&mut self, scale: f32) -> f32 {
        match self.below(100) {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => 0.0,
            4 => -0.0,
            5 => f32::MAX * if self.chance(0.5) { 1.0 } else { -1.0 },
            6..=25 => (self.below(9) as f32 - 4.0) * scale,
            _ => (self.unit() * 2.0 - 1.0) * scale,
        }
    }
    fn dir_component(&mut self) -> f32 {
        match self.below(100) {
            0..=9 => 0.0,
            10..=13 => -0.0,
            14 => f32::from_bits(1 + self.below(1000) as u32), // denormal
            15 => -f32::from_bits(1 + self.below(1000) as u32),
            16 => f32::INFINITY,
            17 => 1e30,
            18 => f32::NAN,
            19..=30 => self.below(5) as f32 - 2.0,
            _ => self.unit() * 2.0 - 1.0,
        }
    }
}

const NODES: usize = 512;
const NODE_BYTES: usize = 128;

fn random_ray(rng: &mut Rng, scale: f32) -> RayRegisters {
    let dir = [
        rng.dir_component(),
        rng.dir_component(),
        rng.dir_component(),
    ];
    let mut inv_dir = dir.map(|d| 1.0 / d);
    if rng.chance(0.03) {
        inv_dir[rng.below(3) as usize] = rng.coord(1.0);
    }
    let origin = if rng.chance(0.97) {
        [0, 1, 2].map(|_| (rng.unit() * 2.0 - 1.0) * scale)
    } else {
        [0, 1, 2].map(|_| rng.coord(scale))
    };
    let extent = match rng.below(10) {
        0..=3 => f32::INFINITY,
        4 => 0.0,
        5 => -1.0,
        6 => f32::NAN,
        _ => rng.unit() * 4.0 * scale,
    };
    RayRegisters {
        extent,
        origin,
        dir,
        inv_dir,
    }
}

/// Fills node slot `n` of `mem` with random box32, box16 and triangle bytes at once (the
/// pointer's type decides how they are read), built around `ray` so that many tests hit.
fn random_node(rng: &mut Rng, mem: &mut [u8], n: usize, ray: &RayRegisters, scale: f32) {
    let bytes = &mut mem[n * NODE_BYTES..(n + 1) * NODE_BYTES];
    let put = |bytes: &mut [u8], off: usize, v: u32| {
        bytes[off..off + 4].copy_from_slice(&v.to_le_bytes());
    };
    let dir_ok = ray.dir.iter().all(|d| d.is_finite());
    let along = |rng: &mut Rng, t: f32| -> [f32; 3] {
        std::array::from_fn(|a| {
            let p = ray.origin[a] + if dir_ok { ray.dir[a] * t } else { 0.0 };
            p + (rng.unit() - 0.5) * scale * 0.1
        })
    };
    match rng.below(4) {
        // Box-flavoured: child pointers and boxes (also read as box16 halves).
        0 | 1 => {
            for c in 0..4 {
                let ptr = match rng.below(8) {
                    0 => NodePointer::INVALID.to_u32(),
                    1 => 0,
                    2 => rng.next() as u32,
                    _ => (rng.below(64) as u32) << 3 | rng.below(6) as u32,
                };
                put(bytes, 4 * c, ptr);
            }
            for c in 0..4 {
                let (lo, hi): ([f32; 3], [f32; 3]) = match rng.below(6) {
                    0 => {
                        let t = rng.unit() * 2.0 * scale;
                        let p = along(rng, t);
                        let h = [0, 1, 2].map(|_| rng.pick(&[0.0, scale * 0.01, scale]));
                        (
                            std::array::from_fn(|a| p[a] - h[a]),
                            std::array::from_fn(|a| p[a] + h[a]),
                        )
                    }
                    1 => (ray.origin, ray.origin),
                    2 => {
                        let a = [0, 1, 2].map(|_| rng.coord(scale));
                        let b = [0, 1, 2].map(|_| rng.coord(scale));
                        (a, b)
                    }
                    3 => ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
                    4 => ([f32::NAN; 3], [f32::NAN; 3]),
                    _ => {
                        let t = rng.unit() * scale;
                        let p = along(rng, t);
                        (p, p.map(|v| v + rng.unit() * scale))
                    }
                };
                for a in 0..3 {
                    put(bytes, 16 + 24 * c + 4 * a, lo[a].to_bits());
                    put(bytes, 16 + 24 * c + 12 + 4 * a, hi[a].to_bits());
                }
            }
        }
        // Triangle-flavoured: five vertices around the ray, sometimes exact or degenerate.
        _ => {
            let exact = rng.chance(0.3);
            let t = rng.unit() * 3.0 * scale;
            let center = along(rng, t);
            for v in 0..5 {
                let p: [f32; 3] = match rng.below(20) {
                    0 => [f32::NAN; 3],
                    1 => [rng.coord(scale), rng.coord(scale), rng.coord(scale)],
                    2 => center,
                    _ if exact => [0, 1, 2].map(|_| rng.below(7) as f32 - 3.0),
                    _ => std::array::from_fn(|a| center[a] + (rng.unit() - 0.5) * scale),
                };
                for (a, c) in p.iter().enumerate() {
                    put(bytes, 12 * v + 4 * a, c.to_bits());
                }
            }
            let word = if rng.chance(0.8) {
                let nib = || [1u32, 2, 4, 6, 8, 9];
                (0..4).fold(0u32, |w, k| {
                    w | rng.pick(&nib()) << (8 * k) | (rng.below(16) as u32) << (8 * k + 4)
                })
            } else {
                rng.next() as u32
            };
            put(bytes, 60, word);
            for off in (64..128).step_by(4) {
                put(bytes, off, rng.next() as u32);
            }
        }
    }
}

#[test]
fn wide_min_max_drop_nan_like_min_num_max_num() {
    use wide::f32x4;
    let nan = f32::NAN;
    let a = f32x4::new([nan, 1.0, nan, -0.0]);
    let b = f32x4::new([2.0, nan, nan, 3.0]);
    let max = a.max(b).to_array();
    let min = a.min(b).to_array();
    assert_eq!(max[0], 2.0);
    assert_eq!(max[1], 1.0);
    assert!(max[2].is_nan());
    assert_eq!(max[3], 3.0);
    assert_eq!(min[0], 2.0);
    assert_eq!(min[1], 1.0);
    assert!(min[2].is_nan());
    assert_eq!(min[3], -0.0);
    // The raw instruction forms are not minNum/maxNum on x86 (they return the second
    // operand when either is NaN): the reason the intersector does not use them.
    if cfg!(target_arch = "x86_64") {
        assert!(f32x4::splat(1.0).fast_max(f32x4::splat(nan)).to_array()[0].is_nan());
    }
}

#[test]
fn simd_wave_instruction_is_bit_identical_to_the_scalar_reference() {
    let mut rng = Rng(0x5EED_0004);
    let mut mem = vec![0u8; NODES * NODE_BYTES];
    let mut lanes_checked = 0u64;
    let mut by_outcome = [0u64; 5];
    let mut triangle_hits = 0u64;
    let mut box_hits = 0u64;
    let mut round = 0u64;
    while lanes_checked < 1_050_000 {
        round += 1;
        let scale = rng.pick(&[1.0f32, 1e3, 1e-3, 1e6, 1e-6, 1e-30, 1e25]);
        let ray_pool: Vec<RayRegisters> = (0..64).map(|_| random_ray(&mut rng, scale)).collect();
        for n in 0..NODES {
            let r = ray_pool[n % 64];
            random_node(&mut rng, &mut mem, n, &r, scale);
        }
        let descriptor = BvhDescriptor {
            box_grow_ulps: rng.pick(&[0, 1, 6, 8, 255]),
            box_sort_enable: rng.chance(0.8),
            size_minus_one: if rng.chance(0.1) {
                rng.below(2 * NODES as u64 * 2)
            } else {
                (1 << 42) - 1
            },
            triangle_return_mode: if rng.chance(0.5) {
                TriangleReturnMode::Barycentrics
            } else {
                TriangleReturnMode::TriangleId
            },
            ..BvhDescriptor::default()
        };
        // Node slots are 128 bytes = two 64-byte addresses; pointers name slot starts, with a
        // few pointing past the memory (unmapped).
        let memory = BvhMemory { bytes: &mem, va: 0 };
        let cache = NodeCache::build(&memory, &descriptor, NodePointer::from_u32(0x5));
        let with_cache = round.is_multiple_of(2);
        let intersector = WaveIntersector::new(memory, descriptor, with_cache.then_some(&cache));
        for _ in 0..32 {
            let mut wave: Wave<64> = Wave::new(0);
            for i in 0..64 {
                let slot = if rng.chance(0.01) {
                    NODES as u32 + rng.below(8) as u32
                } else {
                    rng.below(NODES as u64) as u32
                };
                let ty = match rng.below(16) {
                    0..=4 => NodeType::BoxF32 as u32,
                    5..=8 => NodeType::BoxF16 as u32,
                    9 => 6 + rng.below(2) as u32,
                    _ => rng.below(4) as u32,
                };
                let ray = if rng.chance(0.7) {
                    ray_pool[slot as usize % 64]
                } else {
                    ray_pool[rng.below(64) as usize]
                };
                if rng.chance(0.9) {
                    wave.activate(i, NodePointer::from_u32((slot * 2) << 3 | ty), ray);
                }
            }
            let mut out = WaveResults::<64>::default();
            wave.exec &= if rng.chance(0.2) {
                rng.next()
            } else {
                u64::MAX
            };
            intersector.issue(&wave, &mut out);
            for i in 0..64 {
                if wave.exec & (1 << i) == 0 {
                    continue;
                }
                let expect = image_bvh_intersect_ray(
                    &mem[..],
                    &descriptor,
                    wave.node[i].to_u32(),
                    &wave.ray[i],
                );
                assert_eq!(
                    (out.dwords[i], out.outcome[i]),
                    (expect.dwords, expect.outcome),
                    "round {round} lane {i}: node {:#x} ray {:?} descriptor {:?}",
                    wave.node[i],
                    wave.ray[i],
                    descriptor
                );
                lanes_checked += 1;
                let ty = wave.node[i].node_type();
                let slot = match expect.outcome {
                    LaneOutcome::Tested => {
                        if ty.is_box() && expect.dwords[0] != u32::MAX {
                            box_hits += 1;
                        }
                        if ty.triangle_index().is_some() && expect.dwords[0] != 0x7f80_0000 {
                            triangle_hits += 1;
                        }
                        0
                    }
                    LaneOutcome::Inactive(_) => 1,
                    LaneOutcome::UserNode => 2,
                    LaneOutcome::OutOfBounds => 3,
                    LaneOutcome::Unmapped => 4,
                };
                by_outcome[slot] += 1;
            }
        }
    }
    eprintln!(
        "{lanes_checked} lanes: outcomes {by_outcome:?}, box hits {box_hits}, triangle hits {triangle_hits}"
    );
    // The generator must exercise every path substantially.
    assert!(by_outcome.iter().all(|&n| n > 1000), "{by_outcome:?}");
    assert!(box_hits > 50_000 && triangle_hits > 10_000);
}
