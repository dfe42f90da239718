//! `Wave<W>`: the lanes of one wave32 or wave64, their ray VGPRs, exec mask and state.

use super::intersect::LaneRay;
use crate::hw::instruction::{InactiveReason, LaneOutcome, BOX_MISS};
use crate::hw::NodePointer;

/// Why a lane is (in)active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LaneStatus {
    /// Running: its exec bit is set.
    Active,
    /// Never given a ray (exec mask off from the start, e.g. a partial last wave).
    #[default]
    ExecOff,
    /// Its traversal ended (stack empty, or an any-hit found).
    Finished,
    /// The instruction found a NaN register or an infinite origin (`semantics.md` 8): the
    /// lane returned the miss encoding, cost nothing, and was retired.
    Deactivated(InactiveReason),
}

/// One wave of `W` lanes (32 or 64): per-lane VGPRs, exec mask, status and traversal state
/// `S` (owned by the traversal shader).
#[derive(Clone, Debug)]
pub struct Wave<const W: usize, S = ()> {
    /// Index of the wave in its dispatch; decides its TD (`wave::td`).
    pub index: u64,
    /// VGPR 0: the node pointer each lane asks for.
    pub node: [NodePointer; W],
    /// VGPRs 1-10: extent, origin, direction, inverse direction.
    pub ray: [LaneRay; W],
    /// Bit i set = lane i executes the next instruction.
    pub exec: u64,
    /// Why each lane is or is not active.
    pub status: [LaneStatus; W],
    /// Per-lane traversal state.
    pub state: [S; W],
}

/// The supported wave widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum WaveWidth {
    /// wave32.
    #[default]
    W32,
    /// wave64.
    W64,
}

impl WaveWidth {
    pub fn lanes(self) -> usize {
        match self {
            WaveWidth::W32 => 32,
            WaveWidth::W64 => 64,
        }
    }

    /// From 32 or 64.
    pub fn from_lanes(lanes: usize) -> Option<WaveWidth> {
        match lanes {
            32 => Some(WaveWidth::W32),
            64 => Some(WaveWidth::W64),
            _ => None,
        }
    }
}

const EMPTY_RAY: LaneRay = LaneRay {
    extent: 0.0,
    origin: [0.0; 3],
    dir: [0.0; 3],
    inv_dir: [0.0; 3],
};

impl<const W: usize, S: Default> Wave<W, S> {
    /// A wave with every lane off.
    pub fn new(index: u64) -> Self {
        assert!(W == 32 || W == 64, "waves have 32 or 64 lanes, not {W}");
        Wave {
            index,
            node: [NodePointer::INVALID; W],
            ray: [EMPTY_RAY; W],
            exec: 0,
            status: [LaneStatus::ExecOff; W],
            state: std::array::from_fn(|_| S::default()),
        }
    }
}

impl<const W: usize, S> Wave<W, S> {
    /// Turns lane `i` on with `node` and `ray`.
    pub fn activate(&mut self, i: usize, node: NodePointer, ray: LaneRay) {
        self.node[i] = node;
        self.ray[i] = ray;
        self.status[i] = LaneStatus::Active;
        self.exec |= 1 << i;
    }

    /// Turns lane `i` off with a reason.
    #[inline]
    pub fn retire(&mut self, i: usize, status: LaneStatus) {
        debug_assert!(status != LaneStatus::Active);
        self.status[i] = status;
        self.exec &= !(1u64 << i);
    }

    /// Number of lanes whose exec bit is set.
    pub fn active_lanes(&self) -> u32 {
        self.exec.count_ones()
    }
}

/// Whether `ray.inactive_reason()` is `None` (`semantics.md` 8): no NaN in any register and
/// a finite origin, tested on the magnitude bits (|x| > inf bits = NaN, >= inf bits = not
/// finite) with no early exits.
#[inline(always)]
pub fn ray_is_active(ray: &LaneRay) -> bool {
    const INF: u32 = 0x7f80_0000;
    let mag = |x: f32| x.to_bits() & 0x7fff_ffff;
    let origin = mag(ray.origin[0])
        .max(mag(ray.origin[1]))
        .max(mag(ray.origin[2]));
    let rest = mag(ray.dir[0])
        .max(mag(ray.dir[1]))
        .max(mag(ray.dir[2]))
        .max(mag(ray.inv_dir[0]))
        .max(mag(ray.inv_dir[1]))
        .max(mag(ray.inv_dir[2]))
        .max(mag(ray.extent));
    (origin < INF) & (rest <= INF)
}

/// The four dwords and the outcome of every lane of one wave instruction.
#[derive(Clone, Debug)]
pub struct WaveResults<const W: usize> {
    pub dwords: [[u32; 4]; W],
    pub outcome: [LaneOutcome; W],
}

impl<const W: usize> Default for WaveResults<W> {
    fn default() -> Self {
        WaveResults {
            dwords: [BOX_MISS; W],
            outcome: [LaneOutcome::Inactive(InactiveReason::NanExtent); W],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bit screen agrees with `inactive_reason` when any one register holds a special
    /// value (NaN, ±inf, ±0, the largest finite, the smallest subnormal).
    #[test]
    fn active_screen_matches_inactive_reason() {
        let specials = [
            1.5,
            -0.0,
            0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::from_bits(1),
        ];
        let base = LaneRay {
            extent: 10.0,
            origin: [1.0, 2.0, 3.0],
            dir: [0.5, -0.5, 1.0],
            inv_dir: [2.0, -2.0, 1.0],
        };
        let mut cases = 0;
        for reg in 0..10 {
            for &v in &specials {
                let mut r = base;
                match reg {
                    0 => r.extent = v,
                    1..=3 => r.origin[reg - 1] = v,
                    4..=6 => r.dir[reg - 4] = v,
                    _ => r.inv_dir[reg - 7] = v,
                }
                assert_eq!(ray_is_active(&r), r.inactive_reason().is_none(), "{r:?}");
                cases += 1;
            }
        }
        assert_eq!(cases, 90);
    }
}
