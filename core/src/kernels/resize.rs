//! Spatial resize of NHWC tensors (TFLite `RESIZE_NEAREST_NEIGHBOR`, int8 and int16, and
//! `RESIZE_BILINEAR`, int8: TFLite Micro has no int16 bilinear), as TFLite's `reference_ops::ResizeNearestNeighbor` and
//! `reference_ops::ResizeBilinearInteger` (the kernels TFLite Micro and the interpreter's
//! reference resolver run for integer tensors).
//!
//! Input and output share their quantization (TFLite's spec: "restriction: input and outputs
//! must all have same scale/zero_point"), so neither kernel requantizes.
//!
//! **Nearest neighbour**: output row `y` reads input row
//!
//! ```text
//! scale = align_corners && out > 1 ? (in − 1) / (out − 1) : in / out        (f32)
//! src   = (y + (half_pixel_centers ? 0.5 : 0)) · scale                       (f32)
//! row   = min(align_corners ? round(src) : floor(src), in − 1)
//! ```
//!
//! (`round` half away from zero), and the same for columns: the f32 arithmetic of TFLite's
//! `GetNearestNeighbor`, operation for operation.
//!
//! **Bilinear**: TFLite's integer variant, with scales in 1/1024 steps:
//! `scale_10 = round(1024 · in / out)` (or `(in − 1) / (out − 1)` with `align_corners`),
//! `src_10 = y · scale_10` (plus `scale_10 / 2 − 512` with `half_pixel_centers`),
//! `y0 = max(src_10 / 1024, 0)`, `y1 = min(ceil(src_10 / 1024), in − 1)`, and the four
//! neighbours weighted by `(1024 − dy)(1024 − dx)`, `dy (1024 − dx)`, ... summed in i64 (2^20
//! scale) and rounded back half away from zero: `(s ± 2^19) / 2^20`. Both TFLite Micro and the
//! TFLite interpreter's reference kernel compute this (the golden files show no difference
//! between them; the `TFLITE_SINGLE_ROUNDING` variant `(s + 2^19) >> 20` is built into
//! neither), so the kernel takes no [`Rounding`](super::Rounding): both modes run the same code.
#![forbid(unsafe_code)]

use super::common::{ActivationElement, check_len, ensure};
use crate::Error;

/// The interpolation of a resize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResizeMethod {
    /// Nearest neighbour (TFLite `RESIZE_NEAREST_NEIGHBOR`).
    NearestNeighbor,
    /// Bilinear (TFLite `RESIZE_BILINEAR`).
    Bilinear,
}

/// Largest input or output extent (height or width) a resize takes: keeps TFLite's 10-bit
/// fixed-point coordinates inside `i32`.
pub const MAX_RESIZE_EXTENT: usize = 1 << 16;

/// Prepared resize of `[n, in_h, in_w, c]` to `[n, out_h, out_w, c]`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ResizeParams {
    /// Interpolation.
    pub method: ResizeMethod,
    /// Input shape `[n, h, w, c]`.
    pub input: [usize; 4],
    /// Output height and width.
    pub output_size: [usize; 2],
    /// TFLite's `align_corners`.
    pub align_corners: bool,
    /// TFLite's `half_pixel_centers`.
    pub half_pixel_centers: bool,
    /// Nearest: the f32 scale of each axis.
    scale: [f32; 2],
    /// Bilinear: the 10-bit fixed-point scale of each axis.
    scale_10: [i32; 2],
}

/// `round(x)` half away from zero for `x >= 0` (`TfLiteRound` of a non-negative float), as
/// an integer; `x as i32` truncates, which is `floor` for non-negative values.
#[inline]
fn round_non_negative(x: f32) -> i32 {
    let t = x as i32;
    if x - t as f32 >= 0.5 { t.saturating_add(1) } else { t }
}

/// TFLite's `GetNearestNeighbor` with the axis scale already computed.
#[inline]
fn nearest_source(v: usize, scale: f32, in_size: usize, align_corners: bool, half_pixel_centers: bool) -> usize {
    let offset = if half_pixel_centers { 0.5f32 } else { 0.0 };
    let src = (v as f32 + offset) * scale;
    let i = if align_corners { round_non_negative(src) } else { src as i32 };
    (i.max(0) as usize).min(in_size.saturating_sub(1))
}

