//! The TOML scene file.

use super::mesh_file::load_mesh_file;
use super::obj::{load_mtl_into, MeshPlacement};
use super::{
    BlasShape, Camera, EnvMap, Environment, FilmSize, Geometry, Material, Scene, SceneBlas,
    SceneInstance, SceneSphere,
};
use crate::hw::InstanceFlags;
use crate::{Error, Result};
use glam::{Mat3, Vec3};
use serde::Deserialize;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SceneFile {
    camera: CameraDesc,
    film: FilmDesc,
    render: Option<RenderDesc>,
    #[serde(default)]
    mesh: Vec<MeshDesc>,
    #[serde(default)]
    blas: Vec<BlasDesc>,
    #[serde(default)]
    spheres: Vec<SpheresDesc>,
    #[serde(default)]
    instance: Vec<InstanceDesc>,
    environment: Option<Spanned<EnvDesc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CameraDesc {
    eye: Spanned<[f32; 3]>,
    look_at: Spanned<[f32; 3]>,
    up: Option<Spanned<[f32; 3]>>,
    vfov_deg: Spanned<f32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilmDesc {
    width: Spanned<u32>,
    height: Spanned<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenderDesc {
    spp: Option<Spanned<u32>>,
    max_depth: Option<Spanned<u32>>,
}

#[derive(Clone, Deserialize)]
#[serde(untagged)]
enum Scale {
    Uniform(f32),
    PerAxis([f32; 3]),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MeshDesc {
    obj: Spanned<String>,
    mtl: Option<Spanned<String>>,
    material: Option<Spanned<String>>,
    scale: Option<Spanned<Scale>>,
    rotate_y_deg: Option<f32>,
    translate: Option<[f32; 3]>,
}

/// A `[[blas]]` entry: a `[[mesh]]` with a name, that instances place.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlasDesc {
    name: Spanned<String>,
    opaque: Option<bool>,
    obj: Spanned<String>,
    mtl: Option<Spanned<String>>,
    material: Option<Spanned<String>>,
    scale: Option<Spanned<Scale>>,
    rotate_y_deg: Option<f32>,
    translate: Option<[f32; 3]>,
}

impl BlasDesc {
    /// Its OBJ and placement keys, as a `[[mesh]]` entry gives them.
    fn mesh(&self) -> MeshDesc {
        MeshDesc {
            obj: self.obj.clone(),
            mtl: self.mtl.clone(),
            material: self.material.clone(),
            scale: self.scale.clone(),
            rotate_y_deg: self.rotate_y_deg,
            translate: self.translate,
        }
    }
}

/// A `[[spheres]]` entry: a procedural BLAS.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpheresDesc {
    name: Spanned<String>,
    opaque: Option<bool>,
    mtl: Option<Spanned<String>>,
    spheres: Option<Spanned<Vec<SphereDesc>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SphereDesc {
    center: Spanned<[f32; 3]>,
    radius: Spanned<f32>,
    material: Option<Spanned<String>>,
}

/// An `[[instance]]` entry. Integers are read wide so that out-of-range values get a
/// message about their range rather than about their type.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InstanceDesc {
    blas: Spanned<String>,
    transform: Option<Spanned<Vec<Spanned<Vec<f64>>>>>,
    mask: Option<Spanned<i64>>,
    id: Option<Spanned<i64>>,
    flags: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvDesc {
    radiance: Option<Spanned<[f32; 3]>>,
    hdr: Option<Spanned<String>>,
    scale: Option<Spanned<f32>>,
}

/// Largest film (pixels) a scene file may ask for.
pub const MAX_PIXELS: u64 = 1 << 26;

/// Largest instance id (24 bits, as `D3D12_RAYTRACING_INSTANCE_DESC` stores it).
const MAX_INSTANCE_ID: u32 = (1 << 24) - 1;

/// A BLAS name the file gave (or `mesh[i]`), for instances to find and messages to cite.
struct NamedBlas {
    /// Index into [`Scene::blases`].
    index: u32,
    /// The entry that named it (`mesh[0]`, `blas[1]`, `spheres[0]`).
    field: String,
    /// 1-based line of its name (of its `obj` for a `[[mesh]]`).
    line: usize,
    /// A `[[mesh]]` entry's BLAS, which has its own instance and no name in the file.
    is_mesh: bool,
}

/// Whether `a` and `b` name the same existing file (after resolving links and `.`/`..`).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// 1-based line of byte offset `pos` in `text`.
fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted name of the field whose value is at byte `pos` (`table.key`, with `[i]` for
/// the i-th `[[table]]`), or of the table when `pos` is in a header. Only for messages.
fn field_at(text: &str, pos: usize) -> Option<String> {
    let pos = pos.min(text.len());
    let line_start = text[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_end = text[pos..]
        .find('\n')
        .map(|i| pos + i)
        .unwrap_or(text.len());
    let line = &text[line_start..line_end];
    let header = |l: &str| -> Option<(String, bool)> {
        let l = l.trim();
        if let Some(name) = l.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            Some((name.trim().to_string(), true))
        } else {
            l.strip_prefix('[')
                .and_then(|r| r.split(']').next())
                .map(|name| (name.trim().to_string(), false))
        }
    };
    if let Some((name, _)) = header(line) {
        return Some(name);
    }
    let key = line.split('=').next()?.trim();
    if key.is_empty() || key.starts_with('#') || !line.contains('=') {
        return None;
    }
    // The enclosing table: the last header before this line.
    let before = &text[..line_start];
    let mut table: Option<(String, bool)> = None;
    for l in before.lines() {
        if let Some(h) = header(l) {
            table = Some(h);
        }
    }
    Some(match table {
        None => key.to_string(),
        Some((name, false)) => format!("{name}.{key}"),
        Some((name, true)) => {
            let pattern = format!("[[{name}]]");
            let index = before
                .lines()
                .filter(|l| l.trim().replace(' ', "") == pattern)
                .count()
                .saturating_sub(1);
            format!("{name}[{index}].{key}")
        }
    })
}

pub(crate) fn load(path: &Path) -> Result<Scene> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        Error::parse(
            path,
            line,
            format!("not valid UTF-8 (byte {offset}): a scene file is TOML text"),
        )
    })?;
    parse(&text, path)
}

/// Parses scene-file text into a [`Scene`], loading the meshes and maps it names (paths
/// relative to `path`'s directory). Fields are checked in this order (film, camera, render,
/// meshes, BLASes and spheres in file order, instances, environment) and the first bad one
/// is the error, with its line. A mesh whose `obj` is the scene file itself, and a file
/// with no triangles and no spheres at all, are errors too.
///
/// A file with only `[[mesh]]` entries is flat: every mesh goes into [`Scene::geometry`].
/// One with any `[[blas]]`, `[[spheres]]` or `[[instance]]` entry is two-level: BLAS `i`
/// for `i < meshes` is `[[mesh]]` entry `i` (named `mesh[i]`, opaque) and instance `i` is
/// its identity instance; the `[[blas]]` and `[[spheres]]` entries follow as BLASes in
/// file order, and the `[[instance]]` entries as instances in file order.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Scene> {
    let file = deserialize(text, path)?;
    let source = Source {
        text,
        path,
        dir: path.parent().unwrap_or(Path::new(".")),
    };
    let film = source.film(&file.film)?;
    let camera = source.camera(&file.camera, film)?;
    let mut scene = Scene::new(camera, film);
    if let Some(r) = &file.render {
        source.apply_render(r, &mut scene)?;
    }
    let mut textures = HashMap::new();
    let two_level = !(file.blas.is_empty() && file.spheres.is_empty() && file.instance.is_empty());
    for (i, m) in file.mesh.iter().enumerate() {
        let geometry = source.load_mesh(&format!("mesh[{i}]"), m, &mut scene, &mut textures)?;
        if two_level {
            scene.blases.push(SceneBlas {
                name: format!("mesh[{i}]"),
                shape: BlasShape::Triangles(geometry),
                opaque: true,
            });
            scene
                .instances
                .push(SceneInstance::identity(i as u32, i as u32));
        } else {
            scene.geometry.append(geometry);
        }
    }
    if two_level {
        let names = source.load_blases(&file, &mut scene, &mut textures)?;
        source.load_instances(&file.instance, &names, &mut scene)?;
    }
    if scene.geometry.triangle_count() == 0 && scene.blases.is_empty() {
        return Err(Error::parse(
            path,
            0,
            "nothing to render: the scene has no triangles and no spheres (give a [[mesh]], \
             or [[blas]] or [[spheres]] entries and their [[instance]]s)",
        ));
    }
    if let Some(env) = &file.environment {
        scene.environment = source.environment(env)?;
    }
    Ok(scene)
}

