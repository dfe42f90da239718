//! The swizzle equations of the modes without pipe XOR: 256B, 4KB and 64KB `S`/`D` for 2D and
//! (thick) 3D resources. On GFX10.3 they do not depend on the pipe configuration, so every
//! console uses this one table.

use super::{row, PatternRow, SwizzleMode};

/// Modes without pipe XOR (identical for every GFX10.3 configuration).
pub(crate) const NON_XOR: &[PatternRow] = &[
    row(false, SwizzleMode::Sw256BS, 0, "x0 x1 x2 x3 y0 y1 y2 y3"),
    row(false, SwizzleMode::Sw256BS, 1, "b0 x0 x1 x2 y0 y1 y2 x3"),
    row(false, SwizzleMode::Sw256BS, 2, "b0 b1 x0 x1 y0 y1 y2 x2"),
    row(false, SwizzleMode::Sw256BS, 3, "b0 b1 b2 x0 y0 y1 x1 x2"),
    row(false, SwizzleMode::Sw256BS, 4, "b0 b1 b2 b3 y0 y1 x0 x1"),
    row(false, SwizzleMode::Sw256BD, 0, "x0 x1 x2 y1 y0 y2 x3 y3"),
    row(false, SwizzleMode::Sw256BD, 1, "b0 x0 x1 x2 y0 y1 y2 x3"),
    row(false, SwizzleMode::Sw256BD, 2, "b0 b1 x0 x1 y0 y1 x2 y2"),
    row(false, SwizzleMode::Sw256BD, 3, "b0 b1 b2 x0 y0 x1 x2 y1"),
    row(false, SwizzleMode::Sw256BD, 4, "b0 b1 b2 b3 x0 y0 x1 y1"),
    row(
        false,
        SwizzleMode::Sw4KbS,
        0,
        "x0 x1 x2 x3 y0 y1 y2 y3 y4 x4 y5 x5",
    ),
    row(
        false,
        SwizzleMode::Sw4KbS,
        1,
        "b0 x0 x1 x2 y0 y1 y2 x3 y3 x4 y4 x5",
    ),
    row(
        false,
        SwizzleMode::Sw4KbS,
        2,
        "b0 b1 x0 x1 y0 y1 y2 x2 y3 x3 y4 x4",
    ),
    row(
        false,
        SwizzleMode::Sw4KbS,
        3,
        "b0 b1 b2 x0 y0 y1 x1 x2 y2 x3 y3 x4",
    ),
    row(
        false,
        SwizzleMode::Sw4KbS,
        4,
        "b0 b1 b2 b3 y0 y1 x0 x1 y2 x2 y3 x3",
    ),
    row(
        false,
        SwizzleMode::Sw4KbD,
        0,
        "x0 x1 x2 y1 y0 y2 x3 y3 y4 x4 y5 x5",
    ),
    row(
        false,
        SwizzleMode::Sw4KbD,
        1,
        "b0 x0 x1 x2 y0 y1 y2 x3 y3 x4 y4 x5",
    ),
    row(
        false,
        SwizzleMode::Sw4KbD,
        2,
        "b0 b1 x0 x1 y0 y1 x2 y2 y3 x3 y4 x4",
    ),
    row(
        false,
        SwizzleMode::Sw4KbD,
        3,
        "b0 b1 b2 x0 y0 x1 x2 y1 y2 x3 y3 x4",
    ),
    row(
        false,
        SwizzleMode::Sw4KbD,
        4,
        "b0 b1 b2 b3 x0 y0 x1 y1 y2 x2 y3 x3",
    ),
    row(
        false,
        SwizzleMode::Sw64KbS,
        0,
        "x0 x1 x2 x3 y0 y1 y2 y3 y4 x4 y5 x5 y6 x6 y7 x7",
    ),
    row(
        false,
        SwizzleMode::Sw64KbS,
        1,
        "b0 x0 x1 x2 y0 y1 y2 x3 y3 x4 y4 x5 y5 x6 y6 x7",
    ),
    row(
        false,
        SwizzleMode::Sw64KbS,
        2,
        "b0 b1 x0 x1 y0 y1 y2 x2 y3 x3 y4 x4 y5 x5 y6 x6",
    ),
    row(
        false,
        SwizzleMode::Sw64KbS,
        3,
        "b0 b1 b2 x0 y0 y1 x1 x2 y2 x3 y3 x4 y4 x5 y5 x6",
    ),
    row(
        false,
        SwizzleMode::Sw64KbS,
        4,
        "b0 b1 b2 b3 y0 y1 x0 x1 y2 x2 y3 x3 y4 x4 y5 x5",
    ),
    row(
        false,
        SwizzleMode::Sw64KbD,
        0,
        "x0 x1 x2 y1 y0 y2 x3 y3 y4 x4 y5 x5 y6 x6 y7 x7",
    ),
    row(
        false,
        SwizzleMode::Sw64KbD,
        1,
        "b0 x0 x1 x2 y0 y1 y2 x3 y3 x4 y4 x5 y5 x6 y6 x7",
    ),
    row(
        false,
        SwizzleMode::Sw64KbD,
        2,
        "b0 b1 x0 x1 y0 y1 x2 y2 y3 x3 y4 x4 y5 x5 y6 x6",
    ),
    row(
        false,
        SwizzleMode::Sw64KbD,
        3,
        "b0 b1 b2 x0 y0 x1 x2 y1 y2 x3 y3 x4 y4 x5 y5 x6",
    ),
    row(
        false,
        SwizzleMode::Sw64KbD,
        4,
        "b0 b1 b2 b3 x0 y0 x1 y1 y2 x2 y3 x3 y4 x4 y5 x5",
    ),
    row(
        true,
        SwizzleMode::Sw4KbS,
        0,
        "x0 x1 z0 y0 z1 y1 x2 z2 y2 x3 z3 y3",
    ),
    row(
        true,
        SwizzleMode::Sw4KbS,
        1,
        "b0 x0 z0 y0 z1 y1 x1 z2 y2 x2 z3 y3",
    ),
    row(
        true,
        SwizzleMode::Sw4KbS,
        2,
        "b0 b1 x0 y0 z0 y1 x1 z1 y2 x2 z2 y3",
    ),
    row(
        true,
        SwizzleMode::Sw4KbS,
        3,
        "b0 b1 b2 x0 z0 y0 x1 z1 y1 x2 z2 y2",
    ),
    row(
        true,
        SwizzleMode::Sw4KbS,
        4,
        "b0 b1 b2 b3 z0 y0 x0 z1 y1 x1 z2 y2",
    ),
    row(
        true,
        SwizzleMode::Sw64KbS,
        0,
        "x0 x1 z0 y0 z1 y1 x2 z2 y2 x3 z3 y3 x4 z4 y4 x5",
    ),
    row(
        true,
        SwizzleMode::Sw64KbS,
        1,
        "b0 x0 z0 y0 z1 y1 x1 z2 y2 x2 z3 y3 x3 z4 y4 x4",
    ),
    row(
        true,
        SwizzleMode::Sw64KbS,
        2,
        "b0 b1 x0 y0 z0 y1 x1 z1 y2 x2 z2 y3 x3 z3 y4 x4",
    ),
    row(
        true,
        SwizzleMode::Sw64KbS,
        3,
        "b0 b1 b2 x0 z0 y0 x1 z1 y1 x2 z2 y2 x3 z3 y3 x4",
    ),
    row(
        true,
        SwizzleMode::Sw64KbS,
        4,
        "b0 b1 b2 b3 z0 y0 x0 z1 y1 x1 z2 y2 x2 z3 y3 x3",
    ),
];
