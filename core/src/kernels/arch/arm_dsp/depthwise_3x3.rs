//! The Arm DSP 3x3 depthwise convolution over strips of rows ([`depthwise_3x3_s8`]): the input
//! copied to a strip buffer with the zero point in the padding, one `asm!` block per run of
//! output pixels.

use super::depthwise::dw_rest_channels;
use super::depthwise_3x3_s1::in_domain;
use super::{sadd16, sxtb16, sxtb16_ror8, word};
use crate::kernels::PerChannelQuant;
use crate::kernels::arch::requant::ChannelRequant;
use crate::kernels::params::DepthwiseConvParams;
use core::arch::asm;

/// Words of the buffer (the op's scratch) [`depthwise_3x3_s8`] gathers windows into: a whole
/// padded plane of 4 channels when it fits (small images), else strips of 3 rows.
const DW_BUF_WORDS: usize = crate::kernels::arch::scratch::DW3X3_BUF_WORDS;

/// Columns (words) of a strip in [`depthwise_3x3_s8`]'s buffer.
const DW_STRIP_W: usize = DW_BUF_WORDS / 3;

/// Fewest pixels [`depthwise_3x3_s8`] runs in place (fewer: the whole row goes through strips).
const DW_RUN_MIN: usize = 8;

/// One row of a depthwise strip, 4 channels per word: `left` words of `zp` (the input zero
/// point in every byte), `n` words read from `src` `step` bytes apart, then `zp` up to the end
/// of `dst`. Does nothing if `dst` is shorter than `left + n` or `src` than its `n` words.
#[inline(always)]
fn strip_row(dst: &mut [u32], src: &[i8], step: usize, left: usize, n: usize, zp: u32) {
    let right = dst.len().wrapping_sub(left).wrapping_sub(n);
    let src_need = if n == 0 { 0 } else { (n - 1).saturating_mul(step).saturating_add(4) };
    if left.checked_add(n).is_none_or(|e| e > dst.len()) || src_need > src.len() {
        return;
    }
    // SAFETY: writes `left + n + right = dst.len()` words from the start of `dst` (word aligned);
    // reads `n` words at `src + i * step`, the last ending at `(n - 1) * step + 4 <= src.len()`
    // (checked above; unaligned `LDR` is allowed on these cores). Every register written is
    // declared.
    unsafe {
        asm!(
            "cmp {left}, #0",
            "beq 3f",
            "2:",
            "str {zp}, [{dst}], #4",
            "subs {left}, {left}, #1",
            "bne 2b",
            "3:",
            "cmp {n}, #0",
            "beq 5f",
            "4:",
            "ldr {t}, [{src}]",
            "add {src}, {src}, {step}",
            "str {t}, [{dst}], #4",
            "subs {n}, {n}, #1",
            "bne 4b",
            "5:",
            "cmp {right}, #0",
            "beq 7f",
            "6:",
            "str {zp}, [{dst}], #4",
            "subs {right}, {right}, #1",
            "bne 6b",
            "7:",
            dst = inout(reg) dst.as_mut_ptr() => _,
            src = inout(reg) src.as_ptr() => _,
            step = in(reg) step,
            left = inout(reg) left => _,
            n = inout(reg) n => _,
            right = inout(reg) right => _,
            zp = in(reg) zp,
            t = out(reg) _,
            options(nostack),
        );
    }
}

