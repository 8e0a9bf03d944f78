//! Constants in ONNX layout, and the ops the importer evaluates on them at import time (the
//! `Shape → Gather → Unsqueeze → Concat → Reshape` chains exporters write to compute static
//! shapes, weights behind `Identity`/`Transpose`/`Cast`, ...).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::attr::Attrs;
use super::tensor::dt;
use crate::graph::{ConvertError, ConvertErrorKind as Kind, num_elements};
use crate::layout;

/// The largest constant the importer builds or folds (elements), so a hostile shape cannot make
/// it allocate without bound: 2^24 (16.8 M weights, 64 MiB as f32, 128 MiB as i64), far beyond
/// any model a microcontroller holds, and small enough that folding a chain of them stays well
/// under a browser tab's memory (2^27 let one fuzzed `ConstantOfShape` chain reach 2 GiB).
pub(crate) const MAX_CONST_ELEMENTS: usize = 1 << 24;

/// Constant data: floats as f32, every integer type as i64, booleans.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KData {
    F32(Vec<f32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
}

impl KData {
    pub(crate) fn len(&self) -> usize {
        match self {
            KData::F32(v) => v.len(),
            KData::I64(v) => v.len(),
            KData::Bool(v) => v.len(),
        }
    }
    fn kind(&self) -> &'static str {
        match self {
            KData::F32(_) => "float",
            KData::I64(_) => "integer",
            KData::Bool(_) => "bool",
        }
    }
    fn map_index(&self, idx: &[usize]) -> KData {
        fn pick<T: Copy + Default>(v: &[T], idx: &[usize]) -> Vec<T> {
            idx.iter().map(|&i| v.get(i).copied().unwrap_or_default()).collect()
        }
        match self {
            KData::F32(v) => KData::F32(pick(v, idx)),
            KData::I64(v) => KData::I64(pick(v, idx)),
            KData::Bool(v) => KData::Bool(pick(v, idx)),
        }
    }
}

/// A constant tensor in ONNX layout.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Konst {
    pub shape: Vec<usize>,
    pub data: KData,
}

fn err(kind: Kind, msg: String) -> ConvertError {
    ConvertError::new(kind, msg)
}

fn invalid(msg: String) -> ConvertError {
    err(Kind::Malformed, msg)
}

/// Normalizes a possibly negative axis for `rank`.
pub(crate) fn norm_axis(axis: i64, rank: usize) -> Result<usize, ConvertError> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r {
        return Err(invalid(format!("axis {axis} out of range for rank {rank}")));
    }
    Ok(a as usize)
}

/// [`norm_axis`] of every axis in `list` (the first error, if any).
pub(crate) fn norm_axes(list: &[i64], rank: usize) -> Result<Vec<usize>, ConvertError> {
    let mut out = Vec::with_capacity(list.len());
    for &a in list {
        out.push(norm_axis(a, rank)?);
    }
    Ok(out)
}

/// The `Flatten` axis, in `0..=rank` (negative counts from the end).
pub(crate) fn flatten_axis(axis: i64, rank: usize) -> Result<usize, ConvertError> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a > r {
        return Err(invalid(format!("Flatten axis {axis} out of range for rank {rank}")));
    }
    Ok(a as usize)
}

fn checked_len(shape: &[usize]) -> Result<usize, ConvertError> {
    num_elements(shape)
        .filter(|&n| n <= MAX_CONST_ELEMENTS)
        .ok_or_else(|| err(Kind::Unsupported, format!("a constant of shape {shape:?} is too large to fold")))
}

impl Konst {
    pub(crate) fn f32(shape: Vec<usize>, v: Vec<f32>) -> Self {
        Self { shape, data: KData::F32(v) }
    }
    pub(crate) fn i64(shape: Vec<usize>, v: Vec<i64>) -> Self {
        Self { shape, data: KData::I64(v) }
    }
    /// Integer values (axes, shapes, pads).
    pub(crate) fn as_i64(&self) -> Result<&[i64], ConvertError> {
        match &self.data {
            KData::I64(v) => Ok(v),
            d => Err(invalid(format!("expected an integer tensor, got {}", d.kind()))),
        }
    }
    /// Float values (weights).
    pub(crate) fn as_f32(&self) -> Result<&[f32], ConvertError> {
        match &self.data {
            KData::F32(v) => Ok(v),
            d => Err(err(Kind::UnsupportedDType, format!("expected a float tensor, got {}", d.kind()))),
        }
    }
    /// A single float (scalar or one element).
    pub(crate) fn scalar_f32(&self) -> Result<f32, ConvertError> {
        match &self.data {
            KData::F32(v) if v.len() == 1 => Ok(v[0]),
            KData::I64(v) if v.len() == 1 => Ok(v[0] as f32),
            _ => Err(invalid(format!("expected one number, got shape {:?}", self.shape))),
        }
    }
    /// Transposed (numpy `transpose(perm)`).
    pub(crate) fn transpose(&self, perm: &[usize]) -> Result<Konst, ConvertError> {
        if perm.len() != self.shape.len() || !layout::is_permutation(perm) {
            return Err(invalid(format!("perm {perm:?} does not fit shape {:?}", self.shape)));
        }
        let idx: Vec<usize> = (0..self.data.len()).collect();
        let moved = layout::transpose(&idx, &self.shape, perm)
            .map_err(|e| invalid(format!("perm {perm:?} does not fit shape {:?}: {e}", self.shape)))?;
        Ok(Konst { shape: layout::permute_shape(&self.shape, perm), data: self.data.map_index(&moved) })
    }
    /// Same data, another shape with the same element count.
    pub(crate) fn reshaped(&self, shape: Vec<usize>) -> Result<Konst, ConvertError> {
        if num_elements(&shape) != Some(self.data.len()) {
            return Err(invalid(format!("cannot reshape {:?} to {shape:?}", self.shape)));
        }
        Ok(Konst { shape, data: self.data.clone() })
    }
    /// Broadcast to `shape` (numpy rules, `shape` must be the broadcast result).
    pub(crate) fn broadcast_to(&self, shape: &[usize]) -> Result<Konst, ConvertError> {
        let idx = broadcast_index(&self.shape, shape)?;
        Ok(Konst { shape: shape.to_vec(), data: self.data.map_index(&idx) })
    }
}

