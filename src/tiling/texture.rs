//! placeholder
pub struct SwizzledTexture;
