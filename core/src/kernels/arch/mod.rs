//! Fast paths of the int8 convolution, depthwise convolution, fully connected and add kernels, beside
//! the reference kernels and chosen at compile time. Nothing here is public API: this page
//! documents which implementation runs on which target (`docs/KERNELS.md` has the support
//! matrix and the measured speed).
//!
//! Each kernel file has one dispatch function (`conv_s8_dispatch`, `depthwise_conv_s8_dispatch`,
//! `fully_connected_dispatch`, and `add_s8` itself) that calls the fast path of the target, which checks its own
//! preconditions and returns `false` (having written nothing) when they do not hold; the
//! dispatch then runs the reference kernel. Every fast path computes exactly what the reference
//! computes (same wrapping int32 sums, same requantization function), so the outputs are the same
//! bit for bit on every target; the golden tests and the property tests against the reference
//! check it on the host, in wasm (Node and Chromium) and under QEMU.
//!
//! | target (cfg) | `conv_s8` | `depthwise_conv_s8` | `fully_connected[_per_channel]_s8` | `add_s8` (equal shapes) |
//! |---|---|---|---|---|
//! | Cortex-M4/M7, M33/M55 with `-C target-cpu` (`mq_dsp`, from `core/build.rs`) | `arm_dsp`: im2col to int16, 1 filter x 4 pixels tiles of SMLAD, 16 filters per `asm!` block | `arm_dsp`: 4 channels per word (SXTB16 + SMLABB/SMLATT), 3x3 interior unrolled in `asm!` | `arm_dsp`: input row expanded once, 4 filters per pass, SXTB16 + SMLAD | `AddInputScale` per input, `RightShiftRequant` for the sum |
//! | wasm32 with `simd128` | `wasm_simd`: im2col to int16 (a filter row per run); patches up to 640 values and up to 256 filters: weights packed per call, output channels in the lanes (`i32x4.dot_i16x8_s` of a splat input pair), 8 filters x 4 pixels, requantization per lane in `i32x4`; longer patches: 2 filters x 4 pixels, sums across lanes | `wasm_simd`: 16 channels per block, taps paired and interleaved for `i32x4.dot_i16x8_s`, padding read as the zero point (offset folded into the bias), requantization per lane in `i32x4`; up to 7x7 | `wasm_simd`: `i32x4.dot_i16x8_s`, 4 filters per pass | `wasm_simd`: each input's rescaling tabulated per call (256 values), the sums requantized 16 at a time in `i32x4` |
//! | anything else: x86-64, AArch64, Cortex-M0/M0+/M3, wasm32 without SIMD | `portable`: im2col to int16, 4-pixel tiles (autovectorized on x86-64) | `portable` | reference (its zip loop autovectorizes on x86-64) | `AddInputScale` per input, `ChannelRequant` for the sum |
//!
//! Preconditions common to the fast paths: int8 (not 16x8) data; conv without groups
//! (`filter_in_c == in_c`) and with enough scratch ([`conv_s8_scratch_len`]); depthwise with
//! depth multiplier 1 (and at most 25 taps on Arm, 49 in wasm); per-channel multipliers other
//! than `i32::MIN` and shifts in TFLite's contract `[-31, 30]` (conv, depthwise). Everything else runs
//! the reference. The `force-reference` cargo feature compiles the fast paths out.
//!
//! [`conv_s8_scratch_len`]: crate::kernels::conv::conv_s8_scratch_len

use crate::kernels::ActivationRange;
use crate::kernels::params::AddParams;
use crate::kernels::params::ConvParams;
use crate::kernels::window::input_coord;
use crate::requant;

#[cfg(mq_dsp)]
pub(crate) mod arm_dsp;
#[cfg(any(test, not(mq_dsp)))]
pub(crate) mod portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) mod wasm_simd;

/// Output pixels per im2col block of the tiled convolutions.
pub(crate) const TILE: usize = 4;
/// Patch lengths are padded with zeros to a multiple of this many values in the im2col block.
pub(crate) const K_ALIGN: usize = 8;

/// `k` rounded up to a multiple of [`K_ALIGN`] (saturating).
#[inline]
pub(crate) fn padded_patch_len(k: usize) -> usize {
    k.div_ceil(K_ALIGN).saturating_mul(K_ALIGN)
}

