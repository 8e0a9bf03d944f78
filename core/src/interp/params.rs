//! Reading an op's parameter block: little-endian 32-bit words, each read checked.

use crate::Error;

/// A cursor over an op's parameter words.
pub(crate) struct Params<'a> {
    bytes: &'a [u8],
    op: u32,
}

impl<'a> Params<'a> {
    pub(crate) fn new(bytes: &'a [u8], op: u32) -> Self {
        Self { bytes, op }
    }

    fn err(&self) -> Error {
        Error::BadOp { index: self.op, reason: "parameter block too short" }
    }

    /// The next word.
    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        let (w, rest) = self.bytes.split_first_chunk::<4>().ok_or(self.err())?;
        self.bytes = rest;
        Ok(u32::from_le_bytes(*w))
    }

    /// The next word as i32.
    pub(crate) fn i32(&mut self) -> Result<i32, Error> {
        self.u32().map(|v| v as i32)
    }

    /// The next word as a usize bounded by `max` (sizes, strides, indices).
    pub(crate) fn usize_max(&mut self, max: usize, reason: &'static str) -> Result<usize, Error> {
        let v = self.u32()? as usize;
        if v > max {
            return Err(Error::BadOp { index: self.op, reason });
        }
        Ok(v)
    }
}
