//! Triangle meshes: in-memory triangle lists, and mesh files: OBJ (plain or
//! gzip-compressed), PLY ([`super::ply`]) and glTF 2.0 ([`super::gltf_mesh`], flattened to
//! world space). [`Mesh::load`] picks the reader by the file's extension.
//!
//! The primitive id of a triangle is its index in [`Mesh::indices`]. For an OBJ file that is
//! the file order: faces in the order they appear, each polygon fan-triangulated in its vertex
//! order (`a b c d` gives `a b c`, `a c d`). tobj splits a file into models at every `o`, `g`
//! and material change; the models are contiguous runs of faces in file order, so
//! concatenating them in the order tobj returns them keeps the file order.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// A triangle mesh: shared positions and one index triple per triangle.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions.
    pub positions: Vec<[f32; 3]>,
    /// Triangle i has vertices `positions[indices[i][0..3]]` in this order (counter-clockwise
    /// front face); its primitive id is i.
    pub indices: Vec<[u32; 3]>,
}

impl Mesh {
    /// A mesh from a triangle soup: three positions per triangle, triangle i has id i.
    pub fn from_triangles(triangles: &[[[f32; 3]; 3]]) -> Mesh {
        let positions = triangles.iter().flatten().copied().collect();
        let indices = (0..triangles.len() as u32)
            .map(|i| [3 * i, 3 * i + 1, 3 * i + 2])
            .collect();
        Mesh { positions, indices }
    }

    /// Loads a mesh file by its extension: `.ply` (PLY), `.gltf` or `.glb` (glTF 2.0, every
    /// mesh node's triangles in world space, in node order), anything else OBJ (`.obj`,
    /// `.obj.gz`). A file without any triangle is an error naming it.
    pub fn load(path: &Path) -> Result<Mesh> {
        Ok(Self::load_with_warnings(path)?.0)
    }

    /// [`Mesh::load`], also returning what was skipped (glTF primitives that are not
    /// triangles, cameras that are not perspective), for the CLI to print.
    pub fn load_with_warnings(path: &Path) -> Result<(Mesh, Vec<String>)> {
        let mut warnings = Vec::new();
        let mesh = match MeshFormat::of(path) {
            MeshFormat::Obj => return Ok((Self::load_obj(path)?, warnings)),
            MeshFormat::Ply => {
                let ply = super::ply::load_ply(path)?;
                Mesh {
                    positions: ply.positions,
                    indices: ply.indices,
                }
            }
            MeshFormat::Gltf => super::gltf_mesh::GltfFile::load(path)?.flatten(&mut warnings)?,
        };
        if mesh.is_empty() {
            return Err(no_triangles(path));
        }
        Ok((mesh, warnings))
    }

    /// Loads an OBJ file (`.obj`, or gzip-compressed `.obj.gz`), triangulated.
    ///
    /// A missing file gives [`Error::Io`] naming it; a malformed file gives [`Error::Parse`]
    /// with the file and the 1-based line of the first offending statement (see
    /// [`Mesh::parse_obj`]), as does a file without any face.
    pub fn load_obj(path: &Path) -> Result<Mesh> {
        let raw = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::with_capacity(raw.len() * 4);
            flate2::read::MultiGzDecoder::new(raw.as_slice())
                .read_to_end(&mut out)
                .map_err(|e| Error::io(path, e))?;
            out
        } else {
            raw
        };
        Self::parse_obj(path, &text)
    }

    /// Parses OBJ text; `path` only names the source in errors. Every line is checked
    /// first (`check_obj_text`: the error names its line); a file without any face is an
    /// error too.
    pub fn parse_obj(path: &Path, text: &[u8]) -> Result<Mesh> {
        let counts = check_obj_text(text).map_err(|(line, m)| Error::parse(path, line, m))?;
        if counts.faces == 0 {
            return Err(Error::parse(
                path,
                0,
                format!(
                    "no faces: a mesh needs at least one triangle (an `f` line); \
                     {} vertex positions and nothing else",
                    counts.positions
                ),
            ));
        }
        let options = tobj::LoadOptions {
            triangulate: true,
            single_index: false,
            ignore_points: true,
            ignore_lines: true,
        };
        let mut reader = text;
        let loaded = tobj::load_obj_buf(&mut reader, &options, |_| {
            Ok((Vec::new(), Default::default()))
        });
        let models = match loaded {
            Ok((models, _materials)) => models,
            Err(e) => return Err(Error::parse(path, 0, format!("malformed OBJ ({e})"))),
        };
        let mut mesh = Mesh::default();
        for model in &models {
            let m = &model.mesh;
            let base = mesh.positions.len() as u32;
            mesh.positions
                .extend(m.positions.chunks_exact(3).map(|p| [p[0], p[1], p[2]]));
            mesh.indices.extend(
                m.indices
                    .chunks_exact(3)
                    .map(|t| [base + t[0], base + t[1], base + t[2]]),
            );
        }
        Ok(mesh)
    }

    /// The three vertex positions of triangle `prim_id`, in the mesh's own order.
    #[inline]
    pub fn triangle(&self, prim_id: u32) -> [[f32; 3]; 3] {
        let [a, b, c] = self.indices[prim_id as usize];
        [
            self.positions[a as usize],
            self.positions[b as usize],
            self.positions[c as usize],
        ]
    }

    /// Number of triangles.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// Checks that every index names a position (for meshes built in memory).
    pub fn check_indices(&self) -> Result<()> {
        let n = self.positions.len();
        for (i, t) in self.indices.iter().enumerate() {
            if let Some(&bad) = t.iter().find(|&&v| v as usize >= n) {
                return Err(Error::field(
                    format!("mesh triangle {i}"),
                    format!("vertex index {bad} out of range ({n} positions)"),
                ));
            }
        }
        Ok(())
    }
}

