//! wasm32 fast paths with the `simd128` feature (built when the crate is compiled with `-C
//! target-feature=+simd128`; the repository's `.cargo/config.toml` does that for
//! `wasm32-unknown-unknown`). Every browser with wasm SIMD and Node >= 16 run them.
//!
//! The multiply-accumulate is `i32x4.dot_i16x8_s` (two int16 products summed into each of 4 int32
//! lanes): int8 weights are sign-extended to int16 (`i16x8.extend_low_i8x16_s`), inputs are
//! int16 with the offset added (in the im2col block for conv, extended per chunk for fully
//! connected) or raw int8 widened with the offset folded into the starting sums (depthwise), so
//! every product is exact and the lane sums wrap exactly like the reference's `wrapping_add`
//! (`i32x4.add` wraps). With the `relaxed-simd` feature (and `+relaxed-simd`), the
//! conv kernel uses relaxed SIMD's int8 dot product instead (`RelaxedTile`), with its operands
//! kept in the range where the result is deterministic; off by default (Safari lacks relaxed
//! SIMD, Node 20 needs a flag).
//!
//! The `v128` loads and stores are unaligned (wasm allows any alignment) on slices whose length
//! is checked first; they are the only `unsafe` here.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

#[cfg(all(feature = "relaxed-simd", not(target_feature = "relaxed-simd")))]
compile_error!("the `relaxed-simd` feature needs `-C target-feature=+simd128,+relaxed-simd` on wasm32");

mod add;
mod conv;
#[cfg(mq_relaxed_simd)]
mod conv_relaxed;
mod depthwise;
mod entropy;
mod fully_connected;

pub(crate) use add::add_s8;
#[cfg(not(mq_relaxed_simd))]
pub(crate) use conv::{SimdTile, conv_s8_lanes};
#[cfg(mq_relaxed_simd)]
pub(crate) use conv_relaxed::RelaxedTile;
pub(crate) use depthwise::depthwise_conv_s8;
pub(crate) use entropy::{KlSimd, logf_lanes};
pub(crate) use fully_connected::fully_connected_s8;

use crate::kernels::arch::requant::ChannelRequant;

/// 16 bytes as a `v128` (`b.len() == 16`; zeros otherwise).
#[inline(always)]
fn load16(b: &[i8]) -> v128 {
    match b {
        // SAFETY: the 16 bytes of `b` are inside the slice; `v128_load` has no alignment
        // requirement.
        [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _] => unsafe { v128_load(b.as_ptr() as *const v128) },
        _ => i8x16_splat(0),
    }
}

/// Up to 8 bytes sign-extended to `i16x8`, zeros past the end of `b`.
#[inline(always)]
fn load8_i16(b: &[i8]) -> v128 {
    match b {
        // SAFETY: the 8 bytes of `b` are inside the slice; no alignment requirement.
        [_, _, _, _, _, _, _, _, ..] => unsafe { i16x8_load_extend_i8x8(b.as_ptr()) },
        _ => {
            let mut t = [0i8; 8];
            t.iter_mut().zip(b).for_each(|(d, &v)| *d = v);
            // SAFETY: `t` is an 8-byte local array.
            unsafe { i16x8_load_extend_i8x8(t.as_ptr()) }
        }
    }
}

/// 8 int16 values (`a.len() >= 8`; zeros otherwise).
#[cfg_attr(mq_relaxed_simd, allow(dead_code))]
#[inline(always)]
fn load_i16x8(a: &[i16]) -> v128 {
    match a {
        // SAFETY: the first 8 values (16 bytes) of `a` are inside the slice; no alignment
        // requirement.
        [_, _, _, _, _, _, _, _, ..] => unsafe { v128_load(a.as_ptr() as *const v128) },
        _ => i16x8_splat(0),
    }
}

#[inline(always)]
fn hsum(v: v128) -> i32 {
    i32x4_extract_lane::<0>(v)
        .wrapping_add(i32x4_extract_lane::<1>(v))
        .wrapping_add(i32x4_extract_lane::<2>(v))
        .wrapping_add(i32x4_extract_lane::<3>(v))
}

/// `((a * m + 2^30) >> 31) as i32` per lane (gemmlowp's doubling high multiply without its
/// saturation, which only `a == m == i32::MIN` reaches): exact in 64 bits (`|a * m| <= 2^62`).
#[inline(always)]
fn high_mul_x4(a: v128, m: v128) -> v128 {
    let round = i64x2_splat(1 << 30);
    let lo = u64x2_shr(i64x2_add(i64x2_extmul_low_i32x4(a, m), round), 31);
    let hi = u64x2_shr(i64x2_add(i64x2_extmul_high_i32x4(a, m), round), 31);
    i32x4_shuffle::<0, 2, 4, 6>(lo, hi)
}

