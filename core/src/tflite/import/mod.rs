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
    ConstData, Conv2d, ConvertError, ConvertErrorKind as Kind, DType, DepthwiseConv2d, FullyConnected, FusedActivation,
    Graph, GraphMetadata, Node, Op, Padding, Pool2d, Tensor, TensorId, TensorQuant, TransposeConv2d, num_elements,
};
use crate::kernels::common::Hw;
use crate::kernels::transpose_conv::transpose_conv_padding;

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
const RELU_N1_TO_1: i32 = fb::BuiltinOperator::ReluN1To1 as i32;
const RELU_0_TO_1: i32 = fb::BuiltinOperator::Relu0To1 as i32;
const ABS: i32 = fb::BuiltinOperator::Abs as i32;
const NEG: i32 = fb::BuiltinOperator::Neg as i32;
const RSQRT: i32 = fb::BuiltinOperator::Rsqrt as i32;
const ELU: i32 = fb::BuiltinOperator::Elu as i32;
const SQRT: i32 = fb::BuiltinOperator::Sqrt as i32;
const RESHAPE: i32 = fb::BuiltinOperator::Reshape as i32;
const SUM: i32 = fb::BuiltinOperator::Sum as i32;
const REDUCE_MAX: i32 = fb::BuiltinOperator::ReduceMax as i32;
const RESIZE_BILINEAR: i32 = fb::BuiltinOperator::ResizeBilinear as i32;
const RESIZE_NEAREST_NEIGHBOR: i32 = fb::BuiltinOperator::ResizeNearestNeighbor as i32;
const SOFTMAX: i32 = fb::BuiltinOperator::Softmax as i32;
const SQUEEZE: i32 = fb::BuiltinOperator::Squeeze as i32;
const SUB: i32 = fb::BuiltinOperator::Sub as i32;
const TANH: i32 = fb::BuiltinOperator::Tanh as i32;
const TRANSPOSE: i32 = fb::BuiltinOperator::Transpose as i32;
const CUSTOM: i32 = fb::BuiltinOperator::Custom as i32;
const SLICE: i32 = fb::BuiltinOperator::Slice as i32;
const STRIDED_SLICE: i32 = fb::BuiltinOperator::StridedSlice as i32;
const SPLIT: i32 = fb::BuiltinOperator::Split as i32;
const SPLIT_V: i32 = fb::BuiltinOperator::SplitV as i32;
const DEPTH_TO_SPACE: i32 = fb::BuiltinOperator::DepthToSpace as i32;
const SPACE_TO_DEPTH: i32 = fb::BuiltinOperator::SpaceToDepth as i32;
const MINIMUM: i32 = fb::BuiltinOperator::Minimum as i32;
const MAXIMUM: i32 = fb::BuiltinOperator::Maximum as i32;
const PRELU: i32 = fb::BuiltinOperator::Prelu as i32;
const DIV: i32 = fb::BuiltinOperator::Div as i32;
const SQUARED_DIFFERENCE: i32 = fb::BuiltinOperator::SquaredDifference as i32;
const MIRROR_PAD: i32 = fb::BuiltinOperator::MirrorPad as i32;
const GATHER: i32 = fb::BuiltinOperator::Gather as i32;
const TILE: i32 = fb::BuiltinOperator::Tile as i32;
const BROADCAST_TO: i32 = fb::BuiltinOperator::BroadcastTo as i32;
const TRANSPOSE_CONV: i32 = fb::BuiltinOperator::TransposeConv as i32;
/// MediaPipe's custom transposed convolution with bias (`CUSTOM` with this custom code).
const MEDIAPIPE_TRANSPOSE_CONV: &str = "CUSTOM \"Convolution2DTransposeBias\"";

const SUPPORTED: &[i32] = &[
    SUM,
    REDUCE_MAX,
    RESIZE_BILINEAR,
    RESIZE_NEAREST_NEIGHBOR,
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
    MINIMUM,
    MAXIMUM,
    PRELU,
    DIV,
    SQUARED_DIFFERENCE,
    UNIDIRECTIONAL_SEQUENCE_LSTM,
    TRANSPOSE_CONV,
    BATCH_MATMUL,
    RELU_N1_TO_1,
    RELU_0_TO_1,
    ABS,
    NEG,
    RSQRT,
    ELU,
    SQRT,
];
const UNIDIRECTIONAL_SEQUENCE_LSTM: i32 = fb::BuiltinOperator::UnidirectionalSequenceLstm as i32;
const BATCH_MATMUL: i32 = fb::BuiltinOperator::BatchMatmul as i32;

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

