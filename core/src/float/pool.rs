//! Float max and average pooling (NHWC). Padded positions are skipped: max ignores them and the
//! average divides by the number of input elements in the window (TFLite; ONNX
//! `count_include_pad = 0`).

use alloc::vec::Vec;

use super::{KernelError, clamp_activation};
use crate::graph::Pool2d;

/// Max (`max = true`) or average pooling of `x [n, h, w, c]`.
pub(crate) fn pool2d_f32(x: &[f32], input: [usize; 4], p: &Pool2d, max: bool) -> Result<Vec<f32>, KernelError> {
    let [n, h, w, c] = input;
    if x.len() != n * h * w * c {
        return Err(KernelError("pooling input size does not match its shape"));
    }
    let wh = p.padding.resolve_h(h, p.filter_h, p.stride_h, 1);
    let ww = p.padding.resolve_w(w, p.filter_w, p.stride_w, 1);
    let (Some(wh), Some(ww)) = (wh, ww) else { return Err(KernelError("the pooling window does not fit the input")) };
    let mut out = Vec::with_capacity(n * wh.output * ww.output * c);
    let (mut maxes, mut sums) = (alloc::vec![f32::NEG_INFINITY; c], alloc::vec![0f64; c]);
    for b in 0..n {
        for oy in 0..wh.output {
            let y0 = (oy * p.stride_h) as isize - wh.pad_before as isize;
            let ys = y0.max(0) as usize..((y0 + p.filter_h as isize).min(h as isize)).max(0) as usize;
            for ox in 0..ww.output {
                let x0 = (ox * p.stride_w) as isize - ww.pad_before as isize;
                let xs = x0.max(0) as usize..((x0 + p.filter_w as isize).min(w as isize)).max(0) as usize;
                let count = ys.len() * xs.len();
                // Every channel at once (the loops over `c` vectorize); each channel's maximum and
                // sum still take the window's values in row order.
                if max {
                    maxes.fill(f32::NEG_INFINITY);
                    for iy in ys.clone() {
                        for ix in xs.clone() {
                            let at = ((b * h + iy) * w + ix) * c;
                            for (m, &v) in maxes.iter_mut().zip(&x[at..at + c]) {
                                *m = m.max(v);
                            }
                        }
                    }
                    out.extend(maxes.iter().map(|&m| clamp_activation(m, p.activation)));
                } else {
                    sums.fill(0.0);
                    for iy in ys.clone() {
                        for ix in xs.clone() {
                            let at = ((b * h + iy) * w + ix) * c;
                            for (s, &v) in sums.iter_mut().zip(&x[at..at + c]) {
                                *s += f64::from(v);
                            }
                        }
                    }
                    out.extend(sums.iter().map(|&s| {
                        let v = if count == 0 { 0.0 } else { (s / count as f64) as f32 };
                        clamp_activation(v, p.activation)
                    }));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{FusedActivation, Padding};

    #[test]
    fn average_skips_padding() {
        // 2x2 input, 2x2 window, stride 1, SAME (pad 1 at the end): windows hold 4, 2, 2, 1 values.
        let p = Pool2d {
            filter_h: 2,
            filter_w: 2,
            stride_h: 1,
            stride_w: 1,
            padding: Padding::Same,
            activation: FusedActivation::None,
        };
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(pool2d_f32(&x, [1, 2, 2, 1], &p, false).unwrap(), [2.5, 3.0, 3.5, 4.0]);
        assert_eq!(pool2d_f32(&x, [1, 2, 2, 1], &p, true).unwrap(), [4.0, 4.0, 4.0, 4.0]);
    }

    /// Several channels, a batch of 2, SAME padding, stride 2: each output is its channel's
    /// window (padding skipped) reduced in row order, as one channel at a time computes it.
    #[test]
    fn channels_pool_independently() -> Result<(), KernelError> {
        let (n, h, w, c) = (2, 5, 4, 3);
        let x: Vec<f32> = (0..n * h * w * c).map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.37).collect();
        let p = Pool2d {
            filter_h: 3,
            filter_w: 3,
            stride_h: 2,
            stride_w: 2,
            padding: Padding::Same,
            activation: FusedActivation::None,
        };
        for max in [true, false] {
            let got = pool2d_f32(&x, [n, h, w, c], &p, max)?;
            let (oh, ow) = (3, 2);
            assert_eq!(got.len(), n * oh * ow * c);
            for (i, &g) in got.iter().enumerate() {
                let (b, oy, ox, ch) = (i / (oh * ow * c), i / (ow * c) % oh, i / c % ow, i % c);
                // SAME, stride 2, window 3: padding before = 1 row (5 -> 3 needs 7: 2 of padding, 1
                // before) and 0 columns (4 -> 2 needs 5: 1 of padding, after).
                let ys = (2 * oy).saturating_sub(1)..(2 * oy + 2).min(h);
                let xs = 2 * ox..(2 * ox + 3).min(w);
                let window: Vec<f32> = ys
                    .flat_map(|iy| xs.clone().map(move |ix| ((b * h + iy) * w + ix) * c + ch))
                    .map(|j| x[j])
                    .collect();
                let want = if max {
                    window.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v))
                } else {
                    (window.iter().map(|&v| f64::from(v)).sum::<f64>() / window.len() as f64) as f32
                };
                assert_eq!(g.to_bits(), want.to_bits(), "output {i} (max {max})");
            }
        }
        Ok(())
    }
}
