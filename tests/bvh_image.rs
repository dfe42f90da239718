//! The image: the validator rejects each kind of corruption (one test per kind), mode-1
//! barycentrics follow the mesh's own vertex order, primitive ids and parents, packing.

mod bvh_common;

use bvh_common::*;
use glam::Vec3;
use wavetrace::bvh::{self, closest_hit_scalar, BoxFormat, BuildOptions, BvhImage, Mesh};
use wavetrace::hw::{BoxNodeF16, BoxNodeF32, NodePointer, NodeType, TriangleReturnMode};

/// A closed fan of 4 around a centre (packs into one node with 4 triangles per node) and
/// more random triangles.
fn test_mesh() -> Mesh {
    let mut rng = Rng(11);
    random_soup(&mut rng, 120)
}

fn build(mesh: &Mesh, options: BuildOptions) -> BvhImage {
    let built = bvh::build(mesh, &options).unwrap();
    let errors = bvh::validate(&built.image, mesh);
    assert!(errors.is_empty(), "fresh image invalid: {}", errors[0]);
    built.image
}

fn fp32() -> BuildOptions {
    BuildOptions {
        box_format: BoxFormat::Fp32,
        triangles_per_node: 4,
        ..BuildOptions::default()
    }
}

/// All box nodes reachable from the root: (byte offset, type).
fn box_nodes(image: &BvhImage) -> Vec<(usize, NodeType)> {
    let mut out = Vec::new();
    let mut stack = vec![image.root];
    while let Some(p) = stack.pop() {
        let o = p.address_64() as usize * 64;
        out.push((o, p.node_type()));
        for c in children(image, o, p.node_type()) {
            if c.is_box() {
                stack.push(c);
            }
        }
    }
    out
}

fn children(image: &BvhImage, o: usize, ty: NodeType) -> [NodePointer; 4] {
    if ty == NodeType::BoxF16 {
        bytemuck::pod_read_unaligned::<BoxNodeF16>(&image.bytes[o..o + 64]).children
    } else {
        bytemuck::pod_read_unaligned::<BoxNodeF32>(&image.bytes[o..o + 128]).children
    }
}

fn set_dword(image: &mut BvhImage, byte: usize, value: u32) {
    image.bytes[byte..byte + 4].copy_from_slice(&value.to_le_bytes());
}

fn set_pointer(image: &mut BvhImage, byte: usize, value: NodePointer) {
    set_dword(image, byte, value.to_u32());
}

fn get_f32(image: &BvhImage, byte: usize) -> f32 {
    f32::from_le_bytes(image.bytes[byte..byte + 4].try_into().unwrap())
}

/// The first (box32 node offset, slot) whose child satisfies `pred`.
fn find_slot(image: &BvhImage, pred: impl Fn(NodePointer) -> bool) -> (usize, usize) {
    for (o, ty) in box_nodes(image) {
        if ty != NodeType::BoxF32 {
            continue;
        }
        for (s, c) in children(image, o, ty).into_iter().enumerate() {
            if pred(c) {
                return (o, s);
            }
        }
    }
    panic!("no such slot")
}

fn is_tri(c: NodePointer) -> bool {
    c.is_triangle()
}

fn is_box(c: NodePointer) -> bool {
    c.is_box()
}

fn assert_rejected(image: &BvhImage, mesh: &Mesh, needle: &str) {
    let errors = bvh::validate(image, mesh);
    assert!(
        errors.iter().any(|e| e.to_string().contains(needle)),
        "expected an error containing {needle:?}, got {:?}",
        errors.iter().map(|e| e.to_string()).collect::<Vec<_>>()
    );
}

#[test]
fn rejects_a_box_that_does_not_contain_its_child() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    // Move max.x halfway towards min.x.
    let min_x = get_f32(&image, o + 16 + 24 * s);
    let max_x = get_f32(&image, o + 16 + 24 * s + 12);
    assert!(max_x > min_x);
    set_dword(
        &mut image,
        o + 16 + 24 * s + 12,
        ((min_x + max_x) / 2.0).to_bits(),
    );
    assert_rejected(
        &image,
        &mesh,
        &format!("node {o:#x} (box32) child {s}: box does not contain child"),
    );
}

#[test]
fn rejects_an_fp16_box_that_misses_the_exact_bounds() {
    let mesh = test_mesh();
    let mut image = build(
        &mesh,
        BuildOptions {
            box_format: BoxFormat::Fp16,
            ..fp32()
        },
    );
    let (o, ty) = box_nodes(&image)[0];
    assert_eq!(ty, NodeType::BoxF16);
    let s = children(&image, o, ty)
        .iter()
        .position(|c| !c.is_invalid())
        .unwrap();
    // Raise min.x by one f16 step: the f16 box then misses part of the exact f32 bounds.
    let at = o + 16 + 12 * s;
    let h = u16::from_le_bytes([image.bytes[at], image.bytes[at + 1]]);
    let raised = if h & 0x8000 != 0 { h - 1 } else { h + 1 };
    image.bytes[at..at + 2].copy_from_slice(&raised.to_le_bytes());
    assert_rejected(
        &image,
        &mesh,
        &format!("node {o:#x} (box16) child {s}: box does not contain child"),
    );
}

