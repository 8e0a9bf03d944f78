//! In-place convolution by chunks of output rows: the geometry that the planner (which places
//! an op's output over its input) and the interpreter (which runs the op that way) share.
//!
//! A CONV_2D or DEPTHWISE_CONV_2D (int8, one image) whose output is written over its input runs
//! chunk by chunk: chunk `k` computes output rows `[r0, r1)` from input rows `[lo, hi)`, copied
//! first into a small row buffer (the rows the previous chunk copied and this one needs again
//! are moved to the buffer's front instead), with the kernel called on that sub-image (its
//! padding above and below resolved for the chunk) and writing its output rows straight into
//! the arena. Every output value is the one the whole-image call computes (each output row
//! depends only on its input rows; the kernels compute every output exactly), so the result is
//! the same bit for bit; only where the bytes live changes.
//!
//! The output may start before its input (`delta = out_offset - in_offset <= 0`): chunk `k`
//! has written `[out, out + r0 * out_row)` when it reads input rows `[max(lo, hi_prev), hi)`
//! from the arena, so those must lie above: `delta + r0 * out_row <= max(lo, hi_prev) *
//! in_row` for every chunk ([`RowChunks::min_delta`] is the largest `delta` that holds).

use crate::kernels::Dims4;
#[cfg(any(test, feature = "alloc"))]
use crate::kernels::arch;
use crate::kernels::conv::ConvParams;
#[cfg(any(test, feature = "alloc"))]
use crate::kernels::conv::conv_s8_scratch_len;
use crate::kernels::depthwise_conv::DepthwiseConvParams;

/// Most output rows per chunk (the op flags keep it in 8 bits).
pub(crate) const MAX_CHUNK_ROWS: usize = 255;

/// One chunk: output rows `[r0, r1)`, input rows `[lo, hi)`, and the padding above (`top`) and
/// below (`bottom`) its sub-image needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub r0: usize,
    pub r1: usize,
    pub lo: usize,
    pub hi: usize,
    pub top: usize,
    pub bottom: usize,
}

/// The chunks of an op's output rows: the window along the height and the rows per chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowChunks {
    in_h: usize,
    out_h: usize,
    stride: usize,
    /// `(kh - 1) * dilation + 1`.
    span: usize,
    pad_top: usize,
    rows: usize,
}

impl RowChunks {
    /// The chunks of `rows` output rows of a window (input and output heights, filter height,
    /// stride, dilation, padding above); `None` for a zero or oversized chunk or window.
    pub(crate) fn new(
        in_h: usize,
        out_h: usize,
        kh: usize,
        stride: usize,
        dilation: usize,
        pad_top: usize,
        rows: usize,
    ) -> Option<Self> {
        if rows == 0 || rows > MAX_CHUNK_ROWS || kh == 0 || stride == 0 || dilation == 0 || out_h == 0 {
            return None;
        }
        let span = (kh - 1).checked_mul(dilation)?.checked_add(1)?;
        // Every row index below stays far from overflow.
        out_h.checked_mul(stride)?.checked_add(span)?.checked_add(pad_top)?.checked_add(in_h)?;
        Some(Self { in_h, out_h, stride, span, pad_top, rows })
    }

    /// The chunks of a convolution's output rows.
    pub(crate) fn of_conv(p: &ConvParams, rows: usize) -> Option<Self> {
        Self::new(p.input.h, p.output.h, p.filter.h, p.stride.h, p.dilation.h, p.padding.top, rows)
    }

    /// The chunks of a depthwise convolution's output rows.
    pub(crate) fn of_depthwise(p: &DepthwiseConvParams, rows: usize) -> Option<Self> {
        Self::new(p.input.h, p.output.h, p.filter.h, p.stride.h, p.dilation.h, p.padding.top, rows)
    }

    /// Number of chunks.
    pub(crate) fn count(&self) -> usize {
        self.out_h.div_ceil(self.rows.max(1))
    }

