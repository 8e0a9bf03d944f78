//! Depthwise 2-D convolution: int8 with per-channel weights, and 16x8 (int16 activations, int8
//! weights), with a depth multiplier.
//!
//! Input `[n, h, w, in_c]` (NHWC), filter `[1, kh, kw, out_c]` with `out_c = in_c *
//! depth_multiplier` (symmetric int8), bias `[out_c]`, output `[n, oh, ow, out_c]`. Output
//! channel `c * depth_multiplier + m` filters input channel `c`. Strides, dilations and padding as
//! [`conv`](crate::kernels::conv).
//!
//! # Rounding
//! TFLite Micro and the TFLite interpreter's reference kernels run the same
//! `reference_integer_ops::DepthwiseConvPerChannel` (double rounding for int8; the Q15-reduced
//! 64-bit `MultiplyByQuantizedMultiplier` for 16x8), so [`Rounding::Double`] and
//! [`Rounding::Single`] compute the same thing here and each matches both oracles bit for bit.
//!
//! # Scratch
//! None: neither the reference kernels nor the fast paths of [`depthwise_conv_s8`] need
//! scratch memory ([`depthwise_conv_s8_scratch_len`] is 0; [`depthwise_conv_s8`] takes a scratch
//! argument like [`conv_s8`](crate::kernels::conv::conv_s8) so callers treat them alike).
//!
//! # Prepare
//! As [`conv`](crate::kernels::conv): [`compute_window`](crate::kernels::common::compute_window),
//! [`per_channel_multipliers`](crate::kernels::common::per_channel_multipliers) (TFLite quantizes
//! depthwise filters along dimension 3, the output channel), [`ActivationRange::from_fused`].
//!
//! [`ActivationRange::from_fused`]: crate::kernels::ActivationRange::from_fused
//! [`Rounding::Double`]: crate::kernels::Rounding::Double
//! [`Rounding::Single`]: crate::kernels::Rounding::Single

use crate::Error;
use crate::kernels::PerChannelQuant;
use crate::kernels::arch;
use crate::kernels::common::{Accumulator, ActivationElement, check_len, check_offsets, ensure};
use crate::kernels::conv::check_conv_window;
pub use crate::kernels::params::DepthwiseConvParams;
use crate::kernels::window::input_coord;

/// Checks the shapes, offsets and quantization of a depthwise call (`filter_len`: the filter's
/// element count, whatever its packing). Not inlined: its error paths stay out of the kernel's
/// frame, which the kernels run under (the device's stack).
#[inline(never)]
pub(crate) fn validate<X: ActivationElement, A>(
    kernel: &'static str,
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter_len: usize,
    bias: Option<&[A]>,
    output: &[X],
) -> Result<(), Error> {
    check_conv_window(kernel, &p.input, p.filter, &p.output, p.stride, p.dilation, &p.padding)?;
    check_offsets::<X>(kernel, p.input_offset, p.output_offset)?;
    ensure(p.activation.is_within(X::RANGE), kernel, "activation range empty or outside the output type")?;
    let out_c = p.output.c;
    ensure(p.depth_multiplier >= 1 && p.input.c >= 1, kernel, "channels and depth multiplier must be >= 1")?;
    ensure(
        p.input.c.checked_mul(p.depth_multiplier) == Some(out_c),
        kernel,
        "output channels != input channels * depth_multiplier",
    )?;
    check_len(kernel, "input length != input dims", input.len(), p.input.checked_len())?;
    check_len(
        kernel,
        "filter length != kh * kw * output channels",
        filter_len,
        p.filter.h.checked_mul(p.filter.w).and_then(|v| v.checked_mul(out_c)),
    )?;
    check_len(kernel, "output length != output dims", output.len(), p.output.checked_len())?;
    if let Some(b) = bias {
        check_len(kernel, "bias length != output channels", b.len(), Some(out_c))?;
    }
    ensure(
        quant.multiplier.len() == out_c && quant.shift.len() == out_c,
        kernel,
        "multiplier/shift length != output channels",
    )
}

