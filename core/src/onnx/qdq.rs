//! QDQ ONNX in: a model quantized elsewhere (ONNX Runtime's `quantize_static` in QDQ format, a
//! QAT export from PyTorch) becomes a float model plus the quantization parameters it carries.
//!
//! Before the import proper, [`strip`] rewrites the `ModelProto`:
//! - `DequantizeLinear` of a constant (int8 weights, int32 biases) becomes the float constant
//!   `(q - zero_point) · scale` (computed in f32, as ONNX's reference and ONNX Runtime do); the
//!   scales of a conv / Gemm / MatMul node's weights are remembered by the node's output name;
//! - `QuantizeLinear` of a constant followed by `DequantizeLinear` (fake-quantized weights, as
//!   PyTorch exports QAT models) is folded the same way, the integers computed as ONNX
//!   `QuantizeLinear` does (round half to even, saturate);
//! - a `QuantizeLinear` → `DequantizeLinear` pair on an activation `x` is removed (its readers
//!   read `x`) and `x`'s scale and zero point are remembered (uint8 zero points become int8 ones,
//!   `z - 128`: the same real values).
//!
//! After the import, [`annotate`] puts the remembered parameters on the graph's tensors as
//! [`Tensor::quant`](crate::graph::Tensor::quant) of `f32` tensors: per-tensor on activations,
//! per-channel (or per-tensor) on weights. [`crate::ptq::quantize`] uses them instead of
//! calibrated ranges ([`crate::ptq::QuantizeOptions::use_carried`]); a graph pass that changes
//! a weight creates a new tensor without them (and the quantizer checks that carried weight
//! scales represent the weights exactly before using them).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::attr::Attrs;
use super::fold::{KData, Konst};
use super::pb;
use super::tensor::{dt, dtype_name, konst_from_proto, le_f32};
use crate::graph::{ConvertError, ConvertErrorKind as Kind, DType, Graph, Op, TensorQuant};
use crate::vecmap::{VecMap, VecSet};

/// Weights' quantization carried by a QDQ model, indexed by output channel.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CarriedWeight {
    /// One scale per output channel, or one.
    pub scales: Vec<f32>,
}

/// What a QDQ model carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Carried {
    /// FusedActivation name → int8 (scale, zero point).
    pub acts: VecMap<String, (f32, i32)>,
    /// Output name of a conv / Gemm / MatMul node → its weights' scales.
    pub weights: VecMap<String, CarriedWeight>,
    /// Q/DQ pairs removed.
    pub pairs: usize,
    /// Constants dequantized.
    pub constants: usize,
}

fn is_q(n: &pb::NodeProto) -> bool {
    n.op_type.as_deref() == Some("QuantizeLinear") && matches!(n.domain.as_deref(), None | Some("") | Some("ai.onnx"))
}

fn is_dq(n: &pb::NodeProto) -> bool {
    n.op_type.as_deref() == Some("DequantizeLinear") && matches!(n.domain.as_deref(), None | Some("") | Some("ai.onnx"))
}

/// True if the model has QuantizeLinear or DequantizeLinear nodes.
pub(crate) fn is_qdq(model: &pb::ModelProto) -> bool {
    model.graph.as_ref().is_some_and(|g| g.node.iter().any(|n| is_q(n) || is_dq(n)))
}

/// A constant and its ONNX element type.
#[derive(Debug, Clone)]
struct TypedConst {
    k: Konst,
    code: i32,
}

fn node_err(index: usize, node: &pb::NodeProto, kind: Kind, msg: String) -> ConvertError {
    ConvertError::new(kind, msg)
        .at_node(index, node.op_type.clone().unwrap_or_default())
        .with_node_name(node.name.clone().unwrap_or_default())
}

/// Scale, zero point (as i64) and element type of a Q/DQ node's parameters; `axis` normalised
/// for `rank`, `None` when per-tensor.
struct QParams {
    scales: Vec<f32>,
    zero_points: Vec<i64>,
    code: i32,
    axis: Option<usize>,
}

