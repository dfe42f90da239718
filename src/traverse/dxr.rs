//! The DXR part of the traversal shader: ray flags, the instance inclusion mask, facing and
//! opacity, and the any-hit shader, as DirectX Raytracing defines them
//! (`d3d/Raytracing.md`, "Ray flags", "D3D12_RAYTRACING_INSTANCE_FLAGS", "Instance
//! masking", "TraceRay control flow") and AMD's GPURT applies them on RDNA2
//! (`TraceRay1_1.hlsl`, `IntersectCommon.hlsl` `IsOpaque`).

use crate::hw::InstanceFlags;
use crate::{Error, Result};

/// Ray flags, with the bit values of DXR's `RAY_FLAG`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct RayFlags(pub u32);

impl RayFlags {
    pub const NONE: RayFlags = RayFlags(0);
    /// Every hit is opaque: no any-hit shader runs.
    pub const FORCE_OPAQUE: RayFlags = RayFlags(0x01);
    /// Every hit is non-opaque: the any-hit shader runs on each.
    pub const FORCE_NON_OPAQUE: RayFlags = RayFlags(0x02);
    /// The first accepted hit ends the search (shadow rays).
    pub const ACCEPT_FIRST_HIT_AND_END_SEARCH: RayFlags = RayFlags(0x04);
    /// No closest-hit shader runs (no effect on traversal or on the hit found).
    pub const SKIP_CLOSEST_HIT_SHADER: RayFlags = RayFlags(0x08);
    pub const CULL_BACK_FACING_TRIANGLES: RayFlags = RayFlags(0x10);
    pub const CULL_FRONT_FACING_TRIANGLES: RayFlags = RayFlags(0x20);
    /// Drops hits that are opaque by their geometry and instance flags.
    pub const CULL_OPAQUE: RayFlags = RayFlags(0x40);
    /// Drops hits that are non-opaque by their geometry and instance flags.
    pub const CULL_NON_OPAQUE: RayFlags = RayFlags(0x80);
    /// Ignores all triangles (instances of triangle BLASes are skipped whole).
    pub const SKIP_TRIANGLES: RayFlags = RayFlags(0x100);
    /// Ignores all procedural primitives (instances of procedural BLASes are skipped whole).
    pub const SKIP_PROCEDURAL_PRIMITIVES: RayFlags = RayFlags(0x200);

    /// Every flag with its command-line name (DXR's name in lower case).
    pub const NAMES: [(RayFlags, &'static str); 10] = [
        (Self::FORCE_OPAQUE, "force_opaque"),
        (Self::FORCE_NON_OPAQUE, "force_non_opaque"),
        (
            Self::ACCEPT_FIRST_HIT_AND_END_SEARCH,
            "accept_first_hit_and_end_search",
        ),
        (Self::SKIP_CLOSEST_HIT_SHADER, "skip_closest_hit_shader"),
        (
            Self::CULL_BACK_FACING_TRIANGLES,
            "cull_back_facing_triangles",
        ),
        (
            Self::CULL_FRONT_FACING_TRIANGLES,
            "cull_front_facing_triangles",
        ),
        (Self::CULL_OPAQUE, "cull_opaque"),
        (Self::CULL_NON_OPAQUE, "cull_non_opaque"),
        (Self::SKIP_TRIANGLES, "skip_triangles"),
        (
            Self::SKIP_PROCEDURAL_PRIMITIVES,
            "skip_procedural_primitives",
        ),
    ];

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: RayFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag of `other` is set.
    pub const fn intersects(self, other: RayFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// Both sets of flags.
    pub const fn union(self, other: RayFlags) -> RayFlags {
        RayFlags(self.0 | other.0)
    }

    /// Parses a comma-separated list of flag names ("" is no flag) and checks the
    /// combination ([`Self::check`]).
    pub fn parse(list: &str) -> Result<RayFlags> {
        let mut flags = RayFlags::NONE;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some((flag, _)) = Self::NAMES.iter().find(|(_, n)| *n == name) else {
                let known: Vec<&str> = Self::NAMES.iter().map(|(_, n)| *n).collect();
                return Err(Error::field(
                    "--ray-flags",
                    format!("unknown flag `{name}` (known: {})", known.join(", ")),
                ));
            };
            flags = flags.union(*flag);
        }
        flags.check()?;
        Ok(flags)
    }

    /// The flags' names, comma-separated ("none" for no flag).
    pub fn names(self) -> String {
        let names: Vec<&str> = Self::NAMES
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(",")
        }
    }