/// The reference kernel, after validation: TFLite's
/// `reference_integer_ops::DepthwiseConvPerChannel`. Not inlined: a fast path's
/// fallback, whose locals stay out of the dispatch's frame, under the fast path's (the device's
/// stack).
#[inline(never)]
fn depthwise_conv_reference<X: ActivationElement, A: Accumulator>(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &mut [X],
) {
    let (ind, outd) = (p.input, p.output);
    let dm = p.depth_multiplier.max(1);
    let in_image = (ind.h * ind.w * ind.c).max(1);
    let out_image = (outd.h * outd.w * outd.c).max(1);
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        let mut out_pixels = out_b.chunks_exact_mut(outd.c.max(1));
        for oy in 0..outd.h {
            for ox in 0..outd.w {
                let Some(out_px) = out_pixels.next() else { return };
                for (ic, out_group) in out_px.chunks_exact_mut(dm).enumerate() {
                    for (m, out) in out_group.iter_mut().enumerate() {
                        let oc = ic * dm + m;
                        let mut acc = A::ZERO;
                        for ky in 0..p.filter.h {
                            let Some(iy) = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h) else {
                                continue;
                            };
                            for kx in 0..p.filter.w {
                                let Some(ix) = input_coord(ox, p.stride.w, kx, p.dilation.w, p.padding.left, ind.w)
                                else {
                                    continue;
                                };
                                let x = in_b.get((iy * ind.w + ix) * ind.c + ic);
                                let w = filter.get((ky * p.filter.w + kx) * outd.c + oc);
                                if let (Some(&x), Some(&w)) = (x, w) {
                                    acc = acc.add_product(w as i32 * (x.to_i32() + p.input_offset));
                                }
                            }
                        }
                        if let Some(&b) = bias.and_then(|b| b.get(oc)) {
                            acc = acc.add_bias(b);
                        }
                        let (Some(&mult), Some(&s)) = (quant.multiplier.get(oc), quant.shift.get(oc)) else { continue };
                        let scaled = acc.requantize(mult, s).wrapping_add(p.output_offset);
                        *out = X::from_clamped(p.activation.apply(scaled));
                    }
                }
            }
        }
    }
}

/// The dispatch point of the 16x8 depthwise kernel (no optimized variant yet: the reference).
#[inline]
fn depthwise_conv_dispatch<X: ActivationElement, A: Accumulator>(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &mut [X],
) {
    depthwise_conv_reference(p, quant, input, filter, bias, output);
}

/// The one dispatch point of [`depthwise_conv_s8`]: the target's fast path (see
/// [`arch`](crate::kernels::arch)), which declines (returning `false`) when its preconditions
/// do not hold (depth multiplier other than 1), then the reference.
#[inline]
fn depthwise_conv_s8_dispatch(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) {
    // Helium first where it is built; it declines to the DSP path.
    #[cfg(mq_mve)]
    let done = crate::kernels::arch::arm_mve::depthwise_conv_s8(p, quant, input, filter, bias, output)
        || crate::kernels::arch::arm_dsp::depthwise_conv_s8(p, quant, input, filter, bias, output, scratch);
    #[cfg(all(mq_dsp, not(mq_mve)))]
    let done = crate::kernels::arch::arm_dsp::depthwise_conv_s8(p, quant, input, filter, bias, output, scratch);
    #[cfg(not(mq_dsp))]
    let _ = scratch;
    #[cfg(mq_wasm_simd)]
    let done = crate::kernels::arch::wasm_simd::depthwise_conv_s8(p, quant, input, filter, bias, output);
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    let done = crate::kernels::arch::x86::depthwise_conv_s8(p, quant, input, filter, bias, output);
    #[cfg(all(mq_portable, not(all(target_arch = "x86_64", feature = "std"))))]
    let done = crate::kernels::arch::portable::depthwise_conv_s8(p, quant, input, filter, bias, output);
    #[cfg(not(any(mq_dsp, mq_wasm_simd, mq_portable)))]
    let done = false; // `force-reference`: no fast path
    if !done {
        depthwise_conv_reference(p, quant, input, filter, bias, output);
    }
}