/// For each element of `out` (row-major), the index of the element of `input` it reads under
/// numpy broadcasting.
fn broadcast_index(input: &[usize], out: &[usize]) -> Result<Vec<usize>, ConvertError> {
    if input.len() > out.len() {
        return Err(invalid(format!("{input:?} does not broadcast to {out:?}")));
    }
    let lead = out.len() - input.len();
    let mut padded = vec![1usize; lead];
    padded.extend_from_slice(input);
    for (a, b) in padded.iter().zip(out) {
        if *a != *b && *a != 1 {
            return Err(invalid(format!("{input:?} does not broadcast to {out:?}")));
        }
    }
    let in_strides = layout::strides(&padded);
    let step: Vec<usize> = padded.iter().zip(&in_strides).map(|(&d, &s)| if d == 1 { 0 } else { s }).collect();
    let n = checked_len(out)?;
    let mut idx = Vec::with_capacity(n);
    let mut mi = vec![0usize; out.len()];
    let mut src = 0usize;
    for _ in 0..n {
        idx.push(src);
        for a in (0..out.len()).rev() {
            mi[a] += 1;
            src += step[a];
            if mi[a] < out[a] {
                break;
            }
            src -= step[a] * mi[a];
            mi[a] = 0;
        }
    }
    Ok(idx)
}

fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, ConvertError> {
    crate::graph::broadcast_shapes(a, b).ok_or_else(|| invalid(format!("shapes {a:?} and {b:?} do not broadcast")))
}

fn binary(op: &str, a: &Konst, b: &Konst) -> Result<Konst, ConvertError> {
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let (a, b) = (a.broadcast_to(&shape)?, b.broadcast_to(&shape)?);
    let data = match (&a.data, &b.data) {
        (KData::F32(x), KData::F32(y)) => {
            let f: fn(f32, f32) -> f32 = match op {
                "Add" => |p, q| p + q,
                "Sub" => |p, q| p - q,
                "Mul" => |p, q| p * q,
                "Div" => |p, q| p / q,
                "Pow" => libm::powf,
                "Max" => f32::max,
                "Min" => f32::min,
                _ => return Err(invalid(format!("{op} is not a float binary op"))),
            };
            KData::F32(x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect())
        }
        (KData::I64(x), KData::I64(y)) => {
            let mut out = Vec::with_capacity(x.len());
            for (&p, &q) in x.iter().zip(y) {
                out.push(match op {
                    "Add" => p.wrapping_add(q),
                    "Sub" => p.wrapping_sub(q),
                    "Mul" => p.wrapping_mul(q),
                    "Div" => p.checked_div(q).ok_or_else(|| invalid(format!("integer division {p} / {q}")))?,
                    "Max" => p.max(q),
                    "Min" => p.min(q),
                    _ => return Err(invalid(format!("{op} is not an integer binary op"))),
                });
            }
            KData::I64(out)
        }
        (x, y) => return Err(invalid(format!("{op} of {} and {} constants", x.kind(), y.kind()))),
    };
    Ok(Konst { shape, data })
}

fn equal(a: &Konst, b: &Konst) -> Result<Konst, ConvertError> {
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let (a, b) = (a.broadcast_to(&shape)?, b.broadcast_to(&shape)?);
    let data = match (&a.data, &b.data) {
        (KData::F32(x), KData::F32(y)) => x.iter().zip(y).map(|(p, q)| p == q).collect(),
        (KData::I64(x), KData::I64(y)) => x.iter().zip(y).map(|(p, q)| p == q).collect(),
        (KData::Bool(x), KData::Bool(y)) => x.iter().zip(y).map(|(p, q)| p == q).collect(),
        _ => return Err(invalid("Equal of constants of different types".into())),
    };
    Ok(Konst { shape, data: KData::Bool(data) })
}

fn where_(c: &Konst, x: &Konst, y: &Konst) -> Result<Konst, ConvertError> {
    let shape = broadcast_shape(&broadcast_shape(&c.shape, &x.shape)?, &y.shape)?;
    let (c, x, y) = (c.broadcast_to(&shape)?, x.broadcast_to(&shape)?, y.broadcast_to(&shape)?);
    let KData::Bool(cv) = &c.data else { return Err(invalid("Where condition is not bool".into())) };
    let data = match (&x.data, &y.data) {
        (KData::F32(p), KData::F32(q)) => {
            KData::F32(cv.iter().zip(p.iter().zip(q)).map(|(&c, (&p, &q))| if c { p } else { q }).collect())
        }
        (KData::I64(p), KData::I64(q)) => {
            KData::I64(cv.iter().zip(p.iter().zip(q)).map(|(&c, (&p, &q))| if c { p } else { q }).collect())
        }
        _ => return Err(invalid("Where of constants of different types".into())),
    };
    Ok(Konst { shape, data })
}

