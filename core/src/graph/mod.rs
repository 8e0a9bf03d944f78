//! The graph IR shared by the importers (TFLite, ONNX), the graph passes, the quantizer and the
//! `.mq` writer (`alloc` only).
//!
//! A [`Graph`] is a list of [`Tensor`]s, addressed by [`TensorId`], and a list of [`Node`]s in
//! topological order, each an [`Op`] with its attributes, input tensors and output tensors.
//! It is deliberately explicit and small:
//! - **Static shapes.** Every tensor has a concrete shape (`Vec<usize>`). A dynamic batch axis
//!   (TFLite `shape_signature` -1, ONNX symbolic batch) becomes 1; any other dynamic extent is
//!   an importer error.
//! - **One layout.** 4-D activations are NHWC, filters use TFLite's layouts (see [`Op`]). The
//!   ONNX importer converts NCHW models to this layout.
//! - **Float and quantized graphs are the same type.** A float model has `F32` tensors without
//!   [`TensorQuant`]; a quantized one has `I8`/`I16` activations and weights with their scales
//!   and zero points, and `I32`/`I64` biases. A hybrid op (float activations, int8 weights, as
//!   in TFLite dynamic-range models) keeps its int8 weights;
//!   [`Graph::dequantize_hybrid_weights`] makes such a graph purely float.
//! - **Constants are tensors with data** ([`Tensor::data`], typed [`ConstData`]); everything
//!   else is an activation (a graph input or some node's output).
//!
//! [`Graph::validate`] checks all of it (ids in range, topological order, arity, shapes along
//! every edge, data types, constant sizes, quantization parameters) and names the node and tensor
//! at fault; the importers run it before returning, and code that consumes a validated graph
//! may rely on those invariants.
//!
//! ```
//! use microquant::graph::*;
//!
//! let mut g = Graph::new(GraphMetadata::new("example", "built in a doctest"));
//! let x = g.add_tensor(Tensor::new("x", vec![1, 4], DType::F32)).unwrap();
//! let w = g
//!     .add_tensor(Tensor::constant("w", vec![2, 4], ConstData::F32(vec![0.5; 8])))
//!     .unwrap();
//! let y = g.add_tensor(Tensor::new("y", vec![1, 2], DType::F32)).unwrap();
//! g.add_node(Node::new(
//!     "fc",
//!     Op::FullyConnected(FullyConnected { activation: FusedActivation::Relu, keep_num_dims: false }),
//!     vec![Some(x), Some(w), None],
//!     vec![y],
//! ));
//! g.inputs.push(x);
//! g.outputs.push(y);
//! g.validate().unwrap();
//! assert_eq!(g.total_macs(), 8);
//! assert_eq!(g.constant_totals().bytes, 32);
//! ```

mod dequantize;
pub mod error;
mod movement;
mod op;
mod shape;
mod unary;
mod validate;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

pub use error::{ConvertError, ConvertErrorKind};
pub use movement::StridedSlice;
pub use op::ResizeMethod;
pub use op::{
    Arity, AxisWindow, Conv2d, DepthwiseConv2d, FullyConnected, FusedActivation, Gru, Lstm, Op, Padding, PaddingValues,
    Pool2d, TransposeConv2d,
};
pub use shape::{broadcast_shapes, num_elements};
pub use unary::UnaryFn;

/// The most nodes an importer accepts, checked on the count the file declares before anything
/// is converted: far above any model for a microcontroller, far below what would exhaust memory.
pub const MAX_NODES: usize = 1 << 16;
/// The most tensors an importer accepts (checked like [`MAX_NODES`]).
pub const MAX_TENSORS: usize = 1 << 18;

/// Index of a tensor in [`Graph::tensors`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TensorId(pub u32);

impl TensorId {
    /// The index into [`Graph::tensors`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
    /// The id of tensor `index`, or `None` if it does not fit `u32`.
    pub fn from_index(index: usize) -> Option<Self> {
        u32::try_from(index).ok().map(TensorId)
    }
}

