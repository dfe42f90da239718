//! The product's pattern tables and block dimensions against the shared equation files
//! (`../shared/data/tiling/equations/eq_*_hyp.json`), for both console hypotheses: every
//! (resource, mode, element size) entry, address bit by address bit.

use serde_json::Value;
use wavetrace::tiling::{Console, Dimension, Format, Layout, SurfaceDesc, SwizzleMode};

fn check(file: &str, console: Console) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/tiling/equations/"
    )
    .to_string()
        + file;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let entries = doc["equations"].as_array().unwrap();
    assert!(entries.len() >= 100);
    for e in entries {
        let mode = SwizzleMode::from_name(e["swizzle"].as_str().unwrap()).unwrap();
        let bpe = e["bpe"].as_u64().unwrap() as u32;
        let dim = if e["rsrc"] == "3D" {
            Dimension::D3
        } else {
            Dimension::D2
        };
        let desc = SurfaceDesc {
            format: Format::raw(bpe).unwrap(),
            dim,
            width: 64,
            height: 64,
            depth_or_array_size: 8,
            mip_levels: 1,
            mode,
        };
        let what = format!("{file}: {} {} {bpe} B", e["rsrc"], mode);
        let layout = Layout::new(&desc, console).unwrap_or_else(|err| panic!("{what}: {err}"));
        let dims: Vec<u64> = e["block_dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(
            dims,
            vec![
                layout.block_w as u64,
                layout.block_h as u64,
                layout.block_d as u64
            ],
            "{what}: block dims"
        );
        assert_eq!(
            e["block_bytes_log2"].as_u64().unwrap() as u32,
            layout.block_bytes_log2,
            "{what}"
        );
        let Some(bits) = e["equation"].as_array() else {
            assert!(
                layout.equation().is_none(),
                "{what}: addrlib has no equation here"
            );
            continue;
        };
        let eq = layout
            .equation()
            .unwrap_or_else(|| panic!("{what}: no equation"));
        assert_eq!(eq.num_bits as usize, bits.len(), "{what}: bit count");
        for (i, bit) in bits.iter().enumerate() {
            let terms: Vec<&str> = match bit {
                Value::String(s) => s.split('^').collect(),
                Value::Array(a) => a
                    .iter()
                    .flat_map(|t| t.as_str().unwrap().split('^'))
                    .collect(),
                _ => panic!("{what}: bad bit {bit}"),
            };
            let (mut x, mut y, mut z, mut b) = (0u32, 0u32, 0u32, 0u32);
            for t in terms {
                let k: u32 = t[1..].parse().unwrap();
                match &t[..1] {
                    "x" => x ^= 1 << k,
                    "y" => y ^= 1 << k,
                    "z" => z ^= 1 << k,
                    "b" => b ^= 1 << k,
                    _ => panic!("{what}: term {t}"),
                }
            }
            assert_eq!(
                (eq.x_mask[i], eq.y_mask[i], eq.z_mask[i], eq.b_mask[i]),
                (x, y, z, b),
                "{what}: address bit {i}"
            );
        }
    }
}

#[test]
fn series_x_tables_match_the_anaconda_equations() {
    check("eq_anaconda_hyp.json", Console::SeriesX);
}

#[test]
fn series_s_tables_match_the_lockhart_equations() {
    check("eq_lockhart_hyp.json", Console::SeriesS);
}
