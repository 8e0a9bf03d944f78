//! What the convolution, fully connected and pooling kernels share: window geometry (padding
//! and output sizes, as TFLite's `padding.h`), fused activations as output clamps (TFLite's
//! `CalculateActivationRangeQuantized`), per-channel multipliers from float scales (TFLite's
//! `PopulateConvolutionQuantizationParams`) and the accumulator types of the 16x8 kernels.
//!
//! Everything here is prepare-time work: plain functions of shapes and scales, usable on the
//! host and on the device, never allocating.

use crate::Error;
use crate::kernels::ActivationRange;
pub use crate::kernels::params::{Hw, Padding, PaddingValues};
use crate::requant;

/// Output size and resolved padding of a windowed op, as TFLite's Prepare computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Window {
    /// Output height and width.
    pub output: Hw,
    /// Padding on each side.
    pub padding: PaddingValues,
}

fn bad_window(reason: &'static str) -> Error {
    Error::BadKernelArgument { kernel: "compute_window", reason }
}

/// One axis of TFLite's `ComputePaddingHeightWidth` (or of explicit padding): output size,
/// padding before, padding after.
fn window_axis(
    padding: Padding,
    vertical: bool,
    input: usize,
    filter: usize,
    stride: usize,
    dilation: usize,
) -> Result<(usize, usize, usize), Error> {
    if filter == 0 || stride == 0 || dilation == 0 {
        return Err(bad_window("filter size, stride and dilation must be >= 1"));
    }
    // i128: every operand is at most usize::MAX, so no product below overflows.
    let (input, filter, stride, dilation) = (input as i128, filter as i128, stride as i128, dilation as i128);
    let effective = (filter - 1) * dilation + 1;
    let narrow = |v: i128| usize::try_from(v).map_err(|_| bad_window("size does not fit usize"));
    match padding {
        Padding::Same | Padding::Valid => {
            let out = if padding == Padding::Same {
                (input + stride - 1) / stride
            } else {
                (input + stride - effective) / stride
            };
            if out < 0 {
                return Err(bad_window("filter larger than the input for VALID padding"));
            }
            // TFLite: total = max(0, (out - 1) * stride + effective - in), split with the odd
            // one after.
            let total = ((out - 1) * stride + effective - input).max(0);
            let before = total / 2;
            Ok((narrow(out)?, narrow(before)?, narrow(before + total % 2)?))
        }
        Padding::Explicit(p) => {
            let (before, after) = if vertical { (p.top, p.bottom) } else { (p.left, p.right) };
            let padded = input + before as i128 + after as i128;
            let out = (padded + stride - effective) / stride;
            if padded + stride - effective < 0 {
                return Err(bad_window("filter larger than the padded input"));
            }
            Ok((narrow(out)?, before, after))
        }
    }
}

/// Output size and padding of a conv, depthwise conv or pooling window, as TFLite's
/// `ComputePaddingHeightWidth` (`tensorflow/lite/kernels/padding.h`): `SAME` gives
/// `ceil(in / stride)` outputs and pads `max(0, (out - 1) * stride + dilated_filter - in)` in
/// total, half before and the odd one after; `VALID` gives `floor((in - dilated_filter) / stride)
/// + 1` outputs (0 when the filter is at most a stride larger than the input); explicit padding
/// gives `floor((in + before + after - dilated_filter) / stride) + 1`. Pooling uses dilation 1.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a filter size, stride or dilation is 0, or the filter does
/// not fit the (padded) input.
pub fn compute_window(padding: Padding, input: Hw, filter: Hw, stride: Hw, dilation: Hw) -> Result<Window, Error> {
    let (oh, top, bottom) = window_axis(padding, true, input.h, filter.h, stride.h, dilation.h)?;
    let (ow, left, right) = window_axis(padding, false, input.w, filter.w, stride.w, dilation.w)?;
    Ok(Window { output: Hw::new(oh, ow), padding: PaddingValues { top, bottom, left, right } })
}

