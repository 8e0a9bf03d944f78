//! x86-64 with `std`: the portable tiled convolution compiled a second time with AVX2 enabled
//! and chosen at run time when the CPU has it (the default x86-64 target assumes SSE2 only, so
//! the portable build's `pmaddwd` works on 8 lanes; with AVX2 on 16). Same Rust code, same
//! wrapping int32 sums and requantization: the same results bit for bit, which the kernel tests
//! check on the machine that runs them.

#![allow(unsafe_code)]

use super::portable::NaturalTile;
use super::scratch::{TILE, conv_scratch_words};
use super::tiled_conv::{ConvOperands, conv_s8_tiled_applies, conv_s8_tiled_pixels, image_sizes};
use crate::kernels::PerChannelQuant;
use crate::kernels::params::DepthwiseConvParams;

/// [`conv_s8_tiled_pixels`] with AVX2 code generation.
#[target_feature(enable = "avx2")]
fn conv_s8_pixels_avx2(ops: &ConvOperands<'_>, in_b: &[i8], out_part: &mut [i8], first: usize, cols: &mut [u32]) {
    conv_s8_tiled_pixels::<NaturalTile>(ops, in_b, out_part, first, cols);
}

/// The pixels `out_part` (from pixel `first`) of one image, with AVX2 code when `avx2`.
fn conv_s8_pixels(
    avx2: bool,
    ops: &ConvOperands<'_>,
    in_b: &[i8],
    out_part: &mut [i8],
    first: usize,
    cols: &mut [u32],
) {
    if avx2 {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2: `avx2` is `is_x86_feature_detected!("avx2")`
        // (see `conv_s8`).
        unsafe { conv_s8_pixels_avx2(ops, in_b, out_part, first, cols) };
    } else {
        conv_s8_tiled_pixels::<NaturalTile>(ops, in_b, out_part, first, cols);
    }
}

/// The portable tiled convolution, with AVX2 code when the CPU has it, each image split into
/// bands of output pixels computed side by side when it is large enough to pay for threads
/// ([`crate::parallel`]; each band with its own im2col scratch, every pixel computed as alone).
pub(crate) fn conv_s8(ops: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    if !conv_s8_tiled_applies(ops, cols.len()) {
        return false;
    }
    let avx2 = std::is_x86_feature_detected!("avx2");
    let p = ops.p;
    let (in_image, out_image) = image_sizes(p);
    if in_image == 0 || out_image == 0 {
        return true; // nothing to compute (validated shapes)
    }
    let k = p.filter.h * p.filter.w * p.filter.c;
    let pixels = p.output.h * p.output.w;
    let threads = crate::parallel::threads_for(out_image.saturating_mul(k), pixels / (4 * TILE));
    for (in_b, out_b) in ops.input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        if threads <= 1 {
            conv_s8_pixels(avx2, ops, in_b, out_b, 0, cols);
            continue;
        }
        let band = pixels.div_ceil(threads).next_multiple_of(TILE);
        let parts: std::vec::Vec<(usize, &mut [i8])> =
            out_b.chunks_mut(band * p.output.c).enumerate().map(|(i, part)| (i * band, part)).collect();
        crate::parallel::run_parts(parts, |(first, part)| {
            let mut own = std::vec![0u32; conv_scratch_words(k)];
            conv_s8_pixels(avx2, ops, in_b, part, first, &mut own);
        });
    }
    true
}

/// [`super::portable::depthwise_conv_s8_rows`] with AVX2 code generation.
#[target_feature(enable = "avx2")]
fn depthwise_rows_avx2(ops: &DepthwiseOperands<'_>, in_b: &[i8], out_rows: &mut [i8], first_row: usize) {
    let DepthwiseOperands { p, quant, filter, bias } = *ops;
    super::portable::depthwise_conv_s8_rows(p, quant, in_b, filter, bias, out_rows, first_row);
}

