//! The Arm DSP fully connected kernels' entry points and their general path ([`fc_general`]):
//! the input row expanded once, 4 filters (then 2) per pass of `SMLAD`.

use super::fully_connected_expanded::fc_expanded;
use super::fully_connected_raw::{dot_2x1_raw, fc_direct};
use super::fully_connected_wide::{FC_WIDE_MIN_OUT, wide_applies};
use super::{
    clamp_bytes, fc_group, offset_pair, pack4, smlad, ssat8, sxtab16, sxtab16_ror8, sxtb16, sxtb16_ror8, word,
};
use crate::kernels::arch::requant::requantize;
use crate::kernels::arch::requant::{OutputScale, RightShiftRequant};
use crate::kernels::arch::scratch::padded_patch_len;
use crate::kernels::arch::scratch::scratch_words;
use crate::kernels::params::FullyConnectedParams;
use core::arch::asm;

/// Expands one input row into `dst` as pairs `(x[4g] + off, x[4g+2] + off), (x[4g+1] + off,
/// x[4g+3] + off)` per group of 4 values, zeros past the end.
#[inline(always)]
pub(super) fn expand_row(row: &[i8], off2: u32, dst: &mut [u32]) {
    let words = row.len() / 4;
    if row.len() % 4 == 0 && words > 0 && dst.len() >= 2 * words {
        // Whole words: 4 groups per iteration while there are (15 instructions: 4 `LDR`s, 8
        // `SXTAB16`s, one `STM` of 8 words), then 6 instructions per group, then zeros for the
        // rest of `dst`.
        let quads = words / 4;
        if quads > 0 {
            // SAFETY: reads `row[..16 * quads]` and writes `dst[..8 * quads]`, within both
            // (`4 * quads <= words`); `dst` is word aligned for `STM`, `LDR` may be unaligned on
            // these cores. Every register written is declared.
            unsafe {
                asm!(
                    "2:",
                    "ldr r1, [{s}], #4",
                    "ldr r3, [{s}], #4",
                    "ldr r9, [{s}], #4",
                    "ldr r11, [{s}], #4",
                    "sxtab16 r0, {off}, r1",
                    "sxtab16 r1, {off}, r1, ror #8",
                    "sxtab16 r2, {off}, r3",
                    "sxtab16 r3, {off}, r3, ror #8",
                    "sxtab16 r8, {off}, r9",
                    "sxtab16 r9, {off}, r9, ror #8",
                    "sxtab16 r10, {off}, r11",
                    "sxtab16 r11, {off}, r11, ror #8",
                    "stm {d}!, {{r0, r1, r2, r3, r8, r9, r10, r11}}",
                    "subs {n}, {n}, #1",
                    "bne 2b",
                    s = inout(reg) row.as_ptr() => _,
                    d = inout(reg) dst.as_mut_ptr() => _,
                    n = inout(reg) quads => _,
                    off = in(reg) off2,
                    out("r0") _,
                    out("r1") _,
                    out("r2") _,
                    out("r3") _,
                    out("r8") _,
                    out("r9") _,
                    out("r10") _,
                    out("r11") _,
                    options(nostack),
                );
            }
        }
        let done = 4 * quads;
        if words > done {
            // SAFETY: reads `row[4 * done..4 * words]` (within its length) and writes
            // `dst[2 * done..2 * words]` (checked), word aligned for `STRD`. Every register
            // written is declared.
            unsafe {
                asm!(
                        "2:",
                    "ldr {x}, [{s}], #4",
                    "sxtab16 {e}, {off}, {x}",
                    "sxtab16 {x}, {off}, {x}, ror #8",
                    "strd {e}, {x}, [{d}], #8",
                    "subs {n}, {n}, #1",
                    "bne 2b",
                    s = inout(reg) row.as_ptr().wrapping_add(4 * done) => _,
                    d = inout(reg) dst.as_mut_ptr().wrapping_add(2 * done) => _,
                    n = inout(reg) words - done => _,
                    off = in(reg) off2,
                    x = out(reg) _,
                    e = out(reg) _,
                    options(nostack),
                );
            }
        }
        dst.iter_mut().skip(2 * words).for_each(|w| *w = 0);
        return;
    }
    let mut chunks = row.chunks(4);
    for pair in dst.chunks_exact_mut(2) {
        match chunks.next() {
            Some(x) => {
                // A short last chunk is zero-filled; its zeros must stay 0, not the offset.
                let w = word(x);
                let (mut e, mut o) = (sxtab16(off2, w), sxtab16_ror8(off2, w));
                if x.len() < 4 {
                    let keep = |lanes: usize| {
                        if lanes == 2 {
                            u32::MAX
                        } else if lanes == 1 {
                            0xffff
                        } else {
                            0
                        }
                    };
                    e &= keep(x.len().div_ceil(2)); // values 0, 2 present
                    o &= keep(x.len() / 2); // values 1, 3 present
                }
                pair[0] = e;
                pair[1] = o;
            }
            None => {
                pair[0] = 0;
                pair[1] = 0;
            }
        }
    }
}

