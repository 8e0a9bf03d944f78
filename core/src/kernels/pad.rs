//! Constant padding (TFLite `PAD` / `PADV2`) of tensors of rank ≤ [`MAX_DIMS`].
//!
//! Pure data movement, so bit-exact with both TFLite runtimes in either
//! [`Rounding`](super::Rounding) mode. The pad value of an int8 tensor is the output zero point
//! (`PAD`, i.e. real 0.0) or the given constant (`PADV2`, whose quantization TFLite requires to
//! equal the output's, so its raw value is used).
#![forbid(unsafe_code)]

use super::tensor::{MAX_DIMS, PerTensorQuant, RuntimeShape, at, check_same_len};
use crate::Error;

/// Prepared padding: shapes right-aligned to [`MAX_DIMS`] dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PadParams {
    input: [usize; MAX_DIMS],
    before: [usize; MAX_DIMS],
    output: [usize; MAX_DIMS],
    output_shape: RuntimeShape,
    in_len: usize,
    /// The value written into the padding (raw, of the tensor's type).
    pub pad_value: i32,
}

impl PadParams {
    /// Prepares padding of a tensor of `input_shape` by `paddings[d] = [before, after]` per
    /// dimension, filling with `pad_value` (raw, of the element type).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if `paddings` has not one pair per dimension, a padding is
    /// negative, or a shape is too large.
    pub fn new(input_shape: &[usize], paddings: &[[i32; 2]], pad_value: i32) -> Result<Self, Error> {
        const K: &str = "pad";
        let in_shape = RuntimeShape::new(input_shape)?;
        check_same_len(
            K,
            "paddings must have one [before, after] pair per dimension",
            paddings.len(),
            input_shape.len(),
        )?;
        let skip = MAX_DIMS - input_shape.len();
        let input = in_shape.extended();
        let mut before = [0usize; MAX_DIMS];
        let mut output = input;
        for (d, pair) in paddings.iter().enumerate() {
            let [b, a] = *pair;
            if b < 0 || a < 0 {
                return Err(Error::BadKernelArgument { kernel: K, reason: "negative padding" });
            }
            if let (Some(bd), Some(od)) = (before.get_mut(skip + d), output.get_mut(skip + d)) {
                *bd = b as usize;
                *od = od
                    .checked_add(b as usize)
                    .and_then(|v| v.checked_add(a as usize))
                    .ok_or(Error::BadKernelArgument { kernel: K, reason: "padded extent overflows" })?;
            }
        }
        let output_shape = RuntimeShape::new(output.get(skip..).unwrap_or(&[]))?;
        Ok(Self { input, before, output, output_shape, in_len: in_shape.len(), pad_value })
    }

    /// Prepares int8 `PAD`/`PADV2`: the pad value is `constant` if given (raw int8, quantized
    /// like the output) or the output zero point.
    ///
    /// # Errors
    /// As [`PadParams::new`]; [`Error::ZeroPointOutOfRange`] for a zero point outside int8.
    pub fn prepare_s8(
        input_shape: &[usize],
        paddings: &[[i32; 2]],
        output: PerTensorQuant,
        constant: Option<i8>,
    ) -> Result<Self, Error> {
        if output.zero_point < -128 || output.zero_point > 127 {
            return Err(Error::ZeroPointOutOfRange { zero_point: output.zero_point, min: -128, max: 127 });
        }
        Self::new(input_shape, paddings, constant.map_or(output.zero_point, i32::from))
    }

    /// The padded output shape.
    pub fn output_shape(&self) -> RuntimeShape {
        self.output_shape
    }
}

