//! Transposed 2-D convolution (TFLite `TRANSPOSE_CONV`): int8 with per-channel weights, and 16x8
//! (int16 activations, int8 weights, int64 accumulator).
//!
//! Input `[n, h, w, in_c]` (NHWC), filter `[out_c, kh, kw, in_c]` (OHWI, symmetric int8), bias
//! `[out_c]`, output `[n, oh, ow, out_c]` with its size given (TFLite's `output_shape` input).
//! Dilation is always 1.
//!
//! As TFLite's `reference_integer_ops::TransposeConv`, each input pixel is *scattered*: input
//! `(y, x)` adds `filter[oc, fy, fx, :] . (input[y, x, :] + input_offset)` to output
//! `(y * stride_h - pad_top + fy, x * stride_w - pad_left + fx)` when that lies in the output, in
//! an accumulator buffer (the caller's scratch bytes, any alignment: an `i32` per output
//! element for int8, an `i64` for 16x8); then every accumulator gets its bias, is requantized per channel
//! (`MultiplyByQuantizedMultiplier`), offset by the output zero point and clamped. Wrapping `i32`
//! addition is associative, so the order of the sums (ours runs the filter rows as dot products)
//! gives the same bits as TFLite's.
//!
//! # Padding
//! Only the leading padding is used, computed as TFLite's Prepare does: the padding a
//! convolution of the *output* size with this filter and stride would have
//! ([`transpose_conv_padding`]). TFLite Micro takes any output size; the TFLite interpreter also
//! checks that this convolution gives back the input size ([`transpose_conv_input_size`]).
//!
//! # Rounding
//! TFLite Micro and the TFLite interpreter's reference kernels run the same code (double
//! rounding for int8; the Q15-reduced 64-bit `MultiplyByQuantizedMultiplier` for 16x8), so
//! [`Rounding::Double`] and [`Rounding::Single`] compute the same here.
//!
//! [`Rounding::Double`]: crate::kernels::Rounding::Double
//! [`Rounding::Single`]: crate::kernels::Rounding::Single

#![forbid(unsafe_code)]

use crate::Error;
use crate::kernels::common::{Accumulator, ActivationElement, Hw, Padding, check_len, check_offsets, ensure};
use crate::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};

/// Largest height, width or stride the kernel accepts: keeps every coordinate it computes far
/// from overflowing `isize`.
const MAX_EXTENT: usize = 1 << 24;

/// Everything a transposed convolution call needs besides its data, prepared once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TransposeConvParams {
    /// Input shape `[n, h, w, in_c]`.
    pub input: Dims4,
    /// Filter shape `[out_c, kh, kw, in_c]` (`n` = output channels).
    pub filter: Dims4,
    /// Output shape `[n, oh, ow, out_c]` (given, as TFLite's `output_shape` input).
    pub output: Dims4,
    /// Strides (>= 1).
    pub stride: Hw,
    /// Leading padding: rows above (`h`) and columns left (`w`) of the output that the scatter
    /// drops ([`transpose_conv_padding`]).
    pub padding: Hw,
    /// `-input_zero_point`: in [-127, 128] for int8; 0 for 16x8.
    pub input_offset: i32,
    /// `output_zero_point`: in [-128, 127] for int8; 0 for 16x8.
    pub output_offset: i32,
    /// Output clamp (the fused activation, [`ActivationRange::from_fused`]).
    ///
    /// [`ActivationRange::from_fused`]: crate::kernels::ActivationRange::from_fused
    pub activation: ActivationRange,
    /// Rounding mode; both give the same result (module docs).
    pub rounding: Rounding,
}

fn bad(reason: &'static str) -> Error {
    Error::BadKernelArgument { kernel: "transpose_conv", reason }
}

/// TFLite's `ComputeOutSize` of a convolution over `image` pixels (dilation 1), as C computes
/// it (division truncating toward zero).
fn conv_out_size(padding: Padding, image: i64, filter: i64, stride: i64) -> i64 {
    match padding {
        Padding::Valid => (image + stride - filter) / stride,
        _ => (image + stride - 1) / stride,
    }
}

/// One axis of [`transpose_conv_padding`].
fn padding_axis(padding: Padding, output: usize, filter: usize, stride: usize) -> Result<usize, Error> {
    if filter == 0 || stride == 0 {
        return Err(bad("filter size and stride must be >= 1"));
    }
    if output > MAX_EXTENT || filter > MAX_EXTENT || stride > MAX_EXTENT {
        return Err(bad("size or stride above 2^24"));
    }
    let (o, k, s) = (output as i64, filter as i64, stride as i64);
    let out = conv_out_size(padding, o, k, s);
    let total = ((out - 1) * s + k - o).max(0);
    Ok((total / 2) as usize)
}