/// The read-only operands of a depthwise convolution.
#[derive(Clone, Copy)]
struct DepthwiseOperands<'a> {
    p: &'a DepthwiseConvParams,
    quant: &'a PerChannelQuant<'a>,
    filter: &'a [i8],
    bias: Option<&'a [i32]>,
}

/// The rows `out_rows` (from row `first_row`) of one image, with AVX2 code when `avx2`.
fn depthwise_rows(avx2: bool, ops: &DepthwiseOperands<'_>, in_b: &[i8], out_rows: &mut [i8], first_row: usize) {
    if avx2 {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2: `avx2` is `is_x86_feature_detected!("avx2")`
        // (see `depthwise_conv_s8`).
        unsafe { depthwise_rows_avx2(ops, in_b, out_rows, first_row) };
    } else {
        let DepthwiseOperands { p, quant, filter, bias } = *ops;
        super::portable::depthwise_conv_s8_rows(p, quant, in_b, filter, bias, out_rows, first_row);
    }
}

/// The portable depthwise convolution, with AVX2 code when the CPU has it (same sums, same
/// requantization: the same bytes), each image in bands of output rows on threads when large
/// enough ([`crate::parallel`]).
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
    let avx2 = std::is_x86_feature_detected!("avx2");
    let (ind, outd) = (p.input, p.output);
    let in_image = ind.h * ind.w * ind.c;
    let row = outd.w * ind.c;
    let out_image = outd.h * row;
    if in_image == 0 || out_image == 0 {
        return true;
    }
    let ops = DepthwiseOperands { p, quant, filter, bias };
    let threads = crate::parallel::threads_for(out_image.saturating_mul(p.filter.h * p.filter.w), outd.h);
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        if threads <= 1 {
            depthwise_rows(avx2, &ops, in_b, out_b, 0);
            continue;
        }
        let band = outd.h.div_ceil(threads);
        let parts: std::vec::Vec<(usize, &mut [i8])> =
            out_b.chunks_mut(band * row).enumerate().map(|(i, part)| (i * band, part)).collect();
        crate::parallel::run_parts(parts, |(first, part)| depthwise_rows(avx2, &ops, in_b, part, first));
    }
    true
}

/// The float GEMM's blocked product with AVX code generation and `6 × 16` register tiles (twelve
/// 8-lane accumulators). The tile size changes which elements are computed together, not the
/// order of any element's sum, so the results equal the portable `4 × 8` build bit for bit.
#[cfg(feature = "alloc")]
#[target_feature(enable = "avx")]
fn sgemm_avx(problem: &super::gemm::Gemm<'_>, c: &mut [f32]) {
    problem.run::<6, 16>(c);
}

