//! glTF 2.0 files as scenes: geometry through [`crate::bvh::gltf_mesh`], materials,
//! textures and the camera here.
//!
//! Given directly (`wavetrace render model.glb`, [`super::Scene::load`]) a glTF file is a
//! two-level scene: one triangle BLAS per glTF mesh that a node places (all its triangle
//! primitives, in the mesh's object space) and one instance per such node, its world
//! matrix as the object-to-world matrix. In a scene file's `[[mesh]]` or `[[blas]]` entry
//! it is one mesh: every node's triangles in the file's world space.
//!
//! Material mapping (metallic-roughness model):
//!
//! | glTF | here |
//! |---|---|
//! | `baseColorFactor` rgb, `baseColorTexture` | `kd` and its texture (or `f0` of a metal) |
//! | `metallicFactor` >= 0.5 | [`MaterialKind::Metal`] with `f0` = base colour (below 0.5: [`MaterialKind::Standard`] with a GGX lobe of weight 0.04, glTF's dielectric reflectance; `kd + ks` scaled to at most 1 as for MTL) |
//! | `roughnessFactor` r | GGX `alpha = r^2` (clamped to [`MIN_ALPHA`], 1) |
//! | `emissiveFactor` x `KHR_materials_emissive_strength` | emission (front side) |
//! | `alphaMode` `MASK`, `BLEND` | the base colour texture's alpha channel as the alpha texture, tested at 0.5 (the renderer's one cutoff; BLEND is treated as MASK) |
//!
//! Ignored, with a warning: metallic-roughness, normal, occlusion and emissive textures,
//! texture coordinate sets other than 0, an `alphaCutoff` other than 0.5, the alpha of
//! `baseColorFactor`, and a MASK or BLEND material without a base colour texture (drawn
//! opaque). Samplers are ignored (repeat wrap, trilinear filtering, as for MTL textures).
//! Texture coordinates are flipped to the OBJ convention (`v` up) on loading.

use super::mesh_file::place;
use super::{
    BlasShape, Camera, FilmSize, Geometry, Material, MaterialKind, Scene, SceneBlas, SceneInstance,
    Texture,
};
use crate::bvh::gltf_mesh::{GltfFile, GltfPrimitive, ImageData};
use crate::bvh::mesh::no_triangles;
use crate::scene::material::MIN_ALPHA;
use crate::{Error, Result};
use glam::{DVec3, Vec3};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The film of a glTF scene: 512 pixels high, as wide as the camera's aspect ratio asks
/// (square without one).
pub const FILM_HEIGHT: u32 = 512;

/// Scene materials of a glTF file's materials, made on first use.
struct Materials<'a> {
    file: &'a GltfFile,
    /// Scene material of glTF material `i`; of the default material at the end.
    ids: Vec<Option<u32>>,
    /// Every face takes this material (a `material` key in the scene file).
    forced: Option<u32>,
    ignored: BTreeSet<&'static str>,
}

impl<'a> Materials<'a> {
    fn new(file: &'a GltfFile, forced: Option<u32>) -> Self {
        Materials {
            file,
            ids: vec![None; file.document.materials().len() + 1],
            forced,
            ignored: BTreeSet::new(),
        }
    }

    /// The scene material of glTF material `index` (`None`: the default one).
    fn id(
        &mut self,
        scene: &mut Scene,
        index: Option<usize>,
        textures: &mut HashMap<PathBuf, u32>,
    ) -> Result<u32> {
        if let Some(id) = self.forced {
            return Ok(id);
        }
        let slot = index.unwrap_or(self.ids.len() - 1);
        if let Some(id) = self.ids[slot] {
            return Ok(id);
        }
        let material = match index.and_then(|i| self.file.document.materials().nth(i)) {
            Some(m) => self.convert(scene, &m, textures)?,
            None => Material::default_material(),
        };
        let id = scene.add_material(material);
        self.ids[slot] = Some(id);
        Ok(id)
    }

