//! The Arm DSP 3x3 stride-1 depthwise convolution on tap pairs ([`depthwise_3x3_s1_s8`]): the
//! input of 4 channels widened once into 4 planes of int16 (the input zero point in the
//! padding), then one channel at a time swept 4 output pixels per `asm!` iteration with `SMLAD`
//! on pairs of neighbouring taps and a 4-instruction requantization (`SMMLAR`).
//!
//! # Why the pairs
//! `SMLAD` adds two products of the same channel, so its two halfwords must hold two taps of one
//! channel. A plane holds one channel's padded image as int16, a line (row, or column when the
//! image is taller than wide) after another, so any two neighbouring taps along the line are one
//! 32-bit load. Along a line of outputs `t .. t + 4` with taps `x0 .. x5` and a filter row `(w0,
//! w1, w2)`, with `P01 = (x0, x1)`, `P23`, `P45` and the weight words `W01 = (w0, w1)`, `W12 =
//! (w1, w2)`:
//!
//! | output | sum | instructions |
//! |---|---|---|
//! | `t` | `x0 w0 + x1 w1 + x2 w2` | `SMLAD(P01, W01)`, `SMLABT(P23, W12)` |
//! | `t + 1` | `x1 w0 + x2 w1 + x3 w2` | `SMLAD(P23, W12)`, `SMLATB(P01, W01)` |
//! | `t + 2` | `x2 w0 + x3 w1 + x4 w2` | `SMLAD(P23, W01)`, `SMLABT(P45, W12)` |
//! | `t + 3` | `x3 w0 + x4 w1 + x5 w2` | `SMLAD(P45, W12)`, `SMLATB(P23, W01)` |
//!
//! so a filter row costs 3 loads of input, one `LDRD` of weights and 8 multiplies for 12 MACs.
//!
//! # Requantization with doubled weights
//! The weights are stored doubled (`2 w` fits an int16 lane), so the accumulator holds `A = 2 a`
//! (`a` the reference's sum: exact, because `|bias| < 2^29` keeps `|a| < 2^30`). With `e =
//! -shift` in `[1, 22]`, a multiplier `m >= 0` and the output offset `z`, TFLite's
//! `MultiplyByQuantizedMultiplier(a, m, -e) + z` is `(h + 2^(e-1) - [h < 0]) >> e) + z` with `h
//! = floor((a m + 2^30) / 2^31)` (see [`RightShiftRequant`]; `[h < 0]` may be `[a < 0]`). `SMMLAR
//! d, A, m, r` computes `r + floor((A m + 2^31) / 2^32) = r + h`, so with `R = 2^(e-1) + z 2^e`
//! (fits: `e <= 22`) the output before saturation is
//!
//! `SUB r, R, A, LSR #31` ; `SMMLAR r, A, m, r` ; `ASR r, r, e` ; then `SSAT #8`.
//!
//! [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant

use super::depthwise::dw_rest_channels;
use super::word;
use crate::kernels::PerChannelQuant;
use crate::kernels::arch::requant::ChannelRequant;
use crate::kernels::arch::scratch::{DW_S1_PLANE_MAX_WORDS, dw_s1_pitch_words, dw_s1_plane_words, dw_s1_sweep};
use crate::kernels::params::DepthwiseConvParams;
use core::arch::asm;

/// Per channel: everything the sweep ([`sweep`]) reads, at the byte offsets its `asm!` uses
/// (`#[repr(C)]`, all 4-byte words, word aligned for `LDRD`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SweepCtx {
    /// Offset 0: per filter row `r` (across the line), `W01_r`, `W12_r` (doubled weights).
    w: [u32; 6],
    /// Offset 24: the accumulators' start, `2 (bias + input_offset * sum(w))`.
    acc0: i32,
    /// Offset 28: the multiplier (`>= 0`).
    m: i32,
    /// Offset 32: `2^(e-1) + output_offset * 2^e`.
    round: i32,
    /// Offset 36: `e = -shift`, in `[1, 22]`.
    e: u32,
    /// Offset 40: bytes between two outputs along the line.
    out_step: usize,
    /// Offset 44: the output pointer after the last group of the call (the loop's end).
    end: usize,
    /// Offset 48, 52: the clamp bounds.
    lo: i32,
    hi: i32,
    /// Offset 56: lines left in the call (counted down by the `asm!`).
    lines: usize,
    /// Offset 60: added to the input pointer at the end of a line (to the next plane line).
    pin_skip: usize,
    /// Offset 64: added to the output pointer at the end of a line (wrapping: may be negative).
    pout_skip: usize,
    /// Offset 68: bytes between output lines (`end` moves by it from line to line).
    out_cross: usize,
}

