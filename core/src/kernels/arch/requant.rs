//! The requantization forms the fast paths compute with, each exactly
//! [`requant::multiply_by_quantized_multiplier`] within its domain (property-tested below):
//! [`ChannelRequant`] (any target), [`RightShiftRequant`] (the Arm DSP epilogues' `SMLAL` form),
//! [`AddInputScale`] (an ADD input's rescaling in 32-bit arithmetic), and [`OutputScale`], how a
//! fully connected fast path scales its accumulators.

use crate::kernels::ActivationRange;
use crate::requant;

/// One output channel's fixed-point requantization, prepared so each accumulator costs about
/// twenty instructions on a 32-bit core, and exactly
/// [`requant::multiply_by_quantized_multiplier`] (double rounding) for every input within its
/// contract:
///
/// - `SaturatingRoundingDoublingHighMul(a, m)` is `floor((a * m + 2^30) / 2^31)` (gemmlowp's
///   sign-dependent nudge and truncating division amount to that), except for `a == m ==
///   i32::MIN`, which saturates: so a multiplier of `i32::MIN` is refused ([`Self::new`] gives
///   `None`);
/// - `RoundingDivideByPOT(h, e)` is `(h >> e) + ((h & mask) > (mask >> 1) + (h < 0))` with
///   `mask = 2^e - 1`, mask and threshold prepared once;
/// - shifts outside TFLite's contract `[-31, 30]` are refused.
///
/// The equality is property-tested against the library function (`tests` below).
#[derive(Clone, Copy)]
pub(crate) struct ChannelRequant {
    pub(super) multiplier: i32,
    pub(super) left: u32,
    pub(super) right: u32,
    pub(super) mask: i32,
    pub(super) half: i32,
}

impl ChannelRequant {
    /// The prepared form of `(multiplier, shift)`, or `None` outside the contract (a multiplier
    /// of `i32::MIN`, a shift outside `[-31, 30]`): callers then use the library function.
    #[inline(always)]
    pub(crate) fn new(multiplier: i32, shift: i32) -> Option<Self> {
        if !(-31..=30).contains(&shift) || multiplier == i32::MIN {
            return None;
        }
        Some(Self::new_valid(multiplier, shift))
    }

    /// The prepared form of a `(multiplier, shift)` known to be within the contract (callers
    /// check [`Self::all_valid`] first; outside it the result is wrong, never undefined).
    #[inline(always)]
    pub(crate) fn new_valid(multiplier: i32, shift: i32) -> Self {
        let left = if shift > 0 { shift as u32 } else { 0 };
        let right = if shift < 0 { shift.unsigned_abs() & 31 } else { 0 };
        let mask = (1u32 << right).wrapping_sub(1) as i32;
        Self { multiplier, left: left & 31, right, mask, half: mask >> 1 }
    }

    /// Whether every channel's `(multiplier, shift)` has a prepared form.
    pub(crate) fn all_valid(multiplier: &[i32], shift: &[i32]) -> bool {
        multiplier.iter().zip(shift).all(|(&m, &s)| Self::new(m, s).is_some())
    }

    /// `multiply_by_quantized_multiplier(acc, multiplier, shift)`.
    #[inline(always)]
    pub(crate) fn apply(&self, acc: i32) -> i32 {
        let a = acc.wrapping_shl(self.left);
        let h = ((a as i64 * self.multiplier as i64 + (1 << 30)) >> 31) as i32;
        let threshold = self.half + ((h as u32) >> 31) as i32;
        (h >> self.right) + ((h & self.mask) > threshold) as i32
    }

    /// The int8 output stage: `clamp(apply(acc) + output_offset)`.
    #[inline(always)]
    pub(crate) fn output_s8(&self, acc: i32, output_offset: i32, act: ActivationRange) -> i8 {
        act.apply(self.apply(acc).wrapping_add(output_offset)) as i8
    }
}

