//! The vector kernels of the wave model against the one-lane box query and the scalar
//! reference instruction, on seeded random nodes and rays: the AVX2 box kernels (two lanes,
//! eight lanes at one node, eight lanes at eight nodes) and the triangle tests (the batch of
//! up to eight lanes, eight lanes at one triangle). Each test is skipped, with a note, on a
//! CPU without AVX2 (the portable kernels are checked by `tests/wave_simd.rs` and the unit
//! tests).
#![cfg(target_arch = "x86_64")]

use bytemuck::Zeroable;
use glam::Vec3;
use wavetrace::hw::box_test::grow_factor;
use wavetrace::hw::descriptor::TriangleReturnMode;
use wavetrace::hw::instruction::LaneOutcome;
use wavetrace::hw::{
    image_bvh_intersect_ray, BoxNodeF32, BvhDescriptor, NodePointer, NodeType, TriangleNode,
    TRIANGLE_MISS,
};
use wavetrace::math::Ray;
use wavetrace::traverse::lane_ray;
use wavetrace::wave::intersect::{
    box_query, BoxResult, DecodedBox, LaneRay, RayColumns, TriangleBatch, TriangleRay, BATCH_LANES,
};
use wavetrace::wave::Avx2;

/// Seeded xorshift64 generator.
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// The AVX2 token, or a note that the test is skipped.
fn avx2_or_skip() -> Option<Avx2> {
    let avx2 = Avx2::detect();
    if avx2.is_none() {
        eprintln!("skipped: this CPU has no AVX2");
    }
    avx2
}

/// The descriptor of test case `case`: triangle ids every third case, else barycentrics.
fn descriptor_of_case(case: u32) -> BvhDescriptor {
    let triangle_return_mode = if case.is_multiple_of(3) {
        TriangleReturnMode::TriangleId
    } else {
        TriangleReturnMode::Barycentrics
    };
    BvhDescriptor {
        triangle_return_mode,
        ..BvhDescriptor::default()
    }
}

/// A ray of extent 10 with direction, then origin, drawn from `unit`, and the inverse
/// direction a driver computes.
fn random_ray(unit: &mut impl FnMut() -> f32) -> LaneRay {
    let dir = Vec3::new(unit(), unit(), unit());
    let origin = Vec3::new(unit(), unit(), unit());
    lane_ray(&Ray::new(origin, dir, 0.0, 10.0))
}

/// `n` random lanes for the multi-lane box tests: FP32 nodes on a coarse grid (ties, equal
/// planes), some inverted or NaN bounds and invalid slots; rays with zero direction
/// components (NaN products), signed zeros and two extents.
fn random_box_lanes(next: &mut impl FnMut() -> u64, n: usize) -> Vec<(DecodedBox, LaneRay)> {
    let value = |r: u64| -> f32 {
        match r % 128 {
            0 => 0.0,
            1 => -0.0,
            2 => f32::NAN,
            3 => 1.0,
            _ => ((r >> 8) % 4096) as f32 / 1024.0 - 2.0,
        }
    };
    (0..n)
        .map(|_| {
            let mut node = BoxNodeF32::zeroed();
            for c in 0..4 {
                node.children[c] = if next().is_multiple_of(5) {
                    NodePointer::INVALID
                } else {
                    NodePointer::from_u32(0x100 + c as u32)
                };
                for a in 0..3 {
                    let (p, q) = (value(next()), value(next()));
                    let (lo, hi) = if next().is_multiple_of(64) {
                        (p.max(q), p.min(q))
                    } else {
                        (p.min(q), p.max(q))
                    };
                    node.boxes[c][a] = lo;
                    node.boxes[c][3 + a] = hi;
                }
            }
            let dir = [0; 3].map(|_| {
                if next().is_multiple_of(8) {
                    0.0
                } else {
                    value(next() | 4)
                }
            });
            let ray = LaneRay {
                extent: if next().is_multiple_of(4) { 0.5 } else { 100.0 },
                origin: [0; 3].map(|_| value(next() & !3)),
                dir,
                inv_dir: dir.map(|d| 1.0 / d),
            };
            (DecodedBox::from_box32(&node), ray)
        })
        .collect()
}