fn unary_f32(op: &str, x: &Konst) -> Result<Konst, ConvertError> {
    let data = match (&x.data, op) {
        (KData::I64(v), "Neg") => KData::I64(v.iter().map(|p| p.wrapping_neg()).collect()),
        (KData::I64(v), "Abs") => KData::I64(v.iter().map(|p| p.wrapping_abs()).collect()),
        (KData::I64(v), "Sign") => KData::I64(v.iter().map(|p| p.signum()).collect()),
        (KData::I64(v), "Floor" | "Ceil" | "Round") => KData::I64(v.clone()),
        (KData::Bool(v), "Not") => KData::Bool(v.iter().map(|p| !p).collect()),
        (KData::F32(v), _) => {
            let f: fn(f32) -> f32 = match op {
                "Neg" => |p| -p,
                "Sqrt" => libm::sqrtf,
                "Reciprocal" => |p| 1.0 / p,
                "Abs" => libm::fabsf,
                "Floor" => libm::floorf,
                "Ceil" => libm::ceilf,
                // Halves to even, as ONNX's Round (and numpy's).
                "Round" => libm::rintf,
                "Sign" => |p| {
                    if p > 0.0 {
                        1.0
                    } else if p < 0.0 {
                        -1.0
                    } else {
                        p
                    }
                },
                _ => return Err(invalid(format!("{op} is not a unary op"))),
            };
            KData::F32(v.iter().map(|&p| f(p)).collect())
        }
        _ => return Err(invalid(format!("{op} of a {} constant", x.data.kind()))),
    };
    Ok(Konst { shape: x.shape.clone(), data })
}

/// Resolves an ONNX `Reshape` target (`0` copies the input extent unless `allowzero`, one `-1`
/// is inferred).
pub(crate) fn reshape_target(input: &[usize], target: &[i64], allowzero: bool) -> Result<Vec<usize>, ConvertError> {
    let total = num_elements(input).ok_or_else(|| invalid(format!("shape {input:?} overflows")))?;
    let mut out = Vec::with_capacity(target.len());
    let mut infer = None;
    for (i, &d) in target.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 if !allowzero => out.push(
                *input
                    .get(i)
                    .ok_or_else(|| invalid(format!("reshape target {target:?}: 0 at axis {i} past the input rank")))?,
            ),
            d if d >= 0 => out.push(d as usize),
            _ => return Err(invalid(format!("reshape target {target:?} is invalid"))),
        }
    }
    let known = num_elements(&out).ok_or_else(|| invalid(format!("reshape target {target:?} overflows")))?;
    if let Some(i) = infer {
        if known == 0 || total % known != 0 {
            return Err(invalid(format!("cannot reshape {input:?} to {target:?}")));
        }
        out[i] = total / known;
    } else if known != total {
        return Err(invalid(format!("cannot reshape {input:?} ({total} elements) to {target:?}")));
    }
    Ok(out)
}

/// Squeeze/Unsqueeze axes: from the attribute (opset < 13) or input 1 (opset ≥ 13).
pub(crate) fn axes_of(attrs: &Attrs, input: Option<&Konst>, name: &str) -> Result<Option<Vec<i64>>, ConvertError> {
    if let Some(k) = input {
        return Ok(Some(k.as_i64()?.to_vec()));
    }
    attrs.ints(name)
}

/// Output shape of ONNX `Unsqueeze`.
pub(crate) fn unsqueeze_shape(shape: &[usize], axes: &[i64]) -> Result<Vec<usize>, ConvertError> {
    let rank = shape.len() + axes.len();
    let mut inserted = vec![false; rank];
    for &a in axes {
        let a = norm_axis(a, rank)?;
        if inserted[a] {
            return Err(invalid(format!("Unsqueeze axes {axes:?} repeat an axis")));
        }
        inserted[a] = true;
    }
    let mut src = shape.iter();
    Ok(inserted.iter().map(|&ins| if ins { 1 } else { src.next().copied().unwrap_or(1) }).collect())
}

/// Axes removed by ONNX `Squeeze` (sorted): the listed ones (each of extent 1), or every
/// extent-1 axis.
pub(crate) fn squeeze_axes(shape: &[usize], axes: Option<&[i64]>) -> Result<Vec<usize>, ConvertError> {
    let mut out: Vec<usize> = match axes {
        None => (0..shape.len()).filter(|&a| shape[a] == 1).collect(),
        Some(list) => norm_axes(list, shape.len())?,
    };
    crate::vecmap::sort_usizes(&mut out);
    out.dedup();
    if let Some(&a) = out.iter().find(|&&a| shape.get(a) != Some(&1)) {
        return Err(invalid(format!("Squeeze axis {a} of shape {shape:?} is not 1")));
    }
    Ok(out)
}

fn gather(data: &Konst, indices: &Konst, axis: i64) -> Result<Konst, ConvertError> {
    let r = data.shape.len();
    let axis = norm_axis(axis, r)?;
    let extent = data.shape[axis];
    let outer: usize = data.shape[..axis].iter().product();
    let inner: usize = data.shape[axis + 1..].iter().product();
    let mut idx_list = Vec::new();
    for &i in indices.as_i64()? {
        let j = if i < 0 { i + extent as i64 } else { i };
        if j < 0 || j >= extent as i64 {
            return Err(invalid(format!("Gather index {i} out of range for extent {extent}")));
        }
        idx_list.push(j as usize);
    }
    let mut shape = data.shape[..axis].to_vec();
    shape.extend_from_slice(&indices.shape);
    shape.extend_from_slice(&data.shape[axis + 1..]);
    checked_len(&shape)?;
    let mut src = Vec::new();
    for o in 0..outer {
        for &j in &idx_list {
            for k in 0..inner {
                src.push((o * extent + j) * inner + k);
            }
        }
    }
    Ok(Konst { shape, data: data.data.map_index(&src) })
}