fn activation(a: fb::ActivationFunctionType) -> Result<FusedActivation, ConvertError> {
    match a {
        fb::ActivationFunctionType::None => Ok(FusedActivation::None),
        fb::ActivationFunctionType::Relu => Ok(FusedActivation::Relu),
        fb::ActivationFunctionType::Relu6 => Ok(FusedActivation::Relu6),
        fb::ActivationFunctionType::ReluN1To1 => Ok(FusedActivation::ReluN1To1),
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
        // Packed two per byte in the buffer (TFLite's layout: `kernels::int4`).
        fb::TensorType::Int4 => DType::I4,
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
            RESHAPE | PAD | MEAN | TRANSPOSE | SLICE | STRIDED_SLICE | MIRROR_PAD | GATHER | SPLIT_V | TILE
            | BROADCAST_TO => vec![0],
            SPLIT => vec![1],
            RESIZE_BILINEAR | RESIZE_NEAREST_NEIGHBOR => vec![0],
            SUM | REDUCE_MAX => vec![0],
            PADV2 => vec![0, 2],
            // [output_shape, weights, input, bias?]: the output shape is the output tensor's.
            TRANSPOSE_CONV => vec![2, 1, 3],
            // The input, the eight weights and the four biases; the state tensors (18, 19) are
            // the op's own (its kept state), read for their quantization only.
            UNIDIRECTIONAL_SEQUENCE_LSTM => (0..=8).chain(12..=15).collect(),
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
    /// Per TFLite tensor: the value folded at import (shape computations, see `fold`).
    known: Vec<Option<fold::Folded>>,
    /// Per TFLite tensor: written by an operator (its dynamic extents are inferred).
    produced: Vec<bool>,
    /// Per TFLite tensor: declared with a dynamic extent other than the batch.
    dynamic: Vec<bool>,
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
            if !SUPPORTED.contains(&raw.code)
                && raw.name != MEDIAPIPE_TRANSPOSE_CONV
                && !ops_movement::SUPPORTED.contains(&raw.code)
                && !fold::FOLD_ONLY.contains(&raw.code)
            {
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
    let mut produced = vec![false; n_tensors];
    for raw in &raw_ops {
        for &o in &raw.outputs {
            if let Some(p) = produced.get_mut(o) {
                *p = true;
            }
        }
        // Shape computations (folded) make no graph tensors of their own.
        if fold::FOLD_ONLY.contains(&raw.code) {
            continue;
        }
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
        known: vec![None; n_tensors],
        produced,
        dynamic: vec![false; n_tensors],
    };
    for (i, &u) in used.iter().enumerate() {
        if u {
            let t = im.convert_tensor(i)?;
            let dynamic = im.has_dynamic_extent(i)?;
            if let Some(d) = im.dynamic.get_mut(i) {
                *d = dynamic;
            }
            let id = im.graph.add_tensor(t)?;
            if let Some(m) = im.map.get_mut(i) {
                *m = Some(id);
            }
        }
    }

    // Pass 3: nodes (shape computations folded into constants first; a split gives one node per
    // output).
    let mut origin = Vec::with_capacity(raw_ops.len());
    for (index, raw) in raw_ops.iter().enumerate() {
        let at = |e: ConvertError| e.or_at_node(index, &raw.name);
        if let Some(k) = im.try_fold(raw).map_err(at)? {
            im.set_folded(raw, k).map_err(at)?;
            continue;
        }
        im.fix_reshape_output(raw).map_err(at)?;
        for node in im.convert_op_nodes(raw).map_err(at)? {
            check_quantization(&im.graph, &node, raw.code).map_err(at)?;
            im.fix_dynamic_outputs(raw, &node).map_err(at)?;
            im.graph.add_node(node);
            origin.push(index);
        }
    }
    im.graph.inputs = graph_inputs.iter().filter_map(|&i| im.map.get(i).copied().flatten()).collect();
    im.graph.outputs = graph_outputs.iter().filter_map(|&i| im.map.get(i).copied().flatten()).collect();

    // Validation errors name the TFLite operator of the node.
    im.graph.validate().map_err(|e| {
        match e.node_index().and_then(|i| origin.get(i)).and_then(|&i| raw_ops.get(i)) {
            Some(raw) => e.with_op(raw.name.as_str()),
            None => e,
        }
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

// After the macros above: the submodules use them.
mod fold;
mod ops;
mod ops_movement;
mod quantization;
mod sparse;
mod tensors;

use quantization::check_quantization;
