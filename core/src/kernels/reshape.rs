//! Reshape (TFLite `RESHAPE`, and `SQUEEZE`/`EXPAND_DIMS`, which are the same thing on
//! row-major data).
//!
//! A reshape never changes the bytes: the output is the input with another shape. A memory
//! planner therefore treats it as an **alias** (the output tensor shares the input's buffer, and
//! no kernel runs). [`reshape`] is the copy for the one case an alias is impossible: when the
//! input must outlive the output in a different buffer (e.g. a graph input or a constant feeding
//! a reshape whose output is written in place later).
#![forbid(unsafe_code)]

use super::tensor::{MAX_DIMS, RuntimeShape, check_same_len};
use crate::Error;

/// TFLite `RESHAPE` Prepare: the output shape for `new_shape` (at most one `-1`, inferred so the
/// element count is `input_len`).
///
/// # Errors
/// [`Error::BadKernelArgument`] if there is more than one `-1`, a negative extent, a rank above
/// [`MAX_DIMS`], or the element counts cannot match.
pub fn reshape_output_shape(input_len: usize, new_shape: &[i32]) -> Result<RuntimeShape, Error> {
    const K: &str = "reshape";
    if new_shape.len() > MAX_DIMS {
        return Err(Error::BadKernelArgument { kernel: K, reason: "rank above MAX_DIMS (6)" });
    }
    let mut dims = [0usize; MAX_DIMS];
    let mut infer = None;
    let mut known = 1usize;
    for (i, (&d, o)) in new_shape.iter().zip(dims.iter_mut()).enumerate() {
        if d == -1 {
            if infer.replace(i).is_some() {
                return Err(Error::BadKernelArgument { kernel: K, reason: "more than one -1 in the new shape" });
            }
        } else if d < 0 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "negative extent in the new shape" });
        } else {
            *o = d as usize;
            known = known
                .checked_mul(d as usize)
                .ok_or(Error::BadKernelArgument { kernel: K, reason: "element count overflows" })?;
        }
    }
    if let Some(i) = infer {
        if known == 0 || input_len % known != 0 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "-1 cannot be inferred" });
        }
        if let Some(o) = dims.get_mut(i) {
            *o = input_len / known;
        }
    } else if known != input_len {
        return Err(Error::BadKernelArgument { kernel: K, reason: "new shape has another element count" });
    }
    RuntimeShape::new(dims.get(..new_shape.len()).unwrap_or(&[]))
}

/// Copies `input` into `output` (same element count), bit-exact with TFLite in either rounding
/// mode. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the element counts differ.
pub fn reshape<T: Copy>(input: &[T], output: &mut [T]) -> Result<(), Error> {
    check_same_len("reshape", "output element count != input element count", output.len(), input.len())?;
    output.copy_from_slice(input);
    Ok(())
}

/// int8 [`reshape`].
///
/// # Errors
/// [`Error::BadKernelArgument`] if the element counts differ.
pub fn reshape_s8(input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    reshape(input, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_shapes() {
        assert_eq!(reshape_output_shape(48, &[-1, 12]).unwrap().dims(), &[4, 12]);
        assert_eq!(reshape_output_shape(24, &[2, 3, 4]).unwrap().dims(), &[2, 3, 4]);
        assert!(reshape_output_shape(24, &[-1, -1]).is_err());
        assert!(reshape_output_shape(24, &[5, -1]).is_err());
        assert!(reshape_output_shape(24, &[5, 5]).is_err());
        assert!(reshape_output_shape(24, &[-2, 12]).is_err());
    }

    #[test]
    fn copies_or_rejects() {
        let mut out = [0i8; 3];
        reshape_s8(&[1, 2, 3], &mut out).unwrap();
        assert_eq!(out, [1, 2, 3]);
        assert!(reshape_s8(&[1, 2], &mut out).is_err());
    }
}
