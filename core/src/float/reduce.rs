//! Float sum and max over axes (ONNX `ReduceSum` / `ReduceMax`, TFLite `SUM` / `REDUCE_MAX`):
//! sums accumulate in f64 and round once; the max of no element is `-inf` (ONNX Runtime's; an
//! empty reduction does not reach the int8 kernels, whose graphs have static non-empty shapes).

use alloc::vec;
use alloc::vec::Vec;

use super::KernelError;

/// Reduces `x` (of `shape`) over `axes` with `max` (true) or a sum; the output holds the kept
/// axes in order.
pub(crate) fn reduce(x: &[f32], shape: &[usize], axes: &[usize], max: bool) -> Result<Vec<f32>, KernelError> {
    if x.len() != shape.iter().product::<usize>() || axes.iter().any(|&a| a >= shape.len()) {
        return Err(KernelError("reduction axes or data do not match the shape"));
    }
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let n_out: usize = kept.iter().map(|&a| shape[a]).product();
    // Output offset step per input axis (0 for reduced axes).
    let mut step = vec![0usize; shape.len()];
    let mut s = 1usize;
    for &a in kept.iter().rev() {
        step[a] = s;
        s *= shape[a];
    }
    let mut acc = vec![if max { f64::NEG_INFINITY } else { 0.0 }; n_out];
    let mut idx = vec![0usize; shape.len()];
    let mut dst = 0usize;
    for &v in x {
        let v = f64::from(v);
        acc[dst] = if max { acc[dst].max(v) } else { acc[dst] + v };
        for a in (0..shape.len()).rev() {
            idx[a] += 1;
            dst += step[a];
            if idx[a] < shape[a] {
                break;
            }
            dst -= step[a] * idx[a];
            idx[a] = 0;
        }
    }
    Ok(acc.into_iter().map(|v| v as f32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_and_max_over_middle_and_outer_axes() {
        let x: Vec<f32> = (0..24).map(|v| (v as f32 - 11.0) * if v % 3 == 0 { -1.0 } else { 1.0 }).collect();
        let s = reduce(&x, &[2, 3, 4], &[1], false).unwrap();
        let m = reduce(&x, &[2, 3, 4], &[0, 2], true).unwrap();
        for a in 0..2 {
            for c in 0..4 {
                let want: f32 = (0..3).map(|b| x[a * 12 + b * 4 + c]).sum();
                assert_eq!(s[a * 4 + c], want);
            }
        }
        for b in 0..3 {
            let want = (0..2).flat_map(|a| (0..4).map(move |c| (a, c))).map(|(a, c)| x[a * 12 + b * 4 + c]);
            assert_eq!(m[b], want.fold(f32::NEG_INFINITY, f32::max));
        }
    }
}
