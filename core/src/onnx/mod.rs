//! ONNX importer (`alloc` only): reads a float `.onnx` model into a [`Graph`].
//!
//! Models written by `torch.onnx.export` (TorchScript and dynamo exporters), tf2onnx, skl2onnx
//! or by hand with `onnx.helper`, default-domain opsets [`MIN_OPSET`] to [`MAX_OPSET`]. The
//! protobuf is decoded by `prost` with the message types generated from ONNX's own `onnx.proto`
//! (the onnx 1.23.2 wheel; see `generate.sh` next to this file). The QDQ export encodes its
//! model with a small writer of its own (`write.rs`), byte for byte as prost would.
//!
//! # Supported ops
//! | ONNX | becomes |
//! |---|---|
//! | `Conv` (2-D, and 1-D over `[N, C, W]` as a 2-D one over `[N, 1, W, C]`; `group` 1 or depthwise `group == C`) | [`Op::Conv2d`] (filter OHWI) or [`Op::DepthwiseConv2d`] (filter `[1, kh, kw, C·m]`) |
//! | `ConvTranspose` (2-D, `group` 1, dilations 1; `pads`, `output_padding`, `output_shape`, `auto_pad`) | [`Op::TransposeConv2d`] (filter `[C, M, kH, kW]` to OHWI `[M, kH, kW, C]`) |
//! | `Gemm` (`transA` 0, constant B) | [`Op::FullyConnected`] with `alpha·B` as `[out, in]` weights (transposed when `transB` is 0) and `beta·C` as bias |
//! | `MatMul` (constant 2-D B) | [`Op::FullyConnected`] with Bᵀ, no bias (`passes` folds a following `Add` into it), `keep_num_dims` for rank > 2 |
//! | `MatMul` (two activations, ranks 2 to 5) | [`Op::BatchMatMul`] (NumPy broadcasting of the batch dimensions); an operand that is a `Transpose` of its last two axes is read in place (`adj_x` / `adj_y`) |
//! | `Add`, `Sub`, `Mul`, `Div` | [`Op::Add`], [`Op::Sub`], [`Op::Mul`], [`Op::Div`] (`passes` turns Sub/Div by a constant into Add/Mul) |
//! | `Min`, `Max` (any number of inputs) | a chain of two-input [`Op::Minimum`] / [`Op::Maximum`] |
//! | `PRelu` | [`Op::Prelu`] (the slope broadcast unidirectionally, in the activation's layout) |
//! | `BatchNormalization` (inference) | [`Op::Mul`] by `scale / sqrt(var + eps)` and [`Op::Add`] of `B - mean · that` (`passes` folds both into a preceding conv/FC) |
//! | `Relu`, `LeakyRelu`, `Sigmoid`, `Tanh`, `HardSigmoid`, `HardSwish`, `Softmax` | [`Op::Relu`], [`Op::LeakyRelu`], [`Op::Logistic`], [`Op::Tanh`], [`Op::HardSigmoid`], [`Op::HardSwish`], [`Op::Softmax`] |
//! | `Exp`, `Sqrt`, `Erf`, `Neg`, `Softplus`, `Sin`, `Cos`, `Gelu` (opset 20, `approximate` none or tanh), `Pow` with a constant exponent | [`Op::Unary`] (int8: one 256-entry table, `.mq` kind LUT); `x · Sigmoid(x)` becomes SiLU (`passes::fuse_silu`) |
//! | `Abs`, `Elu` | [`Op::Abs`] (`.mq` ABS), [`Op::Elu`] (`.mq` ELU, TFLite Micro's table) |
//! | `Reciprocal` (of an activation) | [`Op::Unary`] `Pow(-1)` (a table) |
//! | `Clip` with constant bounds | [`Op::Relu6`] for [0, 6], [`Op::Relu`] for [0, ∞), else [`Op::Clip`] |
//! | `MaxPool`, `AveragePool` (2-D), `GlobalAveragePool`, `GlobalMaxPool` | [`Op::MaxPool2d`], [`Op::AvgPool2d`], [`Op::Mean`] over H and W, [`Op::MaxPool2d`] over the whole plane |
//! | `Flatten`, `Reshape`, `Squeeze`, `Unsqueeze` | [`Op::Reshape`] / [`Op::Squeeze`] (a [`Op::Transpose`] first when the data order must change) |
//! | `Transpose` | nothing: the importer tracks each tensor's axis order and transposes only when a consumer needs it |
//! | `Concat`, `Pad` (constant mode), `ReduceMean` | [`Op::Concatenation`], [`Op::Pad`], [`Op::Mean`] |
//! | `Resize` (4-D, nearest / linear; every `coordinate_transformation_mode` and `nearest_mode` TFLite's flags express, see `import/ops_spatial.rs`), `Upsample` | [`Op::Resize`] |
//! | `ReduceSum`, `ReduceMax` (any axes, attribute or input) | [`Op::Sum`], [`Op::ReduceMax`] |
//! | `LayerNormalization` (opset 17, any `axis`, optional bias; outputs 1 and 2 unused) | TFLite's pieces: [`Op::Mean`], [`Op::Sub`], [`Op::Mul`], [`Op::Mean`], [`Op::Add`] ε, [`Op::Unary`] `Pow(-½)`, [`Op::Mul`] ×2, [`Op::Add`] (each an int8 kernel); the pieces PyTorch writes below opset 17 import op by op |
//! | `LSTM` (forward, default activations, `Y_c` unused), `GRU` (forward, σ/tanh, both `linear_before_reset`; `Y_h` of one-step sequences) | [`Op::Lstm`] (int8: TFLite Micro's integer LSTM, `.mq` kind 60), [`Op::Gru`] (int8: unrolled per time step into fully connected, logistic, tanh, add, sub, mul ops by `passes::unroll_gru`; an initial state that is a graph input carries the state between calls) |
//! | `Identity`, `Dropout` (inference) | a no-op [`Op::Reshape`] that `passes` removes |
//! | `If` (condition constant at import) | the taken branch's nodes, converted in place (they read the outer graph's tensors) |
//! | `Constant`, and `Shape`, `Gather`, `Concat`, `Unsqueeze`, `Squeeze`, `Slice`, `Cast`, `Reshape`, `Flatten`, `Transpose`, `Identity`, `ConstantOfShape`, `Range`, `Expand`, `Tile`, `Equal`, `Less`/`Greater`(`OrEqual`), `And`/`Or`/`Xor`/`Not`, `Where`, `Neg`, `Abs`, `Sign`, `Sqrt`, `Reciprocal`, `Floor`/`Ceil`/`Round`, `Mod`, `Clip`, `Max`/`Min`/`Sum`/`Mean`, `ReduceSum`/`Prod`/`Max`/`Min`/`Mean`, arithmetic on constants | folded at import into constants (e.g. the `Shape → Gather → Unsqueeze → Concat → Reshape` chains that compute static shapes) |
//!
//! # Layout
//! ONNX convolutions are NCHW; our graph is NHWC with TFLite weight layouts (see [`Op`]). The
//! importer records, for every ONNX tensor, the order in which its axes are stored in the graph
//! (a permutation), converts weights to OHWI / depthwise layout, permutes constants, axes, pads
//! and concatenation axes to match, and inserts an [`Op::Transpose`] only where the data order
//! really changes: e.g. a `Flatten` of an NCHW tensor (C, H, W order) becomes a transpose to
//! NCHW then a reshape; `passes` then removes the transpose by permuting the columns of the
//! following fully-connected weights.
//!
//! **Model inputs and outputs** keep the model's own layout by default as far as the data goes:
//! a 4-D NCHW input becomes an NHWC graph input, and [`IoInfo`] records the permutation, so the
//! caller (CLI, runtime wrapper) transposes the data: [`IoInfo::to_graph_layout`] takes data in
//! the model's layout (as you would feed ONNX Runtime) and returns it in the graph's;
//! [`IoInfo::to_model_layout`] does the reverse for outputs. With
//! [`ImportOptions::keep_io_layout`] the graph itself takes and returns the model's layout
//! (with transposes inside the graph).
//!
//! # Shapes
//! Every shape is static. A dynamic first axis of a graph input (`dim_param`, e.g. `"batch"`)
//! becomes 1; any other dynamic extent must be given in [`ImportOptions::input_shapes`] (else an
//! error names the input, the axis and its `dim_param`). A non-float input (an int64 sample
//! rate) must be given a value ([`ImportOptions::input_values`]): it becomes a constant. Once
//! the shapes are fixed, shape computations fold into constants (the table's last row, and
//! `If` whose condition is then a constant: the taken branch is inlined). A node that still
//! needs a value computed at run time where we need a constant (a reshape target, an `If`
//! condition) is an error naming the node and the tensor.
//!
//! # Errors
//! Never a panic, whatever the bytes. A [`ConvertError`] of kind:
//! - `Truncated` / `Malformed`: bytes that are not a valid ONNX protobuf (prost's message),
//!   a model without a graph, a tensor whose data does not match its shape, a node input that is
//!   not defined before use;
//! - `UnsupportedOp`: an op outside the table above (or an op only supported on constants,
//!   applied to an activation), named with its domain, the node index and name, and the opset;
//! - `Unsupported`: an opset outside [`MIN_OPSET`]..=[`MAX_OPSET`], dynamic dimensions other
//!   than the batch axis, attribute values we cannot convert (grouped convolution other than
//!   depthwise, `Clip` ranges other than ReLU/ReLU6, a non-constant weight, external data...);
//! - `UnsupportedDType`: strings, complex, 8-bit floats, 4-bit ints;
//! - `InvalidGraph`: anything [`Graph::validate`] rejects.

