//! `wavetrace tiling` end to end: verify on the shared reference vectors, layout, and PNG
//! swizzle/unswizzle round trips.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wavetrace"))
}

fn data(name: &str) -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/tiling/layouts/"
    )
    .to_string()
        + name
}

fn verify(file: &str, extra: &[&str]) -> (i32, String) {
    let out = bin()
        .args(["tiling", "verify", &data(file)])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn verify_passes_every_shared_file() {
    for (file, n) in [
        ("nonxor_gfx103.json", 338),
        ("xor_anaconda_hyp.json", 280),
        ("rejected_gfx10.json", 23),
    ] {
        let (code, out) = verify(file, &[]);
        assert_eq!(
            out.lines().last(),
            Some(format!("{n} passed, 0 failed").as_str()),
            "{out}"
        );
        assert_eq!(code, 0);
    }
}

#[test]
fn verify_names_failing_cases_and_fields_and_exits_1() {
    // The Series X XOR vectors do not hold for the Series S configuration.
    let (code, out) = verify("xor_anaconda_hyp.json", &["--console", "series-s"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL VAR_R_X.2D."), "{out}");
    assert!(
        out.contains("surface.total_size") || out.contains("samples["),
        "{out}"
    );
    let last = out.lines().last().unwrap();
    assert!(
        last.ends_with("failed") && !last.ends_with(" 0 failed"),
        "{last}"
    );
}

#[test]
fn layout_prints_the_seed_example() {
    let out = bin()
        .args([
            "tiling", "layout", "--format", "R8G8B8A8", "--size", "48x24", "--mips", "6",
        ])
        .args(["--mode", "4KB_S", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // From the reference vectors (4KB_S.2D.R32.48x24_m6): same element size as R8G8B8A8.
    assert_eq!(v["surface"]["total_size"], 16384);
    assert_eq!(v["surface"]["first_mip_in_tail"], 2);
    assert_eq!(v["mips"][0]["macro_block_offset"], 8192);
    let bad = bin()
        .args([
            "tiling", "layout", "--format", "R32", "--size", "8x8", "--mode", "64KB_R",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("64KB_R"));
}

#[test]
fn png_swizzle_unswizzle_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let png: PathBuf = dir.path().join("in.png");
    let (w, h) = (37u32, 21u32);
    let img = image::RgbaImage::from_fn(w, h, |x, y| {
        image::Rgba([(x * 7) as u8, (y * 11) as u8, (x ^ y) as u8, 255 - x as u8])
    });
    img.save(&png).unwrap();
    let tiled = dir.path().join("t.bin");
    let back = dir.path().join("back.png");
    for mode in ["64KB_R_X", "4KB_D", "LINEAR"] {
        let s = bin()
            .args(["tiling", "swizzle"])
            .arg(&png)
            .arg(&tiled)
            .args(["--mode", mode, "--mips", "0", "--console", "series-s"])
            .output()
            .unwrap();
        assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
        let u = bin()
            .args(["tiling", "unswizzle"])
            .arg(&tiled)
            .arg(&back)
            .args(["--mode", mode, "--mips", "0", "--console", "series-s"])
            .args(["--format", "R8G8B8A8", "--size", "37x21"])
            .output()
            .unwrap();
        assert!(u.status.success(), "{}", String::from_utf8_lossy(&u.stderr));
        let again = image::open(&back).unwrap().to_rgba8();
        assert!(again == img, "{mode}: PNG round trip differs");
    }
}
