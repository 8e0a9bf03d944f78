//! 2-D convolution: int8 with per-channel weights, and 16x8 (int16 activations, int8 weights).
//!
//! Input `[n, h, w, in_c]` (NHWC), filter `[out_c, kh, kw, filter_in_c]` (OHWI, symmetric int8),
//! bias `[out_c]`, output `[n, oh, ow, out_c]`. Strides, dilations and padding (SAME, VALID or
//! explicit; see [`compute_window`](crate::kernels::common::compute_window)) as TFLite; grouped
//! convolution when `filter_in_c` divides `in_c` (TFLite's `groups = in_c / filter_in_c`, each
//! group of `out_c / groups` filters reading its own slice of input channels).
//!
//! Each output is `clamp(MultiplyByQuantizedMultiplier(sum filter * (input + input_offset) + bias)
//! + output_offset)`, padded pixels contributing nothing (they stand for the zero point).
//!
//! # Rounding
//! TFLite Micro and the TFLite interpreter's reference kernels run the same
//! `reference_integer_ops::ConvPerChannel` (double rounding: `SaturatingRoundingDoublingHighMul`
//! then `RoundingDivideByPOT`; the 16x8 kernel with an `i64` accumulator uses the Q15-reduced
//! 64-bit `MultiplyByQuantizedMultiplier`), so [`Rounding::Double`] and [`Rounding::Single`]
//! compute the same thing here and each matches both oracles bit for bit.
//!
//! # Scratch
//! [`conv_s8`] takes a scratch buffer of [`conv_s8_scratch_len`] bytes for its fast path (the
//! im2col block); with less (e.g. an empty slice) it runs the reference kernel, which needs
//! none. [`conv_s16`] needs none.
//!
//! # Prepare
//! [`compute_window`](crate::kernels::common::compute_window) gives the output size and
//! padding, [`per_channel_multipliers`](crate::kernels::common::per_channel_multipliers) the
//! multipliers and shifts (per-tensor weights are broadcast, as TFLite does), and
//! [`ActivationRange::from_fused`] the clamp.
//!
//! [`ActivationRange::from_fused`]: crate::kernels::ActivationRange::from_fused
//! [`Rounding::Double`]: crate::kernels::Rounding::Double
//! [`Rounding::Single`]: crate::kernels::Rounding::Single

use crate::Error;
use crate::kernels::common::{
    Accumulator, ActivationElement, Hw, PaddingValues, check_len, check_offsets, check_window_axis, ensure,
};
pub use crate::kernels::params::ConvParams;
use crate::kernels::window::input_coord;
use crate::kernels::{Dims4, PerChannelQuant, arch};

/// Sizes derived from validated parameters.
#[derive(Clone, Copy)]
pub(crate) struct ConvGeometry {
    pub(crate) groups: usize,
    pub(crate) filters_per_group: usize,
}

/// Checks that a conv window is consistent: output size, bounded indices, batch.
pub(crate) fn check_conv_window(
    kernel: &'static str,
    input: &Dims4,
    filter: Hw,
    output: &Dims4,
    stride: Hw,
    dilation: Hw,
    padding: &PaddingValues,
) -> Result<(), Error> {
    let (filter_h, filter_w) = (filter.h, filter.w);
    ensure(
        stride.h >= 1 && stride.w >= 1 && dilation.h >= 1 && dilation.w >= 1,
        kernel,
        "strides and dilations must be >= 1",
    )?;
    ensure(filter_h >= 1 && filter_w >= 1, kernel, "filter height and width must be >= 1")?;
    ensure(
        check_window_axis(input.h, padding.top, padding.bottom, filter_h, stride.h, dilation.h, output.h),
        kernel,
        "output height does not match input, filter, stride, dilation and padding",
    )?;
    ensure(
        check_window_axis(input.w, padding.left, padding.right, filter_w, stride.w, dilation.w, output.w),
        kernel,
        "output width does not match input, filter, stride, dilation and padding",
    )?;
    ensure(input.n == output.n, kernel, "input and output batch differ")
}