/// The leading padding (top, left) of a transposed convolution with `output` size, as TFLite's
/// Prepare computes it (`ComputePaddingHeightWidth` with the output as the image: the padding of
/// the convolution this op transposes). `padding` is `Same` or `Valid`.
///
/// # Errors
/// [`Error::BadKernelArgument`] for explicit padding, a zero filter size or stride, or a size
/// above 2^24.
pub fn transpose_conv_padding(padding: Padding, output: Hw, filter: Hw, stride: Hw) -> Result<Hw, Error> {
    if matches!(padding, Padding::Explicit(_)) {
        return Err(bad("padding must be SAME or VALID"));
    }
    Ok(Hw::new(
        padding_axis(padding, output.h, filter.h, stride.h)?,
        padding_axis(padding, output.w, filter.w, stride.w)?,
    ))
}

/// The input size whose transposed convolution has `output` size: the output size of the
/// convolution of `output` with this filter, stride and padding (`Same` or `Valid`). The TFLite
/// interpreter refuses a model where this differs from the actual input; TFLite Micro does not
/// check. `None` when it is not positive or a parameter is 0.
pub fn transpose_conv_input_size(padding: Padding, output: Hw, filter: Hw, stride: Hw) -> Option<Hw> {
    let axis = |o: usize, k: usize, s: usize| {
        if k == 0 || s == 0 || o > MAX_EXTENT || k > MAX_EXTENT || s > MAX_EXTENT {
            return None;
        }
        let n = conv_out_size(padding, o as i64, k as i64, s as i64);
        usize::try_from(n).ok().filter(|&n| n >= 1)
    };
    Some(Hw::new(axis(output.h, filter.h, stride.h)?, axis(output.w, filter.w, stride.w)?))
}

/// The natural output size of a transposed convolution of `input` (what TensorFlow's
/// `conv2d_transpose` / Keras' `Conv2DTranspose` produce without output padding): `in * stride`
/// for `Same`, `(in - 1) * stride + filter` for `Valid`. `None` on overflow or a zero input.
pub fn transpose_conv_output_size(padding: Padding, input: Hw, filter: Hw, stride: Hw) -> Option<Hw> {
    let axis = |i: usize, k: usize, s: usize| -> Option<usize> {
        if i == 0 {
            return None;
        }
        match padding {
            Padding::Valid => (i - 1).checked_mul(s)?.checked_add(k),
            _ => i.checked_mul(s),
        }
    };
    Some(Hw::new(axis(input.h, filter.h, stride.h)?, axis(input.w, filter.w, stride.w)?))
}

/// Bytes of scratch [`transpose_conv_s8`] needs: an `i32` accumulator per output element, plus 3
/// so any alignment works. Saturates at `usize::MAX`.
pub fn transpose_conv_s8_scratch_len(params: &TransposeConvParams) -> usize {
    params.output.checked_len().map_or(usize::MAX, |n| n.saturating_mul(4).saturating_add(3))
}

/// Bytes of scratch [`transpose_conv_s16`] needs: an `i64` accumulator per output element, plus
/// 7 so any alignment works. Saturates at `usize::MAX`.
pub fn transpose_conv_s16_scratch_len(params: &TransposeConvParams) -> usize {
    params.output.checked_len().map_or(usize::MAX, |n| n.saturating_mul(8).saturating_add(7))
}

/// The aligned accumulators inside `scratch`, one per output element.
fn accumulators<'s, A: bytemuck::Pod>(
    kernel: &'static str,
    scratch: &'s mut [u8],
    n: usize,
) -> Result<&'s mut [A], Error> {
    let (_, acc, _) = bytemuck::pod_align_to_mut::<u8, A>(scratch);
    acc.get_mut(..n).ok_or(Error::BadKernelArgument { kernel, reason: "scratch too small" })
}