/// One output channel's requantization in the form the Arm DSP epilogues compute with one
/// 64-bit multiply-accumulate (`SMLAL`) and four single-cycle instructions, for the channels
/// TFLite's converters produce: a right shift of at least 2 (`shift` in `[-31, -2]`) and a
/// multiplier `>= 0`, or a multiplier of 0 (any shift). With `e = -shift`:
///
/// `multiply_by_quantized_multiplier(a, m, shift) = ((hi(a·m ± 2^30) + 2^(e-2)) >> (e-1)`
///
/// where `hi(x) = x >> 32` (arithmetic) and the `± 2^30` takes the sign of `a`. Why:
/// `SaturatingRoundingDoublingHighMul(a, m) = h = floor((a·m + 2^30) / 2^31)` (no saturation for
/// `m >= 0`), and TFLite's `RoundingDivideByPOT(h, e) = floor((h + 2^(e-1) - [h < 0]) / 2^e)`
/// (round half away from zero); nested floors of integer quotients merge, so the result is
/// `floor((a·m + 2^30 + 2^(30+e) - [h < 0]·2^31) / 2^(31+e))`. `[h < 0]` may be replaced by
/// `[a < 0]`: they differ only when `a < 0` and `h = 0`, where both give 0. `2^(30+e)` is a
/// multiple of `2^32` for `e >= 2`, so it adds `2^(e-2)` to the high word exactly; the rest is
/// the high word of `a·m + 2^30 - [a < 0]·2^31 = a·m ± 2^30`. The high word is within
/// `[-2^30 - 1, 2^30]` (`|a·m| < 2^62`), so adding `2^(e-2) <= 2^29` cannot overflow. A
/// multiplier of 0 gives 0 whatever the shift, as `(hi + 1) >> 1` with `hi` in `{-1, 0}` does.
///
/// [`Self::apply`] is this formula in portable 64-bit arithmetic (the host property test checks
/// it against the library function); `arm_dsp` computes the same in `asm!`.
#[derive(Clone, Copy, Default)]
#[cfg_attr(not(mq_dsp), allow(dead_code))]
pub(crate) struct RightShiftRequant {
    /// The Q31 multiplier, `>= 0`.
    pub(crate) multiplier: i32,
    /// `2^(e-2)`, the rounding term added to the high word.
    pub(crate) round: i32,
    /// `e - 1`, in `[1, 30]`.
    pub(crate) shift: u32,
}

#[cfg_attr(not(mq_dsp), allow(dead_code))]
impl RightShiftRequant {
    /// The prepared form of `(multiplier, shift)`, or `None` outside this form's domain (a
    /// negative multiplier; a nonzero multiplier with a shift outside `[-31, -2]`; a shift
    /// outside `[-31, 30]`).
    #[inline(always)]
    pub(crate) fn new(multiplier: i32, shift: i32) -> Option<Self> {
        if multiplier == 0 && (-31..=30).contains(&shift) {
            return Some(Self { multiplier: 0, round: 1, shift: 1 });
        }
        if multiplier < 0 || !(-31..=-2).contains(&shift) {
            return None;
        }
        let e1 = shift.unsigned_abs() - 1; // in [1, 30]
        Some(Self { multiplier, round: 1 << (e1 - 1), shift: e1 })
    }

    /// Whether every channel's `(multiplier, shift)` has this form. One branch-free scan for the
    /// common case ([`Self::all_common`]); only if some channel is outside it (a zero
    /// multiplier with a shift above -2) the exact test per channel.
    #[inline]
    pub(crate) fn all_valid(multiplier: &[i32], shift: &[i32]) -> bool {
        multiplier.len() == shift.len()
            && (Self::all_common(multiplier, shift)
                || multiplier.iter().zip(shift).all(|(&m, &s)| Self::new(m, s).is_some()))
    }

