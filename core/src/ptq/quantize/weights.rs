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
    let (channels, inner) = channel_layout(shape, axis);
    let ch = |k: usize| (k / inner) % channels;
    let mut amax = vec![0f32; channels];
    for (k, &v) in w.iter().enumerate() {
        let a = &mut amax[ch(k)];
        *a = a.max(v.abs());
    }
    let scales: Vec<f32> = amax.iter().map(|&a| if a > 0.0 { a / 127.0 } else { 1.0 }).collect();
    let q = w
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let s = scales[ch(k)];
            (libm::roundf(v / s) as i32).clamp(-127, 127) as i8
        })
        .collect();
    (q, scales)
}

/// The weights quantized with carried scales, if those scales represent them exactly (every
/// `w / s` within 1e-3 of an integer in [-128, 127]); `None` otherwise (e.g. a graph pass
/// changed the weights since the parameters were chosen).
pub(super) fn quantize_weights_carried(w: &[f32], shape: &[usize], q: &TensorQuant) -> Option<Vec<i8>> {
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
pub(super) fn weight_axis(op: &Op) -> usize {
    if matches!(op, Op::DepthwiseConv2d(_)) { 3 } else { 0 }
}