/// The one-lane box query's result.
fn one_lane(node: &DecodedBox, ray: &LaneRay, grow: f32, sort: bool) -> BoxResult {
    let mut r = BoxResult::default();
    r.valid = box_query(node, ray, grow, sort, &mut r.children);
    r
}

/// Every inverse-direction component finite and not zero: the lanes the AVX2 box tests
/// take without their NaN probe.
fn slopes_ok(r: &LaneRay) -> bool {
    r.inv_dir.iter().all(|x| x.is_finite() && *x != 0.0)
}

/// Of the results `out` (all default before the test), only lanes `first..first + 8` were
/// written.
fn assert_only_eight_written(out: &[BoxResult], first: usize, case: u32) {
    let untouched = out
        .iter()
        .enumerate()
        .filter(|(i, _)| !(first..first + 8).contains(i));
    assert!(
        untouched
            .into_iter()
            .all(|(_, o)| *o == BoxResult::default()),
        "case {case}"
    );
}

/// The two-lane AVX2 box test against the one-lane box query, on random nodes and rays with
/// ordered, inverted and NaN bounds, invalid slots, zero direction components (infinite
/// inverse) and zero origins: whenever it answers, both lanes' dwords and masks are the
/// one-lane query's; it answers for the common case and declines the rest.
#[test]
fn box_query_pair_matches_box_query() {
    let Some(avx2) = avx2_or_skip() else { return };
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15_u64);
    let (mut answered, mut total, mut unprobed) = (0, 0, 0);
    for case in 0..40_000u32 {
        let lanes = random_box_lanes(&mut next, 2);
        let both_ordered = lanes[0].0.ordered & lanes[1].0.ordered == 1;
        let finite = slopes_ok(&lanes[0].1) && slopes_ok(&lanes[1].1);
        // The NaN probe is skipped only where the caller may skip it.
        for finite_slopes in [false, true].into_iter().filter(|&f| !f || finite) {
            for sort in [false, true] {
                let grow = if case % 2 == 0 { 1.0 } else { grow_factor(3) };
                let (mut a, mut b) = ([NodePointer::INVALID; 4], [NodePointer::INVALID; 4]);
                let pair = avx2.box_query_pair(
                    [&lanes[0].0, &lanes[1].0],
                    [&lanes[0].1, &lanes[1].1],
                    grow,
                    sort,
                    finite_slopes,
                    [&mut a, &mut b],
                );
                total += 1;
                // Without the probe, ordered nodes are always answered.
                assert!(
                    pair.is_some() || !(finite_slopes && both_ordered),
                    "case {case}: declined a pair with finite slopes and ordered nodes"
                );
                let Some([va, vb]) = pair else { continue };
                answered += 1;
                unprobed += finite_slopes as u32;
                let got = [(a, va), (b, vb)];
                for (lane, ((node, ray), (children, valid))) in lanes.iter().zip(got).enumerate() {
                    let expect = one_lane(node, ray, grow, sort);
                    assert_eq!(
                        BoxResult { children, valid },
                        expect,
                        "case {case} lane {lane} sort {sort}"
                    );
                }
            }
        }
    }
    // The common case is answered, the rest is declined; both forms ran.
    assert!(
        answered > total / 4 && answered < total && unprobed > total / 8,
        "{answered} of {total} ({unprobed} without the probe)"
    );
}

