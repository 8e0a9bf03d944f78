//! Reductions over any axes, int8 and int16: mean (TFLite `MEAN`; global average pooling is a
//! mean over H and W) and sum (TFLite `SUM`), as TFLite's `reference_ops::QuantizedMeanOrSum`,
//! and max (TFLite `REDUCE_MAX`, `reference_ops::ReduceGeneric` with `max`; input and output
//! share their quantization, as TFLite Micro requires).
//!
//! The int32 sum of each output's inputs is rescaled once:
//!
//! ```text
//! y = clamp(zp_out + MultiplyByQuantizedMultiplier(sum − zp_in · n, m'))
//! ```
//!
//! where `n` is the number of reduced elements and `m'` folds `1/n` into `m = s_in / s_out`:
//! with `k = min(floor(log2 n), 32, 31 + shift)`, `m' = (m · 2^k) / n` (integer division) and
//! `shift' = shift − k`. The sums wrap modulo 2^32 as TFLite's do. A sum is the same without the
//! `1/n` ([`MeanParams::prepare_sum_s8`]: `compute_sum` in TFLite).
//!
//! | [`Rounding`] | matches |
//! |---|---|
//! | `Double` | TFLite Micro (every int8 `MEAN` goes through `QuantizedMeanOrSum` in the pinned version) |
//! | `Single` | the TFLite interpreter's reference kernel (the same code and integers) |
//!
//! `keep_dims` only changes the output's shape, not its data, so it is not a parameter here.
#![forbid(unsafe_code)]

use super::Rounding;
use super::common::ActivationElement;
use super::tensor::{MAX_DIMS, PerTensorQuant, RuntimeShape, at, check_same_len};
use crate::Error;
use crate::requant::{clamp_i32, multiply_by_quantized_multiplier, quantize_multiplier};

/// Prepared mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MeanParams {
    /// Input extents right-aligned to [`MAX_DIMS`].
    input: [usize; MAX_DIMS],
    /// Output stride of each input dimension (0 for reduced ones).
    out_stride: [usize; MAX_DIMS],
    in_len: usize,
    out_len: usize,
    /// Number of elements averaged into each output (`n`).
    pub count: i64,
    /// Q31 multiplier `m'` with `1/n` folded in.
    pub multiplier: i32,
    /// Shift of `m'`.
    pub shift: i32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// The rounding mode the parameters were prepared for (both compute the same).
    pub rounding: Rounding,
}

/// Resolves TFLite axes (negative from the end, duplicates ignored) into a mask over the
/// right-aligned dimensions.
fn resolve_axes(rank: usize, axes: &[i32]) -> Result<[bool; MAX_DIMS], Error> {
    let mut reduced = [false; MAX_DIMS];
    if rank == 0 {
        return Ok(reduced); // TFLite ignores the axes of a scalar
    }
    for &a in axes {
        let r = if a < 0 { a + rank as i32 } else { a };
        if r < 0 || r as usize >= rank {
            return Err(Error::BadKernelArgument { kernel: "mean", reason: "axis out of range" });
        }
        if let Some(m) = reduced.get_mut(MAX_DIMS - rank + r as usize) {
            *m = true;
        }
    }
    Ok(reduced)
}

/// Number of outputs of a mean of `input_shape` over `axes` (the product of the kept
/// extents): the length of the output and of the `i32` scratch of [`mean_s8`] / [`mean_s16`].
///
/// # Errors
/// [`Error::BadKernelArgument`] for an axis out of range or a rank above [`MAX_DIMS`].
pub fn mean_scratch_len(input_shape: &[usize], axes: &[i32]) -> Result<usize, Error> {
    let shape = RuntimeShape::new(input_shape)?;
    let reduced = resolve_axes(shape.rank(), axes)?;
    Ok(shape.extended().iter().zip(&reduced).filter(|&(_, &r)| !r).map(|(&d, _)| d).product())
}

