//! gemmlowp's fixed-point arithmetic, as TFLite's integer softmax, logistic, tanh and hard-swish
//! use it (`fixedpoint/fixedpoint.h` and the helpers of `tensorflow/lite/kernels/internal/
//! common.h`), on raw integers.
//!
//! A gemmlowp `FixedPoint<int32_t, IB>` is an `i32` with `IB` integer bits and `31 - IB`
//! fractional bits; here it is the raw `i32` and the integer bits are an argument. The operations
//! keep gemmlowp's exact rounding and saturation (and its wrapping `+`/`-`), so results match
//! TFLite bit for bit:
//!
//! | gemmlowp | here |
//! |---|---|
//! | `a * b` (FixedPoint product) | [`saturating_rounding_doubling_high_mul`](crate::requant::saturating_rounding_doubling_high_mul) |
//! | `RoundingDivideByPOT` | [`rounding_divide_by_pot`] |
//! | `SaturatingRoundingMultiplyByPOT<e>`, `Rescale` | [`saturating_rounding_multiply_by_pot`] |
//! | `RoundingHalfSum` | [`rounding_half_sum`] |
//! | `exp_on_negative_values` | [`exp_on_negative_values`] |
//! | `one_over_one_plus_x_for_x_in_0_1` | [`one_over_one_plus_x_for_x_in_0_1`] |
//! | `logistic`, `tanh` | [`logistic`], [`tanh`] |
//! | TFLite `GetReciprocal` | [`reciprocal`] |
//!
//! The 16-bit variants used by hard-swish follow gemmlowp's `int16_t` specialisations.
#![forbid(unsafe_code)]

// `srdhm`: this file's short name for the product of two Q31 numbers (gemmlowp's `a * b`).
use crate::requant::{rounding_divide_by_pot, saturating_rounding_doubling_high_mul as srdhm};

/// gemmlowp `SaturatingRoundingMultiplyByPOT<exponent>` on an `i32`: for `exponent > 0` a left
/// shift saturating to `i32::MIN`/`i32::MAX`, for `exponent < 0` a [`rounding_divide_by_pot`]
/// (`exponent ∈ [-31, 31]`).
#[inline]
pub fn saturating_rounding_multiply_by_pot(x: i32, exponent: i32) -> i32 {
    if exponent == 0 {
        x
    } else if exponent > 0 {
        let e = exponent.min(31);
        let threshold = ((1i64 << (31 - e)) - 1) as i32;
        if x > threshold {
            i32::MAX
        } else if x < -threshold {
            i32::MIN
        } else {
            x.wrapping_shl(e as u32)
        }
    } else {
        rounding_divide_by_pot(x, (-exponent).min(31))
    }
}

/// gemmlowp `RoundingHalfSum(a, b)`: `(a + b ± 1) / 2` in 64 bits, truncating, the `±1` taking
/// the sign of the sum (rounds halves away from zero).
#[inline]
pub fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = a as i64 + b as i64;
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

/// `ConstantPOT<exponent>` of a fixed-point type with `integer_bits`: `2^(31 - IB + exponent)`.
#[inline]
const fn constant_pot(integer_bits: u32, exponent: i32) -> i32 {
    1i32 << ((31 - integer_bits as i32 + exponent) as u32)
}

/// `FixedPoint<int32_t, IB>::One()`: `i32::MAX` for IB = 0, else `2^(31 - IB)`.
#[inline]
const fn one(integer_bits: u32) -> i32 {
    if integer_bits == 0 { i32::MAX } else { 1i32 << (31 - integer_bits) }
}

/// gemmlowp `exp_on_interval_between_negative_one_quarter_and_0_excl` (Q0.31 in and out):
/// a 4th-order Taylor expansion of `exp` around −1/8.
pub fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    const EXP_MINUS_ONE_EIGHTH: i32 = 1_895_147_668; // exp(-1/8) in Q0.31
    const ONE_THIRD: i32 = 715_827_883; // 1/3 in Q0.31
    let x = a.wrapping_add(constant_pot(0, -3));
    let x2 = srdhm(x, x);
    let x3 = srdhm(x2, x);
    let x4 = srdhm(x2, x2);
    let x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2);
    let poly = saturating_rounding_multiply_by_pot(srdhm(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2), -1);
    EXP_MINUS_ONE_EIGHTH.wrapping_add(srdhm(EXP_MINUS_ONE_EIGHTH, x.wrapping_add(poly)))
}