fn validate<X: ActivationElement, A>(
    kernel: &'static str,
    p: &TransposeConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &[X],
) -> Result<(), Error> {
    let within = |v: usize| v <= MAX_EXTENT;
    ensure(p.stride.h >= 1 && p.stride.w >= 1, kernel, "strides must be >= 1")?;
    ensure(p.filter.h >= 1 && p.filter.w >= 1, kernel, "filter height and width must be >= 1")?;
    ensure(
        [
            p.input.h,
            p.input.w,
            p.output.h,
            p.output.w,
            p.filter.h,
            p.filter.w,
            p.stride.h,
            p.stride.w,
            p.padding.h,
            p.padding.w,
        ]
        .into_iter()
        .all(within),
        kernel,
        "a size, stride or padding above 2^24",
    )?;
    check_offsets::<X>(kernel, p.input_offset, p.output_offset)?;
    ensure(p.activation.is_within(X::RANGE), kernel, "activation range empty or outside the output type")?;
    ensure(p.input.n == p.output.n, kernel, "input and output batch differ")?;
    ensure(p.filter.c == p.input.c, kernel, "filter input channels != input channels")?;
    ensure(p.filter.n == p.output.c, kernel, "filter count != output channels")?;
    ensure(p.output.c >= 1 && p.input.c >= 1, kernel, "channel counts must be >= 1")?;
    check_len(kernel, "input length != input dims", input.len(), p.input.checked_len())?;
    check_len(kernel, "filter length != filter dims", filter.len(), p.filter.checked_len())?;
    check_len(kernel, "output length != output dims", output.len(), p.output.checked_len())?;
    if let Some(b) = bias {
        check_len(kernel, "bias length != output channels", b.len(), Some(p.output.c))?;
    }
    ensure(
        quant.multiplier.len() == p.output.c && quant.shift.len() == p.output.c,
        kernel,
        "multiplier/shift length != output channels",
    )
}

/// The reference kernel, after validation: TFLite's `reference_integer_ops::TransposeConv`.
#[allow(clippy::too_many_arguments)]
fn transpose_conv_reference<X: ActivationElement, A: Accumulator>(
    p: &TransposeConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &mut [X],
    acc: &mut [A],
) {
    let (ind, outd) = (p.input, p.output);
    let (in_c, out_c) = (ind.c.max(1), outd.c.max(1));
    acc.fill(A::ZERO);
    let in_image = (ind.h * ind.w * in_c).max(1);
    let out_image = (outd.h * outd.w * out_c).max(1);
    let (kh, kw) = (p.filter.h, p.filter.w);
    let (oh, ow) = (outd.h as isize, outd.w as isize);
    for (in_b, acc_b) in input.chunks_exact(in_image).zip(acc.chunks_exact_mut(out_image)) {
        for (i, px) in in_b.chunks_exact(in_c).enumerate() {
            let (iy, ix) = ((i / ind.w.max(1)) as isize, (i % ind.w.max(1)) as isize);
            let y0 = iy * p.stride.h as isize - p.padding.h as isize;
            let x0 = ix * p.stride.w as isize - p.padding.w as isize;
            for fy in 0..kh {
                let oy = y0 + fy as isize;
                if oy < 0 || oy >= oh {
                    continue;
                }
                for fx in 0..kw {
                    let ox = x0 + fx as isize;
                    if ox < 0 || ox >= ow {
                        continue;
                    }
                    let o0 = (oy as usize * outd.w + ox as usize) * out_c;
                    let Some(acc_px) = acc_b.get_mut(o0..o0 + out_c) else { continue };
                    for (oc, a) in acc_px.iter_mut().enumerate() {
                        let f0 = ((oc * kh + fy) * kw + fx) * in_c;
                        let Some(ws) = filter.get(f0..f0 + in_c) else { continue };
                        let mut sum = *a;
                        for (&x, &w) in px.iter().zip(ws) {
                            sum = sum.add_product((x.to_i32() + p.input_offset) * w as i32);
                        }
                        *a = sum;
                    }
                }
            }
        }
    }
    for (out_px, acc_px) in output.chunks_exact_mut(out_c).zip(acc.chunks_exact(out_c)) {
        for (oc, (o, &a)) in out_px.iter_mut().zip(acc_px).enumerate() {
            let mut v = a;
            if let Some(&b) = bias.and_then(|b| b.get(oc)) {
                v = v.add_bias(b);
            }
            let (Some(&m), Some(&s)) = (quant.multiplier.get(oc), quant.shift.get(oc)) else { continue };
            let scaled = v.requantize(m, s).wrapping_add(p.output_offset);
            *o = X::from_clamped(p.activation.apply(scaled));
        }
    }
}

