//! Float resize (NHWC) with TFLite's coordinate rules: nearest neighbour picks the pixels the
//! int8 kernel picks ([`nearest_neighbor_source`]); bilinear is TFLite's float
//! `reference_ops::ResizeBilinear` (f32 source coordinates, the four neighbours weighted), with
//! the weighted sum in f64 and rounded once.

use alloc::vec::Vec;

use super::KernelError;
use crate::kernels::resize::{ResizeMethod, nearest_neighbor_source};

/// TFLite's `ComputeInterpolationValues`: (source coordinate, lower, upper index).
fn interpolation(v: usize, scale: f32, half_pixel_centers: bool, in_size: usize) -> (f32, usize, usize) {
    let src = if half_pixel_centers { (v as f32 + 0.5) * scale - 0.5 } else { v as f32 * scale };
    let lo = libm::floorf(src).max(0.0) as usize;
    let hi = (libm::ceilf(src).max(0.0) as usize).min(in_size.saturating_sub(1));
    (src, lo.min(in_size.saturating_sub(1)), hi)
}

/// Resizes `x [n, h, w, c]` to `[n, size[0], size[1], c]`.
pub(crate) fn resize_f32(
    x: &[f32],
    input: [usize; 4],
    size: [usize; 2],
    method: ResizeMethod,
    align_corners: bool,
    half_pixel_centers: bool,
) -> Result<Vec<f32>, KernelError> {
    let [n, h, w, c] = input;
    let [oh, ow] = size;
    if x.len() != n * h * w * c {
        return Err(KernelError("resize input size does not match its shape"));
    }
    if h == 0 || w == 0 || oh == 0 || ow == 0 {
        return Err(KernelError("resize of an empty extent"));
    }
    let mut out = Vec::with_capacity(n * oh * ow * c);
    let at = |b: usize, y: usize, xx: usize, ch: usize| x[((b * h + y) * w + xx) * c + ch];
    match method {
        ResizeMethod::NearestNeighbor => {
            for b in 0..n {
                for oy in 0..oh {
                    let iy = nearest_neighbor_source(oy, h, oh, align_corners, half_pixel_centers);
                    for ox in 0..ow {
                        let ix = nearest_neighbor_source(ox, w, ow, align_corners, half_pixel_centers);
                        out.extend((0..c).map(|ch| at(b, iy, ix, ch)));
                    }
                }
            }
        }
        ResizeMethod::Bilinear => {
            let scale = |i: usize, o: usize| {
                if align_corners && o > 1 { (i as f32 - 1.0) / (o as f32 - 1.0) } else { i as f32 / o as f32 }
            };
            let (sh, sw) = (scale(h, oh), scale(w, ow));
            for b in 0..n {
                for oy in 0..oh {
                    let (fy, y0, y1) = interpolation(oy, sh, half_pixel_centers, h);
                    let dy = f64::from(fy) - y0 as f64;
                    for ox in 0..ow {
                        let (fx, x0, x1) = interpolation(ox, sw, half_pixel_centers, w);
                        let dx = f64::from(fx) - x0 as f64;
                        let v = |y: usize, xx: usize, ch: usize| f64::from(at(b, y, xx, ch));
                        out.extend((0..c).map(|ch| {
                            (v(y0, x0, ch) * (1.0 - dy) * (1.0 - dx)
                                + v(y1, x0, ch) * dy * (1.0 - dx)
                                + v(y0, x1, ch) * (1.0 - dy) * dx
                                + v(y1, x1, ch) * dy * dx) as f32
                        }));
                    }
                }
            }
        }
    }
    Ok(out)
}
