//! `--preprocess SPEC`: calibration images (PNG, JPEG) to float samples, as a PyTorch /
//! torchvision input pipeline built on Pillow makes them:
//!
//! ```text
//! img = Image.open(path).convert("RGB")                 # mode=rgb (mode=gray: convert("L"))
//! img = img.resize((W, H), Image.BILINEAR)              # resize=WxH
//! x = np.asarray(img, np.float32) * np.float32(scale)   # scale=1/255
//! x = (x - mean) / std                                  # mean=a/b/c, std=a/b/c (float32, per channel)
//! x = x.transpose(2, 0, 1)                              # layout=nchw (layout=nhwc: as it is)
//! ```
//!
//! The resize is Pillow's `Image.resize(..., Image.BILINEAR)` bit for bit (its resampling with
//! a triangle filter widened by the scale factor when shrinking, 22-bit fixed-point
//! coefficients, two passes each rounded to 8 bits, in Pillow 13's order); the gray conversion is
//! Pillow's (`L = (19595 R + 38470 G + 7471 B + 2^15) >> 16`); the arithmetic is float32 in
//! numpy's order. Tested against Pillow's own output (`tests/gen/gen_calib_images.py`).

use std::fmt;
use std::path::Path;

use microquant::ptq::{SourceError, SourceErrorKind};

/// The channel order of a preprocessed sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `[C, H, W]` per sample (PyTorch).
    Nchw,
    /// `[H, W, C]` per sample (TensorFlow).
    Nhwc,
}

/// A parsed `--preprocess` spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Preprocess {
    /// `(width, height)` to resize to; `None`: the images as they are.
    pub resize: Option<(usize, usize)>,
    /// One channel (Pillow's `L`) instead of three (`RGB`).
    pub gray: bool,
    /// Channel order of the sample.
    pub layout: Layout,
    /// Factor of every pixel value (0..=255).
    pub scale: f32,
    /// Subtracted per channel after the scale (one value for every channel, or one per channel).
    pub mean: Vec<f32>,
    /// Divides per channel after the mean.
    pub std: Vec<f32>,
}

/// The text of `--help` for `--preprocess`.
pub const HELP: &str = "How calibration images (a directory or glob of .png / .jpg / .jpeg) become samples: \
comma-separated KEY=VALUE, e.g. resize=224x224,layout=nchw,scale=1/255,mean=0.485/0.456/0.406,std=0.229/0.224/0.225. \
resize=WxH: width x height, Pillow's Image.resize((W, H), BILINEAR) bit for bit (default: no resize; every image \
must then have the model's size); mode=rgb|gray: 3 channels, or 1 (Pillow's convert(\"L\")) (default rgb); \
layout=nchw|nhwc: [C, H, W] or [H, W, C] per sample, the model input's own layout (default nchw); \
scale=S: each pixel (0 to 255) times S, a number or a fraction such as 1/255 (default 1); \
mean=M and std=D: then (x - M) / D per channel, one value or one per channel separated by / (defaults 0 and 1). \
All in float32, in that order, as numpy computes it on Pillow's image.";

fn number(key: &str, v: &str) -> Result<f64, String> {
    let parse = |t: &str| t.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    let x = match v.split_once('/') {
        Some((a, b)) => parse(a).zip(parse(b)).filter(|(_, b)| *b != 0.0).map(|(a, b)| a / b),
        None => parse(v),
    };
    x.ok_or_else(|| format!("{key}={v}: not a number (or a fraction a/b)"))
}

fn per_channel(key: &str, v: &str) -> Result<Vec<f32>, String> {
    v.split('/')
        .map(|t| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(|x| x as f32)
                .ok_or_else(|| format!("{key}={v}: {t:?} is not a number (values separated by /)"))
        })
        .collect()
}

impl std::str::FromStr for Preprocess {
    type Err = String;