/// 32-bit words of im2col scratch a tiled convolution with patch length `k` uses: [`TILE`]
/// patches of `padded_patch_len(k)` int16 values (saturating).
#[inline]
pub(crate) fn conv_scratch_words(k: usize) -> usize {
    padded_patch_len(k).saturating_mul(TILE) / 2
}

/// The 4-byte aligned part of a byte scratch buffer, as words (empty if there is none).
#[inline]
pub(crate) fn scratch_words(scratch: &mut [u8]) -> &mut [u32] {
    let (_, words, _) = bytemuck::pod_align_to_mut::<u8, u32>(scratch);
    words
}

/// One output channel's fixed-point requantization, prepared so each accumulator costs about
/// twenty instructions on a 32-bit core, and exactly
/// [`requant::multiply_by_quantized_multiplier`] (double rounding) for every input within its
/// contract:
///
/// - `SaturatingRoundingDoublingHighMul(a, m)` is `floor((a * m + 2^30) / 2^31)` (gemmlowp's
///   sign-dependent nudge and truncating division amount to that), except for `a == m ==
///   i32::MIN`, which saturates: so a multiplier of `i32::MIN` is refused ([`Self::new`] gives
///   `None`);
/// - `RoundingDivideByPOT(h, e)` is `(h >> e) + ((h & mask) > (mask >> 1) + (h < 0))` with
///   `mask = 2^e - 1`, mask and threshold prepared once;
/// - shifts outside TFLite's contract `[-31, 30]` are refused.
///
/// The equality is property-tested against the library function (`tests` below).
#[derive(Clone, Copy)]
pub(crate) struct ChannelRequant {
    multiplier: i32,
    left: u32,
    right: u32,
    mask: i32,
    half: i32,
}

impl ChannelRequant {
    /// The prepared form of `(multiplier, shift)`, or `None` outside the contract (a multiplier
    /// of `i32::MIN`, a shift outside `[-31, 30]`): callers then use the library function.
    #[inline(always)]
    pub(crate) fn new(multiplier: i32, shift: i32) -> Option<Self> {
        if !(-31..=30).contains(&shift) || multiplier == i32::MIN {
            return None;
        }
        Some(Self::new_valid(multiplier, shift))
    }

    /// The prepared form of a `(multiplier, shift)` known to be within the contract (callers
    /// check [`Self::all_valid`] first; outside it the result is wrong, never undefined).
    #[inline(always)]
    pub(crate) fn new_valid(multiplier: i32, shift: i32) -> Self {
        let left = if shift > 0 { shift as u32 } else { 0 };
        let right = if shift < 0 { shift.unsigned_abs() & 31 } else { 0 };
        let mask = (1u32 << right).wrapping_sub(1) as i32;
        Self { multiplier, left: left & 31, right, mask, half: mask >> 1 }
    }

    /// Whether every channel's `(multiplier, shift)` has a prepared form.
    pub(crate) fn all_valid(multiplier: &[i32], shift: &[i32]) -> bool {
        multiplier.iter().zip(shift).all(|(&m, &s)| Self::new(m, s).is_some())
    }

    /// `multiply_by_quantized_multiplier(acc, multiplier, shift)`.
    #[inline(always)]
    pub(crate) fn apply(&self, acc: i32) -> i32 {
        let a = acc.wrapping_shl(self.left);
        let h = ((a as i64 * self.multiplier as i64 + (1 << 30)) >> 31) as i32;
        let threshold = self.half + ((h as u32) >> 31) as i32;
        (h >> self.right) + ((h & self.mask) > threshold) as i32
    }

    /// The int8 output stage: `clamp(apply(acc) + output_offset)`.
    #[inline(always)]
    pub(crate) fn output_s8(&self, acc: i32, output_offset: i32, act: ActivationRange) -> i8 {
        act.apply(self.apply(acc).wrapping_add(output_offset)) as i8
    }
}