/// Kernel-side check of one axis: `output == floor((input + before + after - effective) / stride) + 1`
/// (the size [`compute_window`] gives), with every size bounded so the kernels' index arithmetic
/// cannot overflow.
pub(crate) fn check_window_axis(
    input: usize,
    before: usize,
    after: usize,
    filter: usize,
    stride: usize,
    dilation: usize,
    output: usize,
) -> bool {
    if filter == 0 || stride == 0 || dilation == 0 {
        return false;
    }
    let Some(effective) = (filter - 1).checked_mul(dilation).and_then(|v| v.checked_add(1)) else { return false };
    let Some(padded) = input.checked_add(before).and_then(|v| v.checked_add(after)) else { return false };
    // Every padded coordinate the kernels compute is below padded + stride (+ effective when
    // the output is empty); keep that far from overflowing isize.
    if padded.checked_add(stride).and_then(|v| v.checked_add(effective)).is_none_or(|v| v > isize::MAX as usize) {
        return false;
    }
    match (padded + stride).checked_sub(effective) {
        Some(v) => v.checked_div(stride) == Some(output),
        None => false,
    }
}

/// A fused activation function of an op (TFLite's `TfLiteFusedActivation`), applied as a clamp of
/// the output: the same type in the graph (`graph::FusedActivation`) and in the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FusedActivation {
    /// No activation: clamp to the output type's range only.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, -1), 1)`.
    ReluN1To1,
    /// `min(max(x, 0), 6)`.
    Relu6,
}

impl FusedActivation {
    /// The float range the activation clamps to (`None` for no activation).
    pub fn float_range(self) -> Option<(f32, f32)> {
        match self {
            FusedActivation::None => None,
            FusedActivation::Relu => Some((0.0, f32::INFINITY)),
            FusedActivation::Relu6 => Some((0.0, 6.0)),
            FusedActivation::ReluN1To1 => Some((-1.0, 1.0)),
        }
    }
}

/// TFLite's `Quantize` inside `CalculateActivationRangeQuantized`: `zero_point +
/// (int)round(f / scale)`, the division and the rounding (half away from zero) in `float`.
fn quantize_activation_bound(scale: f32, zero_point: i32, f: f32) -> Result<i32, Error> {
    let tmp = libm::roundf(f / scale);
    if !(tmp >= i32::MIN as f32 && tmp <= i32::MAX as f32) {
        return Err(Error::BadKernelArgument {
            kernel: "ActivationRange::from_fused",
            reason: "activation bound does not fit int32 at this output scale",
        });
    }
    zero_point.checked_add(tmp as i32).ok_or(Error::BadKernelArgument {
        kernel: "ActivationRange::from_fused",
        reason: "activation bound does not fit int32 at this output scale",
    })
}

impl ActivationRange {
    /// The output clamp of a fused activation, as TFLite's `CalculateActivationRangeQuantized`
    /// (`tensorflow/lite/kernels/kernel_util.cc`): the real bounds 0, 6, -1, 1 are quantized with
    /// the output's scale and zero point (in `float`, rounding half away from zero) and
    /// intersected with `dtype` (the output type's own range, [`ActivationRange::INT8`] or
    /// [`ActivationRange::INT16`]).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] unless `output_scale` is finite and > 0;
    /// [`Error::ZeroPointOutOfRange`] when the zero point is outside `dtype`;
    /// [`Error::BadKernelArgument`] when a bound does not fit an `i32`.
    pub fn from_fused(
        activation: FusedActivation,
        output_scale: f32,
        output_zero_point: i32,
        dtype: ActivationRange,
    ) -> Result<Self, Error> {
        if !(output_scale.is_finite() && output_scale > 0.0) {
            return Err(Error::InvalidScale);
        }
        if output_zero_point < dtype.min || output_zero_point > dtype.max {
            return Err(Error::ZeroPointOutOfRange { zero_point: output_zero_point, min: dtype.min, max: dtype.max });
        }
        let q = |f: f32| quantize_activation_bound(output_scale, output_zero_point, f);
        let (min, max) = match activation {
            FusedActivation::None => (dtype.min, dtype.max),
            FusedActivation::Relu => (dtype.min.max(q(0.0)?), dtype.max),
            FusedActivation::Relu6 => (dtype.min.max(q(0.0)?), dtype.max.min(q(6.0)?)),
            FusedActivation::ReluN1To1 => (dtype.min.max(q(-1.0)?), dtype.max.min(q(1.0)?)),
        };
        Ok(ActivationRange { min, max })
    }

