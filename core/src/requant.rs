//! Fixed-point requantization, bit-exact with TensorFlow Lite's integer kernels.
//!
//! An int32 accumulator is scaled by a real multiplier `M` (for a conv: `input_scale *
//! filter_scale / output_scale`) without floating point: `M` is stored as a Q31 fraction
//! `m ∈ [0.5, 1)` and a power-of-two exponent `shift`, `M ≈ m · 2^shift`
//! ([`quantize_multiplier`]), and an accumulator `x` becomes `round(x · m · 2^shift)`.
//!
//! TFLite has two ways to round that product, and they differ by one in some results:
//!
//! | rounding | definition | used by |
//! |---|---|---|
//! | [`Rounding::Double`] (default) | `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x · 2^max(shift,0), m), max(-shift,0))`: two roundings (the first ties toward +∞, the second ties away from zero) | TFLite Micro, CMSIS-NN, the TFLite interpreter's conv and depthwise |
//! | [`Rounding::Single`] | `(x · m + 2^(30-shift)) >> (31 - shift)` in 64 bits: one rounding, half up | TFLite built with `TFLITE_SINGLE_ROUNDING`, CMSIS-NN's `CMSIS_NN_USE_SINGLE_ROUNDING` |
//!
//! At the kernel level, [`Rounding::Single`] selects *the TFLite interpreter's reference
//! behaviour* (`OpResolverType.BUILTIN_REF`), which is not always this fixed-point rule: its
//! fully connected kernel (per-tensor and per-channel, int8 and 16x8) computes
//! `round((double)acc · E)` in double precision (ties away from zero), which the kernels reproduce
//! with integers only (`kernels::fully_connected`); its conv and depthwise use double rounding,
//! like TFLite Micro. Each kernel's doc comment says what each mode matches.
//!
//! Contracts (as in TFLite, checked with `debug_assert!`): `shift ∈ [-31, 30]` (a left shift that
//! overflows i32 wraps, as in TFLite Micro and CMSIS-NN); single rounding
//! needs `m ≥ 0`; the 64-bit variant needs `|x| < 2^47` and `shift ∈ [-31, 7]`.
#![forbid(unsafe_code)]

use fixed::types::I1F31;

/// A Q31 fixed-point fraction in [-1, 1): the mantissa of a quantized multiplier.
pub type Q31 = I1F31;

/// How [`QuantizedMultiplier::apply`] rounds (see the module docs for the definitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Rounding {
    /// Two roundings, as TFLite Micro and CMSIS-NN: the default.
    #[default]
    Double,
    /// One rounding, as TFLite with `TFLITE_SINGLE_ROUNDING`.
    Single,
}

/// A real multiplier as TFLite stores it: `real ≈ multiplier · 2^shift`, `multiplier` in Q31.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantizedMultiplier {
    /// The Q31 mantissa, in [0.5, 1) for positive multipliers (0 for a zero or flushed one).
    pub multiplier: i32,
    /// The power-of-two exponent, in [-31, 30] (positive = left shift).
    pub shift: i32,
}

impl QuantizedMultiplier {
    /// The mantissa as a Q31 fixed-point number.
    pub fn mantissa(&self) -> Q31 {
        Q31::from_bits(self.multiplier)
    }

    /// The real value this stands for: `multiplier · 2^(shift - 31)`.
    pub fn to_f64(&self) -> f64 {
        self.multiplier as f64 * libm::exp2((self.shift - 31) as f64)
    }

    /// Scales `x` by this multiplier with the given rounding.
    #[inline(always)]
    pub fn apply(&self, x: i32, rounding: Rounding) -> i32 {
        match rounding {
            Rounding::Double => multiply_by_quantized_multiplier(x, self.multiplier, self.shift),
            Rounding::Single => multiply_by_quantized_multiplier_single(x, self.multiplier, self.shift),
        }
    }
}

