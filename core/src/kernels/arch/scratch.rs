//! The im2col scratch layout of the tiled convolutions and the fully connected fast paths: pure
//! functions of the shapes, the same on every target and with `force-reference` (so a model
//! planned on the host runs on any device), used by the kernels' `*_scratch_len` and by the
//! fast paths.

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
#[cfg_attr(not(any(mq_dsp, mq_wasm_simd, mq_portable)), allow(dead_code))]
pub(crate) fn scratch_words(scratch: &mut [u8]) -> &mut [u32] {
    let (_, words, _) = bytemuck::pod_align_to_mut::<u8, u32>(scratch);
    words
}

/// Shortest output line the Arm DSP 3x3 stride-1 depthwise kernel takes (`depthwise_3x3_s1`):
/// on shorter lines the widening and the per-channel work outweigh what the pairs save.
pub(crate) const DW_S1_MIN_LINE: usize = 8;

/// Longest output line (pixels) that kernel's planes take: a line of `L` outputs reads `L + 2`
/// int16, which must fit the largest line pitch (128 bytes).
pub(crate) const DW_S1_MAX_LINE: usize = 62;

/// Most words of one of that kernel's 4 int16 planes (a strip of 6 plane lines of 48 pixels, 12
/// of 24 or 24 of 12).
pub(crate) const DW_S1_PLANE_MAX_WORDS: usize = 192;

/// Words of the strip buffer of the Arm DSP 3x3 depthwise kernel (`depthwise_3x3`): a small
/// image's whole padded plane, or 3 filter rows of a strip.
pub(crate) const DW3X3_BUF_WORDS: usize = 256;

/// How the 3x3 stride-1 depthwise kernel sweeps an image of `in_hw` input and `out_hw` output
/// pixels (height, width): `Some((len, lines, transposed))`, output lines of `len` pixels along
/// the rows (or the columns when `transposed`: that makes fewer groups of 4, e.g. KWS's 25x5
/// images), `lines` of them; `None` when no line length is in `[DW_S1_MIN_LINE,
/// DW_S1_MAX_LINE]`.
pub(crate) fn dw_s1_sweep(out_h: usize, out_w: usize) -> Option<(usize, usize, bool)> {
    let fits = |len: usize| (DW_S1_MIN_LINE..=DW_S1_MAX_LINE).contains(&len);
    let groups = |len: usize, lines: usize| len.div_ceil(4).saturating_mul(lines);
    match (fits(out_w), fits(out_h)) {
        (true, true) if groups(out_h, out_w) < groups(out_w, out_h) => Some((out_h, out_w, true)),
        (true, _) => Some((out_w, out_h, false)),
        (false, true) => Some((out_h, out_w, true)),
        (false, false) => None,
    }
}

/// The plane line pitch (words) of the 3x3 stride-1 depthwise kernel for lines of `len` outputs
/// (`len + 2` padded int16 per line): 8, 16 or 32 words.
pub(crate) fn dw_s1_pitch_words(len: usize) -> usize {
    let words = (len + 2).div_ceil(2);
    if words <= 8 {
        8
    } else if words <= 16 {
        16
    } else {
        32
    }
}

/// Words of one int16 plane of the 3x3 stride-1 depthwise kernel for `lines` lines of `len`
/// outputs: the whole image's `lines + 2` plane lines when they fit, else
/// [`DW_S1_PLANE_MAX_WORDS`] (strips).
pub(crate) fn dw_s1_plane_words(len: usize, lines: usize) -> usize {
    lines.saturating_add(2).saturating_mul(dw_s1_pitch_words(len)).min(DW_S1_PLANE_MAX_WORDS)
}

