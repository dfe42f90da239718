//! Address-bit equations: evaluation, per-coordinate lookup columns and the GF(2) inverse.

use super::mode::{BlockSize, Console, PipeXor, SwizzleMode};
use super::patterns::{PatternRow, NAVI21_XOR, NON_XOR, SERIES_S_XOR, SERIES_X_XOR};

/// Maximum address bits of a block (VAR on Series X is 2^19 bytes).
pub const MAX_BITS: usize = 20;

/// One swizzle equation over `num_bits` address bits.
///
/// Address bit `i` = `parity(x & x_mask[i]) ^ parity(y & y_mask[i]) ^ parity(z & z_mask[i]) ^
/// parity(byte & b_mask[i])`, with x, y in elements and z the slice or depth index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Equation {
    pub num_bits: u32,
    pub x_mask: [u32; MAX_BITS],
    pub y_mask: [u32; MAX_BITS],
    pub z_mask: [u32; MAX_BITS],
    pub b_mask: [u32; MAX_BITS],
}

impl Equation {
    /// Parses the table syntax (`b0 x0 y0^x7 ...`). Panics on a malformed table entry (a bug).
    fn parse(bits: &str) -> Equation {
        let mut eq = Equation {
            num_bits: 0,
            x_mask: [0; MAX_BITS],
            y_mask: [0; MAX_BITS],
            z_mask: [0; MAX_BITS],
            b_mask: [0; MAX_BITS],
        };
        for (i, bit) in bits.split_whitespace().enumerate() {
            assert!(i < MAX_BITS, "pattern table entry too long: {bits}");
            for term in bit.split('^') {
                let (c, k) = term.split_at(1);
                let k: u32 = k.parse().expect("pattern table term index");
                let m = match c {
                    "x" => &mut eq.x_mask,
                    "y" => &mut eq.y_mask,
                    "z" => &mut eq.z_mask,
                    "b" => &mut eq.b_mask,
                    _ => panic!("pattern table term {term}"),
                };
                m[i] ^= 1 << k;
            }
            eq.num_bits = i as u32 + 1;
        }
        eq
    }

    /// The equation for `mode` on a 2D (or thin 3D) or thick-capable 3D resource, `None` when
    /// addrlib has none (LINEAR, invalid combinations, 3D 64KB_D_X at 8 and 16 B/element).
    pub fn lookup(
        mode: SwizzleMode,
        rsrc_3d: bool,
        bpe_log2: u32,
        console: Console,
    ) -> Option<Equation> {
        let table: &[PatternRow] =
            if mode.pipe_xor() == PipeXor::None && mode.block_size() != BlockSize::Var {
                NON_XOR
            } else {
                match console {
                    Console::SeriesX => SERIES_X_XOR,
                    Console::SeriesS => SERIES_S_XOR,
                    Console::Navi21 => NAVI21_XOR,
                }
            };
        table
            .iter()
            .find(|r| r.mode == mode && r.rsrc_3d == rsrc_3d && r.bpe_log2 as u32 == bpe_log2)
            .map(|r| Equation::parse(r.bits))
    }

    /// Evaluates the equation for element (x, y, z), byte 0 of the element.
    #[inline]
    pub fn eval(&self, x: u32, y: u32, z: u32) -> u64 {
        let mut a = 0u64;
        for i in 0..self.num_bits as usize {
            let v = (x & self.x_mask[i]).count_ones()
                ^ (y & self.y_mask[i]).count_ones()
                ^ (z & self.z_mask[i]).count_ones();
            a |= ((v & 1) as u64) << i;
        }
        a
    }

    /// The address bits that coordinate bit `k` of `channel` (0 x, 1 y, 2 z) toggles.
    pub fn column(&self, channel: usize, k: u32) -> u64 {
        let masks = match channel {
            0 => &self.x_mask,
            1 => &self.y_mask,
            _ => &self.z_mask,
        };
        let mut c = 0u64;
        for (i, m) in masks.iter().enumerate().take(self.num_bits as usize) {
            if (m >> k) & 1 == 1 {
                c |= 1 << i;
            }
        }
        c
    }

