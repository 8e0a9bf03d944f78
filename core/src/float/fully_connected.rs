//! Float fully connected (`y[b, o] = sum_i x[b, i] · w[o, i] + bias[o]`) and batch matmul: the
//! `*_reference` loops in f64 accumulation, the executor's through the f32 GEMM
//! ([`crate::kernels::arch::gemm`]), tested within f32 rounding of them.

use alloc::vec;
use alloc::vec::Vec;

use super::conv::{DOT_LANES, dots};
use super::{KernelError, clamp_activation};
use crate::graph::FusedActivation;
use crate::kernels::arch::gemm::{MatRef, PackedRhs, sgemm, sgemm_packed};

/// [`fully_connected_f32_packed`] packing the weights itself.
#[cfg(test)]
pub(crate) fn fully_connected_f32(
    x: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    inputs: usize,
    outputs: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    fully_connected_f32_packed(x, weights, None, bias, inputs, outputs, activation)
}

/// `x` is `batches × inputs` (row-major), `weights` `[outputs, inputs]`, `bias` `[outputs]`;
/// f32 through the GEMM. `packed`: the weights already packed ([`PackedRhs::weights`]; the
/// executor packs each constant weight once), else (`None`, or of another shape) they are packed
/// here.
pub(crate) fn fully_connected_f32_packed(
    x: &[f32],
    weights: &[f32],
    packed: Option<&PackedRhs>,
    bias: Option<&[f32]>,
    inputs: usize,
    outputs: usize,
    activation: FusedActivation,
) -> Result<Vec<f32>, KernelError> {
    if cfg!(feature = "force-reference") {
        return fully_connected_f32_reference(x, weights, bias, inputs, outputs, activation);
    }
    if inputs == 0
        || x.len() % inputs != 0
        || weights.len() != inputs * outputs
        || bias.is_some_and(|b| b.len() != outputs)
    {
        return Err(KernelError("fully connected tensor sizes do not match the shapes"));
    }
    let rows = x.len() / inputs;
    let mut out = vec![0f32; rows * outputs];
    if let Some(b) = bias.filter(|_| outputs > 0) {
        out.chunks_exact_mut(outputs).for_each(|r| r.copy_from_slice(b));
    }
    let err = |_| KernelError("fully connected tensor sizes do not match the shapes");
    let own;
    let w = match packed.filter(|p| p.is(inputs, outputs)) {
        Some(p) => p,
        None => {
            own = PackedRhs::weights(weights, inputs, outputs).map_err(err)?;
            &own
        }
    };
    sgemm_packed(rows, MatRef::row_major(x, inputs), w, &mut out, outputs, true).map_err(err)?;
    if activation != FusedActivation::None {
        out.iter_mut().for_each(|v| *v = clamp_activation(*v, activation));
    }
    Ok(out)
}

/// [`fully_connected_f32_packed`] in f64 accumulation, each sum rounded once.
pub(crate) fn fully_connected_f32_reference(
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
/// [`BatchMatMulShape`](crate::kernels::batch_matmul::BatchMatMulShape)), f32 through the GEMM,
/// one call per output matrix.
pub(crate) fn batch_matmul_f32(
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    adj_x: bool,
    adj_y: bool,
) -> Result<Vec<f32>, KernelError> {
    if cfg!(feature = "force-reference") {
        return batch_matmul_f32_reference(a, a_shape, b, b_shape, adj_x, adj_y);
    }
    let s = crate::kernels::batch_matmul::BatchMatMulShape::new(a_shape, b_shape, adj_x, adj_y)
        .map_err(|_| KernelError("batch matmul operand shapes do not multiply"))?;
    if a.len() != a_shape.iter().product::<usize>() || b.len() != b_shape.iter().product::<usize>() {
        return Err(KernelError("batch matmul tensor sizes do not match the shapes"));
    }
    let (rows, cols) = s.rows_cols();
    let ((ai, ak), (bk, bj)) = s.matrix_strides();
    let depth = s.depth();
    let mut out = vec![0f32; s.output_len()];
    let mut o = 0;
    let mut result = Ok(());
    s.for_each_batch(|a0, b0| {
        let av = MatRef { data: a, offset: a0, row_stride: ai, col_stride: ak };
        let bv = MatRef { data: b, offset: b0, row_stride: bk, col_stride: bj };
        if result.is_ok() {
            result = sgemm([rows, depth, cols], av, bv, &mut out[o..], cols, false);
        }
        o += rows * cols;
    });
    result.map_err(|_| KernelError("batch matmul tensor sizes do not match the shapes"))?;
    Ok(out)
}

/// [`batch_matmul_f32`] in f64 accumulation, each sum rounded once.
pub(crate) fn batch_matmul_f32_reference(
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

    /// The GEMM paths agree with the f64 reference loops within f32 rounding: fully connected
    /// with and without bias, batch matmul with every adjoint and broadcast batch dimensions.
    #[test]
    fn gemm_matches_the_reference() {
        let mut state = 11u64;
        let mut val = move |len: usize| -> Vec<f32> {
            (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                })
                .collect()
        };
        let close = |a: &[f32], b: &[f32]| {
            assert_eq!(a.len(), b.len());
            a.iter().zip(b).for_each(|(x, y)| assert!((x - y).abs() <= 2e-5 * (1.0 + y.abs()), "{x} vs {y}"));
        };
        for &(rows, ins, outs) in &[(1, 1, 1), (3, 17, 9), (40, 64, 33), (2, 300, 5)] {
            let (x, w, b) = (val(rows * ins), val(ins * outs), val(outs));
            for bias in [None, Some(b.as_slice())] {
                close(
                    &fully_connected_f32(&x, &w, bias, ins, outs, FusedActivation::Relu6).unwrap(),
                    &fully_connected_f32_reference(&x, &w, bias, ins, outs, FusedActivation::Relu6).unwrap(),
                );
            }
        }
        let shapes: [(&[usize], &[usize]); 3] =
            [(&[2, 3, 4], &[2, 4, 5]), (&[2, 1, 3, 4], &[3, 4, 5]), (&[5, 4], &[1, 4, 6])];
        for (sa, sb) in shapes {
            for (adj_x, adj_y) in [(false, false), (true, false), (false, true), (true, true)] {
                let mut sa = sa.to_vec();
                let mut sb = sb.to_vec();
                let (ra, rb) = (sa.len(), sb.len());
                if adj_x {
                    sa.swap(ra - 1, ra - 2);
                }
                if adj_y {
                    sb.swap(rb - 1, rb - 2);
                }
                let a = val(sa.iter().product());
                let b = val(sb.iter().product());
                close(
                    &batch_matmul_f32(&a, &sa, &b, &sb, adj_x, adj_y).unwrap(),
                    &batch_matmul_f32_reference(&a, &sa, &b, &sb, adj_x, adj_y).unwrap(),
                );
            }
        }
    }
}