/// Pads `input` into `output` with `value` (any element type).
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn pad<T: Copy>(params: &PadParams, input: &[T], value: T, output: &mut [T]) -> Result<(), Error> {
    check_same_len("pad", "input length != input shape", input.len(), params.in_len)?;
    check_same_len("pad", "output length != padded shape", output.len(), params.output_shape.len())?;
    let inner = at(&params.output, MAX_DIMS - 1);
    if output.is_empty() || inner == 0 {
        return Ok(());
    }
    let (b_in, n_in) = (at(&params.before, MAX_DIMS - 1), at(&params.input, MAX_DIMS - 1));
    // Input strides of the outer dimensions.
    let mut stride = [0usize; MAX_DIMS];
    let mut acc = 1usize;
    for d in (0..MAX_DIMS).rev() {
        if let Some(s) = stride.get_mut(d) {
            *s = acc;
        }
        acc = acc.saturating_mul(at(&params.input, d));
    }
    let mut idx = [0usize; MAX_DIMS];
    for row in output.chunks_mut(inner) {
        // Is this output row inside the input in every outer dimension?
        let mut off = 0usize;
        let mut inside = n_in > 0;
        for d in 0..MAX_DIMS - 1 {
            let (i, b, n) = (at(&idx, d), at(&params.before, d), at(&params.input, d));
            if i < b || i >= b + n {
                inside = false;
                break;
            }
            off += (i - b) * at(&stride, d);
        }
        match (inside, row.get_mut(b_in..b_in + n_in), input.get(off..off + n_in)) {
            (true, Some(dst), Some(src)) => {
                dst.copy_from_slice(src);
                for (j, o) in row.iter_mut().enumerate() {
                    if j < b_in || j >= b_in + n_in {
                        *o = value;
                    }
                }
            }
            _ => row.fill(value),
        }
        // Odometer over the outer dimensions.
        for d in (0..MAX_DIMS - 1).rev() {
            let (Some(i), e) = (idx.get_mut(d), at(&params.output, d)) else { break };
            *i += 1;
            if *i < e {
                break;
            }
            *i = 0;
        }
    }
    Ok(())
}

/// int8 padding with the prepared pad value, bit-exact with TFLite. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn pad_s8(params: &PadParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    pad(params, input, params.pad_value as i8, output)
}

/// int16 padding with the prepared pad value. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn pad_s16(params: &PadParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    pad(params, input, params.pad_value as i16, output)
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// Naive padding by index arithmetic.
    fn naive(shape: &[usize], pads: &[[i32; 2]], input: &[i32], v: i32) -> Vec<i32> {
        let out: Vec<usize> = shape.iter().zip(pads).map(|(&s, p)| s + p[0] as usize + p[1] as usize).collect();
        let n: usize = out.iter().product();
        (0..n)
            .map(|mut flat| {
                let mut idx = std::vec![0; out.len()];
                for d in (0..out.len()).rev() {
                    idx[d] = flat % out[d];
                    flat /= out[d];
                }
                let mut off = 0;
                for d in 0..out.len() {
                    let b = pads[d][0] as usize;
                    if idx[d] < b || idx[d] >= b + shape[d] {
                        return v;
                    }
                    off = off * shape[d] + idx[d] - b;
                }
                input[off]
            })
            .collect()
    }

    #[test]
    fn matches_naive_padding() {
        let cases: &[(&[usize], &[[i32; 2]])] = &[
            (&[3], &[[1, 2]]),
            (&[2, 3], &[[0, 1], [2, 0]]),
            (&[1, 2, 2, 3], &[[0, 0], [1, 1], [2, 0], [0, 0]]),
            (&[1, 2, 2, 3], &[[1, 0], [0, 0], [0, 0], [1, 2]]),
            (&[2, 1, 3, 1, 2], &[[0, 1], [1, 0], [1, 1], [0, 2], [1, 0]]),
            (&[2, 0, 3], &[[1, 0], [1, 1], [0, 1]]),
            (&[], &[]),
        ];
        for &(shape, pads) in cases {
            let n: usize = shape.iter().product();
            let input: Vec<i32> = (1..=n as i32).collect();
            let p = PadParams::new(shape, pads, -5).unwrap();
            let mut out = std::vec![0; p.output_shape().len()];
            pad(&p, &input, -5, &mut out).unwrap();
            assert_eq!(out, naive(shape, pads, &input, -5), "{shape:?} {pads:?}");
        }
    }

    #[test]
    fn int8_pad_value_and_errors() {
        let p = PadParams::prepare_s8(&[2], &[[1, 1]], PerTensorQuant::new(0.1, -7), None).unwrap();
        let mut out = [0i8; 4];
        pad_s8(&p, &[1, 2], &mut out).unwrap();
        assert_eq!(out, [-7, 1, 2, -7]);
        let p = PadParams::prepare_s8(&[2], &[[0, 1]], PerTensorQuant::new(0.1, -7), Some(9)).unwrap();
        let mut out = [0i8; 3];
        pad_s8(&p, &[1, 2], &mut out).unwrap();
        assert_eq!(out, [1, 2, 9]);
        assert!(PadParams::new(&[2], &[[-1, 0]], 0).is_err());
        assert!(PadParams::new(&[2, 2], &[[1, 0]], 0).is_err());
        assert!(pad_s8(&p, &[1], &mut out).is_err());
    }
}
