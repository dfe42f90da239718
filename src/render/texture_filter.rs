//! Texture filtering at a hit: a trilinear lookup whose mip level comes from a ray cone.
//!
//! The footprint of a ray cone at a hit is the pixel spread angle x the distance travelled,
//! divided by the cosine at the hit; the level of detail compares it with the triangle's
//! texel density (texels per unit of world area). Texels are sRGB and filtered in linear
//! RGB, wrapping at the edges.

use crate::scene::{srgb_to_linear, Texture};
use glam::{Vec2, Vec3};

/// Where on which triangle a texture is looked up, and how wide the ray cone is there.
pub(super) struct Footprint {
    /// The triangle's corners' texture coordinates.
    pub uvs: [Vec2; 3],
    /// Its corners in world space.
    pub corners: [Vec3; 3],
    /// Barycentric weights of the triangle's three corners at the hit.
    pub bary: [f32; 3],
    /// Ray cone width at the hit, across the surface (world units).
    pub width: f32,
}

/// Trilinear lookup of `t` (linear RGB) at `at`, on a mip level that matches the
/// footprint's width to the texel density of the triangle.
pub(super) fn sample_footprint(t: &Texture, at: &Footprint) -> Vec3 {
    let bary = at.bary;
    let uvs = at.uvs;
    let uv = uvs[0] * bary[0] + uvs[1] * bary[1] + uvs[2] * bary[2];
    let [a, b, c] = at.corners;
    let world_area = (b - a).cross(c - a).length();
    let uv_area = (uvs[1] - uvs[0]).perp_dot(uvs[2] - uvs[0]).abs();
    let (tw, th) = t.size();
    let texels_per_area = uv_area * (tw * th) as f32 / world_area.max(f32::MIN_POSITIVE);
    let width = at.width;
    let lod = if texels_per_area > 0.0 && width > 0.0 {
        (width * texels_per_area.sqrt()).log2()
    } else {
        0.0
    };
    sample_trilinear(t, uv, lod)
}

/// Bilinear lookup of mip level `mip` at `uv` (OBJ convention: v up), wrapping.
fn sample_bilinear(t: &Texture, uv: Vec2, mip: u32) -> Vec3 {
    let (w, h) = t.mip_size(mip);
    let x = uv.x * w as f32 - 0.5;
    let y = (1.0 - uv.y) * h as f32 - 0.5; // OBJ v points up, rows go down
    let (fx, fy) = (x.floor(), y.floor());
    let (ax, ay) = (x - fx, y - fy);
    let wrap = |v: f32, n: u32| -> u32 { (v as i64).rem_euclid(n as i64) as u32 };
    let (xi, yi) = (wrap(fx, w), wrap(fy, h));
    let (xj, yj) = ((xi + 1) % w, (yi + 1) % h);
    let texel = |x: u32, y: u32| -> Vec3 {
        let c = t.fetch_rgba8(x, y, mip);
        Vec3::new(
            srgb_to_linear(c[0]),
            srgb_to_linear(c[1]),
            srgb_to_linear(c[2]),
        )
    };
    let top = texel(xi, yi) * (1.0 - ax) + texel(xj, yi) * ax;
    let bottom = texel(xi, yj) * (1.0 - ax) + texel(xj, yj) * ax;
    top * (1.0 - ay) + bottom * ay
}

/// Blend of the two mip levels around `lod`, clamped to the chain. A non-finite `uv` reads
/// at (0, 0), a non-finite `lod` level 0.
fn sample_trilinear(t: &Texture, uv: Vec2, lod: f32) -> Vec3 {
    let uv = if uv.is_finite() { uv } else { Vec2::ZERO };
    let max = (t.mip_count() - 1) as f32;
    let lod = if lod.is_finite() {
        lod.clamp(0.0, max)
    } else {
        0.0
    };
    let m0 = lod.floor() as u32;
    let m1 = (m0 + 1).min(t.mip_count() - 1);
    let f = lod - m0 as f32;
    sample_bilinear(t, uv, m0) * (1.0 - f) + sample_bilinear(t, uv, m1) * f
}