/// One output channel's requantization in the form the Arm DSP epilogues compute with one
/// 64-bit multiply-accumulate (`SMLAL`) and four single-cycle instructions, for the channels
/// TFLite's converters produce: a right shift of at least 2 (`shift` in `[-31, -2]`) and a
/// multiplier `>= 0`, or a multiplier of 0 (any shift). With `e = -shift`:
///
/// `multiply_by_quantized_multiplier(a, m, shift) = ((hi(a·m ± 2^30) + 2^(e-2)) >> (e-1)`
///
/// where `hi(x) = x >> 32` (arithmetic) and the `± 2^30` takes the sign of `a`. Why:
/// `SaturatingRoundingDoublingHighMul(a, m) = h = floor((a·m + 2^30) / 2^31)` (no saturation for
/// `m >= 0`), and TFLite's `RoundingDivideByPOT(h, e) = floor((h + 2^(e-1) - [h < 0]) / 2^e)`
/// (round half away from zero); nested floors of integer quotients merge, so the result is
/// `floor((a·m + 2^30 + 2^(30+e) - [h < 0]·2^31) / 2^(31+e))`. `[h < 0]` may be replaced by
/// `[a < 0]`: they differ only when `a < 0` and `h = 0`, where both give 0. `2^(30+e)` is a
/// multiple of `2^32` for `e >= 2`, so it adds `2^(e-2)` to the high word exactly; the rest is
/// the high word of `a·m + 2^30 - [a < 0]·2^31 = a·m ± 2^30`. The high word is within
/// `[-2^30 - 1, 2^30]` (`|a·m| < 2^62`), so adding `2^(e-2) <= 2^29` cannot overflow. A
/// multiplier of 0 gives 0 whatever the shift, as `(hi + 1) >> 1` with `hi` in `{-1, 0}` does.
///
/// [`Self::apply`] is this formula in portable 64-bit arithmetic (the host property test checks
/// it against the library function); `arm_dsp` computes the same in `asm!`.
#[derive(Clone, Copy, Default)]
#[cfg_attr(not(mq_dsp), allow(dead_code))]
pub(crate) struct RightShiftRequant {
    /// The Q31 multiplier, `>= 0`.
    pub(crate) multiplier: i32,
    /// `2^(e-2)`, the rounding term added to the high word.
    pub(crate) round: i32,
    /// `e - 1`, in `[1, 30]`.
    pub(crate) shift: u32,
}

#[cfg_attr(not(mq_dsp), allow(dead_code))]
impl RightShiftRequant {
    /// The prepared form of `(multiplier, shift)`, or `None` outside this form's domain (a
    /// negative multiplier; a nonzero multiplier with a shift outside `[-31, -2]`; a shift
    /// outside `[-31, 30]`).
    #[inline(always)]
    pub(crate) fn new(multiplier: i32, shift: i32) -> Option<Self> {
        if multiplier == 0 && (-31..=30).contains(&shift) {
            return Some(Self { multiplier: 0, round: 1, shift: 1 });
        }
        if multiplier < 0 || !(-31..=-2).contains(&shift) {
            return None;
        }
        let e1 = shift.unsigned_abs() - 1; // in [1, 30]
        Some(Self { multiplier, round: 1 << (e1 - 1), shift: e1 })
    }

    /// Whether every channel's `(multiplier, shift)` has this form. One branch-free scan for the
    /// common case ([`Self::all_common`]); only if some channel is outside it (a zero
    /// multiplier with a shift above -2) the exact test per channel.
    #[inline]
    pub(crate) fn all_valid(multiplier: &[i32], shift: &[i32]) -> bool {
        multiplier.len() == shift.len()
            && (Self::all_common(multiplier, shift)
                || multiplier.iter().zip(shift).all(|(&m, &s)| Self::new(m, s).is_some()))
    }

    /// Whether every channel has a multiplier `>= 0` and a shift in `[-31, -2]` (all of this form),
    /// with sign bits only: those of every `m` and `s + 31` (set for `s < -31`) OR-ed must be
    /// clear, those of every `s + 1` (clear for `s > -2`) AND-ed set; the sums wrap, and a
    /// wrapped one fails the other test. No branch but the loop's; on the Arm DSP path 4
    /// channels per iteration in `asm!` (`LDM`, about 6 instructions per channel).
    #[inline(always)]
    fn all_common(multiplier: &[i32], shift: &[i32]) -> bool {
        #[cfg(mq_dsp)]
        let (bad, good) = arm_dsp::right_shift_scan(multiplier, shift);
        #[cfg(not(mq_dsp))]
        let (bad, good) = multiplier
            .iter()
            .zip(shift)
            .fold((0i32, -1i32), |(bad, good), (&m, &s)| (bad | m | s.wrapping_add(31), good & s.wrapping_add(1)));
        bad >= 0 && good < 0
    }