impl MeanParams {
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        (qmin, qmax): (i32, i32),
        input_shape: &[usize],
        axes: &[i32],
        input: PerTensorQuant,
        output: PerTensorQuant,
        rounding: Rounding,
        compute_sum: bool,
    ) -> Result<Self, Error> {
        const K: &str = "mean";
        input.check(qmin, qmax)?;
        output.check(qmin, qmax)?;
        let shape = RuntimeShape::new(input_shape)?;
        let reduced = resolve_axes(shape.rank(), axes)?;
        let ext = shape.extended();
        let mut out_stride = [0usize; MAX_DIMS];
        let mut acc = 1usize;
        let mut count: i64 = 1;
        for d in (0..MAX_DIMS).rev() {
            let (e, r) = (at(&ext, d), reduced.get(d).copied().unwrap_or(false));
            if r {
                count = count.saturating_mul(e as i64);
            } else if let Some(s) = out_stride.get_mut(d) {
                *s = acc;
                acc = acc.saturating_mul(e);
            }
        }
        let out_len = acc;
        // PrepareMeanOrSum: m = s_in / s_out in f64, then QuantizedMeanOrSum folds in 1/n.
        let m = quantize_multiplier(input.scale as f64 / output.scale as f64);
        if m.shift > 30 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "input scale / output scale above 2^30" });
        }
        let (mut multiplier, mut shift) = (m.multiplier, m.shift);
        if count > 0 && !compute_sum {
            let k = 63 - (count as u64).leading_zeros() as i32;
            let k = k.min(32).min(31 + shift).max(0);
            multiplier = (((multiplier as i64) << k) / count) as i32;
            shift -= k;
        }
        Ok(Self {
            input: ext,
            out_stride,
            in_len: shape.len(),
            out_len,
            count,
            multiplier,
            shift,
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            rounding,
        })
    }

    /// Prepares an int8 mean of `input_shape` over `axes` (negative axes count from the end;
    /// duplicates are ignored; no axes averages nothing and just requantizes).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for an axis out of range, a rank above [`MAX_DIMS`] or
    /// `s_in / s_out > 2^30`; [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`].
    pub fn prepare_s8(
        input_shape: &[usize],
        axes: &[i32],
        input: PerTensorQuant,
        output: PerTensorQuant,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare((-128, 127), input_shape, axes, input, output, rounding, false)
    }

    /// Prepares an int16 mean (TFLite's int16 `MEAN`; zero points are normally 0).
    ///
    /// # Errors
    /// As [`MeanParams::prepare_s8`].
    pub fn prepare_s16(
        input_shape: &[usize],
        axes: &[i32],
        input: PerTensorQuant,
        output: PerTensorQuant,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare((-32768, 32767), input_shape, axes, input, output, rounding, false)
    }

    /// Prepares an int8 sum (TFLite's `SUM`), TFLite Micro's arithmetic (the mean's without the
    /// `1/n`) in both rounding modes; run it with [`mean_s8`]. (The TFLite interpreter's
    /// reference `SUM` gives other, inconsistent results on the golden cases, see
    /// `tests/src/oracle/spatial.rs`: TFLite Micro is the reference.)
    ///
    /// # Errors
    /// As [`MeanParams::prepare_s8`].
    pub fn prepare_sum_s8(
        input_shape: &[usize],
        axes: &[i32],
        input: PerTensorQuant,
        output: PerTensorQuant,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare((-128, 127), input_shape, axes, input, output, rounding, true)
    }

    /// Prepares an int16 sum; run it with [`mean_s16`].
    ///
    /// # Errors
    /// As [`MeanParams::prepare_s8`].
    pub fn prepare_sum_s16(
        input_shape: &[usize],
        axes: &[i32],
        input: PerTensorQuant,
        output: PerTensorQuant,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare((-32768, 32767), input_shape, axes, input, output, rounding, true)
    }

    /// Number of outputs (and of scratch `i32`s).
    pub fn output_len(&self) -> usize {
        self.out_len
    }

    fn run<T: Copy + Into<i32>>(
        &self,
        kernel: &'static str,
        input: &[T],
        output: &mut [T],
        scratch: &mut [i32],
        (qmin, qmax): (i32, i32),
        cast: impl Fn(i32) -> T,
    ) -> Result<(), Error> {
        check_same_len(kernel, "input length != input shape", input.len(), self.in_len)?;
        check_same_len(kernel, "output length != number of outputs", output.len(), self.out_len)?;
        let Some(sums) = scratch.get_mut(..self.out_len) else {
            return Err(Error::BadKernelArgument { kernel, reason: "scratch shorter than mean_scratch_len" });
        };
        sums.fill(0);
        if self.in_len == 0 || self.count == 0 {
            // TFLite leaves every output at 0.
            for o in output.iter_mut() {
                *o = cast(0);
            }
            return Ok(());
        }
        // Dispatch point: an optimized variant (kernels/arch/) slots in here.
        // One pass over the input in order, accumulating into each element's output.
        let inner = at(&self.input, MAX_DIMS - 1);
        let inner_stride = at(&self.out_stride, MAX_DIMS - 1);
        let mut idx = [0usize; MAX_DIMS];
        let mut base = 0usize;
        if inner == 0 {
            return Ok(());
        }
        for row in input.chunks(inner) {
            let mut o = base;
            for &x in row {
                if let Some(s) = sums.get_mut(o) {
                    *s = s.wrapping_add(x.into());
                }
                o = o.wrapping_add(inner_stride);
            }
            for d in (0..MAX_DIMS - 1).rev() {
                let (Some(i), e, st) = (idx.get_mut(d), at(&self.input, d), at(&self.out_stride, d)) else { break };
                *i += 1;
                base = base.wrapping_add(st);
                if *i < e {
                    break;
                }
                *i = 0;
                base = base.wrapping_sub(st.wrapping_mul(e));
            }
        }
        let zp_times_n = (self.input_zero_point as i64).wrapping_mul(self.count);
        for (o, &s) in output.iter_mut().zip(sums.iter()) {
            let shifted_sum = (s as i64).wrapping_sub(zp_times_n) as i32;
            let v = multiply_by_quantized_multiplier(shifted_sum, self.multiplier, self.shift)
                .wrapping_add(self.output_zero_point);
            *o = cast(clamp_i32(v, qmin, qmax));
        }
        Ok(())
    }
}

