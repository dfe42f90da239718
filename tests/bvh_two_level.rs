//! Two-level images: built for scenes of many instances (rotated, non-uniformly scaled,
//! mirrored) of triangle and procedural BLASes, every build option, with and without
//! rebraiding, the validator finds nothing; it finds a tampered instance node; the world
//! boxes contain every transformed vertex (f64).

mod bvh_common;

use bvh_common::{all_options, random_soup, Rng};
use glam::{Mat3, Quat, Vec3};
use wavetrace::bvh::two_level::{
    build_two_level, flatten, transform_box, validate_two_level, BlasGeometry, BlasInput,
    InstanceInput, Sphere, TwoLevelInput, TwoLevelOptions,
};
use wavetrace::hw::{InstanceFlags, InstanceNode};

/// A row-major 3x4 matrix: rotation `q`, per-axis scale `s` (applied first), translation `t`.
pub fn affine(q: Quat, s: Vec3, t: Vec3) -> [[f32; 4]; 3] {
    let m = Mat3::from_quat(q) * Mat3::from_diagonal(s);
    let r = |i: usize| [m.col(0)[i], m.col(1)[i], m.col(2)[i], t[i]];
    [r(0), r(1), r(2)]
}

/// Two triangle BLASes (a soup, a small grid), one of spheres; `n` instances with random
/// rotations about random axes, non-uniform scales, instance 3 mirrored.
fn scene(rng: &mut Rng, n: usize) -> TwoLevelInput {
    let soup = random_soup(rng, 300);
    let mut grid_triangles = Vec::new();
    for i in 0..8 {
        for j in 0..8 {
            let (x, y) = (i as f32, j as f32);
            grid_triangles.push([[x, y, 0.0], [x + 1.0, y, 0.0], [x + 1.0, y + 1.0, 0.0]]);
            grid_triangles.push([[x, y, 0.0], [x + 1.0, y + 1.0, 0.0], [x, y + 1.0, 0.0]]);
        }
    }
    let grid = wavetrace::bvh::Mesh::from_triangles(&grid_triangles);
    let spheres = (0..20)
        .map(|_| Sphere {
            center: rng.vec3(-3.0, 3.0).to_array(),
            radius: rng.range(0.1, 0.6),
        })
        .collect();
    let blases = vec![
        BlasInput {
            geometry: BlasGeometry::Triangles(soup),
            opaque: true,
        },
        BlasInput {
            geometry: BlasGeometry::Triangles(grid),
            opaque: false,
        },
        BlasInput {
            geometry: BlasGeometry::Spheres(spheres),
            opaque: true,
        },
    ];
    let instances = (0..n)
        .map(|i| {
            let q = Quat::from_axis_angle(rng.unit(), rng.range(0.0, std::f32::consts::TAU));
            let mut s = Vec3::new(
                rng.range(0.3, 2.0),
                rng.range(0.3, 2.0),
                rng.range(0.3, 2.0),
            );
            if i == 3 {
                s.x = -s.x;
            }
            InstanceInput {
                blas: (i % 3) as u32,
                object_to_world: affine(q, s, rng.vec3(-40.0, 40.0)),
                mask: (1 << (i % 8)) as u8,
                id: 1000 + i as u32,
                flags: if i % 5 == 0 {
                    InstanceFlags::TRIANGLE_FRONT_COUNTERCLOCKWISE
                } else {
                    InstanceFlags::NONE
                },
            }
        })
        .collect();
    TwoLevelInput { blases, instances }
}

#[test]
fn every_option_gives_a_valid_two_level_image() {
    let mut rng = Rng(0x7E0);
    let input = scene(&mut rng, 60);
    for blas in all_options() {
        for rebraid in [false, true] {
            let options = TwoLevelOptions { blas, rebraid };
            let bvh = build_two_level(&input, &options).expect("builds");
            let errors = validate_two_level(&bvh, &input);
            assert!(
                errors.is_empty(),
                "{options:?}: {:?}",
                &errors[..errors.len().min(5)]
            );
            assert_eq!(bvh.blases.len(), 3);
            if rebraid {
                assert!(bvh.tlas.instance_nodes >= 60, "{}", bvh.tlas.instance_nodes);
            } else {
                assert_eq!(bvh.tlas.instance_nodes, 60);
                assert_eq!(bvh.tlas.rebraided_instances, 0);
            }
        }
    }
}

