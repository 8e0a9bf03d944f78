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
    /// Signed 4-bit integers, packed two per byte (element `2i` in the low nibble of byte `i`).
    pub const INT4: i32 = 22;
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

/// Little-endian bytes of `v` (raw_data of an int16 tensor). The `le*` helpers replace
/// `iter().flat_map(to_le_bytes).collect()`, which is a large loop per call site in the .wasm.
pub(crate) fn le16(v: &[i16]) -> Vec<u8> {
    le_bytes(v, i16::to_le_bytes)
}

/// Little-endian bytes of `v` (raw_data of an int32 tensor).
pub(crate) fn le32(v: &[i32]) -> Vec<u8> {
    le_bytes(v, i32::to_le_bytes)
}

/// Little-endian bytes of `v` (raw_data of an int64 tensor).
pub(crate) fn le64(v: &[i64]) -> Vec<u8> {
    le_bytes(v, i64::to_le_bytes)
}

/// Little-endian bytes of `v` (raw_data of a float tensor).
pub(crate) fn le_f32(v: &[f32]) -> Vec<u8> {
    le_bytes(v, f32::to_le_bytes)
}

/// The bytes of each value of `v`, `N` per value, one after the other.
fn le_bytes<T: Copy, const N: usize>(v: &[T], bytes: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len().saturating_mul(N));
    for &x in v {
        out.extend_from_slice(&bytes(x));
    }
    out
}

/// Byte width and signedness of an ONNX integer type code (one of the eight integer types).
fn int_layout(code: i32) -> (usize, bool) {
    match code {
        dt::INT8 => (1, true),
        dt::UINT8 => (1, false),
        dt::INT16 => (2, true),
        dt::UINT16 => (2, false),
        dt::INT32 => (4, true),
        dt::UINT32 => (4, false),
        dt::INT64 => (8, true),
        _ => (8, false),
    }
}

/// The little-endian unsigned integer in `bytes` (at most 8).
fn le_u64(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |v, &b| (v << 8) | u64::from(b))
}

/// The low `width` bytes of `v` as an integer of that width, sign- or zero-extended to i64 (a
/// `width` of 8 reinterprets the bits, as `u64 as i64` does).
fn extend(v: u64, width: usize, signed: bool) -> i64 {
    let unused = 64 - 8 * width as u32;
    if signed { ((v << unused) as i64) >> unused } else { ((v << unused) >> unused) as i64 }
}

