//! Lowering graph nodes to `.mq` ops with prepared kernel parameters.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::err;
use crate::graph::{self, ConvertError, ConvertErrorKind as K, Graph, Node, Op, TensorId};
use crate::kernels::abs::SignParams;
use crate::kernels::add::AddParams;
use crate::kernels::batch_matmul::BatchMatMulParams;
use crate::kernels::common::{FusedActivation, PaddingValues};
use crate::kernels::concat::Requantize;
use crate::kernels::div::DivParams;
use crate::kernels::elu::EluParams;
use crate::kernels::hard_swish::HardSwishParams;
use crate::kernels::leaky_relu::LeakyReluParams;
use crate::kernels::logistic::LogisticParams;
use crate::kernels::minimum_maximum::{MinMaxOp, MinMaxParams};
use crate::kernels::mul::MulParams;
use crate::kernels::prelu::PreluParams;
use crate::kernels::reduce::mean_scratch_len;
use crate::kernels::relu::ReluParams;
use crate::kernels::rsqrt::RsqrtParams;
use crate::kernels::softmax::SoftmaxParams;
use crate::kernels::squared_difference::SquaredDifferenceParams;
use crate::kernels::sub::SubParams;
use crate::kernels::tanh::TanhParams;
use crate::kernels::tensor::PerTensorQuant;
use crate::kernels::unary_lut::table_s8;
use crate::kernels::{ActivationRange, Dims4, Rounding};
use crate::model::words::*;
use crate::model::{ElementType, ModelBuilder, OpKind, OpSpec, TensorSpec};

mod movement;
#[path = "lower_recurrent.rs"]
mod recurrent;
mod weighted;

/// Maps graph tensors to model tensors while lowering.
pub(crate) struct Lowering<'g> {
    g: &'g Graph,
    pub map: Vec<Option<u32>>,
    rounding: Rounding,
}

fn model_dtype(d: graph::DType) -> Option<ElementType> {
    Some(match d {
        graph::DType::I8 => ElementType::I8,
        graph::DType::U8 => ElementType::U8,
        graph::DType::I16 => ElementType::I16,
        graph::DType::I32 => ElementType::I32,
        graph::DType::I64 => ElementType::I64,
        graph::DType::F32 => ElementType::F32,
        graph::DType::I4 => ElementType::I4,
        _ => return None,
    })
}

fn dims_u32(shape: &[usize]) -> Vec<u32> {
    shape.iter().map(|&d| d as u32).collect()
}

struct NodeCtx<'a> {
    index: usize,
    node: &'a Node,
}

impl NodeCtx<'_> {
    fn err(&self, kind: K, msg: impl Into<String>) -> ConvertError {
        err(kind, msg).at_node(self.index, self.node.op.name()).with_node_name(self.node.name.clone())
    }
    /// An op's scratch bytes as the model stores them.
    fn scratch_len(&self, bytes: usize) -> Result<u32, ConvertError> {
        u32::try_from(bytes)
            .map_err(|_| self.err(K::Unsupported, format!("scratch of {bytes} bytes does not fit 32 bits")))
    }
    fn kernel(&self, e: crate::Error) -> ConvertError {
        self.err(K::Unsupported, format!("cannot prepare the kernel: {e}"))
    }
}

