//! One flag vocabulary: every command that writes a file takes `-o/--out`, every
//! machine-readable report is `--json FILE`, and the old spellings still work.

use std::process::Command;

mod cli_common;
use cli_common::wavetrace_ok;

/// `wavetrace ARGS... --help`, which must succeed.
fn help_of(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?} --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn help(command: &str) -> String {
    help_of(&[command])
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
            text.contains("--json [<FILE>]"),
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
        wavetrace_ok(args);
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

/// The options of one `--help` text: each flag's long name, its whole help block (wrapped
/// lines joined) and its `[default: ...]`, if any.
fn options(text: &str) -> Vec<(String, String, Option<String>)> {
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let starts_flag = t.starts_with("--") || (t.starts_with('-') && t.get(2..4) == Some(", "));
        if starts_flag && line.starts_with("  ") {
            let long = t
                .split_whitespace()
                .find(|w| w.starts_with("--"))
                .unwrap_or("")
                .trim_end_matches(',')
                .to_string();
            blocks.push((long, t.to_string()));
        } else if let Some(last) = blocks.last_mut() {
            last.1.push(' ');
            last.1.push_str(t);
        }
    }
    blocks
        .into_iter()
        .map(|(long, block)| {
            let default = block
                .split("[default: ")
                .nth(1)
                .map(|rest| rest.split(']').next().unwrap_or("").to_string());
            (long, block, default)
        })
        .collect()
}

/// Every subcommand (and `tiling`'s), from the help texts themselves.
fn subcommands() -> Vec<Vec<String>> {
    let listed = |args: &[&str]| -> Vec<String> {
        help_of(args)
            .split("Commands:")
            .nth(1)
            .unwrap_or("")
            .split("Options:")
            .next()
            .unwrap_or("")
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(str::to_string)
            .collect()
    };
    let mut all = Vec::new();
    for name in listed(&[]) {
        let nested = listed(&[&name]);
        if nested.is_empty() {
            all.push(vec![name]);
        } else {
            all.extend(nested.into_iter().map(|n| vec![name.clone(), n]));
        }
    }
    all
}

#[test]
fn shared_flags_have_one_name_and_one_default_in_every_command() {
    let commands = subcommands();
    assert!(commands.len() >= 13, "{commands:?}");
    // The expected default of each shared flag (None: no default, the help says why).
    let expected: &[(&str, Option<&str>)] = &[
        ("--threads", None),
        ("--seed", Some("0")),
        ("--wave", Some("32")),
        ("--target", Some("series-x")),
        ("--simd", Some("auto")),
        ("--json", None),
        ("--shard", None),
        ("--shard-count", None),
        ("--box", Some("mixed")),
        ("--tris-per-node", Some("2")),
        ("--max-area-growth", Some("0.05")),
        ("--order", Some("dfs")),
        ("--mode", Some("1")),
        ("--grow", Some("0")),
    ];
    let mut seen = std::collections::BTreeMap::<&str, Vec<String>>::new();
    for command in &commands {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let text = help_of(&args);
        let name = command.join(" ");
        for (long, block, default) in options(&text) {
            // The older spellings survive only as aliases of the shared names.
            for old in ["--console", "--dump", "--stats"] {
                assert_ne!(long, old, "{name}: {old} is a flag of its own");
            }
            // `tiling swizzle --mode` is a swizzle mode, not the triangle return mode; and
            // `tiling verify --target` defaults to the console its file names.
            if command[0] == "tiling" && (long == "--mode" || name == "tiling verify") {
                continue;
            }
            let Some(&(flag, want)) = expected.iter().find(|(f, _)| *f == long) else {
                continue;
            };
            assert_eq!(default.as_deref(), want, "{name}: {flag} in\n{block}");
            if flag == "--threads" {
                assert!(block.contains("all cores"), "{name}: {block}");
            }
            if flag == "--json" {
                assert!(block.contains("--json [<FILE>]"), "{name}: {block}");
                assert!(block.contains("standard output"), "{name}: {block}");
            }
            seen.entry(flag).or_default().push(name.clone());
        }
    }
    // Each shared flag is where it belongs.
    let has = |flag: &str, name: &str| seen.get(flag).is_some_and(|v| v.iter().any(|n| n == name));
    let belongs: &[(&str, &[&str])] = &[
        ("--threads", &["bvh", "trace", "bench", "render", "profile"]),
        ("--wave", &["trace", "bench", "render"]),
        (
            "--target",
            &[
                "trace",
                "render",
                "profile",
                "tiling layout",
                "tiling swizzle",
            ],
        ),
        ("--seed", &["render", "profile", "rays"]),
        ("--simd", &["trace", "bench"]),
        (
            "--json",
            &[
                "bvh",
                "trace",
                "bench",
                "render",
                "profile",
                "peak",
                "tiling layout",
            ],
        ),
        ("--box", &["bvh", "trace", "bench"]),
        ("--shard", &["render", "trace", "profile", "bench"]),
        ("--shard-count", &["render", "trace", "profile", "bench"]),
    ];
    for (flag, commands) in belongs {
        for name in *commands {
            assert!(has(flag, name), "{name} lacks {flag}");
        }
    }
    for name in ["tiling swizzle", "tiling unswizzle"] {
        let text = help_of(&["tiling", name.split(' ').nth(1).unwrap()]);
        assert!(text.contains("-o, --out"), "{name}: {text}");
    }
}