    /// `multiply_by_quantized_multiplier(acc, multiplier, shift)`, in portable 64-bit arithmetic
    /// (the property tests' form; `arm_dsp` computes it with `SMLAL`).
    #[inline(always)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn apply(self, acc: i32) -> i32 {
        let half = if acc < 0 { -(1i64 << 30) } else { 1i64 << 30 };
        let hi = ((acc as i64 * self.multiplier as i64 + half) >> 32) as i32;
        hi.wrapping_add(self.round) >> (self.shift & 31)
    }
}

/// One input's rescaling in int8 ADD: `multiply_by_quantized_multiplier((x + offset) << 20, m,
/// shift)` for `m >= 0` and `shift` in `[-31, 0]`, in 32-bit arithmetic only. With `v = x +
/// offset` in `[-255, 255]` and `m = mh * 2^11 + ml`: `SaturatingRoundingDoublingHighMul(v *
/// 2^20, m) = floor((v * m + 2^10) / 2^11) = v * mh + ((v * ml + 2^10) >> 11)` (the common
/// factor `2^20` cancels out of TFLite's `(a * m + 2^30) / 2^31`; `|v * mh| < 2^28`, `|v * ml| <
/// 2^19`), then `RoundingDivideByPOT` as `(h + 2^(e-1) - [h < 0]) >> e` (`e = -shift`; `h` for
/// `e = 0`).
#[derive(Clone, Copy)]
pub(crate) struct AddInputScale {
    offset: i32,
    mh: i32,
    ml: i32,
    half: i32,
    neg: i32,
    e: u32,
}

impl AddInputScale {
    /// The prepared form, or `None` outside its domain.
    pub(crate) fn new(offset: i32, multiplier: i32, shift: i32) -> Option<Self> {
        if multiplier < 0 || !(-31..=0).contains(&shift) || !(-255..=255).contains(&offset) {
            return None;
        }
        let e = shift.unsigned_abs();
        let (half, neg) = if e == 0 { (0, 0) } else { (1 << (e - 1), 1) };
        Some(Self { offset, mh: multiplier >> 11, ml: multiplier & 0x7ff, half, neg, e })
    }

    /// The rescaled value of `x`.
    #[inline(always)]
    pub(crate) fn apply(&self, x: i8) -> i32 {
        let v = x as i32 + self.offset;
        let h = v * self.mh + ((v * self.ml + 1024) >> 11);
        (h + self.half - (((h as u32) >> 31) as i32 & self.neg)) >> (self.e & 31)
    }
}

/// int8 ADD without broadcasting (TFLite's `left_shift` of 20): the inputs' rescaling through
/// [`AddInputScale`], the sum's through `out_scale` (the output multiplier), plus the output
/// offset, clamped. `false` (nothing written) outside the preconditions: int8 parameters
/// (`left_shift == 20`), equal shapes, lengths matching them, multipliers in their forms.
pub(crate) fn add_s8_elementwise(p: &AddParams, in1: &[i8], in2: &[i8], out: &mut [i8]) -> bool {
    let (m1, m2) = (p.input1_multiplier, p.input2_multiplier);
    let (Some(s1), Some(s2)) = (
        AddInputScale::new(p.input1_offset, m1.multiplier, m1.shift),
        AddInputScale::new(p.input2_offset, m2.multiplier, m2.shift),
    ) else {
        return false;
    };
    let n = p.broadcast.output_len();
    if p.left_shift != 20 || !p.broadcast.is_elementwise() || in1.len() != n || in2.len() != n || out.len() != n {
        return false;
    }
    let mo = p.output_multiplier;
    let (lo, hi, off) = (p.activation.min, p.activation.max, p.output_offset);
    #[cfg(mq_dsp)]
    if let Some(r) = RightShiftRequant::new(mo.multiplier, mo.shift) {
        for ((o, &a), &b) in out.iter_mut().zip(in1).zip(in2) {
            let sum = s1.apply(a).wrapping_add(s2.apply(b));
            *o = arm_dsp::requant_right_shift(r, sum).wrapping_add(off).max(lo).min(hi) as i8;
        }
        return true;
    }
    let Some(r) = ChannelRequant::new(mo.multiplier, mo.shift) else { return false };
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    wasm_simd::add_s8(&s1, &s2, r, (off, lo, hi), in1, in2, out);
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    for ((o, &a), &b) in out.iter_mut().zip(in1).zip(in2) {
        let sum = s1.apply(a).wrapping_add(s2.apply(b));
        *o = r.apply(sum).wrapping_add(off).max(lo).min(hi) as i8;
    }
    true
}