impl fmt::Display for TensorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16 (stored as its bit pattern, e.g. fp16 weights before a Dequantize).
    F16,
    /// Signed 8-bit integer (quantized activations and weights).
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 16-bit integer (16x8 activations).
    I16,
    /// Signed 32-bit integer (int8 biases, shapes, indices).
    I32,
    /// Signed 64-bit integer (16x8 biases, ONNX shapes).
    I64,
    /// Boolean, one byte per element (0 or 1).
    Bool,
    /// Signed 4-bit integer, values in [-8, 7]: int4 weights (TFLite `INT4`), held one per
    /// byte in the graph ([`ConstData::I4`]) and packed two per byte in files
    /// ([`crate::kernels::int4`]).
    I4,
}

impl DType {
    /// Bytes per element (in the graph: [`DType::I4`] takes a byte per element there, half a
    /// byte when packed in a file).
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool | DType::I4 => 1,
            DType::F16 | DType::I16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::I64 => 8,
        }
    }
    /// Short name: `f32`, `f16`, `i8`, `u8`, `i16`, `i32`, `i64`, `bool`, `i4`.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
            DType::I4 => "i4",
        }
    }
    /// True for `F32` and `F16`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }
    /// The inclusive value range of an integer type (`None` for float and bool).
    pub fn int_range(self) -> Option<(i64, i64)> {
        match self {
            DType::I8 => Some((i8::MIN.into(), i8::MAX.into())),
            DType::I4 => Some((-8, 7)),
            DType::U8 => Some((0, u8::MAX.into())),
            DType::I16 => Some((i16::MIN.into(), i16::MAX.into())),
            DType::I32 => Some((i32::MIN.into(), i32::MAX.into())),
            DType::I64 => Some((i64::MIN, i64::MAX)),
            DType::F32 | DType::F16 | DType::Bool => None,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Affine quantization of a tensor: `real = scale * (q - zero_point)`.
///
/// Per-tensor: one scale and one zero point, `axis` is `None`. Per-channel: one scale and zero
/// point per index of dimension `axis` (conv filters: axis 0; depthwise filters: axis 3; FC
/// weights: axis 0; biases: axis 0). A source tensor with a single scale is stored per-tensor
/// even if the source names a quantized dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorQuant {
    /// Scales (finite, > 0), one, or one per channel.
    pub scales: Vec<f32>,
    /// Zero points, as many as `scales`.
    pub zero_points: Vec<i32>,
    /// The channel axis for per-channel quantization.
    pub axis: Option<usize>,
}

impl TensorQuant {
    /// Per-tensor parameters.
    pub fn per_tensor(scale: f32, zero_point: i32) -> Self {
        Self { scales: vec![scale], zero_points: vec![zero_point], axis: None }
    }
    /// Per-channel parameters along `axis`.
    pub fn per_channel(scales: Vec<f32>, zero_points: Vec<i32>, axis: usize) -> Self {
        Self { scales, zero_points, axis: Some(axis) }
    }
    /// True when there is one scale per channel.
    pub fn is_per_channel(&self) -> bool {
        self.axis.is_some()
    }
    /// The scale and zero point of a per-tensor quantization (`None` if per-channel or empty).
    pub fn per_tensor_params(&self) -> Option<(f32, i32)> {
        match (self.axis, self.scales.as_slice(), self.zero_points.as_slice()) {
            (None, [s], [z]) => Some((*s, *z)),
            _ => None,
        }
    }
}

/// The data of a constant tensor, typed. Elements are in row-major order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConstData {
    /// `F32` elements.
    F32(Vec<f32>),
    /// `F16` elements as their IEEE 754 binary16 bit patterns.
    F16(Vec<u16>),
    /// `I8` elements.
    I8(Vec<i8>),
    /// `U8` elements.
    U8(Vec<u8>),
    /// `I16` elements.
    I16(Vec<i16>),
    /// `I32` elements.
    I32(Vec<i32>),
    /// `I64` elements.
    I64(Vec<i64>),
    /// `Bool` elements.
    Bool(Vec<bool>),
    /// `I4` elements, one per `i8` (values in [-8, 7]).
    I4(Vec<i8>),
}

