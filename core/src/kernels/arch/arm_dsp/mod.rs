//! Cortex-M fast paths with the DSP extension (Armv7E-M: M4, M7; Armv8-M Mainline with DSP: M33,
//! M35P, M55, M85), built when `core/build.rs` emits `mq_dsp`.
//!
//! The dual 16-bit multiply-accumulate `SMLAD` does two MACs per instruction; `SXTB16` /
//! `SXTAB16` sign-extend bytes 0 and 2 (or, rotated by 8, bytes 1 and 3) of a word into two
//! halfwords, the latter adding the input offset in the same instruction. An int8 word
//! `[v0 v1 v2 v3]` so becomes the pairs `(v0, v2)` and `(v1, v3)`; weights and inputs are
//! extended the same way, so the pairs line up without repacking. Stable Rust has no intrinsics
//! for these (`core::arch::arm` DSP intrinsics are nightly-only and lack `SXTB16`), so they are
//! written with `core::arch::asm!`; the convolution's inner loop is one `asm!` block, because
//! it needs explicit registers for `LDM`.
//!
//! Every result is the reference's: the products are exact (int16 x int16), the sums wrap
//! modulo 2^32 exactly like the reference's `wrapping_add` (`SMLAD`/`SMLABB` set the sticky Q
//! flag on overflow and wrap), and requantization is the same function.
//!
//! This file holds the instruction wrappers (`SXTB16`, `SMLAD`, ...), the small helpers every
//! kernel uses and the `asm!` text shared by several kernels; one file per kernel:
//! `im2col` (the conv im2col block), `conv`, `fully_connected` (entry points and the general
//! path) with `fully_connected_expanded` and `fully_connected_raw` (its two lean paths),
//! `fully_connected_s4` (int4 weights unpacked in registers),
//! `depthwise`, `depthwise_3x3` and `depthwise_3x3_s1`.
#![allow(unsafe_code)]

mod conv;
mod depthwise;
mod depthwise_3x3;
mod depthwise_3x3_s1;
mod fully_connected;
mod fully_connected_expanded;
mod fully_connected_raw;
mod fully_connected_s4;
mod fully_connected_wide;
mod im2col;
mod raw_patches;

pub(crate) use conv::conv_s8;
pub(crate) use depthwise::depthwise_conv_s8;
pub(crate) use fully_connected::{FcArgs, fully_connected_right_shift, fully_connected_s8};
pub(crate) use fully_connected_s4::fully_connected_s4;

use crate::kernels::arch::requant::{ChannelRequant, RightShiftRequant};
use core::arch::asm;

