//! Data movement: `SLICE`, `STRIDED_SLICE` (→ [`Op::StridedSlice`], resolved with the kernel's
//! own TFLite semantics, [`SliceParams`]), `SPLIT` and `SPLIT_V` (one [`Op::StridedSlice`] node
//! per output: the graph's ops have one output, and a split is a copy either way), `MIRROR_PAD`,
//! `GATHER` by constant positions, `TILE` and `BROADCAST_TO` (`DEPTH_TO_SPACE` and `SPACE_TO_DEPTH` are one line each in `ops.rs`).

use super::*;
use crate::graph::StridedSlice;
use crate::kernels::mirror_pad::MirrorPadMode;
use crate::kernels::slice::{SliceParams, StridedSliceMasks};

/// The builtin codes converted here.
pub(super) const SUPPORTED: [i32; 10] =
    [SLICE, STRIDED_SLICE, SPLIT, SPLIT_V, DEPTH_TO_SPACE, SPACE_TO_DEPTH, MIRROR_PAD, GATHER, TILE, BROADCAST_TO];

fn i32s(v: &[i64], what: &str) -> Result<Vec<i32>, ConvertError> {
    v.iter().map(|&x| i32::try_from(x).map_err(|_| malformed(format!("{what} value {x} out of range")))).collect()
}

fn kernel_err(e: crate::Error) -> ConvertError {
    err(Kind::Unsupported, format!("{e}"))
}

/// The graph op of resolved kernel parameters, with the output tensor's shape.
fn strided(p: &SliceParams, shape: &[usize]) -> Op {
    Op::StridedSlice(StridedSlice {
        starts: p.starts().to_vec(),
        steps: p.steps().iter().map(|&s| s as i64).collect(),
        counts: p.counts().to_vec(),
        shape: shape.to_vec(),
    })
}

/// A strided slice spec with one entry per input dimension: begins, ends, strides, masks.
type DenseSpec = (Vec<i32>, Vec<i32>, Vec<i32>, StridedSliceMasks);

/// TF's sparse-to-dense expansion of a strided slice spec over an input of `rank` dimensions:
/// the ellipsis stands for the dimensions no other entry names, new axes consume no input
/// dimension (they only add extents of 1 to the output shape, which the output tensor declares),
/// and an implicit ellipsis ends a spec that names fewer dimensions.
fn dense_spec(
    rank: usize,
    begin: &[i32],
    end: &[i32],
    strides: &[i32],
    o: &fb::StridedSliceOptionsRef<'_>,
) -> Result<DenseSpec, ConvertError> {
    let (bm, em, ell, nam, sm) = (
        o.begin_mask().fb()? as u32,
        o.end_mask().fb()? as u32,
        o.ellipsis_mask().fb()? as u32,
        o.new_axis_mask().fb()? as u32,
        o.shrink_axis_mask().fb()? as u32,
    );
    let m = begin.len();
    if end.len() != m || strides.len() != m || m > 32 {
        return Err(malformed("STRIDED_SLICE begin, end and strides differ in length"));
    }
    let bit = |mask: u32, i: usize| mask >> i & 1 != 0;
    let named = (0..m).filter(|&i| !bit(ell, i) && !bit(nam, i)).count();
    if named > rank || (0..m).filter(|&i| bit(ell, i)).count() > 1 {
        return Err(malformed("STRIDED_SLICE names more dimensions than its input has, or has two ellipses"));
    }
    let (mut b, mut e, mut s) = (Vec::with_capacity(rank), Vec::with_capacity(rank), Vec::with_capacity(rank));
    // The schema we read predates `offset` (TFLite Micro does not implement it either).
    let mut masks = StridedSliceMasks::default();
    let full = |b: &mut Vec<i32>, e: &mut Vec<i32>, s: &mut Vec<i32>, masks: &mut StridedSliceMasks| {
        let d = b.len() as u32;
        b.push(0);
        e.push(0);
        s.push(1);
        masks.begin |= 1 << d;
        masks.end |= 1 << d;
    };
    let mut seen_ellipsis = false;
    for i in 0..m {
        if bit(ell, i) {
            seen_ellipsis = true;
            for _ in 0..rank - named {
                full(&mut b, &mut e, &mut s, &mut masks);
            }
        } else if bit(nam, i) {
            continue;
        } else {
            let d = b.len() as u32;
            b.push(begin[i]);
            e.push(end[i]);
            s.push(strides[i]);
            masks.begin |= u32::from(bit(bm, i)) << d;
            masks.end |= u32::from(bit(em, i)) << d;
            masks.shrink_axis |= u32::from(bit(sm, i)) << d;
        }
    }
    if !seen_ellipsis {
        while b.len() < rank {
            full(&mut b, &mut e, &mut s, &mut masks);
        }
    }
    Ok((b, e, s, masks))
}