/// gemmlowp `exp_on_negative_values`: `exp(a)` for `a ≤ 0` given with `integer_bits` integer bits
/// (`integer_bits ≤ 6`), result in Q0.31. Splits `a` into a multiple of 1/4 and a remainder in
/// [−1/4, 0), evaluates the remainder with
/// [`exp_on_interval_between_negative_one_quarter_and_0_excl`], then multiplies by the
/// precomputed `exp(−2^k)` for each set bit of the multiple.
pub fn exp_on_negative_values(a: i32, integer_bits: u32) -> i32 {
    let ib = integer_bits.min(6);
    let frac = 31 - ib as i32;
    let one_quarter = constant_pot(ib, -2);
    let mask = one_quarter.wrapping_sub(1);
    let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(saturating_rounding_multiply_by_pot(
        a_mod_quarter_minus_one_quarter,
        ib as i32,
    ));
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    // (exponent, exp(-2^exponent) in Q0.31)
    const BARREL: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    for &(exponent, multiplier) in &BARREL {
        if ib as i32 > exponent {
            let shift = (frac + exponent) as u32;
            if remainder & (1i32 << shift) != 0 {
                result = srdhm(result, multiplier);
            }
        }
    }
    if ib > 5 {
        let clamp = -(1i32 << (36 - ib));
        if a < clamp {
            result = 0;
        }
    }
    if a == 0 { one(0) } else { result }
}

/// The Newton–Raphson iteration shared by gemmlowp's `one_over_one_plus_x_for_x_in_0_1` and
/// `one_minus_x_over_one_plus_x_for_x_in_0_1`: `x ≈ 1 / half_denominator` in Q2.29.
fn newton_reciprocal_q2(half_denominator: i32) -> i32 {
    const C48_OVER_17: i32 = 1_515_870_810; // Q2.29
    const C_NEG_32_OVER_17: i32 = -1_010_580_540; // Q2.29
    let one_q2 = one(2);
    let mut x = C48_OVER_17.wrapping_add(srdhm(half_denominator, C_NEG_32_OVER_17));
    for _ in 0..3 {
        let half_denominator_times_x = srdhm(half_denominator, x);
        let one_minus = one_q2.wrapping_sub(half_denominator_times_x);
        // x * one_minus is Q4.27; Rescale<2> shifts left by 2 with saturation.
        x = x.wrapping_add(saturating_rounding_multiply_by_pot(srdhm(x, one_minus), 2));
    }
    x
}

/// gemmlowp `one_over_one_plus_x_for_x_in_0_1`: `1 / (1 + a)` for `a ∈ [0, 1)` in Q0.31.
pub fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let half_denominator = rounding_half_sum(a, one(0));
    let x = newton_reciprocal_q2(half_denominator);
    // ExactMulByPot<-1> makes it Q1.30 (same raw), Rescale<0> shifts left by 1, saturating.
    saturating_rounding_multiply_by_pot(x, 1)
}

/// gemmlowp `one_minus_x_over_one_plus_x_for_x_in_0_1`: `(1 − a) / (1 + a)` for `a ∈ [0, 1)`,
/// Q0.31.
pub fn one_minus_x_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let half_denominator = rounding_half_sum(a, one(0));
    let x = newton_reciprocal_q2(half_denominator);
    saturating_rounding_multiply_by_pot(x.wrapping_sub(one(2)), 2)
}

/// gemmlowp `tanh` of a value with `integer_bits` integer bits (`≤ 5`), result in Q0.31.
pub fn tanh(a: i32, integer_bits: u32) -> i32 {
    if a == 0 {
        return 0;
    }
    let negative = a < 0;
    let n = if negative { a } else { a.wrapping_neg() };
    // neg_tanh_on_negative_values: the exp input is n with one more integer bit (ExactMulByPot<1>).
    let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1));
    if negative { t.wrapping_neg() } else { t }
}

/// gemmlowp `logistic` of a value with `integer_bits` integer bits (`≤ 6`), result in Q0.31.
pub fn logistic(a: i32, integer_bits: u32) -> i32 {
    if a == 0 {
        return 1 << 30; // one half
    }
    let positive = a > 0;
    let abs_input = if positive { a } else { a.wrapping_neg() };
    let result_if_positive =
        one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(abs_input.wrapping_neg(), integer_bits));
    if positive { result_if_positive } else { one(0).wrapping_sub(result_if_positive) }
}