impl<'g> Lowering<'g> {
    fn tensor(&self, c: &NodeCtx, id: TensorId) -> Result<&'g graph::Tensor, ConvertError> {
        self.g.tensor(id).ok_or_else(|| c.err(K::InvalidGraph, format!("tensor {} does not exist", id.index())))
    }

    fn input(&self, c: &NodeCtx, k: usize) -> Result<(TensorId, &'g graph::Tensor), ConvertError> {
        let id = c.node.input(k).ok_or_else(|| c.err(K::InvalidGraph, format!("input {k} is missing")))?;
        Ok((id, self.tensor(c, id)?))
    }

    fn output(&self, c: &NodeCtx) -> Result<(TensorId, &'g graph::Tensor), ConvertError> {
        let id = c.node.output(0).ok_or_else(|| c.err(K::InvalidGraph, "the node has no output"))?;
        Ok((id, self.tensor(c, id)?))
    }

    /// Per-tensor quantization of an activation, as the kernels take it.
    fn q(&self, c: &NodeCtx, t: &graph::Tensor) -> Result<PerTensorQuant, ConvertError> {
        match t.quant.as_ref().and_then(|q| q.per_tensor_params()) {
            Some((s, z)) => Ok(PerTensorQuant::new(s, z)),
            None => Err(c
                .err(K::UnsupportedQuantization, format!("tensor '{}' is not quantized per tensor", t.name))
                .with_tensor(0, t.name.clone())),
        }
    }

    /// The model tensor of a graph tensor, added on first use (activation or constant).
    fn model_tensor(&mut self, c: &NodeCtx, b: &mut ModelBuilder, id: TensorId) -> Result<u32, ConvertError> {
        if let Some(Some(t)) = self.map.get(id.index()) {
            return Ok(*t);
        }
        let t = self.tensor(c, id)?;
        let dtype = model_dtype(t.dtype)
            .ok_or_else(|| c.err(K::UnsupportedDType, format!("tensor '{}' has dtype {}", t.name, t.dtype.name())))?;
        let dims = dims_u32(&t.shape);
        let mut spec = match &t.data {
            None => {
                if !matches!(dtype, ElementType::I8 | ElementType::I16) {
                    return Err(c.err(
                        K::UnsupportedDType,
                        format!("activation '{}' is {}: the runtime runs int8 and 16x8 models", t.name, t.dtype.name()),
                    ));
                }
                TensorSpec::activation(&t.name, dtype, &dims)
            }
            // int4 weights are stored packed, two per byte (`kernels::int4`).
            Some(d) => TensorSpec::constant(&t.name, dtype, &dims, d.to_packed_i4().unwrap_or_else(|| d.to_le_bytes())),
        };
        if let Some(q) = &t.quant {
            spec = match (q.axis, q.per_tensor_params()) {
                (None, Some((s, z))) => spec.per_tensor(s, z),
                (Some(axis), _) if q.scales.len() > 1 || t.data.is_some() => {
                    spec.per_channel(q.scales.clone(), q.zero_points.clone(), axis as u8)
                }
                (_, Some((s, z))) => spec.per_tensor(s, z),
                _ => spec,
            };
        }
        let idx = b.add_tensor(spec);
        if let Some(slot) = self.map.get_mut(id.index()) {
            *slot = Some(idx);
        }
        Ok(idx)
    }

    /// Symmetric int8 (or int4) weights: their scales (per-channel or one).
    fn weight_scales(&self, c: &NodeCtx, w: &graph::Tensor, axis: usize) -> Result<Vec<f32>, ConvertError> {
        if !matches!(w.dtype, graph::DType::I8 | graph::DType::I4) || w.data.is_none() {
            return Err(
                c.err(K::UnsupportedQuantization, format!("weights '{}' must be constant int8 or int4", w.name))
            );
        }
        let q = w
            .quant
            .as_ref()
            .ok_or_else(|| c.err(K::UnsupportedQuantization, format!("weights '{}' are not quantized", w.name)))?;
        if q.zero_points.iter().any(|&z| z != 0) {
            return Err(c.err(
                K::UnsupportedQuantization,
                format!(
                    "weights '{}' are asymmetric (non-zero zero point): the int8 kernels need symmetric weights",
                    w.name
                ),
            ));
        }
        if q.scales.len() > 1 && q.axis != Some(axis) {
            return Err(c.err(
                K::UnsupportedQuantization,
                format!("weights '{}' are quantized per channel on axis {:?}, expected axis {axis}", w.name, q.axis),
            ));
        }
        Ok(q.scales.clone())
    }

    fn const_i32(b: &mut ModelBuilder, name: String, v: &[i32]) -> u32 {
        b.add_tensor(TensorSpec::const_i32(&name, &[v.len() as u32], v))
    }

    fn activation_range(
        &self,
        c: &NodeCtx,
        a: FusedActivation,
        out: &graph::Tensor,
    ) -> Result<ActivationRange, ConvertError> {
        let q = self.q(c, out)?;
        let range = match out.dtype {
            graph::DType::I8 => ActivationRange::INT8,
            graph::DType::I16 => ActivationRange::INT16,
            _ => return Err(c.err(K::UnsupportedDType, format!("output '{}' is not int8 or int16", out.name))),
        };
        ActivationRange::from_fused(a, q.scale, q.zero_point, range).map_err(|e| c.kernel(e))
    }
}