/// Fills the padded plane of a small image (`hp` rows of `wp` words, 4 channels per word) in one
/// `asm!` loop: the input zero point (`zp4` in every byte) in the padding, the pixel words of
/// `src` (the image from the group's first channel; `ih` x `iw` pixels of `c` bytes) elsewhere,
/// plane row `j` and column `q` holding pixel `(j - top, q - left)`. 5 instructions per pixel
/// word, 3 per padding word, about 8 per row (a row per [`strip_row`] call costs some 60 more).
/// Fills the plane with `zp4` if `src` does not hold the pixels or `plane` has fewer than `hp *
/// wp` words (never for the caller's geometry).
fn fill_plane(
    plane: &mut [u32],
    src: &[i8],
    (ih, iw, c): (usize, usize, usize),
    (hp, wp): (usize, usize),
    (top, left): (usize, usize),
    zp4: u32,
) {
    let Some(plane) = plane.get_mut(..hp.saturating_mul(wp)) else { return };
    let top = top.min(hp);
    let rows = (hp - top).min(ih);
    let q0 = left.min(wp);
    let n = iw.min(wp - q0);
    let right = wp - q0 - n;
    let reads_end = (rows.max(1) - 1)
        .checked_mul(iw)
        .and_then(|v| v.checked_add(n.max(1) - 1))
        .and_then(|v| v.checked_mul(c))
        .and_then(|v| v.checked_add(4));
    if rows == 0 || n == 0 || reads_end.is_none_or(|e| e > src.len()) {
        plane.fill(zp4);
        return;
    }
    // Padding words before the first pixel, between two rows' pixels, after the last one.
    let before = top * wp + q0;
    let between = right + q0;
    let after = right + (hp - top - rows) * wp;
    let Some((start, tail)) = plane.len().checked_sub(after).and_then(|at| plane.split_at_mut_checked(at)) else {
        return;
    };
    tail.fill(zp4);
    // SAFETY: writes `before + rows * n + (rows - 1) * between = hp * wp - after` words from the
    // start of `plane` (word aligned), i.e. `start`; reads the words at `(r * iw + i) * c` (r <
    // rows, i < n) of `src`, the last ending at `reads_end <= src.len()` (checked; unaligned
    // `LDR` is allowed on these cores). Every register written is declared; the flags are not
    // declared preserved.
    unsafe {
        asm!(
            "cmp {k}, #0",
            "beq 3f",
            "2:",
            "str {zp}, [{d}], #4",
            "subs {k}, {k}, #1",
            "bne 2b",
            "3:",
            "mov {k}, {n}",
            "4:",
            "ldr {t}, [{s}]",
            "add {s}, {s}, {step}",
            "str {t}, [{d}], #4",
            "subs {k}, {k}, #1",
            "bne 4b",
            "add {s}, {s}, {skip}",
            "subs {rows}, {rows}, #1",
            "beq 6f",
            "movs {k}, {g}",
            "beq 3b",
            "5:",
            "str {zp}, [{d}], #4",
            "subs {k}, {k}, #1",
            "bne 5b",
            "b 3b",
            "6:",
            d = inout(reg) start.as_mut_ptr() => _,
            s = inout(reg) src.as_ptr() => _,
            k = inout(reg) before => _,
            t = out(reg) _,
            step = in(reg) c,
            skip = in(reg) (iw - n) * c,
            rows = inout(reg) rows => _,
            n = in(reg) n,
            g = in(reg) between,
            zp = in(reg) zp4,
            options(nostack),
        );
    }
}

/// Everything the 3x3 depthwise run ([`dw3x3_run`]) reads besides the input and output
/// pointers, for one group of 4 channels; `asm!` addresses the fields by their offsets
/// (`#[repr(C)]`, all 4-byte words).
#[repr(C)]
struct Dw3x3Ctx {
    /// Offset 0: the 9 taps' weights extended by `SXTB16` and doubled (`2 w` fits a halfword):
    /// `(w0, w2)`, `(w1, w3)`.
    w: [[u32; 2]; 9],
    /// Offset 72: per channel `(m, R, e)`: the multiplier, `R = 2^(e-1) + output_offset * 2^e`
    /// and `e = -shift` ([`dw_run_requant!`]).
    rq: [[i32; 3]; 4],
    /// Offset 120, 124: the clamp bounds in every byte.
    lo4: u32,
    hi4: u32,
    /// Offset 128: bytes between filter rows in the buffer read.
    row_step: usize,
    /// Offset 132: added to the input pointer after a pixel's taps (which leave it two rows
    /// down) to reach the next pixel's window (wrapping: may be negative).
    next: usize,
    /// Offset 136: bytes between output pixels.
    out_step: usize,
    /// Offset 140: where the output pointer stops (one step past the last pixel).
    out_end: usize,
    /// Offset 144: the accumulators' start, `2 (bias + input_offset * sum(weights))` per channel.
    acc0: [i32; 4],
    /// Whether the clamp is the whole int8 range (the run then skips it; not read by `asm!`).
    full_range: bool,
}

