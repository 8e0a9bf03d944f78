//! Conv, Gemm/MatMul (fully connected), BatchNormalization and pooling.

use super::*;
use crate::graph::{PaddingValues, TransposeConv2d};

/// How a `Pad`/conv/pool pads, from ONNX `auto_pad` and `pads` (2-D: `[top, left, bottom, right]`).
pub(super) fn resolve_padding(
    ctx: &Ctx,
    auto_pad: &str,
    pads: &[i64],
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    input: [usize; 2],
) -> Result<Padding, ConvertError> {
    match auto_pad {
        "" | "NOTSET" => {
            let p: Vec<usize> = match pads {
                [] => vec![0; 4],
                [a, b, c, d] if *a >= 0 && *b >= 0 && *c >= 0 && *d >= 0 => {
                    vec![*a as usize, *b as usize, *c as usize, *d as usize]
                }
                _ => return Err(ctx.unsupported(format!("pads {pads:?}: expected 4 non-negative values"))),
            };
            Ok(if p.iter().all(|&x| x == 0) {
                Padding::Valid
            } else {
                Padding::Explicit(PaddingValues { top: p[0], left: p[1], bottom: p[2], right: p[3] })
            })
        }
        "VALID" => Ok(Padding::Valid),
        // TFLite's SAME puts the smaller half first: ONNX SAME_UPPER.
        "SAME_UPPER" => Ok(Padding::Same),
        "SAME_LOWER" => {
            let mut pad = [0usize; 4];
            for a in 0..2 {
                let out = input[a].div_ceil(stride[a].max(1));
                let eff = (kernel[a].saturating_sub(1)) * dilation[a] + 1;
                let total = ((out.saturating_sub(1)) * stride[a] + eff).saturating_sub(input[a]);
                pad[a] = total - total / 2;
                pad[a + 2] = total / 2;
            }
            Ok(Padding::Explicit(PaddingValues { top: pad[0], left: pad[1], bottom: pad[2], right: pad[3] }))
        }
        other => Err(ctx.unsupported(format!("auto_pad {other:?}"))),
    }
}

pub(super) fn pair(ctx: &Ctx, v: Option<Vec<i64>>, default: usize, what: &str) -> Result<[usize; 2], ConvertError> {
    match v.as_deref() {
        None | Some([]) => Ok([default, default]),
        Some([a, b]) if *a > 0 && *b > 0 => Ok([*a as usize, *b as usize]),
        Some(other) => Err(ctx.unsupported(format!("{what} {other:?}: expected 2 positive values (2-D only)"))),
    }
}

