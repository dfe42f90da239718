//! The SIMD wave intersector against the shared instruction test vectors
//! (`../shared/data/isa/sample.jsonl`, computed by vendor software models following
//! semantics.md section 12): golden values from an independent computation.

use wavetrace::hw::{BvhDescriptor, LaneOutcome, NodePointer};
use wavetrace::wave::{BvhMemory, LaneRay, WaveIntersector};

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/data/isa/sample.jsonl"
);

fn hex_u32(v: &serde_json::Value) -> u32 {
    u32::from_str_radix(v.as_str().unwrap(), 16).unwrap()
}

fn hex_f32(v: &serde_json::Value) -> f32 {
    f32::from_bits(hex_u32(v))
}

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn wave_intersector_reproduces_every_sample_vector() {
    let text = std::fs::read_to_string(SAMPLE).expect("read sample.jsonl");
    let mut checked = 0;
    let mut failures = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let desc = v["desc"].as_str().unwrap();
        let dwords: [u32; 4] =
            std::array::from_fn(|i| u32::from_str_radix(&desc[8 * i..8 * i + 8], 16).unwrap());
        let descriptor = BvhDescriptor::from_dwords(dwords).unwrap();
        let node = hex_bytes(v["node"].as_str().unwrap());
        let ray = LaneRay {
            extent: hex_f32(&v["extent"]),
            origin: std::array::from_fn(|a| hex_f32(&v["origin"][a])),
            dir: std::array::from_fn(|a| hex_f32(&v["dir"][a])),
            inv_dir: std::array::from_fn(|a| hex_f32(&v["inv_dir"][a])),
        };
        let expect: [u32; 4] = std::array::from_fn(|i| hex_u32(&v["expect"][i]));
        let intersector = WaveIntersector::new(
            BvhMemory {
                bytes: &node,
                va: 0,
            },
            descriptor,
            None,
        );
        let (got, outcome) = intersector.lane(NodePointer::from_u32(hex_u32(&v["node_ptr"])), &ray);
        if got != expect {
            failures.push(format!(
                "line {} ({}): got {:08x?} expected {:08x?} ({outcome:?})",
                line_no + 1,
                v["cat"],
                got,
                expect
            ));
        }
        if v["cat"] == "inactive_lane" {
            assert!(
                matches!(outcome, LaneOutcome::Inactive(_)),
                "line {}",
                line_no + 1
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 4000);
    assert!(
        failures.is_empty(),
        "{} of {checked} vectors differ:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}
