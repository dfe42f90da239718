//! The 32 swizzle modes, the two console configurations, element formats and the GFX10.3
//! validity rules (`../shared/spec/tiling.md`, `../shared/data/tiling/README.md`).

use crate::{Error, Result};
use std::fmt;

/// A swizzle mode, numbered as the XG / addrlib enumerant (0-31, the order of the mode table in
/// `../shared/spec/tiling.md`).
///
/// Name = block size (`256B`, `4KB`, `64KB`, `VAR`) + micro-tiling pattern (`Z` depth/Morton,
/// `S` standard, `D` display, `R` render) + pipe XOR (`X` across blocks, `T` within a block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SwizzleMode {
    Linear = 0,
    Sw256BS = 1,
    Sw256BD = 2,
    Sw256BR = 3,
    Sw4KbZ = 4,
    Sw4KbS = 5,
    Sw4KbD = 6,
    Sw4KbR = 7,
    Sw64KbZ = 8,
    Sw64KbS = 9,
    Sw64KbD = 10,
    Sw64KbR = 11,
    VarZ = 12,
    VarS = 13,
    VarD = 14,
    VarR = 15,
    Sw64KbZT = 16,
    Sw64KbST = 17,
    Sw64KbDT = 18,
    Sw64KbRT = 19,
    Sw4KbZX = 20,
    Sw4KbSX = 21,
    Sw4KbDX = 22,
    Sw4KbRX = 23,
    Sw64KbZX = 24,
    Sw64KbSX = 25,
    Sw64KbDX = 26,
    Sw64KbRX = 27,
    VarZX = 28,
    VarSX = 29,
    VarDX = 30,
    VarRX = 31,
}

/// The micro-tiling pattern letter of a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MicroPattern {
    /// LINEAR: no micro-tiling.
    None,
    /// Z: Morton order (depth/stencil).
    Z,
    /// S: standard swizzle.
    S,
    /// D: display.
    D,
    /// R: render target ("rotated").
    R,
}

/// The pipe-XOR kind of a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeXor {
    None,
    /// `_X`: XOR with bits above the block and with the slice.
    AcrossBlocks,
    /// `_T`: XOR with in-block bits only (tiled resources).
    WithinBlock,
}

/// Block size class of a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockSize {
    Linear,
    B256,
    Kb4,
    Kb64,
    /// Variable: 16 KiB x pipes (512 KiB Series X, 128 KiB Series S).
    Var,
}

const NAMES: [&str; 32] = [
    "LINEAR", "256B_S", "256B_D", "256B_R", "4KB_Z", "4KB_S", "4KB_D", "4KB_R", "64KB_Z", "64KB_S",
    "64KB_D", "64KB_R", "VAR_Z", "VAR_S", "VAR_D", "VAR_R", "64KB_Z_T", "64KB_S_T", "64KB_D_T",
    "64KB_R_T", "4KB_Z_X", "4KB_S_X", "4KB_D_X", "4KB_R_X", "64KB_Z_X", "64KB_S_X", "64KB_D_X",
    "64KB_R_X", "VAR_Z_X", "VAR_S_X", "VAR_D_X", "VAR_R_X",
];

impl SwizzleMode {
    /// All 32 modes in enumerant order.
    pub const ALL: [SwizzleMode; 32] = {
        use SwizzleMode::*;
        [
            Linear, Sw256BS, Sw256BD, Sw256BR, Sw4KbZ, Sw4KbS, Sw4KbD, Sw4KbR, Sw64KbZ, Sw64KbS,
            Sw64KbD, Sw64KbR, VarZ, VarS, VarD, VarR, Sw64KbZT, Sw64KbST, Sw64KbDT, Sw64KbRT,
            Sw4KbZX, Sw4KbSX, Sw4KbDX, Sw4KbRX, Sw64KbZX, Sw64KbSX, Sw64KbDX, Sw64KbRX, VarZX,
            VarSX, VarDX, VarRX,
        ]
    };

    /// The XG / addrlib enumerant, 0..31.
    pub fn enumerant(self) -> u32 {
        self as u32
    }