macro_rules! le_chunks {
    ($bytes:expr, $t:ty, $n:expr) => {
        $bytes
            .chunks_exact($n)
            .map(|c| {
                let mut a = [0u8; $n];
                a.copy_from_slice(c);
                <$t>::from_le_bytes(a)
            })
            .collect()
    };
}

impl ConstData {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            ConstData::F32(_) => DType::F32,
            ConstData::F16(_) => DType::F16,
            ConstData::I8(_) => DType::I8,
            ConstData::U8(_) => DType::U8,
            ConstData::I16(_) => DType::I16,
            ConstData::I32(_) => DType::I32,
            ConstData::I64(_) => DType::I64,
            ConstData::Bool(_) => DType::Bool,
            ConstData::I4(_) => DType::I4,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ConstData::F32(v) => v.len(),
            ConstData::F16(v) => v.len(),
            ConstData::I8(v) => v.len(),
            ConstData::U8(v) => v.len(),
            ConstData::I16(v) => v.len(),
            ConstData::I32(v) => v.len(),
            ConstData::I64(v) => v.len(),
            ConstData::Bool(v) => v.len(),
            ConstData::I4(v) => v.len(),
        }
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Size in bytes when stored densely (`len * dtype.size()`; `I4`: packed two per byte,
    /// `ceil(len / 2)`).
    pub fn byte_len(&self) -> usize {
        match self {
            ConstData::I4(v) => crate::kernels::int4::packed_len(v.len()),
            _ => self.len().saturating_mul(self.dtype().size()),
        }
    }
    /// Decodes little-endian bytes as `dtype` elements. `None` if the length is not a multiple of
    /// the element size. `Bool`: any non-zero byte is `true`. `I4`: one element per byte (the
    /// graph's form; packed data goes through [`ConstData::from_packed_i4`]).
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<Self> {
        if bytes.len() % dtype.size() != 0 {
            return None;
        }
        Some(match dtype {
            DType::F32 => ConstData::F32(le_chunks!(bytes, f32, 4)),
            DType::F16 => ConstData::F16(le_chunks!(bytes, u16, 2)),
            DType::I8 => ConstData::I8(bytes.iter().map(|&b| b as i8).collect()),
            DType::U8 => ConstData::U8(bytes.to_vec()),
            DType::I16 => ConstData::I16(le_chunks!(bytes, i16, 2)),
            DType::I32 => ConstData::I32(le_chunks!(bytes, i32, 4)),
            DType::I64 => ConstData::I64(le_chunks!(bytes, i64, 8)),
            DType::Bool => ConstData::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::I4 => {
                let v: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
                if v.iter().any(|x| !(-8..=7).contains(x)) {
                    return None;
                }
                ConstData::I4(v)
            }
        })
    }
    /// `count` int4 elements from their packed form (two per byte, TFLite's layout:
    /// [`crate::kernels::int4`]). `None` unless `packed` has `ceil(count / 2)` bytes.
    pub fn from_packed_i4(packed: &[u8], count: usize) -> Option<Self> {
        let mut v = vec![0i8; count];
        crate::kernels::int4::unpack(packed, &mut v).ok()?;
        Some(ConstData::I4(v))
    }
    /// `I4` elements packed two per byte ([`crate::kernels::int4`]); `None` for other data.
    pub fn to_packed_i4(&self) -> Option<Vec<u8>> {
        let ConstData::I4(v) = self else { return None };
        let mut out = vec![0u8; crate::kernels::int4::packed_len(v.len())];
        crate::kernels::int4::pack(v, &mut out).ok()?;
        Some(out)
    }
    /// The elements as little-endian bytes (the inverse of [`ConstData::from_le_bytes`]; `Bool`
    /// as 0/1).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        fn flat<const N: usize, T: Copy>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
            v.iter().flat_map(|&x| f(x)).collect()
        }
        match self {
            ConstData::F32(v) => flat(v, f32::to_le_bytes),
            ConstData::F16(v) => flat(v, u16::to_le_bytes),
            ConstData::I8(v) => v.iter().map(|&x| x as u8).collect(),
            ConstData::U8(v) => v.clone(),
            ConstData::I16(v) => flat(v, i16::to_le_bytes),
            ConstData::I32(v) => flat(v, i32::to_le_bytes),
            ConstData::I64(v) => flat(v, i64::to_le_bytes),
            ConstData::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
            ConstData::I4(v) => v.iter().map(|&x| x as u8).collect(),
        }
    }
    /// The elements if `F32`.
    pub fn as_f32(&self) -> Option<&[f32]> {
        if let ConstData::F32(v) = self { Some(v) } else { None }
    }
    /// The elements if `I8`.
    pub fn as_i8(&self) -> Option<&[i8]> {
        if let ConstData::I8(v) = self { Some(v) } else { None }
    }
    /// The elements if `I16`.
    pub fn as_i16(&self) -> Option<&[i16]> {
        if let ConstData::I16(v) = self { Some(v) } else { None }
    }
    /// The elements if `I32`.
    pub fn as_i32(&self) -> Option<&[i32]> {
        if let ConstData::I32(v) = self { Some(v) } else { None }
    }
    /// The elements if `I64`.
    pub fn as_i64(&self) -> Option<&[i64]> {
        if let ConstData::I64(v) = self { Some(v) } else { None }
    }
    /// Integer elements (`I8`, `U8`, `I16`, `I32`, `I64`) widened to i64, e.g. to read axes or
    /// shapes; `None` for float and bool data.
    pub fn to_i64_vec(&self) -> Option<Vec<i64>> {
        Some(match self {
            ConstData::I8(v) | ConstData::I4(v) => v.iter().map(|&x| x.into()).collect(),
            ConstData::U8(v) => v.iter().map(|&x| x.into()).collect(),
            ConstData::I16(v) => v.iter().map(|&x| x.into()).collect(),
            ConstData::I32(v) => v.iter().map(|&x| x.into()).collect(),
            ConstData::I64(v) => v.clone(),
            ConstData::F32(_) | ConstData::F16(_) | ConstData::Bool(_) => return None,
        })
    }
}