    /// Whether every channel's `(multiplier, shift)` is in the domain of the `SMMLAR` epilogue
    /// (`arm_dsp`'s `smmlar_requant!`, which reads the raw multipliers and shifts): this form's,
    /// and also a shift of -1. That epilogue computes `((h - s) >> (e - 1) + 1 + 2 z) >> 1`,
    /// which is TFLite's `RoundingDivideByPOT(h, e) + z` for every `e >= 1` (with `e = 1` the
    /// shift by `e - 1` is by 0); only this form's portable [`Self::apply`] needs `e >= 2` (its
    /// rounding term `2^(e-2)`). Shifts of -1 come with effective scales in `[0.5, 1)`, common
    /// with int4 weights (16 times coarser scales).
    #[cfg_attr(not(mq_dsp), allow(dead_code))]
    pub(crate) fn all_valid_smmlar(multiplier: &[i32], shift: &[i32]) -> bool {
        multiplier.len() == shift.len()
            && (Self::all_common(multiplier, shift)
                || multiplier.iter().zip(shift).all(|(&m, &s)| (m >= 0 && s == -1) || Self::new(m, s).is_some()))
    }

    /// Whether every channel has a multiplier `>= 0` and a shift in `[-31, -2]` (all of this form),
    /// with sign bits only: those of every `m` and `s + 31` (set for `s < -31`) OR-ed must be
    /// clear, those of every `s + 1` (clear for `s > -2`) AND-ed set; the sums wrap, and a
    /// wrapped one fails the other test. No branch but the loop's; on the Arm DSP path 4
    /// channels per iteration in `asm!` (`LDM`, about 6 instructions per channel).
    #[inline(always)]
    fn all_common(multiplier: &[i32], shift: &[i32]) -> bool {
        #[cfg(mq_dsp)]
        let (bad, good) = super::arm_dsp::right_shift_scan(multiplier, shift);
        #[cfg(not(mq_dsp))]
        let (bad, good) = multiplier
            .iter()
            .zip(shift)
            .fold((0i32, -1i32), |(bad, good), (&m, &s)| (bad | m | s.wrapping_add(31), good & s.wrapping_add(1)));
        bad >= 0 && good < 0
    }

    /// `multiply_by_quantized_multiplier(acc, multiplier, shift)`, in portable 64-bit arithmetic
    /// (the property tests' form; `arm_dsp` computes it with `SMLAL`).
    #[inline(always)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn apply(self, acc: i32) -> i32 {
        let half = if acc < 0 { -(1i64 << 30) } else { 1i64 << 30 };
        let hi = ((acc as i64 * self.multiplier as i64 + half) >> 32) as i32;
        hi.wrapping_add(self.round) >> (self.shift & 31)
    }
}

/// One input's rescaling in int8 ADD: `multiply_by_quantized_multiplier((x + offset) << 20, m,
/// shift)` for `m >= 0` and `shift` in `[-31, 0]`, in 32-bit arithmetic only. With `v = x +
/// offset` in `[-255, 255]` and `m = mh * 2^11 + ml`: `SaturatingRoundingDoublingHighMul(v *
/// 2^20, m) = floor((v * m + 2^10) / 2^11) = v * mh + ((v * ml + 2^10) >> 11)` (the common
/// factor `2^20` cancels out of TFLite's `(a * m + 2^30) / 2^31`; `|v * mh| < 2^28`, `|v * ml| <
/// 2^19`), then `RoundingDivideByPOT` as `(h + 2^(e-1) - [h < 0]) >> e` (`e = -shift`; `h` for
/// `e = 0`).
#[derive(Clone, Copy)]
pub(crate) struct AddInputScale {
    pub(super) offset: i32,
    pub(super) mh: i32,
    pub(super) ml: i32,
    pub(super) half: i32,
    pub(super) neg: i32,
    pub(super) e: u32,
}