fn qparams(
    index: usize,
    node: &pb::NodeProto,
    consts: &VecMap<String, TypedConst>,
    rank: usize,
    default_code: i32,
) -> Result<QParams, ConvertError> {
    let bad = |m: String| node_err(index, node, Kind::Unsupported, m);
    let get = |i: usize| node.input.get(i).filter(|s| !s.is_empty()).map(|s| consts.get(s).ok_or(s));
    let scale = match get(1) {
        Some(Ok(c)) => c,
        Some(Err(name)) => {
            return Err(bad(format!("the scale {name:?} is computed at run time; only constant scales are supported")));
        }
        None => return Err(node_err(index, node, Kind::Malformed, String::from("no scale input"))),
    };
    let scales = match &scale.k.data {
        KData::F32(v) => v.clone(),
        _ => return Err(bad(String::from("the scale is not a float"))),
    };
    let (zero_points, code) = match get(2) {
        Some(Ok(c)) => match &c.k.data {
            KData::I64(v) => (v.clone(), c.code),
            _ => return Err(bad(String::from("the zero point is not an integer"))),
        },
        Some(Err(name)) => return Err(bad(format!("the zero point {name:?} is computed at run time"))),
        None => (vec![0; scales.len()], default_code),
    };
    if zero_points.len() != scales.len() || scales.is_empty() {
        return Err(bad(format!("{} scales and {} zero points", scales.len(), zero_points.len())));
    }
    if let Some(s) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(bad(format!("scale {s}: scales must be finite and > 0")));
    }
    let attrs = Attrs::new(node);
    if attrs.int_or("block_size", 0).unwrap_or(0) != 0 {
        return Err(bad(String::from("blocked quantization (block_size) is not supported")));
    }
    let axis = if scale.k.shape.is_empty() || (scales.len() == 1 && scale.k.shape.iter().all(|&d| d == 1)) {
        None
    } else {
        let a = attrs.int_or("axis", 1).map_err(|e| e.or_at_node(index, "Q/DQ"))?;
        let r = rank as i64;
        let a = if a < 0 { a + r } else { a };
        if !(0..r).contains(&a) {
            return Err(bad(format!("axis {a} for a rank-{rank} tensor")));
        }
        Some(a as usize)
    };
    Ok(QParams { scales, zero_points, code, axis })
}

/// `(channels, inner)` of `axis` in `shape`.
fn layout(shape: &[usize], axis: Option<usize>) -> (usize, usize) {
    match axis {
        Some(a) => (shape.get(a).copied().unwrap_or(1).max(1), shape.iter().skip(a + 1).product::<usize>().max(1)),
        None => (1, 1),
    }
}

/// ONNX `DequantizeLinear` of integers: `(q - zp) · scale` in f32.
fn dequantize(ints: &[i64], shape: &[usize], p: &QParams) -> Result<Vec<f32>, String> {
    let (channels, inner) = layout(shape, p.axis);
    if channels != p.scales.len() {
        return Err(format!("{} scales for {channels} channels", p.scales.len()));
    }
    Ok(ints
        .iter()
        .enumerate()
        .map(|(k, &q)| {
            let c = (k / inner) % channels;
            (q.saturating_sub(p.zero_points[c]) as f32) * p.scales[c]
        })
        .collect())
}

/// The integer range of a Q/DQ element type.
fn int_range(code: i32) -> Option<(i64, i64)> {
    Some(match code {
        dt::INT8 => (-128, 127),
        dt::UINT8 => (0, 255),
        dt::INT16 => (-32768, 32767),
        dt::UINT16 => (0, 65535),
        dt::INT32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => return None,
    })
}

/// ONNX `QuantizeLinear` of floats: `saturate(round_half_even(x / scale) + zp)`.
fn quantize(x: &[f32], shape: &[usize], p: &QParams) -> Result<Vec<i64>, String> {
    let (channels, inner) = layout(shape, p.axis);
    if channels != p.scales.len() {
        return Err(format!("{} scales for {channels} channels", p.scales.len()));
    }
    let (lo, hi) = int_range(p.code).ok_or_else(|| format!("quantization to {}", dtype_name(p.code)))?;
    Ok(x.iter()
        .enumerate()
        .map(|(k, &v)| {
            let c = (k / inner) % channels;
            let r = libm::rintf(v / p.scales[c]) as i64;
            // `r` saturates at the i64 range (an infinite or huge quotient); so does the sum.
            r.saturating_add(p.zero_points[c]).max(lo).min(hi)
        })
        .collect())
}

