//! OBJ (plain or gzip) and MTL loading through tobj.

use super::{Geometry, Material, Scene, Texture};
use crate::{Error, Result};
use glam::{Mat3, Vec3};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Where and how one OBJ enters the scene (a flat scene's geometry or a BLAS).
pub(crate) struct MeshPlacement {
    /// Linear part and translation from the OBJ's coordinates to the scene's (world space
    /// for a flat scene, the BLAS's object space for a two-level one), baked into the
    /// vertices.
    pub linear: Mat3,
    pub translate: Vec3,
    /// Optional MTL file to take `material` from.
    pub mtl: Option<PathBuf>,
    /// Optional material name assigned to every face.
    pub material: Option<String>,
}

fn open_maybe_gz(path: &Path) -> Result<Box<dyn BufRead>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let is_gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    Ok(if is_gz {
        Box::new(BufReader::new(flate2::read::GzDecoder::new(file)))
    } else {
        Box::new(BufReader::new(file))
    })
}

/// MTL keys whose values the renderer ignores (warned about once per file).
fn ignored_keys(m: &tobj::Material) -> Vec<String> {
    let mut keys = Vec::new();
    let mut push = |present: bool, k: &str| {
        if present {
            keys.push(k.to_string());
        }
    };
    push(m.ambient_texture.is_some(), "map_Ka");
    push(m.specular_texture.is_some(), "map_Ks");
    push(m.normal_texture.is_some(), "map_Bump");
    push(m.shininess_texture.is_some(), "map_Ns");
    for k in m.unknown_param.keys() {
        if k != "Pm" && k != "Pr" {
            keys.push(k.clone());
        }
    }
    keys
}

/// Loads an MTL file; errors name it.
fn load_mtl(path: &Path) -> Result<Vec<tobj::Material>> {
    Ok(load_mtl_with_names(path)?.0)
}

/// tobj's MTL result: materials and their name-to-index map.
type MtlWithNames = <tobj::MTLLoadResult as OkType>::Ok;

/// Names the success type of a `Result` (tobj's map type is not re-exported).
trait OkType {
    type Ok;
}

impl<T, E> OkType for std::result::Result<T, E> {
    type Ok = T;
}

/// Loads an MTL file with tobj's name-to-index map; errors name it, and the line when
/// [`locate_mtl_error`] finds it.
fn load_mtl_with_names(path: &Path) -> Result<MtlWithNames> {
    let mut text = Vec::new();
    open_maybe_gz(path)?
        .read_to_end(&mut text)
        .map_err(|e| Error::io(path, e))?;
    // Checked before tobj sees the text: tobj 4.0 panics on a colour with fewer than
    // three numbers, and reports its other errors without a line.
    if let Some((line, message)) = locate_mtl_error(&text) {
        return Err(Error::parse(path, line, message));
    }
    tobj::load_mtl_buf(&mut text.as_slice())
        .map_err(|e| Error::parse(path, 0, format!("cannot parse MTL: {e}")))
}

/// Parses the bytes of an MTL file named `path` (in memory): its materials, or the error
/// naming the line. The checks and the parser [`load_mtl_into`] uses.
pub(crate) fn parse_mtl(path: &Path, text: &[u8]) -> Result<usize> {
    if let Some((line, message)) = locate_mtl_error(text) {
        return Err(Error::parse(path, line, message));
    }
    let (materials, _) = tobj::load_mtl_buf(&mut &text[..])
        .map_err(|e| Error::parse(path, 0, format!("cannot parse MTL: {e}")))?;
    Ok(materials.len())
}

