//! `wavetrace render` end to end: outputs, stats JSON, heatmap, errors and exit codes.

mod common;

use common::repo_path;
use std::process::Command;

fn small_cornell(dir: &std::path::Path) -> std::path::PathBuf {
    let obj = repo_path("scenes/cornell/cornell.obj");
    let text = std::fs::read_to_string(repo_path("scenes/cornell/cornell.toml"))
        .unwrap()
        .replace("width = 512", "width = 24")
        .replace("height = 512", "height = 20")
        .replace(
            "\"cornell.obj\"",
            &format!("{:?}", obj.display().to_string()),
        );
    let path = dir.join("small.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn wavetrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavetrace"))
}

#[test]
fn render_writes_png_exr_stats_and_heatmap() {
    let dir = tempfile::tempdir().unwrap();
    let scene = small_cornell(dir.path());
    let out = dir.path().join("img.png");
    let stats = dir.path().join("stats.json");
    let heat = dir.path().join("heat.png");
    let status = wavetrace()
        .args([
            "render",
            scene.to_str().unwrap(),
            "--spp",
            "2",
            "--threads",
            "1",
            "--wave",
            "64",
        ])
        .args(["--target", "series-s", "--exposure", "-1"])
        .arg("--out")
        .arg(&out)
        .arg("--stats")
        .arg(&stats)
        .arg("--heatmap")
        .arg(&heat)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let img = image::open(&out).unwrap();
    assert_eq!((img.width(), img.height()), (24, 20));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(json["wave"], 64);
    assert_eq!(json["target"], "series-s");
    let s = &json["stats"];
    assert_eq!(s["spp"], 2);
    assert_eq!(s["camera"]["rays"], 24 * 20 * 2);
    let mut clocks = 0;
    for kind in ["camera", "bounce", "shadow"] {
        assert!(s[kind]["rays"].as_u64().unwrap() > 0, "{kind}");
        let c = s[kind]["counters"]["td.clocks"].as_u64().unwrap();
        assert!(c > 0, "{kind}");
        clocks += c;
    }
    assert_eq!(
        json["total_counters"]["td.clocks"].as_u64().unwrap(),
        clocks
    );
    let h = image::open(&heat).unwrap();
    assert_eq!(h.width(), 24);
    assert!(h.height() > 20, "legend band below the image");
    // EXR by extension; nothing left over but the four outputs and the scene.
    let exr = dir.path().join("img.exr");
    let st = wavetrace()
        .args(["render", scene.to_str().unwrap(), "--spp", "1", "--out"])
        .arg(&exr)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        &std::fs::read(&exr).unwrap()[..4],
        &[0x76, 0x2f, 0x31, 0x01]
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
}

#[test]
fn render_errors_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scene = small_cornell(dir.path());
    for (args, needle) in [
        (vec!["--out", "x.jpg"], "x.jpg"),
        (vec!["--out", "x.png", "--target", "ps5"], "--target"),
        (vec!["--out", "x.png", "--spp", "0"], "--spp"),
        (vec!["--out", "x.png", "--heatmap", "h.exr"], "--heatmap"),
        (vec!["--out", "x.png", "--exposure", "nan"], "--exposure"),
        (vec!["--out", "x.png", "--exposure", "-inf"], "--exposure"),
    ] {
        let o = wavetrace()
            .current_dir(dir.path())
            .args(["render", scene.to_str().unwrap()])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let o = wavetrace()
        .current_dir(dir.path())
        .args(["render", "nowhere.toml", "--out", "x.png"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nowhere.toml"));
    // --wave only takes 32 or 64 (clap usage error).
    let o = wavetrace()
        .args([
            "render",
            scene.to_str().unwrap(),
            "--out",
            "x.png",
            "--wave",
            "16",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn time_budget_stops_after_whole_passes() {
    let dir = tempfile::tempdir().unwrap();
    let scene = small_cornell(dir.path());
    let stats = dir.path().join("s.json");
    let o = wavetrace()
        .args([
            "render",
            scene.to_str().unwrap(),
            "--time",
            "0.2",
            "--spp",
            "1000000",
            "--out",
        ])
        .arg(dir.path().join("t.png"))
        .arg("--stats")
        .arg(&stats)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let spp = json["stats"]["spp"].as_u64().unwrap();
    assert!(
        (4..1_000_000).contains(&spp) && spp.is_multiple_of(4),
        "spp {spp}"
    );
}

/// Ctrl-C (SIGINT) during a render: exit code 130, no output file, no partial file.
#[cfg(unix)]
#[test]
fn interrupt_stops_cleanly_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scene = small_cornell(dir.path());
    let out = dir.path().join("never.png");
    let mut child = wavetrace()
        .args([
            "render",
            scene.to_str().unwrap(),
            "--spp",
            "10000000",
            "--threads",
            "1",
            "--out",
        ])
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the scene file"
    );
}
