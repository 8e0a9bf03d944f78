//! The error type of the converter side (importers, graph validation, passes): heap-allocated
//! context is fine here, because all of it lives behind the `alloc` feature.
//!
//! The device-side [`crate::Error`] stays small and `Copy`; a [`ConvertError`] instead says where
//! a problem is (operator or node index, the op as the source format spells it, the tensor, the
//! byte offset in the file) and what exactly is wrong, in one readable line.

use alloc::string::String;
use core::fmt;

/// What kind of problem a [`ConvertError`] reports (coarse, for callers that branch on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConvertErrorKind {
    /// The file ends before a structure it refers to (a header, a table, a buffer).
    Truncated,
    /// The file does not carry the expected file identifier (e.g. TFLite's `TFL3`), so it is not
    /// a model of that format.
    WrongFileIdentifier,
    /// The file is structurally invalid: a bad flatbuffer/protobuf offset, an index out of range,
    /// a constant whose size does not match its shape.
    Malformed,
    /// An operator we do not convert (named in [`ConvertError::op`]).
    UnsupportedOp,
    /// A quantization scheme we cannot run: asymmetric int8 weights, per-channel scales on an
    /// unexpected axis, missing scales, hybrid (float activations with int8 weights), uint8.
    UnsupportedQuantization,
    /// A tensor element type we do not handle (string, complex, int4, ...).
    UnsupportedDType,
    /// Another feature we do not handle: several subgraphs, dynamic shapes other than the batch
    /// axis, sparse tensors, an attribute value (e.g. a fused tanh activation).
    Unsupported,
    /// The graph is inconsistent: shapes or data types do not agree along an edge, a tensor id is
    /// out of range, nodes are not in topological order (see [`crate::graph::Graph::validate`]).
    InvalidGraph,
}

impl ConvertErrorKind {
    /// A short lower-case description, used as the start of the error message.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Truncated => "truncated model",
            Self::WrongFileIdentifier => "wrong file identifier",
            Self::Malformed => "malformed model",
            Self::UnsupportedOp => "unsupported op",
            Self::UnsupportedQuantization => "unsupported quantization",
            Self::UnsupportedDType => "unsupported data type",
            Self::Unsupported => "unsupported model feature",
            Self::InvalidGraph => "invalid graph",
        }
    }
}

impl fmt::Display for ConvertErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of an importer, of graph validation or of a graph pass.
///
/// `Display` gives one line: the kind, the message, then the location fields that are known, e.g.
/// `unsupported quantization: int8 weights must be symmetric (zero point 0), found 3 at
/// channel 0 (operator 2 CONV_2D, tensor 7 "conv/weights")`.
///
/// The value is one pointer wide (the details are boxed), so `Result<T, ConvertError>` stays
/// small.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertError(alloc::boxed::Box<Details>);

#[derive(Debug, Clone, PartialEq)]
struct Details {
    kind: ConvertErrorKind,
    message: String,
    node_index: Option<usize>,
    op: Option<String>,
    node_name: Option<String>,
    tensor_index: Option<usize>,
    tensor_name: Option<String>,
    byte_offset: Option<usize>,
}

impl ConvertError {
    /// An error of `kind` with a message and no location yet (add it with the builder methods).
    pub fn new(kind: ConvertErrorKind, message: impl Into<String>) -> Self {
        Self(alloc::boxed::Box::new(Details {
            kind,
            message: message.into(),
            node_index: None,
            op: None,
            node_name: None,
            tensor_index: None,
            tensor_name: None,
            byte_offset: None,
        }))
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> ConvertErrorKind {
        self.0.kind
    }
    /// What exactly is wrong, with the values involved.
    pub fn message(&self) -> &str {
        &self.0.message
    }
    /// Index of the operator in the source model (TFLite operator index, ONNX node index), or
    /// of the node in the [`Graph`](crate::graph::Graph) for validation errors.
    pub fn node_index(&self) -> Option<usize> {
        self.0.node_index
    }
    /// The op as the source spells it (`"CONV_2D"`, `"Conv"`), or the graph op's name.
    pub fn op(&self) -> Option<&str> {
        self.0.op.as_deref()
    }
    /// The node's name, when the source has one.
    pub fn node_name(&self) -> Option<&str> {
        self.0.node_name.as_deref()
    }
    /// Index of the tensor involved (in the source model, or a graph `TensorId`).
    pub fn tensor_index(&self) -> Option<usize> {
        self.0.tensor_index
    }
    /// Name of the tensor involved.
    pub fn tensor_name(&self) -> Option<&str> {
        self.0.tensor_name.as_deref()
    }
    /// Byte offset in the file where the problem is, when known.
    pub fn byte_offset(&self) -> Option<usize> {
        self.0.byte_offset
    }

    /// Sets the operator/node index and the op name.
    #[must_use]
    pub fn at_node(mut self, index: usize, op: impl Into<String>) -> Self {
        self.0.node_index = Some(index);
        self.0.op = Some(op.into());
        self
    }

    /// Replaces the op name (e.g. with the source's spelling of a graph op).
    #[must_use]
    pub fn with_op(mut self, op: impl Into<String>) -> Self {
        self.0.op = Some(op.into());
        self
    }

    /// Sets the node's name (only if it is not empty).
    #[must_use]
    pub fn with_node_name(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        if !name.is_empty() {
            self.0.node_name = Some(name);
        }
        self
    }

    /// Sets the tensor index and name.
    #[must_use]
    pub fn with_tensor(mut self, index: usize, name: impl Into<String>) -> Self {
        self.0.tensor_index = Some(index);
        self.0.tensor_name = Some(name.into());
        self
    }

    /// Sets the byte offset in the file.
    #[must_use]
    pub fn at_offset(mut self, offset: usize) -> Self {
        self.0.byte_offset = Some(offset);
        self
    }

    /// Fills the node location only where it is not set yet (used when an inner function
    /// reports an error that an outer loop knows the operator of).
    #[must_use]
    pub fn or_at_node(self, index: usize, op: &str) -> Self {
        if self.0.node_index.is_some() { self } else { self.at_node(index, op) }
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.kind, self.0.message)?;
        let mut parts: [Option<String>; 3] = [None, None, None];
        let node = match (self.0.node_index, &self.0.op, &self.0.node_name) {
            (None, None, None) => None,
            (index, op, name) => {
                // TFLite says "operator", ONNX and our graph say "node".
                let label = if self.0.kind == ConvertErrorKind::InvalidGraph { "node" } else { "operator" };
                let mut s = String::from(label);
                if let Some(i) = index {
                    s.push_str(&alloc::format!(" {i}"));
                }
                if let Some(op) = op {
                    s.push(' ');
                    s.push_str(op);
                }
                if let Some(name) = name {
                    s.push_str(&alloc::format!(" {name:?}"));
                }
                Some(s)
            }
        };
        parts[0] = node;
        parts[1] = match (self.0.tensor_index, &self.0.tensor_name) {
            (None, None) => None,
            (Some(i), Some(n)) => Some(alloc::format!("tensor {i} {n:?}")),
            (Some(i), None) => Some(alloc::format!("tensor {i}")),
            (None, Some(n)) => Some(alloc::format!("tensor {n:?}")),
        };
        parts[2] = self.0.byte_offset.map(|o| alloc::format!("byte offset {o}"));
        let mut first = true;
        for p in parts.iter().flatten() {
            f.write_str(if first { " (" } else { ", " })?;
            f.write_str(p)?;
            first = false;
        }
        if !first {
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl core::error::Error for ConvertError {}
