//! Textures are stored swizzled (4KB_S, Series X) with a full mip chain, and every texel
//! read back through the swizzle addressing is the texel of the source image.

mod common;

use common::repo_path;
use wavetrace::scene::Texture;

#[test]
fn swizzled_texture_reads_back_the_source_texels() {
    let path = repo_path("scenes/sky/checker.png");
    let tex = Texture::load(&path).unwrap();
    let src = image::open(&path).unwrap().to_rgba8();
    assert_eq!(tex.size(), src.dimensions());
    assert_eq!(tex.mip_count(), 7); // 64 .. 1
    for (x, y, p) in src.enumerate_pixels() {
        assert_eq!(tex.fetch_rgba8(x, y, 0), p.0, "texel ({x}, {y})");
    }
    // The 8 x 8 checker averages to the mean of its two colours from mip 4 (4 x 4) down.
    let (w, h) = tex.mip_size(6);
    assert_eq!((w, h), (1, 1));
    let t = tex.fetch_rgba8(0, 0, 6);
    for c in 0..3 {
        let a = [205u32, 200, 190][c];
        let b = [70u32, 78, 92][c];
        assert!((t[c] as i32 - ((a + b) / 2) as i32).abs() <= 1, "{t:?}");
    }
    assert!(tex.layout_name().contains("4KB_S"));
}

#[test]
fn odd_sized_texture_keeps_its_texels() {
    let texels: Vec<[u8; 4]> = (0..7 * 5)
        .map(|i| [i as u8, (i * 3) as u8, 255 - i as u8, 255])
        .collect();
    let tex = Texture::from_rgba8("odd.png", 7, 5, texels.clone()).unwrap();
    for y in 0..5 {
        for x in 0..7 {
            assert_eq!(tex.fetch_rgba8(x, y, 0), texels[(y * 7 + x) as usize]);
        }
    }
    assert_eq!(tex.mip_size(1), (3, 2));
    let e = Texture::from_rgba8("bad.png", 3, 3, vec![[0; 4]; 4]).unwrap_err();
    assert!(e.to_string().contains("bad.png"));
}
