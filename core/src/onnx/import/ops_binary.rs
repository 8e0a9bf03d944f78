//! Two-input elementwise ops beyond Add/Sub/Mul/Div: `Min`, `Max` (variadic in ONNX: a chain of
//! two-input [`Op::Minimum`] / [`Op::Maximum`] nodes, NumPy broadcasting at each step).

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
}