/// The 3 input words of a filter row at `{pin} + $off`: `LDRD` + `LDR` when the group starts on a
/// word (`aligned`), else 3 `LDR`s (unaligned loads are allowed on these cores, `LDRD` is not).
macro_rules! sweep_load {
    (aligned, $off:literal) => {
        concat!("ldrd {a}, {b}, [{pin}, #", $off, "]\n", "ldr {c}, [{pin}, #", $off, " + 8]\n")
    };
    (unaligned, $off:literal) => {
        concat!(
            "ldr {a}, [{pin}, #",
            $off,
            "]\n",
            "ldr {b}, [{pin}, #",
            $off,
            " + 4]\n",
            "ldr {c}, [{pin}, #",
            $off,
            " + 8]\n",
        )
    };
}

/// [`sweep_load!`] for the filter row at `{pin}`, stepping `{pin}` to the next group (8 bytes).
macro_rules! sweep_load_step {
    (aligned) => {
        concat!("ldr {c}, [{pin}, #8]\n", "ldrd {a}, {b}, [{pin}], #8\n")
    };
    (unaligned) => {
        concat!("ldr {b}, [{pin}, #4]\n", "ldr {c}, [{pin}, #8]\n", "ldr {a}, [{pin}], #8\n")
    };
}

/// The 8 multiplies of a filter row (module docs) into `a0 .. a3` with the row's weights in
/// `{w0}` (`W01`) and `{w1}` (`W12`); `first`: start every sum from `{a3}`, which holds the
/// accumulators' start.
macro_rules! sweep_macs {
    (first) => {
        concat!(
            "smlad {a0}, {a}, {w0}, {a3}\n",
            "smlabt {a0}, {b}, {w1}, {a0}\n",
            "smlad {a1}, {b}, {w1}, {a3}\n",
            "smlatb {a1}, {a}, {w0}, {a1}\n",
            "smlad {a2}, {b}, {w0}, {a3}\n",
            "smlabt {a2}, {c}, {w1}, {a2}\n",
            "smlad {a3}, {c}, {w1}, {a3}\n",
            "smlatb {a3}, {b}, {w0}, {a3}\n",
        )
    };
    () => {
        concat!(
            "smlad {a0}, {a}, {w0}, {a0}\n",
            "smlabt {a0}, {b}, {w1}, {a0}\n",
            "smlad {a1}, {b}, {w1}, {a1}\n",
            "smlatb {a1}, {a}, {w0}, {a1}\n",
            "smlad {a2}, {b}, {w0}, {a2}\n",
            "smlabt {a2}, {c}, {w1}, {a2}\n",
            "smlad {a3}, {c}, {w1}, {a3}\n",
            "smlatb {a3}, {b}, {w0}, {a3}\n",
        )
    };
}

/// Requantizes `$a` (doubled accumulator) with `{a}` = m, `{b}` = round, `{c}` = e: 4
/// instructions (module docs), the result saturated to int8 in `$a`.
macro_rules! sweep_requant {
    ($a:literal) => {
        concat!(
            "sub {w0}, {b}, ",
            $a,
            ", lsr #31\n",
            "smmlar {w0}, ",
            $a,
            ", {a}, {w0}\n",
            "asr {w0}, {w0}, {c}\n",
            "ssat ",
            $a,
            ", #8, {w0}\n",
        )
    };
}

/// `$a = min(max($a, {b}), {c})`.
macro_rules! sweep_clamp {
    ($a:literal) => {
        concat!(
            "cmp ", $a, ", {b}\n", "it lt\n", "movlt ", $a, ", {b}\n", "cmp ", $a, ", {c}\n", "it gt\n", "movgt ", $a,
            ", {c}\n",
        )
    };
}