#[test]
fn rebraiding_opens_some_instances() {
    let mut rng = Rng(0xB4A1D);
    let input = scene(&mut rng, 90);
    let options = TwoLevelOptions {
        rebraid: true,
        ..TwoLevelOptions::default()
    };
    let bvh = build_two_level(&input, &options).expect("builds");
    assert!(validate_two_level(&bvh, &input).is_empty());
    assert!(bvh.tlas.rebraided_instances > 0);
    assert!(bvh.tlas.instance_nodes > 90);
}

#[test]
fn the_validator_finds_a_tampered_instance_node() {
    let mut rng = Rng(0x7A);
    let input = scene(&mut rng, 12);
    let bvh = build_two_level(&input, &TwoLevelOptions::default()).expect("builds");
    assert!(validate_two_level(&bvh, &input).is_empty());
    // The first instance node follows the TLAS box nodes.
    let at = 64 * 2 * bvh.tlas.box_nodes;
    for (offset, what) in [(51usize, "mask"), (0, "world-to-object"), (68, "BLAS node")] {
        let mut bad = bvh.clone();
        bad.image.bytes[at + offset] ^= 0x40;
        let errors = validate_two_level(&bad, &input);
        assert!(!errors.is_empty(), "{what} tampering went unnoticed");
    }
}

/// Each instance node's slot box holds every vertex of its BLAS transformed in f64.
#[test]
fn instance_world_boxes_contain_the_transformed_vertices() {
    let mut rng = Rng(0xB0B);
    let input = scene(&mut rng, 30);
    let (mesh, origin) = flatten(&input);
    for (t, &(instance, _)) in origin.iter().enumerate() {
        let inst = &input.instances[instance as usize];
        for v in mesh.triangle(t as u32) {
            let blas_box = match &input.blases[inst.blas as usize].geometry {
                BlasGeometry::Triangles(m) => {
                    let mut lo = [f32::INFINITY; 3];
                    let mut hi = [f32::NEG_INFINITY; 3];
                    for p in &m.positions {
                        for a in 0..3 {
                            lo[a] = lo[a].min(p[a]);
                            hi[a] = hi[a].max(p[a]);
                        }
                    }
                    (lo, hi)
                }
                BlasGeometry::Spheres(_) => unreachable!("flatten leaves spheres out"),
            };
            let (lo, hi) = transform_box(&inst.object_to_world, blas_box.0, blas_box.1);
            for a in 0..3 {
                assert!(lo[a] <= v[a] && v[a] <= hi[a], "instance {instance}: {v:?}");
            }
        }
    }
    // Rebraided nodes keep the instance's fields.
    let options = TwoLevelOptions {
        rebraid: true,
        ..TwoLevelOptions::default()
    };
    let bvh = build_two_level(&input, &options).expect("builds");
    let first = 2 * bvh.tlas.box_nodes;
    for (leaf, &instance) in bvh.tlas.leaf_instance.iter().enumerate() {
        let at = 64 * (first + 2 * leaf);
        let node: InstanceNode = bytemuck::pod_read_unaligned(&bvh.image.bytes[at..at + 128]);
        assert_eq!(node.instance_index, instance);
        assert_eq!(node.id(), input.instances[instance as usize].id);
    }
}

#[test]
fn bad_instances_are_errors() {
    let mut rng = Rng(1);
    let mut input = scene(&mut rng, 4);
    input.instances[2].object_to_world[1] = [0.0; 4];
    let e = build_two_level(&input, &TwoLevelOptions::default()).unwrap_err();
    assert!(e.to_string().contains("instance 2"), "{e}");
    let mut input = scene(&mut rng, 4);
    input.instances[1].blas = 9;
    assert!(build_two_level(&input, &TwoLevelOptions::default()).is_err());
    let mut input = scene(&mut rng, 4);
    input.instances[0].flags = InstanceFlags::FORCE_OPAQUE | InstanceFlags::FORCE_NON_OPAQUE;
    assert!(build_two_level(&input, &TwoLevelOptions::default()).is_err());
}
