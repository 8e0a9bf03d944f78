//! Portable fast paths in safe Rust: what x86-64, AArch64, Cortex-M0/M0+/M3 and wasm32 without
//! SIMD run (and, for depthwise, wasm32 with SIMD: its channel-inner loops autovectorize).
//!
//! They reorganize the reference's loops so the compiler can vectorize them and drop the
//! per-tap index arithmetic; the arithmetic (wrapping int32 sums of `w * (x + input_offset)`,
//! the same requantization) is the reference's, so the results are identical.

use super::requant::requantize;
use super::scratch::TILE;
use super::tiled_conv::{ConvTile, for_each_tap};
use crate::kernels::PerChannelQuant;
use crate::kernels::params::ConvParams;
use crate::kernels::params::DepthwiseConvParams;
use crate::kernels::window::input_coord;

/// Convolution tiles with patches stored in natural order as int16 (input offset added), one
/// patch after the other (`TILE` x `kp` values): each dot product is a plain zip of an int16
/// patch and an int8 filter, which LLVM turns into `pmaddwd` on x86-64 and a short
/// load-multiply-add loop on Cortex-M0. (On wasm with SIMD only its im2col is used.)
#[cfg_attr(mq_wasm_simd, allow(dead_code))]
pub(crate) struct NaturalTile;

/// The int16 view of an im2col block (every `u32` is two `i16`).
#[cfg_attr(mq_relaxed_simd, allow(dead_code))]
#[inline(always)]
pub(crate) fn cols_i16(cols: &[u32]) -> &[i16] {
    bytemuck::cast_slice(cols)
}

/// Writes the natural-order patches (int16, input offset added, zeros for padding and tails) of
/// `pixels` into `cols` (`TILE` x `kp` values); shared with the wasm SIMD tile.
#[cfg_attr(mq_relaxed_simd, allow(dead_code))]
#[inline(always)]
pub(crate) fn im2col_natural(
    p: &ConvParams,
    in_b: &[i8],
    pixels: &[(usize, usize)],
    cols: &mut [u32],
    k: usize,
    kp: usize,
) {
    let cols: &mut [i16] = bytemuck::cast_slice_mut(cols);
    let c = p.input.c;
    let off = p.input_offset as i16; // in [-127, 128]: x + off fits int16
    fill_patches(cols, kp, pixels, k, 0, |oy, ox, body| {
        let mut runs = body.chunks_exact_mut(c.max(1));
        for_each_tap(p, in_b, oy, ox, |_, run| {
            let Some(dst) = runs.next() else { return };
            match run {
                Some(src) => dst.iter_mut().zip(src).for_each(|(d, &x)| *d = x as i16 + off),
                None => dst.fill(0),
            }
        });
    });
}

/// The frame every im2col shares: `cols` holds [`TILE`] patches of `stride` values; for each
/// patch whose output pixel `(oy, ox)` is in `pixels`, `fill(oy, ox, body)` writes its first `k`
/// values and the rest of the patch is set to `pad`; the patches of missing pixels are all `pad`.
#[inline(always)]
pub(crate) fn fill_patches<T: Copy>(
    cols: &mut [T],
    stride: usize,
    pixels: &[(usize, usize)],
    k: usize,
    pad: T,
    mut fill: impl FnMut(usize, usize, &mut [T]),
) {
    for (q, patch) in cols.chunks_exact_mut(stride.max(1)).enumerate().take(TILE) {
        let Some(&(oy, ox)) = pixels.get(q) else {
            patch.fill(pad);
            continue;
        };
        let (body, tail) = patch.split_at_mut(k.min(patch.len()));
        tail.fill(pad);
        fill(oy, ox, body);
    }
}

/// The first `k` values of each of the four `kp`-long patches of `c`, and the first `k` values
/// of `w` (`None` if the tile is not four patches, or a slice is too short).
#[cfg_attr(mq_wasm_simd, allow(dead_code))] // wasm_simd has its own tiles
#[inline(always)]
fn four_patches<'a>(c: &'a [i16], kp: usize, k: usize, w: &'a [i8]) -> Option<([&'a [i16]; 4], &'a [i8])> {
    if TILE != 4 {
        return None;
    }
    let (p0, rest) = c.split_at_checked(kp)?;
    let (p1, rest) = rest.split_at_checked(kp)?;
    let (p2, p3) = rest.split_at_checked(kp)?;
    Some(([p0.get(..k)?, p1.get(..k)?, p2.get(..k)?, p3.get(..k)?], w.get(..k)?))
}

