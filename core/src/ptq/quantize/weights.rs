//! Weight quantization: symmetric int8 per channel (or per tensor), weights that keep the scales
//! a QDQ model carries, and the weight-quantization error the bias correction removes.

use alloc::vec;
use alloc::vec::Vec;

use crate::graph::{Op, TensorQuant};

/// Quantizes `v` with `(scale, zero_point)`, rounding half away from zero (TFLite), clamped to
/// `[lo, hi]`.
pub(in crate::ptq) fn quantize_values(v: &[f32], scale: f32, zero_point: i32, lo: i64, hi: i64) -> Vec<i64> {
    v.iter()
        .map(|&x| {
            let q = libm::round(f64::from(x) / f64::from(scale)) as i64 + i64::from(zero_point);
            q.max(lo).min(hi)
        })
        .collect()
}

/// `(channels, inner)`: element `k` of a tensor of `shape` is in channel `(k / inner) % channels`
/// of `axis` (one channel for `None`).
pub(in crate::ptq) fn channel_layout(shape: &[usize], axis: Option<usize>) -> (usize, usize) {
    match axis {
        Some(a) => (shape.get(a).copied().unwrap_or(1).max(1), shape.iter().skip(a + 1).product::<usize>().max(1)),
        None => (1, 1),
    }
}

/// Symmetric int8 weights in [-127, 127]: per channel along `axis`, or one scale. A channel of
/// zeros gets scale 1.
pub(in crate::ptq) fn quantize_weights(w: &[f32], shape: &[usize], axis: Option<usize>) -> (Vec<i8>, Vec<f32>) {
    quantize_weights_bits(w, shape, axis, 8)
}

/// Symmetric `bits`-bit weights (8 or 4) on the narrow range `[-q, q]`, `q = 2^(bits-1) - 1`:
/// scale `max |w| / q` per channel along `axis` (or one scale), values `round(w / scale)`
/// (half away from zero) clamped to `[-q, q]`. A channel of zeros gets scale 1.
///
/// int4 is `[-7, 7]`, not `[-8, 7]`, as TFLite's quantizer does it
/// (`tensorflow/lite/tools/optimize/quantization_utils.cc`: `kMinQuantizedValue4bit = -7`,
/// `kMaxQuantizedValue4bit = 7`, the same narrow range as its int8 weights' [-127, 127]): the
/// range is symmetric, so a channel's largest |w| is exact on both signs, and TFLite's and
/// TFLite Micro's int4 kernels read any [-8, 7] nibble, so the narrow range costs nothing at
/// run time.
pub(in crate::ptq) fn quantize_weights_bits(
    w: &[f32],
    shape: &[usize],
    axis: Option<usize>,
    bits: u8,
) -> (Vec<i8>, Vec<f32>) {
    let qmax: i32 = if bits == 4 { 7 } else { 127 };
    let (channels, inner) = channel_layout(shape, axis);
    let ch = |k: usize| (k / inner) % channels;
    let mut amax = vec![0f32; channels];
    for (k, &v) in w.iter().enumerate() {
        let a = &mut amax[ch(k)];
        *a = a.max(v.abs());
    }
    let scales: Vec<f32> = amax.iter().map(|&a| if a > 0.0 { a / qmax as f32 } else { 1.0 }).collect();
    let q = w
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let s = scales[ch(k)];
            (libm::roundf(v / s) as i32).clamp(-qmax, qmax) as i8
        })
        .collect();
    (q, scales)
}

/// The weights quantized with carried scales, if those scales represent them exactly (every
/// `w / s` within 1e-3 of an integer in [-128, 127]); `None` otherwise (e.g. a graph pass
/// changed the weights since the parameters were chosen).
pub(in crate::ptq) fn quantize_weights_carried(w: &[f32], shape: &[usize], q: &TensorQuant) -> Option<Vec<i8>> {
    if q.zero_points.iter().any(|&z| z != 0) {
        return None;
    }
    let (channels, inner) = channel_layout(shape, q.axis);
    if q.scales.len() != channels {
        return None;
    }
    let mut out = Vec::with_capacity(w.len());
    for (k, &v) in w.iter().enumerate() {
        let s = *q.scales.get((k / inner) % channels)?;
        let r = f64::from(v) / f64::from(s);
        let n = libm::round(r);
        if (r - n).abs() > 1e-3 || !(-128.0..=127.0).contains(&n) {
            return None;
        }
        out.push(n as i8);
    }
    Some(out)
}