    /// The mode with enumerant `e`.
    pub fn from_enumerant(e: u32) -> Result<Self> {
        Self::ALL.get(e as usize).copied().ok_or_else(|| {
            Error::field(
                "swizzle mode",
                format!("enumerant {e} is out of range 0..31"),
            )
        })
    }

    /// AMD's name, such as `4KB_S` or `64KB_R_X`.
    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }

    /// Parses AMD's name (case-insensitive; an `SW_`/`ADDR_SW_` prefix, `KB`/`K` spellings and
    /// a bare enumerant are accepted).
    pub fn from_name(name: &str) -> Result<Self> {
        let mut s = name.trim().to_ascii_uppercase().replace('-', "_");
        for prefix in ["ADDR_SW_", "XG_SWIZZLE_MODE_", "SW_"] {
            if let Some(rest) = s.strip_prefix(prefix) {
                s = rest.to_string();
            }
        }
        if let Ok(e) = s.parse::<u32>() {
            return Self::from_enumerant(e);
        }
        let s = s
            .replace("64K_", "64KB_")
            .replace("4K_", "4KB_")
            .replace("256_", "256B_");
        if let Some(i) = NAMES.iter().position(|n| *n == s) {
            return Ok(Self::ALL[i]);
        }
        Err(Error::field(
            "swizzle mode",
            format!(
                "unknown swizzle mode '{name}' (expected one of {})",
                NAMES.join(", ")
            ),
        ))
    }

    /// The block size class.
    pub fn block_size(self) -> BlockSize {
        match self as u8 {
            0 => BlockSize::Linear,
            1..=3 => BlockSize::B256,
            4..=7 | 20..=23 => BlockSize::Kb4,
            12..=15 | 28..=31 => BlockSize::Var,
            _ => BlockSize::Kb64,
        }
    }

    /// The micro-tiling letter.
    pub fn pattern(self) -> MicroPattern {
        if self == SwizzleMode::Linear {
            return MicroPattern::None;
        }
        match (self as u8) % 4 {
            0 => MicroPattern::Z,
            1 => MicroPattern::S,
            2 => MicroPattern::D,
            _ => MicroPattern::R,
        }
    }

    /// The pipe-XOR kind.
    pub fn pipe_xor(self) -> PipeXor {
        match self as u8 {
            16..=19 => PipeXor::WithinBlock,
            20..=31 => PipeXor::AcrossBlocks,
            _ => PipeXor::None,
        }
    }

    /// log2 of the block size in bytes for `console` (LINEAR: 8, one 256-byte row piece).
    pub fn block_bytes_log2(self, console: Console) -> u32 {
        match self.block_size() {
            BlockSize::Linear | BlockSize::B256 => 8,
            BlockSize::Kb4 => 12,
            BlockSize::Kb64 => 16,
            BlockSize::Var => 14 + console.pipes_log2(),
        }
    }
}

impl fmt::Display for SwizzleMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The console, which fixes the GPU configuration that the `_X`, `_T` and VAR patterns
/// depend on.
///
/// The register values are not published; these are the hypotheses of
/// `../shared/data/tiling/README.md` (VAR block = 16 KiB x pipes; 2 packers per shader array).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Console {
    /// XBOX Series X ("Anaconda"): 32 pipes, 8 packers, VAR block 512 KiB.
    #[default]
    SeriesX,
    /// XBOX Series S ("Lockhart"): 8 pipes, 4 packers, VAR block 128 KiB.
    SeriesS,
    /// Not a console: AMD Navi 21 (PC RDNA2; 16 pipes, 16 packers, VAR block 256 KiB), the
    /// public configuration, to check the tables against PC data.
    Navi21,
}

impl Console {
    /// Number of pipes, log2.
    pub fn pipes_log2(self) -> u32 {
        match self {
            Console::SeriesX => 5,
            Console::SeriesS => 3,
            Console::Navi21 => 4,
        }
    }

    /// The VAR block size in bytes.
    pub fn var_block_bytes(self) -> u64 {
        1 << (14 + self.pipes_log2())
    }