/// Finds the first line of an MTL file that tobj would reject (or panic on), or whose
/// number the renderer cannot use: its 1-based number and a message. Numbers must be
/// finite: a NaN or infinite colour would turn every pixel that sees it into NaN.
fn locate_mtl_error(text: &[u8]) -> Option<(usize, String)> {
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let lineno = i + 1;
        let Ok(line) = std::str::from_utf8(line) else {
            return Some((lineno, "line is not valid UTF-8".into()));
        };
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else {
            continue;
        };
        let args: Vec<&str> = words.collect();
        // The first `n` words are finite numbers (tobj reads that many and ignores the rest).
        let finite = |n: usize| {
            args.len() >= n
                && args[..n]
                    .iter()
                    .all(|w| w.parse::<f32>().is_ok_and(f32::is_finite))
        };
        let problem = match key {
            "newmtl" if args.is_empty() => Some("newmtl without a material name".to_string()),
            "Ka" | "Kd" | "Ks" | "Ke" if !finite(3) => Some(format!(
                "`{key}` needs three finite numbers (r g b): `{}`",
                line.trim()
            )),
            "Ns" | "Ni" | "d" | "Pm" | "Pr" if !finite(1) => {
                Some(format!("`{key}` needs a finite number: `{}`", line.trim()))
            }
            "illum" if args.first().is_none_or(|w| w.parse::<u8>().is_err()) => Some(format!(
                "`illum` needs an illumination model number 0-255: `{}`",
                line.trim()
            )),
            "map_Ka" | "map_Kd" | "map_Ks" | "map_Bump" | "map_bump" | "map_Ns" | "map_ns"
            | "map_NS" | "map_d" | "bump"
                if args.is_empty() =>
            {
                Some(format!("`{key}` without a file name"))
            }
            _ => None,
        };
        if let Some(message) = problem {
            return Some((lineno, message));
        }
    }
    None
}

