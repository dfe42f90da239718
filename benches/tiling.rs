//! Swizzle throughput for a 4096x4096 RGBA8 texture with its full mip chain, against a plain
//! memcpy of the same bytes measured in the same run.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::time::Instant;
use wavetrace::tiling::{Console, Format, Layout, SurfaceDesc, SwizzleMode};

fn bench(c: &mut Criterion) {
    let (w, h) = (4096, 4096);
    let mips = SurfaceDesc::full_mip_count(w, h, 1);
    let mut group = c.benchmark_group("tiling_4096_rgba8_full_mips");
    group.sample_size(10);
    let mut report = Vec::new();
    for name in ["4KB_S", "64KB_R_X", "LINEAR"] {
        let mode = SwizzleMode::from_name(name).unwrap();
        let desc = SurfaceDesc::new_2d(Format::RGBA8, w, h, 1, mips, mode);
        let layout = Layout::new(&desc, Console::SeriesX).unwrap();
        let n = layout.linear_size() as usize;
        let linear: Vec<u8> = (0..n).map(|i| (i * 31 + i / 4099) as u8).collect();
        let mut tiled = vec![0u8; layout.total_size as usize];
        let mut copy = vec![0u8; n];
        // Verify once: the swizzle must round-trip.
        layout.swizzle_into(&linear, &mut tiled).unwrap();
        assert!(
            layout.unswizzle(&tiled).unwrap() == linear,
            "{name}: round trip"
        );

        group.throughput(Throughput::Bytes(n as u64));
        group.bench_function(format!("swizzle_{name}"), |b| {
            b.iter(|| layout.swizzle_into(black_box(&linear), &mut tiled).unwrap())
        });
        group.bench_function(format!("unswizzle_{name}"), |b| {
            b.iter(|| layout.unswizzle_into(black_box(&tiled), &mut copy).unwrap())
        });
        group.bench_function(format!("memcpy_{name}"), |b| {
            b.iter(|| copy.copy_from_slice(black_box(&linear)))
        });

        // A direct same-run measurement for the printed ratio (best of 5).
        let best = |f: &mut dyn FnMut()| {
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        let t_swz = best(&mut || layout.swizzle_into(&linear, &mut tiled).unwrap());
        let t_uns = best(&mut || layout.unswizzle_into(&tiled, &mut copy).unwrap());
        let t_cpy = best(&mut || copy.copy_from_slice(black_box(&linear)));
        let gbs = |t: f64| n as f64 / t / 1e9;
        report.push(format!(
            "{name:>9}: {:.1} MB, swizzle {:.2} GB/s, unswizzle {:.2} GB/s, memcpy {:.2} GB/s, \
             swizzle/memcpy {:.2}, unswizzle/memcpy {:.2}",
            n as f64 / 1e6,
            gbs(t_swz),
            gbs(t_uns),
            gbs(t_cpy),
            t_cpy / t_swz,
            t_cpy / t_uns
        ));
    }
    group.finish();
    for line in report {
        println!("{line}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