/// Checks the shapes, offsets and quantization of a conv call (`filter_len`: the filter's
/// element count, whatever its packing). Not inlined: its error paths stay out of the kernel's
/// frame, which the kernels run under (the device's stack).
#[inline(never)]
pub(crate) fn validate<X: ActivationElement, A>(
    kernel: &'static str,
    p: &ConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter_len: usize,
    bias: Option<&[A]>,
    output: &[X],
) -> Result<ConvGeometry, Error> {
    check_conv_window(kernel, &p.input, Hw::new(p.filter.h, p.filter.w), &p.output, p.stride, p.dilation, &p.padding)?;
    check_offsets::<X>(kernel, p.input_offset, p.output_offset)?;
    ensure(p.activation.is_within(X::RANGE), kernel, "activation range empty or outside the output type")?;
    let out_c = p.output.c;
    ensure(p.filter.n == out_c, kernel, "filter count != output channels")?;
    ensure(out_c >= 1 && p.filter.c >= 1, kernel, "channel counts must be >= 1")?;
    let groups = p.input.c.checked_div(p.filter.c).unwrap_or(0);
    ensure(
        groups >= 1 && p.input.c.checked_rem(p.filter.c) == Some(0),
        kernel,
        "filter input channels must divide input channels",
    )?;
    let filters_per_group = out_c.checked_div(groups).unwrap_or(0);
    ensure(
        filters_per_group >= 1 && out_c.checked_rem(groups) == Some(0),
        kernel,
        "groups (input channels / filter input channels) must divide output channels",
    )?;
    check_len(kernel, "input length != input dims", input.len(), p.input.checked_len())?;
    check_len(kernel, "filter length != filter dims", filter_len, p.filter.checked_len())?;
    check_len(kernel, "output length != output dims", output.len(), p.output.checked_len())?;
    if let Some(b) = bias {
        check_len(kernel, "bias length != output channels", b.len(), Some(out_c))?;
    }
    ensure(
        quant.multiplier.len() == out_c && quant.shift.len() == out_c,
        kernel,
        "multiplier/shift length != output channels",
    )?;
    Ok(ConvGeometry { groups, filters_per_group })
}

/// The reference kernel, after validation: TFLite's `reference_integer_ops::ConvPerChannel`.
/// Not inlined: a fast path's fallback, whose locals stay out of the dispatch's frame, under the
/// fast path's (the device's stack).
#[inline(never)]
fn conv_reference<X: ActivationElement, A: Accumulator>(
    p: &ConvParams,
    g: ConvGeometry,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &mut [X],
) {
    let (ind, outd) = (p.input, p.output);
    let fic = p.filter.c.max(1);
    let filter_len = (p.filter.h * p.filter.w * fic).max(1);
    let fpg = g.filters_per_group.max(1);
    let in_image = (ind.h * ind.w * ind.c).max(1);
    let out_image = (outd.h * outd.w * outd.c).max(1);
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        let mut out_pixels = out_b.chunks_exact_mut(outd.c.max(1));
        for oy in 0..outd.h {
            for ox in 0..outd.w {
                let Some(out_px) = out_pixels.next() else { return };
                let groups = out_px.chunks_exact_mut(fpg).zip(filter.chunks_exact((fpg * filter_len).max(1)));
                for (group, (out_g, filter_g)) in groups.take(g.groups).enumerate() {
                    let in_c0 = group * fic;
                    for (j, (out, filt)) in out_g.iter_mut().zip(filter_g.chunks_exact(filter_len)).enumerate() {
                        let oc = group * fpg + j;
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
                                let i0 = (iy * ind.w + ix) * ind.c + in_c0;
                                let f0 = (ky * p.filter.w + kx) * fic;
                                let (Some(xs), Some(ws)) = (in_b.get(i0..i0 + fic), filt.get(f0..f0 + fic)) else {
                                    continue;
                                };
                                for (&x, &w) in xs.iter().zip(ws) {
                                    acc = acc.add_product(w as i32 * (x.to_i32() + p.input_offset));
                                }
                            }
                        }
                        if let Some(&b) = bias.and_then(|b| b.get(oc)) {
                            acc = acc.add_bias(b);
                        }
                        let (Some(&m), Some(&s)) = (quant.multiplier.get(oc), quant.shift.get(oc)) else { continue };
                        let scaled = acc.requantize(m, s).wrapping_add(p.output_offset);
                        *out = X::from_clamped(p.activation.apply(scaled));
                    }
                }
            }
        }
    }
}

