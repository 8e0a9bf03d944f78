//! The conversion itself: flatbuffer → [`Graph`], in three passes over the single subgraph.
//!
//! 1. Operators: resolve each operator code, reject unsupported ops (so an unsupported op is the
//!    first error reported), and record which operands are data (graph edges) and which are
//!    attributes (constant shape/paddings/axes/permutation operands).
//! 2. Tensors: convert every tensor used as data, in TFLite index order (shape, type,
//!    quantization, constant data).
//! 3. Nodes: read each operator's options and attribute operands into an [`Op`], check the
//!    quantization scheme, append the node; then graph inputs/outputs and [`Graph::validate`].

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use planus::ReadAsRoot;

use super::schema_generated::tflite as fb;
use super::{FILE_IDENTIFIER, Imported, SCHEMA_VERSION, builtin_operator_name};
use crate::graph::{
    Activation, ConstData, Conv2d, ConvertError, ConvertErrorKind as Kind, DType, DepthwiseConv2d, FullyConnected,
    Graph, GraphMetadata, Node, Op, Padding, Pool2d, Tensor, TensorId, TensorQuant, num_elements,
};

// Builtin operator codes we convert (values of `BuiltinOperator` in schema.fbs).
const ADD: i32 = fb::BuiltinOperator::Add as i32;
const AVERAGE_POOL_2D: i32 = fb::BuiltinOperator::AveragePool2d as i32;
const CONCATENATION: i32 = fb::BuiltinOperator::Concatenation as i32;
const CONV_2D: i32 = fb::BuiltinOperator::Conv2d as i32;
const DEPTHWISE_CONV_2D: i32 = fb::BuiltinOperator::DepthwiseConv2d as i32;
const DEQUANTIZE: i32 = fb::BuiltinOperator::Dequantize as i32;
const FULLY_CONNECTED: i32 = fb::BuiltinOperator::FullyConnected as i32;
const HARD_SWISH: i32 = fb::BuiltinOperator::HardSwish as i32;
const LEAKY_RELU: i32 = fb::BuiltinOperator::LeakyRelu as i32;
const LOGISTIC: i32 = fb::BuiltinOperator::Logistic as i32;
const MAX_POOL_2D: i32 = fb::BuiltinOperator::MaxPool2d as i32;
const MEAN: i32 = fb::BuiltinOperator::Mean as i32;
const MUL: i32 = fb::BuiltinOperator::Mul as i32;
const PAD: i32 = fb::BuiltinOperator::Pad as i32;
const PADV2: i32 = fb::BuiltinOperator::Padv2 as i32;
const QUANTIZE: i32 = fb::BuiltinOperator::Quantize as i32;
const RELU: i32 = fb::BuiltinOperator::Relu as i32;
const RELU6: i32 = fb::BuiltinOperator::Relu6 as i32;
const RESHAPE: i32 = fb::BuiltinOperator::Reshape as i32;
const SOFTMAX: i32 = fb::BuiltinOperator::Softmax as i32;
const SQUEEZE: i32 = fb::BuiltinOperator::Squeeze as i32;
const SUB: i32 = fb::BuiltinOperator::Sub as i32;
const TANH: i32 = fb::BuiltinOperator::Tanh as i32;
const TRANSPOSE: i32 = fb::BuiltinOperator::Transpose as i32;
const CUSTOM: i32 = fb::BuiltinOperator::Custom as i32;

const SUPPORTED: [i32; 24] = [
    ADD,
    AVERAGE_POOL_2D,
    CONCATENATION,
    CONV_2D,
    DEPTHWISE_CONV_2D,
    DEQUANTIZE,
    FULLY_CONNECTED,
    HARD_SWISH,
    LEAKY_RELU,
    LOGISTIC,
    MAX_POOL_2D,
    MEAN,
    MUL,
    PAD,
    PADV2,
    QUANTIZE,
    RELU,
    RELU6,
    RESHAPE,
    SOFTMAX,
    SQUEEZE,
    SUB,
    TANH,
    TRANSPOSE,
];

fn err(kind: Kind, message: impl Into<String>) -> ConvertError {
    ConvertError::new(kind, message)
}

fn malformed(message: impl Into<String>) -> ConvertError {
    ConvertError::new(Kind::Malformed, message)
}

/// A planus read error as a [`ConvertError`] (with planus's byte offset when it has one).
fn fb_error(e: planus::Error) -> ConvertError {
    let loc = e.source_location;
    let mut ce = match e.error_kind {
        planus::errors::ErrorKind::UnknownEnumTag { source } => {
            malformed(format!("{}.{}: value {} is not in the schema's enum", loc.type_, loc.method, source.tag))
        }
        kind => malformed(format!(
            "flatbuffer {}.{}: {kind} (an offset or length that does not fit the file: truncated or corrupt)",
            loc.type_, loc.method
        )),
    };
    if loc.byte_offset != usize::MAX {
        ce = ce.at_offset(loc.byte_offset);
    }
    ce
}

trait Fb<T> {
    fn fb(self) -> Result<T, ConvertError>;
}

impl<T> Fb<T> for planus::Result<T> {
    fn fb(self) -> Result<T, ConvertError> {
        self.map_err(fb_error)
    }
}

