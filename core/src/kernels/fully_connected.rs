//! Fully connected (dense) layers: int8, and 16x8 (int16 activations, int8 weights), with
//! per-tensor or per-channel weights.
//!
//! `output[b, o] = clamp(requant_o(acc) + output_offset)` with
//! `acc = sum_i filter[o, i] * (input[b, i] + input_offset) + bias[o]`; input
//! `[batches, input_depth]` (any tensor flattened so), filter `[output_depth, input_depth]`
//! (symmetric int8, zero point 0), bias `[output_depth]`, output `[batches, output_depth]`.
//!
//! # Rounding: the two oracles differ here
//! TFLite Micro and the TFLite interpreter's reference kernels (`BUILTIN_REF`) requantize fully
//! connected layers differently, per-tensor and per-channel alike (the interpreter's
//! `FullyConnectedInt8`/`FullyConnectedPerChannelInt8`/`...Int16` in `kReference` call the
//! float-scale overloads of `reference_integer_ops::FullyConnected[PerChannel]`):
//!
//! | [`Rounding`] | computes | matches |
//! |---|---|---|
//! | [`Rounding::Double`] | fixed point: `i32` accumulator → Q31 `MultiplyByQuantizedMultiplier` (two roundings); `i64` accumulator (16x8) → the Q15-reduced 64-bit one | TFLite Micro, bit for bit |
//! | [`Rounding::Single`] | `(int32_t)round((double)acc * effective_scale)`: one rounding, half away from zero, of the `double` product | the TFLite interpreter's reference kernels, bit for bit |
//!
//! The single-rounding result is computed with integers only ([`ExactMultiplier`]), emulating the
//! IEEE `double` product exactly (`(double)acc`, the product rounded to 53 bits to nearest even,
//! `round`, then x86-64's `cvttsd2si`, which turns an out-of-range value into `i32::MIN`), so it
//! is the same on every target.
//!
//! The two modes also derive their multipliers differently (see [`fully_connected_multiplier`]):
//! TFLite Micro's multipliers (per-tensor and per-channel) and the interpreter's are all
//! computed in `double`: `(double)input_scale * (double)filter_scale / (double)output_scale`.
//! (TFLite's source suggests a `float` product for per-tensor weights, but the pinned TFLite Micro
//! behaves as the all-`double` form on every golden case that tells them apart, the
//! `*_split_ptproduct_*` cases.)
//!
//! # Scratch
//! The reference kernels need none. The int8 kernels take a scratch buffer of
//! [`fully_connected_s8_scratch_len`] bytes, which the Arm DSP path uses for the input row
//! expanded to int16; any shorter slice (e.g. empty) also works.

use crate::Error;
#[cfg(any(mq_dsp, mq_wasm_simd))]
use crate::kernels::arch::requant::{ChannelRequant, OutputScale};
use crate::kernels::common::{self, Accumulator, ActivationElement, check_len, check_offsets, ensure};
pub use crate::kernels::params::FullyConnectedParams;
use crate::kernels::{PerChannelQuant, Rounding, arch};
use crate::requant::QuantizedMultiplier;

/// A non-negative real multiplier exactly as an IEEE `double` holds it, `mantissa · 2^exponent`,
/// so the TFLite interpreter's float requantization can be reproduced with integers.
/// Plain old data (two 64-bit words), so `.mq` models store tables of them read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(C)]
pub struct ExactMultiplier {
    /// The `f64` significand with its implicit bit (< 2^53); 0 for a zero multiplier.
    pub mantissa: u64,
    /// The power of two.
    pub exponent: i64,
}

