//! The conversion: `ModelProto` → [`Graph`].
//!
//! 1. Decode the protobuf, check the opset, select the outputs and the nodes they need.
//! 2. Initializers and `Constant` nodes become [`Konst`]s (ONNX layout, not yet graph tensors);
//!    graph inputs become graph tensors with their static shape.
//! 3. Each needed node, in order: folded if all its inputs are constant and the op is one
//!    [`fold`] evaluates; otherwise converted to graph nodes, with every ONNX tensor tracked as
//!    a graph tensor plus a layout (see [`layout`]).
//! 4. Outputs, the input/output layouts ([`IoInfo`]), unused tensors pruned, [`Graph::validate`].

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use prost::Message;

use super::attr::Attrs;
use super::fold::{self, KData, Konst, norm_axis};
use super::tensor::{dt, dtype_name, konst_from_proto};
use super::{ImportOptions, Imported, IoInfo, MAX_OPSET, MIN_OPSET, pb};
use crate::graph::{
    Activation, ConstData, Conv2d, ConvertError, ConvertErrorKind as Kind, DType, DepthwiseConv2d, FullyConnected,
    Graph, GraphMetadata, Node, Op, Padding, Pool2d, Tensor, TensorId,
};
use crate::layout;
use crate::vecmap::{VecMap, VecSet};

/// An ONNX value: a constant (ONNX layout) or a graph tensor stored in some axis order.
#[derive(Debug, Clone)]
enum Value {
    Const(Konst),
    Act(Act),
}

/// A graph tensor holding an ONNX tensor: graph axis `i` is ONNX axis `perm[i]`.
#[derive(Debug, Clone)]
struct Act {
    id: TensorId,
    perm: Vec<usize>,
}

/// Where we are, for error messages.
struct Ctx<'a> {
    index: usize,
    node: &'a pb::NodeProto,
    op: &'a str,
    opset: i64,
}

impl Ctx<'_> {
    fn err(&self, kind: Kind, msg: impl Into<String>) -> ConvertError {
        ConvertError::new(kind, msg).at_node(self.index, self.op).with_node_name(self.name())
    }
    fn unsupported(&self, msg: impl Into<String>) -> ConvertError {
        self.err(Kind::Unsupported, msg)
    }
    fn name(&self) -> &str {
        self.node.name.as_deref().unwrap_or("")
    }
    /// Name for tensors this node creates besides its outputs.
    fn out_name(&self, i: usize) -> String {
        match self.node.output.get(i) {
            Some(o) if !o.is_empty() => o.clone(),
            _ => format!("{}:{i}", self.name()),
        }
    }
    fn attrs(&self) -> Attrs<'_> {
        Attrs::new(self.node)
    }
    /// Attribute errors get the node location.
    fn a<T>(&self, r: Result<T, ConvertError>) -> Result<T, ConvertError> {
        r.map_err(|e| self.loc(e))
    }
    /// Adds the node location to an error that has none.
    fn loc(&self, e: ConvertError) -> ConvertError {
        e.or_at_node(self.index, self.op).with_node_name(self.name())
    }
}

struct Builder {
    g: Graph,
    values: VecMap<String, Value>,
    /// `(tensor, target perm)` → a tensor holding the same ONNX tensor in the target order.
    converted: VecMap<(u32, Vec<usize>), TensorId>,
    /// Names read by the nodes we convert and by the selected outputs.
    used: VecSet<String>,
}

fn decode_error(e: prost::DecodeError, len: usize) -> ConvertError {
    let text = e.to_string();
    let kind = if text.contains("underflow") || text.contains("EOF") { Kind::Truncated } else { Kind::Malformed };
    ConvertError::new(kind, format!("not a valid ONNX protobuf ({len} bytes): {text}"))
}

