//! `TensorProto` → [`Konst`]: ONNX tensor data (raw little-endian bytes or the typed repeated
//! fields) decoded and checked against the declared shape.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::fold::{KData, Konst, MAX_CONST_ELEMENTS};
use super::pb;
use crate::float::f16_to_f32;
use crate::graph::{ConvertError, ConvertErrorKind as Kind};

/// `TensorProto.DataType` codes.
pub(crate) mod dt {
    pub const FLOAT: i32 = 1;
    pub const UINT8: i32 = 2;
    pub const INT8: i32 = 3;
    pub const UINT16: i32 = 4;
    pub const INT16: i32 = 5;
    pub const INT32: i32 = 6;
    pub const INT64: i32 = 7;
    pub const BOOL: i32 = 9;
    pub const FLOAT16: i32 = 10;
    pub const DOUBLE: i32 = 11;
    pub const UINT32: i32 = 12;
    pub const UINT64: i32 = 13;
    pub const BFLOAT16: i32 = 16;
}

/// The ONNX name of a data type code.
pub(crate) fn dtype_name(code: i32) -> String {
    use pb::tensor_proto::DataType;
    match DataType::try_from(code) {
        Ok(d) => String::from(d.as_str_name()),
        Err(_) => format!("data type {code}"),
    }
}

fn malformed(msg: String) -> ConvertError {
    ConvertError::new(Kind::Malformed, msg)
}

/// Shape of a tensor proto (dims must be ≥ 0).
pub(crate) fn proto_shape(t: &pb::TensorProto, what: &str) -> Result<Vec<usize>, ConvertError> {
    t.dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| malformed(format!("{what} has a negative dimension {d}"))))
        .collect()
}

fn le<const N: usize>(raw: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    raw.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    })
}

