//! Section 12 of `../shared/spec/semantics.md`, row by row, with hand-computed values.

use half::f16;
use wavetrace::hw::box_test::{grow_factor, sort_children, SORT_NETWORK};
use wavetrace::hw::descriptor::TriangleReturnMode;
use wavetrace::hw::{
    image_bvh64_intersect_ray, image_bvh_intersect_ray, image_bvh_intersect_ray_a16, BoxNodeF16,
    BoxNodeF32, BvhDescriptor, InactiveReason, LaneOutcome, MappedMemory, NodePointer,
    NodePointer64, NodeType, RayRegisters, RayRegistersA16, TriangleNode, TRIANGLE_VERTICES,
};

const INV: u32 = 0xFFFF_FFFF;
const TRI_MISS: [u32; 4] = [0x7f80_0000, 0x3f80_0000, 0, 0];
const INF: f32 = f32::INFINITY;

fn desc() -> BvhDescriptor {
    BvhDescriptor::default()
}

/// A ray along +x from `origin` (inv_dir y, z = +inf, as 1/+0).
fn ray_x(origin: [f32; 3], extent: f32) -> RayRegisters {
    RayRegisters {
        extent,
        origin,
        dir: [1.0, 0.0, 0.0],
        inv_dir: [1.0, INF, INF],
    }
}

fn box32(children: [u32; 4], boxes: [[f32; 6]; 4]) -> Vec<u8> {
    bytemuck::bytes_of(&BoxNodeF32 {
        children: children.map(NodePointer::from_u32),
        boxes,
        user: [0; 4],
    })
    .to_vec()
}

/// A box x in [x0, x1], y and z in [-1, 1].
fn slab(x0: f32, x1: f32) -> [f32; 6] {
    [x0, -1.0, -1.0, x1, 1.0, 1.0]
}

const MISS_BOX: [f32; 6] = [5.0, 5.0, 5.0, 6.0, 6.0, 6.0];

fn run32(node: &[u8], d: &BvhDescriptor, ray: &RayRegisters) -> [u32; 4] {
    let r = image_bvh_intersect_ray(node, d, NodePointer::new(0, NodeType::BoxF32).to_u32(), ray);
    assert_eq!(r.outcome, LaneOutcome::Tested);
    r.dwords
}

fn tri_node(verts: [[f32; 3]; 5], word: u32) -> Vec<u8> {
    bytemuck::bytes_of(&TriangleNode {
        vertices: verts,
        word,
    })
    .to_vec()
}

fn mode(m: TriangleReturnMode) -> BvhDescriptor {
    BvhDescriptor {
        triangle_return_mode: m,
        ..desc()
    }
}

// ---- miss encodings -------------------------------------------------------------------------

#[test]
fn box_miss_is_four_invalid_pointers() {
    let node = box32([1, 2, 3, 4], [MISS_BOX; 4]);
    assert_eq!(run32(&node, &desc(), &ray_x([0.0; 3], INF)), [INV; 4]);
    let n16 = BoxNodeF16 {
        children: [1, 2, 3, 4].map(NodePointer::from_u32),
        boxes: [[0x4500, 0x4500, 0x4500, 0x4600, 0x4600, 0x4600]; 4], // [5,6]^3
    };
    let r = image_bvh_intersect_ray(bytemuck::bytes_of(&n16), &desc(), 4, &ray_x([0.0; 3], INF));
    assert_eq!(r.dwords, [INV; 4]);
}

#[test]
fn triangle_miss_is_inf_one_zero_zero_in_both_modes() {
    // Triangle far off the ray.
    let v = [
        [10.0, 10.0, 1.0],
        [11.0, 10.0, 1.0],
        [10.0, 11.0, 1.0],
        [0.0; 3],
        [0.0; 3],
    ];
    let node = tri_node(v, 0x1234);
    let ray = RayRegisters {
        extent: INF,
        origin: [0.0; 3],
        dir: [0.0, 0.0, 1.0],
        inv_dir: [INF, INF, 1.0],
    };
    for m in [
        TriangleReturnMode::TriangleId,
        TriangleReturnMode::Barycentrics,
    ] {
        let r = image_bvh_intersect_ray(node.as_slice(), &mode(m), 0, &ray);
        assert_eq!(r.dwords, TRI_MISS);
        assert_eq!(r.outcome, LaneOutcome::Tested);
    }
}

#[test]
fn user_nodes_return_all_ones() {
    let node = [0x5au8; 128];
    for ty in [6u32, 7] {
        let r = image_bvh_intersect_ray(node.as_slice(), &desc(), ty, &ray_x([0.0; 3], INF));
        assert_eq!(r.dwords, [INV; 4]);
        assert_eq!(r.outcome, LaneOutcome::UserNode);
    }
}