/// The `asm!` of [`sweep_raw`]: the three filter rows (the row at the pointer last, its load
/// stepping the pointer one group on), the 4 requantizations, the optional clamp, 4 byte stores,
/// the loop.
macro_rules! sweep_asm {
    ($align:ident, $pitch:ident, $pin:expr, $pout:expr, $ctx:expr $(, $clamp:literal)?) => {
        asm!(
            "2:",
            sweep_load!($align, "{p1}"),
            "ldrd {w0}, {w1}, [{ctx}, #8]",
            "ldr {a3}, [{ctx}, #24]",
            sweep_macs!(first),
            sweep_load!($align, "{p2}"),
            "ldrd {w0}, {w1}, [{ctx}, #16]",
            sweep_macs!(),
            sweep_load_step!($align),
            "ldrd {w0}, {w1}, [{ctx}]",
            sweep_macs!(),
            "ldrd {a}, {b}, [{ctx}, #28]",
            "ldr {c}, [{ctx}, #36]",
            sweep_requant!("{a0}"),
            sweep_requant!("{a1}"),
            sweep_requant!("{a2}"),
            sweep_requant!("{a3}"),
            $(
                $clamp,
                "ldrd {b}, {c}, [{ctx}, #48]",
                sweep_clamp!("{a0}"),
                sweep_clamp!("{a1}"),
                sweep_clamp!("{a2}"),
                sweep_clamp!("{a3}"),
            )?
            "ldrd {b}, {c}, [{ctx}, #40]",
            "strb {a1}, [{pout}, {b}]",
            "strb {a0}, [{pout}]",
            "add {pout}, {pout}, {b}, lsl #1",
            "strb {a3}, [{pout}, {b}]",
            "strb {a2}, [{pout}]",
            "add {pout}, {pout}, {b}, lsl #1",
            "cmp {pout}, {c}",
            "bne 2b",
            // The end of a line: the next one, if any.
            "ldr {b}, [{ctx}, #56]",
            "subs {b}, {b}, #1",
            "beq 3f",
            "str {b}, [{ctx}, #56]",
            "ldrd {a}, {b}, [{ctx}, #60]",
            "add {pin}, {pin}, {a}",
            "add {pout}, {pout}, {b}",
            "ldr {a}, [{ctx}, #68]",
            "add {c}, {c}, {a}",
            "str {c}, [{ctx}, #44]",
            "b 2b",
            "3:",
            pin = inout(reg) $pin => _,
            pout = inout(reg) $pout => _,
            ctx = in(reg) $ctx,
            p1 = const $pitch,
            p2 = const 2 * $pitch,
            a = out(reg) _,
            b = out(reg) _,
            c = out(reg) _,
            w0 = out(reg) _,
            w1 = out(reg) _,
            a0 = out(reg) _,
            a1 = out(reg) _,
            a2 = out(reg) _,
            a3 = out(reg) _,
            options(nostack),
        )
    };
}

/// The `asm!` of [`single_raw`]: one output, the 3 filter rows as `(x0, x1)` (an `LDR`) against
/// `W01` and `x2` (`LDRSH`) against the top of `W12`, then as [`sweep_asm`].
macro_rules! single_asm {
    ($pitch:ident, $pin:expr, $pout:expr, $ctx:expr $(, $clamp:literal)?) => {
        asm!(
            "ldr {a0}, [{ctx}, #24]",
            "ldr {a}, [{pin}]",
            "ldrsh {b}, [{pin}, #4]",
            "ldrd {w0}, {w1}, [{ctx}]",
            "smlad {a0}, {a}, {w0}, {a0}",
            "smlabt {a0}, {b}, {w1}, {a0}",
            "ldr {a}, [{pin}, #{p1}]",
            "ldrsh {b}, [{pin}, #{p1} + 4]",
            "ldrd {w0}, {w1}, [{ctx}, #8]",
            "smlad {a0}, {a}, {w0}, {a0}",
            "smlabt {a0}, {b}, {w1}, {a0}",
            "ldr {a}, [{pin}, #{p2}]",
            "ldrsh {b}, [{pin}, #{p2} + 4]",
            "ldrd {w0}, {w1}, [{ctx}, #16]",
            "smlad {a0}, {a}, {w0}, {a0}",
            "smlabt {a0}, {b}, {w1}, {a0}",
            "ldrd {a}, {b}, [{ctx}, #28]",
            "ldr {c}, [{ctx}, #36]",
            sweep_requant!("{a0}"),
            $(
                $clamp,
                "ldrd {b}, {c}, [{ctx}, #48]",
                sweep_clamp!("{a0}"),
            )?
            "strb {a0}, [{pout}]",
            pin = in(reg) $pin,
            pout = in(reg) $pout,
            ctx = in(reg) $ctx,
            p1 = const $pitch,
            p2 = const 2 * $pitch,
            a = out(reg) _,
            b = out(reg) _,
            c = out(reg) _,
            w0 = out(reg) _,
            w1 = out(reg) _,
            a0 = out(reg) _,
            options(nostack),
        )
    };
}