impl ConvTile for NaturalTile {
    #[inline(always)]
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, kp: usize) {
        im2col_natural(p, in_b, pixels, cols, k, kp);
    }

    #[inline(always)]
    fn dot(cols: &[u32], w: &[i8], k: usize, kp: usize, _input_offset: i32, acc: [i32; TILE]) -> [i32; TILE] {
        let c = cols_i16(cols);
        let kp = kp.max(1);
        if let Some(([p0, p1, p2, p3], w)) = four_patches(c, kp, k, w) {
            // The four patches side by side: each filter value is widened once for four
            // products (sums in the same order as below, so the same wrapping results).
            let [mut s0, mut s1, mut s2, mut s3] = [acc[0], acc[1], acc[2], acc[3]];
            for ((((&x0, &x1), &x2), &x3), &wj) in p0.iter().zip(p1).zip(p2).zip(p3).zip(w) {
                let wj = i32::from(wj);
                s0 = s0.wrapping_add(i32::from(x0) * wj);
                s1 = s1.wrapping_add(i32::from(x1) * wj);
                s2 = s2.wrapping_add(i32::from(x2) * wj);
                s3 = s3.wrapping_add(i32::from(x3) * wj);
            }
            let mut out = acc;
            out[..4].copy_from_slice(&[s0, s1, s2, s3]);
            return out;
        }
        let mut out = acc;
        for (o, patch) in out.iter_mut().zip(c.chunks_exact(kp)) {
            *o = patch.iter().zip(w).fold(*o, |a, (&x, &w)| a.wrapping_add(x as i32 * w as i32));
        }
        out
    }
}

/// Channels per accumulator block of [`depthwise_conv_s8`].
const DW_CHUNK: usize = 32;

/// Depthwise convolution with depth multiplier 1, channels innermost: for each output pixel and
/// block of up to 32 channels, the in-image taps add `w * (x + offset)` into 32 accumulators
/// (contiguous slices of input and filter: the loop vectorizes), then each channel is
/// requantized. No scratch (the accumulators live on the stack, 128 bytes). Preconditions (else
/// `false`): `depth_multiplier == 1`.
// wasm_simd has its own; x86-64 with std runs the rows itself (arch::x86, with threads).
#[cfg_attr(any(mq_wasm_simd, all(target_arch = "x86_64", feature = "std")), allow(dead_code))]
#[inline(always)]
pub(crate) fn depthwise_conv_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    if p.depth_multiplier != 1 {
        return false;
    }
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let in_image = ind.h * ind.w * c;
    let out_image = outd.h * outd.w * c;
    if in_image == 0 || out_image == 0 {
        return true;
    }
    for (in_b, out_b) in input.chunks_exact(in_image.max(1)).zip(output.chunks_exact_mut(out_image.max(1))) {
        depthwise_conv_s8_rows(p, quant, in_b, filter, bias, out_b, 0);
    }
    true
}

/// The output rows `out_rows` (whole rows of `out_w · c` values, from row `first_row`) of
/// [`depthwise_conv_s8`] for one input image `in_b`: its body, which x86-64 runs in bands on
/// threads (each value computed as alone). Preconditions: those of [`depthwise_conv_s8`].
#[cfg_attr(mq_wasm_simd, allow(dead_code))] // wasm_simd has its own
#[inline(always)]
pub(crate) fn depthwise_conv_s8_rows(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    in_b: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    out_rows: &mut [i8],
    first_row: usize,
) {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let off = p.input_offset;
    let mut out_pixels = out_rows.chunks_exact_mut(c.max(1));
    for oy in first_row..outd.h {
        for ox in 0..outd.w {
            let Some(out_px) = out_pixels.next() else { return };
            for (chunk, out_chunk) in out_px.chunks_mut(DW_CHUNK).enumerate() {
                let c0 = chunk * DW_CHUNK;
                let n = out_chunk.len();
                let mut acc = [0i32; DW_CHUNK];
                if let Some(b) = bias.and_then(|b| b.get(c0..c0 + n)) {
                    acc.iter_mut().zip(b).for_each(|(a, &b)| *a = b);
                }
                for ky in 0..p.filter.h {
                    let Some(iy) = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h) else {
                        continue;
                    };
                    for kx in 0..p.filter.w {
                        let Some(ix) = input_coord(ox, p.stride.w, kx, p.dilation.w, p.padding.left, ind.w) else {
                            continue;
                        };
                        let x0 = (iy * ind.w + ix) * c + c0;
                        let w0 = (ky * p.filter.w + kx) * c + c0;
                        let (Some(xs), Some(ws)) = (in_b.get(x0..x0 + n), filter.get(w0..w0 + n)) else {
                            continue;
                        };
                        for ((a, &x), &w) in acc.iter_mut().zip(xs).zip(ws) {
                            *a = a.wrapping_add(w as i32 * (x as i32 + off));
                        }
                    }
                }
                let (Some(ms), Some(ss)) = (quant.multiplier.get(c0..c0 + n), quant.shift.get(c0..c0 + n)) else {
                    continue;
                };
                for ((o, &a), (&m, &s)) in out_chunk.iter_mut().zip(&acc).zip(ms.iter().zip(ss)) {
                    *o = p.activation.apply(requantize(a, m, s).wrapping_add(p.output_offset)) as i8;
                }
            }
        }
    }
}