    /// The combinations DXR forbids ("Ray flags"): at most one of force opaque, force
    /// non-opaque, cull opaque and cull non-opaque; not both facing culls; skipping
    /// triangles with a facing cull or with skipping procedural primitives.
    pub fn check(self) -> Result<()> {
        let opacity = [
            Self::FORCE_OPAQUE,
            Self::FORCE_NON_OPAQUE,
            Self::CULL_OPAQUE,
            Self::CULL_NON_OPAQUE,
        ];
        let exclusive: [(&[RayFlags], &str); 3] = [
            (&opacity, "force_opaque, force_non_opaque, cull_opaque and cull_non_opaque exclude each other"),
            (
                &[Self::CULL_BACK_FACING_TRIANGLES, Self::CULL_FRONT_FACING_TRIANGLES],
                "cull_back_facing_triangles and cull_front_facing_triangles exclude each other",
            ),
            (
                &[Self::SKIP_TRIANGLES, Self::SKIP_PROCEDURAL_PRIMITIVES],
                "skip_triangles and skip_procedural_primitives exclude each other",
            ),
        ];
        for (group, message) in exclusive {
            if group.iter().filter(|f| self.contains(**f)).count() > 1 {
                return Err(Error::field("--ray-flags", message));
            }
        }
        if self.contains(Self::SKIP_TRIANGLES)
            && self.intersects(RayFlags(
                Self::CULL_BACK_FACING_TRIANGLES.0 | Self::CULL_FRONT_FACING_TRIANGLES.0,
            ))
        {
            return Err(Error::field(
                "--ray-flags",
                "skip_triangles excludes the facing culls",
            ));
        }
        Ok(())
    }
}

/// Whether a hit is opaque (DXR's order: the geometry flag, overridden by the instance's
/// force flags, overridden by the ray's; GPURT `IsOpaque`).
pub fn is_opaque(geometry_opaque: bool, instance: InstanceFlags, ray: RayFlags) -> bool {
    if ray.contains(RayFlags::FORCE_OPAQUE) {
        return true;
    }
    if ray.contains(RayFlags::FORCE_NON_OPAQUE) {
        return false;
    }
    instance.contains(InstanceFlags::FORCE_OPAQUE)
        || (geometry_opaque && !instance.contains(InstanceFlags::FORCE_NON_OPAQUE))
}

/// Whether the ray's opacity culls drop a hit of this opacity.
pub fn culled_by_opacity(opaque: bool, ray: RayFlags) -> bool {
    (opaque && ray.contains(RayFlags::CULL_OPAQUE))
        || (!opaque && ray.contains(RayFlags::CULL_NON_OPAQUE))
}

/// Whether a triangle hit is front-facing: `t_denom > 0` is DXR's default front face
/// (clockwise seen from the ray origin, in object space, left-handed; `semantics.md` 7.3),
/// and the instance's `TRIANGLE_FRONT_COUNTERCLOCKWISE` swaps front and back. The instance
/// matrix never changes facing (the test runs in object space).
pub fn is_front_facing(t_denom: f32, instance: InstanceFlags) -> bool {
    let back = t_denom.is_sign_negative()
        != instance.contains(InstanceFlags::TRIANGLE_FRONT_COUNTERCLOCKWISE);
    !back
}