// ---- inactive lanes -------------------------------------------------------------------------

#[test]
fn inactive_lanes_return_the_miss_encoding_with_their_reason() {
    let node = box32([1, 2, 3, 4], [slab(-1.0, 1.0); 4]);
    let tri = tri_node(
        [
            [0.0, -1.0, -1.0],
            [0.0, 1.0, -1.0],
            [0.0, 0.0, 1.0],
            [0.0; 3],
            [0.0; 3],
        ],
        7,
    );
    let nan = f32::from_bits(0x7fc0_1234);
    let base = ray_x([-5.0, 0.0, 0.0], INF);
    let cases = [
        (
            RayRegisters {
                origin: [nan, 0.0, 0.0],
                ..base
            },
            InactiveReason::NanOrigin,
        ),
        (
            RayRegisters {
                origin: [0.0, INF, 0.0],
                ..base
            },
            InactiveReason::InfiniteOrigin,
        ),
        (
            RayRegisters {
                origin: [0.0, 0.0, -INF],
                ..base
            },
            InactiveReason::InfiniteOrigin,
        ),
        (
            RayRegisters {
                dir: [1.0, -nan, 0.0],
                ..base
            },
            InactiveReason::NanDirection,
        ),
        (
            RayRegisters {
                inv_dir: [1.0, INF, nan],
                ..base
            },
            InactiveReason::NanInverseDirection,
        ),
        (
            RayRegisters {
                extent: nan,
                ..base
            },
            InactiveReason::NanExtent,
        ),
    ];
    // The control ray hits both nodes.
    assert_eq!(run32(&node, &desc(), &base), [1, 2, 3, 4]);
    assert_eq!(
        image_bvh_intersect_ray(tri.as_slice(), &desc(), 0, &base).dwords[3],
        1
    );
    for (ray, reason) in cases {
        for (bytes, ptr, miss) in [
            (&node, 5u32, [INV; 4]),
            (&node, 4, [INV; 4]),
            (&tri, 0, TRI_MISS),
            (&tri, 3, TRI_MISS),
            (&node, 6, [INV; 4]),
        ] {
            let r = image_bvh_intersect_ray(bytes.as_slice(), &desc(), ptr, &ray);
            assert_eq!(r.dwords, miss, "{reason:?} type {ptr}");
            assert_eq!(r.outcome, LaneOutcome::Inactive(reason), "type {ptr}");
        }
    }
}

#[test]
fn infinities_in_dir_inv_dir_and_extent_are_active() {
    let node = box32([1, 2, 3, 4], [slab(-1.0, 1.0); 4]);
    let ray = RayRegisters {
        extent: INF,
        origin: [-5.0, 0.0, 0.0],
        dir: [INF, 0.0, 0.0],
        inv_dir: [1.0, -INF, INF],
    };
    let r = image_bvh_intersect_ray(node.as_slice(), &desc(), 5, &ray);
    assert_eq!(r.outcome, LaneOutcome::Tested);
    assert_eq!(r.dwords, [1, 2, 3, 4]);
}

// ---- bounds check, unmapped memory, 64-bit pointers -------------------------------------------

#[test]
fn bounds_check_per_node_type() {
    let node = vec![0u8; 256];
    let ray = ray_x([-5.0, 0.0, 0.0], INF);
    let sized = |size| BvhDescriptor {
        size_minus_one: size,
        ..desc()
    };
    // (size_minus_one, pointer, out of bounds?)
    let cases = [
        (0, NodePointer::new(0, NodeType::BoxF32), true), // 0 + 1 > 0
        (1, NodePointer::new(0, NodeType::BoxF32), false),
        (1, NodePointer::new(1, NodeType::BoxF32), true),
        (0, NodePointer::new(0, NodeType::BoxF16), false),
        (0, NodePointer::new(1, NodeType::BoxF16), true),
        (2, NodePointer::new(2, NodeType::BoxF16), false),
        (0, NodePointer::new(0, NodeType::Triangle2), false),
        (0, NodePointer::new(1, NodeType::Triangle0), true),
        (1, NodePointer::new(2, NodeType::Triangle3), true),
        (0, NodePointer::new(1, NodeType::User7), true),
    ];
    for (size, ptr, oob) in cases {
        let r = image_bvh_intersect_ray(node.as_slice(), &sized(size), ptr.to_u32(), &ray);
        let ty = ptr.node_type();
        if oob {
            assert_eq!(r.outcome, LaneOutcome::OutOfBounds, "{ptr:?} size {size}");
            let miss = if ty.triangle_index().is_some() {
                TRI_MISS
            } else {
                [INV; 4]
            };
            assert_eq!(r.dwords, miss);
        } else {
            assert_ne!(r.outcome, LaneOutcome::OutOfBounds, "{ptr:?} size {size}");
        }
    }
}

