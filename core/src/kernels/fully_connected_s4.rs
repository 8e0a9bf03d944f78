//! Fully connected layers with int4 weights and int8 activations (W4A8): TFLite
//! `FULLY_CONNECTED` with `INT4` weights, bit-exact with TFLite Micro ([`Rounding::Double`]) and
//! with the TFLite interpreter's reference kernel ([`Rounding::Single`]).
//!
//! As the int8 kernels of [`fully_connected`](crate::kernels::fully_connected) (same parameters,
//! multipliers and the two rounding modes), except that the weights `[output_depth, input_depth]`
//! arrive packed two int4 values per byte ([`int4`](crate::kernels::int4); the whole tensor is
//! packed, so with an odd `input_depth` every other row starts in a high nibble). TFLite Micro
//! unpacks them into scratch at every invoke before `reference_integer_ops::FullyConnected`;
//! these kernels read them packed, with no scratch for them (each weight is read once per input
//! row, so unpacking the whole filter first would cost about as much as the products, and as
//! much RAM as the filter has weights):
//! - the reference reads a nibble at a time;
//! - the portable path takes a byte's two weights against two inputs (a row that starts in a
//!   high nibble, with an odd `input_depth`, takes that one alone first);
//! - on the Arm DSP path (`arch::arm_dsp::fully_connected_s4`), depths that are multiples of 8 run
//!   `SMLAD` on weights unpacked in registers, two rows per pass, over the input row expanded
//!   once into the scratch ([`fully_connected_s8_scratch_len`] bytes, as the int8 kernels).
//!
//! [`fully_connected_s8_scratch_len`]: crate::kernels::fully_connected::fully_connected_s8_scratch_len
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

/// A validated int4 fully connected layer: what every path reads (the output and scratch
/// apart).
pub(crate) struct S4Layer<'a> {
    pub(crate) p: &'a FullyConnectedParams,
    pub(crate) requant: &'a Requant<'a>,
    pub(crate) input: &'a [i8],
    pub(crate) filter: &'a [u8],
    pub(crate) bias: Option<&'a [i32]>,
}

impl S4Layer<'_> {
    /// The output of channel `c` from its sum `acc`: bias, requantization, offset and clamp
    /// (every path's epilogue, the reference's).
    #[inline(always)]
    pub(crate) fn output(&self, c: usize, acc: i32) -> i8 {
        let acc = match self.bias.and_then(|b| b.get(c)) {
            Some(&b) => acc.add_bias(b),
            None => acc,
        };
        let scaled = match *self.requant {
            Requant::TensorFixed(q) => acc.requantize(q.multiplier, q.shift),
            Requant::ChannelFixed(m, s) => match (m.get(c), s.get(c)) {
                (Some(&m), Some(&s)) => acc.requantize(m, s),
                _ => 0, // unreachable: lengths validated
            },
            _ => exact_requant(self.requant, c, acc),
        };
        i8::from_clamped(self.p.activation.apply(scaled.wrapping_add(self.p.output_offset)))
    }
}

/// The single-rounding requantization (64-bit exact multipliers), out of line: its frame is
/// large, and the paths' loops, which inline [`S4Layer::output`], stay lean on the device's stack.
#[inline(never)]
fn exact_requant(requant: &Requant<'_>, c: usize, acc: i32) -> i32 {
    requant.apply(c, acc)
}

/// Every output of every input row: `row_sum(c, x)` the sum of filter row `c` with input row
/// `x`, then the shared epilogue ([`S4Layer::output`]).
#[inline(always)]
fn each_output(l: &S4Layer<'_>, output: &mut [i8], row_sum: impl Fn(usize, &[i8]) -> i32) {
    let depth = l.p.input_depth.max(1);
    for (in_row, out_row) in l.input.chunks_exact(depth).zip(output.chunks_exact_mut(l.p.output_depth.max(1))) {
        for (c, out) in out_row.iter_mut().enumerate() {
            *out = l.output(c, row_sum(c, in_row));
        }
    }
}

