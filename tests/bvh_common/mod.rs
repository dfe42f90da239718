//! Shared helpers for the bvh integration tests: a seeded generator, random soups and rays,
//! and the hit comparison against brute force.
// Each test crate compiles this module and uses a part of it, so the lint sees the other
// helpers as dead in every crate that does not call them; they are all called.
#![allow(dead_code)]

use glam::Vec3;
use wavetrace::bvh::{closest_hit_scalar, BoxFormat, BuildOptions, BvhImage, Mesh, NodeOrder};
use wavetrace::hw::TriangleReturnMode;
use wavetrace::math::{Hit, Ray};

pub const SCENES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/scenes");

/// SplitMix64: small, seeded, reproducible.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.f32()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vec3(&mut self, lo: f32, hi: f32) -> Vec3 {
        Vec3::new(self.range(lo, hi), self.range(lo, hi), self.range(lo, hi))
    }
    pub fn unit(&mut self) -> Vec3 {
        loop {
            let v = self.vec3(-1.0, 1.0);
            let l = v.length();
            if l > 0.05 && l <= 1.0 {
                return v / l;
            }
        }
    }
}

/// A random soup: clusters of small triangles, some sharing edges (quads split in two and
/// fans), plus degenerate ones (a point, collinear vertices, a repeated vertex) and exact
/// duplicates.
pub fn random_soup(rng: &mut Rng, n: usize) -> Mesh {
    let mut tris: Vec<[[f32; 3]; 3]> = Vec::new();
    while tris.len() < n {
        let c = rng.vec3(-10.0, 10.0);
        let s = rng.range(0.05, 3.0);
        match rng.below(8) {
            0 => {
                // A quad as two triangles sharing an edge (counter-clockwise).
                let (a, b, d) = (c, c + rng.vec3(-s, s), c + rng.vec3(-s, s));
                let e = b + d - a;
                tris.push([a.into(), b.into(), e.into()]);
                tris.push([a.into(), e.into(), d.into()]);
            }
            1 => {
                // A closed fan of four around a centre vertex.
                let ring: Vec<Vec3> = (0..4).map(|_| c + rng.vec3(-s, s)).collect();
                for i in 0..4 {
                    tris.push([ring[i].into(), ring[(i + 1) % 4].into(), c.into()]);
                }
            }
            2 => {
                // Degenerate: a point, a segment (collinear), a repeated vertex.
                let d = rng.vec3(-s, s);
                match rng.below(3) {
                    0 => tris.push([c.into(); 3]),
                    1 => tris.push([c.into(), (c + d).into(), (c + 2.0 * d).into()]),
                    _ => tris.push([c.into(), c.into(), (c + d).into()]),
                }
            }
            3 if !tris.is_empty() => {
                // An exact duplicate of an earlier triangle.
                let t = tris[rng.below(tris.len())];
                tris.push(t);
            }
            4 => {
                // Axis-aligned triangle (flat box).
                let z = c.z;
                tris.push([[c.x, c.y, z], [c.x + s, c.y, z], [c.x, c.y + s, z]]);
            }
            _ => tris.push([
                c.into(),
                (c + rng.vec3(-s, s)).into(),
                (c + rng.vec3(-s, s)).into(),
            ]),
        }
    }
    tris.truncate(n);
    Mesh::from_triangles(&tris)
}

/// Rays for a mesh: half aimed at a random triangle's interior, half random, tmin 0, tmax
/// infinite; a few with a finite tmax or tmin.
pub fn random_rays(rng: &mut Rng, mesh: &Mesh, n: usize) -> Vec<Ray> {
    let (lo, hi) = mesh.positions.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), &p| (lo.min(p.into()), hi.max(p.into())),
    );
    let pad = (hi - lo) * 0.25;
    (0..n)
        .map(|i| {
            let origin =
                lo - pad + (hi - lo + 2.0 * pad) * Vec3::new(rng.f32(), rng.f32(), rng.f32());
            let dir = if i % 2 == 0 && !mesh.is_empty() {
                let [a, b, c] = mesh.triangle(rng.below(mesh.len()) as u32).map(Vec3::from);
                let (u, v) = (rng.f32(), rng.f32());
                let (u, v) = if u + v > 1.0 {
                    (1.0 - u, 1.0 - v)
                } else {
                    (u, v)
                };
                let target = a + (b - a) * u + (c - a) * v;
                let d = target - origin;
                if d.length() > 0.0 {
                    d
                } else {
                    rng.unit()
                }
            } else {
                rng.unit()
            };
            let (tmin, tmax) = match i % 10 {
                7 => (0.0, rng.range(0.2, 1.5)),
                9 => (rng.range(0.0, 0.5), f32::INFINITY),
                _ => (0.0, f32::INFINITY),
            };
            Ray::new(origin, dir, tmin, tmax)
        })
        .collect()
}

