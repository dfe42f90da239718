//! Throughput of the scalar reference instruction per node type, on seeded random rays
//! against fixed nodes. Verifies the result mix (some hits, some misses) before timing.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use wavetrace::hw::{
    image_bvh_intersect_ray, BoxNodeF16, BoxNodeF32, BvhDescriptor, NodePointer, RayRegisters,
    TriangleNode,
};

fn rays(n: usize) -> Vec<RayRegisters> {
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut unit = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    (0..n)
        .map(|_| {
            let origin = [unit() * 4.0, unit() * 4.0, -5.0];
            let dir = [unit() * 0.5, unit() * 0.5, 1.0];
            RayRegisters {
                extent: f32::INFINITY,
                origin,
                dir,
                inv_dir: dir.map(|d| 1.0 / d),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let rays = rays(4096);
    let d = BvhDescriptor::default();
    let b32 = BoxNodeF32 {
        children: [0x10, 0x21, 0x32, 0x43].map(NodePointer::from_u32),
        boxes: [
            [-2.0, -2.0, -1.0, 0.0, 0.0, 1.0],
            [0.0, -2.0, -1.0, 2.0, 0.0, 1.0],
            [-2.0, 0.0, -1.0, 0.0, 2.0, 1.0],
            [0.0, 0.0, 0.5, 2.0, 2.0, 1.5],
        ],
        user: [0; 4],
    };
    let h = |x: f32| half::f16::from_f32(x).to_bits();
    let b16 = BoxNodeF16 {
        children: b32.children,
        boxes: b32.boxes.map(|b| b.map(h)),
    };
    let tri = TriangleNode {
        vertices: [
            [-3.0, -3.0, 1.0],
            [3.0, -3.0, 1.0],
            [-3.0, 3.0, 1.0],
            [3.0, 3.0, 1.0],
            [0.0, 4.0, 2.0],
        ],
        word: 0x0901_0409,
    };
    let nodes: [(&str, &[u8], u32); 3] = [
        ("box32", bytemuck::bytes_of(&b32), 5),
        ("box16", bytemuck::bytes_of(&b16), 4),
        ("tri0", bytemuck::bytes_of(&tri), 0),
    ];
    let mut g = c.benchmark_group("image_bvh_intersect_ray");
    g.throughput(Throughput::Elements(rays.len() as u64));
    for (name, bytes, ptr) in nodes {
        // Verify first: the ray set must produce both hits and misses.
        let results: Vec<_> = rays
            .iter()
            .map(|r| image_bvh_intersect_ray(bytes, &d, ptr, r).dwords)
            .collect();
        let misses = results
            .iter()
            .filter(|w| **w == [u32::MAX; 4] || w[0] == 0x7f80_0000)
            .count();
        assert!(misses > 0 && misses < rays.len(), "{name}: {misses} misses");
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut acc = 0u32;
                for r in &rays {
                    acc ^= image_bvh_intersect_ray(black_box(bytes), &d, ptr, r).dwords[0];
                }
                acc
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