    /// Parses `resize=224x224,layout=nchw,scale=1/255,mean=.../.../...,std=.../.../...`.
    fn from_str(spec: &str) -> Result<Self, String> {
        let mut p =
            Preprocess { resize: None, gray: false, layout: Layout::Nchw, scale: 1.0, mean: vec![0.0], std: vec![1.0] };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, v) = item.split_once('=').ok_or_else(|| format!("{item:?}: expected KEY=VALUE"))?;
            match key.trim() {
                "resize" => {
                    let dims: Vec<usize> = v
                        .split(['x', 'X'])
                        .map(|d| d.trim().parse::<usize>().ok().filter(|&d| d > 0))
                        .collect::<Option<Vec<usize>>>()
                        .filter(|d| d.len() == 2)
                        .ok_or_else(|| format!("resize={v}: expected WIDTHxHEIGHT, e.g. 224x224"))?;
                    p.resize = Some((dims[0], dims[1]));
                }
                "mode" => {
                    p.gray = match v.trim() {
                        "rgb" => false,
                        "gray" | "grey" | "l" => true,
                        _ => return Err(format!("mode={v}: expected rgb or gray")),
                    }
                }
                "layout" => {
                    p.layout = match v.trim() {
                        "nchw" | "chw" => Layout::Nchw,
                        "nhwc" | "hwc" => Layout::Nhwc,
                        _ => return Err(format!("layout={v}: expected nchw or nhwc")),
                    }
                }
                "scale" => p.scale = number("scale", v)? as f32,
                "mean" => p.mean = per_channel("mean", v)?,
                "std" => {
                    p.std = per_channel("std", v)?;
                    if p.std.contains(&0.0) {
                        return Err(format!("std={v}: 0 divides by zero"));
                    }
                }
                k => return Err(format!("unknown key {k:?} (resize, mode, layout, scale, mean, std)")),
            }
        }
        let c = p.channels();
        for (key, v) in [("mean", &p.mean), ("std", &p.std)] {
            if v.len() != 1 && v.len() != c {
                return Err(format!("{key}: {} values for {c} channels (give 1 or {c})", v.len()));
            }
        }
        Ok(p)
    }
}

impl fmt::Display for Preprocess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: &[f32]| v.iter().map(f32::to_string).collect::<Vec<_>>().join("/");
        if let Some((w, h)) = self.resize {
            write!(f, "resize={w}x{h},")?;
        }
        write!(
            f,
            "mode={},layout={},scale={},mean={},std={}",
            if self.gray { "gray" } else { "rgb" },
            if self.layout == Layout::Nchw { "nchw" } else { "nhwc" },
            self.scale,
            join(&self.mean),
            join(&self.std)
        )
    }
}

/// True for the file names `--preprocess` reads (`.png`, `.jpg`, `.jpeg`, any case).
pub fn is_image(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["png", "jpg", "jpeg"].contains(&e.to_ascii_lowercase().as_str()))
}

impl Preprocess {
    /// Channels per pixel: 3 (rgb) or 1 (gray).
    pub fn channels(&self) -> usize {
        if self.gray { 1 } else { 3 }
    }

    /// The sample shape when the size is known: `[C, H, W]` or `[H, W, C]`.
    pub fn shape(&self, width: usize, height: usize) -> Vec<usize> {
        let c = self.channels();
        match self.layout {
            Layout::Nchw => vec![c, height, width],
            Layout::Nhwc => vec![height, width, c],
        }
    }

    /// Decodes the image at `path` (sample `index` of its input, for errors) and makes it a
    /// sample: its shape ([`shape`](Self::shape)) and values.
    pub fn load(&self, path: &Path, index: usize) -> Result<(Vec<usize>, Vec<f32>), SourceError> {
        let name = path.display().to_string();
        let fail = |kind, msg: String| SourceError::new(kind, msg).in_file(name.clone()).at_sample(index);
        let bytes = std::fs::read(path).map_err(|e| fail(SourceErrorKind::Io, e.to_string()))?;
        let img = image::load_from_memory(&bytes)
            .map_err(|e| fail(SourceErrorKind::Decode, format!("cannot decode the image: {e}")))?;
        let (w, h) = (img.width() as usize, img.height() as usize);
        let pixels = self.convert(img);
        let (ow, oh) = self.resize.unwrap_or((w, h));
        let pixels = resize_bilinear(&pixels, w, h, self.channels(), ow, oh);
        Ok((self.shape(ow, oh), self.normalize(&pixels, ow, oh)))
    }

    /// The image as 8-bit pixels, Pillow's `convert("RGB")` or `convert("L")`.
    fn convert(&self, img: image::DynamicImage) -> Vec<u8> {
        use image::DynamicImage as D;
        if !self.gray {
            return img.into_rgb8().into_raw();
        }
        match img {
            D::ImageLuma8(g) => g.into_raw(),
            D::ImageLumaA8(g) => g.into_raw().chunks_exact(2).map(|p| p[0]).collect(),
            other => other
                .into_rgb8()
                .into_raw()
                .chunks_exact(3)
                .map(|p| {
                    let l = u32::from(p[0]) * 19595 + u32::from(p[1]) * 38470 + u32::from(p[2]) * 7471 + 0x8000;
                    (l >> 16) as u8
                })
                .collect(),
        }
    }

    /// `(pixel * scale - mean[c]) / std[c]` in float32, in the sample's layout.
    fn normalize(&self, pixels: &[u8], w: usize, h: usize) -> Vec<f32> {
        let c = self.channels();
        let at = |v: &[f32], k: usize| if v.len() == 1 { v[0] } else { v[k] };
        let value = |p: u8, k: usize| (f32::from(p) * self.scale - at(&self.mean, k)) / at(&self.std, k);
        match self.layout {
            Layout::Nhwc => pixels.iter().enumerate().map(|(i, &p)| value(p, i % c)).collect(),
            Layout::Nchw => {
                let mut out = Vec::with_capacity(pixels.len());
                for k in 0..c {
                    out.extend((0..w * h).map(|i| value(pixels[i * c + k], k)));
                }
                out
            }
        }
    }
}