/// Rounds `x · 2^e` to 53 significant bits, to nearest, ties to even (an IEEE `double`'s
/// rounding; the values here are never subnormal nor overflow). Returns `(m, e')`, `m <= 2^53`.
#[inline]
fn round_to_double(x: u128, e: i32) -> (u128, i32) {
    let bits = 128 - x.leading_zeros() as i32;
    if bits <= 53 {
        return (x, e);
    }
    let sh = (bits - 53) as u32; // in 1..=75
    let mut q = x >> sh;
    let rem = x & ((1u128 << sh) - 1);
    let half = 1u128 << (sh - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    (q, e + sh as i32)
}

impl ExactMultiplier {
    /// The exact form of `x`; `None` unless `x` is finite and `>= 0`.
    pub fn from_f64(x: f64) -> Option<Self> {
        if !(x.is_finite() && x >= 0.0) {
            return None;
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1u64 << 52) - 1);
        Some(if biased == 0 {
            Self { mantissa: fraction, exponent: -1074 }
        } else {
            Self { mantissa: fraction | (1u64 << 52), exponent: (biased - 1075) as i64 }
        })
    }

    /// The multiplier as an `f64` (exact).
    pub fn to_f64(self) -> f64 {
        self.mantissa as f64 * libm::exp2(self.exponent as f64)
    }

    /// `(int32_t)round((double)acc * m)` as the TFLite interpreter computes it on x86-64: `acc`
    /// converted to `double`, the product rounded to `double` (to nearest, ties to even), rounded
    /// to an integer half away from zero, then converted to `int32_t`, which gives `i32::MIN`
    /// for a value outside the `i32` range (the `cvttsd2si` result; C++ leaves it undefined).
    /// Integer arithmetic only.
    #[inline]
    pub fn scale_round(self, acc: i64) -> i32 {
        let magnitude = acc.unsigned_abs();
        if magnitude == 0 || self.mantissa == 0 {
            return 0;
        }
        let (am, ae) = round_to_double(magnitude as u128, 0);
        // am <= 2^53 and mantissa < 2^53: the exact product fits in 107 bits.
        let (pm, pe) = round_to_double(am * self.mantissa as u128, ae + self.exponent.clamp(-2200, 2200) as i32);
        // value = pm · 2^pe with 1 <= pm <= 2^53; round half away from zero.
        let rounded: u128 = if pe >= 0 {
            if pe >= 31 {
                return i32::MIN; // >= 2^31: out of range
            }
            pm << pe
        } else if pe <= -64 {
            0 // pm < 2^54 <= 2^63: below one half
        } else {
            let n = (-pe) as u32;
            (pm >> n) + ((pm >> (n - 1)) & 1)
        };
        if acc < 0 {
            if rounded > 1u128 << 31 { i32::MIN } else { (rounded as i64).wrapping_neg() as i32 }
        } else if rounded > i32::MAX as u128 {
            i32::MIN
        } else {
            rounded as i32
        }
    }
}

/// The requantization of a per-tensor fully connected layer in both forms: the fixed-point one
/// ([`Rounding::Double`], TFLite Micro) and the exact `double` one ([`Rounding::Single`], the
/// TFLite interpreter). Prepared by [`fully_connected_multiplier`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FullyConnectedMultiplier {
    /// Q31 multiplier and shift, for [`Rounding::Double`].
    pub fixed: QuantizedMultiplier,
    /// The `double` effective scale, for [`Rounding::Single`].
    pub exact: ExactMultiplier,
}

/// Per-output-channel requantization of a fully connected layer. Only the form the rounding
/// mode uses must have `output_depth` entries; the other may be empty. Prepared by
/// [`fully_connected_per_channel_multipliers`].
#[derive(Debug, Clone, Copy)]
pub struct FullyConnectedPerChannelQuant<'a> {
    /// Q31 multipliers and shifts, for [`Rounding::Double`].
    pub fixed: PerChannelQuant<'a>,
    /// `double` effective scales, for [`Rounding::Single`].
    pub exact: &'a [ExactMultiplier],
}

fn exact_of(real: f64) -> Result<ExactMultiplier, Error> {
    ExactMultiplier::from_f64(real).ok_or(Error::InvalidScale)
}

/// Prepares a per-tensor fully connected layer's requantization from its float scales:
/// - `fixed` as TFLite Micro (`GetQuantizedConvolutionMultipler`):
///   `quantize_multiplier((double)input_scale * (double)filter_scale / (double)output_scale)`
///   (the golden `*_split_ptproduct_*` cases show TFLite Micro uses the `double` product);
/// - `exact` as the TFLite interpreter's reference kernel:
///   `(double)input_scale * (double)filter_scale / (double)output_scale`.
///
/// # Errors
/// [`Error::InvalidScale`] unless the scales are finite and > 0 (the filter scale may be 0);
/// [`Error::BadKernelArgument`] for an effective scale of 2^30 or more.
pub fn fully_connected_multiplier(
    input_scale: f32,
    filter_scale: f32,
    output_scale: f32,
) -> Result<FullyConnectedMultiplier, Error> {
    common::check_scales(input_scale, &[filter_scale], output_scale)?;
    let fixed = common::fixed_multiplier(
        input_scale as f64 * filter_scale as f64 / output_scale as f64,
        "fully_connected_multiplier",
    )?;
    let exact = exact_of(input_scale as f64 * filter_scale as f64 / output_scale as f64)?;
    Ok(FullyConnectedMultiplier { fixed, exact })
}

