//! Elementwise functions of one activation that run on the device as a 256-entry int8 table
//! ([`Op::Unary`](super::Op::Unary), `.mq` kind `LUT`): the ops TFLite Micro has no int8 kernel
//! for (ONNX `Exp`, `Sqrt`, `Erf`, `Neg`, `Softplus`, `Sin`, `Cos`, `Pow` with a constant
//! exponent, `Gelu`, and x·sigmoid(x) matched by `passes::fuse_silu`).
//!
//! [`UnaryFn::eval`] is the float function, in `f32` (the float executor and the table use the
//! same one); the int8 table is [`crate::kernels::unary_lut::table_s8`].

use core::fmt;

/// A float function of one value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UnaryFn {
    /// `e^x`.
    Exp,
    /// `√x` (NaN below 0).
    Sqrt,
    /// The error function.
    Erf,
    /// `−x`.
    Neg,
    /// `ln(1 + e^x)`.
    Softplus,
    /// `sin x`.
    Sin,
    /// `cos x`.
    Cos,
    /// `x^exponent`, the exponent a constant.
    Pow(f32),
    /// SiLU / swish: `x · sigmoid(x)`.
    Silu,
    /// GELU, exact (erf) form: `x · (1 + erf(x / √2)) / 2`.
    Gelu,
    /// GELU, tanh approximation: `x · (1 + tanh(√(2/π) · (x + 0.044715 x³))) / 2`.
    GeluTanh,
}

impl UnaryFn {
    /// The function at `x`, in `f32`.
    pub fn eval(self, x: f32) -> f32 {
        match self {
            UnaryFn::Exp => libm::expf(x),
            UnaryFn::Sqrt => libm::sqrtf(x),
            UnaryFn::Erf => libm::erff(x),
            UnaryFn::Neg => -x,
            UnaryFn::Softplus => {
                // ln(1 + e^x) without overflow for large x.
                if x > 20.0 { x + libm::log1pf(libm::expf(-x)) } else { libm::log1pf(libm::expf(x)) }
            }
            UnaryFn::Sin => libm::sinf(x),
            UnaryFn::Cos => libm::cosf(x),
            UnaryFn::Pow(e) => libm::powf(x, e),
            // In f64: 1 + erf and 1 + tanh cancel for negative x, which f32 would round away.
            UnaryFn::Silu => (f64::from(x) / (1.0 + libm::exp(-f64::from(x)))) as f32,
            UnaryFn::Gelu => {
                let x = f64::from(x);
                (0.5 * x * (1.0 + libm::erf(x * core::f64::consts::FRAC_1_SQRT_2))) as f32
            }
            UnaryFn::GeluTanh => {
                let x = f64::from(x);
                let k = libm::sqrt(2.0 / core::f64::consts::PI);
                (0.5 * x * (1.0 + libm::tanh(k * (x + 0.044715 * x * x * x)))) as f32
            }
        }
    }

    /// The function's name (ONNX's spelling where ONNX has the op).
    pub const fn name(self) -> &'static str {
        match self {
            UnaryFn::Exp => "Exp",
            UnaryFn::Sqrt => "Sqrt",
            UnaryFn::Erf => "Erf",
            UnaryFn::Neg => "Neg",
            UnaryFn::Softplus => "Softplus",
            UnaryFn::Sin => "Sin",
            UnaryFn::Cos => "Cos",
            UnaryFn::Pow(_) => "Pow",
            UnaryFn::Silu => "Silu",
            UnaryFn::Gelu => "Gelu",
            UnaryFn::GeluTanh => "GeluTanh",
        }
    }
}

impl fmt::Display for UnaryFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnaryFn::Pow(e) => write!(f, "Pow(exponent {e})"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_against_f64_formulas() {
        let xs = [-6.0f32, -2.5, -0.7, 0.0, 0.3, 1.0, 4.0, 25.0];
        for x in xs {
            let d = x as f64;
            let sig = 1.0 / (1.0 + (-d).exp());
            let cases: [(UnaryFn, f64); 8] = [
                (UnaryFn::Exp, d.exp()),
                (UnaryFn::Neg, -d),
                (UnaryFn::Softplus, d.exp().ln_1p()),
                (UnaryFn::Sin, d.sin()),
                (UnaryFn::Cos, d.cos()),
                (UnaryFn::Silu, d * sig),
                (UnaryFn::Gelu, 0.5 * d * (1.0 + libm::erf(d / core::f64::consts::SQRT_2))),
                (UnaryFn::Pow(2.0), d * d),
            ];
            for (f, want) in cases {
                let got = f.eval(x) as f64;
                assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "{f}({x}) = {got}, want {want}");
            }
        }
        assert!(UnaryFn::Sqrt.eval(-1.0).is_nan());
        assert_eq!(UnaryFn::Sqrt.eval(4.0), 2.0);
        assert!((UnaryFn::GeluTanh.eval(1.0) - 0.841_192).abs() < 1e-5);
    }
}