/// TFLite `GetReciprocal(x, x_integer_digits, &num_bits_over_unit)`: for a positive `x` with
/// `x_integer_digits` integer bits, normalises `x` to `x' = x / 2^num_bits_over_unit ∈ [1, 2)`
/// and returns `(1 / x'` in Q0.31, `num_bits_over_unit)`.
pub fn reciprocal(x: i32, x_integer_digits: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros();
    let num_bits_over_unit = x_integer_digits - headroom_plus_one as i32;
    let shifted_sum_minus_one = (x as u32).checked_shl(headroom_plus_one).unwrap_or(0).wrapping_sub(1u32 << 31) as i32;
    (one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit)
}

/// gemmlowp `SaturatingRoundingDoublingHighMul<int16_t>`: `round(a · b / 2^15)`, ties toward
/// +∞; `(-32768, -32768)` saturates to 32767.
#[inline]
pub fn srdhm_i16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    let ab = a as i32 * b as i32;
    let nudge: i32 = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// TFLite `SaturatingDoublingHighMul` (int16): `a · b / 2^15` truncated toward zero (no
/// rounding); `(-32768, -32768)` saturates to 32767.
#[inline]
pub fn sdhm_i16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    ((a as i32 * b as i32) / (1 << 15)) as i16
}

/// gemmlowp `RoundingDivideByPOT<int16_t>(x, exponent)` with its exact 16-bit semantics
/// (`exponent ∈ [0, 31]`; the 16-bit mask wraps for exponents above 15, as in C++).
#[inline]
pub fn rounding_divide_by_pot_i16(x: i16, exponent: i32) -> i16 {
    let e = if exponent < 0 {
        0
    } else if exponent > 31 {
        31
    } else {
        exponent as u32
    };
    let mask = ((1i64 << e) - 1) as i16;
    let remainder = x & mask;
    let threshold = ((mask as i32) >> 1) as i16;
    let threshold = threshold.wrapping_add((x < 0) as i16);
    let shifted = ((x as i32) >> e) as i16;
    shifted.wrapping_add((remainder > threshold) as i16)
}

#[cfg(test)]
mod tests {
    //! Each function against exact math (f64) with a stated tolerance in LSB of its output
    //! format, plus named edge cases.
    use super::*;

    fn to_f(x: i32, integer_bits: u32) -> f64 {
        x as f64 / (1u64 << (31 - integer_bits)) as f64
    }
    fn from_f(x: f64, integer_bits: u32) -> i32 {
        libm::round(x * (1u64 << (31 - integer_bits)) as f64) as i32
    }

    #[test]
    fn multiply_by_pot_saturates_and_rounds() {
        assert_eq!(saturating_rounding_multiply_by_pot(1 << 29, 1), 1 << 30);
        assert_eq!(saturating_rounding_multiply_by_pot(1 << 30, 1), i32::MAX);
        assert_eq!(saturating_rounding_multiply_by_pot(-(1 << 30), 1), i32::MIN);
        assert_eq!(saturating_rounding_multiply_by_pot(5, -1), 3);
        assert_eq!(saturating_rounding_multiply_by_pot(-5, -1), -3);
        assert_eq!(saturating_rounding_multiply_by_pot(7, 0), 7);
    }

    #[test]
    fn rounding_half_sum_rounds_away() {
        assert_eq!(rounding_half_sum(1, 2), 2);
        assert_eq!(rounding_half_sum(-1, -2), -2);
        assert_eq!(rounding_half_sum(i32::MAX, i32::MAX), i32::MAX);
        assert_eq!(rounding_half_sum(0, 0), 0);
    }

    #[test]
    fn exp_on_negative_values_within_tolerance() {
        // Over [-16, 0] in Q5.26 (softmax's format) and Q4.27: absolute error below 2^-21 (the
        // quarter-interval Taylor polynomial and the Q0.31 products; measured 2.2e-7).
        for ib in [4u32, 5] {
            let mut worst = 0f64;
            let lo = -16.0f64.min((1u64 << ib) as f64 - 1.0);
            let n = 20_000;
            for k in (0..=n).step_by(crate::test_support::stride(n)) {
                let x = lo * k as f64 / n as f64;
                let raw = from_f(x, ib);
                let got = to_f(exp_on_negative_values(raw, ib), 0);
                let want = libm::exp(to_f(raw, ib));
                worst = worst.max((got - want).abs());
            }
            assert!(worst < 1.0 / (1u64 << 21) as f64, "ib {ib}: worst abs error {worst}");
        }
        assert_eq!(exp_on_negative_values(0, 5), i32::MAX);
    }

