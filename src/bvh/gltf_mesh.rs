//! glTF 2.0 geometry (`.gltf` with external or data-URI buffers, `.glb`) through the
//! `gltf` crate: buffers, the node hierarchy's world transforms, each mesh's triangles, and
//! the first perspective camera. Materials are the scene layer's (`scene::gltf`).
//!
//! - Nodes: the default scene's (else the first scene's; without scenes, every node that is
//!   no node's child) hierarchy, each node's world matrix `parent * local` composed in f64
//!   from its matrix or its translation, rotation and scale. A node with two parents, or a
//!   root that is another node's child, is an error (glTF nodes form disjoint trees).
//! - Primitives: `TRIANGLES`, `TRIANGLE_STRIP` and `TRIANGLE_FAN` become triangles (strips
//!   and fans as the glTF specification orders their corners); points and lines are
//!   skipped with a warning. Positions must be finite float triples.
//! - Coordinates stay as the file has them (glTF is Y-up, right-handed, metres; OBJ
//!   files are read the same way, without any axis change). Texture coordinates keep the
//!   glTF convention (v down, origin at the image's top-left).
//!
//! Every accessor is checked against its buffer view and buffer before it is read (type,
//! count, stride and extent, with overflow-checked arithmetic), so no file makes the
//! reader index out of bounds. Sparse accessors and accessors without a buffer view are
//! errors.

use super::mesh::Mesh;
use crate::error::{Error, Result};
use ::gltf::accessor::{Accessor, DataType, Dimensions};
use ::gltf::mesh::Mode;
use glam::{DMat4, DQuat, DVec3};
use std::path::{Path, PathBuf};

/// A loaded glTF file: its document and the bytes of each of its buffers.
pub struct GltfFile {
    /// Where it was loaded from (names it in errors; external files are relative to it).
    pub path: PathBuf,
    pub document: ::gltf::Document,
    /// The bytes of buffer `i`, at least as long as its declared `byteLength`.
    pub buffers: Vec<Vec<u8>>,
}

/// A node that places a mesh.
#[derive(Clone, Copy, Debug)]
pub struct MeshNode {
    pub node: usize,
    pub mesh: usize,
    /// Object-to-world matrix.
    pub world: DMat4,
}

/// The first perspective camera of the node hierarchy.
#[derive(Clone, Copy, Debug)]
pub struct GltfCamera {
    /// The camera node's world matrix (the camera looks down its -Z, +Y up).
    pub world: DMat4,
    /// Vertical field of view, radians.
    pub yfov: f32,
    /// Width over height, when the file gives it.
    pub aspect_ratio: Option<f32>,
}

/// One primitive's triangles in its mesh's object space.
#[derive(Clone, Debug, Default)]
pub struct GltfPrimitive {
    pub positions: Vec<[f32; 3]>,
    pub normals: Option<Vec<[f32; 3]>>,
    /// TEXCOORD_0 in the glTF convention (v down).
    pub uvs: Option<Vec<[f32; 2]>>,
    pub indices: Vec<[u32; 3]>,
    /// Index of its glTF material; `None`: the default material.
    pub material: Option<usize>,
}

/// Bytes of an image: a file beside the glTF or bytes inside it.
pub enum ImageData {
    File(PathBuf),
    Bytes(Vec<u8>),
}

