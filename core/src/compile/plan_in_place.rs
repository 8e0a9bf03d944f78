//! The convolutions that may run in place by chunks of output rows
//! ([`crate::kernels::row_chunks`]), and each one's options: rows per chunk, the scratch it
//! then needs (row buffer and kernel scratch) and how far before its input its output starts.
//! Options keep the speed of the kernels the model is planned for ([`KernelFamily`]).

use alloc::vec::Vec;

use super::KernelFamily;

use crate::kernels::common::{Hw, PaddingValues};
use crate::kernels::conv::ConvParams;
use crate::kernels::depthwise_conv::DepthwiseConvParams;
use crate::kernels::int4;
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

/// Budget of a chunked op on Helium: its estimated instructions at most 103 % of the whole
/// image's (the 3 % the Arm DSP rules allow).
fn within_budget(chunked: usize, whole: usize) -> bool {
    chunked.saturating_mul(100) <= whole.saturating_mul(103)
}

/// Estimated instructions of the Helium convolution (`arm_mve::conv`) on `rows` output rows:
/// per call, zeroing its tables (3 KB) and folding the input offset into each filter's bias
/// (a pass over the filter row); per tile of 4 pixels and filter, 9 instructions per 16 bytes of
/// depth and about 6 to store and requantize.
fn helium_conv_cost(p: &ConvParams, rows: usize) -> usize {
    let k16 = (p.filter.h * p.filter.w * p.filter.c).div_ceil(16);
    let tiles = (rows * p.output.w).div_ceil(4);
    200 + p.output.c * (k16 + 12) + tiles * p.output.c * (9 * k16 + 6)
}

/// Estimated instructions of the Helium depthwise convolution (`arm_mve::depthwise`) on `rows`
/// output rows reading `rows_in` input rows: per call, filling its plane and accumulators (6 KB);
/// per channel, its taps and scalars (about 60), gathering its input rows into the plane (3
/// per 8 values and 6 per row) and about 6 per output (the byte gather and dot product, then the
/// requantization and scatter).
fn helium_depthwise_cost(p: &DepthwiseConvParams, rows: usize, rows_in: usize) -> usize {
    let gather = rows_in * (3 * p.input.w.div_ceil(8) + 6);
    400 + p.input.c * (60 + gather + 6 * rows * p.output.w)
}

/// Whether chunks `ch` keep a convolution's speed on `kernels`: the Arm DSP tiles
/// ([`conv_keeps_speed`]), and on Helium the calls' setup within the budget.
fn conv_keeps_speed_on(kernels: KernelFamily, p: &ConvParams, ch: &RowChunks) -> bool {
    if !conv_keeps_speed(p, ch) {
        return false;
    }
    match kernels {
        KernelFamily::ArmDsp => true,
        KernelFamily::Helium => {
            let chunked: usize = ch.iter().map(|c| helium_conv_cost(p, c.r1 - c.r0)).sum();
            within_budget(chunked, helium_conv_cost(p, p.output.h))
        }
    }
}

/// Whether chunks `ch` keep a depthwise convolution's speed on `kernels`: the Arm DSP rules
/// ([`depthwise_keeps_speed`]); on Helium, the calls' setup and the input rows gathered again
/// within the budget.
fn depthwise_keeps_speed_on(kernels: KernelFamily, p: &DepthwiseConvParams, ch: &RowChunks) -> bool {
    match kernels {
        KernelFamily::ArmDsp => depthwise_keeps_speed(p, ch),
        KernelFamily::Helium => {
            let chunked: usize = ch.iter().map(|c| helium_depthwise_cost(p, c.r1 - c.r0, c.hi - c.lo)).sum();
            within_budget(chunked, helium_depthwise_cost(p, p.output.h, p.input.h))
        }
    }
}

