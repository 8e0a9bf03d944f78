//! The conversion: `ModelProto` → [`Graph`].
//!
//! 1. Decode the protobuf, check the opset, select the outputs and the nodes they need.
//! 2. Initializers and `Constant` nodes become [`Konst`]s (ONNX layout, not yet graph tensors);
//!    graph inputs become graph tensors with their static shape.
//! 3. Each needed node, in order: folded if all its inputs are constant and the op is one
//!    [`fold`] evaluates; otherwise converted to graph nodes, with every ONNX tensor tracked as
//!    a graph tensor plus a layout (see [`layout`]).
//! 4. Outputs, the input/output layouts ([`IoInfo`]), unused tensors pruned, [`Graph::validate`].

mod dispatch;
mod inputs;
mod ops_activation;
mod ops_binary;
mod ops_control;
mod ops_conv;
mod ops_elementwise;
mod ops_movement;
mod ops_norm;
mod ops_recurrent;
mod ops_shape;
mod ops_spatial;

pub(crate) use inputs::model_inputs;

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
    ConstData, Conv2d, ConvertError, ConvertErrorKind as Kind, DType, DepthwiseConv2d, FullyConnected, FusedActivation,
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

    // Graph inputs (those that are not initializers and are used): float data, or constants
    // when given a value.
    inputs::check_option_names(graph, options)?;
    let mut inputs: Vec<IoInfo> = Vec::new();
    for (k, vi) in graph.input.iter().enumerate() {
        let name = vi.name.clone().unwrap_or_default();
        if b.values.contains_key(&name) || !b.used.contains_key(&name) {
            continue;
        }
        let shape = match inputs::resolve_input(vi, &name, k, options)? {
            inputs::InputKind::Data(shape) => shape,
            inputs::InputKind::Const(konst) => {
                b.values.insert(name, Value::Const(konst));
                continue;
            }
        };
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
            if node.op_type.as_deref() == Some("If") {
                // A branch needs only what the If's used outputs need (`if_node` converts just that).
                for g in node.attribute.iter().filter_map(|a| a.g.as_ref()) {
                    needed_nodes(g, &branch_outputs_used(g, &node.output, used), used);
                }
            } else {
                for a in &node.attribute {
                    for g in a.g.iter().chain(&a.graphs) {
                        subgraph_reads(g, used);
                    }
                }
            }
        }
    }
    needed
}

/// The names of a branch's outputs whose If outputs (`if_outputs`, by position) are used.
fn branch_outputs_used(branch: &pb::GraphProto, if_outputs: &[String], used: &VecSet<String>) -> Vec<String> {
    branch
        .output
        .iter()
        .zip(if_outputs)
        .filter(|(_, o)| !o.is_empty() && used.contains_key(*o))
        .map(|(b, _)| b.name.clone().unwrap_or_default())
        .collect()
}

/// Adds every name the nodes of a subgraph (an `If` branch) read, and its outputs: the branch
/// may read the outer graph's tensors (initializers among them) without naming them as inputs.
fn subgraph_reads(graph: &pb::GraphProto, used: &mut VecSet<String>) {
    for o in &graph.output {
        used.add(o.name.clone().unwrap_or_default());
    }
    for node in &graph.node {
        for s in node.input.iter().chain(&node.output).filter(|s| !s.is_empty()) {
            used.add(s.clone());
        }
        for a in &node.attribute {
            for g in a.g.iter().chain(&a.graphs) {
                subgraph_reads(g, used);
            }
        }
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
            Some(Value::Act(_)) => Err(ctx.unsupported(format!(
                "{what} (input {i}, {:?}) is computed at run time; only constant {what} is supported \
                 (if it depends on a dynamic input shape or a non-float input, fix those at conversion: \
                 --input-shape / --input-value)",
                ctx.node.input.get(i).map_or("", String::as_str)
            ))),
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
