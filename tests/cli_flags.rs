//! One flag vocabulary: every command that writes a file takes `-o/--out`, every
//! machine-readable report is `--json FILE`, and the old spellings still work.

use std::process::Command;

fn help(command: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args([command, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn writing_commands_take_o_out_and_reports_take_json_file() {
    for command in ["trace", "render", "isa", "bvh", "rays", "machine"] {
        let text = help(command);
        assert!(
            text.contains("-o, --out"),
            "{command}: no -o, --out in\n{text}"
        );
    }
    for command in ["trace", "render", "bench", "profile"] {
        let text = help(command);
        assert!(
            text.contains("--json <"),
            "{command}: no --json FILE in\n{text}"
        );
    }
    // The older spellings are visible aliases.
    assert!(help("trace").contains("--stats"));
    assert!(help("render").contains("--stats"));
    assert!(help("bvh").contains("--dump"));
}

#[test]
fn the_old_and_new_spellings_write_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("t.obj");
    std::fs::write(&obj, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    run(&["bvh", &p("t.obj"), "-o", &p("a.bvh")]);
    run(&["bvh", &p("t.obj"), "--dump", &p("b.bvh")]);
    assert_eq!(
        std::fs::read(p("a.bvh")).unwrap(),
        std::fs::read(p("b.bvh")).unwrap()
    );
    run(&[
        "rays",
        &p("t.obj"),
        "--kind",
        "primary",
        "--size",
        "4x4",
        "-o",
        &p("r.rays"),
    ]);
    for flag in ["--json", "--stats"] {
        let stats = p(&format!("s{flag}.json"));
        run(&[
            "trace",
            &p("t.obj"),
            "--rays",
            &p("r.rays"),
            "-o",
            &p("h.hits"),
            flag,
            &stats,
        ]);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        assert_eq!(v["rays"], 16, "{flag}");
    }
}
