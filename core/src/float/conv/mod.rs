//! Float convolution, depthwise and transposed convolution (NHWC input, OHWI / `[1, kh, kw, c·m]`
//! filters).
//!
//! Two implementations of each: the `*_reference` loops, which accumulate in f64 and round once
//! (as close to the exact value as f32 allows), and the fast ones the executor runs, in f32 as
//! ONNX Runtime computes: convolution as im2col blocks times the filter through the blocked GEMM
//! ([`crate::kernels::arch::gemm`]; a 1×1 stride-1 convolution multiplies the input itself),
//! transposed convolution as one GEMM per tap scattered into the output, depthwise as
//! per-channel f32 lanes the compiler vectorizes. Tests hold the fast ones within f32 rounding of
//! the reference. The `force-reference` feature makes the executor run the reference.

use alloc::vec;
use alloc::vec::Vec;

use super::{KernelError, clamp_activation};
use crate::graph::{AxisWindow, FusedActivation, Padding};
use crate::kernels::arch::gemm::{
    Epilogue, GemmShapeError, IndirectA, MatRef, PackedRhs, sgemm, sgemm_indirect, sgemm_packed,
};

/// Geometry shared by convolution and depthwise convolution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConvGeometry {
    /// Input `[n, h, w, c]`.
    pub input: [usize; 4],
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Strides (h, w).
    pub stride: [usize; 2],
    /// Dilations (h, w).
    pub dilation: [usize; 2],
    /// Padding.
    pub padding: Padding,
}

impl ConvGeometry {
    fn windows(&self) -> Result<(AxisWindow, AxisWindow), KernelError> {
        let h = self.padding.resolve_h(self.input[1], self.kernel[0], self.stride[0], self.dilation[0]);
        let w = self.padding.resolve_w(self.input[2], self.kernel[1], self.stride[1], self.dilation[1]);
        match (h, w) {
            (Some(h), Some(w)) => Ok((h, w)),
            _ => Err(KernelError("the window does not fit the input")),
        }
    }
}

/// Output channels whose sums [`dots`] computes side by side.
pub(crate) const DOT_LANES: usize = 8;

/// The dot products of `xs` with each of the `N` rows `fs` (each `xs.len()` long), in f64:
/// each exactly `xs.iter().zip(row).map(|(x, w)| x as f64 * w as f64).sum::<f64>()` (the same
/// products added in the same order, from `-0.0` as `Sum` starts), so the results do not depend
/// on `N`; the `N` sums are interleaved so that each addition does not wait for the previous
/// one of the same sum.
#[inline(always)]
pub(crate) fn dots<const N: usize>(xs: &[f32], fs: [&[f32]; N]) -> [f64; N] {
    let mut sums = [-0.0f64; N];
    for (i, &x) in xs.iter().enumerate() {
        let x = f64::from(x);
        for (s, row) in sums.iter_mut().zip(&fs) {
            *s += x * f64::from(row[i]);
        }
    }
    sums
}

/// Adds to each output channel's `acc` its dot product of one tap: `xs` (the tap's input
/// channels) with the weights `wt` (`[ic, oc]`, the output channels side by side). Each dot
/// product is the same products added in the same order, from -0.0, as
/// `xs.iter().zip(row).map(..).sum::<f64>()`, so the results do not depend on how the channels
/// are grouped: [`DOT_LANES`] channels at a time, their sums in registers over the input
/// channels (independent sums the compiler vectorizes), then the rest one by one.
#[inline(always)]
fn tap_sums(xs: &[f32], wt: &[f64], acc: &mut [f64]) {
    let oc = acc.len();
    let mut groups = acc.chunks_exact_mut(DOT_LANES);
    for (g, a) in (&mut groups).enumerate() {
        let mut sums = [-0.0f64; DOT_LANES];
        for (&v, wrow) in xs.iter().zip(wt.chunks_exact(oc.max(1))) {
            let v = f64::from(v);
            for (s, &w) in sums.iter_mut().zip(&wrow[g * DOT_LANES..][..DOT_LANES]) {
                *s += v * w;
            }
        }
        a.iter_mut().zip(sums).for_each(|(a, s)| *a += s);
    }
    let done = oc / DOT_LANES * DOT_LANES;
    for (j, a) in groups.into_remainder().iter_mut().enumerate() {
        let mut sum = -0.0f64;
        for (&v, wrow) in xs.iter().zip(wt.chunks_exact(oc.max(1))) {
            sum += f64::from(v) * wrow[done + j];
        }
        *a += sum;
    }
}

