//! `.npy` batches in and out (npyz), with errors that say what is wrong with the file.

use std::path::Path;

use super::CliError;

/// A batch read from an `.npy` file.
pub enum Batch {
    /// int8 data.
    I8(Vec<i8>),
    /// float32 data.
    F32(Vec<f32>),
}

/// An `.npy` array: its shape and data.
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Batch,
}

pub fn read(path: &Path) -> Result<Array, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::io(path, e))?;
    let bad = |what: String| CliError(format!("{}: {what}", path.display()));
    // npyz allocates the header length the file declares (up to 4 GiB in versions 2 and 3)
    // before reading it: check it against the file first.
    let header_end = match (bytes.get(6), bytes.get(8..12)) {
        (Some(1), Some(b)) => Some(10 + u64::from(u16::from_le_bytes([b[0], b[1]]))),
        (Some(2 | 3), Some(b)) => Some(12 + u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        _ => None,
    };
    if let Some(end) = header_end.filter(|&e| e > bytes.len() as u64) {
        return Err(bad(format!("not a valid .npy file: its header ends at byte {end}, past the end of the file ({} bytes)", bytes.len())));
    }
    // npyz parses the header with a backtracking parser that takes exponential time in the
    // nesting of brackets; a real header nests at most 4 deep (a dict, a structured dtype's
    // list of tuples, a shape).
    let header = &bytes[..header_end.unwrap_or(0).min(bytes.len() as u64) as usize];
    let mut depth = 0usize;
    for &c in header {
        match c {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > 4 {
            return Err(bad("not a valid .npy file: its header nests brackets more than 4 deep".into()));
        }
    }
    // npyz multiplies the shape's extents without an overflow check: refuse a shape whose element
    // count does not fit a u64 first.
    if let Some(i) = header.windows(5).position(|w| w == b"shape") {
        let rest = &header[i..];
        let open = rest.iter().position(|&c| c == b'(');
        let close = rest.iter().position(|&c| c == b')');
        if let (Some(a), Some(b)) = (open, close)
            && a < b
        {
            let dims = std::str::from_utf8(&rest[a + 1..b]).unwrap_or("");
            let n = dims.split(',').map(str::trim).filter(|d| !d.is_empty()).try_fold(1u64, |n, d| match d.parse::<u64>() {
                Ok(d) => n.checked_mul(d),
                Err(_) => Some(n),
            });
            if n.is_none() {
                return Err(bad(format!("not a valid .npy file: shape ({dims}) has more elements than a 64-bit count holds")));
            }
        }
    }
    let npy = npyz::NpyFile::new(&bytes[..]).map_err(|e| bad(format!("not a valid .npy file: {e}")))?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let descr = npy.dtype().descr().trim_matches(|c| c == '\'' || c == '"').to_string();
    if npy.order() != npyz::Order::C {
        return Err(bad("Fortran-ordered arrays are not supported (save with np.ascontiguousarray)".into()));
    }
    let data = match descr.as_str() {
        "|i1" | "<i1" | ">i1" => Batch::I8(npy.into_vec::<i8>().map_err(|e| bad(format!("bad data: {e}")))?),
        "<f4" | ">f4" => Batch::F32(npy.into_vec::<f32>().map_err(|e| bad(format!("bad data: {e}")))?),
        other => {
            return Err(bad(format!("unsupported dtype '{other}': inputs must be int8 (quantized) or float32")));
        }
    };
    let n = match &data {
        Batch::I8(v) => v.len(),
        Batch::F32(v) => v.len(),
    };
    if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(n) {
        return Err(bad(format!("header shape {shape:?} does not match its {n} elements")));
    }
    Ok(Array { shape, data })
}

pub fn write_i8(path: &Path, shape: &[usize], data: &[i8]) -> Result<(), CliError> {
    use npyz::WriterBuilder;
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let f = std::fs::File::create(path).map_err(|e| CliError::io(path, e))?;
    let mut w = npyz::WriteOptions::new().default_dtype().shape(&shape).writer(std::io::BufWriter::new(f)).begin_nd()
        .map_err(|e| CliError::io(path, e))?;
    w.extend(data.iter().copied()).map_err(|e| CliError::io(path, e))?;
    w.finish().map_err(|e| CliError::io(path, e))
}

pub fn write_f32(path: &Path, shape: &[usize], data: &[f32]) -> Result<(), CliError> {
    use npyz::WriterBuilder;
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let f = std::fs::File::create(path).map_err(|e| CliError::io(path, e))?;
    let mut w = npyz::WriteOptions::new().default_dtype().shape(&shape).writer(std::io::BufWriter::new(f)).begin_nd()
        .map_err(|e| CliError::io(path, e))?;
    w.extend(data.iter().copied()).map_err(|e| CliError::io(path, e))?;
    w.finish().map_err(|e| CliError::io(path, e))
}
