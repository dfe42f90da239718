//! Hand-built waves with counter values known in advance (the TD cost model of
//! `rt-hardware.md`: one TD clock per active lane per instruction, inactive lanes free).

use bytemuck::bytes_of;
use glam::Vec3;
use wavetrace::counters::Counters;
use wavetrace::hw::{
    BoxNodeF16, BoxNodeF32, BvhDescriptor, IjControl, NodePointer, NodeType, RayRegisters,
    TriangleNode, TriangleReturnMode,
};
use wavetrace::math::{Hit, Ray};
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::{td, BvhMemory, Tracer, Wave, WaveIntersector, WaveResults, WaveWidth};

const NAN_BOX: [f32; 6] = [f32::NAN; 6];

/// The box32 root at block 0.
const ROOT: NodePointer = NodePointer::new(0, NodeType::BoxF32);

/// Memory: block 0-1 box32 (children: tri node at block 2 as tri0 and tri1, box16 at 3,
/// one empty slot), block 2 triangle node, block 3 box16 node, block 4 triangle node.
fn memory() -> Vec<u8> {
    let tri_a = NodePointer::new(2, NodeType::Triangle0);
    let tri_b = NodePointer::new(2, NodeType::Triangle1);
    let box16 = NodePointer::new(3, NodeType::BoxF16);
    let root = BoxNodeF32 {
        children: [tri_a, tri_b, box16, NodePointer::INVALID],
        boxes: [
            [-1.0, -1.0, 4.0, 1.0, 1.0, 6.0],
            [-1.0, -1.0, 4.0, 1.0, 1.0, 6.0],
            [-1.0, -1.0, 9.0, 1.0, 1.0, 11.0],
            NAN_BOX,
        ],
        user: [0; 4],
    };
    // Two triangles in the plane z = 5: V0 V1 V2 and V1 V3 V2 cover the square [-1,1]^2.
    let tri = TriangleNode {
        vertices: [
            [-1.0, -1.0, 5.0],
            [1.0, -1.0, 5.0],
            [-1.0, 1.0, 5.0],
            [1.0, 1.0, 5.0],
            [f32::NAN; 3],
        ],
        word: IjControl(0).with_nibble(0, 9).with_nibble(1, 6).0,
    };
    let h = |v: f32| half::f16::from_f32(v).to_bits();
    let tri_c = NodePointer::new(4, NodeType::Triangle0);
    let b16 = BoxNodeF16 {
        children: [
            tri_c,
            NodePointer::INVALID,
            NodePointer::INVALID,
            NodePointer::INVALID,
        ],
        boxes: [
            [h(-1.0), h(-1.0), h(9.0), h(1.0), h(1.0), h(11.0)],
            [0x7e00; 6],
            [0x7e00; 6],
            [0x7e00; 6],
        ],
    };
    let tri2 = TriangleNode {
        vertices: [
            [-1.0, -1.0, 10.0],
            [1.0, -1.0, 10.0],
            [-1.0, 1.0, 10.0],
            [f32::NAN; 3],
            [f32::NAN; 3],
        ],
        word: IjControl(0).with_nibble(0, 9).0,
    };
    let mut mem = Vec::new();
    mem.extend_from_slice(bytes_of(&root));
    mem.extend_from_slice(bytes_of(&tri));
    mem.extend_from_slice(bytes_of(&b16));
    mem.extend_from_slice(bytes_of(&tri2));
    assert_eq!(mem.len(), 5 * 64);
    mem
}

fn descriptor() -> BvhDescriptor {
    BvhDescriptor {
        size_minus_one: 4,
        triangle_return_mode: TriangleReturnMode::Barycentrics,
        ..BvhDescriptor::default()
    }
}

fn down_ray(x: f32, y: f32) -> RayRegisters {
    RayRegisters {
        extent: f32::INFINITY,
        origin: [x, y, 0.0],
        dir: [0.0, 0.0, 1.0],
        inv_dir: [f32::INFINITY, f32::INFINITY, 1.0],
    }
}