#[test]
fn fetch_outside_memory_is_unmapped() {
    let node = box32([1, 2, 3, 4], [slab(-1.0, 1.0); 4]);
    let ray = ray_x([-5.0, 0.0, 0.0], INF);
    // Box32 needs 128 bytes; 64 given.
    let r = image_bvh_intersect_ray(&node[..64], &desc(), 5, &ray);
    assert_eq!((r.dwords, r.outcome), ([INV; 4], LaneOutcome::Unmapped));
    let r = image_bvh_intersect_ray(&node[..63], &desc(), 0, &ray);
    assert_eq!((r.dwords, r.outcome), (TRI_MISS, LaneOutcome::Unmapped));
}

#[test]
fn sixty_four_bit_pointer_and_base_address() {
    let node = box32([9, 8, 7, 6], [slab(-1.0, 1.0); 4]);
    // Node 2^33 (64-byte units) above a base of 3 * 256 bytes: byte address 3*256 + 2^39.
    let d = BvhDescriptor {
        base_address_256: 3,
        ..desc()
    };
    let ptr = NodePointer64::new(1 << 33, NodeType::BoxF32);
    let va = 3 * 256 + (1u64 << 39);
    let mem = MappedMemory { va, bytes: &node };
    let r = image_bvh64_intersect_ray(&mem, &d, ptr.to_u64(), &ray_x([-5.0, 0.0, 0.0], INF));
    assert_eq!(r.dwords, [9, 8, 7, 6]);
    let mem = MappedMemory {
        va: va + 64,
        bytes: &node,
    };
    let r = image_bvh64_intersect_ray(&mem, &d, ptr.to_u64(), &ray_x([-5.0, 0.0, 0.0], INF));
    assert_eq!(r.outcome, LaneOutcome::Unmapped);
}

// ---- sorting --------------------------------------------------------------------------------

/// Independent model of the comparator network, on (key, original slot) with misses as None:
/// a comparator moves a present entry before an absent one, and otherwise swaps only when the
/// later key is strictly smaller.
fn network_model(keys: [Option<u32>; 4]) -> [Option<usize>; 4] {
    let mut slots: [(Option<u32>, usize); 4] = std::array::from_fn(|i| (keys[i], i));
    let pairs = [(0usize, 2usize), (1, 3), (0, 1), (2, 3), (1, 2)];
    for (a, b) in pairs {
        let swap = match (slots[a].0, slots[b].0) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(ka), Some(kb)) => kb < ka,
        };
        if swap {
            slots.swap(a, b);
        }
    }
    slots.map(|(k, i)| k.map(|_| i))
}

#[test]
fn network_constant_is_the_spec_network() {
    assert_eq!(SORT_NETWORK, [(0, 2), (1, 3), (0, 1), (2, 3), (1, 2)]);
}

#[test]
fn all_81_tie_patterns_and_misses_through_the_instruction() {
    // Key 0: box contains the origin (clamped entry 0); key 1, 2: box starts at x = 1, 2.
    // Value 3 = a missed box. 4^4 = 256 patterns, the 81 without misses among them.
    let child = [0x100u32, 0x208, 0x310, 0x418];
    let mut unstable = 0;
    let mut tie_patterns = 0;
    for pattern in 0..256u32 {
        let vals: [u32; 4] = std::array::from_fn(|i| (pattern >> (2 * i)) & 3);
        let boxes = vals.map(|v| match v {
            0 => slab(-1.0, 10.0),
            1 => slab(1.0, 10.0),
            2 => slab(2.0, 10.0),
            _ => MISS_BOX,
        });
        let node = box32(child, boxes);
        let got = run32(&node, &desc(), &ray_x([0.0; 3], INF));
        let keys = vals.map(|v| (v < 3).then_some(v));
        let expect = network_model(keys).map(|s| s.map_or(INV, |i| child[i]));
        assert_eq!(got, expect, "keys {vals:?}");
        // Hand rules: hits first (no holes), sorted by key, a permutation of the hits.
        let n_hits = keys.iter().flatten().count();
        assert!(got[..n_hits].iter().all(|&p| p != INV) && got[n_hits..].iter().all(|&p| p == INV));
        let sorted_keys: Vec<u32> = got[..n_hits]
            .iter()
            .map(|p| vals[child.iter().position(|c| c == p).unwrap()])
            .collect();
        assert!(sorted_keys.windows(2).all(|w| w[0] <= w[1]), "{vals:?}");
        if n_hits == 4 {
            tie_patterns += 1;
            let mut stable: Vec<usize> = (0..4).collect();
            stable.sort_by_key(|&i| vals[i]);
            let stable_ptrs: Vec<u32> = stable.iter().map(|&i| child[i]).collect();
            if got.as_slice() != stable_ptrs.as_slice() {
                unstable += 1;
            }
        }
        // Unsorted mode keeps holes in place.
        let d = BvhDescriptor {
            box_sort_enable: false,
            ..desc()
        };
        let unsorted = run32(&node, &d, &ray_x([0.0; 3], INF));
        let expect_unsorted: [u32; 4] =
            std::array::from_fn(|i| if vals[i] < 3 { child[i] } else { INV });
        assert_eq!(unsorted, expect_unsorted);
    }
    assert_eq!(tie_patterns, 81);
    // semantics.md 5.7: 26 of the 81 patterns reorder equal keys.
    assert_eq!(unstable, 26);
}