/// Input row index of output row `o`, kernel tap `k` (None if in the padding).
#[inline]
fn tap(o: usize, k: usize, stride: usize, dilation: usize, pad: usize, extent: usize) -> Option<usize> {
    (o * stride + k * dilation).checked_sub(pad).filter(|&i| i < extent)
}

/// Which input pixel each filter tap of each output pixel reads: a [`ConvGeometry`]'s windows,
/// resolved once. Every loop over a convolution's taps (the references, the copied patches, the
/// patches read in place, the depthwise rows) walks them through [`Taps::of`], in one order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Taps {
    /// Input height and width.
    h: usize,
    w: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    /// Padding before the first row and column.
    pad: [usize; 2],
    /// Output height and width.
    pub(crate) out: [usize; 2],
}

impl Taps {
    /// The taps of `geo`.
    ///
    /// # Errors
    /// `KernelError` if the window does not fit the input.
    pub(crate) fn new(geo: &ConvGeometry) -> Result<Self, KernelError> {
        let (wh, ww) = geo.windows()?;
        Ok(Self {
            h: geo.input[1],
            w: geo.input[2],
            kernel: geo.kernel,
            stride: geo.stride,
            dilation: geo.dilation,
            pad: [wh.pad_before, ww.pad_before],
            out: [wh.output, ww.output],
        })
    }

    /// The taps of output pixel `(oy, ox)` in filter order (tap `ky·kw + kx`, `ky` outer): the
    /// input pixel `iy·w + ix` each reads within its image, `None` in the padding.
    #[inline(always)]
    pub(crate) fn of(&self, oy: usize, ox: usize) -> impl Iterator<Item = Option<usize>> + '_ {
        let [kh, kw] = self.kernel;
        (0..kh).flat_map(move |ky| {
            let iy = tap(oy, ky, self.stride[0], self.dilation[0], self.pad[0], self.h);
            (0..kw).map(move |kx| {
                let ix = tap(ox, kx, self.stride[1], self.dilation[1], self.pad[1], self.w);
                iy.zip(ix).map(|(iy, ix)| iy * self.w + ix)
            })
        })
    }
}

/// 2-D convolution: `x [n, h, w, ic]`, `filter [oc, kh, kw, ic]`, `bias [oc]`.
pub(crate) fn conv2d_f32_reference(
    x: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    geo: &ConvGeometry,
    out_channels: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    let [n, h, w, ic] = geo.input;
    let [kh, kw] = geo.kernel;
    let taps_of = Taps::new(geo)?;
    let [oh, ow] = taps_of.out;
    if x.len() != n * h * w * ic
        || filter.len() != out_channels * kh * kw * ic
        || bias.is_some_and(|b| b.len() != out_channels)
    {
        return Err(KernelError("conv tensor sizes do not match the shapes"));
    }
    let mut out = vec![0f32; n * oh * ow * out_channels];
    // The weights in f64, `[kh, kw, ic, oc]`: the output channels of one input value side by side.
    let taps = kh * kw;
    let mut weights = Vec::new();
    weights.try_reserve_exact(filter.len()).map_err(|_| KernelError("conv weights too large to evaluate in f64"))?;
    weights.resize(filter.len(), 0f64);
    for (oc, f) in filter.chunks_exact((taps * ic).max(1)).enumerate() {
        for (t, v) in f.iter().enumerate() {
            weights[t * out_channels + oc] = f64::from(*v);
        }
    }
    reference_sums(&taps_of, n, bias, &mut out, activation, |acc, pixel, t| {
        let xs = &x[pixel * ic..][..ic];
        let wt = &weights[t * ic * out_channels..][..ic * out_channels];
        tap_sums(xs, wt, acc);
    });
    Ok(out)
}

