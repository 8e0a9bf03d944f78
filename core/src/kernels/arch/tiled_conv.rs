//! The tiled convolution every conv fast path shares ([`conv_s8_tiled`]), the im2col tile
//! interface each target implements ([`ConvTile`]) and the helpers the Arm DSP and portable
//! tiles use to walk a patch.

use super::requant::ChannelRequant;
use super::scratch::{TILE, conv_scratch_words, padded_patch_len};
use crate::kernels::params::ConvParams;
use crate::kernels::window::input_coord;

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
// x86-64 with std runs the parts itself (arch::x86::conv_s8, with threads).
#[cfg_attr(all(mq_portable, target_arch = "x86_64", feature = "std"), allow(dead_code))]
#[inline(always)]
pub(crate) fn conv_s8_tiled<T: ConvTile>(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    if !conv_s8_tiled_applies(a, cols.len()) {
        return false;
    }
    let (in_image, out_image) = image_sizes(a.p);
    if in_image == 0 || out_image == 0 {
        return true; // nothing to compute (validated shapes)
    }
    for (in_b, out_b) in a.input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        conv_s8_tiled_pixels::<T>(a, in_b, out_b, 0, cols);
    }
    true
}

/// Whether [`conv_s8_tiled`] computes this convolution with `cols_len` words of scratch (the
/// preconditions of its docs).
#[inline(always)]
pub(crate) fn conv_s8_tiled_applies(a: &ConvOperands<'_>, cols_len: usize) -> bool {
    let k = a.p.filter.h * a.p.filter.w * a.p.filter.c;
    a.p.filter.c == a.p.input.c
        && k != 0
        && cols_len >= conv_scratch_words(k)
        && ChannelRequant::all_valid(a.multiplier, a.shift)
}

/// Values of one input image and of one output image (batch item).
#[inline(always)]
pub(crate) fn image_sizes(p: &ConvParams) -> (usize, usize) {
    (p.input.h * p.input.w * p.input.c, p.output.h * p.output.w * p.output.c)
}

/// The output pixels of `out_part` (whole pixels of `out_c` values, in row-major order from
/// pixel `first_pixel` of the image) of the convolution of one input image `in_b`: the body of
/// [`conv_s8_tiled`], which runs it on whole images; a host with threads runs it on parts of an
/// image side by side (each pixel is computed alone, so the parts give the same bytes).
/// Preconditions: [`conv_s8_tiled_applies`].
#[inline(always)]
pub(crate) fn conv_s8_tiled_pixels<T: ConvTile>(
    a: &ConvOperands<'_>,
    in_b: &[i8],
    out_part: &mut [i8],
    first_pixel: usize,
    cols: &mut [u32],
) {
    let ConvOperands { p, multiplier, shift, input: _, filter, bias } = *a;
    let outd = p.output;
    let k = p.filter.h * p.filter.w * p.filter.c;
    let kp = padded_patch_len(k);
    let words = conv_scratch_words(k);
    let Some(cols) = cols.get_mut(..words) else { return };
    let out_c = outd.c;
    if out_c == 0 || outd.w == 0 {
        return;
    }
    let mut pos = (first_pixel / outd.w, first_pixel % outd.w);
    for out_block in out_part.chunks_mut(TILE.saturating_mul(out_c).max(1)) {
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
