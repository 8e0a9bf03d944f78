//! x86-64 with `std`: the portable tiled convolution compiled a second time with AVX2 enabled
//! and chosen at run time when the CPU has it (the default x86-64 target assumes SSE2 only, so
//! the portable build's `pmaddwd` works on 8 lanes; with AVX2 on 16). Same Rust code, same
//! wrapping int32 sums and requantization: the same results bit for bit, which the kernel tests
//! check on the machine that runs them.

#![allow(unsafe_code)]

use core::arch::x86_64::{
    __m256i, _mm256_add_epi32, _mm256_add_epi64, _mm256_and_si256, _mm256_blend_epi32, _mm256_blendv_epi8,
    _mm256_cmpgt_epi32, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_mul_epi32, _mm256_set1_epi32, _mm256_set1_epi64x,
    _mm256_setzero_si256, _mm256_slli_epi64, _mm256_sllv_epi32, _mm256_srav_epi32, _mm256_srli_epi32,
    _mm256_srli_epi64, _mm256_storeu_si256, _mm256_sub_epi32,
};

use super::portable::{NaturalTile, im2col_natural};
use super::requant::ChannelRequant;
use super::scratch::{TILE, conv_scratch_words, padded_patch_len};
use super::tiled_conv::{ConvOperands, conv_s8_tiled_applies, conv_s8_tiled_pixels, image_sizes, tile_rows};
use crate::kernels::ActivationRange;
use crate::kernels::PerChannelQuant;
use crate::kernels::params::{DepthwiseConvParams, FullyConnectedParams};

#[cfg(feature = "alloc")]
pub(crate) mod float_gemm;
mod paired_filters;
#[cfg(feature = "alloc")]
pub(crate) mod stats;
use paired_filters::{PairedFilters, paired_filters};

/// Output channels per AVX2 register: eight int32 sums.
const LANES: usize = 8;
/// Channel groups of [`LANES`] per pass of [`conv_s8_pixels_avx2`] (its register tile: [`TILE`]
/// pixels x 2 groups, eight accumulators).
const GROUPS_PER_PASS: usize = 2;

/// Each output channel's bias and [`ChannelRequant`] fields, [`LANES`] channels per group (as
/// [`PairedFilters`]), for the requantization of eight accumulators at once
/// ([`requant_lanes`]); channels past the last are zeros (their results are not written).
struct RequantLanes {
    bias: std::vec::Vec<[i32; LANES]>,
    multiplier: std::vec::Vec<[i32; LANES]>,
    left: std::vec::Vec<[i32; LANES]>,
    right: std::vec::Vec<[i32; LANES]>,
    mask: std::vec::Vec<[i32; LANES]>,
    half: std::vec::Vec<[i32; LANES]>,
}

impl RequantLanes {
    /// `channels` channels' biases and requantizations (`multiplier` and `shift` one per channel,
    /// or one for all), in `groups` groups of [`LANES`].
    fn new(multiplier: &[i32], shift: &[i32], bias: Option<&[i32]>, channels: usize, groups: usize) -> Self {
        let mut r = Self {
            bias: std::vec![[0; LANES]; groups],
            multiplier: std::vec![[0; LANES]; groups],
            left: std::vec![[0; LANES]; groups],
            right: std::vec![[0; LANES]; groups],
            mask: std::vec![[0; LANES]; groups],
            half: std::vec![[0; LANES]; groups],
        };
        let per_tensor = multiplier.len() == 1;
        for c in 0..channels {
            let i = if per_tensor { 0 } else { c };
            let (Some(&m), Some(&sh)) = (multiplier.get(i), shift.get(i)) else { break };
            let (g, l) = (c / LANES, c % LANES);
            let rq = ChannelRequant::new_valid(m, sh);
            let b = bias.and_then(|b| b.get(c)).copied().unwrap_or(0);
            let fields = [
                (&mut r.bias, b),
                (&mut r.multiplier, rq.multiplier),
                (&mut r.left, rq.left as i32),
                (&mut r.right, rq.right as i32),
                (&mut r.mask, rq.mask),
                (&mut r.half, rq.half),
            ];
            for (dst, v) in fields {
                if let Some(lane) = dst.get_mut(g).and_then(|x| x.get_mut(l)) {
                    *lane = v;
                }
            }
        }
        r
    }
}