/// The reference loops' order: for each output pixel in turn (`out` holds `n` images of
/// `channels` values per pixel), the f64 sums start from the bias, `add_tap(sums, pixel, t)`
/// adds tap `t` for each tap inside the input (`pixel`: the input pixel's index over all
/// images), and the outputs are the sums rounded to f32 and clamped.
fn reference_sums(
    taps: &Taps,
    n: usize,
    bias: Option<&[f32]>,
    out: &mut [f32],
    activation: FusedActivation,
    mut add_tap: impl FnMut(&mut [f64], usize, usize),
) {
    let [oh, ow] = taps.out;
    let image = taps.h * taps.w;
    let channels = out.len() / (n * oh * ow).max(1);
    let mut acc = vec![0f64; channels];
    let mut pixels_out = out.chunks_exact_mut(channels.max(1));
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for (a, k) in acc.iter_mut().zip(0..) {
                    *a = bias.map_or(0.0, |bv| f64::from(bv[k]));
                }
                for (t, pixel) in taps.of(oy, ox).enumerate() {
                    if let Some(p) = pixel {
                        add_tap(&mut acc, b * image + p, t);
                    }
                }
                let Some(dst) = pixels_out.next() else { return };
                for (d, &a) in dst.iter_mut().zip(&acc) {
                    *d = clamp_activation(a as f32, activation);
                }
            }
        }
    }
}

/// Depthwise convolution: `x [n, h, w, c]`, `filter [1, kh, kw, c·m]`, `bias [c·m]`; output
/// channel `c·m + j` reads input channel `c`.
pub(crate) fn depthwise_conv2d_f32_reference(
    x: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    geo: &ConvGeometry,
    multiplier: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    let [n, h, w, c] = geo.input;
    let [kh, kw] = geo.kernel;
    let oc = c * multiplier;
    let taps_of = Taps::new(geo)?;
    let [oh, ow] = taps_of.out;
    if x.len() != n * h * w * c || filter.len() != kh * kw * oc || bias.is_some_and(|b| b.len() != oc) {
        return Err(KernelError("depthwise tensor sizes do not match the shapes"));
    }
    let mut out = vec![0f32; n * oh * ow * oc];
    reference_sums(&taps_of, n, bias, &mut out, activation, |acc, pixel, t| {
        let xs = &x[pixel * c..][..c];
        let fs = &filter[t * oc..][..oc];
        if multiplier == 1 {
            for ((a, &f), &v) in acc.iter_mut().zip(fs).zip(xs) {
                *a += f64::from(v) * f64::from(f);
            }
        } else {
            for (k, (a, &f)) in acc.iter_mut().zip(fs).enumerate() {
                *a += f64::from(xs[k / multiplier]) * f64::from(f);
            }
        }
    });
    Ok(out)
}

/// Geometry of a transposed convolution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TransposeConvGeometry {
    /// Input `[n, h, w, c]`.
    pub input: [usize; 4],
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Strides (h, w).
    pub stride: [usize; 2],
    /// Rows and columns dropped at the top and left of the full output.
    pub pad: [usize; 2],
    /// Output height and width.
    pub output: [usize; 2],
}

/// Transposed 2-D convolution: `x [n, h, w, ic]`, `filter [oc, kh, kw, ic]`, `bias [oc]`; every
/// output is the f64 sum of the products that land on it, plus the bias, rounded once.
pub(crate) fn transpose_conv2d_f32_reference(
    x: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    geo: &TransposeConvGeometry,
    out_channels: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    let [n, h, w, ic] = geo.input;
    let [kh, kw] = geo.kernel;
    let [oh, ow] = geo.output;
    let oc = out_channels;
    if x.len() != n * h * w * ic || filter.len() != oc * kh * kw * ic || bias.is_some_and(|b| b.len() != oc) {
        return Err(KernelError("transpose conv tensor sizes do not match the shapes"));
    }
    if geo.stride.contains(&0) {
        return Err(KernelError("transpose conv strides must be >= 1"));
    }
    let len = n.checked_mul(oh).and_then(|v| v.checked_mul(ow)).and_then(|v| v.checked_mul(oc));
    let len = len.ok_or(KernelError("transpose conv output too large"))?;
    let mut acc = Vec::new();
    acc.try_reserve_exact(len).map_err(|_| KernelError("transpose conv output too large"))?;
    acc.resize(len, 0f64);
    for b in 0..n {
        for iy in 0..h {
            for ix in 0..w {
                let xs = &x[((b * h + iy) * w + ix) * ic..][..ic];
                for fy in 0..kh {
                    let Some(oy) = (iy * geo.stride[0] + fy).checked_sub(geo.pad[0]).filter(|&v| v < oh) else {
                        continue;
                    };
                    for fx in 0..kw {
                        let Some(ox) = (ix * geo.stride[1] + fx).checked_sub(geo.pad[1]).filter(|&v| v < ow) else {
                            continue;
                        };
                        let a = &mut acc[((b * oh + oy) * ow + ox) * oc..][..oc];
                        for (o, a) in a.iter_mut().enumerate() {
                            let row = &filter[((o * kh + fy) * kw + fx) * ic..][..ic];
                            let mut s = -0.0f64;
                            for (&v, &f) in xs.iter().zip(row) {
                                s += f64::from(v) * f64::from(f);
                            }
                            *a += s;
                        }
                    }
                }
            }
        }
    }
    let mut out = Vec::with_capacity(len);
    for (i, a) in acc.iter().enumerate() {
        let b = bias.map_or(0.0, |bv| f64::from(bv[i % oc.max(1)]));
        out.push(clamp_activation((a + b) as f32, activation));
    }
    Ok(out)
}

