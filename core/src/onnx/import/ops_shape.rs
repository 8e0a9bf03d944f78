//! Shape and data-movement ops: reshapes, Squeeze/Unsqueeze, Concat, Pad, ReduceMean.

use super::*;

impl Builder {
    /// ONNX reshape of `a` to `target` (ONNX order): a graph reshape of the data in ONNX order.
    pub(super) fn reshape_to(&mut self, ctx: &Ctx, a: &Act, target: Vec<usize>) -> Result<(), ConvertError> {
        let out = ctx.out_name(0);
        let gs = self.shape(a.id);
        let src = if layout::is_data_preserving(&gs, &layout::inverse(&a.perm)) { a.id } else { self.plain(a, &out)? };
        let r = target.len();
        let id = self.emit(ctx, ctx.name(), Op::Reshape { new_shape: target }, vec![Some(src)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::identity(r) }));
        Ok(())
    }

    /// Removes ONNX axes `removed` (sorted) from a layout.
    pub(super) fn drop_axes(perm: &[usize], removed: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let graph_axes: Vec<usize> = (0..perm.len()).filter(|&i| removed.contains(&perm[i])).collect();
        let new_perm = perm
            .iter()
            .filter(|p| !removed.contains(p))
            .map(|&p| p - removed.iter().filter(|&&r| r < p).count())
            .collect();
        (graph_axes, new_perm)
    }

    pub(super) fn squeeze(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let s = self.onnx_shape(&x);
        let axes_in = if ctx.opset >= 13 { self.const_input(ctx, 1, "the axes")? } else { None };
        let axes = ctx.a(fold::axes_of(&ctx.attrs(), axes_in.as_ref(), "axes"))?;
        let removed = ctx.a(fold::squeeze_axes(&s, axes.as_deref()))?;
        let (graph_axes, perm) = Self::drop_axes(&x.perm, &removed);
        let out = ctx.out_name(0);
        let id = self.emit(ctx, ctx.name(), Op::Squeeze { axes: graph_axes }, vec![Some(x.id)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm }));
        Ok(())
    }

    pub(super) fn unsqueeze(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let s = self.onnx_shape(&x);
        let axes_in = if ctx.opset >= 13 { self.const_input(ctx, 1, "the axes")? } else { None };
        let axes = ctx
            .a(fold::axes_of(&ctx.attrs(), axes_in.as_ref(), "axes"))?
            .ok_or_else(|| ctx.err(Kind::Malformed, "Unsqueeze without axes"))?;
        let new_shape = ctx.a(fold::unsqueeze_shape(&s, &axes))?;
        let gs = self.shape(x.id);
        if layout::is_data_preserving(&gs, &layout::inverse(&x.perm)) {
            return self.reshape_to(ctx, &x, new_shape);
        }
        // Keep the graph order; the new extent-1 axes go last in the graph.
        let r = new_shape.len();
        let inserted: Vec<usize> = {
            let mut v: Vec<usize> = fold::norm_axes(&axes, r).map_err(|e| ctx.loc(e))?;
            crate::vecmap::sort_usizes(&mut v);
            v
        };
        let old_to_new: Vec<usize> = (0..r).filter(|i| !inserted.contains(i)).collect();
        let mut perm: Vec<usize> = x.perm.iter().map(|&p| old_to_new.get(p).copied().unwrap_or(0)).collect();
        perm.extend(inserted.iter().copied());
        let mut gshape = gs;
        gshape.extend(core::iter::repeat_n(1, inserted.len()));
        let out = ctx.out_name(0);
        let id = self.emit(ctx, ctx.name(), Op::Reshape { new_shape: gshape }, vec![Some(x.id)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm }));
        Ok(())
    }

    pub(super) fn concat(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let mut vals = Vec::new();
        for i in 0..ctx.node.input.len() {
            if let Some(v) = self.input(ctx, i)? {
                vals.push(v);
            }
        }
        let target = vals
            .iter()
            .find_map(|v| if let Value::Act(a) = v { Some(a.perm.clone()) } else { None })
            .ok_or_else(|| ctx.err(Kind::Malformed, "Concat without inputs"))?;
        let r = target.len();
        let axis = ctx.a(norm_axis(
            ctx.a(ctx.attrs().int("axis"))?.ok_or_else(|| ctx.err(Kind::Malformed, "Concat without axis"))?,
            r,
        ))?;
        let out = ctx.out_name(0);
        let mut ids = Vec::new();
        for (k, v) in vals.iter().enumerate() {
            ids.push(Some(match v {
                Value::Act(a) if a.perm.len() == r => self.in_order(a, &target, &out)?,
                Value::Act(_) => return Err(ctx.err(Kind::Malformed, "Concat inputs of different ranks")),
                Value::Const(c) => {
                    let t = ctx.a(c.transpose(&target))?;
                    self.const_tensor(ctx, &t, &format!("{out}/input{k}"))?
                }
            }));
        }
        let gaxis = target.iter().position(|&p| p == axis).unwrap_or(0);
        let id = self.emit(
            ctx,
            ctx.name(),
            Op::Concatenation { axis: gaxis, activation: FusedActivation::None },
            ids,
            &out,
        )?;
        self.set(ctx, 0, Value::Act(Act { id, perm: target }));
        Ok(())
    }

    pub(super) fn pad(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let mode = ctx.a(ctx.attrs().string("mode"))?.unwrap_or_else(|| "constant".to_string());
        if mode == "reflect" || mode == "edge" {
            return self.mirror_pad(ctx, &mode);
        }
        if mode != "constant" {
            return Err(ctx.unsupported(format!("Pad mode {mode:?}: only \"constant\", \"reflect\" and \"edge\"")));
        }
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        let pads: Vec<i64> = match self.const_input(ctx, 1, "pads")? {
            Some(k) => ctx.a(k.as_i64().map(|v| v.to_vec()))?,
            None => ctx.a(ctx.attrs().ints("pads"))?.unwrap_or_default(),
        };
        let value = match self.const_input(ctx, 2, "the constant value")? {
            Some(k) => ctx.a(k.scalar_f32())?,
            None => ctx.a(ctx.attrs().float_or("value", 0.0))?,
        };
        // Opset 18: pads apply to `axes` only.
        let axes: Vec<usize> = match self.const_input(ctx, 3, "the axes")? {
            Some(k) => ctx.a(k.as_i64().and_then(|v| fold::norm_axes(v, r)))?,
            None => (0..r).collect(),
        };
        if pads.len() != 2 * axes.len() || pads.iter().any(|&p| p < 0) {
            return Err(ctx.unsupported(format!(
                "pads {pads:?} for {} axes: expected 2 non-negative values per axis",
                axes.len()
            )));
        }
        let mut onnx_pads = vec![[0usize; 2]; r];
        for (k, &a) in axes.iter().enumerate() {
            onnx_pads[a] = [pads[k] as usize, pads[k + axes.len()] as usize];
        }
        let paddings = x.perm.iter().map(|&p| onnx_pads[p]).collect();
        let out = ctx.out_name(0);
        let cv = if value != 0.0 {
            Some(self.const_tensor(ctx, &Konst::f32(vec![1], vec![value]), &format!("{out}/value"))?)
        } else {
            None
        };
        let mut inputs = vec![Some(x.id)];
        if cv.is_some() {
            inputs.push(cv);
        }
        let id = self.emit(ctx, ctx.name(), Op::Pad { paddings }, inputs, &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: x.perm }));
        Ok(())
    }

    pub(super) fn reduce_mean(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        let attrs = ctx.attrs();
        let keep = ctx.a(attrs.int_or("keepdims", 1))? != 0;
        let axes: Option<Vec<i64>> = if ctx.opset >= 18 {
            self.const_input(ctx, 1, "the axes")?.map(|k| ctx.a(k.as_i64().map(|v| v.to_vec()))).transpose()?
        } else {
            ctx.a(attrs.ints("axes"))?
        };
        let noop_empty = ctx.opset >= 18 && ctx.a(attrs.int_or("noop_with_empty_axes", 0))? != 0;
        let mut onnx_axes: Vec<usize> = match axes {
            Some(a) if !a.is_empty() => fold::norm_axes(&a, r).map_err(|e| ctx.loc(e))?,
            _ if noop_empty => {
                let a = x.clone();
                self.set(ctx, 0, Value::Act(a));
                return Ok(());
            }
            _ => (0..r).collect(),
        };
        crate::vecmap::sort_usizes(&mut onnx_axes);
        onnx_axes.dedup();
        let mut graph_axes: Vec<usize> = (0..r).filter(|&i| onnx_axes.contains(&x.perm[i])).collect();
        crate::vecmap::sort_usizes(&mut graph_axes);
        let perm = if keep { x.perm.clone() } else { Self::drop_axes(&x.perm, &onnx_axes).1 };
        let out = ctx.out_name(0);
        let id = self.emit(ctx, ctx.name(), Op::Mean { axes: graph_axes, keep_dims: keep }, vec![Some(x.id)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm }));
        Ok(())
    }
}
