//! Strided slicing (TFLite `SLICE` and `STRIDED_SLICE`, ONNX `Slice`, and each output of a
//! `Split`) of tensors of rank ≤ [`MAX_DIMS`], any element type.
//!
//! One kernel for all of them: per dimension `d`, output index `i` reads input index
//! `start[d] + i · step[d]` for `i < count[d]` (`step` may be negative). The op-specific
//! semantics (clamping of out-of-range begins and ends, TFLite's begin/end/shrink masks) are
//! resolved once into `(start, step, count)` by [`SliceParams::tflite_slice`] and
//! [`SliceParams::tflite_strided_slice`] (TFLite's `strided_slice_logic.h`, which TFLite Micro
//! and the interpreter share), or by the converter for ONNX. Pure data movement: bit-exact with
//! both TFLite runtimes in either [`Rounding`](super::Rounding) mode; TFLite requires the
//! input's and output's quantization to be equal.
#![forbid(unsafe_code)]

use super::tensor::{MAX_DIMS, RuntimeShape, at, check_same_len, get_or_default};
use crate::Error;

const K: &str = "strided_slice";

/// TFLite's `StridedSliceOptions` masks (bit `d` for dimension `d`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StridedSliceMasks {
    /// Bit set: ignore `begin[d]`, start at the first element in the stride's direction.
    pub begin: u32,
    /// Bit set: ignore `end[d]`, run to the last element in the stride's direction.
    pub end: u32,
    /// Ellipsis (must be 0 here: the converter expands it into begin/end masks first).
    pub ellipsis: u32,
    /// New axes (must be 0 here: the converter expands them; they only change the shape).
    pub new_axis: u32,
    /// Bit set: take the single element `begin[d]` and drop the dimension.
    pub shrink_axis: u32,
    /// `StridedSliceOptions.offset`: `end[d]` is relative to the begin.
    pub offset: bool,
}

/// Prepared strided slice: per dimension (right-aligned to [`MAX_DIMS`]) the first input
/// index, the step between input indices and the output extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SliceParams {
    start: [usize; MAX_DIMS],
    step: [isize; MAX_DIMS],
    count: [usize; MAX_DIMS],
    /// Input strides.
    stride: [usize; MAX_DIMS],
    in_len: usize,
    out_len: usize,
    rank: usize,
}

impl SliceParams {
    /// Prepares the slice of a tensor of `input_shape` taking, per dimension `d`, `count[d]`
    /// elements from `start[d]` in steps of `step[d]`.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if the lists do not have one entry per dimension, a step is
    /// zero, or an index read lies outside the input.
    pub fn new(input_shape: &[usize], start: &[usize], step: &[i32], count: &[usize]) -> Result<Self, Error> {
        let shape = RuntimeShape::new(input_shape)?;
        let rank = shape.rank();
        check_same_len(K, "start must have one entry per dimension", start.len(), rank)?;
        check_same_len(K, "step must have one entry per dimension", step.len(), rank)?;
        check_same_len(K, "count must have one entry per dimension", count.len(), rank)?;
        let extended = shape.extended();
        let skip = MAX_DIMS - rank;
        let mut p = Self {
            start: [0; MAX_DIMS],
            step: [1; MAX_DIMS],
            count: [1; MAX_DIMS],
            stride: [0; MAX_DIMS],
            in_len: shape.len(),
            out_len: 1,
            rank,
        };
        let mut acc = 1usize;
        for d in (0..MAX_DIMS).rev() {
            if let Some(s) = p.stride.get_mut(d) {
                *s = acc;
            }
            acc = acc.saturating_mul(at(&extended, d));
        }
        for d in 0..rank {
            let (n, st, sp, c) =
                (at(&extended, skip + d), start.get(d).copied(), step.get(d).copied(), count.get(d).copied());
            let (Some(st), Some(sp), Some(c)) = (st, sp, c) else {
                return Err(Error::BadKernelArgument { kernel: K, reason: "missing slice entry" });
            };
            if sp == 0 {
                return Err(Error::BadKernelArgument { kernel: K, reason: "step 0" });
            }
            if c > 0 {
                // First and last index read must lie inside the input.
                let last = (st as i128) + (c as i128 - 1) * i128::from(sp);
                if st >= n || last < 0 || last >= n as i128 {
                    return Err(Error::BadKernelArgument { kernel: K, reason: "slice reads outside the input" });
                }
            }
            if let (Some(a), Some(b), Some(e)) =
                (p.start.get_mut(skip + d), p.step.get_mut(skip + d), p.count.get_mut(skip + d))
            {
                *a = st;
                *b = sp as isize;
                *e = c;
            }
            p.out_len = p
                .out_len
                .checked_mul(c)
                .ok_or(Error::BadKernelArgument { kernel: K, reason: "output size overflows" })?;
        }
        Ok(p)
    }

