//! The one error type of the crate: small, `Copy`, allocation-free.

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
    /// A float input was NaN or infinite where only finite values are accepted.
    NonFinite {
        /// Index of the first non-finite element.
        index: usize,
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
            Error::NonFinite { index } => write!(f, "non-finite value (NaN or Inf) at index {index}"),
        }
    }
}

impl core::error::Error for Error {}