/// The eight-lane test against the one-lane box query (sorting on), on seeded random nodes
/// and rays (ties, zeros and infinities among the products), where the loop uses it:
/// ordered nodes, finite slopes. The eight lanes sit at every block of a 64-lane wave. Its
/// verdict that all eight got the same children is checked against the eight results, on
/// groups of eight different rays, of one ray eight times, and of one ray seven times with
/// another.
#[test]
fn box_query_eight_matches_box_query() {
    let Some(avx2) = avx2_or_skip() else { return };
    let mut next = xorshift(0x6A09_E667_F3BC_C908_u64);
    let (mut groups, mut counts, mut uniform_groups) = (0u32, [0u32; 5], [0u32; 2]);
    let mut columns = RayColumns::default();
    for case in 0..20_000u32 {
        let lanes = random_box_lanes(&mut next, 24);
        let node = &lanes[0].0;
        let usable: Vec<LaneRay> = lanes[1..].iter().map(|l| l.1).filter(slopes_ok).collect();
        if node.ordered != 1 || usable.len() < 8 {
            continue;
        }
        let first = 8 * (case as usize % 8);
        // Eight rays; one ray eight times; one ray, and another in one lane.
        let odd = (case as usize / 3) % 8;
        let source = |k: usize| match case % 3 {
            0 => k,
            1 => 0,
            _ => (k == odd) as usize,
        };
        for k in 0..8 {
            columns.set(first + k, &usable[source(k)]);
        }
        let grow = if case % 2 == 0 { 1.0 } else { grow_factor(3) };
        let mut out = vec![BoxResult::default(); RayColumns::LANES];
        let uniform = avx2.box_query_eight(node, &columns, first, grow, &mut out);
        let mut expected = Vec::new();
        for k in 0..8 {
            let expect = one_lane(node, &usable[source(k)], grow, true);
            assert_eq!(out[first + k], expect, "case {case} lane {k}");
            counts[expect.valid.count_ones() as usize] += 1;
            expected.push(expect);
        }
        let same = expected.iter().all(|e| *e == expected[0]);
        assert_eq!(uniform, same, "case {case}");
        uniform_groups[same as usize] += 1;
        assert_only_eight_written(&out, first, case);
        groups += 1;
    }
    // Many groups ran, with every number of children, and both verdicts.
    assert!(
        groups > 2_000 && counts.iter().all(|&c| c > 20),
        "{groups} {counts:?}"
    );
    assert!(
        uniform_groups.iter().all(|&n| n > 500),
        "{uniform_groups:?}"
    );
}

/// Eight lanes at eight nodes (some repeated), each with its own ray or one ray for all,
/// against the one-lane box query lane by lane; each node's child pointers are its own, so
/// a result read from another lane's node or another child's slot shows.
#[test]
fn box_query_eight_nodes_matches_box_query() {
    let Some(avx2) = avx2_or_skip() else { return };
    let mut next = xorshift(0x3C6E_F372_FE94_F82B_u64);
    let (mut groups, mut counts) = (0u32, [0u32; 5]);
    let mut columns = RayColumns::default();
    for case in 0..20_000u32 {
        let lanes = random_box_lanes(&mut next, 32);
        let mut nodes: Vec<DecodedBox> = lanes
            .iter()
            .map(|l| l.0)
            .filter(|n| n.ordered == 1)
            .take(8)
            .collect();
        let usable: Vec<LaneRay> = lanes.iter().map(|l| l.1).filter(slopes_ok).collect();
        if nodes.len() < 8 || usable.len() < 8 {
            continue;
        }
        for (k, node) in nodes.iter_mut().enumerate() {
            for c in node.children.iter_mut().filter(|c| !c.is_invalid()) {
                *c = NodePointer::from_u32(c.to_u32() + 0x1000 * (k as u32 + 1));
            }
        }
        // Every third case, lanes 5-7 ask for lane 1's node.
        if case % 3 == 2 {
            for k in 5..8 {
                nodes[k] = nodes[1];
            }
        }
        let first = 8 * (case as usize % 8);
        // Eight rays, or one ray eight times.
        let source = |k: usize| if case % 4 == 1 { 0 } else { k };
        for k in 0..8 {
            columns.set(first + k, &usable[source(k)]);
        }
        let grow = if case % 2 == 0 { 1.0 } else { grow_factor(3) };
        let mut out = vec![BoxResult::default(); RayColumns::LANES];
        let refs: [&DecodedBox; 8] = std::array::from_fn(|k| &nodes[k]);
        avx2.box_query_eight_nodes(&refs, &columns, first, grow, &mut out);
        for k in 0..8 {
            let expect = one_lane(&nodes[k], &usable[source(k)], grow, true);
            assert_eq!(out[first + k], expect, "case {case} lane {k}");
            counts[expect.valid.count_ones() as usize] += 1;
        }
        assert_only_eight_written(&out, first, case);
        groups += 1;
    }
    assert!(
        groups > 2_000 && counts.iter().all(|&c| c > 20),
        "{groups} {counts:?}"
    );
}