/// Bytes of scratch [`depthwise_conv_s8`] uses for its fast path: for a 3x3 filter with depth
/// multiplier 1, the Arm DSP kernels' widened input (the stride-1 kernel's 4 int16 planes of a
/// strip of lines, at most 3 KB; or the strip kernel's padded rows, at most 1 KB), plus 4 bytes
/// so any alignment works, when that is at most a quarter of the op's input and output bytes
/// (else the kernels take it on the stack: a small layer's arena does not grow by more than its
/// activations' quarter, e.g. an 8x8x8 image's 1,284 bytes against its 1,024); 0 for every other
/// shape. A pure function of the shapes, the same on every target (so a model planned on the
/// host runs on any device).
pub fn depthwise_conv_s8_scratch_len(params: &DepthwiseConvParams) -> usize {
    let p = params;
    if p.filter.h != 3 || p.filter.w != 3 || p.depth_multiplier != 1 {
        return 0;
    }
    let words = arch::scratch::dw3x3_scratch_words(
        p.input.c,
        (p.output.h, p.output.w),
        (p.stride.h, p.stride.w),
        (p.dilation.h, p.dilation.w),
        (p.padding.top, p.padding.left),
    );
    let bytes = if words == 0 { 0 } else { words.saturating_mul(4).saturating_add(4) };
    let activations = p.input.checked_len().unwrap_or(0).saturating_add(p.output.checked_len().unwrap_or(0));
    if bytes.saturating_mul(4) > activations { 0 } else { bytes }
}

/// [`depthwise_conv_s8`]'s reference kernel (TFLite's `DepthwiseConvPerChannel` as written),
/// whatever the target: the oracle of the fast paths in tests and benchmarks. Not covered by
/// semver.
///
/// # Errors
/// As [`depthwise_conv_s8`].
#[doc(hidden)]
pub fn depthwise_conv_s8_reference(
    params: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    validate("depthwise_conv_s8", params, quant, input, filter.len(), bias, output)?;
    depthwise_conv_reference(params, quant, input, filter, bias, output);
    Ok(())
}

/// int8 depthwise 2-D convolution with per-channel weights and a depth multiplier (TFLite
/// `DEPTHWISE_CONV_2D`, int8), bit-exact with TFLite Micro and with the TFLite interpreter's
/// reference kernel in both rounding modes.
///
/// Constraints: shapes as [`DepthwiseConvParams`] documents (output size consistent with input,
/// filter, stride, dilation and padding; `out_c = in_c * depth_multiplier`); offsets and clamp
/// within int8; one multiplier and shift per output channel, shifts in [-31, 30]; optional int32
/// bias `[out_c]`.
///
/// Scratch: `scratch` takes [`depthwise_conv_s8_scratch_len`] bytes (any alignment; its
/// contents are overwritten): the Arm DSP 3x3 kernels widen their input there. Any slice, e.g.
/// an empty one, works: with too little, those kernels take a buffer on the stack instead (up to
/// 3 KB; the interpreter always passes the planned scratch). The output is the same bit for bit
/// either way.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length or a parameter breaks the constraints.
/// Never panics.
pub fn depthwise_conv_s8(
    params: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) -> Result<(), Error> {
    validate("depthwise_conv_s8", params, quant, input, filter.len(), bias, output)?;
    depthwise_conv_s8_dispatch(params, quant, input, filter, bias, output, scratch);
    Ok(())
}

