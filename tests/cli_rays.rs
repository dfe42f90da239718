//! `wavetrace rays` writes the ray sets `profile` traces: traced by `trace`, the file gives
//! the TD clocks per ray `profile` reports for the same input and kind; the file is 32
//! bytes a ray and the camera set has one ray per pixel; bad kinds are errors.

mod common;

use common::repo_path;
use std::path::Path;
use std::process::Command;

fn wavetrace(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args(args)
        .output()
        .expect("run wavetrace");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wavetrace-rays-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// For a mesh and each closest-hit kind: the clocks per ray of `trace` on the written
/// file equal profile's full-stack figure on its own ray set.
#[test]
fn traced_ray_files_reproduce_profile_clocks_per_ray() {
    let dir = scratch("clocks");
    let mesh = repo_path("scenes/grove/rock.obj");
    let mesh = mesh.to_str().unwrap();
    for kind in ["primary", "diffuse"] {
        let rays = dir.join(format!("{kind}.rays"));
        let stats = dir.join(format!("{kind}.json"));
        let table = dir.join(format!("{kind}-profile.json"));
        let (code, err) = wavetrace(&[
            "rays",
            mesh,
            "--kind",
            kind,
            "--size",
            "64x48",
            "-o",
            rays.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let (code, err) = wavetrace(&[
            "trace",
            mesh,
            "--rays",
            rays.to_str().unwrap(),
            "--out",
            dir.join("hits").to_str().unwrap(),
            "--stats",
            stats.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let (code, err) = wavetrace(&[
            "profile",
            mesh,
            "--rays",
            kind,
            "--size",
            "64x48",
            "--strategies",
            "full-stack",
            "--json",
            table.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let t = json(&stats);
        let rays_traced = t["rays"].as_u64().unwrap();
        let clocks = t["counters"]["td.clocks"].as_u64().unwrap();
        let p = json(&table);
        let v = &p["variants"][0];
        assert_eq!(v["name"], "full-stack");
        let profiled = v["td_clocks_per_ray"].as_f64().unwrap();
        let traced = clocks as f64 / rays_traced as f64;
        assert!(
            (traced - profiled).abs() <= 1e-9 * profiled,
            "{kind}: trace {traced} against profile {profiled}"
        );
        if kind == "primary" {
            assert_eq!(rays_traced, 64 * 48);
            assert_eq!(
                std::fs::metadata(&rays).unwrap().len(),
                32 * 64 * 48,
                "8 x f32 a ray"
            );
        }
    }
}

#[test]
fn a_scene_gives_its_camera_rays_and_a_bad_kind_is_an_error() {
    let dir = scratch("scene");
    let out = dir.join("grove.rays");
    let scene = repo_path("scenes/grove/grove.toml");
    let (code, err) = wavetrace(&[
        "rays",
        scene.to_str().unwrap(),
        "--kind",
        "camera",
        "--size",
        "32x18",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 32 * 32 * 18);
    let bad = dir.join("bad.rays");
    let (code, err) = wavetrace(&[
        "rays",
        scene.to_str().unwrap(),
        "--kind",
        "sideways",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--kind"), "{err}");
    assert!(!bad.exists());
}
