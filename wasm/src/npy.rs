//! `.npy` files read into `f32` through core's reader (`microquant::npy`, the CLI's too), with
//! the file named in the errors, which give the byte offset of what is wrong.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

pub(crate) use microquant::npy::is_npy;

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

/// Parses `.npy` bytes. `what` names the file in messages.
pub(crate) fn parse(bytes: &[u8], what: &str) -> Result<Npy, String> {
    let a = microquant::npy::Npy::parse(bytes).map_err(|e| format!("{what}: {e}"))?;
    Ok(Npy { shape: a.shape().to_vec(), data: a.to_f32(), descr: a.descr().into() })
}