/// `SXTB16 r, x`: bytes 0 and 2 of `x`, sign-extended to two halfwords.
#[inline(always)]
fn sxtb16(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtb16 {r}, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTB16 r, x, ROR #8`: bytes 1 and 3 of `x`, sign-extended to two halfwords.
#[inline(always)]
fn sxtb16_ror8(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtb16 {r}, {x}, ror #8", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTAB16 r, a, x`: `a`'s halfwords plus bytes 0 and 2 of `x`, sign-extended.
#[inline(always)]
fn sxtab16(a: u32, x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtab16 {r}, {a}, {x}", r = lateout(reg) r, a = in(reg) a, x = in(reg) x,
             options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTAB16 r, a, x, ROR #8`: `a`'s halfwords plus bytes 1 and 3 of `x`, sign-extended.
#[inline(always)]
fn sxtab16_ror8(a: u32, x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtab16 {r}, {a}, {x}, ror #8", r = lateout(reg) r, a = in(reg) a, x = in(reg) x,
             options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SADD16 r, a, b`: the halfwords of `a` and `b` added (signed, wrapping).
#[inline(always)]
fn sadd16(a: u32, b: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack); it writes the GE flags, which
    // are not declared preserved.
    unsafe {
        asm!("sadd16 {r}, {a}, {b}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, options(pure, nomem, nostack))
    };
    r
}

/// `SMLAD r, a, b, acc`: `acc + a.lo * b.lo + a.hi * b.hi` (halfwords signed), wrapping.
#[inline(always)]
fn smlad(a: u32, b: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); it may set the sticky Q flag,
    // so flags are not declared preserved.
    unsafe {
        asm!("smlad {r}, {a}, {b}, {acc}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, acc = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SMLABB r, a, b, acc`: `acc + a.lo * b.lo`, wrapping.
#[inline(always)]
fn smlabb(a: u32, b: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); may set the sticky Q flag.
    unsafe {
        asm!("smlabb {r}, {a}, {b}, {acc}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, acc = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SMLATT r, a, b, acc`: `acc + a.hi * b.hi`, wrapping.
#[inline(always)]
fn smlatt(a: u32, b: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); may set the sticky Q flag.
    unsafe {
        asm!("smlatt {r}, {a}, {b}, {acc}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, acc = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SSAT r, #8, x`: `x` saturated to int8.
#[inline(always)]
fn ssat8(x: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); it may set the sticky Q flag.
    unsafe { asm!("ssat {r}, #8, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack)) };
    r
}

/// Four int8 values (each already in [-128, 127]) packed into a word, `v[0]` in the low byte.
#[inline(always)]
fn pack4(v: [i32; 4]) -> u32 {
    let (b0, b1, b2, b3) = (v[0] as u32 & 0xff, v[1] as u32 & 0xff, v[2] as u32 & 0xff, v[3] as u32 & 0xff);
    b0 | b1 << 8 | b2 << 16 | b3 << 24
}

/// Per byte (signed): `min(max(x, lo), hi)`, with `SSUB8` + `SEL` (the GE flags they use stay
/// inside the block).
#[inline(always)]
fn clamp_bytes(x: u32, lo: u32, hi: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instructions (no memory, no stack); they write the GE flags, which
    // are not declared preserved.
    unsafe {
        asm!(
            "ssub8 {t}, {x}, {lo}",
            "sel {r}, {x}, {lo}",
            "ssub8 {t}, {hi}, {r}",
            "sel {r}, {r}, {hi}",
            x = in(reg) x,
            lo = in(reg) lo,
            hi = in(reg) hi,
            t = out(reg) _,
            r = out(reg) r,
            options(pure, nomem, nostack),
        )
    };
    r
}

/// The input offset in both halfwords, for `SXTAB16`.
#[inline(always)]
fn offset_pair(offset: i32) -> u32 {
    let h = offset as u16 as u32;
    h | (h << 16)
}

/// The scan of [`RightShiftRequant`]'s common form over the `n = min(multiplier.len(),
/// shift.len())` channels: `(OR of every m | (s + 31), AND of every s + 1)`, 4 channels per
/// iteration (two `LDM`s, 24 instructions), then the `n % 4` others one by one (9 each).
#[inline(always)]
pub(crate) fn right_shift_scan(multiplier: &[i32], shift: &[i32]) -> (i32, i32) {
    let n = multiplier.len().min(shift.len());
    let (mut bad, mut good) = (0i32, -1i32);
    // SAFETY: `n / 4` iterations of the first loop, each reading 4 words at `pm` and at `ps`
    // (`LDM`, word aligned: `i32` slices), then `n % 4` of the second, one word at each: in all
    // `multiplier[..n]` and `shift[..n]`, within both. Every register written is declared; the
    // flags are not declared preserved.
    unsafe {
        asm!(
            "lsrs {q}, {n}, #2",
            "beq 3f",
            "2:",
            "ldm {pm}!, {{r0, r1, r2, r3}}",
            "orr {bad}, {bad}, r0",
            "orr {bad}, {bad}, r1",
            "orr {bad}, {bad}, r2",
            "orr {bad}, {bad}, r3",
            "ldm {ps}!, {{r0, r1, r2, r3}}",
            "add {t}, r0, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r0, #1",
            "and {good}, {good}, {t}",
            "add {t}, r1, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r1, #1",
            "and {good}, {good}, {t}",
            "add {t}, r2, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r2, #1",
            "and {good}, {good}, {t}",
            "add {t}, r3, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r3, #1",
            "and {good}, {good}, {t}",
            "subs {q}, {q}, #1",
            "bne 2b",
            "3:",
            "ands {n}, {n}, #3",
            "beq 5f",
            "4:",
            "ldr r0, [{pm}], #4",
            "ldr r1, [{ps}], #4",
            "orr {bad}, {bad}, r0",
            "add {t}, r1, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r1, #1",
            "and {good}, {good}, {t}",
            "subs {n}, {n}, #1",
            "bne 4b",
            "5:",
            pm = inout(reg) multiplier.as_ptr() => _,
            ps = inout(reg) shift.as_ptr() => _,
            n = inout(reg) n => _,
            q = out(reg) _,
            bad = inout(reg) bad,
            good = inout(reg) good,
            t = out(reg) _,
            out("r0") _,
            out("r1") _,
            out("r2") _,
            out("r3") _,
            options(readonly, nostack),
        );
    }
    (bad, good)
}

/// Four bytes as a little-endian word (an unaligned `LDR`, which these cores support).
#[inline(always)]
fn word(b: &[i8]) -> u32 {
    match b {
        [a, b, c, d, ..] => u32::from_le_bytes([*a as u8, *b as u8, *c as u8, *d as u8]),
        _ => {
            // A short tail (fewer than 4 bytes): zero-filled.
            let mut w = [0u8; 4];
            w.iter_mut().zip(b).for_each(|(d, &s)| *d = s as u8);
            u32::from_le_bytes(w)
        }
    }
}

/// One group of 4 patch values in the conv inner loop (13 instructions, 16 MACs): the filter
/// word (`r12`), extended to `(w0, w2)` then `(w1, w3)` (`lr`), against the 4 pixels' pairs
/// loaded with `LDM` (`r8`-`r11`) into the 4 accumulators (`r0`-`r3`). `r4`: im2col block,
/// `r5`: filter.
macro_rules! conv_group {
    () => {
        concat!(
            "ldr r12, [r5], #4\n",
            "ldm r4!, {{r8, r9, r10, r11}}\n",
            "sxtb16 lr, r12\n",
            "smlad r0, r8, lr, r0\n",
            "smlad r1, r9, lr, r1\n",
            "smlad r2, r10, lr, r2\n",
            "smlad r3, r11, lr, r3\n",
            "ldm r4!, {{r8, r9, r10, r11}}\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r0, r8, lr, r0\n",
            "smlad r1, r9, lr, r1\n",
            "smlad r2, r10, lr, r2\n",
            "smlad r3, r11, lr, r3\n",
        )
    };
}
use conv_group;

/// Requantizes accumulator `$a` to int8 in 5 instructions, with `$t` a scratch register, `$m` the
/// multiplier `m` doubled as a 32-bit word `M`, `$e` holding `e - 1` (`e = -shift`) and `$z`
/// holding `1 + 2 * output_offset`; the result saturated to int8 in `$a`. `high` when `m >= 2^30`
/// (`M` then reads as `2 m - 2^32`), else `low` (`M = 2 m`). With `s = [a < 0]`, `SMMLAR r, a,
/// M, c` is `c + floor((a M + 2^31) / 2^32)`: from `c = a - s` (`ADD r, a, a, ASR #31`) when `a M
/// = 2 a m - a 2^32`, from `c = -s` (`ASR r, a, #31`) when `a M = 2 a m`, both `h - s` with `h =
/// floor((2 a m + 2^31) / 2^32) = floor((a m + 2^30) / 2^31)`, TFLite's
/// `SaturatingRoundingDoublingHighMul`; then `((h - s) >> (e - 1) + 1 + 2 z) >> 1` equals `((h +
/// 2^(e-1) - s) >> e) + z`, its `RoundingDivideByPOT` plus the offset `z` (nested floors of
/// quotients merge; `s` may stand for `[h < 0]`: see [`RightShiftRequant`]; a zero multiplier
/// gives `z` whatever the shift). The convolution's `conv_requant!` and the fully connected
/// layer's `fc8_requant!` name their registers.
macro_rules! smmlar_requant {
    ($a:literal, high, $t:literal, $m:literal, $e:literal, $z:literal) => {
        concat!("add ", $t, ", ", $a, ", ", $a, ", asr #31\n", smmlar_requant!(@tail $a, $t, $m, $e, $z))
    };
    ($a:literal, low, $t:literal, $m:literal, $e:literal, $z:literal) => {
        concat!("asr ", $t, ", ", $a, ", #31\n", smmlar_requant!(@tail $a, $t, $m, $e, $z))
    };
    (@tail $a:literal, $t:literal, $m:literal, $e:literal, $z:literal) => {
        concat!(
            "smmlar ", $t, ", ", $a, ", ", $m, ", ", $t, "\n",
            "asr ", $t, ", ", $t, ", ", $e, "\n",
            "add ", $t, ", ", $t, ", ", $z, "\n",
            "ssat ", $a, ", #8, ", $t, ", asr #1\n",
        )
    };
}
use smmlar_requant;

/// One group of 4 input values against 4 filter rows in the fully connected inner loop (21
/// instructions, 16 MACs): the expanded input pairs (`r10`, `r11`, one `LDRD`), then for each
/// row its word (`r12`) extended twice (`lr`) into its accumulator (`r0`-`r3`). Rows 0 and 2 are
/// read through `r5` and `r8` (post-incremented), rows 1 and 3 at the same places plus the row
/// stride `r9`.
macro_rules! fc_group {
    () => {
        concat!(
            "ldrd r10, r11, [r4], #8\n",
            "ldr r12, [r5, r9]\n",
            "sxtb16 lr, r12\n",
            "smlad r1, r10, lr, r1\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r1, r11, lr, r1\n",
            "ldr r12, [r5], #4\n",
            "sxtb16 lr, r12\n",
            "smlad r0, r10, lr, r0\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r0, r11, lr, r0\n",
            "ldr r12, [r8, r9]\n",
            "sxtb16 lr, r12\n",
            "smlad r3, r10, lr, r3\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r3, r11, lr, r3\n",
            "ldr r12, [r8], #4\n",
            "sxtb16 lr, r12\n",
            "smlad r2, r10, lr, r2\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r2, r11, lr, r2\n",
        )
    };
}
use fc_group;

/// Requantizes accumulator `$a` in [`fc_rows_asm`], per channel: the multiplier and shift loaded
/// from `r8` and `r9` (post-incremented), `r12` `1 + 2 * offset`, `lr` `2^30`: 10 instructions.
///
/// [`fc_rows_asm`]: fully_connected_expanded::fc_rows_asm
macro_rules! fc_requant_pc {
    ($a:literal) => {
        concat!(
            "ldr r10, [r8], #4\n",
            "asr r11, ",
            $a,
            ", #31\n",
            "orr r4, lr, r11, lsl #31\n",
            "smlal r4, r11, ",
            $a,
            ", r10\n",
            "ldr r10, [r9], #4\n",
            "mvn r10, r10\n",
            "sub r10, r10, #1\n",
            "asr r11, r11, r10\n",
            "add r11, r11, r12\n",
            "ssat ",
            $a,
            ", #8, r11, asr #1\n",
        )
    };
}
use fc_requant_pc;

/// The requantization the DSP epilogues run per output channel: [`RightShiftRequant`] with
/// `SMLAL` (what TFLite's converters produce), or [`ChannelRequant`] for other shifts.
trait DspRequant: Copy {
    /// The prepared form of a channel whose `(multiplier, shift)` the caller checked
    /// (`all_valid`); anything else gives a wrong value, never undefined behaviour.
    fn of(multiplier: i32, shift: i32) -> Self;
    /// `multiply_by_quantized_multiplier(acc, multiplier, shift)`.
    fn apply(self, acc: i32) -> i32;
}

impl DspRequant for RightShiftRequant {
    #[inline(always)]
    fn of(multiplier: i32, shift: i32) -> Self {
        Self::new(multiplier, shift).unwrap_or_default()
    }

    /// `((hi(acc·m ± 2^30) + round) >> shift`: 5 instructions (the 64-bit start value comes from
    /// the sign of `acc`: `ASR` gives the high word, `ORR` the low one).
    #[inline(always)]
    fn apply(self, acc: i32) -> i32 {
        let r: i32;
        // SAFETY: register-only instructions (no memory, no stack, no flags: SMLAL without S).
        // `shift` is in [1, 30] for every prepared value (0 for the default, also fine).
        unsafe {
            asm!(
                "asr {hi}, {a}, #31",
                "orr {lo}, {c}, {hi}, lsl #31",
                "smlal {lo}, {hi}, {a}, {m}",
                "add {hi}, {hi}, {round}",
                "asr {hi}, {hi}, {sh}",
                a = in(reg) acc,
                m = in(reg) self.multiplier,
                c = in(reg) 0x4000_0000u32,
                round = in(reg) self.round,
                sh = in(reg) self.shift,
                hi = out(reg) r,
                lo = out(reg) _,
                options(pure, nomem, nostack, preserves_flags),
            )
        };
        r
    }
}

/// [`RightShiftRequant::apply`] with `SMLAL` (5 instructions), for the other kernels' fast paths.
#[inline(always)]
pub(crate) fn requant_right_shift(r: RightShiftRequant, acc: i32) -> i32 {
    DspRequant::apply(r, acc)
}

impl DspRequant for ChannelRequant {
    #[inline(always)]
    fn of(multiplier: i32, shift: i32) -> Self {
        Self::new_valid(multiplier, shift)
    }
    #[inline(always)]
    fn apply(self, acc: i32) -> i32 {
        ChannelRequant::apply(&self, acc)
    }
}