/// int8 transposed convolution with per-channel weights (TFLite `TRANSPOSE_CONV`, int8),
/// bit-exact with TFLite Micro and the TFLite interpreter's reference kernel.
///
/// Constraints: shapes as [`TransposeConvParams`] documents (filter `[out_c, kh, kw, in_c]`,
/// batches equal); offsets and clamp within int8; one multiplier and shift per output channel
/// with shifts in [-31, 30]; optional int32 bias `[out_c]`; `scratch` of at least
/// [`transpose_conv_s8_scratch_len`] bytes (any alignment; overwritten). The 32-bit accumulator wraps as
/// TFLite's does.
///
/// ```
/// use microquant::kernels::common::{Hw, Padding};
/// use microquant::kernels::transpose_conv::{TransposeConvParams, transpose_conv_padding, transpose_conv_s8};
/// use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
/// // 1x1 input, 2x2 filter, stride 2, VALID: the output is the filter times the input.
/// let (filter, output) = (Hw::square(2), Hw::square(2));
/// let padding = transpose_conv_padding(Padding::Valid, output, filter, Hw::square(2)).unwrap();
/// let p = TransposeConvParams {
///     input: Dims4::new(1, 1, 1, 1),
///     filter: Dims4::new(1, 2, 2, 1),
///     output: Dims4::new(1, 2, 2, 1),
///     stride: Hw::square(2),
///     padding,
///     input_offset: 0,
///     output_offset: 0,
///     activation: ActivationRange::INT8,
///     rounding: Rounding::Double,
/// };
/// let quant = PerChannelQuant { multiplier: &[1 << 30], shift: &[1] }; // x 1.0
/// let mut out = [0i8; 4];
/// transpose_conv_s8(&p, &quant, &[3], &[1, 2, 3, 4], None, &mut out, &mut [0u8; 19]).unwrap();
/// assert_eq!(out, [3, 6, 9, 12]);
/// ```
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length or a parameter breaks the constraints.
/// Never panics.
pub fn transpose_conv_s8(
    params: &TransposeConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) -> Result<(), Error> {
    const K: &str = "transpose_conv_s8";
    validate(K, params, quant, input, filter, bias, output)?;
    let acc = accumulators::<i32>(K, scratch, output.len())?;
    transpose_conv_reference(params, quant, input, filter, bias, output, acc);
    Ok(())
}