/// `multiply_by_quantized_multiplier` through [`ChannelRequant`] when `(multiplier, shift)` is
/// within its contract, else the library function: the same result either way.
#[inline(always)]
pub(crate) fn requantize(acc: i32, multiplier: i32, shift: i32) -> i32 {
    match ChannelRequant::new(multiplier, shift) {
        Some(r) => r.apply(acc),
        None => requant::multiply_by_quantized_multiplier(acc, multiplier, shift),
    }
}

/// How a fully connected fast path scales its accumulators: fixed point (TFLite Micro's double
/// rounding; one multiplier and shift, or one per output channel), through [`requantize`]; or any
/// other rule (the TFLite interpreter's single rounding), through the kernel's own function.
#[cfg_attr(not(any(mq_dsp, all(target_arch = "wasm32", target_feature = "simd128"))), allow(dead_code))]
pub(crate) enum OutputScale<'a> {
    /// Q31 multipliers and shifts: one (per-tensor) or one per output channel.
    Fixed {
        /// Multipliers.
        multiplier: &'a [i32],
        /// Shifts.
        shift: &'a [i32],
        /// Whether every pair is within [`ChannelRequant`]'s contract ([`ChannelRequant::all_valid`]).
        valid: bool,
    },
    /// `f(channel, acc)`.
    Other(&'a dyn Fn(usize, i32) -> i32),
}

#[cfg_attr(not(any(mq_dsp, all(target_arch = "wasm32", target_feature = "simd128"))), allow(dead_code))]
impl OutputScale<'_> {
    /// `clamp(scale(channel, acc) + output_offset)` as int8.
    #[inline(always)]
    pub(crate) fn output_s8(&self, channel: usize, acc: i32, output_offset: i32, act: ActivationRange) -> i8 {
        let v = match *self {
            OutputScale::Fixed { multiplier, shift, valid, .. } => {
                let i = if multiplier.len() == 1 { 0 } else { channel };
                match (multiplier.get(i), shift.get(i)) {
                    (Some(&m), Some(&s)) if valid => ChannelRequant::new_valid(m, s).apply(acc),
                    (Some(&m), Some(&s)) => requant::multiply_by_quantized_multiplier(acc, m, s),
                    _ => 0, // unreachable: lengths validated by the kernel
                }
            }
            OutputScale::Other(f) => f(channel, acc),
        };
        act.apply(v.wrapping_add(output_offset)) as i8
    }

    /// For a validated fixed-point scale: the 4 channels `c..c + 4` requantized, plus
    /// `output_offset` (before the clamp); `None` for the other forms.
    #[inline(always)]
    #[cfg_attr(not(mq_dsp), allow(dead_code))]
    pub(crate) fn fixed_s8_x4(&self, c: usize, acc: [i32; 4], output_offset: i32) -> Option<[i32; 4]> {
        let OutputScale::Fixed { multiplier, shift, valid: true, .. } = *self else { return None };
        let one = multiplier.len() == 1;
        let pick = |s: &[i32], j: usize| if one { s.first() } else { s.get(c + j) }.copied();
        let mut r = [0i32; 4];
        for (j, (r, a)) in r.iter_mut().zip(acc).enumerate() {
            let (Some(m), Some(s)) = (pick(multiplier, j), pick(shift, j)) else { return None };
            *r = ChannelRequant::new_valid(m, s).apply(a).wrapping_add(output_offset);
        }
        Some(r)
    }
}

/// Visits the taps of output pixel `(oy, ox)` of a convolution in patch order (filter row, then
/// column): `f(tap, Some(run))` with the `in_c` input values under an in-image tap, `f(tap,
/// None)` for a tap in the padding.
#[inline(always)]
pub(crate) fn for_each_tap(p: &ConvParams, in_b: &[i8], oy: usize, ox: usize, mut f: impl FnMut(usize, Option<&[i8]>)) {
    let c = p.input.c;
    let mut tap = 0;
    for ky in 0..p.filter.h {
        let iy = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, p.input.h);
        for kx in 0..p.filter.w {
            let run = match (iy, input_coord(ox, p.stride.w, kx, p.dilation.w, p.padding.left, p.input.w)) {
                (Some(iy), Some(ix)) => {
                    let start = (iy * p.input.w + ix) * c;
                    in_b.get(start..start + c)
                }
                _ => None,
            };
            f(tap, run);
            tap += 1;
        }
    }
}

