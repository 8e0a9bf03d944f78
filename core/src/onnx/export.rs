//! QDQ ONNX out: a quantized [`Graph`] written as an ONNX model in which every quantized tensor
//! is a float tensor followed by `QuantizeLinear` → `DequantizeLinear` with its scale and zero
//! point, weights are int8 initializers read through `DequantizeLinear` (per channel: `axis`),
//! and biases int32 initializers read through `DequantizeLinear` (scale `input_scale ·
//! weight_scale`). The float ops between them are the ops of the graph: ONNX Runtime (or any
//! ONNX runtime) then computes what the int8 model computes, up to its own rounding.
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
//! | `Softmax`, `Logistic`, `Tanh`, `HardSwish`, `Relu`, `Relu6`, `LeakyRelu` | `Softmax`, `Sigmoid`, `Tanh`, `HardSwish`, `Relu`, `Clip`, `LeakyRelu` |
//! | `Concatenation`, `Pad`, `Mean` | `Concat`, `Pad` (constant 0), `ReduceMean` |
//! | `Reshape`, `Squeeze`, `Transpose` | `Reshape`, `Reshape`, `Transpose` |
//! | `Quantize` (int8 ↔ int16 conversion) | nothing: its output's `QuantizeLinear` requantizes |
//!
//! int16 activations need `QuantizeLinear` of opset 21 ([`QdqExportOptions::opset`]); int64
//! biases (16x8 layers) are written as int32 when they fit.
//!
//! A weight-only graph ([`crate::ptq::quantize_weight_only`]: f32 activations, int8 weights)
//! is written the same way without the activations' QuantizeLinear/DequantizeLinear pairs: its
//! weights are int8 initializers read through `DequantizeLinear`, its biases float initializers.
//!
//! The bytes are deterministic: the same graph and options give the same file. The message is
//! built with the generated ONNX types and encoded by `write.rs` (the bytes prost would write,
//! without prost's encoders for every ONNX message in the `.wasm`).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::IoInfo;
use super::pb;
use super::tensor::{dt, le_f32, le16, le32, le64};
use crate::graph::{
    Activation, ConstData, ConvertError, ConvertErrorKind as Kind, DType, Graph, Node, Op, Padding, Tensor, TensorId,
};
use crate::layout;
use crate::vecmap::VecMap;

/// Options of [`export_qdq`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QdqExportOptions {
    /// Default-domain opset: 17 (the default) or 21 (needed for int16 activations).
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
/// `Unsupported` for an opset other than 17 to 21, int16 activations below opset 21, ops
/// outside the table; `InvalidGraph` for
/// [`Graph::validate`]'s errors or [`IoInfo`]s that do not match the graph.
pub fn export_qdq(graph: &Graph, options: &QdqExportOptions) -> Result<Vec<u8>, ConvertError> {
    export(graph, options, false)
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
    export(&hybrid.graph, options, hybrid.mode == crate::ptq::HybridMode::Dynamic)
}