/// Converts MTL materials into scene materials (loading their `map_Kd` and `map_d`
/// textures); returns the scene material index of each.
fn add_materials(
    scene: &mut Scene,
    mtl_path: &Path,
    mats: &[tobj::Material],
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<Vec<u32>> {
    let mut ignored = BTreeSet::new();
    let mut ids = Vec::new();
    for m in mats {
        ignored.extend(ignored_keys(m));
        let kd_texture = match &m.diffuse_texture {
            Some(name) => Some(texture_of(scene, mtl_path, m, "map_Kd", name, textures)?),
            None => None,
        };
        let alpha_texture = match &m.dissolve_texture {
            Some(name) => Some(texture_of(scene, mtl_path, m, "map_d", name, textures)?),
            None => None,
        };
        ids.push(scene.add_material(Material {
            alpha_texture,
            ..Material::from_mtl(m, kd_texture)
        }));
    }
    if !ignored.is_empty() {
        let keys: Vec<String> = ignored.into_iter().collect();
        let warning = format!(
            "{}: ignoring MTL keys the renderer does not use: {}",
            mtl_path.display(),
            keys.join(", ")
        );
        // Once, even when the same MTL file is read for several meshes.
        if !scene.warnings.contains(&warning) {
            scene.warnings.push(warning);
        }
    }
    Ok(ids)
}

/// The scene index of the texture file `name` that `key` of material `m` in `mtl_path`
/// names (relative to the MTL file), loading it unless `textures` already has it. An
/// error names the texture file; one that cannot be decoded also names the key, material
/// and MTL file that asked for it.
fn texture_of(
    scene: &mut Scene,
    mtl_path: &Path,
    m: &tobj::Material,
    key: &str,
    name: &str,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<u32> {
    let path = mtl_path
        .parent()
        .unwrap_or(Path::new("."))
        .join(name.trim());
    if let Some(&id) = textures.get(&path) {
        return Ok(id);
    }
    let texture = Texture::load(&path).map_err(|e| {
        let context = format!("`{key}` of material {:?} in {}", m.name, mtl_path.display());
        match e {
            Error::Parse {
                path,
                line,
                message,
            } => Error::parse(path, line, format!("{message} ({context})")),
            other => other,
        }
    })?;
    scene.textures.push(texture);
    let id = (scene.textures.len() - 1) as u32;
    textures.insert(path, id);
    Ok(id)
}

/// Loads the MTL file `mtl_path` and adds all its materials to `scene` (see
/// [`add_materials`]); returns each material's name and scene index.
pub(crate) fn load_mtl_into(
    scene: &mut Scene,
    mtl_path: &Path,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<Vec<(String, u32)>> {
    let mats = load_mtl(mtl_path)?;
    let ids = add_materials(scene, mtl_path, &mats, textures)?;
    Ok(mats.into_iter().map(|m| m.name).zip(ids).collect())
}

/// Loads `obj_path` with `placement`: the materials of its mtllib go into `scene`, and
/// every mesh's vertices and triangles, placed, into the returned geometry (its material
/// indices point into `scene.materials`). `textures` maps texture files already in the
/// scene to their index, so that meshes share them.
pub(crate) fn load_obj(
    scene: &mut Scene,
    obj_path: &Path,
    placement: &MeshPlacement,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<Geometry> {
    let obj = read_obj(obj_path)?;
    let own = ObjMaterials {
        ids: add_materials(scene, &obj.mtl_file, &obj.materials, textures)?,
        materials: obj.materials,
        mtl_file: obj.mtl_file,
    };
    let forced = match &placement.material {
        Some(name) => Some(named_material(scene, name, placement, &own, textures)?),
        None => None,
    };
    let transform = WorldTransform::new(placement);
    let mut default_id = None;
    let mut geometry = Geometry::default();
    for model in &obj.models {
        let mesh = MeshInput::new(&model.mesh, obj_path);
        let first_vertex = mesh.push_positions(&mut geometry, &transform)?;
        let material = match forced.or_else(|| own.id_of(mesh.mesh.material_id)) {
            Some(id) => id,
            None => {
                *default_id.get_or_insert_with(|| scene.add_material(Material::default_material()))
            }
        };
        mesh.push_triangles(&mut geometry, &transform, first_vertex, material)?;
    }
    Ok(geometry)
}

/// An OBJ file as tobj read it.
struct ObjFile {
    models: Vec<tobj::Model>,
    /// The materials of its mtllib (none without one).
    materials: Vec<tobj::Material>,
    /// The first MTL file tobj loaded for it, or the OBJ's path with `.mtl` (names the
    /// file in warnings and errors).
    mtl_file: PathBuf,
}

/// Reads and parses `obj_path` (triangulated; points and lines dropped). Every line is
/// checked first ([`crate::bvh::mesh::check_obj_text`]: the error names the line, a NaN or
/// infinite coordinate included), and a file without faces is an error. An error in an MTL
/// file it references is that file's error.
fn read_obj(obj_path: &Path) -> Result<ObjFile> {
    let mut reader = open_maybe_gz(obj_path)?;
    let dir = obj_path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mtl_error: RefCell<Option<Error>> = RefCell::new(None);
    let mtl_paths: RefCell<Vec<PathBuf>> = RefCell::new(Vec::new());
    let options = tobj::LoadOptions {
        triangulate: true,
        single_index: false,
        ignore_points: true,
        ignore_lines: true,
    };
    // Read the OBJ through our own reader so that I/O errors inside a .gz name the file.
    let mut text = Vec::new();
    reader
        .read_to_end(&mut text)
        .map_err(|e| Error::io(obj_path, e))?;
    let counts = crate::bvh::mesh::check_obj_text(&text)
        .map_err(|(line, message)| Error::parse(obj_path, line, message))?;
    if counts.faces == 0 {
        return Err(Error::parse(
            obj_path,
            0,
            "no faces: a mesh needs at least one triangle (an `f` line)",
        ));
    }
    let loaded = tobj::load_obj_buf(&mut text.as_slice(), &options, |mtl| {
        let path = dir.join(mtl);
        match load_mtl_with_names(&path) {
            Ok(loaded) => {
                mtl_paths.borrow_mut().push(path);
                Ok(loaded)
            }
            Err(e) => {
                mtl_error.borrow_mut().get_or_insert(e);
                Err(tobj::LoadError::OpenFileFailed)
            }
        }
    });
    if let Some(e) = mtl_error.into_inner() {
        return Err(e);
    }
    let (models, materials) =
        loaded.map_err(|e| Error::parse(obj_path, 0, format!("cannot parse OBJ: {e}")))?;
    let mtl_file = mtl_paths
        .into_inner()
        .first()
        .cloned()
        .unwrap_or_else(|| obj_path.with_extension("mtl"));
    Ok(ObjFile {
        models,
        materials: materials.unwrap_or_default(),
        mtl_file,
    })
}

/// The materials of an OBJ's own mtllib, as added to the scene.
struct ObjMaterials {
    materials: Vec<tobj::Material>,
    /// Scene material index of each of `materials`.
    ids: Vec<u32>,
    /// Where they came from ([`ObjFile::mtl_file`]).
    mtl_file: PathBuf,
}

impl ObjMaterials {
    /// The scene material of tobj material `index`; `None` without one or out of range.
    fn id_of(&self, index: Option<usize>) -> Option<u32> {
        index.and_then(|i| self.ids.get(i).copied())
    }
}

/// The scene material named `name` that every face takes: from the placement's own MTL
/// file when it gives one (its materials are added to the scene), else from the OBJ's
/// mtllib (`own`). A missing name is an [`Error::InvalidField`] for `mesh.material`.
fn named_material(
    scene: &mut Scene,
    name: &str,
    placement: &MeshPlacement,
    own: &ObjMaterials,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<u32> {
    let (file, id) = match &placement.mtl {
        Some(mtl) => {
            let named = load_mtl_into(scene, mtl, textures)?;
            let id = named.iter().find(|(n, _)| n == name).map(|&(_, id)| id);
            (mtl, id)
        }
        None => {
            let pos = own.materials.iter().position(|m| m.name == name);
            (&own.mtl_file, pos.map(|p| own.ids[p]))
        }
    };
    id.ok_or_else(|| {
        Error::field(
            "mesh.material",
            format!("no material named {name:?} in {}", file.display()),
        )
    })
}

/// How a mesh's object space maps to world space.
struct WorldTransform {
    /// `world_from_object` linear part and translation, for positions.
    linear: Mat3,
    translate: Vec3,
    /// Inverse transpose of `linear`, for normals.
    normal_matrix: Mat3,
    /// `linear` mirrors (negative determinant): corners 1 and 2 swap to keep the winding.
    flip: bool,
}

impl WorldTransform {
    fn new(placement: &MeshPlacement) -> Self {
        WorldTransform {
            linear: placement.linear,
            translate: placement.translate,
            normal_matrix: placement.linear.inverse().transpose(),
            flip: placement.linear.determinant() < 0.0,
        }
    }
}

/// One tobj mesh on its way into the scene; errors name `obj_path`.
struct MeshInput<'a> {
    mesh: &'a tobj::Mesh,
    obj_path: &'a Path,
    /// The mesh has texture coordinates (else every corner gets (0, 0)).
    has_uv: bool,
    /// Every corner has a normal index (else every corner gets a zero normal).
    has_normals: bool,
}

impl<'a> MeshInput<'a> {
    fn new(mesh: &'a tobj::Mesh, obj_path: &'a Path) -> Self {
        MeshInput {
            mesh,
            obj_path,
            has_uv: !mesh.texcoord_indices.is_empty() && !mesh.texcoords.is_empty(),
            has_normals: mesh.normal_indices.len() == mesh.indices.len()
                && !mesh.normals.is_empty(),
        }
    }

    fn vertex_count(&self) -> usize {
        self.mesh.positions.len() / 3
    }

    /// Appends the vertex positions, placed (each must be finite), to `geometry`; returns
    /// the index of the first.
    fn push_positions(&self, geometry: &mut Geometry, transform: &WorldTransform) -> Result<u32> {
        let first_vertex = geometry.positions.len() as u32;
        for v in self.mesh.positions.chunks_exact(3) {
            let p = transform.linear * Vec3::new(v[0], v[1], v[2]) + transform.translate;
            if !p.is_finite() {
                // The file's coordinates are finite (checked at their lines): the placement
                // overflowed.
                return Err(Error::parse(
                    self.obj_path,
                    0,
                    format!(
                        "vertex ({}, {}, {}) is not finite once placed: the mesh's `scale` or \
                         `translate` is too large",
                        v[0], v[1], v[2]
                    ),
                ));
            }
            geometry.positions.push(p.to_array());
        }
        Ok(first_vertex)
    }

    /// Appends every triangle, with its corner uvs and normals and `material`; its vertex
    /// indices are offset by `first_vertex`. Any index out of range is an error.
    fn push_triangles(
        &self,
        geometry: &mut Geometry,
        transform: &WorldTransform,
        first_vertex: u32,
        material: u32,
    ) -> Result<()> {
        let vcount = self.vertex_count();
        for (t, tri) in self.mesh.indices.chunks_exact(3).enumerate() {
            if tri.iter().any(|&i| i as usize >= vcount) {
                return Err(Error::parse(self.obj_path, 0, "face index out of range"));
            }
            let mut idx = [
                tri[0] + first_vertex,
                tri[1] + first_vertex,
                tri[2] + first_vertex,
            ];
            let mut uv = self.corner_uvs(t)?;
            let mut normals = self.corner_normals(t, transform.normal_matrix)?;
            if transform.flip {
                idx.swap(1, 2);
                uv.swap(1, 2);
                normals.swap(1, 2);
            }
            geometry.indices.push(idx);
            geometry.uvs.push(uv);
            geometry.normals.push(normals);
            geometry.materials.push(material);
        }
        Ok(())
    }

    /// Texture coordinates of triangle `t`'s corners (zeros without any).
    fn corner_uvs(&self, t: usize) -> Result<[[f32; 2]; 3]> {
        if !self.has_uv {
            return Ok([[0.0f32; 2]; 3]);
        }
        corner_values(&self.mesh.texcoord_indices, &self.mesh.texcoords, t)
            .ok_or_else(|| Error::parse(self.obj_path, 0, "texture coordinate index out of range"))
    }

    /// Unit world-space normals of triangle `t`'s corners through `normal_matrix` (zeros
    /// without any, and for a normal that cannot be normalized).
    fn corner_normals(&self, t: usize, normal_matrix: Mat3) -> Result<[[f32; 3]; 3]> {
        if !self.has_normals {
            return Ok([[0.0f32; 3]; 3]);
        }
        let normals = corner_values(&self.mesh.normal_indices, &self.mesh.normals, t)
            .ok_or_else(|| Error::parse(self.obj_path, 0, "normal index out of range"))?;
        Ok(normals.map(|n| {
            (normal_matrix * Vec3::from(n))
                .try_normalize()
                .unwrap_or(Vec3::ZERO)
                .to_array()
        }))
    }
}

/// The `N`-float attributes of triangle `t`'s three corners: corner `k` reads
/// `values[N * i..N * i + N]` for `i = indices[3 * t + k]`. `None` when an `i` is past the
/// end of `values`.
fn corner_values<const N: usize>(
    indices: &[u32],
    values: &[f32],
    t: usize,
) -> Option<[[f32; N]; 3]> {
    let mut corners = [[0.0f32; N]; 3];
    for (k, corner) in corners.iter_mut().enumerate() {
        let i = indices[3 * t + k] as usize;
        if N * i + (N - 1) >= values.len() {
            return None;
        }
        corner.copy_from_slice(&values[N * i..N * i + N]);
    }
    Some(corners)
}