/// Words of scratch the Arm DSP depthwise kernels use for a 3x3 depthwise convolution with
/// depth multiplier 1 of `out_hw` output pixels (height, width), stride `stride_hw`, dilation
/// `dilation_hw` and padding before `pad_hw` (0 for every other shape): the stride-1 kernel's 4
/// planes (`4 * dw_s1_plane_words`) or the strip kernel's buffer (a small image's whole padded
/// plane, else [`DW3X3_BUF_WORDS`]), whichever is larger (the first may decline at run time for
/// its requantization, and the second then runs). A pure function of the shapes, the same on
/// every target (a model planned on the host runs on any device).
pub(crate) fn dw3x3_scratch_words(
    c: usize,
    out_hw: (usize, usize),
    stride_hw: (usize, usize),
    dilation_hw: (usize, usize),
    pad_hw: (usize, usize),
) -> usize {
    let (oh, ow) = out_hw;
    if oh == 0 || ow == 0 || c < 4 {
        return 0;
    }
    let s1 = match dw_s1_sweep(oh, ow) {
        Some((len, lines, _)) if stride_hw == (1, 1) && dilation_hw == (1, 1) && pad_hw.0 <= 1 && pad_hw.1 <= 1 => {
            4 * dw_s1_plane_words(len, lines)
        }
        _ => 0,
    };
    let hp = (oh - 1).saturating_mul(stride_hw.0).saturating_add(2 * dilation_hw.0 + 1);
    let wp = (ow - 1).saturating_mul(stride_hw.1).saturating_add(2 * dilation_hw.1 + 1);
    let strips = hp.saturating_mul(wp).min(DW3X3_BUF_WORDS);
    s1.max(strips)
}

/// Words of the rows the Arm DSP convolution copies the filter rows' spans of input pixels into
/// for a tile whose windows reach past the image's left or right edge (at most).
pub(crate) const EDGE_ROW_WORDS: usize = 256;

/// Largest patch (`kh * kw * in_c`, rounded up to words) the Arm DSP convolution gathers raw for
/// channel counts that are not a multiple of 4 (first layers: 1 or 3 channels).
pub(crate) const RAW_PATCH_WORDS: usize = 16;

/// Largest `4 * ceil(k / 4)` for which the Arm DSP convolution copies the last filter of a layer
/// with `k % 4 != 0` (its last word would reach past the filters).
pub(crate) const LAST_FILTER_MAX: usize = 128;

/// Words of the Arm DSP convolution's buffers besides the im2col block, each 0 when the layer
/// does not use it: the edge rows (a filter row's span of `3 * stride_w + kw` pixels of `in_c /
/// 4` words, as many rows at once as [`EDGE_ROW_WORDS`] holds, at most `kh`; for `in_c % 4 ==
/// 0`, dilation 1 across and padding left or right), the 4 raw patches (`4 * ceil(k / 4)` words,
/// for `in_c % 4 != 0`, dilation 1 across) and the copy of the last filter (`ceil(k / 4)` words
/// for `k % 4 != 0`). A pure function of the shapes.
pub(crate) fn conv_extra_words(
    in_c: usize,
    filter_hw: (usize, usize),
    stride_w: usize,
    dilation_w: usize,
    pad_lr: (usize, usize),
) -> (usize, usize, usize) {
    let (kh, kw) = filter_hw;
    let k = kh.saturating_mul(kw).saturating_mul(in_c);
    let groups = k.div_ceil(4);
    let mut edge = 0;
    if in_c > 0 && in_c % 4 == 0 && dilation_w == 1 && (pad_lr.0 > 0 || pad_lr.1 > 0) {
        let span = stride_w.saturating_mul(3).saturating_add(kw).saturating_mul(in_c / 4);
        if span > 0 && span <= EDGE_ROW_WORDS {
            edge = (EDGE_ROW_WORDS / span).clamp(1, kh.max(1)) * span;
        }
    }
    let raw = if in_c % 4 != 0 && dilation_w == 1 && groups <= RAW_PATCH_WORDS { 4 * groups } else { 0 };
    let last = if k % 4 != 0 && 4 * groups <= LAST_FILTER_MAX { groups } else { 0 };
    (edge, raw, last)
}