/// The input index nearest-neighbour resizing reads for output index `v` of an axis resized
/// from `in_size` to `out_size` (TFLite's `GetNearestNeighbor`, f32 for f32): what the kernels
/// use, for importers and float execution that must pick the same pixels.
pub fn nearest_neighbor_source(
    v: usize,
    in_size: usize,
    out_size: usize,
    align_corners: bool,
    half_pixel_centers: bool,
) -> usize {
    let (fi, fo) = (in_size as f32, out_size as f32);
    let scale = if align_corners && out_size > 1 { (fi - 1.0) / (fo - 1.0) } else { fi / fo };
    nearest_source(v, scale, in_size, align_corners, half_pixel_centers)
}

impl ResizeParams {
    /// Prepares a resize of `input` (`[n, h, w, c]`) to `output_size` (`[h, w]`).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for a zero or too large extent (above
    /// [`MAX_RESIZE_EXTENT`]), bilinear with both `align_corners` and `half_pixel_centers`
    /// (TFLite refuses it), or a bilinear resize whose 10-bit scale would read past the input's
    /// last row or column (TFLite's reference would read out of bounds there).
    pub fn prepare(
        method: ResizeMethod,
        input: [usize; 4],
        output_size: [usize; 2],
        align_corners: bool,
        half_pixel_centers: bool,
    ) -> Result<Self, Error> {
        const K: &str = "resize";
        let [_, in_h, in_w, _] = input;
        let [out_h, out_w] = output_size;
        for e in [in_h, in_w, out_h, out_w] {
            ensure(e > 0 && e <= MAX_RESIZE_EXTENT, K, "height or width is 0 or above 2^16")?;
        }
        let n = input.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        let m = input[0].checked_mul(out_h).and_then(|v| v.checked_mul(out_w)).and_then(|v| v.checked_mul(input[3]));
        ensure(n.is_some() && m.is_some(), K, "tensor size overflows")?;
        let mut scale = [0f32; 2];
        let mut scale_10 = [0i32; 2];
        for (a, (&i, &o)) in [in_h, in_w].iter().zip(&[out_h, out_w]).enumerate() {
            let (fi, fo) = (i as f32, o as f32);
            let s = if align_corners && o > 1 { (fi - 1.0) / (fo - 1.0) } else { fi / fo };
            // ((1 << 10) * in + out / 2) / out, or with (in - 1, out - 1) when aligning corners.
            let (ii, oo) = if align_corners && o > 1 { (i as i64 - 1, o as i64 - 1) } else { (i as i64, o as i64) };
            let s10 = ((1i64 << 10) * ii + oo / 2).checked_div(oo).unwrap_or(0);
            if let (Some(sf), Some(si)) = (scale.get_mut(a), scale_10.get_mut(a)) {
                *sf = s;
                *si = s10 as i32;
            }
        }
        let p = Self { method, input, output_size, align_corners, half_pixel_centers, scale, scale_10 };
        if method == ResizeMethod::Bilinear {
            ensure(
                !(align_corners && half_pixel_centers),
                K,
                "bilinear with both align_corners and half_pixel_centers",
            )?;
            // The lower neighbour grows with the output index: check the last one.
            for (a, (&i, &o)) in [in_h, in_w].iter().zip(&[out_h, out_w]).enumerate() {
                let (_, lo, _) = p.bilinear_axis(a, o as i32 - 1, i as i32);
                ensure(lo < i as i32, K, "the 10-bit scale reaches past the input (TFLite reads out of bounds)")?;
            }
        }
        Ok(p)
    }

    /// Number of input elements.
    pub fn input_len(&self) -> usize {
        self.input.iter().product()
    }

    /// Output shape `[n, out_h, out_w, c]`.
    pub fn output_shape(&self) -> [usize; 4] {
        [self.input[0], self.output_size[0], self.output_size[1], self.input[3]]
    }

    /// Number of output elements.
    pub fn output_len(&self) -> usize {
        self.output_shape().iter().product()
    }

    /// The nearest input index of output index `v` along axis `a` (0: height, 1: width).
    #[inline]
    fn nearest(&self, a: usize, v: usize, in_size: usize) -> usize {
        let scale = self.scale.get(a).copied().unwrap_or(1.0);
        nearest_source(v, scale, in_size, self.align_corners, self.half_pixel_centers)
    }

