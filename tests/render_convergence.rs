//! Convergence: on the Cornell box (16 x 16 pixels), the RMSE against a 2048-spp reference
//! (another seed) falls as 1/sqrt(spp).

mod common;

use common::{repo_path, rmse, BruteForceTracer};
use wavetrace::render::{render, Control, Image, RenderOptions};
use wavetrace::scene::Scene;

fn cornell(width: u32, height: u32) -> Scene {
    let text = std::fs::read_to_string(repo_path("scenes/cornell/cornell.toml"))
        .unwrap()
        .replace("width = 512", &format!("width = {width}"))
        .replace("height = 512", &format!("height = {height}"));
    Scene::from_toml_str(&text, repo_path("scenes/cornell/cornell.toml")).unwrap()
}

fn render_spp(scene: &Scene, tracer: &BruteForceTracer, spp: u32, seed: u64) -> Image {
    let opts = RenderOptions {
        spp,
        samples_per_pass: 64,
        seed,
        ..RenderOptions::for_scene(scene)
    };
    render(scene, tracer, &opts, Control::default())
        .unwrap()
        .image
}

/// The least-squares slope of log(RMSE) over log(spp), for 8 to 256 spp, is -1/2 within
/// 0.1 (single images are noisy estimates of the error, and the 2048-spp reference's own
/// noise flattens the slope slightly), and the error keeps falling overall (256 spp at
/// most a third of 8 spp; the ideal is 1/5.7).
#[test]
fn rmse_falls_as_one_over_sqrt_spp_on_the_cornell_box() {
    let scene = cornell(16, 16);
    let tracer = BruteForceTracer::new(&scene.geometry);
    let reference = render_spp(&scene, &tracer, 2048, 1000);
    let spps = [8u32, 16, 32, 64, 128, 256];
    let errors: Vec<f64> = spps
        .iter()
        .map(|&spp| rmse(&render_spp(&scene, &tracer, spp, 7), &reference))
        .collect();
    let xs: Vec<f64> = spps.iter().map(|&s| (s as f64).ln()).collect();
    let ys: Vec<f64> = errors.iter().map(|e| e.ln()).collect();
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let slope = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (x - mx) * (y - my))
        .sum::<f64>()
        / xs.iter().map(|x| (x - mx) * (x - mx)).sum::<f64>();
    println!("slope {slope:.3}, RMSE at 8..256 spp: {errors:?}");
    assert!(
        (-0.6..=-0.4).contains(&slope),
        "slope {slope}, errors {errors:?}"
    );
    assert!(errors[5] < errors[0] / 3.0, "errors {errors:?}");
}
