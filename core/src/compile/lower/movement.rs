//! Lowering of the data-movement ops ([`Op::StridedSlice`], ...): their words, and the check
//! that input and output share their quantization (the kernels copy values).

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::{Lowering, NodeCtx};
use crate::graph::{ConvertError, ConvertErrorKind as K, Op};
use crate::model::{ModelBuilder, OpKind, OpSpec, TensorSpec};

/// Fills `spec` (kind, words, inputs) for a data-movement node.
pub(super) fn lower(
    l: &mut Lowering,
    c: &NodeCtx,
    b: &mut ModelBuilder,
    spec: &mut OpSpec,
) -> Result<(), ConvertError> {
    let (xid, x) = l.input(c, 0)?;
    let (_, y) = l.output(c)?;
    if l.q(c, x)? != l.q(c, y)? || x.dtype != y.dtype {
        return Err(c.err(
            K::UnsupportedQuantization,
            format!("{} input and output must share their type and quantization", c.node.op.name()),
        ));
    }
    match &c.node.op {
        Op::StridedSlice(s) => {
            let steps = s.steps_i32().map_err(|e| c.err(K::Unsupported, format!("{e}")))?;
            if s.starts.len() > 6 {
                return Err(c.err(K::Unsupported, "strided slice of more than 6 dimensions"));
            }
            spec.kind = OpKind::StridedSlice;
            spec.params.push(s.starts.len() as u32);
            for ((&st, &sp), &n) in s.starts.iter().zip(&steps).zip(&s.counts) {
                spec.params.extend_from_slice(&[st as u32, sp as u32, n as u32]);
            }
        }
        Op::DepthToSpace { block, crd } => {
            spec.kind = OpKind::DepthToSpace;
            spec.params = vec![*block as u32, u32::from(*crd)];
        }
        Op::SpaceToDepth { block } => {
            spec.kind = OpKind::SpaceToDepth;
            spec.params = vec![*block as u32];
        }
        Op::MirrorPad { paddings, mode } => {
            spec.kind = OpKind::MirrorPad;
            spec.params = vec![mode.code(), paddings.len() as u32];
            for [bf, af] in paddings {
                spec.params.extend_from_slice(&[*bf as u32, *af as u32]);
            }
        }
        Op::Gather { axis, indices, indices_shape } => {
            let idx: Vec<i32> = indices
                .iter()
                .map(|&i| i32::try_from(i))
                .collect::<Result<_, _>>()
                .map_err(|_| c.err(K::Unsupported, "a gather index above i32"))?;
            spec.kind = OpKind::Gather;
            spec.params = vec![*axis as u32];
            let dims: Vec<u32> = indices_shape.iter().map(|&d| d as u32).collect();
            let base = if c.node.name.is_empty() { format!("op{}", c.index) } else { c.node.name.clone() };
            let name = format!("{base}/indices");
            let t = b.add_tensor(TensorSpec::const_i32(&name, &dims, &idx));
            spec.inputs = vec![Some(l.model_tensor(c, b, xid)?), Some(t)];
            return Ok(());
        }
        Op::Tile { .. } => spec.kind = OpKind::Tile,
        other => {
            return Err(c.err(K::UnsupportedOp, format!("{} is not a data-movement op", other.name())));
        }
    }
    spec.inputs = vec![Some(l.model_tensor(c, b, xid)?)];
    Ok(())
}