    /// True when `min <= max` and both lie in `dtype`.
    pub(crate) fn is_within(&self, dtype: ActivationRange) -> bool {
        self.min <= self.max && self.min >= dtype.min && self.max <= dtype.max
    }
}

fn check_scale(scale: f32, allow_zero: bool) -> Result<(), Error> {
    if scale.is_finite() && (scale > 0.0 || (allow_zero && scale == 0.0)) { Ok(()) } else { Err(Error::InvalidScale) }
}

/// The fixed-point form of one real multiplier, refusing multipliers whose shift leaves TFLite's
/// contract (`>= 2^30`, shift above 30).
pub(crate) fn fixed_multiplier(real: f64, kernel: &'static str) -> Result<requant::QuantizedMultiplier, Error> {
    let q = requant::quantize_multiplier(real);
    if q.shift > 30 {
        return Err(Error::BadKernelArgument { kernel, reason: "effective scale >= 2^30 (shift above 30)" });
    }
    Ok(q)
}

/// Per-output-channel multipliers and shifts of a conv, depthwise conv or per-channel fully
/// connected layer, as TFLite's `PopulateConvolutionQuantizationParams`: for each channel,
/// `effective = (double)input_scale * (double)filter_scale / (double)output_scale`, then
/// [`requant::quantize_multiplier`]. One filter scale (per-tensor weights) is broadcast to every
/// channel, as TFLite does.
///
/// `multiplier` and `shift` have one entry per output channel; `filter_scales` has one entry or
/// as many as they do. A filter scale may be 0 (a dead channel: multiplier 0, output = zero
/// point).
///
/// # Errors
/// [`Error::LengthMismatch`] on mismatched lengths; [`Error::InvalidScale`] for a scale that is
/// not finite and > 0 (filter scales: >= 0); [`Error::BadKernelArgument`] for an effective scale
/// of 2^30 or more.
pub fn per_channel_multipliers(
    input_scale: f32,
    filter_scales: &[f32],
    output_scale: f32,
    multiplier: &mut [i32],
    shift: &mut [i32],
) -> Result<(), Error> {
    if shift.len() != multiplier.len() {
        return Err(Error::LengthMismatch { expected: multiplier.len(), actual: shift.len() });
    }
    if filter_scales.len() != 1 && filter_scales.len() != multiplier.len() {
        return Err(Error::LengthMismatch { expected: multiplier.len(), actual: filter_scales.len() });
    }
    check_scale(input_scale, false)?;
    check_scale(output_scale, false)?;
    for &s in filter_scales {
        check_scale(s, true)?;
    }
    for (i, (m, sh)) in multiplier.iter_mut().zip(shift.iter_mut()).enumerate() {
        let fs = if filter_scales.len() == 1 { filter_scales.first() } else { filter_scales.get(i) };
        let fs = fs.copied().unwrap_or(0.0);
        let effective = input_scale as f64 * fs as f64 / output_scale as f64;
        let q = fixed_multiplier(effective, "per_channel_multipliers")?;
        *m = q.multiplier;
        *sh = q.shift;
    }
    Ok(())
}

