//! Max pooling and average pooling, int8 and int16.
//!
//! Input `[n, h, w, c]` (NHWC), output `[n, oh, ow, c]`, with the same scale and zero point (TFLite
//! requires it, so no requantization happens). Each output reduces the part of its
//! `filter.h x filter.w` window that lies inside the image: padded pixels are skipped, not read
//! as zero, and the average divides by the number of pixels actually inside, rounding half away
//! from zero (TFLite's `(sum ± count / 2) / count`). The result is clamped to the fused
//! activation's range.
//!
//! # Rounding
//! No requantization, so no rounding mode: TFLite Micro and the TFLite interpreter run the same
//! `reference_integer_ops::{MaxPool, AveragePool}`, and these kernels match both bit for bit.
//!
//! # Scratch
//! None.
//!
//! # Prepare
//! [`compute_window`](crate::kernels::common::compute_window) with dilation 1 gives the output
//! size and padding; [`ActivationRange::from_fused`] the clamp (from the output's scale and zero
//! point).
//!
//! [`ActivationRange::from_fused`]: crate::kernels::ActivationRange::from_fused

use crate::Error;
use crate::kernels::common::{ActivationElement, check_len, check_window_axis, ensure};
pub use crate::kernels::params::PoolParams;
use crate::kernels::window::{average, for_each_window};

fn validate<X: ActivationElement>(
    kernel: &'static str,
    p: &PoolParams,
    input: &[X],
    output: &[X],
) -> Result<(), Error> {
    ensure(
        p.stride.h >= 1 && p.stride.w >= 1 && p.filter.h >= 1 && p.filter.w >= 1,
        kernel,
        "window size and strides must be >= 1",
    )?;
    ensure(
        check_window_axis(p.input.h, p.padding.top, p.padding.bottom, p.filter.h, p.stride.h, 1, p.output.h),
        kernel,
        "output height does not match input, window, stride and padding",
    )?;
    ensure(
        check_window_axis(p.input.w, p.padding.left, p.padding.right, p.filter.w, p.stride.w, 1, p.output.w),
        kernel,
        "output width does not match input, window, stride and padding",
    )?;
    ensure(p.input.n == p.output.n && p.input.c == p.output.c, kernel, "input and output batch or channels differ")?;
    ensure(p.activation.is_within(X::RANGE), kernel, "activation range empty or outside the data type")?;
    check_len(kernel, "input length != input dims", input.len(), p.input.checked_len())?;
    check_len(kernel, "output length != output dims", output.len(), p.output.checked_len())?;
    // Windows move monotonically, so if the first and the last window of each axis overlap the
    // image, all do (TFLite's AveragePool fails on an empty window; MaxPool would output the
    // type's minimum).
    if p.output.h > 0 && p.output.w > 0 && p.input.h > 0 && p.input.w > 0 {
        let overlaps = |out: usize, stride: usize, filter: usize, before: usize, size: usize| {
            filter > before && (out - 1) * stride < before + size
        };
        ensure(
            overlaps(p.output.h, p.stride.h, p.filter.h, p.padding.top, p.input.h)
                && overlaps(p.output.w, p.stride.w, p.filter.w, p.padding.left, p.input.w),
            kernel,
            "a pooling window lies entirely in the padding",
        )?;
    } else {
        ensure(p.output.checked_len() == Some(0), kernel, "a pooling window lies entirely in the padding")?;
    }
    Ok(())
}

/// The reference loop of both pooling kernels: TFLite's `reference_integer_ops::MaxPool`
/// (`AVG = false`: the maximum, starting at the type's lowest value) and `AveragePool` (`AVG =
/// true`: the sum in int32, then `(sum ± count / 2) / count` with C's truncating division).
fn pool_reference<X: ActivationElement, const AVG: bool>(p: &PoolParams, input: &[X], output: &mut [X]) {
    let (w, c) = (p.input.w, p.input.c.max(1));
    for_each_window(p, input, output, |in_b, out_px, (y0, y1), (x0, x1)| {
        for (ch, out) in out_px.iter_mut().enumerate() {
            let mut acc = if AVG { 0 } else { X::RANGE.min };
            for y in y0..y1 {
                for x in x0..x1 {
                    if let Some(v) = in_b.get((y * w + x) * c + ch) {
                        acc = if AVG { acc.wrapping_add(v.to_i32()) } else { acc.max(v.to_i32()) };
                    }
                }
            }
            if AVG {
                acc = average(acc, ((y1 - y0) * (x1 - x0)) as i32);
            }
            *out = X::from_clamped(p.activation.apply(acc));
        }
    });
}