/// int8 mean over the prepared axes, bit-exact with TFLite Micro and the TFLite interpreter.
/// `output` holds the kept extents in order (with or without `keep_dims` ones).
///
/// Scratch: [`mean_scratch_len`] `i32`s (one accumulator per output).
///
/// # Errors
/// [`Error::BadKernelArgument`] if a length does not match or the scratch is too short.
pub fn mean_s8(params: &MeanParams, input: &[i8], output: &mut [i8], scratch: &mut [i32]) -> Result<(), Error> {
    params.run("mean_s8", input, output, scratch, (-128, 127), |v| v as i8)
}

/// int16 mean over the prepared axes, bit-exact with TFLite Micro and the TFLite interpreter.
///
/// Scratch: [`mean_scratch_len`] `i32`s.
///
/// # Errors
/// As [`mean_s8`].
pub fn mean_s16(params: &MeanParams, input: &[i16], output: &mut [i16], scratch: &mut [i32]) -> Result<(), Error> {
    params.run("mean_s16", input, output, scratch, (-32768, 32767), |v| v as i16)
}

/// Prepared max over axes (TFLite `REDUCE_MAX`): no quantization (input and output share it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReduceMaxParams {
    input: [usize; MAX_DIMS],
    out_stride: [usize; MAX_DIMS],
    in_len: usize,
    out_len: usize,
}