fn f32_initializer(name: &str, shape: &[usize], v: &[f32]) -> pb::TensorProto {
    pb::TensorProto {
        name: Some(name.to_string()),
        dims: shape.iter().map(|&d| d as i64).collect(),
        data_type: Some(dt::FLOAT),
        raw_data: Some(le_f32(v)),
        ..Default::default()
    }
}

/// The output-channel axis of a weighted ONNX node's weights (input 1), or `None`.
fn weight_out_axis(node: &pb::NodeProto) -> Option<usize> {
    match node.op_type.as_deref() {
        Some("Conv") => Some(0),
        Some("Gemm") => {
            let trans_b = Attrs::new(node).int_or("transB", 0).unwrap_or(0) != 0;
            Some(if trans_b { 0 } else { 1 })
        }
        Some("MatMul") => Some(1),
        _ => None,
    }
}

/// Removes the Q/DQ nodes of `model` (see the [module docs](self)) and returns what they
/// carried.
///
/// # Errors
/// `Unsupported` for Q/DQ patterns other than constant → DQ, constant → Q → DQ and activation
/// → Q → DQ (e.g. a model whose inputs or outputs are integers), computed scales, blocked or
/// int16 activation quantization, per-axis activation quantization; `Malformed` for
/// inconsistent parameters.
pub(crate) fn strip(model: &mut pb::ModelProto) -> Result<Carried, ConvertError> {
    let Some(graph) = model.graph.as_mut() else { return Ok(Carried::default()) };
    let mut carried = Carried::default();

    // Constants: initializers and Constant nodes with a tensor value.
    let mut consts: VecMap<String, TypedConst> = VecMap::new();
    for t in &graph.initializer {
        let name = t.name.clone().unwrap_or_default();
        if let Ok(k) = konst_from_proto(t, &format!("initializer {name:?}")) {
            consts.insert(name, TypedConst { k, code: t.data_type.unwrap_or(0) });
        }
    }
    for n in &graph.node {
        if n.op_type.as_deref() == Some("Constant") {
            if let (Some(out), Some(t)) = (
                n.output.first(),
                n.attribute.iter().find(|a| a.name.as_deref() == Some("value")).and_then(|a| a.t.as_ref()),
            ) {
                if let Ok(k) = konst_from_proto(t, &format!("constant {out:?}")) {
                    consts.insert(out.clone(), TypedConst { k, code: t.data_type.unwrap_or(0) });
                }
            }
        }
    }
    // Identity of a constant (PyTorch writes shared zero points that way) is that constant.
    for n in &graph.node {
        if n.op_type.as_deref() == Some("Identity") {
            if let (Some(x), Some(y)) = (n.input.first(), n.output.first()) {
                if let Some(c) = consts.get(x).cloned() {
                    consts.insert(y.clone(), c);
                }
            }
        }
    }
    let mut producer: VecMap<String, usize> = VecMap::new();
    for (i, n) in graph.node.iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            producer.insert(o.clone(), i);
        }
    }
    let mut readers: VecMap<String, Vec<usize>> = VecMap::new();
    for (i, n) in graph.node.iter().enumerate() {
        for x in n.input.iter().filter(|s| !s.is_empty()) {
            readers.get_or_insert(x.clone(), Vec::new()).push(i);
        }
    }
    let mut outputs: VecSet<String> = VecSet::new();
    for o in graph.output.iter().filter_map(|o| o.name.clone()) {
        outputs.add(o);
    }

    let mut remove = vec![false; graph.node.len()];
    let mut new_inits: Vec<pb::TensorProto> = Vec::new();
    // DQ output name → the float activation it stands for.
    let mut subst: VecMap<String, String> = VecMap::new();
    let mut dq_consts: VecMap<String, QParams> = VecMap::new();

    for (index, node) in graph.node.iter().enumerate() {
        if !is_dq(node) {
            if is_q(node) {
                let out = node.output.first().cloned().unwrap_or_default();
                let rd = readers.get(&out).map(Vec::as_slice).unwrap_or(&[]);
                if outputs.contains_key(&out) || rd.is_empty() || rd.iter().any(|&r| !is_dq(&graph.node[r])) {
                    return Err(node_err(
                        index,
                        node,
                        Kind::Unsupported,
                        format!(
                            "QuantizeLinear output {out:?} is not read only by DequantizeLinear nodes: only \
                             QuantizeLinear → DequantizeLinear pairs (float model inputs and outputs) are supported"
                        ),
                    ));
                }
                remove[index] = true;
            }
            continue;
        }
        remove[index] = true;
        let x = node.input.first().cloned().unwrap_or_default();
        let y = node.output.first().cloned().unwrap_or_default();
        let what = |m: String| node_err(index, node, Kind::Malformed, m);
        if let Some(c) = consts.get(&x) {
            // Constant integers → float constant.
            let KData::I64(ints) = &c.k.data else {
                return Err(what(format!("DequantizeLinear of a {} constant", dtype_name(c.code))));
            };
            let p = qparams(index, node, &consts, c.k.shape.len(), c.code)?;
            let v = dequantize(ints, &c.k.shape, &p).map_err(what)?;
            new_inits.push(f32_initializer(&y, &c.k.shape, &v));
            dq_consts.insert(y, p);
            carried.constants += 1;
            continue;
        }
        let q_index = producer.get(&x).copied().filter(|&i| is_q(&graph.node[i])).ok_or_else(|| {
            node_err(
                index,
                node,
                Kind::Unsupported,
                format!(
                    "DequantizeLinear of {x:?}, which is neither a constant nor a QuantizeLinear output \
                     (integer model inputs are not supported: export the model with float inputs; \
                     `microquant quantize --qdq` writes integer arithmetic for ONNX Runtime, \
                     `--qdq-portable` the QDQ form that reads back)"
                ),
            )
        })?;
        let qn = &graph.node[q_index];
        let src = qn.input.first().cloned().unwrap_or_default();
        if let Some(c) = consts.get(&src) {
            // Fake-quantized constant (QAT weights): fold Q then DQ.
            let KData::F32(fv) = &c.k.data else {
                return Err(what(format!("QuantizeLinear of a {} constant", dtype_name(c.code))));
            };
            let pq = qparams(q_index, qn, &consts, c.k.shape.len(), dt::UINT8)?;
            let ints = quantize(fv, &c.k.shape, &pq).map_err(what)?;
            let pd = qparams(index, node, &consts, c.k.shape.len(), pq.code)?;
            let v = dequantize(&ints, &c.k.shape, &pd).map_err(what)?;
            new_inits.push(f32_initializer(&y, &c.k.shape, &v));
            dq_consts.insert(y, pd);
            carried.constants += 1;
            continue;
        }
        // FusedActivation pair.
        let pq = qparams(q_index, qn, &consts, 0, dt::UINT8)?;
        let pd = qparams(index, node, &consts, 0, pq.code)?;
        if pq.axis.is_some() || pd.axis.is_some() || pq.scales.len() != 1 {
            return Err(node_err(
                index,
                node,
                Kind::Unsupported,
                format!("per-axis quantization of activation {src:?}"),
            ));
        }
        let zp = match pq.code {
            dt::INT8 => pq.zero_points[0],
            dt::UINT8 => pq.zero_points[0] - 128,
            other => {
                return Err(node_err(
                    q_index,
                    qn,
                    Kind::Unsupported,
                    format!(
                        "activation {src:?} quantized to {}: only int8 and uint8 activations are supported",
                        dtype_name(other)
                    ),
                ));
            }
        };
        if pd.scales[0] != pq.scales[0] || pd.zero_points[0] != pq.zero_points[0] {
            return Err(what(format!(
                "QuantizeLinear and DequantizeLinear of {src:?} disagree (scale {} vs {}, zero point {} vs {})",
                pq.scales[0], pd.scales[0], pq.zero_points[0], pd.zero_points[0]
            )));
        }
        if let Some(&(s, z)) = carried.acts.get(&src) {
            if s != pq.scales[0] || z != zp as i32 {
                return Err(what(format!("activation {src:?} is quantized twice with different parameters")));
            }
        }
        carried.acts.insert(src.clone(), (pq.scales[0], zp as i32));
        subst.insert(y, src);
        carried.pairs += 1;
    }

    // Rewire: readers of a DQ output read the float activation; a graph output that was a DQ
    // output renames the activation instead.
    let mut renames: VecMap<String, String> = VecMap::new();
    for (y, x) in subst.iter() {
        if outputs.contains_key(y) {
            renames.insert(x.clone(), y.clone());
        }
    }
    let resolve = |name: &str| -> String {
        let base = subst.get(name).cloned().unwrap_or_else(|| name.to_string());
        renames.get(&base).cloned().unwrap_or(base)
    };
    let mut kept = Vec::with_capacity(graph.node.len());
    for (i, mut n) in core::mem::take(&mut graph.node).into_iter().enumerate() {
        if remove[i] {
            continue;
        }
        for s in n.input.iter_mut().filter(|s| !s.is_empty()) {
            *s = resolve(s);
        }
        for s in n.output.iter_mut().filter(|s| !s.is_empty()) {
            if let Some(r) = renames.get(s.as_str()) {
                *s = r.clone();
            }
        }
        kept.push(n);
    }
    graph.node = kept;
    for vi in &mut graph.input {
        if let Some(n) = vi.name.as_mut() {
            if renames.contains_key(n.as_str()) {
                return Err(ConvertError::new(
                    Kind::Unsupported,
                    format!("graph input {n:?} is also a graph output through a QuantizeLinear/DequantizeLinear pair"),
                ));
            }
        }
    }
    for (from, to) in renames.iter() {
        if let Some(v) = carried.acts.remove(from) {
            carried.acts.insert(to.clone(), v);
        }
    }
    graph.initializer.extend(new_inits);

    // Weights of conv / Gemm / MatMul read through a DequantizeLinear.
    for n in &graph.node {
        let (Some(axis), Some(w), Some(out)) = (weight_out_axis(n), n.input.get(1), n.output.first()) else { continue };
        let Some(p) = dq_consts.get(w) else { continue };
        if p.zero_points.iter().any(|&z| z != 0) {
            continue; // asymmetric weights: the quantizer chooses its own
        }
        match p.axis {
            None => {
                carried.weights.insert(out.clone(), CarriedWeight { scales: p.scales.clone() });
            }
            Some(a) if a == axis => {
                carried.weights.insert(out.clone(), CarriedWeight { scales: p.scales.clone() });
            }
            Some(_) => {} // per-channel along the input axis: not representable by our kernels
        }
    }
    Ok(carried)
}

