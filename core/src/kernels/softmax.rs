//! Softmax over the last dimension (TFLite `SOFTMAX` with `beta`): int8 → int8, int8 → int16,
//! and int16 → int16.
//!
//! **int8 input** (TFLite's fixed-point method, `reference_ops::Softmax`): per row, the
//! difference to the row maximum is scaled by `beta · s_in` into Q5.26
//! (`PreprocessSoftmaxScaling`); differences below `diff_min` contribute nothing; the others go
//! through gemmlowp's `exp_on_negative_values`, are summed in Q12.19, and each exponential is
//! multiplied by the reciprocal of the sum (`GetReciprocal`) and rounded to the output type. The
//! output quantization is fixed: int8 `(1/256, −128)`, int16 `(1/65536, −32768)`.
//!
//! **int16 input** (`reference_ops::SoftmaxInt16`): the scaled difference indexes a 513-entry
//! `exp` table over [−10, 0], the sum is normalised, `1/(1+x)` comes from a second table, and
//! the product is rounded to Q0.15; output `(1/32768, 0)`.
//!
//! | [`Rounding`] | int8 input matches | int16 input matches |
//! |---|---|---|
//! | `Double` | TFLite Micro | TFLite Micro: tables generated in `f32` (`LUTPopulate<int16_t>` with `float`), multiplier from `(f64)s · (f64)beta` |
//! | `Single` | the TFLite interpreter's reference kernel (the same integers) | the TFLite interpreter: tables generated in `f64`, multiplier from `(f64)(s · beta)` with the product in `f32` |
//!
//! The int16 tables do not depend on the tensors' parameters: [`SoftmaxS16Luts`] is built once
//! per rounding mode (2 × 513 × 2 bytes) and shared by every int16 softmax.
#![forbid(unsafe_code)]

use super::Rounding;
use super::fixedpoint::{exp_on_negative_values, reciprocal, saturating_rounding_multiply_by_pot};
use super::lut::{LUT_S16_LEN, expf, lut_lookup_s16, lut_populate_s16_f32, lut_populate_s16_f64};
use super::tensor::PerTensorQuant;
use crate::Error;
use crate::requant::{clamp_i32, multiply_by_quantized_multiplier, quantize_multiplier};
use crate::requant::{rounding_divide_by_pot, saturating_rounding_doubling_high_mul};

/// Integer bits of the scaled input difference (Q5.26).
const SCALED_DIFF_INTEGER_BITS: i32 = 5;
/// Integer bits of the sum of exponentials (Q12.19).
const ACCUMULATION_INTEGER_BITS: i32 = 12;

/// Prepared parameters of [`softmax_s8`] and [`softmax_s8_s16`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SoftmaxParams {
    /// Q31 multiplier of `beta · s_in · 2^26`.
    pub input_multiplier: i32,
    /// Left shift of that multiplier (≥ 0).
    pub input_left_shift: i32,
    /// Differences to the row maximum below this contribute 0 (≤ 0).
    pub diff_min: i32,
    /// Length of the last dimension (softmax row).
    pub depth: usize,
    /// The rounding mode the parameters were prepared for (both compute the same for int8).
    pub rounding: Rounding,
}

/// TFLite's `CalculateInputRadius(input_integer_bits, input_left_shift, total_signed_bits)`:
/// the largest input magnitude that the rescaling keeps in range, `floor((2^ib − 1) ·
/// 2^(bits − ib) / 2^shift)` computed in `f64`.
pub(crate) fn calculate_input_radius(input_integer_bits: i32, input_left_shift: i32, total_signed_bits: i32) -> i32 {
    let max_input_rescaled =
        1.0 * ((1i64 << input_integer_bits) - 1) as f64 * (1i64 << (total_signed_bits - input_integer_bits)) as f64
            / libm::exp2(input_left_shift as f64);
    libm::floor(max_input_rescaled) as i32
}