/// The mesh file formats, told apart by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshFormat {
    /// Wavefront OBJ, plain or gzip-compressed (any extension but the ones below).
    Obj,
    /// `.ply`
    Ply,
    /// `.gltf` or `.glb`
    Gltf,
}

impl MeshFormat {
    /// The format of `path` by its extension (case-insensitive).
    pub fn of(path: &Path) -> MeshFormat {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("ply") => MeshFormat::Ply,
            Some("gltf" | "glb") => MeshFormat::Gltf,
            _ => MeshFormat::Obj,
        }
    }
}

/// The error of a mesh file with no triangle (one rule for every format).
pub fn no_triangles(path: &Path) -> Error {
    Error::parse(path, 0, "no faces: a mesh needs at least one triangle")
}

/// What [`check_obj_text`] counted in a well-formed OBJ file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ObjCounts {
    /// `v` statements.
    pub positions: usize,
    /// `f` statements (each at least one triangle).
    pub faces: usize,
}

/// Checks every line of an OBJ file before tobj reads it (also used by the scene loader,
/// which reads OBJ files through tobj too). The error is the 1-based number of the first
/// offending line and a message naming its statement:
///
/// - a line that is not UTF-8;
/// - `v` without three finite numbers x y z, or followed by anything but a weight w
///   (finite, not 0, and x/w, y/w, z/w finite) or a colour r g b; vertex colours on some
///   `v` lines only;
/// - `vt` without two finite numbers u v (and an optional finite w), `vn` without three
///   finite numbers;
/// - `f` with fewer than three corners; a corner that is not `v`, `v/vt`, `v//vn` or
///   `v/vt/vn`, corners of one face with different attributes, or an index (1-based, or
///   negative counting back) that names no `v`, `vt` or `vn` statement before it (the
///   same for the corners of an `l` line, which is otherwise ignored);
/// - `usemtl` without a material name.
///
/// A NaN or infinite coordinate is an error here, at its line, for every command that
/// reads an OBJ file (`bvh`, `trace`, `bench`, `profile`, `render`). Meshes built in
/// memory are not checked: the BVH builder leaves out their triangles with a non-finite
/// vertex and counts them (`dropped_nan_triangles`).
pub(crate) fn check_obj_text(text: &[u8]) -> std::result::Result<ObjCounts, (usize, String)> {
    let mut counts = ObjCounts::default();
    let (mut nvt, mut nvn) = (0usize, 0usize);
    // The line of the first `v` statement and whether it gives a colour.
    let mut first_colour: Option<(usize, bool)> = None;
    for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
        let lineno = i + 1;
        let Ok(line) = std::str::from_utf8(raw) else {
            return Err((lineno, "line is not valid UTF-8".into()));
        };
        let line = line.trim();
        let mut words = line.split_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        match keyword {
            "v" => {
                let colour = check_position(words)
                    .map_err(|m| (lineno, format!("vertex position `{line}`: {m}")))?;
                match first_colour {
                    None => first_colour = Some((lineno, colour)),
                    Some((first, c)) if c != colour => {
                        let has = if c { "gives one" } else { "gives none" };
                        return Err((
                            lineno,
                            format!(
                                "vertex position `{line}`: give a colour r g b on every `v` \
                                 line or on none (the first, line {first}, {has})"
                            ),
                        ));
                    }
                    Some(_) => {}
                }
                counts.positions += 1;
                if counts.positions > u32::MAX as usize {
                    return Err((lineno, "more than 2^32 - 1 vertex positions".into()));
                }
            }
            "vt" => {
                let n = finite_numbers(words, 3).map_err(|m| {
                    (
                        lineno,
                        format!("texture coordinate `{line}`: {m} (u v [w])"),
                    )
                })?;
                if n < 2 {
                    return Err((
                        lineno,
                        format!("texture coordinate `{line}`: needs two numbers (u v [w])"),
                    ));
                }
                nvt += 1;
            }
            "vn" => {
                let n = finite_numbers(words, 3)
                    .map_err(|m| (lineno, format!("normal `{line}`: {m} (x y z)")))?;
                if n < 3 {
                    return Err((
                        lineno,
                        format!("normal `{line}`: needs three numbers (x y z)"),
                    ));
                }
                nvn += 1;
            }
            "f" | "l" => {
                let what = if keyword == "f" { "face" } else { "line" };
                let corners = check_corners(words, [counts.positions, nvt, nvn])
                    .map_err(|m| (lineno, format!("{what} `{line}`: {m}")))?;
                let least = if keyword == "f" { 3 } else { 2 };
                if corners < least {
                    return Err((
                        lineno,
                        format!("{what} `{line}`: needs at least {least} vertices, has {corners}"),
                    ));
                }
                if keyword == "f" {
                    counts.faces += 1;
                }
            }
            "usemtl" if words.next().is_none() => {
                return Err((lineno, "usemtl without a material name".into()));
            }
            _ => {}
        }
    }
    Ok(counts)
}