/// 16x8 depthwise 2-D convolution: int16 input and output (zero points 0: both offsets must be
/// 0), int8 per-channel weights, bias `B` = `i64` (what TFLite uses for 16x8 depthwise: 64-bit
/// accumulator and the Q15-reduced multiplier, which needs shifts <= 7; `None::<&[i64]>` for no
/// bias) or `i32` (32-bit accumulator, Q31 multiplier; TFLite has no such depthwise kernel).
/// Otherwise as [`depthwise_conv_s8`]. Scratch: none.
///
/// # Errors
/// As [`depthwise_conv_s8`].
pub fn depthwise_conv_s16<B: Accumulator>(
    params: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i16],
    filter: &[i8],
    bias: Option<&[B]>,
    output: &mut [i16],
) -> Result<(), Error> {
    validate("depthwise_conv_s16", params, quant, input, filter.len(), bias, output)?;
    depthwise_conv_dispatch(params, quant, input, filter, bias, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::{Hw, Padding, compute_window};
    use crate::kernels::{ActivationRange, Dims4, Rounding};

    fn params(input: Dims4, filter: Hw, dm: usize, stride: Hw, padding: Padding) -> DepthwiseConvParams {
        let w = compute_window(padding, Hw::new(input.h, input.w), filter, stride, Hw::square(1)).unwrap();
        DepthwiseConvParams {
            input,
            filter,
            output: Dims4::new(input.n, w.output.h, w.output.w, input.c * dm),
            depth_multiplier: dm,
            stride,
            dilation: Hw::square(1),
            padding: w.padding,
            input_offset: 0,
            output_offset: 0,
            activation: ActivationRange::INT8,
            rounding: Rounding::Double,
        }
    }

    #[test]
    fn depth_multiplier_maps_channels() {
        // 1x1 image, 2 channels, multiplier 2: outputs [x0*w0, x0*w1, x1*w2, x1*w3].
        let p = params(Dims4::new(1, 1, 1, 2), Hw::square(1), 2, Hw::square(1), Padding::Valid);
        let q = PerChannelQuant { multiplier: &[1 << 30; 4], shift: &[1; 4] };
        let mut out = [0i8; 4];
        depthwise_conv_s8(&p, &q, &[3, -5], &[1, 2, 3, 4], Some(&[0, 0, 0, 1]), &mut out, &mut []).unwrap();
        assert_eq!(out, [3, 6, -15, -19]);
    }

    #[test]
    fn three_by_three_same_counts_taps() {
        let p = params(Dims4::new(1, 3, 3, 1), Hw::square(3), 1, Hw::square(1), Padding::Same);
        let q = PerChannelQuant { multiplier: &[1 << 30], shift: &[1] };
        let mut out = [0i8; 9];
        depthwise_conv_s8(&p, &q, &[1; 9], &[1; 9], None, &mut out, &mut []).unwrap();
        assert_eq!(out, [4, 6, 4, 6, 9, 6, 4, 6, 4]);
    }

    #[test]
    fn rejects_bad_arguments() {
        let p = params(Dims4::new(1, 4, 4, 2), Hw::square(3), 2, Hw::square(2), Padding::Same);
        let q = PerChannelQuant { multiplier: &[1 << 30; 4], shift: &[0; 4] };
        let (i, f, mut o) = ([0i8; 32], [0i8; 36], [0i8; 16]);
        assert!(depthwise_conv_s8(&p, &q, &i, &f, None, &mut o, &mut []).is_ok());
        assert!(depthwise_conv_s8(&p, &q, &i[..31], &f, None, &mut o, &mut []).is_err());
        assert!(depthwise_conv_s8(&p, &q, &i, &f[..35], None, &mut o, &mut []).is_err());
        assert!(depthwise_conv_s8(&p, &q, &i, &f, None, &mut o[..15], &mut []).is_err());
        assert!(depthwise_conv_s8(&p, &q, &i, &f, Some(&[0; 3]), &mut o, &mut []).is_err());
        let bad_dm = DepthwiseConvParams { depth_multiplier: 3, ..p };
        assert!(depthwise_conv_s8(&bad_dm, &q, &i, &f, None, &mut o, &mut []).is_err());
        let bad_dm = DepthwiseConvParams { depth_multiplier: 0, ..p };
        assert!(depthwise_conv_s8(&bad_dm, &q, &i, &f, None, &mut o, &mut []).is_err());
        let q3 = PerChannelQuant { multiplier: &[1 << 30; 3], shift: &[0; 4] };
        assert!(depthwise_conv_s8(&p, &q3, &i, &f, None, &mut o, &mut []).is_err());
        let p16 = DepthwiseConvParams { activation: ActivationRange::INT16, ..p };
        assert!(depthwise_conv_s16(&p16, &q, &[0i16; 32], &f, None::<&[i64]>, &mut [0i16; 16]).is_ok());
        assert!(depthwise_conv_s8(&p16, &q, &i, &f, None, &mut o, &mut []).is_err());
    }
}
