//! Building the hardware model's tracer for a scene: one BVH for a flat scene, a two-level
//! image (TLAS over instances of shared BLASes) for an instanced one, with the alpha test
//! of non-opaque geometry as its any-hit shader.

use crate::bvh::two_level::{
    build_two_level, BlasGeometry, BlasInput, InstanceInput, Sphere, TwoLevelInput, TwoLevelOptions,
};
use crate::bvh::{self, BuildOptions, Mesh};
use crate::hw::InstanceFlags;
use crate::scene::{BlasShape, Geometry, Scene, Texture};
use crate::traverse::dxr::{AnyHit, Candidate};
use crate::traverse::{WaveTracer, WaveTracerConfig};
use crate::Result;
use glam::Vec2;
use std::sync::Arc;

/// The scene's triangles as the BVH builder's mesh (primitive id = triangle index).
pub fn bvh_mesh(geometry: &Geometry) -> Mesh {
    Mesh {
        positions: geometry.positions.clone(),
        indices: geometry.indices.clone(),
    }
}

/// The scene as the two-level builder's input: its BLASes and instances, in the scene's
/// numbering. A flat scene becomes one opaque triangle BLAS (its geometry) with one identity
/// instance, numbered 0.
pub fn two_level_input(scene: &Scene) -> TwoLevelInput {
    if !scene.is_instanced() {
        return TwoLevelInput {
            blases: vec![BlasInput {
                geometry: BlasGeometry::Triangles(bvh_mesh(&scene.geometry)),
                opaque: true,
            }],
            instances: vec![InstanceInput {
                blas: 0,
                object_to_world: [
                    [1.0, 0.0, 0.0, 0.0],
                    [0.0, 1.0, 0.0, 0.0],
                    [0.0, 0.0, 1.0, 0.0],
                ],
                mask: 0xFF,
                id: 0,
                flags: InstanceFlags::NONE,
            }],
        };
    }
    TwoLevelInput {
        blases: scene
            .blases
            .iter()
            .map(|b| BlasInput {
                geometry: match &b.shape {
                    BlasShape::Triangles(g) => BlasGeometry::Triangles(bvh_mesh(g)),
                    BlasShape::Spheres(s) => BlasGeometry::Spheres(
                        s.iter()
                            .map(|s| Sphere {
                                center: s.center,
                                radius: s.radius,
                            })
                            .collect(),
                    ),
                },
                opaque: b.opaque,
            })
            .collect(),
        instances: scene
            .instances
            .iter()
            .map(|i| InstanceInput {
                blas: i.blas,
                object_to_world: i.object_to_world,
                mask: i.mask,
                id: i.id,
                flags: i.flags,
            })
            .collect(),
    }
}

/// How long the structures of a scene took to build, and what they hold.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SceneBuild {
    pub build_seconds: f64,
    pub encode_seconds: f64,
    /// Triangles over all BLASes (each counted once, however many instances use it).
    pub blas_triangles: usize,
    /// Instances (0 for a flat scene).
    pub instances: usize,
}

/// Builds the hardware image of `scene` with the default (console driver-like) options and
/// wraps it in a [`WaveTracer`] configured by `config`: one BVH for a flat scene, a
/// two-level image for an instanced one, whose non-opaque geometry runs the scene's
/// [`AlphaTest`] as its any-hit shader. The tracer runs each batch on the calling thread
/// (the renderer already spreads tiles over the pool), whatever `config.parallel` says.
/// The tracer takes the image, so that it is never held twice
/// ([`WaveTracer::image_len`] gives its size).
pub fn build_wave_tracer(
    scene: &Scene,
    config: WaveTracerConfig,
) -> Result<(WaveTracer, SceneBuild)> {
    let config = WaveTracerConfig {
        parallel: false,
        ..config
    };
    if !scene.is_instanced() {
        let mesh = bvh_mesh(&scene.geometry);
        let mut built = bvh::build(&mesh, &BuildOptions::default())?;
        let settings = built.image.settings_only();
        let tracer =
            WaveTracer::from_image(std::mem::replace(&mut built.image, settings), &mesh, config);
        let report = SceneBuild {
            build_seconds: built.build_seconds,
            encode_seconds: built.encode_seconds,
            blas_triangles: mesh.indices.len(),
            instances: 0,
        };
        return Ok((tracer, report));
    }
    let input = two_level_input(scene);
    let built = build_two_level(&input, &TwoLevelOptions::default())?;
    let report = SceneBuild {
        build_seconds: built.build_seconds,
        encode_seconds: built.encode_seconds,
        blas_triangles: scene
            .blases
            .iter()
            .filter(|b| matches!(b.shape, BlasShape::Triangles(_)))
            .map(|b| b.primitive_count())
            .sum(),
        instances: scene.instances.len(),
    };
    let mut tracer = WaveTracer::two_level(built, &input, config);
    tracer.set_any_hit(Arc::new(AlphaTest::new(scene)));
    Ok((tracer, report))
}

