//! Elementwise ops and activations: unary ops, broadcasting binary ops, Clip, Softmax.

use super::*;

impl Builder {
    pub(super) fn unary(&mut self, ctx: &Ctx, op: Op) -> Result<(), ConvertError> {
        let a = self.act_input(ctx, 0)?;
        let out = ctx.out_name(0);
        let id = self.emit(ctx, ctx.name(), op, vec![Some(a.id)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: a.perm }));
        Ok(())
    }

    /// Elementwise binary op with NumPy broadcasting, in the layout of the first full-rank
    /// activation operand.
    pub(super) fn binary(&mut self, ctx: &Ctx, op: Op, a: &Value, b: &Value, out: &str) -> Result<Value, ConvertError> {
        self.binary_named(ctx, ctx.name(), op, a, b, out)
    }

    /// [`Builder::binary`] with the node named `name` (an op converted to several nodes).
    pub(super) fn binary_named(
        &mut self,
        ctx: &Ctx,
        name: &str,
        op: Op,
        a: &Value,
        b: &Value,
        out: &str,
    ) -> Result<Value, ConvertError> {
        let rank_of = |s: &Self, v: &Value| match v {
            Value::Const(k) => k.shape.len(),
            Value::Act(x) => s.shape(x.id).len(),
        };
        let r = rank_of(self, a).max(rank_of(self, b));
        let target = [a, b]
            .iter()
            .find_map(|v| match v {
                Value::Act(x) if x.perm.len() == r => Some(x.perm.clone()),
                _ => None,
            })
            .unwrap_or_else(|| layout::identity(r));
        let mut ids = Vec::with_capacity(2);
        for (k, v) in [a, b].into_iter().enumerate() {
            let id = match v {
                Value::Act(x) if x.perm.len() == r => self.in_order(x, &target, out)?,
                Value::Act(x) => {
                    // Lower rank: pad with leading 1s (ONNX order), then reorder.
                    let plain = self.plain(x, out)?;
                    if layout::is_identity(&target) {
                        plain
                    } else {
                        let mut s = vec![1; r - x.perm.len()];
                        s.extend(self.shape(plain));
                        let name = format!("{out}/expand{k}");
                        let id = self.emit(ctx, &name, Op::Reshape { new_shape: s }, vec![Some(plain)], &name)?;
                        self.in_order(&Act { id, perm: layout::identity(r) }, &target, out)?
                    }
                }
                Value::Const(c) => {
                    let mut s = vec![1; r - c.shape.len()];
                    s.extend_from_slice(&c.shape);
                    let mut t = ctx.a(c.reshaped(s).and_then(|c| c.transpose(&target)))?;
                    // Drop leading 1s (NumPy broadcasting restores them), keep rank >= 1.
                    let lead = t.shape.iter().take_while(|&&d| d == 1).count().min(t.shape.len().saturating_sub(1));
                    t.shape.drain(..lead);
                    self.const_tensor(ctx, &t, &format!("{out}/operand{k}"))?
                }
            };
            ids.push(Some(id));
        }
        let id = self.emit(ctx, name, op, ids, out)?;
        Ok(Value::Act(Act { id, perm: target }))
    }

    pub(super) fn clip(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let bound = |s: &Self, i: usize, attr: &str| -> Result<Option<f32>, ConvertError> {
            match s.const_input(ctx, i, attr)? {
                Some(k) => ctx.a(k.scalar_f32()).map(Some),
                None => ctx.a(ctx.attrs().float(attr)),
            }
        };
        let lo = bound(self, 1, "min")?.unwrap_or(f32::NEG_INFINITY);
        let hi = bound(self, 2, "max")?.unwrap_or(f32::INFINITY);
        let op = if lo == 0.0 && hi == 6.0 {
            Op::Relu6
        } else if lo == 0.0 && hi >= f32::MAX {
            Op::Relu
        } else if lo.is_nan() || hi.is_nan() {
            return Err(ctx.unsupported(format!("Clip to [{lo}, {hi}]: a NaN bound")));
        } else {
            // Any other constant bounds: a clamp (`.mq` kind RELU with the bounds quantized).
            // ONNX Runtime returns `max` everywhere when min > max; so does `max(min).min(max)`.
            Op::Clip { min: lo, max: hi }
        };
        self.unary(ctx, op)
    }

    pub(super) fn softmax(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let s = self.onnx_shape(&x);
        let r = s.len();
        let default = if ctx.opset >= 13 { -1 } else { 1 };
        let axis = ctx.a(norm_axis(ctx.attrs().int_or("axis", default)?, r))?;
        let out = ctx.out_name(0);
        let legacy_2d = ctx.opset < 13 && s[axis + 1..].iter().any(|&d| d != 1);
        if legacy_2d {
            // Opset < 13: softmax over everything from `axis` on, flattened.
            let a: usize = s[..axis].iter().product();
            let b: usize = s[axis..].iter().product();
            let xid = self.plain(&x, &out)?;
            let flat = self.emit(
                ctx,
                &format!("{out}/flatten"),
                Op::Reshape { new_shape: vec![a, b] },
                vec![Some(xid)],
                &format!("{out}/flatten"),
            )?;
            let sm =
                self.emit(ctx, ctx.name(), Op::Softmax { beta: 1.0 }, vec![Some(flat)], &format!("{out}/softmax"))?;
            let id = self.emit(
                ctx,
                &format!("{out}/unflatten"),
                Op::Reshape { new_shape: s.clone() },
                vec![Some(sm)],
                &out,
            )?;
            self.set(ctx, 0, Value::Act(Act { id, perm: layout::identity(r) }));
            return Ok(());
        }
        // Softmax over the last graph axis: move `axis` there.
        let mut target: Vec<usize> = x.perm.iter().copied().filter(|&p| p != axis).collect();
        target.push(axis);
        let xid = self.in_order(&x, &target, &out)?;
        let id = self.emit(ctx, ctx.name(), Op::Softmax { beta: 1.0 }, vec![Some(xid)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: target }));
        Ok(())
    }
}
