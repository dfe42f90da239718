//! Texture tiling: the console GPU's swizzle modes and mip layouts (`../shared/spec/tiling.md`).
//!
//! (Being written.)
