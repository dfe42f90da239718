//! The TOML scene file.

use super::obj::{load_obj, MeshPlacement};
use super::{Camera, EnvMap, Environment, FilmSize, Scene};
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

#[derive(Deserialize)]
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvDesc {
    radiance: Option<Spanned<[f32; 3]>>,
    hdr: Option<Spanned<String>>,
    scale: Option<Spanned<f32>>,
}

/// Largest film (pixels) a scene file may ask for.
pub const MAX_PIXELS: u64 = 1 << 26;

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
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse(&text, path)
}

/// Parses scene-file text into a [`Scene`], loading the meshes and maps it names (paths
/// relative to `path`'s directory). Fields are checked in file order (film, camera, render,
/// meshes, environment) and the first bad one is the error, with its line.
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
    for (i, m) in file.mesh.iter().enumerate() {
        source.load_mesh(i, m, &mut scene, &mut textures)?;
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

    /// The `index`-th `[[mesh]]`: its placement, then its OBJ loaded into `scene`
    /// (`textures` shares texture files between meshes).
    fn load_mesh(
        &self,
        index: usize,
        m: &MeshDesc,
        scene: &mut Scene,
        textures: &mut HashMap<PathBuf, u32>,
    ) -> Result<()> {
        let field = format!("mesh[{index}]");
        let placement = self.placement(&field, m)?;
        load_obj(scene, &self.dir.join(m.obj.get_ref()), &placement, textures).map_err(
            |e| match e {
                Error::InvalidField { message, .. } => {
                    let span = m
                        .material
                        .as_ref()
                        .map(|s| s.span())
                        .unwrap_or(m.obj.span());
                    self.at(span, &format!("{field}.material"), message)
                }
                other => other,
            },
        )
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