/// The dispatch point of the 16x8 conv kernel (no optimized variant yet: the reference).
#[inline]
fn conv_dispatch<X: ActivationElement, A: Accumulator>(
    p: &ConvParams,
    g: ConvGeometry,
    quant: &PerChannelQuant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &mut [X],
) {
    conv_reference(p, g, quant, input, filter, bias, output);
}

/// The one dispatch point of [`conv_s8`]: the target's fast path (see
/// [`arch`](crate::kernels::arch)), which declines (returning `false`) when its preconditions
/// do not hold (grouped convolution, too little scratch), then the reference.
#[inline]
#[allow(clippy::too_many_arguments)]
fn conv_s8_dispatch(
    p: &ConvParams,
    g: ConvGeometry,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) {
    #[cfg(any(mq_dsp, mq_wasm_simd, mq_portable))]
    let (cols, ops) = (
        arch::scratch::scratch_words(scratch),
        arch::tiled_conv::ConvOperands { p, multiplier: quant.multiplier, shift: quant.shift, input, filter, bias },
    );
    // Helium first where it is built; it declines to the DSP path as the DSP path does to the
    // reference.
    #[cfg(mq_mve)]
    let done = arch::arm_mve::conv_s8(&ops, output, cols) || arch::arm_dsp::conv_s8(&ops, output, cols);
    #[cfg(all(mq_dsp, not(mq_mve)))]
    let done = arch::arm_dsp::conv_s8(&ops, output, cols);
    #[cfg(all(mq_wasm_simd, not(mq_relaxed_simd)))]
    let done = arch::wasm_simd::conv_s8_lanes(&ops, output, cols)
        || arch::tiled_conv::conv_s8_tiled::<arch::wasm_simd::SimdTile>(&ops, output, cols);
    #[cfg(mq_relaxed_simd)]
    let done = arch::tiled_conv::conv_s8_tiled::<arch::wasm_simd::RelaxedTile>(&ops, output, cols);
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    let done = arch::x86::conv_s8(&ops, output, cols);
    #[cfg(all(mq_portable, not(all(target_arch = "x86_64", feature = "std"))))]
    let done = arch::tiled_conv::conv_s8_tiled::<arch::portable::NaturalTile>(&ops, output, cols);
    #[cfg(not(any(mq_dsp, mq_wasm_simd, mq_portable)))]
    let done = {
        let _ = scratch; // `force-reference`: no fast path
        false
    };
    if !done {
        conv_reference(p, g, quant, input, filter, bias, output);
    }
}

/// Bytes of scratch [`conv_s8`] can use for its fast path: the im2col block of 4 output pixels,
/// `4 * round_up(kh * kw * in_c, 8)` int16 values; for the layers that need them, the Arm DSP
/// path's gathering buffers (the rows of input at the image's left and right edges, the raw
/// patches of layers whose channels are not a multiple of 4, a copy of the last filter: at most
/// 1,408 bytes together); plus 4 bytes so any alignment works. A pure function of the shapes,
/// the same on every target (so a model planned on the host runs on any device); 0 for grouped
/// convolutions (`filter_in_c != in_c`), which have no fast path. Saturates at `usize::MAX`
/// instead of overflowing.
pub fn conv_s8_scratch_len(params: &ConvParams) -> usize {
    let p = params;
    if p.filter.c != p.input.c {
        return 0;
    }
    let k = p.filter.h.saturating_mul(p.filter.w).saturating_mul(p.filter.c);
    let (edge, raw, last) = arch::scratch::conv_extra_words(
        p.input.c,
        (p.filter.h, p.filter.w),
        p.stride.w,
        p.dilation.w,
        (p.padding.left, p.padding.right),
    );
    let words = arch::scratch::conv_scratch_words(k).saturating_add(edge + raw + last);
    words.saturating_mul(4).saturating_add(4)
}

