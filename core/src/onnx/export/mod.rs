//! QDQ ONNX out: a quantized [`Graph`] written as an ONNX model in which every quantized tensor
//! is a float tensor followed by `QuantizeLinear` → `DequantizeLinear` with its scale and zero
//! point, weights are int8 initializers read through `DequantizeLinear` (per channel: `axis`),
//! and biases int32 initializers read through `DequantizeLinear` (scale `input_scale ·
//! weight_scale`). The float ops between them are the ops of the graph: ONNX Runtime (or any
//! ONNX runtime) then computes what the int8 model computes, up to its own rounding: that is
//! [`export_qdq_portable`]. [`export_qdq`] (what `microquant quantize --qdq` writes) goes further:
//! the int8 layers whose TFLite Micro arithmetic rounds differently from one float rounding
//! (conv, depthwise conv, fully connected, add, mul, average pooling, mean, concatenation,
//! hard-swish, logistic, tanh, batch matmul, LSTM) are written as ONNX ops computing the `.mq`'s
//! integers exactly (`exact.rs` has the table, `lstm.rs` the LSTM), so ONNX Runtime, with or
//! without its graph optimizations, gives the `.mq`'s outputs; the other ops are exact in QDQ form already (max pooling, pad, reshape,
//! transpose, ReLU with shared parameters) or keep the QDQ form (softmax, sub, div, leaky ReLU,
//! int16 layers).
//!
//! # Layout
//! ONNX convolutions are NCHW: every 4-D activation is NCHW inside the exported model, every
//! other tensor has our order, and transposes are inserted where an op needs the data in our
//! order (a reshape of a 4-D tensor, a fully connected layer reading one). Model inputs and
//! outputs take the layout [`QdqExportOptions::inputs`] / [`QdqExportOptions::outputs`] give
//! (the ONNX importer's [`IoInfo`]: the source model's own layout, e.g. NCHW for a PyTorch
//! export), with a transpose at the boundary when it differs from the inside.
//!
//! # Ops
//! | graph | ONNX |
//! |---|---|
//! | `Conv2d`, `DepthwiseConv2d` (+ fused activation) | `Conv` (`group` = channels for depthwise), `Relu` / `Clip` |
//! | `FullyConnected` | `Gemm` (`transB` 1; a `Reshape` first for inputs of rank ≠ 2), or `MatMul` + `Add` with `keep_num_dims` |
//! | `MaxPool2d`, `AvgPool2d` | `MaxPool`, `AveragePool` (`count_include_pad` 0, as TFLite) |
//! | `Add`, `Sub`, `Mul`, `Div` | the same (constant operands as int8 initializers + `DequantizeLinear`) |
//! | `Minimum`, `Maximum`, `Prelu` | `Min`, `Max`, `PRelu` |
//! | `SquaredDifference` | `Sub` then `Mul` of the difference by itself |
//! | `Softmax`, `Logistic`, `Tanh`, `HardSwish`, `Relu`, `Relu6`, `LeakyRelu` | `Softmax`, `Sigmoid`, `Tanh`, `HardSwish`, `Relu`, `Clip`, `LeakyRelu` |
//! | `Clip`, `Abs`, `Neg`, `Rsqrt`, `Elu` | `Clip`, `Abs`, `Neg`, `Sqrt` then `Reciprocal`, `Elu` (between `DequantizeLinear` and `QuantizeLinear`) |
//! | `Concatenation`, `Pad`, `Mean` | `Concat`, `Pad` (constant 0), `ReduceMean` |
//! | `Reshape`, `Squeeze`, `Transpose` | `Reshape`, `Reshape`, `Transpose` |
//! | `Sum`, `ReduceMax` | `ReduceSum`, `ReduceMax` |
//! | `BatchMatMul` | `MatMul` (a `Transpose` of the last two axes first for `adj_x` / `adj_y`); exact in [`export_qdq`] (int8) |
//! | `Resize` | `Resize` with `sizes` (bilinear: `linear` with `asymmetric` / `align_corners` / `half_pixel`; nearest: `asymmetric` + `floor`, `align_corners` + `round_prefer_ceil`, `tf_half_pixel_for_nn` + `floor`; nearest with both flags: an error) |
//! | `Quantize` (int8 ↔ int16 conversion) | nothing: its output's `QuantizeLinear` requantizes |
//! | `Lstm` (int8) | [`export_qdq`] only: every time step unrolled into the ONNX ops of TFLite Micro's integer LSTM (`lstm.rs`); the portable form refuses it |
//!
//! # LSTM state
//! The `.mq` keeps an LSTM's hidden and cell state between invokes (a stream is fed in
//! consecutive calls). [`export_qdq`] carries it through graph inputs and outputs added per LSTM
//! node, named after the node: `<node>/h_in` (int8, `[batch, cell]`, the hidden state's int8
//! values: the LSTM output's scale and zero point), `<node>/c_in` (int16, `[batch, cell]`, the
//! cell state at its power-of-two scale), and `<node>/h_out`, `<node>/c_out` (after the model's
//! own outputs): the state after the call. Feed each call's `*_out` to the next call's `*_in`;
//! the start state (the `.mq`'s, real zero: the hidden state at its zero point, the cell state
//! 0) is the initializer each state input carries under its own name, what a call that does not
//! feed it gets. A model without LSTM has no such inputs or outputs.
//!
//! int16 activations need `QuantizeLinear` of opset 21 ([`QdqExportOptions::opset`]); int64
//! biases (16x8 layers) are written as int32 when they fit. int4 weights (W4A8 layers) are ONNX
//! `INT4` initializers (data type 22, packed two per byte, the low nibble first, as the ONNX spec
//! and TFLite both pack them) read by `DequantizeLinear`, which takes `INT4` from opset 21.
//!
//! A weight-only graph ([`crate::ptq::quantize_weight_only`]: f32 activations, int8 weights)
//! is written the same way without the activations' QuantizeLinear/DequantizeLinear pairs: its
//! weights are int8 initializers read through `DequantizeLinear`, its biases float initializers.
//!
//! The bytes are deterministic: the same graph and options give the same file. The message is
//! built with the generated ONNX types and encoded by `write.rs` (the bytes prost would write,
//! without prost's encoders for every ONNX message in the `.wasm`).

