//! Shape inference: the output shapes of every op from its input shapes and attributes.
//!
//! Every function here checks its arguments and uses checked arithmetic, so arbitrary (imported,
//! possibly hostile) shapes give an error, never a panic or a wrapped value.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::error::{ConvertError, ConvertErrorKind};
use super::op::{Op, Padding};

/// The number of elements of a shape (1 for a scalar `[]`), or `None` on overflow.
pub fn num_elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// NumPy broadcasting of two shapes: align trailing axes; extents must be equal or 1. `None` if
/// they do not broadcast.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0usize; rank];
    for (i, o) in out.iter_mut().enumerate() {
        // Extent of `s` at output axis i (1 for the missing leading axes).
        let at = |s: &[usize]| -> usize {
            let lead = rank - s.len();
            if i < lead { 1 } else { s.get(i - lead).copied().unwrap_or(1) }
        };
        let (x, y) = (at(a), at(b));
        *o = if x == y {
            x
        } else if x == 1 {
            y
        } else if y == 1 {
            x
        } else {
            return None;
        };
    }
    Some(out)
}

fn err(message: alloc::string::String) -> ConvertError {
    ConvertError::new(ConvertErrorKind::InvalidGraph, message)
}

fn shape_str(s: &[usize]) -> alloc::string::String {
    format!("{s:?}")
}

/// The four extents of an NHWC shape.
fn nhwc(shape: &[usize], what: &str) -> Result<[usize; 4], ConvertError> {
    match shape {
        &[n, h, w, c] => Ok([n, h, w, c]),
        _ => Err(err(format!("{what} must be 4-D NHWC, got {}", shape_str(shape)))),
    }
}

fn window(
    padding: Padding,
    input: [usize; 4],
    filter: (usize, usize),
    stride: (usize, usize),
    dilation: (usize, usize),
) -> Result<(usize, usize), ConvertError> {
    if stride.0 == 0 || stride.1 == 0 {
        return Err(err(format!("stride {}x{} must be >= 1", stride.0, stride.1)));
    }
    if dilation.0 == 0 || dilation.1 == 0 {
        return Err(err(format!("dilation {}x{} must be >= 1", dilation.0, dilation.1)));
    }
    let h = padding.resolve_h(input[1], filter.0, stride.0, dilation.0);
    let w = padding.resolve_w(input[2], filter.1, stride.1, dilation.1);
    match (h, w) {
        (Some(h), Some(w)) => Ok((h.output, w.output)),
        _ => Err(err(format!(
            "a {}x{} window (stride {}x{}, dilation {}x{}, padding {padding}) does not fit input {}",
            filter.0,
            filter.1,
            stride.0,
            stride.1,
            dilation.0,
            dilation.1,
            shape_str(&input)
        ))),
    }
}

fn check_bias(bias: Option<&[usize]>, channels: usize) -> Result<(), ConvertError> {
    match bias {
        None => Ok(()),
        Some(b) if b == [channels] => Ok(()),
        Some(b) => Err(err(format!("bias shape {} must be [{channels}]", shape_str(b)))),
    }
}

fn check_axes_unique_sorted(axes: &[usize], rank: usize, what: &str) -> Result<(), ConvertError> {
    for (i, &a) in axes.iter().enumerate() {
        if a >= rank {
            return Err(err(format!("{what} axis {a} out of range for rank {rank}")));
        }
        if i > 0 && axes.get(i - 1).is_some_and(|&p| p >= a) {
            return Err(err(format!("{what} axes {axes:?} must be sorted and unique")));
        }
    }
    Ok(())
}

/// `mask[a]` is true for each listed axis (axes already checked to be `< rank`).
fn axis_mask(axes: &[usize], rank: usize) -> Vec<bool> {
    let mut mask = vec![false; rank];
    for &a in axes {
        if let Some(m) = mask.get_mut(a) {
            *m = true;
        }
    }
    mask
}