#[test]
fn json_to_stdout_moves_the_text_report_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(
        p("t.obj"),
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n",
    )
    .unwrap();
    let run = wavetrace_ok;
    run(&["rays", &p("t.obj"), "--size", "8x8", "-o", &p("r.rays")]);
    // `--json -`, and a bare `--json`, both print the JSON alone on standard output.
    let (obj, rays, hits) = (p("t.obj"), p("r.rays"), p("h"));
    for json in [vec!["--json", "-"], vec!["--json"]] {
        let mut args = vec!["trace", &obj, "--rays", &rays, "-o", &hits];
        args.extend(json.iter().copied());
        args.extend(["--threads", "1"]);
        let (stdout, stderr) = run(&args);
        let v: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is JSON");
        assert_eq!(v["rays"], 64);
        assert!(stderr.contains("traced in"), "{stderr}");
    }
    // The same report to a file: the text stays on standard output.
    let (stdout, _) = run(&[
        "trace",
        &p("t.obj"),
        "--rays",
        &p("r.rays"),
        "-o",
        &p("h"),
        "--json",
        &p("s.json"),
    ]);
    assert!(stdout.contains("traced in"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p("s.json")).unwrap()).unwrap();
    assert_eq!(v["rays"], 64);
    // bvh: the JSON to a file, and the table in words on standard output.
    let (stdout, _) = run(&["bvh", &p("t.obj"), "--json", &p("b.json")]);
    assert!(
        stdout.contains(
            "mixed FP16/FP32 boxes (at most 5 % more area), 2 triangles per node, return mode 1 \
             (barycentrics), depth-first order"
        ),
        "{stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p("b.json")).unwrap()).unwrap();
    assert_eq!(v["valid"], true);
    assert!(!v["options"].as_str().unwrap().contains('{'), "{v}");
    // tiling layout: the layout JSON alone on standard output.
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args([
            "tiling", "layout", "--mode", "4KB_S", "--format", "R8G8B8A8",
        ])
        .args(["--size", "64x64", "--json", "-", "--target", "series-s"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("layout JSON");
    assert_eq!(v["width"], 64);
}

#[test]
fn tiling_takes_o_out_and_the_older_positional_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let linear: Vec<u8> = (0..64 * 64 * 4).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(p("in.raw"), &linear).unwrap();
    let surface = ["--format", "R8G8B8A8", "--size", "64x64", "--mode", "4KB_S"];
    let status = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wavetrace"))
            .args(args)
            .args(surface)
            .output()
            .unwrap()
    };
    assert!(
        status(&["tiling", "swizzle", &p("in.raw"), "-o", &p("a.bin")])
            .status
            .success()
    );
    assert!(status(&["tiling", "swizzle", &p("in.raw"), &p("b.bin")])
        .status
        .success());
    assert_eq!(
        std::fs::read(p("a.bin")).unwrap(),
        std::fs::read(p("b.bin")).unwrap()
    );
    // The swizzled surface is a permutation of the linear bytes' elements, not a copy.
    assert_ne!(std::fs::read(p("a.bin")).unwrap(), linear);
    assert!(
        status(&["tiling", "unswizzle", &p("a.bin"), "--out", &p("c.raw")])
            .status
            .success()
    );
    assert_eq!(std::fs::read(p("c.raw")).unwrap(), linear);
    // Neither spelling: refused, naming the flag.
    let out = status(&["tiling", "swizzle", &p("in.raw")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--out"));
}
