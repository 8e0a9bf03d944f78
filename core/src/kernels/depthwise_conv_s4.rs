//! Depthwise 2-D convolution with int4 weights and int8 activations (W4A8): TFLite
//! `DEPTHWISE_CONV_2D` with an `INT4` filter, bit-exact with TFLite Micro and the TFLite
//! interpreter.
//!
//! As [`depthwise_conv_s8`](crate::kernels::depthwise_conv::depthwise_conv_s8) (depth
//! multiplier, strides, dilations, padding, per-channel requantization with double rounding),
//! except that the filter `[1, kh, kw, out_c]` arrives packed two int4 values per byte
//! ([`int4`](crate::kernels::int4)) and is read a nibble at a time, where TFLite Micro unpacks it
//! into scratch at every invoke before `reference_integer_ops::DepthwiseConvPerChannel`.
//!
//! Golden tests: `tests/golden/kernels/depthwise_conv_2d_int4.json` (both oracles).

use crate::Error;
use crate::kernels::PerChannelQuant;
use crate::kernels::common::{Accumulator, ActivationElement, check_len};
use crate::kernels::depthwise_conv::validate;
use crate::kernels::int4::{packed_len, weight};
pub use crate::kernels::params::DepthwiseConvParams;
use crate::kernels::window::input_coord;

/// The reference kernel, after validation.
fn depthwise_conv_s4_reference(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[u8],
    bias: Option<&[i32]>,
    output: &mut [i8],
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
                        let mut acc = 0i32;
                        for ky in 0..p.filter.h {
                            let Some(iy) = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h) else {
                                continue;
                            };
                            for kx in 0..p.filter.w {
                                let Some(ix) = input_coord(ox, p.stride.w, kx, p.dilation.w, p.padding.left, ind.w)
                                else {
                                    continue;
                                };
                                if let Some(&x) = in_b.get((iy * ind.w + ix) * ind.c + ic) {
                                    let w = weight(filter, (ky * p.filter.w + kx) * outd.c + oc);
                                    acc = acc.add_product(w * (x.to_i32() + p.input_offset));
                                }
                            }
                        }
                        if let Some(&b) = bias.and_then(|b| b.get(oc)) {
                            acc = acc.add_bias(b);
                        }
                        let (Some(&mult), Some(&s)) = (quant.multiplier.get(oc), quant.shift.get(oc)) else { continue };
                        let scaled = acc.requantize(mult, s).wrapping_add(p.output_offset);
                        *out = i8::from_clamped(p.activation.apply(scaled));
                    }
                }
            }
        }
    }
}

/// Depthwise 2-D convolution with int4 per-channel weights and int8 activations (TFLite
/// `DEPTHWISE_CONV_2D` with an `INT4` filter). `filter` holds the `kh * kw * out_c` weights
/// packed two per byte ([`int4::packed_len`](crate::kernels::int4::packed_len) bytes, TFLite's
/// layout). Otherwise as
/// [`depthwise_conv_s8`](crate::kernels::depthwise_conv::depthwise_conv_s8); no scratch.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length or a parameter breaks the constraints.
/// Never panics.
pub fn depthwise_conv_s4(
    params: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[u8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    const K: &str = "depthwise_conv_s4";
    let p = params;
    let elements = p.filter.h.checked_mul(p.filter.w).and_then(|v| v.checked_mul(p.output.c));
    check_len(
        K,
        "packed filter length != ceil(kh * kw * output channels / 2)",
        filter.len(),
        elements.map(packed_len),
    )?;
    validate(K, params, quant, input, elements.unwrap_or(0), bias, output)?;
    depthwise_conv_s4_reference(params, quant, input, filter, bias, output);
    Ok(())
}
