//! Tiling and broadcasting (TFLite `BROADCAST_TO` and `TILE`, ONNX `Expand` and `Tile`) of
//! tensors of rank ≤ [`MAX_DIMS`], any element type.
//!
//! The input's shape is right-aligned to the output's (missing leading extents are 1); every
//! output extent is a multiple of the input's, and output index `o` along a dimension of input
//! extent `n` reads input index `o mod n`: a broadcast where `n` is 1, a tiling otherwise. Pure
//! data movement: bit-exact with both TFLite runtimes.
#![forbid(unsafe_code)]

use super::tensor::{MAX_DIMS, RuntimeShape, at, check_same_len, get_or_default};
use crate::Error;

const K: &str = "tile";

/// Prepared tiling: input and output extents right-aligned to [`MAX_DIMS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TileParams {
    input: [usize; MAX_DIMS],
    output: [usize; MAX_DIMS],
    in_len: usize,
    out_len: usize,
}

impl TileParams {
    /// Prepares tiling a tensor of `input_shape` to `output_shape`.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if the output has fewer dimensions than the input, an output
    /// extent is not a multiple of the input's (or the input's is 0 under a non-zero output), or
    /// a shape is too large.
    pub fn new(input_shape: &[usize], output_shape: &[usize]) -> Result<Self, Error> {
        let (i, o) = (RuntimeShape::new(input_shape)?, RuntimeShape::new(output_shape)?);
        if i.rank() > o.rank() {
            return Err(Error::BadKernelArgument { kernel: K, reason: "output rank below the input's" });
        }
        let (input, output) = (i.extended(), o.extended());
        for d in 0..MAX_DIMS {
            let (n, m) = (at(&input, d), at(&output, d));
            let fits = if n == 0 { m == 0 } else { m.checked_rem(n) == Some(0) };
            if !fits {
                return Err(Error::BadKernelArgument {
                    kernel: K,
                    reason: "output extent not a multiple of the input's",
                });
            }
        }
        Ok(Self { input, output, in_len: i.len(), out_len: o.len() })
    }

    /// The number of output elements.
    pub fn output_len(&self) -> usize {
        self.out_len
    }
}

/// Tiles `input` into `output` (any element type). Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn tile<T: Copy + Default>(p: &TileParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    check_same_len(K, "input length != input shape", input.len(), p.in_len)?;
    check_same_len(K, "output length != output shape", output.len(), p.out_len)?;
    let (inner_out, inner_in) = (at(&p.output, MAX_DIMS - 1), at(&p.input, MAX_DIMS - 1));
    if output.is_empty() || inner_out == 0 || inner_in == 0 {
        return Ok(());
    }
    let mut stride = [0usize; MAX_DIMS];
    let mut acc = 1usize;
    for d in (0..MAX_DIMS).rev() {
        if let Some(s) = stride.get_mut(d) {
            *s = acc;
        }
        acc = acc.saturating_mul(at(&p.input, d));
    }
    let mut idx = [0usize; MAX_DIMS];
    for row in output.chunks_mut(inner_out) {
        let mut base = 0usize;
        for d in 0..MAX_DIMS - 1 {
            base += at(&idx, d).checked_rem(at(&p.input, d)).unwrap_or(0) * at(&stride, d);
        }
        let src = input.get(base..base + inner_in).unwrap_or(&[]);
        // The input row repeated along the output row.
        let mut k = 0;
        for o in row.iter_mut() {
            *o = get_or_default(src, k);
            k += 1;
            if k == inner_in {
                k = 0;
            }
        }
        for d in (0..MAX_DIMS - 1).rev() {
            let (Some(i), e) = (idx.get_mut(d), at(&p.output, d)) else { break };
            *i += 1;
            if *i < e {
                break;
            }
            *i = 0;
        }
    }
    Ok(())
}

/// int8 tiling. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn tile_s8(p: &TileParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    tile(p, input, output)
}

/// int16 tiling. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn tile_s16(p: &TileParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    tile(p, input, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_and_broadcasts() {
        // [2, 1] → [3, 2, 2]: broadcast the last axis, add a leading one.
        let p = TileParams::new(&[2, 1], &[3, 2, 2]).unwrap();
        let mut y = [0; 12];
        tile(&p, &[1, 2], &mut y).unwrap();
        assert_eq!(y, [1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2]);
        // [2] tiled 3 times.
        let p = TileParams::new(&[2], &[6]).unwrap();
        let mut y = [0; 6];
        tile(&p, &[4, 5], &mut y).unwrap();
        assert_eq!(y, [4, 5, 4, 5, 4, 5]);
        assert!(TileParams::new(&[2], &[3]).is_err());
        assert!(TileParams::new(&[2, 2], &[4]).is_err());
        assert!(tile_s8(&p, &[1], &mut [0; 6]).is_err());
    }
}