/// The float of type `code` (FLOAT, DOUBLE, FLOAT16 or BFLOAT16) whose bits are the low bytes
/// of `bits`, as f32.
fn float_from_bits(bits: u64, code: i32) -> f32 {
    match code {
        dt::FLOAT => f32::from_bits(bits as u32),
        dt::DOUBLE => f64::from_bits(bits) as f32,
        dt::FLOAT16 => f16_to_f32(bits as u16),
        _ => f32::from_bits((bits as u32) << 16),
    }
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
    let n = crate::graph::num_elements(&shape).filter(|&n| n <= MAX_CONST_ELEMENTS).ok_or_else(|| {
        ConvertError::new(
            Kind::Unsupported,
            format!("{what} has shape {shape:?}: more than 2^24 elements, the largest constant supported"),
        )
    })?;
    let code = t.data_type.unwrap_or(0);
    let raw = t.raw_data.as_deref().filter(|r| !r.is_empty());
    let data = match code {
        dt::FLOAT | dt::DOUBLE | dt::FLOAT16 | dt::BFLOAT16 => {
            // One loop for the four float types, as for the integers below.
            let width = match code {
                dt::DOUBLE => 8,
                dt::FLOAT => 4,
                _ => 2,
            };
            KData::F32(match (raw, code) {
                (Some(r), _) => r.chunks_exact(width).map(|c| float_from_bits(le_u64(c), code)).collect(),
                (None, dt::FLOAT) => t.float_data.clone(),
                (None, dt::DOUBLE) => t.double_data.iter().map(|&v| v as f32).collect(),
                // int32_data holds the 16 bits of the half floats.
                (None, _) => {
                    t.int32_data.iter().map(|&v| float_from_bits(u64::from(v as u32 & 0xffff), code)).collect()
                }
            })
        }
        dt::INT8 | dt::UINT8 | dt::INT16 | dt::UINT16 | dt::INT32 | dt::UINT32 | dt::INT64 | dt::UINT64 => {
            // One loop for the eight integer types (not one per type: the converter's `.wasm`
            // is smaller, and constants are read once).
            let (width, signed) = int_layout(code);
            KData::I64(match (raw, code) {
                (Some(r), _) => r.chunks_exact(width).map(|c| extend(le_u64(c), width, signed)).collect(),
                (None, dt::INT64) => t.int64_data.clone(),
                (None, dt::UINT32 | dt::UINT64) => t.uint64_data.iter().map(|&v| v as i64).collect(),
                // int32_data holds the narrower types, truncated to their width as ONNX stores them.
                (None, _) => t.int32_data.iter().map(|&v| extend(u64::from(v as u32), width, signed)).collect(),
            })
        }
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

    /// Every integer type, from `raw_data` and from its typed field, at the edges of its range
    /// (the reading the per-type conversions `as i8`, `u16::from_le_bytes`... gave).
    #[test]
    fn integer_types_at_their_edges() -> Result<(), ConvertError> {
        let decode = |code: i32, raw: Option<Vec<u8>>, int32: Vec<i32>, int64: Vec<i64>, uint64: Vec<u64>, n: i64| {
            let t = pb::TensorProto {
                dims: vec![n],
                data_type: Some(code),
                raw_data: raw,
                int32_data: int32,
                int64_data: int64,
                uint64_data: uint64,
                ..Default::default()
            };
            match konst_from_proto(&t, "t")?.data {
                KData::I64(v) => Ok(v),
                other => Err(malformed(alloc::format!("not read as integers: {other:?}"))),
            }
        };
        assert_eq!(decode(dt::INT8, Some(vec![0x80, 0x7f, 0xff]), vec![], vec![], vec![], 3)?, [-128, 127, -1]);
        assert_eq!(decode(dt::UINT8, Some(vec![0x80, 0x7f, 0xff]), vec![], vec![], vec![], 3)?, [128, 127, 255]);
        assert_eq!(decode(dt::INT16, Some(vec![0x00, 0x80, 0xff, 0x7f]), vec![], vec![], vec![], 2)?, [-32768, 32767]);
        assert_eq!(decode(dt::UINT16, Some(vec![0x00, 0x80, 0xff, 0xff]), vec![], vec![], vec![], 2)?, [32768, 65535]);
        let i32s = [i32::MIN.to_le_bytes(), (-1i32).to_le_bytes()].concat();
        assert_eq!(decode(dt::INT32, Some(i32s.clone()), vec![], vec![], vec![], 2)?, [i64::from(i32::MIN), -1]);
        assert_eq!(decode(dt::UINT32, Some(i32s), vec![], vec![], vec![], 2)?, [1 << 31, 0xffff_ffff]);
        let i64s = [i64::MIN.to_le_bytes(), (-2i64).to_le_bytes()].concat();
        assert_eq!(decode(dt::INT64, Some(i64s.clone()), vec![], vec![], vec![], 2)?, [i64::MIN, -2]);
        assert_eq!(decode(dt::UINT64, Some(i64s), vec![], vec![], vec![], 2)?, [i64::MIN, -2]);
        // Typed fields: int32_data truncated to the type's width.
        let wide = vec![0x1ff, -129, 0x18000, i32::MIN];
        assert_eq!(decode(dt::INT8, None, wide.clone(), vec![], vec![], 4)?, [-1, 127, 0, 0]);
        assert_eq!(decode(dt::UINT8, None, wide.clone(), vec![], vec![], 4)?, [255, 127, 0, 0]);
        assert_eq!(decode(dt::INT16, None, wide.clone(), vec![], vec![], 4)?, [511, -129, -32768, 0]);
        assert_eq!(decode(dt::UINT16, None, wide.clone(), vec![], vec![], 4)?, [511, 65407, 32768, 0]);
        assert_eq!(decode(dt::INT32, None, wide, vec![], vec![], 4)?, [0x1ff, -129, 0x18000, i64::from(i32::MIN)]);
        assert_eq!(decode(dt::UINT32, None, vec![], vec![], vec![u64::MAX, 5], 2)?, [-1, 5]);
        assert_eq!(decode(dt::UINT64, None, vec![], vec![], vec![u64::MAX, 5], 2)?, [-1, 5]);
        assert_eq!(decode(dt::INT64, None, vec![], vec![i64::MAX, -3], vec![], 2)?, [i64::MAX, -3]);
        Ok(())
    }
}