/// The reference kernel, after validation: a nibble per product. Each path is out of line, so
/// that only the frame of the one that runs is on the device's stack.
#[inline(never)]
fn fully_connected_s4_reference(l: &S4Layer<'_>, output: &mut [i8]) {
    let depth = l.p.input_depth.max(1);
    each_output(l, output, |c, x| {
        let row = c * depth;
        x.iter()
            .enumerate()
            .fold(0i32, |acc, (i, &x)| acc.add_product(weight(l.filter, row + i) * (x.to_i32() + l.p.input_offset)))
    });
}

/// The sum of one filter row (starting at weight `start` of the packed `filter`) with the input
/// row `x`, two weights per byte: a row that starts in a high nibble takes that one alone first,
/// and an odd remainder the low nibble after the last whole byte.
#[inline(always)]
fn row_sum_pairs(filter: &[u8], start: usize, x: &[i8], offset: i32) -> i32 {
    let lo = |b: u8| i32::from(((b << 4) as i8) >> 4);
    let hi = |b: u8| i32::from((b as i8) >> 4);
    let mut acc = 0i32;
    let (mut x, mut start) = (x, start);
    if start % 2 == 1 {
        if let (Some(&b), Some((&x0, rest))) = (filter.get(start / 2), x.split_first()) {
            acc = acc.add_product(hi(b) * (i32::from(x0) + offset));
            x = rest;
            start += 1;
        }
    }
    let bytes = filter.get(start / 2..).unwrap_or(&[]);
    let mut pairs = x.chunks_exact(2);
    for (&b, xs) in bytes.iter().zip(&mut pairs) {
        if let [x0, x1] = *xs {
            acc = acc.add_product(lo(b) * (i32::from(x0) + offset));
            acc = acc.add_product(hi(b) * (i32::from(x1) + offset));
        }
    }
    if let ([last], Some(&b)) = (pairs.remainder(), bytes.get(x.len() / 2)) {
        acc = acc.add_product(lo(b) * (i32::from(*last) + offset));
    }
    acc
}

/// The portable path: each packed byte's two weights against two inputs ([`row_sum_pairs`]).
#[inline(never)]
fn fully_connected_s4_pairs(l: &S4Layer<'_>, output: &mut [i8]) {
    let depth = l.p.input_depth.max(1);
    each_output(l, output, |c, x| row_sum_pairs(l.filter, c * depth, x, l.p.input_offset));
}

/// The fastest path of the target that takes the layer (validated).
fn fully_connected_s4_dispatch(l: &S4Layer<'_>, output: &mut [i8], scratch: &mut [u8]) {
    #[cfg(mq_dsp)]
    if crate::kernels::arch::arm_dsp::fully_connected_s4(
        l,
        output,
        crate::kernels::arch::scratch::scratch_words(scratch),
    ) {
        return;
    }
    let _ = scratch;
    // The fast paths' cfgs (none with `force-reference`: the reference then runs).
    if !cfg!(any(mq_dsp, mq_wasm_simd, mq_portable)) {
        fully_connected_s4_reference(l, output);
    } else {
        fully_connected_s4_pairs(l, output);
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
/// Otherwise as [`fully_connected_s8`](crate::kernels::fully_connected::fully_connected_s8),
/// scratch included: `scratch` of [`fully_connected_s8_scratch_len`] bytes for the Arm DSP path
/// (any alignment; shorter scratch runs the portable paths).
///
/// [`fully_connected_s8_scratch_len`]: crate::kernels::fully_connected::fully_connected_s8_scratch_len
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
    scratch: &mut [u8],
) -> Result<(), Error> {
    const K: &str = "fully_connected_s4";
    let elements = check_filter(K, params, filter)?;
    validate(K, params, input, elements, bias, output)?;
    let requant = per_tensor(params, quant);
    let l = S4Layer { p: params, requant: &requant, input, filter, bias };
    fully_connected_s4_dispatch(&l, output, scratch);
    Ok(())
}

/// Fully connected with int4 per-channel weights: as [`fully_connected_s4`] (scratch included) with one multiplier
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
    scratch: &mut [u8],
) -> Result<(), Error> {
    const K: &str = "fully_connected_per_channel_s4";
    let elements = check_filter(K, params, filter)?;
    validate(K, params, input, elements, bias, output)?;
    let requant = per_channel(K, params, quant)?;
    let l = S4Layer { p: params, requant: &requant, input, filter, bias };
    fully_connected_s4_dispatch(&l, output, scratch);
    Ok(())
}

