//! Float data movement: strided slice, ... (the int8 kernels' generic code on `f32`, so the
//! float graph and the quantized model move the same elements).

use alloc::vec;
use alloc::vec::Vec;

use super::KernelError;
use crate::graph::{Op, StridedSlice};
use crate::kernels::Dims4;
use crate::kernels::depth_to_space::{SpaceDepthMode, SpaceDepthParams, space_depth as space_depth_kernel};
use crate::kernels::gather::{GatherParams, gather as gather_kernel};
use crate::kernels::mirror_pad::{MirrorPadMode, MirrorPadParams, mirror_pad as mirror_pad_kernel};
use crate::kernels::slice::{SliceParams, slice};
use crate::kernels::tile::{TileParams, tile as tile_kernel};

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

/// Depth to space / space to depth of NHWC `data` (of `shape`).
pub(crate) fn space_depth(data: &[f32], shape: &[usize], op: &Op) -> Result<Vec<f32>, KernelError> {
    let &[n, h, w, c] = shape else { return Err(KernelError("depth to space needs a 4-D NHWC input")) };
    let (block, mode) = match op {
        Op::DepthToSpace { block, crd: false } => (*block, SpaceDepthMode::DepthToSpaceDcr),
        Op::DepthToSpace { block, crd: true } => (*block, SpaceDepthMode::DepthToSpaceCrd),
        Op::SpaceToDepth { block } => (*block, SpaceDepthMode::SpaceToDepth),
        _ => return Err(KernelError("not a depth to space op")),
    };
    let p = SpaceDepthParams::new(Dims4::new(n, h, w, c), block, mode).map_err(kernel_error)?;
    let mut out = vec![0.0f32; p.output().checked_len().unwrap_or(0)];
    space_depth_kernel(&p, data, &mut out).map_err(kernel_error)?;
    Ok(out)
}

/// Mirror or edge padding of `data` (of `shape`).
pub(crate) fn mirror_pad(
    data: &[f32],
    shape: &[usize],
    paddings: &[[usize; 2]],
    mode: MirrorPadMode,
) -> Result<Vec<f32>, KernelError> {
    let pairs: Vec<[i32; 2]> = paddings
        .iter()
        .map(|&[b, a]| match (i32::try_from(b), i32::try_from(a)) {
            (Ok(b), Ok(a)) => Ok([b, a]),
            _ => Err(KernelError("mirror padding too large")),
        })
        .collect::<Result<_, _>>()?;
    let p = MirrorPadParams::new(shape, &pairs, mode).map_err(kernel_error)?;
    let mut out = vec![0.0f32; p.output_shape().len()];
    mirror_pad_kernel(&p, data, &mut out).map_err(kernel_error)?;
    Ok(out)
}

/// Gather of `data` (of `shape`) along `axis` by `indices`.
pub(crate) fn gather(data: &[f32], shape: &[usize], axis: usize, indices: &[usize]) -> Result<Vec<f32>, KernelError> {
    let idx = gather_indices(indices).ok_or(KernelError("gather index too large"))?;
    let p = GatherParams::new(shape, axis, &idx).map_err(kernel_error)?;
    let mut out = vec![0.0f32; p.output_len()];
    gather_kernel(&p, data, &idx, &mut out).map_err(kernel_error)?;
    Ok(out)
}

/// Indices as the gather kernel takes them (`None` if one exceeds `i32`).
fn gather_indices(indices: &[usize]) -> Option<Vec<i32>> {
    indices.iter().map(|&i| i32::try_from(i).ok()).collect()
}

/// Tiling / broadcasting of `data` (of `shape`) to `to`.
pub(crate) fn tile(data: &[f32], shape: &[usize], to: &[usize]) -> Result<Vec<f32>, KernelError> {
    let p = TileParams::new(shape, to).map_err(kernel_error)?;
    let mut out = vec![0.0f32; p.output_len()];
    tile_kernel(&p, data, &mut out).map_err(kernel_error)?;
    Ok(out)
}