impl ReduceMaxParams {
    /// Prepares a max of `input_shape` over `axes` (negative axes count from the end;
    /// duplicates ignored; no axes copies).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for an axis out of range or a rank above [`MAX_DIMS`].
    pub fn new(input_shape: &[usize], axes: &[i32]) -> Result<Self, Error> {
        let shape = RuntimeShape::new(input_shape)?;
        let reduced = resolve_axes(shape.rank(), axes)?;
        let ext = shape.extended();
        let mut out_stride = [0usize; MAX_DIMS];
        let mut acc = 1usize;
        for d in (0..MAX_DIMS).rev() {
            if !reduced.get(d).copied().unwrap_or(false) {
                if let Some(s) = out_stride.get_mut(d) {
                    *s = acc;
                }
                acc = acc.saturating_mul(at(&ext, d));
            }
        }
        Ok(Self { input: ext, out_stride, in_len: shape.len(), out_len: acc })
    }

    /// Number of outputs.
    pub fn output_len(&self) -> usize {
        self.out_len
    }

    fn run<T: ActivationElement + PartialOrd>(
        &self,
        kernel: &'static str,
        input: &[T],
        output: &mut [T],
    ) -> Result<(), Error> {
        check_same_len(kernel, "input length != input shape", input.len(), self.in_len)?;
        check_same_len(kernel, "output length != number of outputs", output.len(), self.out_len)?;
        // TFLite: outputs start at the type's lowest value (kept where the input is empty).
        let lowest = T::from_clamped(T::RANGE.min);
        output.fill(lowest);
        let inner = at(&self.input, MAX_DIMS - 1);
        if self.in_len == 0 || inner == 0 {
            return Ok(());
        }
        let inner_stride = at(&self.out_stride, MAX_DIMS - 1);
        let mut idx = [0usize; MAX_DIMS];
        let mut base = 0usize;
        // Dispatch point: an optimized variant (kernels/arch/) slots in here.
        for row in input.chunks(inner) {
            let mut o = base;
            for &x in row {
                if let Some(m) = output.get_mut(o) {
                    if x > *m {
                        *m = x;
                    }
                }
                o = o.wrapping_add(inner_stride);
            }
            for d in (0..MAX_DIMS - 1).rev() {
                let (Some(i), e, st) = (idx.get_mut(d), at(&self.input, d), at(&self.out_stride, d)) else { break };
                *i += 1;
                base = base.wrapping_add(st);
                if *i < e {
                    break;
                }
                *i = 0;
                base = base.wrapping_sub(st.wrapping_mul(e));
            }
        }
        Ok(())
    }
}

/// int8 max over the prepared axes, bit-exact with TFLite Micro and the TFLite interpreter.
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a length does not match.
pub fn reduce_max_s8(params: &ReduceMaxParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.run("reduce_max_s8", input, output)
}