fn issue<const W: usize>(wave: &Wave<W>, index: u64) -> (Counters, WaveResults<W>) {
    let mem = memory();
    let intersector = WaveIntersector::new(BvhMemory { bytes: &mem, va: 0 }, descriptor(), None);
    let mut out = WaveResults::default();
    let cost = intersector.issue(wave, &mut out);
    let mut counters = Counters::default();
    td::charge(&mut counters, index, W, wave.active_lanes(), &cost);
    (counters, out)
}

#[test]
fn wave64_with_17_lanes_on_a_box_node_costs_17_clocks_on_its_td() {
    let mut wave: Wave<64> = Wave::new(0);
    for i in (0..64).step_by(3).take(17) {
        wave.activate(i, ROOT, down_ray(0.25, 0.25));
    }
    let (c, out) = issue(&wave, 23);
    assert_eq!(c.td_clocks, 17);
    assert_eq!(c.td_box_queries, 17);
    assert_eq!(c.td_aabb_tests, 68);
    // Three of the four slots hold a child.
    assert_eq!(c.td_aabb_useful, 51);
    assert_eq!(c.td_triangle_tests, 0);
    assert_eq!((c.lanes_active, c.lanes_available), (17, 64));
    // Wave 23 runs on Series S TD 3 and Series X TD 23; no other TD is charged.
    assert_eq!(c.per_td.series_s[3].clocks, 17);
    assert_eq!(c.per_td.series_x[23].clocks, 17);
    assert_eq!(c.per_td.series_s.iter().map(|t| t.clocks).sum::<u64>(), 17);
    assert_eq!(
        c.per_td
            .series_x
            .iter()
            .map(|t| t.instructions)
            .sum::<u64>(),
        1
    );
    // Sorted nearest first: the two z=[4,6] boxes (equal keys) before the z=[9,11] box.
    assert_eq!(
        out.dwords[0][2],
        NodePointer::new(3, NodeType::BoxF16).to_u32()
    );
    assert_eq!(out.dwords[0][3], NodePointer::INVALID.to_u32());
}

#[test]
fn nan_and_infinite_lanes_cost_nothing() {
    let mut wave: Wave<32> = Wave::new(0);
    for i in 0..10 {
        let mut ray = down_ray(0.25, 0.25);
        match i {
            0 => ray.origin[1] = f32::NAN,
            1 => ray.dir[2] = f32::NAN,
            2 => ray.extent = f32::NAN,
            3 => ray.origin[0] = f32::NEG_INFINITY,
            _ => {}
        }
        wave.activate(i, ROOT, ray);
    }
    let (c, out) = issue(&wave, 0);
    assert_eq!(c.td_clocks, 6);
    assert_eq!(c.lanes_nan, 3);
    assert_eq!(c.lanes_inf_origin, 1);
    assert_eq!(c.lanes_active, 6);
    assert_eq!(out.dwords[0], [u32::MAX; 4]);

    // A wave whose only lanes are NaN issues nothing to a TD.
    let mut wave: Wave<32> = Wave::new(0);
    let mut ray = down_ray(0.0, 0.0);
    ray.inv_dir[0] = f32::NAN;
    wave.activate(5, ROOT, ray);
    let (c, _) = issue(&wave, 0);
    assert_eq!((c.td_clocks, c.td_instructions, c.lanes_nan), (0, 0, 1));
    assert_eq!(c.trav_iterations, 1);
}

#[test]
fn wave32_mixed_node_types_in_one_instruction() {
    let mut wave: Wave<32> = Wave::new(0);
    let tri0 = NodePointer::new(2, NodeType::Triangle0);
    let tri1 = NodePointer::new(2, NodeType::Triangle1);
    let box16 = NodePointer::new(3, NodeType::BoxF16);
    let user = NodePointer::new(2, NodeType::User6);
    let oob = NodePointer::new(9, NodeType::Triangle0);
    let mut lane = 0;
    let mut add = |wave: &mut Wave<32>, node: NodePointer, n: usize| {
        for _ in 0..n {
            wave.activate(lane, node, down_ray(-0.5, -0.5));
            lane += 1;
        }
    };
    add(&mut wave, box16, 5);
    add(&mut wave, tri0, 4);
    add(&mut wave, tri1, 3);
    add(&mut wave, user, 2);
    add(&mut wave, oob, 3);
    let (c, out) = issue(&wave, 52);
    assert_eq!(c.td_clocks, 12);
    assert_eq!(c.td_box_queries, 5);
    assert_eq!(c.td_aabb_useful, 5);
    assert_eq!(c.td_triangle_tests, 7);
    assert_eq!(c.td_user_nodes, 2);
    assert_eq!(c.td_out_of_bounds, 3);
    assert_eq!(c.per_td.series_s[12].clocks, 12);
    assert_eq!(c.per_td.series_x[0].clocks, 12);
    // (-0.5, -0.5) lies in triangle 0 (V0 V1 V2), not in triangle 1: t = 5.
    let t = |d: [u32; 4]| f32::from_bits(d[0]) / f32::from_bits(d[1]);
    assert_eq!(t(out.dwords[5]), 5.0);
    assert_eq!(out.dwords[9][0], f32::INFINITY.to_bits());
    assert_eq!(out.dwords[12], [u32::MAX; 4]);
}

