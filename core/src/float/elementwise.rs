//! Float elementwise ops: binary ops with NumPy broadcasting, activations.

use alloc::vec;
use alloc::vec::Vec;

use super::KernelError;
use crate::graph::broadcast_shapes;

/// A binary elementwise operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Min,
    Max,
    Prelu,
    SquaredDifference,
}

/// `a op b` with NumPy broadcasting; returns the output (of the broadcast shape).
pub(crate) fn binary_f32(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
) -> Result<Vec<f32>, KernelError> {
    let out_shape = broadcast_shapes(a_shape, b_shape).ok_or(KernelError("shapes do not broadcast"))?;
    let f = |x: f32, y: f32| match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        BinaryOp::Min => x.min(y),
        BinaryOp::Max => x.max(y),
        BinaryOp::SquaredDifference => (x - y) * (x - y),
        BinaryOp::Prelu => {
            if x >= 0.0 {
                x
            } else {
                x * y
            }
        }
    };
    let n: usize = out_shape.iter().product();
    if a.len() != a_shape.iter().product::<usize>() || b.len() != b_shape.iter().product::<usize>() {
        return Err(KernelError("binary op input sizes do not match their shapes"));
    }
    // Fast paths: same shape, or one side a single value.
    if a_shape == b_shape {
        return Ok(a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect());
    }
    if b.len() == 1 && a.len() == n {
        return Ok(a.iter().map(|&x| f(x, b[0])).collect());
    }
    if a.len() == 1 && b.len() == n {
        return Ok(b.iter().map(|&y| f(a[0], y)).collect());
    }
    let sa = broadcast_steps(a_shape, &out_shape);
    let sb = broadcast_steps(b_shape, &out_shape);
    let r = out_shape.len();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; r];
    let (mut ia, mut ib) = (0usize, 0usize);
    for _ in 0..n {
        out.push(f(a[ia], b[ib]));
        for ax in (0..r).rev() {
            idx[ax] += 1;
            ia += sa[ax];
            ib += sb[ax];
            if idx[ax] < out_shape[ax] {
                break;
            }
            ia -= sa[ax] * idx[ax];
            ib -= sb[ax] * idx[ax];
            idx[ax] = 0;
        }
    }
    Ok(out)
}

/// Per output axis, the step in the (broadcast) input's data.
fn broadcast_steps(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let lead = out.len() - shape.len();
    let mut steps = vec![0usize; out.len()];
    let mut stride = 1usize;
    for (k, &d) in shape.iter().enumerate().rev() {
        steps[lead + k] = if d == 1 { 0 } else { stride };
        stride *= d;
    }
    steps
}

/// Logistic sigmoid, computed in f64.
pub(crate) fn logistic(x: f32) -> f32 {
    (1.0 / (1.0 + libm::exp(-f64::from(x)))) as f32
}

/// Hyperbolic tangent, computed in f64.
pub(crate) fn tanh(x: f32) -> f32 {
    libm::tanh(f64::from(x)) as f32
}

/// `max(0, min(1, alpha·x + beta))`, computed in f64.
pub(crate) fn hard_sigmoid(x: f32, alpha: f32, beta: f32) -> f32 {
    (f64::from(alpha) * f64::from(x) + f64::from(beta)).clamp(0.0, 1.0) as f32
}

/// `x · relu6(x + 3) / 6`, computed in f64.
pub(crate) fn hard_swish(x: f32) -> f32 {
    let x = f64::from(x);
    (x * (x + 3.0).clamp(0.0, 6.0) / 6.0) as f32
}

/// `x` if `x ≥ 0`, else `alpha·x`.
pub(crate) fn leaky_relu(x: f32, alpha: f32) -> f32 {
    if x >= 0.0 { x } else { alpha * x }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        let y = binary_f32(BinaryOp::Sub, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], &[1.0, 2.0], &[2, 1]).unwrap();
        assert_eq!(y, [0.0, 1.0, 2.0, 2.0, 3.0, 4.0]);
        let y = binary_f32(BinaryOp::Mul, &[1.0, 2.0], &[2, 1], &[1.0, 10.0, 100.0], &[3]).unwrap();
        assert_eq!(y, [1.0, 10.0, 100.0, 2.0, 20.0, 200.0]);
        assert!(binary_f32(BinaryOp::Add, &[1.0; 2], &[2], &[1.0; 3], &[3]).is_err());
    }

    #[test]
    fn activations() {
        assert_eq!(logistic(0.0), 0.5);
        assert_eq!(hard_swish(-3.0), 0.0);
        assert_eq!(hard_swish(3.0), 3.0);
        assert_eq!(hard_sigmoid(1.0, 1.0 / 6.0, 0.5), (0.5f64 + 1.0 / 6.0) as f32);
        assert_eq!(leaky_relu(-2.0, 0.25), -0.5);
        assert_eq!(tanh(0.0), 0.0);
    }
}
