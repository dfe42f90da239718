//! SIGINT and SIGTERM stop the long commands cleanly: exit 130 or 143, a message naming
//! the signal and the outputs not written, and no output or temporary file left behind.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn wavetrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavetrace"))
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn dragon() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scenes/dragon.obj.gz")
}

/// Runs `command` (its outputs in the empty directory `out_dir`), sends it `signal` (`INT`
/// or `TERM`) after `after`, and checks the exit code, the message and that `out_dir` is
/// still empty.
fn interrupt(mut command: Command, signal: &str, after: Duration, out_dir: &Path) {
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let kill = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = if signal == "INT" { 130 } else { 143 };
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(
        stderr.contains(&format!("interrupted by SIG{signal}")),
        "{stderr}"
    );
    assert!(stderr.contains("not written"), "{stderr}");
    assert_eq!(names(out_dir), Vec::<String>::new(), "{stderr}");
}

/// The Cornell box scene at 24x20 pixels, written into `dir`.
fn small_scene(dir: &Path) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let obj = repo.join("scenes/cornell/cornell.obj");
    let text = std::fs::read_to_string(repo.join("scenes/cornell/cornell.toml"))
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

#[test]
fn render_stops_on_sigint_and_sigterm() {
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let scene = small_scene(dir.path());
        let out_dir = dir.path().join("d");
        std::fs::create_dir(&out_dir).unwrap();
        let mut command = wavetrace();
        command
            .args(["render"])
            .arg(&scene)
            .args(["--spp", "10000000", "--threads", "1", "--out"])
            .arg(out_dir.join("o.png"))
            .arg("--stats")
            .arg(out_dir.join("s.json"))
            .arg("--heatmap")
            .arg(out_dir.join("h.png"));
        interrupt(command, signal, Duration::from_millis(1500), &out_dir);
    }
}

#[test]
fn bvh_stops_on_sigint_and_sigterm() {
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("d");
        std::fs::create_dir(&out_dir).unwrap();
        let mut command = wavetrace();
        command
            .arg("bvh")
            .arg(dragon())
            .args(["--repeat", "1000", "--threads", "1", "--dump"])
            .arg(out_dir.join("o.bin"));
        interrupt(command, signal, Duration::from_millis(1000), &out_dir);
    }
}

/// One million rays from the dragon's camera towards its target, jittered on a grid.
fn dragon_rays(path: &Path) {
    let eye = [0.07385f32, 0.21797, 0.26116];
    let target = [-0.00588f32, 0.12495, -0.00460];
    let mut bytes = Vec::with_capacity(1 << 25);
    for i in 0..1000 {
        for j in 0..1000 {
            let d = [
                target[0] - eye[0] + (i as f32 - 500.0) * 2e-4,
                target[1] - eye[1] + (j as f32 - 500.0) * 2e-4,
                target[2] - eye[2],
            ];
            for v in [eye[0], eye[1], eye[2], d[0], d[1], d[2], 0.0, 1e30] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn trace_and_bench_stop_on_sigint_and_sigterm() {
    let rays_dir = tempfile::tempdir().unwrap();
    let rays = rays_dir.path().join("dragon.rays");
    dragon_rays(&rays);
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("d");
        std::fs::create_dir(&out_dir).unwrap();
        let mut command = wavetrace();
        command
            .arg("trace")
            .arg(dragon())
            .arg("--rays")
            .arg(&rays)
            .args(["--threads", "1", "--out"])
            .arg(out_dir.join("o.hits"))
            .arg("--stats")
            .arg(out_dir.join("s.json"));
        interrupt(command, signal, Duration::from_millis(1000), &out_dir);
        let mut command = wavetrace();
        command
            .arg("bench")
            .arg(dragon())
            .arg("--rays")
            .arg(&rays)
            .args(["--repeat", "1000", "--json"])
            .arg(out_dir.join("b.json"));
        interrupt(command, signal, Duration::from_millis(1000), &out_dir);
    }
}

#[test]
fn profile_stops_on_sigint_and_sigterm() {
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("d");
        std::fs::create_dir(&out_dir).unwrap();
        let mut command = wavetrace();
        command
            .arg("profile")
            .arg(dragon())
            .args(["--size", "64x64", "--threads", "1", "--csv"])
            .arg(out_dir.join("p.csv"))
            .arg("--json")
            .arg(out_dir.join("p.json"))
            .arg("--heatmaps")
            .arg(out_dir.join("maps"));
        interrupt(command, signal, Duration::from_millis(1500), &out_dir);
    }
}
