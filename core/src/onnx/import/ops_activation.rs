//! Elementwise float functions that run as a table in int8 ([`Op::Unary`]): `Exp`, `Sqrt`,
//! `Erf`, `Neg`, `Softplus`, `Sin`, `Cos`, `Gelu` (opset 20, `approximate` "none" or "tanh") and
//! `Pow` with a constant exponent (one value).

use super::*;
use crate::graph::UnaryFn;

impl Builder {
    /// One of the functions of [`UnaryFn`] by its ONNX op type.
    pub(super) fn unary_fn(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let f = match ctx.op {
            "Exp" => UnaryFn::Exp,
            "Sqrt" => UnaryFn::Sqrt,
            "Erf" => UnaryFn::Erf,
            "Neg" => UnaryFn::Neg,
            "Softplus" => UnaryFn::Softplus,
            "Sin" => UnaryFn::Sin,
            "Cos" => UnaryFn::Cos,
            "Gelu" => match ctx.a(ctx.attrs().string("approximate"))?.as_deref() {
                None | Some("none") => UnaryFn::Gelu,
                Some("tanh") => UnaryFn::GeluTanh,
                Some(other) => {
                    return Err(ctx.err(Kind::Malformed, format!("Gelu with approximate = \"{other}\"")));
                }
            },
            "Pow" => {
                let e = self
                    .const_input(ctx, 1, "the exponent")?
                    .ok_or_else(|| ctx.err(Kind::Malformed, "Pow without exponent"))?;
                let e = ctx.a(e.scalar_f32())?;
                if !e.is_finite() {
                    return Err(ctx.err(Kind::Malformed, format!("Pow with exponent {e}")));
                }
                UnaryFn::Pow(e)
            }
            other => return Err(ctx.unsupported(format!("{other} as a table"))),
        };
        self.unary(ctx, Op::Unary(f))
    }
}