/// The one dispatch point of max pooling: on every target with fast paths (Arm DSP, wasm SIMD,
/// portable) the channels-inner loop of `arch::pool` (same maxima, read in memory order; it
/// vectorizes where the target has vectors); with `force-reference`, the reference.
#[inline]
fn max_pool_dispatch<X: ActivationElement>(p: &PoolParams, input: &[X], output: &mut [X]) {
    #[cfg(any(mq_dsp, mq_wasm_simd, mq_portable))]
    crate::kernels::arch::pool::pool_channels_inner::<X, false>(p, input, output);
    #[cfg(not(any(mq_dsp, mq_wasm_simd, mq_portable)))]
    pool_reference::<X, false>(p, input, output);
}

/// The one dispatch point of average pooling: as [`max_pool_dispatch`] (the same wrapping
/// int32 sums, in another order, and the same rounding).
#[inline]
fn avg_pool_dispatch<X: ActivationElement>(p: &PoolParams, input: &[X], output: &mut [X]) {
    #[cfg(any(mq_dsp, mq_wasm_simd, mq_portable))]
    crate::kernels::arch::pool::pool_channels_inner::<X, true>(p, input, output);
    #[cfg(not(any(mq_dsp, mq_wasm_simd, mq_portable)))]
    pool_reference::<X, true>(p, input, output);
}

/// [`avg_pool_s8`]'s reference kernel (TFLite's `AveragePool` as written), whatever the target:
/// the oracle of the fast path in tests. Not covered by semver.
///
/// # Errors
/// As [`avg_pool_s8`].
#[doc(hidden)]
pub fn avg_pool_s8_reference(params: &PoolParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    validate("avg_pool_s8", params, input, output)?;
    pool_reference::<i8, true>(params, input, output);
    Ok(())
}

/// [`max_pool_s8`]'s reference kernel (TFLite's `MaxPool` as written), whatever the target: the
/// oracle of the fast path in tests. Not covered by semver.
///
/// # Errors
/// As [`max_pool_s8`].
#[doc(hidden)]
pub fn max_pool_s8_reference(params: &PoolParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    validate("max_pool_s8", params, input, output)?;
    pool_reference::<i8, false>(params, input, output);
    Ok(())
}

/// int8 max pooling (TFLite `MAX_POOL_2D`, int8), bit-exact with TFLite Micro and the TFLite
/// interpreter. Constraints: shapes as [`PoolParams`] documents (output size consistent with
/// input, window, stride and padding; every window overlaps the image); clamp within int8.
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] when a slice length or a parameter breaks the constraints.
/// Never panics.
pub fn max_pool_s8(params: &PoolParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    validate("max_pool_s8", params, input, output)?;
    max_pool_dispatch(params, input, output);
    Ok(())
}

/// int16 max pooling: as [`max_pool_s8`] on int16 data (clamp within int16). Scratch: none.
///
/// # Errors
/// As [`max_pool_s8`].
pub fn max_pool_s16(params: &PoolParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    validate("max_pool_s16", params, input, output)?;
    max_pool_dispatch(params, input, output);
    Ok(())
}

/// int8 average pooling (TFLite `AVERAGE_POOL_2D`, int8), bit-exact with TFLite Micro and the
/// TFLite interpreter: the mean of the in-image pixels of each window, rounded half away from
/// zero, clamped. Constraints as [`max_pool_s8`]; the window area must stay below 2^23 pixels
/// for the int32 sum (TFLite's too) not to wrap. Scratch: none.
///
/// # Errors
/// As [`max_pool_s8`].
pub fn avg_pool_s8(params: &PoolParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    validate("avg_pool_s8", params, input, output)?;
    avg_pool_dispatch(params, input, output);
    Ok(())
}