    /// `series-x` or `series-s`.
    pub fn name(self) -> &'static str {
        match self {
            Console::SeriesX => "series-x",
            Console::SeriesS => "series-s",
            Console::Navi21 => "navi21",
        }
    }

    /// Parses `series-x`/`anaconda`/`x` or `series-s`/`lockhart`/`s`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "series-x" | "seriesx" | "x" | "anaconda" | "anaconda-hyp" | "scarlett" => {
                Ok(Console::SeriesX)
            }
            "series-s" | "seriess" | "s" | "lockhart" | "lockhart-hyp" => Ok(Console::SeriesS),
            "navi21" | "navi-21" => Ok(Console::Navi21),
            _ => Err(Error::field(
                "console",
                format!("unknown console '{name}' (expected series-x, series-s or navi21)"),
            )),
        }
    }

    /// The console whose configuration has `pipes` pipes and `packers` packers, if any.
    pub fn from_config(pipes: u32, packers: u32) -> Result<Self> {
        match (pipes, packers) {
            (32, 8) => Ok(Console::SeriesX),
            (8, 4) => Ok(Console::SeriesS),
            (16, 16) => Ok(Console::Navi21),
            _ => Err(Error::field(
                "configuration",
                format!(
                    "no pattern tables for {pipes} pipes / {packers} packers \
                     (known: 32/8 Series X, 8/4 Series S, 16/16 Navi 21)"
                ),
            )),
        }
    }
}

/// Resource dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    D1,
    D2,
    D3,
}

impl Dimension {
    /// `1D`, `2D` or `3D`.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::D1 => "1D",
            Dimension::D2 => "2D",
            Dimension::D3 => "3D",
        }
    }
}

/// An element format: bytes per element and texels per element edge (4 for BC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// Canonical name, e.g. `R8G8B8A8` or `BC7`.
    pub name: &'static str,
    /// Bytes per element (1, 2, 4, 8 or 16).
    pub bytes_per_element: u32,
    /// Texels per element edge: 1, or 4 for block-compressed formats.
    pub element_block: u32,
}

const FORMATS: &[(&str, u32, u32)] = &[
    ("R8", 1, 1),
    ("A8", 1, 1),
    ("R8G8", 2, 1),
    ("R16", 2, 1),
    ("D16", 2, 1),
    ("B5G6R5", 2, 1),
    ("R32", 4, 1),
    ("D32", 4, 1),
    ("R8G8B8A8", 4, 1),
    ("B8G8R8A8", 4, 1),
    ("R16G16", 4, 1),
    ("R10G10B10A2", 4, 1),
    ("R11G11B10", 4, 1),
    ("R9G9B9E5", 4, 1),
    ("D24S8", 4, 1),
    ("R32G32", 8, 1),
    ("R16G16B16A16", 8, 1),
    ("R32G32B32A32", 16, 1),
    ("BC1", 8, 4),
    ("BC2", 16, 4),
    ("BC3", 16, 4),
    ("BC4", 8, 4),
    ("BC5", 16, 4),
    ("BC6H", 16, 4),
    ("BC7", 16, 4),
];

impl Format {
    /// `R8G8B8A8`, 4 bytes per texel.
    pub const RGBA8: Format = Format {
        name: "R8G8B8A8",
        bytes_per_element: 4,
        element_block: 1,
    };

    /// Parses a format name (case-insensitive; DXGI-style suffixes such as `_UNORM`, `_FLOAT`,
    /// `_TYPELESS` and a `DXGI_FORMAT_` prefix are ignored), or `RAW<n>` for n bytes/element.
    pub fn from_name(name: &str) -> Result<Self> {
        let mut s = name.trim().to_ascii_uppercase();
        if let Some(rest) = s.strip_prefix("DXGI_FORMAT_") {
            s = rest.to_string();
        }
        for suffix in [
            "_UNORM_SRGB",
            "_UNORM",
            "_SNORM",
            "_UINT",
            "_SINT",
            "_FLOAT",
            "_TYPELESS",
            "_UF16",
            "_SF16",
            "_SHAREDEXP",
        ] {
            if let Some(rest) = s.strip_suffix(suffix) {
                s = rest.to_string();
                break;
            }
        }
        let s = match s.as_str() {
            "RGBA8" => "R8G8B8A8".to_string(),
            "BGRA8" => "B8G8R8A8".to_string(),
            "BC6" => "BC6H".to_string(),
            _ => s,
        };
        if let Some(&(n, bpe, blk)) = FORMATS.iter().find(|(n, _, _)| *n == s) {
            return Ok(Format {
                name: n,
                bytes_per_element: bpe,
                element_block: blk,
            });
        }
        if let Some(n) = s.strip_prefix("RAW").and_then(|v| v.parse::<u32>().ok()) {
            return Format::raw(n);
        }
        let known: Vec<&str> = FORMATS.iter().map(|f| f.0).collect();
        Err(Error::field(
            "format",
            format!(
                "unknown format '{name}' (known: {}, or RAW1/RAW2/RAW4/RAW8/RAW16)",
                known.join(", ")
            ),
        ))
    }