/// Validates scales for a prepare function (`pub(crate)` for fully connected).
pub(crate) fn check_scales(input_scale: f32, filter_scales: &[f32], output_scale: f32) -> Result<(), Error> {
    check_scale(input_scale, false)?;
    check_scale(output_scale, false)?;
    filter_scales.iter().try_for_each(|&s| check_scale(s, true))
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
    impl Sealed for i8 {}
    impl Sealed for i16 {}
}

/// The accumulator of an integer kernel, which is also its bias type: `i32` for the int8
/// kernels; `i64` (TFLite's default) or `i32` for the 16x8 kernels. TFLite Micro chooses by the
/// bias type and requantizes differently for each:
///
/// | accumulator | sum | requantization (fixed point) |
/// |---|---|---|
/// | `i32` | wrapping 32-bit | [`requant::multiply_by_quantized_multiplier`] (Q31, double rounding) |
/// | `i64` | 64-bit | [`requant::multiply_by_quantized_multiplier_i64`] (multiplier reduced to Q15, one rounding) |
///
/// Sealed: implemented for `i32` and `i64` only.
pub trait Accumulator: Copy + sealed::Sealed {
    /// Zero.
    const ZERO: Self;
    /// `self + product` (the product of a weight and an offset input, computed in 32 bits as
    /// TFLite does), wrapping like TFLite's two's-complement arithmetic.
    fn add_product(self, product: i32) -> Self;
    /// `self + bias`, wrapping.
    fn add_bias(self, bias: Self) -> Self;
    /// TFLite's fixed-point `MultiplyByQuantizedMultiplier` overload for this accumulator.
    fn requantize(self, multiplier: i32, shift: i32) -> i32;
    /// The value as an `i64`.
    fn to_i64(self) -> i64;
}

impl Accumulator for i32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn add_product(self, product: i32) -> Self {
        self.wrapping_add(product)
    }
    #[inline(always)]
    fn add_bias(self, bias: Self) -> Self {
        self.wrapping_add(bias)
    }
    #[inline(always)]
    fn requantize(self, multiplier: i32, shift: i32) -> i32 {
        requant::multiply_by_quantized_multiplier(self, multiplier, shift)
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl Accumulator for i64 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn add_product(self, product: i32) -> Self {
        self.wrapping_add(product as i64)
    }
    #[inline(always)]
    fn add_bias(self, bias: Self) -> Self {
        self.wrapping_add(bias)
    }
    /// TFLite documents shifts up to 7 for this overload, but its code computes
    /// `(x · m15 + 2^(14 - shift)) >> (15 - shift)` for larger ones too (TFLite Micro runs 16x8
    /// layers with multipliers above 128 that way), and so does this: for `shift > 7` it uses
    /// the identity `floor((x·m15 + 2^(14-s)) / 2^(15-s)) = floor((x·2^(s-7)·m15 + 2^7) / 2^8)`,
    /// i.e. the shift-7 form on `x · 2^(s-7)` (exact while that stays within ±2^47, which it does
    /// whenever the result fits an `i32`).
    #[inline(always)]
    fn requantize(self, multiplier: i32, shift: i32) -> i32 {
        if shift > 7 {
            let scaled = self.wrapping_shl((shift - 7) as u32);
            requant::multiply_by_quantized_multiplier_i64(scaled, multiplier, 7)
        } else {
            requant::multiply_by_quantized_multiplier_i64(self, multiplier, shift)
        }
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self
    }
}

/// An activation element type of the kernels: `i8` or `i16`. Sealed.
pub trait ActivationElement: Copy + sealed::Sealed {
    /// The type's full range, as an activation clamp.
    const RANGE: ActivationRange;
    /// Widens to `i32`.
    fn to_i32(self) -> i32;
    /// Narrows an `i32` already clamped to [`ActivationElement::RANGE`].
    fn from_clamped(x: i32) -> Self;
}

impl ActivationElement for i8 {
    const RANGE: ActivationRange = ActivationRange::INT8;
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn from_clamped(x: i32) -> Self {
        x as i8
    }
}