/// One filter row of [`dw3x3_run`]: 3 taps at `px`, `px + cs`, `px + 2 cs`, each one input word
/// (4 channels, raw) extended to `(x0, x2)` and `(x1, x3)` against the tap's extended weights
/// (`LDRD` from the context at byte `$w`), 4 `SMLABB`/`SMLATT`.
macro_rules! dw_run_row {
    ($w0:literal, $w1:literal, $w2:literal) => {
        concat!(
            "ldr {x}, [{px}]\n",
            "ldrd {we}, {wo}, [{ctx}, #",
            $w0,
            "]\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
            "ldr {x}, [{px}, {cs}]\n",
            "ldrd {we}, {wo}, [{ctx}, #",
            $w1,
            "]\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
            "ldr {x}, [{px}, {cs}, lsl #1]\n",
            "ldrd {we}, {wo}, [{ctx}, #",
            $w2,
            "]\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
        )
    };
}

/// Requantizes the doubled accumulator `$a` (`A = 2 a`: the weights are stored doubled) with
/// the context's channel at byte `$m` (multiplier and `R` by one `LDRD`, `e` at `$e`): `SUB r,
/// R, A, LSR #31` ; `SMMLAR r, A, m, r` ; `ASR r, r, e` ; `SSAT #8` (6 instructions with the
/// loads; the form of `depthwise_3x3_s1`, whose module docs give the proof).
macro_rules! dw_run_requant {
    ($a:literal, $m:literal, $e:literal) => {
        concat!(
            "ldrd {xe}, {we}, [{ctx}, #",
            $m,
            "]\n",
            "ldr {wo}, [{ctx}, #",
            $e,
            "]\n",
            "sub {x}, {we}, ",
            $a,
            ", lsr #31\n",
            "smmlar {x}, ",
            $a,
            ", {xe}, {x}\n",
            "asr {x}, {x}, {wo}\n",
            "ssat ",
            $a,
            ", #8, {x}\n",
        )
    };
}

/// The `asm!` body of [`dw3x3_run_raw`], with (`clamp`) or without the per-byte clamp.
macro_rules! dw3x3_asm {
    ($px:expr, $po:expr, $cs:expr, $ctx:expr $(, $clamp:literal)?) => {
        asm!(
            "2:",
            "ldrd {a0}, {a1}, [{ctx}, #144]",
            "ldrd {a2}, {a3}, [{ctx}, #152]",
            dw_run_row!("0", "8", "16"),
            "ldr {x}, [{ctx}, #128]",
            "add {px}, {px}, {x}",
            dw_run_row!("24", "32", "40"),
            "ldr {x}, [{ctx}, #128]",
            "add {px}, {px}, {x}",
            dw_run_row!("48", "56", "64"),
            dw_run_requant!("{a0}", "72", "80"),
            dw_run_requant!("{a1}", "84", "92"),
            dw_run_requant!("{a2}", "96", "104"),
            dw_run_requant!("{a3}", "108", "116"),
            "bfi {a0}, {a1}, #8, #8",
            "bfi {a0}, {a2}, #16, #8",
            "bfi {a0}, {a3}, #24, #8",
            $(
                $clamp,
                "ldrd {x}, {xe}, [{ctx}, #120]",
                "ssub8 {wo}, {a0}, {x}",
                "sel {a0}, {a0}, {x}",
                "ssub8 {wo}, {xe}, {a0}",
                "sel {a0}, {a0}, {xe}",
            )?
            "str {a0}, [{po}]",
            "ldr {x}, [{ctx}, #136]",
            "add {po}, {po}, {x}",
            "ldr {x}, [{ctx}, #132]",
            "add {px}, {px}, {x}",
            "ldr {x}, [{ctx}, #140]",
            "cmp {po}, {x}",
            "bne 2b",
            px = inout(reg) $px => _,
            po = inout(reg) $po => _,
            cs = in(reg) $cs,
            ctx = in(reg) $ctx,
            a0 = out(reg) _,
            a1 = out(reg) _,
            a2 = out(reg) _,
            a3 = out(reg) _,
            x = out(reg) _,
            xe = out(reg) _,
            we = out(reg) _,
            wo = out(reg) _,
            options(nostack),
        )
    };
}