/// Prepares a per-channel fully connected layer's requantization, both forms, one entry per
/// output channel in `multiplier`, `shift` and `exact` (pass empty `multiplier` and `shift`, or
/// an empty `exact`, to prepare one form only):
/// - fixed as TFLite Micro: per channel `quantize_multiplier((double)input_scale *
///   (double)filter_scale / (double)output_scale)`; but with a single filter scale TFLite Micro
///   treats the weights as per-tensor, and so does this (see [`fully_connected_multiplier`]);
/// - exact as the interpreter: `(double)input_scale * (double)filter_scale / (double)output_scale`.
///
/// `filter_scales` has one entry (broadcast) or one per output channel.
///
/// # Errors
/// As [`fully_connected_multiplier`], and [`Error::LengthMismatch`] on mismatched lengths.
pub fn fully_connected_per_channel_multipliers(
    input_scale: f32,
    filter_scales: &[f32],
    output_scale: f32,
    multiplier: &mut [i32],
    shift: &mut [i32],
    exact: &mut [ExactMultiplier],
) -> Result<(), Error> {
    common::check_scales(input_scale, filter_scales, output_scale)?;
    if let [fs] = filter_scales {
        let q = fully_connected_multiplier(input_scale, *fs, output_scale)?;
        if shift.len() != multiplier.len() {
            return Err(Error::LengthMismatch { expected: multiplier.len(), actual: shift.len() });
        }
        multiplier.iter_mut().for_each(|m| *m = q.fixed.multiplier);
        shift.iter_mut().for_each(|s| *s = q.fixed.shift);
        exact.iter_mut().for_each(|e| *e = q.exact);
        return Ok(());
    }
    if !multiplier.is_empty() || !shift.is_empty() {
        common::per_channel_multipliers(input_scale, filter_scales, output_scale, multiplier, shift)?;
    }
    if !exact.is_empty() {
        if exact.len() != filter_scales.len() {
            return Err(Error::LengthMismatch { expected: filter_scales.len(), actual: exact.len() });
        }
        for (e, &fs) in exact.iter_mut().zip(filter_scales) {
            *e = exact_of(input_scale as f64 * fs as f64 / output_scale as f64)?;
        }
    }
    Ok(())
}

/// The requantization a kernel call uses, after validation.
#[derive(Clone, Copy)]
pub(crate) enum Requant<'a> {
    TensorFixed(QuantizedMultiplier),
    TensorExact(ExactMultiplier),
    ChannelFixed(&'a [i32], &'a [i32]),
    ChannelExact(&'a [ExactMultiplier]),
}

impl Requant<'_> {
    #[inline(always)]
    pub(crate) fn apply<A: Accumulator>(&self, channel: usize, acc: A) -> i32 {
        match *self {
            Requant::TensorFixed(q) => acc.requantize(q.multiplier, q.shift),
            Requant::TensorExact(e) => e.scale_round(acc.to_i64()),
            Requant::ChannelFixed(m, s) => match (m.get(channel), s.get(channel)) {
                (Some(&m), Some(&s)) => acc.requantize(m, s),
                _ => 0, // unreachable: lengths checked
            },
            Requant::ChannelExact(e) => e.get(channel).map_or(0, |e| e.scale_round(acc.to_i64())),
        }
    }
}

pub(crate) fn per_tensor<'a>(p: &FullyConnectedParams, q: &FullyConnectedMultiplier) -> Requant<'a> {
    match p.rounding {
        Rounding::Double => Requant::TensorFixed(q.fixed),
        Rounding::Single => Requant::TensorExact(q.exact),
    }
}

pub(crate) fn per_channel<'a>(
    kernel: &'static str,
    p: &FullyConnectedParams,
    q: &FullyConnectedPerChannelQuant<'a>,
) -> Result<Requant<'a>, Error> {
    match p.rounding {
        Rounding::Double => {
            ensure(
                q.fixed.multiplier.len() == p.output_depth && q.fixed.shift.len() == p.output_depth,
                kernel,
                "multiplier/shift length != output_depth",
            )?;
            Ok(Requant::ChannelFixed(q.fixed.multiplier, q.fixed.shift))
        }
        Rounding::Single => {
            ensure(q.exact.len() == p.output_depth, kernel, "exact multipliers length != output_depth")?;
            Ok(Requant::ChannelExact(q.exact))
        }
    }
}

