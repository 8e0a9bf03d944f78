//! Per-op glue: decode the parameter block, check it against the tensors (at load), and run the
//! kernel on arena slices (at invoke). One `validate` and one `eval` arm per op kind.

use super::arena::carve;
use crate::kernels::Rounding;
use crate::model::{Model, OpInfo, OpKind, Storage, TensorInfo, ABSENT};
use crate::Error;

fn bad(op: &OpInfo, reason: &'static str) -> Error {
    Error::BadOp { index: op.index, reason }
}

fn tensor<'m>(m: &Model<'m>, op: &OpInfo, idx: u32) -> Result<TensorInfo<'m>, Error> {
    if idx == ABSENT {
        return Err(bad(op, "a required input is absent"));
    }
    m.tensor(idx)
}

fn arena_region(op: &OpInfo, t: &TensorInfo) -> Result<(usize, usize), Error> {
    match t.storage {
        Storage::Arena(off) => Ok((off as usize, t.byte_len as usize)),
        Storage::Const(_) => Err(bad(op, "an activation tensor is stored as a constant")),
    }
}

fn check_io_counts(op: &OpInfo, inputs: core::ops::RangeInclusive<usize>, outputs: usize) -> Result<(), Error> {
    if !inputs.contains(&op.num_inputs()) {
        return Err(bad(op, "wrong number of inputs for its kind"));
    }
    if op.num_outputs() != outputs {
        return Err(bad(op, "wrong number of outputs for its kind"));
    }
    Ok(())
}

/// Checks op `i` of `m` completely, so that [`eval`] cannot fail on it.
pub(crate) fn validate(m: &Model, i: u32) -> Result<(), Error> {
    let op = m.op(i)?;
    match op.kind {
        OpKind::Reshape => {
            check_io_counts(&op, 1..=2, 1)?;
            let x = tensor(m, &op, op.input(0)?)?;
            let y = tensor(m, &op, op.output(0)?)?;
            if x.byte_len != y.byte_len || x.dtype != y.dtype {
                return Err(bad(&op, "reshape changes the element count or dtype"));
            }
            let (xo, _) = arena_region(&op, &x)?;
            let (yo, yl) = arena_region(&op, &y)?;
            if xo != yo && xo < yo + yl && yo < xo + yl {
                return Err(bad(&op, "reshape input and output partly overlap"));
            }
            Ok(())
        }
        _ => Err(Error::UnsupportedOp { index: i, code: op.kind.code() }),
    }
}

/// Runs `op` on `arena`. `validate` has accepted it.
pub(crate) fn eval(m: &Model, op: &OpInfo, arena: &mut [u8], _rounding: Rounding) -> Result<(), Error> {
    match op.kind {
        OpKind::Reshape => {
            let x = tensor(m, op, op.input(0)?)?;
            let y = tensor(m, op, op.output(0)?)?;
            let (xo, xl) = arena_region(op, &x)?;
            let (yo, yl) = arena_region(op, &y)?;
            if xo == yo {
                return Ok(()); // aliased: nothing to move
            }
            let (out, _, ro) = carve(arena, (yo, yl), (0, 0), op.index)?;
            let src = ro.get(xo, xl, op.index)?;
            if src.len() != out.len() {
                return Err(bad(op, "reshape input and output differ in size"));
            }
            out.copy_from_slice(src);
            Ok(())
        }
        _ => Err(Error::UnsupportedOp { index: op.index, code: op.kind.code() }),
    }
}