/// `E[(W - Ŵ) x]` per output channel: the weight-quantization error of a conv / depthwise /
/// fully-connected layer applied to the mean input (exact by linearity), averaged over the
/// output positions. `None` if the shapes do not fit.
#[allow(clippy::too_many_arguments)]
pub(super) fn weight_error(
    op: &Op,
    mean_x: &[f32],
    x_shape: &[usize],
    w: &[f32],
    wq: &[i8],
    w_shape: &[usize],
    scales: &[f32],
    axis: usize,
    y_shape: &[usize],
) -> Option<Vec<f32>> {
    let per = if scales.len() > 1 { Some(axis) } else { None };
    let (channels, inner) = channel_layout(w_shape, per);
    let dw: Vec<f32> = w
        .iter()
        .zip(wq)
        .enumerate()
        .map(|(k, (&v, &q))| v - f32::from(q) * scales.get((k / inner) % channels).copied().unwrap_or(scales[0]))
        .collect();
    let plain = match op {
        Op::Conv2d(c) => Op::Conv2d(crate::graph::Conv2d { activation: crate::graph::FusedActivation::None, ..*c }),
        Op::DepthwiseConv2d(c) => {
            Op::DepthwiseConv2d(crate::graph::DepthwiseConv2d { activation: crate::graph::FusedActivation::None, ..*c })
        }
        Op::FullyConnected(c) => {
            Op::FullyConnected(crate::graph::FullyConnected { activation: crate::graph::FusedActivation::None, ..*c })
        }
        Op::TransposeConv2d(c) => {
            Op::TransposeConv2d(crate::graph::TransposeConv2d { activation: crate::graph::FusedActivation::None, ..*c })
        }
        _ => return None,
    };
    let inputs = [
        Some(crate::float::TensorRef { data: mean_x, shape: x_shape }),
        Some(crate::float::TensorRef { data: &dw, shape: w_shape }),
        None,
    ];
    let y = crate::float::eval_op(&plain, &inputs, y_shape).ok()?;
    let c = *y_shape.last()?;
    if c == 0 || y.len() % c != 0 {
        return None;
    }
    let mut sum = vec![0f64; c];
    for row in y.chunks_exact(c) {
        sum.iter_mut().zip(row).for_each(|(s, &v)| *s += f64::from(v));
    }
    let n = (y.len() / c) as f64;
    Some(sum.iter().map(|&s| (s / n) as f32).collect())
}

/// The output-channel axis of a weighted op's filter.
pub(in crate::ptq) fn weight_axis(op: &Op) -> usize {
    if matches!(op, Op::DepthwiseConv2d(_)) { 3 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_symmetric_narrow() {
        // Two channels along axis 0: amax 2.54 and 0 (scale 1, all zeros).
        let (q, s) = quantize_weights(&[2.54, -1.27, 0.0, 0.0], &[2, 2], Some(0));
        assert_eq!(s, [2.54 / 127.0, 1.0]);
        assert_eq!(q, [127, -64, 0, 0]); // -1.27 / 0.02 = -63.5 rounds away from zero
        // Per tensor.
        let (q, s) = quantize_weights(&[1.0, -4.0], &[1, 2], None);
        assert_eq!((q, s), (vec![32, -127], vec![4.0 / 127.0]));
        // Depthwise: channel is the last axis.
        let (_, s) = quantize_weights(&[1.0, 2.0, -3.0, 0.5], &[1, 2, 1, 2], Some(3));
        assert_eq!(s, [3.0 / 127.0, 2.0 / 127.0]);
    }

    #[test]
    fn carried_weight_scales_must_represent_the_weights() {
        let s = [0.1f32, 0.25];
        let w: Vec<f32> = [3i8, -7, 100, -128].iter().enumerate().map(|(k, &v)| v as f32 * s[k / 2]).collect();
        let q = TensorQuant::per_channel(s.to_vec(), vec![0, 0], 0);
        assert_eq!(quantize_weights_carried(&w, &[2, 2], &q), Some(vec![3, -7, 100, -128]));
        // Changed weights (e.g. a folded scale) are not representable: not used.
        let w2: Vec<f32> = w.iter().map(|v| v * 1.37).collect();
        assert_eq!(quantize_weights_carried(&w2, &[2, 2], &q), None);
        // Asymmetric carried weights are not used either.
        let qa = TensorQuant::per_channel(s.to_vec(), vec![1, 0], 0);
        assert_eq!(quantize_weights_carried(&w, &[2, 2], &qa), None);
    }

    #[test]
    fn weights_int4_narrow() {
        // amax 3.5 -> scale 0.5; -1.25 / 0.5 = -2.5 rounds away from zero; 1.75 / 0.5 = 3.5 -> 4.
        let (q, s) = quantize_weights_bits(&[3.5, -1.25, 1.75, 0.0, 0.0, 0.0], &[2, 3], Some(0), 4);
        assert_eq!(s, [0.5, 1.0]);
        assert_eq!(q, [7, -3, 4, 0, 0, 0]);
        // The most negative weight maps to -7, never -8 (TFLite's narrow int4 range).
        let (q, _) = quantize_weights_bits(&[-3.0, 1.0], &[1, 2], None, 4);
        assert_eq!(q, [-7, 2]);
    }
}
