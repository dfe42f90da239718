//! BVH build benchmark: bunny, sponza and dragon (`../shared/data/scenes`). Prints, per mesh,
//! the build and encode time, SAH cost and bytes per triangle for the default options, FP16
//! boxes with 4 triangles per node, leaf chains, spatial splits and the optimized tree,
//! validates each image once, then lets criterion time the build (binned SAH, no splits) on
//! one thread and on two.

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::Path;
use std::time::Duration;
use wavetrace::bvh::{self, BoxFormat, BuildOptions, Mesh};

/// The allocator the `wavetrace` binary runs with, so that the figures are the CLI's.
#[global_allocator]
static ALLOCATOR: wavetrace::host::HugePageAllocator = wavetrace::host::HugePageAllocator;

const SCENES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/scenes");

fn load(name: &str) -> Mesh {
    Mesh::load_obj(&Path::new(SCENES).join(format!("{name}.obj.gz"))).expect("scene mesh")
}

fn report(name: &str, mesh: &Mesh, label: &str, options: &BuildOptions, threads: usize) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let built = pool.install(|| bvh::build(mesh, options)).unwrap();
    let errors = bvh::validate(&built.image, mesh);
    assert!(errors.is_empty(), "{name} {label}: {}", errors[0]);
    let m = &built.metrics;
    println!(
        "{name:>7} {label:<14} threads {threads}: build {:.3} s, encode {:.3} s, SAH {:.2}, {:.2} bytes/tri, {:.2} tris/tri-node, fill {:.3}, depth {}",
        built.build_seconds,
        built.encode_seconds,
        m.sah_cost,
        m.bytes_per_triangle,
        m.triangles_per_triangle_node(),
        m.fill_rate,
        m.max_depth
    );
}

fn bench(c: &mut Criterion) {
    let compact = BuildOptions {
        box_format: BoxFormat::Fp16,
        triangles_per_node: 4,
        ..BuildOptions::default()
    };
    for name in ["bunny", "sponza", "dragon"] {
        let mesh = load(name);
        println!("{name}: {} triangles", mesh.len());
        report(name, &mesh, "default", &BuildOptions::default(), 1);
        report(
            name,
            &mesh,
            "fp32 1/node",
            &BuildOptions {
                box_format: BoxFormat::Fp32,
                triangles_per_node: 1,
                ..BuildOptions::default()
            },
            1,
        );
        report(name, &mesh, "fp16 4/node", &compact, 1);
        report(name, &mesh, "fp16 4/node", &compact, 2);
        let chains = BuildOptions {
            leaf_chains: true,
            ..compact
        };
        report(name, &mesh, "fp16 4 chains", &chains, 1);
        report(
            name,
            &mesh,
            "splits",
            &BuildOptions {
                spatial_splits: true,
                ..BuildOptions::default()
            },
            2,
        );
        report(
            name,
            &mesh,
            "optimize",
            &BuildOptions {
                optimize: true,
                ..BuildOptions::default()
            },
            1,
        );
        let mut group = c.benchmark_group(format!("build_{name}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(if name == "dragon" { 20 } else { 5 }));
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            group.bench_function(format!("threads_{threads}"), |b| {
                b.iter(|| pool.install(|| bvh::build(&mesh, &compact).unwrap().metrics.bytes))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
