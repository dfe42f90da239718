//! The TOML scene file.

use super::obj::{load_obj, MeshPlacement};
use super::{Camera, EnvMap, Environment, FilmSize, Scene};
use crate::{Error, Result};
use glam::{Mat3, Vec3};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
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

pub(crate) fn parse(text: &str, path: &Path) -> Result<Scene> {
    let file: SceneFile = toml::from_str(text).map_err(|e| {
        let start = e.span().map(|s| s.start);
        let line = start.map(|s| line_of(text, s)).unwrap_or(0);
        let message = e.message().trim().to_string();
        match start.and_then(|s| field_at(text, s)) {
            Some(field) => Error::parse(path, line, format!("field `{field}`: {message}")),
            None => Error::parse(path, line, message),
        }
    })?;
    let at = |span: std::ops::Range<usize>, field: &str, msg: String| {
        Error::parse(path, line_of(text, span.start), format!("{field}: {msg}"))
    };
    let dir = path.parent().unwrap_or(Path::new("."));

    let check_finite = |v: &Spanned<[f32; 3]>, field: &str| -> Result<Vec3> {
        let x = Vec3::from(*v.get_ref());
        if x.is_finite() {
            Ok(x)
        } else {
            Err(at(v.span(), field, "must be finite".into()))
        }
    };
    let width = *file.film.width.get_ref();
    if width == 0 {
        return Err(at(
            file.film.width.span(),
            "film.width",
            "must be at least 1".into(),
        ));
    }
    let height = *file.film.height.get_ref();
    if height == 0 {
        return Err(at(
            file.film.height.span(),
            "film.height",
            "must be at least 1".into(),
        ));
    }
    if (width as u64) * (height as u64) > MAX_PIXELS {
        return Err(at(
            file.film.width.span(),
            "film",
            format!("{width}x{height} is more than {MAX_PIXELS} pixels"),
        ));
    }
    let c = &file.camera;
    let eye = check_finite(&c.eye, "camera.eye")?;
    let look_at = check_finite(&c.look_at, "camera.look_at")?;
    let up = match &c.up {
        Some(u) => check_finite(u, "camera.up")?,
        None => Vec3::Y,
    };
    let vfov = *c.vfov_deg.get_ref();
    if !(vfov > 0.0 && vfov < 180.0) {
        return Err(at(
            c.vfov_deg.span(),
            "camera.vfov_deg",
            format!("{vfov} is not in (0, 180)"),
        ));
    }
    let camera = Camera::new(eye, look_at, up, vfov, width, height).map_err(|e| {
        let span = match &e {
            Error::InvalidField { field, .. } if field == "camera.up" => {
                c.up.as_ref().map(|u| u.span()).unwrap_or(c.eye.span())
            }
            _ => c.look_at.span(),
        };
        at(span, "camera", e.to_string())
    })?;
    let mut scene = Scene::new(camera, FilmSize { width, height });
    if let Some(r) = &file.render {
        if let Some(spp) = &r.spp {
            if *spp.get_ref() == 0 {
                return Err(at(spp.span(), "render.spp", "must be at least 1".into()));
            }
            scene.spp = *spp.get_ref();
        }
        if let Some(d) = &r.max_depth {
            if *d.get_ref() == 0 {
                return Err(at(
                    d.span(),
                    "render.max_depth",
                    "must be at least 1".into(),
                ));
            }
            scene.max_depth = *d.get_ref();
        }
    }

    let mut textures = HashMap::new();
    for (i, m) in file.mesh.iter().enumerate() {
        let field = format!("mesh[{i}]");
        let scale = match m.scale.as_ref().map(|s| s.get_ref()) {
            None => Vec3::ONE,
            Some(Scale::Uniform(s)) => Vec3::splat(*s),
            Some(Scale::PerAxis(s)) => Vec3::from(*s),
        };
        if let Some(s) = &m.scale {
            if !(scale.is_finite() && scale.cmpne(Vec3::ZERO).all()) {
                return Err(at(
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
            mtl: m.mtl.as_ref().map(|p| dir.join(p.get_ref())),
            material: m.material.as_ref().map(|s| s.get_ref().clone()),
        };
        if placement.mtl.is_some() && placement.material.is_none() {
            let span = m.mtl.as_ref().expect("checked").span();
            return Err(at(
                span,
                &format!("{field}.mtl"),
                "needs `material` to pick one of its materials".into(),
            ));
        }
        load_obj(
            &mut scene,
            &dir.join(m.obj.get_ref()),
            &placement,
            &mut textures,
        )
        .map_err(|e| match e {
            Error::InvalidField { message, .. } => {
                let span = m
                    .material
                    .as_ref()
                    .map(|s| s.span())
                    .unwrap_or(m.obj.span());
                at(span, &format!("{field}.material"), message)
            }
            other => other,
        })?;
    }

    if let Some(env) = &file.environment {
        let e = env.get_ref();
        let scale = match &e.scale {
            Some(s) if !(s.get_ref().is_finite() && *s.get_ref() >= 0.0) => {
                return Err(at(
                    s.span(),
                    "environment.scale",
                    "must be finite and >= 0".into(),
                ));
            }
            Some(s) => *s.get_ref(),
            None => 1.0,
        };
        scene.environment = match (&e.radiance, &e.hdr) {
            (Some(_), Some(h)) => {
                return Err(at(
                    h.span(),
                    "environment",
                    "give either `radiance` or `hdr`, not both".into(),
                ));
            }
            (Some(r), None) => {
                let v = check_finite(r, "environment.radiance")?;
                if v.min_element() < 0.0 {
                    return Err(at(r.span(), "environment.radiance", "must be >= 0".into()));
                }
                Environment::Constant(v * scale)
            }
            (None, Some(h)) => Environment::Map(EnvMap::load(&dir.join(h.get_ref()), scale)?),
            (None, None) => {
                return Err(at(
                    env.span(),
                    "environment",
                    "needs `radiance` or `hdr`".into(),
                ));
            }
        };
    }
    Ok(scene)
}