impl<'a> Importer<'a> {
    /// SLICE / STRIDED_SLICE as one graph op.
    pub(super) fn convert_slice(&self, raw: &RawOp<'a>) -> Result<Op, ConvertError> {
        let x = raw.input(0).ok_or_else(|| malformed(format!("{} has no input", raw.name)))?;
        let shape = self.shape(x)?.to_vec();
        let out = raw.outputs.first().copied().ok_or_else(|| malformed(format!("{} has no output", raw.name)))?;
        let out_shape = self.shape(out)?.to_vec();
        let operand = |k: usize, what: &str| -> Result<Vec<i32>, ConvertError> {
            let t = raw.input(k).ok_or_else(|| malformed(format!("{} has no {what} operand", raw.name)))?;
            i32s(&self.const_ints(t, what)?, what)
        };
        let p = if raw.code == SLICE {
            SliceParams::tflite_slice(&shape, &operand(1, "begin")?, &operand(2, "size")?).map_err(kernel_err)?
        } else {
            let o = required_options!(raw, StridedSliceOptions);
            let (b, e, s, masks) =
                dense_spec(shape.len(), &operand(1, "begin")?, &operand(2, "end")?, &operand(3, "strides")?, &o)?;
            SliceParams::tflite_strided_slice(&shape, &b, &e, &s, masks).map_err(kernel_err)?
        };
        if crate::graph::num_elements(&out_shape) != Some(p.output_len()) {
            return Err(malformed(format!(
                "{} output shape {out_shape:?} does not hold the {:?} elements sliced",
                raw.name,
                p.counts()
            )));
        }
        Ok(strided(&p, &out_shape))
    }

    /// SPLIT / SPLIT_V: one strided slice node per output.
    pub(super) fn convert_split(&self, raw: &RawOp<'a>) -> Result<Vec<Node>, ConvertError> {
        let (xk, axis_k) = if raw.code == SPLIT { (1, 0) } else { (0, 2) };
        let x = raw.input(xk).ok_or_else(|| malformed(format!("{} has no input", raw.name)))?;
        let shape = self.shape(x)?.to_vec();
        let a = raw.input(axis_k).ok_or_else(|| malformed(format!("{} has no axis operand", raw.name)))?;
        let av = self.const_ints(a, "axis")?;
        let ax = axis(*av.first().ok_or_else(|| malformed("empty split axis"))?, shape.len(), "split")?;
        let dim = shape.get(ax).copied().unwrap_or(0);
        let n = raw.outputs.len();
        let sizes: Vec<usize> = if raw.code == SPLIT {
            if n == 0 || dim % n != 0 {
                return Err(malformed(format!("SPLIT of extent {dim} into {n} equal parts")));
            }
            vec![dim / n; n]
        } else {
            let st = raw.input(1).ok_or_else(|| malformed("SPLIT_V has no size_splits operand"))?;
            let v = self.const_ints(st, "size_splits")?;
            let known: i64 = v.iter().filter(|&&s| s >= 0).sum();
            let unknown = v.iter().filter(|&&s| s < 0).count();
            if v.len() != n || unknown > 1 || v.iter().any(|&s| s < -1) || known > dim as i64 {
                return Err(malformed(format!("SPLIT_V sizes {v:?} do not cut extent {dim} into {n} parts")));
            }
            let sizes: Vec<usize> = v.iter().map(|&s| if s < 0 { dim - known as usize } else { s as usize }).collect();
            if sizes.iter().sum::<usize>() != dim {
                return Err(malformed(format!("SPLIT_V sizes {v:?} do not add up to extent {dim}")));
            }
            sizes
        };
        let mut nodes = Vec::with_capacity(n);
        let mut offset = 0;
        for (k, (&o, &size)) in raw.outputs.iter().zip(&sizes).enumerate() {
            let mut starts = vec![0; shape.len()];
            let mut counts = shape.clone();
            if let (Some(s), Some(c)) = (starts.get_mut(ax), counts.get_mut(ax)) {
                *s = if size == 0 { 0 } else { offset };
                *c = size;
            }
            offset += size;
            let out_shape = self.shape(o)?.to_vec();
            if out_shape != counts {
                return Err(malformed(format!("{} output {k} has shape {out_shape:?}, expected {counts:?}", raw.name)));
            }
            let op = Op::StridedSlice(StridedSlice::new(starts, vec![1; shape.len()], counts));
            nodes.push(Node::new(self.tensor_name(o), op, vec![Some(self.id(x)?)], vec![self.id(o)?]));
        }
        Ok(nodes)
    }