/// A tensor: an activation (graph input or node output) or a constant (with [`Tensor::data`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Name from the source model (may be empty; not necessarily unique).
    pub name: String,
    /// Static shape, row-major; `[]` is a scalar. A dynamic batch axis is 1.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// Quantization parameters of an integer tensor that represents real values.
    pub quant: Option<TensorQuant>,
    /// Constant data (`None` for activations).
    pub data: Option<ConstData>,
}

impl Tensor {
    /// An activation tensor without quantization.
    pub fn new(name: impl Into<String>, shape: Vec<usize>, dtype: DType) -> Self {
        Self { name: name.into(), shape, dtype, quant: None, data: None }
    }
    /// A constant tensor; its dtype is the data's.
    pub fn constant(name: impl Into<String>, shape: Vec<usize>, data: ConstData) -> Self {
        Self { name: name.into(), shape, dtype: data.dtype(), quant: None, data: Some(data) }
    }
    /// The same tensor with quantization parameters.
    #[must_use]
    pub fn with_quant(mut self, quant: TensorQuant) -> Self {
        self.quant = Some(quant);
        self
    }
    /// Number of elements, or `None` on overflow.
    pub fn num_elements(&self) -> Option<usize> {
        num_elements(&self.shape)
    }
    /// Size in bytes, or `None` on overflow.
    pub fn byte_len(&self) -> Option<usize> {
        self.num_elements()?.checked_mul(self.dtype.size())
    }
    /// True if the tensor has constant data.
    pub fn is_constant(&self) -> bool {
        self.data.is_some()
    }
}

/// One operator application.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Name (TFLite: the first output tensor's name, since TFLite operators have none; ONNX:
    /// the node name).
    pub name: String,
    /// The operator and its attributes.
    pub op: Op,
    /// Inputs in the order the op documents; `None` for an absent optional input.
    pub inputs: Vec<Option<TensorId>>,
    /// Outputs.
    pub outputs: Vec<TensorId>,
}

