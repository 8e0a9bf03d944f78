//! Transpose (TFLite `TRANSPOSE`) of tensors of rank ≤ [`MAX_DIMS`], any element type.
//!
//! `output[i_0, …, i_{r−1}] = input[j]` with `j_{perm[k]} = i_k`, i.e. output dimension `k` is
//! input dimension `perm[k]`. Pure data movement: bit-exact with both TFLite runtimes in either
//! [`Rounding`](super::Rounding) mode.
#![forbid(unsafe_code)]

use super::tensor::{MAX_DIMS, RuntimeShape, at, check_same_len, get_or_default};
use crate::Error;

/// Prepared transpose: the output extents and, per output dimension, the input stride.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TransposeParams {
    /// Output extents right-aligned to [`MAX_DIMS`].
    out: [usize; MAX_DIMS],
    /// Input stride of each output dimension.
    stride: [usize; MAX_DIMS],
    output_shape: RuntimeShape,
    len: usize,
}

impl TransposeParams {
    /// Prepares the transpose of a tensor of `input_shape` by `perm` (a permutation of
    /// `0..rank`; negative entries count from the end).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if `perm` is not a permutation of the input's dimensions or
    /// the rank exceeds [`MAX_DIMS`].
    pub fn new(input_shape: &[usize], perm: &[i32]) -> Result<Self, Error> {
        const K: &str = "transpose";
        let shape = RuntimeShape::new(input_shape)?;
        let rank = shape.rank();
        check_same_len(K, "perm length != input rank", perm.len(), rank)?;
        let mut in_stride = [0usize; MAX_DIMS];
        let mut acc = 1usize;
        for d in (0..rank).rev() {
            if let Some(s) = in_stride.get_mut(d) {
                *s = acc;
            }
            acc = acc.saturating_mul(input_shape.get(d).copied().unwrap_or(1));
        }
        let mut seen = [false; MAX_DIMS];
        let mut out = [1usize; MAX_DIMS];
        let mut stride = [0usize; MAX_DIMS];
        let skip = MAX_DIMS - rank;
        for (k, &p) in perm.iter().enumerate() {
            let p = if p < 0 { p + rank as i32 } else { p };
            if p < 0 || p as usize >= rank {
                return Err(Error::BadKernelArgument { kernel: K, reason: "perm entry out of range" });
            }
            let p = p as usize;
            match seen.get_mut(p) {
                Some(s) if !*s => *s = true,
                _ => return Err(Error::BadKernelArgument { kernel: K, reason: "perm repeats a dimension" }),
            }
            if let (Some(o), Some(s)) = (out.get_mut(skip + k), stride.get_mut(skip + k)) {
                *o = input_shape.get(p).copied().unwrap_or(1);
                *s = at(&in_stride, p);
            }
        }
        let output_shape = RuntimeShape::new(out.get(skip..).unwrap_or(&[]))?;
        Ok(Self { out, stride, output_shape, len: shape.len() })
    }

    /// The transposed shape.
    pub fn output_shape(&self) -> RuntimeShape {
        self.output_shape
    }
}

/// Transposes `input` into `output` (any element type).
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shape.
pub fn transpose<T: Copy + Default>(params: &TransposeParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    check_same_len("transpose", "input length != input shape", input.len(), params.len)?;
    check_same_len("transpose", "output length != input length", output.len(), params.len)?;
    let inner = at(&params.out, MAX_DIMS - 1);
    if output.is_empty() || inner == 0 {
        return Ok(());
    }
    let inner_stride = at(&params.stride, MAX_DIMS - 1);
    let mut idx = [0usize; MAX_DIMS];
    let mut base = 0usize;
    for row in output.chunks_mut(inner) {
        let mut j = base;
        for o in row.iter_mut() {
            *o = get_or_default(input, j);
            j = j.wrapping_add(inner_stride);
        }
        for d in (0..MAX_DIMS - 1).rev() {
            let (Some(i), e, st) = (idx.get_mut(d), at(&params.out, d), at(&params.stride, d)) else { break };
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

/// int8 transpose. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shape.
pub fn transpose_s8(params: &TransposeParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    // Dispatch point: an optimized variant (kernels/arch/) slots in here.
    transpose(params, input, output)
}

/// int16 transpose. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shape.
pub fn transpose_s16(params: &TransposeParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    transpose(params, input, output)
}

/// int32 transpose. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shape.
pub fn transpose_s32(params: &TransposeParams, input: &[i32], output: &mut [i32]) -> Result<(), Error> {
    transpose(params, input, output)
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn naive(shape: &[usize], perm: &[usize], input: &[i32]) -> Vec<i32> {
        let r = shape.len();
        let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut flat| {
                let mut oi = std::vec![0; r];
                for d in (0..r).rev() {
                    oi[d] = flat % out[d];
                    flat /= out[d];
                }
                let mut ii = std::vec![0; r];
                for k in 0..r {
                    ii[perm[k]] = oi[k];
                }
                input[ii.iter().zip(shape).fold(0, |o, (&i, &s)| o * s + i)]
            })
            .collect()
    }

    #[test]
    fn matches_naive_for_all_4d_permutations_and_some_6d() {
        let shape = [2usize, 3, 4, 5];
        let input: Vec<i32> = (0..120).collect();
        let mut count = 0;
        for a in 0..4 {
            for b in 0..4 {
                for c in 0..4 {
                    for d in 0..4 {
                        let perm = [a, b, c, d];
                        let mut s = perm;
                        s.sort();
                        if s != [0, 1, 2, 3] {
                            continue;
                        }
                        let p = TransposeParams::new(&shape, &perm.map(|v| v as i32)).unwrap();
                        let mut out = std::vec![0; 120];
                        transpose(&p, &input, &mut out).unwrap();
                        assert_eq!(out, naive(&shape, &perm, &input), "{perm:?}");
                        count += 1;
                    }
                }
            }
        }
        assert_eq!(count, 24);
        let shape6 = [2usize, 1, 3, 2, 1, 2];
        let input: Vec<i32> = (0..24).collect();
        for perm in [[5usize, 4, 3, 2, 1, 0], [1, 0, 3, 2, 5, 4], [2, 0, 5, 1, 3, 4]] {
            let p = TransposeParams::new(&shape6, &perm.map(|v| v as i32)).unwrap();
            let mut out = std::vec![0; 24];
            transpose(&p, &input, &mut out).unwrap();
            assert_eq!(out, naive(&shape6, &perm, &input), "{perm:?}");
        }
    }

    #[test]
    fn errors() {
        assert!(TransposeParams::new(&[2, 3], &[0, 0]).is_err());
        assert!(TransposeParams::new(&[2, 3], &[0, 2]).is_err());
        assert!(TransposeParams::new(&[2, 3], &[0]).is_err());
        let p = TransposeParams::new(&[2, 3], &[-1, 0]).unwrap();
        assert_eq!(p.output_shape().dims(), &[3, 2]);
        let mut out = [0i8; 6];
        transpose_s8(&p, &[1, 2, 3, 4, 5, 6], &mut out).unwrap();
        assert_eq!(out, [1, 4, 2, 5, 3, 6]);
        assert!(transpose_s8(&p, &[1, 2, 3], &mut out).is_err());
    }
}