/// Runs the float GEMM with AVX when the CPU has it; `false` (nothing written) otherwise.
#[cfg(feature = "alloc")]
pub(crate) fn sgemm(problem: &super::gemm::Gemm<'_>, c: &mut [f32]) -> bool {
    if std::is_x86_feature_detected!("avx") {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx")]`
        // function is that the CPU supports AVX, checked on the line above.
        unsafe { sgemm_avx(problem, c) };
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::arch::test_rng::Rng;
    use crate::kernels::common::{Hw, Padding, compute_window};
    use crate::kernels::conv::conv_s8_reference;
    use crate::kernels::params::ConvParams;
    use crate::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};

    /// Images large enough to be split into bands on threads (2 images, 3x3 SAME, 37 x 29
    /// outputs: bands that end inside an output row), against the reference kernel bit for bit,
    /// with one thread and with up to four.
    #[test]
    fn banded_conv_matches_the_reference() {
        let input = Dims4::new(2, 37, 29, 24);
        let (f, s, d) = (Hw::new(3, 3), Hw::new(1, 1), Hw::new(1, 1));
        let w = compute_window(Padding::Same, Hw::new(37, 29), f, s, d).unwrap();
        let out_c = 40;
        let p = ConvParams {
            input,
            filter: Dims4::new(out_c, 3, 3, 24),
            output: Dims4::new(2, w.output.h, w.output.w, out_c),
            stride: s,
            dilation: d,
            padding: w.padding,
            input_offset: 7,
            output_offset: -3,
            activation: ActivationRange { min: -128, max: 127 },
            rounding: Rounding::Double,
        };
        let mut rng = Rng(42);
        let x = rng.bytes(input.checked_len().unwrap());
        let filt = rng.bytes(p.filter.checked_len().unwrap());
        let bias: std::vec::Vec<i32> = (0..out_c).map(|_| rng.next() as i32 >> 12).collect();
        let m: std::vec::Vec<i32> = (0..out_c).map(|i| (1 << 30) + i as i32 * 1_000_003).collect();
        let sh: std::vec::Vec<i32> = (0..out_c).map(|i| -8 - (i as i32 % 3)).collect();
        let q = PerChannelQuant { multiplier: &m, shift: &sh };
        let len = p.output.checked_len().unwrap();
        let mut want = std::vec![0i8; len];
        conv_s8_reference(&p, &q, &x, &filt, Some(&bias), &mut want).unwrap();
        let ops = ConvOperands { p: &p, multiplier: &m, shift: &sh, input: &x, filter: &filt, bias: Some(&bias) };
        let mut cols = std::vec![0u32; conv_scratch_words(3 * 3 * 24)];
        assert!(
            crate::parallel::threads_for(len * 3 * 3 * 24, 37 * 29 / (4 * TILE)) > 1
                || crate::parallel::max_threads() == 1
        );
        let mut got = std::vec![0i8; len];
        assert!(conv_s8(&ops, &mut got, &mut cols));
        assert_eq!(want, got);
    }

    /// The AVX2 build of the depthwise convolution against the reference kernel bit for bit
    /// (70 channels: two full blocks of 32 and a tail; 3x3 stride 2 SAME; 5x5 stride 1; a large
    /// image in bands of rows).
    #[test]
    fn avx2_depthwise_matches_the_reference() {
        use crate::kernels::depthwise_conv::depthwise_conv_s8_reference;
        // The last case is large enough to run in bands of rows on threads.
        for (f, st, (ih, iw)) in [
            (Hw::new(3, 3), Hw::new(2, 2), (17, 13)),
            (Hw::new(5, 5), Hw::new(1, 1), (17, 13)),
            (Hw::new(5, 5), Hw::new(1, 1), (67, 45)),
        ] {
            let c = 70;
            let input = Dims4::new(1, ih, iw, c);
            let d = Hw::new(1, 1);
            let w = compute_window(Padding::Same, Hw::new(ih, iw), f, st, d).unwrap();
            let p = DepthwiseConvParams {
                input,
                filter: f,
                output: Dims4::new(1, w.output.h, w.output.w, c),
                depth_multiplier: 1,
                stride: st,
                dilation: d,
                padding: w.padding,
                input_offset: 5,
                output_offset: 9,
                activation: ActivationRange { min: -100, max: 120 },
                rounding: Rounding::Double,
            };
            let mut rng = Rng(7);
            let x = rng.bytes(input.checked_len().unwrap());
            let filt = rng.bytes(f.h * f.w * c);
            let bias: std::vec::Vec<i32> = (0..c).map(|_| rng.next() as i32 >> 14).collect();
            let m: std::vec::Vec<i32> = (0..c).map(|i| (1 << 30) + i as i32 * 999_983).collect();
            let sh: std::vec::Vec<i32> = (0..c).map(|i| -6 - (i as i32 % 4)).collect();
            let q = PerChannelQuant { multiplier: &m, shift: &sh };
            let len = p.output.checked_len().unwrap();
            let (mut want, mut got) = (std::vec![0i8; len], std::vec![0i8; len]);
            depthwise_conv_s8_reference(&p, &q, &x, &filt, Some(&bias), &mut want).unwrap();
            assert!(depthwise_conv_s8(&p, &q, &x, &filt, Some(&bias), &mut got));
            assert_eq!(want, got);
        }
    }
}
