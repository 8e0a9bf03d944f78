//! Typed access to a node's attributes.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::fold::Konst;
use super::pb;
use super::pb::attribute_proto::AttributeType as At;
use crate::graph::{ConvertError, ConvertErrorKind as Kind};

/// The attributes of one node.
pub(crate) struct Attrs<'a> {
    node: &'a pb::NodeProto,
}

fn bad(name: &str, expected: &str) -> ConvertError {
    ConvertError::new(Kind::Malformed, format!("attribute '{name}' is not {expected}"))
}

impl<'a> Attrs<'a> {
    pub(crate) fn new(node: &'a pb::NodeProto) -> Self {
        Self { node }
    }

    fn get(&self, name: &str) -> Option<&'a pb::AttributeProto> {
        self.node.attribute.iter().find(|a| a.name.as_deref() == Some(name))
    }

    fn kind(a: &pb::AttributeProto) -> Option<At> {
        a.r#type.and_then(|t| At::try_from(t).ok())
    }

    /// An `INT` attribute.
    pub(crate) fn int(&self, name: &str) -> Result<Option<i64>, ConvertError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => match (Self::kind(a), a.i) {
                (Some(At::Int) | None, Some(v)) => Ok(Some(v)),
                (Some(At::Int), None) => Ok(Some(0)),
                _ => Err(bad(name, "an int")),
            },
        }
    }

    /// An `INT` attribute with a default.
    pub(crate) fn int_or(&self, name: &str, default: i64) -> Result<i64, ConvertError> {
        Ok(self.int(name)?.unwrap_or(default))
    }

    /// A `FLOAT` attribute.
    pub(crate) fn float(&self, name: &str) -> Result<Option<f32>, ConvertError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => match (Self::kind(a), a.f) {
                (Some(At::Float) | None, Some(v)) => Ok(Some(v)),
                (Some(At::Float), None) => Ok(Some(0.0)),
                _ => Err(bad(name, "a float")),
            },
        }
    }

    /// A `FLOAT` attribute with a default.
    pub(crate) fn float_or(&self, name: &str, default: f32) -> Result<f32, ConvertError> {
        Ok(self.float(name)?.unwrap_or(default))
    }

    /// An `INTS` attribute.
    pub(crate) fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, ConvertError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => match Self::kind(a) {
                Some(At::Ints) | None => Ok(Some(a.ints.clone())),
                _ => Err(bad(name, "a list of ints")),
            },
        }
    }

    /// A `FLOATS` attribute.
    pub(crate) fn floats(&self, name: &str) -> Result<Option<Vec<f32>>, ConvertError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => match Self::kind(a) {
                Some(At::Floats) | None => Ok(Some(a.floats.clone())),
                _ => Err(bad(name, "a list of floats")),
            },
        }
    }

    /// A `STRING` attribute (UTF-8, lossy).
    pub(crate) fn string(&self, name: &str) -> Result<Option<String>, ConvertError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => match (Self::kind(a), &a.s) {
                (Some(At::String) | None, Some(s)) => Ok(Some(String::from_utf8_lossy(s).into_owned())),
                (Some(At::String), None) => Ok(Some(String::new())),
                _ => Err(bad(name, "a string")),
            },
        }
    }

    /// A `TENSOR` attribute, decoded.
    pub(crate) fn tensor(&self, name: &str) -> Result<Option<Konst>, ConvertError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => match (Self::kind(a), &a.t) {
                (Some(At::Tensor) | None, Some(t)) => {
                    super::tensor::konst_from_proto(t, &format!("attribute '{name}'")).map(Some)
                }
                _ => Err(bad(name, "a tensor")),
            },
        }
    }

    /// A `GRAPH` attribute (an `If` branch).
    pub(crate) fn graph(&self, name: &str) -> Result<Option<&'a pb::GraphProto>, ConvertError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => match (Self::kind(a), &a.g) {
                (Some(At::Graph) | None, Some(g)) => Ok(Some(g)),
                _ => Err(bad(name, "a graph")),
            },
        }
    }
}
