//! Writing images: PNG (sRGB, 8 bit) and EXR (linear f32), always whole or not at all
//! ([`crate::outfile`]).

use super::Image;
use crate::outfile::write_atomic;
use crate::scene::linear_to_srgb8;
use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Output formats, chosen by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Exr,
}

impl ImageFormat {
    /// The format for `path`'s extension (`.png` or `.exr`, any case).
    pub fn from_path(path: &Path) -> Result<ImageFormat> {
        match path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .as_deref()
        {
            Some("png") => Ok(ImageFormat::Png),
            Some("exr") => Ok(ImageFormat::Exr),
            _ => Err(Error::field(
                "--out",
                format!("{}: use a .png or .exr file name", path.display()),
            )),
        }
    }
}

/// 8-bit sRGB bytes (RGB, row-major) of `image` scaled by `2^exposure`.
pub fn to_srgb8(image: &Image, exposure: f32) -> Vec<u8> {
    let scale = exposure.exp2();
    image
        .pixels
        .iter()
        .flat_map(|p| (*p * scale).to_array().map(linear_to_srgb8))
        .collect()
}

/// Encodes RGB8 bytes as PNG into `w`.
pub fn encode_png(w: &mut dyn Write, width: u32, height: u32, rgb: &[u8]) -> Result<()> {
    use image::ImageEncoder;
    image::codecs::png::PngEncoder::new(w)
        .write_image(rgb, width, height, image::ExtendedColorType::Rgb8)
        .map_err(|e| Error::Other(format!("PNG encoding failed: {e}")))
}

/// Encodes `image` as a linear f32 RGB EXR into `w`: RLE-compressed 64 x 64 tiles, stored
/// in increasing order.
///
/// Why the order: in exr's default order (`LineOrder::Unspecified`) its parallel compressor
/// writes each tile as soon as it is compressed, so the bytes of one image would vary from
/// run to run. In increasing order the file is a function of the pixels alone, like the
/// PNG.
pub fn encode_exr(w: &mut dyn Write, image: &Image) -> Result<()> {
    encode_exr_with(w, image, &[])
}

/// [`encode_exr`] with text attributes (name, value) added to the header, as the render
/// parts of a sharded job carry their job, shard and counters.
pub fn encode_exr_with(
    w: &mut dyn Write,
    image: &Image,
    attributes: &[(&str, &str)],
) -> Result<()> {
    use exr::prelude::*;
    let (width, height) = (image.width as usize, image.height as usize);
    let channels = SpecificChannels::rgb(|Vec2(x, y): Vec2<usize>| {
        let p = image.pixels[y * width + x];
        (p.x, p.y, p.z)
    });
    let encoding = Encoding {
        line_order: LineOrder::Increasing,
        ..Encoding::FAST_LOSSLESS
    };
    let mut exr = Image::from_encoded_channels((width, height), encoding, channels);
    for (name, value) in attributes {
        // EXR text is bytes; UTF-8 goes through unchanged.
        let text = |s: &str| Text::from_slice_unchecked(s.as_bytes());
        exr.layer_data
            .attributes
            .other
            .insert(text(name), AttributeValue::Text(text(value)));
    }
    let mut buf = std::io::Cursor::new(Vec::new());
    exr.write()
        .to_buffered(&mut buf)
        .map_err(|e| crate::Error::Other(format!("EXR encoding failed: {e}")))?;
    w.write_all(buf.get_ref())
        .map_err(|e| crate::Error::Other(format!("write failed: {e}")))
}

/// Reads an RGB EXR written by [`encode_exr_with`] (f32 channels R, G, B; any others are
/// ignored): its image and its header's text attributes. Errors name `path`.
pub fn read_exr(path: &Path) -> Result<(Image, Vec<(String, String)>)> {
    use exr::prelude::{read_first_flat_layer_from_file, AttributeValue, FlatSamples, Text};
    let bad = |message: String| crate::Error::Parse {
        path: path.to_path_buf(),
        line: 0,
        message,
    };
    let exr = read_first_flat_layer_from_file(path)
        .map_err(|e| bad(format!("not a readable EXR file: {e}")))?;
    let layer = &exr.layer_data;
    let (width, height) = (layer.size.width(), layer.size.height());
    let channel = |name: &str| -> Result<&[f32]> {
        let c = (layer.channel_data.list.iter())
            .find(|c| c.name.to_string() == name)
            .ok_or_else(|| bad(format!("no {name} channel")))?;
        match &c.sample_data {
            FlatSamples::F32(v) if v.len() == width * height => Ok(v),
            _ => Err(bad(format!(
                "channel {name} is not {width}x{height} f32 samples"
            ))),
        }
    };
    let (r, g, b) = (channel("R")?, channel("G")?, channel("B")?);
    let image = Image {
        width: u32::try_from(width).map_err(|_| bad(format!("{width} pixels wide")))?,
        height: u32::try_from(height).map_err(|_| bad(format!("{height} pixels high")))?,
        pixels: (0..width * height)
            .map(|i| glam::Vec3::new(r[i], g[i], b[i]))
            .collect(),
    };
    let text = |t: &Text| String::from_utf8_lossy(t.bytes()).into_owned();
    let mut attributes: Vec<(String, String)> = (layer.attributes.other.iter())
        .filter_map(|(name, value)| match value {
            AttributeValue::Text(t) => Some((text(name), text(t))),
            _ => None,
        })
        .collect();
    attributes.sort();
    Ok((image, attributes))
}

/// Refuses a NaN or infinite exposure (it would write a black or white PNG); `field` names
/// where it came from.
pub fn check_exposure(field: &str, exposure: f32) -> Result<()> {
    if exposure.is_finite() {
        Ok(())
    } else {
        Err(crate::Error::field(
            field,
            format!("{exposure}: must be a finite number of stops"),
        ))
    }
}

/// Writes `image` to `path` as PNG (with `exposure` in stops) or EXR (linear, exposure
/// ignored), by extension, through [`write_atomic`].
pub fn write_image(path: &Path, image: &Image, exposure: f32) -> Result<()> {
    let format = ImageFormat::from_path(path)?;
    check_exposure("exposure", exposure)?;
    write_atomic(path, |w| encode_image(w, format, image, exposure))
}

/// Encodes `image` to `w` as PNG (with `exposure` in stops) or EXR (linear, exposure
/// ignored).
pub fn encode_image(
    w: &mut dyn Write,
    format: ImageFormat,
    image: &Image,
    exposure: f32,
) -> Result<()> {
    match format {
        ImageFormat::Png => encode_png(w, image.width, image.height, &to_srgb8(image, exposure)),
        ImageFormat::Exr => encode_exr(w, image),
    }
}