impl AddInputScale {
    /// The prepared form, or `None` outside its domain.
    pub(crate) fn new(offset: i32, multiplier: i32, shift: i32) -> Option<Self> {
        if multiplier < 0 || !(-31..=0).contains(&shift) || !(-255..=255).contains(&offset) {
            return None;
        }
        let e = shift.unsigned_abs();
        let (half, neg) = if e == 0 { (0, 0) } else { (1 << (e - 1), 1) };
        Some(Self { offset, mh: multiplier >> 11, ml: multiplier & 0x7ff, half, neg, e })
    }

    /// The rescaled value of `x`.
    #[inline(always)]
    pub(crate) fn apply(&self, x: i8) -> i32 {
        let v = x as i32 + self.offset;
        let h = v * self.mh + ((v * self.ml + 1024) >> 11);
        (h + self.half - (((h as u32) >> 31) as i32 & self.neg)) >> (self.e & 31)
    }
}

/// `multiply_by_quantized_multiplier` through [`ChannelRequant`] when `(multiplier, shift)` is
/// within its contract, else the library function: the same result either way.
#[inline(always)]
pub(crate) fn requantize(acc: i32, multiplier: i32, shift: i32) -> i32 {
    match ChannelRequant::new(multiplier, shift) {
        Some(r) => r.apply(acc),
        None => requant::multiply_by_quantized_multiplier(acc, multiplier, shift),
    }
}

/// How a fully connected fast path scales its accumulators: fixed point (TFLite Micro's double
/// rounding; one multiplier and shift, or one per output channel), through [`requantize`]; or any
/// other rule (the TFLite interpreter's single rounding), through the kernel's own function.
#[cfg_attr(not(any(mq_dsp, mq_wasm_simd)), allow(dead_code))]
pub(crate) enum OutputScale<'a> {
    /// Q31 multipliers and shifts: one (per-tensor) or one per output channel.
    Fixed {
        /// Multipliers.
        multiplier: &'a [i32],
        /// Shifts.
        shift: &'a [i32],
        /// Whether every pair is within [`ChannelRequant`]'s contract ([`ChannelRequant::all_valid`]).
        valid: bool,
    },
    /// `f(channel, acc)`.
    Other(&'a dyn Fn(usize, i32) -> i32),
}