/// TFLite's `QuantizeMultiplier`, for double rounding: splits `real` into a Q31 mantissa and a
/// shift with `frexp`, rounds the mantissa half away from zero, carries 2^31 into the shift, and
/// flushes multipliers below about 2^-31 to zero (`multiplier = 0, shift = 0`).
///
/// The shift can exceed 30 for huge multipliers (> 2^30); such multipliers break the
/// [`multiply_by_quantized_multiplier`] contract, as in TFLite.
pub fn quantize_multiplier(real: f64) -> QuantizedMultiplier {
    if real == 0.0 {
        return QuantizedMultiplier { multiplier: 0, shift: 0 };
    }
    let (q, mut shift) = libm::frexp(real);
    // TfLiteRound = std::round: half away from zero.
    let mut q_fixed = libm::round(q * (1u64 << 31) as f64) as i64;
    debug_assert!(q_fixed <= 1 << 31);
    if q_fixed == 1 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        shift = 0;
        q_fixed = 0;
    }
    QuantizedMultiplier { multiplier: q_fixed as i32, shift }
}

/// TFLite's `QuantizeMultiplier` as compiled with `TFLITE_SINGLE_ROUNDING`: as
/// [`quantize_multiplier`], and a shift above 30 saturates to `(2^31 - 1, 30)`.
pub fn quantize_multiplier_single_rounding(real: f64) -> QuantizedMultiplier {
    let mut qm = quantize_multiplier(real);
    if qm.shift > 30 {
        qm = QuantizedMultiplier { multiplier: i32::MAX, shift: 30 };
    }
    qm
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul`: `round(a · b / 2^31)` with ties toward
/// +infinity (its nudge of `2^30` or `1 - 2^30` then a truncating division amount to
/// `floor((a·b + 2^30) / 2^31)`); the one overflow case (`a == b == i32::MIN`) saturates to
/// `i32::MAX`.
#[inline(always)]
pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    let ab = a as i64 * b as i64;
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // C++ integer division truncates toward zero, as Rust's does.
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^exponent` rounded to nearest, ties away from zero.
/// `exponent ∈ [0, 31]`.
#[inline(always)]
pub fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    debug_assert!((0..=31).contains(&exponent), "exponent {exponent} outside [0, 31]");
    let mask = ((1i64 << exponent) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + (x < 0) as i32;
    (x >> exponent) + (remainder > threshold) as i32
}

/// TFLite's double-rounding `MultiplyByQuantizedMultiplier(int32 x, multiplier, shift)`:
/// `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x · 2^left, multiplier), right)` with
/// `left = max(shift, 0)`, `right = max(-shift, 0)`.
///
/// `x · 2^left` is computed in 32 bits and wraps when it does not fit, in every build: TFLite
/// Micro and CMSIS-NN compute it as `x * (1 << left)` in int32, and a valid model with a
/// positive per-channel shift can reach that on extreme inputs, so wrapping keeps the result
/// bit-exact with them there too (saturating would differ exactly where they overflow).
#[inline(always)]
pub fn multiply_by_quantized_multiplier(x: i32, multiplier: i32, shift: i32) -> i32 {
    debug_assert!((-31..=30).contains(&shift), "shift {shift} outside [-31, 30]");
    let left = if shift > 0 { shift } else { 0 };
    let right = if shift > 0 { 0 } else { -shift };
    rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x.wrapping_shl(left as u32), multiplier), right)
}

/// TFLite's single-rounding `MultiplyByQuantizedMultiplier(int32 x, multiplier, shift)`:
/// `(x · multiplier + 2^(30 - shift)) >> (31 - shift)`, in 64 bits (round half up).
/// Needs `multiplier ≥ 0`.
#[inline(always)]
pub fn multiply_by_quantized_multiplier_single(x: i32, multiplier: i32, shift: i32) -> i32 {
    debug_assert!(multiplier >= 0, "single rounding needs multiplier >= 0, got {multiplier}");
    debug_assert!((-31..=30).contains(&shift), "shift {shift} outside [-31, 30]");
    let total_shift = 31 - shift;
    let round = 1i64 << (total_shift - 1);
    let r = (x as i64 * multiplier as i64 + round) >> total_shift;
    debug_assert!(r >= i32::MIN as i64 && r <= i32::MAX as i64);
    r as i32
}

