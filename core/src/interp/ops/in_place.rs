//! CONV_2D and DEPTHWISE_CONV_2D in place, by chunks of output rows
//! ([`crate::kernels::row_chunks`]): the op's writable region is the span of its input and its
//! output (the planner placed the output over the input, `delta = out - in <= 0` bytes apart),
//! and its scratch starts with a row buffer. Each chunk's input rows are copied into the buffer
//! (those the previous chunk copied and this one needs again are moved to its front), then the
//! kernel runs on that sub-image and writes the chunk's output rows into the arena: the same
//! kernel, the same values as the whole-image call, bit for bit.

use super::common::{ArenaRange, Ctx};
use crate::Error;
use crate::kernels::row_chunks::{Chunk, ChunkedWindow, row_buffer_len};
use crate::model::ElementType;

/// An in-place op's layout: rows per chunk, where input and output start in its writable
/// region, and the row buffer's bytes at the start of its scratch.
#[derive(Clone, Copy)]
pub(crate) struct InPlace {
    rows: usize,
    in_rel: usize,
    out_rel: usize,
    buf_len: usize,
}

/// The writable region of an op that runs in place by chunks: the span of its input 0 and its
/// output.
pub(crate) fn span(x: ArenaRange, y: ArenaRange) -> Option<ArenaRange> {
    let start = x.0.min(y.0);
    let end = x.0.checked_add(x.1)?.max(y.0.checked_add(y.1)?);
    Some((start, end - start))
}

/// The in-place layout of the conv-like op in `ctx` with parameters `p`, checked (`None` when
/// the op does not run in place): int8, one image, the chunks' windows inside the image, no
/// chunk reading an input row after an earlier one wrote over it, the row buffer inside the
/// scratch after its first `reserved` bytes (an int4 filter's unpacked values).
pub(crate) fn prepare<P: ChunkedWindow>(
    ctx: &Ctx,
    p: &P,
    dtype: ElementType,
    reserved: usize,
) -> Result<Option<InPlace>, Error> {
    let rows = usize::from(ctx.op.chunk_rows());
    if rows == 0 {
        return Ok(None);
    }
    let bad = |r| Err(ctx.bad(r));
    let (ind, outd) = p.dims();
    if dtype != ElementType::I8 || ind.n != 1 || outd.n != 1 {
        return bad("only int8 convolutions of one image run in place");
    }
    let Some(chunks) = p.row_chunks(rows) else { return bad("bad rows per chunk for an in-place convolution") };
    if chunks.iter().any(|c| c.hi <= c.lo) {
        return bad("an in-place convolution's chunk reads no input row");
    }
    let x = ctx.region(&ctx.input(0)?)?;
    let y = ctx.region(&ctx.output()?)?;
    let (in_row, out_row) = (ind.w * ind.c, outd.w * outd.c);
    let delta = y.0 as i64 - x.0 as i64;
    if delta > chunks.min_delta(in_row, out_row) {
        return bad("an in-place convolution's output would overwrite input rows before they are read");
    }
    let buf_len = row_buffer_len(&chunks, in_row);
    if (ctx.op.scratch_len as usize) < buf_len.saturating_add(reserved) {
        return bad("an in-place convolution's scratch is smaller than its row buffer");
    }
    let start = x.0.min(y.0);
    Ok(Some(InPlace { rows, in_rel: x.0 - start, out_rel: y.0 - start, buf_len }))
}

/// `dst[i] = src[i]` for the shorter of the two (a loop the compiler turns into a copy, with
/// no length check that could panic).
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

/// Moves the rows `[from, from + n)` of `buf` (rows of `row` bytes) to `[0, n)`, row by row
/// (`from >= 1`: each row moves down to bytes the rows after it do not hold).
fn move_rows_down(buf: &mut [u8], from: usize, n: usize, row: usize) {
    if from == 0 {
        return;
    }
    for j in 0..n {
        let Some((head, tail)) = buf.split_at_mut_checked((from + j) * row) else { return };
        if let Some(dst) = head.get_mut(j * row..(j + 1) * row) {
            copy_bytes(dst, tail);
        }
    }
}