mod exact;
mod lstm;
mod movement;
mod nodes;
mod proto;
mod quant;
mod unary;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::IoInfo;
use super::pb;
use super::tensor::{dt, le_f32, le16, le32, le64};
use crate::graph::{
    ConstData, ConvertError, ConvertErrorKind as Kind, DType, FusedActivation, Graph, Node, Op, Padding, Tensor,
    TensorId,
};
use crate::layout;
use crate::vecmap::VecMap;

/// Options of [`export_qdq`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QdqExportOptions {
    /// Default-domain opset: 17 (the default) or 21 (needed for int16 activations and int4
    /// weights).
    pub opset: i64,
    /// Layout of each graph input in the written model (the ONNX importer's
    /// [`Imported::inputs`](super::Imported::inputs)); empty: the graph's own layout.
    pub inputs: Vec<IoInfo>,
    /// Layout of each graph output (the importer's [`Imported::outputs`](super::Imported::outputs));
    /// empty: the graph's own layout.
    pub outputs: Vec<IoInfo>,
    /// The ONNX graph name.
    pub graph_name: String,
}

impl Default for QdqExportOptions {
    /// Opset 17, the graph's own layout, graph name `microquant`.
    fn default() -> Self {
        Self { opset: 17, inputs: Vec::new(), outputs: Vec::new(), graph_name: String::from("microquant") }
    }
}