    #[test]
    fn one_over_one_plus_x_within_tolerance() {
        let mut worst = 0f64;
        for k in (0..=10_000).step_by(crate::test_support::stride(10_000)) {
            let x = k as f64 / 10_001.0;
            let raw = from_f(x, 0);
            let got = to_f(one_over_one_plus_x_for_x_in_0_1(raw), 0);
            worst = worst.max((got - 1.0 / (1.0 + to_f(raw, 0))).abs());
            let got2 = to_f(one_minus_x_over_one_plus_x_for_x_in_0_1(raw), 0);
            worst = worst.max((got2 - (1.0 - to_f(raw, 0)) / (1.0 + to_f(raw, 0))).abs());
        }
        assert!(worst < 1.0 / (1u64 << 26) as f64, "worst {worst}");
    }

    #[test]
    fn logistic_and_tanh_within_tolerance() {
        let ib = 4;
        let mut worst_l = 0f64;
        let mut worst_t = 0f64;
        for k in (-15_000..=15_000).step_by(crate::test_support::stride(30_000)) {
            let x = k as f64 / 1000.0;
            let raw = from_f(x, ib);
            let xr = to_f(raw, ib);
            worst_l = worst_l.max((to_f(logistic(raw, ib), 0) - 1.0 / (1.0 + libm::exp(-xr))).abs());
            worst_t = worst_t.max((to_f(tanh(raw, ib), 0) - libm::tanh(xr)).abs());
        }
        // Absolute errors below 2^-23 (logistic) and 2^-22 (tanh), in Q0.31 outputs.
        assert!(worst_l < 1.0 / (1u64 << 23) as f64, "logistic worst {worst_l}");
        assert!(worst_t < 1.0 / (1u64 << 22) as f64, "tanh worst {worst_t}");
        assert_eq!(logistic(0, 4), 1 << 30);
        assert_eq!(tanh(0, 4), 0);
    }

    #[test]
    fn reciprocal_normalises() {
        // x = 3.0 with 12 integer bits: 1/3 = 0.666.. / 2 -> num_bits_over_unit 1, scale 2/3.
        let x = 3 << 19;
        let (scale, bits) = reciprocal(x, 12);
        assert_eq!(bits, 1);
        assert!((to_f(scale, 0) - 2.0 / 3.0).abs() < 1e-8);
        for v in [1i32 << 19, 12345 << 7, i32::MAX, 1] {
            let (s, b) = reciprocal(v, 12);
            let want = 1.0 / to_f(v, 12);
            let got = to_f(s, 0) / libm::exp2(b as f64);
            assert!(((got - want) / want).abs() < 1e-7, "v {v}");
        }
    }

    #[test]
    fn int16_helpers() {
        assert_eq!(srdhm_i16(i16::MIN, i16::MIN), i16::MAX);
        assert_eq!(srdhm_i16(16384, 16384), 8192);
        assert_eq!(srdhm_i16(-3, 16384), -1); // -1.5 -> ties toward +inf -> -1
        assert_eq!(sdhm_i16(-3, 16384), -1); // -1.5 -> truncated -> -1
        assert_eq!(sdhm_i16(3, 16384), 1);
        assert_eq!(rounding_divide_by_pot_i16(5, 1), 3);
        assert_eq!(rounding_divide_by_pot_i16(-5, 1), -3);
        assert_eq!(rounding_divide_by_pot_i16(-32768, 15), -1);
        // Exponent 16: the 16-bit mask wraps to -1 (C++ behaviour): x >= 0 gives 1, x < 0 gives -1.
        assert_eq!(rounding_divide_by_pot_i16(7, 16), 1);
        assert_eq!(rounding_divide_by_pot_i16(0, 16), 1);
        assert_eq!(rounding_divide_by_pot_i16(-7, 16), -1);
        for x in i16::MIN..=i16::MAX {
            for e in 0..15 {
                assert_eq!(rounding_divide_by_pot_i16(x, e) as i32, rounding_divide_by_pot(x as i32, e), "{x} {e}");
            }
        }
    }
}
