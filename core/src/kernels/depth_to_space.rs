//! Depth to space and space to depth (TFLite `DEPTH_TO_SPACE`, `SPACE_TO_DEPTH`; ONNX
//! `DepthToSpace` in both modes, `SpaceToDepth`) on NHWC tensors, any element type.
//!
//! With block size `b`, depth to space moves channel group `(i, j)` of each input pixel to the
//! `b x b` output pixels `(h·b + i, w·b + j)`: output `[n, h·b + i, w·b + j, c]` is input
//! `[n, h, w, (i·b + j)·C + c]` (TFLite's order, ONNX's `DCR` mode), or input
//! `[n, h, w, c·b² + i·b + j]` (ONNX's `CRD` mode, which TFLite does not have). Space to depth is
//! the inverse of the first. Pure data movement: bit-exact with both TFLite runtimes; TFLite
//! requires the input's and output's quantization to be equal.
#![forbid(unsafe_code)]

use super::Dims4;
use super::tensor::{check_same_len, get_or_default};
use crate::Error;

/// Which way the data moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SpaceDepthMode {
    /// Depth to space, channels ordered (block row, block column, channel): TFLite, ONNX `DCR`.
    DepthToSpaceDcr,
    /// Depth to space, channels ordered (channel, block row, block column): ONNX `CRD`.
    DepthToSpaceCrd,
    /// Space to depth (TFLite, ONNX): output channel `(i·b + j)·C + c`.
    SpaceToDepth,
}

/// Prepared depth to space / space to depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SpaceDepthParams {
    input: Dims4,
    output: Dims4,
    block: usize,
    mode: SpaceDepthMode,
}

impl SpaceDepthParams {
    /// Prepares the op on an NHWC input of `input` dims with block size `block`.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for a block size below 1, channels (depth to space) or
    /// height and width (space to depth) that are not multiples of it, or sizes that overflow.
    pub fn new(input: Dims4, block: usize, mode: SpaceDepthMode) -> Result<Self, Error> {
        const K: &str = "depth_to_space";
        let bad = |reason| Error::BadKernelArgument { kernel: K, reason };
        let bb = block.checked_mul(block).filter(|&b| b > 0).ok_or(bad("block size below 1 or too large"))?;
        let output = match mode {
            SpaceDepthMode::SpaceToDepth => {
                if input.h.checked_rem(block) != Some(0) || input.w.checked_rem(block) != Some(0) {
                    return Err(bad("height and width must be multiples of the block size"));
                }
                let c = input.c.checked_mul(bb).ok_or(bad("output channels overflow"))?;
                Dims4::new(input.n, input.h.checked_div(block).unwrap_or(0), input.w.checked_div(block).unwrap_or(0), c)
            }
            _ => {
                if input.c.checked_rem(bb) != Some(0) {
                    return Err(bad("channels must be a multiple of the block size squared"));
                }
                let h = input.h.checked_mul(block).ok_or(bad("output height overflows"))?;
                let w = input.w.checked_mul(block).ok_or(bad("output width overflows"))?;
                Dims4::new(input.n, h, w, input.c.checked_div(bb).unwrap_or(0))
            }
        };
        if input.checked_len().is_none() {
            return Err(bad("input size overflows"));
        }
        Ok(Self { input, output, block, mode })
    }

    /// The output dims.
    pub fn output(&self) -> Dims4 {
        self.output
    }
}

/// Runs the prepared op (any element type). Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn space_depth<T: Copy + Default>(p: &SpaceDepthParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    const K: &str = "depth_to_space";
    check_same_len(K, "input length != input dims", input.len(), p.input.checked_len().unwrap_or(0))?;
    check_same_len(K, "output length != output dims", output.len(), p.output.checked_len().unwrap_or(0))?;
    let b = p.block;
    // The depth-side tensor (channels b²·C) and the space-side tensor (h·b, w·b, C).
    let (deep, shallow) = match p.mode {
        SpaceDepthMode::SpaceToDepth => (p.output, p.input),
        _ => (p.input, p.output),
    };
    let c = shallow.c;
    // Walks the depth-side tensor in order; `s` is the matching space-side index.
    for n in 0..deep.n {
        for h in 0..deep.h {
            for w in 0..deep.w {
                let deep_base = ((n * deep.h + h) * deep.w + w) * deep.c;
                for i in 0..b {
                    for j in 0..b {
                        let row = ((n * shallow.h + h * b + i) * shallow.w + w * b + j) * c;
                        for ch in 0..c {
                            let d = match p.mode {
                                SpaceDepthMode::DepthToSpaceCrd => deep_base + (ch * b + i) * b + j,
                                _ => deep_base + (i * b + j) * c + ch,
                            };
                            let s = row + ch;
                            match p.mode {
                                SpaceDepthMode::SpaceToDepth => {
                                    if let Some(o) = output.get_mut(d) {
                                        *o = get_or_default(input, s);
                                    }
                                }
                                _ => {
                                    if let Some(o) = output.get_mut(s) {
                                        *o = get_or_default(input, d);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// int8 depth to space / space to depth. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn space_depth_s8(p: &SpaceDepthParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    space_depth(p, input, output)
}

/// int16 depth to space / space to depth. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn space_depth_s16(p: &SpaceDepthParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    space_depth(p, input, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_modes() {
        // 1x1x1x8, block 2: DCR gives 2x2 pixels of 2 channels: [0,1],[2,3],[4,5],[6,7].
        let x: [i32; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
        let p = SpaceDepthParams::new(Dims4::new(1, 1, 1, 8), 2, SpaceDepthMode::DepthToSpaceDcr).unwrap();
        assert_eq!(p.output(), Dims4::new(1, 2, 2, 2));
        let mut y = [0; 8];
        space_depth(&p, &x, &mut y).unwrap();
        assert_eq!(y, x);
        // CRD: channel c of pixel (i, j) is c·4 + i·2 + j.
        let p = SpaceDepthParams::new(Dims4::new(1, 1, 1, 8), 2, SpaceDepthMode::DepthToSpaceCrd).unwrap();
        space_depth(&p, &x, &mut y).unwrap();
        assert_eq!(y, [0, 4, 1, 5, 2, 6, 3, 7]);
        // Space to depth undoes DCR.
        let x: [i32; 32] = core::array::from_fn(|i| i as i32);
        let d = SpaceDepthParams::new(Dims4::new(2, 2, 2, 4), 2, SpaceDepthMode::DepthToSpaceDcr).unwrap();
        let s = SpaceDepthParams::new(d.output(), 2, SpaceDepthMode::SpaceToDepth).unwrap();
        let (mut a, mut b) = ([0; 32], [0; 32]);
        space_depth(&d, &x, &mut a).unwrap();
        space_depth(&s, &a, &mut b).unwrap();
        assert_eq!(b, x);
        assert!(SpaceDepthParams::new(Dims4::new(1, 3, 2, 1), 2, SpaceDepthMode::SpaceToDepth).is_err());
        assert!(SpaceDepthParams::new(Dims4::new(1, 1, 1, 6), 2, SpaceDepthMode::DepthToSpaceDcr).is_err());
        assert!(SpaceDepthParams::new(Dims4::new(1, 1, 1, 4), 0, SpaceDepthMode::DepthToSpaceDcr).is_err());
        assert!(space_depth_s8(&d, &[0; 3], &mut [0; 32]).is_err());
    }
}