/// Dot products of the 4 filter rows starting at `w` (row `j` at `j * stride`) with an expanded
/// input row, over the first `4 * groups` values: `acc[j] + x . w_j`.
#[inline(always)]
fn dot_4x1(x: &[u32], w: &[i8], stride: usize, groups: usize, acc: [i32; 4]) -> [i32; 4] {
    let groups = groups.min(x.len() / 2).min(stride / 4);
    let fits = stride.checked_mul(3).and_then(|v| v.checked_add(4 * groups)).is_some_and(|end| end <= w.len());
    if !fits {
        return acc;
    }
    let octs = groups / 8;
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    if octs > 0 {
        // SAFETY: `octs` iterations, each reading 16 words at `px` (eight `LDRD`s) and 32 bytes of
        // each of the 4 rows: `x[..16 * octs]` (<= `2 * groups` <= `x.len()`) and, for row `j`,
        // bytes `j * stride .. j * stride + 32 * octs` of `w`, within `w` because `3 * stride +
        // 4 * groups <= w.len()` (checked above). `px` is word aligned (`u32` slice), as `LDRD`
        // needs; `LDR` may be unaligned on these cores. The end pointer is pushed on the stack
        // (two words, popped before the end); every register written is declared.
        unsafe {
            let p0 = w.as_ptr();
            let end = p0.add(32 * octs);
            asm!(
                "push {{r12, lr}}",
                "2:",
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                "ldr r12, [sp]",
                "cmp r5, r12",
                "bne 2b",
                "add sp, sp, #8",
                inout("r0") a0,
                inout("r1") a1,
                inout("r2") a2,
                inout("r3") a3,
                inout("r4") x.as_ptr() => _,
                inout("r5") p0 => _,
                inout("r8") p0.add(2 * stride) => _,
                in("r9") stride,
                out("r10") _,
                out("r11") _,
                inout("r12") end => _,
                out("lr") _,
                options(readonly),
            );
        }
    }
    let mut acc = [a0, a1, a2, a3];
    // The 0-7 groups left.
    for g in 8 * octs..groups {
        if let Some(&[xe, xo]) = x.get(2 * g..2 * g + 2) {
            for (j, a) in acc.iter_mut().enumerate() {
                let wt = word(w.get(j * stride + 4 * g..).unwrap_or(&[]));
                *a = smlad(xe, sxtb16(wt), smlad(xo, sxtb16_ror8(wt), *a));
            }
        }
    }
    acc
}

