//! Bounds-checked little-endian reads: every read returns an error instead of panicking.

use crate::Error;

#[inline]
pub(crate) fn slice<'a>(buf: &'a [u8], off: usize, len: usize, what: &'static str) -> Result<&'a [u8], Error> {
    let end = off.checked_add(len).ok_or(Error::OutOfBounds { what, offset: off as u64, len: len as u64 })?;
    buf.get(off..end).ok_or(Error::OutOfBounds { what, offset: off as u64, len: len as u64 })
}

#[inline]
pub(crate) fn u32_at(buf: &[u8], off: usize, what: &'static str) -> Result<u32, Error> {
    let b = slice(buf, off, 4, what)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[inline]
pub(crate) fn u16_at(buf: &[u8], off: usize, what: &'static str) -> Result<u16, Error> {
    let b = slice(buf, off, 2, what)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

#[inline]
pub(crate) fn u8_at(buf: &[u8], off: usize, what: &'static str) -> Result<u8, Error> {
    buf.get(off).copied().ok_or(Error::OutOfBounds { what, offset: off as u64, len: 1 })
}

/// A view of `len` `T`s at `off`, in place (needs `off` aligned for `T` in memory).
#[inline]
pub(crate) fn pod_slice<'a, T: bytemuck::Pod>(
    buf: &'a [u8],
    off: usize,
    count: usize,
    what: &'static str,
) -> Result<&'a [T], Error> {
    let len = count.checked_mul(core::mem::size_of::<T>()).ok_or(Error::OutOfBounds {
        what,
        offset: off as u64,
        len: u64::MAX,
    })?;
    let b = slice(buf, off, len, what)?;
    bytemuck::try_cast_slice(b).map_err(|_| Error::Misaligned { what, offset: off as u64 })
}