impl SoftmaxParams {
    fn prepare(input: PerTensorQuant, beta: f32, depth: usize, rounding: Rounding) -> Result<Self, Error> {
        input.check(-128, 127)?;
        if !(beta.is_finite() && beta > 0.0) {
            return Err(Error::BadKernelArgument { kernel: "softmax_s8", reason: "beta must be finite and > 0" });
        }
        if depth == 0 {
            return Err(Error::BadKernelArgument { kernel: "softmax_s8", reason: "depth must be > 0" });
        }
        // PreprocessSoftmaxScaling (double-rounding build): min(beta · s · 2^26, 2^31 − 1).
        let max_real_multiplier = ((1i64 << 31) - 1) as f64;
        let real = beta as f64 * input.scale as f64 * (1i64 << (31 - SCALED_DIFF_INTEGER_BITS)) as f64;
        let real = if real < max_real_multiplier { real } else { max_real_multiplier };
        // QuantizeMultiplierGreaterThanOne (NaN fails too).
        if real.partial_cmp(&1.0) != Some(core::cmp::Ordering::Greater) {
            return Err(Error::BadKernelArgument { kernel: "softmax_s8", reason: "beta · input scale below 2^-26" });
        }
        let m = quantize_multiplier(real);
        let diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, m.shift, 31);
        Ok(Self { input_multiplier: m.multiplier, input_left_shift: m.shift, diff_min, depth, rounding })
    }

    /// Prepares an int8 → int8 softmax over rows of `depth` elements. The output must be
    /// quantized `(1/256, −128)` (TFLite Micro requires exactly that; the interpreter accepts a
    /// scale within 0.1 % of it, and so does `Rounding::Single`).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for other output parameters, `depth == 0`, or `beta · s_in`
    /// below 2^-26; [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for a bad input.
    pub fn prepare_s8(
        input: PerTensorQuant,
        output: PerTensorQuant,
        beta: f32,
        depth: usize,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        let ok_scale = match rounding {
            Rounding::Double => output.scale == 1.0 / 256.0,
            Rounding::Single => (output.scale - 1.0 / 256.0).abs() <= 0.001 / 256.0,
        };
        if output.zero_point != -128 || !ok_scale {
            return Err(Error::BadKernelArgument {
                kernel: "softmax_s8",
                reason: "output must be quantized (1/256, -128)",
            });
        }
        Self::prepare(input, beta, depth, rounding)
    }

    /// Prepares an int8 → int16 softmax. The output must be quantized `(1/65536, −32768)`
    /// (scale within 0.1 %, as TFLite checks).
    ///
    /// # Errors
    /// As [`SoftmaxParams::prepare_s8`].
    pub fn prepare_s8_s16(
        input: PerTensorQuant,
        output: PerTensorQuant,
        beta: f32,
        depth: usize,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        if output.zero_point != -32768 || (output.scale - 1.0 / 65536.0).abs() > 0.001 / 65536.0 {
            return Err(Error::BadKernelArgument {
                kernel: "softmax_s8_s16",
                reason: "output must be quantized (1/65536, -32768)",
            });
        }
        Self::prepare(input, beta, depth, rounding)
    }

    /// `exp(beta · s · (x − max))` in Q0.31 for a difference `diff` already checked against
    /// `diff_min`.
    #[inline(always)]
    fn exp_of_diff(&self, diff: i32) -> i32 {
        // MultiplyByQuantizedMultiplierGreaterThanOne (double rounding): SRDHM(diff · 2^shift, m).
        let shifted = diff.wrapping_shl(self.input_left_shift as u32);
        exp_on_negative_values(
            saturating_rounding_doubling_high_mul(shifted, self.input_multiplier),
            SCALED_DIFF_INTEGER_BITS as u32,
        )
    }
}