/// Dot products of 2 filter rows with an expanded input row: `(acc0 + x . w0, acc1 + x . w1)`
/// over the first `4 * groups` values (11 instructions per group of 4).
#[inline(always)]
fn dot_2x1(x: &[u32], w0: &[i8], w1: &[i8], groups: usize, acc: (i32, i32)) -> (i32, i32) {
    let n = groups.min(x.len() / 2).min(w0.len() / 4).min(w1.len() / 4);
    let (mut a0, mut a1) = acc;
    if n > 0 {
        // SAFETY: `n` iterations, each reading 2 words at `px` and 4 bytes at each of `p0` and
        // `p1`: `x[..2n]`, `w0[..4n]`, `w1[..4n]`, within the slices (`n` is bounded by their
        // lengths). `px` is word aligned (`u32` slice) as `LDRD` needs; the byte pointers may be
        // unaligned for `LDR`, which these cores allow. Every register written is declared.
        unsafe {
            let end = w0.as_ptr().add(4 * n);
            asm!(
                "2:",
                "ldrd {xe}, {xo}, [{px}], #8",
                "ldr {w}, [{p0}], #4",
                "sxtb16 {e}, {w}",
                "smlad {a0}, {xe}, {e}, {a0}",
                "sxtb16 {e}, {w}, ror #8",
                "smlad {a0}, {xo}, {e}, {a0}",
                "ldr {w}, [{p1}], #4",
                "sxtb16 {e}, {w}",
                "smlad {a1}, {xe}, {e}, {a1}",
                "sxtb16 {e}, {w}, ror #8",
                "smlad {a1}, {xo}, {e}, {a1}",
                "cmp {p0}, {end}",
                "bne 2b",
                px = inout(reg) x.as_ptr() => _,
                p0 = inout(reg) w0.as_ptr() => _,
                p1 = inout(reg) w1.as_ptr() => _,
                end = in(reg) end,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                xe = out(reg) _,
                xo = out(reg) _,
                w = out(reg) _,
                e = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    (a0, a1)
}

/// As [`dot_2x1`] on the raw int8 input row, extended with the offset on the fly
/// ([`dot_2x1_raw`]): for few outputs, or without scratch.
#[inline(always)]
fn dot_2x1_direct(x: &[i8], off2: u32, w0: &[i8], w1: &[i8], groups: usize, acc: (i32, i32)) -> (i32, i32) {
    let n = groups.min(x.len() / 4).min(w0.len() / 4).min(w1.len() / 4);
    if n == 0 {
        return acc;
    }
    // SAFETY: `4 * n` bytes from each of `x`, `w0`, `w1`, within the slices (`n` is bounded by
    // their lengths), `n >= 1`.
    unsafe { dot_2x1_raw(x.as_ptr(), w0.as_ptr(), w1.as_ptr(), n, off2, false, acc) }
}

/// Fewest outputs for which [`fully_connected_right_shift`] expands the input row
/// ([`fc_expanded`]): below, [`fc_direct`]'s passes of 2 rows on the raw input (12
/// instructions per 8 MACs, about 60 per pass) cost less than the expansion (6 instructions per
/// 4 values), the scan and the setup (a few hundred instructions) save.
const FC_EXPANDED_MIN_OUT: usize = 12;

/// Four zero words: the biases of a layer without bias.
pub(super) static ZERO_BIAS4: [i32; 4] = [0; 4];

/// The operands of [`fully_connected_right_shift`], validated by the kernel (lengths as
/// `params` says; `multiplier` and `shift` one entry, or one per output).
pub(crate) struct FcArgs<'a> {
    pub(crate) params: &'a FullyConnectedParams,
    pub(crate) input: &'a [i8],
    pub(crate) filter: &'a [i8],
    pub(crate) bias: Option<&'a [i32]>,
    pub(crate) multiplier: &'a [i32],
    pub(crate) shift: &'a [i32],
}

/// Fully connected, int8, on the Arm DSP path, for the layers TFLite's converters produce: whole
/// words per row (`input_depth % 4 == 0`) and a fixed-point requantization (in the
/// [`RightShiftRequant`] form for the first path). Two lean paths, each an out-of-line function
/// that sets up only what it uses:
/// - at least [`FC_EXPANDED_MIN_OUT`] outputs and the scratch
///   ([`fully_connected_s8_scratch_len`] bytes, any alignment): [`fc_expanded`], each input row
///   expanded once into `scratch` (int16 pairs with the offset added), then multiplied by 4
///   filter rows per pass ([`fc_rows_asm`]: 21 instructions for 16 MACs per group of 4 values,
///   requantization and stores in the same block), the last `output_depth % 4` outputs in
///   passes of 2 rows on the raw input ([`fc_pairs_asm`]);
/// - otherwise [`fc_direct`]: passes of 2 rows on the raw input, extended on the fly (12
///   instructions for 8 MACs with the input row and the filter word aligned, 13 otherwise), the
///   whole pass (biases, MACs, requantization, clamp, stores) in one `asm!` block
///   ([`fc_pairs_asm`]) when every channel has the common form (else [`fc_pairs`]).
///
/// `false` (nothing written) for every other layer, which then takes [`fully_connected_s8`].
///
/// [`fully_connected_s8_scratch_len`]: crate::kernels::fully_connected::fully_connected_s8_scratch_len
/// [`fc_rows_asm`]: super::fully_connected_expanded::fc_rows_asm
/// [`fc_pairs_asm`]: super::fully_connected_raw::fc_pairs_asm
/// [`fc_pairs`]: super::fully_connected_raw::fc_pairs
pub(crate) fn fully_connected_right_shift(a: &FcArgs<'_>, output: &mut [i8], scratch: &mut [u8]) -> bool {
    let p = a.params;
    let (batches, depth, out_d) = (p.batches, p.input_depth, p.output_depth);
    let (m, s) = (a.multiplier, a.shift);
    // `len / depth >= batches` is `batches * depth <= len` (no overflow to rule out).
    let fits = depth > 0
        && depth % 4 == 0
        && out_d > 0
        && m.len() == s.len()
        && (m.len() == 1 || m.len() == out_d)
        && a.input.len() / depth >= batches
        && a.filter.len() / depth >= out_d
        && output.len() / out_d >= batches
        && a.bias.is_none_or(|b| b.len() >= out_d);
    if !fits {
        return false;
    }
    if out_d >= FC_EXPANDED_MIN_OUT || (out_d >= FC_WIDE_MIN_OUT && out_d % 4 == 0 && wide_applies(a)) {
        if let Some(xw) = scratch_words(scratch).get_mut(..depth / 2) {
            if !RightShiftRequant::all_valid(m, s) {
                return false;
            }
            fc_expanded(a, output, xw);
            return true;
        }
    }
    // SAFETY: the lengths fit (`fits`).
    unsafe { fc_direct(a, output) };
    true
}

/// Fully connected, int8, on the Arm DSP path, any layer [`fully_connected_right_shift`] declines
/// (a depth that is not a multiple of 4, another requantization): with at least 4 outputs and
/// the scratch, each input row expanded once and multiplied by 4 filter rows at a time
/// ([`dot_4x1`]), the last 1-3 rows in pairs ([`dot_2x1`]); otherwise 2 rows at a time on the
/// raw input ([`dot_2x1_direct`]). The `input_depth % 4` last values go through a scalar loop;
/// requantization through `scale` (either rounding mode). Always applies (returns `true`)
/// unless a depth is 0.
pub(crate) fn fully_connected_s8(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u32],
    scale: &OutputScale<'_>,
) -> bool {
    if p.input_depth == 0 || p.output_depth == 0 {
        return false;
    }
    fc_general(p, input, filter, bias, output, scratch, scale);
    true
}

/// Output `c`'s int8 value from its accumulator: [`requant_rs_s8`] when its multiplier and shift
/// have the [`RightShiftRequant`] form (checked here, with sign bits: a few instructions), else
/// the general fixed-point function ([`crate::kernels::arch::requant::requantize`]); plus the offset, clamped.
#[inline(always)]
pub(super) fn fc_requant_one(a: &FcArgs<'_>, c: usize, acc: i32) -> i8 {
    let p = a.params;
    let i = if a.multiplier.len() == 1 { 0 } else { c };
    let (m, s) = (a.multiplier.get(i).copied().unwrap_or(0), a.shift.get(i).copied().unwrap_or(0));
    let v = if (m | s.wrapping_add(31) | !s.wrapping_add(1)) >= 0 {
        requant_rs_s8(acc, m, s, 1 + 2 * p.output_offset)
    } else {
        requantize(acc, m, s).wrapping_add(p.output_offset)
    };
    p.activation.apply(v) as i8
}

/// `ssat8(multiply_by_quantized_multiplier(acc, m, s) + offset)` for a `(m, s)` in the
/// [`RightShiftRequant`] form, with `one_off = 1 + 2 * offset`: the epilogue of [`fc_rows_asm`]
/// for one value, `((hi(acc·m ± 2^30) >> (e - 2)) + one_off) >> 1` saturated (8 instructions;
/// with a zero multiplier `hi` is 0 or -1, which any shift keeps, giving the offset).
///
/// [`fc_rows_asm`]: super::fully_connected_expanded::fc_rows_asm
#[inline(always)]
fn requant_rs_s8(acc: i32, m: i32, s: i32, one_off: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instructions (no memory, no stack); `SSAT` may set the sticky Q flag,
    // so flags are not declared preserved.
    unsafe {
        asm!(
            "asr {hi}, {a}, #31",
            "orr {lo}, {c}, {hi}, lsl #31",
            "smlal {lo}, {hi}, {a}, {m}",
            "mvn {lo}, {s}",
            "sub {lo}, {lo}, #1",
            "asr {hi}, {hi}, {lo}",
            "add {hi}, {hi}, {oo}",
            "ssat {hi}, #8, {hi}, asr #1",
            a = in(reg) acc,
            m = in(reg) m,
            s = in(reg) s,
            c = in(reg) 0x4000_0000u32,
            oo = in(reg) one_off,
            hi = out(reg) r,
            lo = out(reg) _,
            options(pure, nomem, nostack),
        )
    };
    r
}

/// [`fully_connected_s8`]: with at least 4 outputs and the scratch, each input row
/// expanded once and multiplied by 4 filter rows at a time ([`dot_4x1`]), the last 1-3 rows in
/// pairs ([`dot_2x1`]); otherwise 2 rows at a time on the raw input ([`dot_2x1_direct`]). The
/// `input_depth % 4` last values go through a scalar loop; requantization through `scale`.
#[inline(never)]
fn fc_general(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u32],
    scale: &OutputScale<'_>,
) {
    let (depth, out_d) = (p.input_depth, p.output_depth);
    let words = padded_patch_len(depth) / 2;
    let expand = out_d >= 4 && scratch.len() >= words;
    let groups = depth / 4;
    let has_tail = depth % 4 != 0;
    let off2 = offset_pair(p.input_offset);
    let b = |c: usize| bias.and_then(|b| b.get(c)).copied().unwrap_or(0);
    // The last `depth % 4` values of a row, scalar.
    let tail = |x: &[i8], w: &[i8], mut acc: i32| {
        if has_tail {
            for (&x, &w) in x.iter().zip(w).skip(4 * groups) {
                acc = acc.wrapping_add(w as i32 * (x as i32 + p.input_offset));
            }
        }
        acc
    };
    let out = |c: usize, acc: i32| scale.output_s8(c, acc, p.output_offset, p.activation);
    let lo4 = (p.activation.min as u8 as u32) * 0x0101_0101;
    let hi4 = (p.activation.max as u8 as u32) * 0x0101_0101;
    for (row, out_row) in input.chunks_exact(depth.max(1)).zip(output.chunks_exact_mut(out_d.max(1))) {
        let mut c = 0;
        if expand {
            let xw = &mut scratch[..words];
            expand_row(row, off2, xw);
            let xw: &[u32] = xw;
            for (w4, o4) in filter.chunks_exact(depth.saturating_mul(4).max(1)).zip(out_row.chunks_exact_mut(4)) {
                let mut acc = dot_4x1(xw, w4, depth, groups, [b(c), b(c + 1), b(c + 2), b(c + 3)]);
                if has_tail {
                    for (a, wj) in acc.iter_mut().zip(w4.chunks_exact(depth.max(1))) {
                        *a = tail(row, wj, *a);
                    }
                }
                match scale.fixed_s8_x4(c, acc, p.output_offset) {
                    // Saturated to int8, clamped per byte, stored as one word.
                    Some(v) => {
                        o4.copy_from_slice(&clamp_bytes(pack4(v.map(ssat8)), lo4, hi4).to_le_bytes().map(|b| b as i8))
                    }
                    None => {
                        for (j, (o, a)) in o4.iter_mut().zip(acc).enumerate() {
                            *o = out(c + j, a);
                        }
                    }
                }
                c += 4;
            }
            let rest = out_row.get_mut(c..).unwrap_or(&mut []);
            let rows = filter.get(c * depth..).unwrap_or(&[]);
            for (o2, w2) in rest.chunks_mut(2).zip(rows.chunks(depth.saturating_mul(2).max(1))) {
                let (w0, w1) = w2.split_at(depth.min(w2.len()));
                let w1 = if w1.is_empty() { w0 } else { w1 };
                let (a0, a1) = dot_2x1(xw, w0, w1, groups, (b(c), b(c + 1)));
                if let Some(o) = o2.get_mut(0) {
                    *o = out(c, tail(row, w0, a0));
                }
                if let Some(o) = o2.get_mut(1) {
                    *o = out(c + 1, tail(row, w1, a1));
                }
                c += 2;
            }
        } else {
            for (o2, w2) in out_row.chunks_mut(2).zip(filter.chunks(depth.saturating_mul(2).max(1))) {
                let (w0, w1) = w2.split_at(depth.min(w2.len()));
                let w1 = if w1.is_empty() { w0 } else { w1 };
                let (a0, a1) = dot_2x1_direct(row, off2, w0, w1, groups, (b(c), b(c + 1)));
                if let Some(o) = o2.get_mut(0) {
                    *o = out(c, tail(row, w0, a0));
                }
                if let Some(o) = o2.get_mut(1) {
                    *o = out(c + 1, tail(row, w1, a1));
                }
                c += 2;
            }
        }
    }
}