/// TFLite's `MultiplyByQuantizedMultiplier(int64 x, multiplier, shift)` used by the 16x8 kernels
/// (the same in both rounding modes): the multiplier is first reduced to Q15, rounding half up,
/// then `(x · m15 + 2^(14 - shift)) >> (15 - shift)`.
/// Contracts: `|x| < 2^47`, `shift ∈ [-31, 7]`, `multiplier ≥ 0`.
#[inline(always)]
pub fn multiply_by_quantized_multiplier_i64(x: i64, multiplier: i32, shift: i32) -> i32 {
    debug_assert!(multiplier >= 0);
    debug_assert!((-31..8).contains(&shift), "shift {shift} outside [-31, 7]");
    debug_assert!((-(1i64 << 47)..(1i64 << 47)).contains(&x), "x = {x} outside ±2^47");
    let reduced = if multiplier < 0x7FFF_0000 { (multiplier + (1 << 15)) >> 16 } else { 0x7FFF };
    let total_shift = 15 - shift;
    let r = (x.wrapping_mul(reduced as i64) + (1i64 << (total_shift - 1))) >> total_shift;
    r as i32
}

/// Saturating cast of a requantized value into `[min, max]` (the activation clamp).
#[inline(always)]
pub fn clamp_i32(x: i32, min: i32, max: i32) -> i32 {
    if x < min {
        min
    } else if x > max {
        max
    } else {
        x
    }
}

/// Saturating cast of a requantized value to `i8` (`[-128, 127]`).
#[inline(always)]
pub fn saturate_i8(x: i32) -> i8 {
    clamp_i32(x, i8::MIN as i32, i8::MAX as i32) as i8
}

/// Saturating cast of a requantized value to `u8` (`[0, 255]`).
#[inline(always)]
pub fn saturate_u8(x: i32) -> u8 {
    clamp_i32(x, 0, u8::MAX as i32) as u8
}

/// Saturating cast of a requantized value to `i16` (`[-32768, 32767]`).
#[inline(always)]
pub fn saturate_i16(x: i32) -> i16 {
    clamp_i32(x, i16::MIN as i32, i16::MAX as i32) as i16
}

/// Saturating cast of a requantized value to `u16` (`[0, 65535]`).
#[inline(always)]
pub fn saturate_u16(x: i32) -> u16 {
    clamp_i32(x, 0, u16::MAX as i32) as u16
}

/// Saturating cast of a 64-bit accumulator to `i32`.
#[inline(always)]
pub fn saturate_i32(x: i64) -> i32 {
    if x < i32::MIN as i64 {
        i32::MIN
    } else if x > i32::MAX as i64 {
        i32::MAX
    } else {
        x as i32
    }
}

/// TFLite's per-channel multipliers (`PopulateConvolutionQuantizationParams`): for each output
/// channel, `quantize_multiplier(input_scale · filter_scale[c] / output_scale)` computed in
/// `f64` (with [`quantize_multiplier_single_rounding`] for [`Rounding::Single`]).
///
/// # Errors
/// [`crate::Error::LengthMismatch`] if `multipliers` or `shifts` is not one per filter scale;
/// [`crate::Error::InvalidScale`] for a scale that is not finite and positive.
pub fn quantize_multipliers_per_channel(
    input_scale: f32,
    filter_scales: &[f32],
    output_scale: f32,
    rounding: Rounding,
    multipliers: &mut [i32],
    shifts: &mut [i32],
) -> Result<(), crate::Error> {
    let n = filter_scales.len();
    for len in [multipliers.len(), shifts.len()] {
        if len != n {
            return Err(crate::Error::LengthMismatch { expected: n, actual: len });
        }
    }
    for s in core::iter::once(&input_scale).chain(filter_scales).chain(core::iter::once(&output_scale)) {
        if !(s.is_finite() && *s > 0.0) {
            return Err(crate::Error::InvalidScale);
        }
    }
    for ((&f, m), sh) in filter_scales.iter().zip(multipliers.iter_mut()).zip(shifts.iter_mut()) {
        let real = input_scale as f64 * f as f64 / output_scale as f64;
        let q = match rounding {
            Rounding::Double => quantize_multiplier(real),
            Rounding::Single => quantize_multiplier_single_rounding(real),
        };
        *m = q.multiplier;
        *sh = q.shift;
    }
    Ok(())
}

