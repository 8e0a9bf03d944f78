//! Float fully connected: `y[b, o] = sum_i x[b, i] · w[o, i] + bias[o]` (f64 accumulation).

use alloc::vec::Vec;

use super::{KernelError, clamp_activation};
use crate::graph::Activation;

/// `x` is `batches × inputs` (row-major), `weights` `[outputs, inputs]`, `bias` `[outputs]`.
pub(crate) fn fully_connected_f32(
    x: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    inputs: usize,
    outputs: usize,
    activation: Activation,
) -> Result<Vec<f32>, KernelError> {
    if inputs == 0
        || x.len() % inputs != 0
        || weights.len() != inputs * outputs
        || bias.is_some_and(|b| b.len() != outputs)
    {
        return Err(KernelError("fully connected tensor sizes do not match the shapes"));
    }
    let mut out = Vec::with_capacity(x.len() / inputs * outputs);
    for row in x.chunks_exact(inputs) {
        for (o, w) in weights.chunks_exact(inputs).enumerate() {
            let dot: f64 = row.iter().zip(w).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum();
            let b = bias.map_or(0.0, |b| f64::from(b[o]));
            out.push(clamp_activation((dot + b) as f32, activation));
        }
    }
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
            Activation::Relu6,
        )
        .unwrap();
        assert_eq!(y, [3.5, 0.0, 6.0, 0.0]);
        assert!(fully_connected_f32(&[1.0; 3], &[1.0; 4], None, 2, 2, Activation::None).is_err());
    }
}
