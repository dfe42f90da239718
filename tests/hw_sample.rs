//! Instruction vectors through the library (not the CLI): every vector of
//! `../shared/data/isa/sample.jsonl`, and the independent model's vectors in `tests/data/isa`.

use serde_json::Value;
use wavetrace::hw::{
    image_bvh64_intersect_ray, BvhDescriptor, MappedMemory, NodePointer64, RayRegisters,
};

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/data/isa/sample.jsonl"
);

fn hex32(v: &Value) -> u32 {
    u32::from_str_radix(v.as_str().expect("hex string"), 16).expect("hex")
}

fn hex3(v: &Value) -> [f32; 3] {
    let a = v.as_array().expect("array");
    std::array::from_fn(|i| f32::from_bits(hex32(&a[i])))
}

/// Runs every vector of `text` (JSON Lines, the sample's schema) through the library; returns
/// the number of vectors and a line per failure.
fn check_vectors(text: &str) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let o: Value = serde_json::from_str(line).expect("valid JSON");
        let desc = o["desc"].as_str().unwrap();
        let dwords: [u32; 4] =
            std::array::from_fn(|k| u32::from_str_radix(&desc[8 * k..8 * k + 8], 16).unwrap());
        let descriptor = BvhDescriptor::from_dwords(dwords).expect("valid descriptor");
        let pointer = hex32(&o["node_ptr"]) as u64;
        let node_hex = o["node"].as_str().unwrap();
        let node: Vec<u8> = (0..node_hex.len() / 2)
            .map(|k| u8::from_str_radix(&node_hex[2 * k..2 * k + 2], 16).unwrap())
            .collect();
        let ray = RayRegisters {
            extent: f32::from_bits(hex32(&o["extent"])),
            origin: hex3(&o["origin"]),
            dir: hex3(&o["dir"]),
            inv_dir: hex3(&o["inv_dir"]),
        };
        let expect: [u32; 4] = std::array::from_fn(|k| hex32(&o["expect"][k]));
        let memory = MappedMemory {
            va: NodePointer64::from_u64(pointer).fetch_address(descriptor.base_address_256),
            bytes: &node,
        };
        let got = image_bvh64_intersect_ray(&memory, &descriptor, pointer, &ray).dwords;
        count += 1;
        if got != expect {
            failures.push(format!(
                "line {}: {} expected {expect:08x?} got {got:08x?}",
                i + 1,
                o["cat"]
            ));
        }
    }
    (count, failures)
}

/// Asserts that `text` holds `expected` vectors and every one passes.
fn assert_all_pass(text: &str, expected: usize) {
    let (count, failures) = check_vectors(text);
    assert_eq!(count, expected, "vectors in the file");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_sample_vector_passes() {
    let text = std::fs::read_to_string(SAMPLE).expect("sample.jsonl readable");
    assert_all_pass(&text, 4000);
}

/// 3,009 vectors whose expected dwords come from a second, independent model of the
/// instruction (`tests/data/isa/README.md`): every node type, NaN, infinities, signed zeros
/// and denormals in every register and coordinate, grow factors, sorting on and off, both
/// return modes, the bounds check, exact edge ties.
#[test]
fn every_independent_model_vector_passes() {
    use std::io::Read;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/isa/model_vectors.jsonl.gz"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("test data file"))
        .read_to_string(&mut text)
        .expect("gzip JSON Lines");
    assert_all_pass(&text, 3009);
}
