//! PLY meshes (Stanford polygon files): ASCII, binary little-endian and binary big-endian.
//!
//! What is read: the `vertex` element's `x`, `y`, `z` (any numeric type, converted to
//! f32), and when present its normal `nx`, `ny`, `nz` and texture coordinates (`u`/`v`,
//! `s`/`t` or `texture_u`/`texture_v`); the `face` element's vertex list (`vertex_indices`
//! or `vertex_index`, any integer count and index types), each polygon fan-triangulated in
//! its vertex order (`a b c d` gives `a b c`, `a c d`). Every other property and element is
//! read past and ignored. Properties may come in any order.
//!
//! The parser is strict: a header it cannot read is an error at its line; a body that
//! ends early, holds a token that is not a number of its property's type, a face with
//! fewer than three vertices or a vertex index out of range, or a non-finite position or
//! normal, is an error naming the element and its index. Counts in the header are not
//! trusted: nothing is reserved beyond what the rest of the file can hold.

use crate::error::{Error, Result};
use std::path::Path;

/// A PLY file's triangles and per-vertex attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlyMesh {
    pub positions: Vec<[f32; 3]>,
    /// Per-vertex normals, when the file gives `nx`, `ny`, `nz`.
    pub normals: Option<Vec<[f32; 3]>>,
    /// Per-vertex texture coordinates, when the file gives them.
    pub uvs: Option<Vec<[f32; 2]>>,
    /// Triangles in file order (faces fan-triangulated).
    pub indices: Vec<[u32; 3]>,
}

/// Reads a PLY file; errors name it.
pub fn load_ply(path: &Path) -> Result<PlyMesh> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_ply(path, &bytes)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Ascii,
    LittleEndian,
    BigEndian,
}

/// A scalar property type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Scalar {
    fn from_name(name: &str) -> Option<Scalar> {
        Some(match name {
            "char" | "int8" => Scalar::I8,
            "uchar" | "uint8" => Scalar::U8,
            "short" | "int16" => Scalar::I16,
            "ushort" | "uint16" => Scalar::U16,
            "int" | "int32" => Scalar::I32,
            "uint" | "uint32" => Scalar::U32,
            "float" | "float32" => Scalar::F32,
            "double" | "float64" => Scalar::F64,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::F64 => 8,
        }
    }

    fn is_integer(self) -> bool {
        !matches!(self, Scalar::F32 | Scalar::F64)
    }
}

#[derive(Clone, Debug)]
enum PropertyKind {
    Scalar(Scalar),
    /// A list: the type of its count, then of its items.
    List(Scalar, Scalar),
}

#[derive(Clone, Debug)]
struct Property {
    name: String,
    kind: PropertyKind,
}

#[derive(Clone, Debug)]
struct Element {
    name: String,
    count: u64,
    /// 1-based header line of its `element` statement.
    line: usize,
    properties: Vec<Property>,
}

impl Element {
    fn find(&self, names: &[&str]) -> Option<usize> {
        self.properties
            .iter()
            .position(|p| names.contains(&p.name.as_str()))
    }

    /// The smallest number of body bytes one item can take (for capping reservations).
    fn min_item_bytes(&self, encoding: Encoding) -> usize {
        let bytes: usize = self
            .properties
            .iter()
            .map(|p| match (encoding, &p.kind) {
                // A number and a separator.
                (Encoding::Ascii, _) => 2,
                (_, PropertyKind::Scalar(s)) => s.size(),
                (_, PropertyKind::List(c, _)) => c.size(),
            })
            .sum();
        bytes.max(1)
    }
}

struct Header {
    encoding: Encoding,
    elements: Vec<Element>,
    /// Byte offset of the body.
    body: usize,
}

/// Parses PLY bytes; `path` only names the source in errors.
pub fn parse_ply(path: &Path, bytes: &[u8]) -> Result<PlyMesh> {
    let header = parse_header(bytes).map_err(|(line, m)| Error::parse(path, line, m))?;
    let body = Body {
        bytes,
        pos: header.body,
        encoding: header.encoding,
    };
    read_body(&header, body).map_err(|m| Error::parse(path, 0, m))
}