/// Sweeps `lines >= 1` lines of `groups >= 1` groups of 4 outputs of one channel: the first
/// group's taps start at `pin` (plane row 0 of the filter; rows 1 and 2 `PITCH` and `2 PITCH`
/// bytes further), each next group 8 bytes further, each next line `PITCH` bytes further; output
/// `i` of line `l` goes to `pout + l * ctx.out_cross + i * ctx.out_step`. Sets `ctx.end`,
/// `ctx.lines`, `ctx.pin_skip`, `ctx.pout_skip`. 61 instructions per group of 36 MACs from a
/// word-aligned `pin` (64 otherwise; 24 more with the clamp), 11 more per line. Not inlined:
/// its four `asm!` bodies once per pitch, not at every call site.
///
/// # Safety
/// Every byte `pin + (l + r) * PITCH + g * 8 + [0, 12)` (l < lines, r < 3, g < groups) is
/// readable, every `pout + l * out_cross + i * out_step` (l < lines, i < 4 groups) writable, and
/// `ctx.out_step > 0`.
#[inline(never)]
unsafe fn sweep_raw<const PITCH: usize>(
    pin: *const u8,
    pout: *mut i8,
    groups: usize,
    lines: usize,
    ctx: &mut SweepCtx,
    clamp: bool,
) {
    let run = 4 * groups * ctx.out_step;
    ctx.end = pout.wrapping_add(run) as usize;
    ctx.lines = lines;
    ctx.pin_skip = PITCH.wrapping_sub(8 * groups);
    ctx.pout_skip = ctx.out_cross.wrapping_sub(run);
    let c = ctx as *mut SweepCtx;
    let aligned = pin as usize % 4 == 0;
    // SAFETY: the caller's contract (`LDRD` only from a word-aligned `pin`: every group's and
    // line's offsets are multiples of 4); `ctx` is read and written (`lines`, `end`) at its
    // `#[repr(C)]` fields' offsets (word aligned for `LDRD`); a line's loop ends when the output
    // pointer, `run` before `end` and stepping `4 * out_step > 0` per group, reaches it; then
    // `pout_skip` takes it to the next line's start and `end` moves by `out_cross` likewise,
    // `pin_skip` takes the input to the next plane line; after `lines` lines the block ends.
    // Every register written is declared; the flags are not declared preserved.
    unsafe {
        match (aligned, clamp) {
            (true, false) => sweep_asm!(aligned, PITCH, pin, pout, c),
            (true, true) => sweep_asm!(aligned, PITCH, pin, pout, c, ""),
            (false, false) => sweep_asm!(unaligned, PITCH, pin, pout, c),
            (false, true) => sweep_asm!(unaligned, PITCH, pin, pout, c, ""),
        }
    }
}

/// One output of one channel (its taps at `pin`, rows `PITCH` bytes apart) to `pout`: 26
/// instructions, for the last output of a line whose length is 1 more than a multiple of 4.
///
/// # Safety
/// Every byte `pin + r * PITCH + [0, 6)` (r < 3) is readable and `pout` writable; `pin` is
/// halfword aligned.
#[inline(always)]
unsafe fn single_raw<const PITCH: usize>(pin: *const u8, pout: *mut i8, ctx: &SweepCtx, clamp: bool) {
    let c = ctx as *const SweepCtx;
    // SAFETY: the caller's contract; `ctx` is read at its `#[repr(C)]` fields' offsets (word
    // aligned for `LDRD`). Every register written is declared (the clamp's `CMP` is in the
    // other branch, whose flags are not declared preserved).
    unsafe {
        if clamp {
            single_asm!(PITCH, pin, pout, c, "");
        } else {
            single_asm!(PITCH, pin, pout, c);
        }
    }
}

/// [`sweep_raw`] (`groups > 0`) or [`single_raw`] (`groups == 0`, one line) with the line pitch
/// `pitch_words` (8, 16 or 32 words).
///
/// # Safety
/// As [`sweep_raw`] or [`single_raw`] with `PITCH = 4 * pitch_words`.
#[inline(always)]
unsafe fn sweep(
    pin: *const u8,
    pout: *mut i8,
    groups: usize,
    lines: usize,
    ctx: &mut SweepCtx,
    clamp: bool,
    pitch_words: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        match (pitch_words, groups) {
            (8, 0) => single_raw::<32>(pin, pout, ctx, clamp),
            (16, 0) => single_raw::<64>(pin, pout, ctx, clamp),
            (_, 0) => single_raw::<128>(pin, pout, ctx, clamp),
            (8, _) => sweep_raw::<32>(pin, pout, groups, lines, ctx, clamp),
            (16, _) => sweep_raw::<64>(pin, pout, groups, lines, ctx, clamp),
            _ => sweep_raw::<128>(pin, pout, groups, lines, ctx, clamp),
        }
    }
}