pub(crate) fn import(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ConvertError> {
    let mut model = pb::ModelProto::decode(bytes).map_err(|e| decode_error(e, bytes.len()))?;
    // A QDQ model: Q/DQ pairs removed, the parameters they carry put on the tensors at the end.
    let carried = if super::qdq::is_qdq(&model) { Some(super::qdq::strip(&mut model)?) } else { None };
    let graph = model.graph.as_ref().ok_or_else(|| {
        ConvertError::new(Kind::Malformed, format!("no graph in the {}-byte protobuf: not an ONNX model", bytes.len()))
    })?;
    let opset = default_opset(&model)?;
    if graph.node.len() > crate::graph::MAX_NODES {
        return Err(ConvertError::new(
            Kind::Unsupported,
            format!("the graph has {} nodes, more than the {} supported", graph.node.len(), crate::graph::MAX_NODES),
        ));
    }
    let declared = graph.initializer.len().saturating_add(graph.input.len()).saturating_add(graph.value_info.len());
    if declared > crate::graph::MAX_TENSORS {
        return Err(ConvertError::new(
            Kind::Unsupported,
            format!("the graph declares {declared} tensors, more than the {} supported", crate::graph::MAX_TENSORS),
        ));
    }
    let mut b = Builder {
        g: Graph::new(GraphMetadata::new(
            format!("microquant {} onnx importer", env!("CARGO_PKG_VERSION")),
            format!(
                "ONNX IR {}, opset {opset}, producer {:?} {:?}, graph {:?}",
                model.ir_version.unwrap_or(0),
                model.producer_name.as_deref().unwrap_or(""),
                model.producer_version.as_deref().unwrap_or(""),
                graph.name.as_deref().unwrap_or("")
            ),
        )),
        values: VecMap::new(),
        converted: VecMap::new(),
        used: VecSet::new(),
    };

    // Outputs to import, and the nodes they need.
    let output_names: Vec<String> = match &options.outputs {
        Some(list) => {
            for n in list {
                if !graph.output.iter().any(|o| o.name.as_deref() == Some(n.as_str())) {
                    let have: Vec<&str> = graph.output.iter().filter_map(|o| o.name.as_deref()).collect();
                    return Err(ConvertError::new(
                        Kind::Malformed,
                        format!("the model has no output {n:?} (outputs: {have:?})"),
                    ));
                }
            }
            list.clone()
        }
        None => graph.output.iter().map(|o| o.name.clone().unwrap_or_default()).collect(),
    };
    if output_names.is_empty() {
        return Err(ConvertError::new(Kind::Malformed, "the graph has no outputs"));
    }
    let needed = needed_nodes(graph, &output_names, &mut b.used);

    // Initializers.
    for t in &graph.initializer {
        let name = t.name.clone().unwrap_or_default();
        if !b.used.contains_key(&name) {
            continue;
        }
        let k = konst_from_proto(t, &format!("initializer {name:?}"))?;
        b.values.insert(name, Value::Const(k));
    }
    if let Some(s) = graph.sparse_initializer.first() {
        let name = s.values.as_ref().and_then(|v| v.name.clone()).unwrap_or_default();
        if b.used.contains_key(&name) {
            return Err(ConvertError::new(Kind::Unsupported, format!("sparse initializer {name:?}")));
        }
    }

    // Graph inputs (those that are not initializers and are used).
    let mut inputs: Vec<IoInfo> = Vec::new();
    for (k, vi) in graph.input.iter().enumerate() {
        let name = vi.name.clone().unwrap_or_default();
        if b.values.contains_key(&name) || !b.used.contains_key(&name) {
            continue;
        }
        let shape = input_shape(vi, &name, k)?;
        let id = b.g.add_tensor(Tensor::new(name.clone(), shape.clone(), DType::F32))?;
        b.g.inputs.push(id);
        b.values.insert(name.clone(), Value::Act(Act { id, perm: layout::identity(shape.len()) }));
        inputs.push(IoInfo { name, model_shape: shape.clone(), perm: layout::identity(shape.len()) });
    }

    // Nodes.
    for (index, node) in graph.node.iter().enumerate() {
        if !needed.get(index).copied().unwrap_or(false) {
            continue;
        }
        let op = node.op_type.as_deref().unwrap_or("");
        let domain = node.domain.as_deref().unwrap_or("");
        let ctx = Ctx { index, node, op, opset };
        if !(domain.is_empty() || domain == "ai.onnx") {
            let v = model.opset_import.iter().find(|o| o.domain.as_deref() == Some(domain)).and_then(|o| o.version);
            return Err(ctx.err(
                Kind::UnsupportedOp,
                format!(
                    "ONNX op {op:?} of domain {domain:?} (opset {}) is not supported: only the default domain's ops are",
                    v.map_or("?".to_string(), |v| v.to_string())
                ),
            ));
        }
        b.convert_node(&ctx)?;
    }

    // Outputs.
    let mut outputs = Vec::new();
    for name in &output_names {
        let v = b.values.get(name).cloned().ok_or_else(|| {
            ConvertError::new(Kind::Malformed, format!("output {name:?} is not produced by any node"))
        })?;
        let act = match v {
            Value::Act(a) => a,
            Value::Const(_) => {
                return Err(ConvertError::new(
                    Kind::Unsupported,
                    format!("output {name:?} is a constant (it does not depend on any input)"),
                ));
            }
        };
        let model_shape = b.onnx_shape(&act);
        let (id, perm) = if options.keep_io_layout || layout::is_identity(&act.perm) {
            (b.in_order(&act, &layout::identity(act.perm.len()), name)?, layout::identity(act.perm.len()))
        } else {
            (act.id, act.perm.clone())
        };
        b.g.outputs.push(id);
        outputs.push(IoInfo { name: name.clone(), model_shape, perm });
    }

    if !options.keep_io_layout {
        b.absorb_input_transposes(&mut inputs);
    }
    if let Some(c) = &carried {
        super::qdq::annotate(&mut b.g, c);
    }
    b.g.prune_unused_tensors();
    b.g.validate()?;
    Ok(Imported { graph: b.g, inputs, outputs, opset })
}

/// The default-domain opset, checked to be supported.
fn default_opset(model: &pb::ModelProto) -> Result<i64, ConvertError> {
    let v = model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx")))
        .and_then(|o| o.version)
        .ok_or_else(|| ConvertError::new(Kind::Malformed, "the model imports no default-domain (ai.onnx) opset"))?;
    if !(MIN_OPSET..=MAX_OPSET).contains(&v) {
        return Err(ConvertError::new(
            Kind::Unsupported,
            format!(
                "opset {v} is outside the supported {MIN_OPSET}..={MAX_OPSET}: convert the model first \
                 (onnx.version_converter.convert_version(model, 17))"
            ),
        ));
    }
    Ok(v)
}

/// Marks the nodes the outputs depend on; fills `used` with every name they read.
fn needed_nodes(graph: &pb::GraphProto, outputs: &[String], used: &mut VecSet<String>) -> Vec<bool> {
    for o in outputs {
        used.add(o.clone());
    }
    let mut needed = vec![false; graph.node.len()];
    for (i, node) in graph.node.iter().enumerate().rev() {
        if node.output.iter().any(|o| !o.is_empty() && used.contains_key(o)) {
            needed[i] = true;
            for s in node.input.iter().filter(|s| !s.is_empty()) {
                used.add(s.clone());
            }
        }
    }
    needed
}

/// A graph input's static shape (dynamic batch → 1).
fn input_shape(vi: &pb::ValueInfoProto, name: &str, index: usize) -> Result<Vec<usize>, ConvertError> {
    let unsupported = |m: String| ConvertError::new(Kind::Unsupported, m);
    let tt = match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(pb::type_proto::Value::TensorType(t)) => t,
        _ => return Err(unsupported(format!("input {name:?} is not a tensor"))),
    };
    let elem = tt.elem_type.unwrap_or(0);
    if elem != dt::FLOAT {
        return Err(ConvertError::new(
            Kind::UnsupportedDType,
            format!("input {name:?} is {}: the importer takes float32 inputs", dtype_name(elem)),
        ));
    }
    let shape = tt
        .shape
        .as_ref()
        .ok_or_else(|| unsupported(format!("input {name:?} has no shape: give it a static shape when exporting")))?;
    let mut out = Vec::with_capacity(shape.dim.len());
    for (axis, d) in shape.dim.iter().enumerate() {
        use pb::tensor_shape_proto::dimension::Value as D;
        match &d.value {
            Some(D::DimValue(v)) if *v > 0 => out.push(*v as usize),
            Some(D::DimValue(v)) if axis == 0 && *v <= 0 => out.push(1),
            other if axis == 0 && !matches!(other, Some(D::DimValue(_))) => out.push(1),
            other => {
                let what = match other {
                    Some(D::DimParam(p)) => format!("dynamic ({p:?})"),
                    Some(D::DimValue(v)) => format!("{v}"),
                    None => "unknown".to_string(),
                };
                return Err(unsupported(format!(
                    "input {name:?} has a {what} extent on axis {axis} (only the batch axis 0 may be dynamic): \
                     fix it to a static size, e.g. export without dynamic_axes for it or use \
                     onnx.tools.update_model_dims.update_inputs_outputs_dims"
                ))
                .with_tensor(index, name));
            }
        }
    }
    // Refused before the graph allocates anything for it.
    if crate::graph::num_elements(&out).is_none_or(|n| n > crate::float::MAX_TENSOR_ELEMENTS) {
        return Err(unsupported(format!("input {name:?} of shape {out:?} has more than 2^26 elements"))
            .with_tensor(index, name));
    }
    Ok(out)
}

