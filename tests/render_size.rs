//! `render --size WxH`: the film size changes, the camera does not.

use std::process::Command;
use wavetrace::scene::Scene;

#[test]
fn render_size_sets_the_film_and_keeps_the_camera() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.png");
    let status = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args([
            "render",
            "scenes/cornell/cornell.toml",
            "--spp",
            "1",
            "--size",
            "48x32",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let img = image::open(&out).unwrap();
    assert_eq!((img.width(), img.height()), (48, 32));

    // The centre ray and the vertical field of view stay: the ray through the film's centre
    // is the same, and the top edge's centre ray makes the same angle with it.
    let scene = Scene::load("scenes/cornell/cornell.toml").unwrap();
    let (w, h) = (scene.film.width as f32, scene.film.height as f32);
    let resized = scene.clone().with_film_size(48, 32).unwrap();
    let a = scene.camera.ray(w / 2.0, h / 2.0).dir;
    let b = resized.camera.ray(24.0, 16.0).dir;
    assert!((a - b).length() < 1e-6, "{a} vs {b}");
    let top_a = scene.camera.ray(w / 2.0, 0.0).dir.angle_between(a);
    let top_b = resized.camera.ray(24.0, 0.0).dir.angle_between(b);
    assert!((top_a - top_b).abs() < 1e-6, "{top_a} vs {top_b}");
    // A wider film sees further to the side, in proportion to its aspect.
    let side_a = scene.camera.ray(w, h / 2.0).dir.angle_between(a).tan();
    let side_b = resized.camera.ray(48.0, 16.0).dir.angle_between(b).tan();
    let expected = side_a * (48.0 / 32.0) / (w / h);
    assert!((side_b - expected).abs() < 1e-5, "{side_b} vs {expected}");

    // A bad size is refused by the flag, before anything is written.
    let bad = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args([
            "render",
            "scenes/cornell/cornell.toml",
            "--size",
            "0x5",
            "--out",
            dir.path().join("never.png").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--size"));
    assert!(!dir.path().join("never.png").exists());
}