/// Copies chunk `c`'s input rows into `buf` (moving those the buffer holds already, rows
/// `held` of the previous chunk, to its front) and returns its input bytes. Not inlined: its
/// locals are gone when the kernel runs (the device's stack).
#[inline(never)]
fn stage<'b>(
    ip: &InPlace,
    c: &Chunk,
    held: (usize, usize),
    in_row: usize,
    region: &[u8],
    buf: &'b mut [u8],
) -> Option<&'b [i8]> {
    let mut from = c.lo;
    if held.1 > c.lo && c.lo >= held.0 {
        move_rows_down(buf, c.lo - held.0, held.1 - c.lo, in_row);
        from = held.1.min(c.hi);
    }
    let src = region.get(ip.in_rel + from * in_row..ip.in_rel + c.hi * in_row)?;
    copy_bytes(buf.get_mut((from - c.lo) * in_row..(c.hi - c.lo) * in_row)?, src);
    buf.get(..(c.hi - c.lo) * in_row).map(bytemuck::cast_slice)
}

/// The error of an in-place run whose layout does not fit its regions (load-time checks make
/// it unreachable). Out of line: the loop keeps only `idx` for it.
#[cold]
#[inline(never)]
fn outside(idx: u32) -> Error {
    Error::BadOp { index: idx, reason: "in-place convolution outside its regions" }
}