/// Every mesh primitive's attribute accessors exist: an error naming the mesh, the
/// primitive and the accessor otherwise.
fn check_attribute_accessors(path: &Path, json: &::gltf::json::Root) -> Result<()> {
    let accessors = json.accessors.len();
    for (m, mesh) in json.meshes.iter().enumerate() {
        for (p, primitive) in mesh.primitives.iter().enumerate() {
            for index in primitive.attributes.values() {
                if index.value() >= accessors {
                    return Err(Error::parse(
                        path,
                        0,
                        format!(
                            "mesh {m} primitive {p}: accessor {} out of range ({accessors} \
                             accessors)",
                            index.value()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

impl GltfFile {
    /// Reads a `.gltf` or `.glb` file and its buffers; errors name it.
    pub fn load(path: &Path) -> Result<GltfFile> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::parse(path, &bytes)
    }

    /// Parses glTF or GLB bytes; `path` names the file and is the base of relative URIs.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<GltfFile> {
        let invalid =
            |e: ::gltf::Error| Error::parse(path, 0, format!("not a valid glTF file: {e}"));
        let unchecked = ::gltf::Gltf::from_slice_without_validation(bytes).map_err(invalid)?;
        // The glTF library's validation indexes a primitive's POSITION accessor before it
        // checks the index (gltf-json 1.4 panics on one out of range): checked here first.
        check_attribute_accessors(path, unchecked.document.as_json())?;
        let document =
            ::gltf::Document::from_json(unchecked.document.into_json()).map_err(invalid)?;
        let gltf = ::gltf::Gltf {
            document,
            blob: unchecked.blob,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut buffers = Vec::new();
        for buffer in gltf.document.buffers() {
            let i = buffer.index();
            let data = match buffer.source() {
                ::gltf::buffer::Source::Bin => gltf
                    .blob
                    .clone()
                    .ok_or_else(|| Error::parse(path, 0, format!("buffer {i}: no binary chunk")))?,
                ::gltf::buffer::Source::Uri(uri) => {
                    read_uri(path, dir, uri).map_err(|e| prefix(e, &format!("buffer {i}")))?
                }
            };
            if data.len() < buffer.length() {
                return Err(Error::parse(
                    path,
                    0,
                    format!(
                        "buffer {i}: {} bytes, but its byteLength is {}",
                        data.len(),
                        buffer.length()
                    ),
                ));
            }
            buffers.push(data);
        }
        Ok(GltfFile {
            path: path.to_path_buf(),
            document: gltf.document,
            buffers,
        })
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::parse(&self.path, 0, message)
    }

    /// Every node of the scene's hierarchy, with its world matrix, in depth-first order
    /// (children in their listed order).
    pub fn nodes(&self) -> Result<Vec<(usize, DMat4)>> {
        let doc = &self.document;
        let all: Vec<::gltf::Node> = doc.nodes().collect();
        let count = all.len();
        let mut parent = vec![None; count];
        for node in doc.nodes() {
            for child in node.children() {
                if let Some(first) = parent[child.index()] {
                    return Err(self.error(format!(
                        "node {} is a child of nodes {first} and {}; a node has one parent",
                        child.index(),
                        node.index()
                    )));
                }
                parent[child.index()] = Some(node.index());
            }
        }
        let roots: Vec<usize> = match doc.default_scene().or_else(|| doc.scenes().next()) {
            Some(scene) => scene.nodes().map(|n| n.index()).collect(),
            None => (0..count).filter(|&i| parent[i].is_none()).collect(),
        };
        let mut out = Vec::new();
        let mut visited = vec![false; count];
        let mut stack: Vec<(usize, DMat4)> = Vec::new();
        for &root in roots.iter().rev() {
            if let Some(p) = parent[root] {
                return Err(self.error(format!(
                    "node {root} is a scene root and a child of node {p}"
                )));
            }
            stack.push((root, DMat4::IDENTITY));
        }
        while let Some((index, parent_world)) = stack.pop() {
            if std::mem::replace(&mut visited[index], true) {
                return Err(self.error(format!("node {index} is reached twice")));
            }
            let node = &all[index];
            let world = parent_world * local_matrix(node);
            out.push((index, world));
            let children: Vec<usize> = node.children().map(|c| c.index()).collect();
            for &c in children.iter().rev() {
                stack.push((c, world));
            }
        }
        Ok(out)
    }

    /// The nodes that place a mesh, in hierarchy order.
    pub fn mesh_nodes(&self) -> Result<Vec<MeshNode>> {
        let nodes: Vec<_> = self.document.nodes().collect();
        Ok(self
            .nodes()?
            .into_iter()
            .filter_map(|(index, world)| {
                let mesh = nodes[index].mesh()?.index();
                Some(MeshNode {
                    node: index,
                    mesh,
                    world,
                })
            })
            .collect())
    }

    /// The first node of the hierarchy with a perspective camera. Orthographic cameras
    /// are passed over with a warning.
    pub fn camera(&self, warnings: &mut Vec<String>) -> Result<Option<GltfCamera>> {
        let nodes: Vec<_> = self.document.nodes().collect();
        for (index, world) in self.nodes()? {
            let Some(camera) = nodes[index].camera() else {
                continue;
            };
            match camera.projection() {
                ::gltf::camera::Projection::Perspective(p) => {
                    return Ok(Some(GltfCamera {
                        world,
                        yfov: p.yfov(),
                        aspect_ratio: p.aspect_ratio(),
                    }))
                }
                ::gltf::camera::Projection::Orthographic(_) => warnings.push(format!(
                    "{}: node {index}: orthographic camera ignored (only pinhole cameras)",
                    self.path.display()
                )),
            }
        }
        Ok(None)
    }

    /// The triangles of mesh `mesh`, one entry per triangle primitive; other primitives
    /// are skipped with a warning.
    pub fn primitives(
        &self,
        mesh: usize,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<GltfPrimitive>> {
        let Some(m) = self.document.meshes().nth(mesh) else {
            return Err(self.error(format!("no mesh {mesh}")));
        };
        let mut out = Vec::new();
        for p in m.primitives() {
            let at = format!("mesh {mesh} primitive {}", p.index());
            if matches!(
                p.mode(),
                Mode::Points | Mode::Lines | Mode::LineLoop | Mode::LineStrip
            ) {
                warnings.push(format!(
                    "{}: {at}: {:?} primitive skipped (only triangles are traced)",
                    self.path.display(),
                    p.mode()
                ));
                continue;
            }
            out.push(
                self.primitive(&p)
                    .map_err(|m| self.error(format!("{at}: {m}")))?,
            );
        }
        Ok(out)
    }

    fn primitive(&self, p: &::gltf::Primitive) -> std::result::Result<GltfPrimitive, String> {
        use ::gltf::Semantic;
        let get = |b: ::gltf::Buffer| self.buffers.get(b.index()).map(Vec::as_slice);
        let reader = p.reader(get);
        let positions_accessor = p.get(&Semantic::Positions).ok_or("no POSITION attribute")?;
        self.check_accessor(
            &positions_accessor,
            "POSITION",
            &[(DataType::F32, Dimensions::Vec3)],
        )?;
        let positions: Vec<[f32; 3]> = reader
            .read_positions()
            .ok_or("POSITION cannot be read")?
            .collect();
        let n = positions.len();
        if n != positions_accessor.count() {
            return Err("POSITION cannot be read whole".into());
        }
        if let Some(i) = positions
            .iter()
            .position(|v| !v.iter().all(|c| c.is_finite()))
        {
            return Err(format!("POSITION {i} {:?} is not finite", positions[i]));
        }
        let normals = match p.get(&Semantic::Normals) {
            Some(a) => {
                self.check_accessor(&a, "NORMAL", &[(DataType::F32, Dimensions::Vec3)])?;
                let v: Vec<[f32; 3]> = reader
                    .read_normals()
                    .ok_or("NORMAL cannot be read")?
                    .collect();
                if v.len() != n {
                    return Err(format!("{} normals for {n} positions", v.len()));
                }
                Some(v)
            }
            None => None,
        };
        let uvs = match p.get(&Semantic::TexCoords(0)) {
            Some(a) => {
                self.check_accessor(
                    &a,
                    "TEXCOORD_0",
                    &[
                        (DataType::F32, Dimensions::Vec2),
                        (DataType::U8, Dimensions::Vec2),
                        (DataType::U16, Dimensions::Vec2),
                    ],
                )?;
                let v: Vec<[f32; 2]> = reader
                    .read_tex_coords(0)
                    .ok_or("TEXCOORD_0 cannot be read")?
                    .into_f32()
                    .collect();
                if v.len() != n {
                    return Err(format!("{} texture coordinates for {n} positions", v.len()));
                }
                Some(v)
            }
            None => None,
        };
        let corners: Vec<u32> = match p.indices() {
            Some(a) => {
                self.check_accessor(
                    &a,
                    "indices",
                    &[
                        (DataType::U8, Dimensions::Scalar),
                        (DataType::U16, Dimensions::Scalar),
                        (DataType::U32, Dimensions::Scalar),
                    ],
                )?;
                let v: Vec<u32> = reader
                    .read_indices()
                    .ok_or("indices cannot be read")?
                    .into_u32()
                    .collect();
                if let Some(&bad) = v.iter().find(|&&i| i as usize >= n) {
                    return Err(format!("vertex index {bad} out of range ({n} vertices)"));
                }
                v
            }
            None => (0..n as u32).collect(),
        };
        let indices = triangles(p.mode(), &corners)?;
        Ok(GltfPrimitive {
            positions,
            normals,
            uvs,
            indices,
            material: p.material().index(),
        })
    }

    /// Checks that `a` is one of `allowed`, not sparse, and lies inside its buffer view
    /// and buffer.
    fn check_accessor(
        &self,
        a: &Accessor,
        what: &str,
        allowed: &[(DataType, Dimensions)],
    ) -> std::result::Result<(), String> {
        let at = format!("{what} (accessor {})", a.index());
        if !allowed.contains(&(a.data_type(), a.dimensions())) {
            return Err(format!(
                "{at}: {:?} {:?} is not a type this attribute takes",
                a.dimensions(),
                a.data_type()
            ));
        }
        if a.sparse().is_some() {
            return Err(format!("{at}: sparse accessors are not supported"));
        }
        let Some(view) = a.view() else {
            return Err(format!("{at}: no buffer view"));
        };
        if a.count() == 0 {
            return Err(format!("{at}: count 0"));
        }
        let size = a.size();
        let stride = view.stride().unwrap_or(size);
        if stride < size {
            return Err(format!(
                "{at}: byte stride {stride} below the element size {size}"
            ));
        }
        let buffer_len = self.buffers.get(view.buffer().index()).map_or(0, Vec::len);
        let view_end = view.offset().checked_add(view.length());
        if view_end.is_none_or(|end| end > buffer_len) {
            return Err(format!(
                "{at}: buffer view {} runs past the end of buffer {}",
                view.index(),
                view.buffer().index()
            ));
        }
        let end = stride
            .checked_mul(a.count() - 1)
            .and_then(|b| b.checked_add(a.offset()))
            .and_then(|b| b.checked_add(size));
        if end.is_none_or(|end| end > view.length()) {
            return Err(format!(
                "{at}: {} elements run past the end of buffer view {}",
                a.count(),
                view.index()
            ));
        }
        Ok(())
    }

    /// The bytes of image `image`.
    pub fn image_data(&self, image: &::gltf::Image) -> Result<ImageData> {
        let at = format!("image {}", image.index());
        match image.source() {
            ::gltf::image::Source::View { view, .. } => {
                let bytes = self
                    .buffers
                    .get(view.buffer().index())
                    .and_then(|b| b.get(view.offset()..view.offset().checked_add(view.length())?))
                    .ok_or_else(|| self.error(format!("{at}: its buffer view is out of range")))?;
                Ok(ImageData::Bytes(bytes.to_vec()))
            }
            ::gltf::image::Source::Uri { uri, .. } => {
                if uri.starts_with("data:") {
                    let dir = self.path.parent().unwrap_or(Path::new("."));
                    Ok(ImageData::Bytes(
                        read_uri(&self.path, dir, uri).map_err(|e| prefix(e, &at))?,
                    ))
                } else {
                    let dir = self.path.parent().unwrap_or(Path::new("."));
                    Ok(ImageData::File(dir.join(percent_decode(uri))))
                }
            }
        }
    }

    /// Every mesh node's triangles in world space, in hierarchy order, as one mesh; the
    /// warnings of skipped primitives and cameras go to `warnings`.
    pub fn flatten(&self, warnings: &mut Vec<String>) -> Result<Mesh> {
        let mut per_mesh: Vec<Option<Vec<GltfPrimitive>>> =
            vec![None; self.document.meshes().len()];
        let mut mesh = Mesh::default();
        for node in self.mesh_nodes()? {
            if per_mesh[node.mesh].is_none() {
                per_mesh[node.mesh] = Some(self.primitives(node.mesh, warnings)?);
            }
            for p in per_mesh[node.mesh].iter().flatten() {
                let base = mesh.positions.len() as u32;
                for &v in &p.positions {
                    let w = node.world.transform_point3(DVec3::from(v.map(f64::from)));
                    let w = w.as_vec3();
                    if !w.is_finite() {
                        return Err(self.error(format!(
                            "node {}: a vertex is not finite once placed",
                            node.node
                        )));
                    }
                    mesh.positions.push(w.to_array());
                }
                let mirrored = node.world.determinant() < 0.0;
                mesh.indices.extend(p.indices.iter().map(|t| {
                    let [a, b, c] = t.map(|i| i + base);
                    if mirrored {
                        [a, c, b]
                    } else {
                        [a, b, c]
                    }
                }));
            }
        }
        Ok(mesh)
    }
}

/// A node's local matrix: its matrix, or translation * rotation * scale.
fn local_matrix(node: &::gltf::Node) -> DMat4 {
    match node.transform() {
        ::gltf::scene::Transform::Matrix { matrix } => {
            DMat4::from_cols_array_2d(&matrix.map(|c| c.map(f64::from)))
        }
        ::gltf::scene::Transform::Decomposed {
            translation,
            rotation,
            scale,
        } => {
            let q = DQuat::from_array(rotation.map(f64::from));
            let q = if q.length_squared() > 0.0 {
                q.normalize()
            } else {
                DQuat::IDENTITY
            };
            DMat4::from_scale_rotation_translation(
                DVec3::from(scale.map(f64::from)),
                q,
                DVec3::from(translation.map(f64::from)),
            )
        }
    }
}

/// The triangles of a triangle-list, strip or fan primitive with these corner indices.
fn triangles(mode: Mode, corners: &[u32]) -> std::result::Result<Vec<[u32; 3]>, String> {
    let n = corners.len();
    Ok(match mode {
        Mode::Triangles => {
            if !n.is_multiple_of(3) {
                return Err(format!("{n} indices: not a multiple of 3"));
            }
            corners
                .chunks_exact(3)
                .map(|t| [t[0], t[1], t[2]])
                .collect()
        }
        // Triangle i is {p_i, p_(i + 1 + i % 2), p_(i + 2 - i % 2)}.
        Mode::TriangleStrip => (0..n.saturating_sub(2))
            .map(|i| {
                let odd = i % 2;
                [corners[i], corners[i + 1 + odd], corners[i + 2 - odd]]
            })
            .collect(),
        // Triangle i is {p_(i + 1), p_(i + 2), p_0}.
        Mode::TriangleFan => (0..n.saturating_sub(2))
            .map(|i| [corners[i + 1], corners[i + 2], corners[0]])
            .collect(),
        _ => Vec::new(),
    })
}

/// The bytes a URI names: a `data:...;base64,` URI decoded, else a file relative to `dir`.
fn read_uri(path: &Path, dir: &Path, uri: &str) -> Result<Vec<u8>> {
    if let Some(rest) = uri.strip_prefix("data:") {
        let Some((_, data)) = rest.split_once(";base64,") else {
            return Err(Error::parse(path, 0, "a data URI that is not base64"));
        };
        return decode_base64(data)
            .ok_or_else(|| Error::parse(path, 0, "a data URI whose base64 is malformed"));
    }
    let file = dir.join(percent_decode(uri));
    std::fs::read(&file).map_err(|e| Error::io(file, e))
}

/// `e` with `what: ` before its message (for parse errors).
fn prefix(e: Error, what: &str) -> Error {
    match e {
        Error::Parse {
            path,
            line,
            message,
        } => Error::parse(path, line, format!("{what}: {message}")),
        other => other,
    }
}

/// A relative URI's `%XX` escapes decoded (an invalid escape is kept as written).
fn percent_decode(uri: &str) -> String {
    let b = uri.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard or URL-safe base64, `=` padding optional; `None` on any other character.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_percent_escapes() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8").unwrap(), b"hello");
        assert_eq!(decode_base64("AAEC/w==").unwrap(), [0, 1, 2, 255]);
        assert!(decode_base64("a b").is_none());
        assert_eq!(percent_decode("my%20file.bin"), "my file.bin");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn strips_and_fans_follow_the_specification() {
        let c = [0, 1, 2, 3, 4];
        assert_eq!(
            triangles(Mode::TriangleStrip, &c).unwrap(),
            vec![[0, 1, 2], [1, 3, 2], [2, 3, 4]]
        );
        assert_eq!(
            triangles(Mode::TriangleFan, &c).unwrap(),
            vec![[1, 2, 0], [2, 3, 0], [3, 4, 0]]
        );
        assert!(triangles(Mode::Triangles, &c).is_err());
    }
}