/// Applies the final rounding of `reference_ops::Softmax` for an output of `bits` bits:
/// `RoundingDivideByPOT(scaled, num_bits_over_unit + 31 − bits)`.
///
/// For int8 outputs the exponent exceeds 31 only when a row's exponentials add up to 512 or
/// more (rows of 512+ elements tied at the maximum); TFLite Micro aborts there
/// (`TFLITE_CHECK(exponent <= 31)`), microquant continues the same rounding (half away from
/// zero) with the wider shift.
#[inline(always)]
fn finish(scaled: i32, num_bits_over_unit: i32, bits: i32, min: i32, max: i32) -> i32 {
    let exponent = clamp_i32(num_bits_over_unit + 31 - bits, 0, 62);
    let unsat = if exponent <= 31 {
        rounding_divide_by_pot(scaled, exponent)
    } else {
        let x = scaled as i64;
        let mask = (1i64 << exponent) - 1;
        let threshold = (mask >> 1) + (x < 0) as i64;
        ((x >> exponent) + ((x & mask) > threshold) as i64) as i32
    };
    let shifted = unsat.wrapping_add(min);
    clamp_i32(shifted, min, max)
}

/// Inputs from this many elements on take their exponentials from a table on the host and in
/// wasm (256 evaluations, then one load per element); on the device (a 1 KiB table on the stack)
/// and for smaller inputs each is computed.
#[cfg(any(test, not(target_os = "none")))]
const EXP_TABLE_FROM: usize = 1024;

fn softmax_s8_generic<O: Copy>(
    kernel: &'static str,
    p: &SoftmaxParams,
    input: &[i8],
    output: &mut [O],
    bits: i32,
    (min, max): (i32, i32),
    cast: impl Fn(i32) -> O,
) -> Result<(), Error> {
    if input.len() != output.len() {
        return Err(Error::BadKernelArgument { kernel, reason: "output length != input length" });
    }
    if p.depth == 0 || input.len() % p.depth != 0 {
        return Err(Error::BadKernelArgument { kernel, reason: "input length is not a multiple of depth" });
    }
    #[cfg(not(target_os = "none"))]
    if input.len() >= EXP_TABLE_FROM {
        // A difference from the row's maximum is one of 256 values (−255 to 0): each one's
        // exponential once, the same integers `exp_of_diff` gives.
        let mut table = [0i32; 256];
        for (k, e) in table.iter_mut().enumerate() {
            let diff = -(k as i32);
            if diff >= p.diff_min {
                *e = p.exp_of_diff(diff);
            }
        }
        softmax_s8_rows(p, input, output, bits, (min, max), cast, |diff| table[diff.unsigned_abs() as usize & 255]);
        return Ok(());
    }
    softmax_s8_rows(p, input, output, bits, (min, max), cast, |diff| p.exp_of_diff(diff));
    Ok(())
}

/// The rows of [`softmax_s8_generic`] (lengths checked), `exp` giving `exp_of_diff` of a
/// difference at least `diff_min`.
#[inline(always)]
fn softmax_s8_rows<O: Copy>(
    p: &SoftmaxParams,
    input: &[i8],
    output: &mut [O],
    bits: i32,
    (min, max): (i32, i32),
    cast: impl Fn(i32) -> O,
    exp: impl Fn(i32) -> i32,
) {
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    // The first pass's exponentials of a row of up to `EXPS_KEPT` values are kept for the
    // second (the same values: the function is pure); longer rows compute them again.
    const EXPS_KEPT: usize = 64;
    let mut kept = [0i32; EXPS_KEPT];
    let keep = p.depth <= EXPS_KEPT;
    for (row, out_row) in input.chunks_exact(p.depth).zip(output.chunks_exact_mut(p.depth)) {
        let max_in_row = row.iter().fold(i8::MIN, |m, &x| if x > m { x } else { m }) as i32;
        let mut sum_of_exps: i32 = 0; // Q12.19
        for (i, &x) in row.iter().enumerate() {
            let diff = x as i32 - max_in_row;
            if diff >= p.diff_min {
                let e = exp(diff);
                if let Some(k) = kept.get_mut(i) {
                    *k = e;
                }
                sum_of_exps =
                    sum_of_exps.wrapping_add(saturating_rounding_multiply_by_pot(e, -ACCUMULATION_INTEGER_BITS));
            }
        }
        let (shifted_scale, num_bits_over_unit) = reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS);
        for (i, (o, &x)) in out_row.iter_mut().zip(row).enumerate() {
            let diff = x as i32 - max_in_row;
            *o = if diff >= p.diff_min {
                let e = match kept.get(i) {
                    Some(&e) if keep => e,
                    _ => exp(diff),
                };
                cast(finish(
                    saturating_rounding_doubling_high_mul(shifted_scale, e),
                    num_bits_over_unit,
                    bits,
                    min,
                    max,
                ))
            } else {
                cast(min)
            };
        }
    }
}