/// Loads 8 int32 (one register).
#[inline]
#[target_feature(enable = "avx2")]
fn load8(v: &[i32; LANES]) -> __m256i {
    // SAFETY: `v` is 32 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// Group `g`'s eight accumulators plus their biases, requantized as
/// [`ChannelRequant::output_s8`] computes each (the same integer steps lane by lane: the 64-bit
/// products on even and odd lanes, `>> 31` keeping the low 32 bits as the scalar cast does), then
/// offset and clamped as [`ActivationRange::apply`].
#[inline]
#[target_feature(enable = "avx2")]
fn requant_lanes(r: &RequantLanes, g: usize, acc: __m256i, output_offset: i32, act: ActivationRange) -> [i32; LANES] {
    let zero = [0; LANES];
    let field = |v: &std::vec::Vec<[i32; LANES]>| load8(v.get(g).unwrap_or(&zero));
    let a = _mm256_sllv_epi32(_mm256_add_epi32(acc, field(&r.bias)), field(&r.left));
    let m = field(&r.multiplier);
    let nudge = _mm256_set1_epi64x(1 << 30);
    // Even lanes: a·m + 2^30 as 64 bits, >> 31 (its low 32 bits, the scalar `as i32`).
    let even = _mm256_srli_epi64::<31>(_mm256_add_epi64(_mm256_mul_epi32(a, m), nudge));
    // Odd lanes: the same on the high halves, moved back up.
    let (ao, mo) = (_mm256_srli_epi64::<32>(a), _mm256_srli_epi64::<32>(m));
    let odd = _mm256_slli_epi64::<32>(_mm256_srli_epi64::<31>(_mm256_add_epi64(_mm256_mul_epi32(ao, mo), nudge)));
    let h = _mm256_blend_epi32::<0b1010_1010>(even, odd);
    let threshold = _mm256_add_epi32(field(&r.half), _mm256_srli_epi32::<31>(h));
    let above = _mm256_cmpgt_epi32(_mm256_and_si256(h, field(&r.mask)), threshold);
    // `above` is -1 where the scalar form adds 1.
    let v = _mm256_add_epi32(
        _mm256_sub_epi32(_mm256_srav_epi32(h, field(&r.right)), above),
        _mm256_set1_epi32(output_offset),
    );
    let (lo, hi) = (_mm256_set1_epi32(act.min), _mm256_set1_epi32(act.max));
    let clamped_hi = _mm256_blendv_epi8(v, hi, _mm256_cmpgt_epi32(v, hi));
    let out = _mm256_blendv_epi8(clamped_hi, lo, _mm256_cmpgt_epi32(lo, v));
    let mut lanes = [0i32; LANES];
    // SAFETY: `lanes` is 32 writable bytes; `storeu` has no alignment requirement.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), out) };
    lanes
}

/// Loads 16 int16 (one register).
#[inline]
#[target_feature(enable = "avx2")]
fn load16(v: &[i16; 16]) -> __m256i {
    // SAFETY: `v` is 32 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
}

/// One tile: the [`TILE`] int16 rows of `cols` (each `filters.pairs` words: value pairs, the
/// input offset added, zeros past the depth) times every filter, [`GROUPS_PER_PASS`] x
/// [`LANES`] filters per pass with `vpmaddwd` (each row pair broadcast, each channel in its own
/// int32 lane); the sums wrap as the reference's (integer sums are exact in any order), then
/// each channel's bias and requantization ([`requant_lanes`]) into the first `n` of `out_rows`.
#[target_feature(enable = "avx2")]
fn paired_tile(
    filters: &PairedFilters,
    requant: &RequantLanes,
    cols: &[u32],
    out_rows: &mut [&mut [i8]; TILE],
    n: usize,
    output_offset: i32,
    act: ActivationRange,
) {
    let pairs = filters.pairs;
    let pass_len = GROUPS_PER_PASS * pairs * 2 * LANES;
    let Some(cols) = cols.get(..TILE * pairs) else { return };
    let (c01, c23) = cols.split_at(2 * pairs);
    let ((c0, c1), (c2, c3)) = (c01.split_at(pairs), c23.split_at(pairs));
    for (pass, w) in filters.data.chunks_exact(pass_len.max(1)).enumerate() {
        let (w0, w1) = w.split_at(pass_len / 2);
        let mut acc = [[_mm256_setzero_si256(); GROUPS_PER_PASS]; TILE];
        let (w0, w1) = (w0.chunks_exact(2 * LANES), w1.chunks_exact(2 * LANES));
        for ((((a, b), x0), x1), (x2, x3)) in w0.zip(w1).zip(c0).zip(c1).zip(c2.iter().zip(c3)) {
            let (Ok(a), Ok(b)) = (<&[i16; 16]>::try_from(a), <&[i16; 16]>::try_from(b)) else { continue };
            let (a, b) = (load16(a), load16(b));
            for (acc, &x) in acc.iter_mut().zip([x0, x1, x2, x3]) {
                let x = _mm256_set1_epi32(x as i32);
                acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(x, a));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(x, b));
            }
        }
        let c0 = pass * GROUPS_PER_PASS * LANES;
        for (row, acc) in out_rows.iter_mut().zip(&acc).take(n) {
            for (half, &acc) in acc.iter().enumerate() {
                let lanes = requant_lanes(requant, pass * GROUPS_PER_PASS + half, acc, output_offset, act);
                for (o, &v) in row.iter_mut().skip(c0 + half * LANES).zip(&lanes) {
                    *o = v as i8;
                }
            }
        }
    }
}

