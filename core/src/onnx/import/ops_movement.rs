//! Data movement on activations: `Slice`, `Split` (one [`Op::StridedSlice`] per output: the graph's
//! ops have one output, and a split is a copy either way), `DepthToSpace`, `SpaceToDepth`, `Pad` in
//! `reflect` and `edge` modes, `Gather` by constant indices, `Tile` and
//! `Expand` (one [`Op::Tile`]).
//!
//! The activation keeps its graph layout (`Act::perm`): the model's axes are mapped to graph axes,
//! and the output has the input's layout.

use super::*;
use crate::graph::StridedSlice;
use crate::kernels::mirror_pad::MirrorPadMode;

/// ONNX `Slice`'s resolution of one axis of extent `dim` (the operator's spec: negative
/// indices count from the end, then starts clamp into `[0, dim]` (`[0, dim - 1]` for negative
/// steps) and ends into `[0, dim]` (`[-1, dim - 1]`)): `(start, count)`.
pub(super) fn onnx_slice_axis(dim: usize, start: i64, end: i64, step: i64) -> (usize, usize) {
    let n = dim as i128;
    let (mut s, mut e, st) = (i128::from(start), i128::from(end), i128::from(step));
    if s < 0 {
        s += n;
    }
    if e < 0 {
        e += n;
    }
    let (s, e) = if st > 0 { (s.clamp(0, n), e.clamp(0, n)) } else { (s.clamp(0, n - 1), e.clamp(-1, n - 1)) };
    let span = if st > 0 { e - s } else { s - e };
    let a = st.abs();
    let count = if span <= 0 || n == 0 { 0 } else { (span + a - 1) / a };
    (if count == 0 { 0 } else { s as usize }, count as usize)
}

impl Builder {
    /// Emits the strided slice of `x` taking, per model axis `a`, `(start, step, count)` =
    /// `axes[a]`, and binds it to output `k` of the node.
    fn emit_slice(
        &mut self,
        ctx: &Ctx,
        x: &Act,
        onnx_axes: &[(usize, i64, usize)],
        k: usize,
    ) -> Result<(), ConvertError> {
        let gs = self.shape(x.id);
        let mut starts = Vec::with_capacity(gs.len());
        let mut steps = Vec::with_capacity(gs.len());
        let mut counts = Vec::with_capacity(gs.len());
        for (i, &a) in x.perm.iter().enumerate() {
            let (s, st, c) = onnx_axes.get(a).copied().unwrap_or((0, 1, gs.get(i).copied().unwrap_or(0)));
            if c == 0 {
                return Err(ctx.unsupported(format!("an empty slice (model axis {a} has no element left)")));
            }
            starts.push(s);
            steps.push(st);
            counts.push(c);
        }
        let out = ctx.out_name(k);
        let name = if k == 0 { ctx.name().to_string() } else { format!("{}/{k}", ctx.name()) };
        let op = Op::StridedSlice(StridedSlice::new(starts, steps, counts));
        let id = self.emit(ctx, &name, op, vec![Some(x.id)], &out)?;
        self.set(ctx, k, Value::Act(Act { id, perm: x.perm.clone() }));
        Ok(())
    }

    /// The model-axis view of an activation: `(start 0, step 1, count = extent)` per axis.
    fn whole(&self, x: &Act) -> Vec<(usize, i64, usize)> {
        self.onnx_shape(x).into_iter().map(|d| (0, 1, d)).collect()
    }

