//! The ONNX op type → converter table: `Constant`, folding of all-constant nodes, then one
//! handler per op type (the handlers live in the `ops_*` files by family).

use super::*;

impl Builder {
    pub(super) fn convert_node(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let op = ctx.op;
        // Constants and folding.
        if op == "Constant" {
            let k = self.constant_node(ctx)?;
            self.set(ctx, 0, Value::Const(k));
            return Ok(());
        }
        let mut inputs = Vec::with_capacity(ctx.node.input.len());
        for i in 0..ctx.node.input.len() {
            inputs.push(self.input(ctx, i)?);
        }
        let all_const = inputs.iter().flatten().all(|v| matches!(v, Value::Const(_)));
        if op == "Shape" || op == "Size" {
            let shape = match inputs.first().cloned().flatten() {
                Some(Value::Const(k)) => k.shape,
                Some(Value::Act(a)) => self.onnx_shape(&a),
                None => return Err(ctx.err(Kind::Malformed, "Shape without input")),
            };
            let k = if op == "Size" {
                Konst::i64(Vec::new(), vec![shape.iter().product::<usize>() as i64])
            } else {
                let r = shape.len() as i64;
                let clampi = |v: i64| (if v < 0 { v + r } else { v }).max(0).min(r) as usize;
                let start = clampi(ctx.a(ctx.attrs().int_or("start", 0))?);
                let end = clampi(ctx.a(ctx.attrs().int_or("end", r))?);
                let dims: Vec<i64> =
                    shape.get(start..end.max(start)).unwrap_or(&[]).iter().map(|&d| d as i64).collect();
                Konst::i64(vec![dims.len()], dims)
            };
            self.set(ctx, 0, Value::Const(k));
            return Ok(());
        }
        if all_const && !inputs.is_empty() {
            let ks: Vec<Option<&Konst>> =
                inputs.iter().map(|v| if let Some(Value::Const(k)) = v { Some(k) } else { None }).collect();
            let attrs = ctx.attrs();
            if let Some(k) = fold::fold(op, &ks, &attrs, ctx.opset)
                .map_err(|e| e.or_at_node(ctx.index, op).with_node_name(ctx.name()))?
            {
                self.set(ctx, 0, Value::Const(k));
                return Ok(());
            }
        }

        match op {
            "Conv" => self.conv(ctx),
            "ConvTranspose" => self.conv_transpose(ctx),
            "LSTM" => self.lstm(ctx),
            "GRU" => self.gru(ctx),
            "Gemm" => self.gemm(ctx),
            "MatMul" => self.matmul(ctx),
            "Add" | "Sub" | "Mul" | "Div" => {
                let op_g = match op {
                    "Add" => Op::Add { activation: FusedActivation::None },
                    "Sub" => Op::Sub { activation: FusedActivation::None },
                    "Mul" => Op::Mul { activation: FusedActivation::None },
                    _ => Op::Div { activation: FusedActivation::None },
                };
                let a = self.input(ctx, 0)?.ok_or_else(|| ctx.err(Kind::Malformed, "input 0 is missing"))?;
                let b = self.input(ctx, 1)?.ok_or_else(|| ctx.err(Kind::Malformed, "input 1 is missing"))?;
                let out = ctx.out_name(0);
                let v = self.binary(ctx, op_g, &a, &b, &out)?;
                self.set(ctx, 0, v);
                Ok(())
            }
            "Min" => self.min_max(ctx, Op::Minimum),
            "Max" => self.min_max(ctx, Op::Maximum),
            "PRelu" => self.prelu(ctx),
            "BatchNormalization" => self.batch_norm(ctx),
            "Relu" => self.unary(ctx, Op::Relu),
            "Sigmoid" => self.unary(ctx, Op::Logistic),
            "Tanh" => self.unary(ctx, Op::Tanh),
            "HardSwish" => self.unary(ctx, Op::HardSwish),
            "LeakyRelu" => {
                let alpha = ctx.a(ctx.attrs().float_or("alpha", 0.01))?;
                self.unary(ctx, Op::LeakyRelu { alpha })
            }
            "HardSigmoid" => {
                let alpha = ctx.a(ctx.attrs().float_or("alpha", 0.2))?;
                let beta = ctx.a(ctx.attrs().float_or("beta", 0.5))?;
                self.unary(ctx, Op::HardSigmoid { alpha, beta })
            }
            "Clip" => self.clip(ctx),
            "Abs" => self.unary(ctx, Op::Abs),
            "Elu" => {
                let alpha = ctx.a(ctx.attrs().float_or("alpha", 1.0))?;
                self.unary(ctx, Op::Elu { alpha })
            }
            // 1 / x as a table (the `Pow(-1)` function).
            "Reciprocal" => self.unary(ctx, Op::Unary(crate::graph::UnaryFn::Pow(-1.0))),
            "Exp" | "Sqrt" | "Erf" | "Neg" | "Softplus" | "Sin" | "Cos" | "Gelu" | "Pow" => self.unary_fn(ctx),
            "Softmax" => self.softmax(ctx),
            "MaxPool" | "AveragePool" => self.pool(ctx),
            "GlobalAveragePool" => self.global_pool(ctx, false),
            "GlobalMaxPool" => self.global_pool(ctx, true),
            "Flatten" => {
                let a = self.act_input(ctx, 0)?;
                let s = self.onnx_shape(&a);
                let axis = ctx.a(fold::flatten_axis(ctx.attrs().int_or("axis", 1)?, s.len()))?;
                let target = vec![s[..axis].iter().product(), s[axis..].iter().product()];
                self.reshape_to(ctx, &a, target)
            }
            "Reshape" => {
                let a = self.act_input(ctx, 0)?;
                let t = self
                    .const_input(ctx, 1, "the target shape")?
                    .ok_or_else(|| ctx.err(Kind::Malformed, "Reshape without shape"))?;
                let allowzero = ctx.opset >= 14 && ctx.a(ctx.attrs().int_or("allowzero", 0))? != 0;
                let s = self.onnx_shape(&a);
                let target = ctx.a(t.as_i64().and_then(|t| fold::reshape_target(&s, t, allowzero)))?;
                self.reshape_to(ctx, &a, target)
            }
            "Transpose" => {
                let a = self.act_input(ctx, 0)?;
                let r = a.perm.len();
                let q: Vec<usize> = match ctx.a(ctx.attrs().ints("perm"))? {
                    Some(p) => fold::norm_axes(&p, r).map_err(|e| ctx.loc(e))?,
                    None => (0..r).rev().collect(),
                };
                if q.len() != r || !layout::is_permutation(&q) {
                    return Err(ctx.err(Kind::Malformed, format!("perm {q:?} is not a permutation of rank {r}")));
                }
                let qi = layout::inverse(&q);
                let perm = a.perm.iter().map(|&p| qi.get(p).copied().unwrap_or(0)).collect();
                self.set(ctx, 0, Value::Act(Act { id: a.id, perm }));
                Ok(())
            }
            "Squeeze" => self.squeeze(ctx),
            "Unsqueeze" => self.unsqueeze(ctx),
            "Concat" => self.concat(ctx),
            "Pad" => self.pad(ctx),
            "Slice" => self.slice(ctx),
            "Split" => self.split(ctx),
            "DepthToSpace" | "SpaceToDepth" => self.space_depth(ctx),
            "Gather" => self.gather(ctx),
            "Tile" | "Expand" => self.tile(ctx),
            "ReduceMean" => self.reduce_mean(ctx),
            "LayerNormalization" => self.layer_norm(ctx),
            "Resize" | "Upsample" => self.resize(ctx),
            "ReduceSum" | "ReduceMax" => self.reduce_sum_max(ctx),
            "Identity" | "Dropout" => {
                if op == "Dropout" {
                    self.check_unused_output(ctx, 1, "the dropout mask")?;
                    if let Some(Value::Const(k)) = self.input(ctx, 2)? {
                        if matches!(&k.data, KData::Bool(v) if v.iter().any(|&b| b)) {
                            return Err(ctx.unsupported("Dropout in training mode"));
                        }
                    }
                }
                let a = self.act_input(ctx, 0)?;
                let shape = self.shape(a.id);
                let out = ctx.out_name(0);
                let id = self.emit(ctx, ctx.name(), Op::Reshape { new_shape: shape }, vec![Some(a.id)], &out)?;
                self.set(ctx, 0, Value::Act(Act { id, perm: a.perm }));
                Ok(())
            }
            "If" => self.if_node(ctx),
            "Cast" => {
                let to = ctx.a(ctx.attrs().int("to"))?.unwrap_or(0);
                if to != i64::from(dt::FLOAT) {
                    return Err(ctx.unsupported(format!(
                        "Cast of an activation ({:?}) to {}: a value computed at run time used as integers \
                         (a shape or an index that depends on the data?)",
                        ctx.node.input.first().map_or("", String::as_str),
                        dtype_name(to as i32)
                    )));
                }
                let a = self.act_input(ctx, 0)?;
                self.set(ctx, 0, Value::Act(a));
                Ok(())
            }
            _ if fold::is_foldable(op) => Err(self.needs_constants(ctx)),
            _ => Err(ctx.err(
                Kind::UnsupportedOp,
                format!(
                    "ONNX op {op:?} (domain ai.onnx, opset {}) is not supported{}",
                    ctx.opset,
                    if all_const { "" } else { " on activations" }
                ),
            )),
        }
    }

    pub(super) fn constant_node(&self, ctx: &Ctx) -> Result<Konst, ConvertError> {
        let a = ctx.attrs();
        if let Some(k) = ctx.a(a.tensor("value"))? {
            return Ok(k);
        }
        if let Some(v) = ctx.a(a.float("value_float"))? {
            return Ok(Konst::f32(Vec::new(), vec![v]));
        }
        if let Some(v) = ctx.a(a.floats("value_floats"))? {
            return Ok(Konst::f32(vec![v.len()], v));
        }
        if let Some(v) = ctx.a(a.int("value_int"))? {
            return Ok(Konst::i64(Vec::new(), vec![v]));
        }
        if let Some(v) = ctx.a(a.ints("value_ints"))? {
            return Ok(Konst::i64(vec![v.len()], v));
        }
        Err(ctx.unsupported(
            "Constant without a tensor, float(s) or int(s) value (sparse and string constants are not supported)",
        ))
    }
}