/// Runs the 3x3 depthwise of one channel group over `n >= 1` consecutive output pixels, all in
/// one `asm!` block (113 instructions per pixel, 118 with the clamp: 72 for the 36 MACs, 24 for
/// the 4 requantizations, the rest to pack, clamp per byte, store and step): the window of the
/// first pixel starts at `px` (tap `(r, q)` at `r * ctx.row_step + q * col_step`), each next
/// one `2 * ctx.row_step + ctx.next` further; the 4 int8 results of pixel `i` go to `po + i *
/// ctx.out_step`. Sets `ctx.out_end`.
///
/// # Safety
/// Every tap word of the `n` windows is readable and every 4-byte output writable (pixel steps
/// are non-negative); `ctx.out_step > 0`.
#[inline(always)]
unsafe fn dw3x3_run_raw(px: *const i8, col_step: usize, po: *mut i8, n: usize, ctx: &mut Dw3x3Ctx) {
    ctx.out_end = po.wrapping_add(n * ctx.out_step) as usize;
    let c = ctx as *const Dw3x3Ctx;
    // SAFETY: the caller's contract; `ctx` is read at its `#[repr(C)]` fields' offsets (word
    // aligned for `LDRD`); the loop ends when the output pointer, starting `n * out_step` before
    // `out_end`, reaches it. Every register written is declared.
    unsafe {
        if ctx.full_range {
            dw3x3_asm!(px, po, col_step, c);
        } else {
            dw3x3_asm!(px, po, col_step, c, "");
        }
    }
}

/// [`dw3x3_run_raw`] on `buf` from `start` and `out` from `out_start`, after checking that
/// every read and write of the `n` pixels lies inside them (else nothing runs: the callers'
/// geometry rules it out).
#[inline(always)]
fn dw3x3_run(
    buf: &[i8],
    start: usize,
    col_step: usize,
    out: &mut [i8],
    out_start: usize,
    n: usize,
    ctx: &mut Dw3x3Ctx,
) {
    if n == 0 || ctx.out_step == 0 {
        return;
    }
    let pixel_step = ctx.next.wrapping_add(2usize.wrapping_mul(ctx.row_step));
    let reads_end = (n - 1)
        .checked_mul(pixel_step)
        .and_then(|v| v.checked_add(start))
        .and_then(|v| v.checked_add(2 * ctx.row_step))
        .and_then(|v| v.checked_add(2 * col_step))
        .and_then(|v| v.checked_add(4));
    let writes_end =
        (n - 1).checked_mul(ctx.out_step).and_then(|v| v.checked_add(out_start)).and_then(|v| v.checked_add(4));
    if reads_end.is_none_or(|e| e > buf.len()) || writes_end.is_none_or(|e| e > out.len()) || ctx.row_step > buf.len() {
        return;
    }
    // SAFETY: pixel `i < n` reads the words at `start + i * pixel_step + r * row_step + q *
    // col_step` (r, q < 3) of `buf`, the farthest ending at `reads_end <= buf.len()` (checked;
    // pixel steps are non-negative: a wrapped `next` only undoes part of the two row steps),
    // and writes the word at `out_start + i * out_step` of `out`, the last ending at `writes_end
    // <= out.len()` (checked).
    unsafe { dw3x3_run_raw(buf.as_ptr().add(start), col_step, out.as_mut_ptr().add(out_start), n, ctx) };
}

/// A run of output pixels of a row in [`depthwise_3x3_s8`], the same for every row and channel
/// group: read in place (`strip == false`: every window inside the image; only for rows whose
/// filter rows are all inside), or through a strip of `width` columns whose in-image columns
/// are `[q0, q1)`. `first_col`: the input column of the first pixel's window (in place), or of
/// strip column `q0`.
#[derive(Clone, Copy, Default)]
struct DwSegment {
    ox: u16,
    n: u16,
    strip: bool,
    width: u16,
    q0: u16,
    q1: u16,
    first_col: u16,
}