mod attr;
mod export;
mod fold;
mod import;
mod qdq;
mod tensor;
mod write;
// Generated by `generate.sh` (prost-build 0.14.6) from `onnx.proto`; not edited by hand. It
// contains no `unsafe` (prost derives safe decoders).
#[rustfmt::skip]
#[allow(missing_docs, unused, unreachable_pub, clippy::all, clippy::pedantic, rustdoc::all)]
pub(crate) mod onnx_generated;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

#[cfg(doc)]
use crate::graph::Op;
use crate::graph::{ConvertError, ConvertErrorKind, Graph};
use crate::layout;

pub use export::{QdqExportOptions, export_hybrid, export_qdq, export_qdq_portable};
pub(crate) use onnx_generated as pb;

/// The oldest default-domain (`ai.onnx`) opset the importer reads.
pub const MIN_OPSET: i64 = 11;
/// The newest default-domain (`ai.onnx`) opset the importer reads.
pub const MAX_OPSET: i64 = 21;

/// Options of [`import_with_options`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// Names of the model outputs to import, in this order (default: all, in the model's
    /// order). Only the nodes these outputs need are converted, so an output computed by ops
    /// we do not support (e.g. skl2onnx's `ArgMax` label next to the probabilities) can be
    /// left out.
    pub outputs: Option<Vec<String>>,
    /// Make the graph take and return the model's own layout (e.g. NCHW), with transposes
    /// inside the graph, instead of recording the permutation in [`IoInfo`].
    pub keep_io_layout: bool,
    /// Shapes of graph inputs, by name, in the model's axis order: each fixes the input's
    /// dynamic extents (a `dim_param` such as `"height"`, or an unknown extent), the batch axis
    /// included (by default a dynamic batch becomes 1, and any other dynamic extent is an
    /// error). Static extents the model declares must be given as they are. What the CLI's
    /// `--input-shape NAME=1x3x320x320` sets.
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// Values of graph inputs fixed at conversion, by name (row-major, converted to the input's
    /// element type: integers must be whole numbers, booleans 0 or 1): the input becomes a
    /// constant, and everything that depends only on constants is folded away. The way to
    /// import a model with a non-float input (an int64 sample rate, a sequence length). The
    /// shape is the model's, with dynamic extents fixed by [`ImportOptions::input_shapes`] or,
    /// when only one is dynamic, by the number of values. What the CLI's
    /// `--input-value NAME=16000` sets.
    pub input_values: Vec<(String, Vec<f64>)>,
}

