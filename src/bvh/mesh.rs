//! Triangle meshes: in-memory triangle lists and OBJ files (plain or gzip-compressed).
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

    /// Loads an OBJ file (`.obj`, or gzip-compressed `.obj.gz`), triangulated.
    ///
    /// A missing file gives [`Error::Io`] naming it; a malformed file gives [`Error::Parse`]
    /// with the file and the 1-based line of the first offending statement.
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

    /// Parses OBJ text; `path` only names the source in errors.
    pub fn parse_obj(path: &Path, text: &[u8]) -> Result<Mesh> {
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
            Err(e) => {
                let (line, message) =
                    locate_obj_error(text).unwrap_or_else(|| (0, format!("malformed OBJ ({e})")));
                return Err(Error::parse(path, line, message));
            }
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

/// Finds the first line tobj would reject: returns its 1-based number and a message (also
/// used by the scene loader, which reads OBJ files through tobj too).
pub(crate) fn locate_obj_error(text: &[u8]) -> Option<(usize, String)> {
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if std::str::from_utf8(line).is_err() {
            return Some((i + 1, "line is not valid UTF-8".into()));
        }
    }
    let text = String::from_utf8_lossy(text);
    let (mut nv, mut nvt, mut nvn) = (0i64, 0i64, 0i64);
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = line.trim();
        let mut words = line.split_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        let args: Vec<&str> = words.collect();
        let floats = |min: usize| {
            args.len() >= min && args.iter().take(min).all(|w| w.parse::<f32>().is_ok())
        };
        match keyword {
            "v" => {
                if !floats(3) {
                    return Some((lineno, format!("bad vertex position `{line}`")));
                }
                nv += 1;
            }
            "vt" => {
                if !floats(1) {
                    return Some((lineno, format!("bad texture coordinate `{line}`")));
                }
                nvt += 1;
            }
            "vn" => {
                if !floats(3) {
                    return Some((lineno, format!("bad normal `{line}`")));
                }
                nvn += 1;
            }
            "f" => {
                if args.len() < 3 {
                    return Some((lineno, format!("face with fewer than 3 vertices `{line}`")));
                }
                for corner in &args {
                    let mut parts = corner.split('/');
                    let counts = [nv, nvt, nvn];
                    for (slot, count) in counts.iter().enumerate() {
                        match parts.next() {
                            None => break,
                            Some("") if slot > 0 => continue,
                            Some(s) => {
                                let ok = s.parse::<i64>().is_ok_and(|idx| {
                                    (idx > 0 && idx <= *count) || (idx < 0 && -idx <= *count)
                                });
                                if !ok {
                                    return Some((
                                        lineno,
                                        format!("bad or out-of-range face index `{corner}`"),
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            "usemtl" if args.is_empty() => {
                return Some((lineno, "usemtl without a material name".into()));
            }
            _ => {}
        }
    }
    None
}