/// How a `Pad`/conv/pool pads, from ONNX `auto_pad` and `pads` (2-D: `[top, left, bottom, right]`).
fn resolve_padding(
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
                Padding::Explicit { top: p[0], left: p[1], bottom: p[2], right: p[3] }
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
            Ok(Padding::Explicit { top: pad[0], left: pad[1], bottom: pad[2], right: pad[3] })
        }
        other => Err(ctx.unsupported(format!("auto_pad {other:?}"))),
    }
}

fn pair(ctx: &Ctx, v: Option<Vec<i64>>, default: usize, what: &str) -> Result<[usize; 2], ConvertError> {
    match v.as_deref() {
        None | Some([]) => Ok([default, default]),
        Some([a, b]) if *a > 0 && *b > 0 => Ok([*a as usize, *b as usize]),
        Some(other) => Err(ctx.unsupported(format!("{what} {other:?}: expected 2 positive values (2-D only)"))),
    }
}

impl Builder {
    fn value(&self, ctx: &Ctx, name: &str) -> Result<Value, ConvertError> {
        self.values.get(name).cloned().ok_or_else(|| {
            ctx.err(
                Kind::Malformed,
                format!("input {name:?} is not defined before this node (nodes must be in topological order)"),
            )
        })
    }

    /// Input `i` (None if absent or empty-named).
    fn input(&self, ctx: &Ctx, i: usize) -> Result<Option<Value>, ConvertError> {
        match ctx.node.input.get(i) {
            Some(n) if !n.is_empty() => self.value(ctx, n).map(Some),
            _ => Ok(None),
        }
    }