/// The operator's name as TFLite spells it.
fn op_name(code: i32, custom: Option<&str>) -> String {
    match (code, custom) {
        (CUSTOM, Some(c)) => format!("CUSTOM {c:?}"),
        _ => match builtin_operator_name(code) {
            Some(n) => n.to_string(),
            None => format!("builtin operator {code} (newer than this importer's schema)"),
        },
    }
}

/// Checks the fixed flatbuffer header: root offset within the file and the `TFL3` identifier.
fn check_header(bytes: &[u8]) -> Result<(), ConvertError> {
    let len = bytes.len();
    let (Some(root), Some(ident)) = (bytes.get(0..4), bytes.get(4..8)) else {
        return Err(err(Kind::Truncated, format!("a {len}-byte file is too short for a flatbuffer header (8 bytes)"))
            .at_offset(len));
    };
    if ident != FILE_IDENTIFIER {
        let shown: String = ident.iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '?' }).collect();
        return Err(err(
            Kind::WrongFileIdentifier,
            format!(
                "file identifier is {shown:?} ({ident:02x?}), a TFLite model has \"TFL3\": not a TFLite flatbuffer"
            ),
        )
        .at_offset(4));
    }
    let root = u32::from_le_bytes([root[0], root[1], root[2], root[3]]) as usize;
    if root.checked_add(4).is_none_or(|end| end > len) {
        return Err(err(
            Kind::Truncated,
            format!("root table offset {root} points past the end of the {len}-byte file"),
        )
        .at_offset(0));
    }
    Ok(())
}

/// A TFLite operand index: -1 is an absent optional operand.
fn operand(raw: i32, n_tensors: usize, what: &str) -> Result<Option<usize>, ConvertError> {
    match raw {
        -1 => Ok(None),
        i if i >= 0 && (i as usize) < n_tensors => Ok(Some(i as usize)),
        i => Err(malformed(format!("{what} is tensor {i}, out of range ({n_tensors} tensors)"))),
    }
}

fn positive(v: i32, what: &str) -> Result<usize, ConvertError> {
    if v >= 1 { Ok(v as usize) } else { Err(malformed(format!("{what} is {v}, must be >= 1"))) }
}

fn activation(a: fb::ActivationFunctionType) -> Result<Activation, ConvertError> {
    match a {
        fb::ActivationFunctionType::None => Ok(Activation::None),
        fb::ActivationFunctionType::Relu => Ok(Activation::Relu),
        fb::ActivationFunctionType::Relu6 => Ok(Activation::Relu6),
        fb::ActivationFunctionType::ReluN1To1 => Ok(Activation::ReluN1To1),
        other => Err(err(Kind::Unsupported, format!("fused activation {other:?} is not supported"))),
    }
}

fn padding(p: fb::Padding) -> Padding {
    match p {
        fb::Padding::Same => Padding::Same,
        fb::Padding::Valid => Padding::Valid,
    }
}

fn dtype(t: fb::TensorType) -> Result<DType, ConvertError> {
    Ok(match t {
        fb::TensorType::Float32 => DType::F32,
        fb::TensorType::Float16 => DType::F16,
        fb::TensorType::Int8 => DType::I8,
        fb::TensorType::Uint8 => DType::U8,
        fb::TensorType::Int16 => DType::I16,
        fb::TensorType::Int32 => DType::I32,
        fb::TensorType::Int64 => DType::I64,
        fb::TensorType::Bool => DType::Bool,
        other => return Err(err(Kind::UnsupportedDType, format!("tensor type {other:?} is not supported"))),
    })
}

/// Normalises a possibly negative axis against `rank`.
fn axis(a: i64, rank: usize, what: &str) -> Result<usize, ConvertError> {
    let r = rank as i64;
    let n = if a < 0 { a + r } else { a };
    if (0..r).contains(&n) {
        Ok(n as usize)
    } else {
        Err(malformed(format!("{what} axis {a} out of range for rank {rank}")))
    }
}

/// One operator after pass 1.
struct RawOp<'a> {
    code: i32,
    name: String,
    op: fb::OperatorRef<'a>,
    /// TFLite operand indices (`None` = -1).
    inputs: Vec<Option<usize>>,
    outputs: Vec<usize>,
}

impl RawOp<'_> {
    /// Positions of the operands that are graph edges (the others are attributes).
    fn data_input_positions(&self) -> Vec<usize> {
        match self.code {
            RESHAPE | PAD | MEAN | TRANSPOSE => vec![0],
            PADV2 => vec![0, 2],
            _ => (0..self.inputs.len()).collect(),
        }
    }
    fn input(&self, k: usize) -> Option<usize> {
        self.inputs.get(k).copied().flatten()
    }
}

struct Importer<'a> {
    bytes: &'a [u8],
    tensors: planus::Vector<'a, planus::Result<fb::TensorRef<'a>>>,
    buffers: Option<planus::Vector<'a, planus::Result<fb::BufferRef<'a>>>>,
    graph: Graph,
    map: Vec<Option<TensorId>>,
}

