//! `LayerNormalization` (opset 17): converted to the ops TFLite's converter writes for it, each
//! with an int8 kernel, so a transformer quantizes as they do:
//!
//! ```text
//! mean = Mean(x, axes)            d = x − mean          var = Mean(d · d, axes)
//! rstd = Pow(var + ε, −½)         y = d · rstd · scale + bias
//! ```
//!
//! over the axes from `axis` to the last. The nodes are named after the ONNX node
//! (`<name>/mean`, `/centered`, `/squared`, `/variance`, `/plus_epsilon`, `/rstd`, `/normalized`,
//! `/scaled`, `/shifted`), so the per-layer report and `--layer-observer` can name each.

use super::*;
use crate::graph::UnaryFn;

impl Builder {
    pub(super) fn layer_norm(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        let attrs = ctx.attrs();
        let axis = ctx.a(attrs.int_or("axis", -1))?;
        let eps = ctx.a(attrs.float_or("epsilon", 1e-5))?;
        let stash = ctx.a(attrs.int_or("stash_type", 1))?;
        if stash != 1 {
            return Err(ctx.unsupported(format!("LayerNormalization with stash_type {stash} (only 1, float32)")));
        }
        if !(eps.is_finite() && eps >= 0.0) {
            return Err(ctx.err(Kind::Malformed, format!("LayerNormalization with epsilon {eps}")));
        }
        self.check_unused_output(ctx, 1, "the mean")?;
        self.check_unused_output(ctx, 2, "the inverse standard deviation")?;
        let a0 = norm_axis(axis, r).map_err(|e| ctx.loc(e))?;
        // Graph axes holding ONNX axes a0.. (the activation may be stored in another order).
        let graph_axes: Vec<usize> = (0..r).filter(|&i| x.perm[i] >= a0).collect();
        let scale = self.input(ctx, 1)?.ok_or_else(|| ctx.err(Kind::Malformed, "LayerNormalization without scale"))?;
        let bias = self.input(ctx, 2)?;

        let base = if ctx.name().is_empty() { ctx.out_name(0) } else { String::from(ctx.name()) };
        let out = ctx.out_name(0);
        let part = |p: &str| format!("{base}/{p}");
        let mean_op = Op::Mean { axes: graph_axes.clone(), keep_dims: true };
        let mean = self.emit(ctx, &part("mean"), mean_op.clone(), vec![Some(x.id)], &part("mean"))?;
        let mean = Value::Act(Act { id: mean, perm: x.perm.clone() });
        let sub = Op::Sub { activation: FusedActivation::None };
        let mul = || Op::Mul { activation: FusedActivation::None };
        let add = || Op::Add { activation: FusedActivation::None };
        let d = self.binary_named(ctx, &part("centered"), sub, &Value::Act(x), &mean, &part("centered"))?;
        let sq = self.binary_named(ctx, &part("squared"), mul(), &d, &d, &part("squared"))?;
        let Value::Act(sq) = sq else { return Err(ctx.err(Kind::InvalidGraph, "the squares are not an activation")) };
        let var = self.emit(ctx, &part("variance"), mean_op, vec![Some(sq.id)], &part("variance"))?;
        let var = Value::Act(Act { id: var, perm: sq.perm });
        let e = Value::Const(Konst::f32(Vec::new(), vec![eps]));
        let ve = self.binary_named(ctx, &part("plus_epsilon"), add(), &var, &e, &part("plus_epsilon"))?;
        let Value::Act(ve) = ve else { return Err(ctx.err(Kind::InvalidGraph, "the variance is not an activation")) };
        let rstd = self.emit(ctx, &part("rstd"), Op::Unary(UnaryFn::Pow(-0.5)), vec![Some(ve.id)], &part("rstd"))?;
        let rstd = Value::Act(Act { id: rstd, perm: ve.perm });
        let last = if bias.is_some() { part("scaled") } else { out.clone() };
        let n = self.binary_named(ctx, &part("normalized"), mul(), &d, &rstd, &part("normalized"))?;
        let mut y = self.binary_named(ctx, &part("scaled"), mul(), &n, &scale, &last)?;
        if let Some(b) = bias {
            y = self.binary_named(ctx, &part("shifted"), add(), &y, &b, &out)?;
        }
        self.set(ctx, 0, y);
        Ok(())
    }
}