#[test]
fn rejects_a_pointer_out_of_range() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    let blocks = image.node_count_64() as u64;
    set_dword(
        &mut image,
        o + 4 * s,
        NodePointer::new(blocks + 3, NodeType::Triangle0).to_u32(),
    );
    assert_rejected(&image, &mesh, "out of range");
}

#[test]
fn rejects_a_pointer_into_the_middle_of_a_box32_node() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    // The root is a box32 node at block 0; point its slot 0 at its own second 64-byte half,
    // as a box16 node.
    assert_eq!(image.root, NodePointer::new(0, NodeType::BoxF32));
    let half = NodePointer::new(1, NodeType::BoxF16);
    set_dword(&mut image, 0, half.to_u32());
    assert_rejected(&image, &mesh, "overlaps a node of another kind");
}

#[test]
fn rejects_a_reserved_node_type() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    let c = children(&image, o, NodeType::BoxF32)[s];
    set_pointer(&mut image, o + 4 * s, c.with_type(NodeType::User6));
    assert_rejected(&image, &mesh, "reserved node type 6");
}

#[test]
fn rejects_an_unreachable_triangle() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    set_pointer(&mut image, o + 4 * s, NodePointer::INVALID);
    for i in 0..6 {
        set_dword(&mut image, o + 16 + 24 * s + 4 * i, f32::NAN.to_bits());
    }
    assert_rejected(&image, &mesh, "unreachable from the root");
}

#[test]
fn rejects_a_triangle_referenced_twice() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    let c = children(&image, o, NodeType::BoxF32)[s];
    // Another triangle slot elsewhere now points at the same triangle (with a huge box).
    let (o2, s2) = find_slot(&image, |x| is_tri(x) && x != c);
    set_pointer(&mut image, o2 + 4 * s2, c);
    for i in 0..3 {
        set_dword(&mut image, o2 + 16 + 24 * s2 + 4 * i, (-1e30f32).to_bits());
        set_dword(
            &mut image,
            o2 + 16 + 24 * s2 + 12 + 4 * i,
            1e30f32.to_bits(),
        );
    }
    assert_rejected(&image, &mesh, "referenced by more than one box child");
}

#[test]
fn rejects_a_hittable_empty_slot() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, NodePointer::is_invalid);
    for i in 0..3 {
        set_dword(&mut image, o + 16 + 24 * s + 4 * i, 0.0f32.to_bits());
        set_dword(&mut image, o + 16 + 24 * s + 12 + 4 * i, 1.0f32.to_bits());
    }
    assert_rejected(
        &image,
        &mesh,
        &format!("node {o:#x} (box32) child {s}: empty slot"),
    );
}

#[test]
fn rejects_a_nan_box_on_a_used_slot() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    set_dword(&mut image, o + 16 + 24 * s, f32::NAN.to_bits());
    assert_rejected(&image, &mesh, "NaN or inverted");
}

#[test]
fn rejects_a_changed_vertex() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    let c = children(&image, o, NodeType::BoxF32)[s];
    let k = c.node_type().triangle_index().unwrap();
    let v = wavetrace::hw::TRIANGLE_VERTICES[k][0];
    let at = c.address_64() as usize * 64 + 12 * v;
    let x = get_f32(&image, at);
    set_dword(&mut image, at, (x + 0.001).to_bits());
    assert_rejected(&image, &mesh, "not a rotation of the mesh triangle");
}

#[test]
fn rejects_a_wrong_ij_control_nibble() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_tri);
    let c = children(&image, o, NodeType::BoxF32)[s];
    let k = c.node_type().triangle_index().unwrap();
    let at = c.address_64() as usize * 64 + 60;
    let word = u32::from_le_bytes(image.bytes[at..at + 4].try_into().unwrap());
    // Swap I and J of triangle k.
    let n = (word >> (8 * k)) & 0xf;
    let swapped = ((n & 3) << 2) | (n >> 2);
    set_dword(
        &mut image,
        at,
        (word & !(0xf << (8 * k))) | (swapped << (8 * k)),
    );
    assert_rejected(&image, &mesh, "IJ control nibble");
}