/// The output pixels `out_part` (from pixel `first`) of one image: [`TILE`] pixels at a time,
/// their patches written by the portable im2col (int16, input offset added, zeros for padding
/// and past `k`), then [`paired_tile`]: the same bytes as [`conv_s8_tiled_pixels`].
#[target_feature(enable = "avx2")]
fn conv_s8_pixels_avx2(
    ops: &ConvOperands<'_>,
    filters: &PairedFilters,
    requant: &RequantLanes,
    in_b: &[i8],
    out_part: &mut [i8],
    first: usize,
    cols: &mut [u32],
) {
    let p = ops.p;
    let outd = p.output;
    let out_c = outd.c;
    let k = p.filter.h * p.filter.w * p.filter.c;
    let kp = padded_patch_len(k);
    let Some(cols) = cols.get_mut(..TILE * filters.pairs) else { return };
    if out_c == 0 || outd.w == 0 || filters.pairs == 0 {
        return;
    }
    let mut pos = (first / outd.w, first % outd.w);
    for out_block in out_part.chunks_mut(TILE * out_c) {
        let (pixels, n, mut out_rows) = tile_rows(out_block, out_c, outd.w, &mut pos);
        im2col_natural(p, in_b, &pixels[..n], cols, k, kp);
        paired_tile(filters, requant, cols, &mut out_rows, n, p.output_offset, p.activation);
    }
}

/// The int8 fully connected layer (`TensorFixed` / `ChannelFixed` requantization: `multiplier`
/// and `shift` one per output or one for all) through [`paired_tile`], [`TILE`] input rows at a
/// time, in bands of rows on threads when large enough: the reference's bytes (its wrapping
/// sums, bias and `multiply_by_quantized_multiplier`, property-tested below). `false` (nothing
/// written) without AVX2, for multipliers outside [`ChannelRequant`]'s contract or slices that do
/// not fit `p` (validated by the caller).
pub(crate) fn fully_connected_s8(
    p: &FullyConnectedParams,
    multiplier: &[i32],
    shift: &[i32],
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let (depth, outs) = (p.input_depth, p.output_depth);
    if !std::is_x86_feature_detected!("avx2")
        || !ChannelRequant::all_valid(multiplier, shift)
        || !(multiplier.len() == 1 || multiplier.len() == outs)
        || multiplier.len() != shift.len()
        || depth == 0
        || outs == 0
        || input.len() != p.batches * depth
        || output.len() != p.batches * outs
        || filter.len() != outs * depth
    {
        return false;
    }
    let filters = paired_filters(filter, depth, outs);
    let requant = RequantLanes::new(multiplier, shift, bias, outs, filters.groups);
    let rows = p.batches;
    let run = |first: usize, out: &mut [i8]| {
        let ins = input.get(first * depth..).unwrap_or(&[]);
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2, checked above.
        unsafe { fc_rows_avx2(p, &filters, &requant, ins, out) };
    };
    let threads = crate::parallel::threads_for(rows.saturating_mul(depth).saturating_mul(outs), rows / (4 * TILE));
    if threads <= 1 {
        run(0, output);
    } else {
        let band = rows.div_ceil(threads).next_multiple_of(TILE);
        let parts: std::vec::Vec<(usize, &mut [i8])> =
            output.chunks_mut(band * outs).enumerate().map(|(i, part)| (i * band, part)).collect();
        crate::parallel::run_parts(parts, |(first, part)| run(first, part));
    }
    true
}