/// The numbers after `v`: three finite coordinates, then nothing, a weight or a colour.
/// Returns whether a colour is given.
fn check_position<'a>(words: impl Iterator<Item = &'a str>) -> std::result::Result<bool, String> {
    let values: Vec<&str> = words.collect();
    let numbers = |ws: &[&str]| -> std::result::Result<Vec<f32>, String> {
        ws.iter()
            .map(|w| match w.parse::<f32>() {
                Ok(x) if x.is_finite() => Ok(x),
                Ok(_) => Err(format!("`{w}` is not finite")),
                Err(_) => Err(format!("`{w}` is not a number")),
            })
            .collect()
    };
    if values.len() < 3 {
        return Err("needs three finite numbers (x y z)".into());
    }
    let xyz = numbers(&values[..3])?;
    match values.len() {
        3 => Ok(false),
        4 => {
            let w = numbers(&values[3..])?[0];
            if w == 0.0 || xyz.iter().any(|&c| !(c / w).is_finite()) {
                return Err(format!(
                    "weight `{}` gives a position that is not finite",
                    values[3]
                ));
            }
            Ok(false)
        }
        6 => numbers(&values[3..]).map(|_| true),
        _ => Err("after x y z give nothing, a weight w or a colour r g b".into()),
    }
}

/// Checks that the words are at most `most` finite numbers; returns how many there are.
fn finite_numbers<'a>(
    words: impl Iterator<Item = &'a str>,
    most: usize,
) -> std::result::Result<usize, String> {
    let mut n = 0;
    for w in words {
        n += 1;
        if n > most {
            return Err(format!("more than {most} numbers"));
        }
        match w.parse::<f32>() {
            Ok(x) if x.is_finite() => {}
            Ok(_) => return Err(format!("`{w}` is not finite")),
            Err(_) => return Err(format!("`{w}` is not a number")),
        }
    }
    Ok(n)
}

/// Checks the corners of an `f` or `l` line against the numbers of `v`, `vt` and `vn`
/// statements before it; returns how many corners there are.
fn check_corners<'a>(
    words: impl Iterator<Item = &'a str>,
    counts: [usize; 3],
) -> std::result::Result<usize, String> {
    const NAMES: [&str; 3] = ["position", "texture coordinate", "normal"];
    const KEYWORDS: [&str; 3] = ["v", "vt", "vn"];
    let mut shape: Option<[bool; 3]> = None;
    let mut corners = 0;
    for corner in words {
        corners += 1;
        let parts: Vec<&str> = corner.split('/').collect();
        if parts.len() > 3 || parts[0].is_empty() {
            return Err(format!(
                "corner `{corner}` is not v, v/vt, v//vn or v/vt/vn"
            ));
        }
        let mut given = [false; 3];
        for (slot, part) in parts.iter().enumerate() {
            if part.is_empty() {
                continue;
            }
            given[slot] = true;
            let count = counts[slot];
            let in_range = part.parse::<i64>().is_ok_and(|idx| {
                let back = idx.checked_neg().and_then(|b| usize::try_from(b).ok());
                match usize::try_from(idx) {
                    Ok(forward) => (1..=count).contains(&forward),
                    Err(_) => back.is_some_and(|b| b <= count),
                }
            });
            if !in_range {
                return Err(format!(
                    "corner `{corner}`: {} index `{part}` names no `{}` line ({count} so far)",
                    NAMES[slot], KEYWORDS[slot]
                ));
            }
        }
        match shape {
            None => shape = Some(given),
            Some(first) if first != given => {
                return Err(format!(
                    "corner `{corner}` gives other attributes than the first corner"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(corners)
}
