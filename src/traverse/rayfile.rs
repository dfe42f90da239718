//! Ray and hit files of `wavetrace trace` and the shared scenes.
//!
//! Ray file: headerless little-endian, 8 x f32 = 32 bytes per ray: origin xyz, direction xyz,
//! tmin, tmax. Hit file: per ray f32 t (+inf for a miss) then u32 primitive id (0xFFFFFFFF for
//! a miss), 8 bytes per ray.

use crate::error::{Error, Result};
use crate::math::{HitRecord, Ray};
use glam::Vec3;
use std::path::Path;

/// Bytes per ray in a ray file.
pub const RAY_BYTES: usize = 32;
/// Bytes per hit in a hit file.
pub const HIT_BYTES: usize = 8;

/// Parses ray-file bytes; `path` names the file in errors.
pub fn parse_rays(path: &Path, bytes: &[u8]) -> Result<Vec<Ray>> {
    if !bytes.len().is_multiple_of(RAY_BYTES) {
        return Err(Error::parse(
            path,
            0,
            format!(
                "ray file is {} bytes, not a multiple of {RAY_BYTES} (8 x f32 per ray: origin, \
                 direction, tmin, tmax)",
                bytes.len()
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(RAY_BYTES)
        .map(|r| {
            let f = |i: usize| f32::from_le_bytes(r[4 * i..4 * i + 4].try_into().unwrap());
            Ray::new(
                Vec3::new(f(0), f(1), f(2)),
                Vec3::new(f(3), f(4), f(5)),
                f(6),
                f(7),
            )
        })
        .collect())
}

/// Reads a ray file.
pub fn read_rays(path: &Path) -> Result<Vec<Ray>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse_rays(path, &bytes)
}

/// Encodes rays as ray-file bytes.
pub fn encode_rays(rays: &[Ray]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rays.len() * RAY_BYTES);
    for r in rays {
        for v in [
            r.origin.x, r.origin.y, r.origin.z, r.dir.x, r.dir.y, r.dir.z, r.tmin, r.tmax,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Parses hit-file bytes into `(t, primitive id)` pairs.
pub fn parse_hits(path: &Path, bytes: &[u8]) -> Result<Vec<(f32, u32)>> {
    if !bytes.len().is_multiple_of(HIT_BYTES) {
        return Err(Error::parse(
            path,
            0,
            format!(
                "hit file is {} bytes, not a multiple of {HIT_BYTES}",
                bytes.len()
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(HIT_BYTES)
        .map(|h| {
            (
                f32::from_le_bytes(h[0..4].try_into().unwrap()),
                u32::from_le_bytes(h[4..8].try_into().unwrap()),
            )
        })
        .collect())
}

/// Encodes hit records as hit-file bytes (a miss: +inf, 0xFFFFFFFF).
pub fn encode_hits(records: &[HitRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * HIT_BYTES);
    for r in records {
        let HitRecord { t, prim_id, .. } = if r.is_hit() { *r } else { HitRecord::MISS };
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&prim_id.to_le_bytes());
    }
    out
}

/// Bytes of one hit record of a scene (two-level or flat): f32 t, u32 instance index, u32
/// primitive index within the instance's mesh.
pub const SCENE_HIT_BYTES: usize = 12;

/// Encodes hit records as scene hit-file bytes (a miss: +inf, 0xFFFFFFFF, 0xFFFFFFFF).
pub fn encode_scene_hits(records: &[HitRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * SCENE_HIT_BYTES);
    for r in records {
        let r = if r.is_hit() { *r } else { HitRecord::MISS };
        out.extend_from_slice(&r.t.to_le_bytes());
        out.extend_from_slice(&r.instance.to_le_bytes());
        out.extend_from_slice(&r.prim_id.to_le_bytes());
    }
    out
}

/// Parses scene hit-file bytes into `(t, instance, primitive)` triples.
pub fn parse_scene_hits(path: &Path, bytes: &[u8]) -> Result<Vec<(f32, u32, u32)>> {
    if !bytes.len().is_multiple_of(SCENE_HIT_BYTES) {
        return Err(Error::parse(
            path,
            0,
            format!(
                "scene hit file is {} bytes, not a multiple of {SCENE_HIT_BYTES}",
                bytes.len()
            ),
        ));
    }
    let word = |h: &[u8], i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    Ok(bytes
        .chunks_exact(SCENE_HIT_BYTES)
        .map(|h| (f32::from_bits(word(h, 0)), word(h, 4), word(h, 8)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rays_round_trip_and_bad_sizes_name_the_file() {
        let rays = vec![Ray::new(Vec3::new(1.0, 2.0, 3.0), Vec3::X, 0.5, 9.0)];
        let bytes = encode_rays(&rays);
        assert_eq!(bytes.len(), 32);
        assert_eq!(parse_rays(Path::new("a.rays"), &bytes).unwrap(), rays);
        let e = parse_rays(Path::new("bad.rays"), &bytes[..31])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.rays") && e.contains("31"), "{e}");
    }

    #[test]
    fn misses_encode_as_inf_and_all_ones() {
        use crate::math::Hit;
        // A miss whatever its t, and a hit as it is.
        let miss = HitRecord {
            t: 3.0,
            prim_id: u32::MAX,
            instance: 4,
        };
        let hit = HitRecord::from(&Hit {
            t: 2.5,
            prim_id: 7,
            bary: [0.25, 0.5],
            front_face: true,
            instance: 3,
        });
        let bytes = encode_hits(&[HitRecord::from(&Hit::MISS), miss, hit]);
        let h = parse_hits(Path::new("h"), &bytes).unwrap();
        assert_eq!(
            h,
            vec![
                (f32::INFINITY, u32::MAX),
                (f32::INFINITY, u32::MAX),
                (2.5, 7)
            ]
        );
        let bytes = encode_scene_hits(&[miss, hit]);
        let h = parse_scene_hits(Path::new("s"), &bytes).unwrap();
        assert_eq!(h, vec![(f32::INFINITY, u32::MAX, u32::MAX), (2.5, 3, 7)]);
        assert!(parse_scene_hits(Path::new("s"), &bytes[..13]).is_err());
    }
}