pub(super) fn import(bytes: &[u8]) -> Result<Imported, ConvertError> {
    check_header(bytes)?;
    let model = fb::ModelRef::read_as_root(bytes).fb()?;
    let version = model.version().fb()?;
    if version != SCHEMA_VERSION {
        return Err(err(
            Kind::Unsupported,
            format!("schema version {version}, this importer reads version {SCHEMA_VERSION}"),
        ));
    }
    let subgraphs = model.subgraphs().fb()?.ok_or_else(|| malformed("the model has no subgraphs"))?;
    if subgraphs.len() != 1 {
        return Err(err(
            Kind::Unsupported,
            format!(
                "the model has {} subgraphs; only single-subgraph models are supported (control flow such as WHILE or IF uses several)",
                subgraphs.len()
            ),
        ));
    }
    let sg = subgraphs.get(0).ok_or_else(|| malformed("the model has no subgraphs"))?.fb()?;

    // Operator codes: TFLite's rule, max(builtin_code, deprecated_builtin_code).
    let mut codes: Vec<(i32, Option<String>)> = Vec::new();
    if let Some(list) = model.operator_codes().fb()? {
        for oc in list.iter() {
            let oc = oc.fb()?;
            let deprecated = i32::from(oc.deprecated_builtin_code().fb()?);
            let builtin = match oc.builtin_code() {
                Ok(b) => b as i32,
                Err(planus::Error { error_kind: planus::errors::ErrorKind::UnknownEnumTag { source }, .. }) => {
                    i32::try_from(source.tag).unwrap_or(i32::MAX)
                }
                Err(e) => return Err(fb_error(e)),
            };
            codes.push((deprecated.max(builtin), oc.custom_code().fb()?.map(String::from)));
        }
    }

    let tensors = match sg.tensors().fb()? {
        Some(t) => t,
        None => return Err(malformed("the subgraph has no tensor list")),
    };
    let n_tensors = tensors.len();
    if n_tensors > crate::graph::MAX_TENSORS {
        return Err(err(
            Kind::Unsupported,
            format!("the subgraph declares {n_tensors} tensors, more than the {} supported", crate::graph::MAX_TENSORS),
        ));
    }

    // Pass 1: operators.
    let mut raw_ops: Vec<RawOp<'_>> = Vec::new();
    if let Some(ops) = sg.operators().fb()? {
        if ops.len() > crate::graph::MAX_NODES {
            return Err(err(
                Kind::Unsupported,
                format!(
                    "the subgraph declares {} operators, more than the {} supported",
                    ops.len(),
                    crate::graph::MAX_NODES
                ),
            ));
        }
        for (index, op) in ops.iter().enumerate() {
            let op = op.fb().map_err(|e| e.or_at_node(index, "?"))?;
            let raw = read_raw_op(index, op, &codes, n_tensors)?;
            if !SUPPORTED.contains(&raw.code) {
                return Err(err(Kind::UnsupportedOp, format!("{} is not supported", raw.name)).at_node(index, raw.name));
            }
            raw_ops.push(raw);
        }
    }

    // Graph inputs and outputs.
    let read_io = |v: Option<planus::Vector<'_, i32>>, what: &str| -> Result<Vec<usize>, ConvertError> {
        let mut out = Vec::new();
        for (k, raw) in v.into_iter().flat_map(|v| v.iter()).enumerate() {
            match operand(raw, n_tensors, &format!("graph {what} {k}"))? {
                Some(i) => out.push(i),
                None => return Err(malformed(format!("graph {what} {k} is -1"))),
            }
        }
        Ok(out)
    };
    let graph_inputs = read_io(sg.inputs().fb()?, "input")?;
    let graph_outputs = read_io(sg.outputs().fb()?, "output")?;

    // Pass 2: the tensors used as data, in index order.
    let mut used = vec![false; n_tensors];
    for raw in &raw_ops {
        for k in raw.data_input_positions() {
            if let Some(u) = raw.input(k).and_then(|i| used.get_mut(i)) {
                *u = true;
            }
        }
        for &o in &raw.outputs {
            if let Some(u) = used.get_mut(o) {
                *u = true;
            }
        }
    }
    for &i in graph_inputs.iter().chain(graph_outputs.iter()) {
        if let Some(u) = used.get_mut(i) {
            *u = true;
        }
    }

    let description = model.description().fb()?.unwrap_or("");
    let sg_name = sg.name().fb()?.unwrap_or("");
    let mut source = format!("TFLite schema {version}, {} bytes", bytes.len());
    if !description.is_empty() {
        source.push_str(&format!(", description {description:?}"));
    }
    if !sg_name.is_empty() {
        source.push_str(&format!(", subgraph {sg_name:?}"));
    }
    let metadata = GraphMetadata::new(format!("microquant {} tflite importer", env!("CARGO_PKG_VERSION")), source);

    let mut im = Importer {
        bytes,
        tensors,
        buffers: model.buffers().fb()?,
        graph: Graph::new(metadata),
        map: vec![None; n_tensors],
    };
    for (i, &u) in used.iter().enumerate() {
        if u {
            let t = im.convert_tensor(i)?;
            let id = im.graph.add_tensor(t)?;
            if let Some(m) = im.map.get_mut(i) {
                *m = Some(id);
            }
        }
    }

    // Pass 3: nodes.
    for (index, raw) in raw_ops.iter().enumerate() {
        let node = im.convert_op(raw).map_err(|e| e.or_at_node(index, &raw.name))?;
        check_quantization(&im.graph, &node, raw.code).map_err(|e| e.or_at_node(index, &raw.name))?;
        im.graph.add_node(node);
    }
    im.graph.inputs = graph_inputs.iter().filter_map(|&i| im.map.get(i).copied().flatten()).collect();
    im.graph.outputs = graph_outputs.iter().filter_map(|&i| im.map.get(i).copied().flatten()).collect();

    // Node i is operator i: validation errors name the TFLite operator.
    im.graph.validate().map_err(|e| match e.node_index().and_then(|i| raw_ops.get(i)) {
        Some(raw) => e.with_op(raw.name.as_str()),
        None => e,
    })?;
    Ok(Imported { graph: im.graph, tensor_map: im.map })
}

