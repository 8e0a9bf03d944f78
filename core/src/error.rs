//! The device-side error type: small, `Copy`, allocation-free, everything the quantization core,
//! the kernels, the `.mq` reader and the interpreter can report (it derives `defmt::Format` with
//! the `defmt` feature).
//!
//! The crate has two more, each for a side that may allocate: the converter's
//! [`ConvertError`](crate::graph::ConvertError) (importers, graph, passes, calibration: with the
//! node, the op and the byte offset in a readable message; feature `alloc`) and the `.npy` reader's
//! [`NpyError`](crate::npy::NpyError) (features `alloc` or `npy`).

use core::fmt;

/// Everything that can go wrong in `microquant`.
///
/// Each variant carries the context needed to act on it (sizes, indices), never a heap string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// A scale was zero, negative, NaN or infinite.
    InvalidScale,
    /// A zero point does not fit the quantized data type.
    ZeroPointOutOfRange {
        /// The offending zero point.
        zero_point: i32,
        /// Smallest allowed value of the data type.
        min: i32,
        /// Largest allowed value of the data type.
        max: i32,
    },
    /// Two buffers that must have the same length do not.
    LengthMismatch {
        /// Length required.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// A function for one integer data type was called with parameters of another.
    DTypeMismatch {
        /// The data type the function works on.
        expected: crate::quant::QuantDType,
        /// The data type of the parameters.
        actual: crate::quant::QuantDType,
    },
    /// A kernel was called with buffers or parameters that do not fit its shapes (a caller bug:
    /// the interpreter validates everything at load, so it never sees this at run time).
    BadKernelArgument {
        /// The kernel, e.g. `"conv_s8"`.
        kernel: &'static str,
        /// What does not fit, e.g. `"output length != out_dims.len()"`.
        reason: &'static str,
    },
    /// A model file is shorter than it must be (or than its header says).
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes present.
        actual: u64,
    },
    /// A model file does not start with the `.mq` magic bytes.
    BadMagic,
    /// A model file has a format major version this reader does not know.
    UnsupportedVersion {
        /// The file's major version.
        found: u16,
        /// The major version this reader supports.
        supported: u16,
    },
    /// A model header field is invalid.
    BadHeader {
        /// What is wrong.
        reason: &'static str,
    },
    /// A model file's CRC-32 does not match its bytes (corruption).
    CrcMismatch {
        /// CRC stored in the header.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
    /// Data is not aligned as it must be.
    Misaligned {
        /// What is misaligned.
        what: &'static str,
        /// Its byte offset.
        offset: u64,
    },
    /// An offset and length point outside the model file.
    OutOfBounds {
        /// What was being read.
        what: &'static str,
        /// Byte offset.
        offset: u64,
        /// Byte length.
        len: u64,
    },
    /// A tensor record of a model is invalid.
    BadTensor {
        /// Tensor index.
        index: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// An op record of a model is invalid.
    BadOp {
        /// Op index.
        index: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// A model uses an op kind this build does not support.
    UnsupportedOp {
        /// Op index.
        index: u32,
        /// The op kind code.
        code: u16,
    },
    /// A model uses an op kind that this interpreter's op set leaves out
    /// ([`crate::interp::OpSet`]: an image built for another model).
    OpNotInSet {
        /// Op index.
        index: u32,
        /// The op's kind.
        kind: crate::model::OpKind,
    },
    /// A model computes an op with int16 activations (16x8) and this interpreter's op set has
    /// only the int8 kernels ([`crate::interp::OpKinds::with_int16`]).
    Int16NotInSet {
        /// Op index.
        index: u32,
    },
    /// A model has int4 weights and this interpreter's op set leaves the int4 kernels out
    /// ([`crate::interp::OpKinds::with_int4`]).
    Int4NotInSet {
        /// Op index.
        index: u32,
    },
    /// An index (of a tensor, op, input...) is out of range.
    BadIndex {
        /// What was indexed.
        what: &'static str,
        /// The index.
        index: u32,
    },
    /// An op's output or scratch shares arena bytes with a tensor the op reads, or its output
    /// with its scratch (found at load: a model whose arena plan would let an op overwrite its
    /// own input).
    ArenaOverlap {
        /// Op index.
        op: u32,
        /// The tensor whose arena bytes overlap (an input, or the output when it overlaps the
        /// scratch).
        tensor: u32,
    },
    /// The arena given is smaller than the model needs.
    ArenaTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        available: usize,
    },
    /// A float input was NaN or infinite where only finite values are accepted.
    NonFinite {
        /// Index of the first non-finite element.
        index: usize,
    },
    /// An observer was asked for parameters before it saw any (finite) data.
    NoData,
    /// A range `[min, max]` with a non-finite bound or `min > max`.
    InvalidRange,
    /// An argument is invalid (an axis out of range, an unsupported scheme for a type,
    /// observers that cannot be merged...).
    InvalidArgument {
        /// What is wrong.
        reason: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::InvalidScale => f.write_str("scale must be finite and > 0"),
            Error::ZeroPointOutOfRange { zero_point, min, max } => {
                write!(f, "zero point {zero_point} outside the data type range [{min}, {max}]")
            }
            Error::LengthMismatch { expected, actual } => {
                write!(f, "buffer length mismatch: expected {expected}, got {actual}")
            }
            Error::DTypeMismatch { expected, actual } => {
                write!(f, "data type mismatch: expected {expected:?}, got {actual:?}")
            }
            Error::BadKernelArgument { kernel, reason } => write!(f, "{kernel}: {reason}"),
            Error::Truncated { needed, actual } => {
                write!(f, "model truncated: {actual} bytes, expected {needed}")
            }
            Error::BadMagic => f.write_str("not a .mq model (bad magic bytes)"),
            Error::UnsupportedVersion { found, supported } => {
                write!(f, "unsupported .mq format version {found} (this reader supports version {supported})")
            }
            Error::BadHeader { reason } => write!(f, "bad model header: {reason}"),
            Error::CrcMismatch { stored, computed } => {
                write!(f, "model corrupted: CRC-32 {computed:#010x} does not match the stored {stored:#010x}")
            }
            Error::Misaligned { what, offset } => write!(f, "{what} at byte offset {offset} is misaligned"),
            Error::OutOfBounds { what, offset, len } => {
                write!(f, "{what} at byte offset {offset} (length {len}) lies outside the model")
            }
            Error::BadTensor { index, reason } => write!(f, "tensor {index}: {reason}"),
            Error::BadOp { index, reason } => write!(f, "op {index}: {reason}"),
            Error::UnsupportedOp { index, code } => write!(f, "op {index}: unsupported op kind code {code}"),
            Error::OpNotInSet { index, kind } => write!(
                f,
                "op {index}: {} is not in this interpreter's op set (built for another model: add the kind to its OpSet)",
                kind.name()
            ),
            Error::Int16NotInSet { index } => write!(
                f,
                "op {index}: computes with int16 activations (16x8), which this interpreter's op set leaves out (OpKinds::with_int16)"
            ),
            Error::Int4NotInSet { index } => write!(
                f,
                "op {index}: has int4 weights, which this interpreter's op set leaves out (OpKinds::with_int4)"
            ),
            Error::BadIndex { what, index } => write!(f, "{what} index {index} out of range"),
            Error::ArenaOverlap { op, tensor } => {
                write!(f, "op {op}: tensor {tensor} shares arena bytes with the op's output or scratch")
            }
            Error::ArenaTooSmall { needed, available } => {
                write!(f, "arena too small: the model needs {needed} bytes, {available} given")
            }
            Error::NonFinite { index } => write!(f, "non-finite value (NaN or Inf) at index {index}"),
            Error::NoData => f.write_str("no data observed: run the observer on calibration data first"),
            Error::InvalidRange => f.write_str("invalid range: min and max must be finite with min <= max"),
            Error::InvalidArgument { reason } => write!(f, "invalid argument: {reason}"),
        }
    }
}

impl core::error::Error for Error {}