    /// Chunk `k` (`k < count()`).
    pub(crate) fn chunk(&self, k: usize) -> Chunk {
        let r0 = (k * self.rows).min(self.out_h);
        let r1 = (r0 + self.rows).min(self.out_h);
        // Virtual (padded) input rows of the chunk: [r0 * s - pad, (r1 - 1) * s - pad + span).
        let start = r0 * self.stride;
        let end = r1.saturating_sub(1) * self.stride + self.span;
        let lo = start.saturating_sub(self.pad_top).min(self.in_h);
        let hi = end.saturating_sub(self.pad_top).min(self.in_h).max(lo);
        let top = self.pad_top.saturating_sub(start);
        let bottom = (end.saturating_sub(self.pad_top)).saturating_sub(self.in_h.max(lo));
        Chunk { r0, r1, lo, hi, top, bottom }
    }

    /// The chunks in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Chunk> + '_ {
        (0..self.count()).map(|k| self.chunk(k))
    }

    /// Most input rows one chunk reads (the row buffer's rows).
    pub(crate) fn max_rows_in(&self) -> usize {
        self.iter().map(|c| c.hi - c.lo).max().unwrap_or(0)
    }

    /// The largest `delta = out_offset - in_offset` (bytes, at most 0) for which no chunk reads
    /// an input row from the arena after an earlier chunk wrote over it, with input rows of
    /// `in_row` bytes and output rows of `out_row` bytes.
    pub(crate) fn min_delta(&self, in_row: usize, out_row: usize) -> i64 {
        let mut delta = 0i64;
        let mut prev_hi = 0usize;
        for c in self.iter() {
            let from_arena = c.lo.max(prev_hi);
            let bound = (from_arena as i64) * (in_row as i64) - (c.r0 as i64) * (out_row as i64);
            delta = delta.min(bound);
            prev_hi = c.hi;
        }
        delta
    }
}

/// Bytes of the row buffer: `max_rows_in` input rows, rounded up to 4 bytes (the kernel's
/// scratch follows it).
pub(crate) fn row_buffer_len(chunks: &RowChunks, in_row: usize) -> usize {
    chunks.max_rows_in().saturating_mul(in_row).div_ceil(4).saturating_mul(4)
}

/// Scratch bytes of an in-place convolution: the row buffer, then the most scratch the kernel
/// takes for its fast path on any chunk ([`conv_s8_scratch_len`]). (The planner's.)
#[cfg(any(test, feature = "alloc"))]
pub(crate) fn conv_in_place_scratch_len(p: &ConvParams, chunks: &RowChunks) -> usize {
    let in_row = p.input.w.saturating_mul(p.input.c);
    let kernel = chunks.iter().map(|c| conv_s8_scratch_len(&p.for_chunk(&c))).max().unwrap_or(0);
    row_buffer_len(chunks, in_row).saturating_add(kernel)
}

