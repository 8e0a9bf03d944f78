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
    // One monomorphized loop per op, so the op is not decided per element.
    match op {
        BinaryOp::Add => broadcast(a, a_shape, b, b_shape, |x, y| x + y),
        BinaryOp::Sub => broadcast(a, a_shape, b, b_shape, |x, y| x - y),
        BinaryOp::Mul => broadcast(a, a_shape, b, b_shape, |x, y| x * y),
        BinaryOp::Div => broadcast(a, a_shape, b, b_shape, |x, y| x / y),
        BinaryOp::Min => broadcast(a, a_shape, b, b_shape, f32::min),
        BinaryOp::Max => broadcast(a, a_shape, b, b_shape, f32::max),
        BinaryOp::SquaredDifference => broadcast(a, a_shape, b, b_shape, |x, y| (x - y) * (x - y)),
        BinaryOp::Prelu => broadcast(a, a_shape, b, b_shape, |x, y| if x >= 0.0 { x } else { x * y }),
    }
}

/// `f(a, b)` elementwise with NumPy broadcasting: the last axis is an inner loop over contiguous
/// (or repeated) values of each side, the axes before it an odometer.
#[inline(always)]
fn broadcast(
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    f: impl Fn(f32, f32) -> f32,
) -> Result<Vec<f32>, KernelError> {
    let out_shape = broadcast_shapes(a_shape, b_shape).ok_or(KernelError("shapes do not broadcast"))?;
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
    if n == 0 {
        return Ok(out);
    }
    let inner = out_shape[r - 1];
    let (ta, tb) = (sa[r - 1], sb[r - 1]);
    let mut idx = vec![0usize; r - 1];
    let (mut ia, mut ib) = (0usize, 0usize);
    for _ in 0..n / inner {
        match (ta, tb) {
            (0, 0) => out.extend(core::iter::repeat_n(f(a[ia], b[ib]), inner)),
            (0, _) => out.extend(b[ib..ib + inner].iter().map(|&y| f(a[ia], y))),
            (_, 0) => out.extend(a[ia..ia + inner].iter().map(|&x| f(x, b[ib]))),
            _ => out.extend(a[ia..ia + inner].iter().zip(&b[ib..ib + inner]).map(|(&x, &y)| f(x, y))),
        }
        for ax in (0..r - 1).rev() {
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

/// `e^x` in f32 within 2 ulp (Cody–Waite reduction `x = n·ln 2 + r`, `|r| <= ln 2 / 2`, a
/// degree-6 polynomial, `2^n` built in the exponent bits; no branch, so loops over it
/// vectorize): what the float executor's exp, sigmoid, SiLU and softmax use. Saturates to
/// `+inf` above 88.72 and to 0 below -87.3 (no subnormal results); NaN stays NaN.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let xc = x.clamp(-87.3, 88.72);
    // n = round(x / ln 2), as a float (round half away from zero, branch-free).
    let n = libm::floorf(xc * core::f32::consts::LOG2_E + 0.5);
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    // e^r = 1 + r + r^2 (1/2 + r (1/6 + r (1/24 + r (1/120 + r (1/720 + r/5040))))).
    let p = 1.984_127e-4_f32;
    let p = p * r + 1.388_888_9e-3;
    let p = p * r + 8.333_334e-3;
    let p = p * r + 4.166_666_8e-2;
    let p = p * r + 0.166_666_67;
    let p = p * r + 0.5;
    let er = 1.0 + r + r * r * p;
    // 2^n for n in [-126, 128]: 2^min(n, 127) from the exponent bits, times 2 when n = 128.
    let n = n as i32;
    let n1 = n.min(127);
    let bits = ((n1 + 127).clamp(1, 254) as u32) << 23;
    let y = er * f32::from_bits(bits) * (1 + n - n1) as f32;
    let y = if x > 88.72 { f32::INFINITY } else { y };
    if x.is_nan() { x } else { y }
}

/// Logistic sigmoid `1 / (1 + e^-x)` in f32 ([`exp_f32`]).
#[inline(always)]
pub(crate) fn logistic(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// SiLU `x / (1 + e^-x)` in f32 ([`exp_f32`]; no cancellation in this form).
#[inline(always)]
pub(crate) fn silu(x: f32) -> f32 {
    x / (1.0 + exp_f32(-x))
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
        // Per-channel scale of an NHWC map (squeeze-and-excitation), a row broadcast on both sides.
        let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let y = binary_f32(BinaryOp::Mul, &x, &[1, 2, 2, 3], &[1.0, 10.0, 100.0], &[1, 1, 1, 3]).unwrap();
        let want: Vec<f32> = (0..12).map(|v| v as f32 * [1.0, 10.0, 100.0][v % 3]).collect();
        assert_eq!(y, want);
        let y = binary_f32(BinaryOp::Max, &[1.0, 5.0], &[2, 1], &[3.0, 0.0, 4.0], &[1, 3]).unwrap();
        assert_eq!(y, [3.0, 1.0, 4.0, 5.0, 5.0, 5.0]);
        let y = binary_f32(BinaryOp::Sub, &[1.0, 2.0], &[2, 1, 1], &[1.0; 0], &[1, 0]).unwrap();
        assert!(y.is_empty());
    }

    /// [`exp_f32`] against the correctly rounded `libm::expf` over its whole range: within 2
    /// ulp (relative 2.4e-7), saturating at both ends; sigmoid and SiLU within 4e-7 relative of
    /// the f64 formulas.
    #[test]
    fn fast_exp_is_accurate() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.5 {
            let (got, want) = (exp_f32(x), libm::expf(x));
            worst = worst.max(((f64::from(got) - f64::from(want)) / f64::from(want)).abs());
            let l = (1.0 / (1.0 + libm::exp(-f64::from(x)))) as f32;
            assert!((logistic(x) - l).abs() <= 4e-7 * l, "sigmoid {x}");
            let s = f64::from(x) / (1.0 + libm::exp(-f64::from(x)));
            assert!((f64::from(silu(x)) - s).abs() <= 4e-7 * s.abs(), "silu {x}");
            x += 0.013_7;
        }
        assert!(worst <= 2.4e-7, "exp_f32 worst relative error {worst:e}");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert_eq!(exp_f32(-100.0), 0.0f32.max(exp_f32(-100.0)));
        assert!(exp_f32(-100.0) < 1e-37);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
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
