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
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
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

#[test]
fn a_cropped_render_is_the_same_pixels_of_the_whole_render() {
    let dir = tempfile::tempdir().unwrap();
    let render = |extra: &[&str], out: &std::path::Path| {
        let mut args = vec![
            "render",
            "scenes/cornell/cornell.toml",
            "--spp",
            "2",
            "--size",
            "40x30",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        image::open(out).unwrap().to_rgb8()
    };
    let full = render(&[], &dir.path().join("full.png"));
    // pbrt's rule: pixels ceil(40 x 0.3)..ceil(40 x 0.8) = 12..32, ceil(30 x 0.1)..ceil(30 x 0.55) = 3..17.
    let crop = render(
        &["--crop", "0.3,0.8,0.1,0.55"],
        &dir.path().join("crop.png"),
    );
    assert_eq!(crop.dimensions(), (20, 14));
    for y in 0..14 {
        for x in 0..20 {
            assert_eq!(
                crop.get_pixel(x, y),
                full.get_pixel(x + 12, y + 3),
                "({x}, {y})"
            );
        }
    }
    for bad in ["0.5,0.4,0,1", "0,1,0", "0,1.5,0,1", "x,1,0,1"] {
        let o = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
            .args([
                "render",
                "scenes/cornell/cornell.toml",
                "--crop",
                bad,
                "--out",
                dir.path().join("never.png").to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--crop"),
            "{bad}"
        );
    }
}