/// Rows of im2col patches one GEMM call takes: about 4 MiB of patches, and at least 256 rows
/// (the GEMM packs the whole filter once per call, so short blocks would repack it often).
fn patch_rows(k: usize) -> usize {
    ((1 << 20) / k.max(1)).clamp(256, 4096)
}

/// The output initialized with each row's bias (so the GEMM accumulates onto it), or zeros.
fn bias_rows(rows: usize, bias: Option<&[f32]>, oc: usize) -> Result<Vec<f32>, KernelError> {
    let len = rows.checked_mul(oc).ok_or(KernelError("output too large"))?;
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| KernelError("output too large"))?;
    match bias {
        Some(b) if oc > 0 => {
            for _ in 0..rows {
                out.extend_from_slice(b);
            }
        }
        _ => out.resize(len, 0.0),
    }
    Ok(out)
}

fn apply_activation(out: &mut [f32], activation: FusedActivation) {
    if activation != FusedActivation::None {
        out.iter_mut().for_each(|v| *v = clamp_activation(*v, activation));
    }
}

fn gemm_err(_: GemmShapeError) -> KernelError {
    KernelError("matrix product operands do not fit their shapes")
}

/// [`conv2d_f32_packed`] packing the filter itself.
#[cfg(test)]
pub(crate) fn conv2d_f32(
    x: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    geo: &ConvGeometry,
    out_channels: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    conv2d_f32_packed(x, filter, None, bias, geo, out_channels, activation)
}

/// 2-D convolution: `x [n, h, w, ic]`, `filter [oc, kh, kw, ic]`, `bias [oc]`, in f32 through the
/// GEMM (see the module doc); within f32 rounding of [`conv2d_f32_reference`]. `packed`: the
/// filter already packed ([`PackedRhs::weights`] of it as `[oc, kh·kw·ic]`; the executor packs
/// each constant filter once), else (`None`, or of another shape) it is packed here.
pub(crate) fn conv2d_f32_packed(
    x: &[f32],
    filter: &[f32],
    packed: Option<&PackedRhs>,
    bias: Option<&[f32]>,
    geo: &ConvGeometry,
    out_channels: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    if cfg!(feature = "force-reference") {
        return conv2d_f32_reference(x, filter, bias, geo, out_channels, activation);
    }
    let [n, h, w, ic] = geo.input;
    let [kh, kw] = geo.kernel;
    let (wh, ww) = geo.windows()?;
    let (oh, ow) = (wh.output, ww.output);
    let oc = out_channels;
    if x.len() != n * h * w * ic || filter.len() != oc * kh * kw * ic || bias.is_some_and(|b| b.len() != oc) {
        return Err(KernelError("conv tensor sizes do not match the shapes"));
    }
    let k = kh * kw * ic;
    let rows = n * oh * ow;
    // The filter `[oc, k]` read as the `k × oc` right-hand side, packed once for every block.
    let own;
    let b = match packed.filter(|p| p.is(k, oc)) {
        Some(p) => p,
        None => {
            own = PackedRhs::weights(filter, k, oc).map_err(gemm_err)?;
            &own
        }
    };
    if b.reads_in_place() {
        // The bias and the activation applied by the product itself, as it starts and stores.
        let len = rows.checked_mul(oc).ok_or(KernelError("output too large"))?;
        let mut out = Vec::new();
        out.try_reserve_exact(len).map_err(|_| KernelError("output too large"))?;
        out.resize(len, 0.0);
        let zeros;
        let start = match bias {
            Some(b) => b,
            None => {
                zeros = vec![0f32; oc];
                &zeros
            }
        };
        let epilogue = Epilogue { start: Some(start), clamp: activation.float_range() };
        if conv_in_place(x, b, geo, &mut out, epilogue)? {
            return Ok(out);
        }
    }
    let mut out = bias_rows(rows, bias, oc)?;
    conv_im2col(x, b, geo, &mut out)?;
    apply_activation(&mut out, activation);
    Ok(out)
}