    fn act_input(&self, ctx: &Ctx, i: usize) -> Result<Act, ConvertError> {
        match self.input(ctx, i)? {
            Some(Value::Act(a)) => Ok(a),
            Some(Value::Const(_)) => {
                Err(ctx.unsupported(format!("input {i} is a constant; this op is only converted on activations")))
            }
            None => Err(ctx.err(Kind::Malformed, format!("input {i} is missing"))),
        }
    }

    fn const_input(&self, ctx: &Ctx, i: usize, what: &str) -> Result<Option<Konst>, ConvertError> {
        match self.input(ctx, i)? {
            Some(Value::Const(k)) => Ok(Some(k)),
            Some(Value::Act(_)) => Err(ctx
                .unsupported(format!("{what} (input {i}) is computed at run time; only constant {what} is supported"))),
            None => Ok(None),
        }
    }

    fn shape(&self, id: TensorId) -> Vec<usize> {
        self.g.tensor(id).map(|t| t.shape.clone()).unwrap_or_default()
    }

    /// The ONNX shape of an activation.
    fn onnx_shape(&self, a: &Act) -> Vec<usize> {
        let gs = self.shape(a.id);
        let mut s = vec![0; gs.len()];
        for (i, &p) in a.perm.iter().enumerate() {
            if let (Some(slot), Some(&d)) = (s.get_mut(p), gs.get(i)) {
                *slot = d;
            }
        }
        s
    }