/// What [`widen_line`] writes: with `lead`, first the word of a padding pixel and pixel 0; then
/// `pairs` words of two pixels; with `tail`, last the word of the last pixel and a padding one.
#[derive(Clone, Copy)]
struct LineShape {
    lead: bool,
    pairs: usize,
    tail: bool,
}

/// Widens a plane line of 4 channels: the pixel words (4 channels each) `src[from + i sa]`,
/// `i < lead + 2 pairs + tail`, with `zp4` (the input zero point in every byte) for the padding
/// pixels of the lead and tail words, into 4 planes: the int16 pair of channel `j` goes to word
/// `k` of `dst[at + j * plane ..]` (`PKHBT`/`PKHTB` put two pixels' bytes side by side, `SXTB16`
/// widens them): 15 instructions per word (8 values). Returns the words written; does nothing
/// (0) unless every read and write is inside `src` and `dst`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn widen_line(
    dst: &mut [u32],
    at: usize,
    plane: usize,
    src: &[i8],
    from: usize,
    sa: usize,
    shape: LineShape,
    zp4: u32,
) -> usize {
    let LineShape { lead, pairs, tail } = shape;
    let pixels = usize::from(lead) + 2 * pairs + usize::from(tail);
    let words = usize::from(lead) + pairs + usize::from(tail);
    if pixels == 0 {
        return 0;
    }
    let reads_end = (pixels - 1).checked_mul(sa).and_then(|v| v.checked_add(from)).and_then(|v| v.checked_add(4));
    let writes_end = plane.checked_mul(3).and_then(|v| v.checked_add(at)).and_then(|v| v.checked_add(words));
    if reads_end.is_none_or(|e| e > src.len()) || writes_end.is_none_or(|e| e > dst.len()) {
        return 0;
    }
    let flags = usize::from(lead) | usize::from(tail) << 1;
    // SAFETY: reads the words at `from + i * sa` (i < pixels) of `src`, the last ending at
    // `reads_end <= src.len()` (checked; unaligned `LDR` is allowed on these cores); writes words
    // `at + j * plane + k` (j < 4, k < words) of `dst`, the last before `writes_end <= dst.len()`
    // (checked). Every register written is declared; the flags are not declared preserved.
    unsafe {
        let d = dst.as_mut_ptr().add(at);
        asm!(
            "tst {f}, #1",
            "beq 1f",
            // The lead word: a padding pixel and pixel 0.
            "ldr {x1}, [{src}]",
            "add {src}, {src}, {sa}",
            "pkhbt {t}, {zp}, {x1}, lsl #16",
            "pkhtb {x1}, {x1}, {zp}, asr #16",
            "sxtb16 {x0}, {t}",
            "sxtb16 {t}, {t}, ror #8",
            "str {t}, [{d}, {pl}]",
            "str {x0}, [{d}], #4",
            "sxtb16 {x0}, {x1}",
            "sxtb16 {x1}, {x1}, ror #8",
            "str {x1}, [{d2}, {pl}]",
            "str {x0}, [{d2}], #4",
            "1:",
            "cmp {n}, #0",
            "beq 3f",
            "2:",
            "ldr {x0}, [{src}]",
            "ldr {x1}, [{src}, {sa}]",
            "add {src}, {src}, {sa}, lsl #1",
            "pkhbt {t}, {x0}, {x1}, lsl #16",
            "pkhtb {x1}, {x1}, {x0}, asr #16",
            "sxtb16 {x0}, {t}",
            "sxtb16 {t}, {t}, ror #8",
            "str {t}, [{d}, {pl}]",
            "str {x0}, [{d}], #4",
            "sxtb16 {x0}, {x1}",
            "sxtb16 {x1}, {x1}, ror #8",
            "str {x1}, [{d2}, {pl}]",
            "str {x0}, [{d2}], #4",
            "subs {n}, {n}, #1",
            "bne 2b",
            "3:",
            "tst {f}, #2",
            "beq 4f",
            // The tail word: the last pixel and a padding one.
            "ldr {x0}, [{src}]",
            "pkhbt {t}, {x0}, {zp}, lsl #16",
            "pkhtb {x1}, {zp}, {x0}, asr #16",
            "sxtb16 {x0}, {t}",
            "sxtb16 {t}, {t}, ror #8",
            "str {t}, [{d}, {pl}]",
            "str {x0}, [{d}]",
            "sxtb16 {x0}, {x1}",
            "sxtb16 {x1}, {x1}, ror #8",
            "str {x1}, [{d2}, {pl}]",
            "str {x0}, [{d2}]",
            "4:",
            src = inout(reg) src.as_ptr().add(from) => _,
            sa = in(reg) sa,
            d = inout(reg) d => _,
            d2 = inout(reg) d.add(2 * plane) => _,
            pl = in(reg) 4 * plane,
            n = inout(reg) pairs => _,
            f = in(reg) flags,
            zp = in(reg) zp4,
            x0 = out(reg) _,
            x1 = out(reg) _,
            t = out(reg) _,
            options(nostack),
        );
    }
    words
}

