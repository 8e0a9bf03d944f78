//! Concatenation along any axis (TFLite `CONCATENATION`), with requantization of inputs whose
//! quantization differs from the output's.
//!
//! The tensors are viewed as `[outer, axis_len_i, inner]` (`outer` = product of the extents
//! before the axis, `inner` = after it, the same for every input and the output); for each outer
//! index the inputs' `axis_len_i · inner` blocks are placed one after the other.
//!
//! Quantization: TFLite Micro and the TFLite interpreter both *require* int8 inputs to share the
//! output's scale and zero point (their kernels only copy), and the converter enforces it by
//! inserting `QUANTIZE` (requantize) operators in front. An input prepared with other parameters
//! is requantized here exactly as that `QUANTIZE` operator would (TFLite's
//! `reference_ops::Requantize`: `clamp(zp_out + MultiplyByQuantizedMultiplier(x − zp_in, m))`,
//! `m = (f64)s_in / (f64)s_out`, double rounding, the same in both runtimes), fused into the
//! copy. So both [`Rounding`](super::Rounding) modes give the same output, and an input with
//! matching parameters is copied bit for bit.
#![forbid(unsafe_code)]

use super::tensor::{MAX_DIMS, PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, clamp_i32, multiply_by_quantized_multiplier, quantize_multiplier};

/// Requantization of one int8 input to the output's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Requantize {
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// `s_in / s_out`.
    pub multiplier: QuantizedMultiplier,
}

impl Requantize {
    /// TFLite `QUANTIZE` (int8 → int8) Prepare. `None` when the parameters are equal (a copy).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad parameters,
    /// [`Error::BadKernelArgument`] if `s_in / s_out ≥ 2^23` (the shifted input would overflow).
    pub fn prepare_s8(input: PerTensorQuant, output: PerTensorQuant) -> Result<Option<Self>, Error> {
        input.check(-128, 127)?;
        output.check(-128, 127)?;
        if input == output {
            return Ok(None);
        }
        let multiplier = quantize_multiplier(input.scale as f64 / output.scale as f64);
        if multiplier.shift > 23 {
            return Err(Error::BadKernelArgument {
                kernel: "concat_s8",
                reason: "input scale / output scale too large",
            });
        }
        Ok(Some(Self { input_zero_point: input.zero_point, output_zero_point: output.zero_point, multiplier }))
    }

    #[inline(always)]
    fn apply(&self, x: i8) -> i8 {
        let v = multiply_by_quantized_multiplier(
            x as i32 - self.input_zero_point,
            self.multiplier.multiplier,
            self.multiplier.shift,
        )
        .wrapping_add(self.output_zero_point);
        clamp_i32(v, -128, 127) as i8
    }
}

/// One input of a concatenation: its extent along the axis and, for int8, an optional
/// requantization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConcatInput {
    /// Extent of this input along the concatenation axis.
    pub axis_len: usize,
    /// Requantization to the output's parameters (`None`: a plain copy).
    pub requantize: Option<Requantize>,
}

impl ConcatInput {
    /// An input copied as is (any element type, or int8 with the output's parameters).
    pub const fn copy(axis_len: usize) -> Self {
        Self { axis_len, requantize: None }
    }

    /// An int8 input with its own quantization parameters.
    ///
    /// # Errors
    /// As [`Requantize::prepare_s8`].
    pub fn prepare_s8(axis_len: usize, input: PerTensorQuant, output: PerTensorQuant) -> Result<Self, Error> {
        Ok(Self { axis_len, requantize: Requantize::prepare_s8(input, output)? })
    }
}

/// Prepared concatenation: the block structure and the inputs.
#[derive(Debug, Clone, Copy)]
pub struct ConcatParams<'a> {
    /// Product of the extents before the axis.
    pub outer: usize,
    /// Product of the extents after the axis.
    pub inner: usize,
    /// Output extent along the axis (the sum of the inputs').
    pub axis_len: usize,
    /// The inputs, in order.
    pub inputs: &'a [ConcatInput],
}

impl<'a> ConcatParams<'a> {
    /// Prepares the concatenation of `inputs` into a tensor of `output_shape` along `axis`
    /// (negative counts from the end, as TFLite). Every input has the output's shape except
    /// along the axis, where the extents add up to the output's.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for an axis out of range, extents that do not add up, a rank
    /// above [`MAX_DIMS`] or no inputs.
    pub fn new(output_shape: &[usize], axis: i32, inputs: &'a [ConcatInput]) -> Result<Self, Error> {
        const K: &str = "concat";
        let rank = output_shape.len();
        if rank == 0 || rank > MAX_DIMS {
            return Err(Error::BadKernelArgument { kernel: K, reason: "output rank must be in [1, 6]" });
        }
        let a = if axis < 0 { axis + rank as i32 } else { axis };
        if a < 0 || a as usize >= rank {
            return Err(Error::BadKernelArgument { kernel: K, reason: "axis out of range" });
        }
        if inputs.is_empty() {
            return Err(Error::BadKernelArgument { kernel: K, reason: "no inputs" });
        }
        let (before, rest) = output_shape.split_at(a as usize);
        let (axis_len, after) = match rest.split_first() {
            Some((&n, after)) => (n, after),
            None => return Err(Error::BadKernelArgument { kernel: K, reason: "axis out of range" }),
        };
        let prod = |s: &[usize]| s.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
        let (Some(outer), Some(inner)) = (prod(before), prod(after)) else {
            return Err(Error::BadKernelArgument { kernel: K, reason: "element count overflows" });
        };
        let sum = inputs.iter().try_fold(0usize, |s, i| s.checked_add(i.axis_len));
        if sum != Some(axis_len) {
            return Err(Error::BadKernelArgument { kernel: K, reason: "input extents along the axis do not add up" });
        }
        if outer.checked_mul(axis_len).and_then(|v| v.checked_mul(inner)).is_none() {
            return Err(Error::BadKernelArgument { kernel: K, reason: "element count overflows" });
        }
        Ok(Self { outer, inner, axis_len, inputs })
    }