/// int8 → int8 softmax over the last dimension (rows of `params.depth`), bit-exact with TFLite
/// Micro and the TFLite interpreter. Output quantization `(1/256, −128)`.
///
/// Any depth: where TFLite Micro aborts (a row whose exponentials add up to 512 or more, i.e.
/// 512+ elements tied at the maximum), the final rounding continues with a wider shift.
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or are not a multiple of the depth.
pub fn softmax_s8(params: &SoftmaxParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    softmax_s8_generic("softmax_s8", params, input, output, 8, (-128, 127), |v| v as i8)
}

/// int8 → int16 softmax over the last dimension, bit-exact with TFLite Micro and the TFLite
/// interpreter. Output quantization `(1/65536, −32768)`.
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or are not a multiple of the depth.
pub fn softmax_s8_s16(params: &SoftmaxParams, input: &[i8], output: &mut [i16]) -> Result<(), Error> {
    softmax_s8_generic("softmax_s8_s16", params, input, output, 16, (-32768, 32767), |v| v as i16)
}

/// The two int16 softmax tables: `exp(x)` on [−10, 0] and `1/(1+x)` on [0, 1], both with output
/// range [−1, 1] over int16 (TFLite's `exp_lut` and `one_over_one_plus_x_lut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoftmaxS16Luts {
    /// `exp` table, input `10/65535 · (x − 32767)`.
    pub exp: [i16; LUT_S16_LEN],
    /// `1/(1+x)` table, input `1/65535 · (x + 32768)`.
    pub one_over_one_plus_x: [i16; LUT_S16_LEN],
}

impl SoftmaxS16Luts {
    /// Builds the tables as the oracle of `rounding` does: `Double` = TFLite Micro (`f32`
    /// arithmetic, glibc-compatible `expf`), `Single` = the TFLite interpreter (`f64`).
    pub fn new(rounding: Rounding) -> Self {
        let range = 65535i32; // int16 max − min
        match rounding {
            Rounding::Double => Self {
                exp: lut_populate_s16_f32(10.0f32 / range as f32, 32767, 2.0f32 / range as f32, 0, expf),
                one_over_one_plus_x: lut_populate_s16_f32(
                    1.0f32 / range as f32,
                    -32768,
                    2.0f32 / range as f32,
                    0,
                    |v| 1.0f32 / (1.0f32 + v),
                ),
            },
            Rounding::Single => Self {
                exp: lut_populate_s16_f64(10.0 / range as f64, 32767, 2.0 / range as f64, 0, libm::exp),
                one_over_one_plus_x: lut_populate_s16_f64(1.0 / range as f64, -32768, 2.0 / range as f64, 0, |v| {
                    1.0 / (1.0 + v)
                }),
            },
        }
    }
}