fn read_raw_op<'a>(
    index: usize,
    op: fb::OperatorRef<'a>,
    codes: &[(i32, Option<String>)],
    n_tensors: usize,
) -> Result<RawOp<'a>, ConvertError> {
    let opcode_index = op.opcode_index().fb().map_err(|e| e.or_at_node(index, "?"))? as usize;
    let (code, custom) = codes.get(opcode_index).ok_or_else(|| {
        malformed(format!("opcode index {opcode_index} out of range ({} operator codes)", codes.len()))
            .or_at_node(index, "?")
    })?;
    let name = op_name(*code, custom.as_deref());
    let read = || -> Result<RawOp<'a>, ConvertError> {
        let mut inputs = Vec::new();
        for (k, raw) in op.inputs().fb()?.into_iter().flat_map(|v| v.iter()).enumerate() {
            inputs.push(operand(raw, n_tensors, &format!("input {k}"))?);
        }
        let mut outputs = Vec::new();
        for (k, raw) in op.outputs().fb()?.into_iter().flat_map(|v| v.iter()).enumerate() {
            match operand(raw, n_tensors, &format!("output {k}"))? {
                Some(i) => outputs.push(i),
                None => return Err(malformed(format!("output {k} is -1"))),
            }
        }
        Ok(RawOp { code: *code, name: name.clone(), op, inputs, outputs })
    };
    read().map_err(|e| e.or_at_node(index, &name))
}

/// Reads the options of an operator, requiring the variant that belongs to it.
macro_rules! options {
    ($raw:expr, $variant:ident) => {
        match $raw.op.builtin_options().fb()? {
            Some(fb::BuiltinOptionsRef::$variant(o)) => Some(o),
            None => None,
            Some(_) => {
                return Err(malformed(format!(
                    "{} carries the options of another operator, expected {}",
                    $raw.name,
                    stringify!($variant)
                )));
            }
        }
    };
}

macro_rules! required_options {
    ($raw:expr, $variant:ident) => {
        options!($raw, $variant).ok_or_else(|| malformed(format!("{} has no {}", $raw.name, stringify!($variant))))?
    };
}