/// Every combination of encoder options (box format x tris per node x mode x order x
/// {plain, spatial splits, leaf chains, optimized, optimized leaf chains}).
pub fn all_options() -> Vec<BuildOptions> {
    let mut out = Vec::new();
    for box_format in [
        BoxFormat::Fp32,
        BoxFormat::Fp16,
        BoxFormat::Mixed {
            max_area_growth: 0.05,
        },
    ] {
        for triangles_per_node in [1, 2, 4] {
            for return_mode in [
                TriangleReturnMode::TriangleId,
                TriangleReturnMode::Barycentrics,
            ] {
                for node_order in [
                    NodeOrder::DepthFirst,
                    NodeOrder::BreadthFirst,
                    NodeOrder::Treelets,
                ] {
                    for (spatial_splits, leaf_chains, optimize) in [
                        (false, false, false),
                        (true, false, false),
                        (false, true, false),
                        (false, false, true),
                        (false, true, true),
                    ] {
                        if leaf_chains && triangles_per_node == 1 {
                            continue;
                        }
                        out.push(BuildOptions {
                            box_format,
                            triangles_per_node,
                            return_mode,
                            node_order,
                            spatial_splits,
                            leaf_chains,
                            optimize,
                            ..BuildOptions::default()
                        });
                    }
                }
            }
        }
    }
    out
}

/// One build setting per way of making the tree: the default, spatial splits, leaf chains
/// (four triangles a node), the optimized tree, and both splits and the optimization.
pub fn tree_settings() -> [BuildOptions; 5] {
    let base = BuildOptions::default();
    [
        base,
        BuildOptions {
            spatial_splits: true,
            ..base
        },
        BuildOptions {
            leaf_chains: true,
            triangles_per_node: 4,
            ..base
        },
        BuildOptions {
            optimize: true,
            ..base
        },
        BuildOptions {
            optimize: true,
            spatial_splits: true,
            ..base
        },
    ]
}

/// The t brute force finds for one primitive alone (mode 0), or infinity.
pub fn prim_t(mesh: &Mesh, ray: &Ray, prim: u32) -> f32 {
    let one = Mesh::from_triangles(&[mesh.triangle(prim)]);
    let h = wavetrace::bvh::closest_hit_brute_force(&one, ray, TriangleReturnMode::TriangleId);
    h.t
}

/// Asserts that the traversal's hit equals brute force: same miss, or t within a relative
/// 4e-7 (the encoder may store a rotation of the vertex order, which changes the last bits of
/// t) and the same primitive unless the two primitives are hit at the same t.
pub fn assert_same_hit(mesh: &Mesh, ray: &Ray, got: &Hit, want: &Hit, what: &str) {
    assert_eq!(
        got.is_hit(),
        want.is_hit(),
        "{what}: hit/miss differs for {ray:?}: got {got:?}, brute force {want:?}"
    );
    if !want.is_hit() {
        return;
    }
    let close = |a: f32, b: f32| (a - b).abs() <= 4e-7 * a.abs().max(b.abs()) + 1e-30;
    assert!(
        close(got.t, want.t),
        "{what}: t differs for {ray:?}: got {got:?}, brute force {want:?}"
    );
    if got.prim_id != want.prim_id {
        let t_got = prim_t(mesh, ray, got.prim_id);
        assert!(
            close(t_got, want.t),
            "{what}: primitive {} (t {t_got}) instead of {} for {ray:?}",
            got.prim_id,
            want.prim_id
        );
    } else {
        assert_eq!(
            got.front_face, want.front_face,
            "{what}: front_face for {ray:?}"
        );
    }
}

/// The rays on which the scalar reference traversal of images `a` and `b` (of one mesh) finds
/// different nearest hits: (ray index, t on `a`, t on `b`); the same miss, or t within a
/// relative 1e-6, counts as the same.
pub fn nearest_hit_differences(
    a: &BvhImage,
    b: &BvhImage,
    mesh: &Mesh,
    rays: &[Ray],
) -> Vec<(usize, f32, f32)> {
    let mut differing = Vec::new();
    for (i, ray) in rays.iter().enumerate() {
        let x = closest_hit_scalar(a, mesh, ray);
        let y = closest_hit_scalar(b, mesh, ray);
        let same =
            x.is_hit() == y.is_hit() && (!x.is_hit() || (x.t - y.t).abs() <= 1e-6 * x.t.abs());
        if !same {
            differing.push((i, x.t, y.t));
        }
    }
    differing
}

/// A shared scene's mesh and one of its ray files (`NAME.obj.gz`, `NAME_SET.rays`).
pub fn scene_and_rays(name: &str, set: &str) -> (Mesh, Vec<Ray>) {
    let dir = std::path::Path::new(SCENES);
    let mesh = Mesh::load_obj(&dir.join(format!("{name}.obj.gz"))).unwrap();
    let rays =
        wavetrace::traverse::rayfile::read_rays(&dir.join(format!("{name}_{set}.rays"))).unwrap();
    (mesh, rays)
}