    /// A lookup table of the equation's contribution for every value of one coordinate in
    /// `0..n` (the equation is linear over GF(2), so contributions XOR together).
    pub fn table(&self, channel: usize, n: u32) -> Vec<u32> {
        let cols: Vec<u64> = (0..32).map(|k| self.column(channel, k)).collect();
        (0..n)
            .map(|v| {
                let mut a = 0u64;
                let mut bits = v;
                while bits != 0 {
                    let k = bits.trailing_zeros();
                    a ^= cols[k as usize];
                    bits &= bits - 1;
                }
                a as u32
            })
            .collect()
    }

    /// The number of x bits, starting at x0, that map directly to the address bits right
    /// above the element's byte bits (a run of 2^n elements is then contiguous in memory).
    pub fn contiguous_x_log2(&self, bpe_log2: u32) -> u32 {
        let mut n = 0;
        while ((bpe_log2 + n) as usize) < self.num_bits as usize {
            let i = (bpe_log2 + n) as usize;
            if self.x_mask[i] == 1 << n && self.y_mask[i] == 0 && self.z_mask[i] == 0 {
                // the bit must not appear anywhere else either
                let elsewhere =
                    (0..self.num_bits as usize).any(|j| j != i && (self.x_mask[j] >> n) & 1 == 1);
                if elsewhere {
                    break;
                }
                n += 1;
            } else {
                break;
            }
        }
        n
    }
}

/// The GF(2) inverse of an equation restricted to the in-block coordinate bits.
///
/// Unknowns: the element's byte bits, x bits below log2(block_w), y bits below log2(block_h)
/// and (thick) z bits below log2(block_d); everything else is known from the block position.
#[derive(Clone, Debug)]
pub struct InverseEquation {
    /// For each unknown: (channel 0 x, 1 y, 2 z, 3 byte; bit index).
    unknowns: Vec<(u8, u32)>,
    /// Row j: the address bits whose XOR gives unknown j.
    inverse_rows: Vec<u64>,
}

impl InverseEquation {
    /// Builds the inverse, or `None` if the in-block map is not a bijection (a table bug).
    pub fn new(
        eq: &Equation,
        bpe_log2: u32,
        w_log2: u32,
        h_log2: u32,
        d_log2: u32,
    ) -> Option<Self> {
        let mut unknowns = Vec::new();
        for k in 0..bpe_log2 {
            unknowns.push((3u8, k));
        }
        for k in 0..w_log2 {
            unknowns.push((0, k));
        }
        for k in 0..h_log2 {
            unknowns.push((1, k));
        }
        for k in 0..d_log2 {
            unknowns.push((2, k));
        }
        let n = eq.num_bits as usize;
        if unknowns.len() != n {
            return None;
        }
        // Column j of M: the address bits unknown j toggles.
        let col = |c: u8, k: u32| -> u64 {
            if c == 3 {
                let mut v = 0u64;
                for i in 0..n {
                    if (eq.b_mask[i] >> k) & 1 == 1 {
                        v |= 1 << i;
                    }
                }
                v
            } else {
                eq.column(c as usize, k)
            }
        };
        // Gauss-Jordan on rows of [M | I], stored as rows over unknowns (bits) with the
        // identity on address bits.
        let mut rows: Vec<(u64, u64)> = (0..n)
            .map(|i| {
                let mut r = 0u64;
                for (j, &(c, k)) in unknowns.iter().enumerate() {
                    if (col(c, k) >> i) & 1 == 1 {
                        r |= 1 << j;
                    }
                }
                (r, 1u64 << i)
            })
            .collect();
        for j in 0..n {
            let p = (j..n).find(|&r| (rows[r].0 >> j) & 1 == 1)?;
            rows.swap(j, p);
            let pivot = rows[j];
            for (r, row) in rows.iter_mut().enumerate() {
                if r != j && (row.0 >> j) & 1 == 1 {
                    row.0 ^= pivot.0;
                    row.1 ^= pivot.1;
                }
            }
        }
        Some(InverseEquation {
            unknowns,
            inverse_rows: rows.iter().map(|r| r.1).collect(),
        })
    }

    /// Solves for the in-block coordinate bits: `addr_bits` is the in-block address with the
    /// known (above-block) contributions already XORed out. Returns (x, y, z, byte) low bits.
    pub fn solve(&self, addr_bits: u64) -> (u32, u32, u32, u32) {
        let mut out = [0u32; 4];
        for (j, &(c, k)) in self.unknowns.iter().enumerate() {
            let v = (addr_bits & self.inverse_rows[j]).count_ones() & 1;
            out[c as usize] |= v << k;
        }
        (out[0], out[1], out[2], out[3])
    }
}