impl<'a> Importer<'a> {
    fn tensor_ref(&self, i: usize) -> Result<fb::TensorRef<'a>, ConvertError> {
        self.tensors.get(i).ok_or_else(|| malformed(format!("tensor {i} out of range")))?.fb()
    }

    fn tensor_name(&self, i: usize) -> String {
        self.tensor_ref(i).ok().and_then(|t| t.name().ok().flatten()).unwrap_or("").to_string()
    }

    /// The constant bytes of tensor `i` and their offset in the file, if it has any.
    fn buffer_bytes(&self, i: usize, t: &fb::TensorRef<'a>) -> Result<Option<(&'a [u8], usize)>, ConvertError> {
        let index = t.buffer().fb()? as usize;
        let Some(buffers) = self.buffers else {
            return if index == 0 {
                Ok(None)
            } else {
                Err(malformed(format!("buffer {index} but the model has no buffers")))
            };
        };
        let b = buffers
            .get(index)
            .ok_or_else(|| malformed(format!("buffer {index} out of range ({} buffers)", buffers.len())))?
            .fb()?;
        let (offset, size) = (b.offset().fb()?, b.size().fb()?);
        // Schema 3c: data stored after the flatbuffer; offsets 0 and 1 mean "not used".
        if offset > 1 {
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            let end = usize::try_from(size).ok().and_then(|s| start.checked_add(s));
            return match end.and_then(|end| self.bytes.get(start..end)) {
                Some(d) => Ok(Some((d, start))),
                None => Err(err(
                    Kind::Truncated,
                    format!(
                        "buffer {index} of tensor {i} is {size} bytes at offset {offset}, past the end of the {}-byte file",
                        self.bytes.len()
                    ),
                )
                .at_offset(start.min(self.bytes.len()))),
            };
        }
        match b.data().fb()? {
            Some(d) if !d.is_empty() => {
                let at = (d.as_ptr() as usize).wrapping_sub(self.bytes.as_ptr() as usize);
                Ok(Some((d, at)))
            }
            _ => Ok(None),
        }
    }

    fn convert_tensor(&self, i: usize) -> Result<Tensor, ConvertError> {
        let name = self.tensor_name(i);
        self.convert_tensor_inner(i, &name)
            .map_err(|e| if e.tensor_index().is_some() { e } else { e.with_tensor(i, name) })
    }

    fn convert_tensor_inner(&self, i: usize, name: &str) -> Result<Tensor, ConvertError> {
        let t = self.tensor_ref(i)?;
        let dims: Vec<i32> = t.shape().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let signature: Vec<i32> = t.shape_signature().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let mut shape = Vec::with_capacity(dims.len());
        for (a, &d) in dims.iter().enumerate() {
            let dynamic = d < 0 || (signature.len() == dims.len() && signature.get(a).is_some_and(|&s| s < 0));
            if dynamic {
                if a == 0 {
                    shape.push(1); // dynamic batch
                } else {
                    return Err(err(
                        Kind::Unsupported,
                        format!(
                            "axis {a} of shape {dims:?} (signature {signature:?}) is dynamic; only the batch axis may be"
                        ),
                    ));
                }
            } else {
                shape.push(d as usize);
            }
        }
        if num_elements(&shape).is_none() {
            return Err(malformed(format!("shape {shape:?} overflows")));
        }
        // Refused before anything is allocated for it (a constant's data must also match, below).
        if num_elements(&shape).is_some_and(|n| n > crate::float::MAX_TENSOR_ELEMENTS) {
            return Err(err(
                Kind::Unsupported,
                format!("shape {shape:?} has more than 2^26 elements (the largest tensor supported)"),
            ));
        }
        let dt = match t.type_() {
            Ok(ty) => dtype(ty)?,
            Err(planus::Error { error_kind: planus::errors::ErrorKind::UnknownEnumTag { source }, .. }) => {
                return Err(err(Kind::UnsupportedDType, format!("tensor type {} is unknown to schema 3", source.tag)));
            }
            Err(e) => return Err(fb_error(e)),
        };
        if t.sparsity().fb()?.is_some() {
            return Err(err(Kind::Unsupported, "sparse tensors are not supported"));
        }
        let quant = self.convert_quant(&t, &shape)?;
        let data = match self.buffer_bytes(i, &t)? {
            None => None,
            Some((bytes, at)) => {
                let needed = num_elements(&shape).and_then(|n| n.checked_mul(dt.size()));
                if needed != Some(bytes.len()) {
                    return Err(malformed(format!(
                        "constant data is {} bytes, shape {shape:?} of {dt} needs {}",
                        bytes.len(),
                        needed.map_or(String::from("more than usize::MAX"), |n| n.to_string())
                    ))
                    .at_offset(at));
                }
                Some(
                    ConstData::from_le_bytes(dt, bytes)
                        .ok_or_else(|| malformed("constant data length").at_offset(at))?,
                )
            }
        };
        Ok(Tensor { name: name.to_string(), shape, dtype: dt, quant, data })
    }

    fn convert_quant(&self, t: &fb::TensorRef<'a>, shape: &[usize]) -> Result<Option<TensorQuant>, ConvertError> {
        let Some(q) = t.quantization().fb()? else { return Ok(None) };
        let scales: Vec<f32> = q.scale().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let zps: Vec<i64> = q.zero_point().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        if q.details().fb()?.is_some() {
            return Err(err(Kind::UnsupportedQuantization, "custom quantization details are not supported"));
        }
        if scales.is_empty() {
            // Float tensors often carry an empty table (or only min/max): no quantization.
            return Ok(None);
        }
        if zps.len() != scales.len() {
            return Err(err(
                Kind::UnsupportedQuantization,
                format!("{} scales but {} zero points", scales.len(), zps.len()),
            ));
        }
        if let Some((k, s)) = scales.iter().enumerate().find(|(_, s)| !(s.is_finite() && **s > 0.0)) {
            return Err(err(Kind::UnsupportedQuantization, format!("scale {k} is {s}, must be finite and > 0")));
        }
        let mut zero_points = Vec::with_capacity(zps.len());
        for (k, &z) in zps.iter().enumerate() {
            zero_points.push(
                i32::try_from(z)
                    .map_err(|_| err(Kind::UnsupportedQuantization, format!("zero point {k} is {z}, outside i32")))?,
            );
        }
        if scales.len() == 1 {
            return Ok(Some(TensorQuant { scales, zero_points, axis: None }));
        }
        let dim = q.quantized_dimension().fb()?;
        match usize::try_from(dim).ok().and_then(|d| shape.get(d).map(|&e| (d, e))) {
            Some((d, extent)) if extent == scales.len() => Ok(Some(TensorQuant { scales, zero_points, axis: Some(d) })),
            _ => Err(err(
                Kind::UnsupportedQuantization,
                format!("{} per-channel scales on quantized_dimension {dim} of shape {shape:?}", scales.len()),
            )),
        }
    }

    /// The integer values of a constant operand that the graph takes as an attribute.
    fn const_ints(&self, i: usize, what: &str) -> Result<Vec<i64>, ConvertError> {
        let name = self.tensor_name(i);
        let t = self.tensor_ref(i)?;
        let bytes = self.buffer_bytes(i, &t)?;
        let dt = dtype(t.type_().fb()?)?;
        let values = match bytes {
            Some((b, at)) => ConstData::from_le_bytes(dt, b)
                .and_then(|d| d.to_i64_vec())
                .ok_or_else(|| malformed(format!("{what} must be integer constant data")).at_offset(at))?,
            None => {
                return Err(err(
                    Kind::Unsupported,
                    format!("{what} must be a constant tensor (dynamic {what} is not supported)"),
                )
                .with_tensor(i, name));
            }
        };
        Ok(values)
    }

    fn id(&self, i: usize) -> Result<TensorId, ConvertError> {
        self.map.get(i).copied().flatten().ok_or_else(|| malformed(format!("tensor {i} was not converted")))
    }

    fn shape(&self, i: usize) -> Result<&[usize], ConvertError> {
        let id = self.id(i)?;
        self.graph.tensor(id).map(|t| t.shape.as_slice()).ok_or_else(|| malformed(format!("tensor {i} missing")))
    }

    fn input_rank(&self, raw: &RawOp<'_>) -> Result<usize, ConvertError> {
        let x = raw.input(0).ok_or_else(|| malformed(format!("{} has no input 0", raw.name)))?;
        Ok(self.shape(x)?.len())
    }

    fn convert_op(&self, raw: &RawOp<'a>) -> Result<Node, ConvertError> {
        let op = match raw.code {
            CONV_2D => {
                let o = required_options!(raw, Conv2DOptions);
                Op::Conv2d(Conv2d {
                    stride_h: positive(o.stride_h().fb()?, "stride_h")?,
                    stride_w: positive(o.stride_w().fb()?, "stride_w")?,
                    dilation_h: positive(o.dilation_h_factor().fb()?, "dilation_h_factor")?,
                    dilation_w: positive(o.dilation_w_factor().fb()?, "dilation_w_factor")?,
                    padding: padding(o.padding().fb()?),
                    activation: activation(o.fused_activation_function().fb()?)?,
                })
            }
            DEPTHWISE_CONV_2D => {
                let o = required_options!(raw, DepthwiseConv2DOptions);
                // TFLite's kernels derive the multiplier from the shapes; so do we.
                let x_c = raw.input(0).and_then(|i| self.shape(i).ok()).and_then(|s| s.last().copied()).unwrap_or(0);
                let f_c = raw.input(1).and_then(|i| self.shape(i).ok()).and_then(|s| s.last().copied()).unwrap_or(0);
                if x_c == 0 || f_c % x_c != 0 {
                    return Err(malformed(format!(
                        "depthwise filter channels {f_c} are not a multiple of the input channels {x_c}"
                    )));
                }
                Op::DepthwiseConv2d(DepthwiseConv2d {
                    stride_h: positive(o.stride_h().fb()?, "stride_h")?,
                    stride_w: positive(o.stride_w().fb()?, "stride_w")?,
                    dilation_h: positive(o.dilation_h_factor().fb()?, "dilation_h_factor")?,
                    dilation_w: positive(o.dilation_w_factor().fb()?, "dilation_w_factor")?,
                    depth_multiplier: f_c / x_c,
                    padding: padding(o.padding().fb()?),
                    activation: activation(o.fused_activation_function().fb()?)?,
                })
            }
            FULLY_CONNECTED => {
                let (act, keep) = match options!(raw, FullyConnectedOptions) {
                    Some(o) => {
                        if o.weights_format().fb()? != fb::FullyConnectedOptionsWeightsFormat::Default {
                            return Err(err(
                                Kind::Unsupported,
                                "shuffled (SHUFFLED4x16INT8) fully-connected weights are not supported",
                            ));
                        }
                        (activation(o.fused_activation_function().fb()?)?, o.keep_num_dims().fb()?)
                    }
                    None => (Activation::None, false),
                };
                Op::FullyConnected(FullyConnected { activation: act, keep_num_dims: keep })
            }
            MAX_POOL_2D | AVERAGE_POOL_2D => {
                let o = required_options!(raw, Pool2DOptions);
                let p = Pool2d {
                    filter_h: positive(o.filter_height().fb()?, "filter_height")?,
                    filter_w: positive(o.filter_width().fb()?, "filter_width")?,
                    stride_h: positive(o.stride_h().fb()?, "stride_h")?,
                    stride_w: positive(o.stride_w().fb()?, "stride_w")?,
                    padding: padding(o.padding().fb()?),
                    activation: activation(o.fused_activation_function().fb()?)?,
                };
                if raw.code == MAX_POOL_2D { Op::MaxPool2d(p) } else { Op::AvgPool2d(p) }
            }
            ADD | SUB => {
                let (act, pot) = if raw.code == ADD {
                    match options!(raw, AddOptions) {
                        Some(o) => (o.fused_activation_function().fb()?, o.pot_scale_int16().fb()?),
                        None => (fb::ActivationFunctionType::None, true),
                    }
                } else {
                    match options!(raw, SubOptions) {
                        Some(o) => (o.fused_activation_function().fb()?, o.pot_scale_int16().fb()?),
                        None => (fb::ActivationFunctionType::None, true),
                    }
                };
                let int16 =
                    raw.input(0).and_then(|i| self.id(i).ok()).and_then(|id| self.graph.tensor(id)).map(|t| t.dtype)
                        == Some(DType::I16);
                if int16 && pot {
                    return Err(err(
                        Kind::UnsupportedQuantization,
                        "int16 ADD/SUB with pot_scale_int16 (the power-of-two-scale variant) is not supported; the 16x8 converter writes pot_scale_int16 = false",
                    ));
                }
                let activation = activation(act)?;
                if raw.code == ADD { Op::Add { activation } } else { Op::Sub { activation } }
            }
            MUL => {
                let act = match options!(raw, MulOptions) {
                    Some(o) => activation(o.fused_activation_function().fb()?)?,
                    None => Activation::None,
                };
                Op::Mul { activation: act }
            }
            SOFTMAX => Op::Softmax { beta: required_options!(raw, SoftmaxOptions).beta().fb()? },
            LOGISTIC => Op::Logistic,
            TANH => Op::Tanh,
            HARD_SWISH => Op::HardSwish,
            RELU => Op::Relu,
            RELU6 => Op::Relu6,
            LEAKY_RELU => Op::LeakyRelu { alpha: required_options!(raw, LeakyReluOptions).alpha().fb()? },
            CONCATENATION => {
                let o = required_options!(raw, ConcatenationOptions);
                Op::Concatenation {
                    axis: axis(o.axis().fb()?.into(), self.input_rank(raw)?, "concatenation")?,
                    activation: activation(o.fused_activation_function().fb()?)?,
                }
            }
            PAD | PADV2 => {
                let p = raw.input(1).ok_or_else(|| malformed(format!("{} has no paddings operand", raw.name)))?;
                let values = self.const_ints(p, "paddings")?;
                let rank = self.input_rank(raw)?;
                if values.len() != rank * 2 {
                    return Err(malformed(format!(
                        "paddings has {} values, input rank {rank} needs {}",
                        values.len(),
                        rank * 2
                    )));
                }
                let mut paddings = Vec::with_capacity(rank);
                for pair in values.chunks_exact(2) {
                    let (b, a) = (pair[0], pair[1]);
                    if b < 0 || a < 0 {
                        return Err(err(Kind::Unsupported, format!("negative padding {pair:?} is not supported")));
                    }
                    let to = |v: i64| usize::try_from(v).map_err(|_| malformed(format!("padding {v} too large")));
                    paddings.push([to(b)?, to(a)?]);
                }
                Op::Pad { paddings }
            }
            MEAN => {
                let a = raw.input(1).ok_or_else(|| malformed("MEAN has no axes operand"))?;
                let rank = self.input_rank(raw)?;
                let mut axes = Vec::new();
                for v in self.const_ints(a, "axes")? {
                    axes.push(axis(v, rank, "mean")?);
                }
                crate::vecmap::sort_usizes(&mut axes);
                axes.dedup();
                let keep_dims = match options!(raw, ReducerOptions) {
                    Some(o) => o.keep_dims().fb()?,
                    None => false,
                };
                Op::Mean { axes, keep_dims }
            }
            RESHAPE => {
                let out = raw.outputs.first().copied().ok_or_else(|| malformed("RESHAPE has no output"))?;
                let new_shape = self.shape(out)?.to_vec();
                // A constant shape operand (or the option) must agree with the output tensor.
                let declared: Option<Vec<i64>> = match raw.input(1) {
                    Some(s) if self.buffer_bytes(s, &self.tensor_ref(s)?)?.is_some() => {
                        Some(self.const_ints(s, "shape")?)
                    }
                    Some(_) => None,
                    None => options!(raw, ReshapeOptions)
                        .map(|o| o.new_shape().fb())
                        .transpose()?
                        .flatten()
                        .map(|v| v.iter().map(i64::from).collect()),
                };
                if let Some(d) = declared {
                    check_reshape(&d, &new_shape)?;
                }
                Op::Reshape { new_shape }
            }
            TRANSPOSE => {
                let p = raw.input(1).ok_or_else(|| malformed("TRANSPOSE has no perm operand"))?;
                let mut perm = Vec::new();
                for v in self.const_ints(p, "perm")? {
                    perm.push(usize::try_from(v).map_err(|_| malformed(format!("perm value {v} is negative")))?);
                }
                Op::Transpose { perm }
            }
            SQUEEZE => {
                let x = raw.input(0).ok_or_else(|| malformed("SQUEEZE has no input"))?;
                let shape = self.shape(x)?;
                let dims: Vec<i32> = options!(raw, SqueezeOptions)
                    .map(|o| o.squeeze_dims().fb())
                    .transpose()?
                    .flatten()
                    .map(|v| v.iter().collect())
                    .unwrap_or_default();
                let mut axes = Vec::new();
                if dims.is_empty() {
                    axes.extend(shape.iter().enumerate().filter(|(_, d)| **d == 1).map(|(a, _)| a));
                } else {
                    for d in dims {
                        axes.push(axis(d.into(), shape.len(), "squeeze")?);
                    }
                }
                crate::vecmap::sort_usizes(&mut axes);
                axes.dedup();
                Op::Squeeze { axes }
            }
            QUANTIZE => Op::Quantize,
            DEQUANTIZE => Op::Dequantize,
            _ => return Err(err(Kind::UnsupportedOp, format!("{} is not supported", raw.name))),
        };

        let mut inputs = Vec::new();
        for k in raw.data_input_positions() {
            match raw.inputs.get(k) {
                Some(Some(i)) => inputs.push(Some(self.id(*i)?)),
                Some(None) => inputs.push(None),
                None => {}
            }
        }
        // Trailing absent operands carry no information.
        while inputs.last() == Some(&None) {
            inputs.pop();
        }
        let outputs = raw.outputs.iter().map(|&o| self.id(o)).collect::<Result<Vec<_>, _>>()?;
        let name = raw.outputs.first().map(|&o| self.tensor_name(o)).unwrap_or_default();
        Ok(Node::new(name, op, inputs, outputs))
    }
}

