//! Float data movement: strided slice, ... (the int8 kernels' generic code on `f32`, so the
//! float graph and the quantized model move the same elements).

use alloc::vec;
use alloc::vec::Vec;

use super::KernelError;
use crate::graph::StridedSlice;
use crate::kernels::slice::{SliceParams, slice};

fn kernel_error(e: crate::Error) -> KernelError {
    KernelError(match e {
        crate::Error::BadKernelArgument { reason, .. } => reason,
        _ => "data movement arguments do not fit the input",
    })
}

/// The strided slice of `data` (of `shape`).
pub(crate) fn strided_slice(data: &[f32], shape: &[usize], s: &StridedSlice) -> Result<Vec<f32>, KernelError> {
    let steps = s.steps_i32().map_err(|_| KernelError("strided slice step is zero or too large"))?;
    let p = SliceParams::new(shape, &s.starts, &steps, &s.counts).map_err(kernel_error)?;
    let mut out = vec![0.0f32; p.output_len()];
    slice(&p, data, &mut out).map_err(kernel_error)?;
    Ok(out)
}
