//! Swizzle equations: for each address bit (low bit first) the XOR of element-coordinate bits.
//!
//! Source: AMD's address library (addrlib, GFX10.3 "RB+" path, `gfx10SwizzlePattern.h`: the
//! `GFX10_SW_*_RBPLUS_PATINFO` entries and their `GFX10_SW_PATTERN_NIBBLE*` bit settings; an
//! XOR mode uses entry `5 * log2(pipes) + 5 * (2 * log2(packers) - 2) + log2(bytes/element)`,
//! a non-XOR mode entry `log2(bytes/element)`; byte bits fill the low `log2(bpe)` address
//! bits, as `Gfx10Lib::ConvertSwizzlePatternToEquation` does). The Series X and Series S
//! strings are identical to the project's reference data
//! (`../shared/data/tiling/equations/eq_*_hyp.json`, checked by `tests/tiling_equations.rs`);
//! the product never reads that data at run time.
//!
//! Term syntax: `b<k>` byte-within-element bit k, `x<k>`/`y<k>` element-coordinate bits,
//! `z<k>` array slice (2D, thin 3D) or depth slice (thick 3D) bits; `a^b` XORs terms.
//! Terms above the block (for example `x7` in a 128-wide block) are the inter-block pipe XOR of
//! `_X` modes. The non-XOR table does not depend on the pipe configuration on GFX10.3; the XOR
//! tables do. Missing entries: 3D `64KB_D_X` at 8 and 16 B/element (more than 3 XOR terms per
//! bit, for which addrlib builds no equation and refuses texel addressing).
//!
//! One table per file: `non_xor` (the modes every configuration shares), then the pipe-XOR and
//! VAR modes of each configuration: `series_x`, `series_s` and `navi21`.

use super::mode::SwizzleMode;

mod navi21;
mod non_xor;
mod series_s;
mod series_x;

pub(crate) use navi21::NAVI21_XOR;
pub(crate) use non_xor::NON_XOR;
pub(crate) use series_s::SERIES_S_XOR;
pub(crate) use series_x::SERIES_X_XOR;

/// One equation: resource kind, mode, log2 bytes per element, the address bits.
pub(crate) struct PatternRow {
    pub rsrc_3d: bool,
    pub mode: SwizzleMode,
    pub bpe_log2: u8,
    pub bits: &'static str,
}

const fn row(rsrc_3d: bool, mode: SwizzleMode, bpe_log2: u8, bits: &'static str) -> PatternRow {
    PatternRow {
        rsrc_3d,
        mode,
        bpe_log2,
        bits,
    }
}