/// `out = clamp(start + patches · b)` ([`Epilogue`]) with each patch's taps read where they lie
/// in `x` ([`IndirectA`]: no im2col copy, no packing); `Ok(false)` (nothing written) where the target has no such kernel.
fn conv_in_place(
    x: &[f32],
    b: &PackedRhs,
    geo: &ConvGeometry,
    out: &mut [f32],
    epilogue: Epilogue<'_>,
) -> Result<bool, KernelError> {
    let [n, h, w, ic] = geo.input;
    let [kh, kw] = geo.kernel;
    let taps_of = Taps::new(geo)?;
    let [oh, ow] = taps_of.out;
    let rows = n * oh * ow;
    let mut offsets = Vec::new();
    offsets.try_reserve_exact(rows * kh * kw).map_err(|_| KernelError("output too large"))?;
    for b_ in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                offsets.extend(taps_of.of(oy, ox).map(|p| p.map_or(IndirectA::ZEROS, |p| (b_ * h * w + p) * ic)));
            }
        }
    }
    let a = IndirectA { data: x, seg: ic, taps: kh * kw, offsets: &offsets };
    sgemm_indirect(&a, b, out, b.n(), epilogue).map_err(gemm_err)
}

/// `out += patches · b` through copied patches (im2col, in blocks of [`patch_rows`]) and the
/// packed GEMM; a 1×1 stride-1 unpadded convolution multiplies `x` itself.
fn conv_im2col(x: &[f32], b: &PackedRhs, geo: &ConvGeometry, out: &mut [f32]) -> Result<(), KernelError> {
    let [n, h, w, ic] = geo.input;
    let [kh, kw] = geo.kernel;
    let taps_of = Taps::new(geo)?;
    let [oh, ow] = taps_of.out;
    let (k, oc) = (kh * kw * ic, b.n());
    let rows = n * oh * ow;
    let pointwise = kh == 1 && kw == 1 && geo.stride == [1, 1] && taps_of.pad == [0, 0] && [oh, ow] == [h, w];
    if pointwise {
        return sgemm_packed(rows, MatRef::row_major(x, ic), b, out, oc, true).map_err(gemm_err);
    }
    let block = patch_rows(k);
    let mut patches = vec![0f32; block.min(rows) * k];
    let mut row = 0;
    while row < rows {
        let m = block.min(rows - row);
        for (r, patch) in patches.chunks_exact_mut(k.max(1)).take(m).enumerate() {
            let p = row + r;
            let (b_, oy, ox) = (p / (oh * ow), p / ow % oh, p % ow);
            for (dst, pixel) in patch.chunks_exact_mut(ic.max(1)).zip(taps_of.of(oy, ox)) {
                match pixel {
                    Some(p) => dst.copy_from_slice(&x[(b_ * h * w + p) * ic..][..ic]),
                    None => dst.fill(0.0),
                }
            }
        }
        let a = MatRef::row_major(&patches, k);
        sgemm_packed(m, a, b, &mut out[row * oc..], oc, true).map_err(gemm_err)?;
        row += m;
    }
    Ok(())
}

/// Depthwise convolution in f32 lanes (see the module doc); within f32 rounding of
/// [`depthwise_conv2d_f32_reference`].
pub(crate) fn depthwise_conv2d_f32(
    x: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    geo: &ConvGeometry,
    multiplier: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    if cfg!(feature = "force-reference") || multiplier != 1 {
        return depthwise_conv2d_f32_reference(x, filter, bias, geo, multiplier, activation);
    }
    let [n, h, w, c] = geo.input;
    let [kh, kw] = geo.kernel;
    let taps = Taps::new(geo)?;
    let [oh, ow] = taps.out;
    if x.len() != n * h * w * c || filter.len() != kh * kw * c || bias.is_some_and(|b| b.len() != c) {
        return Err(KernelError("depthwise tensor sizes do not match the shapes"));
    }
    let mut out = bias_rows(n * oh * ow, bias, c)?;
    let rows = DepthwiseRows { x, filter, channels: c, taps };
    // Output rows (image, oy) in bands on threads: each value summed as alone.
    super::in_row_bands(&mut out, ow * c, ow * c * kh * kw, |first, band| {
        #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
        if crate::kernels::arch::x86::depthwise_rows_f32(&rows, first, band) {
            return;
        }
        rows.run(first, band);
    });
    apply_activation(&mut out, activation);
    Ok(out)
}