/// Checks the shapes and offsets of a fully connected call (`filter_len`: the weights' element
/// count, whatever their packing).
pub(crate) fn validate<X: ActivationElement, A>(
    kernel: &'static str,
    p: &FullyConnectedParams,
    input: &[X],
    filter_len: usize,
    bias: Option<&[A]>,
    output: &[X],
) -> Result<(), Error> {
    ensure(p.input_depth >= 1 && p.output_depth >= 1, kernel, "input_depth and output_depth must be >= 1")?;
    check_offsets::<X>(kernel, p.input_offset, p.output_offset)?;
    ensure(p.activation.is_within(X::RANGE), kernel, "activation range empty or outside the output type")?;
    check_len(kernel, "input length != batches * input_depth", input.len(), p.batches.checked_mul(p.input_depth))?;
    check_len(
        kernel,
        "filter length != output_depth * input_depth",
        filter_len,
        p.output_depth.checked_mul(p.input_depth),
    )?;
    check_len(kernel, "output length != batches * output_depth", output.len(), p.batches.checked_mul(p.output_depth))?;
    if let Some(b) = bias {
        check_len(kernel, "bias length != output_depth", b.len(), Some(p.output_depth))?;
    }
    Ok(())
}

/// The reference kernel, after validation: TFLite's `reference_integer_ops::FullyConnected`.
fn fully_connected_reference<X: ActivationElement, A: Accumulator>(
    p: &FullyConnectedParams,
    requant: Requant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &mut [X],
) {
    let depth = p.input_depth.max(1);
    let out_depth = p.output_depth.max(1);
    for (in_row, out_row) in input.chunks_exact(depth).zip(output.chunks_exact_mut(out_depth)) {
        for (c, (out, w_row)) in out_row.iter_mut().zip(filter.chunks_exact(depth)).enumerate() {
            let mut acc = A::ZERO;
            for (&x, &w) in in_row.iter().zip(w_row) {
                acc = acc.add_product(w as i32 * (x.to_i32() + p.input_offset));
            }
            if let Some(&b) = bias.and_then(|b| b.get(c)) {
                acc = acc.add_bias(b);
            }
            let scaled = requant.apply(c, acc).wrapping_add(p.output_offset);
            *out = X::from_clamped(p.activation.apply(scaled));
        }
    }
}

/// The dispatch point of the 16x8 fully connected kernels (no optimized variant yet: the
/// reference).
#[inline]
fn fully_connected_dispatch<X: ActivationElement, A: Accumulator>(
    p: &FullyConnectedParams,
    requant: Requant<'_>,
    input: &[X],
    filter: &[i8],
    bias: Option<&[A]>,
    output: &mut [X],
) {
    fully_connected_reference(p, requant, input, filter, bias, output);
}

/// The one dispatch point of the int8 fully connected kernels: the target's fast path (see
/// [`arch`](crate::kernels::arch)), which declines (returning `false`) when its preconditions
/// do not hold (too little scratch where it needs some), then the reference. Both rounding
/// modes: the fast paths compute the accumulators, `requant` scales them as the reference does.
#[inline]
fn fully_connected_s8_dispatch(
    p: &FullyConnectedParams,
    requant: Requant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) {
    #[cfg(any(mq_dsp, mq_wasm_simd))]
    if fully_connected_s8_fast(p, requant, input, filter, bias, output, scratch) {
        return;
    }
    #[cfg(not(any(mq_dsp, mq_wasm_simd)))]
    let _ = scratch; // x86-64's path needs none; AArch64 runs the reference (its zip loop vectorizes)
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    {
        let tensor;
        let fixed = match requant {
            Requant::TensorFixed(q) => {
                tensor = ([q.multiplier], [q.shift]);
                Some((&tensor.0[..], &tensor.1[..]))
            }
            Requant::ChannelFixed(m, s) => Some((m, s)),
            _ => None,
        };
        if let Some((m, s)) = fixed {
            if arch::x86::fully_connected_s8(p, m, s, input, filter, bias, output) {
                return;
            }
        }
    }
    fully_connected_reference(p, requant, input, filter, bias, output);
}