    /// TFLite `SLICE`: `size[d]` elements from `begin[d]` (`size[d] == -1`: to the end).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if `begin`/`size` do not have one entry per dimension or
    /// the slice leaves the input (TFLite rejects the same).
    pub fn tflite_slice(input_shape: &[usize], begin: &[i32], size: &[i32]) -> Result<Self, Error> {
        let rank = input_shape.len();
        check_same_len(K, "begin must have one entry per dimension", begin.len(), rank)?;
        check_same_len(K, "size must have one entry per dimension", size.len(), rank)?;
        let (mut start, mut count) = ([0usize; MAX_DIMS], [0usize; MAX_DIMS]);
        for d in 0..rank.min(MAX_DIMS) {
            let n = input_shape.get(d).copied().unwrap_or(0) as i64;
            let b = i64::from(begin.get(d).copied().unwrap_or(0));
            let s = i64::from(size.get(d).copied().unwrap_or(0));
            let s = if s == -1 { n - b } else { s };
            if b < 0 || s < 0 || b + s > n {
                return Err(Error::BadKernelArgument { kernel: K, reason: "slice begin/size outside the input" });
            }
            if let (Some(a), Some(c)) = (start.get_mut(d), count.get_mut(d)) {
                *a = if s == 0 { 0 } else { b as usize };
                *c = s as usize;
            }
        }
        let r = rank.min(MAX_DIMS);
        Self::new(input_shape, start.get(..r).unwrap_or(&[]), &[1; MAX_DIMS][..r], count.get(..r).unwrap_or(&[]))
    }

    /// TFLite `STRIDED_SLICE` with `begin`, `end` and `strides` of one entry per dimension
    /// (TFLite's `StridedSliceStartForAxis` / `StridedSliceEndForAxis`: negative indices count
    /// from the end, then clamp into the input). Shrunk axes keep an extent of 1 here (the
    /// output tensor's shape drops them; the data is the same).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for lists of the wrong length, a zero stride, a non-zero
    /// ellipsis or new-axis mask, or a shrunk axis whose index lies outside the input.
    pub fn tflite_strided_slice(
        input_shape: &[usize],
        begin: &[i32],
        end: &[i32],
        strides: &[i32],
        masks: StridedSliceMasks,
    ) -> Result<Self, Error> {
        let rank = input_shape.len();
        if rank > MAX_DIMS {
            return Err(Error::BadKernelArgument { kernel: K, reason: "rank above MAX_DIMS (6)" });
        }
        check_same_len(K, "begin must have one entry per dimension", begin.len(), rank)?;
        check_same_len(K, "end must have one entry per dimension", end.len(), rank)?;
        check_same_len(K, "strides must have one entry per dimension", strides.len(), rank)?;
        if masks.ellipsis != 0 || masks.new_axis != 0 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "ellipsis and new-axis masks must be expanded" });
        }
        let (mut start, mut count, mut step) = ([0usize; MAX_DIMS], [0usize; MAX_DIMS], [1i32; MAX_DIMS]);
        for d in 0..rank {
            let n = input_shape.get(d).copied().unwrap_or(0) as i64;
            let s = i64::from(strides.get(d).copied().unwrap_or(0));
            if s == 0 {
                return Err(Error::BadKernelArgument { kernel: K, reason: "stride 0" });
            }
            let bit = 1u32.checked_shl(d as u32).unwrap_or(0);
            let (lo, hi) = if s > 0 { (0, n) } else { (-1, n - 1) };
            let mut b = i64::from(begin.get(d).copied().unwrap_or(0));
            if b < 0 {
                b += n;
            }
            b = b.clamp(lo, hi);
            if masks.begin & bit != 0 {
                b = if s > 0 { 0 } else { n - 1 };
            }
            let c = if masks.shrink_axis & bit != 0 {
                if b < 0 || b >= n {
                    return Err(Error::BadKernelArgument { kernel: K, reason: "shrunk index outside the input" });
                }
                1
            } else {
                let mut e = i64::from(end.get(d).copied().unwrap_or(0));
                if masks.offset {
                    e += b;
                }
                if e < 0 {
                    e += n;
                }
                e = e.clamp(lo, hi);
                if masks.end & bit != 0 {
                    e = if s > 0 { n } else { -1 };
                }
                // ceil((e - b) / s), at least 0.
                let span = if s > 0 { e - b } else { b - e };
                let a = s.abs();
                if span <= 0 { 0 } else { (span + a - 1).checked_div(a).unwrap_or(0) }
            };
            if let (Some(a), Some(cc), Some(st)) = (start.get_mut(d), count.get_mut(d), step.get_mut(d)) {
                *a = if c == 0 { 0 } else { b as usize };
                *cc = c as usize;
                *st = s as i32;
            }
        }
        Self::new(
            input_shape,
            start.get(..rank).unwrap_or(&[]),
            step.get(..rank).unwrap_or(&[]),
            count.get(..rank).unwrap_or(&[]),
        )
    }

    /// The output extents, one per input dimension (shrunk axes as 1).
    pub fn counts(&self) -> &[usize] {
        self.count.get(MAX_DIMS - self.rank..).unwrap_or(&[])
    }

    /// The first input index per dimension.
    pub fn starts(&self) -> &[usize] {
        self.start.get(MAX_DIMS - self.rank..).unwrap_or(&[])
    }

    /// The step per dimension.
    pub fn steps(&self) -> &[isize] {
        self.step.get(MAX_DIMS - self.rank..).unwrap_or(&[])
    }

    /// The number of output elements.
    pub fn output_len(&self) -> usize {
        self.out_len
    }
}