/// One way of laying out the im2col block of a tiled convolution and of multiplying a filter
/// with it.
pub(crate) trait ConvTile {
    /// Writes the patches of up to [`TILE`] output pixels `(oy, ox)` into `cols`
    /// ([`conv_scratch_words`] words), with the input offset added and zeros for padded taps,
    /// for the patch tail up to `kp` and for missing pixels.
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, kp: usize);
    /// `acc[q] + sum_j w[j] * (x_q[j] + input_offset)` (wrapping) for the [`TILE`] patches; `w`
    /// is one filter of `k` values. (Tiles whose im2col already added the offset ignore
    /// `input_offset`.)
    fn dot(cols: &[u32], w: &[i8], k: usize, kp: usize, input_offset: i32, acc: [i32; TILE]) -> [i32; TILE];

    /// [`Self::dot`] for consecutive filters: `acc[f]` starts at `bias[f]` in every lane and
    /// gets filter `f` (`filters[f * k..(f + 1) * k]`) times the patches; `acc` and `bias` have
    /// one entry per filter (at most [`FILTER_BLOCK`]). `filters` may extend past the block (to
    /// the end of the layer's filters).
    #[inline(always)]
    fn dot_block(
        cols: &[u32],
        filters: &[i8],
        k: usize,
        kp: usize,
        input_offset: i32,
        bias: &[i32],
        acc: &mut [[i32; TILE]],
    ) {
        for ((a, w), &b) in acc.iter_mut().zip(filters.chunks_exact(k.max(1))).zip(bias) {
            *a = Self::dot(cols, w, k, kp, input_offset, [b; TILE]);
        }
    }
}

/// The read-only operands of a conv fast path ([`conv_s8_tiled`], `arm_dsp::conv_s8`,
/// `wasm_simd::conv_s8_lanes`): the parameters, each output channel's multiplier and shift, the
/// input, the filter and the bias.
#[derive(Clone, Copy)]
pub(crate) struct ConvOperands<'a> {
    pub p: &'a ConvParams,
    pub multiplier: &'a [i32],
    pub shift: &'a [i32],
    pub input: &'a [i8],
    pub filter: &'a [i8],
    pub bias: Option<&'a [i32]>,
}

/// Filters per [`ConvTile::dot_block`] call.
pub(crate) const FILTER_BLOCK: usize = 16;

/// A tile of [`tile_rows`]: its pixels `(oy, ox)`, how many are real, and their output rows.
pub(crate) type TileRows<'o> = ([(usize, usize); TILE], usize, [&'o mut [i8]; TILE]);

/// One tile of the tiled convolutions: the output pixels of `out_block` (up to [`TILE`] pixels
/// of `out_c` bytes each, in row-major order from `*pos`, a (row, column) in an output `out_w`
/// wide), their count, and their output rows (empty past the count); `*pos` moves past them.
#[inline(always)]
pub(crate) fn tile_rows<'o>(
    out_block: &'o mut [i8],
    out_c: usize,
    out_w: usize,
    pos: &mut (usize, usize),
) -> TileRows<'o> {
    let mut pixels = [(0usize, 0usize); TILE];
    let n = out_block.len().checked_div(out_c).unwrap_or(0).min(TILE);
    for px in pixels.iter_mut().take(n) {
        *px = *pos;
        pos.1 += 1;
        if pos.1 == out_w {
            pos.1 = 0;
            pos.0 += 1;
        }
    }
    let mut rows = out_block.chunks_exact_mut(out_c.max(1));
    let mut out_rows: [&mut [i8]; TILE] = [&mut [], &mut [], &mut [], &mut []];
    for r in out_rows.iter_mut() {
        *r = rows.next().unwrap_or(&mut []);
    }
    (pixels, n, out_rows)
}