/// Whether the ray's facing culls drop a triangle hit (never for an instance with
/// `TRIANGLE_CULL_DISABLE`).
pub fn culled_by_facing(front: bool, instance: InstanceFlags, ray: RayFlags) -> bool {
    if instance.contains(InstanceFlags::TRIANGLE_CULL_DISABLE) {
        return false;
    }
    (front && ray.contains(RayFlags::CULL_FRONT_FACING_TRIANGLES))
        || (!front && ray.contains(RayFlags::CULL_BACK_FACING_TRIANGLES))
}

/// A candidate hit handed to an any-hit shader.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The instance (`u32::MAX` in a flat scene).
    pub instance: u32,
    /// The primitive's index in its BLAS (or in the flat mesh).
    pub prim: u32,
    pub t: f32,
    /// Barycentric weights of the triangle's second and third vertex (0 for procedurals).
    pub barycentrics: [f32; 2],
    /// DXR's facing (its hit kind): for a triangle, the winding seen from the ray in object
    /// space, swapped by the instance's `TRIANGLE_FRONT_COUNTERCLOCKWISE` ([`is_front_facing`],
    /// the facing the culls use); for a sphere, whether the ray enters it from outside.
    pub front_face: bool,
}

/// An any-hit shader: called for each candidate hit on non-opaque geometry; returns whether
/// the hit is accepted (`false` is DXR's `IgnoreHit`).
pub trait AnyHit: Sync {
    fn any_hit(&self, candidate: &Candidate) -> bool;
}

/// The any-hit shader of `trace`: accepts every candidate (its invocations are counted).
#[derive(Clone, Copy, Debug, Default)]
pub struct AcceptAll;

impl AnyHit for AcceptAll {
    fn any_hit(&self, _candidate: &Candidate) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_combinations_are_errors() {
        for bad in [
            "force_opaque,cull_opaque",
            "force_opaque,force_non_opaque",
            "cull_opaque,cull_non_opaque",
            "cull_back_facing_triangles,cull_front_facing_triangles",
            "skip_triangles,cull_back_facing_triangles",
            "skip_triangles,skip_procedural_primitives",
            "no_such_flag",
        ] {
            assert!(RayFlags::parse(bad).is_err(), "{bad}");
        }
        let ok = RayFlags::parse("accept_first_hit_and_end_search, cull_back_facing_triangles")
            .expect("valid");
        assert_eq!(ok, RayFlags(0x14));
        assert_eq!(RayFlags::parse(&ok.names()).expect("round trip"), ok);
        assert_eq!(RayFlags::parse("").expect("empty"), RayFlags::NONE);
    }

    /// DXR's precedence: geometry, then instance, then ray.
    #[test]
    fn opacity_follows_the_precedence() {
        let (none, fo, fno) = (
            InstanceFlags::NONE,
            InstanceFlags::FORCE_OPAQUE,
            InstanceFlags::FORCE_NON_OPAQUE,
        );
        assert!(is_opaque(true, none, RayFlags::NONE));
        assert!(!is_opaque(false, none, RayFlags::NONE));
        assert!(is_opaque(false, fo, RayFlags::NONE));
        assert!(!is_opaque(true, fno, RayFlags::NONE));
        assert!(is_opaque(true, fno, RayFlags::FORCE_OPAQUE));
        assert!(!is_opaque(true, fo, RayFlags::FORCE_NON_OPAQUE));
    }

    #[test]
    fn facing_follows_the_denominator_and_the_instance_flags() {
        let ccw = InstanceFlags::TRIANGLE_FRONT_COUNTERCLOCKWISE;
        assert!(is_front_facing(1.0, InstanceFlags::NONE));
        assert!(!is_front_facing(-1.0, InstanceFlags::NONE));
        assert!(!is_front_facing(1.0, ccw));
        assert!(is_front_facing(-1.0, ccw));
        let back = RayFlags::CULL_BACK_FACING_TRIANGLES;
        assert!(culled_by_facing(false, InstanceFlags::NONE, back));
        assert!(!culled_by_facing(true, InstanceFlags::NONE, back));
        assert!(!culled_by_facing(
            false,
            InstanceFlags::TRIANGLE_CULL_DISABLE,
            back
        ));
    }
}