/// The options of op `i` of `b` for running in place on `kernels`, none if it cannot (not an
/// int8 CONV_2D or DEPTHWISE_CONV_2D of one image) or if no chunking keeps its speed there.
pub(crate) fn candidate(b: &ModelBuilder, i: usize, align: usize, kernels: KernelFamily) -> Option<Candidate> {
    let op = b.ops().get(i)?;
    if !matches!(op.kind, OpKind::Conv2d | OpKind::DepthwiseConv2d) {
        return None;
    }
    let (x, y) = ((*op.inputs.first()?)?, *op.outputs.first()?);
    let (xt, yt) = (b.tensors().get(x as usize)?, b.tensors().get(y as usize)?);
    if !xt.is_activation() || !yt.is_activation() || xt.dtype() != ElementType::I8 || yt.dtype() != ElementType::I8 {
        return None;
    }
    let (input, output) = (dims4(b, x)?, dims4(b, y)?);
    let w = (*op.inputs.get(1)?)?;
    let filter = dims4(b, w)?;
    // int4 weights unpacked at the scratch's front (`kernels::int4`), before the row buffer.
    let unpacked = match b.tensors().get(w as usize)?.dtype() {
        ElementType::I4 => int4::unpacked_scratch_len(filter.checked_len()?),
        _ => 0,
    };
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
            p.row_chunks(rows)
                .filter(|c| conv_keeps_speed_on(kernels, &p, c))
                .map(|c| (conv_in_place_scratch_len(&p, &c), c))
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
                .filter(|c| depthwise_keeps_speed_on(kernels, &p, c))
                .map(|c| (depthwise_in_place_scratch_len(&p, &c), c))
        };
        let Some((scratch, chunks)) = opt else { continue };
        if chunks.iter().any(|c| c.hi <= c.lo) {
            continue;
        }
        let delta = chunks.min_delta(in_row, out_row).div_euclid(align as i64) * align as i64;
        let (Ok(rows), Ok(scratch_len)) = (u8::try_from(rows), u32::try_from(unpacked.saturating_add(scratch))) else {
            continue;
        };
        options.push(InPlaceOption { rows, scratch_len, delta });
    }
    (!options.is_empty()).then_some(Candidate { op: i, options })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::Hw;

    /// KWS's inner layers (25 x 5 x 64, SAME): a 3x3 stride-1 depthwise and a 1x1 convolution.
    fn kws_layers() -> (DepthwiseConvParams, ConvParams) {
        let d = Dims4::new(1, 25, 5, 64);
        let activation = ActivationRange { min: -128, max: 127 };
        let dw = DepthwiseConvParams {
            input: d,
            filter: Hw::new(3, 3),
            output: d,
            depth_multiplier: 1,
            stride: Hw::new(1, 1),
            dilation: Hw::new(1, 1),
            padding: PaddingValues { top: 1, bottom: 1, left: 1, right: 1 },
            input_offset: 0,
            output_offset: 0,
            activation,
            rounding: Rounding::Double,
        };
        let pw = ConvParams {
            input: d,
            filter: Dims4::new(64, 1, 1, 64),
            output: d,
            stride: Hw::new(1, 1),
            dilation: Hw::new(1, 1),
            padding: PaddingValues { top: 0, bottom: 0, left: 0, right: 0 },
            input_offset: 0,
            output_offset: 0,
            activation,
            rounding: Rounding::Double,
        };
        (dw, pw)
    }

    /// The row counts of `1..25` each rule keeps.
    fn kept(keep: impl Fn(&RowChunks) -> bool, chunks: impl Fn(usize) -> Option<RowChunks>) -> Vec<usize> {
        (1..25).filter(|&r| chunks(r).is_some_and(|c| keep(&c))).collect()
    }

    /// The Helium kernels' setup per call makes KWS's depthwise layers keep one call (2 chunks
    /// would cost about 10 % more there), where the Arm DSP 3x3 kernel takes 2 chunks (13 rows
    /// and more); its 1x1 convolutions may take a few large chunks on either.
    #[test]
    fn helium_chunks_only_where_their_calls_cost_little() {
        let (dw, pw) = kws_layers();
        let dsp = kept(|c| depthwise_keeps_speed_on(KernelFamily::ArmDsp, &dw, c), |r| dw.row_chunks(r));
        assert!(dsp.contains(&13), "Arm DSP depthwise rows {dsp:?}");
        let helium = kept(|c| depthwise_keeps_speed_on(KernelFamily::Helium, &dw, c), |r| dw.row_chunks(r));
        assert!(helium.is_empty(), "Helium depthwise rows {helium:?}");
        let helium_pw = kept(|c| conv_keeps_speed_on(KernelFamily::Helium, &pw, c), |r| pw.row_chunks(r));
        assert!(helium_pw.iter().all(|&r| r >= 8), "Helium 1x1 rows {helium_pw:?}");
        let dsp_pw = kept(|c| conv_keeps_speed_on(KernelFamily::ArmDsp, &pw, c), |r| pw.row_chunks(r));
        assert!(helium_pw.iter().all(|r| dsp_pw.contains(r)), "Helium {helium_pw:?} within Arm DSP {dsp_pw:?}");
        // The estimates grow with the work: one chunk costs what the whole image does.
        assert_eq!(helium_conv_cost(&pw, 25), helium_conv_cost(&pw, pw.output.h));
        assert!(helium_depthwise_cost(&dw, 8, 10) < helium_depthwise_cost(&dw, 25, 25));
    }
}
