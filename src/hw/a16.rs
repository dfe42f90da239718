//! A16 ray registers (`semantics.md` 9): direction and inverse direction as binary16, packed
//! *sequentially* into three dwords as gfx10.3 (RDNA2) does; origin and extent stay f32.
//!
//! | dword | bits 15:0 | bits 31:16 |
//! |-------|-----------|------------|
//! | 0     | dir.x     | dir.y      |
//! | 1     | dir.z     | inv_dir.x  |
//! | 2     | inv_dir.y | inv_dir.z  |
//!
//! (RDNA3 packs per component instead; that layout is deliberately not offered here.)

use half::f16;

use super::instruction::RayRegisters;

/// The ray VGPRs of one lane with A16 = 1 (gfx10.3 layout, `semantics.md` 9.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayRegistersA16 {
    /// The largest t at which a box counts as hit (f32).
    pub extent: f32,
    /// Origin (f32).
    pub origin: [f32; 3],
    /// The three packed dwords of halves, see the module table.
    pub packed: [u32; 3],
}

impl RayRegistersA16 {
    /// Packs binary16 direction and inverse direction in the gfx10.3 sequential order.
    pub fn pack(extent: f32, origin: [f32; 3], dir: [f16; 3], inv_dir: [f16; 3]) -> Self {
        let h = |lo: f16, hi: f16| lo.to_bits() as u32 | (hi.to_bits() as u32) << 16;
        RayRegistersA16 {
            extent,
            origin,
            packed: [
                h(dir[0], dir[1]),
                h(dir[2], inv_dir[0]),
                h(inv_dir[1], inv_dir[2]),
            ],
        }
    }

    /// Rounds a full-precision ray's direction and inverse direction to nearest-even binary16
    /// (what a shader's `f32 -> f16` conversion does) and packs them.
    pub fn from_f32(ray: &RayRegisters) -> Self {
        Self::pack(
            ray.extent,
            ray.origin,
            ray.dir.map(f16::from_f32),
            ray.inv_dir.map(f16::from_f32),
        )
    }

    /// The six halves in the order dir.x, dir.y, dir.z, inv.x, inv.y, inv.z.
    pub fn halves(&self) -> [f16; 6] {
        let lo = |w: u32| f16::from_bits(w as u16);
        let hi = |w: u32| f16::from_bits((w >> 16) as u16);
        let [p0, p1, p2] = self.packed;
        [lo(p0), hi(p0), lo(p1), hi(p1), lo(p2), hi(p2)]
    }

    /// Binary16 direction.
    pub fn dir(&self) -> [f16; 3] {
        let h = self.halves();
        [h[0], h[1], h[2]]
    }

    /// Binary16 inverse direction.
    pub fn inv_dir(&self) -> [f16; 3] {
        let h = self.halves();
        [h[3], h[4], h[5]]
    }

    /// The full-precision registers the test runs on: every half widened exactly to f32
    /// (`semantics.md` 9.2).
    pub fn unpack(&self) -> RayRegisters {
        RayRegisters {
            extent: self.extent,
            origin: self.origin,
            dir: self.dir().map(f16::to_f32),
            inv_dir: self.inv_dir().map(f16::to_f32),
        }
    }
}
