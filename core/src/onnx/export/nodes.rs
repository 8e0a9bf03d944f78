//! One graph node → ONNX nodes: the per-op table, fused activations, and the integer ops of
//! dynamically quantized layers.

use super::*;

impl<'g> Exporter<'g> {
    /// Applies a fused activation to `x`; returns the result's name.
    pub(super) fn activation(&mut self, a: FusedActivation, x: String, base: &str) -> String {
        let (lo, hi) = match a {
            FusedActivation::None => return x,
            FusedActivation::Relu => {
                let out = self.fresh(&format!("{base}/relu"));
                self.node("Relu", &out.clone(), vec![x], vec![out.clone()], vec![]);
                return out;
            }
            FusedActivation::Relu6 => (0.0, 6.0),
            FusedActivation::ReluN1To1 => (-1.0, 1.0),
        };
        let lo = self.f32_scalar(&format!("{base}/clip_min"), lo);
        let hi = self.f32_scalar(&format!("{base}/clip_max"), hi);
        let out = self.fresh(&format!("{base}/clip"));
        self.node("Clip", &out.clone(), vec![x, lo, hi], vec![out.clone()], vec![]);
        out
    }

    pub(super) fn export_node(&mut self, node: &Node) -> Result<(), ConvertError> {
        let y = node.output(0).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "a node without output"))?;
        let yt = self.tensor(y)?;
        let base = self.names[y.index()].clone();
        let nname = if node.name.is_empty() { base.clone() } else { node.name.clone() };
        let input = |_s: &Self, k: usize| -> Result<TensorId, ConvertError> {
            node.input(k).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("input {k} is missing")))
        };
        let float_name = |s: &mut Self| s.fresh(&format!("{base}/float"));
        match &node.op {
            Op::Conv2d(_) | Op::DepthwiseConv2d(_) => {
                let x = self.act(input(self, 0)?)?;
                let x = self.in_order(&x, &NCHW);
                let xt = self.tensor(input(self, 0)?)?;
                let wid = input(self, 1)?;
                let wt = self.tensor(wid)?;
                let (stride, dilation, padding, act, group) = match &node.op {
                    Op::Conv2d(c) => {
                        ((c.stride_h, c.stride_w), (c.dilation_h, c.dilation_w), c.padding, c.activation, 1)
                    }
                    Op::DepthwiseConv2d(c) => (
                        (c.stride_h, c.stride_w),
                        (c.dilation_h, c.dilation_w),
                        c.padding,
                        c.activation,
                        xt.shape.get(3).copied().unwrap_or(1),
                    ),
                    _ => return Err(ConvertError::new(Kind::InvalidGraph, "op changed")),
                };
                let (kh, kw) = (wt.shape.get(1).copied().unwrap_or(1), wt.shape.get(2).copied().unwrap_or(1));
                let (h, w) = (xt.shape.get(1).copied().unwrap_or(1), xt.shape.get(2).copied().unwrap_or(1));
                let pads = pads_of(padding, h, w, kh, kw, stride, dilation)?;
                // OHWI → OIHW; depthwise [1, kh, kw, C·m] → [C·m, 1, kh, kw]. Channel axis 0.
                let wperm: &[usize] = if group == 1 { &[0, 3, 1, 2] } else { &[3, 0, 1, 2] };
                let attrs = vec![
                    attr_ints("dilations", &[dilation.0 as i64, dilation.1 as i64]),
                    attr_int("group", group as i64),
                    attr_ints("kernel_shape", &[kh as i64, kw as i64]),
                    attr_ints("pads", &pads),
                    attr_ints("strides", &[stride.0 as i64, stride.1 as i64]),
                ];
                if self.is_dynamic(node)? {
                    let channels = yt.shape.last().copied().unwrap_or(1);
                    let layer =
                        IntegerLayer { op: "ConvInteger", attrs, weight_perm: wperm, channel_shape: &[channels, 1, 1] };
                    let out = self.integer_layer(&layer, x.name, node, &nname, &base)?;
                    let out = self.activation(act, out, &base);
                    return self.finish(y, out, NCHW.to_vec());
                }
                if self.exact_int8(node)? {
                    let channels = yt.shape.last().copied().unwrap_or(1);
                    return self.exact_layer(
                        node,
                        "Conv",
                        &nname,
                        x,
                        wperm,
                        attrs,
                        act,
                        &[channels, 1, 1],
                        NCHW.to_vec(),
                    );
                }
                let wq = self.weight_dq(wid, wperm)?;
                let mut ins = vec![x.name, wq];
                if let Some(b) = node.input(2) {
                    ins.push(self.const_dq(b, &[0], Some(0))?);
                }
                let out = float_name(self);
                self.node("Conv", &nname, ins, vec![out.clone()], attrs);
                let out = self.activation(act, out, &base);
                self.finish(y, out, NCHW.to_vec())
            }
            Op::TransposeConv2d(c) => {
                // ONNX has no integer ConvTranspose (no dynamic form); the exact form runs the float
                // ConvTranspose on the integers, as the exact Conv does.
                if self.is_dynamic(node)? {
                    return Err(ConvertError::new(
                        Kind::Unsupported,
                        format!(
                            "TransposeConv2d '{nname}' has no dynamically quantized form (ONNX has no integer \
                             ConvTranspose)"
                        ),
                    ));
                }
                let x = self.act(input(self, 0)?)?;
                let x = self.in_order(&x, &NCHW);
                let xt = self.tensor(input(self, 0)?)?;
                let wid = input(self, 1)?;
                let wt = self.tensor(wid)?;
                let (kh, kw) = (wt.shape.get(1).copied().unwrap_or(1), wt.shape.get(2).copied().unwrap_or(1));
                let (h, w) = (xt.shape.get(1).copied().unwrap_or(1), xt.shape.get(2).copied().unwrap_or(1));
                // The full output (in - 1) * stride + k, less the leading padding, less the
                // output: what remains is trailing padding (>= 0) or output_padding (< 0).
                let mut pads = [c.pad_top as i64, c.pad_left as i64, 0, 0];
                let mut out_pad = [0i64; 2];
                for (a, (n, k, s, o)) in
                    [(h, kh, c.stride_h, c.output_h), (w, kw, c.stride_w, c.output_w)].into_iter().enumerate()
                {
                    let full = ((n.max(1) - 1) * s + k) as i64;
                    let rest = full - pads[a] - o as i64;
                    if rest >= 0 { pads[a + 2] = rest } else { out_pad[a] = -rest }
                }
                let attrs = vec![
                    attr_ints("dilations", &[1, 1]),
                    attr_int("group", 1),
                    attr_ints("kernel_shape", &[kh as i64, kw as i64]),
                    attr_ints("output_padding", &out_pad),
                    attr_ints("pads", &pads),
                    attr_ints("strides", &[c.stride_h as i64, c.stride_w as i64]),
                ];
                if self.exact_int8(node)? {
                    let channels = yt.shape.last().copied().unwrap_or(1);
                    return self.exact_layer(
                        node,
                        "ConvTranspose",
                        &nname,
                        x,
                        &[3, 0, 1, 2],
                        attrs,
                        c.activation,
                        &[channels, 1, 1],
                        NCHW.to_vec(),
                    );
                }
                // OHWI [M, kh, kw, C] -> [C, M, kh, kw]; the output channels on axis 1.
                let wq = self.weight_dq_axis(wid, &[3, 0, 1, 2], 1)?;
                let mut ins = vec![x.name, wq];
                if let Some(b) = node.input(2) {
                    ins.push(self.const_dq(b, &[0], Some(0))?);
                }
                let out = float_name(self);
                self.node("ConvTranspose", &nname, ins, vec![out.clone()], attrs);
                let out = self.activation(c.activation, out, &base);
                self.finish(y, out, NCHW.to_vec())
            }
            Op::FullyConnected(f) => {
                let xid = input(self, 0)?;
                let xt = self.tensor(xid)?;
                let x = self.act(xid)?;
                let x = self.in_order(&x, &layout::identity(xt.shape.len()));
                let wid = input(self, 1)?;
                let wt = self.tensor(wid)?;
                let (outs, ins_n) = match wt.shape.as_slice() {
                    &[o, i] => (o, i),
                    _ => return Err(ConvertError::new(Kind::InvalidGraph, "FC weights must be [out, in]")),
                };
                let rank = xt.shape.len();
                let out = float_name(self);
                if self.is_dynamic(node)? {
                    // MatMulInteger with Wᵀ [in, out]; an input of rank ≠ 2 flattened first
                    // (unless keep_num_dims: MatMulInteger broadcasts like MatMul).
                    let a = if rank == 2 || f.keep_num_dims { x.name } else { self.flatten(x.name, ins_n, &base) };
                    let layer = IntegerLayer {
                        op: "MatMulInteger",
                        attrs: Vec::new(),
                        weight_perm: &[1, 0],
                        channel_shape: &[outs],
                    };
                    let out = self.integer_layer(&layer, a, node, &nname, &base)?;
                    let out = self.activation(f.activation, out, &base);
                    return self.finish(y, out, layout::identity(yt.shape.len()));
                }
                if self.exact_int8(node)? {
                    let yr = yt.shape.len();
                    let per_channel = self.tensor(wid)?.quant.as_ref().is_some_and(|q| q.scales.len() > 1);
                    let cs: &[usize] = if per_channel { &[outs] } else { &[] };
                    if f.keep_num_dims && rank != 2 {
                        let x = Val { name: x.name, perm: layout::identity(rank) };
                        let p = layout::identity(yr);
                        return self.exact_layer(node, "MatMul", &nname, x, &[1, 0], vec![], f.activation, cs, p);
                    }
                    if yr != 2 {
                        return Err(ConvertError::new(
                            Kind::InvalidGraph,
                            "FC output must be 2-D without keep_num_dims",
                        ));
                    }
                    let a = if rank == 2 { x.name } else { self.flatten(x.name, ins_n, &base) };
                    let x = Val { name: a, perm: layout::identity(2) };
                    let attrs = vec![attr_int("transB", 1)];
                    return self.exact_layer(
                        node,
                        "Gemm",
                        &nname,
                        x,
                        &[0, 1],
                        attrs,
                        f.activation,
                        cs,
                        layout::identity(2),
                    );
                }
                if f.keep_num_dims && rank != 2 {
                    // MatMul with Wᵀ [in, out] (channel axis 1) + Add.
                    let wq = self.weight_dq_axis(wid, &[1, 0], 1)?;
                    let mm = if node.input(2).is_some() { self.fresh(&format!("{base}/matmul")) } else { out.clone() };
                    self.node("MatMul", &nname, vec![x.name, wq], vec![mm.clone()], vec![]);
                    if let Some(b) = node.input(2) {
                        let bq = self.const_dq(b, &[0], Some(0))?;
                        let an = format!("{nname}/bias");
                        self.node("Add", &an, vec![mm, bq], vec![out.clone()], vec![]);
                    }
                } else {
                    let a = if rank == 2 { x.name } else { self.flatten(x.name, ins_n, &base) };
                    let wq = self.weight_dq(wid, &[0, 1])?;
                    let mut ins = vec![a, wq];
                    if let Some(b) = node.input(2) {
                        ins.push(self.const_dq(b, &[0], Some(0))?);
                    }
                    self.node("Gemm", &nname, ins, vec![out.clone()], vec![attr_int("transB", 1)]);
                }
                let _ = outs;
                let out = self.activation(f.activation, out, &base);
                let yr = yt.shape.len();
                if !f.keep_num_dims && yr != 2 {
                    return Err(ConvertError::new(Kind::InvalidGraph, "FC output must be 2-D without keep_num_dims"));
                }
                self.finish(y, out, layout::identity(yr))
            }
            Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
                let xid = input(self, 0)?;
                let xt = self.tensor(xid)?;
                let x = self.act(xid)?;
                let x = self.in_order(&x, &NCHW);
                let (h, w) = (xt.shape.get(1).copied().unwrap_or(1), xt.shape.get(2).copied().unwrap_or(1));
                let pads = pads_of(p.padding, h, w, p.filter_h, p.filter_w, (p.stride_h, p.stride_w), (1, 1))?;
                if matches!(node.op, Op::AvgPool2d(_)) && self.exact_int8(node)? {
                    return self.exact_avg_pool(node, &nname, p, pads);
                }
                let out = float_name(self);
                let op = if matches!(node.op, Op::MaxPool2d(_)) { "MaxPool" } else { "AveragePool" };
                let attrs = vec![
                    attr_ints("kernel_shape", &[p.filter_h as i64, p.filter_w as i64]),
                    attr_ints("pads", &pads),
                    attr_ints("strides", &[p.stride_h as i64, p.stride_w as i64]),
                ];
                self.node(op, &nname, vec![x.name], vec![out.clone()], attrs);
                let out = self.activation(p.activation, out, &base);
                self.finish(y, out, NCHW.to_vec())
            }
            Op::SquaredDifference => {
                let rank = yt.shape.len();
                let target = Self::inner_perm(rank);
                let mut ins = Vec::with_capacity(2);
                for k in 0..2 {
                    let id = input(self, k)?;
                    ins.push(self.operand(id, rank, &target, &base)?);
                }
                let d = self.fresh(&format!("{base}/difference"));
                self.node("Sub", &d.clone(), ins, vec![d.clone()], vec![]);
                let out = float_name(self);
                self.node("Mul", &nname, vec![d.clone(), d], vec![out.clone()], vec![]);
                self.finish(y, out, target)
            }
            Op::Prelu if self.exact_int8(node)? => self.exact_prelu(node, &nname),
            Op::Minimum | Op::Maximum | Op::Prelu => {
                let rank = yt.shape.len();
                let target = Self::inner_perm(rank);
                let mut ins = Vec::with_capacity(2);
                for k in 0..2 {
                    let id = input(self, k)?;
                    ins.push(self.operand(id, rank, &target, &base)?);
                }
                let op = match node.op {
                    Op::Minimum => "Min",
                    Op::Maximum => "Max",
                    _ => "PRelu",
                };
                let out = float_name(self);
                self.node(op, &nname, ins, vec![out.clone()], vec![]);
                self.finish(y, out, target)
            }
            Op::Add { activation } | Op::Sub { activation } | Op::Mul { activation } if self.exact_int8(node)? => {
                self.exact_add_mul(node, &nname, *activation)
            }
            Op::Add { activation } | Op::Sub { activation } | Op::Mul { activation } | Op::Div { activation } => {
                let rank = yt.shape.len();
                let target = Self::inner_perm(rank);
                let mut ins = Vec::with_capacity(2);
                for k in 0..2 {
                    let id = input(self, k)?;
                    ins.push(self.operand(id, rank, &target, &base)?);
                }
                let op = match node.op {
                    Op::Add { .. } => "Add",
                    Op::Sub { .. } => "Sub",
                    Op::Mul { .. } => "Mul",
                    _ => "Div",
                };
                let out = float_name(self);
                self.node(op, &nname, ins, vec![out.clone()], vec![]);
                let out = self.activation(*activation, out, &base);
                self.finish(y, out, target)
            }
            Op::Softmax { beta } => {
                let xid = input(self, 0)?;
                let rank = self.tensor(xid)?.shape.len();
                let x = self.act(xid)?;
                let x = self.in_order(&x, &layout::identity(rank));
                let src = if *beta == 1.0 {
                    x.name
                } else {
                    let b = self.f32_scalar(&format!("{base}/beta"), *beta);
                    let m = self.fresh(&format!("{base}/scaled"));
                    self.node("Mul", &m.clone(), vec![x.name, b], vec![m.clone()], vec![]);
                    m
                };
                let out = float_name(self);
                self.node("Softmax", &nname, vec![src], vec![out.clone()], vec![attr_int("axis", -1)]);
                self.finish(y, out, layout::identity(rank))
            }
            Op::Logistic | Op::Tanh | Op::HardSwish if self.exact_int8(node)? => {
                let xid = input(self, 0)?;
                let (qx, qy) = (self.tq(xid)?, self.tq(y)?);
                let r = crate::kernels::Rounding::Double;
                let lut = match &node.op {
                    Op::Logistic => crate::kernels::logistic::LogisticParams::prepare_s8(qx, qy, r).map(|p| p.lut),
                    Op::Tanh => crate::kernels::tanh::TanhParams::prepare_s8(qx, qy, r).map(|p| p.lut),
                    _ => crate::kernels::hard_swish::HardSwishParams::prepare_s8(qx, qy, r).map(|p| p.lut),
                }
                .map_err(|e| err(format!("exact export: {e:?}")))?;
                self.exact_table(node, &nname, &lut)
            }
            Op::Clip { .. } | Op::Abs | Op::Neg | Op::Elu { .. } if self.exact_int8(node)? => {
                // The kernel's outputs for the 256 int8 inputs, read with `Gather`.
                let xid = input(self, 0)?;
                let (qx, qy) = (self.tq(xid)?, self.tq(y)?);
                let lut = exact_unary_table(&node.op, qx, qy).map_err(|e| err(format!("exact export: {e:?}")))?;
                self.exact_table(node, &nname, &lut)
            }
            Op::Logistic
            | Op::Tanh
            | Op::HardSwish
            | Op::Relu
            | Op::Relu6
            | Op::Clip { .. }
            | Op::Abs
            | Op::Neg
            | Op::Rsqrt
            | Op::Elu { .. }
            | Op::LeakyRelu { .. }
            | Op::Quantize => {
                let xid = input(self, 0)?;
                let x = self.act(xid)?;
                let out = float_name(self);
                match &node.op {
                    Op::Logistic => self.node("Sigmoid", &nname, vec![x.name], vec![out.clone()], vec![]),
                    Op::Tanh => self.node("Tanh", &nname, vec![x.name], vec![out.clone()], vec![]),
                    Op::HardSwish => self.node("HardSwish", &nname, vec![x.name], vec![out.clone()], vec![]),
                    Op::Relu => self.node("Relu", &nname, vec![x.name], vec![out.clone()], vec![]),
                    Op::LeakyRelu { alpha } => self.node(
                        "LeakyRelu",
                        &nname,
                        vec![x.name],
                        vec![out.clone()],
                        vec![attr_float("alpha", *alpha)],
                    ),
                    Op::Quantize => self.node("Identity", &nname, vec![x.name], vec![out.clone()], vec![]),
                    Op::Abs => self.node("Abs", &nname, vec![x.name], vec![out.clone()], vec![]),
                    Op::Neg => self.node("Neg", &nname, vec![x.name], vec![out.clone()], vec![]),
                    Op::Elu { alpha } => {
                        self.node("Elu", &nname, vec![x.name], vec![out.clone()], vec![attr_float("alpha", *alpha)])
                    }
                    Op::Rsqrt => {
                        let s = self.fresh(&format!("{base}/sqrt"));
                        self.node("Sqrt", &s.clone(), vec![x.name], vec![s.clone()], vec![]);
                        self.node("Reciprocal", &nname, vec![s], vec![out.clone()], vec![]);
                    }
                    _ => {
                        let (lo, hi) = match node.op {
                            Op::Clip { min, max } => (min, max),
                            _ => (0.0, 6.0),
                        };
                        let lo = self.f32_scalar(&format!("{base}/clip_min"), lo);
                        let hi = self.f32_scalar(&format!("{base}/clip_max"), hi);
                        self.node("Clip", &nname, vec![x.name, lo, hi], vec![out.clone()], vec![]);
                    }
                }
                self.finish(y, out, x.perm)
            }
            Op::Concatenation { axis, activation: FusedActivation::None } if self.exact_int8(node)? => {
                self.exact_concat(node, &nname, *axis)
            }
            Op::Concatenation { axis, activation } => {
                let rank = yt.shape.len();
                let target = Self::inner_perm(rank);
                let mut ins = Vec::with_capacity(node.inputs.len());
                for k in 0..node.inputs.len() {
                    let id = input(self, k)?;
                    ins.push(self.operand(id, rank, &target, &base)?);
                }
                let inv = layout::inverse(&target);
                let onnx_axis = inv.get(*axis).copied().unwrap_or(*axis) as i64;
                let out = float_name(self);
                self.node("Concat", &nname, ins, vec![out.clone()], vec![attr_int("axis", onnx_axis)]);
                let out = self.activation(*activation, out, &base);
                self.finish(y, out, target)
            }
            Op::Pad { paddings } => {
                let xid = input(self, 0)?;
                let x = self.act(xid)?;
                let mut pads: Vec<i64> = x.perm.iter().map(|&a| paddings.get(a).map_or(0, |p| p[0] as i64)).collect();
                pads.extend(x.perm.iter().map(|&a| paddings.get(a).map_or(0, |p| p[1] as i64)));
                let pn = self.i64s(&format!("{base}/pads"), &pads);
                let out = float_name(self);
                self.node("Pad", &nname, vec![x.name, pn], vec![out.clone()], vec![]);
                self.finish(y, out, x.perm)
            }
            Op::Mean { axes, keep_dims } | Op::Sum { axes, keep_dims } | Op::ReduceMax { axes, keep_dims } => {
                let (op, axes_input_from) = match node.op {
                    Op::Sum { .. } => ("ReduceSum", 13),
                    Op::ReduceMax { .. } => ("ReduceMax", 18),
                    _ => ("ReduceMean", 18),
                };
                let xid = input(self, 0)?;
                let x = self.act(xid)?;
                let inv = layout::inverse(&x.perm);
                let mut oaxes: Vec<usize> = axes.iter().map(|&a| inv.get(a).copied().unwrap_or(a)).collect();
                crate::vecmap::sort_usizes(&mut oaxes);
                let oaxes: Vec<i64> = oaxes.iter().map(|&a| a as i64).collect();
                let out = float_name(self);
                let keep = attr_int("keepdims", i64::from(*keep_dims));
                // The output's axes, relative to ours.
                let perm = if *keep_dims {
                    x.perm.clone()
                } else {
                    let kept: Vec<usize> = x.perm.iter().copied().filter(|a| !axes.contains(a)).collect();
                    let mut sorted = kept.clone();
                    crate::vecmap::sort_usizes(&mut sorted);
                    kept.iter().map(|a| sorted.iter().position(|s| s == a).unwrap_or(0)).collect()
                };
                if matches!(node.op, Op::Mean { .. } | Op::Sum { .. }) && self.exact_int8(node)? {
                    let xt = self.tensor(xid)?;
                    let (qx, qy) = (self.tq(xid)?, self.tq(y)?);
                    let axes_i: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
                    let prepare = if matches!(node.op, Op::Sum { .. }) {
                        crate::kernels::reduce::MeanParams::prepare_sum_s8
                    } else {
                        crate::kernels::reduce::MeanParams::prepare_s8
                    };
                    let p = prepare(&xt.shape, &axes_i, qx, qy, crate::kernels::Rounding::Double)
                        .map_err(|e| err(format!("exact export: {e:?}")))?;
                    let xi = self.integers(&x.name, qx.scale, &format!("{base}/input"));
                    let an = self.i64s(&format!("{base}/axes"), &oaxes);
                    let sum = self.fresh(&format!("{base}/sum"));
                    self.node("ReduceSum", &nname, vec![xi, an], vec![sum.clone()], vec![keep]);
                    let m = crate::requant::QuantizedMultiplier { multiplier: p.multiplier, shift: p.shift };
                    let act = crate::kernels::ActivationRange::INT8;
                    let q = self.requantize(sum, false, &[m], &[], qy.zero_point, act, &base);
                    return self.finish_int8(y, q, perm);
                }
                if self.opts.opset >= axes_input_from {
                    // Opset 18 (13 for ReduceSum) moved the axes from an attribute to an input.
                    let an = self.i64s(&format!("{base}/axes"), &oaxes);
                    self.node(op, &nname, vec![x.name, an], vec![out.clone()], vec![keep]);
                } else {
                    self.node(op, &nname, vec![x.name], vec![out.clone()], vec![attr_ints("axes", &oaxes), keep]);
                }
                self.finish(y, out, perm)
            }
            Op::Reshape { .. } | Op::Squeeze { .. } => {
                let xid = input(self, 0)?;
                let xt = self.tensor(xid)?;
                let x = self.act(xid)?;
                let out = float_name(self);
                if xt.shape == yt.shape {
                    self.node("Identity", &nname, vec![x.name], vec![out.clone()], vec![]);
                    return self.finish(y, out, x.perm);
                }
                let x = self.in_order(&x, &layout::identity(xt.shape.len()));
                let shape: Vec<i64> = yt.shape.iter().map(|&d| d as i64).collect();
                let sn = self.i64s(&format!("{base}/shape"), &shape);
                self.node("Reshape", &nname, vec![x.name, sn], vec![out.clone()], vec![]);
                self.finish(y, out, layout::identity(yt.shape.len()))
            }
            Op::Transpose { perm } => {
                let xid = input(self, 0)?;
                let xt = self.tensor(xid)?;
                let x = self.act(xid)?;
                let x = self.in_order(&x, &layout::identity(xt.shape.len()));
                let p: Vec<i64> = perm.iter().map(|&v| v as i64).collect();
                let out = float_name(self);
                self.node("Transpose", &nname, vec![x.name], vec![out.clone()], vec![attr_ints("perm", &p)]);
                self.finish(y, out, layout::identity(yt.shape.len()))
            }
            Op::Resize { method: crate::graph::ResizeMethod::Bilinear, size, align_corners, half_pixel_centers }
                if self.exact_int8(node)? =>
            {
                self.exact_resize_bilinear(node, &nname, *size, *align_corners, *half_pixel_centers)
            }
            Op::Resize { method, size, align_corners, half_pixel_centers } => {
                // The ONNX spelling of TFLite's two flags (the importer's mapping, reversed).
                let (mode, coord, nearest) = match (method, align_corners, half_pixel_centers) {
                    (crate::graph::ResizeMethod::Bilinear, false, false) => ("linear", "asymmetric", None),
                    (crate::graph::ResizeMethod::Bilinear, true, false) => ("linear", "align_corners", None),
                    (crate::graph::ResizeMethod::Bilinear, false, true) => ("linear", "half_pixel", None),
                    (crate::graph::ResizeMethod::NearestNeighbor, false, false) => {
                        ("nearest", "asymmetric", Some("floor"))
                    }
                    (crate::graph::ResizeMethod::NearestNeighbor, true, false) => {
                        ("nearest", "align_corners", Some("round_prefer_ceil"))
                    }
                    (crate::graph::ResizeMethod::NearestNeighbor, false, true) => {
                        ("nearest", "tf_half_pixel_for_nn", Some("floor"))
                    }
                    _ => return Err(err(format!("{} has no ONNX Resize equivalent", node.op))),
                };
                let xid = input(self, 0)?;
                let xt = self.tensor(xid)?;
                let x = self.act(xid)?;
                let x = self.in_order(&x, &NCHW);
                let (n, c) = (xt.shape.first().copied().unwrap_or(1), xt.shape.get(3).copied().unwrap_or(1));
                let sizes = self.i64s(&format!("{base}/sizes"), &[n as i64, c as i64, size[0] as i64, size[1] as i64]);
                let text = |name: &str, v: &str| pb::AttributeProto {
                    name: Some(name.to_string()),
                    r#type: Some(pb::attribute_proto::AttributeType::String as i32),
                    s: Some(v.as_bytes().to_vec()),
                    ..Default::default()
                };
                let mut attrs = vec![text("mode", mode), text("coordinate_transformation_mode", coord)];
                if let Some(nm) = nearest {
                    attrs.push(text("nearest_mode", nm));
                }
                let out = float_name(self);
                let ins = vec![x.name, String::new(), String::new(), sizes];
                self.node("Resize", &nname, ins, vec![out.clone()], attrs);
                self.finish(y, out, NCHW.to_vec())
            }
            Op::StridedSlice(_)
            | Op::DepthToSpace { .. }
            | Op::SpaceToDepth { .. }
            | Op::MirrorPad { .. }
            | Op::Gather { .. }
            | Op::Tile { .. } => self.export_movement(node, &nname, &base),
            Op::Unary(_) | Op::HardSigmoid { .. } => self.export_unary(node, &nname, &base),
            Op::BatchMatMul { adj_x, adj_y } if self.exact_int8(node)? => {
                self.exact_batch_matmul(node, &nname, *adj_x, *adj_y)
            }
            Op::BatchMatMul { adj_x, adj_y } => {
                // MatMul between QDQ pairs (the portable form, and int16); an adjoint operand is
                // transposed in its last two axes first.
                let mut ins = Vec::with_capacity(2);
                for (k, adj) in [(0, *adj_x), (1, *adj_y)] {
                    let id = input(self, k)?;
                    let r = self.tensor(id)?.shape.len();
                    if self.tensor(id)?.is_constant() {
                        return Err(err(format!(
                            "{}: a constant MatMul operand cannot be written as QDQ ONNX",
                            node.name
                        )));
                    }
                    let mut target = layout::identity(r);
                    if adj && r >= 2 {
                        target.swap(r - 2, r - 1);
                    }
                    let x = self.act(id)?;
                    ins.push(self.in_order(&x, &target).name);
                }
                let out = float_name(self);
                self.node("MatMul", &nname, ins, vec![out.clone()], vec![]);
                self.finish(y, out, layout::identity(yt.shape.len()))
            }
            Op::Lstm(a) if self.exact_int8(node)? => self.exact_lstm(node, &nname, a),
            Op::Lstm(_) => Err(err(format!(
                "Lstm '{nname}': only the exact form (export_qdq, --qdq) writes an int8 LSTM; the portable QDQ \
                 form has none"
            ))),
            other => Err(err(format!("{} cannot be written as QDQ ONNX", other.name()))),
        }
    }

    /// `x` reshaped to `[-1, inputs]` (the rows of a fully connected layer).
    pub(super) fn flatten(&mut self, x: String, inputs: usize, base: &str) -> String {
        let shape = self.i64s(&format!("{base}/shape"), &[-1, inputs as i64]);
        let r = self.fresh(&format!("{base}/flat"));
        self.node("Reshape", &r.clone(), vec![x, shape], vec![r.clone()], vec![]);
        r
    }

    /// Whether `node` is written as a dynamically quantized layer: a dynamic export and a hybrid
    /// layer (f32 input, int8 weights with zero points 0).
    pub(super) fn is_dynamic(&self, node: &Node) -> Result<bool, ConvertError> {
        if !self.dynamic {
            return Ok(false);
        }
        let (Some(x), Some(w)) = (node.input(0), node.input(1)) else { return Ok(false) };
        let (xt, wt) = (self.tensor(x)?, self.tensor(w)?);
        let symmetric = wt.quant.as_ref().is_some_and(|q| q.zero_points.iter().all(|&z| z == 0));
        Ok(xt.dtype == DType::F32 && wt.dtype == DType::I8 && symmetric)
    }

    /// A dynamically quantized layer on the float value `x` (see [`export_hybrid`]); returns the
    /// name of its float result (before the fused activation).
    pub(super) fn integer_layer(
        &mut self,
        layer: &IntegerLayer<'_>,
        x: String,
        node: &Node,
        nname: &str,
        base: &str,
    ) -> Result<String, ConvertError> {
        let wid = node.input(1).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "weights are missing"))?;
        let wt = self.tensor(wid)?;
        let (Some(ConstData::I8(w)), Some(q)) = (wt.data.as_ref(), wt.quant.as_ref()) else {
            return Err(err(format!("weights '{}' are not int8 constants", wt.name)));
        };
        let wname = self.fresh(&format!("{base}/weights/quantized"));
        let raw = permute(w, &wt.shape, layer.weight_perm)?.iter().map(|&v| v as u8).collect();
        self.inits.push(tensor_proto(&wname, &Self::shape_in(&wt.shape, layer.weight_perm), dt::INT8, raw));
        let per_channel = q.scales.len() > 1;
        let scale_shape: &[usize] = if per_channel { layer.channel_shape } else { &[] };
        let ws = self.fresh(&format!("{base}/weights/scale"));
        self.inits.push(tensor_proto(&ws, scale_shape, dt::FLOAT, le_f32(&q.scales)));
        let [xq, xs, xz] = ["quantized", "scale", "zero_point"].map(|k| self.fresh(&format!("{x}/{k}")));
        self.node(
            "DynamicQuantizeLinear",
            &format!("{nname}/quantize_input"),
            vec![x],
            vec![xq.clone(), xs.clone(), xz.clone()],
            vec![],
        );
        let sums = self.fresh(&format!("{base}/sums"));
        self.node(layer.op, nname, vec![xq, wname, xz], vec![sums.clone()], layer.attrs.clone());
        let cast = self.fresh(&format!("{base}/sums_float"));
        self.node("Cast", &cast.clone(), vec![sums], vec![cast.clone()], vec![attr_int("to", i64::from(dt::FLOAT))]);
        let scale = self.fresh(&format!("{base}/scale"));
        self.node("Mul", &scale.clone(), vec![xs, ws], vec![scale.clone()], vec![]);
        let scaled = self.fresh(&format!("{base}/scaled"));
        self.node("Mul", &scaled.clone(), vec![cast, scale], vec![scaled.clone()], vec![]);
        let Some(b) = node.input(2) else { return Ok(scaled) };
        let bt = self.tensor(b)?;
        let Some(ConstData::F32(bias)) = bt.data.as_ref() else {
            return Err(err(format!("bias '{}' of a dynamic layer is not float", bt.name)));
        };
        let bname = self.fresh(&format!("{base}/bias"));
        self.inits.push(tensor_proto(&bname, layer.channel_shape, dt::FLOAT, le_f32(bias)));
        let out = self.fresh(&format!("{base}/float"));
        self.node("Add", &out.clone(), vec![scaled, bname], vec![out.clone()], vec![]);
        Ok(out)
    }
}