/// An extent of a model input as the model declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// A static extent.
    Fixed(usize),
    /// A dynamic extent, with its `dim_param` name if the model gives one (e.g. `"batch"`,
    /// `"height"`).
    Dynamic(Option<String>),
}

/// A model input as the model declares it (see [`model_inputs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// The ONNX name.
    pub name: String,
    /// The ONNX element type name (`"FLOAT"`, `"INT64"`, ...).
    pub dtype: String,
    /// The declared extents in the model's axis order (`None` if the model declares no shape).
    pub dims: Option<Vec<Dim>>,
}

impl InputSpec {
    /// True if the graph can take this input as data (float32); any other input needs a value
    /// ([`ImportOptions::input_values`]).
    pub fn is_float(&self) -> bool {
        self.dtype == "FLOAT"
    }

    /// True if an extent other than the first (batch) axis is dynamic, or the shape is unknown:
    /// importing needs [`ImportOptions::input_shapes`] (or a value) for this input.
    pub fn needs_shape(&self) -> bool {
        match &self.dims {
            None => true,
            Some(d) => d.iter().skip(1).any(|d| matches!(d, Dim::Dynamic(_))),
        }
    }
}

/// A model input or output and how its data is laid out in the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoInfo {
    /// The ONNX name.
    pub name: String,
    /// The shape the model declares (dynamic batch as 1), in the model's axis order.
    pub model_shape: Vec<usize>,
    /// How the graph stores it: graph axis `i` is model axis `perm[i]` (identity when the graph
    /// tensor is the model tensor; `[0, 2, 3, 1]` for an NCHW model tensor stored NHWC).
    pub perm: Vec<usize>,
}