impl Node {
    /// A node.
    pub fn new(name: impl Into<String>, op: Op, inputs: Vec<Option<TensorId>>, outputs: Vec<TensorId>) -> Self {
        Self { name: name.into(), op, inputs, outputs }
    }
    /// Input `i`, or `None` if absent or out of range.
    pub fn input(&self, i: usize) -> Option<TensorId> {
        self.inputs.get(i).copied().flatten()
    }
    /// Output `i`.
    pub fn output(&self, i: usize) -> Option<TensorId> {
        self.outputs.get(i).copied()
    }
}

/// Where a graph comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GraphMetadata {
    /// The program that built this graph, e.g. `"microquant 0.1.0 tflite importer"`.
    pub producer: String,
    /// What the source model says about itself and its format, e.g. `"TFLite schema 3,
    /// description \"MLIR Converted.\""` or the ONNX producer name and opset.
    pub source: String,
}

impl GraphMetadata {
    /// Metadata from its two fields.
    pub fn new(producer: impl Into<String>, source: impl Into<String>) -> Self {
        Self { producer: producer.into(), source: source.into() }
    }
}

/// Count and size of the constant tensors of a graph ([`Graph::constant_totals`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConstantTotals {
    /// Number of constant tensors.
    pub tensors: usize,
    /// Number of elements in them.
    pub elements: usize,
    /// Their size in bytes when stored densely (saturating).
    pub bytes: usize,
}

/// A model: tensors, nodes in topological order, inputs and outputs. See the [module
/// docs](self).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    /// All tensors, addressed by [`TensorId`].
    pub tensors: Vec<Tensor>,
    /// Nodes in topological (execution) order.
    pub nodes: Vec<Node>,
    /// Model inputs (activations, in the source's order).
    pub inputs: Vec<TensorId>,
    /// Model outputs (in the source's order).
    pub outputs: Vec<TensorId>,
    /// Where the graph comes from.
    pub metadata: GraphMetadata,
}

impl Graph {
    /// An empty graph.
    pub fn new(metadata: GraphMetadata) -> Self {
        Self { metadata, ..Self::default() }
    }

    /// Appends a tensor and returns its id.
    ///
    /// # Errors
    /// [`ConvertErrorKind::InvalidGraph`] if the graph already has `u32::MAX + 1` tensors.
    pub fn add_tensor(&mut self, tensor: Tensor) -> Result<TensorId, ConvertError> {
        let id = TensorId::from_index(self.tensors.len())
            .ok_or_else(|| ConvertError::new(ConvertErrorKind::InvalidGraph, "more than 2^32 tensors"))?;
        self.tensors.push(tensor);
        Ok(id)
    }