#[test]
fn hand_worked_unstable_tie() {
    // Keys [1, 1, 0, 1]: (0,2) swaps -> [P2, P1, P0, P3]; no other comparator swaps, so P1
    // ends before P0 although a stable sort would keep P0 first.
    let p = |raw: [u32; 4]| raw.map(NodePointer::from_u32);
    let got = sort_children(p([10, 11, 12, 13]), [1.0, 1.0, 0.0, 1.0]);
    assert_eq!(got, p([12, 11, 10, 13]));
}

#[test]
fn invalid_pointer_on_a_hit_box_sorts_last() {
    let node = box32(
        [INV, 0x20, INV, 0x40],
        [
            slab(-1.0, 5.0),
            slab(3.0, 5.0),
            slab(1.0, 5.0),
            slab(2.0, 5.0),
        ],
    );
    assert_eq!(
        run32(&node, &desc(), &ray_x([0.0; 3], INF)),
        [0x40, 0x20, INV, INV]
    );
    // Keys never matter for INVALID slots, even a key of +inf against a valid +inf.
    assert_eq!(
        sort_children(
            [INV, 5, INV, 6].map(NodePointer::from_u32),
            [0.0, INF, 0.0, INF]
        ),
        [5, 6, INV, INV].map(NodePointer::from_u32)
    );
}

// ---- box math: grow, NaN, infinities, inverted, extent ------------------------------------------

#[test]
fn grow_factor_values() {
    let u = 2f32.powi(-24);
    assert_eq!(grow_factor(0), 1.0);
    assert_eq!(grow_factor(1), 1.0);
    assert_eq!(grow_factor(6), 1.0 + 6.0 * u);
    assert_eq!(grow_factor(8), 1.0 + 8.0 * u);
    assert_eq!(grow_factor(6).to_bits(), 0x3f80_0003);
    assert_eq!(grow_factor(8).to_bits(), 0x3f80_0004);
}

#[test]
fn growth_decides_hit_or_miss() {
    // Ray from 0 along (1,1,1); box x in [1 + k ulp, 5], y in [0, 1], z in [-5, 5]:
    // tnear = 1 + k ulp (x), tfar = 1 (y).
    let ulp = 2f32.powi(-23);
    let ray = RayRegisters {
        extent: INF,
        origin: [0.0; 3],
        dir: [1.0; 3],
        inv_dir: [1.0; 3],
    };
    let run = |k: f32, g: u8| {
        let node = box32(
            [1, INV, INV, INV],
            [
                [1.0 + k * ulp, 0.0, -5.0, 5.0, 1.0, 5.0],
                MISS_BOX,
                MISS_BOX,
                MISS_BOX,
            ],
        );
        run32(
            &node,
            &BvhDescriptor {
                box_grow_ulps: g,
                ..desc()
            },
            &ray,
        )[0] == 1
    };
    assert!(run(0.0, 0), "touching interval hits (inclusive)");
    assert!(!run(1.0, 0));
    assert!(!run(1.0, 1), "G = 1 rounds to no growth");
    assert!(run(1.0, 2));
    assert!(run(3.0, 6));
    assert!(!run(4.0, 6));
    assert!(run(4.0, 7), "G = 7 rounds to 8");
    assert!(run(4.0, 8));
    assert!(!run(5.0, 8));
}