/// Bits of Pillow's fixed-point resampling coefficients (`PRECISION_BITS`, 32 - 8 - 2).
const PRECISION_BITS: u32 = 22;

/// Pillow's `precompute_coeffs` for its bilinear (triangle) filter, from `size` to `out`
/// pixels over the whole image: per output pixel the first input pixel and how many, and the
/// coefficients (`ksize` per pixel) as `normalize_coeffs_8bpc` rounds them.
fn coefficients(size: usize, out: usize) -> (Vec<(usize, usize)>, Vec<i32>, usize) {
    let scale = size as f64 / out as f64;
    let filterscale = scale.max(1.0);
    let support = filterscale; // the triangle's support is 1
    let ksize = support.ceil() as usize * 2 + 1;
    let mut bounds = Vec::with_capacity(out);
    let mut kk = vec![0i32; out * ksize];
    let mut k = vec![0f64; ksize];
    for xx in 0..out {
        let center = (xx as f64 + 0.5) * scale;
        let ss = 1.0 / filterscale;
        // C's (int) casts truncate toward zero.
        let xmin = ((center - support + 0.5) as i64).max(0) as usize;
        let xmax = ((center + support + 0.5) as i64).min(size as i64) as usize;
        let n = xmax.saturating_sub(xmin);
        let mut ww = 0.0;
        for (x, kx) in k.iter_mut().enumerate().take(n) {
            let t = (((x + xmin) as f64 - center + 0.5) * ss).abs();
            let w = if t < 1.0 { 1.0 - t } else { 0.0 };
            *kx = w;
            ww += w;
        }
        for x in 0..n {
            let v = if ww != 0.0 { k[x] / ww } else { k[x] };
            let f = v * f64::from(1u32 << PRECISION_BITS);
            kk[xx * ksize + x] = if v < 0.0 { (-0.5 + f) as i32 } else { (0.5 + f) as i32 };
        }
        bounds.push((xmin, n));
    }
    (bounds, kk, ksize)
}

fn clip8(ss: i32) -> u8 {
    (ss >> PRECISION_BITS).clamp(0, 255) as u8
}

/// One pass of Pillow's resampling along rows: `src` is `rows` lines of `w` pixels (`ch`
/// interleaved channels), read from line `row0` on; the output has `out_w` pixels per line.
fn pass_horizontal(src: &[u8], w: usize, ch: usize, row0: usize, rows: usize, out_w: usize) -> Vec<u8> {
    let (hb, hk, hks) = coefficients(w, out_w);
    let half = 1i32 << (PRECISION_BITS - 1);
    let mut out = vec![0u8; out_w * rows * ch];
    for yy in 0..rows {
        let line = &src[(yy + row0) * w * ch..(yy + row0 + 1) * w * ch];
        for (xx, &(xmin, n)) in hb.iter().enumerate() {
            let k = &hk[xx * hks..xx * hks + n];
            for c in 0..ch {
                let mut ss = half;
                for (x, &kx) in k.iter().enumerate() {
                    ss += i32::from(line[(x + xmin) * ch + c]) * kx;
                }
                out[(yy * out_w + xx) * ch + c] = clip8(ss);
            }
        }
    }
    out
}

/// One pass of Pillow's resampling along columns: `src` holds lines of `w` pixels from input
/// line `row0` on (the vertical bounds are over the whole input).
fn pass_vertical(src: &[u8], w: usize, ch: usize, row0: usize, h: usize, out_h: usize) -> Vec<u8> {
    let (vb, vk, vks) = coefficients(h, out_h);
    let half = 1i32 << (PRECISION_BITS - 1);
    let mut out = vec![0u8; w * out_h * ch];
    for (yy, &(ymin, n)) in vb.iter().enumerate() {
        let k = &vk[yy * vks..yy * vks + n];
        for xx in 0..w {
            for c in 0..ch {
                let mut ss = half;
                for (y, &ky) in k.iter().enumerate() {
                    ss += i32::from(src[((y + ymin - row0) * w + xx) * ch + c]) * ky;
                }
                out[(yy * w + xx) * ch + c] = clip8(ss);
            }
        }
    }
    out
}

