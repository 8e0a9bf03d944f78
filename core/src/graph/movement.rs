//! The attributes, output shapes and display of the data-movement ops ([`Op::StridedSlice`],
//! ...): they keep their input's values (and, quantized, its scale and zero point).

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use super::error::{ConvertError, ConvertErrorKind};
use super::op::Op;
use super::shape::num_elements;

fn err(message: alloc::string::String) -> ConvertError {
    ConvertError::new(ConvertErrorKind::InvalidGraph, message)
}

/// A strided slice, fully resolved: per input axis `d`, output index `i < counts[d]` reads
/// input index `starts[d] + i · steps[d]`. The output has `shape`, whose element count is
/// `Π counts` (TFLite's shrunk axes are absent from it, its new axes are 1; ONNX's `Slice` and
/// each output of a `Split` have `shape == counts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StridedSlice {
    /// First input index per axis.
    pub starts: Vec<usize>,
    /// Step per axis (non-zero; negative walks backwards).
    pub steps: Vec<i64>,
    /// Output extent per input axis.
    pub counts: Vec<usize>,
    /// The output shape.
    pub shape: Vec<usize>,
}

impl StridedSlice {
    /// A slice whose output shape is its counts.
    pub fn new(starts: Vec<usize>, steps: Vec<i64>, counts: Vec<usize>) -> Self {
        let shape = counts.clone();
        Self { starts, steps, counts, shape }
    }

    /// The steps as the kernel takes them.
    ///
    /// # Errors
    /// `InvalidGraph` for a step outside `i32` or zero.
    pub fn steps_i32(&self) -> Result<Vec<i32>, ConvertError> {
        self.steps
            .iter()
            .map(|&s| match i32::try_from(s) {
                Ok(v) if v != 0 => Ok(v),
                _ => Err(err(format!("strided slice step {s} is zero or too large"))),
            })
            .collect()
    }

    fn output_shape(&self, x: &[usize]) -> Result<Vec<usize>, ConvertError> {
        let r = x.len();
        if self.starts.len() != r || self.steps.len() != r || self.counts.len() != r {
            return Err(err(format!(
                "strided slice has {}/{}/{} starts/steps/counts for input rank {r}",
                self.starts.len(),
                self.steps.len(),
                self.counts.len()
            )));
        }
        for (d, &n) in x.iter().enumerate() {
            let (st, sp, c) = (self.starts[d], self.steps[d], self.counts[d]);
            if sp == 0 {
                return Err(err(format!("strided slice step 0 on axis {d}")));
            }
            if c > 0 {
                let last = st as i128 + (c as i128 - 1) * i128::from(sp);
                if st >= n || last < 0 || last >= n as i128 {
                    return Err(err(format!(
                        "strided slice on axis {d} (start {st}, step {sp}, count {c}) reads outside extent {n}"
                    )));
                }
            }
        }
        if num_elements(&self.shape) != num_elements(&self.counts) {
            return Err(err(format!(
                "strided slice output shape {:?} does not hold the {:?} elements taken",
                self.shape, self.counts
            )));
        }
        Ok(self.shape.clone())
    }
}