/// Per-channel requantization of int32 accumulators laid out channels-last (element `i` belongs
/// to channel `i % channels`, as NHWC outputs): `out[i] = clamp(MBQM(acc[i], m[c], shift[c]) +
/// output_offset, act_min, act_max)`, saturated to `i8`.
///
/// Contract per channel, as TFLite: `shift ∈ [-31, 30]` and `acc · 2^max(shift, 0)` fits in
/// 32 bits (checked by `debug_assert!`); single rounding also needs `m ≥ 0`.
///
/// # Errors
/// [`crate::Error::LengthMismatch`] if `out` differs from `acc` in length, `shifts` from
/// `multipliers`, or `acc` is not a whole number of channel rows;
/// [`crate::Error::InvalidArgument`] for no channels.
#[allow(clippy::too_many_arguments)]
pub fn requantize_per_channel_s8(
    acc: &[i32],
    multipliers: &[i32],
    shifts: &[i32],
    rounding: Rounding,
    output_offset: i32,
    act_min: i32,
    act_max: i32,
    out: &mut [i8],
) -> Result<(), crate::Error> {
    let c = multipliers.len();
    if c == 0 {
        return Err(crate::Error::InvalidArgument { reason: "per-channel requantization needs at least one channel" });
    }
    if shifts.len() != c {
        return Err(crate::Error::LengthMismatch { expected: c, actual: shifts.len() });
    }
    if out.len() != acc.len() {
        return Err(crate::Error::LengthMismatch { expected: acc.len(), actual: out.len() });
    }
    if acc.len() % c != 0 {
        return Err(crate::Error::LengthMismatch { expected: acc.len() - acc.len() % c + c, actual: acc.len() });
    }
    for (row, orow) in acc.chunks_exact(c).zip(out.chunks_exact_mut(c)) {
        for (((&a, &m), &s), o) in row.iter().zip(multipliers).zip(shifts).zip(orow.iter_mut()) {
            let q = QuantizedMultiplier { multiplier: m, shift: s }.apply(a, rounding);
            *o = saturate_i8(clamp_i32(q.saturating_add(output_offset), act_min, act_max));
        }
    }
    Ok(())
}