/// How the image is swept: along rows (`W`) or along columns (`H`, for images taller than wide),
/// in the terms of a line: `along` pixels of input (`sa` bytes apart) per line, `cross` lines
/// (`sx` bytes apart), output lines of `len` pixels (`out_along` bytes apart), `lines` of them
/// (`out_cross` bytes apart), the padding before the first pixel along and across.
#[derive(Clone, Copy)]
struct Sweep {
    along: usize,
    cross: usize,
    sa: usize,
    sx: usize,
    len: usize,
    lines: usize,
    out_along: usize,
    out_cross: usize,
    pad_along: usize,
    pad_cross: usize,
    /// Whether the filter is read transposed (sweeping columns).
    transposed: bool,
}

/// Whether a channel is in this kernel's domain: a multiplier `>= 0`, a shift in `[-22, -1]`,
/// `|bias| < 2^29`.
pub(super) fn in_domain(m: i32, shift: i32, bias: i32) -> bool {
    m >= 0 && (-22..=-1).contains(&shift) && -(1 << 29) < bias && bias < (1 << 29)
}

/// The prepared channels `ch .. ch + 4` (each in [`in_domain`], checked by the caller; outside
/// it the values are wrong, never undefined): their 9 taps read as 9 words of 4 channels. Not
/// inlined: its temporaries stay out of the kernel's frame.
#[inline(never)]
fn group_ctx(
    p: &DepthwiseConvParams,
    s: &Sweep,
    quant: &PerChannelQuant<'_>,
    filter: &[i8],
    bias: Option<&[i32]>,
    ch: usize,
    out: &mut [SweepCtx; 4],
) {
    let c = p.input.c;
    let mut taps = [0u32; 9];
    for (k, t) in taps.iter_mut().enumerate() {
        *t = word(filter.get(k * c + ch..).unwrap_or(&[]));
    }
    let pair = |a: i32, b: i32| (2 * a) as u16 as u32 | ((2 * b) as u16 as u32) << 16;
    for (j, cx) in out.iter_mut().enumerate() {
        // Tap `q` along the line of filter row `r` across it, of channel `ch + j`.
        let tap = |r: usize, q: usize| {
            let k = if s.transposed { q * 3 + r } else { r * 3 + q };
            (taps.get(k).copied().unwrap_or(0) >> (8 * j)) as u8 as i8 as i32
        };
        let mut w = [0u32; 6];
        let mut sum = 0;
        for (r, pw) in w.chunks_exact_mut(2).enumerate() {
            let (t0, t1, t2) = (tap(r, 0), tap(r, 1), tap(r, 2));
            pw[0] = pair(t0, t1);
            pw[1] = pair(t1, t2);
            sum += t0 + t1 + t2;
        }
        let m = quant.multiplier.get(ch + j).copied().unwrap_or(0);
        let e = quant.shift.get(ch + j).copied().unwrap_or(-1).unsigned_abs().clamp(1, 22);
        let b = bias.and_then(|b| b.get(ch + j)).copied().unwrap_or(0);
        *cx = SweepCtx {
            w,
            acc0: b.wrapping_add(p.input_offset.wrapping_mul(sum)).wrapping_mul(2),
            m,
            round: (1 << (e - 1)) + (p.output_offset << e),
            e,
            out_step: s.out_along,
            end: 0,
            lo: p.activation.min,
            hi: p.activation.max,
            lines: 0,
            pin_skip: 0,
            pout_skip: 0,
            out_cross: s.out_cross,
        };
    }
}

