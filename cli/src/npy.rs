//! `.npy` batches in and out, through core's reader and writer (`microquant::npy`), with the
//! file's name in every error.

use std::path::Path;

use microquant::npy::Npy;

use super::CliError;

/// A batch read from an `.npy` file.
pub enum Batch {
    /// int8 data: quantized samples, used as they are.
    I8(Vec<i8>),
    /// Any other numeric dtype, converted to float32.
    F32(Vec<f32>),
}

/// An `.npy` array: its shape and data.
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Batch,
}

/// Parses the `.npy` file at `path`; `parse` gets its bytes.
fn with_npy<T>(path: &Path, parse: impl FnOnce(&Npy<'_>) -> Result<T, String>) -> Result<T, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::io(path, e))?;
    let npy = Npy::parse(&bytes).map_err(|e| CliError::data(path, format!("not a valid .npy file: {e}")))?;
    parse(&npy).map_err(|reason| CliError::data(path, reason))
}

/// An input or calibration batch: int8 as it is, every other dtype as float32.
pub fn read(path: &Path) -> Result<Array, CliError> {
    with_npy(path, |npy| {
        let data = match npy.to_i8() {
            Some(v) => Batch::I8(v),
            None => Batch::F32(npy.to_f32()),
        };
        Ok(Array { shape: npy.shape().to_vec(), data })
    })
}

/// Class labels: an integer array of shape `[N]` or `[N, 1]`.
pub fn read_labels(path: &Path) -> Result<Vec<usize>, CliError> {
    with_npy(path, |npy| {
        let shape = npy.shape();
        if shape.len() > 2 || (shape.len() == 2 && shape[1] != 1) {
            return Err(format!("labels must be [N] (or [N, 1]), got {shape:?}"));
        }
        let v = npy.to_i64().ok_or_else(|| format!("labels must be integers, got dtype '{}'", npy.descr()))?;
        v.into_iter().map(|l| usize::try_from(l).map_err(|_| format!("negative label {l}"))).collect()
    })
}

pub fn write_i8(path: &Path, shape: &[usize], data: &[i8]) -> Result<(), CliError> {
    std::fs::write(path, microquant::npy::to_bytes_i8(shape, data)).map_err(|e| CliError::io(path, e))
}

pub fn write_f32(path: &Path, shape: &[usize], data: &[f32]) -> Result<(), CliError> {
    std::fs::write(path, microquant::npy::to_bytes_f32(shape, data)).map_err(|e| CliError::io(path, e))
}
