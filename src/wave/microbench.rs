//! A microbenchmark of this machine's emulated instruction rate: full waves of box queries
//! and of triangle queries issued through [`WaveIntersector`] against synthetic nodes, on
//! one thread, for a fixed wall-clock budget.

use super::instruction::WaveIntersector;
use super::intersect::{BvhMemory, LaneRay};
use super::lanes::{Wave, WaveResults};
use crate::hw::descriptor::{BvhDescriptor, TriangleReturnMode};
use crate::hw::node::{BoxNodeF32, TriangleNode};
use crate::hw::pointer::{NodePointer, NodeType};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Measured emulation rates (one thread).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct InstructionRate {
    /// Lane box queries per second (four AABB tests each).
    pub box_queries_per_second: f64,
    /// AABB tests per second.
    pub box_tests_per_second: f64,
    /// Lane triangle tests per second.
    pub triangle_tests_per_second: f64,
    /// Wave width used.
    pub wave_lanes: usize,
}

fn memory() -> Vec<u8> {
    let tri = NodePointer::new(2, NodeType::Triangle0);
    let node = BoxNodeF32 {
        children: [
            tri,
            tri.with_type(NodeType::Triangle1),
            tri,
            NodePointer::INVALID,
        ],
        boxes: [
            [-1.0, -1.0, 1.0, 1.0, 1.0, 2.0],
            [-2.0, -0.5, 3.0, 0.5, 2.0, 4.0],
            [0.0, 0.0, 0.5, 4.0, 4.0, 5.0],
            [f32::NAN; 6],
        ],
        user: [0; 4],
    };
    let t = TriangleNode {
        vertices: [
            [-1.0, -1.0, 3.0],
            [1.0, -1.0, 3.0],
            [-1.0, 1.0, 3.0],
            [1.0, 1.0, 3.5],
            [0.0, 2.0, 3.0],
        ],
        word: 0x0909_0909,
    };
    let mut mem = bytemuck::bytes_of(&node).to_vec();
    mem.extend_from_slice(bytemuck::bytes_of(&t));
    mem
}

fn wave(node: NodePointer) -> Wave<64> {
    let mut w: Wave<64> = Wave::new(0);
    for i in 0..64 {
        let x = (i % 8) as f32 * 0.25 - 1.0;
        let y = (i / 8) as f32 * 0.25 - 1.0;
        let dir = [0.01 * x, 0.02 * y, 1.0];
        w.activate(
            i,
            node,
            LaneRay {
                extent: f32::INFINITY,
                origin: [x, y, 0.0],
                dir,
                inv_dir: dir.map(|d| 1.0 / d),
            },
        );
    }
    w
}

fn rate(intersector: &WaveIntersector, wave: &Wave<64>, budget: Duration) -> f64 {
    let mut out = WaveResults::<64>::default();
    let mut lanes = 0u64;
    let start = Instant::now();
    let mut sink = 0u32;
    loop {
        for _ in 0..64 {
            let cost = intersector.issue(std::hint::black_box(wave), &mut out);
            lanes += cost.clocks();
            sink ^= out.dwords[7][0];
        }
        if start.elapsed() >= budget {
            break;
        }
    }
    std::hint::black_box(sink);
    lanes as f64 / start.elapsed().as_secs_f64()
}

/// Runs the microbenchmark for about `budget` per instruction kind.
pub fn measure(budget: Duration) -> InstructionRate {
    let mem = memory();
    let descriptor = BvhDescriptor {
        triangle_return_mode: TriangleReturnMode::Barycentrics,
        ..BvhDescriptor::default()
    };
    let intersector = WaveIntersector::new(BvhMemory { bytes: &mem, va: 0 }, descriptor, None);
    let boxes = rate(
        &intersector,
        &wave(NodePointer::new(0, NodeType::BoxF32)),
        budget,
    );
    let tris = rate(
        &intersector,
        &wave(NodePointer::new(2, NodeType::Triangle0)),
        budget,
    );
    InstructionRate {
        box_queries_per_second: boxes,
        box_tests_per_second: 4.0 * boxes,
        triangle_tests_per_second: tris,
        wave_lanes: 64,
    }
}