/// The TOML text as [`SceneFile`]; a syntax or schema error names its line and, when the
/// error points into a `key = value` line or a header, the dotted field.
fn deserialize(text: &str, path: &Path) -> Result<SceneFile> {
    toml::from_str(text).map_err(|e| {
        let start = e.span().map(|s| s.start);
        let line = start.map(|s| line_of(text, s)).unwrap_or(0);
        let message = e.message().trim().to_string();
        match start.and_then(|s| field_at(text, s)) {
            Some(field) => Error::parse(path, line, format!("field `{field}`: {message}")),
            None => Error::parse(path, line, message),
        }
    })
}

/// The scene file being checked: its text (for line numbers), its path (for messages) and
/// its directory (the base of relative paths).
struct Source<'a> {
    text: &'a str,
    path: &'a Path,
    dir: &'a Path,
}

impl Source<'_> {
    /// An error about `field`, at the line where `span` starts.
    fn at(&self, span: Range<usize>, field: &str, msg: String) -> Error {
        Error::parse(
            self.path,
            line_of(self.text, span.start),
            format!("{field}: {msg}"),
        )
    }

    /// `v` as a vector, or an error when a component is NaN or infinite.
    fn finite(&self, v: &Spanned<[f32; 3]>, field: &str) -> Result<Vec3> {
        let x = Vec3::from(*v.get_ref());
        if x.is_finite() {
            Ok(x)
        } else {
            Err(self.at(v.span(), field, "must be finite".into()))
        }
    }

    /// `v`, or an error when it is 0.
    fn at_least_one(&self, v: &Spanned<u32>, field: &str) -> Result<u32> {
        match *v.get_ref() {
            0 => Err(self.at(v.span(), field, "must be at least 1".into())),
            n => Ok(n),
        }
    }

    /// `[film]`: both sides at least 1, at most [`MAX_PIXELS`] pixels.
    fn film(&self, f: &FilmDesc) -> Result<FilmSize> {
        let width = self.at_least_one(&f.width, "film.width")?;
        let height = self.at_least_one(&f.height, "film.height")?;
        if (width as u64) * (height as u64) > MAX_PIXELS {
            return Err(self.at(
                f.width.span(),
                "film",
                format!("{width}x{height} is more than {MAX_PIXELS} pixels"),
            ));
        }
        Ok(FilmSize { width, height })
    }

    /// `[camera]`: finite vectors, a field of view in (0, 180) degrees, and a view that
    /// [`Camera::new`] accepts (its error points at `up` or `look_at`).
    fn camera(&self, c: &CameraDesc, film: FilmSize) -> Result<Camera> {
        let eye = self.finite(&c.eye, "camera.eye")?;
        let look_at = self.finite(&c.look_at, "camera.look_at")?;
        let up = match &c.up {
            Some(u) => self.finite(u, "camera.up")?,
            None => Vec3::Y,
        };
        let vfov = *c.vfov_deg.get_ref();
        if !(vfov > 0.0 && vfov < 180.0) {
            return Err(self.at(
                c.vfov_deg.span(),
                "camera.vfov_deg",
                format!("{vfov} is not in (0, 180)"),
            ));
        }
        Camera::new(eye, look_at, up, vfov, film.width, film.height).map_err(|e| {
            let span = match &e {
                Error::InvalidField { field, .. } if field == "camera.up" => {
                    c.up.as_ref().map(|u| u.span()).unwrap_or(c.eye.span())
                }
                _ => c.look_at.span(),
            };
            self.at(span, "camera", e.to_string())
        })
    }

    /// `[render]`: the sample count and path depth it gives, each at least 1.
    fn apply_render(&self, r: &RenderDesc, scene: &mut Scene) -> Result<()> {
        if let Some(spp) = &r.spp {
            scene.spp = self.at_least_one(spp, "render.spp")?;
        }
        if let Some(d) = &r.max_depth {
            scene.max_depth = self.at_least_one(d, "render.max_depth")?;
        }
        Ok(())
    }

    /// A `[[mesh]]` entry (or the mesh keys of a `[[blas]]` entry), named `field` in
    /// messages: its placement, then its OBJ, placed, as geometry whose materials are added
    /// to `scene` (`textures` shares texture files between meshes).
    fn load_mesh(
        &self,
        field: &str,
        m: &MeshDesc,
        scene: &mut Scene,
        textures: &mut HashMap<PathBuf, u32>,
    ) -> Result<Geometry> {
        let placement = self.placement(field, m)?;
        let obj = self.dir.join(m.obj.get_ref());
        if same_file(&obj, self.path) {
            return Err(self.at(
                m.obj.span(),
                &format!("{field}.obj"),
                format!("{:?} is this scene file, not a mesh", m.obj.get_ref()),
            ));
        }
        load_mesh_file(scene, &obj, &placement, textures).map_err(|e| match e {
            Error::InvalidField { message, .. } => {
                let span = m
                    .material
                    .as_ref()
                    .map(|s| s.span())
                    .unwrap_or(m.obj.span());
                self.at(span, &format!("{field}.material"), message)
            }
            other => other,
        })
    }

    /// The `[[blas]]` and `[[spheres]]` entries, in file order, as BLASes appended to
    /// `scene.blases` (after the `[[mesh]]` ones). Returns every BLAS name, `mesh[i]`
    /// included; a name must be non-empty and unique.
    fn load_blases(
        &self,
        file: &SceneFile,
        scene: &mut Scene,
        textures: &mut HashMap<PathBuf, u32>,
    ) -> Result<HashMap<String, NamedBlas>> {
        let mut names = HashMap::new();
        for (i, m) in file.mesh.iter().enumerate() {
            let name = format!("mesh[{i}]");
            let named = NamedBlas {
                index: i as u32,
                field: name.clone(),
                line: line_of(self.text, m.obj.span().start),
                is_mesh: true,
            };
            names.insert(name, named);
        }
        enum Entry<'f> {
            Blas(usize, &'f BlasDesc),
            Spheres(usize, &'f SpheresDesc),
        }
        let mut entries: Vec<(&Spanned<String>, Entry)> = file
            .blas
            .iter()
            .enumerate()
            .map(|(i, b)| (&b.name, Entry::Blas(i, b)))
            .chain(
                file.spheres
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (&s.name, Entry::Spheres(i, s))),
            )
            .collect();
        entries.sort_by_key(|(name, _)| name.span().start);
        for (name, entry) in entries {
            let field = match entry {
                Entry::Blas(i, _) => format!("blas[{i}]"),
                Entry::Spheres(i, _) => format!("spheres[{i}]"),
            };
            let index = scene.blases.len() as u32;
            self.claim_name(&mut names, name, &field, index)?;
            let blas = match entry {
                Entry::Blas(_, b) => SceneBlas {
                    name: name.get_ref().clone(),
                    shape: BlasShape::Triangles(self.load_mesh(
                        &field,
                        &b.mesh(),
                        scene,
                        textures,
                    )?),
                    opaque: b.opaque.unwrap_or(true),
                },
                Entry::Spheres(_, s) => SceneBlas {
                    name: name.get_ref().clone(),
                    shape: BlasShape::Spheres(self.spheres(&field, s, scene, textures)?),
                    opaque: s.opaque.unwrap_or(true),
                },
            };
            scene.blases.push(blas);
        }
        Ok(names)
    }

    /// Records that BLAS `index` is named `name` (entry `field`), or an error when the name
    /// is empty or taken.
    fn claim_name(
        &self,
        names: &mut HashMap<String, NamedBlas>,
        name: &Spanned<String>,
        field: &str,
        index: u32,
    ) -> Result<()> {
        let key = name.get_ref();
        if key.is_empty() {
            return Err(self.at(
                name.span(),
                &format!("{field}.name"),
                "must not be empty".into(),
            ));
        }
        if let Some(first) = names.get(key) {
            return Err(self.at(
                name.span(),
                &format!("{field}.name"),
                format!(
                    "{key:?} is already the name of {} (line {}); BLAS names must be unique",
                    first.field, first.line
                ),
            ));
        }
        let named = NamedBlas {
            index,
            field: field.to_string(),
            line: line_of(self.text, name.span().start),
            is_mesh: false,
        };
        names.insert(key.clone(), named);
        Ok(())
    }

    /// The spheres of a `[[spheres]]` entry (`field` is `spheres[i]`): at least one, each
    /// with a finite center, a finite radius > 0, and a material of the entry's `mtl` file
    /// (all of whose materials are added to `scene`) or the default material.
    fn spheres(
        &self,
        field: &str,
        s: &SpheresDesc,
        scene: &mut Scene,
        textures: &mut HashMap<PathBuf, u32>,
    ) -> Result<Vec<SceneSphere>> {
        let list = match &s.spheres {
            Some(list) if !list.get_ref().is_empty() => list.get_ref(),
            Some(list) => {
                return Err(self.at(
                    list.span(),
                    &format!("{field}.spheres"),
                    "needs at least one sphere".into(),
                ))
            }
            None => {
                return Err(self.at(
                    s.name.span(),
                    &format!("{field}.spheres"),
                    "missing: give at least one sphere, \
                     `spheres = [{ center = [x, y, z], radius = r }]`"
                        .into(),
                ))
            }
        };
        let mtl = match &s.mtl {
            Some(file) => {
                let path = self.dir.join(file.get_ref());
                let named = load_mtl_into(scene, &path, textures)?;
                Some((path, named))
            }
            None => None,
        };
        let mut default_material = None;
        let mut spheres = Vec::with_capacity(list.len());
        for (j, sphere) in list.iter().enumerate() {
            let sphere_field = format!("{field}.spheres[{j}]");
            let center = self.finite(&sphere.center, &format!("{sphere_field}.center"))?;
            let radius = *sphere.radius.get_ref();
            if !(radius.is_finite() && radius > 0.0) {
                return Err(self.at(
                    sphere.radius.span(),
                    &format!("{sphere_field}.radius"),
                    format!("{radius} is not a finite number > 0"),
                ));
            }
            let material = match (&sphere.material, &mtl) {
                (Some(name), Some((path, named))) => named
                    .iter()
                    .find(|(n, _)| n == name.get_ref())
                    .map(|&(_, id)| id)
                    .ok_or_else(|| {
                        self.at(
                            name.span(),
                            &format!("{sphere_field}.material"),
                            format!(
                                "no material named {:?} in {}",
                                name.get_ref(),
                                path.display()
                            ),
                        )
                    })?,
                (Some(name), None) => {
                    return Err(self.at(
                        name.span(),
                        &format!("{sphere_field}.material"),
                        format!("{field} needs `mtl`, the file to take materials from"),
                    ))
                }
                (None, _) => *default_material
                    .get_or_insert_with(|| scene.add_material(Material::default_material())),
            };
            spheres.push(SceneSphere {
                center: center.to_array(),
                radius,
                material,
            });
        }
        Ok(spheres)
    }

    /// The `[[instance]]` entries as instances appended to `scene.instances` (after the
    /// `[[mesh]]` ones), and a warning for each `[[blas]]` or `[[spheres]]` entry none of
    /// them uses.
    fn load_instances(
        &self,
        entries: &[InstanceDesc],
        names: &HashMap<String, NamedBlas>,
        scene: &mut Scene,
    ) -> Result<()> {
        let mut used = vec![false; scene.blases.len()];
        for i in &scene.instances {
            used[i.blas as usize] = true;
        }
        for (j, d) in entries.iter().enumerate() {
            let number = scene.instances.len();
            let instance = self.instance(&format!("instance[{j}]"), d, number, names)?;
            used[instance.blas as usize] = true;
            scene.instances.push(instance);
        }
        let mut unused: Vec<&NamedBlas> =
            names.values().filter(|n| !used[n.index as usize]).collect();
        unused.sort_by_key(|n| n.index);
        for n in unused {
            scene.warnings.push(format!(
                "{}:{}: {} {:?} has no instance: it is loaded but not in the scene",
                self.path.display(),
                n.line,
                n.field,
                scene.blases[n.index as usize].name
            ));
        }
        Ok(())
    }

    /// An `[[instance]]` entry (`field` is `instance[j]`), instance number `number`.
    fn instance(
        &self,
        field: &str,
        d: &InstanceDesc,
        number: usize,
        names: &HashMap<String, NamedBlas>,
    ) -> Result<SceneInstance> {
        let name = d.blas.get_ref();
        let blas = match names.get(name) {
            Some(n) if !n.is_mesh => n.index,
            Some(_) => {
                return Err(self.at(
                    d.blas.span(),
                    &format!("{field}.blas"),
                    format!(
                        "{name:?} is a [[mesh]] entry, which has its own instance; \
                         instances place [[blas]] and [[spheres]] entries"
                    ),
                ))
            }
            None => {
                return Err(self.at(
                    d.blas.span(),
                    &format!("{field}.blas"),
                    format!("no [[blas]] or [[spheres]] entry is named {name:?}"),
                ))
            }
        };
        let object_to_world = match &d.transform {
            Some(t) => self.transform(&format!("{field}.transform"), t, number)?,
            None => SceneInstance::identity(0, 0).object_to_world,
        };
        let mask = match &d.mask {
            Some(m) => u8::try_from(*m.get_ref()).map_err(|_| {
                self.at(
                    m.span(),
                    &format!("{field}.mask"),
                    format!("{} does not fit in 8 bits (0..=255)", m.get_ref()),
                )
            })?,
            None => 0xFF,
        };
        let id = match &d.id {
            Some(id) => u32::try_from(*id.get_ref())
                .ok()
                .filter(|&v| v <= MAX_INSTANCE_ID)
                .ok_or_else(|| {
                    self.at(
                        id.span(),
                        &format!("{field}.id"),
                        format!(
                            "{} does not fit in 24 bits (0..={MAX_INSTANCE_ID:#x})",
                            id.get_ref()
                        ),
                    )
                })?,
            None => u32::try_from(number)
                .ok()
                .filter(|&v| v <= MAX_INSTANCE_ID)
                .ok_or_else(|| {
                    self.at(
                        d.blas.span(),
                        &format!("{field}.id"),
                        format!(
                            "the default id, the instance's number {number}, does not fit \
                             in 24 bits: give `id`"
                        ),
                    )
                })?,
        };
        let flags = match &d.flags {
            Some(list) => self.instance_flags(&format!("{field}.flags"), list)?,
            None => InstanceFlags::NONE,
        };
        Ok(SceneInstance {
            blas,
            object_to_world,
            mask,
            id,
            flags,
        })
    }

    /// An instance's 3x4 object-to-world matrix (`field` is `instance[j].transform`, of
    /// instance number `number`): 3 rows of 4 numbers, each a finite f32, and a 3x3 part
    /// that [`SceneInstance::is_singular`] accepts.
    fn transform(
        &self,
        field: &str,
        t: &Spanned<Vec<Spanned<Vec<f64>>>>,
        number: usize,
    ) -> Result<[[f32; 4]; 3]> {
        const SHAPE: &str =
            "a transform is 3 rows of 4 numbers, [[r00, r01, r02, tx], [r10, r11, r12, ty], \
             [r20, r21, r22, tz]]";
        let rows = t.get_ref();
        if rows.len() != 3 {
            return Err(self.at(t.span(), field, format!("has {} rows; {SHAPE}", rows.len())));
        }
        let mut m = [[0.0f32; 4]; 3];
        for (r, row) in rows.iter().enumerate() {
            if row.get_ref().len() != 4 {
                return Err(self.at(
                    row.span(),
                    field,
                    format!("row {r} has {} numbers; {SHAPE}", row.get_ref().len()),
                ));
            }
            for (c, &x) in row.get_ref().iter().enumerate() {
                let v = x as f32;
                if !v.is_finite() {
                    return Err(self.at(
                        row.span(),
                        field,
                        format!("entry [{r}][{c}] = {x:e} is not a finite f32"),
                    ));
                }
                m[r][c] = v;
            }
        }
        if SceneInstance::is_singular(&m) {
            let det = SceneInstance {
                object_to_world: m,
                ..SceneInstance::identity(0, 0)
            }
            .determinant();
            return Err(self.at(
                t.span(),
                field,
                format!(
                    "the matrix of instance {number} is singular (its 3x3 part has \
                     determinant {det:.3e}, too small for its size to invert)"
                ),
            ));
        }
        Ok(m)
    }

    /// Instance flags by name (`field` is `instance[j].flags`); `force_opaque` and
    /// `force_non_opaque` together are an error, as in DXR.
    fn instance_flags(
        &self,
        field: &str,
        list: &Spanned<Vec<Spanned<String>>>,
    ) -> Result<InstanceFlags> {
        let mut flags = InstanceFlags::NONE;
        for name in list.get_ref() {
            match InstanceFlags::from_name(name.get_ref()) {
                Some(f) => flags |= f,
                None => {
                    let known: Vec<&str> = InstanceFlags::NAMES.iter().map(|(_, n)| *n).collect();
                    return Err(self.at(
                        name.span(),
                        field,
                        format!(
                            "unknown flag {:?}; the flags are {}",
                            name.get_ref(),
                            known.join(", ")
                        ),
                    ));
                }
            }
        }
        if flags.contains(InstanceFlags::FORCE_OPAQUE | InstanceFlags::FORCE_NON_OPAQUE) {
            return Err(self.at(
                list.span(),
                field,
                "`force_opaque` and `force_non_opaque` exclude each other".into(),
            ));
        }
        Ok(flags)
    }

    /// Where a mesh goes (scale, then rotation about y, then translation) and which
    /// material it takes; `field` is `mesh[i]`. A scale must be finite and non-zero, and an
    /// `mtl` needs a `material`.
    fn placement(&self, field: &str, m: &MeshDesc) -> Result<MeshPlacement> {
        let scale = match m.scale.as_ref().map(|s| s.get_ref()) {
            None => Vec3::ONE,
            Some(Scale::Uniform(s)) => Vec3::splat(*s),
            Some(Scale::PerAxis(s)) => Vec3::from(*s),
        };
        if let Some(s) = &m.scale {
            if !(scale.is_finite() && scale.cmpne(Vec3::ZERO).all()) {
                return Err(self.at(
                    s.span(),
                    &format!("{field}.scale"),
                    "must be finite and non-zero".into(),
                ));
            }
        }
        let linear = Mat3::from_rotation_y(m.rotate_y_deg.unwrap_or(0.0).to_radians())
            * Mat3::from_diagonal(scale);
        let placement = MeshPlacement {
            linear,
            translate: Vec3::from(m.translate.unwrap_or([0.0; 3])),
            mtl: m.mtl.as_ref().map(|p| self.dir.join(p.get_ref())),
            material: m.material.as_ref().map(|s| s.get_ref().clone()),
        };
        if let (Some(mtl), None) = (&m.mtl, &placement.material) {
            return Err(self.at(
                mtl.span(),
                &format!("{field}.mtl"),
                "needs `material` to pick one of its materials".into(),
            ));
        }
        Ok(placement)
    }

    /// `[environment]`: a constant `radiance` or an `hdr` map (exactly one), times a
    /// finite, non-negative `scale`.
    fn environment(&self, env: &Spanned<EnvDesc>) -> Result<Environment> {
        let e = env.get_ref();
        let scale = match &e.scale {
            Some(s) if !(s.get_ref().is_finite() && *s.get_ref() >= 0.0) => {
                return Err(self.at(
                    s.span(),
                    "environment.scale",
                    "must be finite and >= 0".into(),
                ));
            }
            Some(s) => *s.get_ref(),
            None => 1.0,
        };
        match (&e.radiance, &e.hdr) {
            (Some(_), Some(h)) => Err(self.at(
                h.span(),
                "environment",
                "give either `radiance` or `hdr`, not both".into(),
            )),
            (Some(r), None) => {
                let v = self.finite(r, "environment.radiance")?;
                if v.min_element() < 0.0 {
                    return Err(self.at(r.span(), "environment.radiance", "must be >= 0".into()));
                }
                Ok(Environment::Constant(v * scale))
            }
            (None, Some(h)) => Ok(Environment::Map(EnvMap::load(
                &self.dir.join(h.get_ref()),
                scale,
            )?)),
            (None, None) => Err(self.at(
                env.span(),
                "environment",
                "needs `radiance` or `hdr`".into(),
            )),
        }
    }
}
