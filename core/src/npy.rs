//! NumPy `.npy` arrays (format versions 1.0 to 3.0): calibration data, labels and inputs in,
//! outputs out. The one `.npy` reader of microquant: the CLI reads files into it, the npm package
//! hands it the bytes a user dropped. It parses bytes (no file system), refuses every malformed
//! file with an [`NpyError`] that gives the byte offset of the problem, and checks the header's
//! claims (header length, element count, data length) against the file before it allocates
//! anything for them.
//!
//! Only C-order arrays of numbers (`bool`, integers of 8 to 64 bits, `float32`, `float64`),
//! little- or big-endian.
//!
//! ```
//! use microquant::npy::{self, NpyDType, NpyError};
//!
//! let bytes = npy::to_bytes_f32(&[2, 3], &[0.5, 1.0, 1.5, 2.0, 2.5, 3.0]);
//! let a = npy::Npy::parse(&bytes)?;
//! assert_eq!((a.shape(), a.dtype()), (&[2, 3][..], NpyDType::F32));
//! assert_eq!(a.to_f32()[5], 3.0);
//!
//! let e = npy::Npy::parse(&bytes[..bytes.len() - 1]).err().map(|e| e.to_string());
//! assert_eq!(e.as_deref(), Some("shape [2, 3] of <f4 needs 24 bytes of data from byte 128, the file has 23"));
//! # Ok::<(), NpyError>(())
//! ```

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