impl Op {
    /// The output shapes of this op for the given input shapes (`None` = absent optional input).
    ///
    /// # Errors
    /// [`ConvertErrorKind::InvalidGraph`] naming the mismatch (wrong rank, channel counts that do
    /// not agree, a window that does not fit, shapes that do not broadcast, an attribute out of
    /// range, overflow), or a wrong number of inputs. The error carries no node location: the
    /// caller ([`Graph::validate`](super::Graph::validate)) adds it.
    pub fn infer_shapes(&self, inputs: &[Option<&[usize]>]) -> Result<Vec<Vec<usize>>, ConvertError> {
        let arity = self.arity();
        if inputs.len() < arity.min_inputs || inputs.len() > arity.max_inputs {
            return Err(err(format!(
                "{} takes {}..={} inputs, got {}",
                self.name(),
                arity.min_inputs,
                if arity.max_inputs == usize::MAX { "any".into() } else { format!("{}", arity.max_inputs) },
                inputs.len()
            )));
        }
        for (i, x) in inputs.iter().enumerate() {
            if x.is_none() && i < arity.optional_from {
                return Err(err(format!("{} input {i} is required", self.name())));
            }
        }
        let input = |i: usize| -> Option<&[usize]> { inputs.get(i).copied().flatten() };
        // Present for every op (arity.min_inputs >= 1 and input 0 is never optional).
        let x = input(0).ok_or_else(|| err("input 0 is missing".into()))?;

        let out = match self {
            Op::Conv2d(c) => {
                let xs = nhwc(x, "conv input")?;
                let f = nhwc(input(1).unwrap_or(&[]), "conv filter [out_c, kh, kw, in_c]")?;
                if f[3] != xs[3] {
                    return Err(err(format!(
                        "conv filter {} has {} input channels, input {} has {}",
                        shape_str(&f),
                        f[3],
                        shape_str(x),
                        xs[3]
                    )));
                }
                check_bias(input(2), f[0])?;
                let (oh, ow) =
                    window(c.padding, xs, (f[1], f[2]), (c.stride_h, c.stride_w), (c.dilation_h, c.dilation_w))?;
                vec![xs[0], oh, ow, f[0]]
            }
            Op::DepthwiseConv2d(c) => {
                let xs = nhwc(x, "depthwise input")?;
                let f = nhwc(input(1).unwrap_or(&[]), "depthwise filter [1, kh, kw, c * m]")?;
                if f[0] != 1 {
                    return Err(err(format!("depthwise filter {} must have extent 1 on axis 0", shape_str(&f))));
                }
                let expected = xs[3].checked_mul(c.depth_multiplier);
                if c.depth_multiplier == 0 || expected != Some(f[3]) {
                    return Err(err(format!(
                        "depthwise filter {} has {} channels, input channels {} * depth_multiplier {} expected",
                        shape_str(&f),
                        f[3],
                        xs[3],
                        c.depth_multiplier
                    )));
                }
                check_bias(input(2), f[3])?;
                let (oh, ow) =
                    window(c.padding, xs, (f[1], f[2]), (c.stride_h, c.stride_w), (c.dilation_h, c.dilation_w))?;
                vec![xs[0], oh, ow, f[3]]
            }
            Op::FullyConnected(c) => {
                let w = input(1).unwrap_or(&[]);
                let (out_n, in_n) = match *w {
                    [o, i] => (o, i),
                    _ => return Err(err(format!("fully connected weights {} must be 2-D [out, in]", shape_str(w)))),
                };
                check_bias(input(2), out_n)?;
                let total = num_elements(x).ok_or_else(|| err("input element count overflows".into()))?;
                if in_n == 0 || total % in_n != 0 {
                    return Err(err(format!(
                        "fully connected input {} ({total} elements) is not a multiple of the weights' {in_n} inputs",
                        shape_str(x)
                    )));
                }
                if c.keep_num_dims {
                    match x.split_last() {
                        Some((&last, lead)) if last == in_n => {
                            let mut o = lead.to_vec();
                            o.push(out_n);
                            o
                        }
                        _ => {
                            return Err(err(format!(
                                "fully connected with keep_num_dims needs input {} to end in {in_n}",
                                shape_str(x)
                            )));
                        }
                    }
                } else {
                    vec![total / in_n, out_n]
                }
            }
            Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
                let xs = nhwc(x, "pooling input")?;
                let (oh, ow) = window(p.padding, xs, (p.filter_h, p.filter_w), (p.stride_h, p.stride_w), (1, 1))?;
                vec![xs[0], oh, ow, xs[3]]
            }
            Op::Add { .. }
            | Op::Sub { .. }
            | Op::Mul { .. }
            | Op::Div { .. }
            | Op::Minimum
            | Op::Maximum
            | Op::Prelu
            | Op::SquaredDifference => {
                let y = input(1).unwrap_or(&[]);
                broadcast_shapes(x, y)
                    .ok_or_else(|| err(format!("shapes {} and {} do not broadcast", shape_str(x), shape_str(y))))?
            }
            Op::Lstm(l) => {
                let w = input(1).unwrap_or(&[]);
                let (cell, n_in) = match *w {
                    [c, i] if c > 0 && i > 0 => (c, i),
                    _ => return Err(err(format!("lstm input weights {} must be [cell, in]", shape_str(w)))),
                };
                for k in 1..13 {
                    let want: &[usize] = match k {
                        1..=4 => &[cell, n_in],
                        5..=8 => &[cell, cell],
                        _ => &[cell],
                    };
                    if input(k).unwrap_or(&[]) != want {
                        return Err(err(format!("lstm operand {k} must be {}", shape_str(want))));
                    }
                }
                let (outer, inner) = match *x {
                    [a, b, i] if i == n_in => (a, b),
                    _ => return Err(err(format!("lstm input {} must be 3-D ending in {n_in}", shape_str(x)))),
                };
                let batch = if l.time_major { inner } else { outer };
                for k in [13, 14] {
                    if let Some(s) = input(k) {
                        if s.iter().product::<usize>() != batch * cell {
                            return Err(err(format!("lstm initial state {} must hold batch x cell", shape_str(s))));
                        }
                    }
                }
                vec![outer, inner, cell]
            }
            Op::TransposeConv2d(c) => {
                let xs = nhwc(x, "transpose conv input")?;
                let f = nhwc(input(1).unwrap_or(&[]), "transpose conv filter [out_c, kh, kw, in_c]")?;
                if f[3] != xs[3] {
                    return Err(err(format!(
                        "transpose conv filter {} has {} input channels, input {} has {}",
                        shape_str(&f),
                        f[3],
                        shape_str(x),
                        xs[3]
                    )));
                }
                check_bias(input(2), f[0])?;
                if c.stride_h == 0 || c.stride_w == 0 || c.output_h == 0 || c.output_w == 0 || f[1] == 0 || f[2] == 0 {
                    return Err(err("transpose conv strides, filter and output sizes must be >= 1".into()));
                }
                vec![xs[0], c.output_h, c.output_w, f[0]]
            }
            Op::BatchMatMul { adj_x, adj_y } => {
                let y = input(1).unwrap_or(&[]);
                crate::kernels::batch_matmul::BatchMatMulShape::new(x, y, *adj_x, *adj_y)
                    .map(|s| s.output_shape().to_vec())
                    .map_err(|e| err(format!("batch matmul of {} and {}: {e}", shape_str(x), shape_str(y))))?
            }
            Op::Gru(g) => {
                let w = input(1).unwrap_or(&[]);
                let (hidden, n_in) = match *w {
                    [h, i] if h > 0 && i > 0 => (h, i),
                    _ => return Err(err(format!("gru input weights {} must be [hidden, in]", shape_str(w)))),
                };
                for k in 1..13 {
                    let want: &[usize] = match k {
                        1..=3 => &[hidden, n_in],
                        4..=6 => &[hidden, hidden],
                        _ => &[hidden],
                    };
                    if input(k).unwrap_or(&[]) != want {
                        return Err(err(format!("gru operand {k} must be {}", shape_str(want))));
                    }
                }
                let (outer, inner) = match *x {
                    [a, b, i] if i == n_in => (a, b),
                    _ => return Err(err(format!("gru input {} must be 3-D ending in {n_in}", shape_str(x)))),
                };
                let batch = if g.time_major { inner } else { outer };
                if let Some(s) = input(13) {
                    if s.iter().product::<usize>() != batch * hidden {
                        return Err(err(format!("gru initial state {} must hold batch x hidden", shape_str(s))));
                    }
                }
                vec![outer, inner, hidden]
            }
            Op::Softmax { .. }
            | Op::Logistic
            | Op::Tanh
            | Op::HardSwish
            | Op::HardSigmoid { .. }
            | Op::Relu
            | Op::Relu6
            | Op::Clip { .. }
            | Op::Abs
            | Op::Neg
            | Op::Rsqrt
            | Op::Elu { .. }
            | Op::LeakyRelu { .. }
            | Op::Unary(_)
            | Op::Quantize
            | Op::Dequantize => x.to_vec(),
            Op::Concatenation { axis, .. } => {
                let axis = *axis;
                if axis >= x.len() {
                    return Err(err(format!("concatenation axis {axis} out of range for rank {}", x.len())));
                }
                let mut o = x.to_vec();
                for (i, s) in inputs.iter().enumerate().skip(1) {
                    let s = s.unwrap_or(&[]);
                    let same_other_axes =
                        s.len() == x.len() && s.iter().zip(x.iter()).enumerate().all(|(k, (a, b))| k == axis || a == b);
                    if !same_other_axes {
                        return Err(err(format!(
                            "concatenation input {i} {} does not match input 0 {} outside axis {axis}",
                            shape_str(s),
                            shape_str(x)
                        )));
                    }
                    let add = s.get(axis).copied().unwrap_or(0);
                    if let Some(d) = o.get_mut(axis) {
                        *d = d.checked_add(add).ok_or_else(|| err("concatenated extent overflows".into()))?;
                    }
                }
                o
            }
            Op::Pad { paddings } => {
                if paddings.len() != x.len() {
                    return Err(err(format!(
                        "pad has {} [before, after] pairs for input rank {}",
                        paddings.len(),
                        x.len()
                    )));
                }
                if let Some(v) = input(1) {
                    if num_elements(v) != Some(1) {
                        return Err(err(format!("pad constant value {} must have one element", shape_str(v))));
                    }
                }
                let mut o = Vec::with_capacity(x.len());
                for (&d, [b, a]) in x.iter().zip(paddings.iter()) {
                    let e = d.checked_add(*b).and_then(|e| e.checked_add(*a));
                    o.push(e.ok_or_else(|| err("padded extent overflows".into()))?);
                }
                o
            }
            Op::Resize { size, .. } => {
                let xs = nhwc(x, "resize input")?;
                if size.contains(&0) || xs[1] == 0 || xs[2] == 0 {
                    return Err(err(format!("resize of {} to {}x{}: empty extent", shape_str(x), size[0], size[1])));
                }
                vec![xs[0], size[0], size[1], xs[3]]
            }
            Op::Mean { axes, keep_dims } | Op::Sum { axes, keep_dims } | Op::ReduceMax { axes, keep_dims } => {
                check_axes_unique_sorted(axes, x.len(), "mean")?;
                let reduced = axis_mask(axes, x.len());
                let mut o = Vec::with_capacity(x.len());
                for (&d, &r) in x.iter().zip(reduced.iter()) {
                    if r {
                        if *keep_dims {
                            o.push(1);
                        }
                    } else {
                        o.push(d);
                    }
                }
                o
            }
            Op::Reshape { new_shape } => {
                let (a, b) = (num_elements(x), num_elements(new_shape));
                if a.is_none() || a != b {
                    return Err(err(format!(
                        "reshape from {} to {} changes the element count",
                        shape_str(x),
                        shape_str(new_shape)
                    )));
                }
                new_shape.clone()
            }
            Op::Transpose { perm } => {
                let mut seen = vec![false; x.len()];
                let mut o = Vec::with_capacity(x.len());
                if perm.len() != x.len() {
                    return Err(err(format!("transpose perm {perm:?} does not match input rank {}", x.len())));
                }
                for &p in perm {
                    match (seen.get_mut(p), x.get(p)) {
                        (Some(s), Some(&d)) if !*s => {
                            *s = true;
                            o.push(d);
                        }
                        _ => {
                            return Err(err(format!("transpose perm {perm:?} is not a permutation of 0..{}", x.len())));
                        }
                    }
                }
                o
            }
            Op::StridedSlice(_)
            | Op::DepthToSpace { .. }
            | Op::SpaceToDepth { .. }
            | Op::MirrorPad { .. }
            | Op::Gather { .. }
            | Op::Tile { .. } => super::movement::output_shape(self, x)?,
            Op::Squeeze { axes } => {
                check_axes_unique_sorted(axes, x.len(), "squeeze")?;
                let removed = axis_mask(axes, x.len());
                let mut o = Vec::with_capacity(x.len());
                for (i, (&d, &r)) in x.iter().zip(removed.iter()).enumerate() {
                    if r {
                        if d != 1 {
                            return Err(err(format!("squeeze axis {i} of {} has extent {d}, not 1", shape_str(x))));
                        }
                    } else {
                        o.push(d);
                    }
                }
                o
            }
        };
        if num_elements(&out).is_none() {
            return Err(err(format!("output shape {} overflows", shape_str(&out))));
        }
        Ok(vec![out])
    }
}