#[cfg_attr(not(any(mq_dsp, mq_wasm_simd)), allow(dead_code))]
impl OutputScale<'_> {
    /// `clamp(scale(channel, acc) + output_offset)` as int8.
    #[inline(always)]
    pub(crate) fn output_s8(&self, channel: usize, acc: i32, output_offset: i32, act: ActivationRange) -> i8 {
        let v = match *self {
            OutputScale::Fixed { multiplier, shift, valid, .. } => {
                let i = if multiplier.len() == 1 { 0 } else { channel };
                match (multiplier.get(i), shift.get(i)) {
                    (Some(&m), Some(&s)) if valid => ChannelRequant::new_valid(m, s).apply(acc),
                    (Some(&m), Some(&s)) => requant::multiply_by_quantized_multiplier(acc, m, s),
                    _ => 0, // unreachable: lengths validated by the kernel
                }
            }
            OutputScale::Other(f) => f(channel, acc),
        };
        act.apply(v.wrapping_add(output_offset)) as i8
    }

    /// For a validated fixed-point scale: the 4 channels `c..c + 4` requantized, plus
    /// `output_offset` (before the clamp); `None` for the other forms.
    #[inline(always)]
    #[cfg_attr(not(mq_dsp), allow(dead_code))]
    pub(crate) fn fixed_s8_x4(&self, c: usize, acc: [i32; 4], output_offset: i32) -> Option<[i32; 4]> {
        let OutputScale::Fixed { multiplier, shift, valid: true, .. } = *self else { return None };
        let one = multiplier.len() == 1;
        let pick = |s: &[i32], j: usize| if one { s.first() } else { s.get(c + j) }.copied();
        let mut r = [0i32; 4];
        for (j, (r, a)) in r.iter_mut().zip(acc).enumerate() {
            let (Some(m), Some(s)) = (pick(multiplier, j), pick(shift, j)) else { return None };
            *r = ChannelRequant::new_valid(m, s).apply(a).wrapping_add(output_offset);
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{ChannelRequant, RightShiftRequant};
    use crate::requant::multiply_by_quantized_multiplier;
    use proptest::prelude::*;

    fn extreme() -> impl Strategy<Value = i32> {
        prop_oneof![
            any::<i32>(),
            Just(i32::MIN),
            Just(i32::MAX),
            Just(0),
            Just(-1),
            Just(1),
            (-(1i32 << 16)..(1 << 16)),
            (i32::MIN..i32::MIN + 1000),
            (i32::MAX - 1000..=i32::MAX),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_support::cases(20_000)))]

        /// The prepared requantizer is the library function, for any accumulator, multiplier
        /// (including 0, negative and `i32::MIN`) and shift in [-31, 30], including left shifts
        /// where `acc * 2^shift` overflows i32 and both wrap (as TFLite Micro and CMSIS-NN do).
        #[test]
        fn channel_requant_is_multiply_by_quantized_multiplier(
            acc in extreme(), m in extreme(), shift in -31i32..=30,
        ) {
            prop_assert_eq!(super::requantize(acc, m, shift), multiply_by_quantized_multiplier(acc, m, shift));
            if m != i32::MIN {
                prop_assert_eq!(ChannelRequant::new(m, shift).map(|r| r.apply(acc)), Some(multiply_by_quantized_multiplier(acc, m, shift)));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_support::cases(20_000)))]

        /// The right-shift form is the library function for every accumulator, any multiplier
        /// `>= 0` and every shift in `[-31, -2]` (right shifts: no contract on the accumulator),
        /// and for a zero multiplier with any shift.
        #[test]
        fn right_shift_requant_is_multiply_by_quantized_multiplier(
            acc in extreme(), m in extreme(), shift in -31i32..=-2, any_shift in -31i32..=30,
        ) {
            let m = if m == i32::MIN { i32::MAX } else { m.abs() };
            let r = RightShiftRequant::new(m, shift).map(|r| r.apply(acc));
            prop_assert_eq!(r, Some(multiply_by_quantized_multiplier(acc, m, shift)));
            let r0 = RightShiftRequant::new(0, any_shift).map(|r| r.apply(acc));
            prop_assert_eq!(r0, Some(multiply_by_quantized_multiplier(acc, 0, any_shift)));
        }
    }

    #[test]
    fn right_shift_requant_domain_and_corners() {
        assert!(RightShiftRequant::new(1 << 30, -1).is_none());
        assert!(RightShiftRequant::new(1 << 30, 0).is_none());
        assert!(RightShiftRequant::new(-5, -4).is_none());
        for &acc in &[i32::MIN, i32::MIN + 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, i32::MAX - 1, i32::MAX] {
            for &m in &[0, 1, 1 << 30, (1 << 30) + 1, i32::MAX - 1, i32::MAX] {
                for shift in -31..=-2 {
                    let r = RightShiftRequant::new(m, shift).map(|r| r.apply(acc));
                    assert_eq!(
                        r,
                        Some(multiply_by_quantized_multiplier(acc, m, shift)),
                        "acc {acc} m {m} shift {shift}"
                    );
                }
            }
        }
    }

    #[test]
    fn channel_requant_corners() {
        for &acc in &[i32::MIN, i32::MIN + 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, i32::MAX - 1, i32::MAX] {
            for &m in &[i32::MIN, i32::MIN + 1, -1, 0, 1, 1 << 30, (1 << 30) + 1, i32::MAX - 1, i32::MAX] {
                for shift in -31..=30 {
                    assert_eq!(
                        super::requantize(acc, m, shift),
                        multiply_by_quantized_multiplier(acc, m, shift),
                        "acc {acc} m {m} shift {shift}"
                    );
                }
            }
        }
    }
}