/// The output rows `out` of a fully connected layer from the input rows `input` (at least as
/// many), [`TILE`] rows at a time: each row widened to int16 with the input offset, then
/// [`paired_tile`].
#[target_feature(enable = "avx2")]
fn fc_rows_avx2(
    p: &FullyConnectedParams,
    filters: &PairedFilters,
    requant: &RequantLanes,
    input: &[i8],
    out: &mut [i8],
) {
    let (depth, outs, pairs) = (p.input_depth, p.output_depth, filters.pairs);
    let mut cols = std::vec![0u32; TILE * pairs];
    let off = p.input_offset as i16; // in [-127, 128]: x + off fits int16
    for (in_block, out_block) in input.chunks(TILE * depth).zip(out.chunks_mut(TILE * outs)) {
        let n = (out_block.len() / outs).min(TILE);
        {
            let wide: &mut [i16] = bytemuck::cast_slice_mut(&mut cols);
            for (q, row) in wide.chunks_exact_mut(2 * pairs).enumerate() {
                let src = in_block.get(q * depth..(q + 1) * depth).filter(|_| q < n);
                let (body, tail) = row.split_at_mut(depth.min(row.len()));
                match src {
                    Some(src) => body.iter_mut().zip(src).for_each(|(d, &x)| *d = i16::from(x) + off),
                    None => body.fill(0),
                }
                tail.fill(0);
            }
        }
        let mut rows = out_block.chunks_exact_mut(outs);
        let mut out_rows: [&mut [i8]; TILE] = [&mut [], &mut [], &mut [], &mut []];
        for r in out_rows.iter_mut() {
            *r = rows.next().unwrap_or(&mut []);
        }
        paired_tile(filters, requant, &cols, &mut out_rows, n, p.output_offset, p.activation);
    }
}

/// One matrix product of int8 activations (a batch of `BATCH_MATMUL`): `out[i, j]` (row-major
/// `rows × cols`) = `act(multiply_by_quantized_multiplier(Σ_k lhs(i, k) · rhs(k, j)) + output_offset)`,
/// `lhs` and `rhs` giving each value with its offset added (int8 minus zero point: within
/// ±255), through [`paired_tile`]: the reference's bytes (its wrapping sum and requantization).
/// `false` (nothing written) without AVX2, for a multiplier outside [`ChannelRequant`]'s
/// contract or an `out` of another size.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_s8(
    [rows, depth, cols]: [usize; 3],
    lhs: impl Fn(usize, usize) -> i16,
    rhs: impl Fn(usize, usize) -> i16,
    multiplier: i32,
    shift: i32,
    output_offset: i32,
    act: ActivationRange,
    out: &mut [i8],
) -> bool {
    if !std::is_x86_feature_detected!("avx2")
        || !ChannelRequant::all_valid(&[multiplier], &[shift])
        || depth == 0
        || cols == 0
        || rows.checked_mul(cols) != Some(out.len())
    {
        return false;
    }
    // The rhs as `cols` filters of `depth` values.
    let filters = PairedFilters::from_fn(depth, cols, |j, k| rhs(k, j));
    let requant = RequantLanes::new(&[multiplier], &[shift], None, cols, filters.groups);
    let pairs = filters.pairs;
    let mut cols_buf = std::vec![0u32; TILE * pairs];
    for (t, out_block) in out.chunks_mut(TILE * cols).enumerate() {
        let n = (out_block.len() / cols).min(TILE);
        {
            let wide: &mut [i16] = bytemuck::cast_slice_mut(&mut cols_buf);
            for (q, row) in wide.chunks_exact_mut(2 * pairs).enumerate() {
                for (k, d) in row.iter_mut().enumerate() {
                    *d = if q < n && k < depth { lhs(t * TILE + q, k) } else { 0 };
                }
            }
        }
        let mut out_rows = out_block.chunks_exact_mut(cols);
        let mut rows4: [&mut [i8]; TILE] = [&mut [], &mut [], &mut [], &mut []];
        for r in rows4.iter_mut() {
            *r = out_rows.next().unwrap_or(&mut []);
        }
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2, checked above.
        unsafe { paired_tile(&filters, &requant, &cols_buf, &mut rows4, n, output_offset, act) };
    }
    true
}

