//! Round trips and agreement between the fast (table) and scalar (bit-by-bit) addressing, for
//! every valid mode, element size and dimension, on odd sizes, for both consoles.

use wavetrace::tiling::{
    check_mode, Console, Dimension, Format, Layout, SurfaceDesc, SwizzleMode, SwizzledTexture,
};

const FORMATS: [&str; 7] = ["R8", "R16", "R32", "R32G32", "R32G32B32A32", "BC1", "BC7"];

/// Every valid (mode, dim, format) with an odd-sized shape.
fn cases() -> Vec<SurfaceDesc> {
    let mut out = Vec::new();
    for mode in SwizzleMode::ALL {
        for f in FORMATS {
            let format = Format::from_name(f).unwrap();
            for (dim, w, h, n, mips) in [
                (Dimension::D2, 37, 19, 3, 6),
                (Dimension::D2, 133, 7, 1, 8),
                (Dimension::D3, 21, 13, 11, 5),
                (Dimension::D1, 77, 1, 2, 7),
            ] {
                if check_mode(mode, dim, &format).is_err() {
                    continue;
                }
                if dim == Dimension::D1 && format.is_block_compressed() {
                    continue;
                }
                out.push(SurfaceDesc {
                    format,
                    dim,
                    width: w,
                    height: h,
                    depth_or_array_size: n,
                    mip_levels: mips,
                    mode,
                });
            }
        }
    }
    out
}

/// A deterministic pseudo-random byte pattern (xorshift), different per position.
fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

