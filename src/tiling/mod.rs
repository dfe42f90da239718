//! Texture tiling: the console GPU's swizzle modes and mip layouts (`../shared/spec/tiling.md`).
//!
//! - [`SwizzleMode`]: the 32 modes by name and enumerant, [`check_mode`] the GFX10.3 validity
//!   rules; [`Console`] fixes the pipe configuration the `_X`/`_T`/VAR patterns depend on.
//! - [`Layout`]: addrlib's surface quantities (sizes, alignment, padded dimensions, mip tail,
//!   per-level offsets), texel addressing both ways, whole-image swizzle and unswizzle.
//! - [`SwizzledTexture`]: an RGBA8 texture with a full mip chain stored swizzled, sampled
//!   through the addressing (the renderer's entry point).
//! - [`reference`](mod@reference): runs the reference-vector files of `../shared/data/tiling/`.
//!
//! Files: `mode.rs` (modes, formats, consoles, validity), `layout/` (one file per step of a
//! layout, listed in its notes), `equation.rs` (address-bit equations and their inverse),
//! `patterns/` (the equation tables, one per configuration), `texture.rs`, `reference.rs`.
//!
//! ```
//! use wavetrace::tiling::{Console, Format, Layout, SurfaceDesc, SwizzleMode};
//! let mode = SwizzleMode::from_name("4KB_S").unwrap();
//! let desc = SurfaceDesc::new_2d(Format::RGBA8, 48, 24, 1, 6, mode);
//! let layout = Layout::new(&desc, Console::SeriesX).unwrap();
//! assert_eq!(layout.total_size, 16384);
//! assert!(layout.mips[3].in_tail);
//! let off = layout.offset(0, 0, 5, 3).unwrap();
//! assert_eq!(layout.coord(off).unwrap().map(|c| (c.mip, c.x, c.y)), Some((0, 5, 3)));
//! ```

mod equation;
mod layout;
mod mode;
mod patterns;
pub mod reference;
mod texture;

pub use equation::Equation;
pub use layout::{Layout, MipLayout, SurfaceDesc, TexelCoord};
pub use mode::{
    check_mode, BlockSize, Console, Dimension, Format, MicroPattern, PipeXor, SwizzleMode,
};
pub use texture::{rgba8_mip_chain, SwizzledTexture};