/// Writes a quantized graph (from [`crate::ptq::quantize`] or the TFLite importer) as a QDQ ONNX
/// model (its module docs describe the graph it writes).
///
/// # Errors
/// `Unsupported` for an opset other than 17 to 21, int16 activations or int4 weights below
/// opset 21, ops
/// outside the table; `InvalidGraph` for
/// [`Graph::validate`]'s errors or [`IoInfo`]s that do not match the graph.
pub fn export_qdq(graph: &Graph, options: &QdqExportOptions) -> Result<Vec<u8>, ConvertError> {
    export(graph, options, false, true)
}

/// Writes a quantized graph as a plain QDQ ONNX model: every layer `DequantizeLinear` → float op
/// → `QuantizeLinear`, the patterns ONNX Runtime fuses into its int8 kernels (`QLinearConv`,
/// `QGemm`, ...) and other QDQ consumers (our own importer too) read, but which round once from
/// the real value where TFLite Micro rounds twice: each layer within one step of the `.mq`, and
/// those steps add up through deep models. [`export_qdq`] writes the int8 layers so that ONNX
/// Runtime computes the `.mq`'s integers exactly.
///
/// # Errors
/// As [`export_qdq`].
pub fn export_qdq_portable(graph: &Graph, options: &QdqExportOptions) -> Result<Vec<u8>, ConvertError> {
    export(graph, options, false, false)
}

/// Writes a model whose weights alone are quantized ([`crate::ptq::Hybrid`]): weight-only as
/// [`export_qdq`] writes its graph (int8 weights through `DequantizeLinear`, float
/// activations); dynamic as ONNX Runtime's `quantize_dynamic` writes its models, each quantized
/// layer as `DynamicQuantizeLinear` → `ConvInteger` / `MatMulInteger` (int8 weights) → `Cast` →
/// `Mul` by `x_scale · w_scale` → `Add` of the float bias, then the fused activation.
///
/// # Errors
/// As [`export_qdq`].
pub fn export_hybrid(hybrid: &crate::ptq::Hybrid, options: &QdqExportOptions) -> Result<Vec<u8>, ConvertError> {
    export(&hybrid.graph, options, hybrid.mode == crate::ptq::HybridMode::Dynamic, false)
}

fn export(graph: &Graph, options: &QdqExportOptions, dynamic: bool, exact: bool) -> Result<Vec<u8>, ConvertError> {
    if !(17..=21).contains(&options.opset) {
        return Err(ConvertError::new(
            Kind::Unsupported,
            format!("QDQ export to opset {}: 17 to 21 only", options.opset),
        ));
    }
    graph.validate()?;
    let mut e = Exporter::new(graph, options);
    e.dynamic = dynamic;
    e.exact = exact;
    e.run()?;
    let model = pb::ModelProto {
        ir_version: Some(if options.opset <= 17 {
            8
        } else if options.opset <= 20 {
            9
        } else {
            10
        }),
        opset_import: vec![pb::OperatorSetIdProto { domain: Some(String::new()), version: Some(options.opset) }],
        producer_name: Some(String::from("microquant")),
        producer_version: Some(String::from(env!("CARGO_PKG_VERSION"))),
        graph: Some(pb::GraphProto {
            node: e.nodes,
            name: Some(options.graph_name.clone()),
            initializer: e.inits,
            input: e.inputs,
            output: e.outputs,
            ..Default::default()
        }),
        ..Default::default()
    };
    Ok(super::write::encode_model(&model))
}

/// NCHW inside: ONNX axis `j` of a 4-D activation is our (NHWC) axis `NCHW[j]`.
const NCHW: [usize; 4] = [0, 3, 1, 2];

fn err(msg: String) -> ConvertError {
    ConvertError::new(Kind::Unsupported, msg)
}

use proto::*;

/// The name and axis order (relative to ours) of an ONNX value holding a graph tensor.
#[derive(Debug, Clone)]
struct Val {
    name: String,
    /// ONNX axis `j` is our axis `perm[j]`.
    perm: Vec<usize>,
}