/// int16 max over the prepared axes (the TFLite interpreter's int16 `REDUCE_MAX`; TFLite Micro
/// has int8 only).
///
/// # Errors
/// As [`reduce_max_s8`].
pub fn reduce_max_s16(params: &ReduceMaxParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    params.run("reduce_max_s16", input, output)
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn sums_match_naive_reduction_on_many_axis_sets() {
        // Identity scales and count 1 (no axes) requantize nothing; with axes the integer sums
        // must equal a naive reduction: check with s_in = n · s_out so that y = sum - zp·n + zp.
        let shape = [2usize, 3, 4, 5];
        let n_all: usize = shape.iter().product();
        let input: Vec<i8> = (0..n_all).map(|i| ((i * 37) % 251) as i8).collect();
        for axes in [&[][..], &[0], &[1, 2], &[-1], &[0, 3], &[1, 1], &[0, 1, 2, 3], &[2, 1]] {
            let rank = shape.len() as i32;
            let set: Vec<usize> = axes.iter().map(|&a| if a < 0 { a + rank } else { a } as usize).collect();
            let kept: Vec<usize> = (0..4).filter(|d| !set.contains(d)).collect();
            let n: usize =
                set.iter().copied().collect::<std::collections::BTreeSet<_>>().iter().map(|&d| shape[d]).product();
            let outs: usize = kept.iter().map(|&d| shape[d]).product();
            let mut want = std::vec![0i64; outs];
            for (flat, &x) in input.iter().enumerate() {
                let mut rem = flat;
                let mut idx = [0; 4];
                for d in (0..4).rev() {
                    idx[d] = rem % shape[d];
                    rem /= shape[d];
                }
                let o = kept.iter().fold(0, |o, &d| o * shape[d] + idx[d]);
                want[o] += x as i64;
            }
            assert_eq!(mean_scratch_len(&shape, axes).unwrap(), outs);
            let p = MeanParams::prepare_s8(&shape, axes, q(1.0, 0), q(1.0, 0), Rounding::Double).unwrap();
            let mut out = std::vec![0i8; outs];
            let mut scratch = std::vec![0i32; outs];
            mean_s8(&p, &input, &mut out, &mut scratch).unwrap();
            for (o, (&w, &got)) in want.iter().zip(&out).enumerate() {
                let mean = w as f64 / n as f64;
                assert!((got as f64 - mean.round()).abs() <= 1.0, "axes {axes:?} output {o}: {got} vs {mean}");
                assert_eq!(scratch[o] as i64, w, "axes {axes:?} sum {o}");
            }
        }
    }

    #[test]
    fn multiplier_folds_in_one_over_n() {
        // n = 12: k = 3, m' = (2^30 · 8) / 12, shift' = 1 − 3.
        let p = MeanParams::prepare_s8(&[1, 3, 4, 2], &[1, 2], q(1.0, 0), q(1.0, 0), Rounding::Double).unwrap();
        assert_eq!(p.count, 12);
        assert_eq!((p.multiplier, p.shift), ((((1i64 << 30) << 3) / 12) as i32, 1 - 3));
    }

    #[test]
    fn max_matches_naive_reduction_and_sum_skips_one_over_n() {
        let shape = [2usize, 3, 4];
        let input: Vec<i8> = (0..24).map(|i| ((i * 53) % 256) as u8 as i8).collect();
        let p = ReduceMaxParams::new(&shape, &[0, -1]).unwrap();
        let mut out = [0i8; 3];
        reduce_max_s8(&p, &input, &mut out).unwrap();
        for (j, &o) in out.iter().enumerate() {
            let x = &input;
            let want = (0..2).flat_map(|a| (0..4).map(move |c| x[a * 12 + j * 4 + c])).max().unwrap();
            assert_eq!(o, want);
        }
        let p = MeanParams::prepare_sum_s8(&[1, 3, 4, 2], &[1, 2], q(1.0, 0), q(1.0, 0), Rounding::Double).unwrap();
        assert_eq!((p.multiplier, p.shift), (1 << 30, 1));
    }

    #[test]
    fn errors_and_empty() {
        assert!(MeanParams::prepare_s8(&[2, 3], &[2], q(1.0, 0), q(1.0, 0), Rounding::Double).is_err());
        assert!(mean_scratch_len(&[2, 3], &[-3]).is_err());
        let p = MeanParams::prepare_s8(&[2, 3], &[1], q(1.0, 0), q(1.0, 0), Rounding::Double).unwrap();
        let mut out = [0i8; 2];
        assert!(mean_s8(&p, &[0; 6], &mut out, &mut [0; 1]).is_err());
        assert!(mean_s8(&p, &[0; 5], &mut out, &mut [0; 2]).is_err());
        let p = MeanParams::prepare_s8(&[2, 0], &[1], q(1.0, 3), q(1.0, 3), Rounding::Double).unwrap();
        let mut out = [9i8; 2];
        mean_s8(&p, &[], &mut out, &mut [0; 2]).unwrap();
        assert_eq!(out, [0, 0]);
    }
}