    /// An uncompressed format of `bytes` bytes per element.
    pub fn raw(bytes: u32) -> Result<Self> {
        let name = match bytes {
            1 => "RAW1",
            2 => "RAW2",
            4 => "RAW4",
            8 => "RAW8",
            16 => "RAW16",
            _ => {
                return Err(Error::field(
                    "format",
                    format!("{bytes} bytes per element: only 1, 2, 4, 8 or 16 are tiled"),
                ))
            }
        };
        Ok(Format {
            name,
            bytes_per_element: bytes,
            element_block: 1,
        })
    }

    /// log2 of the bytes per element.
    pub fn bpe_log2(&self) -> u32 {
        self.bytes_per_element.trailing_zeros()
    }

    /// True for 4x4 block-compressed formats.
    pub fn is_block_compressed(&self) -> bool {
        self.element_block > 1
    }
}

/// Checks a mode / dimension / format combination against the GFX10.3 rules of addrlib.
///
/// Valid on GFX10.3 (2D): LINEAR, 256B_S/D, 4KB_S/D, 4KB_S_X/D_X, 64KB_S/D, 64KB_S_T/D_T,
/// 64KB_Z_X/S_X/D_X/R_X, VAR_Z_X, VAR_R_X. 3D excludes the 256B and display modes except
/// 64KB_D_X; 1D takes LINEAR (what the driver uses) or the Z/R modes (addrlib's
/// `Gfx10Rsrc1dSwModeMask`); Z modes take no BC format and at most 8 bytes per element.
pub fn check_mode(mode: SwizzleMode, dim: Dimension, format: &Format) -> Result<()> {
    use SwizzleMode::*;
    let refuse = |why: &str| {
        Err(Error::field(
            "swizzle mode",
            format!(
                "{} is not valid for a {} {} surface on GFX10.3: {why}",
                mode.name(),
                dim.name(),
                format.name
            ),
        ))
    };
    let valid_2d = matches!(
        mode,
        Linear
            | Sw256BS
            | Sw256BD
            | Sw4KbS
            | Sw4KbD
            | Sw4KbSX
            | Sw4KbDX
            | Sw64KbS
            | Sw64KbD
            | Sw64KbST
            | Sw64KbDT
            | Sw64KbZX
            | Sw64KbSX
            | Sw64KbDX
            | Sw64KbRX
            | VarZX
            | VarRX
    );
    if !valid_2d {
        return refuse("addrlib has no pattern for this mode on GFX10/10.3 (reserved)");
    }
    if !format.bytes_per_element.is_power_of_two() || format.bytes_per_element > 16 {
        return refuse("elements must be 1, 2, 4, 8 or 16 bytes");
    }
    match dim {
        Dimension::D1 if !matches!(mode, Linear | Sw64KbZX | Sw64KbRX | VarZX | VarRX) => {
            return refuse("1D textures take LINEAR (the default) or the Z/R pipe-XOR modes");
        }
        Dimension::D3
            if matches!(
                mode,
                Sw256BS | Sw256BD | Sw4KbD | Sw4KbDX | Sw64KbD | Sw64KbDT
            ) =>
        {
            return refuse(
                "volume textures cannot use 256B or display (D) modes other than 64KB_D_X",
            );
        }
        _ => {}
    }
    if mode.pattern() == MicroPattern::Z {
        if format.is_block_compressed() {
            return refuse("Z (depth) modes take no block-compressed format");
        }
        if format.bytes_per_element > 8 {
            return refuse("Z (depth) modes take at most 8 bytes per element");
        }
    }
    Ok(())
}
