//! Quantized data types and how their elements are stored.
//!
//! [`QuantDType`] names a data type at run time; [`QuantElement`] names it at compile time, so a
//! [`QTensor<'_, i8>`](super::QTensor) and a [`QTensor<'_, U4>`](super::QTensor) are different
//! types. Sub-byte types are packed as ONNX packs them: element `2k` in the low nibble of byte
//! `k` and element `2k + 1` in its high nibble (4-bit); elements `4k..4k+4` from the lowest bit
//! pair up (2-bit). float8 and float4 elements are stored as their bit patterns.

/// A data type that float values are quantized to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum QuantDType {
    /// Signed 8-bit integer, range [-128, 127].
    Int8,
    /// Unsigned 8-bit integer, range [0, 255].
    UInt8,
    /// Signed 16-bit integer, range [-32768, 32767].
    Int16,
    /// Unsigned 16-bit integer, range [0, 65535].
    UInt16,
    /// Signed 32-bit integer (biases), range [-2^31, 2^31 - 1].
    Int32,
    /// Signed 4-bit integer, range [-8, 7], two per byte.
    Int4,
    /// Unsigned 4-bit integer, range [0, 15], two per byte.
    UInt4,
    /// Signed 2-bit integer, range [-2, 1], four per byte.
    Int2,
    /// Unsigned 2-bit integer, range [0, 3], four per byte.
    UInt2,
    /// float8 E4M3FN (1 sign, 4 exponent bits with bias 7, 3 mantissa bits; no infinity; one NaN
    /// pattern per sign; largest finite value 448).
    Float8E4M3FN,
    /// float8 E5M2 (1 sign, 5 exponent bits with bias 15, 2 mantissa bits; IEEE-like infinities
    /// and NaNs; largest finite value 57344).
    Float8E5M2,
    /// float4 E2M1 (1 sign, 2 exponent bits with bias 1, 1 mantissa bit; no infinity, no NaN;
    /// values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}), two per byte.
    Float4E2M1,
}

impl QuantDType {
    /// The smallest value of the type: the integer range's minimum, or for float types the
    /// negated largest finite value (-448, -57344, -6).
    pub const fn min(self) -> i32 {
        match self {
            QuantDType::Int8 => i8::MIN as i32,
            QuantDType::UInt8 | QuantDType::UInt16 | QuantDType::UInt4 | QuantDType::UInt2 => 0,
            QuantDType::Int16 => i16::MIN as i32,
            QuantDType::Int32 => i32::MIN,
            QuantDType::Int4 => -8,
            QuantDType::Int2 => -2,
            QuantDType::Float8E4M3FN => -448,
            QuantDType::Float8E5M2 => -57344,
            QuantDType::Float4E2M1 => -6,
        }
    }

    /// The largest value of the type: the integer range's maximum, or for float types the
    /// largest finite value (448, 57344, 6).
    pub const fn max(self) -> i32 {
        match self {
            QuantDType::Int8 => i8::MAX as i32,
            QuantDType::UInt8 => u8::MAX as i32,
            QuantDType::Int16 => i16::MAX as i32,
            QuantDType::UInt16 => u16::MAX as i32,
            QuantDType::Int32 => i32::MAX,
            QuantDType::Int4 => 7,
            QuantDType::UInt4 => 15,
            QuantDType::Int2 => 1,
            QuantDType::UInt2 => 3,
            QuantDType::Float8E4M3FN => 448,
            QuantDType::Float8E5M2 => 57344,
            QuantDType::Float4E2M1 => 6,
        }
    }

    /// Bits per element.
    pub const fn bits(self) -> u32 {
        match self {
            QuantDType::Int8 | QuantDType::UInt8 | QuantDType::Float8E4M3FN | QuantDType::Float8E5M2 => 8,
            QuantDType::Int16 | QuantDType::UInt16 => 16,
            QuantDType::Int32 => 32,
            QuantDType::Int4 | QuantDType::UInt4 | QuantDType::Float4E2M1 => 4,
            QuantDType::Int2 | QuantDType::UInt2 => 2,
        }
    }