/// The magic bytes every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// True if `bytes` start with the `.npy` magic.
pub fn is_npy(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The element type of an array, from its `descr` (`<f4`, `|i1`, `>u2`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyDType {
    /// `b1`
    Bool,
    /// `i1`
    I8,
    /// `u1`
    U8,
    /// `i2`
    I16,
    /// `u2`
    U16,
    /// `i4`
    I32,
    /// `u4`
    U32,
    /// `i8`
    I64,
    /// `u8`
    U64,
    /// `f4`
    F32,
    /// `f8`
    F64,
}

impl NpyDType {
    /// The type from the kind and size of a `descr` (`f4`, `i1`...), without the byte order.
    fn from_kind(kind: &[u8]) -> Option<Self> {
        Some(match kind {
            b"b1" => Self::Bool,
            b"i1" => Self::I8,
            b"u1" => Self::U8,
            b"i2" => Self::I16,
            b"u2" => Self::U16,
            b"i4" => Self::I32,
            b"u4" => Self::U32,
            b"i8" => Self::I64,
            b"u8" => Self::U64,
            b"f4" => Self::F32,
            b"f8" => Self::F64,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::Bool | Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
        }
    }

    /// True for the integer types (`bool` included, as NumPy casts it: 0 or 1).
    pub fn is_integer(self) -> bool {
        !matches!(self, Self::F32 | Self::F64)
    }
}

/// What is wrong with an `.npy` file. The messages give the byte offset where it applies; a
/// caller adds the file's name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NpyError {
    /// The file does not start with `\x93NUMPY`.
    NotNpy,
    /// The file ends inside its preamble.
    Truncated {
        /// Where the missing field starts.
        offset: usize,
        /// The field: `"version"`, `"header length"`.
        field: &'static str,
    },
    /// A format major version other than 1, 2 or 3 (at byte 6).
    UnsupportedVersion(u8),
    /// The header length runs past the end of the file.
    HeaderPastEnd {
        /// Where the header starts (10 or 12).
        start: usize,
        /// Where it says it ends.
        end: u64,
        /// The file's length.
        file_len: usize,
    },
    /// The header is not UTF-8 text.
    HeaderNotText {
        /// The first byte that is not.
        offset: usize,
    },
    /// The header lacks a key (`descr`, `fortran_order`, `shape`).
    MissingKey {
        /// The key.
        key: &'static str,
        /// Where the header starts.
        offset: usize,
    },
    /// A Fortran-ordered (column-major) array.
    FortranOrder,
    /// The header's `shape` is not a tuple.
    ShapeNotTuple,
    /// A dimension of the shape is not a non-negative integer.
    BadDimension(String),
    /// The shape has more elements (or bytes) than an address holds.
    TooLarge(Vec<usize>),
    /// A `descr` this reader does not read.
    UnsupportedDType(String),
    /// The data after the header is not as long as the shape and dtype say.
    DataLength {
        /// The shape.
        shape: Vec<usize>,
        /// The dtype as the file spells it.
        descr: String,
        /// Bytes the shape needs.
        needed: usize,
        /// Where the data starts.
        offset: usize,
        /// Bytes the file has from there.
        actual: usize,
    },
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotNpy => write!(f, "not an .npy file (no \\x93NUMPY magic at byte 0)"),
            Self::Truncated { offset, field } => write!(f, "truncated at byte {offset} ({field})"),
            Self::UnsupportedVersion(v) => write!(f, ".npy format version {v} at byte 6 is not supported (1, 2 or 3)"),
            Self::HeaderPastEnd { start, end, file_len } => {
                write!(f, "the header (bytes {start}..{end}) runs past the end of the file ({file_len} bytes)")
            }
            Self::HeaderNotText { offset } => write!(f, "the header is not text (byte {offset})"),
            Self::MissingKey { key, offset } => write!(f, "the header at byte {offset} has no '{key}'"),
            Self::FortranOrder => {
                write!(f, "Fortran-ordered arrays are not supported (save it with np.ascontiguousarray)")
            }
            Self::ShapeNotTuple => write!(f, "the header's 'shape' is not a tuple"),
            Self::BadDimension(d) => write!(f, "the header's shape has a bad dimension {d:?}"),
            Self::TooLarge(shape) => write!(f, "shape {shape:?} is too large"),
            Self::UnsupportedDType(d) => {
                write!(f, "dtype {d:?} is not supported (float32, float64 and integers of 8 to 64 bits)")
            }
            Self::DataLength { shape, descr, needed, offset, actual } => write!(
                f,
                "shape {shape:?} of {descr} needs {needed} bytes of data from byte {offset}, the file has {actual}"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for NpyError {}

/// An array parsed from `.npy` bytes: its header, and a view of its data in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Npy<'a> {
    shape: Vec<usize>,
    dtype: NpyDType,
    big_endian: bool,
    descr: String,
    data: &'a [u8],
}

/// The text after `'key':` (or `"key":`) in a header, spaces skipped.
fn value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let at = header.find(&format!("'{key}'")).or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = header.get(at + key.len() + 2..)?;
    Some(rest.trim_start().strip_prefix(':')?.trim_start())
}

/// A quoted string value of a header.
fn quoted(header: &str, key: &str) -> Option<String> {
    let rest = value(header, key)?;
    let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &rest[1..];
    body.find(q).map(|end| String::from(&body[..end]))
}

/// The header of an `.npy` file without its data: what a reader streaming a large file needs
/// (parse the first bytes, then read the data from [`data_offset`](Self::data_offset) on, a
/// few rows at a time, and convert them with [`to_f32`](Self::to_f32)).
///
/// ```
/// use microquant::npy::{self, NpyHeader};
///
/// let bytes = npy::to_bytes_f32(&[3, 2], &[0.5, 1.0, 1.5, 2.0, 2.5, 3.0]);
/// let h = NpyHeader::parse(&bytes[..140])?; // the header and any part of the data
/// assert_eq!((h.shape(), h.data_offset(), h.data_len()), (&[3, 2][..], 128, Some(24)));
/// let row = h.data_offset() + 8; // the second row
/// assert_eq!(h.to_f32(&bytes[row..row + 8]), [1.5, 2.0]);
/// # Ok::<(), npy::NpyError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    shape: Vec<usize>,
    dtype: NpyDType,
    big_endian: bool,
    descr: String,
    data_offset: usize,
}

impl NpyHeader {
    /// Parses the header at the start of `bytes` (the file's first bytes: at least its
    /// preamble and header; whatever data follows is not looked at).
    ///
    /// # Errors
    /// As [`Npy::parse`], except for the data's length, which is not checked
    /// ([`NpyError::HeaderPastEnd`] when `bytes` end inside the header: its `end` says how many
    /// bytes to read).
    pub fn parse(bytes: &[u8]) -> Result<Self, NpyError> {
        if !is_npy(bytes) {
            return Err(NpyError::NotNpy);
        }
        let major = *bytes.get(6).ok_or(NpyError::Truncated { offset: 6, field: "version" })?;
        let truncated = NpyError::Truncated { offset: 8, field: "header length" };
        let (header_len, start): (usize, usize) = match major {
            1 => match bytes.get(8..10) {
                Some(&[a, b]) => (usize::from(u16::from_le_bytes([a, b])), 10),
                _ => return Err(truncated),
            },
            2 | 3 => match bytes.get(8..12) {
                Some(&[a, b, c, d]) => (u32::from_le_bytes([a, b, c, d]) as usize, 12),
                _ => return Err(truncated),
            },
            v => return Err(NpyError::UnsupportedVersion(v)),
        };
        let end = start.checked_add(header_len).filter(|&e| e <= bytes.len()).ok_or(NpyError::HeaderPastEnd {
            start,
            end: start as u64 + header_len as u64,
            file_len: bytes.len(),
        })?;
        let header = core::str::from_utf8(&bytes[start..end])
            .map_err(|e| NpyError::HeaderNotText { offset: start + e.valid_up_to() })?;
        let missing = |key| NpyError::MissingKey { key, offset: start };
        let descr = quoted(header, "descr").ok_or(missing("descr"))?;
        let fortran = value(header, "fortran_order").ok_or(missing("fortran_order"))?;
        if fortran.starts_with("True") {
            return Err(NpyError::FortranOrder);
        }
        let shape_text = value(header, "shape").ok_or(missing("shape"))?;
        let dims =
            shape_text.strip_prefix('(').and_then(|s| s.find(')').map(|e| &s[..e])).ok_or(NpyError::ShapeNotTuple)?;
        let mut shape = Vec::new();
        for part in dims.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            // Python 2 wrote long integers with an `L`.
            let d =
                part.trim_end_matches('L').parse::<usize>().map_err(|_| NpyError::BadDimension(part.to_string()))?;
            shape.push(d);
        }
        let count =
            shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or_else(|| NpyError::TooLarge(shape.clone()))?;
        let (order, kind) = match descr.as_bytes() {
            [o @ (b'<' | b'>' | b'|' | b'='), kind @ ..] => (*o, kind),
            _ => return Err(NpyError::UnsupportedDType(descr)),
        };
        let dtype = NpyDType::from_kind(kind).ok_or_else(|| NpyError::UnsupportedDType(descr.clone()))?;
        count.checked_mul(dtype.size()).ok_or_else(|| NpyError::TooLarge(shape.clone()))?;
        Ok(Self { shape, dtype, big_endian: order == b'>', descr, data_offset: end })
    }

    /// The shape (row-major).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> NpyDType {
        self.dtype
    }

    /// The dtype as the file spells it (`<f4`, `|u1`...).
    pub fn descr(&self) -> &str {
        &self.descr
    }

    /// Where the data starts in the file.
    pub fn data_offset(&self) -> usize {
        self.data_offset
    }

    /// Bytes of data the shape and dtype need (`None` if that overflows a `usize`, which
    /// [`parse`](Self::parse) refuses).
    pub fn data_len(&self) -> Option<usize> {
        self.shape.iter().try_fold(self.dtype.size(), |a, &d| a.checked_mul(d))
    }

    /// `data` (whole elements of this array's data, e.g. a few rows read from the file)
    /// converted to `f32` as [`Npy::to_f32`] converts (a partial element at the end is left out).
    pub fn to_f32(&self, data: &[u8]) -> Vec<f32> {
        self.view(data).to_f32()
    }

    fn view<'a>(&self, data: &'a [u8]) -> Npy<'a> {
        Npy {
            shape: alloc::vec![data.len() / self.dtype.size()],
            dtype: self.dtype,
            big_endian: self.big_endian,
            descr: self.descr.clone(),
            data,
        }
    }
}