/// int16 average pooling: as [`avg_pool_s8`] on int16 data (window area below 2^15 pixels for
/// the int32 sum). Scratch: none.
///
/// # Errors
/// As [`max_pool_s8`].
pub fn avg_pool_s16(params: &PoolParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    validate("avg_pool_s16", params, input, output)?;
    avg_pool_dispatch(params, input, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::{Hw, Padding, PaddingValues, compute_window};
    use crate::kernels::{ActivationRange, Dims4};

    fn params(input: Dims4, filter: Hw, stride: Hw, padding: Padding) -> PoolParams {
        let w = compute_window(padding, Hw::new(input.h, input.w), filter, stride, Hw::square(1)).unwrap();
        PoolParams {
            input,
            output: Dims4::new(input.n, w.output.h, w.output.w, input.c),
            filter,
            stride,
            padding: w.padding,
            activation: ActivationRange::INT8,
        }
    }

    #[test]
    fn average_counts_only_pixels_inside_and_rounds_away_from_zero() {
        // 2x2 image, 3x3 window, SAME: each window covers all 4 pixels.
        let p = params(Dims4::new(1, 2, 2, 1), Hw::square(3), Hw::square(1), Padding::Same);
        let mut out = [0i8; 4];
        avg_pool_s8(&p, &[1, 2, 3, 4], &mut out).unwrap(); // 10 / 4 = 2.5 -> 3
        assert_eq!(out, [3; 4]);
        avg_pool_s8(&p, &[-1, -2, -3, -4], &mut out).unwrap(); // -2.5 -> -3
        assert_eq!(out, [-3; 4]);
        avg_pool_s8(&p, &[-1, -2, -3, -3], &mut out).unwrap(); // -2.25 -> -2
        assert_eq!(out, [-2; 4]);
    }

    #[test]
    fn max_with_stride_and_clamp() {
        let mut p = params(Dims4::new(1, 2, 4, 1), Hw::square(2), Hw::square(2), Padding::Valid);
        let input = [1i8, 5, -3, -7, 2, 0, -4, -2];
        let mut out = [0i8; 2];
        max_pool_s8(&p, &input, &mut out).unwrap();
        assert_eq!(out, [5, -2]);
        p.activation = ActivationRange { min: 0, max: 3 };
        max_pool_s8(&p, &input, &mut out).unwrap();
        assert_eq!(out, [3, 0]);
        let mut out16 = [0i16; 2];
        let input16 = [1000i16, 5, -3, -7, 2, 0, -4000, -2];
        p.activation = ActivationRange::INT16;
        max_pool_s16(&p, &input16, &mut out16).unwrap();
        assert_eq!(out16, [1000, -2]);
    }

    #[test]
    fn rejects_bad_arguments() {
        let p = params(Dims4::new(1, 4, 4, 2), Hw::square(2), Hw::square(2), Padding::Valid);
        let (i, mut o) = ([0i8; 32], [0i8; 8]);
        assert!(avg_pool_s8(&p, &i, &mut o).is_ok());
        assert!(avg_pool_s8(&p, &i[..31], &mut o).is_err());
        assert!(avg_pool_s8(&p, &i, &mut o[..7]).is_err());
        assert!(avg_pool_s8(&PoolParams { output: Dims4::new(1, 2, 2, 1), ..p }, &i, &mut o[..4]).is_err());
        assert!(avg_pool_s8(&PoolParams { stride: Hw::new(1, 0), ..p }, &i, &mut o).is_err());
        assert!(avg_pool_s8(&PoolParams { activation: ActivationRange::INT16, ..p }, &i, &mut o).is_err());
        // A window entirely in the padding: 2 rows of padding above a 2x2 window.
        let pad = PaddingValues { top: 2, bottom: 0, left: 0, right: 0 };
        let w =
            compute_window(Padding::Explicit(pad), Hw::new(4, 4), Hw::square(2), Hw::square(2), Hw::square(1)).unwrap();
        let p2 = PoolParams { output: Dims4::new(1, w.output.h, w.output.w, 2), padding: pad, ..p };
        let mut o2 = [0i8; 24];
        assert!(avg_pool_s8(&p2, &i, &mut o2[..w.output.h * w.output.w * 2]).is_err());
        assert!(max_pool_s8(&p2, &i, &mut o2[..w.output.h * w.output.w * 2]).is_err());
    }
}
