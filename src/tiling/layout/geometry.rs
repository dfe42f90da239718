//! The element grid and block shape of a surface: bytes per element, mip 0 in elements, and
//! the block's width, height and depth in elements (addrlib's `Block256_2d`/`Block256_3d`
//! micro blocks, and the 1 KiB brick of thick modes scaled up to the block size).

use super::{log2, SurfaceDesc};
use crate::tiling::mode::{BlockSize, Console, Dimension, MicroPattern};

/// Width and height in elements of a 256-byte micro block, per log2(bytes/element)
/// (addrlib `Block256_2d`).
pub(super) const BLOCK256_2D: [(u32, u32); 5] = [(16, 16), (16, 8), (8, 8), (8, 4), (4, 4)];
/// Width, height and depth of a 256-byte 3D micro block (addrlib `Block256_3d`).
pub(super) const BLOCK256_3D: [(u32, u32, u32); 5] =
    [(8, 4, 8), (4, 4, 8), (4, 4, 4), (4, 2, 4), (2, 2, 4)];
/// The 1 KiB 3D brick of thick modes per log2(bytes/element) (4 x 256-byte micro blocks).
const BRICK_1K_3D: [(u32, u32, u32); 5] = [(16, 8, 8), (8, 8, 8), (8, 8, 4), (8, 4, 4), (4, 4, 4)];

/// The quantities of a description that every layout step reads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    /// Bytes per element, and its log2.
    pub bpe: u32,
    pub bpe_log2: u32,
    /// Mip 0 width and height in elements (BC formats: in 4x4 blocks).
    pub w_el: u32,
    pub h_el: u32,
    /// Array size (1D/2D) or depth (3D), unpadded.
    pub num_slices: u32,
    pub is_3d: bool,
    /// 3D with an S or D pattern: blocks cover a 3D region.
    pub thick: bool,
    /// log2 of the block size in bytes.
    pub block_bytes_log2: u32,
    /// Block width, height and depth in elements.
    pub block_w: u32,
    pub block_h: u32,
    pub block_d: u32,
}

impl Geometry {
    pub fn new(d: &SurfaceDesc, console: Console) -> Self {
        let bpe = d.format.bytes_per_element;
        let bpe_log2 = log2(bpe);
        let eb = d.format.element_block;
        let is_3d = d.dim == Dimension::D3;
        let thick = is_3d && matches!(d.mode.pattern(), MicroPattern::S | MicroPattern::D);
        let block_bytes_log2 = d.mode.block_bytes_log2(console);
        let (block_w, block_h, block_d) = match d.mode.block_size() {
            BlockSize::Linear => (256 / bpe, 1, 1),
            _ if thick => thick_block(bpe_log2, block_bytes_log2),
            _ => thin_block(bpe_log2, block_bytes_log2),
        };
        Geometry {
            bpe,
            bpe_log2,
            w_el: d.width.div_ceil(eb),
            h_el: d.height.div_ceil(eb),
            num_slices: d.depth_or_array_size,
            is_3d,
            thick,
            block_bytes_log2,
            block_w,
            block_h,
            block_d,
        }
    }
}

/// A thin block of 2^`block_bytes_log2` bytes: the element bits split between x and y, x
/// taking the odd one.
fn thin_block(bpe_log2: u32, block_bytes_log2: u32) -> (u32, u32, u32) {
    let n = block_bytes_log2 - bpe_log2;
    (1 << n.div_ceil(2), 1 << (n / 2), 1)
}

/// A thick block: the 1 KiB brick doubled along every axis once per factor of 8 in size, then
/// along depth (and height) for the remaining factor of 2 (or 4).
fn thick_block(bpe_log2: u32, block_bytes_log2: u32) -> (u32, u32, u32) {
    let (w, h, d) = BRICK_1K_3D[bpe_log2 as usize];
    let k = block_bytes_log2 - 10;
    let m = 1 << (k / 3);
    let (w, mut h, mut d) = (w * m, h * m, d * m);
    if k % 3 >= 1 {
        d *= 2;
    }
    if k % 3 == 2 {
        h *= 2;
    }
    (w, h, d)
}