/// The integer op of a dynamically quantized layer ([`Exporter::integer_layer`]).
pub(super) struct IntegerLayer<'a> {
    /// `ConvInteger` or `MatMulInteger`.
    op: &'static str,
    attrs: Vec<pb::AttributeProto>,
    /// Our weight axes in the written order.
    weight_perm: &'a [usize],
    /// Shape of a per-channel constant (scales, bias) that broadcasts over the output.
    channel_shape: &'a [usize],
}

/// ONNX `pads` `[top, left, bottom, right]` of a window.
pub(super) fn pads_of(
    p: Padding,
    h: usize,
    w: usize,
    kh: usize,
    kw: usize,
    stride: (usize, usize),
    dilation: (usize, usize),
) -> Result<[i64; 4], ConvertError> {
    let bad = || ConvertError::new(Kind::InvalidGraph, "the window does not fit the input");
    let ah = p.resolve_h(h, kh, stride.0, dilation.0).ok_or_else(bad)?;
    let aw = p.resolve_w(w, kw, stride.1, dilation.1).ok_or_else(bad)?;
    Ok([ah.pad_before as i64, aw.pad_before as i64, ah.pad_after as i64, aw.pad_after as i64])
}

/// The int8 table of a clamp, ABS, NEG or ELU: the kernel run on the 256 int8 values (TFLite
/// Micro's preparation), indexed by the input byte as `u8`.
fn exact_unary_table(
    op: &Op,
    qx: crate::kernels::tensor::PerTensorQuant,
    qy: crate::kernels::tensor::PerTensorQuant,
) -> Result<crate::kernels::lut::LutS8, crate::Error> {
    use crate::kernels::Rounding;
    let mut x = [0i8; 256];
    for (i, v) in x.iter_mut().enumerate() {
        *v = i as u8 as i8;
    }
    let mut lut = [0i8; 256];
    let r = Rounding::Double;
    match op {
        Op::Clip { min, max } => crate::kernels::relu::relu_s8(
            &crate::kernels::relu::ReluParams::prepare_s8(qx, qy, *min, *max, r)?,
            &x,
            &mut lut,
        )?,
        Op::Abs => crate::kernels::abs::abs_s8(&crate::kernels::abs::SignParams::prepare_s8(qx, qy, r)?, &x, &mut lut)?,
        Op::Neg => crate::kernels::abs::neg_s8(&crate::kernels::abs::SignParams::prepare_s8(qx, qy, r)?, &x, &mut lut)?,
        Op::Elu { alpha } => lut = crate::kernels::elu::EluParams::prepare_s8_alpha(qx, qy, *alpha)?.lut,
        _ => return Err(crate::Error::BadKernelArgument { kernel: "exact export", reason: "not a table op" }),
    }
    Ok(lut)
}