impl Builder {
    pub(super) fn conv(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let x_shape = self.onnx_shape(&x);
        // A 1-D convolution ([N, C, W], Conv1d) runs as a 2-D one over [N, C, 1, W].
        let one_d = x_shape.len() == 3;
        if x_shape.len() != 4 && !one_d {
            return Err(ctx.unsupported(format!(
                "Conv of a rank-{} input {x_shape:?}: only 1-D and 2-D convolutions (NCW, NCHW) are supported",
                x_shape.len()
            )));
        }
        let xs = if one_d { vec![x_shape[0], x_shape[1], 1, x_shape[2]] } else { x_shape.clone() };
        let mut w =
            self.const_input(ctx, 1, "the weight")?.ok_or_else(|| ctx.err(Kind::Malformed, "Conv without weights"))?;
        if let (true, &[m, cg, kw]) = (one_d, w.shape.as_slice()) {
            w = ctx.a(w.reshaped(vec![m, cg, 1, kw]))?;
        }
        let bias = self.const_input(ctx, 2, "the bias")?;
        let attrs = ctx.attrs();
        let group = ctx.a(attrs.int_or("group", 1))?;
        // 1-D attributes as the 2-D ones of the [1, W] plane.
        let as_2d = |v: Option<Vec<i64>>, fill: i64| -> Option<Vec<i64>> {
            match (one_d, v) {
                (true, Some(v)) if v.len() == 1 => Some(vec![fill, v[0]]),
                (true, Some(v)) if v.len() == 2 => Some(vec![fill, v[0], fill, v[1]]),
                (_, v) => v,
            }
        };
        let ws = w.shape.clone();
        let (m, cg, kh, kw) = match ws.as_slice() {
            &[m, cg, kh, kw] => (m, cg, kh, kw),
            _ => {
                return Err(
                    ctx.err(Kind::Malformed, format!("Conv weights of shape {ws:?}, expected [M, C/group, kH, kW]"))
                );
            }
        };
        let stride = pair(ctx, as_2d(ctx.a(attrs.ints("strides"))?, 1), 1, "strides")?;
        let dilation = pair(ctx, as_2d(ctx.a(attrs.ints("dilations"))?, 1), 1, "dilations")?;
        let pads = as_2d(ctx.a(attrs.ints("pads"))?, 0).unwrap_or_default();
        let auto_pad = ctx.a(attrs.string("auto_pad"))?.unwrap_or_default();
        let padding = resolve_padding(ctx, &auto_pad, &pads, [kh, kw], stride, dilation, [xs[2], xs[3]])?;
        let c = xs[1];
        let out = ctx.out_name(0);
        let xid = if one_d {
            // [N, W, C] → [N, 1, W, C]: NHWC without moving data.
            let x3 = self.in_order(&x, &layout::channels_last(3), &out)?;
            let nhwc = vec![xs[0], 1, xs[3], xs[1]];
            self.emit(
                ctx,
                &format!("{out}/as_2d"),
                Op::Reshape { new_shape: nhwc },
                vec![Some(x3)],
                &format!("{out}/as_2d"),
            )?
        } else {
            self.in_order(&x, &layout::channels_last(4), &out)?
        };
        let bias_id = match &bias {
            Some(b) if b.shape.iter().product::<usize>() == m => {
                Some(self.const_tensor(ctx, &ctx.a(b.reshaped(vec![m]))?, &format!("{out}/bias"))?)
            }
            Some(b) => {
                return Err(
                    ctx.err(Kind::Malformed, format!("Conv bias of shape {:?} for {m} output channels", b.shape))
                );
            }
            None => None,
        };
        let op = if group == 1 {
            if cg != c {
                return Err(ctx.err(Kind::Malformed, format!("Conv weights {ws:?} for {c} input channels")));
            }
            Op::Conv2d(Conv2d {
                stride_h: stride[0],
                stride_w: stride[1],
                dilation_h: dilation[0],
                dilation_w: dilation[1],
                padding,
                activation: FusedActivation::None,
            })
        } else if group as usize == c && cg == 1 && m % c == 0 {
            Op::DepthwiseConv2d(DepthwiseConv2d {
                stride_h: stride[0],
                stride_w: stride[1],
                dilation_h: dilation[0],
                dilation_w: dilation[1],
                depth_multiplier: m / c,
                padding,
                activation: FusedActivation::None,
            })
        } else {
            return Err(ctx.unsupported(format!(
                "grouped convolution with group {group} over {c} input channels: only group 1 and depthwise (group = channels) are supported"
            )));
        };
        // OHWI for conv, [1, kh, kw, M] for depthwise.
        let filter = if matches!(op, Op::Conv2d(_)) { w.transpose(&[0, 2, 3, 1]) } else { w.transpose(&[1, 2, 3, 0]) };
        let wid = self.const_tensor(ctx, &ctx.a(filter)?, &format!("{out}/filter"))?;
        if one_d {
            let y = self.emit(ctx, ctx.name(), op, vec![Some(xid), Some(wid), bias_id], &format!("{out}/conv2d"))?;
            // [N, 1, W', M] → [N, W', M]: the ONNX [N, M, W'] channels last.
            let nwc = match self.shape(y).as_slice() {
                &[n, _, w, m] => vec![n, w, m],
                s => return Err(ctx.err(Kind::Malformed, format!("Conv output of shape {s:?}"))),
            };
            let id = self.emit(ctx, &format!("{out}/as_1d"), Op::Reshape { new_shape: nwc }, vec![Some(y)], &out)?;
            self.set(ctx, 0, Value::Act(Act { id, perm: layout::channels_last(3) }));
            return Ok(());
        }
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid), Some(wid), bias_id], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::channels_last(4) }));
        Ok(())
    }

    /// ConvTranspose (2-D, group 1, dilations 1) as [`Op::TransposeConv2d`]: weights `[C, M, kH,
    /// kW]` to OHWI `[M, kH, kW, C]`; the output size and leading padding as ONNX defines them
    /// (`pads` begin values, `output_padding` added at the end; with `output_shape` or `auto_pad`
    /// SAME the total padding from it, split as ONNX Runtime does: the odd one before, except
    /// for `SAME_UPPER`, which puts it after).
    pub(super) fn conv_transpose(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let xs = self.onnx_shape(&x);
        if xs.len() != 4 {
            return Err(ctx.unsupported(format!(
                "ConvTranspose of a rank-{} input {xs:?}: only 2-D transposed convolutions (NCHW) are supported",
                xs.len()
            )));
        }
        let w = self
            .const_input(ctx, 1, "the weight")?
            .ok_or_else(|| ctx.err(Kind::Malformed, "ConvTranspose without weights"))?;
        let bias = self.const_input(ctx, 2, "the bias")?;
        let attrs = ctx.attrs();
        let group = ctx.a(attrs.int_or("group", 1))?;
        if group != 1 {
            return Err(ctx.unsupported(format!("ConvTranspose with group {group}: only group 1 is supported")));
        }
        let (c, m, kh, kw) = match *w.shape.as_slice() {
            [c, m, kh, kw] if kh > 0 && kw > 0 => (c, m, kh, kw),
            _ => {
                return Err(ctx.err(
                    Kind::Malformed,
                    format!("ConvTranspose weights of shape {:?}, expected [C, M, kH, kW]", w.shape),
                ));
            }
        };
        if c != xs[1] {
            return Err(
                ctx.err(Kind::Malformed, format!("ConvTranspose weights {:?} for {} input channels", w.shape, xs[1]))
            );
        }
        let stride = pair(ctx, ctx.a(attrs.ints("strides"))?, 1, "strides")?;
        let dilation = pair(ctx, ctx.a(attrs.ints("dilations"))?, 1, "dilations")?;
        if dilation != [1, 1] {
            return Err(ctx.unsupported(format!("ConvTranspose with dilations {dilation:?}: only 1 is supported")));
        }
        let out_pad = match ctx.a(attrs.ints("output_padding"))?.as_deref() {
            None | Some([]) => [0, 0],
            Some(&[a, b]) if a >= 0 && b >= 0 => [a as usize, b as usize],
            Some(o) => return Err(ctx.unsupported(format!("output_padding {o:?}: expected 2 non-negative values"))),
        };
        let out_shape = match ctx.a(attrs.ints("output_shape"))?.as_deref() {
            None | Some([]) => None,
            Some(&[.., h, w]) if h > 0 && w > 0 => Some([h as usize, w as usize]),
            Some(o) => return Err(ctx.unsupported(format!("output_shape {o:?}: expected positive spatial sizes"))),
        };
        let pads = ctx.a(attrs.ints("pads"))?.unwrap_or_default();
        let auto_pad = ctx.a(attrs.string("auto_pad"))?.unwrap_or_default();
        let (ih, iw) = (xs[2], xs[3]);
        // Per axis: the full size (in - 1) * stride + k + output_padding, the output size and the
        // leading padding.
        let mut out = [0usize; 2];
        let mut pad = [0usize; 2];
        for (a, (n, k)) in [(ih, kh), (iw, kw)].into_iter().enumerate() {
            let full = n
                .checked_sub(1)
                .and_then(|v| v.checked_mul(stride[a]))
                .and_then(|v| v.checked_add(k + out_pad[a]))
                .ok_or_else(|| ctx.err(Kind::Malformed, "ConvTranspose of an empty input"))?;
            let given = match (out_shape, auto_pad.as_str()) {
                (Some(s), _) => Some(s[a]),
                (None, "SAME_UPPER" | "SAME_LOWER") => Some(n * stride[a]),
                _ => None,
            };
            let (o, head) = match (given, auto_pad.as_str()) {
                (Some(o), ap) => {
                    let total = full.saturating_sub(o);
                    (o, if ap == "SAME_UPPER" { total / 2 } else { total - total / 2 })
                }
                (None, "" | "NOTSET") => {
                    let (b, e) = match pads.as_slice() {
                        [] => (0, 0),
                        &[t, l, bt, r] if t >= 0 && l >= 0 && bt >= 0 && r >= 0 => {
                            if a == 0 {
                                (t as usize, bt as usize)
                            } else {
                                (l as usize, r as usize)
                            }
                        }
                        _ => return Err(ctx.unsupported(format!("pads {pads:?}: expected 4 non-negative values"))),
                    };
                    let o = full.checked_sub(b + e).filter(|&o| o > 0).ok_or_else(|| {
                        ctx.err(Kind::Malformed, format!("ConvTranspose pads {pads:?} leave no output"))
                    })?;
                    (o, b)
                }
                (None, "VALID") => (full, 0),
                (None, other) => return Err(ctx.unsupported(format!("auto_pad {other:?}"))),
            };
            out[a] = o;
            pad[a] = head;
        }
        let xid = self.in_order(&x, &layout::channels_last(4), &ctx.out_name(0))?;
        let out_name = ctx.out_name(0);
        let bias_id = match &bias {
            Some(b) if b.shape.iter().product::<usize>() == m => {
                Some(self.const_tensor(ctx, &ctx.a(b.reshaped(vec![m]))?, &format!("{out_name}/bias"))?)
            }
            Some(b) => {
                return Err(ctx.err(
                    Kind::Malformed,
                    format!("ConvTranspose bias of shape {:?} for {m} output channels", b.shape),
                ));
            }
            None => None,
        };
        let op = Op::TransposeConv2d(TransposeConv2d {
            stride_h: stride[0],
            stride_w: stride[1],
            pad_top: pad[0],
            pad_left: pad[1],
            output_h: out[0],
            output_w: out[1],
            activation: FusedActivation::None,
        });
        // [C, M, kH, kW] -> OHWI [M, kH, kW, C].
        let filter = w.transpose(&[1, 2, 3, 0]);
        let wid = self.const_tensor(ctx, &ctx.a(filter)?, &format!("{out_name}/filter"))?;
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid), Some(wid), bias_id], &out_name)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::channels_last(4) }));
        Ok(())
    }

    /// A fully-connected node on a 2-D (or keep_num_dims) input with `[out, in]` weights.
    pub(super) fn fully_connected(
        &mut self,
        ctx: &Ctx,
        xid: TensorId,
        weights: Konst,
        bias: Option<Konst>,
        keep_num_dims: bool,
        out: &str,
    ) -> Result<TensorId, ConvertError> {
        let wid = self.const_tensor(ctx, &weights, &format!("{out}/weights"))?;
        let bid = match bias {
            Some(b) => Some(self.const_tensor(ctx, &b, &format!("{out}/bias"))?),
            None => None,
        };
        self.emit(
            ctx,
            ctx.name(),
            Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims }),
            vec![Some(xid), Some(wid), bid],
            out,
        )
    }

    pub(super) fn gemm(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let attrs = ctx.attrs();
        if ctx.a(attrs.int_or("transA", 0))? != 0 {
            return Err(ctx.unsupported("Gemm with transA = 1"));
        }
        let alpha = ctx.a(attrs.float_or("alpha", 1.0))?;
        let beta = ctx.a(attrs.float_or("beta", 1.0))?;
        let trans_b = ctx.a(attrs.int_or("transB", 0))? != 0;
        let a = self.act_input(ctx, 0)?;
        let bk = self.const_input(ctx, 1, "B")?.ok_or_else(|| ctx.err(Kind::Malformed, "Gemm without B"))?;
        if bk.shape.len() != 2 || a.perm.len() != 2 {
            return Err(
                ctx.err(Kind::Malformed, format!("Gemm of rank {} A and B of shape {:?}", a.perm.len(), bk.shape))
            );
        }
        let mut w = if trans_b { bk } else { ctx.a(bk.transpose(&[1, 0]))? };
        let n = w.shape[0];
        if alpha != 1.0 {
            if let KData::F32(v) = &mut w.data {
                v.iter_mut().for_each(|x| *x *= alpha);
            }
        }
        let out = ctx.out_name(0);
        let xid = self.plain(&a, &out)?;
        let m = self.shape(xid).first().copied().unwrap_or(1);
        let c = self.input(ctx, 2)?;
        // C broadcast to [N] becomes the bias; anything else is a separate Add.
        let (bias, extra) = match c {
            None => (None, None),
            Some(Value::Const(_)) if beta == 0.0 => (None, None),
            Some(Value::Const(ck))
                if matches!(ck.shape.as_slice(), [] | [1] | [_] | [1, _]) || (m == 1 && ck.shape.len() == 2) =>
            {
                let mut b = ctx.a(ck.reshaped(vec![ck.data.len()]).and_then(|b| b.broadcast_to(&[n])))?;
                if let KData::F32(v) = &mut b.data {
                    v.iter_mut().for_each(|x| *x *= beta);
                }
                (Some(b), None)
            }
            Some(other) => (None, Some(other)),
        };
        let fc_out = if extra.is_some() { format!("{out}/matmul") } else { out.clone() };
        let id = self.fully_connected(ctx, xid, w, bias, false, &fc_out)?;
        let mut v = Value::Act(Act { id, perm: layout::identity(2) });
        if let Some(c) = extra {
            let c = if beta == 1.0 {
                c
            } else {
                let k = Value::Const(Konst::f32(vec![1], vec![beta]));
                self.binary(ctx, Op::Mul { activation: FusedActivation::None }, &c, &k, &format!("{out}/beta_c"))?
            };
            v = self.binary(ctx, Op::Add { activation: FusedActivation::None }, &v, &c, &out)?;
        }
        self.set(ctx, 0, v);
        Ok(())
    }

    pub(super) fn matmul(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let a = match self.input(ctx, 0)? {
            Some(Value::Act(a)) => a,
            _ => return Err(ctx.unsupported("MatMul with a constant first operand")),
        };
        let bk = match self.input(ctx, 1)? {
            Some(Value::Const(k)) => k,
            Some(Value::Act(b)) => return self.batch_matmul(ctx, &a, &b),
            None => return Err(ctx.err(Kind::Malformed, "MatMul without its second operand")),
        };
        if bk.shape.len() != 2 {
            return Err(
                ctx.unsupported(format!("MatMul with weights of shape {:?}: only 2-D weights are supported", bk.shape))
            );
        }
        let out = ctx.out_name(0);
        let r = a.perm.len();
        let xid = self.plain(&a, &out)?;
        let w = ctx.a(bk.transpose(&[1, 0]))?;
        let n = w.shape[0];
        if r == 1 {
            let fc = self.fully_connected(ctx, xid, w, None, false, &format!("{out}/matmul"))?;
            let id =
                self.emit(ctx, &format!("{out}/reshape"), Op::Reshape { new_shape: vec![n] }, vec![Some(fc)], &out)?;
            self.set(ctx, 0, Value::Act(Act { id, perm: vec![0] }));
        } else {
            let id = self.fully_connected(ctx, xid, w, None, r > 2, &out)?;
            self.set(ctx, 0, Value::Act(Act { id, perm: layout::identity(r) }));
        }
        Ok(())
    }

    /// MatMul of two activations: [`Op::BatchMatMul`] (NumPy `matmul`: ranks 2 to 5, batch
    /// dimensions broadcast). An operand stored with its last two axes swapped (an ONNX
    /// `Transpose` of them, as `Q · Kᵀ` writes) is read in place with `adj_x` / `adj_y` instead
    /// of being transposed.
    fn batch_matmul(&mut self, ctx: &Ctx, a: &Act, b: &Act) -> Result<(), ConvertError> {
        let (ra, rb) = (a.perm.len(), b.perm.len());
        if !(2..=5).contains(&ra) || !(2..=5).contains(&rb) {
            return Err(ctx
                .unsupported(format!("MatMul of two activations of ranks {ra} and {rb}: both must have rank 2 to 5")));
        }
        let out = ctx.out_name(0);
        let operand = |s: &mut Self, x: &Act| -> Result<(TensorId, bool), ConvertError> {
            let r = x.perm.len();
            let mut swapped = layout::identity(r);
            swapped.swap(r - 2, r - 1);
            if x.perm == swapped { Ok((x.id, true)) } else { Ok((s.plain(x, &out)?, false)) }
        };
        let (aid, adj_x) = operand(self, a)?;
        let (bid, adj_y) = operand(self, b)?;
        let id = self.emit(ctx, &out, Op::BatchMatMul { adj_x, adj_y }, vec![Some(aid), Some(bid)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::identity(ra.max(rb)) }));
        Ok(())
    }

    pub(super) fn batch_norm(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        if ctx.a(ctx.attrs().int_or("training_mode", 0))? != 0 {
            return Err(ctx.unsupported("BatchNormalization in training mode"));
        }
        for i in 1..5 {
            self.check_unused_output(ctx, i, "running statistics")?;
        }
        let x = self.act_input(ctx, 0)?;
        let eps = f64::from(ctx.a(ctx.attrs().float_or("epsilon", 1e-5))?);
        let mut p = Vec::with_capacity(4);
        for (i, what) in [(1, "scale"), (2, "B"), (3, "mean"), (4, "var")] {
            let k = self
                .const_input(ctx, i, what)?
                .ok_or_else(|| ctx.err(Kind::Malformed, format!("BatchNormalization without {what}")))?;
            p.push(ctx.a(k.as_f32().map(|v| v.to_vec()))?);
        }
        let xs = self.onnx_shape(&x);
        let c = xs.get(1).copied().unwrap_or(0);
        if xs.len() < 2 || p.iter().any(|v| v.len() != c) {
            return Err(ctx.err(
                Kind::Malformed,
                format!("BatchNormalization of {xs:?} with parameters of {} values", p[0].len()),
            ));
        }
        let (mut scale, mut shift) = (Vec::with_capacity(c), Vec::with_capacity(c));
        for (((&g, &b), &mu), &var) in p[0].iter().zip(&p[1]).zip(&p[2]).zip(&p[3]) {
            let a = f64::from(g) / libm::sqrt(f64::from(var) + eps);
            scale.push(a as f32);
            shift.push((f64::from(b) - f64::from(mu) * a) as f32);
        }
        let mut kshape = vec![c];
        kshape.extend(core::iter::repeat_n(1, xs.len() - 2));
        let out = ctx.out_name(0);
        let y = self.binary(
            ctx,
            Op::Mul { activation: FusedActivation::None },
            &Value::Act(x),
            &Value::Const(Konst::f32(kshape.clone(), scale)),
            &format!("{out}/scale"),
        )?;
        let y = self.binary(
            ctx,
            Op::Add { activation: FusedActivation::None },
            &y,
            &Value::Const(Konst::f32(kshape, shift)),
            &out,
        )?;
        self.set(ctx, 0, y);
        Ok(())
    }

    pub(super) fn pool(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let max = ctx.op == "MaxPool";
        if max {
            self.check_unused_output(ctx, 1, "the indices")?;
        }
        let x = self.act_input(ctx, 0)?;
        let xs = self.onnx_shape(&x);
        if xs.len() != 4 {
            return Err(ctx.unsupported(format!(
                "{} of a rank-{} input: only 2-D pooling (NCHW) is supported",
                ctx.op,
                xs.len()
            )));
        }
        let attrs = ctx.attrs();
        let kernel = pair(ctx, ctx.a(attrs.ints("kernel_shape"))?, 0, "kernel_shape")?;
        if kernel.contains(&0) {
            return Err(ctx.err(Kind::Malformed, "pooling without kernel_shape"));
        }
        let stride = pair(ctx, ctx.a(attrs.ints("strides"))?, 1, "strides")?;
        let dilation = pair(ctx, ctx.a(attrs.ints("dilations"))?, 1, "dilations")?;
        if dilation != [1, 1] {
            return Err(ctx.unsupported(format!("pooling with dilations {dilation:?}")));
        }
        let pads = ctx.a(attrs.ints("pads"))?.unwrap_or_default();
        let auto_pad = ctx.a(attrs.string("auto_pad"))?.unwrap_or_default();
        let ceil = ctx.a(attrs.int_or("ceil_mode", 0))? != 0;
        let include_pad = !max && ctx.a(attrs.int_or("count_include_pad", 0))? != 0;
        let mut padding = resolve_padding(ctx, &auto_pad, &pads, kernel, stride, [1, 1], [xs[2], xs[3]])?;
        let out = ctx.out_name(0);
        let mut xid = self.in_order(&x, &layout::channels_last(4), &out)?;
        if include_pad {
            // Average over the padded window: pad with zeros explicitly, then pool unpadded.
            if let Padding::Explicit(PaddingValues { top, bottom, left, right }) = padding {
                let name = format!("{out}/pad");
                xid = self.emit(
                    ctx,
                    &name,
                    Op::Pad { paddings: vec![[0, 0], [top, bottom], [left, right], [0, 0]] },
                    vec![Some(xid)],
                    &name,
                )?;
                padding = Padding::Valid;
            } else if padding == Padding::Same {
                return Err(ctx.unsupported("AveragePool with count_include_pad and auto_pad SAME"));
            }
        }
        if ceil {
            // Ceil mode: extra padding at the end (ignored by max and by the unpadded average).
            let gs = self.shape(xid);
            let (mut t, mut b, mut l, mut r) = match padding {
                Padding::Explicit(PaddingValues { top, bottom, left, right }) => (top, bottom, left, right),
                Padding::Valid => (0, 0, 0, 0),
                Padding::Same => return Err(ctx.unsupported("ceil_mode with auto_pad SAME")),
            };
            for (axis, (before, after)) in [(1usize, (&mut t, &mut b)), (2, (&mut l, &mut r))] {
                let a = axis - 1;
                let span = (gs[axis] + *before + *after)
                    .checked_sub(kernel[a])
                    .ok_or_else(|| ctx.err(Kind::Malformed, "pooling window larger than the input"))?;
                let floor_out = span / stride[a] + 1;
                let mut ceil_out = span.div_ceil(stride[a]) + 1;
                // The last window must start inside the input or its leading padding.
                if (ceil_out - 1) * stride[a] >= gs[axis] + *before {
                    ceil_out -= 1;
                }
                if ceil_out > floor_out {
                    *after += (ceil_out - 1) * stride[a] + kernel[a] - (gs[axis] + *before + *after);
                }
            }
            padding = if t + b + l + r == 0 {
                Padding::Valid
            } else {
                Padding::Explicit(PaddingValues { top: t, bottom: b, left: l, right: r })
            };
        }
        let p = Pool2d {
            filter_h: kernel[0],
            filter_w: kernel[1],
            stride_h: stride[0],
            stride_w: stride[1],
            padding,
            activation: FusedActivation::None,
        };
        let op = if max { Op::MaxPool2d(p) } else { Op::AvgPool2d(p) };
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::channels_last(4) }));
        Ok(())
    }

    pub(super) fn global_pool(&mut self, ctx: &Ctx, max: bool) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let r = x.perm.len();
        if r < 3 {
            return Err(ctx.err(Kind::Malformed, format!("{} of a rank-{r} input", ctx.op)));
        }
        let target = layout::channels_last(r);
        let out = ctx.out_name(0);
        let xid = self.in_order(&x, &target, &out)?;
        let gs = self.shape(xid);
        let op = if max {
            if r != 4 {
                return Err(ctx.unsupported("GlobalMaxPool of a non-4-D input"));
            }
            Op::MaxPool2d(Pool2d {
                filter_h: gs[1],
                filter_w: gs[2],
                stride_h: 1,
                stride_w: 1,
                padding: Padding::Valid,
                activation: FusedActivation::None,
            })
        } else {
            Op::Mean { axes: (1..r - 1).collect(), keep_dims: true }
        };
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: target }));
        Ok(())
    }
}