#[test]
fn nan_from_zero_times_infinity_is_ignored() {
    // Origin y = 0 on the plane y = 0 of the box, dir.y = 0, inv_dir.y = +inf:
    // (0 - 0) * inf = NaN is dropped, the ray runs in the face and hits.
    let node = box32(
        [1, 2, INV, INV],
        [
            [-1.0, 0.0, -1.0, 1.0, 1.0, 1.0],
            [-1.0, 0.5, -1.0, 1.0, 1.0, 1.0],
            MISS_BOX,
            MISS_BOX,
        ],
    );
    let got = run32(&node, &desc(), &ray_x([-5.0, 0.0, 0.0], INF));
    // Child 1 (y from 0.5) is missed: (0.5 - 0) * inf = +inf near.
    assert_eq!(got, [1, INV, INV, INV]);
}

#[test]
fn negative_infinite_inverse_direction_swaps_slabs() {
    // inv_dir.y = -inf (dir.y = -0): near = (max - o) * -inf = -inf, far = +inf: inside.
    let node = box32(
        [1, INV, INV, INV],
        [slab(-1.0, 1.0), MISS_BOX, MISS_BOX, MISS_BOX],
    );
    let ray = RayRegisters {
        extent: INF,
        origin: [-5.0, 0.5, 0.0],
        dir: [1.0, -0.0, 0.0],
        inv_dir: [1.0, -INF, INF],
    };
    assert_eq!(run32(&node, &desc(), &ray)[0], 1);
    // Outside the y slab: both planes give +inf (below) -> far = +inf? no: near = +inf, miss.
    let ray = RayRegisters {
        origin: [-5.0, -2.0, 0.0],
        ..ray
    };
    assert_eq!(run32(&node, &desc(), &ray)[0], INV);
}

#[test]
fn inverted_and_nan_boxes_miss() {
    let nan = f32::NAN;
    let node = box32(
        [1, 2, 3, 4],
        [
            [2.0, -1.0, -1.0, 1.0, 1.0, 1.0], // min.x > max.x
            [nan; 6],
            [nan, -1.0, -1.0, nan, 1.0, 1.0], // x unconstrained: hit
            [INF, INF, INF, -INF, -INF, -INF],
        ],
    );
    let d = BvhDescriptor {
        box_sort_enable: false,
        ..desc()
    };
    assert_eq!(
        run32(&node, &d, &ray_x([-5.0, 0.0, 0.0], INF)),
        [INV, INV, 3, INV]
    );
}

#[test]
fn extent_clamps_the_far_distance_inclusively() {
    let node = box32(
        [1, INV, INV, INV],
        [slab(2.0, 3.0), MISS_BOX, MISS_BOX, MISS_BOX],
    );
    assert_eq!(run32(&node, &desc(), &ray_x([0.0; 3], 2.0))[0], 1);
    assert_eq!(run32(&node, &desc(), &ray_x([0.0; 3], 1.999_999_9))[0], INV);
    // Behind the origin: clamped to 0.
    assert_eq!(run32(&node, &desc(), &ray_x([4.0, 0.0, 0.0], INF))[0], INV);
    // Extent 0 with the origin inside a box: tnear = 0 <= 0.
    let inside = box32(
        [1, INV, INV, INV],
        [slab(-1.0, 3.0), MISS_BOX, MISS_BOX, MISS_BOX],
    );
    assert_eq!(run32(&inside, &desc(), &ray_x([0.0; 3], 0.0))[0], 1);
    assert_eq!(run32(&inside, &desc(), &ray_x([0.0; 3], -1.0))[0], INV);
}

#[test]
fn child_pointers_pass_through_verbatim() {
    let odd = [0x4000_1234, 0, 0x7fff_fffb, 0xdead_beef];
    let node = box32(odd, [slab(-1.0, 1.0); 4]);
    let d = BvhDescriptor {
        box_sort_enable: false,
        ..desc()
    };
    assert_eq!(run32(&node, &d, &ray_x([-5.0, 0.0, 0.0], INF)), odd);
}

// ---- FP16 ------------------------------------------------------------------------------------