struct Exporter<'g> {
    g: &'g Graph,
    opts: &'g QdqExportOptions,
    nodes: Vec<pb::NodeProto>,
    inits: Vec<pb::TensorProto>,
    inputs: Vec<pb::ValueInfoProto>,
    outputs: Vec<pb::ValueInfoProto>,
    /// Unique base name of every tensor.
    names: Vec<String>,
    /// The dequantized value of each activation, once written.
    deq: VecMap<u32, Val>,
    /// (value name, target perm) → converted value name.
    converted: VecMap<(String, Vec<usize>), String>,
    /// (constant, perm) → its dequantized value.
    constants: VecMap<(u32, Vec<usize>), String>,
    used: VecMap<String, usize>,
    /// Hybrid layers (f32 input, int8 weights) as integer ops with the input quantized per
    /// call ([`export_hybrid`]).
    dynamic: bool,
    /// int8 layers written to compute the `.mq`'s integers exactly ([`export_qdq`]; `exact.rs`).
    exact: bool,
    /// Node names written so far (ONNX Runtime refuses two nodes with one name).
    node_names: VecMap<String, usize>,
    /// Graph outputs written after the model's own: the LSTM states (`lstm.rs`).
    state_outputs: Vec<pb::ValueInfoProto>,
}

impl<'g> Exporter<'g> {
    fn new(g: &'g Graph, opts: &'g QdqExportOptions) -> Self {
        let mut used: VecMap<String, usize> = VecMap::new();
        let mut names = Vec::with_capacity(g.tensors.len());
        for (i, t) in g.tensors.iter().enumerate() {
            let base = if t.name.is_empty() { format!("t{i}") } else { t.name.clone() };
            let n = used.get_or_insert(base.clone(), 0);
            *n += 1;
            names.push(if *n == 1 { base } else { format!("{base}__{i}") });
        }
        Self {
            g,
            opts,
            nodes: Vec::new(),
            node_names: VecMap::new(),
            inits: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            names,
            deq: VecMap::new(),
            converted: VecMap::new(),
            constants: VecMap::new(),
            used,
            dynamic: false,
            exact: false,
            state_outputs: Vec::new(),
        }
    }

    /// A fresh unique name derived from `base`.
    fn fresh(&mut self, base: &str) -> String {
        let n = self.used.get_or_insert(base.to_string(), 0);
        *n += 1;
        if *n == 1 { base.to_string() } else { format!("{base}__{}", *n - 1) }
    }

    fn node(
        &mut self,
        op: &str,
        name: &str,
        inputs: Vec<String>,
        outputs: Vec<String>,
        attrs: Vec<pb::AttributeProto>,
    ) {
        // A name already given to a node gets the first free `_<n>` suffix (an imported graph may
        // name a node like the model output whose `Identity` is written here).
        let mut unique = name.to_string();
        while self.node_names.contains_key(&unique) {
            let n = self.node_names.get_or_insert(name.to_string(), 0);
            *n += 1;
            unique = format!("{name}_{n}");
        }
        self.node_names.insert(unique.clone(), 0);
        self.nodes.push(pb::NodeProto {
            input: inputs,
            output: outputs,
            name: Some(unique),
            op_type: Some(op.to_string()),
            domain: Some(String::new()),
            attribute: attrs,
            ..Default::default()
        });
    }