/// [`fully_connected_per_channel_s4`]'s reference kernel (a nibble at a time), whatever the
/// target: the oracle of the fast paths in tests. Not covered by semver.
///
/// # Errors
/// As [`fully_connected_per_channel_s4`].
#[doc(hidden)]
pub fn fully_connected_per_channel_s4_reference(
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
    fully_connected_s4_reference(&S4Layer { p: params, requant: &requant, input, filter, bias }, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::PerChannelQuant;
    use crate::kernels::arch::test_rng::Rng;
    use crate::kernels::fully_connected::{ExactMultiplier, fully_connected_s8_scratch_len};
    use crate::kernels::int4::pack;
    use crate::kernels::{ActivationRange, Rounding};
    use std::vec;

    /// The target's paths (the portable byte pairs on the host, `SMLAD` on the Arm DSP) equal the
    /// reference on random layers: odd and even depths, multiples of 8 and not, odd output
    /// depths, several input rows, both roundings, with and without bias and scratch.
    #[test]
    fn fast_paths_match_the_reference() -> Result<(), Error> {
        let mut rng = Rng(0x5EED_0004);
        let mut below = |n: u64| rng.next() % n;
        for case in 0..300 {
            let depth = 1 + below(70) as usize;
            let out_d = 1 + below(9) as usize;
            let batches = 1 + below(3) as usize;
            let values: vec::Vec<i8> = (0..depth * out_d).map(|_| below(16) as i8 - 8).collect();
            let mut filter = vec![0u8; packed_len(values.len())];
            pack(&values, &mut filter)?;
            let input: vec::Vec<i8> = (0..depth * batches).map(|_| below(256) as i8).collect();
            let bias: vec::Vec<i32> = (0..out_d).map(|_| below(1 << 16) as i32 - (1 << 15)).collect();
            let m: vec::Vec<i32> = (0..out_d).map(|_| (1 << 30) + below(1 << 30) as i32).collect();
            let s: vec::Vec<i32> = (0..out_d).map(|_| -(below(10) as i32) - 1).collect();
            let e: vec::Vec<ExactMultiplier> =
                (0..out_d).map(|k| ExactMultiplier { mantissa: m[k] as u64, exponent: i64::from(s[k]) - 31 }).collect();
            let rounding = if case % 3 == 0 { Rounding::Single } else { Rounding::Double };
            let p = FullyConnectedParams {
                batches,
                input_depth: depth,
                output_depth: out_d,
                input_offset: below(256) as i32 - 127,
                output_offset: below(256) as i32 - 128,
                activation: ActivationRange::INT8,
                rounding,
            };
            let q = FullyConnectedPerChannelQuant { fixed: PerChannelQuant { multiplier: &m, shift: &s }, exact: &e };
            let b = (case % 2 == 0).then_some(&bias[..]);
            let mut want = vec![0i8; batches * out_d];
            fully_connected_per_channel_s4_reference(&p, &q, &input, &filter, b, &mut want)?;
            for scratch_len in [0, fully_connected_s8_scratch_len(&p)] {
                let mut scratch = vec![0u8; scratch_len];
                let mut got = vec![0i8; batches * out_d];
                fully_connected_per_channel_s4(&p, &q, &input, &filter, b, &mut got, &mut scratch)?;
                assert_eq!(got, want, "case {case}: depth {depth}, {out_d} outputs, scratch {scratch_len}");
            }
        }
        Ok(())
    }
}