fn concat(parts: &[&Konst], axis: i64) -> Result<Konst, ConvertError> {
    let first = parts.first().ok_or_else(|| invalid("Concat of nothing".into()))?;
    let r = first.shape.len();
    let axis = norm_axis(axis, r)?;
    let mut shape = first.shape.clone();
    shape[axis] = 0;
    for p in parts {
        let same =
            p.shape.len() == r && p.shape.iter().zip(&first.shape).enumerate().all(|(k, (a, b))| k == axis || a == b);
        if !same {
            return Err(invalid(format!("Concat of shapes {:?} and {:?} on axis {axis}", first.shape, p.shape)));
        }
        shape[axis] += p.shape[axis];
    }
    let outer: usize = first.shape[..axis].iter().product();
    let mut data = match &first.data {
        KData::F32(_) => KData::F32(Vec::new()),
        KData::I64(_) => KData::I64(Vec::new()),
        KData::Bool(_) => KData::Bool(Vec::new()),
    };
    for o in 0..outer {
        for p in parts {
            let chunk: usize = p.shape[axis..].iter().product();
            let range = o * chunk..(o + 1) * chunk;
            match (&mut data, &p.data) {
                (KData::F32(d), KData::F32(s)) => d.extend_from_slice(s.get(range).unwrap_or(&[])),
                (KData::I64(d), KData::I64(s)) => d.extend_from_slice(s.get(range).unwrap_or(&[])),
                (KData::Bool(d), KData::Bool(s)) => d.extend_from_slice(s.get(range).unwrap_or(&[])),
                _ => return Err(invalid("Concat of constants of different types".into())),
            }
        }
    }
    Ok(Konst { shape, data })
}