/// The 3x3, stride 1, dilation 1 depthwise convolution (depth multiplier 1) of
/// [`depthwise_conv_s8`] on tap pairs (module docs): per group of 4 channels, strips of output
/// lines whose input lines are widened into 4 int16 planes in `buf` (the op's scratch,
/// [`dw3x3_scratch_words`]: at most 3 KB), the input zero
/// point in the padding (it adds `w * (zp + offset) = 0`; the offset is folded into the
/// accumulators' start); then per channel and output line, groups of 4 outputs in one `asm!` loop,
/// the last group of a line that is not a multiple of 4 overlapping the one before (it writes
/// the same values again). Lines run along the rows, or along the columns when that makes fewer
/// groups (KWS's 25x5 images). The `in_c % 4` last channels go through the per-channel loop.
/// Preconditions (else `false`, nothing written): filter 3x3, stride and dilation 1, padding
/// before of at most 1, output lines of [`DW_S1_MIN_LINE`] to [`DW_S1_MAX_LINE`] pixels, every channel
/// within [`in_domain`], and `buf` holding the planes.
///
/// [`dw3x3_scratch_words`]: crate::kernels::arch::scratch::dw3x3_scratch_words
/// [`DW_S1_MIN_LINE`]: crate::kernels::arch::scratch::DW_S1_MIN_LINE
/// [`DW_S1_MAX_LINE`]: crate::kernels::arch::scratch::DW_S1_MAX_LINE
///
/// [`depthwise_conv_s8`]: super::depthwise::depthwise_conv_s8
#[inline(never)]
pub(super) fn depthwise_3x3_s1_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    buf: &mut [u32],
) -> bool {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    if p.filter.h != 3
        || p.filter.w != 3
        || p.stride.h != 1
        || p.stride.w != 1
        || p.dilation.h != 1
        || p.dilation.w != 1
        || p.padding.top > 1
        || p.padding.left > 1
        || c < 4
    {
        return false;
    }
    let (oh, ow) = (outd.h, outd.w);
    let rows = Sweep {
        along: ind.w,
        cross: ind.h,
        sa: c,
        sx: ind.w * c,
        len: ow,
        lines: oh,
        out_along: c,
        out_cross: ow * c,
        pad_along: p.padding.left,
        pad_cross: p.padding.top,
        transposed: false,
    };
    let cols = Sweep {
        along: ind.h,
        cross: ind.w,
        sa: ind.w * c,
        sx: c,
        len: oh,
        lines: ow,
        out_along: ow * c,
        out_cross: c,
        pad_along: p.padding.top,
        pad_cross: p.padding.left,
        transposed: true,
    };
    let s = match dw_s1_sweep(oh, ow) {
        Some((_, _, true)) => cols,
        Some((_, _, false)) => rows,
        None => return false,
    };
    let bias_of = |ch: usize| bias.and_then(|b| b.get(ch)).copied().unwrap_or(0);
    if quant.multiplier.len() < c
        || quant.shift.len() < c
        || !quant
            .multiplier
            .iter()
            .zip(quant.shift)
            .take(c)
            .enumerate()
            .all(|(ch, (&m, &sh))| in_domain(m, sh, bias_of(ch)))
        || !ChannelRequant::all_valid(quant.multiplier, quant.shift)
    {
        return false;
    }
    // Pair words per plane line: the line's `len + 2` padded pixels, rounded up.
    let words = (s.len + 2).div_ceil(2);
    let pitch_words = dw_s1_pitch_words(s.len);
    // The 4 planes (the whole image's lines when they fit, else a strip's), in `buf`.
    let plane = dw_s1_plane_words(s.len, s.lines);
    let Some(buf) = buf.get_mut(..4 * plane) else { return false };
    let in_image = ind.h * ind.w * c;
    let out_image = oh * ow * c;
    if in_image == 0 || out_image == 0 {
        return true;
    }
    let clamp = p.activation.min > -128 || p.activation.max < 127;
    let zp = (-p.input_offset) as u16 as u32;
    let zp2 = zp | zp << 16;
    let zp4 = (zp & 0xff).wrapping_mul(0x0101_0101);
    // Output lines per strip (all of them when the whole image's planes fit).
    let strip_lines = DW_S1_PLANE_MAX_WORDS / pitch_words - 2;
    // A plane line: the padding pixel (if any) with pixel 0, pairs, the last pixel with a
    // padding one (if left over); the input pixels it needs are those up to padded column `len
    // + 1`.
    let used = s.along.min(s.len + 2 - s.pad_along);
    let after_lead = used - s.pad_along;
    let shape = LineShape { lead: s.pad_along == 1, pairs: after_lead / 2, tail: after_lead % 2 == 1 };
    let mut ctx = [SweepCtx::default(); 4];
    // Images by index (a `zip` of `chunks_exact` may be left out of line, with its division).
    for b in 0..ind.n {
        let (Some(in_b), Some(out_b)) =
            (input.get(b * in_image..(b + 1) * in_image), output.get_mut(b * out_image..(b + 1) * out_image))
        else {
            break;
        };
        for ch in (0..c / 4).map(|g| 4 * g) {
            group_ctx(p, &s, quant, filter, bias, ch, &mut ctx);
            let mut n0 = 0;
            while n0 < s.lines {
                let n = strip_lines.min(s.lines - n0);
                // Plane lines n0 .. n0 + n + 2 (padded cross coordinates) into buffer lines 0 ..
                for (l, v) in (n0..n0 + n + 2).enumerate() {
                    let at = l * pitch_words;
                    let iv = v.wrapping_sub(s.pad_cross);
                    if iv >= s.cross {
                        for j in 0..4 {
                            if let Some(d) = buf.get_mut(j * plane + at..j * plane + at + words) {
                                d.fill(zp2);
                            }
                        }
                        continue;
                    }
                    let line = iv * s.sx + ch;
                    let done = widen_line(buf, at, plane, in_b, line, s.sa, shape, zp4);
                    // Words past the image (a padding pixel on its own, if any).
                    for j in 0..4 {
                        if let Some(d) = buf.get_mut(j * plane + at + done..j * plane + at + words) {
                            d.fill(zp2);
                        }
                    }
                }
                // Every channel's lines of the strip: full groups from the line's start, then the
                // `len % 4` last outputs: one at a time when 1 or 2, else a group ending at the
                // line's end (overlapping the one before: it writes the same values again).
                let full = s.len / 4;
                let rest = s.len % 4;
                let pitch = 4 * pitch_words;
                // Lines along rows (each output line followed by the next in memory) may run on
                // past their end, when the plane line has room for the extra reads: the last
                // group's extra outputs land on the next line's first ones, which that line
                // writes again afterwards. Not the image's last line (nothing follows it).
                let spill = rest != 0 && !s.transposed && 8 * s.len.div_ceil(4) + 4 <= pitch;
                let spill_lines = if spill { n - usize::from(n0 + n == s.lines) } else { 0 };
                // The farthest read (line n - 1, two lines down, the last group's 12 bytes, or
                // the whole line when spilling) and write (the strip's last output, or a spilling
                // line's last, which is before the image's last line).
                let read_end = (n + 1) * pitch + if spill { pitch } else { 2 * (s.len - 4) + 12 };
                let write_last = (n0 + n - 1) * s.out_cross + ch + 3 + (s.len - 1) * s.out_along;
                if 3 * plane * 4 + read_end > 4 * buf.len() || write_last >= out_b.len() {
                    break;
                }
                for (j, cx) in ctx.iter_mut().enumerate() {
                    let pi = (buf.as_ptr() as *const u8).wrapping_add(j * plane * 4);
                    let po = out_b.as_mut_ptr().wrapping_add(n0 * s.out_cross + ch + j);
                    // SAFETY: line `l < n` of the strip reads `pi + (l + r) * pitch + [0, 2 len +
                    // 4)` (r < 3) of plane `j` (a spilling line: `[0, pitch)`), all before
                    // `read_end` bytes from the plane's start, inside `buf` (checked above), and
                    // writes `po + l * out_cross + t * out_along` (t < len), at most at
                    // `write_last < out_b.len()` (checked); a spilling line's outputs `len <= t <
                    // 4 ceil(len / 4)` are the next line's first (3 at most, fewer than `len`),
                    // before the image's last line; `out_along >= 4`; `pi` is word aligned (`buf`
                    // and the pitch are), `pi + 2 t` halfword aligned.
                    unsafe {
                        if spill_lines > 0 {
                            sweep(pi, po, s.len.div_ceil(4), spill_lines, cx, clamp, pitch_words);
                        }
                        let (pi, po) = (pi.add(spill_lines * pitch), po.add(spill_lines * s.out_cross));
                        let plain = n - spill_lines;
                        if full > 0 && plain > 0 {
                            sweep(pi, po, full, plain, cx, clamp, pitch_words);
                        }
                        for l in (0..plain).filter(|_| rest != 0) {
                            let (pl, pol) = (pi.add(l * pitch), po.add(l * s.out_cross));
                            if rest == 3 {
                                let t = s.len - 4;
                                sweep(pl.add(2 * t), pol.add(t * s.out_along), 1, 1, cx, clamp, pitch_words);
                            } else {
                                for t in s.len - rest..s.len {
                                    sweep(pl.add(2 * t), pol.add(t * s.out_along), 0, 1, cx, clamp, pitch_words);
                                }
                            }
                        }
                    }
                }
                n0 += n;
            }
        }
    }
    if c % 4 != 0 {
        dw_rest_channels::<ChannelRequant>(p, quant, input, filter, bias, output);
    }
    true
}
