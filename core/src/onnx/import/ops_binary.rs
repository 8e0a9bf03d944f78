//! Two-input elementwise ops beyond Add/Sub/Mul/Div: `Min`, `Max` (variadic in ONNX: a chain of
//! two-input [`Op::Minimum`] / [`Op::Maximum`] nodes, NumPy broadcasting at each step) and
//! `PRelu` ([`Op::Prelu`]).

use super::*;

impl Builder {
    /// ONNX `Min` / `Max` of one or more inputs: one input is the identity; `n` inputs become
    /// `n - 1` two-input nodes, left to right.
    pub(super) fn min_max(&mut self, ctx: &Ctx, op: Op) -> Result<(), ConvertError> {
        let n = ctx.node.input.len();
        let mut acc = self.input(ctx, 0)?.ok_or_else(|| ctx.err(Kind::Malformed, "input 0 is missing"))?;
        for k in 1..n {
            let b = self.input(ctx, k)?.ok_or_else(|| ctx.err(Kind::Malformed, format!("input {k} is missing")))?;
            let out = if k + 1 == n { ctx.out_name(0) } else { format!("{}/step{k}", ctx.out_name(0)) };
            acc = self.binary(ctx, op.clone(), &acc, &b, &out)?;
        }
        self.set(ctx, 0, acc);
        Ok(())
    }

    /// ONNX `PRelu(X, slope)`: the slope broadcasts unidirectionally to `X` (e.g. `[C, 1, 1]`
    /// against NCHW), so the output has `X`'s shape; the shared broadcasting of
    /// [`Builder::binary`] moves it into the activation's layout (NCHW → NHWC: `[1, 1, C]`).
    pub(super) fn prelu(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let slope = self.input(ctx, 1)?.ok_or_else(|| ctx.err(Kind::Malformed, "PRelu without slope"))?;
        let xs = self.onnx_shape(&x);
        let ss: Vec<usize> = match &slope {
            Value::Const(k) => k.shape.clone(),
            Value::Act(a) => self.onnx_shape(a),
        };
        let unidirectional =
            ss.len() <= xs.len() && ss.iter().rev().zip(xs.iter().rev()).all(|(&s, &d)| s == d || s == 1);
        if !unidirectional {
            return Err(ctx.err(Kind::Malformed, format!("slope {ss:?} does not broadcast to X {xs:?}")));
        }
        let out = ctx.out_name(0);
        let v = self.binary(ctx, Op::Prelu, &Value::Act(x), &slope, &out)?;
        self.set(ctx, 0, v);
        Ok(())
    }
}