/// ONNX `Slice` (opset ≥ 10: starts, ends, axes, steps as inputs).
fn slice(
    x: &Konst,
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Result<Konst, ConvertError> {
    let r = x.shape.len();
    let n = starts.len();
    if ends.len() != n || axes.is_some_and(|a| a.len() != n) || steps.is_some_and(|s| s.len() != n) {
        return Err(invalid("Slice starts/ends/axes/steps lengths differ".into()));
    }
    // Per axis: start and step, and the output extent.
    let mut start = vec![0i64; r];
    let mut step = vec![1i64; r];
    let mut extent: Vec<usize> = x.shape.clone();
    for k in 0..n {
        let axis = norm_axis(axes.map_or(k as i64, |a| a[k]), r)?;
        let s = steps.map_or(1, |s| s[k]);
        if s == 0 {
            return Err(invalid("Slice step 0".into()));
        }
        let d = x.shape[axis] as i64;
        let clampi = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let (mut b, mut e) = (starts[k], ends[k]);
        if b < 0 {
            b += d;
        }
        if e < 0 {
            e += d;
        }
        let (b, e) =
            if s > 0 { (clampi(b, 0, d), clampi(e, 0, d)) } else { (clampi(b, 0, d - 1), clampi(e, -1, d - 1)) };
        // In i128: a step near i64::MAX (or i64::MIN, whose negation overflows) is valid ONNX.
        let (bw, ew, sw) = (i128::from(b), i128::from(e), i128::from(s));
        let len = if sw > 0 { (ew - bw + sw - 1).max(0) / sw } else { (bw - ew - sw - 1).max(0) / (-sw) };
        start[axis] = b;
        step[axis] = s;
        extent[axis] = len as usize;
    }
    let total = checked_len(&extent)?;
    let in_strides = layout::strides(&x.shape);
    let mut src = Vec::with_capacity(total);
    let mut mi = vec![0usize; r];
    for _ in 0..total {
        let mut off = 0i64;
        for a in 0..r {
            off += (start[a] + step[a] * mi[a] as i64) * in_strides[a] as i64;
        }
        src.push(off as usize);
        for a in (0..r).rev() {
            mi[a] += 1;
            if mi[a] < extent[a] {
                break;
            }
            mi[a] = 0;
        }
    }
    Ok(Konst { shape: extent, data: x.data.map_index(&src) })
}

fn cast(x: &Konst, to: i64) -> Result<Konst, ConvertError> {
    let to = i32::try_from(to).unwrap_or(-1);
    let data = match (to, &x.data) {
        (dt::FLOAT | dt::DOUBLE | dt::FLOAT16 | dt::BFLOAT16, KData::F32(v)) => KData::F32(v.clone()),
        (dt::FLOAT | dt::DOUBLE | dt::FLOAT16 | dt::BFLOAT16, KData::I64(v)) => {
            KData::F32(v.iter().map(|&p| p as f32).collect())
        }
        (dt::FLOAT | dt::DOUBLE | dt::FLOAT16 | dt::BFLOAT16, KData::Bool(v)) => {
            KData::F32(v.iter().map(|&p| if p { 1.0 } else { 0.0 }).collect())
        }
        (
            dt::INT8 | dt::UINT8 | dt::INT16 | dt::UINT16 | dt::INT32 | dt::UINT32 | dt::INT64 | dt::UINT64,
            KData::F32(v),
        ) => KData::I64(v.iter().map(|&p| p as i64).collect()),
        (
            dt::INT8 | dt::UINT8 | dt::INT16 | dt::UINT16 | dt::INT32 | dt::UINT32 | dt::INT64 | dt::UINT64,
            KData::I64(v),
        ) => KData::I64(v.clone()),
        (
            dt::INT8 | dt::UINT8 | dt::INT16 | dt::UINT16 | dt::INT32 | dt::UINT32 | dt::INT64 | dt::UINT64,
            KData::Bool(v),
        ) => KData::I64(v.iter().map(|&p| i64::from(p)).collect()),
        (dt::BOOL, KData::F32(v)) => KData::Bool(v.iter().map(|&p| p != 0.0).collect()),
        (dt::BOOL, KData::I64(v)) => KData::Bool(v.iter().map(|&p| p != 0).collect()),
        (dt::BOOL, KData::Bool(v)) => KData::Bool(v.clone()),
        _ => {
            return Err(err(Kind::UnsupportedDType, format!("Cast to {}", super::tensor::dtype_name(to))));
        }
    };
    Ok(Konst { shape: x.shape.clone(), data })
}

fn range(start: &Konst, limit: &Konst, delta: &Konst) -> Result<Konst, ConvertError> {
    match (&start.data, &limit.data, &delta.data) {
        (KData::I64(s), KData::I64(l), KData::I64(d)) => {
            let (s, l, d) =
                (s.first().copied().unwrap_or(0), l.first().copied().unwrap_or(0), d.first().copied().unwrap_or(0));
            if d == 0 {
                return Err(invalid("Range delta 0".into()));
            }
            let (span, step) = if d > 0 { (l.saturating_sub(s), d) } else { (s.saturating_sub(l), d.saturating_neg()) };
            let n = if span <= 0 { 0 } else { (span / step + i64::from(span % step != 0)) as usize };
            checked_len(&[n])?;
            Ok(Konst::i64(vec![n], (0..n as i64).map(|i| s + i * d).collect()))
        }
        (KData::F32(s), KData::F32(l), KData::F32(d)) => {
            let (s, l, d) = (
                s.first().copied().unwrap_or(0.0),
                l.first().copied().unwrap_or(0.0),
                d.first().copied().unwrap_or(0.0),
            );
            if d == 0.0 || !(s.is_finite() && l.is_finite() && d.is_finite()) {
                return Err(invalid("Range with delta 0 or non-finite bounds".into()));
            }
            let n = libm::ceilf((l - s) / d).max(0.0) as usize;
            checked_len(&[n])?;
            Ok(Konst::f32(vec![n], (0..n).map(|i| s + i as f32 * d).collect()))
        }
        _ => Err(invalid("Range of mixed types".into())),
    }
}

/// `Less`, `Greater`, `LessOrEqual`, `GreaterOrEqual` (numbers) and `And`, `Or`, `Xor` (bools).
fn compare(op: &str, a: &Konst, b: &Konst) -> Result<Konst, ConvertError> {
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let (a, b) = (a.broadcast_to(&shape)?, b.broadcast_to(&shape)?);
    fn cmp<T: PartialOrd>(op: &str, p: T, q: T) -> Option<bool> {
        Some(match op {
            "Less" => p < q,
            "Greater" => p > q,
            "LessOrEqual" => p <= q,
            "GreaterOrEqual" => p >= q,
            _ => return None,
        })
    }
    let bad = || invalid(format!("{op} of {} and {} constants", a.data.kind(), b.data.kind()));
    let data: Option<Vec<bool>> = match (&a.data, &b.data) {
        (KData::F32(x), KData::F32(y)) => x.iter().zip(y).map(|(&p, &q)| cmp(op, p, q)).collect(),
        (KData::I64(x), KData::I64(y)) => x.iter().zip(y).map(|(&p, &q)| cmp(op, p, q)).collect(),
        (KData::Bool(x), KData::Bool(y)) => x
            .iter()
            .zip(y)
            .map(|(&p, &q)| match op {
                "And" => Some(p && q),
                "Or" => Some(p || q),
                "Xor" => Some(p != q),
                _ => None,
            })
            .collect(),
        _ => None,
    };
    Ok(Konst { shape, data: KData::Bool(data.ok_or_else(bad)?) })
}

/// ONNX `Mod`: `fmod` 0 takes the divisor's sign (Python's `%`), 1 the dividend's (C's `fmod`).
fn modulo(a: &Konst, b: &Konst, fmod: bool) -> Result<Konst, ConvertError> {
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let (a, b) = (a.broadcast_to(&shape)?, b.broadcast_to(&shape)?);
    let data = match (&a.data, &b.data) {
        (KData::I64(x), KData::I64(y)) => {
            let mut out = Vec::with_capacity(x.len());
            for (&p, &q) in x.iter().zip(y) {
                let r = p.checked_rem(q).ok_or_else(|| invalid(format!("Mod {p} % {q}")))?;
                out.push(if !fmod && r != 0 && (r < 0) != (q < 0) { r + q } else { r });
            }
            KData::I64(out)
        }
        (KData::F32(x), KData::F32(y)) => KData::F32(
            x.iter()
                .zip(y)
                .map(|(&p, &q)| {
                    let r = libm::fmodf(p, q);
                    if !fmod && r != 0.0 && (r < 0.0) != (q < 0.0) { r + q } else { r }
                })
                .collect(),
        ),
        (x, y) => return Err(invalid(format!("Mod of {} and {} constants", x.kind(), y.kind()))),
    };
    Ok(Konst { shape, data })
}

/// `ReduceSum`, `ReduceProd`, `ReduceMax`, `ReduceMin`, `ReduceMean` of a constant over `axes`
/// (all when `None`).
fn reduce(op: &str, x: &Konst, axes: Option<&[i64]>, keepdims: bool) -> Result<Konst, ConvertError> {
    let r = x.shape.len();
    let axes: Vec<usize> = match axes {
        Some(list) => norm_axes(list, r)?,
        None => (0..r).collect(),
    };
    let out_full: Vec<usize> = (0..r).map(|a| if axes.contains(&a) { 1 } else { x.shape[a] }).collect();
    let n_out = checked_len(&out_full)?;
    let out_strides = layout::strides(&out_full);
    // For each input element, the output element it reduces into.
    let mut dst = Vec::with_capacity(x.data.len());
    let mut mi = vec![0usize; r];
    for _ in 0..x.data.len() {
        dst.push((0..r).map(|a| if axes.contains(&a) { 0 } else { mi[a] * out_strides[a] }).sum::<usize>());
        for a in (0..r).rev() {
            mi[a] += 1;
            if mi[a] < x.shape[a] {
                break;
            }
            mi[a] = 0;
        }
    }
    let count = (x.data.len() / n_out.max(1)).max(1);
    let data = match &x.data {
        KData::F32(v) => {
            let init = match op {
                "ReduceProd" => 1.0,
                "ReduceMax" => f32::NEG_INFINITY,
                "ReduceMin" => f32::INFINITY,
                _ => 0.0,
            };
            let mut out = vec![init; n_out];
            for (&p, &d) in v.iter().zip(&dst) {
                let o = &mut out[d];
                *o = match op {
                    "ReduceProd" => *o * p,
                    "ReduceMax" => o.max(p),
                    "ReduceMin" => o.min(p),
                    _ => *o + p,
                };
            }
            if op == "ReduceMean" {
                out.iter_mut().for_each(|o| *o /= count as f32);
            }
            KData::F32(out)
        }
        KData::I64(v) => {
            let init = match op {
                "ReduceProd" => 1,
                "ReduceMax" => i64::MIN,
                "ReduceMin" => i64::MAX,
                _ => 0,
            };
            let mut out = vec![init; n_out];
            for (&p, &d) in v.iter().zip(&dst) {
                let o = &mut out[d];
                *o = match op {
                    "ReduceProd" => o.wrapping_mul(p),
                    "ReduceMax" => (*o).max(p),
                    "ReduceMin" => (*o).min(p),
                    _ => o.wrapping_add(p),
                };
            }
            if op == "ReduceMean" {
                out.iter_mut().for_each(|o| *o /= count as i64);
            }
            KData::I64(out)
        }
        KData::Bool(_) => return Err(invalid(format!("{op} of a bool constant"))),
    };
    let shape = if keepdims {
        out_full
    } else {
        x.shape.iter().enumerate().filter(|(a, _)| !axes.contains(a)).map(|(_, &d)| d).collect()
    };
    Ok(Konst { shape, data })
}

/// ONNX `Tile`.
fn tile(x: &Konst, repeats: &[i64]) -> Result<Konst, ConvertError> {
    let r = x.shape.len();
    if repeats.len() != r {
        return Err(invalid(format!("Tile repeats {repeats:?} for rank {r}")));
    }
    let mut shape = Vec::with_capacity(r);
    for (&d, &k) in x.shape.iter().zip(repeats) {
        let k = usize::try_from(k).map_err(|_| invalid(format!("Tile repeat {k}")))?;
        shape.push(d.checked_mul(k).ok_or_else(|| invalid(format!("Tile repeats {repeats:?} overflow")))?);
    }
    let n = checked_len(&shape)?;
    let in_strides = layout::strides(&x.shape);
    let mut src = Vec::with_capacity(n);
    let mut mi = vec![0usize; r];
    for _ in 0..n {
        src.push((0..r).map(|a| (mi[a] % x.shape[a].max(1)) * in_strides[a]).sum());
        for a in (0..r).rev() {
            mi[a] += 1;
            if mi[a] < shape[a] {
                break;
            }
            mi[a] = 0;
        }
    }
    Ok(Konst { shape, data: x.data.map_index(&src) })
}

/// ONNX `Clip` of a constant (bounds from inputs 1 and 2, absent = unbounded).
fn clip(x: &Konst, lo: Option<&Konst>, hi: Option<&Konst>) -> Result<Konst, ConvertError> {
    let data = match &x.data {
        KData::F32(v) => {
            let lo = lo.map(Konst::scalar_f32).transpose()?.unwrap_or(f32::NEG_INFINITY);
            let hi = hi.map(Konst::scalar_f32).transpose()?.unwrap_or(f32::INFINITY);
            KData::F32(v.iter().map(|&p| p.max(lo).min(hi)).collect())
        }
        KData::I64(v) => {
            let one = |k: Option<&Konst>, d: i64| -> Result<i64, ConvertError> {
                match k {
                    None => Ok(d),
                    Some(k) => k.as_i64()?.first().copied().ok_or_else(|| invalid("Clip bound is empty".into())),
                }
            };
            let (lo, hi) = (one(lo, i64::MIN)?, one(hi, i64::MAX)?);
            KData::I64(v.iter().map(|&p| p.max(lo).min(hi)).collect())
        }
        KData::Bool(_) => return Err(invalid("Clip of a bool constant".into())),
    };
    Ok(Konst { shape: x.shape.clone(), data })
}

/// The ops [`fold`] evaluates when all their inputs are constants.
pub(crate) const FOLDED_OPS: &[&str] = &[
    "Identity",
    "Dropout",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Max",
    "Min",
    "Sum",
    "Mean",
    "Neg",
    "Sqrt",
    "Reciprocal",
    "Abs",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Not",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Mod",
    "Where",
    "Gather",
    "Concat",
    "Unsqueeze",
    "Squeeze",
    "Reshape",
    "Flatten",
    "Transpose",
    "Cast",
    "Slice",
    "ConstantOfShape",
    "Expand",
    "Range",
    "ReduceSum",
    "ReduceProd",
    "ReduceMax",
    "ReduceMin",
    "ReduceMean",
    "Tile",
    "Clip",
];

/// True if [`fold`] evaluates `op` on constants.
pub(crate) fn is_foldable(op: &str) -> bool {
    FOLDED_OPS.contains(&op)
}

fn required<'k>(inputs: &[Option<&'k Konst>], i: usize, op: &str) -> Result<&'k Konst, ConvertError> {
    inputs.get(i).copied().flatten().ok_or_else(|| invalid(format!("{op} input {i} is missing")))
}