#[test]
fn rejects_a_wrong_mode0_id_word() {
    let mesh = test_mesh();
    let mut image = build(
        &mesh,
        BuildOptions {
            return_mode: TriangleReturnMode::TriangleId,
            ..fp32()
        },
    );
    let (o, s) = find_slot(&image, is_tri);
    let c = children(&image, o, NodeType::BoxF32)[s];
    let at = c.address_64() as usize * 64 + 60;
    let word = u32::from_le_bytes(image.bytes[at..at + 4].try_into().unwrap());
    set_dword(&mut image, at, word + 4);
    assert_rejected(&image, &mesh, "does not map to slot");
}

#[test]
fn rejects_a_cycle() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_box);
    let root = image.root;
    set_pointer(&mut image, o + 4 * s, root);
    assert_rejected(&image, &mesh, "reached twice");
}

#[test]
fn rejects_a_wrong_descriptor_size_and_a_triangle_root() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    image.descriptor.size_minus_one += 1;
    assert_rejected(&image, &mesh, "descriptor size");
    let mut image = build(&mesh, fp32());
    image.root = NodePointer::new(0, NodeType::Triangle0);
    assert_rejected(&image, &mesh, "is not a box node");
}

#[test]
fn rejects_a_wrong_parent_entry() {
    let mesh = test_mesh();
    let mut image = build(&mesh, fp32());
    let (o, s) = find_slot(&image, is_box);
    let c = children(&image, o, NodeType::BoxF32)[s];
    image.box_parent[c.address_64() as usize] = NodePointer::INVALID;
    assert_rejected(&image, &mesh, "parent table");
}

#[test]
fn mode1_barycentrics_reproduce_the_hit_point_in_mesh_order() {
    let mut rng = Rng(21);
    let soup = random_soup(&mut rng, 400);
    let bunny = Mesh::load_obj(&std::path::Path::new(SCENES).join("bunny.obj.gz")).unwrap();
    for mesh in [&soup, &bunny] {
        let image = build(
            mesh,
            BuildOptions {
                return_mode: TriangleReturnMode::Barycentrics,
                triangles_per_node: 4,
                ..BuildOptions::default()
            },
        );
        let rays = random_rays(&mut rng, mesh, 400);
        let mut hits = 0;
        for ray in &rays {
            let h = closest_hit_scalar(&image, mesh, ray);
            if !h.is_hit() {
                continue;
            }
            hits += 1;
            let [a, b, c] = mesh.triangle(h.prim_id).map(Vec3::from);
            let [u, v] = h.bary;
            let p = a + (b - a) * u + (c - a) * v;
            let q = ray.at(h.t);
            let scale = a
                .abs()
                .max(b.abs())
                .max(c.abs())
                .max_element()
                .max(q.abs().max_element());
            // f32 precision: a few ulps of the coordinates, relative to the triangle's size
            // for a well-shaped triangle.
            let e1 = (b - a).length();
            let e2 = (c - a).length();
            let area2 = (b - a).cross(c - a).length();
            if area2 < 1e-3 * e1 * e2 {
                continue; // sliver: barycentrics are ill-conditioned
            }
            assert!(
                (p - q).length() <= 4e-6 * scale + 1e-5 * (e1 + e2),
                "prim {} bary {:?}: {p} vs {q}",
                h.prim_id,
                h.bary
            );
            let want = bvh::query::barycentrics_f64(ray, mesh.triangle(h.prim_id));
            assert!(
                (want[0] - u).abs() < 1e-3 && (want[1] - v).abs() < 1e-3,
                "bary {:?} vs f64 {:?}",
                h.bary,
                want
            );
        }
        assert!(hits > 100);
    }
}