/// [`conv_s8`]'s reference kernel (TFLite's `ConvPerChannel` as written), whatever the target:
/// the oracle of the fast paths in tests and benchmarks. Not covered by semver.
///
/// # Errors
/// As [`conv_s8`].
#[doc(hidden)]
pub fn conv_s8_reference(
    params: &ConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    let g = validate("conv_s8", params, quant, input, filter.len(), bias, output)?;
    conv_reference(params, g, quant, input, filter, bias, output);
    Ok(())
}

/// int8 2-D convolution with per-channel weights (TFLite `CONV_2D`, int8), bit-exact with TFLite
/// Micro and with the TFLite interpreter's reference kernel in both rounding modes.
///
/// Constraints: shapes as [`ConvParams`] documents (output size consistent with input, filter,
/// stride, dilation and padding; `filter_in_c` divides `in_c` and `in_c / filter_in_c` divides
/// `out_c`); offsets and clamp within int8; one multiplier and shift per output channel with
/// shifts in [-31, 30]; optional int32 bias `[out_c]`. The 32-bit accumulator wraps as
/// TFLite's does if a filter has more than about 2^16 taps.
///
/// Scratch: `scratch` of at least [`conv_s8_scratch_len`] bytes (any alignment; its contents
/// are overwritten) lets the target's fast path run (Arm DSP, wasm SIMD or the portable tiled
/// path, see [`arch`]); a shorter one, e.g. empty, runs the reference
/// kernel. The output is the same bit for bit either way.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length or a parameter breaks the constraints.
/// Never panics.
pub fn conv_s8(
    params: &ConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) -> Result<(), Error> {
    let g = validate("conv_s8", params, quant, input, filter.len(), bias, output)?;
    conv_s8_dispatch(params, g, quant, input, filter, bias, output, scratch);
    Ok(())
}