impl<'a> Npy<'a> {
    /// Parses `.npy` bytes: the header is checked, the data is not copied.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, NpyError> {
        let h = NpyHeader::parse(bytes)?;
        let needed = h.data_len().ok_or_else(|| NpyError::TooLarge(h.shape.clone()))?;
        let data = &bytes[h.data_offset..];
        if data.len() != needed {
            return Err(NpyError::DataLength {
                shape: h.shape,
                descr: h.descr,
                needed,
                offset: h.data_offset,
                actual: data.len(),
            });
        }
        Ok(Npy { shape: h.shape, dtype: h.dtype, big_endian: h.big_endian, descr: h.descr, data })
    }

    /// The shape (row-major).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> NpyDType {
        self.dtype
    }

    /// The dtype as the file spells it (`<f4`, `|u1`...).
    pub fn descr(&self) -> &str {
        &self.descr
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len() / self.dtype.size()
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Each element's bytes, little-endian, zero-filled to 8.
    fn words(&self) -> impl Iterator<Item = [u8; 8]> + '_ {
        let big = self.big_endian;
        self.data.chunks_exact(self.dtype.size()).map(move |c| {
            let mut w = [0u8; 8];
            for (i, &b) in c.iter().enumerate() {
                w[if big { c.len() - 1 - i } else { i }] = b;
            }
            w
        })
    }

    /// The elements converted to `f32` (as NumPy's `astype(np.float32)`: nearest, ties to even).
    pub fn to_f32(&self) -> Vec<f32> {
        let dtype = self.dtype;
        self.words()
            .map(|w| {
                let w4 = [w[0], w[1], w[2], w[3]];
                match dtype {
                    NpyDType::F32 => f32::from_le_bytes(w4),
                    NpyDType::F64 => f64::from_le_bytes(w) as f32,
                    NpyDType::I64 => i64::from_le_bytes(w) as f32,
                    NpyDType::U64 => u64::from_le_bytes(w) as f32,
                    NpyDType::I32 => i32::from_le_bytes(w4) as f32,
                    NpyDType::U32 => u32::from_le_bytes(w4) as f32,
                    NpyDType::I16 => f32::from(i16::from_le_bytes([w[0], w[1]])),
                    NpyDType::U16 => f32::from(u16::from_le_bytes([w[0], w[1]])),
                    NpyDType::I8 => f32::from(w[0] as i8),
                    NpyDType::U8 | NpyDType::Bool => f32::from(w[0]),
                }
            })
            .collect()
    }

    /// The elements as `i64`, for integer dtypes (`None` for floats). A `u64` above `i64::MAX`
    /// wraps, as NumPy's `astype(np.int64)`.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        let dtype = self.dtype;
        if !dtype.is_integer() {
            return None;
        }
        Some(
            self.words()
                .map(|w| {
                    let w4 = [w[0], w[1], w[2], w[3]];
                    match dtype {
                        NpyDType::I64 | NpyDType::U64 => i64::from_le_bytes(w),
                        NpyDType::I32 => i64::from(i32::from_le_bytes(w4)),
                        NpyDType::U32 => i64::from(u32::from_le_bytes(w4)),
                        NpyDType::I16 => i64::from(i16::from_le_bytes([w[0], w[1]])),
                        NpyDType::U16 => i64::from(u16::from_le_bytes([w[0], w[1]])),
                        NpyDType::I8 => i64::from(w[0] as i8),
                        _ => i64::from(w[0]),
                    }
                })
                .collect(),
        )
    }

    /// The elements of an `int8` array (`None` for any other dtype): quantized data as it is.
    pub fn to_i8(&self) -> Option<Vec<i8>> {
        (self.dtype == NpyDType::I8).then(|| self.data.iter().map(|&b| b as i8).collect())
    }
}