#[test]
fn packing_uses_all_four_slots_and_ids_parents_map_back() {
    // Closed fans of four pack into full nodes.
    let mut tris = Vec::new();
    let mut rng = Rng(2);
    for i in 0..50 {
        let c = Vec3::new(i as f32 * 3.0, 0.0, 0.0);
        let ring: Vec<Vec3> = (0..4)
            .map(|k| {
                c + Vec3::new(
                    [1.0, 0.0, -1.0, 0.0][k],
                    [0.0, 1.0, 0.0, -1.0][k],
                    rng.range(-0.2, 0.2),
                )
            })
            .collect();
        for k in 0..4 {
            // Rotate the application's vertex order so packing must use the IJ control.
            let t = [ring[k], ring[(k + 1) % 4], c];
            let r = k % 3;
            tris.push([t[r].into(), t[(r + 1) % 3].into(), t[(r + 2) % 3].into()]);
        }
    }
    let mesh = Mesh::from_triangles(&tris);
    for mode in [
        TriangleReturnMode::TriangleId,
        TriangleReturnMode::Barycentrics,
    ] {
        let built = bvh::build(
            &mesh,
            &BuildOptions {
                triangles_per_node: 4,
                return_mode: mode,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        assert!(bvh::validate(&built.image, &mesh).is_empty());
        let h = &built.metrics.triangles_per_node_histogram;
        // (A triangle joining a node takes the slot beside the edge it shares, so all but
        // a few fans fill one node.)
        assert!(h[4] >= 45, "histogram {h:?}");
        // Every slot's parent names a box node whose children include it.
        let image = &built.image;
        for (o, ty) in box_nodes(image) {
            let me = NodePointer::new(o as u64 / 64, ty);
            for c in children(image, o, ty) {
                if !c.is_invalid() {
                    assert_eq!(image.parent(c), Some(me));
                }
            }
        }
        assert_eq!(image.parent(image.root), None);
    }
}

#[test]
fn the_image_does_not_depend_on_the_thread_count() {
    let mesh = Mesh::load_obj(&std::path::Path::new(SCENES).join("bunny.obj.gz")).unwrap();
    for options in tree_settings() {
        let images: Vec<_> = [1, 2, 3]
            .iter()
            .map(|&n| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .unwrap();
                pool.install(|| bvh::build(&mesh, &options).unwrap())
            })
            .collect();
        for b in &images[1..] {
            assert!(b.image == images[0].image, "{options:?}: image differs");
            assert_eq!(b.metrics, images[0].metrics);
        }
    }
}

#[test]
fn metrics_agree_with_the_image() {
    let mut rng = Rng(31);
    let mesh = random_soup(&mut rng, 500);
    for options in all_options() {
        let built = bvh::build(&mesh, &options).unwrap();
        let m = &built.metrics;
        let image = &built.image;
        assert_eq!(m.bytes, image.bytes.len());
        assert_eq!(
            m.box16_nodes * 64 + m.box32_nodes * 128 + m.triangle_nodes * 64,
            m.bytes,
            "{options:?}"
        );
        let hist = &m.triangles_per_node_histogram;
        assert_eq!(hist.iter().sum::<usize>(), m.triangle_nodes);
        assert_eq!(
            (1..5).map(|i| i * hist[i]).sum::<usize>(),
            m.triangle_references
        );
        assert!(hist[3] + hist[4] == 0 || options.triangles_per_node == 4);
        assert!(hist[2] == 0 || options.triangles_per_node > 1);
        assert!((m.bytes_per_triangle - m.bytes as f64 / mesh.len() as f64).abs() < 1e-9);
        // Box nodes reachable from the root, counted independently.
        let nodes = box_nodes(image);
        assert_eq!(nodes.len(), m.box16_nodes + m.box32_nodes);
        let used: usize = nodes
            .iter()
            .map(|&(o, ty)| {
                children(image, o, ty)
                    .iter()
                    .filter(|c| !c.is_invalid())
                    .count()
            })
            .sum();
        assert!((m.fill_rate - used as f64 / (4 * nodes.len()) as f64).abs() < 1e-12);
        if options.box_format == BoxFormat::Fp16 {
            assert_eq!(m.box32_nodes, 0);
        }
        if options.box_format == BoxFormat::Fp32 {
            assert_eq!(m.box16_nodes, 0);
        }
        // SAH recomputed from the stored boxes, in f64, with C_box = C_tri = 1.
        let area = |b: ([f32; 3], [f32; 3])| {
            let e = [0, 1, 2].map(|a| (b.1[a] as f64 - b.0[a] as f64).max(0.0));
            e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
        };
        let decode = |o: usize, ty: NodeType, s: usize| {
            if ty == NodeType::BoxF16 {
                bytemuck::pod_read_unaligned::<BoxNodeF16>(&image.bytes[o..o + 64]).child_box(s)
            } else {
                bytemuck::pod_read_unaligned::<BoxNodeF32>(&image.bytes[o..o + 128]).child_box(s)
            }
        };
        let (ro, rty) = nodes[0];
        let mut root = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        for (s, c) in children(image, ro, rty).into_iter().enumerate() {
            if !c.is_invalid() {
                let b = decode(ro, rty, s);
                for a in 0..3 {
                    root.0[a] = root.0[a].min(b.0[a]);
                    root.1[a] = root.1[a].max(b.1[a]);
                }
            }
        }
        let mut sah = 1.0;
        for &(o, ty) in &nodes {
            for (s, c) in children(image, o, ty).into_iter().enumerate() {
                if c.is_invalid() {
                    continue;
                }
                let weight = image.leaf_triangles(c).count().max(1) as f64;
                sah += weight * area(decode(o, ty, s)) / area(root);
            }
        }
        assert!(
            (sah - m.sah_cost).abs() <= 1e-4 * sah,
            "{options:?}: SAH {sah} vs {}",
            m.sah_cost
        );
    }
}