/// Segments per row kind in [`depthwise_3x3_s8`] (wider rows take the general path).
const DW_MAX_SEGMENTS: usize = 12;

/// The segments of a row: pixels `[run_lo, run_hi)` in place (if any), the others in strips.
fn dw_segments(
    p: &DepthwiseConvParams,
    run_lo: usize,
    run_hi: usize,
    segs: &mut [DwSegment; DW_MAX_SEGMENTS],
) -> Option<usize> {
    let (ow, iw) = (p.output.w, p.input.w);
    let sw = p.stride.w.max(1);
    let span = 2 * p.dilation.w;
    let per_strip = (DW_STRIP_W - 1 - span) / sw + 1;
    let mut count = 0;
    let mut ox = 0;
    let small = |v: usize| u16::try_from(v).ok();
    while ox < ow {
        let (n, seg) = if ox == run_lo && run_hi > run_lo {
            let n = run_hi - run_lo;
            let first_col = small(ox * sw - p.padding.left)?;
            (n, DwSegment { ox: small(ox)?, n: small(n)?, first_col, ..Default::default() })
        } else {
            let end = if ox < run_lo { run_lo } else { ow };
            let n = (end - ox).min(per_strip);
            let width = (n - 1) * sw + span + 1;
            let ix_left = (ox * sw) as isize - p.padding.left as isize;
            let q0 = ((-ix_left).max(0) as usize).min(width);
            let q1 = ((iw as isize - ix_left).max(0) as usize).min(width).max(q0);
            let first_col = small((ix_left + q0 as isize).max(0) as usize)?;
            let seg = DwSegment {
                ox: small(ox)?,
                n: small(n)?,
                strip: true,
                width: small(width)?,
                q0: small(q0)?,
                q1: small(q1)?,
                first_col,
            };
            (n, seg)
        };
        *segs.get_mut(count)? = seg;
        count += 1;
        ox += n;
    }
    Some(count)
}

