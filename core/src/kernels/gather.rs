//! Gather along one axis (TFLite `GATHER` with `batch_dims` 0, ONNX `Gather`) of tensors of any
//! element type, by indices known when the op is prepared.
//!
//! With the input seen as `[outer, n, inner]` around the gathered axis (extent `n`), the output is
//! `[outer, k, inner]` for `k` indices: `output[o, j, i] = input[o, indices[j], i]`. The indices'
//! own shape replaces the axis in the output's shape (a scalar index removes it); the data does
//! not depend on it. Every index must lie in `[0, n)` (TFLite rejects others; the converter
//! resolves ONNX's negative indices). Pure data movement: bit-exact with both TFLite runtimes.
#![forbid(unsafe_code)]

use super::tensor::{RuntimeShape, check_same_len, get_or_default};
use crate::Error;

const K: &str = "gather";

/// Prepared gather: the input as `[outer, n, inner]` and the number of indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GatherParams {
    outer: usize,
    n: usize,
    inner: usize,
    count: usize,
}

impl GatherParams {
    /// Prepares gathering `indices` along `axis` of a tensor of `input_shape`.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if `axis` is not an axis of the input, an index lies outside
    /// `[0, n)`, or the output size overflows.
    pub fn new(input_shape: &[usize], axis: usize, indices: &[i32]) -> Result<Self, Error> {
        let shape = RuntimeShape::new(input_shape)?;
        let dims = shape.dims();
        let n = *dims.get(axis).ok_or(Error::BadKernelArgument { kernel: K, reason: "axis out of range" })?;
        let outer: usize = dims.get(..axis).unwrap_or(&[]).iter().product();
        let inner: usize = dims.get(axis + 1..).unwrap_or(&[]).iter().product();
        if indices.iter().any(|&i| i < 0 || i as usize >= n) {
            return Err(Error::BadKernelArgument { kernel: K, reason: "index outside the gathered axis" });
        }
        outer
            .checked_mul(indices.len())
            .and_then(|v| v.checked_mul(inner))
            .ok_or(Error::BadKernelArgument { kernel: K, reason: "output size overflows" })?;
        Ok(Self { outer, n, inner, count: indices.len() })
    }

    /// The number of output elements.
    pub fn output_len(&self) -> usize {
        self.outer * self.count * self.inner
    }
}

/// Gathers `input` by `indices` (those [`GatherParams::new`] checked) into `output` (any element
/// type). Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn gather<T: Copy + Default>(
    p: &GatherParams,
    input: &[T],
    indices: &[i32],
    output: &mut [T],
) -> Result<(), Error> {
    check_same_len(K, "input length != input shape", input.len(), p.outer * p.n * p.inner)?;
    check_same_len(K, "indices length != prepared count", indices.len(), p.count)?;
    check_same_len(K, "output length != gathered size", output.len(), p.output_len())?;
    if p.inner == 0 {
        return Ok(());
    }
    let mut rows = output.chunks_mut(p.inner);
    for o in 0..p.outer {
        for &i in indices {
            // Indices were checked at prepare; wrapping keeps a wrong one a wrong value, not a panic.
            let base = (o * p.n).wrapping_add(i as usize).wrapping_mul(p.inner);
            if let Some(row) = rows.next() {
                for (k, v) in row.iter_mut().enumerate() {
                    *v = get_or_default(input, base.wrapping_add(k));
                }
            }
        }
    }
    Ok(())
}

/// int8 gather. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn gather_s8(p: &GatherParams, input: &[i8], indices: &[i32], output: &mut [i8]) -> Result<(), Error> {
    gather(p, input, indices, output)
}

/// int16 gather. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn gather_s16(p: &GatherParams, input: &[i16], indices: &[i32], output: &mut [i16]) -> Result<(), Error> {
    gather(p, input, indices, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_rows_and_checks_indices() {
        // [2, 3, 2] along axis 1 by [2, 0, 2].
        let x: [i32; 12] = core::array::from_fn(|i| i as i32);
        let p = GatherParams::new(&[2, 3, 2], 1, &[2, 0, 2]).unwrap();
        let mut y = [0; 12];
        gather(&p, &x, &[2, 0, 2], &mut y).unwrap();
        assert_eq!(y, [4, 5, 0, 1, 4, 5, 10, 11, 6, 7, 10, 11]);
        assert!(GatherParams::new(&[2, 3], 1, &[3]).is_err());
        assert!(GatherParams::new(&[2, 3], 1, &[-1]).is_err());
        assert!(GatherParams::new(&[2, 3], 2, &[0]).is_err());
        assert!(gather_s8(&p, &[0; 12], &[2, 0], &mut [0; 12]).is_err());
    }
}