/// The pixels `out_part` (from pixel `first`) of one image: the `vpmaddwd` kernel when the CPU has
/// AVX2 (`paired` is then `Some`), else the portable tiled convolution.
fn conv_s8_pixels(
    paired: Option<(&PairedFilters, &RequantLanes)>,
    ops: &ConvOperands<'_>,
    in_b: &[i8],
    out_part: &mut [i8],
    first: usize,
    cols: &mut [u32],
) {
    match paired {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2: `paired` is built only when
        // `is_x86_feature_detected!("avx2")` (see `conv_s8`).
        Some((filters, requant)) => unsafe { conv_s8_pixels_avx2(ops, filters, requant, in_b, out_part, first, cols) },
        None => conv_s8_tiled_pixels::<NaturalTile>(ops, in_b, out_part, first, cols),
    }
}

/// The convolution through the `vpmaddwd` kernel when the CPU has AVX2 (the filters paired once,
/// [`paired_filters`]), else the portable tiled convolution; each image split into bands of output pixels
/// computed side by side when it is large enough to pay for threads ([`crate::parallel`]; each
/// band with its own im2col scratch, every pixel computed as alone).
pub(crate) fn conv_s8(ops: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    if !conv_s8_tiled_applies(ops, cols.len()) {
        return false;
    }
    let p = ops.p;
    let (in_image, out_image) = image_sizes(p);
    if in_image == 0 || out_image == 0 {
        return true; // nothing to compute (validated shapes)
    }
    let k = p.filter.h * p.filter.w * p.filter.c;
    let prepared = std::is_x86_feature_detected!("avx2").then(|| {
        let filters = paired_filters(ops.filter, k, p.output.c);
        let requant = RequantLanes::new(ops.multiplier, ops.shift, ops.bias, p.output.c, filters.groups);
        (filters, requant)
    });
    let avx2 = prepared.as_ref().map(|(f, r)| (&**f, r));
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

/// Whether the CPU has AVX (the float GEMM's `6 × 16` tiles).
#[cfg(feature = "alloc")]
pub(crate) fn has_avx() -> bool {
    std::is_x86_feature_detected!("avx")
}

/// Runs the float GEMM with AVX when the CPU has it; `false` (nothing written) otherwise.
#[cfg(feature = "alloc")]
pub(crate) fn sgemm(problem: &super::gemm::Gemm<'_>, c: &mut [f32]) -> bool {
    if has_avx() {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx")]`
        // function is that the CPU supports AVX, checked on the line above.
        unsafe { sgemm_avx(problem, c) };
        return true;
    }
    false
}

/// The float executor's depthwise rows ([`crate::float`], multiplier 1) compiled with AVX: the
/// products and sums of 8 channels per instruction (the portable build: 4), each value's in
/// the same order with the same `f32` roundings (no FMA), so the same results bit for bit.
#[cfg(feature = "alloc")]
#[target_feature(enable = "avx")]
fn depthwise_rows_f32_avx(rows: &crate::float::conv::DepthwiseRows<'_>, first: usize, band: &mut [f32]) {
    rows.run(first, band);
}

/// [`depthwise_rows_f32_avx`] when the CPU has AVX; `false` (nothing written) otherwise.
#[cfg(feature = "alloc")]
pub(crate) fn depthwise_rows_f32(rows: &crate::float::conv::DepthwiseRows<'_>, first: usize, band: &mut [f32]) -> bool {
    if has_avx() {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx")]`
        // function is that the CPU supports AVX, checked on the line above.
        unsafe { depthwise_rows_f32_avx(rows, first, band) };
        return true;
    }
    false
}

/// The entropy observer's KL window search ([`crate::observer::entropy`]) compiled with AVX2:
/// its divisions and logarithms 8 lanes at a time (the portable build: 4), the same `f32`
/// operations in the same order (Rust fuses none into an FMA), so the same divergences bit for
/// bit.
#[target_feature(enable = "avx2")]
fn kl_search_avx2<const N: usize>(hist: &[u64; N], nq: usize) -> Option<(f32, usize, usize)> {
    use crate::observer::entropy::{PortableLanes, kl_search_windows};
    kl_search_windows::<N, PortableLanes>(hist, nq)
}

/// [`kl_search_avx2`] when the CPU has AVX2 (`Some` of its result), else `None`.
pub(crate) fn kl_search<const N: usize>(hist: &[u64; N], nq: usize) -> Option<Option<(f32, usize, usize)>> {
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2, checked on the line above.
        return Some(unsafe { kl_search_avx2(hist, nq) });
    }
    None
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_support::cases(300)))]

        /// The `vpmaddwd` convolution (and the portable one it replaces on CPUs without AVX2)
        /// against the reference bit for bit: output channels across the 8- and 16-channel
        /// groups, patches shorter and longer than one padded block, strides, dilations,
        /// padding, batches, with and without bias.
        #[test]
        fn paired_conv_matches_the_reference(
            win in super::super::portable::tests::window_case(), in_c in 1usize..21, out_c in 1usize..41,
            quant in super::super::portable::tests::quant_case(40),
            seed in proptest::prelude::any::<u64>(), with_bias in proptest::prelude::any::<bool>(),
        ) {
            let case = super::super::portable::tests::ConvCase::new(win, in_c, out_c, quant, seed, with_bias);
            let (done, got) = case.run(conv_s8);
            proptest::prop_assert!(done);
            proptest::prop_assert_eq!(&case.want, &got);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_support::cases(300)))]

        /// The `vpmaddwd` fully connected layer against the reference bit for bit: rows across
        /// tiles and bands, depths around the padded block, outputs across the channel groups,
        /// one multiplier per output and one for all, with and without bias.
        #[test]
        fn paired_fully_connected_matches_the_reference(
            batches in 1usize..14, depth in 1usize..40, outs in 1usize..41,
            (m, s, in_off, out_off, act) in super::super::portable::tests::quant_case(40),
            seed in proptest::prelude::any::<u64>(), with_bias in proptest::prelude::any::<bool>(),
            per_tensor in proptest::prelude::any::<bool>(),
        ) {
            use crate::kernels::fully_connected::{FullyConnectedPerChannelQuant, fully_connected_per_channel_s8_reference};
            let p = FullyConnectedParams {
                batches, input_depth: depth, output_depth: outs, input_offset: in_off, output_offset: out_off,
                activation: act, rounding: Rounding::Double,
            };
            let mut rng = Rng(seed);
            let x = rng.bytes(batches * depth);
            let filt = rng.bytes(outs * depth);
            let bias: std::vec::Vec<i32> = (0..outs).map(|_| rng.next() as i32 >> 12).collect();
            let bias = with_bias.then_some(&bias[..]);
            let (ms, ss): (std::vec::Vec<i32>, std::vec::Vec<i32>) = if per_tensor {
                (std::vec![m[0]; outs], std::vec![s[0]; outs])
            } else {
                (m[..outs].to_vec(), s[..outs].to_vec())
            };
            let q = FullyConnectedPerChannelQuant { fixed: PerChannelQuant { multiplier: &ms, shift: &ss }, exact: &[] };
            let (mut want, mut got) = (std::vec![0i8; batches * outs], std::vec![0i8; batches * outs]);
            fully_connected_per_channel_s8_reference(&p, &q, &x, &filt, bias, &mut want).unwrap();
            let (mg, sg) = if per_tensor { (&ms[..1], &ss[..1]) } else { (&ms[..], &ss[..]) };
            proptest::prop_assert!(fully_connected_s8(&p, mg, sg, &x, &filt, bias, &mut got));
            proptest::prop_assert_eq!(want, got);
        }
    }

    /// A fully connected layer large enough for bands of rows on threads, against the reference.
    #[test]
    fn banded_fully_connected_matches_the_reference() {
        use crate::kernels::fully_connected::{
            FullyConnectedPerChannelQuant, fully_connected_per_channel_s8_reference,
        };
        let (batches, depth, outs) = (197, 384, 200);
        let p = FullyConnectedParams {
            batches,
            input_depth: depth,
            output_depth: outs,
            input_offset: -3,
            output_offset: 5,
            activation: ActivationRange { min: -128, max: 127 },
            rounding: Rounding::Double,
        };
        let mut rng = Rng(5);
        let x = rng.bytes(batches * depth);
        let filt = rng.bytes(outs * depth);
        let bias: std::vec::Vec<i32> = (0..outs).map(|_| rng.next() as i32 >> 10).collect();
        let m: std::vec::Vec<i32> = (0..outs).map(|i| (1 << 30) + i as i32 * 1_000_003).collect();
        let sh: std::vec::Vec<i32> = (0..outs).map(|i| -9 - (i as i32 % 3)).collect();
        let q = FullyConnectedPerChannelQuant { fixed: PerChannelQuant { multiplier: &m, shift: &sh }, exact: &[] };
        let (mut want, mut got) = (std::vec![0i8; batches * outs], std::vec![0i8; batches * outs]);
        fully_connected_per_channel_s8_reference(&p, &q, &x, &filt, Some(&bias), &mut want).unwrap();
        assert!(fully_connected_s8(&p, &m, &sh, &x, &filt, Some(&bias), &mut got));
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