/// Puts the carried parameters on the imported graph's tensors (see the [module docs](self)).
pub(crate) fn annotate(g: &mut Graph, carried: &Carried) {
    for t in &mut g.tensors {
        if t.is_constant() || t.dtype != DType::F32 {
            continue;
        }
        if let Some(&(s, z)) = carried.acts.get(&t.name) {
            t.quant = Some(TensorQuant::per_tensor(s, z));
        }
    }
    let mut marks: Vec<(usize, TensorQuant)> = Vec::new();
    for node in &g.nodes {
        let axis = match node.op {
            Op::Conv2d(_) | Op::FullyConnected(_) => 0,
            Op::DepthwiseConv2d(_) => 3,
            _ => continue,
        };
        let (Some(y), Some(w)) = (node.output(0), node.input(1)) else { continue };
        let Some(name) = g.tensor(y).map(|t| t.name.as_str()) else { continue };
        let cw =
            carried.weights.get(name).or_else(|| name.strip_suffix("/matmul").and_then(|b| carried.weights.get(b)));
        let (Some(cw), Some(wt)) = (cw, g.tensor(w)) else { continue };
        let q = if cw.scales.len() == 1 {
            TensorQuant::per_tensor(cw.scales[0], 0)
        } else if wt.shape.get(axis) == Some(&cw.scales.len()) {
            TensorQuant::per_channel(cw.scales.clone(), vec![0; cw.scales.len()], axis)
        } else {
            continue;
        };
        marks.push((w.index(), q));
    }
    for (i, q) in marks {
        if let Some(t) = g.tensors.get_mut(i) {
            t.quant = Some(q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_and_dequantize_like_onnx() {
        let p = QParams { scales: vec![0.5, 2.0], zero_points: vec![0, -1], code: dt::INT8, axis: Some(0) };
        // Round half to even: 0.25 / 0.5 = 0.5 → 0, 0.75 / 0.5 = 1.5 → 2; saturation.
        let q = quantize(&[0.25, 0.75, 300.0, -3.0], &[2, 2], &p).unwrap();
        assert_eq!(q, vec![0, 2, 127, -3]);
        let d = dequantize(&q, &[2, 2], &p).unwrap();
        assert_eq!(d, vec![0.0, 1.0, 256.0, -4.0]);
        assert!(quantize(&[1.0], &[1], &p).is_err());
    }
}