/// The header: its errors carry their 1-based line.
fn parse_header(bytes: &[u8]) -> std::result::Result<Header, (usize, String)> {
    let mut pos = 0;
    let mut lineno = 0;
    let mut encoding = None;
    let mut elements: Vec<Element> = Vec::new();
    loop {
        let Some(len) = bytes[pos..].iter().position(|&b| b == b'\n') else {
            return Err((lineno + 1, "the header ends without `end_header`".into()));
        };
        let raw = &bytes[pos..pos + len];
        pos += len + 1;
        lineno += 1;
        let Ok(line) = std::str::from_utf8(raw) else {
            return Err((lineno, "header line is not valid UTF-8".into()));
        };
        let line = line.trim_end_matches('\r').trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        if lineno == 1 {
            if line != "ply" {
                return Err((1, "not a PLY file: the first line must be `ply`".into()));
            }
            continue;
        }
        match words.first().copied() {
            None => {}
            Some("comment" | "obj_info") => {}
            Some("format") => {
                if encoding.is_some() {
                    return Err((lineno, "a second `format` line".into()));
                }
                let e = match words.get(1).copied() {
                    Some("ascii") => Encoding::Ascii,
                    Some("binary_little_endian") => Encoding::LittleEndian,
                    Some("binary_big_endian") => Encoding::BigEndian,
                    _ => {
                        return Err((
                            lineno,
                            format!(
                                "`{line}`: the format is ascii, binary_little_endian or \
                                 binary_big_endian"
                            ),
                        ))
                    }
                };
                if words.get(2).copied() != Some("1.0") || words.len() != 3 {
                    return Err((lineno, format!("`{line}`: only version 1.0 is read")));
                }
                encoding = Some(e);
            }
            Some("element") => {
                let (Some(name), Some(count), 3) = (words.get(1), words.get(2), words.len()) else {
                    return Err((lineno, format!("`{line}`: expected `element NAME COUNT`")));
                };
                let count = count
                    .parse::<u64>()
                    .map_err(|_| (lineno, format!("`{line}`: the count is not a number")))?;
                if elements.iter().any(|e| e.name == *name) {
                    return Err((lineno, format!("a second element `{name}`")));
                }
                elements.push(Element {
                    name: name.to_string(),
                    count,
                    line: lineno,
                    properties: Vec::new(),
                });
            }
            Some("property") => {
                let Some(element) = elements.last_mut() else {
                    return Err((lineno, "`property` before any `element`".into()));
                };
                let ty = |name: &str| {
                    Scalar::from_name(name)
                        .ok_or_else(|| (lineno, format!("`{line}`: unknown type `{name}`")))
                };
                let property = match words.as_slice() {
                    ["property", "list", count, item, name] => {
                        let count = ty(count)?;
                        let item = ty(item)?;
                        if !count.is_integer() {
                            return Err((
                                lineno,
                                format!("`{line}`: a list count must be an integer type"),
                            ));
                        }
                        Property {
                            name: name.to_string(),
                            kind: PropertyKind::List(count, item),
                        }
                    }
                    ["property", t, name] if *t != "list" => Property {
                        name: name.to_string(),
                        kind: PropertyKind::Scalar(ty(t)?),
                    },
                    _ => {
                        return Err((
                            lineno,
                            format!(
                                "`{line}`: expected `property TYPE NAME` or \
                                 `property list COUNT_TYPE ITEM_TYPE NAME`"
                            ),
                        ))
                    }
                };
                if element.properties.iter().any(|p| p.name == property.name) {
                    return Err((
                        lineno,
                        format!(
                            "a second property `{}` in `{}`",
                            property.name, element.name
                        ),
                    ));
                }
                element.properties.push(property);
            }
            Some("end_header") if words.len() == 1 => break,
            Some(_) => return Err((lineno, format!("`{line}`: not a PLY header statement"))),
        }
    }
    let Some(encoding) = encoding else {
        return Err((lineno, "the header has no `format` line".into()));
    };
    check_elements(&elements)?;
    Ok(Header {
        encoding,
        elements,
        body: pos,
    })
}

/// The vertex element has scalar x, y, z (and complete normal and uv sets); the face
/// element has an integer vertex list.
fn check_elements(elements: &[Element]) -> std::result::Result<(), (usize, String)> {
    if let Some(e) = elements
        .iter()
        .find(|e| e.count > 0 && e.properties.is_empty())
    {
        return Err((
            e.line,
            format!("element `{}` has items but no properties", e.name),
        ));
    }
    let Some(vertex) = elements.iter().find(|e| e.name == "vertex") else {
        return Err((0, "no `vertex` element in the header".into()));
    };
    if vertex.count > u32::MAX as u64 {
        return Err((
            vertex.line,
            format!("{} vertices: more than 2^32 - 1", vertex.count),
        ));
    }
    let scalar = |names: &[&str]| -> std::result::Result<Option<usize>, (usize, String)> {
        match vertex.find(names) {
            Some(i) if matches!(vertex.properties[i].kind, PropertyKind::List(..)) => Err((
                vertex.line,
                format!("vertex property `{}` is a list", vertex.properties[i].name),
            )),
            other => Ok(other),
        }
    };
    for axis in ["x", "y", "z"] {
        if scalar(&[axis])?.is_none() {
            return Err((vertex.line, format!("the vertex element has no `{axis}`")));
        }
    }
    let normals = [scalar(&["nx"])?, scalar(&["ny"])?, scalar(&["nz"])?];
    if normals.iter().any(Option::is_some) && normals.iter().any(Option::is_none) {
        return Err((vertex.line, "give all of nx, ny, nz or none".into()));
    }
    let uv = [
        scalar(&["u", "s", "texture_u"])?,
        scalar(&["v", "t", "texture_v"])?,
    ];
    if uv[0].is_some() != uv[1].is_some() {
        return Err((
            vertex.line,
            "give both texture coordinates (u and v) or none".into(),
        ));
    }
    if let Some(face) = elements.iter().find(|e| e.name == "face") {
        match face.find(&["vertex_indices", "vertex_index"]) {
            Some(i) => match face.properties[i].kind {
                PropertyKind::List(_, item) if item.is_integer() => {}
                _ => {
                    return Err((
                        face.line,
                        format!(
                            "face property `{}` must be a list of integers",
                            face.properties[i].name
                        ),
                    ))
                }
            },
            None => {
                return Err((
                    face.line,
                    "the face element has no `vertex_indices` (or `vertex_index`) list".into(),
                ))
            }
        }
    }
    Ok(())
}