/// 16x8 2-D convolution: int16 input and output (zero points 0: both offsets must be 0), int8
/// per-channel weights, bias `B` = `i64` (TFLite's default for 16x8: 64-bit accumulator and the
/// Q15-reduced multiplier, which needs shifts <= 7) or `i32` (32-bit accumulator, Q31
/// multiplier), as TFLite Micro picks by the bias type; `None::<&[i64]>` for no bias. Otherwise
/// as [`conv_s8`]. Scratch: none.
///
/// # Errors
/// As [`conv_s8`].
pub fn conv_s16<B: Accumulator>(
    params: &ConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i16],
    filter: &[i8],
    bias: Option<&[B]>,
    output: &mut [i16],
) -> Result<(), Error> {
    let g = validate("conv_s16", params, quant, input, filter.len(), bias, output)?;
    conv_dispatch(params, g, quant, input, filter, bias, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::{Hw, Padding, compute_window};
    use crate::kernels::{ActivationRange, Dims4, Rounding};

    fn params(input: Dims4, filter: Dims4, stride: Hw, dilation: Hw, padding: Padding) -> ConvParams {
        let w =
            compute_window(padding, Hw::new(input.h, input.w), Hw::new(filter.h, filter.w), stride, dilation).unwrap();
        ConvParams {
            input,
            filter,
            output: Dims4::new(input.n, w.output.h, w.output.w, filter.n),
            stride,
            dilation,
            padding: w.padding,
            input_offset: 0,
            output_offset: 0,
            activation: ActivationRange::INT8,
            rounding: Rounding::Double,
        }
    }

    #[test]
    fn one_by_one_identity_with_offsets() {
        // 1x1 conv, 2 in channels -> 2 out channels, identity weights, multiplier 1.0.
        let mut p =
            params(Dims4::new(1, 2, 2, 2), Dims4::new(2, 1, 1, 2), Hw::square(1), Hw::square(1), Padding::Valid);
        p.input_offset = 3; // input zero point -3
        p.output_offset = -1;
        let quant = PerChannelQuant { multiplier: &[1 << 30, 1 << 30], shift: &[1, 1] };
        let input = [-3i8, 0, 1, 2, 3, 4, 5, 6];
        let mut out = [0i8; 8];
        conv_s8(&p, &quant, &input, &[1, 0, 0, 1], Some(&[0, 10]), &mut out, &mut [0u8; 256]).unwrap();
        // (x + 3) - 1, plus 10 on channel 1.
        assert_eq!(out, [-1, 12, 3, 14, 5, 16, 7, 18]);
    }

    #[test]
    fn padding_contributes_nothing() {
        // 3x3 all-ones filter over a 2x2 image of ones, SAME: each output counts its in-image taps.
        let p = params(Dims4::new(1, 2, 2, 1), Dims4::new(1, 3, 3, 1), Hw::square(1), Hw::square(1), Padding::Same);
        let quant = PerChannelQuant { multiplier: &[1 << 30], shift: &[1] };
        let mut out = [0i8; 4];
        conv_s8(&p, &quant, &[1; 4], &[1; 9], None, &mut out, &mut [0u8; 256]).unwrap();
        assert_eq!(out, [4, 4, 4, 4]);
    }

    #[test]
    fn grouped_convolution_reads_its_own_channels() {
        // 2 groups: in_c 2, filter_in_c 1, out_c 2.
        let p = params(Dims4::new(1, 1, 1, 2), Dims4::new(2, 1, 1, 1), Hw::square(1), Hw::square(1), Padding::Valid);
        let quant = PerChannelQuant { multiplier: &[1 << 30; 2], shift: &[1; 2] };
        let mut out = [0i8; 2];
        conv_s8(&p, &quant, &[5, 7], &[2, 3], None, &mut out, &mut [0u8; 256]).unwrap();
        assert_eq!(out, [10, 21]);
    }

    #[test]
    fn rejects_bad_arguments() {
        let p = params(Dims4::new(1, 4, 4, 2), Dims4::new(3, 3, 3, 2), Hw::square(1), Hw::square(1), Padding::Same);
        let q = PerChannelQuant { multiplier: &[1 << 30; 3], shift: &[0; 3] };
        let (i, f, mut o) = ([0i8; 32], [0i8; 54], [0i8; 48]);
        assert!(conv_s8(&p, &q, &i, &f, None, &mut o, &mut []).is_ok());
        assert!(conv_s8(&p, &q, &i[..31], &f, None, &mut o, &mut []).is_err());
        assert!(conv_s8(&p, &q, &i, &f[..53], None, &mut o, &mut []).is_err());
        assert!(conv_s8(&p, &q, &i, &f, None, &mut o[..47], &mut []).is_err());
        assert!(conv_s8(&p, &q, &i, &f, Some(&[0; 2]), &mut o, &mut []).is_err());
        let q2 = PerChannelQuant { multiplier: &[1 << 30; 3], shift: &[0; 2] };
        assert!(conv_s8(&p, &q2, &i, &f, None, &mut o, &mut []).is_err());
        let bad_out = ConvParams { output: Dims4::new(1, 3, 4, 3), ..p };
        assert!(conv_s8(&bad_out, &q, &i, &f, None, &mut o[..36], &mut []).is_err());
        let bad_stride = ConvParams { stride: Hw::new(0, 1), ..p };
        assert!(conv_s8(&bad_stride, &q, &i, &f, None, &mut o, &mut []).is_err());
        let bad_offset = ConvParams { input_offset: -128, ..p };
        assert!(conv_s8(&bad_offset, &q, &i, &f, None, &mut o, &mut []).is_err());
        // filter_in_c 3 does not divide in_c 2.
        let bad_groups = ConvParams { filter: Dims4::new(3, 3, 3, 3), ..p };
        assert!(conv_s8(&bad_groups, &q, &i, &[0; 81], None, &mut o, &mut []).is_err());
        // 2 groups do not divide 3 output channels.
        let bad_groups = ConvParams { filter: Dims4::new(3, 3, 3, 1), ..p };
        assert!(conv_s8(&bad_groups, &q, &i, &[0; 27], None, &mut o, &mut []).is_err());
        // 16x8 with a nonzero offset.
        let p16 = ConvParams { activation: ActivationRange::INT16, output_offset: 1, ..p };
        assert!(conv_s16(&p16, &q, &[0i16; 32], &f, None::<&[i64]>, &mut [0i16; 48]).is_err());
        let p16 = ConvParams { output_offset: 0, ..p16 };
        assert!(conv_s16(&p16, &q, &[0i16; 32], &f, None::<&[i64]>, &mut [0i16; 48]).is_ok());
    }
}
