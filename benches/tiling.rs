//! Swizzle throughput for a 4096x4096 RGBA8 texture with its full mip chain, against a plain
//! memcpy of the same bytes measured in the same run.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::time::Instant;
use wavetrace::tiling::{Console, Format, Layout, SurfaceDesc, SwizzleMode, SwizzledTexture};

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
    // Texel fetch through the swizzled addressing (the renderer's path).
    let texels: Vec<u8> = (0..(w * h * 4) as usize).map(|i| (i * 7) as u8).collect();
    let tex =
        SwizzledTexture::from_rgba8(w, h, &texels, SwizzleMode::Sw4KbS, Console::SeriesX).unwrap();
    assert_eq!(
        tex.fetch_rgba8(123, 456, 0),
        texels[(456 * 4096 + 123) * 4..][..4]
    );
    let fetches = 1u64 << 20;
    group.throughput(Throughput::Elements(fetches));
    group.bench_function("fetch_rgba8_4KB_S_random", |b| {
        b.iter(|| {
            let mut s = 0x9e37_79b9u32;
            let mut acc = 0u32;
            for _ in 0..fetches {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                let t = tex.fetch_rgba8(s & 4095, (s >> 12) & 4095, (s >> 24) % 13);
                acc = acc.wrapping_add(u32::from_le_bytes(t));
            }
            black_box(acc)
        })
    });
    group.finish();
    for line in report {
        println!("{line}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