/// The fast paths of [`fully_connected_s8_dispatch`]; `false` (nothing written) if they decline.
#[cfg(any(mq_dsp, mq_wasm_simd))]
#[inline(always)]
fn fully_connected_s8_fast(
    p: &FullyConnectedParams,
    requant: Requant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) -> bool {
    let one = |q: QuantizedMultiplier| ([q.multiplier], [q.shift]);
    let tensor = match requant {
        Requant::TensorFixed(q) => Some(one(q)),
        _ => None,
    };
    // The Arm DSP path's lean case first: fixed point in its `SMLAL` form, whole words per row
    // (it checks), with nothing else prepared.
    #[cfg(mq_dsp)]
    {
        let ms = match (&requant, &tensor) {
            (_, Some((m, s))) => Some((&m[..], &s[..])),
            (Requant::ChannelFixed(m, s), _) => Some((*m, *s)),
            _ => None,
        };
        if let Some((multiplier, shift)) = ms {
            #[cfg(mq_mve)]
            if arch::arm_mve::fully_connected_s8(p, multiplier, shift, input, filter, bias, output) {
                return true;
            }
            let a = arch::arm_dsp::FcArgs { params: p, input, filter, bias, multiplier, shift };
            if arch::arm_dsp::fully_connected_right_shift(&a, output, scratch) {
                return true;
            }
        }
    }
    // Fixed-point requantization through the fast paths' prepared form (the same function, see
    // `arch::requantize`); the single-rounding forms as the reference computes them.
    let other = |c: usize, acc: i32| requant.apply(c, acc);
    let fixed = |m, s| OutputScale::Fixed { multiplier: m, shift: s, valid: ChannelRequant::all_valid(m, s) };
    let scale = match (&requant, &tensor) {
        (_, Some((m, s))) => fixed(m, s),
        (Requant::ChannelFixed(m, s), _) => fixed(m, s),
        _ => OutputScale::Other(&other),
    };
    #[cfg(mq_dsp)]
    let done = arch::arm_dsp::fully_connected_s8(
        p,
        input,
        filter,
        bias,
        output,
        arch::scratch::scratch_words(scratch),
        &scale,
    );
    #[cfg(mq_wasm_simd)]
    let done = {
        let _ = scratch; // the wasm path extends the input per chunk in registers
        arch::wasm_simd::fully_connected_s8(p, input, filter, bias, output, &scale)
    };
    done
}

/// Bytes of scratch [`fully_connected_s8`] and [`fully_connected_per_channel_s8`] can use for
/// their fast path: one input row as int16 with the offset added, `round_up(input_depth, 8)`
/// values, plus 4 bytes so any alignment works. A pure function of the shapes, the same on every
/// target. Saturates at `usize::MAX`.
pub fn fully_connected_s8_scratch_len(params: &FullyConnectedParams) -> usize {
    arch::scratch::padded_patch_len(params.input_depth).saturating_mul(2).saturating_add(4)
}

/// [`fully_connected_s8`]'s reference kernel, whatever the target: the oracle of the fast paths
/// in tests and benchmarks. Not covered by semver.
///
/// # Errors
/// As [`fully_connected_s8`].
#[doc(hidden)]
pub fn fully_connected_s8_reference(
    params: &FullyConnectedParams,
    quant: &FullyConnectedMultiplier,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    validate("fully_connected_s8", params, input, filter.len(), bias, output)?;
    fully_connected_reference(params, per_tensor(params, quant), input, filter, bias, output);
    Ok(())
}

