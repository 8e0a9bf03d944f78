//! TFLite importer (`alloc` only): reads a `.tflite` flatbuffer into a [`Graph`].
//!
//! Int8 models (TFLite's int8 spec: asymmetric int8 activations, symmetric per-channel int8
//! weights, int32 biases), 16x8 models (symmetric int16 activations, int8 weights, int64 or
//! int32 biases) and float32 models are read into the same [`Graph`] type; operators map one to
//! one to nodes, in the model's execution order (shape computations, folded, make no node: see
//! below).
//!
//! Supported builtin operators: `CONV_2D`, `DEPTHWISE_CONV_2D`, `FULLY_CONNECTED`, `MAX_POOL_2D`,
//! `AVERAGE_POOL_2D`, `ADD`, `SUB`, `MUL`, `SOFTMAX`, `LOGISTIC`, `TANH`, `HARD_SWISH`, `RELU`,
//! `RELU6`, `LEAKY_RELU`, `CONCATENATION`, `PAD`, `PADV2`, `MEAN`, `RESHAPE`, `TRANSPOSE`,
//! `SQUEEZE`, `QUANTIZE`, `DEQUANTIZE`, `MINIMUM`, `MAXIMUM`, `PRELU`, `DIV`, `SQUARED_DIFFERENCE` (see
//! [`Op`](crate::graph::Op) for what each becomes), `RESIZE_BILINEAR`, `RESIZE_NEAREST_NEIGHBOR`
//! (constant size operand), `SUM`, `REDUCE_MAX`, `UNIDIRECTIONAL_SEQUENCE_LSTM` (the standard
//! LSTM TFLite Micro runs), `TRANSPOSE_CONV` (float, int8 and 16x8: the output size is the output
//! tensor's, the padding TFLite's), and MediaPipe's custom `Convolution2DTransposeBias` (`CUSTOM`: input,
//! OHWI weights, bias; padding and strides in its custom options), `BATCH_MATMUL` (both operands
//! activations or constants, ranks 2 to 5), `RELU_N1_TO_1`, `RELU_0_TO_1` (clamps,
//! [`Op::Clip`](crate::graph::Op::Clip)), `ABS`, `NEG`, `RSQRT`, `ELU` (TFLite's own int8
//! kernels), `SQRT` (a table).
//!
//! What the importer resolves:
//! - the operator code: the larger of `builtin_code` and `deprecated_builtin_code`, as TFLite
//!   does, so old files (deprecated field only) and new ones (codes above 127) both work;
//! - constant data from `Buffer.data` or, for models that keep it after the flatbuffer,
//!   `Buffer.offset`/`size` (schema revision 3c);
//! - per-tensor and per-channel quantization (`quantized_dimension`); a single scale is
//!   per-tensor;
//! - optional inputs (index -1, e.g. a missing bias) become `None`;
//! - constant operands that are really attributes (reshape shape, pad paddings, mean axes,
//!   transpose permutation) become op attributes and are left out of the graph, as are tensors
//!   no node uses; [`Imported::tensor_map`] maps TFLite tensor indices to graph ids;
//! - shape computations (what models converted with a dynamic batch or `tf.shape`-based
//!   reshapes carry): `SHAPE`, `STRIDED_SLICE`, `PACK`, `GATHER`, `REDUCE_PROD`, `CAST`,
//!   `EXPAND_DIMS`, integer `ADD`/`SUB`/`MUL`/`DIV`/`FLOOR_DIV` and `CONCATENATION`/`RESHAPE`/
//!   `SQUEEZE` of integer constants are evaluated at import (every graph shape is static), so a
//!   `RESHAPE` whose shape operand is computed gets a static shape, and tensors an operator
//!   writes with dynamic extents (`shape_signature` -1) take the shapes the graph infers; one
//!   of those operators on a value known only at run time is an error naming it and the tensor;
//! - sparse constants (a tensor's `sparsity`: `traversal_order`, `block_map`, `dim_metadata`
//!   `DENSE` / `SPARSE_CSR` with int32, uint16 or uint8 segments and indices) are densified, as
//!   TFLite's format converter does; a `DENSIFY` of one becomes that dense constant;
//! - a dynamic batch axis of a graph input (`shape_signature[0] == -1`) becomes 1; `depth_multiplier` is taken
//!   from the shapes (filter channels / input channels), as TFLite's kernels do, not from the
//!   (redundant, sometimes stale) option.
//!
//! Errors (never a panic, whatever the bytes), as [`ConvertError`]s of kind:
//! - [`Truncated`]: a file shorter than a flatbuffer header, a root offset or an external buffer
//!   past the end of the file (with the byte offset);
//! - [`WrongFileIdentifier`]: bytes 4..8 are not `TFL3`;
//! - [`Malformed`]: flatbuffer offsets, lengths or indices that do not fit (with the flatbuffer
//!   table and byte offset planus reports), constant data whose size does not match its shape;
//! - [`UnsupportedOp`]: an operator outside the list above, named as TFLite names it (`EXP`,
//!   `CUSTOM "MyOp"`), with the operator index;
//! - [`UnsupportedQuantization`]: asymmetric int8 weights, per-channel scales on an axis other
//!   than the op's output-channel axis (conv and fully connected 0, depthwise 3), missing scales
//!   on an integer activation, per-channel activations, int16 activations with a non-zero zero
//!   point, hybrid ops (float activations with int8 weights), uint8 (legacy) quantized ops;
//! - [`Unsupported`]: more than one subgraph (control flow), a schema version other than 3,
//!   dynamic extents of a graph input other than the batch axis, sparse tensors without data, unsupported attribute values
//!   (fused tanh, shuffled fully-connected weights);
//! - [`UnsupportedDType`]: element types other than those of [`DType`](crate::graph::DType);
//! - [`InvalidGraph`]: anything [`Graph::validate`] rejects (shapes that do not agree, ...).
//!
//! [`Truncated`]: crate::graph::ConvertErrorKind::Truncated
//! [`WrongFileIdentifier`]: crate::graph::ConvertErrorKind::WrongFileIdentifier
//! [`Malformed`]: crate::graph::ConvertErrorKind::Malformed
//! [`UnsupportedOp`]: crate::graph::ConvertErrorKind::UnsupportedOp
//! [`UnsupportedQuantization`]: crate::graph::ConvertErrorKind::UnsupportedQuantization
//! [`Unsupported`]: crate::graph::ConvertErrorKind::Unsupported
//! [`UnsupportedDType`]: crate::graph::ConvertErrorKind::UnsupportedDType
//! [`InvalidGraph`]: crate::graph::ConvertErrorKind::InvalidGraph

