//! Helpers of the tests that run the `wavetrace` binary: a runner that keeps the exit code
//! and both streams, and a small closed mesh to run it on.
// Each test crate compiles this module and uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `wavetrace args...`: the exit code (-1 when killed by a signal), stdout and stderr.
pub fn wavetrace(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wavetrace"))
        .args(args)
        .output()
        .expect("run wavetrace");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A closed octahedron over a ground quad, written as `octa.obj` in `dir`.
pub fn write_octahedron(dir: &Path) -> PathBuf {
    let mut obj = String::from(
        "v 1 0 0\nv -1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nv 0 0 -1\n\
         v -5 -1 -5\nv 5 -1 -5\nv 5 -1 5\nv -5 -1 5\n",
    );
    for f in [
        [1, 3, 5],
        [3, 2, 5],
        [2, 4, 5],
        [4, 1, 5],
        [3, 1, 6],
        [2, 3, 6],
        [4, 2, 6],
        [1, 4, 6],
        [7, 9, 8],
        [7, 10, 9],
    ] {
        obj.push_str(&format!("f {} {} {}\n", f[0], f[1], f[2]));
    }
    let path = dir.join("octa.obj");
    std::fs::write(&path, obj).unwrap();
    path
}

/// [`wavetrace`], which must exit 0: stdout and stderr.
pub fn wavetrace_ok(args: &[&str]) -> (String, String) {
    let (code, stdout, stderr) = wavetrace(args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    (stdout, stderr)
}
