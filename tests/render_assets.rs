//! The generated assets of the shipped scenes: `scenes/sky/sky.hdr` (an equirectangular
//! sky with a sun) and `scenes/sky/checker.png` (the floor texture). The generators live
//! here; `cargo test --release --test render_assets -- --ignored` rewrites the files, and the
//! normal tests check that the committed files are what the generators make.

mod common;

use common::repo_path;
use glam::Vec3;

const SKY_W: u32 = 128;
const SKY_H: u32 = 64;

/// Unit direction of the sun (world, +Y up).
fn sun_dir() -> Vec3 {
    Vec3::new(-0.6, 0.55, 0.35).normalize()
}

/// Direction of the centre of equirect texel (x, y): the mapping of
/// `wavetrace::scene::EnvMap` (u = 0.5 + atan2(d.x, -d.z) / 2pi, v = acos(d.y) / pi).
fn texel_dir(x: u32, y: u32) -> Vec3 {
    let u = (x as f32 + 0.5) / SKY_W as f32;
    let v = (y as f32 + 0.5) / SKY_H as f32;
    let phi = (u - 0.5) * 2.0 * std::f32::consts::PI;
    let theta = v * std::f32::consts::PI;
    Vec3::new(
        theta.sin() * phi.sin(),
        theta.cos(),
        -theta.sin() * phi.cos(),
    )
}

/// The sky: blue at the zenith, pale at the horizon, dim brown below it, and a sun disk of
/// about 4 degrees radius with radiance 60.
fn sky_texels() -> Vec<Vec3> {
    let mut out = Vec::new();
    for y in 0..SKY_H {
        for x in 0..SKY_W {
            let d = texel_dir(x, y);
            let c = if d.y >= 0.0 {
                let t = d.y.sqrt();
                (Vec3::new(1.1, 1.05, 1.0) * (1.0 - t) + Vec3::new(0.25, 0.45, 0.95) * t) * 0.8
            } else {
                Vec3::new(0.25, 0.2, 0.15)
            };
            let sun = if d.dot(sun_dir()) > 4.0f32.to_radians().cos() {
                Vec3::new(60.0, 56.0, 50.0)
            } else {
                Vec3::ZERO
            };
            out.push(c + sun);
        }
    }
    out
}

const CHECKER: u32 = 64;

/// 8 x 8 squares of warm light grey and slate.
fn checker_texels() -> Vec<[u8; 3]> {
    (0..CHECKER * CHECKER)
        .map(|i| {
            let (x, y) = (i % CHECKER, i / CHECKER);
            if ((x / 8) + (y / 8)) % 2 == 0 {
                [205, 200, 190]
            } else {
                [70, 78, 92]
            }
        })
        .collect()
}

#[test]
#[ignore = "rewrites scenes/sky/sky.hdr and scenes/sky/checker.png"]
fn regenerate_assets() {
    let texels: Vec<image::Rgb<f32>> = sky_texels()
        .iter()
        .map(|t| image::Rgb(t.to_array()))
        .collect();
    let file = std::fs::File::create(repo_path("scenes/sky/sky.hdr")).unwrap();
    image::codecs::hdr::HdrEncoder::new(std::io::BufWriter::new(file))
        .encode(&texels, SKY_W as usize, SKY_H as usize)
        .unwrap();
    let bytes: Vec<u8> = checker_texels().concat();
    image::save_buffer(
        repo_path("scenes/sky/checker.png"),
        &bytes,
        CHECKER,
        CHECKER,
        image::ExtendedColorType::Rgb8,
    )
    .unwrap();
}

#[test]
fn committed_sky_hdr_is_the_generated_sky() {
    let img = image::open(repo_path("scenes/sky/sky.hdr"))
        .unwrap()
        .to_rgb32f();
    assert_eq!(img.dimensions(), (SKY_W, SKY_H));
    for (p, want) in img.pixels().zip(sky_texels()) {
        let got = Vec3::from(p.0);
        // RGBE keeps 8 bits of mantissa per channel under a shared exponent.
        assert!(
            (got - want).abs().max_element() <= want.max_element() * 0.01 + 1e-6,
            "{got} vs {want}"
        );
    }
}

#[test]
fn committed_checker_png_is_the_generated_checker() {
    let img = image::open(repo_path("scenes/sky/checker.png"))
        .unwrap()
        .to_rgb8();
    assert_eq!(img.dimensions(), (CHECKER, CHECKER));
    let got: Vec<[u8; 3]> = img.pixels().map(|p| p.0).collect();
    assert_eq!(got, checker_texels());
}

/// Importance sampling of the sky: samples land in the sun texels with the probability
/// that the sun's share of luminance x sin(theta) predicts (computed here in f64 from the
/// generator, within 5 binomial sigma), and `sample`'s pdf equals `pdf`.
#[test]
fn sky_map_importance_sampling_matches_luminance_times_sin_theta() {
    use wavetrace::scene::{luminance, EnvMap, Environment};
    let map = EnvMap::load(&repo_path("scenes/sky/sky.hdr"), 1.0).unwrap();
    let texels = map.texels.clone();
    let env = Environment::Map(map);
    let is_sun = |x: u32, y: u32| texel_dir(x, y).dot(sun_dir()) > 4.0f32.to_radians().cos();
    let (mut sun_w, mut all_w) = (0.0f64, 0.0f64);
    for y in 0..SKY_H {
        let sin_theta = ((y as f64 + 0.5) / SKY_H as f64 * std::f64::consts::PI).sin();
        for x in 0..SKY_W {
            let w = luminance(texels[(y * SKY_W + x) as usize]) as f64 * sin_theta;
            all_w += w;
            if is_sun(x, y) {
                sun_w += w;
            }
        }
    }
    let p = sun_w / all_w;
    let n = 20000;
    let mut hits = 0;
    let mut rng = wavetrace::render::Rng::for_sample(1, 2, 3);
    for _ in 0..n {
        let (d, radiance, pdf) = env.sample(rng.next_2d());
        assert!(pdf > 0.0 && radiance.max_element() > 0.0);
        let p2 = env.pdf(d);
        assert!((pdf - p2).abs() <= 1e-3 * pdf, "{pdf} vs {p2}");
        let u = 0.5 + d.x.atan2(-d.z) / (2.0 * std::f32::consts::PI);
        let v = d.y.clamp(-1.0, 1.0).acos() / std::f32::consts::PI;
        let (x, y) = (
            ((u * SKY_W as f32) as u32).min(SKY_W - 1),
            ((v * SKY_H as f32) as u32).min(SKY_H - 1),
        );
        if is_sun(x, y) {
            hits += 1;
        }
    }
    let sigma = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (hits as f64 - n as f64 * p).abs() < 5.0 * sigma,
        "{hits} of {n} samples in the sun, expected {:.0}",
        n as f64 * p
    );
}