/// Scratch bytes of an in-place depthwise convolution: the row buffer, then the most scratch the
/// Arm DSP 3x3 kernels widen a chunk's input into (without the whole-image rule of
/// [`depthwise_conv_s8_scratch_len`](crate::kernels::depthwise_conv::depthwise_conv_s8_scratch_len)
/// that leaves small layers' buffers on the stack: a chunk is small, and the stack stays lean).
/// (The planner's.)
#[cfg(any(test, feature = "alloc"))]
pub(crate) fn depthwise_in_place_scratch_len(p: &DepthwiseConvParams, chunks: &RowChunks) -> usize {
    let in_row = p.input.w.saturating_mul(p.input.c);
    let kernel = if p.filter.h == 3 && p.filter.w == 3 && p.depth_multiplier == 1 {
        chunks
            .iter()
            .map(|c| {
                let q = p.for_chunk(&c);
                let words = arch::scratch::dw3x3_scratch_words(
                    q.input.c,
                    (q.output.h, q.output.w),
                    (q.stride.h, q.stride.w),
                    (q.dilation.h, q.dilation.w),
                    (q.padding.top, q.padding.left),
                );
                if words == 0 { 0 } else { words.saturating_mul(4).saturating_add(4) }
            })
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    row_buffer_len(chunks, in_row).saturating_add(kernel)
}

/// A convolution-like kernel's parameters, cut into chunks of output rows.
pub(crate) trait ChunkedWindow: Sized + Copy {
    /// The chunks of `rows` output rows.
    fn row_chunks(&self, rows: usize) -> Option<RowChunks>;
    /// Makes these parameters (a copy of the whole image's) chunk `c`'s: only the rows of input
    /// and output and the padding above and below change, so one copy serves every chunk (the
    /// device's stack holds it once).
    fn set_chunk(&mut self, c: &Chunk);
    /// The parameters of chunk `c` (the planner's).
    #[cfg(any(test, feature = "alloc"))]
    fn for_chunk(&self, c: &Chunk) -> Self {
        let mut q = *self;
        q.set_chunk(c);
        q
    }
    /// Input and output shapes.
    fn dims(&self) -> (Dims4, Dims4);
    /// Bytes of an input row and of an output row (int8).
    fn row_bytes(&self) -> (usize, usize) {
        let (i, o) = self.dims();
        (i.w * i.c, o.w * o.c)
    }
}

impl ChunkedWindow for ConvParams {
    fn row_chunks(&self, rows: usize) -> Option<RowChunks> {
        RowChunks::of_conv(self, rows)
    }
    fn set_chunk(&mut self, c: &Chunk) {
        (self.input.h, self.output.h, self.padding.top, self.padding.bottom) =
            (c.hi - c.lo, c.r1 - c.r0, c.top, c.bottom);
    }
    fn dims(&self) -> (Dims4, Dims4) {
        (self.input, self.output)
    }
}

impl ChunkedWindow for DepthwiseConvParams {
    fn row_chunks(&self, rows: usize) -> Option<RowChunks> {
        RowChunks::of_depthwise(self, rows)
    }
    fn set_chunk(&mut self, c: &Chunk) {
        (self.input.h, self.output.h, self.padding.top, self.padding.bottom) =
            (c.hi - c.lo, c.r1 - c.r0, c.top, c.bottom);
    }
    fn dims(&self) -> (Dims4, Dims4) {
        (self.input, self.output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every chunk's sub-window has the rows its kernel call checks (`check_window_axis`), and the
    /// chunks cover the output rows once, in order.
    #[test]
    fn chunks_cover_the_output_with_consistent_windows() -> Result<(), &'static str> {
        for in_h in 1..12 {
            for kh in 1..5 {
                for stride in 1..4 {
                    for dilation in 1..3 {
                        let span = (kh - 1) * dilation + 1;
                        for pad_top in 0..span {
                            for pad_bottom in 0..span {
                                let padded = in_h + pad_top + pad_bottom;
                                if padded < span {
                                    continue;
                                }
                                let out_h = (padded - span) / stride + 1;
                                for rows in 1..5 {
                                    let ch = RowChunks::new(in_h, out_h, kh, stride, dilation, pad_top, rows)
                                        .ok_or("chunks")?;
                                    let mut next = 0;
                                    for c in ch.iter() {
                                        if c.r0 != next || c.r1 <= c.r0 {
                                            return Err("chunks do not cover the output in order");
                                        }
                                        next = c.r1;
                                        let ok = crate::kernels::common::check_window_axis(
                                            c.hi - c.lo,
                                            c.top,
                                            c.bottom,
                                            kh,
                                            stride,
                                            dilation,
                                            c.r1 - c.r0,
                                        );
                                        if !ok {
                                            return Err("a chunk's window is inconsistent");
                                        }
                                        // The same input rows as the whole image's window.
                                        if c.lo + pad_top != c.r0 * stride + c.top {
                                            return Err("a chunk starts at the wrong row");
                                        }
                                    }
                                    if next != out_h {
                                        return Err("chunks stop early");
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

    /// A 3x3 stride-1 layer of equal rows needs no offset; growing 1x1 layers start earlier.
    #[test]
    fn min_delta_of_common_layers() -> Result<(), &'static str> {
        let dw = RowChunks::new(25, 25, 3, 1, 1, 1, 1).ok_or("chunks")?;
        if dw.min_delta(320, 320) != 0 {
            return Err("3x3 stride 1: the rolled rows make room");
        }
        let pw = RowChunks::new(48, 48, 1, 1, 1, 0, 1).ok_or("chunks")?;
        if pw.min_delta(384, 384) != 0 || pw.min_delta(384, 768) != -(47 * 384) {
            return Err("1x1: same rows need nothing, wider rows start earlier");
        }
        Ok(())
    }
}