/// Runs an op in place: `region` is its writable span (input and output), `scratch` its
/// scratch (the row buffer, then the kernel's), `kernel` the whole-image kernel called on each
/// chunk's parameters, input rows, output rows and scratch. Not inlined: one frame between the
/// op's glue and the kernel's, kept lean for the device's stack: one copy of the parameters,
/// edited for each chunk ([`ChunkedWindow::set_chunk`]), and few other live values.
#[inline(never)]
pub(crate) fn run<P: ChunkedWindow>(
    ip: &InPlace,
    p: &P,
    region: &mut [u8],
    scratch: &mut [u8],
    idx: u32,
    mut kernel: impl FnMut(&P, &[i8], &mut [i8], &mut [u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    let Some(chunks) = p.row_chunks(ip.rows) else { return Err(outside(idx)) };
    let Some((buf, kernel_scratch)) = scratch.split_at_mut_checked(ip.buf_len) else { return Err(outside(idx)) };
    let out_row = p.row_bytes().1;
    let mut q = *p;
    // Input rows the buffer holds.
    let mut held = (0usize, 0usize);
    for k in 0..chunks.count() {
        let c = chunks.chunk(k);
        let Some(input) = stage(ip, &c, held, p.row_bytes().0, region, buf) else { return Err(outside(idx)) };
        held = (c.lo, c.hi);
        let Some(output) = region.get_mut(ip.out_rel + c.r0 * out_row..ip.out_rel + c.r1 * out_row) else {
            return Err(outside(idx));
        };
        q.set_chunk(&c);
        kernel(&q, input, bytemuck::cast_slice_mut(output), kernel_scratch)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::kernels::arch::test_rng::Rng;
    use crate::kernels::common::{Hw, Padding, compute_window};
    use crate::kernels::conv::{ConvParams, conv_s8, conv_s8_scratch_len};
    use crate::kernels::depthwise_conv::{DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_scratch_len};
    use crate::kernels::row_chunks::{conv_in_place_scratch_len, depthwise_in_place_scratch_len};
    use crate::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};

    fn fail(reason: &'static str) -> Error {
        Error::InvalidArgument { reason }
    }

    /// Runs `p` in place with `rows` per chunk (output `delta` bytes before the input, the
    /// planner's rounding to 16) over garbage around the input, and returns the output bytes.
    fn in_place_output<P: ChunkedWindow>(
        p: &P,
        rows: usize,
        input: &[i8],
        scratch_len: impl Fn(&RowChunksOf) -> usize,
        kernel: impl FnMut(&P, &[i8], &mut [i8], &mut [u8]) -> Result<(), Error>,
    ) -> Result<Option<Vec<i8>>, Error> {
        let (ind, outd) = p.dims();
        let (in_row, out_row) = (ind.w * ind.c, outd.w * outd.c);
        let chunks = p.row_chunks(rows).ok_or(fail("chunks"))?;
        if chunks.iter().any(|c| c.hi <= c.lo) {
            return Ok(None);
        }
        let delta = chunks.min_delta(in_row, out_row).div_euclid(16) * 16;
        let in_rel = (-delta) as usize;
        let out_len = outd.h * out_row;
        let mut region = vec![0x5Au8; (in_rel + input.len()).max(out_len)];
        for (d, s) in region[in_rel..].iter_mut().zip(input) {
            *d = *s as u8;
        }
        let mut scratch = vec![0xA5u8; scratch_len(&chunks)];
        let ip = InPlace { rows, in_rel, out_rel: 0, buf_len: row_buffer_len(&chunks, in_row) };
        run(&ip, p, &mut region, &mut scratch, 0, kernel)?;
        Ok(Some(region[..out_len].iter().map(|&b| b as i8).collect()))
    }

    type RowChunksOf = crate::kernels::row_chunks::RowChunks;

    /// Random int8 convolutions and depthwise convolutions (shapes, strides, dilations, SAME
    /// and VALID padding), run in place by chunks of 1 to 5 rows: the output is the out-of-place
    /// kernel's, bit for bit.
    #[test]
    fn in_place_runs_match_out_of_place() -> Result<(), Error> {
        let mut rng = Rng(0x1dea);
        let mut pick = |lo: usize, hi: usize| lo + (rng.next() as usize) % (hi - lo + 1);
        let mut checked = 0;
        for case in 0..400 {
            let (h, w, in_c) = (pick(1, 11), pick(1, 7), pick(1, 9));
            let (kh, kw) = (pick(1, 4), pick(1, 3));
            let stride = Hw::new(pick(1, 3), pick(1, 2));
            let dilation = Hw::new(pick(1, 2), 1);
            let padding = if pick(0, 1) == 0 { Padding::Same } else { Padding::Valid };
            let Ok(win) = compute_window(padding, Hw::new(h, w), Hw::new(kh, kw), stride, dilation) else { continue };
            let depthwise = case % 2 == 1;
            let dm = if depthwise { pick(1, 2) } else { 1 };
            let out_c = if depthwise { in_c * dm } else { pick(1, 9) };
            let mut r = Rng(case as u64);
            let input = r.bytes(h * w * in_c);
            let filter = r.bytes(kh * kw * out_c * if depthwise { 1 } else { in_c });
            let bias: Vec<i32> = (0..out_c).map(|_| (r.next() % 4096) as i32 - 2048).collect();
            let multiplier: Vec<i32> = (0..out_c).map(|_| (1 << 30) + (r.next() % (1 << 30)) as i32).collect();
            let shift: Vec<i32> = (0..out_c).map(|_| -((r.next() % 9) as i32)).collect();
            let q = PerChannelQuant { multiplier: &multiplier, shift: &shift };
            let input_offset = (r.next() % 256) as i32 - 127;
            let output_offset = (r.next() % 256) as i32 - 128;
            let activation = ActivationRange { min: -128, max: 127 };
            let (oh, ow) = (win.output.h, win.output.w);
            let mut expected = vec![0i8; oh * ow * out_c];
            for rows in 1..=5usize.min(oh) {
                let got = if depthwise {
                    let p = DepthwiseConvParams {
                        input: Dims4::new(1, h, w, in_c),
                        filter: Hw::new(kh, kw),
                        output: Dims4::new(1, oh, ow, out_c),
                        depth_multiplier: dm,
                        stride,
                        dilation,
                        padding: win.padding,
                        input_offset,
                        output_offset,
                        activation,
                        rounding: Rounding::Double,
                    };
                    let mut s = vec![0u8; depthwise_conv_s8_scratch_len(&p)];
                    depthwise_conv_s8(&p, &q, &input, &filter, Some(&bias), &mut expected, &mut s)?;
                    in_place_output(
                        &p,
                        rows,
                        &input,
                        |c| depthwise_in_place_scratch_len(&p, c),
                        |p, x, y, s| depthwise_conv_s8(p, &q, x, &filter, Some(&bias), y, s),
                    )?
                } else {
                    let p = ConvParams {
                        input: Dims4::new(1, h, w, in_c),
                        filter: Dims4::new(out_c, kh, kw, in_c),
                        output: Dims4::new(1, oh, ow, out_c),
                        stride,
                        dilation,
                        padding: win.padding,
                        input_offset,
                        output_offset,
                        activation,
                        rounding: Rounding::Double,
                    };
                    let mut s = vec![0u8; conv_s8_scratch_len(&p)];
                    conv_s8(&p, &q, &input, &filter, Some(&bias), &mut expected, &mut s)?;
                    in_place_output(
                        &p,
                        rows,
                        &input,
                        |c| conv_in_place_scratch_len(&p, c),
                        |p, x, y, s| conv_s8(p, &q, x, &filter, Some(&bias), y, s),
                    )?
                };
                let Some(got) = got else { continue };
                if got != expected {
                    std::eprintln!(
                        "case {case}: depthwise {depthwise} rows {rows} h {h} w {w} k {kh}x{kw} {stride:?} {dilation:?} {padding:?}"
                    );
                    return Err(fail("in-place output differs from the out-of-place kernel's"));
                }
                checked += 1;
            }
        }
        if checked < 500 {
            return Err(fail("too few cases ran"));
        }
        Ok(())
    }
}
