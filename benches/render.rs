//! Render throughput through the wave model (counters on, as in every render): samples per
//! second and rays per second on the Cornell box and the bunny scene, on one worker thread
//! and on all of them. Each figure is the median of 3 runs; every run is then checked (image
//! finite and lit, the counters of the 1-thread and all-thread runs identical).
//!
//! `cargo bench --bench render` (the bunny scene needs ../shared/data/scenes/bunny.obj.gz).

use std::path::Path;
use std::time::Instant;
use wavetrace::hw::peak::SERIES_X;
use wavetrace::render::{build_wave_tracer, render, Control, RenderOptions, RenderStats};
use wavetrace::scene::Scene;
use wavetrace::traverse::WaveTracerConfig;
use wavetrace::wave::WaveWidth;

const SIZE: u32 = 128;
const SPP: u32 = 4;

fn load(rel: &str) -> Option<Scene> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let text = std::fs::read_to_string(&path).ok()?;
    let text = text
        .replace("width = 512", &format!("width = {SIZE}"))
        .replace("height = 512", &format!("height = {SIZE}"));
    match Scene::from_toml_str(&text, &path) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("skipping {rel}: {e}");
            None
        }
    }
}

fn main() {
    let all = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!("render bench: {SIZE}x{SIZE}, {SPP} spp, wave32, Series X counters, median of 3 runs");
    println!(
        "{:<8} {:>7} {:>9} {:>12} {:>10} {:>10} {:>12}",
        "scene", "threads", "seconds", "samples/s", "Mrays/s", "rays/spl", "TD clk/ray"
    );
    for (name, rel) in [
        ("cornell", "scenes/cornell/cornell.toml"),
        ("bunny", "scenes/bunny/bunny.toml"),
    ] {
        let Some(scene) = load(rel) else { continue };
        let config = WaveTracerConfig {
            wave: WaveWidth::W32,
            console: SERIES_X,
            ..WaveTracerConfig::default()
        };
        let (tracer, _) = build_wave_tracer(&scene, config).unwrap();
        let opts = RenderOptions {
            spp: SPP,
            seed: 1,
            ..RenderOptions::for_scene(&scene)
        };
        let mut per_threads: Vec<(usize, RenderStats)> = Vec::new();
        let mut base_rate = 0.0;
        for threads in [1, all] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..3 {
                let t = Instant::now();
                let out =
                    pool.install(|| render(&scene, &tracer, &opts, Control::default()).unwrap());
                times.push(t.elapsed().as_secs_f64());
                // Verify: finite, lit.
                assert!(out.image.pixels.iter().all(|p| p.is_finite()));
                assert!(out.image.mean().max_element() > 0.0);
                last = Some(out.stats);
            }
            times.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let secs = times[1];
            let stats = last.unwrap();
            let samples = (SIZE * SIZE * SPP) as f64;
            let rays = stats.total_rays() as f64;
            let clocks = stats.camera.counters.td_clocks
                + stats.bounce.counters.td_clocks
                + stats.shadow.counters.td_clocks;
            let rate = rays / secs / 1e6;
            if threads == 1 {
                base_rate = rate;
            }
            println!(
                "{:<8} {:>7} {:>9.3} {:>12.0} {:>10.3} {:>10.2} {:>12.1}{}",
                name,
                threads,
                secs,
                samples / secs,
                rate,
                rays / samples,
                clocks as f64 / rays,
                if threads == 1 {
                    String::new()
                } else {
                    format!("  ({:.2}x 1 thread)", rate / base_rate)
                }
            );
            per_threads.push((threads, stats));
        }
        // The counters do not depend on the thread count.
        let strip = |s: &RenderStats| {
            let mut s = s.clone();
            s.seconds = 0.0;
            s
        };
        assert_eq!(strip(&per_threads[0].1), strip(&per_threads[1].1));
    }
}