    /// The bilinear taps of output index `v` along axis `a` (0: height, 1: width): the lower
    /// and upper input indices and the upper one's weight in 1/1024 (the lower's is
    /// `1024 − weight`), as [`resize_bilinear_s8`] uses them (the exact QDQ export writes the
    /// same sums).
    pub fn bilinear_taps(&self, a: usize, v: usize) -> (usize, usize, i64) {
        let in_size = if a == 0 { self.input[1] } else { self.input[2] };
        let (scaled, lo, hi) = self.bilinear_axis(a, v as i32, in_size as i32);
        (lo.max(0) as usize, hi.max(0) as usize, i64::from(scaled - (1 << 10) * lo))
    }

    /// TFLite's `ComputeInterpolationValuesInteger`: (scaled value, lower, upper) of output
    /// index `v` along axis `a`.
    #[inline]
    fn bilinear_axis(&self, a: usize, v: i32, in_size: i32) -> (i32, i32, i32) {
        let s = self.scale_10.get(a).copied().unwrap_or(0);
        let scaled = if self.half_pixel_centers {
            v.wrapping_mul(s).wrapping_add(s / 2).wrapping_sub(1 << 9)
        } else {
            v.wrapping_mul(s)
        };
        let lo = (scaled / (1 << 10)).max(0);
        let hi = (scaled.wrapping_add((1 << 10) - 1) / (1 << 10)).min(in_size - 1);
        (scaled, lo, hi)
    }

    fn check<T>(&self, kernel: &'static str, input: &[T], output: &[T]) -> Result<(), Error> {
        check_len(kernel, "input length != input shape", input.len(), Some(self.input_len()))?;
        check_len(kernel, "output length != output shape", output.len(), Some(self.output_len()))
    }
}

fn nearest<T: Copy>(kernel: &'static str, p: &ResizeParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    p.check(kernel, input, output)?;
    let [_, in_h, in_w, depth] = p.input;
    let [out_h, out_w] = p.output_size;
    if depth == 0 {
        return Ok(());
    }
    let row = in_w * depth;
    let image = in_h * row;
    if image == 0 {
        return Ok(());
    }
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    let mut pixels = output.chunks_exact_mut(depth);
    for batch in input.chunks_exact(image) {
        for y in 0..out_h {
            let iy = p.nearest(0, y, in_h);
            for x in 0..out_w {
                let ix = p.nearest(1, x, in_w);
                let start = iy * row + ix * depth;
                if let (Some(o), Some(src)) = (pixels.next(), batch.get(start..)) {
                    for (d, v) in o.iter_mut().zip(src) {
                        *d = *v;
                    }
                }
            }
        }
    }
    Ok(())
}

fn bilinear<T: ActivationElement>(
    kernel: &'static str,
    p: &ResizeParams,
    input: &[T],
    output: &mut [T],
) -> Result<(), Error> {
    p.check(kernel, input, output)?;
    let [_, in_h, in_w, depth] = p.input;
    let [out_h, out_w] = p.output_size;
    if depth == 0 {
        return Ok(());
    }
    let row = in_w * depth;
    let image = in_h * row;
    if image == 0 {
        return Ok(());
    }
    let r = T::RANGE;
    let at = |b: &[T], i: usize| -> i64 { b.get(i).map_or(0, |v| i64::from(v.to_i32())) };
    let mut pixels = output.chunks_exact_mut(depth);
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    for batch in input.chunks_exact(image) {
        for y in 0..out_h {
            let (sy, y0, y1) = p.bilinear_axis(0, y as i32, in_h as i32);
            let dy = i64::from(sy - (1 << 10) * y0);
            let (r0, r1) = (y0 as usize * row, y1 as usize * row);
            for x in 0..out_w {
                let (sx, x0, x1) = p.bilinear_axis(1, x as i32, in_w as i32);
                let dx = i64::from(sx - (1 << 10) * x0);
                let (c0, c1) = (x0 as usize * depth, x1 as usize * depth);
                let Some(o) = pixels.next() else { break };
                for (c, out) in o.iter_mut().enumerate() {
                    let s = at(batch, r0 + c0 + c) * ((1 << 10) - dy) * ((1 << 10) - dx)
                        + at(batch, r1 + c0 + c) * dy * ((1 << 10) - dx)
                        + at(batch, r0 + c1 + c) * ((1 << 10) - dy) * dx
                        + at(batch, r1 + c1 + c) * dy * dx;
                    let v = (s + if s > 0 { 1 << 19 } else { -(1 << 19) }) / (1 << 20);
                    *out = T::from_clamped((v as i32).max(r.min).min(r.max));
                }
            }
        }
    }
    Ok(())
}

