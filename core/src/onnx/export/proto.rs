//! ONNX protobuf builders: attributes, value infos, initializers (data permuted into the written
//! layout).

use super::*;

pub(super) fn attr_int(name: &str, v: i64) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(pb::attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    }
}

pub(super) fn attr_ints(name: &str, v: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(pb::attribute_proto::AttributeType::Ints as i32),
        ints: v.to_vec(),
        ..Default::default()
    }
}

pub(super) fn attr_float(name: &str, v: f32) -> pb::AttributeProto {
    pb::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(pb::attribute_proto::AttributeType::Float as i32),
        f: Some(v),
        ..Default::default()
    }
}

pub(super) fn value_info(name: &str, elem: i32, shape: &[usize]) -> pb::ValueInfoProto {
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

pub(super) fn tensor_proto(name: &str, shape: &[usize], code: i32, raw: Vec<u8>) -> pb::TensorProto {
    pb::TensorProto {
        name: Some(name.to_string()),
        dims: shape.iter().map(|&d| d as i64).collect(),
        data_type: Some(code),
        raw_data: Some(raw),
        ..Default::default()
    }
}

/// Permutes row-major `data` of `shape`: output axis `j` is input axis `perm[j]`.
pub(super) fn permute<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Result<Vec<T>, ConvertError> {
    layout::transpose(data, shape, perm).map_err(|e| err(format!("constant of shape {shape:?} by {perm:?}: {e}")))
}