/// [`fully_connected_per_channel_s8`]'s reference kernel, whatever the target. Not covered by
/// semver.
///
/// # Errors
/// As [`fully_connected_per_channel_s8`].
#[doc(hidden)]
pub fn fully_connected_per_channel_s8_reference(
    params: &FullyConnectedParams,
    quant: &FullyConnectedPerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> Result<(), Error> {
    const K: &str = "fully_connected_per_channel_s8";
    validate(K, params, input, filter.len(), bias, output)?;
    let requant = per_channel(K, params, quant)?;
    fully_connected_reference(params, requant, input, filter, bias, output);
    Ok(())
}

/// int8 fully connected, per-tensor weights (TFLite `FULLY_CONNECTED`, int8).
///
/// Input `[batches, input_depth]` int8, filter `[output_depth, input_depth]` int8 (zero point
/// 0), optional bias `[output_depth]` int32, output `[batches, output_depth]` int8.
/// [`Rounding::Double`] matches TFLite Micro, [`Rounding::Single`] the TFLite interpreter's
/// reference kernel (module docs).
///
/// Scratch: `scratch` of at least [`fully_connected_s8_scratch_len`] bytes (any alignment;
/// overwritten) lets the Arm DSP path expand the input row once; with less (e.g. empty) that path
/// expands it on the fly and the others need none. The output is the same bit for bit either way.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length does not match `params`, an offset or the
/// activation range is outside int8, or a depth is 0. Never panics.
pub fn fully_connected_s8(
    params: &FullyConnectedParams,
    quant: &FullyConnectedMultiplier,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) -> Result<(), Error> {
    validate("fully_connected_s8", params, input, filter.len(), bias, output)?;
    fully_connected_s8_dispatch(params, per_tensor(params, quant), input, filter, bias, output, scratch);
    Ok(())
}

/// int8 fully connected, per-channel weights: as [`fully_connected_s8`] with one multiplier per
/// output channel (`quant` needs the form `params.rounding` uses, `output_depth` entries).
/// Scratch: as [`fully_connected_s8`].
///
/// # Errors
/// As [`fully_connected_s8`], and when the multipliers do not have `output_depth` entries.
pub fn fully_connected_per_channel_s8(
    params: &FullyConnectedParams,
    quant: &FullyConnectedPerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) -> Result<(), Error> {
    const K: &str = "fully_connected_per_channel_s8";
    validate(K, params, input, filter.len(), bias, output)?;
    let requant = per_channel(K, params, quant)?;
    fully_connected_s8_dispatch(params, requant, input, filter, bias, output, scratch);
    Ok(())
}

/// 16x8 fully connected, per-tensor weights: int16 input and output (zero points 0), int8
/// weights, bias `B` = `i64` (TFLite's default for 16x8: 64-bit accumulator, Q15-reduced
/// multiplier in [`Rounding::Double`]) or `i32` (32-bit accumulator, Q31 multiplier), as TFLite
/// Micro picks by the bias type. Pass `None::<&[i64]>` for no bias with a 64-bit accumulator.
/// Multipliers need `shift <= 7` with an `i64` accumulator (TFLite's contract). Scratch: none.
///
/// # Errors
/// As [`fully_connected_s8`]; the offsets must be 0.
pub fn fully_connected_s16<B: Accumulator>(
    params: &FullyConnectedParams,
    quant: &FullyConnectedMultiplier,
    input: &[i16],
    filter: &[i8],
    bias: Option<&[B]>,
    output: &mut [i16],
) -> Result<(), Error> {
    validate("fully_connected_s16", params, input, filter.len(), bias, output)?;
    fully_connected_dispatch(params, per_tensor(params, quant), input, filter, bias, output);
    Ok(())
}

/// 16x8 fully connected, per-channel weights: as [`fully_connected_s16`] with one multiplier per
/// output channel. Scratch: none.
///
/// # Errors
/// As [`fully_connected_per_channel_s8`]; the offsets must be 0.
pub fn fully_connected_per_channel_s16<B: Accumulator>(
    params: &FullyConnectedParams,
    quant: &FullyConnectedPerChannelQuant<'_>,
    input: &[i16],
    filter: &[i8],
    bias: Option<&[B]>,
    output: &mut [i16],
) -> Result<(), Error> {
    const K: &str = "fully_connected_per_channel_s16";
    validate(K, params, input, filter.len(), bias, output)?;
    let requant = per_channel(K, params, quant)?;
    fully_connected_dispatch(params, requant, input, filter, bias, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::ActivationRange;
    use proptest::prelude::*;

    /// What the interpreter computes, with the host's `f64` (IEEE, round to nearest even) and
    /// `f64::round` (half away from zero), then x86-64's out-of-range conversion.
    fn float_reference(acc: i64, m: f64) -> i32 {
        let r = (acc as f64 * m).round();
        if (-2147483648.0..=2147483647.0).contains(&r) { r as i32 } else { i32::MIN }
    }

    #[test]
    fn exact_multiplier_round_trips() {
        for x in [0.0, 1.0, 0.75, 1e-300, 5e-324, 123.456, 2f64.powi(-40), f64::MAX] {
            assert_eq!(ExactMultiplier::from_f64(x).unwrap().to_f64(), x);
        }
        assert!(ExactMultiplier::from_f64(-1.0).is_none());
        assert!(ExactMultiplier::from_f64(f64::NAN).is_none());
        assert!(ExactMultiplier::from_f64(f64::INFINITY).is_none());
    }

    #[test]
    fn scale_round_ties_go_away_from_zero() {
        let e = ExactMultiplier::from_f64(0.75).unwrap();
        assert_eq!(e.scale_round(2), 2); // 1.5
        assert_eq!(e.scale_round(-2), -2); // -1.5: fixed-point single rounding gives -1
        assert_eq!(e.scale_round(-10), -8); // -7.5
        let q = ExactMultiplier::from_f64(0.25).unwrap();
        assert_eq!(q.scale_round(-10), -3); // -2.5
        assert_eq!(q.scale_round(-6), -2); // -1.5
        assert_eq!(q.scale_round(1), 0); // 0.25
        assert_eq!(q.scale_round(2), 1); // 0.5
        assert_eq!(q.scale_round(-2), -1); // -0.5
    }

    #[test]
    fn scale_round_out_of_range_is_int_min() {
        let e = ExactMultiplier::from_f64(2f64.powi(26)).unwrap();
        assert_eq!(e.scale_round(31), 31 << 26);
        assert_eq!(e.scale_round(32), i32::MIN); // 2^31
        assert_eq!(e.scale_round(-32), i32::MIN); // -2^31 is in range
        assert_eq!(e.scale_round(-33), i32::MIN);
        assert_eq!(e.scale_round(i64::MAX), i32::MIN);
        // Rounds up to 2^31 exactly: out of range.
        let h = ExactMultiplier::from_f64(0.5).unwrap();
        assert_eq!(h.scale_round((1i64 << 32) - 1), i32::MIN);
        assert_eq!(h.scale_round((1i64 << 32) - 3), i32::MAX);
    }

    #[test]
    fn scale_round_double_product_rounding() {
        // A product that needs more than 53 bits: the double rounding of the product decides.
        // m = 1 + 2^-52; acc = 2^52 + 1: exact product 2^52 + 2 + 2^-52, rounded to double
        // 2^52 + 2.
        let m = 1.0 + f64::EPSILON;
        let e = ExactMultiplier::from_f64(m).unwrap();
        let acc = (1i64 << 52) + 1;
        assert_eq!(e.scale_round(acc), float_reference(acc, m));
        // acc beyond 2^53 is itself rounded to double first.
        let acc = (1i64 << 53) + 1;
        assert_eq!(e.scale_round(acc), float_reference(acc, m));
        assert_eq!(e.scale_round(i64::MIN), i32::MIN);
    }

    proptest! {
        #[test]
        fn scale_round_matches_f64(acc in any::<i32>(), m in 1e-12f64..1e3) {
            let e = ExactMultiplier::from_f64(m).unwrap();
            prop_assert_eq!(e.scale_round(acc as i64), float_reference(acc as i64, m));
        }

        #[test]
        fn scale_round_matches_f64_wide(acc in any::<i64>(), m in 1e-18f64..1e-6) {
            let e = ExactMultiplier::from_f64(m).unwrap();
            prop_assert_eq!(e.scale_round(acc), float_reference(acc, m));
        }

        #[test]
        fn scale_round_matches_f64_on_ties(k in -100_000i64..100_000, shift in 1u32..20) {
            // m = 2^-shift: every odd multiple of 2^(shift-1) is an exact tie.
            let m = libm::exp2(-(shift as f64));
            let acc = (2 * k + 1) << (shift - 1);
            let e = ExactMultiplier::from_f64(m).unwrap();
            prop_assert_eq!(e.scale_round(acc), float_reference(acc, m));
        }
    }

    #[test]
    fn multipliers_follow_each_oracle() {
        let (i, w, o) = (0.1f32, 0.3f32, 0.7f32);
        let q = fully_connected_multiplier(i, w, o).unwrap();
        assert_eq!(q.fixed, crate::requant::quantize_multiplier(i as f64 * w as f64 / o as f64));
        assert_eq!(q.exact.to_f64(), i as f64 * w as f64 / o as f64);
        let mut m = [0; 2];
        let mut s = [0; 2];
        let mut e = [ExactMultiplier::default(); 2];
        fully_connected_per_channel_multipliers(i, &[w, 0.5], o, &mut m, &mut s, &mut e).unwrap();
        assert_eq!((m[0], s[0]), {
            let q = crate::requant::quantize_multiplier(i as f64 * w as f64 / o as f64);
            (q.multiplier, q.shift)
        });
        assert_eq!(e[1].to_f64(), i as f64 * 0.5 / o as f64);
        // One scale: TFLite Micro's per-tensor formula.
        fully_connected_per_channel_multipliers(i, &[w], o, &mut m, &mut s, &mut e).unwrap();
        assert_eq!((m[1], s[1]), (q.fixed.multiplier, q.fixed.shift));
        // One form only.
        fully_connected_per_channel_multipliers(i, &[w, 0.5], o, &mut [], &mut [], &mut e).unwrap();
        fully_connected_per_channel_multipliers(i, &[w, 0.5], o, &mut m, &mut s, &mut []).unwrap();
        assert!(fully_connected_per_channel_multipliers(i, &[w, 0.5], o, &mut m, &mut s, &mut e[..1]).is_err());
        assert_eq!(fully_connected_multiplier(0.0, w, o), Err(Error::InvalidScale));
        assert!(fully_connected_multiplier(1.0, 1.0, 1e-10).is_err());
    }

    fn params(batches: usize, input_depth: usize, output_depth: usize) -> FullyConnectedParams {
        FullyConnectedParams {
            batches,
            input_depth,
            output_depth,
            input_offset: 0,
            output_offset: 0,
            activation: ActivationRange::INT8,
            rounding: Rounding::Double,
        }
    }

    #[test]
    fn rejects_bad_arguments() {
        let q = fully_connected_multiplier(0.5, 0.5, 0.5).unwrap();
        let p = params(2, 3, 4);
        let (i, w, mut o) = ([0i8; 6], [0i8; 12], [0i8; 8]);
        assert!(fully_connected_s8(&p, &q, &i, &w, None, &mut o, &mut []).is_ok());
        assert!(fully_connected_s8(&p, &q, &i[..5], &w, None, &mut o, &mut []).is_err());
        assert!(fully_connected_s8(&p, &q, &i, &w[..11], None, &mut o, &mut []).is_err());
        assert!(fully_connected_s8(&p, &q, &i, &w, None, &mut o[..7], &mut []).is_err());
        assert!(fully_connected_s8(&p, &q, &i, &w, Some(&[0; 3]), &mut o, &mut []).is_err());
        assert!(
            fully_connected_s8(&FullyConnectedParams { input_offset: 129, ..p }, &q, &i, &w, None, &mut o, &mut [])
                .is_err()
        );
        assert!(
            fully_connected_s8(&FullyConnectedParams { output_offset: -129, ..p }, &q, &i, &w, None, &mut o, &mut [])
                .is_err()
        );
        let wide = ActivationRange { min: -200, max: 0 };
        assert!(
            fully_connected_s8(&FullyConnectedParams { activation: wide, ..p }, &q, &i, &w, None, &mut o, &mut [])
                .is_err()
        );
        let empty = ActivationRange { min: 1, max: 0 };
        assert!(
            fully_connected_s8(&FullyConnectedParams { activation: empty, ..p }, &q, &i, &w, None, &mut o, &mut [])
                .is_err()
        );
        assert!(fully_connected_s8(&params(2, 0, 4), &q, &[], &[], None, &mut o, &mut []).is_err());
        let pc = FullyConnectedPerChannelQuant {
            fixed: PerChannelQuant { multiplier: &[1 << 30; 4], shift: &[0; 3] },
            exact: &[],
        };
        assert!(fully_connected_per_channel_s8(&p, &pc, &i, &w, None, &mut o, &mut []).is_err());
        let pc = FullyConnectedPerChannelQuant {
            fixed: PerChannelQuant { multiplier: &[1 << 30; 4], shift: &[0; 4] },
            exact: &[],
        };
        assert!(fully_connected_per_channel_s8(&p, &pc, &i, &w, None, &mut o, &mut []).is_ok());
        let single = FullyConnectedParams { rounding: Rounding::Single, ..p };
        assert!(fully_connected_per_channel_s8(&single, &pc, &i, &w, None, &mut o, &mut []).is_err());
        // 16x8 needs zero offsets.
        let p16 = FullyConnectedParams { activation: ActivationRange::INT16, input_offset: 1, ..p };
        let mut o16 = [0i16; 8];
        assert!(fully_connected_s16(&p16, &q, &[0i16; 6], &w, None::<&[i64]>, &mut o16).is_err());
        let p16 = FullyConnectedParams { input_offset: 0, ..p16 };
        assert!(fully_connected_s16(&p16, &q, &[0i16; 6], &w, None::<&[i64]>, &mut o16).is_ok());
        // Zero batches: nothing to do.
        assert!(fully_connected_s8(&params(0, 3, 4), &q, &[], &w, None, &mut [], &mut []).is_ok());
    }
}
