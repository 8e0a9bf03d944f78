//! Cortex-M fast paths with Helium (the M-profile Vector Extension, MVE: Cortex-M55, M85), built
//! when `core/build.rs` emits `mq_mve` (`thumbv8m.main-*` with `-C target-cpu=cortex-m55` /
//! `cortex-m85` or `+mve`; always together with `mq_dsp`). Each kernel here is tried first; when
//! its preconditions do not hold it returns `false` having written nothing, and the dispatch
//! runs the Arm DSP path (`arm_dsp`), which itself falls back to the reference.
//!
//! Helium has eight 128-bit registers (`q0`-`q7`). The kernels use:
//!
//! - `VMLADAVA.S8 Rda, Qn, Qm`: 16 int8 products summed into a 32-bit general register (16
//!   MACs per instruction), for the dot products of the conv and the fully connected kernels;
//!   `VADDVA.S8` sums a filter's bytes (the input offset is folded in as `offset * sum(w)`);
//! - tail-predicated low-overhead loops (`DLSTP` / `LETP`): the last pass of a loop over `k`
//!   bytes (or `n` words) only touches the `k % 16` (`n % 4`) active lanes, so depths that are
//!   not multiples of 16 need neither padding nor a scalar tail, and nothing is read or written
//!   past a slice;
//! - the requantization four channels at a time, exactly
//!   [`multiply_by_quantized_multiplier`](crate::requant::multiply_by_quantized_multiplier)
//!   (TFLite's double rounding): `VSHL` by the left shift (wrapping, as `wrapping_shl`),
//!   `VQRDMULH` (which is `SaturatingRoundingDoublingHighMul`, saturation included), then
//!   TFLite's `RoundingDivideByPOT` as `VRSHL` by the negative right shift after subtracting 1
//!   from negative values when the shift is nonzero (`(h & right) >> 31`): `VRSHL` rounds half
//!   up, `RoundingDivideByPOT` half away from zero, and `floor((h - [h < 0] + 2^(e-1)) / 2^e)`
//!   is the latter (`h - 1` cannot overflow: `h > i32::MIN` for every multiplier);
//!   then the output offset and the clamp.
//!
//! Stable Rust has no Helium intrinsics (and no `qreg` operands for MVE), so every kernel step
//! is one `asm!` block that reads and writes memory, with the `q` registers it uses declared
//! clobbered. Every sum wraps modulo 2^32 exactly like the reference's.
//!
//! Files: `conv` (im2col into an interleaved block of 4 pixels, 1 filter x 4 pixels per pass of
//! `VMLADAVA`), `fully_connected` (2 filters x 1 row per pass).
#![allow(unsafe_code)]

mod add;
mod conv;
mod depthwise;
mod fully_connected;

pub(crate) use add::add_s8;
pub(crate) use conv::conv_s8;
pub(crate) use depthwise::depthwise_conv_s8;
pub(crate) use fully_connected::fully_connected_s8;

use crate::kernels::ActivationRange;
use core::arch::asm;

/// Most output channels (or filters) a layer may have on this path: the per-call tables
/// (offset-folded bias, accumulators) live on the stack.
pub(super) const MAX_CHANNELS: usize = 512;

/// `sum(w)` over the `len` bytes at `w` (signed, wrapping), 16 per `VADDVA`.
///
/// # Safety
/// `len` bytes from `w` are readable.
#[inline(always)]
unsafe fn sum_s8_raw(w: *const i8, len: usize) -> i32 {
    let mut acc: i32 = 0;
    if len == 0 {
        return 0;
    }
    // SAFETY: the tail-predicated loop reads `len` bytes from `w` (the last pass only its
    // `len % 16` active lanes), readable by the caller's contract; `r0` is the accumulator
    // (VADDVA needs an even register), `lr` the loop counter, `q0` the data.
    unsafe {
        asm!(
            "dlstp.8 lr, {n}",
            "2:",
            "vldrb.u8 q0, [{p}], #16",
            "vaddva.s8 r0, q0",
            "letp lr, 2b",
            p = inout(reg) w => _,
            n = in(reg) len,
            inout("r0") acc,
            out("lr") _,
            out("q0") _,
            options(readonly, nostack),
        );
    }
    acc
}