/// Pillow's `Image.resize((out_w, out_h), Image.BILINEAR)` of 8-bit pixels (`ch` interleaved
/// channels): two passes, each skipped when its size does not change. Pillow 13's order: the
/// vertical pass first when the height shrinks by more than twice as many pixels as the width
/// does, else the horizontal pass first, over the input rows the vertical pass reads. Each
/// pass rounds to 8 bits, so the order shows in the last bit.
pub fn resize_bilinear(src: &[u8], w: usize, h: usize, ch: usize, out_w: usize, out_h: usize) -> Vec<u8> {
    if (w, h) == (out_w, out_h) || w == 0 || h == 0 || out_w == 0 || out_h == 0 {
        return src.to_vec();
    }
    let (dw, dh) = (w as i64 - out_w as i64, h as i64 - out_h as i64);
    let horizontal_first = !(dh > 0 && dh > dw * 2);
    if !horizontal_first {
        let tmp = pass_vertical(src, w, ch, 0, h, out_h);
        return if out_w != w { pass_horizontal(&tmp, w, ch, 0, out_h, out_w) } else { tmp };
    }
    if out_w == w {
        return pass_vertical(src, w, ch, 0, h, out_h);
    }
    // The rows the vertical pass reads.
    let (vb, _, _) = coefficients(h, out_h);
    let first = vb.first().map_or(0, |b| b.0);
    let last = vb.last().map_or(h, |b| b.0 + b.1);
    let tmp = pass_horizontal(src, w, ch, first, last - first, out_w);
    if out_h == h { tmp } else { pass_vertical(&tmp, out_w, ch, first, h, out_h) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn specs() {
        let p: Preprocess =
            "resize=224x200,layout=nchw,scale=1/255,mean=0.485/0.456/0.406,std=0.229/0.224/0.225".parse().unwrap();
        assert_eq!(p.resize, Some((224, 200)));
        assert_eq!(p.scale, (1.0f64 / 255.0) as f32);
        assert_eq!(p.mean, [0.485, 0.456, 0.406]);
        assert_eq!(p.shape(224, 200), [3, 200, 224]);
        let g: Preprocess = "mode=gray,layout=nhwc".parse().unwrap();
        assert_eq!((g.channels(), g.shape(8, 4)), (1, vec![4, 8, 1]));
        for bad in ["resize=224", "mode=cmyk", "scale=1/0", "mean=1/2", "std=0", "size=3", "resize"] {
            assert!(bad.parse::<Preprocess>().is_err(), "{bad}");
        }
        assert!("mode=gray,mean=0.5/0.5/0.5".parse::<Preprocess>().unwrap_err().contains("3 values for 1 channels"));
    }

    fn golden(file: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/calib_images").join(file)
    }

    fn npy(path: &Path) -> (Vec<usize>, Vec<f32>) {
        let bytes = std::fs::read(path).unwrap();
        let a = microquant::npy::Npy::parse(&bytes).unwrap();
        (a.shape().to_vec(), a.to_f32())
    }

    /// Pillow's own output (`tests/gen/gen_calib_images.py`): every case's images preprocessed
    /// as the spec says, bit for bit for PNG; JPEG decoders may differ by a step in a pixel.
    #[test]
    fn images_as_pillow_and_numpy_make_them() {
        let cases: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(golden("cases.json")).unwrap()).unwrap();
        let mut compared = 0;
        for case in cases["cases"].as_array().unwrap() {
            let spec: Preprocess = case["spec"].as_str().unwrap().parse().unwrap();
            let (shape, want) = npy(&golden(case["expected"].as_str().unwrap()));
            let images = case["images"].as_array().unwrap();
            let per = want.len() / images.len();
            for (i, img) in images.iter().enumerate() {
                let file = img["file"].as_str().unwrap();
                let (s, got) = spec.load(&golden(file), i).unwrap();
                assert_eq!(s, shape[1..], "{file}");
                let want = &want[i * per..(i + 1) * per];
                let tolerance = img["tolerance"].as_f64().unwrap() as f32;
                let mismatches = got.iter().zip(want).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
                if tolerance == 0.0 {
                    assert_eq!(mismatches, 0, "{file} ({spec}): {mismatches} of {per} values differ, worst {worst}");
                } else {
                    assert!(worst <= tolerance, "{file} ({spec}): worst {worst} > {tolerance}");
                }
                compared += 1;
            }
        }
        assert!(compared >= 8, "{compared}");
    }

    #[test]
    fn an_image_that_does_not_decode_is_named() {
        let dir = std::env::temp_dir().join(format!("microquant-pre-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("broken.png");
        std::fs::write(&bad, b"\x89PNG\r\n\x1a\nnot really").unwrap();
        let p: Preprocess = "resize=4x4".parse().unwrap();
        let e = p.load(&bad, 3).unwrap_err();
        assert_eq!((e.kind(), e.sample()), (SourceErrorKind::Decode, Some(3)));
        assert!(e.to_string().contains("broken.png: sample 3: decode error"), "{e}");
    }
}
