//! 2-D convolution with int4 weights and int8 activations (W4A8): TFLite `CONV_2D` with an
//! `INT4` filter, bit-exact with TFLite Micro and the TFLite interpreter.
//!
//! As [`conv_s8`](crate::kernels::conv::conv_s8) (shapes, grouped convolution, strides,
//! dilations, padding, per-channel requantization with double rounding, which both oracles use
//! for conv), except that the filter `[out_c, kh, kw, filter_in_c]` arrives packed two int4
//! values per byte ([`int4`](crate::kernels::int4)) and is read a nibble at a time: TFLite Micro
//! unpacks it into scratch at every invoke and then runs `reference_integer_ops::ConvPerChannel`,
//! whose sums this kernel reproduces without that scratch.
//!
//! Golden tests: `tests/golden/kernels/conv_2d_int4.json` (both oracles).

use crate::Error;
use crate::kernels::PerChannelQuant;
use crate::kernels::common::{Accumulator, ActivationElement, check_len};
use crate::kernels::conv::{ConvGeometry, validate};
use crate::kernels::int4::{packed_len, weight};
pub use crate::kernels::params::ConvParams;
use crate::kernels::window::input_coord;

/// The reference kernel, after validation.
fn conv_s4_reference(
    p: &ConvParams,
    g: ConvGeometry,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[u8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) {
    let (ind, outd) = (p.input, p.output);
    let fic = p.filter.c.max(1);
    let filter_len = p.filter.h * p.filter.w * fic;
    let fpg = g.filters_per_group.max(1);
    let in_image = (ind.h * ind.w * ind.c).max(1);
    let out_image = (outd.h * outd.w * outd.c).max(1);
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        let mut out_pixels = out_b.chunks_exact_mut(outd.c.max(1));
        for oy in 0..outd.h {
            for ox in 0..outd.w {
                let Some(out_px) = out_pixels.next() else { return };
                for (group, out_g) in out_px.chunks_exact_mut(fpg).take(g.groups).enumerate() {
                    let in_c0 = group * fic;
                    for (j, out) in out_g.iter_mut().enumerate() {
                        let oc = group * fpg + j;
                        let f_oc = oc * filter_len;
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
                                let i0 = (iy * ind.w + ix) * ind.c + in_c0;
                                let f0 = f_oc + (ky * p.filter.w + kx) * fic;
                                let Some(xs) = in_b.get(i0..i0 + fic) else { continue };
                                for (c, &x) in xs.iter().enumerate() {
                                    acc = acc.add_product(weight(filter, f0 + c) * (x.to_i32() + p.input_offset));
                                }
                            }
                        }
                        if let Some(&b) = bias.and_then(|b| b.get(oc)) {
                            acc = acc.add_bias(b);
                        }
                        let (Some(&m), Some(&s)) = (quant.multiplier.get(oc), quant.shift.get(oc)) else { continue };
                        let scaled = acc.requantize(m, s).wrapping_add(p.output_offset);
                        *out = i8::from_clamped(p.activation.apply(scaled));
                    }
                }
            }
        }
    }
}

/// 2-D convolution with int4 per-channel weights and int8 activations (TFLite `CONV_2D` with an
/// `INT4` filter). `filter` holds the `out_c * kh * kw * filter_in_c` weights packed two per
/// byte ([`int4::packed_len`](crate::kernels::int4::packed_len) bytes, TFLite's layout).
/// Otherwise as [`conv_s8`](crate::kernels::conv::conv_s8); no scratch.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length or a parameter breaks the constraints.
/// Never panics.
pub fn conv_s4(
    params: &ConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[u8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    const K: &str = "conv_s4";
    let elements = params.filter.checked_len();
    check_len(K, "packed filter length != ceil(filter dims / 2)", filter.len(), elements.map(packed_len))?;
    let g = validate(K, params, quant, input, elements.unwrap_or(0), bias, output)?;
    conv_s4_reference(params, g, quant, input, filter, bias, output);
    Ok(())
}