/// The tiled convolution every conv fast path shares: output pixels in blocks of [`TILE`], each
/// block's patches copied once into the im2col scratch (int16, offset added), then multiplied
/// by every filter (one filter x [`TILE`] pixels per call of [`ConvTile::dot`]), which makes
/// the convolution (1x1 ones included) a matrix product. Preconditions (else `false`, nothing
/// written): no groups (`filter_in_c == in_c`), `cols` at least [`conv_scratch_words`] long,
/// every channel's multiplier and shift within [`ChannelRequant`]'s contract.
/// Everything else was validated by `conv_s8`.
pub(crate) fn conv_s8_tiled<T: ConvTile>(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    let ConvOperands { p, multiplier, shift, input, filter, bias } = *a;
    let (ind, outd) = (p.input, p.output);
    let k = p.filter.h * p.filter.w * p.filter.c;
    let kp = padded_patch_len(k);
    let words = conv_scratch_words(k);
    if p.filter.c != ind.c || k == 0 || cols.len() < words || !ChannelRequant::all_valid(multiplier, shift) {
        return false;
    }
    let cols = &mut cols[..words];
    let out_c = outd.c;
    let in_image = ind.h * ind.w * ind.c;
    let out_image = outd.h * outd.w * out_c;
    if in_image == 0 || out_image == 0 || out_c == 0 {
        return true; // nothing to compute (validated shapes)
    }
    for (in_b, out_b) in input.chunks_exact(in_image.max(1)).zip(output.chunks_exact_mut(out_image.max(1))) {
        let mut pos = (0usize, 0usize);
        for out_block in out_b.chunks_mut(TILE.saturating_mul(out_c).max(1)) {
            let (pixels, n, mut out_rows) = tile_rows(out_block, out_c, outd.w, &mut pos);
            T::im2col(p, in_b, &pixels[..n], cols, k, kp);
            for (blk, (ms, ss)) in multiplier.chunks(FILTER_BLOCK).zip(shift.chunks(FILTER_BLOCK)).enumerate() {
                let c0 = blk * FILTER_BLOCK;
                let filters = filter.get(c0 * k..).unwrap_or(&[]);
                let nf = ms.len();
                let mut b = [0i32; FILTER_BLOCK];
                if let Some(src) = bias.and_then(|x| x.get(c0..c0 + nf)) {
                    b.iter_mut().zip(src).for_each(|(d, &v)| *d = v);
                }
                let mut acc = [[0i32; TILE]; FILTER_BLOCK];
                let acc = acc.get_mut(..nf).unwrap_or(&mut []);
                T::dot_block(cols, filters, k, kp, p.input_offset, b.get(..nf).unwrap_or(&[]), acc);
                for (j, (a4, (&m, &s))) in acc.iter().zip(ms.iter().zip(ss)).enumerate() {
                    let rq = ChannelRequant::new_valid(m, s);
                    for (row, &a) in out_rows.iter_mut().zip(a4.iter()) {
                        if let Some(o) = row.get_mut(c0 + j) {
                            *o = rq.output_s8(a, p.output_offset, p.activation);
                        }
                    }
                }
            }
        }
    }
    true
}

#[cfg(test)]
pub(crate) mod tests {
    extern crate std;
    use super::{ChannelRequant, RightShiftRequant};
    use crate::requant::multiply_by_quantized_multiplier;
    use proptest::prelude::*;