/// Adds one op per graph node to `b`; returns the graph→model tensor map.
pub(crate) fn lower(g: &Graph, rounding: Rounding, b: &mut ModelBuilder) -> Result<Vec<Option<u32>>, ConvertError> {
    let mut l = Lowering { g, map: vec![None; g.tensors.len()], rounding };
    for &i in &g.inputs {
        let c =
            NodeCtx { index: 0, node: g.nodes.first().ok_or_else(|| err(K::InvalidGraph, "the graph has no nodes"))? };
        l.model_tensor(&c, b, i)?;
    }
    for (index, node) in g.nodes.iter().enumerate() {
        let c = NodeCtx { index, node };
        lower_node(&mut l, &c, b)?;
    }
    let mut ins = Vec::new();
    let mut outs = Vec::new();
    for &i in &g.inputs {
        ins.push(l.map[i.index()].ok_or_else(|| err(K::InvalidGraph, "a model input is not used"))?);
    }
    for &o in &g.outputs {
        outs.push(l.map[o.index()].ok_or_else(|| err(K::InvalidGraph, "a model output is not produced by any op"))?);
    }
    b.set_io(&ins, &outs);
    Ok(l.map)
}

fn window(
    c: &NodeCtx,
    p: graph::Padding,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    s: (usize, usize),
    d: (usize, usize),
) -> Result<PaddingValues, ConvertError> {
    let ah = p
        .resolve_h(h, kh, s.0, d.0)
        .ok_or_else(|| c.err(K::InvalidGraph, "the window does not fit the input height"))?;
    let aw = p
        .resolve_w(w, kw, s.1, d.1)
        .ok_or_else(|| c.err(K::InvalidGraph, "the window does not fit the input width"))?;
    Ok(PaddingValues { top: ah.pad_before, bottom: ah.pad_after, left: aw.pad_before, right: aw.pad_after })
}

fn dims4(c: &NodeCtx, t: &graph::Tensor) -> Result<Dims4, ConvertError> {
    match t.shape.as_slice() {
        &[n, h, w, ch] => Ok(Dims4::new(n, h, w, ch)),
        _ => Err(c.err(K::InvalidGraph, format!("tensor '{}' must be 4-D NHWC, has shape {:?}", t.name, t.shape))),
    }
}

