//! `wavetrace bvh`: exit codes, JSON output, --dump, bad input.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_wavetrace");

const CUBE: &str = "\
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 0 0 1
v 1 0 1
v 1 1 1
v 0 1 1
f 1 4 3 2
f 5 6 7 8
f 1 2 6 5
f 3 4 8 7
f 2 3 7 6
f 1 5 8 4
";

/// Exit code 0, or the command's stderr in the failure message.
fn assert_success(out: &std::process::Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn json_and_dump() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("cube.obj");
    std::fs::write(&obj, CUBE).unwrap();
    let dump = dir.path().join("cube.bin");
    let out = Command::new(BIN)
        .args([
            "bvh",
            obj.to_str().unwrap(),
            "--box",
            "fp16",
            "--tris-per-node",
            "4",
        ])
        .args([
            "--mode",
            "0",
            "--order",
            "bfs",
            "--threads",
            "1",
            "--json",
            "--dump",
        ])
        .arg(&dump)
        .output()
        .unwrap();
    assert_success(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["metrics"]["triangles"], 12);
    let bytes = std::fs::read(&dump).unwrap();
    assert_eq!(bytes.len() as u64, v["metrics"]["bytes"].as_u64().unwrap());
    assert_eq!(bytes.len() % 64, 0);
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn table_output_names_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("cube.obj");
    std::fs::write(&obj, CUBE).unwrap();
    let out = Command::new(BIN)
        .args(["bvh", obj.to_str().unwrap(), "--splits"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("validator           valid"), "{text}");
    assert!(text.contains("SAH cost"), "{text}");
}

#[test]
fn repeat_reports_every_build() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("cube.obj");
    std::fs::write(&obj, CUBE).unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(BIN)
            .args(["bvh", obj.to_str().unwrap(), "--threads", "1"])
            .args(extra)
            .output()
            .unwrap();
        assert_success(&out);
        out.stdout
    };
    let v: serde_json::Value = serde_json::from_slice(&run(&["--repeat", "3", "--json"])).unwrap();
    let times = v["repeat_build_encode_seconds"].as_array().unwrap();
    assert_eq!(times.len(), 3);
    // The first entry is the reported build's own build + encode time (to a relative 1e-12:
    // serde_json's default float parsing may be one ULP off).
    let first = v["build_seconds"].as_f64().unwrap() + v["encode_seconds"].as_f64().unwrap();
    let t0 = times[0].as_f64().unwrap();
    assert!((t0 - first).abs() <= 1e-12 * first, "{t0} vs {first}");
    assert!(times.iter().all(|t| t.as_f64().unwrap() >= 0.0));
    assert_eq!(v["valid"], true);
    let text = String::from_utf8(run(&["--repeat", "2"])).unwrap();
    assert!(text.contains("of 2 in this process"), "{text}");
    // Without --repeat the table has no such line.
    let text = String::from_utf8(run(&[])).unwrap();
    assert!(!text.contains("in this process"), "{text}");
    // --repeat 0 is refused, naming the flag.
    let out = Command::new(BIN)
        .args(["bvh", obj.to_str().unwrap(), "--repeat", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--repeat"));
}

#[test]
fn bad_input_exits_2_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("bad.obj");
    std::fs::write(&obj, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 x\n").unwrap();
    let out = Command::new(BIN)
        .args(["bvh", obj.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:4:", obj.display())), "{err}");
    let out = Command::new(BIN)
        .args(["bvh", "/no/such/mesh.obj"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/mesh.obj"));
    let out = Command::new(BIN)
        .args(["bvh", obj.to_str().unwrap(), "--tris-per-node", "3"])
        .output()
        .unwrap();
    // Refused as usage, naming the flag (not the builder's field).
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tris-per-node"), "{err}");
}