/// int8 PRELU through tables (with `std`: the converter's int8 runs on the host): the output of
/// an int8 input depends only on the input and its alpha, so for each distinct alpha value the
/// 256 outputs are computed once by the reference's per-element function and every element is
/// a lookup: the reference's results. `false` (nothing written) when the tensor is too small
/// for the tables to pay (fewer than two lookups per table entry).
#[cfg(all(mq_portable, feature = "std"))]
pub(crate) fn prelu_s8_lut(
    params: &crate::kernels::prelu::PreluParams,
    input: &[i8],
    alpha: &[i8],
    output: &mut [i8],
) -> bool {
    // Alpha value (as u8) -> its table (u16::MAX: none).
    let mut slot = [u16::MAX; 256];
    let mut distinct = 0usize;
    for &a in alpha {
        if let Some(s) = slot.get_mut(usize::from(a as u8)) {
            if *s == u16::MAX {
                *s = distinct as u16;
                distinct += 1;
            }
        }
    }
    if output.len() < 2 * 256 * distinct {
        return false;
    }
    let mut tables = std::vec![[0i8; 256]; distinct];
    for (a, &s) in slot.iter().enumerate() {
        let Some(table) = tables.get_mut(usize::from(s)) else { continue };
        for (x, t) in table.iter_mut().enumerate() {
            *t = params.prelu_one(i32::from(x as u8 as i8), i32::from(a as u8 as i8)).clamp(-128, 127) as i8;
        }
    }
    params.broadcast.for_each(input, alpha, output, |x, a| {
        let table = slot.get(usize::from(a as u8)).and_then(|&s| tables.get(usize::from(s)));
        table.and_then(|t| t.get(usize::from(x as u8))).copied().unwrap_or(0)
    });
    true
}

#[cfg(test)]
pub(super) mod tests {
    //! Property tests: the portable paths against the reference kernels, bit for bit, on random
    //! shapes, strides, dilations, paddings, offsets, multipliers and clamps.
    extern crate std;
    use super::*;
    use crate::kernels::arch::scratch::conv_scratch_words;
    use crate::kernels::arch::tiled_conv::{ConvOperands, conv_s8_tiled};
    use crate::kernels::common::{Hw, Padding, compute_window};
    use crate::kernels::conv::conv_s8_reference;
    use crate::kernels::depthwise_conv::depthwise_conv_s8_reference;
    use crate::kernels::{ActivationRange, Dims4, Rounding};
    use proptest::prelude::*;
    use std::vec;
    use std::vec::Vec;

    prop_compose! {
        pub(in crate::kernels::arch) fn window_case()(n in 1usize..3, h in 1usize..9, w in 1usize..9, kh in 1usize..5, kw in 1usize..5,
                         sh in 1usize..4, sw in 1usize..4, dh in 1usize..3, dw in 1usize..3, same in any::<bool>())
                        -> (Dims4, Hw, Hw, Hw, crate::kernels::common::Window) {
            let input = Dims4::new(n, h, w, 1);
            let (f, s, d) = (Hw::new(kh, kw), Hw::new(sh, sw), Hw::new(dh, dw));
            // VALID only where the dilated filter fits the image.
            let fits = (kh - 1) * dh < h && (kw - 1) * dw < w;
            let pad = if same || !fits { Padding::Same } else { Padding::Valid };
            (input, f, s, d, compute_window(pad, Hw::new(h, w), f, s, d).unwrap())
        }
    }

    prop_compose! {
        pub(in crate::kernels::arch) fn quant_case(channels: usize)(m in proptest::collection::vec(prop_oneof![Just(0), 1i32 << 30..i32::MAX], channels),
                                       s in proptest::collection::vec(-31i32..8, channels),
                                       in_zp in -128i32..=127, out_zp in -128i32..=127,
                                       lo in -128i32..=0, hi in 0i32..=127)
                                      -> (Vec<i32>, Vec<i32>, i32, i32, ActivationRange) {
            (m, s, -in_zp, out_zp, ActivationRange { min: lo, max: hi })
        }
    }