impl IoInfo {
    /// The graph tensors `ids` (a graph's inputs or outputs) as they are: the model's layout is
    /// the graph's. What a model read from TFLite (NHWC, like the graph) exports with, and what
    /// the QDQ export of a graph built in code takes.
    ///
    /// ```
    /// # use microquant::graph::{ConvertError, DType, Graph, GraphMetadata, Tensor};
    /// # use microquant::onnx::IoInfo;
    /// # fn main() -> Result<(), ConvertError> {
    /// let mut g = Graph::new(GraphMetadata::new("example", "built in a doctest"));
    /// let x = g.add_tensor(Tensor::new("x", vec![1, 8, 8, 3], DType::F32))?;
    /// g.inputs.push(x);
    /// let io = IoInfo::of_graph(&g, &g.inputs);
    /// assert_eq!(io, [IoInfo { name: "x".into(), model_shape: vec![1, 8, 8, 3], perm: vec![0, 1, 2, 3] }]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn of_graph(graph: &Graph, ids: &[crate::graph::TensorId]) -> Vec<IoInfo> {
        ids.iter()
            .filter_map(|&t| graph.tensor(t))
            .map(|t| IoInfo { name: t.name.clone(), model_shape: t.shape.clone(), perm: (0..t.shape.len()).collect() })
            .collect()
    }

    /// True when the graph tensor has the model's layout (no transposition needed).
    pub fn is_identity(&self) -> bool {
        layout::is_identity(&self.perm)
    }

    /// The graph tensor's shape.
    pub fn graph_shape(&self) -> Vec<usize> {
        self.perm.iter().map(|&p| self.model_shape.get(p).copied().unwrap_or(0)).collect()
    }

    /// Reorders data given in the model's layout (as ONNX Runtime takes it) into the graph's.
    ///
    /// # Errors
    /// [`ConvertErrorKind::InvalidGraph`] if `model_data` does not have the model shape's
    /// element count, or `perm` is not a permutation of the model shape's axes.
    pub fn to_graph_layout<T: Copy>(&self, model_data: &[T]) -> Result<Vec<T>, ConvertError> {
        self.check_len(model_data.len())?;
        layout::transpose(model_data, &self.model_shape, &self.perm).map_err(|e| self.layout_error(e))
    }

    /// Reorders data in the graph's layout into the model's (e.g. an output, to compare with
    /// ONNX Runtime).
    ///
    /// # Errors
    /// [`ConvertErrorKind::InvalidGraph`] if `graph_data` does not have the element count, or
    /// `perm` is not a permutation of the model shape's axes.
    pub fn to_model_layout<T: Copy>(&self, graph_data: &[T]) -> Result<Vec<T>, ConvertError> {
        self.check_len(graph_data.len())?;
        let inv = layout::inverse(&self.perm);
        layout::transpose(graph_data, &self.graph_shape(), &inv).map_err(|e| self.layout_error(e))
    }

    /// `.mq` metadata entries that record the source model's layout of the inputs and outputs
    /// stored in another layout (e.g. an NCHW ONNX input kept NHWC): for input `i`,
    /// `input{i}_source_shape` (`1x3x224x224`) and `input{i}_source_perm` (`0,2,3,1`: graph axis
    /// `j` is model axis `perm[j]`); `output{i}_…` likewise. Nothing for identity layouts.
    /// [`IoInfo::from_metadata`] reads them back, so a runner can take and give data in the
    /// layout the source model does (`microquant run`).
    ///
    /// ```
    /// # use microquant::onnx::IoInfo;
    /// let x = IoInfo { name: "x".into(), model_shape: vec![1, 3, 8, 8], perm: vec![0, 2, 3, 1] };
    /// let meta = IoInfo::layout_metadata(&[x.clone()], &[]);
    /// assert_eq!(meta[0], ("input0_source_shape".to_string(), "1x3x8x8".to_string()));
    /// let find = |k: &str| meta.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    /// assert_eq!(IoInfo::from_metadata("input", 0, find), Some(IoInfo { name: String::new(), ..x }));
    /// ```
    pub fn layout_metadata(inputs: &[IoInfo], outputs: &[IoInfo]) -> Vec<(String, String)> {
        let join =
            |v: &[usize], sep: &str| v.iter().map(alloc::string::ToString::to_string).collect::<Vec<_>>().join(sep);
        let mut out = Vec::new();
        for (kind, list) in [("input", inputs), ("output", outputs)] {
            for (i, io) in list.iter().enumerate().filter(|(_, io)| !io.is_identity()) {
                out.push((format!("{kind}{i}_source_shape"), join(&io.model_shape, "x")));
                out.push((format!("{kind}{i}_source_perm"), join(&io.perm, ",")));
            }
        }
        out
    }

    /// The layout [`IoInfo::layout_metadata`] recorded for `kind` (`"input"` / `"output"`)
    /// `index`, looked up with `meta` (e.g. [`crate::model::Model::meta_value`]); `None` when
    /// absent or malformed (a permutation of the shape's axes is checked). The name is empty.
    pub fn from_metadata<'m>(kind: &str, index: usize, meta: impl Fn(&str) -> Option<&'m str>) -> Option<IoInfo> {
        let parse =
            |v: &str, sep: char| v.split(sep).map(|d| d.trim().parse::<usize>().ok()).collect::<Option<Vec<_>>>();
        let shape = parse(meta(&format!("{kind}{index}_source_shape"))?, 'x')?;
        let perm = parse(meta(&format!("{kind}{index}_source_perm"))?, ',')?;
        let mut seen = alloc::vec![false; shape.len()];
        for &p in &perm {
            if !core::mem::replace(seen.get_mut(p)?, true) {
                continue;
            }
            return None;
        }
        (perm.len() == shape.len()).then(|| IoInfo { name: String::new(), model_shape: shape, perm })
    }

    fn layout_error(&self, e: layout::LayoutError) -> ConvertError {
        ConvertError::new(ConvertErrorKind::InvalidGraph, format!("'{}' with layout {:?}: {e}", self.name, self.perm))
    }

    fn check_len(&self, len: usize) -> Result<(), ConvertError> {
        let n = crate::graph::num_elements(&self.model_shape);
        if n != Some(len) {
            return Err(ConvertError::new(
                ConvertErrorKind::InvalidGraph,
                format!("'{}' has shape {:?}, got {len} values", self.name, self.model_shape),
            ));
        }
        Ok(())
    }
}