    /// Appends a node (after the nodes it depends on) and returns its index.
    pub fn add_node(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The tensor `id`, if in range.
    pub fn tensor(&self, id: TensorId) -> Option<&Tensor> {
        self.tensors.get(id.index())
    }

    /// The tensor `id` for modification, if in range.
    pub fn tensor_mut(&mut self, id: TensorId) -> Option<&mut Tensor> {
        self.tensors.get_mut(id.index())
    }

    /// For every tensor, the index of the node that produces it (`None` for graph inputs,
    /// constants and unused tensors). If several nodes claim the same output (an invalid graph),
    /// the first wins.
    pub fn producer_map(&self) -> Vec<Option<usize>> {
        let mut map = vec![None; self.tensors.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            for o in &node.outputs {
                if let Some(slot @ None) = map.get_mut(o.index()) {
                    *slot = Some(i);
                }
            }
        }
        map
    }

    /// For every tensor, the indices of the nodes that read it, in node order (a node that reads
    /// a tensor twice appears once).
    pub fn consumer_map(&self) -> Vec<Vec<usize>> {
        let mut map = vec![Vec::new(); self.tensors.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            for t in node.inputs.iter().flatten() {
                if let Some(list) = map.get_mut(t.index()) {
                    if list.last() != Some(&i) {
                        list.push(i);
                    }
                }
            }
        }
        map
    }

    /// The node that produces tensor `id`, if any.
    pub fn producer(&self, id: TensorId) -> Option<usize> {
        self.nodes.iter().position(|n| n.outputs.contains(&id))
    }

    /// The nodes that read tensor `id`, in order.
    pub fn consumers(&self, id: TensorId) -> Vec<usize> {
        self.nodes.iter().enumerate().filter(|(_, n)| n.inputs.contains(&Some(id))).map(|(i, _)| i).collect()
    }

    /// Multiply-accumulates of node `index`: output elements times the filter taps per output
    /// (conv: `kh * kw * in_c`; depthwise: `kh * kw`; fully connected: `in`). 0 for every other
    /// op, for an index out of range and for shapes that do not fit their op (saturates at
    /// `u64::MAX`).
    pub fn node_macs(&self, index: usize) -> u64 {
        let Some(node) = self.nodes.get(index) else { return 0 };
        let shape_of = |t: Option<TensorId>| t.and_then(|t| self.tensor(t)).map(|t| t.shape.as_slice());
        let out = shape_of(node.output(0)).and_then(num_elements).unwrap_or(0) as u64;
        let per_output: u64 = match (&node.op, shape_of(node.input(1))) {
            (Op::Conv2d(_), Some(&[_, kh, kw, ci])) => (kh as u64).saturating_mul(kw as u64).saturating_mul(ci as u64),
            (Op::DepthwiseConv2d(_), Some(&[_, kh, kw, _])) => (kh as u64).saturating_mul(kw as u64),
            (Op::FullyConnected(_), Some(&[_, inputs])) => inputs as u64,
            // Each input value meets every tap: about kh * kw * out_c MACs per input value,
            // counted here per output as kh * kw * in_c / (stride_h * stride_w).
            (Op::TransposeConv2d(c), Some(&[_, kh, kw, ci])) => {
                ((kh * kw * ci) / (c.stride_h * c.stride_w).max(1)) as u64
            }
            _ => 0,
        };
        out.saturating_mul(per_output)
    }

    /// Sum of [`Graph::node_macs`] over all nodes (saturating).
    pub fn total_macs(&self) -> u64 {
        (0..self.nodes.len()).fold(0u64, |acc, i| acc.saturating_add(self.node_macs(i)))
    }

    /// Count, elements and bytes of the constant tensors.
    pub fn constant_totals(&self) -> ConstantTotals {
        self.tensors.iter().filter_map(|t| t.data.as_ref()).fold(ConstantTotals::default(), |acc, d| ConstantTotals {
            tensors: acc.tensors + 1,
            elements: acc.elements.saturating_add(d.len()),
            bytes: acc.bytes.saturating_add(d.byte_len()),
        })
    }

    /// The output shapes `node` would have given the current shapes of its inputs (e.g. for an
    /// importer that must create the output tensors).
    ///
    /// # Errors
    /// [`ConvertErrorKind::InvalidGraph`] if an input id is out of range or the shapes do not fit
    /// the op (see [`Op::infer_shapes`]).
    pub fn infer_output_shapes(&self, node: &Node) -> Result<Vec<Vec<usize>>, ConvertError> {
        let mut shapes = Vec::with_capacity(node.inputs.len());
        for (i, t) in node.inputs.iter().enumerate() {
            match t {
                None => shapes.push(None),
                Some(id) => match self.tensor(*id) {
                    Some(t) => shapes.push(Some(t.shape.as_slice())),
                    None => {
                        return Err(ConvertError::new(
                            ConvertErrorKind::InvalidGraph,
                            alloc::format!("input {i} is tensor {id}, out of range ({} tensors)", self.tensors.len()),
                        ));
                    }
                },
            }
        }
        node.op.infer_shapes(&shapes)
    }

    /// Removes the tensors that no node, graph input or graph output refers to, renumbering the
    /// rest in their current order. Returns, for each old index, its new id (`None` if
    /// removed). Ids out of range in nodes or graph inputs/outputs are left as they are (and
    /// [`Graph::validate`] reports them).
    pub fn prune_unused_tensors(&mut self) -> Vec<Option<TensorId>> {
        let mut used = vec![false; self.tensors.len()];
        let mut mark = |t: &TensorId| {
            if let Some(u) = used.get_mut(t.index()) {
                *u = true;
            }
        };
        self.inputs.iter().for_each(&mut mark);
        self.outputs.iter().for_each(&mut mark);
        for n in &self.nodes {
            n.inputs.iter().flatten().for_each(&mut mark);
            n.outputs.iter().for_each(&mut mark);
        }
        let mut map = Vec::with_capacity(self.tensors.len());
        let old = core::mem::take(&mut self.tensors);
        for (t, u) in old.into_iter().zip(used.iter()) {
            // `from_index` only fails past 2^32 tensors; such a tensor is dropped and the
            // references to it are left dangling for `validate` to report.
            match TensorId::from_index(self.tensors.len()) {
                Some(id) if *u => {
                    map.push(Some(id));
                    self.tensors.push(t);
                }
                _ => map.push(None),
            }
        }
        let remap = |t: &mut TensorId| {
            if let Some(Some(n)) = map.get(t.index()) {
                *t = *n;
            }
        };
        self.inputs.iter_mut().for_each(remap);
        self.outputs.iter_mut().for_each(remap);
        for n in &mut self.nodes {
            n.inputs.iter_mut().flatten().for_each(remap);
            n.outputs.iter_mut().for_each(remap);
        }
        map
    }

    fn fmt_tensor_ref(&self, f: &mut fmt::Formatter<'_>, id: TensorId) -> fmt::Result {
        match self.tensor(id) {
            Some(t) => {
                write!(f, "{id}:{}{:?}", t.dtype, t.shape)?;
                if t.is_constant() {
                    f.write_str("=const")?;
                }
                Ok(())
            }
            None => write!(f, "{id}:<out of range>"),
        }
    }
}

/// A readable listing: a summary line, the inputs and outputs, then one line per node:
/// `#index Op(attributes) inputs -> outputs  [MACs]`, each tensor as `t<id>:<dtype>[shape]`
/// (`=const` for constants, `-` for an absent optional input).
///
/// The alternate form (`{:#}`) also lists every tensor with its name, quantization and, for
/// constants, the data size.
impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.constant_totals();
        writeln!(
            f,
            "graph: {} nodes, {} tensors ({} constant, {} bytes), {} MACs",
            self.nodes.len(),
            self.tensors.len(),
            c.tensors,
            c.bytes,
            self.total_macs()
        )?;
        if !self.metadata.producer.is_empty() || !self.metadata.source.is_empty() {
            writeln!(f, "from: {} ({})", self.metadata.source, self.metadata.producer)?;
        }
        for (label, list) in [("inputs", &self.inputs), ("outputs", &self.outputs)] {
            write!(f, "{label}:")?;
            for &id in list.iter() {
                f.write_str(" ")?;
                self.fmt_tensor_ref(f, id)?;
            }
            writeln!(f)?;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            write!(f, "#{i} {} ", n.op)?;
            for (k, t) in n.inputs.iter().enumerate() {
                if k > 0 {
                    f.write_str(", ")?;
                }
                match t {
                    Some(id) => self.fmt_tensor_ref(f, *id)?,
                    None => f.write_str("-")?,
                }
            }
            f.write_str(" -> ")?;
            for (k, &id) in n.outputs.iter().enumerate() {
                if k > 0 {
                    f.write_str(", ")?;
                }
                self.fmt_tensor_ref(f, id)?;
            }
            let macs = self.node_macs(i);
            if macs > 0 {
                write!(f, "  [{macs} MACs]")?;
            }
            writeln!(f)?;
        }
        if f.alternate() {
            writeln!(f, "tensors:")?;
            for (i, t) in self.tensors.iter().enumerate() {
                write!(f, "t{i} {}{:?} {:?}", t.dtype, t.shape, t.name)?;
                if let Some(q) = &t.quant {
                    match (q.per_tensor_params(), q.axis) {
                        (Some((s, z)), _) => write!(f, " scale {s} zp {z}")?,
                        (None, Some(axis)) => write!(f, " {} scales on axis {axis}", q.scales.len())?,
                        (None, None) => write!(f, " {} scales", q.scales.len())?,
                    }
                }
                if let Some(d) = &t.data {
                    write!(f, " const {} bytes", d.byte_len())?;
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }
}
