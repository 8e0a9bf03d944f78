//! The convolutions that may run in place by chunks of output rows
//! ([`crate::kernels::row_chunks`]), and each one's options: rows per chunk, the scratch it
//! then needs (row buffer and kernel scratch) and how far before its input its output starts;
//! and the fully connected ops that may run without their scratch (option `rows: 0`).

use alloc::vec;
use alloc::vec::Vec;

use crate::kernels::common::{Hw, PaddingValues};
use crate::kernels::conv::ConvParams;
use crate::kernels::depthwise_conv::DepthwiseConvParams;
use crate::kernels::row_chunks::{ChunkedWindow, RowChunks, conv_in_place_scratch_len, depthwise_in_place_scratch_len};
use crate::kernels::{ActivationRange, Dims4, Rounding};
use crate::model::{ElementType, ModelBuilder, OpKind, OpSpec};

/// Rows per chunk the planner tries (those up to the output's height).
const ROW_OPTIONS: [usize; 10] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32];

/// One way to run an op in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InPlaceOption {
    /// Output rows per chunk.
    pub rows: u8,
    /// Scratch bytes: the row buffer, then the kernel's.
    pub scratch_len: u32,
    /// `output offset - input offset` (bytes, at most 0, a multiple of the arena alignment).
    pub delta: i64,
}

/// A convolution that may run in place, with its options (fewest rows first).
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub op: usize,
    pub options: Vec<InPlaceOption>,
}

/// The NHWC shape of a 4-D tensor of `b`.
fn dims4(b: &ModelBuilder, t: u32) -> Option<Dims4> {
    match b.tensors().get(t as usize)?.dims() {
        &[n, h, w, c] => Some(Dims4::new(n as usize, h as usize, w as usize, c as usize)),
        _ => None,
    }
}

/// The window of a CONV_2D or DEPTHWISE_CONV_2D from its parameter words (`ConvWords`: strides,
/// dilations, padding; the offsets and clamp do not matter here).
fn window(op: &OpSpec) -> Option<(Hw, Hw, PaddingValues)> {
    let w = |k: usize| op.params.get(k).map(|&v| v as usize);
    let stride = Hw::new(w(0)?, w(1)?);
    let dilation = Hw::new(w(2)?, w(3)?);
    let padding = PaddingValues { top: w(4)?, bottom: w(5)?, left: w(6)?, right: w(7)? };
    Some((stride, dilation, padding))
}

/// Whether chunks `ch` cost a convolution about what the whole image does: the fast paths
/// compute tiles of 4 output pixels, so the chunks may not add more than 3 % of them (plus one).
fn conv_keeps_speed(p: &ConvParams, ch: &RowChunks) -> bool {
    let tiles = |rows: usize| (rows * p.output.w).div_ceil(4);
    let chunked: usize = ch.iter().map(|c| tiles(c.r1 - c.r0)).sum();
    chunked * 100 <= tiles(p.output.h) * 103 + 100
}

/// Whether chunks `ch` cost a depthwise convolution about what the whole image does: where the
/// whole image runs the Arm DSP 3x3 stride-1 kernel (lines of 8 or more outputs), every chunk
/// must too, with at least 8 rows (each chunk widens its 2 extra input rows again; a short chunk
/// falls back to a kernel 3x slower); other shapes take chunks of at least 4 rows.
fn depthwise_keeps_speed(p: &DepthwiseConvParams, ch: &RowChunks) -> bool {
    use crate::kernels::arch::scratch::dw_s1_sweep;
    let rows = ch.iter().map(|c| c.r1 - c.r0).max().unwrap_or(0);
    let s1 = p.filter.h == 3
        && p.filter.w == 3
        && p.depth_multiplier == 1
        && p.stride == Hw::new(1, 1)
        && p.dilation == Hw::new(1, 1)
        && dw_s1_sweep(p.output.h, p.output.w).is_some();
    if !s1 {
        return rows >= 4.min(p.output.h);
    }
    rows >= 8 && ch.iter().all(|c| dw_s1_sweep(c.r1 - c.r0, p.output.w).is_some())
}