/// An ONNX model read into a graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The validated float graph (not yet optimized: run [`crate::passes::optimize`]).
    pub graph: Graph,
    /// One per graph input, in order: the ONNX input and its layout in the graph.
    pub inputs: Vec<IoInfo>,
    /// One per graph output, in order.
    pub outputs: Vec<IoInfo>,
    /// The default-domain opset the model imports.
    pub opset: i64,
}

/// Reads an `.onnx` model (all outputs, inputs/outputs layout recorded in [`IoInfo`]).
///
/// # Errors
/// A [`ConvertError`] saying what is wrong and where (see the [module docs](self)).
pub fn import(bytes: &[u8]) -> Result<Imported, ConvertError> {
    import::import(bytes, &ImportOptions::default())
}

/// The inputs of an `.onnx` model (graph inputs that are not initializers), as declared: the
/// element type and the extents, dynamic ones with their `dim_param` names. What a front end
/// asks the user about before [`import_with_options`] (the shapes to fix, the values of
/// non-float inputs).
///
/// # Errors
/// `Truncated` / `Malformed` for bytes that are not an ONNX model.
pub fn model_inputs(bytes: &[u8]) -> Result<Vec<InputSpec>, ConvertError> {
    import::model_inputs(bytes)
}

/// Reads an `.onnx` model with options.
///
/// # Errors
/// As [`import`], and `Malformed` for an output or input name the model does not have;
/// `Unsupported` for an input shape that contradicts the model's static extents or a value
/// whose count does not fit the input's shape.
pub fn import_with_options(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ConvertError> {
    import::import(bytes, options)
}