/// Per-channel requantization of 64-bit accumulators (the 16x8 kernels) to `i16`, with
/// [`multiply_by_quantized_multiplier_i64`] (its contracts: `|acc| < 2^47`,
/// `shift ∈ [-31, 7]`, `m ≥ 0`). Same layout and errors as [`requantize_per_channel_s8`].
///
/// # Errors
/// As [`requantize_per_channel_s8`].
pub fn requantize_per_channel_s16(
    acc: &[i64],
    multipliers: &[i32],
    shifts: &[i32],
    output_offset: i32,
    act_min: i32,
    act_max: i32,
    out: &mut [i16],
) -> Result<(), crate::Error> {
    let c = multipliers.len();
    if c == 0 {
        return Err(crate::Error::InvalidArgument { reason: "per-channel requantization needs at least one channel" });
    }
    if shifts.len() != c {
        return Err(crate::Error::LengthMismatch { expected: c, actual: shifts.len() });
    }
    if out.len() != acc.len() {
        return Err(crate::Error::LengthMismatch { expected: acc.len(), actual: out.len() });
    }
    if acc.len() % c != 0 {
        return Err(crate::Error::LengthMismatch { expected: acc.len() - acc.len() % c + c, actual: acc.len() });
    }
    for (row, orow) in acc.chunks_exact(c).zip(out.chunks_exact_mut(c)) {
        for (((&a, &m), &s), o) in row.iter().zip(multipliers).zip(shifts).zip(orow.iter_mut()) {
            let q = multiply_by_quantized_multiplier_i64(a, m, s);
            *o = saturate_i16(clamp_i32(q.saturating_add(output_offset), act_min, act_max));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Each rounding rule restated with wide integers (i128), straight from TFLite's definition,
    //! and checked against the implementation on named edge cases and random cases.
    use super::*;
    use proptest::prelude::*;

    /// round(a / 2^e), ties away from zero, exact in i128.
    fn div_pow2_round_away(a: i128, e: u32) -> i128 {
        if e == 0 {
            return a;
        }
        let d = 1i128 << e;
        let q = a.div_euclid(d);
        let r = a.rem_euclid(d); // a = q·d + r, 0 <= r < d
        let twice = 2 * r;
        if twice > d || (twice == d && a > 0) { q + 1 } else { q }
    }

    fn srdhm_wide(a: i32, b: i32) -> i32 {
        // gemmlowp: (a·b + nudge) / 2^31 truncated toward zero, nudge = 2^30 if a·b >= 0 else
        // 1 - 2^30. Exactly: floor((a·b + 2^30) / 2^31), i.e. round(a·b / 2^31) with ties toward
        // +inf; saturated to i32.
        let v = (a as i128 * b as i128 + (1i128 << 30)).div_euclid(1i128 << 31);
        v.clamp(i32::MIN as i128, i32::MAX as i128) as i32
    }

    fn double_wide(x: i32, m: i32, shift: i32) -> i32 {
        let left = shift.max(0) as u32;
        let right = (-shift).max(0) as u32;
        let xs = ((x as i64) << left) as i32; // two's complement wrap, as int32 `x * (1 << left)`
        div_pow2_round_away(srdhm_wide(xs, m) as i128, right) as i32
    }

    fn single_wide(x: i32, m: i32, shift: i32) -> i32 {
        // floor((x·m + 2^(30-shift)) / 2^(31-shift)) = round half up of x·m·2^(shift-31).
        let t = (31 - shift) as u32;
        ((x as i128 * m as i128 + (1i128 << (t - 1))).div_euclid(1i128 << t)) as i32
    }

    #[test]
    fn rounding_divide_by_pot_ties_go_away_from_zero() {
        assert_eq!(rounding_divide_by_pot(5, 1), 3); // 2.5 -> 3
        assert_eq!(rounding_divide_by_pot(-5, 1), -3); // -2.5 -> -3
        assert_eq!(rounding_divide_by_pot(3, 1), 2); // 1.5 -> 2
        assert_eq!(rounding_divide_by_pot(-3, 1), -2);
        assert_eq!(rounding_divide_by_pot(i32::MIN, 31), -1);
        assert_eq!(rounding_divide_by_pot(i32::MAX, 31), 1);
        assert_eq!(rounding_divide_by_pot(7, 0), 7);
    }

    #[test]
    fn srdhm_saturates_the_one_overflow() {
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MIN, i32::MIN), i32::MAX);
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MIN, i32::MAX), -i32::MAX);
        assert_eq!(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30), 1 << 29);
    }

    #[test]
    fn quantize_multiplier_edges() {
        assert_eq!(quantize_multiplier(0.0), QuantizedMultiplier { multiplier: 0, shift: 0 });
        assert_eq!(quantize_multiplier(1.0), QuantizedMultiplier { multiplier: 1 << 30, shift: 1 });
        assert_eq!(quantize_multiplier(0.5), QuantizedMultiplier { multiplier: 1 << 30, shift: 0 });
        assert_eq!(quantize_multiplier(0.75), QuantizedMultiplier { multiplier: 3 << 29, shift: 0 });
        // Mantissa that rounds up to 2^31 carries into the shift.
        let just_below_one = 1.0 - 1e-12;
        assert_eq!(quantize_multiplier(just_below_one), QuantizedMultiplier { multiplier: 1 << 30, shift: 1 });
        // Tiny multipliers flush to zero.
        assert_eq!(quantize_multiplier(1e-12), QuantizedMultiplier { multiplier: 0, shift: 0 });
        assert_eq!(quantize_multiplier(libm::exp2(-32.0)).multiplier, 1 << 30); // shift -31 kept
        assert_eq!(quantize_multiplier(libm::exp2(-32.0)).shift, -31);
        assert_eq!(quantize_multiplier(libm::exp2(-33.0)), QuantizedMultiplier { multiplier: 0, shift: 0 });
        // Huge: single rounding saturates the shift at 30.
        assert_eq!(quantize_multiplier(libm::exp2(40.0)).shift, 41);
        assert_eq!(
            quantize_multiplier_single_rounding(libm::exp2(40.0)),
            QuantizedMultiplier { multiplier: i32::MAX, shift: 30 }
        );
        let m = quantize_multiplier(0.123456789);
        assert!((m.to_f64() - 0.123456789).abs() < 1e-9);
        assert_eq!(m.mantissa().to_bits(), m.multiplier);
    }

    #[test]
    fn named_edge_cases_match_wide_reference() {
        let xs = [0, 1, -1, 2, -2, 127, -128, 1 << 20, -(1 << 20), i32::MAX, i32::MIN, i32::MIN + 1];
        let ms = [0, 1, 1 << 30, (1 << 30) + 1, i32::MAX, 1_518_500_250, 1_073_741_823];
        for &x in &xs {
            for &m in &ms {
                for shift in -31..=0 {
                    assert_eq!(
                        multiply_by_quantized_multiplier(x, m, shift),
                        double_wide(x, m, shift),
                        "double x={x} m={m} s={shift}"
                    );
                    assert_eq!(
                        multiply_by_quantized_multiplier_single(x, m, shift),
                        single_wide(x, m, shift),
                        "single x={x} m={m} s={shift}"
                    );
                }
            }
        }
        // Positive shifts where x << shift fits (TFLite's contract).
        for shift in 1..=30 {
            let lim = i32::MAX >> shift;
            for &x in &[0, 1, -1, lim, -lim, lim / 3] {
                for &m in &ms {
                    assert_eq!(multiply_by_quantized_multiplier(x, m, shift), double_wide(x, m, shift));
                    let r = single_wide(x, m, shift) as i64;
                    if r >= i32::MIN as i64 && r <= i32::MAX as i64 {
                        assert_eq!(multiply_by_quantized_multiplier_single(x, m, shift), r as i32);
                    }
                }
            }
        }
    }

    /// Positive shifts where `x << shift` does not fit an i32 (a valid model reaches this on
    /// extreme inputs): the product wraps as TFLite Micro's and CMSIS-NN's int32
    /// `x * (1 << left)` does, in debug builds too (no assertion).
    #[test]
    fn overflowing_left_shift_wraps() {
        let ms = [0, 1, 1 << 30, (1 << 30) + 1, i32::MAX, 1_518_500_250];
        for shift in 1..=30 {
            let lim = i32::MAX >> shift;
            for &x in &[lim + 1, -lim - 2, i32::MAX, i32::MIN, i32::MIN + 1, 1 << 30, -(1 << 30) - 7] {
                for &m in &ms {
                    assert_eq!(
                        multiply_by_quantized_multiplier(x, m, shift),
                        double_wide(x, m, shift),
                        "x={x} m={m} s={shift}"
                    );
                }
            }
        }
        // 2^30 << 1 wraps to i32::MIN; times 0.5 (Q31 2^30) is -2^30.
        assert_eq!(multiply_by_quantized_multiplier(1 << 30, 1 << 30, 1), -(1 << 30));
    }

    #[test]
    fn exact_ties() {
        // x·m·2^(shift-31) = k + 1/2 exactly: double rounding goes away from zero, single goes up.
        let m = 1 << 30; // 0.5 in Q31
        // 3 * 0.5 * 2^0 = 1.5
        assert_eq!(multiply_by_quantized_multiplier(3, m, 0), 2);
        assert_eq!(multiply_by_quantized_multiplier_single(3, m, 0), 2);
        // -1.5: the high multiply rounds its tie toward +inf as well.
        assert_eq!(multiply_by_quantized_multiplier(-3, m, 0), -1);
        assert_eq!(multiply_by_quantized_multiplier_single(-3, m, 0), -1);
        // A tie in the final division rounds away from zero: SRDHM(-3, 0.5) = -1, then
        // -1 / 2 = -0.5 -> -1; SRDHM(-6, 0.5) = -3, then -3 / 2 = -1.5 -> -2.
        assert_eq!(multiply_by_quantized_multiplier(-3, m, -1), -1);
        assert_eq!(multiply_by_quantized_multiplier(-6, m, -1), -2); // -3 / 2 = -1.5 -> -2
        // Double rounding's two steps can differ from one: x = 5, m = 0.75·2^31, shift = -2:
        // exact 5·0.75/4 = 0.9375 -> 1; both agree here, and the proptests cover the rest.
        assert_eq!(multiply_by_quantized_multiplier(5, 3 << 29, -2), 1);
    }

    #[test]
    fn i64_variant() {
        let m = quantize_multiplier(0.25);
        // 1000 * 0.25 = 250
        assert_eq!(multiply_by_quantized_multiplier_i64(1000, m.multiplier, m.shift), 250);
        assert_eq!(multiply_by_quantized_multiplier_i64(-1000, m.multiplier, m.shift), -250);
        // reduced multiplier saturates at 0x7FFF
        assert_eq!(
            multiply_by_quantized_multiplier_i64(1 << 20, i32::MAX, 0),
            (((1i64 << 20) * 0x7FFF + (1 << 14)) >> 15) as i32
        );
    }

    #[test]
    fn saturating_casts_and_per_channel() {
        assert_eq!((saturate_i8(300), saturate_i8(-300), saturate_i8(5)), (127, -128, 5));
        assert_eq!((saturate_u8(-1), saturate_u8(256)), (0, 255));
        assert_eq!((saturate_i16(40000), saturate_u16(-5)), (32767, 0));
        assert_eq!((saturate_i32(1 << 40), saturate_i32(-(1 << 40)), saturate_i32(7)), (i32::MAX, i32::MIN, 7));
        let (mut m, mut s) = ([0; 2], [0; 2]);
        quantize_multipliers_per_channel(0.5, &[0.25, 0.125], 1.0, Rounding::Double, &mut m, &mut s).unwrap();
        assert_eq!((m, s), ([1 << 30, 1 << 30], [-2, -3])); // 0.125 and 0.0625
        let acc = [100, 100, -100, -100, 1000, 1000];
        let mut out = [0i8; 6];
        requantize_per_channel_s8(&acc, &m, &s, Rounding::Double, 3, -128, 127, &mut out).unwrap();
        // 100 · 0.125 = 12.5 -> 13 (away from zero), 100 · 0.0625 = 6.25 -> 6; + 3.
        assert_eq!(out, [16, 9, -10, -3, 127, 66]);
        for (i, &a) in acc.iter().enumerate() {
            let want = multiply_by_quantized_multiplier(a, m[i % 2], s[i % 2]) + 3;
            assert_eq!(out[i] as i32, want.clamp(-128, 127));
        }
        assert!(requantize_per_channel_s8(&acc[..5], &m, &s, Rounding::Double, 0, -128, 127, &mut out[..5]).is_err());
        let acc64 = [1i64 << 25, -(1i64 << 25), 12345, -12345];
        let mut o16 = [0i16; 4];
        requantize_per_channel_s16(&acc64, &m, &s, 0, -32768, 32767, &mut o16).unwrap();
        assert_eq!(
            o16,
            [
                32767,
                -32768,
                multiply_by_quantized_multiplier_i64(12345, m[0], s[0]) as i16,
                multiply_by_quantized_multiplier_i64(-12345, m[1], s[1]) as i16
            ]
        );
    }

    fn x_and_shift() -> impl Strategy<Value = (i32, i32)> {
        (-31i32..=30).prop_flat_map(|shift| {
            let lim = if shift > 0 { i32::MAX >> shift } else { i32::MAX };
            ((-lim..=lim), Just(shift))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: proptest_cases(), .. ProptestConfig::default() })]

        #[test]
        fn double_rounding_matches_wide((x, shift) in x_and_shift(), m in 0i32..=i32::MAX) {
            prop_assert_eq!(multiply_by_quantized_multiplier(x, m, shift), double_wide(x, m, shift));
        }

        #[test]
        fn double_rounding_negative_multipliers((x, shift) in x_and_shift(), m in i32::MIN..0) {
            prop_assert_eq!(multiply_by_quantized_multiplier(x, m, shift), double_wide(x, m, shift));
        }

        #[test]
        fn single_rounding_matches_wide(x in any::<i32>(), m in 0i32..=i32::MAX, shift in -31i32..=0) {
            prop_assert_eq!(multiply_by_quantized_multiplier_single(x, m, shift), single_wide(x, m, shift));
        }

        #[test]
        fn quantize_multiplier_is_close(real in 1e-9f64..1e3) {
            let q = quantize_multiplier(real);
            prop_assert!(q.multiplier >= 1 << 30);
            prop_assert!(((q.to_f64() - real) / real).abs() <= 1.0 / (1u64 << 31) as f64);
        }
    }

    /// Random cases per property: 10 million over the three rounding properties in release
    /// runs (`MQ_PROPTEST_CASES`), fewer by default so `cargo test` stays quick.
    fn proptest_cases() -> u32 {
        crate::test_support::cases(option_env!("MQ_PROPTEST_CASES").and_then(|s| s.parse().ok()).unwrap_or(20_000))
    }
}
