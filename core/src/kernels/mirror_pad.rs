//! Mirror and edge padding (TFLite `MIRROR_PAD` in `REFLECT` and `SYMMETRIC` modes; ONNX `Pad`
//! in `reflect` and `edge` modes) of tensors of rank ≤ [`MAX_DIMS`], any element type.
//!
//! Along each dimension of extent `n` padded by `before`, output index `o` reads input index
//! `i = o − before` when `0 ≤ i < n`, and otherwise its mirror: `REFLECT` (ONNX `reflect`) does
//! not repeat the edge (`−1 → 1`, `n → n − 2`), `SYMMETRIC` does (`−1 → 0`, `n → n − 1`), and
//! `EDGE` (ONNX `edge`, which TFLite does not have) repeats the edge element (`i < 0 → 0`,
//! `i ≥ n → n − 1`). TFLite allows paddings up to `n − 1` (reflect) or `n` (symmetric); edge
//! padding takes any. Pure data movement: bit-exact with both TFLite runtimes.
#![forbid(unsafe_code)]

use super::tensor::{MAX_DIMS, RuntimeShape, at, check_same_len, get_or_default};
use crate::Error;

const K: &str = "mirror_pad";

/// How the padding mirrors the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MirrorPadMode {
    /// Mirror without repeating the edge (TFLite `REFLECT`, ONNX `reflect`).
    Reflect,
    /// Mirror repeating the edge (TFLite `SYMMETRIC`).
    Symmetric,
    /// Repeat the edge element (ONNX `edge`).
    Edge,
}

impl MirrorPadMode {
    /// The code stored in a `.mq` file (and TFLite's `MirrorPadMode`: 0 reflect, 1 symmetric).
    pub const fn code(self) -> u32 {
        match self {
            MirrorPadMode::Reflect => 0,
            MirrorPadMode::Symmetric => 1,
            MirrorPadMode::Edge => 2,
        }
    }

    /// The mode of a stored code.
    pub const fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(MirrorPadMode::Reflect),
            1 => Some(MirrorPadMode::Symmetric),
            2 => Some(MirrorPadMode::Edge),
            _ => None,
        }
    }

    /// The input index read by padded index `i` (`i < 0` or `i ≥ n`) of a dimension of extent
    /// `n ≥ 1`, for paddings [`MirrorPadParams::new`] accepted.
    fn source(self, i: isize, n: isize) -> usize {
        let j = if i < 0 {
            match self {
                MirrorPadMode::Reflect => -i,
                MirrorPadMode::Symmetric => -i - 1,
                MirrorPadMode::Edge => 0,
            }
        } else if i >= n {
            match self {
                MirrorPadMode::Reflect => 2 * n - 2 - i,
                MirrorPadMode::Symmetric => 2 * n - 1 - i,
                MirrorPadMode::Edge => n - 1,
            }
        } else {
            i
        };
        // Paddings were checked against `n`; the bounds only keep a wrong call from panicking.
        j.min(n - 1).max(0) as usize
    }
}

/// Prepared mirror padding: shapes right-aligned to [`MAX_DIMS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MirrorPadParams {
    input: [usize; MAX_DIMS],
    before: [usize; MAX_DIMS],
    output: [usize; MAX_DIMS],
    output_shape: RuntimeShape,
    in_len: usize,
    mode: MirrorPadMode,
}

impl MirrorPadParams {
    /// Prepares padding of a tensor of `input_shape` by `paddings[d] = [before, after]`.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if `paddings` has not one pair per dimension, a padding is
    /// negative or larger than the mode allows (`n − 1` reflect, `n` symmetric), a padded
    /// dimension is empty, or a shape is too large.
    pub fn new(input_shape: &[usize], paddings: &[[i32; 2]], mode: MirrorPadMode) -> Result<Self, Error> {
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
            let n = at(&input, skip + d);
            if b < 0 || a < 0 {
                return Err(Error::BadKernelArgument { kernel: K, reason: "negative padding" });
            }
            let limit = match mode {
                MirrorPadMode::Reflect => n.saturating_sub(1),
                MirrorPadMode::Symmetric => n,
                MirrorPadMode::Edge => usize::MAX,
            };
            if (b > 0 || a > 0) && (n == 0 || b as usize > limit || a as usize > limit) {
                return Err(Error::BadKernelArgument { kernel: K, reason: "padding larger than the mode allows" });
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
        Ok(Self { input, before, output, output_shape, in_len: in_shape.len(), mode })
    }

    /// The padded output shape.
    pub fn output_shape(&self) -> RuntimeShape {
        self.output_shape
    }
}

/// Pads `input` into `output` (any element type). Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn mirror_pad<T: Copy + Default>(p: &MirrorPadParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    check_same_len(K, "input length != input shape", input.len(), p.in_len)?;
    check_same_len(K, "output length != padded shape", output.len(), p.output_shape.len())?;
    let inner = at(&p.output, MAX_DIMS - 1);
    if output.is_empty() || inner == 0 {
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
    let src = |d: usize, o: usize| -> usize {
        let (n, b) = (at(&p.input, d) as isize, at(&p.before, d) as isize);
        p.mode.source(o as isize - b, n)
    };
    let mut idx = [0usize; MAX_DIMS];
    for row in output.chunks_mut(inner) {
        let mut base = 0usize;
        for d in 0..MAX_DIMS - 1 {
            base += src(d, at(&idx, d)) * at(&stride, d);
        }
        for (j, o) in row.iter_mut().enumerate() {
            *o = get_or_default(input, base + src(MAX_DIMS - 1, j));
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

/// int8 mirror padding. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn mirror_pad_s8(p: &MirrorPadParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    mirror_pad(p, input, output)
}

/// int16 mirror padding. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn mirror_pad_s16(p: &MirrorPadParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    mirror_pad(p, input, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        let x = [1, 2, 3];
        let mut y = [0; 7];
        for (mode, want) in [
            (MirrorPadMode::Reflect, [3, 2, 1, 2, 3, 2, 1]),
            (MirrorPadMode::Symmetric, [2, 1, 1, 2, 3, 3, 2]),
            (MirrorPadMode::Edge, [1, 1, 1, 2, 3, 3, 3]),
        ] {
            let p = MirrorPadParams::new(&[3], &[[2, 2]], mode).unwrap();
            mirror_pad(&p, &x, &mut y).unwrap();
            assert_eq!(y, want, "{mode:?}");
        }
        assert!(MirrorPadParams::new(&[3], &[[3, 0]], MirrorPadMode::Reflect).is_err());
        assert!(MirrorPadParams::new(&[3], &[[3, 0]], MirrorPadMode::Symmetric).is_ok());
        assert!(MirrorPadParams::new(&[3], &[[4, 0]], MirrorPadMode::Symmetric).is_err());
        assert!(MirrorPadParams::new(&[3], &[[9, 9]], MirrorPadMode::Edge).is_ok());
        assert!(MirrorPadParams::new(&[0], &[[1, 0]], MirrorPadMode::Edge).is_err());
        let p = MirrorPadParams::new(&[3], &[[1, 0]], MirrorPadMode::Edge).unwrap();
        assert!(mirror_pad_s8(&p, &[1, 2], &mut [0; 4]).is_err());
    }
}