    /// True for the float8 and float4 types (their elements are floating-point codes, their
    /// zero point must be 0).
    pub const fn is_float(self) -> bool {
        matches!(self, QuantDType::Float8E4M3FN | QuantDType::Float8E5M2 | QuantDType::Float4E2M1)
    }

    /// True if the type has negative values.
    pub const fn is_signed(self) -> bool {
        !matches!(self, QuantDType::UInt8 | QuantDType::UInt16 | QuantDType::UInt4 | QuantDType::UInt2)
    }

    /// Number of storage units (bytes for sub-byte and float types, elements otherwise) that
    /// hold `elements` elements.
    pub const fn storage_len(self, elements: usize) -> usize {
        match self {
            QuantDType::Int4 | QuantDType::UInt4 | QuantDType::Float4E2M1 => elements / 2 + elements % 2,
            QuantDType::Int2 | QuantDType::UInt2 => elements / 4 + (elements % 4 != 0) as usize,
            _ => elements,
        }
    }

    /// The range `[-(2^(b-1) - 1), 2^(b-1) - 1]` of a signed integer type without its most
    /// negative value ("restricted" or "narrow" range, TFLite's rule for int8 weights), or
    /// `None` for unsigned and float types.
    pub const fn restricted_range(self) -> Option<(i32, i32)> {
        if self.is_float() || !self.is_signed() { None } else { Some((self.min() + 1, self.max())) }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A quantized element type known at compile time: how elements are stored in memory.
///
/// Sealed: implemented for `i8`, `u8`, `i16`, `u16`, `i32` and the packed or float marker types
/// [`I4`], [`U4`], [`I2`], [`U2`], [`F8E4M3FN`], [`F8E5M2`], [`F4E2M1`].
pub trait QuantElement: sealed::Sealed + Copy + 'static {
    /// One storage unit: the element itself for byte-or-wider integers, a byte otherwise.
    type Unit: Copy + Default + PartialEq + core::fmt::Debug + 'static;
    /// The run-time data type.
    const DTYPE: QuantDType;
    /// Elements per storage unit (1, 2 or 4).
    const PER_UNIT: usize;
    /// The code of element `k` (`k < PER_UNIT`) of `unit`: its integer value, or its bit
    /// pattern for float types.
    fn code(unit: Self::Unit, k: usize) -> i32;
    /// `unit` with element `k` set to `code` (which must fit the type: callers saturate first).
    fn with_code(unit: Self::Unit, k: usize, code: i32) -> Self::Unit;
}

macro_rules! plain_element {
    ($t:ty, $d:ident) => {
        impl sealed::Sealed for $t {}
        impl QuantElement for $t {
            type Unit = $t;
            const DTYPE: QuantDType = QuantDType::$d;
            const PER_UNIT: usize = 1;
            #[inline(always)]
            fn code(unit: $t, _k: usize) -> i32 {
                unit as i32
            }
            #[inline(always)]
            fn with_code(_unit: $t, _k: usize, code: i32) -> $t {
                code as $t
            }
        }
    };
}
plain_element!(i8, Int8);
plain_element!(u8, UInt8);
plain_element!(i16, Int16);
plain_element!(u16, UInt16);
plain_element!(i32, Int32);

/// Marker: signed 4-bit integers, two per byte (low nibble first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct I4;
/// Marker: unsigned 4-bit integers, two per byte (low nibble first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U4;
/// Marker: signed 2-bit integers, four per byte (lowest bit pair first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct I2;
/// Marker: unsigned 2-bit integers, four per byte (lowest bit pair first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U2;
/// Marker: float8 E4M3FN, one bit pattern per byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct F8E4M3FN;
/// Marker: float8 E5M2, one bit pattern per byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct F8E5M2;
/// Marker: float4 E2M1, two bit patterns per byte (low nibble first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct F4E2M1;

macro_rules! packed_element {
    ($t:ident, $d:ident, $bits:expr, $signed:expr) => {
        impl sealed::Sealed for $t {}
        impl QuantElement for $t {
            type Unit = u8;
            const DTYPE: QuantDType = QuantDType::$d;
            const PER_UNIT: usize = 8 / $bits;
            #[inline(always)]
            fn code(unit: u8, k: usize) -> i32 {
                let shift = (k % Self::PER_UNIT) as u32 * $bits;
                let raw = ((unit >> shift) & ((1u8 << $bits) - 1)) as i32;
                if $signed && raw >= 1 << ($bits - 1) { raw - (1 << $bits) } else { raw }
            }
            #[inline(always)]
            fn with_code(unit: u8, k: usize, code: i32) -> u8 {
                let shift = (k % Self::PER_UNIT) as u32 * $bits;
                let mask = ((1u8 << $bits) - 1) << shift;
                (unit & !mask) | (((code as u8) << shift) & mask)
            }
        }
    };
}
packed_element!(I4, Int4, 4, true);
packed_element!(U4, UInt4, 4, false);
packed_element!(I2, Int2, 2, true);
packed_element!(U2, UInt2, 2, false);
packed_element!(F4E2M1, Float4E2M1, 4, false);

macro_rules! byte_float_element {
    ($t:ident, $d:ident) => {
        impl sealed::Sealed for $t {}
        impl QuantElement for $t {
            type Unit = u8;
            const DTYPE: QuantDType = QuantDType::$d;
            const PER_UNIT: usize = 1;
            #[inline(always)]
            fn code(unit: u8, _k: usize) -> i32 {
                unit as i32
            }
            #[inline(always)]
            fn with_code(_unit: u8, _k: usize, code: i32) -> u8 {
                code as u8
            }
        }
    };
}
byte_float_element!(F8E4M3FN, Float8E4M3FN);
byte_float_element!(F8E5M2, Float8E5M2);

/// Reads element `index` of a packed or plain buffer, or `None` past its end.
#[inline(always)]
pub fn element_code<E: QuantElement>(data: &[E::Unit], index: usize) -> Option<i32> {
    data.get(index / E::PER_UNIT).map(|&u| E::code(u, index % E::PER_UNIT))
}

/// Writes element `index` of a packed or plain buffer; returns `false` (and writes nothing)
/// past its end.
#[inline(always)]
pub fn set_element_code<E: QuantElement>(data: &mut [E::Unit], index: usize, code: i32) -> bool {
    match data.get_mut(index / E::PER_UNIT) {
        Some(u) => {
            *u = E::with_code(*u, index % E::PER_UNIT, code);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_storage() {
        assert_eq!((QuantDType::Int4.min(), QuantDType::Int4.max()), (-8, 7));
        assert_eq!((QuantDType::UInt2.min(), QuantDType::UInt2.max()), (0, 3));
        assert_eq!(QuantDType::Int4.storage_len(5), 3);
        assert_eq!(QuantDType::UInt2.storage_len(5), 2);
        assert_eq!(QuantDType::Int2.storage_len(8), 2);
        assert_eq!(QuantDType::Int8.restricted_range(), Some((-127, 127)));
        assert_eq!(QuantDType::UInt8.restricted_range(), None);
    }

    #[test]
    fn nibbles_pack_low_first_like_onnx() {
        // ONNX int4 [1, -1, 7] packs to [0xF1, 0x07].
        let mut b = [0u8; 2];
        for (i, v) in [1, -1, 7].into_iter().enumerate() {
            assert!(set_element_code::<I4>(&mut b, i, v));
        }
        assert_eq!(b, [0xF1, 0x07]);
        assert_eq!(element_code::<I4>(&b, 1), Some(-1));
        assert_eq!(element_code::<U4>(&b, 1), Some(15));
        assert_eq!(element_code::<I4>(&b, 4), None);
        // 2-bit: [1, 0, -1, -2] -> 0b10_11_00_01
        let mut c = [0u8; 1];
        for (i, v) in [1, 0, -1, -2].into_iter().enumerate() {
            set_element_code::<I2>(&mut c, i, v);
        }
        assert_eq!(c, [0b1011_0001]);
        assert_eq!(element_code::<I2>(&c, 3), Some(-2));
    }
}