/// [`ChannelRequant::apply`] for 4 channels at once, one per lane, with each lane's constants
/// prepared: wasm SIMD shifts every lane by the same amount, so the per-channel shifts become
/// multiplies. The left shift is a wrapping multiply by `2^left`; the high multiply as
/// [`high_mul_x4`]; the rounding right shift as `(h >> right) + ((h & mask) > half + (h < 0))`
/// where `h >> right` (arithmetic) is computed unsigned: `u = h + 2^31` (the sign bit flipped)
/// is in `[0, 2^32)`, `floor(u / 2^right) = (u * 2^(31 - right)) >> 31` exactly in 64 bits
/// (`i64x2.extmul_*_i32x4_u`, `u * 2^(31 - right) < 2^63`), and `floor(u / 2^right) -
/// 2^(31 - right) = floor(h / 2^right)` because `2^31` is a multiple of `2^right` (`right` is in
/// `[0, 31]`; the subtraction wraps for `right = 0`, as `u - 2^31` must).
#[derive(Clone, Copy)]
struct LaneRequant {
    /// The channels' biases (0 without one), where their accumulators start.
    bias: v128,
    left_mul: v128,
    /// Whether some lane shifts left (else `left_mul` is all ones and skipped).
    left: bool,
    multiplier: v128,
    mask: v128,
    half: v128,
    /// `2^(31 - right)`, as `u32` lanes.
    right_mul: v128,
}

impl LaneRequant {
    /// The constants of channels `c0..c0 + 4` (validated pairs); lanes past the end of the
    /// slices get multiplier 0 and shift 0 (their results are not used).
    #[inline(always)]
    fn new(multiplier: &[i32], shift: &[i32], bias: Option<&[i32]>, c0: usize) -> Self {
        let b = |i: usize| bias.and_then(|b| b.get(c0 + i)).copied().unwrap_or(0);
        let rq: [ChannelRequant; 4] = core::array::from_fn(|i| match (multiplier.get(c0 + i), shift.get(c0 + i)) {
            (Some(&m), Some(&s)) => ChannelRequant::new_valid(m, s),
            _ => ChannelRequant::new_valid(0, 0),
        });
        let lanes = |f: &dyn Fn(&ChannelRequant) -> i32| i32x4(f(&rq[0]), f(&rq[1]), f(&rq[2]), f(&rq[3]));
        Self {
            bias: i32x4(b(0), b(1), b(2), b(3)),
            left_mul: lanes(&|r| (1u32 << (r.left & 31)) as i32),
            left: rq.iter().any(|r| r.left != 0),
            multiplier: lanes(&|r| r.multiplier),
            mask: lanes(&|r| r.mask),
            half: lanes(&|r| r.half),
            right_mul: lanes(&|r| (1u32 << (31 - (r.right & 31))) as i32),
        }
    }

    /// One requantization in all 4 lanes (no bias).
    #[inline(always)]
    fn from_channel(r: ChannelRequant) -> Self {
        Self {
            bias: i32x4_splat(0),
            left_mul: i32x4_splat((1u32 << (r.left & 31)) as i32),
            left: r.left != 0,
            multiplier: i32x4_splat(r.multiplier),
            mask: i32x4_splat(r.mask),
            half: i32x4_splat(r.half),
            right_mul: i32x4_splat((1u32 << (31 - (r.right & 31))) as i32),
        }
    }

    /// `ChannelRequant::apply` lane by lane.
    #[inline(always)]
    fn apply(&self, acc: v128) -> v128 {
        let a = if self.left { i32x4_mul(acc, self.left_mul) } else { acc };
        let h = high_mul_x4(a, self.multiplier);
        let threshold = i32x4_add(self.half, u32x4_shr(h, 31));
        let up = i32x4_gt(v128_and(h, self.mask), threshold);
        let u = v128_xor(h, i32x4_splat(i32::MIN));
        let lo = u64x2_shr(u64x2_extmul_low_u32x4(u, self.right_mul), 31);
        let hi = u64x2_shr(u64x2_extmul_high_u32x4(u, self.right_mul), 31);
        let floor = i32x4_sub(i32x4_shuffle::<0, 2, 4, 6>(lo, hi), self.right_mul);
        i32x4_sub(floor, up)
    }
}

/// The first `d.len()` (at most 16) bytes of `v` into `d`.
#[inline(always)]
fn store_partial(d: &mut [i8], v: v128) {
    let mut t = [0i8; 16];
    store16(&mut t, v);
    d.iter_mut().zip(t).for_each(|(d, s)| *d = s);
}

/// The low 8 bytes of `v` into `d` (`d.len() == 8`; nothing otherwise).
#[inline(always)]
fn store8(d: &mut [i8], v: v128) {
    if let [_, _, _, _, _, _, _, _] = d {
        // SAFETY: the 8 bytes of `d` are inside the slice, which is borrowed mutably;
        // `v128_store64_lane` has no alignment requirement.
        unsafe { v128_store64_lane::<0>(v, d.as_mut_ptr() as *mut u64) }
    }
}

/// 16 bytes into `d` (`d.len() == 16`; nothing otherwise).
#[inline(always)]
fn store16(d: &mut [i8], v: v128) {
    if let [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _] = d {
        // SAFETY: the 16 bytes of `d` are inside the slice, which is borrowed mutably;
        // `v128_store` has no alignment requirement.
        unsafe { v128_store(d.as_mut_ptr() as *mut v128, v) }
    }
}