    /// The graph nodes of one operator: one, or one per output of a split.
    pub(super) fn convert_op_nodes(&self, raw: &RawOp<'a>) -> Result<Vec<Node>, ConvertError> {
        if matches!(raw.code, SPLIT | SPLIT_V) { self.convert_split(raw) } else { Ok(vec![self.convert_op(raw)?]) }
    }

    /// MIRROR_PAD (constant paddings; REFLECT or SYMMETRIC).
    pub(super) fn convert_mirror_pad(&self, raw: &RawOp<'a>) -> Result<Op, ConvertError> {
        let p = raw.input(1).ok_or_else(|| malformed("MIRROR_PAD has no paddings operand"))?;
        let values = self.const_ints(p, "paddings")?;
        let rank = self.input_rank(raw)?;
        if values.len() != rank * 2 || values.iter().any(|&v| v < 0 || v > i64::from(i32::MAX)) {
            return Err(malformed(format!("MIRROR_PAD paddings {values:?} for rank {rank}")));
        }
        let paddings = values.chunks_exact(2).map(|p| [p[0] as usize, p[1] as usize]).collect();
        let mode = match required_options!(raw, MirrorPadOptions).mode().fb()? {
            fb::MirrorPadMode::Reflect => MirrorPadMode::Reflect,
            fb::MirrorPadMode::Symmetric => MirrorPadMode::Symmetric,
        };
        Ok(Op::MirrorPad { paddings, mode })
    }

    /// GATHER by constant positions (`batch_dims` 0).
    pub(super) fn convert_gather(&self, raw: &RawOp<'a>) -> Result<Op, ConvertError> {
        let o = required_options!(raw, GatherOptions);
        if o.batch_dims().fb()? != 0 {
            return Err(err(Kind::Unsupported, "GATHER with batch_dims other than 0"));
        }
        let rank = self.input_rank(raw)?;
        let axis = axis(o.axis().fb()?.into(), rank, "gather")?;
        let p = raw.input(1).ok_or_else(|| malformed("GATHER has no positions operand"))?;
        let n = raw.input(0).map(|x| self.shape(x)).transpose()?.and_then(|s| s.get(axis).copied()).unwrap_or(0);
        let mut indices = Vec::new();
        for v in self.const_ints(p, "positions")? {
            if v < 0 || v >= n as i64 {
                return Err(malformed(format!("GATHER position {v} out of range for extent {n}")));
            }
            indices.push(v as usize);
        }
        let dims: Vec<i32> = self.tensor_ref(p)?.shape().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let indices_shape: Vec<usize> = dims.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect();
        if crate::graph::num_elements(&indices_shape) != Some(indices.len()) {
            return Err(malformed(format!("GATHER positions of shape {dims:?} hold {} values", indices.len())));
        }
        Ok(Op::Gather { axis, indices, indices_shape })
    }

    /// TILE (constant multiples) and BROADCAST_TO (constant shape): the output tensor's shape,
    /// checked against the operand.
    pub(super) fn convert_tile(&self, raw: &RawOp<'a>) -> Result<Op, ConvertError> {
        let x = raw.input(0).ok_or_else(|| malformed(format!("{} has no input", raw.name)))?;
        let out = raw.outputs.first().copied().ok_or_else(|| malformed(format!("{} has no output", raw.name)))?;
        let (xs, shape) = (self.shape(x)?.to_vec(), self.shape(out)?.to_vec());
        let k = raw.input(1).ok_or_else(|| malformed(format!("{} has no shape or multiples operand", raw.name)))?;
        let v = self.const_ints(k, "multiples")?;
        let expected: Vec<i64> =
            if raw.code == TILE { xs.iter().zip(&v).map(|(&d, &m)| d as i64 * m).collect() } else { v.clone() };
        let declared: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        if expected != declared || (raw.code == TILE && v.len() != xs.len()) {
            return Err(malformed(format!(
                "{} operand {v:?} of {xs:?} does not give the output shape {shape:?}",
                raw.name
            )));
        }
        Ok(Op::Tile { shape })
    }
}