/// int8 nearest-neighbour resize (pure data movement: bit-exact with both TFLite runtimes).
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn resize_nearest_neighbor_s8(p: &ResizeParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    nearest("resize_nearest_neighbor_s8", p, input, output)
}

/// int16 nearest-neighbour resize.
///
/// # Errors
/// As [`resize_nearest_neighbor_s8`].
pub fn resize_nearest_neighbor_s16(p: &ResizeParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    nearest("resize_nearest_neighbor_s16", p, input, output)
}

/// int8 bilinear resize, bit-exact with TFLite Micro and the TFLite interpreter.
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn resize_bilinear_s8(p: &ResizeParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    bilinear("resize_bilinear_s8", p, input, output)
}

/// Runs the prepared method on int8 data.
///
/// # Errors
/// As [`resize_nearest_neighbor_s8`].
pub fn resize_s8(p: &ResizeParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    match p.method {
        ResizeMethod::NearestNeighbor => resize_nearest_neighbor_s8(p, input, output),
        ResizeMethod::Bilinear => resize_bilinear_s8(p, input, output),
    }
}

/// Runs the prepared method on int16 data: nearest neighbour only (TFLite Micro has no int16
/// `RESIZE_BILINEAR`).
///
/// # Errors
/// As [`resize_nearest_neighbor_s8`]; [`Error::BadKernelArgument`] for a bilinear `p`.
pub fn resize_s16(p: &ResizeParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    match p.method {
        ResizeMethod::NearestNeighbor => resize_nearest_neighbor_s16(p, input, output),
        ResizeMethod::Bilinear => {
            Err(Error::BadKernelArgument { kernel: "resize_s16", reason: "no int16 bilinear (as TFLite Micro)" })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(m: ResizeMethod, i: [usize; 4], o: [usize; 2], ac: bool, hp: bool) -> Result<ResizeParams, Error> {
        ResizeParams::prepare(m, i, o, ac, hp)
    }

    #[test]
    fn nearest_doubles_each_pixel() {
        let p = p(ResizeMethod::NearestNeighbor, [1, 2, 2, 1], [4, 4], false, false).unwrap();
        let mut out = [0i8; 16];
        resize_nearest_neighbor_s8(&p, &[1, 2, 3, 4], &mut out).unwrap();
        assert_eq!(out, [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
    }

    #[test]
    fn bilinear_interpolates_and_rounds_half_away_from_zero() {
        // 1x2 -> 1x4 (asymmetric): src x = 0, 0.5, 1, 1.5 -> 10, (10 + 15) / 2, 15, 15.
        let mut out = [0i8; 4];
        let q = p(ResizeMethod::Bilinear, [1, 1, 2, 1], [1, 4], false, false).unwrap();
        resize_bilinear_s8(&q, &[10, 15], &mut out).unwrap();
        assert_eq!(out, [10, 13, 15, 15]);
        resize_bilinear_s8(&q, &[-10, -15], &mut out).unwrap();
        assert_eq!(out, [-10, -13, -15, -15]);
    }

    #[test]
    fn errors() {
        assert!(p(ResizeMethod::Bilinear, [1, 2, 2, 1], [4, 4], true, true).is_err());
        assert!(p(ResizeMethod::NearestNeighbor, [1, 0, 2, 1], [4, 4], false, false).is_err());
        assert!(p(ResizeMethod::NearestNeighbor, [1, 2, 2, 1], [0, 4], false, false).is_err());
        // in 2 -> out 3000: scale_10 = 1, the last output reads row 2 of 2.
        assert!(p(ResizeMethod::Bilinear, [1, 2, 2, 1], [3000, 2], false, false).is_err());
        let q = p(ResizeMethod::Bilinear, [1, 2, 2, 1], [3, 3], false, false).unwrap();
        assert!(resize_bilinear_s8(&q, &[0; 3], &mut [0; 9]).is_err());
        assert!(resize_bilinear_s8(&q, &[0; 4], &mut [0; 8]).is_err());
    }
}
