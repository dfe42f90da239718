//! The same seed gives the same image (bit for bit) and the same counters whatever the
//! thread count; a different seed gives a different image.

mod common;

use common::{repo_path, BruteForceTracer};
use wavetrace::render::{build_wave_tracer, render, Control, RenderOptions, RenderOutput};
use wavetrace::scene::Scene;
use wavetrace::traverse::WaveTracerConfig;
use wavetrace::wave::Tracer;

fn small_cornell() -> Scene {
    let mut scene = Scene::load(repo_path("scenes/cornell/cornell.toml")).unwrap();
    // Same camera, smaller film.
    let text = std::fs::read_to_string(repo_path("scenes/cornell/cornell.toml"))
        .unwrap()
        .replace("width = 512", "width = 40")
        .replace("height = 512", "height = 32");
    let small = Scene::from_toml_str(&text, repo_path("scenes/cornell/cornell.toml")).unwrap();
    scene.camera = small.camera;
    scene.film = small.film;
    scene
}

fn render_with_threads(
    scene: &Scene,
    tracer: &dyn Tracer,
    threads: usize,
    seed: u64,
) -> RenderOutput {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let opts = RenderOptions {
        spp: 6,
        samples_per_pass: 4,
        tile_size: 8,
        seed,
        record_clocks: true,
        ..RenderOptions::for_scene(scene)
    };
    pool.install(|| render(scene, tracer, &opts, Control::default()).unwrap())
}

#[test]
fn same_seed_same_image_for_any_thread_count() {
    let scene = small_cornell();
    let brute = BruteForceTracer::new(&scene.geometry);
    let config = WaveTracerConfig {
        wave: wavetrace::wave::WaveWidth::W32,
        console: wavetrace::hw::peak::SERIES_X,
        ..WaveTracerConfig::default()
    };
    let (wave, _) = build_wave_tracer(&scene, config).unwrap();
    for tracer in [&brute as &dyn Tracer, &wave] {
        let a = render_with_threads(&scene, tracer, 1, 42);
        let b = render_with_threads(&scene, tracer, 2, 42);
        let c = render_with_threads(&scene, tracer, 3, 42);
        assert_eq!(a.image, b.image);
        assert_eq!(a.image, c.image);
        assert_eq!(a.camera_clocks, b.camera_clocks);
        // Everything but the wall-clock time is identical, counters included.
        let strip = |o: &RenderOutput| {
            let mut s = o.stats.clone();
            s.seconds = 0.0;
            s
        };
        assert_eq!(strip(&a), strip(&b));
        assert_eq!(strip(&a), strip(&c));
        assert!(a.image.mean().max_element() > 0.0);
        let d = render_with_threads(&scene, tracer, 2, 43);
        assert_ne!(a.image, d.image);
    }
}

/// The wave model and the brute-force f64 reference see the same scene: their images of
/// the Cornell box agree to within noise-free rounding (same seed, same samples: paths only
/// differ where a hit distance rounds differently).
#[test]
fn wave_tracer_and_reference_tracer_render_the_same_image() {
    let scene = small_cornell();
    let brute = BruteForceTracer::new(&scene.geometry);
    let config = WaveTracerConfig {
        wave: wavetrace::wave::WaveWidth::W64,
        console: wavetrace::hw::peak::SERIES_S,
        ..WaveTracerConfig::default()
    };
    let (wave, _) = build_wave_tracer(&scene, config).unwrap();
    let a = render_with_threads(&scene, &brute, 2, 9);
    let b = render_with_threads(&scene, &wave, 2, 9);
    let rmse = common::rmse(&a.image, &b.image);
    let mean = a.image.mean().element_sum() as f64 / 3.0;
    assert!(rmse < 0.02 * mean, "rmse {rmse} vs mean {mean}");
    assert_eq!(a.stats.camera.rays, b.stats.camera.rays);
    assert!(b.stats.camera.counters.td_clocks > 0);
    assert!(b.stats.shadow.counters.td_clocks > 0);
}