    /// A glTF material as a scene material (see the module's table).
    fn convert(
        &mut self,
        scene: &mut Scene,
        m: &::gltf::Material,
        textures: &mut HashMap<PathBuf, u32>,
    ) -> Result<Material> {
        let path = &self.file.path;
        let index = m.index().unwrap_or(0);
        let name = m
            .name()
            .map(str::to_string)
            .unwrap_or_else(|| format!("material {index}"));
        let pbr = m.pbr_metallic_roughness();
        let base = pbr.base_color_factor();
        let colour = Vec3::new(base[0], base[1], base[2]);
        let factors = [base[3], pbr.metallic_factor(), pbr.roughness_factor()];
        if !colour.is_finite() || factors.iter().any(|f| !f.is_finite()) {
            return Err(Error::parse(
                path,
                0,
                format!("material {index}: a factor is not finite"),
            ));
        }
        let colour = colour.max(Vec3::ZERO);
        let texture = match pbr.base_color_texture() {
            Some(info) => {
                if info.tex_coord() != 0 {
                    self.ignored.insert("texture coordinate sets other than 0");
                }
                Some(self.texture(scene, &info.texture().source(), textures)?)
            }
            None => None,
        };
        if pbr.metallic_roughness_texture().is_some() {
            self.ignored.insert("metallicRoughnessTexture");
        }
        if m.normal_texture().is_some() {
            self.ignored.insert("normalTexture");
        }
        if m.occlusion_texture().is_some() {
            self.ignored.insert("occlusionTexture");
        }
        if m.emissive_texture().is_some() {
            self.ignored.insert("emissiveTexture");
        }
        let alpha = (factors[2] * factors[2]).clamp(MIN_ALPHA, 1.0);
        let kind = if factors[1] >= 0.5 {
            MaterialKind::Metal {
                f0: colour.min(Vec3::ONE),
                f0_texture: texture,
                alpha,
            }
        } else {
            let ks = Vec3::splat(0.04);
            let total = (colour + ks).max_element();
            let scale = if total > 1.0 { 1.0 / total } else { 1.0 };
            MaterialKind::Standard {
                kd: colour * scale,
                kd_texture: texture,
                ks: ks * scale,
                alpha,
            }
        };
        let strength = m.emissive_strength().unwrap_or(1.0);
        let emission = Vec3::from(m.emissive_factor()) * strength;
        if !emission.is_finite() {
            return Err(Error::parse(
                path,
                0,
                format!("material {index}: emission is not finite"),
            ));
        }
        let alpha_texture = match m.alpha_mode() {
            ::gltf::material::AlphaMode::Opaque => None,
            mode => {
                if mode == ::gltf::material::AlphaMode::Blend {
                    self.ignored
                        .insert("alphaMode BLEND (tested as MASK at 0.5)");
                } else if m.alpha_cutoff().is_some_and(|c| c != 0.5) {
                    self.ignored
                        .insert("alphaCutoff other than 0.5 (tested at 0.5)");
                }
                if base[3] != 1.0 {
                    self.ignored.insert("the alpha of baseColorFactor");
                }
                if texture.is_none() {
                    self.ignored
                        .insert("MASK or BLEND without a base colour texture (drawn opaque)");
                }
                texture
            }
        };
        Ok(Material {
            name,
            kind,
            emission: emission.max(Vec3::ZERO),
            alpha_texture,
        })
    }

    /// The scene index of glTF image `image`, loading it unless `textures` has it.
    fn texture(
        &self,
        scene: &mut Scene,
        image: &::gltf::Image,
        textures: &mut HashMap<PathBuf, u32>,
    ) -> Result<u32> {
        let data = self.file.image_data(image)?;
        let key = match &data {
            ImageData::File(p) => p.clone(),
            ImageData::Bytes(_) => PathBuf::from(format!(
                "{}#image{}",
                self.file.path.display(),
                image.index()
            )),
        };
        if let Some(&id) = textures.get(&key) {
            return Ok(id);
        }
        let texture = match &data {
            ImageData::File(p) => Texture::load(p)?,
            ImageData::Bytes(bytes) => Texture::decode(&key, bytes)?,
        };
        scene.textures.push(texture);
        let id = (scene.textures.len() - 1) as u32;
        textures.insert(key, id);
        Ok(id)
    }

    /// The warning listing what the file uses that the renderer ignores.
    fn warn(&self, scene: &mut Scene) {
        if !self.ignored.is_empty() {
            let list: Vec<&str> = self.ignored.iter().copied().collect();
            scene.warnings.push(format!(
                "{}: ignoring what the renderer does not use: {}",
                self.file.path.display(),
                list.join(", ")
            ));
        }
    }
}

