//! What the memory model costs the host: the shared ray files traced on one thread without
//! it, and with it (the wave loop recording every node fetch, then the model running the
//! recorded dispatch), alternating in the same rounds. Prints each set's median rays per
//! second both ways, their ratio, and how the time with the model splits between the
//! recording trace and the model.
//!
//! `cargo bench --bench memory`

use std::time::Instant;
use wavetrace::bvh::{self, BuildOptions, Mesh};
use wavetrace::counters::Counters;
use wavetrace::math::HitRecord;
use wavetrace::memory::{Machine, MemoryModel};
use wavetrace::traverse::rayfile::read_rays;
use wavetrace::traverse::{WaveTracer, WaveTracerConfig};
use wavetrace::wave::Tracer;

const ROUNDS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let dir = std::path::Path::new("../shared/data/scenes");
    let machine = Machine::built_in("series-x").expect("built in");
    println!("host CPU: {}", wavetrace::host::cpu_name());
    for (mesh, sets) in [
        ("bunny.obj.gz", ["bunny_primary.rays", "bunny_diffuse.rays"]),
        (
            "sponza.obj.gz",
            ["sponza_primary.rays", "sponza_diffuse.rays"],
        ),
    ] {
        let mesh = Mesh::load_obj(&dir.join(mesh)).expect("shared mesh");
        let built = bvh::build(&mesh, &BuildOptions::default()).expect("builds");
        let config = WaveTracerConfig {
            parallel: false,
            ..WaveTracerConfig::default()
        };
        let tracer = WaveTracer::new(&built.image, &mesh, config);
        for set in sets {
            let rays = read_rays(&dir.join(set)).expect("shared rays");
            let mut hits = vec![HitRecord::MISS; rays.len()];
            let (mut plain, mut with, mut record, mut model_only) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                let mut counters = Counters::default();
                let start = Instant::now();
                tracer.closest_hit_records(&rays, &mut hits, &mut counters);
                plain.push(start.elapsed().as_secs_f64());

                let mut counters = Counters::recording_fetches();
                let start = Instant::now();
                tracer.closest_hit_records(&rays, &mut hits, &mut counters);
                let traced = start.elapsed().as_secs_f64();
                let mut model = MemoryModel::new(&machine);
                for d in counters.fetches.take() {
                    model.run(&d, None);
                }
                std::hint::black_box(model.finish());
                let total = start.elapsed().as_secs_f64();
                with.push(total);
                record.push(traced);
                model_only.push(total - traced);
            }
            let n = rays.len() as f64;
            let (plain, with) = (median(plain), median(with));
            println!(
                "{set}: {:.3} Mrays/s without, {:.3} with the memory model: {:.2}x \
                 (recording trace {:.1} ms, model {:.1} ms, plain trace {:.1} ms)",
                n / plain / 1e6,
                n / with / 1e6,
                plain / with,
                median(record) * 1e3,
                median(model_only) * 1e3,
                plain * 1e3
            );
        }
    }
}
