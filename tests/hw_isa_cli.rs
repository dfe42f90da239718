//! `wavetrace isa`: the built binary on small vector files.

use std::io::Write;
use std::process::Command;

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/data/isa/sample.jsonl"
);

fn sample_lines(n: usize) -> Vec<String> {
    std::fs::read_to_string(SAMPLE)
        .unwrap()
        .lines()
        .take(n)
        .map(String::from)
        .collect()
}

fn write(lines: &[String]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f
}

fn isa(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .arg("isa")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn check_passes_good_vectors_with_exit_0() {
    let f = write(&sample_lines(5));
    let (code, out, _) = isa(&["--check", f.path().to_str().unwrap()]);
    assert_eq!(out.trim(), "5 passed, 0 failed");
    assert_eq!(code, 0);
}

#[test]
fn malformed_lines_are_all_named_and_nothing_runs_with_exit_2() {
    let mut lines = sample_lines(3);
    // Line 2: descriptor type 7 instead of 8; line 4: bad JSON; line 5: short extent.
    let mut bad_type: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    let d = bad_type["desc"].as_str().unwrap().to_string();
    bad_type["desc"] = format!("{}7{}", &d[..24], &d[25..]).into();
    lines[1] = bad_type.to_string();
    lines.push("{not json".into());
    let mut short: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    short["extent"] = "3f80".into();
    lines.push(short.to_string());
    let f = write(&lines);
    let (code, out, err) = isa(&["--check", f.path().to_str().unwrap()]);
    assert_eq!(code, 2, "stdout: {out}\nstderr: {err}");
    // Nothing ran: no verdict on the good lines.
    assert_eq!(out, "", "stderr: {err}");
    assert!(
        err.contains(":2:") && err.contains("desc") && err.contains("127:124"),
        "{err}"
    );
    assert!(err.contains(":4:") && err.contains("JSON"), "{err}");
    assert!(err.contains(":5:") && err.contains("extent"), "{err}");
    assert!(err.contains("3 malformed"), "{err}");
}

#[test]
fn one_malformed_line_writes_no_output_file_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("m.jsonl");
    let mut lines = sample_lines(2);
    lines.insert(1, r#"{"cat":"x"}"#.to_string());
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out_path = dir.path().join("g.jsonl");
    for check in [false, true] {
        let mut args = vec![input.to_str().unwrap(), "--out", out_path.to_str().unwrap()];
        if check {
            args.push("--check");
        }
        let (code, out, err) = isa(&args);
        assert_eq!(code, 2, "stdout: {out}\nstderr: {err}");
        assert!(
            err.contains("m.jsonl:2:") && err.contains("\"desc\"") && err.contains("missing"),
            "{err}"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["m.jsonl"], "{names:?}");
    }
    // Without --out the vectors would go to stdout: nothing is printed there either.
    let (code, out, err) = isa(&[input.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
}

#[test]
fn a_wrong_expect_fails_with_line_and_category() {
    let mut lines = sample_lines(2);
    let mut v: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    v["expect"][0] = "12345678".into();
    lines[1] = v.to_string();
    let f = write(&lines);
    let (code, out, err) = isa(&["--check", f.path().to_str().unwrap()]);
    assert_eq!(out.trim(), "1 passed, 1 failed");
    assert_eq!(code, 1);
    let cat = v["cat"].as_str().unwrap();
    assert!(err.contains(":2 ") && err.contains(cat), "{err}");
}

#[test]
fn output_keeps_fields_and_adds_got() {
    let lines = sample_lines(3);
    let f = write(&lines);
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("got.jsonl");
    let (code, _, _) = isa(&[
        f.path().to_str().unwrap(),
        "--out",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let written = std::fs::read_to_string(&out_path).unwrap();
    let rows: Vec<serde_json::Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    for (row, line) in rows.iter().zip(&lines) {
        let input: serde_json::Value = serde_json::from_str(line).unwrap();
        for (k, v) in input.as_object().unwrap() {
            assert_eq!(&row[k], v, "field {k} passed through");
        }
        assert_eq!(row["got"], input["expect"]);
    }
    // Written through a temporary name: nothing else left in the directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn input_that_is_not_text_names_its_line_and_writes_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("vectors.jsonl");
    let mut bytes = sample_lines(2).join("\n").into_bytes();
    bytes.extend_from_slice(b"\n\xff\xfe not UTF-8\n");
    std::fs::write(&input, bytes).unwrap();
    let out_path = dir.path().join("got.jsonl");
    let (code, _, err) = isa(&[input.to_str().unwrap(), "--out", out_path.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("vectors.jsonl:3:") && err.contains("UTF-8"),
        "{err}"
    );
    // The two good lines were run, but no output file (and no partial one) is left.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["vectors.jsonl"], "{names:?}");
}