    /// ONNX `Slice` of an activation with constant starts, ends, axes and steps.
    pub(super) fn slice(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        let list = |b: &Self, i: usize, what: &str, attr: &str| -> Result<Option<Vec<i64>>, ConvertError> {
            if ctx.opset >= 10 {
                b.const_input(ctx, i, what)?.map(|k| ctx.a(k.as_i64().map(<[i64]>::to_vec))).transpose()
            } else {
                ctx.a(ctx.attrs().ints(attr))
            }
        };
        let starts =
            list(self, 1, "the starts", "starts")?.ok_or_else(|| ctx.err(Kind::Malformed, "Slice without starts"))?;
        let ends = list(self, 2, "the ends", "ends")?.ok_or_else(|| ctx.err(Kind::Malformed, "Slice without ends"))?;
        let axes = match list(self, 3, "the axes", "axes")? {
            Some(a) => fold::norm_axes(&a, r).map_err(|e| ctx.loc(e))?,
            None => (0..starts.len()).collect(),
        };
        let steps = if ctx.opset >= 10 { list(self, 4, "the steps", "steps")? } else { None };
        let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
        if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
            return Err(ctx.err(Kind::Malformed, "Slice starts, ends, axes and steps differ in length"));
        }
        let mut per_axis = self.whole(&x);
        let shape = self.onnx_shape(&x);
        for (k, &a) in axes.iter().enumerate() {
            if steps[k] == 0 {
                return Err(ctx.err(Kind::Malformed, "Slice step 0"));
            }
            let (s, c) = onnx_slice_axis(shape.get(a).copied().unwrap_or(0), starts[k], ends[k], steps[k]);
            if let Some(slot) = per_axis.get_mut(a) {
                *slot = (s, steps[k], c);
            }
        }
        self.emit_slice(ctx, &x, &per_axis, 0)
    }

    /// ONNX `Split` of an activation: one strided slice per output.
    pub(super) fn split(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        let axis = ctx.a(norm_axis(ctx.a(ctx.attrs().int_or("axis", 0))?, r))?;
        let dim = self.onnx_shape(&x).get(axis).copied().unwrap_or(0);
        let n_out = ctx.node.output.len();
        let given = if ctx.opset >= 13 {
            self.const_input(ctx, 1, "the split sizes")?.map(|k| ctx.a(k.as_i64().map(<[i64]>::to_vec))).transpose()?
        } else {
            ctx.a(ctx.attrs().ints("split"))?
        };
        let sizes: Vec<usize> = match given {
            Some(v) => {
                if v.len() != n_out || v.iter().any(|&s| s < 0) || v.iter().sum::<i64>() != dim as i64 {
                    return Err(ctx.err(
                        Kind::Malformed,
                        format!("split sizes {v:?} do not cut extent {dim} into {n_out} outputs"),
                    ));
                }
                v.iter().map(|&s| s as usize).collect()
            }
            None => {
                let n = match ctx.a(ctx.attrs().int("num_outputs"))? {
                    Some(n) if n as usize == n_out => n_out,
                    Some(n) => {
                        return Err(ctx.err(Kind::Malformed, format!("num_outputs {n} but {n_out} outputs")));
                    }
                    None => n_out,
                };
                if n == 0 {
                    return Err(ctx.err(Kind::Malformed, "Split without outputs"));
                }
                // Equal parts (opset 18: ceil(dim / n) each, the last one smaller).
                let part = dim.div_ceil(n);
                (0..n).map(|k| part.min(dim.saturating_sub(k * part))).collect()
            }
        };
        let mut offset = 0;
        for (k, &size) in sizes.iter().enumerate() {
            if ctx.node.output.get(k).is_some_and(|o| !o.is_empty()) {
                let mut per_axis = self.whole(&x);
                if let Some(slot) = per_axis.get_mut(axis) {
                    *slot = (offset, 1, size);
                }
                self.emit_slice(ctx, &x, &per_axis, k)?;
            }
            offset += size;
        }
        Ok(())
    }

    /// ONNX `DepthToSpace` (`DCR` or `CRD`) / `SpaceToDepth` of a 4-D NCHW activation: the graph
    /// op runs NHWC.
    pub(super) fn space_depth(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        if x.perm.len() != 4 {
            return Err(ctx.unsupported(format!("{} of a rank-{} tensor (4-D NCHW only)", ctx.op, x.perm.len())));
        }
        let block = ctx.a(ctx.attrs().int("blocksize"))?.ok_or_else(|| ctx.err(Kind::Malformed, "no blocksize"))?;
        let block = usize::try_from(block)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| ctx.err(Kind::Malformed, format!("blocksize {block}")))?;
        let op = if ctx.op == "SpaceToDepth" {
            Op::SpaceToDepth { block }
        } else {
            let mode = ctx.a(ctx.attrs().string("mode"))?.unwrap_or_else(|| "DCR".to_string());
            match mode.as_str() {
                "DCR" => Op::DepthToSpace { block, crd: false },
                "CRD" => Op::DepthToSpace { block, crd: true },
                m => return Err(ctx.err(Kind::Malformed, format!("DepthToSpace mode {m:?}"))),
            }
        };
        const NHWC: [usize; 4] = [0, 2, 3, 1];
        let out = ctx.out_name(0);
        let src = self.in_order(&x, &NHWC, &out)?;
        let id = self.emit(ctx, ctx.name(), op, vec![Some(src)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: NHWC.to_vec() }));
        Ok(())
    }

    /// ONNX `Pad` in `reflect` or `edge` mode (constant pads, optional axes).
    pub(super) fn mirror_pad(&mut self, ctx: &Ctx, mode: &str) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        let pads: Vec<i64> = match self.const_input(ctx, 1, "pads")? {
            Some(k) => ctx.a(k.as_i64().map(<[i64]>::to_vec))?,
            None => ctx.a(ctx.attrs().ints("pads"))?.unwrap_or_default(),
        };
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
            if let Some(slot) = onnx_pads.get_mut(a) {
                *slot = [pads[k] as usize, pads[k + axes.len()] as usize];
            }
        }
        let paddings = x.perm.iter().map(|&p| onnx_pads.get(p).copied().unwrap_or([0, 0])).collect();
        let mode = if mode == "edge" { MirrorPadMode::Edge } else { MirrorPadMode::Reflect };
        let out = ctx.out_name(0);
        let id = self.emit(ctx, ctx.name(), Op::MirrorPad { paddings, mode }, vec![Some(x.id)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: x.perm }));
        Ok(())
    }

    /// ONNX `Gather` of an activation by constant indices (negative ones count from the end).
    pub(super) fn gather(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = match self.input(ctx, 0)? {
            Some(Value::Act(a)) => a,
            Some(Value::Const(_)) => {
                return Err(ctx.unsupported(
                    "Gather of a constant table by run-time indices (an embedding lookup): the runtime's \
                     activations are int8 or int16, not integer indices",
                ));
            }
            None => return Err(ctx.err(Kind::Malformed, "input 0 is missing")),
        };
        let k = self
            .const_input(ctx, 1, "the indices")?
            .ok_or_else(|| ctx.err(Kind::Malformed, "Gather without indices"))?;
        let r = x.perm.len();
        let axis = ctx.a(norm_axis(ctx.a(ctx.attrs().int_or("axis", 0))?, r))?;
        let n = self.onnx_shape(&x).get(axis).copied().unwrap_or(0) as i64;
        let mut indices = Vec::new();
        for &i in ctx.a(k.as_i64())? {
            let j = if i < 0 { i + n } else { i };
            if !(0..n).contains(&j) {
                return Err(ctx.err(Kind::Malformed, format!("Gather index {i} out of range for extent {n}")));
            }
            indices.push(j as usize);
        }
        let indices_shape = k.shape.clone();
        let out = ctx.out_name(0);
        // One index axis keeps the layout; otherwise gather in the model's order.
        let (src, gaxis, perm) = if indices_shape.len() == 1 {
            let g = x.perm.iter().position(|&p| p == axis).unwrap_or(axis);
            (x.id, g, x.perm.clone())
        } else if indices_shape.is_empty() {
            let g = x.perm.iter().position(|&p| p == axis).unwrap_or(axis);
            (x.id, g, Self::drop_axes(&x.perm, &[axis]).1)
        } else {
            (self.plain(&x, &out)?, axis, layout::identity(r - 1 + indices_shape.len()))
        };
        let op = Op::Gather { axis: gaxis, indices, indices_shape };
        let id = self.emit(ctx, ctx.name(), op, vec![Some(src)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm }));
        Ok(())
    }

    /// ONNX `Tile` (constant repeats) and `Expand` (constant shape) of an activation.
    pub(super) fn tile(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let what = if ctx.op == "Tile" { "the repeats" } else { "the shape" };
        let k = self.const_input(ctx, 1, what)?.ok_or_else(|| ctx.err(Kind::Malformed, format!("no {what}")))?;
        let v = ctx.a(k.as_i64())?;
        let s = self.onnx_shape(&x);
        let target: Vec<usize> = if ctx.op == "Tile" {
            if v.len() != s.len() || v.iter().any(|&m| m < 1) {
                return Err(ctx.err(Kind::Malformed, format!("Tile repeats {v:?} for input shape {s:?}")));
            }
            s.iter().zip(v).map(|(&d, &m)| d.saturating_mul(m as usize)).collect()
        } else {
            let want: Vec<usize> = v.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect();
            if v.iter().any(|&d| d < 0) {
                return Err(ctx.err(Kind::Malformed, format!("Expand shape {v:?}")));
            }
            crate::graph::broadcast_shapes(&s, &want).ok_or_else(|| {
                ctx.err(Kind::Malformed, format!("Expand of {s:?} to {want:?}: shapes do not broadcast"))
            })?
        };
        if target == s {
            self.set(ctx, 0, Value::Act(x));
            return Ok(());
        }
        let out = ctx.out_name(0);
        let (src, shape, perm) = if target.len() == s.len() {
            let shape = x.perm.iter().map(|&p| target.get(p).copied().unwrap_or(1)).collect();
            (x.id, shape, x.perm.clone())
        } else {
            let r = target.len();
            (self.plain(&x, &out)?, target, layout::identity(r))
        };
        let id = self.emit(ctx, ctx.name(), Op::Tile { shape }, vec![Some(src)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm }));
        Ok(())
    }
}