/// The 3x3 depthwise convolution (depth multiplier 1, any stride and dilation) of
/// [`depthwise_conv_s8`] with every group of 4 channels in [`dw3x3_run`]: on rows whose filter
/// rows all lie inside the image, the pixels whose window lies inside too in one run on the
/// input in place (when there are at least [`DW_RUN_MIN`]); every other pixel through a strip:
/// its filter rows' words copied to `strip` ([`strip_row`]), the input zero point wherever a
/// tap falls in the padding (so it adds `w * (zp + offset) = 0`; the offset is folded into the
/// accumulators' start). The column geometry (which pixels run where) is the same for every
/// row and channel group and is computed once. The weights are stored doubled, so the
/// accumulators hold twice the reference's sums and the requantization is `SMMLAR`'s
/// ([`dw_run_requant!`]). Preconditions (else `false`, nothing written): every channel within
/// [`in_domain`] (a multiplier `>= 0`, a shift in `[-22, -1]`, `|bias| < 2^29`, so the doubled
/// sum fits), windows of at most [`DW_STRIP_W`]
/// columns, rows of at most [`DW_MAX_SEGMENTS`] segments, and `strip` holding the padded plane
/// (small images) or [`DW_BUF_WORDS`] words (the op's scratch,
/// [`dw3x3_scratch_words`](crate::kernels::arch::scratch::dw3x3_scratch_words)). Not inlined:
/// its frame stays out of its callers'.
///
/// [`depthwise_conv_s8`]: super::depthwise::depthwise_conv_s8
#[inline(never)]
pub(super) fn depthwise_3x3_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    strip: &mut [u32],
) -> bool {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let o_off = p.output_offset;
    let bias_of = |ch: usize| bias.and_then(|b| b.get(ch)).copied().unwrap_or(0);
    // (m, R, e) of a channel within `in_domain` (checked for all first): |offset| << 22 plus the
    // high word stays in i32.
    let folded = |m: i32, s: i32| {
        let e = s.unsigned_abs();
        [m, 1i32.wrapping_shl(e.wrapping_sub(1)).wrapping_add(o_off.wrapping_shl(e)), e as i32]
    };
    let valid = |ch: usize| match (quant.multiplier.get(ch), quant.shift.get(ch)) {
        (Some(&m), Some(&s)) => in_domain(m, s, bias_of(ch)),
        _ => false,
    };
    let sw = p.stride.w.max(1);
    let span_w = 2 * p.dilation.w;
    if p.filter.h != 3 || p.filter.w != 3 || span_w + 1 > DW_STRIP_W || !(0..c).all(valid) {
        return false;
    }
    let in_image = ind.h * ind.w * c;
    let out_image = outd.h * outd.w * c;
    if in_image == 0 || out_image == 0 {
        return true;
    }
    // Output columns whose whole window lies inside the image: [ox_lo, ox_hi).
    let ox_lo = p.padding.left.div_ceil(sw).min(outd.w);
    let ox_hi =
        if ind.w + p.padding.left > span_w { (ind.w + p.padding.left - span_w).div_ceil(sw).min(outd.w) } else { 0 };
    let (run_lo, run_hi) = if ox_hi >= ox_lo + DW_RUN_MIN { (ox_lo, ox_hi) } else { (outd.w, outd.w) };
    let mut full_segs = [DwSegment::default(); DW_MAX_SEGMENTS];
    let mut edge_segs = [DwSegment::default(); DW_MAX_SEGMENTS];
    let (Some(n_full), Some(n_edge)) =
        (dw_segments(p, run_lo, run_hi, &mut full_segs), dw_segments(p, outd.w, outd.w, &mut edge_segs))
    else {
        return false;
    };
    let off = p.input_offset;
    let zp4 = ((-off) as u8 as u32).wrapping_mul(0x0101_0101);
    let row_step = p.dilation.h * ind.w * c;
    let col_step = p.dilation.w * c;
    let span_h = (2 * p.dilation.h) as isize;
    // The padded plane the windows cover: rows (and columns) from `-padding` on, when it fits.
    let hp = (outd.h - 1) * p.stride.h + span_h as usize + 1;
    let wp = (outd.w - 1) * sw + span_w + 1;
    let plane = (hp.checked_mul(wp).is_some_and(|n| n <= DW_BUF_WORDS)).then_some((hp, wp));
    // The buffer: the padded plane, or a strip's 3 rows of at most `DW_STRIP_W` words.
    let Some(strip) = strip.get_mut(..plane.map_or(DW_BUF_WORDS, |(hp, wp)| hp * wp)) else { return false };
    let mut ctx = Dw3x3Ctx {
        w: [[0; 2]; 9],
        rq: [[0; 3]; 4],
        lo4: (p.activation.min as u8 as u32).wrapping_mul(0x0101_0101),
        hi4: (p.activation.max as u8 as u32).wrapping_mul(0x0101_0101),
        row_step,
        next: 0,
        out_step: c,
        out_end: 0,
        acc0: [0; 4],
        full_range: p.activation.min <= -128 && p.activation.max >= 127,
    };
    for (in_b, out_b) in input.chunks_exact(in_image.max(1)).zip(output.chunks_exact_mut(out_image.max(1))) {
        for ch in (0..c / 4).map(|g| 4 * g) {
            // The weights extended, and summed per channel in halfword pairs (9 x 127 fits).
            let (mut sum_e, mut sum_o) = (0u32, 0u32);
            for (t, e) in ctx.w.iter_mut().enumerate() {
                let w = word(filter.get(t * c + ch..).unwrap_or(&[]));
                let (we, wo) = (sxtb16(w), sxtb16_ror8(w));
                *e = [sadd16(we, we), sadd16(wo, wo)];
                sum_e = sadd16(sum_e, we);
                sum_o = sadd16(sum_o, wo);
            }
            let wsum =
                [sum_e as i16 as i32, sum_o as i16 as i32, (sum_e >> 16) as i16 as i32, (sum_o >> 16) as i16 as i32];
            // The group's 4 channels as arrays (one bounds check each; all exist: checked above).
            let four = |v: Option<&[i32]>| v.and_then(|v| v.get(ch..ch + 4)).and_then(|v| <[i32; 4]>::try_from(v).ok());
            let (m4, s4) =
                (four(Some(quant.multiplier)).unwrap_or_default(), four(Some(quant.shift)).unwrap_or_default());
            let b4 = four(bias).unwrap_or_else(|| [0, 1, 2, 3].map(|j| bias_of(ch + j)));
            #[allow(clippy::needless_range_loop)] // parallel tables, indexed alike
            for j in 0..4 {
                ctx.acc0[j] = b4[j].wrapping_add(wsum[j].wrapping_mul(off)).wrapping_mul(2);
                ctx.rq[j] = folded(m4[j], s4[j]);
            }
            if let Some((hp, wp)) = plane {
                // Small image: the group's padded plane once, then one run per output row.
                let pad = (p.padding.top, p.padding.left);
                fill_plane(strip, in_b.get(ch..).unwrap_or(&[]), (ind.h, ind.w, c), (hp, wp), pad, zp4);
                ctx.row_step = 4 * wp * p.dilation.h;
                ctx.next = (4 * sw).wrapping_sub(2 * ctx.row_step);
                let cs = 4 * p.dilation.w;
                // The last row's last window and output word: every other lies before them.
                let last_read =
                    4 * ((outd.h - 1) * p.stride.h * wp + (outd.w - 1) * sw) + 2 * ctx.row_step + 2 * cs + 4;
                let last_write = (outd.h * outd.w - 1) * c + ch + 4;
                if last_read <= 4 * hp * wp && 4 * hp * wp <= 4 * strip.len() && last_write <= out_b.len() {
                    let plane = strip.as_ptr() as *const i8;
                    let out_p = out_b.as_mut_ptr();
                    for oy in 0..outd.h {
                        // SAFETY: the row's windows start at plane word `oy * sh * wp + ox * sw`
                        // and reach `2 * row_step + 2 * cs + 4` bytes further, at most to
                        // `last_read <= 4 * hp * wp`, inside `strip`; its outputs end at most at
                        // `last_write <= out_b.len()` (checked above); `out_step = c >= 4`.
                        unsafe {
                            dw3x3_run_raw(
                                plane.add(4 * oy * p.stride.h * wp),
                                cs,
                                out_p.add(oy * outd.w * c + ch),
                                outd.w,
                                &mut ctx,
                            )
                        };
                    }
                }
                continue;
            }
            for oy in 0..outd.h {
                // Input row of filter row 0 (may be in the padding).
                let iy_top = (oy * p.stride.h) as isize - p.padding.top as isize;
                let full = iy_top >= 0 && iy_top + span_h < ind.h as isize;
                let segs = if full { full_segs.get(..n_full) } else { edge_segs.get(..n_edge) }.unwrap_or(&[]);
                let row_out = oy * outd.w * c + ch;
                for seg in segs {
                    let (seg_ox, seg_n, width) = (seg.ox as usize, seg.n as usize, seg.width as usize);
                    let (q0, q1, first_col) = (seg.q0 as usize, seg.q1 as usize, seg.first_col as usize);
                    let out_start = row_out + seg_ox * c;
                    if !seg.strip {
                        ctx.row_step = row_step;
                        ctx.next = (sw * c).wrapping_sub(2 * row_step);
                        let start = (iy_top as usize * ind.w + first_col) * c + ch;
                        dw3x3_run(in_b, start, col_step, out_b, out_start, seg_n, &mut ctx);
                        continue;
                    }
                    for (r, srow) in strip.chunks_exact_mut(width.max(1)).take(3).enumerate() {
                        let iy = iy_top + (r * p.dilation.h) as isize;
                        if iy >= 0 && iy < ind.h as isize {
                            let first = (iy as usize * ind.w + first_col) * c + ch;
                            strip_row(srow, in_b.get(first..).unwrap_or(&[]), c, q0, q1 - q0, zp4);
                        } else {
                            strip_row(srow, &[], c, width, 0, zp4);
                        }
                    }
                    ctx.row_step = 4 * width;
                    ctx.next = (4 * sw).wrapping_sub(8 * width);
                    dw3x3_run(bytemuck::cast_slice(&*strip), 0, 4 * p.dilation.w, out_b, out_start, seg_n, &mut ctx);
                }
            }
        }
    }
    if c % 4 != 0 {
        dw_rest_channels::<ChannelRequant>(p, quant, input, filter, bias, output);
    }
    true
}
