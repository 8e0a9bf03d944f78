//! Float fully connected: `y[b, o] = sum_i x[b, i] · w[o, i] + bias[o]` (f64 accumulation).

use alloc::vec::Vec;

use super::conv::{DOT_LANES, dots};
use super::{KernelError, clamp_activation};
use crate::graph::FusedActivation;

/// `x` is `batches × inputs` (row-major), `weights` `[outputs, inputs]`, `bias` `[outputs]`.
pub(crate) fn fully_connected_f32(
    x: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    inputs: usize,
    outputs: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    if inputs == 0
        || x.len() % inputs != 0
        || weights.len() != inputs * outputs
        || bias.is_some_and(|b| b.len() != outputs)
    {
        return Err(KernelError("fully connected tensor sizes do not match the shapes"));
    }
    let mut out = Vec::with_capacity(x.len() / inputs * outputs);
    let bias_of = |o: usize| bias.map_or(0.0, |b| f64::from(b[o]));
    for row in x.chunks_exact(inputs) {
        // DOT_LANES outputs side by side (the same sums, see `dots`), then the rest one by one.
        let mut groups = weights.chunks_exact(inputs * DOT_LANES);
        for (g, w) in (&mut groups).enumerate() {
            let sums = dots::<DOT_LANES>(row, core::array::from_fn(|j| &w[j * inputs..][..inputs]));
            for (j, dot) in sums.into_iter().enumerate() {
                out.push(clamp_activation((dot + bias_of(g * DOT_LANES + j)) as f32, activation));
            }
        }
        let done = outputs / DOT_LANES * DOT_LANES;
        for (j, w) in groups.remainder().chunks_exact(inputs).enumerate() {
            let dot = dots(row, [w])[0];
            out.push(clamp_activation((dot + bias_of(done + j)) as f32, activation));
        }
    }
    Ok(out)
}

/// Batched matmul of `a` and `b` (shapes `a_shape`, `b_shape`, see
/// [`BatchMatMulShape`](crate::kernels::batch_matmul::BatchMatMulShape)), f64 accumulation.
pub(crate) fn batch_matmul_f32(
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    adj_x: bool,
    adj_y: bool,
) -> Result<Vec<f32>, KernelError> {
    let s = crate::kernels::batch_matmul::BatchMatMulShape::new(a_shape, b_shape, adj_x, adj_y)
        .map_err(|_| KernelError("batch matmul operand shapes do not multiply"))?;
    if a.len() != a_shape.iter().product::<usize>() || b.len() != b_shape.iter().product::<usize>() {
        return Err(KernelError("batch matmul tensor sizes do not match the shapes"));
    }
    let (depth, (ak, bk)) = (s.depth(), s.depth_strides());
    let mut out = Vec::with_capacity(s.output_len());
    s.for_each_output(|a0, b0| {
        let dot: f64 = (0..depth).map(|k| f64::from(a[a0 + k * ak]) * f64::from(b[b0 + k * bk])).sum();
        out.push(dot as f32);
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_rows() {
        let y = fully_connected_f32(
            &[1.0, 2.0, 3.0, 4.0],
            &[1.0, 1.0, 1.0, -1.0],
            Some(&[0.5, 0.0]),
            2,
            2,
            FusedActivation::Relu6,
        )
        .unwrap();
        assert_eq!(y, [3.5, 0.0, 6.0, 0.0]);
        assert!(fully_connected_f32(&[1.0; 3], &[1.0; 4], None, 2, 2, FusedActivation::None).is_err());
    }
}