    fn extreme() -> impl Strategy<Value = i32> {
        prop_oneof![
            any::<i32>(),
            Just(i32::MIN),
            Just(i32::MAX),
            Just(0),
            Just(-1),
            Just(1),
            (-(1i32 << 16)..(1 << 16)),
            (i32::MIN..i32::MIN + 1000),
            (i32::MAX - 1000..=i32::MAX),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_support::cases(20_000)))]

        /// The prepared requantizer is the library function, for any accumulator, multiplier
        /// (including 0, negative and `i32::MIN`) and shift in [-31, 30], including left shifts
        /// where `acc * 2^shift` overflows i32 and both wrap (as TFLite Micro and CMSIS-NN do).
        #[test]
        fn channel_requant_is_multiply_by_quantized_multiplier(
            acc in extreme(), m in extreme(), shift in -31i32..=30,
        ) {
            prop_assert_eq!(super::requantize(acc, m, shift), multiply_by_quantized_multiplier(acc, m, shift));
            if m != i32::MIN {
                prop_assert_eq!(ChannelRequant::new(m, shift).map(|r| r.apply(acc)), Some(multiply_by_quantized_multiplier(acc, m, shift)));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_support::cases(20_000)))]

        /// The right-shift form is the library function for every accumulator, any multiplier
        /// `>= 0` and every shift in `[-31, -2]` (right shifts: no contract on the accumulator),
        /// and for a zero multiplier with any shift.
        #[test]
        fn right_shift_requant_is_multiply_by_quantized_multiplier(
            acc in extreme(), m in extreme(), shift in -31i32..=-2, any_shift in -31i32..=30,
        ) {
            let m = if m == i32::MIN { i32::MAX } else { m.abs() };
            let r = RightShiftRequant::new(m, shift).map(|r| r.apply(acc));
            prop_assert_eq!(r, Some(multiply_by_quantized_multiplier(acc, m, shift)));
            let r0 = RightShiftRequant::new(0, any_shift).map(|r| r.apply(acc));
            prop_assert_eq!(r0, Some(multiply_by_quantized_multiplier(acc, 0, any_shift)));
        }
    }

    /// The int8 ADD fast path is the reference kernel on random scales, offsets, clamps and data.
    #[test]
    fn add_s8_elementwise_matches_reference() {
        use crate::kernels::ActivationRange;
        use crate::kernels::Rounding;
        use crate::kernels::add::{AddParams, add_s8_reference};
        use crate::kernels::tensor::TensorQuant;
        let mut rng = Rng(0xadd5);
        let mut checked = 0;
        let cases = crate::test_support::cases(400);
        for case in 0..cases {
            let scale = |r: &mut Rng| 0.001 + (r.next() % 10_000) as f32 * 1e-4;
            let zp = |r: &mut Rng| (r.next() % 256) as i32 - 128;
            let (q1, q2, qo) = (
                TensorQuant::new(scale(&mut rng), zp(&mut rng)),
                TensorQuant::new(if case % 5 == 0 { 0.0 } else { scale(&mut rng) }, zp(&mut rng)),
                TensorQuant::new(scale(&mut rng) * 2.0, zp(&mut rng)),
            );
            let q2 = if case % 5 == 0 { TensorQuant::new(q1.scale, q2.zero_point) } else { q2 };
            let (a, b) = ((rng.next() % 256) as i32 - 128, (rng.next() % 256) as i32 - 128);
            let act =
                if case % 3 == 0 { ActivationRange::INT8 } else { ActivationRange { min: a.min(b), max: a.max(b) } };
            let n = 1 + (rng.next() % 300) as usize;
            let Ok(p) = AddParams::prepare_s8(q1, q2, qo, act, &[n], &[n], Rounding::Double) else { continue };
            let (x1, x2) = (rng.bytes(n), rng.bytes(n));
            let (mut want, mut got) = (std::vec![0i8; n], std::vec![0i8; n]);
            add_s8_reference(&p, &x1, &x2, &mut want).unwrap();
            assert!(super::add_s8_elementwise(&p, &x1, &x2, &mut got), "case {case}: fast path declined");
            assert_eq!(want, got, "case {case}");
            checked += n;
        }
        assert!(checked > 25 * cases as usize, "{checked} values checked");
    }

    #[test]
    fn right_shift_requant_domain_and_corners() {
        assert!(RightShiftRequant::new(1 << 30, -1).is_none());
        assert!(RightShiftRequant::new(1 << 30, 0).is_none());
        assert!(RightShiftRequant::new(-5, -4).is_none());
        for &acc in &[i32::MIN, i32::MIN + 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, i32::MAX - 1, i32::MAX] {
            for &m in &[0, 1, 1 << 30, (1 << 30) + 1, i32::MAX - 1, i32::MAX] {
                for shift in -31..=-2 {
                    let r = RightShiftRequant::new(m, shift).map(|r| r.apply(acc));
                    assert_eq!(
                        r,
                        Some(multiply_by_quantized_multiplier(acc, m, shift)),
                        "acc {acc} m {m} shift {shift}"
                    );
                }
            }
        }
    }

    #[test]
    fn channel_requant_corners() {
        for &acc in &[i32::MIN, i32::MIN + 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, i32::MAX - 1, i32::MAX] {
            for &m in &[i32::MIN, i32::MIN + 1, -1, 0, 1, 1 << 30, (1 << 30) + 1, i32::MAX - 1, i32::MAX] {
                for shift in -31..=30 {
                    assert_eq!(
                        super::requantize(acc, m, shift),
                        multiply_by_quantized_multiplier(acc, m, shift),
                        "acc {acc} m {m} shift {shift}"
                    );
                }
            }
        }
    }

    /// SplitMix64, for the property tests' data.
    pub(crate) struct Rng(pub u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        pub(crate) fn bytes(&mut self, n: usize) -> std::vec::Vec<i8> {
            (0..n).map(|_| self.next() as i8).collect()
        }
    }
}