/// An `.npy` file (format 1.0, or 2.0 if the header does not fit 1.0's 16-bit length) as NumPy's
/// `np.save` writes it: the header padded with spaces to a multiple of 64 bytes, then `data`.
fn to_bytes(descr: &str, shape: &[usize], data: impl Iterator<Item = u8>) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = match dims.as_slice() {
        [d] => format!("({d},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    let v1 = 10 + header.len() < 65536;
    let preamble = if v1 { 10 } else { 12 };
    // The preamble, the header and its newline fill whole 64-byte blocks.
    while (preamble + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut b = Vec::from(&MAGIC[..]);
    if v1 {
        b.extend_from_slice(&[1, 0]);
        b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        b.extend_from_slice(&[2, 0]);
        b.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    b.extend_from_slice(header.as_bytes());
    b.extend(data);
    b
}

/// A little-endian `float32` array of `shape` as `.npy` bytes (`data.len()` must be the shape's
/// element count; it is not checked).
pub fn to_bytes_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    to_bytes("<f4", shape, data.iter().flat_map(|v| v.to_le_bytes()))
}

/// An `int8` array of `shape` as `.npy` bytes.
pub fn to_bytes_i8(shape: &[usize], data: &[i8]) -> Vec<u8> {
    to_bytes("|i1", shape, data.iter().map(|&v| v as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_writes() -> Result<(), NpyError> {
        let b = to_bytes_i8(&[1, 3], &[-128, 0, 127]);
        assert_eq!(b.len() % 64, 3);
        let a = Npy::parse(&b)?;
        assert_eq!((a.shape(), a.descr(), a.len()), (&[1, 3][..], "|i1", 3));
        assert_eq!(a.to_i8(), Some(alloc::vec![-128, 0, 127]));
        assert_eq!(a.to_i64(), Some(alloc::vec![-128, 0, 127]));
        assert_eq!(a.to_f32(), alloc::vec![-128.0, 0.0, 127.0]);
        assert_eq!(Npy::parse(&to_bytes_f32(&[], &[2.5]))?.to_i64(), None);
        Ok(())
    }

    #[test]
    fn every_prefix_of_a_file_is_refused() {
        let full = to_bytes_f32(&[2, 3], &[0.0; 6]);
        for len in 0..full.len() {
            assert!(Npy::parse(&full[..len]).is_err(), "prefix {len}");
        }
    }
}