    /// A random int8 convolution for the conv fast paths' property tests: a [`window_case`]
    /// with `in_c` input and `out_c` output channels (the first `out_c` of a [`quant_case`]),
    /// its operands and what the reference kernel computes.
    pub(in crate::kernels::arch) struct ConvCase {
        pub p: ConvParams,
        x: Vec<i8>,
        filt: Vec<i8>,
        bias: Option<Vec<i32>>,
        m: Vec<i32>,
        s: Vec<i32>,
        pub want: Vec<i8>,
    }

    impl ConvCase {
        pub fn new(
            (input, f, stride, dilation, w): (Dims4, Hw, Hw, Hw, crate::kernels::common::Window),
            in_c: usize,
            out_c: usize,
            (m, s, in_off, out_off, act): (Vec<i32>, Vec<i32>, i32, i32, ActivationRange),
            seed: u64,
            with_bias: bool,
        ) -> Self {
            let input = Dims4 { c: in_c, ..input };
            let p = ConvParams {
                input,
                filter: Dims4::new(out_c, f.h, f.w, in_c),
                output: Dims4::new(input.n, w.output.h, w.output.w, out_c),
                stride,
                dilation,
                padding: w.padding,
                input_offset: in_off,
                output_offset: out_off,
                activation: act,
                rounding: Rounding::Double,
            };
            let mut rng = crate::kernels::arch::test_rng::Rng(seed);
            let x = rng.bytes(input.checked_len().unwrap());
            let filt = rng.bytes(p.filter.checked_len().unwrap());
            let bias: Vec<i32> = (0..out_c).map(|_| rng.next() as i32 >> 12).collect();
            let (m, s) = (m[..out_c].to_vec(), s[..out_c].to_vec());
            let mut case = Self { p, x, filt, bias: with_bias.then_some(bias), m, s, want: Vec::new() };
            let q = PerChannelQuant { multiplier: &case.m, shift: &case.s };
            let mut want = vec![0i8; p.output.checked_len().unwrap()];
            conv_s8_reference(&case.p, &q, &case.x, &case.filt, case.bias.as_deref(), &mut want).unwrap();
            case.want = want;
            case
        }

        /// Runs a fast path (`kernel(operands, output, im2col scratch)`): whether it ran, and
        /// its output.
        pub fn run(&self, kernel: impl FnOnce(&ConvOperands<'_>, &mut [i8], &mut [u32]) -> bool) -> (bool, Vec<i8>) {
            let ops = ConvOperands {
                p: &self.p,
                multiplier: &self.m,
                shift: &self.s,
                input: &self.x,
                filter: &self.filt,
                bias: self.bias.as_deref(),
            };
            let mut got = vec![0i8; self.want.len()];
            let f = self.p.filter;
            let mut cols = vec![0u32; conv_scratch_words(f.h * f.w * f.c)];
            let done = kernel(&ops, &mut got, &mut cols);
            (done, got)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_support::cases(300)))]

        #[test]
        fn tiled_conv_matches_reference(
            win in window_case(), in_c in 1usize..10, out_c in 1usize..7,
            quant in quant_case(6), seed in any::<u64>(), with_bias in any::<bool>(),
        ) {
            let case = ConvCase::new(win, in_c, out_c, quant, seed, with_bias);
            let (done, got) = case.run(conv_s8_tiled::<NaturalTile>);
            prop_assert!(done);
            prop_assert_eq!(&case.want, &got);
        }

        #[test]
        fn channel_inner_depthwise_matches_reference(
            win in window_case(), c in 1usize..70, (m, s, in_off, out_off, act) in quant_case(70),
            seed in any::<u64>(), with_bias in any::<bool>(),
        ) {
            let (input, f, stride, dilation, w) = win;
            let input = Dims4 { c, ..input };
            let p = DepthwiseConvParams {
                input, filter: f, output: Dims4::new(input.n, w.output.h, w.output.w, c), depth_multiplier: 1,
                stride, dilation, padding: w.padding, input_offset: in_off, output_offset: out_off,
                activation: act, rounding: Rounding::Double,
            };
            let mut rng = crate::kernels::arch::test_rng::Rng(seed);
            let x = rng.bytes(input.checked_len().unwrap());
            let filt = rng.bytes(f.h * f.w * c);
            let bias: Vec<i32> = (0..c).map(|_| rng.next() as i32 >> 12).collect();
            let bias = with_bias.then_some(&bias[..]);
            let q = PerChannelQuant { multiplier: &m[..c], shift: &s[..c] };
            let len = p.output.checked_len().unwrap();
            let (mut want, mut got) = (vec![0i8; len], vec![0i8; len]);
            depthwise_conv_s8_reference(&p, &q, &x, &filt, bias, &mut want).unwrap();
            prop_assert!(depthwise_conv_s8(&p, &q, &x, &filt, bias, &mut got));
            prop_assert_eq!(want, got);
        }
    }
}
