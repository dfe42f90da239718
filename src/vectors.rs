//! Instruction test vectors: one JSON object per line (`../shared/data/isa/README.md`),
//! parsed into the reference instruction's inputs and run through it.
//!
//! A line is `{"desc": 32 hex digits (dword0 first, each dword MSB first), "node_ptr": 8 hex
//! digits (16 for a 64-bit pointer), "node": hex bytes of the node, "extent": hex f32 bits,
//! "origin"/"dir"/"inv_dir": [3 hex f32 bits], "expect": optional [4 hex u32], ...}`; other
//! fields are kept. Parsing never panics: any malformed line is an error naming the field.

use crate::hw::{
    image_bvh64_intersect_ray, BvhDescriptor, MappedMemory, NodePointer64, NodeType, RayRegisters,
};
use serde_json::Value;

/// One parsed vector.
#[derive(Clone, Debug)]
pub struct Vector {
    pub descriptor: BvhDescriptor,
    pub node_pointer: u64,
    pub node: Vec<u8>,
    pub ray: RayRegisters,
    pub expect: Option<[u32; 4]>,
}

impl Vector {
    /// The four dwords the reference instruction returns for this vector.
    pub fn run(&self) -> [u32; 4] {
        let memory = MappedMemory {
            va: NodePointer64::from_u64(self.node_pointer)
                .fetch_address(self.descriptor.base_address_256),
            bytes: &self.node,
        };
        image_bvh64_intersect_ray(&memory, &self.descriptor, self.node_pointer, &self.ray).dwords
    }
}

/// Parses one line; the error names the field that is wrong.
pub fn parse_line(
    line: &str,
) -> std::result::Result<(serde_json::Map<String, Value>, Vector), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("bad JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".into());
    };
    let vector = parse_vector(&object)?;
    Ok((object, vector))
}

pub fn parse_vector(o: &serde_json::Map<String, Value>) -> std::result::Result<Vector, String> {
    let desc_hex = string_field(o, "desc")?;
    if !desc_hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("field \"desc\": {desc_hex:?} is not hex"));
    }
    if desc_hex.len() != 32 {
        return Err(format!(
            "field \"desc\": {} hex digits, need 32",
            desc_hex.len()
        ));
    }
    let mut dwords = [0u32; 4];
    for (i, d) in dwords.iter_mut().enumerate() {
        *d = hex_u32(&desc_hex[8 * i..8 * i + 8]).map_err(|e| format!("field \"desc\": {e}"))?;
    }
    let descriptor =
        BvhDescriptor::from_dwords(dwords).map_err(|e| format!("field \"desc\": {e}"))?;

    let ptr_hex = string_field(o, "node_ptr")?;
    let node_pointer = match ptr_hex.len() {
        8 => hex_u32(ptr_hex).map(u64::from),
        16 => u64::from_str_radix(ptr_hex, 16).map_err(|_| format!("{ptr_hex:?} is not hex")),
        n => Err(format!(
            "{n} hex digits, need 8 (or 16 for a 64-bit pointer)"
        )),
    }
    .map_err(|e| format!("field \"node_ptr\": {e}"))?;

    let node_hex = string_field(o, "node")?;
    let node = hex_bytes(node_hex).map_err(|e| format!("field \"node\": {e}"))?;
    let ty = NodePointer64::from_u64(node_pointer).node_type();
    let need = ty.fetch_bytes();
    let size_ok = match ty {
        NodeType::User6 | NodeType::User7 => node.len() == 64 || node.len() == 128,
        _ => node.len() == need,
    };
    if !size_ok {
        return Err(format!(
            "field \"node\": {} bytes, a {} node has {need}",
            node.len(),
            ty.name()
        ));
    }

    let ray = RayRegisters {
        extent: f32::from_bits(
            hex_u32(string_field(o, "extent")?).map_err(|e| format!("field \"extent\": {e}"))?,
        ),
        origin: hex_array::<3>(o, "origin")?.map(f32::from_bits),
        dir: hex_array::<3>(o, "dir")?.map(f32::from_bits),
        inv_dir: hex_array::<3>(o, "inv_dir")?.map(f32::from_bits),
    };
    let expect = match o.get("expect") {
        None | Some(Value::Null) => None,
        Some(_) => Some(hex_array::<4>(o, "expect")?),
    };
    Ok(Vector {
        descriptor,
        node_pointer,
        node,
        ray,
        expect,
    })
}

fn string_field<'a>(
    o: &'a serde_json::Map<String, Value>,
    field: &str,
) -> std::result::Result<&'a str, String> {
    match o.get(field) {
        None => Err(format!("field \"{field}\" is missing")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("field \"{field}\" must be a hex string")),
    }
}

fn hex_array<const N: usize>(
    o: &serde_json::Map<String, Value>,
    field: &str,
) -> std::result::Result<[u32; N], String> {
    let items = match o.get(field) {
        None => return Err(format!("field \"{field}\" is missing")),
        Some(Value::Array(items)) if items.len() == N => items,
        Some(_) => {
            return Err(format!(
                "field \"{field}\" must be an array of {N} hex strings"
            ))
        }
    };
    let mut out = [0u32; N];
    for (i, (slot, item)) in out.iter_mut().zip(items).enumerate() {
        let s = item
            .as_str()
            .ok_or_else(|| format!("field \"{field}\"[{i}] must be a hex string"))?;
        *slot = hex_u32(s).map_err(|e| format!("field \"{field}\"[{i}]: {e}"))?;
    }
    Ok(out)
}

/// Exactly 8 hex digits.
fn hex_u32(s: &str) -> std::result::Result<u32, String> {
    if s.len() != 8 {
        return Err(format!("{s:?} has {} hex digits, need 8", s.len()));
    }
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{s:?} is not hex"));
    }
    u32::from_str_radix(s, 16).map_err(|_| format!("{s:?} is not hex"))
}

fn hex_bytes(s: &str) -> std::result::Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", s.len()));
    }
    s.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |b: u8| (b as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(h), Some(l)) => Ok((h * 16 + l) as u8),
                _ => Err("not hex".to_string()),
            }
        })
        .collect()
}