fn tracer(wave: WaveWidth) -> WaveTracer {
    WaveTracer::from_parts(
        memory(),
        0,
        descriptor(),
        ROOT,
        Box::new(|ptr: NodePointer, _: &[u32; 4]| match ptr.to_u32() {
            0x10 => 0,
            0x11 => 1,
            0x20 => 2,
            _ => u32::MAX,
        }),
        WaveTracerConfig {
            wave,
            ..Default::default()
        },
    )
}

#[test]
fn a_traced_wave_has_the_clocks_its_paths_imply() {
    // Ray A hits the square at z = 5. Root: children sorted [tri0, tri1, box16]; go to tri0,
    // push box16 then tri1. tri0 hits (t = 5, the extent becomes 5); tri1 misses; box16 is
    // still popped and queried, and misses now that its z 9..11 lies beyond the extent:
    // 4 clocks. Ray B misses the square (x = 3): root only, 1 clock. Ray C starts at z = 7,
    // behind the z 4..6 boxes: root, box16, its triangle (t = 3): 3 clocks.
    let rays = [
        Ray::new(Vec3::new(-0.5, -0.5, 0.0), Vec3::Z, 0.0, 100.0),
        Ray::new(Vec3::new(3.0, 0.0, 0.0), Vec3::Z, 0.0, 100.0),
        Ray::new(Vec3::new(-0.5, -0.5, 7.0), Vec3::Z, 0.0, 100.0),
    ];
    for w in [WaveWidth::W32, WaveWidth::W64] {
        let t = tracer(w);
        let mut hits = [Hit::MISS; 3];
        let mut clocks = [0u32; 3];
        let mut c = Counters::default();
        t.closest_hits(&rays, &mut hits, Some(&mut clocks), &mut c);
        assert_eq!(clocks, [4, 1, 3]);
        assert_eq!((hits[0].t, hits[0].prim_id), (5.0, 0));
        assert!(!hits[1].is_hit());
        assert_eq!((hits[2].t, hits[2].prim_id), (3.0, 2));
        // Barycentrics of (-0.5, -0.5) in V0 V1 V2: weights of V1 and V2 are 0.25 each.
        assert_eq!(hits[0].bary, [0.25, 0.25]);
        assert_eq!(c.td_clocks, 8);
        assert_eq!(c.td_box_queries, 5);
        assert_eq!(c.td_triangle_tests, 3);
        // Four steps: {A,B,C root}, {A tri0, C box16}, {A tri1, C tri}, {A box16}.
        assert_eq!(c.trav_iterations, 4);
        assert_eq!(c.lanes_active, 8);
        assert_eq!(c.lanes_available, 4 * w.lanes() as u64);
        // Wave 0 runs on TD 0: all clocks there.
        assert_eq!(c.per_td.series_s[0].clocks, 8);
        assert_eq!(c.lanes_empty, w.lanes() as u64 - 3);
        assert_eq!((c.rays, c.rays_hit, c.waves), (3, 2, 1));
        assert_eq!(c.trav_max_stack_depth, 2);
        // Any hit: A stops at its first hit (root, tri0 = 2 clocks).
        let mut occluded = [false; 3];
        let mut c = Counters::default();
        t.any_hits(&rays, &mut occluded, &mut c);
        assert_eq!(occluded, [true, false, true]);
        assert_eq!(c.td_clocks, 6);
    }
}