/// Checks a TFLite reshape target (`-1` = inferred, dynamic batch allowed) against the output.
fn check_reshape(declared: &[i64], output: &[usize]) -> Result<(), ConvertError> {
    let fits = declared.len() == output.len()
        && declared
            .iter()
            .zip(output.iter())
            .enumerate()
            .all(|(a, (&d, &o))| d == -1 || d as i128 == o as i128 || (a == 0 && d < 0));
    if fits {
        Ok(())
    } else {
        Err(malformed(format!("reshape target {declared:?} does not match the output shape {output:?}")))
    }
}

/// TFLite's int8/16x8 quantization spec, as far as our kernels need it.
fn check_quantization(graph: &Graph, node: &Node, code: i32) -> Result<(), ConvertError> {
    let tensor = |id: Option<TensorId>| id.and_then(|id| graph.tensor(id).map(|t| (id, t)));
    let uq = |id: TensorId, t: &Tensor, m: String| {
        err(Kind::UnsupportedQuantization, m).with_tensor(id.index(), t.name.as_str())
    };

    // Every integer activation (data edge that is not a weight or bias) is per-tensor quantized.
    let activation_check = |id: TensorId, t: &Tensor, role: &str| -> Result<(), ConvertError> {
        match t.dtype {
            DType::I8 | DType::I16 | DType::U8 => {}
            _ => return Ok(()),
        }
        if t.dtype == DType::U8 && !matches!(code, QUANTIZE | DEQUANTIZE) {
            return Err(uq(
                id,
                t,
                format!("{role} is uint8: the legacy uint8 quantization scheme is not supported, only int8 and 16x8"),
            ));
        }
        let Some(q) = &t.quant else {
            return Err(uq(id, t, format!("{role} is {} without quantization scales", t.dtype)));
        };
        let Some((_, zp)) = q.per_tensor_params() else {
            return Err(uq(
                id,
                t,
                format!("{role} has {} per-channel scales; activations must be quantized per tensor", q.scales.len()),
            ));
        };
        if t.dtype == DType::I16 && zp != 0 {
            return Err(uq(
                id,
                t,
                format!("{role} is int16 with zero point {zp}; 16x8 activations must be symmetric (zero point 0)"),
            ));
        }
        Ok(())
    };

    let is_weighted = matches!(code, CONV_2D | DEPTHWISE_CONV_2D | FULLY_CONNECTED);
    for (k, input) in node.inputs.iter().enumerate() {
        if is_weighted && k > 0 {
            continue;
        }
        if let Some((id, t)) = tensor(*input) {
            // PADV2's constant value and other constant operands follow the activation's scheme.
            activation_check(id, t, &format!("input {k}"))?;
        }
    }
    for (k, &o) in node.outputs.iter().enumerate() {
        if let Some((id, t)) = tensor(Some(o)) {
            activation_check(id, t, &format!("output {k}"))?;
        }
    }
    if !is_weighted {
        return Ok(());
    }

    let (Some((_, x)), Some((wid, w))) = (tensor(node.input(0)), tensor(node.input(1))) else { return Ok(()) };
    let (channel_axis, out_channels) = match (code, w.shape.as_slice()) {
        (DEPTHWISE_CONV_2D, [.., c]) => (3, *c),
        (_, [o, ..]) => (0, *o),
        _ => (0, 0),
    };
    match (x.dtype, w.dtype) {
        (DType::F32, DType::F32) => return Ok(()),
        // Hybrid (dynamic-range) op: float activations, int8 weights; same weight rules.
        (DType::F32 | DType::I8 | DType::I16, DType::I8) => {}
        (xd, wd) => {
            return Err(uq(
                wid,
                w,
                format!("{xd} input with {wd} weights is not supported (f32 or int8 weights expected)"),
            ));
        }
    }
    // "Weights: symmetric per-channel int8, zero point 0" (TFLite quantization spec).
    let Some(q) = &w.quant else {
        return Err(uq(wid, w, "int8 weights without quantization scales".into()));
    };
    if let Some((c, z)) = q.zero_points.iter().enumerate().find(|(_, z)| **z != 0) {
        return Err(uq(
            wid,
            w,
            format!(
                "int8 weights must be symmetric (zero point 0), found zero point {z} at channel {c}: asymmetric weights are not supported"
            ),
        ));
    }
    if let Some(a) = q.axis {
        if a != channel_axis {
            return Err(uq(
                wid,
                w,
                format!(
                    "per-channel weight scales on axis {a}; this op needs them on its output-channel axis {channel_axis}"
                ),
            ));
        }
    }
    if q.scales.len() != 1 && q.scales.len() != out_channels {
        return Err(uq(wid, w, format!("{} weight scales for {out_channels} output channels", q.scales.len())));
    }
    if let Some((bid, b)) = tensor(node.input(2)) {
        let ok = matches!(
            (x.dtype, b.dtype),
            (DType::F32, DType::F32) | (DType::I8, DType::I32) | (DType::I16, DType::I32 | DType::I64)
        );
        if !ok {
            return Err(uq(
                bid,
                b,
                format!(
                    "{} bias with {} input (int8: int32 bias; 16x8: int64 or int32; hybrid: f32)",
                    b.dtype, x.dtype
                ),
            ));
        }
        if let Some(bq) = &b.quant {
            if bq.zero_points.iter().any(|&z| z != 0) {
                return Err(uq(bid, b, "bias zero points must be 0".into()));
            }
        }
    }
    Ok(())
}