/// Prepared parameters of [`softmax_s16`]; borrows the shared tables.
#[derive(Debug, Clone, Copy)]
pub struct SoftmaxS16Params<'a> {
    /// Q31 multiplier of `s_in · beta · 65535 / 10` (maps [−10, 0] onto [−65535, 0]).
    pub input_multiplier: i32,
    /// Its shift.
    pub input_left_shift: i32,
    /// Length of the last dimension (softmax row), < 65536.
    pub depth: usize,
    /// The tables (built for the same rounding mode).
    pub luts: &'a SoftmaxS16Luts,
}

impl<'a> SoftmaxS16Params<'a> {
    /// Prepares an int16 → int16 softmax. Input and output zero points must be 0 and the output
    /// scale within 0.1 % of 1/32768 (TFLite's checks); `depth` must be below 65536 (the sum of
    /// the row's exponentials must fit an int32). `luts` must come from
    /// [`SoftmaxS16Luts::new`] with the same `rounding`.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for other parameters.
    pub fn prepare(
        input: PerTensorQuant,
        output: PerTensorQuant,
        beta: f32,
        depth: usize,
        rounding: Rounding,
        luts: &'a SoftmaxS16Luts,
    ) -> Result<Self, Error> {
        const K: &str = "softmax_s16";
        input.check(-32768, 32767)?;
        if input.zero_point != 0 || output.zero_point != 0 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "int16 zero points must be 0" });
        }
        if (output.scale - 1.0 / 32768.0).abs() > 0.001 / 32768.0 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "output scale must be 1/32768" });
        }
        if depth == 0 || depth >= 65536 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "depth must be in [1, 65535]" });
        }
        if !(beta.is_finite() && beta > 0.0) {
            return Err(Error::BadKernelArgument { kernel: K, reason: "beta must be finite and > 0" });
        }
        let scale_beta = match rounding {
            Rounding::Double => input.scale as f64 * beta as f64,
            Rounding::Single => (input.scale * beta) as f64,
        };
        let m = quantize_multiplier(scale_beta / (10.0 / 65535.0));
        if !(-31..=30).contains(&m.shift) {
            return Err(Error::BadKernelArgument { kernel: K, reason: "input scale · beta out of range" });
        }
        Ok(Self { input_multiplier: m.multiplier, input_left_shift: m.shift, depth, luts })
    }
}