/// Seeded values for triangle tests: mostly small integers (exact zeros on edges and at
/// vertices), some halves and quarters, the rest uniform in [-4, 4).
fn grid_values(seed: u64) -> impl FnMut() -> f32 {
    let mut next = xorshift(seed);
    move || {
        let r = next();
        match r % 16 {
            0..=5 => (r >> 8) as f32 % 7.0 - 3.0,
            6 => 0.5,
            7 => -0.25,
            _ => (r >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0,
        }
    }
}

/// A triangle node: its 15 vertex components from `value`, one in `nan_one_in` NaN and as
/// often a repeat of the component before (shared or degenerate vertices), and a word whose
/// top four bits come from `case`.
fn random_triangle_node(
    value: &mut impl FnMut() -> f32,
    nan_one_in: u32,
    case: u32,
) -> TriangleNode {
    let mut words = [0f32; 15];
    for w in 0..15 {
        words[w] = match value().to_bits() % nan_one_in {
            0 => f32::NAN,
            1 if w > 0 => words[w - 1],
            _ => value(),
        };
    }
    TriangleNode {
        vertices: std::array::from_fn(|v| [words[3 * v], words[3 * v + 1], words[3 * v + 2]]),
        word: (value().to_bits() & 0x0fff_ffff) | (case << 28),
    }
}

/// Where a test ray aims, by `choice`: the triangle's centroid (0, 1), its first vertex
/// exactly (2), or nowhere in particular (3).
fn aim(ray: &mut LaneRay, [a, b, c]: [[f32; 3]; 3], choice: usize) {
    let target: Option<[f32; 3]> = match choice % 4 {
        0 | 1 => Some(std::array::from_fn(|x| (a[x] + b[x] + c[x]) / 3.0)),
        2 => Some(a),
        _ => None,
    };
    if let Some(target) = target {
        ray.dir = std::array::from_fn(|x| target[x] - ray.origin[x]);
    }
}

/// The eight-lane triangle batch against the scalar reference instruction, lane by lane,
/// in both return modes, on batches of 1 to 8 seeded random lanes: vertices on a small
/// integer grid (exact zeros on edges and at vertices, edge-on and degenerate triangles),
/// random and repeated vertices, NaN vertices, and rays with zero direction components.
/// Rows past the batch's length hold stale lanes, as in the wave loop.
#[test]
fn triangle_batch_of_eight_matches_the_scalar_reference() {
    let Some(avx2) = avx2_or_skip() else { return };
    let mut value = grid_values(0x5EED_0008);
    // Eight triangle nodes, lane j's at 64-byte block j.
    let mut nodes = [TriangleNode::zeroed(); 8];
    let (mut lanes, mut hits, mut misses) = (0u64, 0u64, 0u64);
    let mut batch = TriangleBatch::default();
    for case in 0..50_000u32 {
        let len = 1 + case as usize % BATCH_LANES;
        let descriptor = descriptor_of_case(case);
        let mode = descriptor.triangle_return_mode;
        let mut lane = [(NodePointer::INVALID, random_ray(&mut value)); BATCH_LANES];
        batch.clear();
        for (j, (pointer, ray)) in lane.iter_mut().enumerate().take(len) {
            nodes[j] = random_triangle_node(&mut value, 23, case);
            // Every triangle index at every lane.
            let k = (case as usize / 8 + j) % 4;
            *pointer = NodePointer::new(j as u64, NodeType::triangle(k));
            *ray = random_ray(&mut value);
            // Most rays aim at the triangle: at its centroid, or exactly at a vertex.
            aim(ray, nodes[j].triangle(k), case as usize);
            if case % 5 == 0 {
                ray.dir[case as usize % 3] = 0.0;
            }
            ray.inv_dir = ray.dir.map(|d| 1.0 / d);
            batch.push_prepared_avx2(avx2, &nodes[j], k, &TriangleRay::new(ray));
        }
        // (Called from code not compiled for AVX2, the intrinsics are calls: the same
        // results.)
        let got = batch.run_avx2(avx2, mode);
        let memory: &[u8] = bytemuck::cast_slice(&nodes);
        for (j, (pointer, ray)) in lane.iter().enumerate().take(len) {
            let expect = image_bvh_intersect_ray(memory, &descriptor, pointer.to_u32(), ray);
            if expect.outcome != LaneOutcome::Tested {
                continue;
            }
            assert_eq!(got[j], expect.dwords, "case {case} lane {j} ray {ray:?}");
            lanes += 1;
            if expect.dwords == TRIANGLE_MISS {
                misses += 1;
            } else {
                hits += 1;
            }
        }
    }
    // Most lanes were tested, with hits and misses in quantity.
    assert!(
        lanes > 150_000 && hits > 20_000 && misses > 20_000,
        "{lanes} {hits} {misses}"
    );
}

/// The eight-lane test of one triangle against the scalar reference instruction, lane by
/// lane, in both return modes, for every triangle index, at every block of a 64-lane wave:
/// vertices on a small integer grid (exact zeros on edges and at vertices, edge-on and
/// degenerate triangles), repeated and NaN vertex words; rays mostly aimed at the triangle
/// (its centroid or a vertex), each lane's dominant axis its own (ties among them), some
/// direction components zero, and blocks of one ray eight times.
#[test]
fn triangle_query_eight_matches_the_scalar_reference() {
    let Some(avx2) = avx2_or_skip() else { return };
    let mut value = grid_values(0x510E_527F_ADE6_82D1_u64);
    let mut columns = RayColumns::default();
    let (mut hits, mut misses, mut axes) = (0u64, 0u64, [0u64; 3]);
    for case in 0..20_000u32 {
        let descriptor = descriptor_of_case(case);
        let mode = descriptor.triangle_return_mode;
        let node = random_triangle_node(&mut value, 29, case);
        let k = case as usize / 3 % 4;
        let triangle = node.triangle(k);
        let first = 8 * (case as usize % 8);
        let mut rays = [random_ray(&mut value); 8];
        for (j, ray) in rays.iter_mut().enumerate() {
            if case % 4 == 3 && j > 0 {
                // One ray eight times, as a block that shares a stack.
                continue;
            }
            *ray = random_ray(&mut value);
            aim(ray, triangle, case as usize + j);
            match (case as usize + 3 * j) % 7 {
                0 => ray.dir[j % 3] = 0.0,
                // Tied magnitudes: the tie rule picks the axis.
                1 => ray.dir[(j + 1) % 3] = -ray.dir[j % 3],
                _ => {}
            }
            ray.inv_dir = ray.dir.map(|d| 1.0 / d);
        }
        if case % 4 == 3 {
            rays = [rays[0]; 8];
        }
        for (j, ray) in rays.iter().enumerate() {
            columns.set(first + j, ray);
        }
        let got = avx2.triangle_query_eight(&node, k, &columns, first, mode);
        let memory = bytemuck::bytes_of(&node);
        for (j, ray) in rays.iter().enumerate() {
            if ray.dir.iter().all(|&d| d == 0.0) || ray.dir.iter().any(|d| d.is_nan()) {
                continue;
            }
            let expect = image_bvh_intersect_ray(memory, &descriptor, k as u32, ray);
            assert_eq!(expect.outcome, LaneOutcome::Tested, "case {case} lane {j}");
            assert_eq!(got[j], expect.dwords, "case {case} lane {j} ray {ray:?}");
            axes[TriangleRay::new(ray).rotation[2] as usize] += 1;
            if expect.dwords == TRIANGLE_MISS {
                misses += 1;
            } else {
                hits += 1;
            }
        }
    }
    // Hits and misses in quantity, and every dominant axis.
    assert!(
        hits > 20_000 && misses > 50_000 && axes.iter().all(|&n| n > 20_000),
        "{hits} {misses} {axes:?}"
    );
}
