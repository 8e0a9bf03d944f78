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