/// `bias[f] + input_offset * sum(filter row f)` (wrapping) for the `out.len()` rows of `k`
/// bytes of `filter`; `false` (nothing written) if a length does not fit.
fn fold_offset(filter: &[i8], k: usize, bias: Option<&[i32]>, input_offset: i32, out: &mut [i32]) -> bool {
    let n = out.len();
    if filter.len() < n.saturating_mul(k) || bias.is_some_and(|b| b.len() < n) {
        return false;
    }
    for (f, o) in out.iter_mut().enumerate() {
        // SAFETY: row `f < n` spans `[f * k, (f + 1) * k)`, within `filter` (checked above).
        let s = unsafe { sum_s8_raw(filter.as_ptr().wrapping_add(f * k), k) };
        let b = bias.and_then(|b| b.get(f)).copied().unwrap_or(0);
        *o = b.wrapping_add(input_offset.wrapping_mul(s));
    }
    true
}

/// The output stage of one row of channels: the requantization's clamp bounds as int8 values,
/// or `None` if the clamp and int8 do not overlap (the reference's `clamp` then `as i8` is not a
/// single clamp there; such layers run the other paths).
#[inline(always)]
fn clamp_bounds(act: ActivationRange) -> Option<(i32, i32)> {
    let (lo, hi) = (act.min.max(-128), act.max.min(127));
    (lo <= hi).then_some((lo, hi))
}

/// The parameters of [`requant_row`] shared by a layer's rows.
#[derive(Clone, Copy)]
struct RowQuant<'a> {
    multiplier: &'a [i32],
    shift: &'a [i32],
    /// Added to every accumulator first (the offset-folded bias).
    bias: &'a [i32],
    output_offset: i32,
    lo: i32,
    hi: i32,
}

impl RowQuant<'_> {
    /// Whether every shift is in TFLite's contract `[-31, 30]` (the multipliers may be anything:
    /// `VQRDMULH` saturates exactly as `SaturatingRoundingDoublingHighMul` does).
    fn shifts_valid(shift: &[i32]) -> bool {
        shift.iter().all(|s| (-31..=30).contains(s))
    }
}

/// `out[c] = clamp(multiply_by_quantized_multiplier(acc[c] + q.bias[c], q.multiplier[c],
/// q.shift[c]) + q.output_offset)` for `c < out.len()`, 4 channels per pass; nothing if a table
/// is shorter than `out`.
#[inline(always)]
fn requant_row(acc: &[i32], q: &RowQuant<'_>, out: &mut [i8]) {
    let n = out.len();
    if n == 0 || acc.len() < n || q.bias.len() < n || q.multiplier.len() < n || q.shift.len() < n {
        return;
    }
    // SAFETY: the tail-predicated loop (32-bit lanes) reads `n` words from each of `acc`,
    // `bias`, `shift`, `multiplier` and writes `n` bytes to `out` (the last pass only its active
    // lanes), all within the slices (checked above). Every `q` register used is declared
    // clobbered, `lr` is the loop counter; the output pointer is `r3` (a narrowing store takes a
    // low register).
    unsafe {
        asm!(
            "vmov.i32 q7, #0",
            "vdup.32 q6, {lo}",
            "vdup.32 q5, {hi}",
            "dlstp.32 lr, {n}",
            "2:",
            "vldrw.u32 q0, [{acc}], #16",
            "vldrw.u32 q1, [{bias}], #16",
            "vadd.i32 q0, q0, q1",
            "vldrw.u32 q2, [{sh}], #16",
            "vmax.s32 q1, q2, q7",
            "vmin.s32 q2, q2, q7",
            "vshl.s32 q0, q0, q1",
            "vldrw.u32 q1, [{m}], #16",
            "vqrdmulh.s32 q0, q0, q1",
            "vand q1, q0, q2",
            "vshr.s32 q1, q1, #31",
            "vadd.i32 q0, q0, q1",
            "vrshl.s32 q0, q0, q2",
            "vadd.i32 q0, q0, {off}",
            "vmax.s32 q0, q0, q6",
            "vmin.s32 q0, q0, q5",
            "vstrb.32 q0, [r3], #4",
            "letp lr, 2b",
            acc = inout(reg) acc.as_ptr() => _,
            bias = inout(reg) q.bias.as_ptr() => _,
            sh = inout(reg) q.shift.as_ptr() => _,
            m = inout(reg) q.multiplier.as_ptr() => _,
            inout("r3") out.as_mut_ptr() => _,
            n = in(reg) n,
            off = in(reg) q.output_offset,
            lo = in(reg) q.lo,
            hi = in(reg) q.hi,
            out("lr") _,
            out("q0") _,
            out("q1") _,
            out("q2") _,
            out("q5") _,
            out("q6") _,
            out("q7") _,
            options(nostack),
        );
    }
}