mod builtin_names;
mod import;
// Generated by `generate.sh` (planus-cli 1.2.0) from `schema.fbs`; not edited by hand. The
// `unsafe` in it implements planus's reader traits, whose preconditions (bounds already
// checked) are upheld by the planus runtime; we read it only through its safe `Ref` API.
#[rustfmt::skip]
#[allow(
    unsafe_code,
    missing_docs,
    unused,
    unreachable_pub,
    clippy::all,
    clippy::pedantic,
    rustdoc::all
)]
mod schema_generated;

use alloc::vec::Vec;

use crate::graph::{ConvertError, Graph, TensorId};

/// The file identifier of TFLite flatbuffers (bytes 4..8 of the file).
pub const FILE_IDENTIFIER: [u8; 4] = *b"TFL3";

/// The TFLite schema version this importer reads (`Model.version`).
pub const SCHEMA_VERSION: u32 = 3;

/// A TFLite model read into a graph, with the correspondence of tensor indices.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The validated graph.
    pub graph: Graph,
    /// For each tensor index of the TFLite subgraph, its id in the graph (`None` for tensors
    /// consumed as attributes or not used at all).
    pub tensor_map: Vec<Option<TensorId>>,
}

/// Reads a `.tflite` model into a validated [`Graph`].
///
/// # Errors
/// A [`ConvertError`] saying what is wrong and where (see the [module docs](self)).
pub fn import(bytes: &[u8]) -> Result<Graph, ConvertError> {
    import::import(bytes).map(|i| i.graph)
}

/// Like [`import`], also returning which graph tensor each TFLite tensor became.
///
/// # Errors
/// As [`import`].
pub fn import_with_tensor_map(bytes: &[u8]) -> Result<Imported, ConvertError> {
    import::import(bytes)
}

/// The TFLite name of builtin operator `code` (`3` → `"CONV_2D"`), or `None` if the code is
/// beyond the schema this crate was generated from.
pub fn builtin_operator_name(code: i32) -> Option<&'static str> {
    usize::try_from(code).ok().and_then(|c| builtin_names::BUILTIN_OPERATOR_NAMES.get(c)).copied()
}
