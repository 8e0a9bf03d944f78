//! Fully connected layers with int4 weights and int8 activations (W4A8): TFLite
//! `FULLY_CONNECTED` with `INT4` weights, bit-exact with TFLite Micro ([`Rounding::Double`]) and
//! with the TFLite interpreter's reference kernel ([`Rounding::Single`]).
//!
//! As the int8 kernels of [`fully_connected`](crate::kernels::fully_connected) (same parameters,
//! multipliers and the two rounding modes), except that the weights `[output_depth, input_depth]`
//! arrive packed two int4 values per byte ([`int4`](crate::kernels::int4); the whole tensor is
//! packed, so with an odd `input_depth` every other row starts in a high nibble) and are read a
//! nibble at a time, where TFLite Micro unpacks them into scratch at every invoke before
//! `reference_integer_ops::FullyConnected`.
//!
//! TFLite Micro runs INT4 fully connected layers with per-tensor weights only (its Prepare
//! refuses per-channel ones); the interpreter runs both, and so do these kernels.
//!
//! Golden tests: `tests/golden/kernels/fully_connected_int4.json` (per-tensor; both oracles).
//!
//! [`Rounding::Double`]: crate::kernels::Rounding::Double
//! [`Rounding::Single`]: crate::kernels::Rounding::Single

use crate::Error;
use crate::kernels::common::{Accumulator, ActivationElement, check_len};
use crate::kernels::fully_connected::{
    FullyConnectedMultiplier, FullyConnectedPerChannelQuant, Requant, per_channel, per_tensor, validate,
};
use crate::kernels::int4::{packed_len, weight};
pub use crate::kernels::params::FullyConnectedParams;

/// The reference kernel, after validation.
fn fully_connected_s4_reference(
    p: &FullyConnectedParams,
    requant: Requant<'_>,
    input: &[i8],
    filter: &[u8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) {
    let depth = p.input_depth.max(1);
    let out_depth = p.output_depth.max(1);
    for (in_row, out_row) in input.chunks_exact(depth).zip(output.chunks_exact_mut(out_depth)) {
        for (c, out) in out_row.iter_mut().enumerate() {
            let row = c * depth;
            let mut acc = 0i32;
            for (i, &x) in in_row.iter().enumerate() {
                acc = acc.add_product(weight(filter, row + i) * (x.to_i32() + p.input_offset));
            }
            if let Some(&b) = bias.and_then(|b| b.get(c)) {
                acc = acc.add_bias(b);
            }
            let scaled = requant.apply(c, acc).wrapping_add(p.output_offset);
            *out = i8::from_clamped(p.activation.apply(scaled));
        }
    }
}

fn check_filter(kernel: &'static str, p: &FullyConnectedParams, filter: &[u8]) -> Result<usize, Error> {
    let elements = p.output_depth.checked_mul(p.input_depth);
    check_len(
        kernel,
        "packed filter length != ceil(output_depth * input_depth / 2)",
        filter.len(),
        elements.map(packed_len),
    )?;
    Ok(elements.unwrap_or(0))
}

/// Fully connected with int4 per-tensor weights and int8 activations (TFLite `FULLY_CONNECTED`
/// with `INT4` weights). `filter` holds the `output_depth * input_depth` weights packed two per
/// byte ([`int4::packed_len`](crate::kernels::int4::packed_len) bytes, TFLite's layout).
/// Otherwise as [`fully_connected_s8`](crate::kernels::fully_connected::fully_connected_s8);
/// no scratch.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length does not match `params`, an offset or the
/// activation range is outside int8, or a depth is 0. Never panics.
pub fn fully_connected_s4(
    params: &FullyConnectedParams,
    quant: &FullyConnectedMultiplier,
    input: &[i8],
    filter: &[u8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    const K: &str = "fully_connected_s4";
    let elements = check_filter(K, params, filter)?;
    validate(K, params, input, elements, bias, output)?;
    fully_connected_s4_reference(params, per_tensor(params, quant), input, filter, bias, output);
    Ok(())
}

/// Fully connected with int4 per-channel weights: as [`fully_connected_s4`] with one multiplier
/// per output channel (`quant` in the form `params.rounding` uses, `output_depth` entries).
///
/// # Errors
/// As [`fully_connected_s4`], and when the multipliers do not have `output_depth` entries.
pub fn fully_connected_per_channel_s4(
    params: &FullyConnectedParams,
    quant: &FullyConnectedPerChannelQuant<'_>,
    input: &[i8],
    filter: &[u8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    const K: &str = "fully_connected_per_channel_s4";
    let elements = check_filter(K, params, filter)?;
    validate(K, params, input, elements, bias, output)?;
    let requant = per_channel(K, params, quant)?;
    fully_connected_s4_reference(params, requant, input, filter, bias, output);
    Ok(())
}