/// Slices `input` into `output` (any element type).
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn slice<T: Copy + Default>(params: &SliceParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    check_same_len(K, "input length != input shape", input.len(), params.in_len)?;
    check_same_len(K, "output length != slice size", output.len(), params.out_len)?;
    let inner = at(&params.count, MAX_DIMS - 1);
    if output.is_empty() || inner == 0 {
        return Ok(());
    }
    let stride_of = |d: usize| at(&params.stride, d) as isize;
    let step_of = |d: usize| params.step.get(d).copied().unwrap_or(1);
    // Offset of the first element of the current output row, and the step along the row.
    let mut base: isize = (0..MAX_DIMS).map(|d| at(&params.start, d) as isize * stride_of(d)).sum();
    let inner_step = step_of(MAX_DIMS - 1) * stride_of(MAX_DIMS - 1);
    let mut idx = [0usize; MAX_DIMS];
    for row in output.chunks_mut(inner) {
        let mut j = base;
        for o in row.iter_mut() {
            *o = get_or_default(input, j as usize);
            j = j.wrapping_add(inner_step);
        }
        // Odometer over the outer dimensions.
        for d in (0..MAX_DIMS - 1).rev() {
            let (Some(i), e) = (idx.get_mut(d), at(&params.count, d)) else { break };
            let delta = step_of(d) * stride_of(d);
            *i += 1;
            base = base.wrapping_add(delta);
            if *i < e {
                break;
            }
            base = base.wrapping_sub(delta.wrapping_mul(e as isize));
            *i = 0;
        }
    }
    Ok(())
}

/// int8 strided slice. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn slice_s8(params: &SliceParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    slice(params, input, output)
}

/// int16 strided slice. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn slice_s16(params: &SliceParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    slice(params, input, output)
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    #[test]
    fn slices_with_negative_steps() {
        // 3x4, rows 2..0 step -1, columns 1.. step 2.
        let x: Vec<i32> = (0..12).collect();
        let p = SliceParams::new(&[3, 4], &[2, 1], &[-1, 2], &[3, 2]).unwrap();
        let mut y = [0; 6];
        slice(&p, &x, &mut y).unwrap();
        assert_eq!(y, [9, 11, 5, 7, 1, 3]);
    }

    #[test]
    fn tflite_semantics() {
        let masks = StridedSliceMasks::default();
        // x[-1:0:-2] of 5 elements: 4, 2.
        let p = SliceParams::tflite_strided_slice(&[5], &[-1], &[0], &[-2], masks).unwrap();
        assert_eq!((p.starts(), p.counts()), (&[4][..], &[2][..]));
        // begin mask with a negative stride starts at the end; end beyond clamps.
        let m = StridedSliceMasks { begin: 1, ..masks };
        let p = SliceParams::tflite_strided_slice(&[5], &[0], &[-100], &[-1], m).unwrap();
        assert_eq!((p.starts(), p.counts()), (&[4][..], &[5][..]));
        let p = SliceParams::tflite_slice(&[4, 3], &[1, 0], &[-1, 2]).unwrap();
        assert_eq!(p.counts(), &[3, 2]);
        let m = StridedSliceMasks { shrink_axis: 1, ..masks };
        assert!(SliceParams::tflite_strided_slice(&[3], &[3], &[4], &[1], m).is_err());
        assert!(SliceParams::tflite_strided_slice(&[3], &[0], &[2], &[0], masks).is_err());
        assert!(SliceParams::tflite_slice(&[3], &[2], &[2]).is_err());
        assert!(SliceParams::new(&[3], &[1], &[1], &[3]).is_err());
        let p = SliceParams::new(&[3], &[0], &[1], &[2]).unwrap();
        assert!(slice_s8(&p, &[1, 2], &mut [0; 2]).is_err());
    }
}
