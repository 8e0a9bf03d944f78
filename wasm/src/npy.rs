//! `.npy` files (NumPy's format, versions 1.0 to 3.0) read into `f32`, with errors that give
//! the byte offset of what is wrong.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The magic bytes every `.npy` file starts with.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// An array read from an `.npy` file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Npy {
    /// The shape (row-major).
    pub(crate) shape: Vec<usize>,
    /// The values, converted to `f32`.
    pub(crate) data: Vec<f32>,
    /// The dtype as the file spells it (`<f4`, `|u1`...).
    pub(crate) descr: String,
}

/// True if `bytes` start with the `.npy` magic.
pub(crate) fn is_npy(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

fn quoted(h: &str, key: &str) -> Option<String> {
    let i = h.find(&format!("'{key}'")).or_else(|| h.find(&format!("\"{key}\"")))?;
    let rest = &h[i + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &rest[1..];
    body.find(q).map(|end| String::from(&body[..end]))
}

fn value<'h>(h: &'h str, key: &str) -> Option<&'h str> {
    let i = h.find(&format!("'{key}'")).or_else(|| h.find(&format!("\"{key}\"")))?;
    let rest = &h[i + key.len() + 2..];
    Some(rest.trim_start().strip_prefix(':')?.trim_start())
}

/// Parses `.npy` bytes. `what` names the file in messages.
pub(crate) fn parse(bytes: &[u8], what: &str) -> Result<Npy, String> {
    if !is_npy(bytes) {
        return Err(format!("{what}: not an .npy file (no \\x93NUMPY magic at byte 0)"));
    }
    let major = *bytes.get(6).ok_or_else(|| format!("{what}: truncated at byte 6 (version)"))?;
    let (header_len, start): (usize, usize) = match major {
        1 => {
            let b = bytes.get(8..10).ok_or_else(|| format!("{what}: truncated at byte 8 (header length)"))?;
            (usize::from(u16::from_le_bytes([b[0], b[1]])), 10)
        }
        2 | 3 => {
            let b = bytes.get(8..12).ok_or_else(|| format!("{what}: truncated at byte 8 (header length)"))?;
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        v => return Err(format!("{what}: .npy format version {v} at byte 6 is not supported (1, 2 or 3)")),
    };
    let end = start.checked_add(header_len).filter(|&e| e <= bytes.len()).ok_or_else(|| {
        format!("{what}: the header (bytes {start}..{}) runs past the end of the file ({} bytes)", start + header_len, bytes.len())
    })?;
    let header = core::str::from_utf8(&bytes[start..end])
        .map_err(|e| format!("{what}: the header is not text (byte {})", start + e.valid_up_to()))?;
    let descr = quoted(header, "descr").ok_or_else(|| format!("{what}: the header at byte {start} has no 'descr'"))?;
    let fortran = value(header, "fortran_order")
        .ok_or_else(|| format!("{what}: the header at byte {start} has no 'fortran_order'"))?;
    if fortran.starts_with("True") {
        return Err(format!(
            "{what}: Fortran-ordered arrays are not supported (save it with np.ascontiguousarray)"
        ));
    }
    let shape_text = value(header, "shape").ok_or_else(|| format!("{what}: the header at byte {start} has no 'shape'"))?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.find(')').map(|e| &s[..e]))
        .ok_or_else(|| format!("{what}: the header's 'shape' is not a tuple"))?;
    let mut shape = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let d = part
            .trim_end_matches('L')
            .parse::<usize>()
            .map_err(|_| format!("{what}: the header's shape has a bad dimension {part:?}"))?;
        shape.push(d);
    }
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("{what}: shape {shape:?} is too large"))?;
    let (order, kind) = match descr.as_bytes() {
        [o @ (b'<' | b'>' | b'|' | b'='), rest @ ..] => (*o, rest),
        _ => return Err(format!("{what}: dtype {descr:?} is not supported")),
    };
    let big = order == b'>';
    let size = match kind {
        b"f4" | b"i4" | b"u4" => 4,
        b"f8" | b"i8" | b"u8" => 8,
        b"i2" | b"u2" => 2,
        b"i1" | b"u1" | b"b1" => 1,
        _ => {
            return Err(format!(
                "{what}: dtype {descr:?} is not supported (float32, float64 and integers of 8 to 64 bits)"
            ));
        }
    };
    let need = count.checked_mul(size).ok_or_else(|| format!("{what}: shape {shape:?} is too large"))?;
    let body = &bytes[end..];
    if body.len() != need {
        return Err(format!(
            "{what}: shape {shape:?} of {descr} needs {need} bytes of data from byte {end}, the file has {}",
            body.len()
        ));
    }
    let word = |c: &[u8]| -> [u8; 8] {
        let mut w = [0u8; 8];
        for (i, &b) in c.iter().enumerate() {
            w[if big { c.len() - 1 - i } else { i }] = b;
        }
        w
    };
    let data: Vec<f32> = body
        .chunks_exact(size)
        .map(|c| {
            let w = word(c);
            match kind {
                b"f4" => f32::from_le_bytes([w[0], w[1], w[2], w[3]]),
                b"f8" => f64::from_le_bytes(w) as f32,
                b"i8" => i64::from_le_bytes(w) as f32,
                b"u8" => u64::from_le_bytes(w) as f32,
                b"i4" => i32::from_le_bytes([w[0], w[1], w[2], w[3]]) as f32,
                b"u4" => u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as f32,
                b"i2" => f32::from(i16::from_le_bytes([w[0], w[1]])),
                b"u2" => f32::from(u16::from_le_bytes([w[0], w[1]])),
                b"i1" => f32::from(w[0] as i8),
                _ => f32::from(w[0]),
            }
        })
        .collect();
    Ok(Npy { shape, data, descr })
}
