//! Heatmap images of per-pixel cost (TD clocks) with a legend: a colour bar and its scale
//! printed in a built-in 3 x 5 pixel digit font (no font files needed).

use image::{Rgb, RgbImage};

/// Height in pixels of the legend strip under the map.
const LEGEND_HEIGHT: u32 = 38;

/// Maps `t` in [0, 1] to a colour: black, blue, magenta, orange, yellow, white.
pub fn colormap(t: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 6] = [
        [0.0, 0.0, 0.0],
        [0.1, 0.1, 0.8],
        [0.7, 0.1, 0.7],
        [1.0, 0.5, 0.1],
        [1.0, 0.9, 0.2],
        [1.0, 1.0, 1.0],
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let x = t * (STOPS.len() - 1) as f32;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f32;
    let c = |k: usize| ((STOPS[i][k] * (1.0 - f) + STOPS[i + 1][k] * f) * 255.0 + 0.5) as u8;
    [c(0), c(1), c(2)]
}

/// Glyphs 0-9, A-Z, '.', 'k', '-', '_' and ' ' as 3 x 5 bitmaps (bit 2 = left column), rows
/// top first.
fn glyph(ch: char) -> [u8; 5] {
    match ch {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '.' => [0, 0, 0, 0, 2],
        'k' => [4, 5, 6, 5, 5],
        'M' => [5, 7, 7, 5, 5],
        'A' => [2, 5, 7, 5, 5],
        'B' => [6, 5, 6, 5, 6],
        'C' => [3, 4, 4, 4, 3],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'F' => [7, 4, 6, 4, 4],
        'G' => [3, 4, 5, 5, 3],
        'H' => [5, 5, 7, 5, 5],
        'I' => [7, 2, 2, 2, 7],
        'J' => [1, 1, 1, 5, 2],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'N' => [6, 5, 5, 5, 5],
        'O' => [2, 5, 5, 5, 2],
        'P' => [6, 5, 6, 4, 4],
        'Q' => [2, 5, 5, 6, 3],
        'R' => [6, 5, 6, 5, 5],
        'S' => [3, 4, 2, 1, 6],
        'T' => [7, 2, 2, 2, 2],
        'U' => [5, 5, 5, 5, 7],
        'V' => [5, 5, 5, 5, 2],
        'W' => [5, 5, 7, 7, 5],
        'X' => [5, 5, 2, 5, 5],
        'Y' => [5, 5, 2, 2, 2],
        'Z' => [7, 1, 2, 4, 7],
        '-' => [0, 0, 7, 0, 0],
        '_' => [0, 0, 0, 0, 7],
        _ => [0; 5],
    }
}

/// Draws `text` with its top-left corner at (x, y), each font pixel `scale` image pixels.
fn draw_text(img: &mut RgbImage, text: &str, x: u32, y: u32, scale: u32, colour: [u8; 3]) {
    for (n, ch) in text.chars().enumerate() {
        let rows = glyph(ch);
        for (r, bits) in rows.iter().enumerate() {
            for c in 0..3u32 {
                if bits >> (2 - c) & 1 == 0 {
                    continue;
                }
                for dy in 0..scale {
                    for dx in 0..scale {
                        let px = x + (n as u32 * 4 + c) * scale + dx;
                        let py = y + r as u32 * scale + dy;
                        if px < img.width() && py < img.height() {
                            img.put_pixel(px, py, Rgb(colour));
                        }
                    }
                }
            }
        }
    }
}