/// Decodes a `TensorProto` into a constant (floats as f32, integers as i64, bools).
///
/// # Errors
/// `Unsupported` for external data, `UnsupportedDType` for types we do not read, `Malformed` if
/// the data's size does not match the shape.
pub(crate) fn konst_from_proto(t: &pb::TensorProto, what: &str) -> Result<Konst, ConvertError> {
    if t.data_location == Some(pb::tensor_proto::DataLocation::External as i32) || !t.external_data.is_empty() {
        return Err(ConvertError::new(
            Kind::Unsupported,
            format!(
                "{what} keeps its data in an external file: save the model with its data inside \
                 (onnx.save_model(model, path, save_as_external_data=False))"
            ),
        ));
    }
    if t.segment.is_some() {
        return Err(ConvertError::new(Kind::Unsupported, format!("{what} is a segmented tensor")));
    }
    let shape = proto_shape(t, what)?;
    let n = crate::graph::num_elements(&shape)
        .filter(|&n| n <= MAX_CONST_ELEMENTS)
        .ok_or_else(|| {
            ConvertError::new(
                Kind::Unsupported,
                format!("{what} has shape {shape:?}: more than 2^24 elements, the largest constant supported"),
            )
        })?;
    let code = t.data_type.unwrap_or(0);
    let raw = t.raw_data.as_deref().filter(|r| !r.is_empty());
    let data = match code {
        dt::FLOAT => KData::F32(match raw {
            Some(r) => le::<4>(r).map(f32::from_le_bytes).collect(),
            None => t.float_data.clone(),
        }),
        dt::DOUBLE => KData::F32(match raw {
            Some(r) => le::<8>(r).map(|b| f64::from_le_bytes(b) as f32).collect(),
            None => t.double_data.iter().map(|&v| v as f32).collect(),
        }),
        dt::FLOAT16 => KData::F32(match raw {
            Some(r) => le::<2>(r).map(|b| f16_to_f32(u16::from_le_bytes(b))).collect(),
            None => t.int32_data.iter().map(|&v| f16_to_f32(v as u16)).collect(),
        }),
        dt::BFLOAT16 => KData::F32(match raw {
            Some(r) => le::<2>(r).map(|b| f32::from_bits(u32::from(u16::from_le_bytes(b)) << 16)).collect(),
            None => t.int32_data.iter().map(|&v| f32::from_bits((v as u32 & 0xffff) << 16)).collect(),
        }),
        dt::INT8 => KData::I64(match raw {
            Some(r) => r.iter().map(|&b| i64::from(b as i8)).collect(),
            None => t.int32_data.iter().map(|&v| i64::from(v as i8)).collect(),
        }),
        dt::UINT8 => KData::I64(match raw {
            Some(r) => r.iter().map(|&b| i64::from(b)).collect(),
            None => t.int32_data.iter().map(|&v| i64::from(v as u8)).collect(),
        }),
        dt::INT16 => KData::I64(match raw {
            Some(r) => le::<2>(r).map(|b| i64::from(i16::from_le_bytes(b))).collect(),
            None => t.int32_data.iter().map(|&v| i64::from(v as i16)).collect(),
        }),
        dt::UINT16 => KData::I64(match raw {
            Some(r) => le::<2>(r).map(|b| i64::from(u16::from_le_bytes(b))).collect(),
            None => t.int32_data.iter().map(|&v| i64::from(v as u16)).collect(),
        }),
        dt::INT32 => KData::I64(match raw {
            Some(r) => le::<4>(r).map(|b| i64::from(i32::from_le_bytes(b))).collect(),
            None => t.int32_data.iter().map(|&v| i64::from(v)).collect(),
        }),
        dt::UINT32 => KData::I64(match raw {
            Some(r) => le::<4>(r).map(|b| i64::from(u32::from_le_bytes(b))).collect(),
            None => t.uint64_data.iter().map(|&v| v as i64).collect(),
        }),
        dt::INT64 => KData::I64(match raw {
            Some(r) => le::<8>(r).map(i64::from_le_bytes).collect(),
            None => t.int64_data.clone(),
        }),
        dt::UINT64 => KData::I64(match raw {
            Some(r) => le::<8>(r).map(|b| u64::from_le_bytes(b) as i64).collect(),
            None => t.uint64_data.iter().map(|&v| v as i64).collect(),
        }),
        dt::BOOL => KData::Bool(match raw {
            Some(r) => r.iter().map(|&b| b != 0).collect(),
            None => t.int32_data.iter().map(|&v| v != 0).collect(),
        }),
        other => {
            return Err(ConvertError::new(
                Kind::UnsupportedDType,
                format!("{what} has element type {} (code {other})", dtype_name(other)),
            ));
        }
    };
    let elem = match code {
        dt::DOUBLE | dt::INT64 | dt::UINT64 => 8,
        dt::FLOAT | dt::INT32 | dt::UINT32 => 4,
        dt::FLOAT16 | dt::BFLOAT16 | dt::INT16 | dt::UINT16 => 2,
        _ => 1,
    };
    if let Some(r) = raw {
        if r.len() != n.saturating_mul(elem) {
            return Err(malformed(format!(
                "{what}: raw_data has {} bytes, shape {shape:?} of {} needs {}",
                r.len(),
                dtype_name(code),
                n.saturating_mul(elem)
            )));
        }
    }
    if data.len() != n {
        return Err(malformed(format!(
            "{what}: {} values of {} for shape {shape:?} ({n} elements)",
            data.len(),
            dtype_name(code)
        )));
    }
    Ok(Konst { shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn half_floats() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn raw_and_typed_data() {
        let mut t = pb::TensorProto { dims: vec![2], data_type: Some(dt::FLOAT), ..Default::default() };
        t.raw_data = Some([1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat());
        assert_eq!(konst_from_proto(&t, "t").unwrap().data, KData::F32(vec![1.5, -2.0]));
        t.raw_data = None;
        t.float_data = vec![3.0];
        assert_eq!(konst_from_proto(&t, "t").unwrap_err().kind(), Kind::Malformed);
        let t = pb::TensorProto {
            dims: vec![3],
            data_type: Some(dt::INT64),
            int64_data: vec![1, -1, 7],
            ..Default::default()
        };
        assert_eq!(konst_from_proto(&t, "t").unwrap().data, KData::I64(vec![1, -1, 7]));
        let t = pb::TensorProto { dims: vec![1], data_type: Some(8), ..Default::default() };
        assert_eq!(konst_from_proto(&t, "t").unwrap_err().kind(), Kind::UnsupportedDType);
    }
}