/// The operands of [`depthwise_conv2d_f32`]'s rows (multiplier 1, sizes checked).
pub(crate) struct DepthwiseRows<'a> {
    x: &'a [f32],
    filter: &'a [f32],
    channels: usize,
    taps: Taps,
}

impl DepthwiseRows<'_> {
    /// Adds the products of output rows `first..` (the rows of `band`, which holds the biases)
    /// in the reference's order: per value, the taps row by row, each product and sum rounded
    /// to f32 (vector lanes hold different channels). Inlined into its callers, so a build with
    /// wider vectors ([`crate::kernels::arch`]) computes the same values.
    #[inline(always)]
    pub(crate) fn run(&self, first: usize, band: &mut [f32]) {
        let Self { x, filter, channels: c, taps } = *self;
        let [oh, ow] = taps.out;
        let image = taps.h * taps.w;
        for (r, row) in band.chunks_exact_mut((ow * c).max(1)).enumerate() {
            let (b, oy) = ((first + r) / oh.max(1), (first + r) % oh.max(1));
            for (ox, acc) in row.chunks_exact_mut(c.max(1)).enumerate() {
                for (t, pixel) in taps.of(oy, ox).enumerate() {
                    let Some(p) = pixel else { continue };
                    let (Some(xs), Some(fs)) = (x.get((b * image + p) * c..), filter.get(t * c..)) else {
                        continue;
                    };
                    // `acc` has `c` values: the zip takes the tap's `c` channels.
                    for ((a, &f), &v) in acc.iter_mut().zip(fs).zip(xs) {
                        *a += v * f;
                    }
                }
            }
        }
    }
}

/// Transposed 2-D convolution through the GEMM: per filter tap, the products of every input
/// pixel with the tap's `[ic, oc]` weights, added where the tap lands; within f32 rounding of
/// [`transpose_conv2d_f32_reference`].
pub(crate) fn transpose_conv2d_f32(
    x: &[f32],
    filter: &[f32],
    bias: Option<&[f32]>,
    geo: &TransposeConvGeometry,
    out_channels: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    if cfg!(feature = "force-reference") {
        return transpose_conv2d_f32_reference(x, filter, bias, geo, out_channels, activation);
    }
    let [n, h, w, ic] = geo.input;
    let [kh, kw] = geo.kernel;
    let [oh, ow] = geo.output;
    let oc = out_channels;
    if x.len() != n * h * w * ic || filter.len() != oc * kh * kw * ic || bias.is_some_and(|b| b.len() != oc) {
        return Err(KernelError("transpose conv tensor sizes do not match the shapes"));
    }
    if geo.stride.contains(&0) {
        return Err(KernelError("transpose conv strides must be >= 1"));
    }
    let mut out = bias_rows(n * oh * ow, bias, oc)?;
    let taps = kh * kw;
    let pixels = n * h * w;
    let mut prods = vec![0f32; pixels * oc];
    for t in 0..taps {
        let (fy, fx) = (t / kw, t % kw);
        // Tap t's weights: element (i, o) at filter[(o·taps + t)·ic + i].
        let b = MatRef { data: filter, offset: t * ic, row_stride: 1, col_stride: taps * ic };
        sgemm([pixels, ic, oc], MatRef::row_major(x, ic), b, &mut prods, oc, false).map_err(gemm_err)?;
        for (p, prod) in prods.chunks_exact(oc.max(1)).enumerate() {
            let (b_, iy, ix) = (p / (h * w), p / w % h, p % w);
            let Some(oy) = (iy * geo.stride[0] + fy).checked_sub(geo.pad[0]).filter(|&v| v < oh) else { continue };
            let Some(ox) = (ix * geo.stride[1] + fx).checked_sub(geo.pad[1]).filter(|&v| v < ow) else { continue };
            let dst = &mut out[((b_ * oh + oy) * ow + ox) * oc..][..oc];
            dst.iter_mut().zip(prod).for_each(|(d, &v)| *d += v);
        }
    }
    apply_activation(&mut out, activation);
    Ok(out)
}

#[cfg(test)]
mod tests;