#[test]
fn fp16_boxes_widen_exactly() {
    // min.x = binary16 0x3c01 = 1 + 2^-10; the ray enters exactly there.
    let e = 1.0 + 2f32.powi(-10);
    let (lo, hi) = (0xbc00u16, 0x3c00u16); // -1, 1
    let n = BoxNodeF16 {
        children: [1, 2, INV, INV].map(NodePointer::from_u32),
        boxes: [
            [0x3c01, lo, lo, 0x4500, hi, hi],
            // min.x = smallest subnormal 2^-24, max = 2^-23: entered at exactly 2^-24.
            [0x0001, lo, lo, 0x0002, hi, hi],
            [0x7e00; 6],
            [0x7e00; 6],
        ],
    };
    let bytes = bytemuck::bytes_of(&n);
    let d = BvhDescriptor {
        box_sort_enable: false,
        ..desc()
    };
    let got = image_bvh_intersect_ray(bytes, &d, 4, &ray_x([0.0; 3], e)).dwords;
    assert_eq!(got, [1, 2, INV, INV]);
    let below = f32::from_bits(e.to_bits() - 1);
    assert_eq!(
        image_bvh_intersect_ray(bytes, &d, 4, &ray_x([0.0; 3], below)).dwords,
        [INV, 2, INV, INV]
    );
    let tiny = 2f32.powi(-24);
    assert_eq!(
        image_bvh_intersect_ray(bytes, &d, 4, &ray_x([0.0; 3], tiny)).dwords,
        [INV, 2, INV, INV]
    );
    let below_tiny = f32::from_bits(tiny.to_bits() - 1);
    assert_eq!(
        image_bvh_intersect_ray(bytes, &d, 4, &ray_x([0.0; 3], below_tiny)).dwords,
        [INV; 4]
    );
}

#[test]
fn fp16_builder_rounding_is_outward() {
    use wavetrace::hw::node::{f16_round_down, f16_round_up};
    // 1.0001 lies between 1 and 1 + 2^-10.
    assert_eq!(f16_round_down(1.0001).to_bits(), 0x3c00);
    assert_eq!(f16_round_up(1.0001).to_bits(), 0x3c01);
    assert_eq!(f16_round_down(-1.0001).to_bits(), 0xbc01);
    assert_eq!(f16_round_up(-1.0001).to_bits(), 0xbc00);
    assert_eq!(f16_round_up(65505.0).to_bits(), 0x7c00);
}

// ---- A16 -------------------------------------------------------------------------------------

#[test]
fn a16_sequential_packing() {
    let h = f16::from_f32;
    let r = RayRegistersA16::pack(
        7.0,
        [1.0, 2.0, 3.0],
        [h(1.0), h(2.0), h(-1.0)],
        [h(1.0), h(0.5), h(-1.0)],
    );
    // {dir.x lo, dir.y hi}, {dir.z lo, inv.x hi}, {inv.y lo, inv.z hi}.
    assert_eq!(r.packed, [0x4000_3c00, 0x3c00_bc00, 0xbc00_3800]);
    let u = r.unpack();
    assert_eq!(u.dir, [1.0, 2.0, -1.0]);
    assert_eq!(u.inv_dir, [1.0, 0.5, -1.0]);
    assert_eq!((u.extent, u.origin), (7.0, [1.0, 2.0, 3.0]));
    // Rounding: 1/1e-5 = 1e5 overflows binary16 to +inf; 0.1 rounds to 0x2e66.
    let f = RayRegistersA16::from_f32(&RayRegisters {
        extent: 1.0,
        origin: [0.0; 3],
        dir: [0.1, 1e-5, 1.0],
        inv_dir: [10.0, 1e5, 1.0],
    });
    assert_eq!(f.dir()[0].to_bits(), 0x2e66);
    assert_eq!(f.unpack().inv_dir[1], INF);
}

#[test]
fn a16_instruction_runs_the_widened_ray() {
    let node = box32(
        [1, 2, 3, 4],
        [slab(-1.0, 1.0), slab(1.0, 2.0), slab(0.1, 0.2), MISS_BOX],
    );
    let full = RayRegisters {
        extent: INF,
        origin: [-5.0, 0.0, 0.0],
        dir: [0.3, 0.0, 0.0],
        inv_dir: [1.0 / 0.3, INF, INF],
    };
    let a16 = RayRegistersA16::from_f32(&full);
    let got = image_bvh_intersect_ray_a16(node.as_slice(), &desc(), 5, &a16);
    let widened = image_bvh_intersect_ray(node.as_slice(), &desc(), 5, &a16.unpack());
    assert_eq!(got, widened);
    assert_eq!(got.dwords, [1, 3, 2, INV]);
}

// ---- triangles -------------------------------------------------------------------------------

/// A node whose triangle k is (p0, p1, p2); the other vertices are far away.
fn node_with_triangle(k: usize, p: [[f32; 3]; 3], word: u32) -> Vec<u8> {
    let mut v = [[100.0, 100.0, 100.0]; 5];
    for (slot, &vi) in TRIANGLE_VERTICES[k].iter().enumerate() {
        v[vi] = p[slot];
    }
    tri_node(v, word)
}