    fn tensor(&self, id: TensorId) -> Result<&'g Tensor, ConvertError> {
        self.g.tensor(id).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("tensor {id} out of range")))
    }

    /// The axis order an activation of `rank` has inside the model.
    fn inner_perm(rank: usize) -> Vec<usize> {
        if rank == 4 { NCHW.to_vec() } else { layout::identity(rank) }
    }

    fn shape_in(shape: &[usize], perm: &[usize]) -> Vec<usize> {
        perm.iter().map(|&p| shape.get(p).copied().unwrap_or(1)).collect()
    }

    /// `v` with its axes in `target` order (a Transpose when they differ).
    fn in_order(&mut self, v: &Val, target: &[usize]) -> Val {
        if v.perm == target {
            return v.clone();
        }
        let key = (v.name.clone(), target.to_vec());
        if let Some(n) = self.converted.get(&key) {
            return Val { name: n.clone(), perm: target.to_vec() };
        }
        let inv = layout::inverse(&v.perm);
        let perm: Vec<i64> = target.iter().map(|&t| inv.get(t).copied().unwrap_or(0) as i64).collect();
        let out = self.fresh(&format!("{}/transposed", v.name));
        self.node("Transpose", &out.clone(), vec![v.name.clone()], vec![out.clone()], vec![attr_ints("perm", &perm)]);
        self.converted.insert(key, out.clone());
        Val { name: out, perm: target.to_vec() }
    }

    fn run(&mut self) -> Result<(), ConvertError> {
        let g = self.g;
        // Inputs: model layout → Q/DQ → inner layout.
        for (k, &id) in g.inputs.iter().enumerate() {
            let t = self.tensor(id)?;
            let io = self.opts.inputs.get(k);
            let (name, perm, model_shape) = io_layout(t, io, &self.names[id.index()])?;
            self.used.get_or_insert(name.clone(), 1);
            self.inputs.push(value_info(&name, dt::FLOAT, &model_shape));
            let dq = self.qdq(id, &name, None)?;
            let v = self.in_order(&Val { name: dq, perm }, &Self::inner_perm(t.shape.len()));
            self.deq.insert(id.0, v);
        }
        for (index, node) in g.nodes.iter().enumerate() {
            self.export_node(node)
                .map_err(|e| e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str()))?;
        }
        // Outputs: inner layout → model layout.
        for (k, &id) in g.outputs.iter().enumerate() {
            let t = self.tensor(id)?;
            let io = self.opts.outputs.get(k);
            let (name, perm, model_shape) = io_layout(t, io, &self.names[id.index()])?;
            let v = self.act(id)?;
            let v = self.in_order(&v, &perm);
            // A tensor's own name is reserved for it; another name must be free.
            let own = name == self.names[id.index()] && !g.inputs.contains(&id);
            let name = if own || !self.used.contains_key(&name) { name } else { self.fresh(&name) };
            self.used.get_or_insert(name.clone(), 1);
            self.node("Identity", &name.clone(), vec![v.name], vec![name.clone()], vec![]);
            self.outputs.push(value_info(&name, dt::FLOAT, &model_shape));
        }
        let states = core::mem::take(&mut self.state_outputs);
        self.outputs.extend(states);
        Ok(())
    }

    /// Writes `float` (the op's float result, in `perm` order) → Q/DQ for `y`, in inner layout.
    fn finish(&mut self, y: TensorId, float: String, perm: Vec<usize>) -> Result<(), ConvertError> {
        let t = self.tensor(y)?;
        let rank = t.shape.len();
        let v = self.in_order(&Val { name: float, perm }, &Self::inner_perm(rank));
        let dq = self.qdq(y, &v.name, None)?;
        self.deq.insert(y.0, Val { name: dq, perm: v.perm });
        Ok(())
    }
}

/// Name, axis order (written axis j = our axis perm[j]) and shape of a model input/output.
fn io_layout(
    t: &Tensor,
    io: Option<&IoInfo>,
    default_name: &str,
) -> Result<(String, Vec<usize>, Vec<usize>), ConvertError> {
    match io {
        None => Ok((default_name.to_string(), layout::identity(t.shape.len()), t.shape.clone())),
        Some(io) => {
            if io.graph_shape() != t.shape || !layout::is_permutation(&io.perm) {
                return Err(ConvertError::new(
                    Kind::InvalidGraph,
                    format!(
                        "IoInfo of '{}' ({:?}, perm {:?}) does not match the graph's {:?}",
                        io.name, io.model_shape, io.perm, t.shape
                    ),
                ));
            }
            // Graph axis i is model axis perm[i]: model axis j is graph axis inverse(perm)[j].
            Ok((io.name.clone(), layout::inverse(&io.perm), io.model_shape.clone()))
        }
    }
}
