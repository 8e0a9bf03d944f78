//! `.npy` batches in and out (npyz), with errors that say what is wrong with the file.

use std::path::Path;

use crate::CliError;

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
    if shape.iter().product::<usize>() != n {
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
