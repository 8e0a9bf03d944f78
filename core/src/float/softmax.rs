//! Float softmax over the last axis, `exp(beta·(x - max)) / sum`: exponentials in f32
//! ([`super::elementwise::exp_f32`]), their sum in f64.

use alloc::vec::Vec;

use super::KernelError;

/// Softmax of each row of `depth` elements.
pub(crate) fn softmax_f32(x: &[f32], depth: usize, beta: f32) -> Result<Vec<f32>, KernelError> {
    if depth == 0 || x.len() % depth != 0 {
        return Err(KernelError("softmax input is not a whole number of rows"));
    }
    let mut out = Vec::with_capacity(x.len());
    let mut e = Vec::with_capacity(depth);
    for row in x.chunks_exact(depth) {
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        e.clear();
        e.extend(row.iter().map(|&v| f64::from(super::elementwise::exp_f32(beta * (v - m)))));
        let s: f64 = e.iter().sum();
        out.extend(e.iter().map(|&v| (v / s) as f32));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sum_to_one() {
        let y = softmax_f32(&[0.0, 0.0, 0.0, core::f32::consts::LN_2], 2, 1.0).unwrap();
        assert_eq!(&y[..2], [0.5, 0.5]);
        assert!((y[2] - 1.0 / 3.0).abs() < 1e-7 && (y[3] - 2.0 / 3.0).abs() < 1e-7);
    }
}