/// A mesh's primitives as one geometry in its object space (texture coordinates flipped
/// to `v` up, normals unit or zero).
fn mesh_geometry(
    scene: &mut Scene,
    primitives: &[GltfPrimitive],
    materials: &mut Materials,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<Geometry> {
    let mut g = Geometry::default();
    for p in primitives {
        let material = materials.id(scene, p.material, textures)?;
        let base = g.positions.len() as u32;
        g.positions.extend_from_slice(&p.positions);
        for tri in &p.indices {
            let c = tri.map(|i| i as usize);
            g.indices.push(tri.map(|i| i + base));
            g.uvs.push(match &p.uvs {
                Some(uv) => c.map(|i| [uv[i][0], 1.0 - uv[i][1]]),
                None => [[0.0; 2]; 3],
            });
            g.normals.push(match &p.normals {
                Some(n) => c.map(|i| {
                    Vec3::from(n[i])
                        .try_normalize()
                        .unwrap_or(Vec3::ZERO)
                        .to_array()
                }),
                None => [[0.0; 3]; 3],
            });
            g.materials.push(material);
        }
    }
    Ok(g)
}

/// Every mesh node's triangles in the file's world space as one geometry (a scene file's
/// `[[mesh]]` or `[[blas]]` entry); its materials are added to `scene` (or every face
/// takes `forced`).
pub(crate) fn flat_geometry(
    scene: &mut Scene,
    path: &Path,
    forced: Option<u32>,
    textures: &mut HashMap<PathBuf, u32>,
) -> Result<Geometry> {
    let file = GltfFile::load(path)?;
    let mut materials = Materials::new(&file, forced);
    let mut warnings = Vec::new();
    let mut meshes: HashMap<usize, Geometry> = HashMap::new();
    let mut out = Geometry::default();
    for node in file.mesh_nodes()? {
        if let Entry::Vacant(slot) = meshes.entry(node.mesh) {
            let primitives = file.primitives(node.mesh, &mut warnings)?;
            slot.insert(mesh_geometry(scene, &primitives, &mut materials, textures)?);
        }
        if let Some(g) = meshes.get(&node.mesh) {
            out.append(place(g.clone(), &node.world, path)?);
        }
    }
    scene.warnings.extend(warnings);
    materials.warn(scene);
    Ok(out)
}

/// A glTF file as a two-level scene (see the module docs): its first perspective camera,
/// else a camera framing its bounds; a film [`FILM_HEIGHT`] high.
pub(crate) fn load(path: &Path) -> Result<Scene> {
    let file = GltfFile::load(path)?;
    let mut warnings = Vec::new();
    let camera = file.camera(&mut warnings)?;
    let aspect = camera
        .and_then(|c| c.aspect_ratio)
        .filter(|a| a.is_finite() && *a > 0.0)
        .unwrap_or(1.0);
    let film = FilmSize {
        width: ((FILM_HEIGHT as f32 * aspect).round() as u32).clamp(1, 16 * FILM_HEIGHT),
        height: FILM_HEIGHT,
    };
    let placeholder = Camera::new(
        Vec3::ZERO,
        Vec3::NEG_Z,
        Vec3::Y,
        40.0,
        film.width,
        film.height,
    )?;
    let mut scene = Scene::new(placeholder, film);
    let mut materials = Materials::new(&file, None);
    let mut textures = HashMap::new();
    // BLAS of each glTF mesh (None: no triangles).
    let mut blas_of: HashMap<usize, Option<u32>> = HashMap::new();
    let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
    for node in file.mesh_nodes()? {
        if let Entry::Vacant(slot) = blas_of.entry(node.mesh) {
            let primitives = file.primitives(node.mesh, &mut warnings)?;
            let g = mesh_geometry(&mut scene, &primitives, &mut materials, &mut textures)?;
            let blas = if g.triangle_count() == 0 {
                warnings.push(format!(
                    "{}: mesh {} has no triangles: its nodes are left out",
                    path.display(),
                    node.mesh
                ));
                None
            } else {
                let opaque = g
                    .materials
                    .iter()
                    .all(|&m| scene.materials[m as usize].alpha_texture.is_none());
                let name = file
                    .document
                    .meshes()
                    .nth(node.mesh)
                    .and_then(|m| m.name().map(str::to_string))
                    .unwrap_or_else(|| format!("mesh {}", node.mesh));
                scene.blases.push(SceneBlas {
                    name,
                    shape: BlasShape::Triangles(g),
                    opaque,
                });
                Some((scene.blases.len() - 1) as u32)
            };
            slot.insert(blas);
        }
        let Some(Some(blas)) = blas_of.get(&node.mesh).copied() else {
            continue;
        };
        let m = node.world;
        let object_to_world: [[f32; 4]; 3] =
            std::array::from_fn(|r| std::array::from_fn(|c| m.col(c)[r] as f32));
        if object_to_world.iter().flatten().any(|x| !x.is_finite()) {
            return Err(Error::parse(
                path,
                0,
                format!("node {}: its world matrix is not finite", node.node),
            ));
        }
        if SceneInstance::is_singular(&object_to_world) {
            warnings.push(format!(
                "{}: node {}: its world matrix is singular (a zero scale?): left out",
                path.display(),
                node.node
            ));
            continue;
        }
        if let BlasShape::Triangles(g) = &scene.blases[blas as usize].shape {
            for p in &g.positions {
                let w = m.transform_point3(DVec3::from(p.map(f64::from)));
                lo = lo.min(w);
                hi = hi.max(w);
            }
        }
        let id = scene.instances.len() as u32;
        scene.instances.push(SceneInstance {
            object_to_world,
            ..SceneInstance::identity(blas, id)
        });
    }
    if scene.instances.is_empty() {
        return Err(no_triangles(path));
    }
    scene.camera = match camera {
        Some(c) => {
            let eye = c.world.transform_point3(DVec3::ZERO).as_vec3();
            let forward = c.world.transform_vector3(DVec3::NEG_Z).as_vec3();
            let up = c.world.transform_vector3(DVec3::Y).as_vec3();
            let vfov = c.yfov.to_degrees();
            Camera::new(eye, eye + forward, up, vfov, film.width, film.height)
                .map_err(|e| Error::parse(path, 0, format!("the camera: {e}")))?
        }
        None => Camera::framing(lo.as_vec3(), hi.as_vec3(), film.width, film.height)?,
    };
    scene.warnings.extend(warnings);
    materials.warn(&mut scene);
    Ok(scene)
}
