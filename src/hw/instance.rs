//! What the hardware image holds for two-level scenes: instance flags. The instance and
//! procedural node layouts (node types 6 and 7, which the instruction treats as user nodes,
//! `semantics.md` 3.2 and 4.5) follow in this module.

use bytemuck::{Pod, Zeroable};

/// Instance flags, with the bit values of `D3D12_RAYTRACING_INSTANCE_FLAGS` (stored in the
/// instance node's flags byte, read by the traversal shader, never by the instruction).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct InstanceFlags(pub u8);

impl InstanceFlags {
    pub const NONE: InstanceFlags = InstanceFlags(0);
    /// No facing culling for this instance's triangles.
    pub const TRIANGLE_CULL_DISABLE: InstanceFlags = InstanceFlags(0x1);
    /// Counter-clockwise triangles (seen from the ray origin, object space) are front faces.
    pub const TRIANGLE_FRONT_COUNTERCLOCKWISE: InstanceFlags = InstanceFlags(0x2);
    /// Every geometry of the instance is opaque.
    pub const FORCE_OPAQUE: InstanceFlags = InstanceFlags(0x4);
    /// Every geometry of the instance is non-opaque.
    pub const FORCE_NON_OPAQUE: InstanceFlags = InstanceFlags(0x8);

    /// The flags and their scene-file names, in bit order.
    pub const NAMES: [(InstanceFlags, &'static str); 4] = [
        (Self::TRIANGLE_CULL_DISABLE, "triangle_cull_disable"),
        (
            Self::TRIANGLE_FRONT_COUNTERCLOCKWISE,
            "triangle_front_counterclockwise",
        ),
        (Self::FORCE_OPAQUE, "force_opaque"),
        (Self::FORCE_NON_OPAQUE, "force_non_opaque"),
    ];

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: InstanceFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flag named `name` (scene-file spelling), if any.
    pub fn from_name(name: &str) -> Option<InstanceFlags> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }
}

impl std::ops::BitOr for InstanceFlags {
    type Output = InstanceFlags;
    fn bitor(self, rhs: InstanceFlags) -> InstanceFlags {
        InstanceFlags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for InstanceFlags {
    fn bitor_assign(&mut self, rhs: InstanceFlags) {
        self.0 |= rhs.0;
    }
}
