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
    for b in 0..n {
        for oy in 0..wh.output {
            let y0 = (oy * p.stride_h) as isize - wh.pad_before as isize;
            let ys = y0.max(0) as usize..((y0 + p.filter_h as isize).min(h as isize)).max(0) as usize;
            for ox in 0..ww.output {
                let x0 = (ox * p.stride_w) as isize - ww.pad_before as isize;
                let xs = x0.max(0) as usize..((x0 + p.filter_w as isize).min(w as isize)).max(0) as usize;
                let count = ys.len() * xs.len();
                for ch in 0..c {
                    let mut m = f32::NEG_INFINITY;
                    let mut s = 0f64;
                    for iy in ys.clone() {
                        for ix in xs.clone() {
                            let v = x[((b * h + iy) * w + ix) * c + ch];
                            m = m.max(v);
                            s += f64::from(v);
                        }
                    }
                    let v = if max {
                        m
                    } else if count == 0 {
                        0.0
                    } else {
                        (s / count as f64) as f32
                    };
                    out.push(clamp_activation(v, p.activation));
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
}