/// Short label for a scale value: 950, 1.2k, 3.4M.
pub fn label(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Paints `values` (row-major, `width` wide) into the top rows of `img`, `scale_max` white.
fn paint(img: &mut RgbImage, values: &[u32], width: u32, scale_max: u32) {
    let scale = scale_max.max(1) as f32;
    for (i, &v) in values.iter().enumerate() {
        let (x, y) = (i as u32 % width, i as u32 / width);
        img.put_pixel(x, y, Rgb(colormap(v as f32 / scale)));
    }
}

/// The map of [`heatmap_image`] without its legend strip (for pages that draw one legend
/// for many maps).
pub fn heatmap_only(values: &[u32], width: u32, height: u32, scale_max: u32) -> RgbImage {
    assert_eq!(
        values.len(),
        width as usize * height as usize,
        "heatmap size mismatch"
    );
    let mut img = RgbImage::new(width, height);
    paint(&mut img, values, width, scale_max);
    img
}

/// A heatmap of `values` (row-major, `width` x `height`) scaled so that `scale_max` is white,
/// with a legend strip below: the colour bar from 0 to `scale_max`, labels at 0, half and
/// the maximum, and `title` (the variant's name; letters, digits, `-` and `_`) under them.
pub fn heatmap_image(
    values: &[u32],
    width: u32,
    height: u32,
    scale_max: u32,
    title: &str,
) -> RgbImage {
    assert_eq!(
        values.len(),
        width as usize * height as usize,
        "heatmap size mismatch"
    );
    let mut img = RgbImage::new(width, height + LEGEND_HEIGHT);
    paint(&mut img, values, width, scale_max);
    // Colour bar: 8 rows across the full width.
    for x in 0..width {
        let c = colormap(x as f32 / (width.max(2) - 1) as f32);
        for y in height + 2..height + 10 {
            img.put_pixel(x, y, Rgb(c));
        }
    }
    let text_y = height + 13;
    let white = [255, 255, 255];
    draw_text(&mut img, "0", 1, text_y, 2, white);
    let mid = label(scale_max as f64 / 2.0);
    let mid_x = (width / 2).saturating_sub(mid.len() as u32 * 4);
    draw_text(&mut img, &mid, mid_x, text_y, 2, white);
    let max = label(scale_max as f64);
    let max_x = width.saturating_sub(max.len() as u32 * 8 + 1);
    draw_text(&mut img, &max, max_x, text_y, 2, white);
    draw_text(
        &mut img,
        &title.to_ascii_uppercase(),
        1,
        height + 27,
        2,
        [200, 200, 200],
    );
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormap_ends_are_black_and_white() {
        assert_eq!(colormap(0.0), [0, 0, 0]);
        assert_eq!(colormap(1.0), [255, 255, 255]);
        assert_eq!(colormap(f32::NAN), [255, 255, 255]);
        // Brightness grows along the map.
        let lum = |c: [u8; 3]| c.iter().map(|&v| v as u32).sum::<u32>();
        let steps: Vec<u32> = (0..=10).map(|i| lum(colormap(i as f32 / 10.0))).collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
    }

    #[test]
    fn heatmap_has_legend_and_shared_scale() {
        let values = [0, 50, 100, 200];
        let img = heatmap_image(&values, 2, 2, 100, "");
        assert_eq!(img.dimensions(), (2, 2 + LEGEND_HEIGHT));
        assert_eq!(img.get_pixel(0, 0).0, [0, 0, 0]);
        assert_eq!(img.get_pixel(0, 1).0, [255, 255, 255]);
        // Above the scale clamps to white, like the maximum.
        assert_eq!(img.get_pixel(1, 1).0, [255, 255, 255]);
        assert_eq!(label(1234.0), "1.2k");
        assert_eq!(label(56_000.0), "56k");
        assert_eq!(label(999.0), "999");
    }

    #[test]
    fn heatmap_carries_its_title_below_the_legend() {
        let values = vec![0; 64 * 4];
        let strip = |img: &RgbImage| -> usize {
            (4 + 26..img.height())
                .flat_map(|y| (0..img.width()).map(move |x| (x, y)))
                .filter(|&(x, y)| img.get_pixel(x, y).0 != [0, 0, 0])
                .count()
        };
        let untitled = heatmap_image(&values, 64, 4, 10, "");
        let titled = heatmap_image(&values, 64, 4, 10, "walkback-8");
        assert_eq!(strip(&untitled), 0);
        // Every character of the name has lit pixels: 10 characters of at least 2 font
        // pixels, each 2 x 2 image pixels.
        assert!(strip(&titled) >= 10 * 2 * 4, "{}", strip(&titled));
        // Each letter, digit and '-' has a glyph (a blank one is only for other characters).
        for ch in ('A'..='Z').chain('0'..='9').chain(['-', '_']) {
            assert_ne!(glyph(ch), [0; 5], "{ch}");
        }
    }
}