const TRI16: [[f32; 3]; 3] = [[0.0, 0.0, 1.0], [16.0, 0.0, 1.0], [0.0, 16.0, 1.0]];

/// Ray through w0*v0 + w1*v1 + w2*v2 = (5, 3) for weights (8, 5, 3)/16.
fn bary_ray() -> RayRegisters {
    RayRegisters {
        extent: 0.5, // below t = 1: no extent check on triangles
        origin: [5.0, 3.0, 0.0],
        dir: [0.0, 0.0, 1.0],
        inv_dir: [INF, INF, 1.0],
    }
}

#[test]
fn mode1_ij_nibbles_select_the_weights() {
    let weights = [0.5f32, 0.3125, 0.1875];
    let d = mode(TriangleReturnMode::Barycentrics);
    for k in 0..4 {
        for nibble in 0..16u32 {
            let word = 0xa0a0_a0a0 | (nibble << (8 * k));
            let node = node_with_triangle(k, TRI16, word);
            let r = image_bvh_intersect_ray(node.as_slice(), &d, k as u32, &bary_ray()).dwords;
            let [t_num, t_denom, i, j] = r.map(f32::from_bits);
            assert_eq!(t_num / t_denom, 1.0, "k {k}");
            let src = |s: u32| if s == 3 { 0 } else { s as usize };
            assert_eq!(
                i / t_denom,
                weights[src(nibble & 3)],
                "k {k} nibble {nibble}"
            );
            assert_eq!(
                j / t_denom,
                weights[src(nibble >> 2)],
                "k {k} nibble {nibble}"
            );
        }
    }
    // The seed example: nibble 9 -> I = w(v1) = 0.3125, J = w(v2) = 0.1875.
    let node = node_with_triangle(0, TRI16, 9);
    let r = image_bvh_intersect_ray(node.as_slice(), &d, 0, &bary_ray())
        .dwords
        .map(f32::from_bits);
    assert_eq!((r[2] / r[1], r[3] / r[1]), (0.3125, 0.1875));
}

#[test]
fn mode1_numerators_are_edge_functions_times_dz() {
    // Same triangle, direction (0, 0, 2): t = 0.5; U, V, W scale with d.z^2 in the shear and
    // the returned numerators carry one more d.z. Hand values: A' = (-10, -6), B' = (22, -6),
    // C' = (-10, 26) (A = v0 - o = (-5,-3,1), times d.z = 2), U = C'x*B'y - C'y*B'x = 60 - 572
    // = -512, V = A'x*C'y - A'y*C'x = -260 - 60 = -320, W = B'x*A'y - B'y*A'x = -132 - 60 = -192.
    let node = node_with_triangle(0, TRI16, 0x9);
    let ray = RayRegisters {
        dir: [0.0, 0.0, 2.0],
        inv_dir: [INF, INF, 0.5],
        ..bary_ray()
    };
    let r = image_bvh_intersect_ray(
        node.as_slice(),
        &mode(TriangleReturnMode::Barycentrics),
        0,
        &ray,
    )
    .dwords
    .map(f32::from_bits);
    // t_num = U*1 + V*1 + W*1 = -1024, t_denom = (U + V + W) * 2 = -2048, I = V*2, J = W*2.
    assert_eq!(r, [-1024.0, -2048.0, -640.0, -384.0]);
}

#[test]
fn mode0_id_wraps_and_hit_status() {
    let d = mode(TriangleReturnMode::TriangleId);
    for (word, k, id) in [
        (0xffff_fffe, 3usize, 1u32),
        (0xffff_ffff, 1, 0),
        (0x1234_5678, 2, 0x1234_567a),
        (7, 0, 7),
    ] {
        let node = node_with_triangle(k, TRI16, word);
        let r = image_bvh_intersect_ray(node.as_slice(), &d, k as u32, &bary_ray()).dwords;
        assert_eq!((r[2], r[3]), (id, 1), "word {word:#x} k {k}");
        assert_eq!(f32::from_bits(r[0]) / f32::from_bits(r[1]), 1.0);
    }
    // A miss in mode 0 is the plain miss encoding.
    let node = node_with_triangle(0, TRI16, 0xffff_ffff);
    let away = RayRegisters {
        origin: [50.0, 3.0, 0.0],
        ..bary_ray()
    };
    assert_eq!(
        image_bvh_intersect_ray(node.as_slice(), &d, 0, &away).dwords,
        TRI_MISS
    );
}