fn lower_node(l: &mut Lowering, c: &NodeCtx, b: &mut ModelBuilder) -> Result<(), ConvertError> {
    let node = c.node;
    let (yid, y) = l.output(c)?;
    let name = if node.name.is_empty() { format!("op{}", c.index) } else { node.name.clone() };
    let mut spec = OpSpec {
        kind: OpKind::Reshape,
        name: name.clone(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        params: Vec::new(),
        in_place: false,
        scratch_len: 0,
    };
    let rounding = l.rounding;
    match &node.op {
        Op::Conv2d(_) | Op::DepthwiseConv2d(_) => weighted::lower_conv(l, c, b, &mut spec)?,
        Op::TransposeConv2d(a) => weighted::lower_transpose_conv(l, c, b, a, &mut spec)?,
        Op::FullyConnected(a) => weighted::lower_fully_connected(l, c, b, a, &mut spec)?,
        Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
            let (xid, x) = l.input(c, 0)?;
            let in_d = dims4(c, x)?;
            let pad =
                window(c, p.padding, (in_d.h, in_d.w), (p.filter_h, p.filter_w), (p.stride_h, p.stride_w), (1, 1))?;
            let activation = l.activation_range(c, p.activation, y)?;
            if l.q(c, x)? != l.q(c, y)? {
                return Err(c.err(K::UnsupportedQuantization, "pooling input and output must share their quantization"));
            }
            spec.kind = if matches!(node.op, Op::MaxPool2d(_)) { OpKind::MaxPool2d } else { OpKind::AvgPool2d };
            spec.params = PoolWords {
                filter: [p.filter_h as u32, p.filter_w as u32],
                stride: [p.stride_h as u32, p.stride_w as u32],
                padding: [pad.top as u32, pad.bottom as u32, pad.left as u32, pad.right as u32],
                activation: [activation.min, activation.max],
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Add { activation } | Op::Mul { activation } => {
            let (aid, a) = l.input(c, 0)?;
            let (bid, bt) = l.input(c, 1)?;
            let (qa, qb, qy) = (l.q(c, a)?, l.q(c, bt)?, l.q(c, y)?);
            let act = l.activation_range(c, *activation, y)?;
            let s16 = y.dtype == graph::DType::I16;
            if matches!(node.op, Op::Add { .. }) {
                let p = if s16 {
                    AddParams::prepare_s16(qa, qb, qy, act, &a.shape, &bt.shape, rounding)
                } else {
                    AddParams::prepare_s8(qa, qb, qy, act, &a.shape, &bt.shape, rounding)
                }
                .map_err(|e| c.kernel(e))?;
                spec.kind = OpKind::Add;
                let mw = |q: crate::requant::QuantizedMultiplier| [q.multiplier, q.shift];
                spec.params = AddWords {
                    offsets: [p.input1_offset, p.input2_offset, p.output_offset],
                    left_shift: p.left_shift,
                    multipliers: [mw(p.input1_multiplier), mw(p.input2_multiplier), mw(p.output_multiplier)],
                    activation: [p.activation.min, p.activation.max],
                }
                .to_words()
                .to_vec();
            } else {
                let p = if s16 {
                    MulParams::prepare_s16(qa, qb, qy, act, &a.shape, &bt.shape, rounding)
                } else {
                    MulParams::prepare_s8(qa, qb, qy, act, &a.shape, &bt.shape, rounding)
                }
                .map_err(|e| c.kernel(e))?;
                spec.kind = OpKind::Mul;
                spec.params = MulWords {
                    offsets: [p.input1_offset, p.input2_offset, p.output_offset],
                    multiplier: [p.output_multiplier.multiplier, p.output_multiplier.shift],
                    activation: [p.activation.min, p.activation.max],
                }
                .to_words()
                .to_vec();
            }
            spec.inputs = vec![Some(l.model_tensor(c, b, aid)?), Some(l.model_tensor(c, b, bid)?)];
        }
        Op::Sub { activation } => {
            let (aid, a) = l.input(c, 0)?;
            let (bid, bt) = l.input(c, 1)?;
            let (qa, qb, qy) = (l.q(c, a)?, l.q(c, bt)?, l.q(c, y)?);
            let act = l.activation_range(c, *activation, y)?;
            let SubParams(p) = if y.dtype == graph::DType::I16 {
                SubParams::prepare_s16(qa, qb, qy, act, &a.shape, &bt.shape, rounding)
            } else {
                SubParams::prepare_s8(qa, qb, qy, act, &a.shape, &bt.shape, rounding)
            }
            .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Sub;
            let mw = |q: crate::requant::QuantizedMultiplier| [q.multiplier, q.shift];
            spec.params = AddWords {
                offsets: [p.input1_offset, p.input2_offset, p.output_offset],
                left_shift: p.left_shift,
                multipliers: [mw(p.input1_multiplier), mw(p.input2_multiplier), mw(p.output_multiplier)],
                activation: [p.activation.min, p.activation.max],
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, aid)?), Some(l.model_tensor(c, b, bid)?)];
        }
        Op::Div { activation } => {
            let (aid, a) = l.input(c, 0)?;
            let (bid, bt) = l.input(c, 1)?;
            if y.dtype != graph::DType::I8 {
                return Err(c.err(K::UnsupportedDType, "div runs int8 only"));
            }
            let (qa, qb, qy) = (l.q(c, a)?, l.q(c, bt)?, l.q(c, y)?);
            let act = l.activation_range(c, *activation, y)?;
            let p = DivParams::prepare_s8(qa, qb, qy, act, &a.shape, &bt.shape, rounding).map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Div;
            spec.params = MulWords {
                offsets: [p.input1_offset, p.input2_offset, p.output_offset],
                multiplier: [p.output_multiplier.multiplier, p.output_multiplier.shift],
                activation: [p.activation.min, p.activation.max],
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, aid)?), Some(l.model_tensor(c, b, bid)?)];
        }
        Op::SquaredDifference => {
            let (aid, a) = l.input(c, 0)?;
            let (bid, bt) = l.input(c, 1)?;
            if y.dtype != graph::DType::I8 {
                return Err(c.err(K::UnsupportedDType, "squared difference runs int8 only"));
            }
            let (qa, qb, qy) = (l.q(c, a)?, l.q(c, bt)?, l.q(c, y)?);
            let p = SquaredDifferenceParams::prepare_s8(qa, qb, qy, &a.shape, &bt.shape, rounding)
                .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::SquaredDifference;
            let mw = |q: crate::requant::QuantizedMultiplier| [q.multiplier, q.shift];
            spec.params = AddWords {
                offsets: [p.input1_offset, p.input2_offset, p.output_offset],
                left_shift: p.left_shift,
                multipliers: [mw(p.input1_multiplier), mw(p.input2_multiplier), mw(p.output_multiplier)],
                activation: [p.activation.min, p.activation.max],
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, aid)?), Some(l.model_tensor(c, b, bid)?)];
        }
        Op::BatchMatMul { adj_x, adj_y } => {
            let (aid, a) = l.input(c, 0)?;
            let (bid, bt) = l.input(c, 1)?;
            let (qa, qb, qy) = (l.q(c, a)?, l.q(c, bt)?, l.q(c, y)?);
            let p = match (a.dtype, bt.dtype, y.dtype) {
                (graph::DType::I8, graph::DType::I8, graph::DType::I8) => {
                    BatchMatMulParams::prepare_s8(qa, qb, qy, &a.shape, &bt.shape, *adj_x, *adj_y)
                }
                (graph::DType::I16, graph::DType::I16, graph::DType::I16) => {
                    BatchMatMulParams::prepare_s16(qa, qb, qy, &a.shape, &bt.shape, *adj_x, *adj_y)
                }
                _ => {
                    return Err(c.err(
                        K::UnsupportedDType,
                        "batch matmul runs int8 or int16 operands and output, all of one type",
                    ));
                }
            }
            .map_err(|e| c.kernel(e))?;
            if y.dtype == graph::DType::I16 && p.multiplier.shift > 7 {
                return Err(c.err(K::UnsupportedQuantization, "int16 batch matmul multiplier above 128"));
            }
            spec.kind = OpKind::BatchMatMul;
            spec.params = BatchMatMulWords {
                adj_x: *adj_x,
                adj_y: *adj_y,
                multiplier: [p.multiplier.multiplier, p.multiplier.shift],
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, aid)?), Some(l.model_tensor(c, b, bid)?)];
        }
        Op::Minimum | Op::Maximum => {
            let (aid, a) = l.input(c, 0)?;
            let (bid, bt) = l.input(c, 1)?;
            let (qa, qb, qy) = (l.q(c, a)?, l.q(c, bt)?, l.q(c, y)?);
            let (kind, op) = match node.op {
                Op::Minimum => (OpKind::Minimum, MinMaxOp::Minimum),
                _ => (OpKind::Maximum, MinMaxOp::Maximum),
            };
            MinMaxParams::prepare(op, qa, qb, qy, &a.shape, &bt.shape).map_err(|e| c.kernel(e))?;
            spec.kind = kind;
            spec.inputs = vec![Some(l.model_tensor(c, b, aid)?), Some(l.model_tensor(c, b, bid)?)];
        }
        Op::Prelu => {
            let (xid, x) = l.input(c, 0)?;
            let (aid, a) = l.input(c, 1)?;
            let (qx, qa, qy) = (l.q(c, x)?, l.q(c, a)?, l.q(c, y)?);
            if a.dtype != graph::DType::I8 {
                return Err(c.err(K::UnsupportedDType, format!("prelu slope '{}' must be int8", a.name)));
            }
            let p = match (x.dtype, y.dtype) {
                (graph::DType::I8, graph::DType::I8) => {
                    PreluParams::prepare_s8(qx, qa, qy, &x.shape, &a.shape, rounding)
                }
                (graph::DType::I16, graph::DType::I16) => {
                    PreluParams::prepare_s16(qx, qa, qy, &x.shape, &a.shape, rounding)
                }
                _ => return Err(c.err(K::UnsupportedDType, "prelu runs int8 or int16 (16x8) activations")),
            }
            .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Prelu;
            let mw = |q: crate::requant::QuantizedMultiplier| [q.multiplier, q.shift];
            spec.params = PreluWords {
                offsets: [p.input_offset, p.alpha_offset, p.output_offset],
                multipliers: [mw(p.identity_multiplier), mw(p.alpha_multiplier)],
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?), Some(l.model_tensor(c, b, aid)?)];
        }
        Op::Softmax { beta } => {
            let (xid, x) = l.input(c, 0)?;
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let depth = x.shape.last().copied().unwrap_or(1);
            let p = match (x.dtype, y.dtype) {
                (graph::DType::I8, graph::DType::I8) => SoftmaxParams::prepare_s8(qx, qy, *beta, depth, rounding),
                (graph::DType::I8, graph::DType::I16) => SoftmaxParams::prepare_s8_s16(qx, qy, *beta, depth, rounding),
                _ => return Err(c.err(K::UnsupportedDType, "softmax runs int8 input to int8 or int16 output")),
            }
            .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Softmax;
            spec.params = SoftmaxWords {
                input_multiplier: p.input_multiplier,
                input_left_shift: p.input_left_shift,
                diff_min: p.diff_min,
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Logistic | Op::Tanh | Op::HardSwish => {
            let (xid, x) = l.input(c, 0)?;
            if x.dtype != graph::DType::I8 || y.dtype != graph::DType::I8 {
                return Err(c.err(K::UnsupportedDType, "logistic, tanh and hard-swish run int8"));
            }
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let (kind, lut) = match node.op {
                Op::Logistic => (OpKind::Logistic, LogisticParams::prepare_s8(qx, qy, rounding).map(|p| p.lut)),
                Op::Tanh => (OpKind::Tanh, TanhParams::prepare_s8(qx, qy, rounding).map(|p| p.lut)),
                _ => (OpKind::HardSwish, HardSwishParams::prepare_s8(qx, qy, rounding).map(|p| p.lut)),
            };
            let lut = lut.map_err(|e| c.kernel(e))?;
            spec.kind = kind;
            let ti = b.add_tensor(TensorSpec::const_i8(&format!("{name}/table"), &[256], &lut));
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?), Some(ti)];
        }
        Op::Unary(_) | Op::HardSigmoid { .. } => {
            // A table built from the float function as ONNX Runtime's QDQ computes it
            // (kernels/unary_lut.rs); HardSigmoid here is one the passes did not fuse.
            let (xid, x) = l.input(c, 0)?;
            if x.dtype != graph::DType::I8 || y.dtype != graph::DType::I8 {
                return Err(c.err(K::UnsupportedDType, format!("{} runs int8 (a 256-entry table)", node.op.name())));
            }
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let lut = match node.op {
                Op::Unary(f) => table_s8(qx, qy, |v| f.eval(v)),
                // In f32, as ONNX Runtime.
                Op::HardSigmoid { alpha, beta } => table_s8(qx, qy, |v| (alpha * v + beta).clamp(0.0, 1.0)),
                _ => return unreachable_op(c),
            }
            .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Lut;
            let ti = b.add_tensor(TensorSpec::const_i8(&format!("{name}/table"), &[256], &lut));
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?), Some(ti)];
        }
        Op::LeakyRelu { alpha } => {
            let (xid, x) = l.input(c, 0)?;
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let p = match (x.dtype, y.dtype) {
                (graph::DType::I8, graph::DType::I8) => LeakyReluParams::prepare_s8(qx, qy, *alpha, rounding),
                (graph::DType::I16, graph::DType::I16) => LeakyReluParams::prepare_s16(qx, qy, *alpha, rounding),
                _ => return Err(c.err(K::UnsupportedDType, "leaky relu runs int8 or int16 (input and output alike)")),
            }
            .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::LeakyRelu;
            spec.params = LeakyReluWords {
                identity: [p.identity.multiplier, p.identity.shift],
                alpha: [p.alpha.multiplier, p.alpha.shift],
            }
            .to_words()
            .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Clip { min, max } => {
            // A clamp: RELU with the bounds quantized as TFLite's CalculateActivationRangeQuantized.
            let (xid, x) = l.input(c, 0)?;
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let p = match (x.dtype, y.dtype) {
                (graph::DType::I8, graph::DType::I8) => ReluParams::prepare_s8(qx, qy, *min, *max, rounding),
                (graph::DType::I16, graph::DType::I16) => ReluParams::prepare_s16(qx, qy, *min, *max, rounding),
                _ => return Err(c.err(K::UnsupportedDType, "clip runs int8 or int16 (input and output alike)")),
            }
            .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Relu;
            spec.params =
                ReluWords { multiplier: [p.multiplier.multiplier, p.multiplier.shift], bounds: [p.act_min, p.act_max] }
                    .to_words()
                    .to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Abs | Op::Neg => {
            let (xid, x) = l.input(c, 0)?;
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let p = match (x.dtype, y.dtype) {
                (graph::DType::I8, graph::DType::I8) => SignParams::prepare_s8(qx, qy, rounding),
                (graph::DType::I16, graph::DType::I16) => SignParams::prepare_s16(qx, qy, rounding),
                _ => return Err(c.err(K::UnsupportedDType, "abs / neg run int8 or int16 (input and output alike)")),
            }
            .map_err(|e| c.kernel(e))?;
            spec.kind = if matches!(node.op, Op::Abs) { OpKind::Abs } else { OpKind::Neg };
            let multiplier = p.rescale.map_or([0, 0], |m| [m.multiplier, m.shift]);
            spec.params = SignWords { rescale: p.rescale.is_some() as u32, multiplier }.to_words().to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Rsqrt => {
            let (xid, x) = l.input(c, 0)?;
            if x.dtype != graph::DType::I8 || y.dtype != graph::DType::I8 {
                return Err(c.err(K::UnsupportedDType, "rsqrt runs int8"));
            }
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let p = RsqrtParams::prepare_s8(qx, qy, rounding).map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Rsqrt;
            spec.params = RsqrtWords { multiplier: [p.multiplier.multiplier, p.multiplier.shift] }.to_words().to_vec();
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Elu { alpha } => {
            // TFLite Micro's table (kernels/elu.rs); alpha other than 1 scales the negative part.
            let (xid, x) = l.input(c, 0)?;
            if x.dtype != graph::DType::I8 || y.dtype != graph::DType::I8 {
                return Err(c.err(K::UnsupportedDType, "elu runs int8 (a 256-entry table)"));
            }
            let (qx, qy) = (l.q(c, x)?, l.q(c, y)?);
            let lut = EluParams::prepare_s8_alpha(qx, qy, *alpha).map_err(|e| c.kernel(e))?.lut;
            spec.kind = OpKind::Elu;
            let ti = b.add_tensor(TensorSpec::const_i8(&format!("{name}/table"), &[256], &lut));
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?), Some(ti)];
        }
        Op::Concatenation { axis, activation } => {
            if *activation != FusedActivation::None {
                return Err(c.err(K::Unsupported, "concatenation with a fused activation"));
            }
            let n = node.inputs.len();
            if n == 0 || n > MAX_CONCAT_INPUTS {
                return Err(
                    c.err(K::Unsupported, format!("concatenation of {n} inputs (1 to {MAX_CONCAT_INPUTS} supported)"))
                );
            }
            let qy = l.q(c, y)?;
            spec.kind = OpKind::Concatenation;
            spec.params.push(*axis as u32);
            for k in 0..n {
                let (tid, t) = l.input(c, k)?;
                let qt = l.q(c, t)?;
                let r = Requantize::prepare_s8(qt, qy).map_err(|e| c.kernel(e))?;
                let w = match r {
                    None => ConcatInputWords { requantize: 0, zero_points: [0, 0], multiplier: [0, 0] },
                    Some(r) => ConcatInputWords {
                        requantize: 1,
                        zero_points: [r.input_zero_point, r.output_zero_point],
                        multiplier: [r.multiplier.multiplier, r.multiplier.shift],
                    },
                };
                spec.params.extend_from_slice(&w.to_words());
                spec.inputs.push(Some(l.model_tensor(c, b, tid)?));
            }
        }
        Op::Pad { paddings } => {
            let (xid, x) = l.input(c, 0)?;
            if paddings.len() != x.shape.len() {
                return Err(c.err(K::InvalidGraph, "pad needs one [before, after] pair per dimension"));
            }
            if l.q(c, x)? != l.q(c, y)? {
                return Err(c.err(K::UnsupportedQuantization, "pad input and output must share their quantization"));
            }
            spec.kind = OpKind::Pad;
            spec.params.push(paddings.len() as u32);
            for [bf, af] in paddings {
                spec.params.push(*bf as u32);
                spec.params.push(*af as u32);
            }
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Mean { axes, .. } => {
            let (xid, x) = l.input(c, 0)?;
            l.q(c, x)?;
            l.q(c, y)?;
            let axes_i: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
            if axes_i.len() > 6 {
                return Err(c.err(K::Unsupported, "mean over more than 6 axes"));
            }
            let outs = mean_scratch_len(&x.shape, &axes_i).map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Mean;
            spec.params.push(axes_i.len() as u32);
            spec.params.extend(axes_i.iter().map(|&a| a as u32));
            spec.scratch_len = (outs * 4) as u32;
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Reshape { .. } | Op::Squeeze { .. } => {
            let (xid, x) = l.input(c, 0)?;
            if x.quant != y.quant || x.dtype != y.dtype {
                return Err(c.err(K::UnsupportedQuantization, "reshape changes the quantization"));
            }
            spec.kind = OpKind::Reshape;
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Transpose { perm } => {
            let (xid, _) = l.input(c, 0)?;
            spec.kind = OpKind::Transpose;
            spec.params.push(perm.len() as u32);
            spec.params.extend(perm.iter().map(|&p| p as u32));
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::StridedSlice(_)
        | Op::DepthToSpace { .. }
        | Op::SpaceToDepth { .. }
        | Op::MirrorPad { .. }
        | Op::Gather { .. }
        | Op::Tile { .. } => movement::lower(l, c, b, &mut spec)?,
        Op::Quantize => {
            // Integer to integer (int8 <-> int16 between 16x8 and int8 layers): words
            // [multiplier, shift] of s_in / s_out (interp/ops/requantize.rs).
            let (xid, x) = l.input(c, 0)?;
            let it = |d: graph::DType| match d {
                graph::DType::I8 => Ok(crate::kernels::requantize::IntType::I8),
                graph::DType::I16 => Ok(crate::kernels::requantize::IntType::I16),
                _ => Err(c.err(K::UnsupportedDType, "quantize runs int8 or int16 to int8 or int16 (no float input)")),
            };
            let p = crate::kernels::requantize::RequantizeParams::prepare(
                l.q(c, x)?,
                it(x.dtype)?,
                l.q(c, y)?,
                it(y.dtype)?,
            )
            .map_err(|e| c.kernel(e))?;
            spec.kind = OpKind::Quantize;
            spec.params = vec![p.multiplier.multiplier as u32, p.multiplier.shift as u32];
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Sum { axes, .. } | Op::ReduceMax { axes, .. } => {
            let (xid, x) = l.input(c, 0)?;
            let max = matches!(node.op, Op::ReduceMax { .. });
            if max && (l.q(c, x)? != l.q(c, y)? || x.dtype != y.dtype) {
                return Err(
                    c.err(K::UnsupportedQuantization, "reduce max input and output must share their quantization")
                );
            }
            l.q(c, y)?;
            let axes_i: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
            if axes_i.len() > 6 {
                return Err(c.err(K::Unsupported, "a reduction over more than 6 axes"));
            }
            let outs = mean_scratch_len(&x.shape, &axes_i).map_err(|e| c.kernel(e))?;
            spec.kind = if max { OpKind::ReduceMax } else { OpKind::Sum };
            spec.params.push(axes_i.len() as u32);
            spec.params.extend(axes_i.iter().map(|&a| a as u32));
            if !max {
                spec.scratch_len = (outs * 4) as u32;
            }
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Resize { method, size, align_corners, half_pixel_centers } => {
            let (xid, x) = l.input(c, 0)?;
            if l.q(c, x)? != l.q(c, y)? || x.dtype != y.dtype {
                return Err(c.err(K::UnsupportedQuantization, "resize input and output must share their quantization"));
            }
            let bilinear = *method == crate::graph::ResizeMethod::Bilinear;
            if bilinear && x.dtype != graph::DType::I8 {
                return Err(
                    c.err(K::UnsupportedDType, "bilinear resize runs int8 only (TFLite Micro has no int16 one)")
                );
            }
            let input = match *x.shape {
                [n, h, w, ch] => [n, h, w, ch],
                _ => return Err(c.err(K::InvalidGraph, "resize input must be 4-D NHWC")),
            };
            crate::kernels::resize::ResizeParams::prepare(*method, input, *size, *align_corners, *half_pixel_centers)
                .map_err(|e| c.kernel(e))?;
            spec.kind = if bilinear { OpKind::ResizeBilinear } else { OpKind::ResizeNearestNeighbor };
            let words = crate::model::words::ResizeWords {
                align_corners: *align_corners,
                half_pixel_centers: *half_pixel_centers,
            };
            spec.params.extend_from_slice(&words.to_words());
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
        }
        Op::Lstm(a) => recurrent::lower_lstm(l, c, b, a, &mut spec)?,
        other => {
            return Err(c.err(K::UnsupportedOp, format!("{} is not supported by the int8 runtime yet", other.name())));
        }
    }
    spec.outputs = vec![l.model_tensor(c, b, yid)?];
    b.add_op(spec);
    Ok(())
}

fn unreachable_op<T>(c: &NodeCtx) -> Result<T, ConvertError> {
    Err(c.err(K::InvalidGraph, "internal: op kind changed while lowering").with_op(c.node.op.name().to_string()))
}
