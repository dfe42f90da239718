//! Mesh files of every format into scene geometry: OBJ through [`super::obj`], PLY, and
//! glTF flattened into one mesh ([`super::gltf_scene`]). The format is the extension's
//! ([`MeshFormat::of`]).

use super::gltf_scene;
use super::obj::{load_mtl_into, load_obj, MeshPlacement};
use super::{Geometry, Material, Scene};
use crate::bvh::mesh::{no_triangles, MeshFormat};
use crate::bvh::ply::load_ply;
use crate::{Error, Result};
use glam::{DMat3, DMat4, DVec3};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Loads the mesh file `path` with `placement` into geometry whose materials are added to
/// `scene` (`textures` shares texture files between meshes). A file without any triangle
/// is an error naming it.
pub(crate) fn load_mesh_file(
    scene: &mut Scene,
    path: &Path,
    placement: &MeshPlacement,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<Geometry> {
    let geometry = match MeshFormat::of(path) {
        MeshFormat::Obj => return load_obj(scene, path, placement, textures),
        MeshFormat::Ply => {
            let ply = load_ply(path)?;
            let material = match forced_material(scene, path, placement, textures)? {
                Some(id) => id,
                None => scene.add_material(Material::default_material()),
            };
            let mut g = Geometry::default();
            for tri in &ply.indices {
                let corner = |k: usize| tri[k] as usize;
                g.uvs.push(match &ply.uvs {
                    Some(uv) => [0, 1, 2].map(|k| uv[corner(k)]),
                    None => [[0.0; 2]; 3],
                });
                g.normals.push(match &ply.normals {
                    Some(n) => [0, 1, 2].map(|k| {
                        glam::Vec3::from(n[corner(k)])
                            .try_normalize()
                            .unwrap_or(glam::Vec3::ZERO)
                            .to_array()
                    }),
                    None => [[0.0; 3]; 3],
                });
                g.materials.push(material);
            }
            g.positions = ply.positions;
            g.indices = ply.indices;
            g
        }
        MeshFormat::Gltf => {
            let forced = forced_material(scene, path, placement, textures)?;
            gltf_scene::flat_geometry(scene, path, forced, textures)?
        }
    };
    if geometry.triangle_count() == 0 {
        return Err(no_triangles(path));
    }
    let m =
        DMat4::from_mat3_translation(placement.linear.as_dmat3(), placement.translate.as_dvec3());
    place(geometry, &m, path)
}

/// The material every face of a PLY or glTF mesh takes when the entry names one: from the
/// entry's `mtl` file (these formats carry no MTL library of their own).
fn forced_material(
    scene: &mut Scene,
    path: &Path,
    placement: &MeshPlacement,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<Option<u32>> {
    let Some(name) = &placement.material else {
        return Ok(None);
    };
    let Some(mtl) = &placement.mtl else {
        return Err(Error::field(
            "mesh.material",
            format!(
                "{} has no MTL library: give `mtl`, the file to take {name:?} from",
                path.display()
            ),
        ));
    };
    let named = load_mtl_into(scene, mtl, textures)?;
    named
        .iter()
        .find(|(n, _)| n == name)
        .map(|&(_, id)| Some(id))
        .ok_or_else(|| {
            Error::field(
                "mesh.material",
                format!("no material named {name:?} in {}", mtl.display()),
            )
        })
}

/// `g` moved by `m` (object to world, f64): positions through `m`, shading normals through
/// its inverse transpose (renormalized; zero normals stay zero), and corners 1 and 2
/// swapped when `m` mirrors, so the winding seen from outside is kept. A position that is
/// not finite once placed is an error naming `path`.
pub(crate) fn place(mut g: Geometry, m: &DMat4, path: &Path) -> Result<Geometry> {
    if *m == DMat4::IDENTITY {
        return Ok(g);
    }
    for p in &mut g.positions {
        let w = m.transform_point3(DVec3::from(p.map(f64::from))).as_vec3();
        if !w.is_finite() {
            return Err(Error::parse(
                path,
                0,
                format!("vertex {p:?} is not finite once placed (scale or translation too large)"),
            ));
        }
        *p = w.to_array();
    }
    let linear = DMat3::from_mat4(*m);
    let normal_matrix = linear.inverse().transpose();
    for corners in &mut g.normals {
        for n in corners.iter_mut() {
            if *n != [0.0; 3] {
                let v = (normal_matrix * DVec3::from(n.map(f64::from))).as_vec3();
                *n = v.try_normalize().unwrap_or(glam::Vec3::ZERO).to_array();
            }
        }
    }
    if linear.determinant() < 0.0 {
        for t in 0..g.indices.len() {
            g.indices[t].swap(1, 2);
            g.uvs[t].swap(1, 2);
            g.normals[t].swap(1, 2);
        }
    }
    Ok(g)
}
