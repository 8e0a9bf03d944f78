//! The tensor encoding shared by every golden file.
//!
//! A tensor is a JSON object `{"dtype": "int8", "shape": [1, 4, 4, 3], "b64": "..."}` where `b64`
//! is the base64 (standard alphabet, padded) of the elements' little-endian bytes in row-major
//! order. dtypes: `int8`, `uint8`, `int16`, `int32`, `int64`, `float32`. The Python side writes it
//! with `tests/gen/goldenio.py`.

use base64::Engine as _;
use serde::Deserialize;

/// A tensor as stored in a golden file.
#[derive(Debug, Clone, Deserialize)]
pub struct Tensor {
    /// Element type name (`int8`, `uint8`, `int16`, `int32`, `int64`, `float32`).
    pub dtype: String,
    /// Dimensions, row-major.
    pub shape: Vec<usize>,
    /// base64 of the little-endian element bytes.
    pub b64: String,
}

impl Tensor {
    /// Number of elements (product of the shape; 1 for a scalar).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn bytes(&self, dtype: &str, width: usize) -> Vec<u8> {
        assert_eq!(self.dtype, dtype, "golden tensor has dtype {}, read as {dtype}", self.dtype);
        let b = base64::engine::general_purpose::STANDARD.decode(&self.b64).expect("golden base64 decodes");
        assert_eq!(b.len(), self.len() * width, "golden tensor byte length vs shape {:?}", self.shape);
        b
    }

    /// The elements as i8 (dtype must be `int8`).
    pub fn i8(&self) -> Vec<i8> {
        self.bytes("int8", 1).into_iter().map(|b| b as i8).collect()
    }
    /// The elements as u8 (dtype must be `uint8`).
    pub fn u8(&self) -> Vec<u8> {
        self.bytes("uint8", 1)
    }
    /// The elements as i16 (dtype must be `int16`).
    pub fn i16(&self) -> Vec<i16> {
        self.bytes("int16", 2).chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect()
    }
    /// The elements as i32 (dtype must be `int32`).
    pub fn i32(&self) -> Vec<i32> {
        self.bytes("int32", 4).chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
    }
    /// The elements as i64 (dtype must be `int64`).
    pub fn i64(&self) -> Vec<i64> {
        self.bytes("int64", 8).chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
    }
    /// The elements as f32 (dtype must be `float32`).
    pub fn f32(&self) -> Vec<f32> {
        self.bytes("float32", 4).chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }
}

/// Compares two slices element by element; on mismatch, panics with the case name, the first
/// mismatching positions (up to 10) with expected and actual values, and the mismatch count.
/// Returns the number of elements checked.
pub fn assert_bit_exact<T: PartialEq + std::fmt::Debug>(case: &str, expected: &[T], actual: &[T]) -> usize {
    assert_eq!(expected.len(), actual.len(), "{case}: length: expected {}, actual {}", expected.len(), actual.len());
    let bad: Vec<usize> = (0..expected.len()).filter(|&i| expected[i] != actual[i]).collect();
    if !bad.is_empty() {
        let shown: Vec<String> = bad
            .iter()
            .take(10)
            .map(|&i| format!("  at {i}: expected {:?}, actual {:?}", expected[i], actual[i]))
            .collect();
        panic!("{case}: {} of {} elements differ:\n{}", bad.len(), expected.len(), shown.join("\n"));
    }
    expected.len()
}
