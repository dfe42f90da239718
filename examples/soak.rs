//! Soak test, run by hand: back-to-back renders, traces and profiles with options drawn at
//! random, in one process through the library API. Every result must equal the first one
//! with the same options (no state leaks from one run into the next), and the process's
//! resident memory after the first 100 runs must stay flat to the end (no leak).
//!
//! `cargo run --release --example soak -- [RUNS]` (default 10,000; prints RSS before and
//! after, and exits 1 on a difference or on growth above 10 %).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use wavetrace::counters::Counters;
use wavetrace::math::Hit;
use wavetrace::profile::{self, RayKind, RaySet, Variant};
use wavetrace::render::{self, build_wave_tracer, Control, RenderOptions};
use wavetrace::scene::Scene;
use wavetrace::traverse::{Strategy, WaveTracer, WaveTracerConfig};
use wavetrace::wave::{Tracer, WaveWidth};

/// Resident set size in KiB (Linux; 0 elsewhere).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4)
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn hash_of(v: impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

fn hits_hash(hits: &[Hit]) -> u64 {
    hash_of(
        hits.iter()
            .map(|h| (h.t.to_bits(), h.prim_id, h.instance))
            .collect::<Vec<_>>(),
    )
}

fn counters_hash(c: &Counters) -> u64 {
    hash_of(serde_json::to_string(c).expect("counters serialize"))
}

const STRATEGIES: [Strategy; 4] = [
    Strategy::FullStack,
    Strategy::RestartTrail(3),
    Strategy::WalkBack(5),
    Strategy::StacklessTrail,
];

fn main() {
    let runs: u64 = std::env::args()
        .nth(1)
        .map_or(10_000, |s| s.parse().expect("RUNS is a number"));
    let cornell = Scene::load("scenes/cornell/cornell.toml").expect("shipped scene");
    let grove = Scene::load("scenes/grove/grove.toml").expect("shipped scene");
    let scenes = [&cornell, &grove];
    let mut first: HashMap<String, u64> = HashMap::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut before, mut differences) = (0, 0u64);
    for run in 0..runs {
        if run == 100.min(runs / 2) {
            before = rss_kib();
        }
        let scene = scenes[rng.below(2) as usize];
        let config = WaveTracerConfig {
            wave: if rng.below(2) == 0 {
                WaveWidth::W32
            } else {
                WaveWidth::W64
            },
            strategy: STRATEGIES[rng.below(4) as usize],
            parallel: rng.below(2) == 0,
            ..WaveTracerConfig::default()
        };
        let (key, value) = match rng.below(3) {
            0 => {
                let (tracer, _) = build_wave_tracer(scene, config).expect("builds");
                let mut opts = RenderOptions::for_scene(scene);
                opts.spp = 1 + rng.below(2) as u32;
                opts.seed = rng.below(4);
                let mut small = scene.clone();
                small.film.width = 16;
                small.film.height = 16;
                let out =
                    render::render(&small, &tracer, &opts, Control::default()).expect("renders");
                let pixels: Vec<[u32; 3]> = (out.image.pixels.iter())
                    .map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()])
                    .collect();
                (
                    format!("render {:p} {config:?} {} {}", scene, opts.spp, opts.seed),
                    hash_of(pixels) ^ counters_hash(&out.stats.camera.counters),
                )
            }
            1 => {
                let (tracer, _): (WaveTracer, _) =
                    build_wave_tracer(scene, config).expect("builds");
                let rays = profile::scene_primary_rays(scene, 24, 16);
                let mut hits = vec![Hit::MISS; rays.len()];
                let mut counters = Counters::default();
                tracer.closest_hits(&rays, &mut hits, None, &mut counters);
                (
                    format!("trace {:p} {config:?}", scene),
                    hits_hash(&hits) ^ counters_hash(&counters),
                )
            }
            _ => {
                let mesh = profile::scene_mesh(&cornell);
                let image = profile::reference_image(&mesh).expect("builds");
                let primary = profile::scene_primary_rays(&cornell, 16, 16);
                let kind = [RayKind::Primary, RayKind::Diffuse][rng.below(2) as usize];
                let (set, _): (RaySet, _) = profile::make_rays(kind, &mesh, &image, primary, 1);
                let mut variant = Variant::baseline();
                variant.traversal = config.strategy;
                variant.wave = config.wave;
                let report =
                    profile::profile("soak", &mesh, &set, &[variant], &config.console, None)
                        .expect("profiles");
                let v = &report.variants[0];
                (
                    format!("profile {kind:?} {config:?}"),
                    hash_of((v.td_clocks_per_ray.to_bits(), v.wrong_rays, &v.ray_clocks)),
                )
            }
        };
        let expected = *first.entry(key.clone()).or_insert(value);
        if expected != value {
            differences += 1;
            eprintln!("run {run}: {key} gave another result than its first run");
        }
    }
    let after = rss_kib();
    println!(
        "{runs} runs, {} configurations, {differences} differences; RSS {before} KiB after the \
         warm-up, {after} KiB at the end",
        first.len()
    );
    let grew = after as f64 > before as f64 * 1.10;
    if differences > 0 || grew {
        std::process::exit(1);
    }
}