/// The output shape of a data-movement op (`x`: its first input's shape).
pub(super) fn output_shape(op: &Op, x: &[usize]) -> Result<Vec<usize>, ConvertError> {
    match op {
        Op::StridedSlice(s) => s.output_shape(x),
        Op::DepthToSpace { block, .. } | Op::SpaceToDepth { block } => {
            let &[n, h, w, c] = x else {
                return Err(err(format!("{} needs a 4-D NHWC input, got {x:?}", op.name())));
            };
            let b = *block;
            let bb = b.checked_mul(b).filter(|&v| v > 0).ok_or_else(|| err(format!("block size {b}")))?;
            if matches!(op, Op::SpaceToDepth { .. }) {
                if h % b != 0 || w % b != 0 {
                    return Err(err(format!("space to depth of {x:?}: height and width are not multiples of {b}")));
                }
                let c = c.checked_mul(bb).ok_or_else(|| err("output channels overflow".into()))?;
                Ok(vec![n, h / b, w / b, c])
            } else {
                if c % bb != 0 {
                    return Err(err(format!("depth to space of {x:?}: channels are not a multiple of {bb}")));
                }
                let h = h.checked_mul(b).ok_or_else(|| err("output height overflows".into()))?;
                let w = w.checked_mul(b).ok_or_else(|| err("output width overflows".into()))?;
                Ok(vec![n, h, w, c / bb])
            }
        }
        Op::MirrorPad { paddings, mode } => {
            let pairs: Vec<[i32; 2]> = paddings
                .iter()
                .map(|&[b, a]| match (i32::try_from(b), i32::try_from(a)) {
                    (Ok(b), Ok(a)) => Ok([b, a]),
                    _ => Err(err(format!("mirror padding {b}+{a} too large"))),
                })
                .collect::<Result<_, _>>()?;
            let p = crate::kernels::mirror_pad::MirrorPadParams::new(x, &pairs, *mode)
                .map_err(|e| err(format!("mirror pad ({mode:?}) of {x:?} by {paddings:?}: {e}")))?;
            Ok(p.output_shape().dims().to_vec())
        }
        Op::Gather { axis, indices, indices_shape } => {
            let Some(&n) = x.get(*axis) else {
                return Err(err(format!("gather axis {axis} out of range for {x:?}")));
            };
            if num_elements(indices_shape) != Some(indices.len()) {
                return Err(err(format!("gather has {} indices for shape {indices_shape:?}", indices.len())));
            }
            if let Some(i) = indices.iter().find(|&&i| i >= n) {
                return Err(err(format!("gather index {i} out of range for extent {n}")));
            }
            let mut o = x.get(..*axis).unwrap_or(&[]).to_vec();
            o.extend_from_slice(indices_shape);
            o.extend_from_slice(x.get(axis + 1..).unwrap_or(&[]));
            Ok(o)
        }
        Op::Tile { shape } => {
            crate::kernels::tile::TileParams::new(x, shape)
                .map_err(|e| err(format!("tile of {x:?} to {shape:?}: {e}")))?;
            Ok(shape.clone())
        }
        other => Err(err(format!("{} is not a data-movement op", other.name()))),
    }
}

fn write_list<T: fmt::Display>(f: &mut fmt::Formatter<'_>, v: &[T]) -> fmt::Result {
    f.write_str("[")?;
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{x}")?;
    }
    f.write_str("]")
}

/// The attributes of a data-movement op, e.g. `(start [0,1], step [1,2], count [1,3])`.
pub(super) fn fmt_attrs(op: &Op, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match op {
        Op::StridedSlice(s) => {
            f.write_str("(start ")?;
            write_list(f, &s.starts)?;
            f.write_str(", step ")?;
            write_list(f, &s.steps)?;
            f.write_str(", count ")?;
            write_list(f, &s.counts)?;
            if s.shape != s.counts {
                f.write_str(", shape ")?;
                write_list(f, &s.shape)?;
            }
            f.write_str(")")
        }
        Op::DepthToSpace { block, crd } => write!(f, "(block {block}{})", if *crd { ", CRD" } else { "" }),
        Op::SpaceToDepth { block } => write!(f, "(block {block})"),
        Op::Tile { shape } => {
            f.write_str("(to ")?;
            write_list(f, shape)?;
            f.write_str(")")
        }
        Op::Gather { axis, indices, indices_shape } => {
            write!(f, "(axis {axis}, indices ")?;
            if indices.len() <= 8 {
                write_list(f, indices)?;
            } else {
                write!(f, "{indices_shape:?}")?;
            }
            f.write_str(")")
        }
        Op::MirrorPad { paddings, mode } => {
            write!(f, "({mode:?}")?;
            for [b, a] in paddings {
                write!(f, ", {b}+{a}")?;
            }
            f.write_str(")")
        }
        _ => Ok(()),
    }
}