#[test]
fn unswizzle_of_swizzle_is_identity_for_every_valid_mode() {
    let mut checked = 0;
    for console in [Console::SeriesX, Console::SeriesS, Console::Navi21] {
        for desc in cases() {
            let layout = Layout::new(&desc, console).unwrap();
            if !layout.can_address() {
                // 3D 64KB_D_X at 8 and 16 B/element: addrlib has no equation; must refuse.
                assert_eq!(desc.mode, SwizzleMode::Sw64KbDX);
                assert!(layout
                    .swizzle(&vec![0; layout.linear_size() as usize])
                    .is_err());
                continue;
            }
            let linear = pattern(layout.linear_size() as usize, checked as u64 + 7);
            let tiled = layout.swizzle(&linear).unwrap();
            assert_eq!(tiled.len() as u64, layout.total_size);
            // The parallel, run-copying swizzle equals the element-by-element scalar twin.
            assert!(
                tiled == layout.swizzle_reference(&linear).unwrap(),
                "{:?} on {:?}: parallel swizzle differs from the scalar reference",
                desc,
                console
            );
            let back = layout.unswizzle(&tiled).unwrap();
            assert!(
                back == linear,
                "{:?} on {:?}: round trip differs",
                desc,
                console
            );
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} combinations checked");
}

#[test]
fn offsets_are_distinct_inside_the_resource_and_invert() {
    for console in [Console::SeriesX, Console::SeriesS, Console::Navi21] {
        for desc in cases() {
            let layout = Layout::new(&desc, console).unwrap();
            if !layout.can_address() {
                continue;
            }
            let bpe = layout.bytes_per_element as u64;
            let mut seen = std::collections::HashSet::new();
            for mip in 0..desc.mip_levels {
                let (w, h, n) = layout.linear_extent(mip);
                for s in 0..n {
                    for y in 0..h {
                        for x in 0..w {
                            let fast = layout.offset(mip, s, x, y).unwrap();
                            let slow = layout.offset_reference(mip, s, x, y).unwrap();
                            assert_eq!(fast, slow, "{desc:?} mip {mip} s {s} ({x},{y})");
                            assert!(fast + bpe <= layout.total_size, "{desc:?} beyond the end");
                            assert_eq!(fast % bpe, 0);
                            assert!(seen.insert(fast), "{desc:?}: offset {fast} used twice");
                            let byte = (x as u64 * 5 + y as u64) % bpe;
                            let c = layout.coord(fast + byte).unwrap().expect("inverse exists");
                            assert_eq!(
                                (c.mip, c.slice, c.x, c.y, c.byte as u64),
                                (mip, s, x, y, byte),
                                "{desc:?} coord({})",
                                fast + byte
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn padding_bytes_have_no_texel() {
    let desc = SurfaceDesc::new_2d(Format::RGBA8, 5, 3, 1, 1, SwizzleMode::Sw4KbS);
    let layout = Layout::new(&desc, Console::SeriesX).unwrap();
    let used = (0..layout.total_size)
        .filter(|&o| layout.coord(o).unwrap().is_some())
        .count();
    assert_eq!(used, 5 * 3 * 4);
    assert_eq!(layout.coord(layout.total_size).unwrap(), None);
}

#[test]
fn linear_layout_is_row_major_with_256_byte_pitch() {
    // Independent computation: LINEAR pads the pitch to 256 bytes, mips smallest first.
    let desc = SurfaceDesc::new_2d(Format::RGBA8, 70, 9, 1, 2, SwizzleMode::Linear);
    let l = Layout::new(&desc, Console::SeriesX).unwrap();
    // mip 1: 35x5 -> pitch 64 el = 256 B, 5 rows = 1280 B at offset 0; mip 0 at 1280.
    assert_eq!(l.offset(1, 0, 3, 2).unwrap(), 2 * 256 + 3 * 4);
    assert_eq!(l.offset(0, 0, 69, 8).unwrap(), 1280 + 8 * 512 + 69 * 4);
    assert_eq!(l.total_size, 1280 + 9 * 512);
}

#[test]
fn swizzled_texture_fetch_matches_the_box_filtered_chain() {
    let (w, h) = (45u32, 29u32);
    let texels = pattern((w * h * 4) as usize, 99);
    for (mode, console) in [
        (SwizzleMode::from_name("4KB_S").unwrap(), Console::SeriesX),
        (
            SwizzleMode::from_name("64KB_R_X").unwrap(),
            Console::SeriesS,
        ),
        (SwizzleMode::from_name("VAR_Z_X").unwrap(), Console::SeriesX),
        (SwizzleMode::Linear, Console::SeriesX),
    ] {
        let t = SwizzledTexture::from_rgba8(w, h, &texels, mode, console).unwrap();
        assert_eq!(t.mip_count(), 6);
        assert_eq!(t.mip_size(0), (45, 29));
        assert_eq!(t.mip_size(1), (22, 14));
        assert_eq!(t.mip_size(5), (1, 1));
        for y in 0..h {
            for x in 0..w {
                let i = ((y * w + x) * 4) as usize;
                assert_eq!(t.fetch_rgba8(x, y, 0), texels[i..i + 4], "{mode} ({x},{y})");
            }
        }
        // Mip 1 texel (3, 4) is the rounded mean of mip 0's 2x2 footprint (6..8, 8..10).
        for c in 0..4 {
            let at = |x: u32, y: u32| texels[((y * w + x) * 4 + c) as usize] as u32;
            let mean = (at(6, 8) + at(7, 8) + at(6, 9) + at(7, 9) + 2) / 4;
            assert_eq!(t.fetch_rgba8(3, 4, 1)[c as usize] as u32, mean);
        }
        // Clamp addressing: out-of-range coordinates and mips do not panic.
        assert_eq!(t.fetch_rgba8(1000, 1000, 0), t.fetch_rgba8(44, 28, 0));
        assert_eq!(t.fetch_rgba8(0, 0, 99), t.fetch_rgba8(0, 0, 5));
    }
}

#[test]
fn invalid_requests_get_clear_errors() {
    let bad = |mode: &str, dim: Dimension, fmt: &str| {
        let desc = SurfaceDesc {
            format: Format::from_name(fmt).unwrap(),
            dim,
            width: 16,
            height: if dim == Dimension::D1 { 1 } else { 16 },
            depth_or_array_size: 4,
            mip_levels: 1,
            mode: SwizzleMode::from_name(mode).unwrap(),
        };
        Layout::new(&desc, Console::SeriesX)
            .unwrap_err()
            .to_string()
    };
    let e = bad("4KB_Z", Dimension::D2, "R32");
    assert!(
        e.contains("4KB_Z") && e.contains("2D") && e.contains("R32"),
        "{e}"
    );
    let e = bad("64KB_D", Dimension::D3, "R8");
    assert!(
        e.contains("64KB_D") && e.contains("3D") && e.contains("R8"),
        "{e}"
    );
    let e = bad("64KB_Z_X", Dimension::D2, "BC7");
    assert!(e.contains("BC7"), "{e}");
    let e = bad("4KB_S", Dimension::D1, "R8");
    assert!(e.contains("1D"), "{e}");
    assert!(SwizzleMode::from_name("8KB_S").is_err());
    assert!(Format::from_name("R24").is_err());
    let desc = SurfaceDesc::new_2d(Format::RGBA8, 4, 4, 1, 4, SwizzleMode::Sw4KbS);
    assert!(
        Layout::new(&desc, Console::SeriesX).is_err(),
        "4x4 has 3 mips"
    );
    assert!(
        SwizzledTexture::from_rgba8(4, 4, &[0; 10], SwizzleMode::Sw4KbS, Console::SeriesX).is_err()
    );
}

#[test]
fn mode_names_and_enumerants_round_trip() {
    for (i, mode) in SwizzleMode::ALL.iter().enumerate() {
        assert_eq!(mode.enumerant(), i as u32);
        assert_eq!(SwizzleMode::from_name(mode.name()).unwrap(), *mode);
        assert_eq!(SwizzleMode::from_name(&i.to_string()).unwrap(), *mode);
    }
    assert_eq!(
        SwizzleMode::from_name("sw_4kb_s").unwrap(),
        SwizzleMode::Sw4KbS
    );
    assert_eq!(
        SwizzleMode::from_name("ADDR_SW_64KB_R_X")
            .unwrap()
            .enumerant(),
        27
    );
    assert_eq!(Console::SeriesX.var_block_bytes(), 512 * 1024);
    assert_eq!(Console::SeriesS.var_block_bytes(), 128 * 1024);
}