/// int16 → int16 softmax over the last dimension (rows of `params.depth`), bit-exact with TFLite
/// Micro (`Double` tables) or the TFLite interpreter (`Single` tables). Output `(1/32768, 0)`.
///
/// The output row doubles as storage for the row's exponentials, as in TFLite. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or are not a multiple of the depth.
pub fn softmax_s16(params: &SoftmaxS16Params<'_>, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    const K: &str = "softmax_s16";
    if input.len() != output.len() {
        return Err(Error::BadKernelArgument { kernel: K, reason: "output length != input length" });
    }
    if params.depth == 0 || input.len() % params.depth != 0 {
        return Err(Error::BadKernelArgument { kernel: K, reason: "input length is not a multiple of depth" });
    }
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    let luts = params.luts;
    for (row, out_row) in input.chunks_exact(params.depth).zip(output.chunks_exact_mut(params.depth)) {
        let max_in_row = row.iter().fold(i16::MIN, |m, &x| if x > m { x } else { m }) as i32;
        let mut sum_of_exps: i32 = 0; // Q16.15
        for (o, &x) in out_row.iter_mut().zip(row) {
            let diff = x as i32 - max_in_row;
            let scaled = multiply_by_quantized_multiplier(diff, params.input_multiplier, params.input_left_shift);
            let sym = scaled.wrapping_add(32767);
            let sat = clamp_i32(sym, -32768, 32767);
            let e = lut_lookup_s16(sat as i16, &luts.exp);
            *o = e;
            sum_of_exps = sum_of_exps.wrapping_add(e as i32);
        }
        // 1 / sum through the 1/(1+x) table: normalise the sum to [1, 2), recentre to int16.
        let headroom_plus_one = (sum_of_exps as u32).leading_zeros() as i32;
        if !(1..=17).contains(&headroom_plus_one) {
            // Cannot happen: the row maximum alone contributes about 32767.
            continue;
        }
        let shifted_sum = (((sum_of_exps as i64) << (headroom_plus_one - 1)) + (1 << 13)) >> 14;
        let sym_shifted_sum = shifted_sum as i32 + (-((1 << 15) + (1 << 16)));
        let sat = clamp_i32(sym_shifted_sum, -32768, 32767);
        let reciprocal_scale_q015 = lut_lookup_s16(sat as i16, &luts.one_over_one_plus_x) as i64;
        let right_shift = 31 - headroom_plus_one;
        let round = 1i64 << (right_shift - 1);
        for o in out_row.iter_mut() {
            let result = ((*o as i64 * reciprocal_scale_q015 + round) >> right_shift) as i32;
            *o = clamp_i32(result, 0, 32767) as i16;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn prepare_as_tflite() {
        // beta · s · 2^26 = 1 · 0.1 · 2^26 -> quantize; diff_min from the radius.
        let p = SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 256.0, -128), 1.0, 10, Rounding::Double).unwrap();
        let m = quantize_multiplier(0.1f32 as f64 * (1u64 << 26) as f64);
        assert_eq!((p.input_multiplier, p.input_left_shift), (m.multiplier, m.shift));
        assert_eq!(p.diff_min, -libm::floor(31.0 * (1u64 << 26) as f64 / libm::exp2(m.shift as f64)) as i32);
        assert!(SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 255.0, -128), 1.0, 10, Rounding::Double).is_err());
        assert!(SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 256.0, 0), 1.0, 10, Rounding::Double).is_err());
        assert!(SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 256.0, -128), 1.0, 0, Rounding::Double).is_err());
        assert!(SoftmaxParams::prepare_s8(q(1e-9, 0), q(1.0 / 256.0, -128), 1.0, 3, Rounding::Double).is_err());
    }

    #[test]
    fn uniform_rows_split_evenly_and_outputs_are_close_to_float() {
        let p = SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 256.0, -128), 1.0, 4, Rounding::Double).unwrap();
        let mut out = [0i8; 4];
        softmax_s8(&p, &[7, 7, 7, 7], &mut out).unwrap();
        assert_eq!(out, [-64; 4]); // 0.25 · 256 − 128
        let x = [-30i8, 0, 12, 25, 25, -128, 100, 99];
        let p = SoftmaxParams::prepare_s8(q(0.05, 0), q(1.0 / 256.0, -128), 1.0, 8, Rounding::Double).unwrap();
        let mut out = [0i8; 8];
        softmax_s8(&p, &x, &mut out).unwrap();
        let m = 100.0f64;
        let sum: f64 = x.iter().map(|&v| libm::exp(0.05 * (v as f64 - m))).sum();
        for (&v, &o) in x.iter().zip(&out) {
            let want = libm::exp(0.05 * (v as f64 - m)) / sum * 256.0 - 128.0;
            assert!((o as f64 - want).abs() <= 1.0, "{v}: {o} vs {want}");
        }
        let mut out16 = [0i16; 8];
        let p16 =
            SoftmaxParams::prepare_s8_s16(q(0.05, 0), q(1.0 / 65536.0, -32768), 1.0, 8, Rounding::Double).unwrap();
        softmax_s8_s16(&p16, &x, &mut out16).unwrap();
        for (&v, &o) in x.iter().zip(&out16) {
            let want = libm::exp(0.05 * (v as f64 - m)) / sum * 65536.0 - 32768.0;
            assert!((o as f64 - want).abs() <= 2.0, "{v}: {o} vs {want}");
        }
    }

    /// Inputs of `EXP_TABLE_FROM` elements or more (the exponentials from a table on the host)
    /// give what each row alone gives (fewer elements: computed one by one), for int8 and
    /// int16 outputs, in both rounding modes, with differences below `diff_min`.
    #[test]
    fn exp_table_gives_the_computed_exponentials() -> Result<(), Error> {
        let depth = 197;
        let rows = EXP_TABLE_FROM / depth + 2;
        let mut s = 7u32;
        let x: Vec<i8> = (0..rows * depth)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 24) as i8
            })
            .collect();
        for (scale, rounding) in [(0.05, Rounding::Double), (0.2, Rounding::Single), (0.9, Rounding::Double)] {
            let p = SoftmaxParams::prepare_s8(q(scale, 0), q(1.0 / 256.0, -128), 1.0, depth, rounding)?;
            let p16 = SoftmaxParams::prepare_s8_s16(q(scale, 0), q(1.0 / 65536.0, -32768), 1.0, depth, rounding)?;
            let (mut all, mut all16) = (vec![0i8; x.len()], vec![0i16; x.len()]);
            softmax_s8(&p, &x, &mut all)?;
            softmax_s8_s16(&p16, &x, &mut all16)?;
            for (r, row) in x.chunks_exact(depth).enumerate() {
                let (mut one, mut one16) = (vec![0i8; depth], vec![0i16; depth]);
                softmax_s8(&p, row, &mut one)?;
                softmax_s8_s16(&p16, row, &mut one16)?;
                assert_eq!(&all[r * depth..(r + 1) * depth], &one[..], "row {r}, scale {scale}");
                assert_eq!(&all16[r * depth..(r + 1) * depth], &one16[..], "row {r}, scale {scale}");
            }
        }
        Ok(())
    }

    #[test]
    fn int16_softmax_is_close_to_float_in_both_modes() {
        for rounding in [Rounding::Double, Rounding::Single] {
            let luts = SoftmaxS16Luts::new(rounding);
            let s = 1.0 / 4096.0f32;
            let p = SoftmaxS16Params::prepare(q(s, 0), q(1.0 / 32768.0, 0), 1.0, 6, rounding, &luts).unwrap();
            let x = [0i16, 4096, -4096, 8192, 2000, -30000];
            let mut out = [0i16; 6];
            softmax_s16(&p, &x, &mut out).unwrap();
            let sum: f64 = x.iter().map(|&v| libm::exp(s as f64 * (v as f64 - 8192.0))).sum();
            for (&v, &o) in x.iter().zip(&out) {
                let want = libm::exp(s as f64 * (v as f64 - 8192.0)) / sum * 32768.0;
                assert!((o as f64 - want).abs() <= 40.0, "{rounding:?} {v}: {o} vs {want}");
            }
        }
    }

    #[test]
    fn long_uniform_rows_keep_rounding_past_tflite_micros_limit() {
        // 600 equal values: each is 1/600 of the mass, 0.43 LSB of 1/256 -> -128; the sum of
        // exponentials (600 in Q12.19) needs a final shift of 32.
        let p = SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 256.0, -128), 1.0, 600, Rounding::Double).unwrap();
        let mut out = [0i8; 600];
        softmax_s8(&p, &[5; 600], &mut out).unwrap();
        assert!(out.iter().all(|&v| v == -128));
        // 300 values: 256/300 = 0.85 LSB -> -127, shift 31 (within TFLite Micro's range).
        let p = SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 256.0, -128), 1.0, 300, Rounding::Double).unwrap();
        let mut out = [0i8; 300];
        softmax_s8(&p, &[5; 300], &mut out).unwrap();
        assert!(out.iter().all(|&v| v == -127));
    }

    #[test]
    fn length_errors() {
        let p = SoftmaxParams::prepare_s8(q(0.1, 0), q(1.0 / 256.0, -128), 1.0, 3, Rounding::Double).unwrap();
        let mut out = [0i8; 4];
        assert!(softmax_s8(&p, &[0; 4], &mut out).is_err());
        assert!(softmax_s8(&p, &[0; 3], &mut out).is_err());
    }
}