/// Evaluates `op` on constant inputs. `Ok(None)` if the op is not one the importer folds.
pub(crate) fn fold(
    op: &str,
    inputs: &[Option<&Konst>],
    attrs: &Attrs,
    opset: i64,
) -> Result<Option<Konst>, ConvertError> {
    let x = |i: usize| required(inputs, i, op);
    let opt = |i: usize| inputs.get(i).copied().flatten();
    let out = match op {
        "Identity" | "Dropout" => x(0)?.clone(),
        "Add" | "Sub" | "Mul" | "Div" | "Pow" => binary(op, x(0)?, x(1)?)?,
        // Variadic.
        "Max" | "Min" | "Sum" | "Mean" => {
            let parts: Vec<&Konst> = inputs.iter().flatten().copied().collect();
            let (first, rest) = parts.split_first().ok_or_else(|| invalid(format!("{op} of nothing")))?;
            let pairwise = match op {
                "Max" | "Min" => op,
                _ => "Add",
            };
            let mut acc = (*first).clone();
            for p in rest {
                acc = binary(pairwise, &acc, p)?;
            }
            if op == "Mean" {
                acc = binary("Div", &acc, &Konst::f32(Vec::new(), vec![parts.len() as f32]))?;
            }
            acc
        }
        "Neg" | "Sqrt" | "Reciprocal" | "Abs" | "Floor" | "Ceil" | "Round" | "Sign" | "Not" => unary_f32(op, x(0)?)?,
        "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" | "Xor" => compare(op, x(0)?, x(1)?)?,
        "Mod" => modulo(x(0)?, x(1)?, attrs.int_or("fmod", 0)? != 0)?,
        "ReduceSum" | "ReduceProd" | "ReduceMax" | "ReduceMin" | "ReduceMean" => {
            // Axes: an input from opset 13 (ReduceSum) or 18 (the others), an attribute before.
            let axes = match opt(1) {
                Some(k) => Some(k.as_i64()?.to_vec()),
                None => attrs.ints("axes")?,
            };
            let axes = match axes {
                Some(a) if a.is_empty() => None,
                a => a,
            };
            if axes.is_none() && attrs.int_or("noop_with_empty_axes", 0)? != 0 {
                x(0)?.clone()
            } else {
                reduce(op, x(0)?, axes.as_deref(), attrs.int_or("keepdims", 1)? != 0)?
            }
        }
        "Tile" => tile(x(0)?, x(1)?.as_i64()?)?,
        "Clip" => clip(x(0)?, opt(1), opt(2))?,
        "Equal" => equal(x(0)?, x(1)?)?,
        "Where" => where_(x(0)?, x(1)?, x(2)?)?,
        "Gather" => gather(x(0)?, x(1)?, attrs.int_or("axis", 0)?)?,
        "Concat" => {
            let parts: Vec<&Konst> = inputs.iter().flatten().copied().collect();
            let axis = attrs.int("axis")?.ok_or_else(|| invalid("Concat without axis".into()))?;
            concat(&parts, axis)?
        }
        "Unsqueeze" => {
            let v = x(0)?;
            let axes = axes_of(attrs, opt(1), "axes")?.ok_or_else(|| invalid("Unsqueeze without axes".into()))?;
            v.reshaped(unsqueeze_shape(&v.shape, &axes)?)?
        }
        "Squeeze" => {
            let v = x(0)?;
            let axes = axes_of(attrs, opt(1), "axes")?;
            let removed = squeeze_axes(&v.shape, axes.as_deref())?;
            let shape = v.shape.iter().enumerate().filter(|(a, _)| !removed.contains(a)).map(|(_, &d)| d).collect();
            v.reshaped(shape)?
        }
        "Reshape" => {
            let v = x(0)?;
            let target = x(1)?.as_i64()?;
            let allowzero = opset >= 14 && attrs.int_or("allowzero", 0)? != 0;
            v.reshaped(reshape_target(&v.shape, target, allowzero)?)?
        }
        "Flatten" => {
            let v = x(0)?;
            let axis = flatten_axis(attrs.int_or("axis", 1)?, v.shape.len())?;
            let a: usize = v.shape[..axis].iter().product();
            let b: usize = v.shape[axis..].iter().product();
            v.reshaped(vec![a, b])?
        }
        "Transpose" => {
            let v = x(0)?;
            let perm = match attrs.ints("perm")? {
                Some(p) => norm_axes(&p, v.shape.len())?,
                None => (0..v.shape.len()).rev().collect(),
            };
            v.transpose(&perm)?
        }
        "Cast" => cast(x(0)?, attrs.int("to")?.ok_or_else(|| invalid("Cast without 'to'".into()))?)?,
        "Slice" => {
            let v = x(0)?;
            let axes = opt(3).map(|k| k.as_i64()).transpose()?;
            let steps = opt(4).map(|k| k.as_i64()).transpose()?;
            slice(v, x(1)?.as_i64()?, x(2)?.as_i64()?, axes, steps)?
        }
        "ConstantOfShape" => {
            let shape: Vec<usize> = x(0)?
                .as_i64()?
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| invalid(format!("ConstantOfShape extent {d}"))))
                .collect::<Result<_, _>>()?;
            let n = checked_len(&shape)?;
            let value = attrs.tensor("value")?.unwrap_or_else(|| Konst::f32(vec![1], vec![0.0]));
            let data = match value.data {
                KData::F32(v) => KData::F32(vec![v.first().copied().unwrap_or(0.0); n]),
                KData::I64(v) => KData::I64(vec![v.first().copied().unwrap_or(0); n]),
                KData::Bool(v) => KData::Bool(vec![v.first().copied().unwrap_or(false); n]),
            };
            Konst { shape, data }
        }
        "Expand" => {
            let v = x(0)?;
            let target: Vec<usize> = x(1)?
                .as_i64()?
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| invalid(format!("Expand extent {d}"))))
                .collect::<Result<_, _>>()?;
            let shape = broadcast_shape(&v.shape, &target)?;
            v.broadcast_to(&shape)?
        }
        "Range" => range(x(0)?, x(1)?, x(2)?)?,
        _ => return Ok(None),
    };
    checked_len(&out.shape)?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn k(shape: &[usize], v: &[i64]) -> Konst {
        Konst::i64(shape.to_vec(), v.to_vec())
    }

    #[test]
    fn shape_chain_pieces() {
        // numpy: np.array([[1,2,3],[4,5,6]]).take([1,-1], axis=1)
        let g = gather(&k(&[2, 3], &[1, 2, 3, 4, 5, 6]), &k(&[2], &[1, -1]), 1).unwrap();
        assert_eq!((g.shape.as_slice(), g.data), (&[2usize, 2][..], KData::I64(vec![2, 3, 5, 6])));
        let c = concat(&[&k(&[1], &[1]), &k(&[2], &[-1, 7])], 0).unwrap();
        assert_eq!(c.data, KData::I64(vec![1, -1, 7]));
        assert_eq!(reshape_target(&[1, 8, 2, 2], &[0, -1], false).unwrap(), [1, 32]);
        assert!(reshape_target(&[2, 3], &[3, 0], true).is_err());
        assert_eq!(unsqueeze_shape(&[3, 4], &[0, -1]).unwrap(), [1, 3, 4, 1]);
        assert_eq!(squeeze_axes(&[1, 3, 1], None).unwrap(), [0, 2]);
        assert!(squeeze_axes(&[1, 3, 1], Some(&[1])).is_err());
        // numpy: np.arange(10)[7:1:-2] == [7, 5, 3]
        let s = slice(&k(&[10], &(0..10).collect::<Vec<_>>()), &[7], &[1], None, Some(&[-2])).unwrap();
        assert_eq!(s.data, KData::I64(vec![7, 5, 3]));
        let s = slice(&k(&[2, 3], &[1, 2, 3, 4, 5, 6]), &[1], &[i64::MAX], Some(&[1]), None).unwrap();
        assert_eq!((s.shape.as_slice(), s.data), (&[2usize, 2][..], KData::I64(vec![2, 3, 5, 6])));
    }

    #[test]
    fn slice_with_extreme_steps() -> Result<(), ConvertError> {
        // A fuzz finding: the output length computation overflowed i64.
        // Python: list(range(10))[2::2**63-1] == [2]; list(range(10))[8:-2**63:-2**63] == [8]
        let x = k(&[10], &(0..10).collect::<Vec<_>>());
        assert_eq!(slice(&x, &[2], &[i64::MAX], None, Some(&[i64::MAX]))?.data, KData::I64(vec![2]));
        assert_eq!(slice(&x, &[8], &[i64::MIN], None, Some(&[i64::MIN]))?.data, KData::I64(vec![8]));
        Ok(())
    }

    #[test]
    fn arithmetic_broadcasts() {
        let a = Konst::f32(vec![2, 1], vec![1.0, 2.0]);
        let b = Konst::f32(vec![3], vec![10.0, 20.0, 30.0]);
        let c = binary("Mul", &a, &b).unwrap();
        assert_eq!(c.shape, [2, 3]);
        assert_eq!(c.data, KData::F32(vec![10.0, 20.0, 30.0, 20.0, 40.0, 60.0]));
        assert!(binary("Div", &k(&[1], &[1]), &k(&[1], &[0])).is_err());
    }

    #[test]
    fn comparisons_mod_reductions_tile() -> Result<(), ConvertError> {
        // numpy: np.less([1, 5], 3) == [True, False]
        assert_eq!(compare("Less", &k(&[2], &[1, 5]), &k(&[], &[3]))?.data, KData::Bool(vec![true, false]));
        let t = Konst { shape: vec![2], data: KData::Bool(vec![true, false]) };
        assert_eq!(compare("Xor", &t, &t.clone())?.data, KData::Bool(vec![false, false]));
        // numpy: np.mod([-7, 7], [3, -3]) == [2, -2]; np.fmod([-7, 7], [3, -3]) == [-1, 1]
        assert_eq!(modulo(&k(&[2], &[-7, 7]), &k(&[2], &[3, -3]), false)?.data, KData::I64(vec![2, -2]));
        assert_eq!(modulo(&k(&[2], &[-7, 7]), &k(&[2], &[3, -3]), true)?.data, KData::I64(vec![-1, 1]));
        let x = Konst::f32(vec![2], vec![-7.5, 7.5]);
        assert_eq!(modulo(&x, &Konst::f32(vec![], vec![2.0]), false)?.data, KData::F32(vec![0.5, 1.5]));
        // numpy: np.prod([[1,2,3],[4,5,6]], axis=1) == [6, 120]; .max(axis=0, keepdims=True)
        let m = k(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let p = reduce("ReduceProd", &m, Some(&[1]), false)?;
        assert_eq!((p.shape.as_slice(), p.data), (&[2usize][..], KData::I64(vec![6, 120])));
        let p = reduce("ReduceMax", &m, Some(&[0]), true)?;
        assert_eq!((p.shape.as_slice(), p.data), (&[1usize, 3][..], KData::I64(vec![4, 5, 6])));
        let p = reduce("ReduceMean", &Konst::f32(vec![2, 2], vec![1.0, 2.0, 3.0, 5.0]), None, false)?;
        assert_eq!((p.shape.len(), p.data), (0, KData::F32(vec![2.75])));
        // numpy: np.tile([[1, 2]], (2, 2)) == [[1, 2, 1, 2], [1, 2, 1, 2]]
        let t = tile(&k(&[1, 2], &[1, 2]), &[2, 2])?;
        assert_eq!((t.shape.as_slice(), t.data), (&[2usize, 4][..], KData::I64(vec![1, 2, 1, 2, 1, 2, 1, 2])));
        // numpy: np.round([2.5, -0.5, 1.5]) == [2., -0., 2.]
        let r = unary_f32("Round", &Konst::f32(vec![3], vec![2.5, -0.5, 1.5]))?;
        assert_eq!(r.data, KData::F32(vec![2.0, -0.0, 2.0]));
        let c = clip(&k(&[3], &[-5, 2, 9]), Some(&k(&[], &[0])), Some(&k(&[], &[4])))?;
        assert_eq!(c.data, KData::I64(vec![0, 2, 4]));
        Ok(())
    }

    #[test]
    fn folded_ops_list_matches_fold() {
        // Every listed op is one `fold` evaluates (without inputs it is an error, not `None`),
        // and an unlisted one is not.
        let node = crate::onnx::pb::NodeProto::default();
        let attrs = Attrs::new(&node);
        for op in FOLDED_OPS {
            assert!(!matches!(fold(op, &[], &attrs, 17), Ok(None)), "{op}");
        }
        assert!(matches!(fold("Erf", &[], &attrs, 17), Ok(None)));
    }
}