fn export(graph: &Graph, options: &QdqExportOptions, dynamic: bool) -> Result<Vec<u8>, ConvertError> {
    if !(17..=21).contains(&options.opset) {
        return Err(ConvertError::new(
            Kind::Unsupported,
            format!("QDQ export to opset {}: 17 to 21 only", options.opset),
        ));
    }
    graph.validate()?;
    let mut e = Exporter::new(graph, options);
    e.dynamic = dynamic;
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

fn attr_int(name: &str, v: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(pb::attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

fn attr_ints(name: &str, v: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(pb::attribute_proto::AttributeType::Ints as i32),
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn attr_float(name: &str, v: f32) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(pb::attribute_proto::AttributeType::Float as i32),
        f: Some(v),
        ..Default::default()
    }
}

fn value_info(name: &str, elem: i32, shape: &[usize]) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{Dimension, dimension::Value as D};
    pb::ValueInfoProto {
        name: Some(name.to_string()),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: Some(elem),
                shape: Some(pb::TensorShapeProto {
                    dim: shape
                        .iter()
                        .map(|&d| Dimension { value: Some(D::DimValue(d as i64)), ..Default::default() })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn tensor_proto(name: &str, shape: &[usize], code: i32, raw: Vec<u8>) -> pb::TensorProto {
    pb::TensorProto {
        name: Some(name.to_string()),
        dims: shape.iter().map(|&d| d as i64).collect(),
        data_type: Some(code),
        raw_data: Some(raw),
        ..Default::default()
    }
}

/// Permutes row-major `data` of `shape`: output axis `j` is input axis `perm[j]`.
fn permute<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Result<Vec<T>, ConvertError> {
    layout::transpose(data, shape, perm).map_err(|e| err(format!("constant of shape {shape:?} by {perm:?}: {e}")))
}

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
    /// Node names written so far (ONNX Runtime refuses two nodes with one name).
    node_names: VecMap<String, usize>,
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

    /// A zero-point initializer of `code` with `n` zeros (shape `[]` when per-tensor).
    fn zero_points(&mut self, base: &str, code: i32, zps: &[i32], per_axis: bool) -> String {
        let name = self.fresh(&format!("{base}/zero_point"));
        let raw: Vec<u8> = match code {
            dt::INT8 => zps.iter().map(|&z| z as i8 as u8).collect(),
            dt::INT16 => zps.iter().flat_map(|&z| (z as i16).to_le_bytes()).collect(),
            _ => le32(zps),
        };
        let shape = if per_axis { vec![zps.len()] } else { vec![] };
        self.inits.push(tensor_proto(&name, &shape, code, raw));
        name
    }

    fn scales(&mut self, base: &str, scales: &[f32], per_axis: bool) -> String {
        let name = self.fresh(&format!("{base}/scale"));
        let shape = if per_axis { vec![scales.len()] } else { vec![] };
        self.inits.push(tensor_proto(&name, &shape, dt::FLOAT, le_f32(scales)));
        name
    }

    fn code_of(&self, d: DType) -> Result<i32, ConvertError> {
        match d {
            DType::I8 => Ok(dt::INT8),
            DType::I16 if self.opts.opset >= 21 => Ok(dt::INT16),
            DType::I16 => {
                Err(err(String::from("int16 activations need QuantizeLinear of opset 21: export with opset 21")))
            }
            other => Err(err(format!("{other} activations cannot be written as QDQ"))),
        }
    }

    /// `float` → QuantizeLinear → DequantizeLinear with activation `id`'s parameters; returns
    /// the dequantized value's name (`out` if given).
    fn qdq(&mut self, id: TensorId, float: &str, out: Option<&str>) -> Result<String, ConvertError> {
        let t = self.tensor(id)?;
        if t.dtype == DType::F32 && t.quant.is_none() && out.is_none() {
            // A float activation (a weight-only graph): no Q/DQ.
            return Ok(float.to_string());
        }
        let (s, z) = t.quant.as_ref().and_then(|q| q.per_tensor_params()).ok_or_else(|| {
            err(format!("activation '{}' is not quantized per tensor: the graph must be quantized", t.name))
        })?;
        let code = self.code_of(t.dtype)?;
        let base = self.names[id.index()].clone();
        let sn = self.scales(&base, &[s], false);
        let zn = self.zero_points(&base, code, &[z], false);
        let qn = self.fresh(&format!("{base}/quantized"));
        let dn = match out {
            Some(o) => o.to_string(),
            None => self.fresh(&format!("{base}/dequantized")),
        };
        self.node(
            "QuantizeLinear",
            &qn.clone(),
            vec![float.to_string(), sn.clone(), zn.clone()],
            vec![qn.clone()],
            vec![],
        );
        self.node("DequantizeLinear", &dn.clone(), vec![qn, sn, zn], vec![dn.clone()], vec![]);
        Ok(dn)
    }

    /// The dequantized value of activation `id`.
    fn act(&self, id: TensorId) -> Result<Val, ConvertError> {
        self.deq.get(&id.0).cloned().ok_or_else(|| {
            ConvertError::new(
                Kind::InvalidGraph,
                format!("tensor '{}' is read before it is written", self.names[id.index()]),
            )
        })
    }

    /// A constant (int8/int16 with per-tensor quantization, or int32/int64 bias) as an
    /// initializer + DequantizeLinear; `perm` reorders its axes (ONNX axis j = our axis perm[j]),
    /// `axis` is the per-channel axis in the written layout.
    fn const_dq(&mut self, id: TensorId, perm: &[usize], axis: Option<usize>) -> Result<String, ConvertError> {
        let key = (id.0, perm.to_vec());
        if let Some(n) = self.constants.get(&key) {
            return Ok(n.clone());
        }
        let t = self.tensor(id)?;
        let data = t.data.as_ref().ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "not a constant"))?;
        let shape = Self::shape_in(&t.shape, perm);
        let base = self.names[id.index()].clone();
        if let (ConstData::F32(v), None) = (data, &t.quant) {
            // A float constant (the bias of a weight-only layer): a float initializer.
            let name = if self.constants.keys().any(|(c, _)| *c == id.0) { self.fresh(&base) } else { base };
            self.inits.push(tensor_proto(&name, &shape, dt::FLOAT, le_f32(&permute(v, &t.shape, perm)?)));
            self.constants.insert(key, name.clone());
            return Ok(name);
        }
        let q = t.quant.as_ref().ok_or_else(|| err(format!("constant '{}' is not quantized", t.name)))?;
        let (code, raw) = match data {
            ConstData::I8(v) => (dt::INT8, permute(v, &t.shape, perm)?.iter().map(|&x| x as u8).collect::<Vec<u8>>()),
            ConstData::I16(v) => {
                if self.opts.opset < 21 {
                    return Err(err(format!("int16 constant '{}' needs opset 21", t.name)));
                }
                (dt::INT16, le16(&permute(v, &t.shape, perm)?))
            }
            ConstData::I32(v) => (dt::INT32, le32(&permute(v, &t.shape, perm)?)),
            ConstData::I64(v) => {
                let narrow: Option<Vec<i32>> = v.iter().map(|&x| i32::try_from(x).ok()).collect();
                let narrow = narrow.ok_or_else(|| err(format!("int64 bias '{}' does not fit int32", t.name)))?;
                (dt::INT32, le32(&permute(&narrow, &t.shape, perm)?))
            }
            other => return Err(err(format!("constant '{}' of {} cannot be written as QDQ", t.name, other.dtype()))),
        };
        let qname = self.fresh(&format!("{base}/quantized"));
        self.inits.push(tensor_proto(&qname, &shape, code, raw));
        let per_axis = axis.is_some() && q.scales.len() > 1;
        let sn = self.scales(&base, &q.scales, per_axis);
        let zn = self.zero_points(&base, code, &q.zero_points, per_axis);
        // The constant's own (unique, reserved) name the first time.
        let dn = if self.constants.keys().any(|(c, _)| *c == id.0) { self.fresh(&base) } else { base };
        let mut attrs = Vec::new();
        if per_axis {
            attrs.push(attr_int("axis", axis.unwrap_or(0) as i64));
        }
        self.node("DequantizeLinear", &dn.clone(), vec![qname, sn, zn], vec![dn.clone()], attrs);
        self.constants.insert(key, dn.clone());
        Ok(dn)
    }

    /// An int64 initializer (shapes, pads).
    fn i64s(&mut self, base: &str, v: &[i64]) -> String {
        let name = self.fresh(base);
        self.inits.push(tensor_proto(&name, &[v.len()], dt::INT64, le64(v)));
        name
    }

    fn f32_scalar(&mut self, base: &str, v: f32) -> String {
        let name = self.fresh(base);
        self.inits.push(tensor_proto(&name, &[], dt::FLOAT, v.to_le_bytes().to_vec()));
        name
    }

    /// Applies a fused activation to `x`; returns the result's name.
    fn activation(&mut self, a: Activation, x: String, base: &str) -> String {
        let (lo, hi) = match a {
            Activation::None => return x,
            Activation::Relu => {
                let out = self.fresh(&format!("{base}/relu"));
                self.node("Relu", &out.clone(), vec![x], vec![out.clone()], vec![]);
                return out;
            }
            Activation::Relu6 => (0.0, 6.0),
            Activation::ReluN1To1 => (-1.0, 1.0),
        };
        let lo = self.f32_scalar(&format!("{base}/clip_min"), lo);
        let hi = self.f32_scalar(&format!("{base}/clip_max"), hi);
        let out = self.fresh(&format!("{base}/clip"));
        self.node("Clip", &out.clone(), vec![x, lo, hi], vec![out.clone()], vec![]);
        out
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

    fn export_node(&mut self, node: &Node) -> Result<(), ConvertError> {
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
            Op::Logistic | Op::Tanh | Op::HardSwish | Op::Relu | Op::Relu6 | Op::LeakyRelu { .. } | Op::Quantize => {
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
                    _ => {
                        let lo = self.f32_scalar(&format!("{base}/clip_min"), 0.0);
                        let hi = self.f32_scalar(&format!("{base}/clip_max"), 6.0);
                        self.node("Clip", &nname, vec![x.name, lo, hi], vec![out.clone()], vec![]);
                    }
                }
                self.finish(y, out, x.perm)
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
            Op::Mean { axes, keep_dims } => {
                let xid = input(self, 0)?;
                let x = self.act(xid)?;
                let inv = layout::inverse(&x.perm);
                let mut oaxes: Vec<usize> = axes.iter().map(|&a| inv.get(a).copied().unwrap_or(a)).collect();
                crate::vecmap::sort_usizes(&mut oaxes);
                let oaxes: Vec<i64> = oaxes.iter().map(|&a| a as i64).collect();
                let out = float_name(self);
                let keep = attr_int("keepdims", i64::from(*keep_dims));
                if self.opts.opset >= 18 {
                    // Opset 18 moved the axes from an attribute to an input.
                    let an = self.i64s(&format!("{base}/axes"), &oaxes);
                    self.node("ReduceMean", &nname, vec![x.name, an], vec![out.clone()], vec![keep]);
                } else {
                    self.node(
                        "ReduceMean",
                        &nname,
                        vec![x.name],
                        vec![out.clone()],
                        vec![attr_ints("axes", &oaxes), keep],
                    );
                }
                // The output's axes, relative to ours.
                let perm = if *keep_dims {
                    x.perm.clone()
                } else {
                    let kept: Vec<usize> = x.perm.iter().copied().filter(|a| !axes.contains(a)).collect();
                    let mut sorted = kept.clone();
                    crate::vecmap::sort_usizes(&mut sorted);
                    kept.iter().map(|a| sorted.iter().position(|s| s == a).unwrap_or(0)).collect()
                };
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
            other => Err(err(format!("{} cannot be written as QDQ ONNX", other.name()))),
        }
    }

    /// `x` reshaped to `[-1, inputs]` (the rows of a fully connected layer).
    fn flatten(&mut self, x: String, inputs: usize, base: &str) -> String {
        let shape = self.i64s(&format!("{base}/shape"), &[-1, inputs as i64]);
        let r = self.fresh(&format!("{base}/flat"));
        self.node("Reshape", &r.clone(), vec![x, shape], vec![r.clone()], vec![]);
        r
    }

    /// Whether `node` is written as a dynamically quantized layer: a dynamic export and a hybrid
    /// layer (f32 input, int8 weights with zero points 0).
    fn is_dynamic(&self, node: &Node) -> Result<bool, ConvertError> {
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
    fn integer_layer(
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

    /// An operand of an elementwise op whose output has `rank` and axis order `target`: an
    /// activation (reshaped to `rank` if lower) or a constant (int8 initializer + DQ).
    fn operand(&mut self, id: TensorId, rank: usize, target: &[usize], base: &str) -> Result<String, ConvertError> {
        let t = self.tensor(id)?;
        let r = t.shape.len();
        if t.is_constant() {
            // Broadcast shape in our order: leading 1s to `rank`, then reorder like the output.
            let mut s = vec![1usize; rank.saturating_sub(r)];
            s.extend_from_slice(&t.shape);
            if layout::is_identity(target) || rank != s.len() {
                return self.const_dq(id, &layout::identity(r), None);
            }
            // Reorder the constant's data as a rank-`rank` tensor.
            let data = t.data.as_ref().ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "not a constant"))?;
            let cbase = self.names[id.index()].clone();
            if let (ConstData::F32(v), None) = (data, &t.quant) {
                let name = self.fresh(&format!("{cbase}/reordered"));
                self.inits.push(tensor_proto(
                    &name,
                    &Self::shape_in(&s, target),
                    dt::FLOAT,
                    le_f32(&permute(v, &s, target)?),
                ));
                return Ok(name);
            }
            let q = t.quant.as_ref().ok_or_else(|| err(format!("constant '{}' is not quantized", t.name)))?;
            let (code, raw) = match data {
                ConstData::I8(v) => (dt::INT8, permute(v, &s, target)?.iter().map(|&x| x as u8).collect::<Vec<u8>>()),
                ConstData::I16(v) if self.opts.opset >= 21 => (dt::INT16, le16(&permute(v, &s, target)?)),
                other => return Err(err(format!("constant operand '{}' of {}", t.name, other.dtype()))),
            };
            let qname = self.fresh(&format!("{cbase}/quantized"));
            self.inits.push(tensor_proto(&qname, &Self::shape_in(&s, target), code, raw));
            let (sc, zp) = q.per_tensor_params().ok_or_else(|| err(format!("constant '{}' is per-channel", t.name)))?;
            let sn = self.scales(&cbase, &[sc], false);
            let zn = self.zero_points(&cbase, code, &[zp], false);
            let dn = self.fresh(&cbase);
            self.node("DequantizeLinear", &dn.clone(), vec![qname, sn, zn], vec![dn.clone()], vec![]);
            return Ok(dn);
        }
        let v = self.act(id)?;
        if r == rank {
            return Ok(self.in_order(&v, target).name);
        }
        // Lower rank: in our order, leading 1s, then the output's order.
        let v = self.in_order(&v, &layout::identity(r));
        let mut s: Vec<i64> = vec![1; rank.saturating_sub(r)];
        s.extend(t.shape.iter().map(|&d| d as i64));
        let sn = self.i64s(&format!("{base}/operand_shape"), &s);
        let rn = self.fresh(&format!("{}/expanded", v.name));
        self.node("Reshape", &rn.clone(), vec![v.name, sn], vec![rn.clone()], vec![]);
        Ok(self.in_order(&Val { name: rn, perm: layout::identity(rank) }, target).name)
    }

    /// Weights (int8, symmetric, channel axis 0 of ours) → initializer in `perm` order + DQ with
    /// the channel on the written axis 0.
    fn weight_dq(&mut self, id: TensorId, perm: &[usize]) -> Result<String, ConvertError> {
        self.weight_dq_axis(id, perm, 0)
    }

    fn weight_dq_axis(&mut self, id: TensorId, perm: &[usize], axis: usize) -> Result<String, ConvertError> {
        let t = self.tensor(id)?;
        if t.dtype != DType::I8 {
            return Err(err(format!("weights '{}' are {}, not int8", t.name, t.dtype)));
        }
        self.const_dq(id, perm, Some(axis))
    }
}

/// The integer op of a dynamically quantized layer ([`Exporter::integer_layer`]).
struct IntegerLayer<'a> {
    /// `ConvInteger` or `MatMulInteger`.
    op: &'static str,
    attrs: Vec<pb::AttributeProto>,
    /// Our weight axes in the written order.
    weight_perm: &'a [usize],
    /// Shape of a per-channel constant (scales, bias) that broadcasts over the output.
    channel_shape: &'a [usize],
}

/// ONNX `pads` `[top, left, bottom, right]` of a window.
fn pads_of(
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