/// The any-hit shader of a render: the alpha test. A candidate hit on a triangle whose
/// material has an alpha texture (`map_d`) is ignored where the texture's alpha at the
/// hit's texture coordinates is below 0.5 ([`Texture::alpha_at`], nearest texel of mip 0);
/// every other candidate is accepted. It runs only on non-opaque geometry (a BLAS with
/// `opaque = false`, or flags that make it so), as DXR runs any-hit shaders.
///
/// It needs the candidate's barycentrics, which the instruction returns in triangle return
/// mode 1 (the builder's default); in mode 0 they read as zero (the first corner's
/// coordinates).
#[derive(Clone, Debug)]
pub struct AlphaTest {
    /// Per BLAS (a flat scene's geometry is BLAS 0), its alpha-tested triangles; `None`
    /// for a BLAS without any.
    blases: Vec<Option<BlasAlpha>>,
    /// Per instance, its BLAS.
    instance_blas: Vec<u32>,
    /// The alpha textures, [`BlasAlpha::texture`] indexes them.
    textures: Vec<Texture>,
}

/// The alpha-tested triangles of one BLAS.
#[derive(Clone, Debug)]
struct BlasAlpha {
    /// Per triangle, its alpha texture (index into [`AlphaTest::textures`]) or
    /// [`AlphaTest::NO_TEXTURE`].
    texture: Vec<u32>,
    /// Per triangle, its corners' texture coordinates.
    uvs: Vec<[[f32; 2]; 3]>,
}

impl AlphaTest {
    const NO_TEXTURE: u32 = u32::MAX;

    /// The alpha test of `scene`'s materials (it copies the alpha textures and the texture
    /// coordinates of the triangles that use them).
    pub fn new(scene: &Scene) -> AlphaTest {
        let mut textures = Vec::new();
        // Scene texture index -> index in `textures`.
        let mut local = vec![Self::NO_TEXTURE; scene.textures.len()];
        let mut blas_alpha = |g: &Geometry| -> Option<BlasAlpha> {
            let mut any = false;
            let texture = g
                .materials
                .iter()
                .map(|&m| match scene.materials[m as usize].alpha_texture {
                    Some(t) => {
                        any = true;
                        if local[t as usize] == Self::NO_TEXTURE {
                            local[t as usize] = textures.len() as u32;
                            textures.push(scene.textures[t as usize].clone());
                        }
                        local[t as usize]
                    }
                    None => Self::NO_TEXTURE,
                })
                .collect();
            any.then(|| BlasAlpha {
                texture,
                uvs: g.uvs.clone(),
            })
        };
        let (blases, instance_blas) = if scene.is_instanced() {
            let blases = scene
                .blases
                .iter()
                .map(|b| match &b.shape {
                    BlasShape::Triangles(g) => blas_alpha(g),
                    BlasShape::Spheres(_) => None,
                })
                .collect();
            (blases, scene.instances.iter().map(|i| i.blas).collect())
        } else {
            (vec![blas_alpha(&scene.geometry)], Vec::new())
        };
        AlphaTest {
            blases,
            instance_blas,
            textures,
        }
    }

    /// Alpha at a candidate (1 where it is not alpha-tested).
    pub fn alpha(&self, candidate: &Candidate) -> f32 {
        let blas = if candidate.instance == u32::MAX {
            Some(0)
        } else {
            self.instance_blas.get(candidate.instance as usize).copied()
        };
        let Some(Some(alpha)) = blas.and_then(|b| self.blases.get(b as usize)) else {
            return 1.0;
        };
        let prim = candidate.prim as usize;
        let Some(&texture) = alpha.texture.get(prim) else {
            return 1.0;
        };
        if texture == Self::NO_TEXTURE {
            return 1.0;
        }
        let [b1, b2] = candidate.barycentrics;
        let uvs = alpha.uvs[prim].map(Vec2::from);
        let uv = uvs[0] * (1.0 - b1 - b2) + uvs[1] * b1 + uvs[2] * b2;
        self.textures[texture as usize].alpha_at(uv)
    }
}

impl AnyHit for AlphaTest {
    fn any_hit(&self, candidate: &Candidate) -> bool {
        self.alpha(candidate) >= 0.5
    }
}
