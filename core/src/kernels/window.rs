//! Window geometry the convolution and pooling kernels (reference and fast paths) share: where
//! an output pixel's window lies in the input, and how pooling walks and averages its windows.

use crate::kernels::params::PoolParams;

/// Input coordinate of output coordinate `o` and filter tap `k`, or `None` in the padding.
#[inline(always)]
pub(crate) fn input_coord(
    o: usize,
    stride: usize,
    k: usize,
    dilation: usize,
    before: usize,
    size: usize,
) -> Option<usize> {
    let padded = o * stride + k * dilation;
    match padded.checked_sub(before) {
        Some(i) if i < size => Some(i),
        _ => None,
    }
}

/// The in-image range `[start, end)` of the window of output coordinate `o` on one axis.
#[inline(always)]
pub(crate) fn window_range(o: usize, stride: usize, filter: usize, before: usize, size: usize) -> (usize, usize) {
    let origin = o * stride; // in padded coordinates
    let start = origin.max(before) - before;
    let end = (origin + filter).min(before + size).saturating_sub(before);
    (start, end)
}

/// `(sum ± count / 2) / count` with C's truncating division (TFLite's `AveragePool` rounding);
/// 0 for an empty window (which validation excludes).
#[inline(always)]
pub(crate) fn average(sum: i32, count: i32) -> i32 {
    let half = count / 2;
    let biased = if sum > 0 { sum.wrapping_add(half) } else { sum.wrapping_sub(half) };
    biased.checked_div(count).unwrap_or(0)
}

/// The walk both pooling loops share: for every image and output pixel, `f(image, the pixel's
/// output channels, (y0, y1), (x0, x1))` with the window's rows and columns inside the input.
#[inline(always)]
pub(crate) fn for_each_window<X>(
    p: &PoolParams,
    input: &[X],
    output: &mut [X],
    mut f: impl FnMut(&[X], &mut [X], (usize, usize), (usize, usize)),
) {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c.max(1);
    let in_image = (ind.h * ind.w * ind.c).max(1);
    let out_image = (outd.h * outd.w * outd.c).max(1);
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        let mut out_pixels = out_b.chunks_exact_mut(c);
        for oy in 0..outd.h {
            let ys = window_range(oy, p.stride.h, p.filter.h, p.padding.top, ind.h);
            for ox in 0..outd.w {
                let xs = window_range(ox, p.stride.w, p.filter.w, p.padding.left, ind.w);
                let Some(out_px) = out_pixels.next() else { return };
                f(in_b, out_px, ys, xs);
            }
        }
    }
}