    fn set(&mut self, ctx: &Ctx, i: usize, v: Value) {
        if let Some(n) = ctx.node.output.get(i) {
            if !n.is_empty() {
                self.values.insert(n.clone(), v);
            }
        }
    }

    /// Fails if output `i` of the node is read by a converted node or selected as an output.
    fn check_unused_output(&self, ctx: &Ctx, i: usize, what: &str) -> Result<(), ConvertError> {
        match ctx.node.output.get(i) {
            Some(n) if !n.is_empty() && self.used.contains_key(n) => {
                Err(ctx.unsupported(format!("output {i} ({what}) is used; only inference outputs are supported")))
            }
            _ => Ok(()),
        }
    }

    /// Adds a node with one new f32 output tensor named `out`.
    fn emit(
        &mut self,
        ctx: &Ctx,
        name: &str,
        op: Op,
        inputs: Vec<Option<TensorId>>,
        out: &str,
    ) -> Result<TensorId, ConvertError> {
        let node = Node::new(name, op, inputs, Vec::new());
        let shapes = self
            .g
            .infer_output_shapes(&node)
            .map_err(|e| e.or_at_node(ctx.index, ctx.op).with_node_name(ctx.name()))?;
        let shape = shapes.into_iter().next().unwrap_or_default();
        if crate::graph::num_elements(&shape).is_none_or(|n| n > crate::float::MAX_TENSOR_ELEMENTS) {
            return Err(ctx.unsupported(format!("output of shape {shape:?}: more than 2^26 elements")));
        }
        let id = self.g.add_tensor(Tensor::new(out, shape, DType::F32))?;
        let mut node = node;
        node.outputs.push(id);
        self.g.add_node(node);
        Ok(id)
    }

    /// A constant as a graph tensor (floats only: weights, biases, operands).
    fn const_tensor(&mut self, ctx: &Ctx, k: &Konst, name: &str) -> Result<TensorId, ConvertError> {
        let data = match &k.data {
            KData::F32(v) => ConstData::F32(v.clone()),
            KData::I64(v) => ConstData::F32(v.iter().map(|&x| x as f32).collect()),
            KData::Bool(_) => {
                return Err(ctx.err(Kind::UnsupportedDType, format!("bool constant {name:?} used as data")));
            }
        };
        self.g.add_tensor(Tensor::constant(name, k.shape.clone(), data))
    }

    /// The activation stored in `target` order (graph axis i = ONNX axis `target[i]`), adding a
    /// transpose (or a free reshape when only extent-1 axes move) if needed.
    fn in_order(&mut self, a: &Act, target: &[usize], name: &str) -> Result<TensorId, ConvertError> {
        if a.perm == target {
            return Ok(a.id);
        }
        let key = (a.id.0, target.to_vec());
        if let Some(&id) = self.converted.get(&key) {
            return Ok(id);
        }
        let inv = layout::inverse(&a.perm);
        // Output axis i is ONNX axis target[i], at graph axis inv[target[i]] of the input.
        let perm: Vec<usize> = target.iter().map(|&t| inv.get(t).copied().unwrap_or(0)).collect();
        let shape = self.shape(a.id);
        let out_shape = layout::permute_shape(&shape, &perm);
        let (op, suffix) = if layout::is_data_preserving(&shape, &perm) {
            (Op::Reshape { new_shape: out_shape }, "reshape")
        } else {
            (Op::Transpose { perm }, "transpose")
        };
        let out = format!("{name}/{suffix}");
        let node = Node::new(out.clone(), op, vec![Some(a.id)], Vec::new());
        let shapes = self.g.infer_output_shapes(&node)?;
        let id = self.g.add_tensor(Tensor::new(out, shapes.into_iter().next().unwrap_or_default(), DType::F32))?;
        let mut node = node;
        node.outputs.push(id);
        self.g.add_node(node);
        self.converted.insert(key, id);
        Ok(id)
    }

