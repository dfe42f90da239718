//! Heatmaps of per-pixel TD clocks, with a legend drawn into the image.

/// Colour ramp from dark blue (0) through purple and orange to pale yellow (1).
pub fn ramp(t: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 5] = [
        [0.02, 0.02, 0.12],
        [0.30, 0.08, 0.55],
        [0.80, 0.20, 0.38],
        [0.99, 0.58, 0.10],
        [0.99, 0.98, 0.65],
    ];
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) } * (STOPS.len() - 1) as f32;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let f = t - i as f32;
    let mut out = [0u8; 3];
    for c in 0..3 {
        let v = STOPS[i][c] * (1.0 - f) + STOPS[i + 1][c] * f;
        out[c] = (v * 255.0 + 0.5) as u8;
    }
    out
}

/// 3x5 glyphs, one row per entry, bit 2 = left column.
fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' | 'O' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' | 'S' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '.' => [0, 0, 0, 0, 2],
        '-' => [0, 0, 7, 0, 0],
        '/' => [1, 1, 2, 4, 4],
        'A' => [2, 5, 7, 5, 5],
        'C' => [7, 4, 4, 4, 7],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'M' => [5, 7, 7, 5, 5],
        'N' => [6, 5, 5, 5, 5],
        'P' => [7, 5, 7, 4, 4],
        'R' => [6, 5, 6, 5, 5],
        'T' => [7, 2, 2, 2, 2],
        'X' => [5, 5, 2, 5, 5],
        'Y' => [5, 5, 2, 2, 2],
        _ => [0; 5],
    }
}

/// Width in pixels of `text` at `scale`.
fn text_width(text: &str, scale: u32) -> u32 {
    text.chars().count() as u32 * 4 * scale
}

fn draw_text(rgb: &mut [u8], width: u32, x0: u32, y0: u32, scale: u32, text: &str) {
    for (k, c) in text.chars().enumerate() {
        let g = glyph(c.to_ascii_uppercase());
        for (row, bits) in g.iter().enumerate() {
            for col in 0..3u32 {
                if bits & (4 >> col) == 0 {
                    continue;
                }
                for dy in 0..scale {
                    for dx in 0..scale {
                        let x = x0 + (k as u32 * 4 + col) * scale + dx;
                        let y = y0 + row as u32 * scale + dy;
                        let i = ((y * width + x) * 3) as usize;
                        if x < width && i + 2 < rgb.len() {
                            rgb[i..i + 3].copy_from_slice(&[255, 255, 255]);
                        }
                    }
                }
            }
        }
    }
}

/// An RGB8 heatmap of `values` (`width` x `height`, row-major) scaled to their maximum,
/// with a legend band below: the colour bar from 0 to the maximum, its end values, and
/// `title`. Returns (width, height with legend, bytes).
pub fn heatmap_rgb8(values: &[f32], width: u32, height: u32, title: &str) -> (u32, u32, Vec<u8>) {
    let max = values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f32, f32::max);
    let scale = if width >= 320 { 2 } else { 1 };
    let pad = 2 * scale;
    let bar = 6 * scale;
    let band = pad + bar + pad + 5 * scale + pad + 5 * scale + pad;
    let total_h = height + band;
    let mut rgb = vec![0u8; (width * total_h * 3) as usize];
    for (i, v) in values.iter().enumerate() {
        let t = if max > 0.0 { v / max } else { 0.0 };
        rgb[i * 3..i * 3 + 3].copy_from_slice(&ramp(t));
    }
    let margin = pad.min(width / 4);
    let bar_w = width.saturating_sub(2 * margin).max(1);
    for y in height + pad..height + pad + bar {
        for x in margin..(margin + bar_w).min(width) {
            let c = ramp((x - margin) as f32 / (bar_w.max(2) - 1) as f32);
            let i = ((y * width + x) * 3) as usize;
            rgb[i..i + 3].copy_from_slice(&c);
        }
    }
    let label_y = height + pad + bar + pad;
    draw_text(&mut rgb, width, margin, label_y, scale, "0");
    let max_label = format!("{max:.0}");
    let mw = text_width(&max_label, scale);
    draw_text(
        &mut rgb,
        width,
        (margin + bar_w).saturating_sub(mw),
        label_y,
        scale,
        &max_label,
    );
    let title_y = label_y + 5 * scale + pad;
    if text_width(title, scale) <= width {
        draw_text(&mut rgb, width, margin, title_y, scale, title);
    }
    (width, total_h, rgb)
}