/// The body's bytes, read item by item.
struct Body<'a> {
    bytes: &'a [u8],
    pos: usize,
    encoding: Encoding,
}

impl Body<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// One value of type `ty`, as f64 (exact for every PLY integer type).
    fn value(&mut self, ty: Scalar) -> std::result::Result<f64, String> {
        match self.encoding {
            Encoding::Ascii => self.token(ty),
            Encoding::LittleEndian | Encoding::BigEndian => {
                let n = ty.size();
                let Some(raw) = self.bytes.get(self.pos..self.pos + n) else {
                    return Err("the file ends early (truncated?)".into());
                };
                self.pos += n;
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(raw);
                if self.encoding == Encoding::BigEndian {
                    b[..n].reverse();
                }
                Ok(match ty {
                    Scalar::I8 => b[0] as i8 as f64,
                    Scalar::U8 => b[0] as f64,
                    Scalar::I16 => i16::from_le_bytes([b[0], b[1]]) as f64,
                    Scalar::U16 => u16::from_le_bytes([b[0], b[1]]) as f64,
                    Scalar::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                    Scalar::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                    Scalar::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                    Scalar::F64 => f64::from_le_bytes(b),
                })
            }
        }
    }

    /// The next whitespace-separated ASCII token, as a number of type `ty`.
    fn token(&mut self, ty: Scalar) -> std::result::Result<f64, String> {
        let rest = &self.bytes[self.pos..];
        let Some(start) = rest.iter().position(|b| !b.is_ascii_whitespace()) else {
            return Err("the file ends early (truncated?)".into());
        };
        let len = rest[start..]
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + len];
        self.pos += start + len;
        let text = std::str::from_utf8(word).unwrap_or("?");
        let bad = || format!("`{text}` is not a number of type {ty:?}");
        let value = if ty.is_integer() {
            text.parse::<i64>().map_err(|_| bad())? as f64
        } else {
            text.parse::<f64>().map_err(|_| bad())?
        };
        let (lo, hi) = match ty {
            Scalar::I8 => (i8::MIN as f64, i8::MAX as f64),
            Scalar::U8 => (0.0, u8::MAX as f64),
            Scalar::I16 => (i16::MIN as f64, i16::MAX as f64),
            Scalar::U16 => (0.0, u16::MAX as f64),
            Scalar::I32 => (i32::MIN as f64, i32::MAX as f64),
            Scalar::U32 => (0.0, u32::MAX as f64),
            Scalar::F32 | Scalar::F64 => (f64::NEG_INFINITY, f64::INFINITY),
        };
        if ty.is_integer() && !(lo..=hi).contains(&value) {
            return Err(format!("`{text}` is out of range for type {ty:?}"));
        }
        Ok(value)
    }

    /// Reads one item of `element`: each scalar property's value into `values` (by
    /// property index), and the items of list property `list_index` into `list` (other
    /// lists are read past).
    fn item(
        &mut self,
        element: &Element,
        values: &mut [f64],
        list: &mut Vec<f64>,
        list_index: Option<usize>,
    ) -> std::result::Result<(), String> {
        for (i, p) in element.properties.iter().enumerate() {
            match p.kind {
                PropertyKind::Scalar(ty) => values[i] = self.value(ty)?,
                PropertyKind::List(count_ty, item_ty) => {
                    let count = self.value(count_ty)?;
                    if count < 0.0 {
                        return Err(format!("list `{}` has a negative count", p.name));
                    }
                    let count = count as usize;
                    let keep = list_index == Some(i);
                    if keep {
                        list.clear();
                    }
                    if self.encoding != Encoding::Ascii {
                        let bytes = count.checked_mul(item_ty.size());
                        if bytes.is_none_or(|b| b > self.remaining()) {
                            return Err("the file ends early (truncated?)".into());
                        }
                    }
                    for _ in 0..count {
                        let v = self.value(item_ty)?;
                        if keep {
                            list.push(v);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Reads every element of the body.
fn read_body(header: &Header, mut body: Body) -> std::result::Result<PlyMesh, String> {
    let vertex_count = header
        .elements
        .iter()
        .find(|e| e.name == "vertex")
        .map_or(0, |e| e.count as usize);
    let mut mesh = PlyMesh::default();
    let mut list = Vec::new();
    for element in &header.elements {
        let cap = |per_item: usize| {
            (element.count as usize).min(body.remaining() / element.min_item_bytes(body.encoding))
                * per_item
        };
        let mut values = vec![0.0f64; element.properties.len()];
        let what = element.name.as_str();
        match what {
            "vertex" => {
                let find = |names: &[&str]| element.find(names);
                let xyz = [find(&["x"]), find(&["y"]), find(&["z"])];
                let n = [find(&["nx"]), find(&["ny"]), find(&["nz"])];
                let uv = [
                    find(&["u", "s", "texture_u"]),
                    find(&["v", "t", "texture_v"]),
                ];
                mesh.positions.reserve(cap(1));
                let mut normals = n[0].map(|_| Vec::with_capacity(cap(1)));
                let mut uvs = uv[0].map(|_| Vec::with_capacity(cap(1)));
                for index in 0..element.count {
                    body.item(element, &mut values, &mut list, None)
                        .map_err(|m| format!("vertex {index}: {m}"))?;
                    let get = |i: Option<usize>| i.map_or(0.0, |i| values[i]) as f32;
                    let p = xyz.map(get);
                    if p.iter().any(|c| !c.is_finite()) {
                        return Err(format!("vertex {index}: position {p:?} is not finite"));
                    }
                    mesh.positions.push(p);
                    if let Some(normals) = &mut normals {
                        let v = n.map(get);
                        if v.iter().any(|c| !c.is_finite()) {
                            return Err(format!("vertex {index}: normal {v:?} is not finite"));
                        }
                        normals.push(v);
                    }
                    if let Some(uvs) = &mut uvs {
                        let t = uv.map(get);
                        if t.iter().any(|c| !c.is_finite()) {
                            return Err(format!(
                                "vertex {index}: texture coordinates {t:?} are not finite"
                            ));
                        }
                        uvs.push(t);
                    }
                }
                mesh.normals = normals;
                mesh.uvs = uvs;
            }
            "face" => {
                let corners = element.find(&["vertex_indices", "vertex_index"]);
                mesh.indices.reserve(cap(1));
                for index in 0..element.count {
                    body.item(element, &mut values, &mut list, corners)
                        .map_err(|m| format!("face {index}: {m}"))?;
                    if list.len() < 3 {
                        return Err(format!(
                            "face {index}: {} vertices; a face needs at least 3",
                            list.len()
                        ));
                    }
                    let mut ids = Vec::with_capacity(list.len());
                    for &v in &list {
                        if !(v >= 0.0 && v < vertex_count as f64) {
                            return Err(format!(
                                "face {index}: vertex index {v} out of range ({vertex_count} \
                                 vertices)"
                            ));
                        }
                        ids.push(v as u32);
                    }
                    for k in 1..ids.len() - 1 {
                        mesh.indices.push([ids[0], ids[k], ids[k + 1]]);
                    }
                }
            }
            _ => {
                for index in 0..element.count {
                    body.item(element, &mut values, &mut list, None)
                        .map_err(|m| format!("{what} {index}: {m}"))?;
                }
            }
        }
    }
    let trailing = &body.bytes[body.pos..];
    if !trailing.iter().all(u8::is_ascii_whitespace) {
        return Err(format!(
            "{} bytes after the last element (the header's counts do not match the body)",
            trailing.len()
        ));
    }
    Ok(mesh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_quad_is_fan_triangulated() {
        let text = b"ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\n\
property float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\n\
end_header\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n4 0 1 2 3\n";
        let m = parse_ply(Path::new("q.ply"), text).unwrap();
        assert_eq!(m.positions.len(), 4);
        assert_eq!(m.indices, vec![[0, 1, 2], [0, 2, 3]]);
        assert!(m.normals.is_none() && m.uvs.is_none());
    }

    #[test]
    fn header_errors_name_their_line() {
        let text = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty floot x\nend_header\n";
        let e = parse_ply(Path::new("b.ply"), text).unwrap_err().to_string();
        assert!(e.starts_with("b.ply:4:"), "{e}");
    }
}