    fn check<T>(&self, kernel: &'static str, inputs: &[&[T]], output: &[T]) -> Result<(), Error> {
        check_same_len(kernel, "number of input slices != prepared inputs", inputs.len(), self.inputs.len())?;
        for (s, i) in inputs.iter().zip(self.inputs) {
            check_same_len(
                kernel,
                "input length != outer · axis_len · inner",
                s.len(),
                self.outer * i.axis_len * self.inner,
            )?;
        }
        check_same_len(kernel, "output length != output shape", output.len(), self.outer * self.axis_len * self.inner)
    }

    /// Walks the blocks: `f(input index, source block, destination block)`.
    fn for_each_block<T>(&self, inputs: &[&[T]], output: &mut [T], mut f: impl FnMut(&ConcatInput, &[T], &mut [T])) {
        let out_block = self.axis_len * self.inner;
        if out_block == 0 {
            return;
        }
        for (o, out) in output.chunks_exact_mut(out_block).enumerate() {
            let mut at = 0usize;
            for (src, meta) in inputs.iter().zip(self.inputs) {
                let n = meta.axis_len * self.inner;
                if let (Some(s), Some(d)) = (src.get(o * n..(o + 1) * n), out.get_mut(at..at + n)) {
                    f(meta, s, d);
                }
                at += n;
            }
        }
    }
}

/// int8 concatenation, bit-exact with TFLite Micro and the TFLite interpreter (inputs with the
/// output's parameters are copied; others requantized as a TFLite `QUANTIZE` operator would).
/// `inputs[i]` holds `outer · inputs[i].axis_len · inner` elements.
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the number or lengths of the slices do not match.
pub fn concat_s8(params: &ConcatParams<'_>, inputs: &[&[i8]], output: &mut [i8]) -> Result<(), Error> {
    params.check("concat_s8", inputs, output)?;
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    params.for_each_block(inputs, output, |meta, s, d| match &meta.requantize {
        None => d.copy_from_slice(s),
        Some(r) => {
            for (o, &x) in d.iter_mut().zip(s) {
                *o = r.apply(x);
            }
        }
    });
    Ok(())
}

/// Concatenation of any element type without requantization (int16, int32, float...).
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the slices do not match or an input was prepared with a
/// requantization (use [`concat_s8`]).
pub fn concat<T: Copy>(params: &ConcatParams<'_>, inputs: &[&[T]], output: &mut [T]) -> Result<(), Error> {
    params.check("concat", inputs, output)?;
    if params.inputs.iter().any(|i| i.requantize.is_some()) {
        return Err(Error::BadKernelArgument { kernel: "concat", reason: "requantizing inputs need concat_s8" });
    }
    params.for_each_block(inputs, output, |_, s, d| d.copy_from_slice(s));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenates_along_each_axis() {
        // a: [2, 2, 1], b: [2, 2, 2] along axis 2; then [1, 2, 2] + [1, 2, 2] along axis 0.
        let a = [1i8, 2, 3, 4];
        let b = [10i8, 11, 12, 13, 14, 15, 16, 17];
        let ins = [ConcatInput::copy(1), ConcatInput::copy(2)];
        let p = ConcatParams::new(&[2, 2, 3], -1, &ins).unwrap();
        let mut out = [0i8; 12];
        concat_s8(&p, &[&a, &b], &mut out).unwrap();
        assert_eq!(out, [1, 10, 11, 2, 12, 13, 3, 14, 15, 4, 16, 17]);
        let ins = [ConcatInput::copy(1), ConcatInput::copy(1)];
        let p = ConcatParams::new(&[2, 2, 2], 0, &ins).unwrap();
        let mut out = [0i16; 8];
        concat(&p, &[&[1, 2, 3, 4], &[5, 6, 7, 8]], &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn requantizes_like_tflite_quantize() {
        let out_q = PerTensorQuant::new(0.1, 0);
        let ins = [
            ConcatInput::prepare_s8(2, PerTensorQuant::new(0.2, 10), out_q).unwrap(),
            ConcatInput::prepare_s8(1, out_q, out_q).unwrap(),
        ];
        assert!(ins[1].requantize.is_none());
        let p = ConcatParams::new(&[3], 0, &ins).unwrap();
        let mut out = [0i8; 3];
        concat_s8(&p, &[&[12, 100], &[-7]], &mut out).unwrap();
        // (12 - 10) · 2 = 4; (100 - 10) · 2 = 180 -> 127; -7 copied.
        assert_eq!(out, [4, 127, -7]);
        assert!(concat(&p, &[&[12i8, 100], &[-7]], &mut out).is_err());
    }

    #[test]
    fn errors() {
        let ins = [ConcatInput::copy(1), ConcatInput::copy(1)];
        assert!(ConcatParams::new(&[2, 3], 2, &ins).is_err());
        assert!(ConcatParams::new(&[3, 3], 0, &ins).is_err());
        assert!(ConcatParams::new(&[2, 3], 0, &[]).is_err());
        let p = ConcatParams::new(&[2, 3], -2, &ins).unwrap();
        let mut out = [0i8; 6];
        assert!(concat_s8(&p, &[&[0; 3]], &mut out).is_err());
        assert!(concat_s8(&p, &[&[0; 3], &[0; 2]], &mut out).is_err());
        assert!(concat_s8(&p, &[&[0; 3], &[0; 3]], &mut out).is_ok());
    }
}