/// 16x8 transposed convolution: int16 input and output (zero points 0: both offsets must be 0),
/// int8 per-channel weights, optional int64 bias, an `i64` accumulator per output element in
/// `scratch` ([`transpose_conv_s16_scratch_len`] bytes) and the Q15-reduced 64-bit `MultiplyByQuantizedMultiplier` (TFLite Micro's int16
/// path). Otherwise as [`transpose_conv_s8`].
///
/// # Errors
/// As [`transpose_conv_s8`].
pub fn transpose_conv_s16(
    params: &TransposeConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i16],
    filter: &[i8],
    bias: Option<&[i64]>,
    output: &mut [i16],
    scratch: &mut [u8],
) -> Result<(), Error> {
    const K: &str = "transpose_conv_s16";
    validate(K, params, quant, input, filter, bias, output)?;
    let acc = accumulators::<i64>(K, scratch, output.len())?;
    transpose_conv_reference(params, quant, input, filter, bias, output, acc);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(input: Dims4, filter: Dims4, out_hw: Hw, stride: Hw, padding: Padding) -> TransposeConvParams {
        let pad = transpose_conv_padding(padding, out_hw, Hw::new(filter.h, filter.w), stride).unwrap();
        TransposeConvParams {
            input,
            filter,
            output: Dims4::new(input.n, out_hw.h, out_hw.w, filter.n),
            stride,
            padding: pad,
            input_offset: 0,
            output_offset: 0,
            activation: ActivationRange::INT8,
            rounding: Rounding::Double,
        }
    }

    #[test]
    fn padding_as_tflite() {
        // SAME, out 8, k 3, s 2: conv out 4, total (4 - 1) * 2 + 3 - 8 = 1 -> 0 before.
        let s2 = Hw::square(2);
        assert_eq!(transpose_conv_padding(Padding::Same, Hw::square(8), Hw::square(3), s2).unwrap(), Hw::square(0));
        // SAME, out 5, k 3, s 1: total 2 -> 1.
        let p = transpose_conv_padding(Padding::Same, Hw::square(5), Hw::square(3), Hw::square(1)).unwrap();
        assert_eq!(p, Hw::square(1));
        // SAME, out 8, k 4, s 2: total 2 -> 1.
        assert_eq!(transpose_conv_padding(Padding::Same, Hw::square(8), Hw::square(4), s2).unwrap(), Hw::square(1));
        // VALID never pads when the output is the natural size.
        assert_eq!(transpose_conv_padding(Padding::Valid, Hw::square(9), Hw::square(3), s2).unwrap(), Hw::square(0));
        assert!(transpose_conv_padding(Padding::Same, Hw::square(8), Hw::square(0), s2).is_err());
        assert_eq!(transpose_conv_input_size(Padding::Same, Hw::new(8, 7), Hw::square(3), s2), Some(Hw::square(4)));
        assert_eq!(transpose_conv_input_size(Padding::Valid, Hw::new(9, 10), Hw::square(3), s2), Some(Hw::square(4)));
        assert_eq!(transpose_conv_output_size(Padding::Valid, Hw::square(4), Hw::square(3), s2), Some(Hw::square(9)));
        assert_eq!(transpose_conv_output_size(Padding::Same, Hw::square(4), Hw::square(3), s2), Some(Hw::square(8)));
    }

    #[test]
    fn overlapping_taps_add_up() {
        // 1-D: input [1, 2], filter [1, 1, 1], stride 1, VALID -> output [1, 3, 2].
        let p = params(Dims4::new(1, 1, 2, 1), Dims4::new(1, 1, 3, 1), Hw::new(1, 4), Hw::square(1), Padding::Valid);
        let quant = PerChannelQuant { multiplier: &[1 << 30], shift: &[1] };
        let mut out = [0i8; 4];
        transpose_conv_s8(&p, &quant, &[1, 2], &[1, 1, 1], Some(&[10]), &mut out, &mut [0u8; 19]).unwrap();
        assert_eq!(out, [11, 13, 13, 12]);
    }

    #[test]
    fn rejects_bad_arguments() {
        let p = params(Dims4::new(1, 2, 2, 2), Dims4::new(3, 3, 3, 2), Hw::square(4), Hw::square(2), Padding::Same);
        let q = PerChannelQuant { multiplier: &[1 << 30; 3], shift: &[0; 3] };
        let (i, f, mut o, mut s) = ([0i8; 8], [0i8; 54], [0i8; 48], [0u8; 48 * 4 + 3]);
        assert!(transpose_conv_s8(&p, &q, &i, &f, None, &mut o, &mut s).is_ok());
        assert!(transpose_conv_s8(&p, &q, &i[..7], &f, None, &mut o, &mut s).is_err());
        assert!(transpose_conv_s8(&p, &q, &i, &f[..53], None, &mut o, &mut s).is_err());
        assert!(transpose_conv_s8(&p, &q, &i, &f, None, &mut o[..47], &mut s).is_err());
        assert!(transpose_conv_s8(&p, &q, &i, &f, None, &mut o, &mut s[..40]).is_err());
        assert!(transpose_conv_s8(&p, &q, &i, &f, Some(&[0; 2]), &mut o, &mut s).is_err());
        let q2 = PerChannelQuant { multiplier: &[1 << 30; 3], shift: &[0; 2] };
        assert!(transpose_conv_s8(&p, &q2, &i, &f, None, &mut o, &mut s).is_err());
        let bad = TransposeConvParams { stride: Hw::new(0, 1), ..p };
        assert!(transpose_conv_s8(&bad, &q, &i, &f, None, &mut o, &mut s).is_err());
        let bad = TransposeConvParams { input_offset: -128, ..p };
        assert!(transpose_conv_s8(&bad, &q, &i, &f, None, &mut o, &mut s).is_err());
        let bad = TransposeConvParams { filter: Dims4::new(3, 3, 3, 1), ..p };
        assert!(transpose_conv_s8(&bad, &q, &i, &f[..27], None, &mut o, &mut s).is_err());
        let bad = TransposeConvParams { padding: Hw::new(1 << 25, 0), ..p };
        assert!(transpose_conv_s8(&bad, &q, &i, &f, None, &mut o, &mut s).is_err());
        let p16 = TransposeConvParams { activation: ActivationRange::INT16, output_offset: 1, ..p };
        let mut s16 = [0u8; 48 * 8 + 7];
        assert!(transpose_conv_s16(&p16, &q, &[0i16; 8], &f, None, &mut [0i16; 48], &mut s16).is_err());
        let p16 = TransposeConvParams { output_offset: 0, ..p16 };
        assert!(transpose_conv_s16(&p16, &q, &[0i16; 8], &f, None, &mut [0i16; 48], &mut s16).is_ok());
    }
}