    /// The activation in the ONNX order (identity layout).
    fn plain(&mut self, a: &Act, name: &str) -> Result<TensorId, ConvertError> {
        self.in_order(a, &layout::identity(a.perm.len()), name)
    }

    fn convert_node(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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
            "Gemm" => self.gemm(ctx),
            "MatMul" => self.matmul(ctx),
            "Add" | "Sub" | "Mul" | "Div" => {
                let op_g = match op {
                    "Add" => Op::Add { activation: Activation::None },
                    "Sub" => Op::Sub { activation: Activation::None },
                    "Mul" => Op::Mul { activation: Activation::None },
                    _ => Op::Div { activation: Activation::None },
                };
                let a = self.input(ctx, 0)?.ok_or_else(|| ctx.err(Kind::Malformed, "input 0 is missing"))?;
                let b = self.input(ctx, 1)?.ok_or_else(|| ctx.err(Kind::Malformed, "input 1 is missing"))?;
                let out = ctx.out_name(0);
                let v = self.binary(ctx, op_g, &a, &b, &out)?;
                self.set(ctx, 0, v);
                Ok(())
            }
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
            "ReduceMean" => self.reduce_mean(ctx),
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
            "Cast" => {
                let to = ctx.a(ctx.attrs().int("to"))?.unwrap_or(0);
                if to != i64::from(dt::FLOAT) {
                    return Err(ctx.unsupported(format!("Cast of an activation to {}", dtype_name(to as i32))));
                }
                let a = self.act_input(ctx, 0)?;
                self.set(ctx, 0, Value::Act(a));
                Ok(())
            }
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

    fn constant_node(&self, ctx: &Ctx) -> Result<Konst, ConvertError> {
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

    fn unary(&mut self, ctx: &Ctx, op: Op) -> Result<(), ConvertError> {
        let a = self.act_input(ctx, 0)?;
        let out = ctx.out_name(0);
        let id = self.emit(ctx, ctx.name(), op, vec![Some(a.id)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: a.perm }));
        Ok(())
    }

    /// Elementwise binary op with NumPy broadcasting, in the layout of the first full-rank
    /// activation operand.
    fn binary(&mut self, ctx: &Ctx, op: Op, a: &Value, b: &Value, out: &str) -> Result<Value, ConvertError> {
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
        let id = self.emit(ctx, ctx.name(), op, ids, out)?;
        Ok(Value::Act(Act { id, perm: target }))
    }

    fn conv(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let x = self.act_input(ctx, 0)?;
        let xs = self.onnx_shape(&x);
        if xs.len() != 4 {
            return Err(ctx.unsupported(format!(
                "Conv of a rank-{} input {xs:?}: only 2-D convolutions (NCHW) are supported",
                xs.len()
            )));
        }
        let w =
            self.const_input(ctx, 1, "the weight")?.ok_or_else(|| ctx.err(Kind::Malformed, "Conv without weights"))?;
        let bias = self.const_input(ctx, 2, "the bias")?;
        let attrs = ctx.attrs();
        let group = ctx.a(attrs.int_or("group", 1))?;
        let ws = w.shape.clone();
        let (m, cg, kh, kw) = match ws.as_slice() {
            &[m, cg, kh, kw] => (m, cg, kh, kw),
            _ => {
                return Err(
                    ctx.err(Kind::Malformed, format!("Conv weights of shape {ws:?}, expected [M, C/group, kH, kW]"))
                );
            }
        };
        let stride = pair(ctx, ctx.a(attrs.ints("strides"))?, 1, "strides")?;
        let dilation = pair(ctx, ctx.a(attrs.ints("dilations"))?, 1, "dilations")?;
        let pads = ctx.a(attrs.ints("pads"))?.unwrap_or_default();
        let auto_pad = ctx.a(attrs.string("auto_pad"))?.unwrap_or_default();
        let padding = resolve_padding(ctx, &auto_pad, &pads, [kh, kw], stride, dilation, [xs[2], xs[3]])?;
        let c = xs[1];
        let xid = self.in_order(&x, &layout::channels_last(4), &ctx.out_name(0))?;
        let out = ctx.out_name(0);
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
                activation: Activation::None,
            })
        } else if group as usize == c && cg == 1 && m % c == 0 {
            Op::DepthwiseConv2d(DepthwiseConv2d {
                stride_h: stride[0],
                stride_w: stride[1],
                dilation_h: dilation[0],
                dilation_w: dilation[1],
                depth_multiplier: m / c,
                padding,
                activation: Activation::None,
            })
        } else {
            return Err(ctx.unsupported(format!(
                "grouped convolution with group {group} over {c} input channels: only group 1 and depthwise (group = channels) are supported"
            )));
        };
        // OHWI for conv, [1, kh, kw, M] for depthwise.
        let filter = if matches!(op, Op::Conv2d(_)) { w.transpose(&[0, 2, 3, 1]) } else { w.transpose(&[1, 2, 3, 0]) };
        let wid = self.const_tensor(ctx, &ctx.a(filter)?, &format!("{out}/filter"))?;
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid), Some(wid), bias_id], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::channels_last(4) }));
        Ok(())
    }

    /// A fully-connected node on a 2-D (or keep_num_dims) input with `[out, in]` weights.
    fn fully_connected(
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
            Op::FullyConnected(FullyConnected { activation: Activation::None, keep_num_dims }),
            vec![Some(xid), Some(wid), bid],
            out,
        )
    }

    fn gemm(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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
                self.binary(ctx, Op::Mul { activation: Activation::None }, &c, &k, &format!("{out}/beta_c"))?
            };
            v = self.binary(ctx, Op::Add { activation: Activation::None }, &v, &c, &out)?;
        }
        self.set(ctx, 0, v);
        Ok(())
    }

    fn matmul(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let a = match self.input(ctx, 0)? {
            Some(Value::Act(a)) => a,
            _ => return Err(ctx.unsupported("MatMul with a constant first operand")),
        };
        let bk = match self.input(ctx, 1)? {
            Some(Value::Const(k)) => k,
            _ => {
                return Err(
                    ctx.unsupported("MatMul of two activations: only a constant second operand (weights) is supported")
                );
            }
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

    fn batch_norm(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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
            Op::Mul { activation: Activation::None },
            &Value::Act(x),
            &Value::Const(Konst::f32(kshape.clone(), scale)),
            &format!("{out}/scale"),
        )?;
        let y = self.binary(
            ctx,
            Op::Add { activation: Activation::None },
            &y,
            &Value::Const(Konst::f32(kshape, shift)),
            &out,
        )?;
        self.set(ctx, 0, y);
        Ok(())
    }

    fn clip(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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
        } else {
            return Err(
                ctx.unsupported(format!("Clip to [{lo}, {hi}]: only [0, 6] (ReLU6) and [0, inf) (ReLU) are supported"))
            );
        };
        self.unary(ctx, op)
    }

    fn softmax(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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

    fn pool(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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
            if let Padding::Explicit { top, bottom, left, right } = padding {
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
                Padding::Explicit { top, bottom, left, right } => (top, bottom, left, right),
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
                Padding::Explicit { top: t, bottom: b, left: l, right: r }
            };
        }
        let p = Pool2d {
            filter_h: kernel[0],
            filter_w: kernel[1],
            stride_h: stride[0],
            stride_w: stride[1],
            padding,
            activation: Activation::None,
        };
        let op = if max { Op::MaxPool2d(p) } else { Op::AvgPool2d(p) };
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::channels_last(4) }));
        Ok(())
    }

    fn global_pool(&mut self, ctx: &Ctx, max: bool) -> Result<(), ConvertError> {
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
                activation: Activation::None,
            })
        } else {
            Op::Mean { axes: (1..r - 1).collect(), keep_dims: true }
        };
        let id = self.emit(ctx, ctx.name(), op, vec![Some(xid)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: target }));
        Ok(())
    }

    /// ONNX reshape of `a` to `target` (ONNX order): a graph reshape of the data in ONNX order.
    fn reshape_to(&mut self, ctx: &Ctx, a: &Act, target: Vec<usize>) -> Result<(), ConvertError> {
        let out = ctx.out_name(0);
        let gs = self.shape(a.id);
        let src = if layout::is_data_preserving(&gs, &layout::inverse(&a.perm)) { a.id } else { self.plain(a, &out)? };
        let r = target.len();
        let id = self.emit(ctx, ctx.name(), Op::Reshape { new_shape: target }, vec![Some(src)], &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: layout::identity(r) }));
        Ok(())
    }

    /// Removes ONNX axes `removed` (sorted) from a layout.
    fn drop_axes(perm: &[usize], removed: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let graph_axes: Vec<usize> = (0..perm.len()).filter(|&i| removed.contains(&perm[i])).collect();
        let new_perm = perm
            .iter()
            .filter(|p| !removed.contains(p))
            .map(|&p| p - removed.iter().filter(|&&r| r < p).count())
            .collect();
        (graph_axes, new_perm)
    }

    fn squeeze(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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

    fn unsqueeze(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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

    fn concat(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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
        let id =
            self.emit(ctx, ctx.name(), Op::Concatenation { axis: gaxis, activation: Activation::None }, ids, &out)?;
        self.set(ctx, 0, Value::Act(Act { id, perm: target }));
        Ok(())
    }

    fn pad(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let mode = ctx.a(ctx.attrs().string("mode"))?.unwrap_or_else(|| "constant".to_string());
        if mode != "constant" {
            return Err(ctx.unsupported(format!("Pad mode {mode:?}: only \"constant\"")));
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

    fn reduce_mean(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
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

    /// A graph input read only through one transpose becomes that transpose's output: the
    /// caller reorders the data instead ([`IoInfo::perm`]).
    fn absorb_input_transposes(&mut self, inputs: &mut [IoInfo]) {
        for (k, info) in inputs.iter_mut().enumerate() {
            let Some(&id) = self.g.inputs.get(k) else { continue };
            if self.g.outputs.contains(&id) {
                continue;
            }
            let consumers = self.g.consumers(id);
            let [only] = consumers.as_slice() else { continue };
            let Some(node) = self.g.nodes.get(*only) else { continue };
            let perm = match &node.op {
                Op::Transpose { perm } => perm.clone(),
                Op::Reshape { new_shape } if new_shape.len() == info.model_shape.len() => {
                    // A data-preserving reorder emitted by `in_order`: find its permutation.
                    match self.converted.iter().find(|(_, v)| Some(**v) == node.output(0)) {
                        Some(((_, p), _)) => p.clone(),
                        None => continue,
                    }
                }
                _ => continue,
            };
            let Some(out) = node.output(0) else { continue };
            if node.inputs.len() != 1 {
                continue;
            }
            // The transposed tensor becomes the graph input; the node goes.
            let new_shape = layout::permute_shape(&info.model_shape, &perm);
            if self.g.tensor(out).map(|t| &t.shape) != Some(&new_shape) {
                continue;
            }
            self.g.nodes.remove(*only);
            if let Some(slot) = self.g.inputs.get_mut(k) {
                *slot = out;
            }
            if let (Some(name), Some(t)) = (self.g.tensor(id).map(|t| t.name.clone()), self.g.tensor_mut(out)) {
                t.name = name;
            }
            info.perm = perm;
        }
    }
}