#[test]
fn t_range_behind_zero_and_facing() {
    let d = mode(TriangleReturnMode::TriangleId);
    let node = node_with_triangle(0, TRI16, 0);
    // Behind the origin: miss.
    let behind = RayRegisters {
        origin: [5.0, 3.0, 2.0],
        ..bary_ray()
    };
    assert_eq!(
        image_bvh_intersect_ray(node.as_slice(), &d, 0, &behind).dwords,
        TRI_MISS
    );
    // Origin on the triangle: t = 0 hits. U, V, W < 0 here, so t_num = U*0 + V*0 + W*0 = -0;
    // t_denom is returned as 1.0.
    let on = RayRegisters {
        origin: [5.0, 3.0, 1.0],
        ..bary_ray()
    };
    let r = image_bvh_intersect_ray(node.as_slice(), &d, 0, &on).dwords;
    assert_eq!(r, [0x8000_0000, 0x3f80_0000, 0, 1]);
    // Facing: d . ((v1 - v0) x (v2 - v0)) = (0,0,1) . (0,0,256) > 0, so t_denom < 0; the
    // reverse direction from the other side gives t_denom > 0.
    let r = image_bvh_intersect_ray(node.as_slice(), &d, 0, &bary_ray())
        .dwords
        .map(f32::from_bits);
    assert!(r[1] < 0.0);
    let back = RayRegisters {
        origin: [5.0, 3.0, 2.0],
        dir: [0.0, 0.0, -1.0],
        inv_dir: [INF, INF, -1.0],
        ..bary_ray()
    };
    let r = image_bvh_intersect_ray(node.as_slice(), &d, 0, &back)
        .dwords
        .map(f32::from_bits);
    assert!(r[1] > 0.0 && r[0] / r[1] == 1.0);
}

#[test]
fn degenerate_and_nan_triangles_miss() {
    let d = mode(TriangleReturnMode::TriangleId);
    let nan = f32::NAN;
    for tri in [
        [[0.0, 0.0, 1.0], [16.0, 0.0, 1.0], [32.0, 0.0, 1.0]], // collinear
        [[5.0, 3.0, 1.0]; 3],                                  // point
        [[nan, 0.0, 1.0], [16.0, 0.0, 1.0], [0.0, 16.0, 1.0]], // v0.x = NaN deactivation
    ] {
        let node = node_with_triangle(0, tri, 0);
        assert_eq!(
            image_bvh_intersect_ray(node.as_slice(), &d, 0, &bary_ray()).dwords,
            TRI_MISS,
            "{tri:?}"
        );
    }
    // Ray in the triangle's plane.
    let node = node_with_triangle(0, TRI16, 0);
    let in_plane = RayRegisters {
        origin: [-5.0, 3.0, 1.0],
        dir: [1.0, 0.0, 0.0],
        inv_dir: [1.0, INF, INF],
        ..bary_ray()
    };
    assert_eq!(
        image_bvh_intersect_ray(node.as_slice(), &d, 0, &in_plane).dwords,
        TRI_MISS
    );
    // NaN in an unused vertex does not matter.
    let mut v = [[nan; 3]; 5];
    v[0] = TRI16[0];
    v[1] = TRI16[1];
    v[2] = TRI16[2];
    let node = tri_node(v, 0);
    assert_eq!(
        image_bvh_intersect_ray(node.as_slice(), &d, 0, &bary_ray()).dwords[3],
        1
    );
}

#[test]
fn shared_edge_of_two_triangles_hits_once() {
    // Quad (0,0)-(16,0)-(16,16)-(0,16) at z = 1 split along the diagonal; triangles 0 and 1
    // of one node share the edge V1-V2. A ray through (8, 8) on the diagonal hits exactly one.
    let v = [
        [0.0, 0.0, 1.0],
        [16.0, 0.0, 1.0],
        [0.0, 16.0, 1.0],
        [16.0, 16.0, 1.0],
        [0.0; 3],
    ];
    let node = tri_node(v, 0);
    let d = mode(TriangleReturnMode::TriangleId);
    for dz in [1.0f32, -1.0] {
        let ray = RayRegisters {
            extent: INF,
            origin: [8.0, 8.0, 1.0 - 2.0 * dz],
            dir: [0.0, 0.0, dz],
            inv_dir: [INF, INF, 1.0 / dz],
        };
        let hits: u32 = (0..2)
            .map(|k| image_bvh_intersect_ray(node.as_slice(), &d, k, &ray).dwords[3])
            .sum();
        assert_eq!(hits, 1, "dz {dz}");
    }
}