impl ActivationElement for i16 {
    const RANGE: ActivationRange = ActivationRange::INT16;
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn from_clamped(x: i32) -> Self {
        x as i16
    }
}

/// Checks `len == dims` product, for a kernel's argument validation.
pub(crate) fn check_len(
    kernel: &'static str,
    reason: &'static str,
    len: usize,
    expected: Option<usize>,
) -> Result<(), Error> {
    if expected == Some(len) { Ok(()) } else { Err(Error::BadKernelArgument { kernel, reason }) }
}

/// `Err(BadKernelArgument)` unless `ok`.
#[inline]
pub(crate) fn ensure(ok: bool, kernel: &'static str, reason: &'static str) -> Result<(), Error> {
    if ok { Ok(()) } else { Err(Error::BadKernelArgument { kernel, reason }) }
}

/// Offsets of an int8 kernel: `input_offset = -zero_point` in [-127, 128], `output_offset` in
/// [-128, 127]; of a 16x8 kernel: both 0 (TFLite's 16x8 spec has zero points 0).
pub(crate) fn check_offsets<T: ActivationElement>(
    kernel: &'static str,
    input_offset: i32,
    output_offset: i32,
) -> Result<(), Error> {
    let r = T::RANGE;
    if r == ActivationRange::INT8 {
        ensure((-r.max..=-r.min).contains(&input_offset), kernel, "input_offset outside [-127, 128]")?;
        ensure((r.min..=r.max).contains(&output_offset), kernel, "output_offset outside [-128, 127]")
    } else {
        ensure(input_offset == 0 && output_offset == 0, kernel, "16x8 kernels need zero points 0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(p: Padding, i: usize, f: usize, s: usize, d: usize) -> (usize, usize, usize) {
        window_axis(p, true, i, f, s, d).unwrap()
    }

    #[test]
    fn same_padding_matches_tflite() {
        // in 5, k 3, s 1: out 5, total 2 -> 1 + 1.
        assert_eq!(axis(Padding::Same, 5, 3, 1, 1), (5, 1, 1));
        // in 6, k 3, s 2: out 3, total (3-1)*2 + 3 - 6 = 1 -> 0 before, 1 after (the odd one).
        assert_eq!(axis(Padding::Same, 6, 3, 2, 1), (3, 0, 1));
        // in 7, k 4, s 1: total 3 -> 1 before, 2 after.
        assert_eq!(axis(Padding::Same, 7, 4, 1, 1), (7, 1, 2));
        // Dilation 2 makes a 3-tap filter 5 wide: in 5, s 1: total 4 -> 2 + 2.
        assert_eq!(axis(Padding::Same, 5, 3, 1, 2), (5, 2, 2));
        // Stride larger than the filter: in 8, k 1, s 4: out 2, total max(0, 4 + 1 - 8) = 0.
        assert_eq!(axis(Padding::Same, 8, 1, 4, 1), (2, 0, 0));
        // 1x1 image, 3x3 filter, stride 2: out 1, total 2.
        assert_eq!(axis(Padding::Same, 1, 3, 2, 1), (1, 1, 1));
    }

    #[test]
    fn valid_padding_matches_tflite() {
        assert_eq!(axis(Padding::Valid, 5, 3, 1, 1), (3, 0, 0));
        assert_eq!(axis(Padding::Valid, 6, 3, 2, 1), (2, 0, 0));
        assert_eq!(axis(Padding::Valid, 7, 3, 2, 2), (2, 0, 0)); // effective 5: (7 + 2 - 5) / 2
        assert_eq!(axis(Padding::Valid, 3, 3, 1, 1), (1, 0, 0));
        // Filter one stride larger than the input: TFLite gives 0 outputs, not an error.
        assert_eq!(axis(Padding::Valid, 2, 3, 1, 1), (0, 0, 0));
        assert!(window_axis(Padding::Valid, true, 1, 3, 1, 1).is_err());
    }

    #[test]
    fn explicit_padding() {
        let p = Padding::Explicit(PaddingValues { top: 2, bottom: 1, left: 0, right: 3 });
        let w = compute_window(p, Hw::new(5, 4), Hw::new(3, 2), Hw::new(2, 1), Hw::square(1)).unwrap();
        // h: (5 + 3 - 3) / 2 + 1 = 3; w: (4 + 3 - 2) / 1 + 1 = 6.
        assert_eq!(w.output, Hw::new(3, 6));
        assert_eq!(w.padding, PaddingValues { top: 2, bottom: 1, left: 0, right: 3 });
        // Padding wider than the filter is allowed (windows entirely in the padding).
        let p = Padding::Explicit(PaddingValues { top: 4, bottom: 0, left: 0, right: 0 });
        assert_eq!(
            compute_window(p, Hw::new(1, 1), Hw::square(1), Hw::square(1), Hw::square(1)).unwrap().output,
            Hw::new(5, 1)
        );
    }

    #[test]
    fn window_errors() {
        let one = Hw::square(1);
        assert!(compute_window(Padding::Same, Hw::square(4), Hw::square(3), Hw::new(0, 1), one).is_err());
        assert!(compute_window(Padding::Same, Hw::square(4), Hw::square(3), one, Hw::new(1, 0)).is_err());
        assert!(compute_window(Padding::Same, Hw::square(4), Hw::new(0, 3), one, one).is_err());
        assert!(compute_window(Padding::Valid, Hw::square(4), Hw::square(9), one, one).is_err());
    }

    #[test]
    fn kernel_window_check_agrees_with_compute_window() {
        for padding in [Padding::Same, Padding::Valid] {
            for input in 0..12 {
                for filter in 1..5 {
                    for stride in 1..4 {
                        for dilation in 1..3 {
                            let Ok((out, before, after)) = window_axis(padding, true, input, filter, stride, dilation)
                            else {
                                continue;
                            };
                            assert!(
                                check_window_axis(input, before, after, filter, stride, dilation, out),
                                "{padding:?} in {input} k {filter} s {stride} d {dilation}"
                            );
                            assert!(!check_window_axis(input, before, after, filter, stride, dilation, out + 1));
                        }
                    }
                }
            }
        }
        assert!(!check_window_axis(usize::MAX, 1, 0, 1, 1, 1, 0));
        assert!(!check_window_axis(4, 0, 0, 1, 0, 1, 4));
    }

    #[test]
    fn activation_ranges_match_tflite() {
        let i8r = ActivationRange::INT8;
        let r = |a, s, z| ActivationRange::from_fused(a, s, z, i8r).unwrap();
        assert_eq!(r(FusedActivation::None, 0.1, 5), i8r);
        assert_eq!(r(FusedActivation::Relu, 0.1, 5), ActivationRange { min: 5, max: 127 });
        // 6 / 0.05 = 120 -> -128 + 120 = -8.
        assert_eq!(r(FusedActivation::Relu6, 0.05, -128), ActivationRange { min: -128, max: -8 });
        // Bound beyond the type: clamped to the type.
        assert_eq!(r(FusedActivation::Relu6, 0.01, 0), ActivationRange { min: 0, max: 127 });
        // 1 / 0.4 = 2.5 rounds away from zero: -3 and 3.
        assert_eq!(r(FusedActivation::ReluN1To1, 0.4, 0), ActivationRange { min: -3, max: 3 });
        let r16 =
            ActivationRange::from_fused(FusedActivation::Relu6, 6.0 / 32767.0, 0, ActivationRange::INT16).unwrap();
        assert_eq!(r16, ActivationRange { min: 0, max: 32767 });
        assert_eq!(ActivationRange::from_fused(FusedActivation::Relu, 0.0, 0, i8r), Err(Error::InvalidScale));
        assert_eq!(ActivationRange::from_fused(FusedActivation::Relu, f32::NAN, 0, i8r), Err(Error::InvalidScale));
        assert!(matches!(
            ActivationRange::from_fused(FusedActivation::Relu, 0.1, 200, i8r),
            Err(Error::ZeroPointOutOfRange { .. })
        ));
        assert!(ActivationRange::from_fused(FusedActivation::Relu6, 1e-30, 0, i8r).is_err());
    }

    #[test]
    fn per_channel_multipliers_follow_tflite() {
        let mut m = [0i32; 3];
        let mut s = [0i32; 3];
        per_channel_multipliers(0.5, &[0.25, 1.0, 0.0], 0.125, &mut m, &mut s).unwrap();
        // 0.5 * 0.25 / 0.125 = 1.0 = 2^30 * 2^1 / 2^31; 0.5 * 1 / 0.125 = 4; 0 -> (0, 0).
        assert_eq!((m, s), ([1 << 30, 1 << 30, 0], [1, 3, 0]));
        // Broadcast of a per-tensor scale.
        per_channel_multipliers(0.5, &[0.25], 0.125, &mut m, &mut s).unwrap();
        assert_eq!((m, s), ([1 << 30; 3], [1; 3]));
        // The product is taken in double: 0.1f32 * 0.3f32 / 0.7f32 as doubles.
        let mut m1 = [0i32; 1];
        let mut s1 = [0i32; 1];
        per_channel_multipliers(0.1, &[0.3], 0.7, &mut m1, &mut s1).unwrap();
        let q = requant::quantize_multiplier(0.1f32 as f64 * 0.3f32 as f64 / 0.7f32 as f64);
        assert_eq!((m1[0], s1[0]), (q.multiplier, q.shift));
        assert!(matches!(
            per_channel_multipliers(0.5, &[0.25, 1.0], 0.125, &mut m, &mut s),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(matches!(
            per_channel_multipliers(0.5, &[0.25], 0.125, &mut m, &mut s[..2]),
            Err(Error::LengthMismatch { .. })
        ));
        assert_eq!(per_channel_multipliers(-0.5, &[0.25], 0.125, &mut m, &mut s), Err(Error::InvalidScale));
        assert_eq!(per_channel_multipliers(0.5, &[-0.25], 0.125, &mut m, &mut s), Err(Error::InvalidScale));
        assert_eq!(per_channel_multipliers(0.5, &[0.25], f32::INFINITY, &mut m, &mut s), Err(Error::InvalidScale));
        // Effective scale 2^31: shift 32 breaks the contract.
        assert!(matches!(
            per_channel_multipliers(1.0, &[1.0], 1.0 / 2147483648.0, &mut m, &mut s),
            Err(Error::BadKernelArgument { .. })
        ));
    }

    #[test]
    fn accumulators() {
        assert_eq!(i32::MAX.add_product(1), i32::MIN);
        assert_eq!((1i64 << 40).add_product(-1), (1i64 << 40) - 1);
        let q = requant::quantize_multiplier(0.25);
        assert_eq!(1000i32.requantize(q.multiplier, q.shift), 250);
        assert_eq!(1000i64.requantize(q.multiplier, q.shift), 250);
        // Shifts above 7 (multipliers >= 128): TFLite's formula (x·m15 + 2^(14-s)) >> (15-s),
        // written out in i128.
        for real in [200.0f64, 397.1, 1819.35, 12345.6] {
            let q = requant::quantize_multiplier(real);
            assert!(q.shift > 7);
            let m15 = ((q.multiplier as i128) + (1 << 15)) >> 16;
            for x in [-70_000i64, -3, -1, 0, 1, 2, 5, 99, 1234] {
                let t = 15 - q.shift;
                let want = ((x as i128 * m15 + (1i128 << (t - 1))) >> t) as i32;
                assert_eq!(x.requantize(q.multiplier, q.shift), want, "x {x} real {real}");
            }
        }
    }
}