/// The options of op `i` of `b` for running in place, none if it cannot (not an int8 CONV_2D or
/// DEPTHWISE_CONV_2D of one image).
pub(crate) fn candidate(b: &ModelBuilder, i: usize, align: usize) -> Option<Candidate> {
    let op = b.ops().get(i)?;
    if op.kind == OpKind::FullyConnected && op.scratch_len > 0 {
        // Its one option: no scratch (the kernel widens its input on the fly, a few % slower),
        // where the scratch is most of the op's bytes (an input row widened to int16 is twice
        // the input: AD's first layer).
        let bytes = |t: Option<&u32>| t.and_then(|&t| b.tensors().get(t as usize)).map_or(0, |t| t.byte_len());
        let io = bytes(op.inputs.first().and_then(Option::as_ref)) + bytes(op.outputs.first());
        return (u64::from(op.scratch_len) > io)
            .then(|| Candidate { op: i, options: vec![InPlaceOption { rows: 0, scratch_len: 0, delta: 0 }] });
    }
    if !matches!(op.kind, OpKind::Conv2d | OpKind::DepthwiseConv2d) {
        return None;
    }
    let (x, y) = ((*op.inputs.first()?)?, *op.outputs.first()?);
    let (xt, yt) = (b.tensors().get(x as usize)?, b.tensors().get(y as usize)?);
    if !xt.is_activation() || !yt.is_activation() || xt.dtype() != ElementType::I8 || yt.dtype() != ElementType::I8 {
        return None;
    }
    let (input, output) = (dims4(b, x)?, dims4(b, y)?);
    let filter = dims4(b, (*op.inputs.get(1)?)?)?;
    if input.n != 1 || output.n != 1 {
        return None;
    }
    let (stride, dilation, padding) = window(op)?;
    let activation = ActivationRange { min: -128, max: 127 };
    let rounding = Rounding::Double;
    let (in_row, out_row) = (input.w * input.c, output.w * output.c);
    let mut options = Vec::new();
    // The fixed row counts, and the output split evenly in 2 to 4 chunks.
    let mut row_counts: Vec<usize> = ROW_OPTIONS.into_iter().chain((2..=4).map(|k| output.h.div_ceil(k))).collect();
    row_counts.sort_unstable();
    row_counts.dedup();
    for rows in row_counts.into_iter().filter(|&r| r >= 1 && r < output.h) {
        let opt = if op.kind == OpKind::Conv2d {
            let p = ConvParams {
                input,
                filter,
                output,
                stride,
                dilation,
                padding,
                input_offset: 0,
                output_offset: 0,
                activation,
                rounding,
            };
            p.row_chunks(rows).filter(|c| conv_keeps_speed(&p, c)).map(|c| (conv_in_place_scratch_len(&p, &c), c))
        } else {
            let depth_multiplier = *op.params.get(12)? as usize;
            let p = DepthwiseConvParams {
                input,
                filter: Hw::new(filter.h, filter.w),
                output,
                depth_multiplier,
                stride,
                dilation,
                padding,
                input_offset: 0,
                output_offset: 0,
                activation,
                rounding,
            };
            p.row_chunks(rows)
                .filter(|c| depthwise_keeps_speed(&p, c))
                .map(|c| (depthwise_in_place_scratch_len(&p, &c), c))
        };
        let Some((scratch, chunks)) = opt else { continue };
        if chunks.iter().any(|c| c.hi <= c.lo) {
            continue;
        }
        let delta = chunks.min_delta(in_row, out_row).div_euclid(align as i64) * align as i64;
        let (Ok(rows), Ok(scratch_len)) = (u8::try_from(rows), u32::try_from(scratch)) else { continue };
        options.push(InPlaceOption { rows, scratch_len, delta });
    }
    (!options.is_empty()).then_some(Candidate { op: i, options })
}
