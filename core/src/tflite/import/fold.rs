//! Shape computations folded at import: models converted with a dynamic batch (or with
//! `tf.shape`-based reshapes) compute reshape targets at run time with SHAPE, STRIDED_SLICE,
//! PACK, GATHER, REDUCE_PROD, CONCATENATION, CAST and integer arithmetic. Every graph shape is
//! static (a dynamic batch is 1), so these operators have constant results: each one whose
//! operands are all constants (or, for SHAPE, any tensor) is evaluated here and its output
//! becomes a constant; a RESHAPE whose shape operand was computed so gets that shape, and the
//! tensors after it whose declared extents are dynamic get the shapes the graph infers.

use super::*;

const CAST: i32 = fb::BuiltinOperator::Cast as i32;
const DENSIFY: i32 = fb::BuiltinOperator::Densify as i32;
const DIV: i32 = fb::BuiltinOperator::Div as i32;
const EXPAND_DIMS: i32 = fb::BuiltinOperator::ExpandDims as i32;
const FLOOR_DIV: i32 = fb::BuiltinOperator::FloorDiv as i32;
const GATHER: i32 = fb::BuiltinOperator::Gather as i32;
const PACK: i32 = fb::BuiltinOperator::Pack as i32;
const REDUCE_PROD: i32 = fb::BuiltinOperator::ReduceProd as i32;
const SHAPE: i32 = fb::BuiltinOperator::Shape as i32;
const STRIDED_SLICE: i32 = fb::BuiltinOperator::StridedSlice as i32;

/// Operators converted only by folding (they have no graph op): accepted in pass 1, make no
/// graph tensors in pass 2, and are an error in pass 3 if an operand is not constant. When one
/// of them gains a graph op (an arm in `ops.rs` or `ops_movement.rs`), move it to
/// [`FOLDED_WHEN_CONSTANT`].
pub(super) const FOLD_ONLY: [i32; 7] = [CAST, DENSIFY, EXPAND_DIMS, FLOOR_DIV, PACK, REDUCE_PROD, SHAPE];

/// Operators with a graph op that are still folded when every operand is a constant integer
/// tensor (the shape path); otherwise converted to a node.
pub(super) const FOLDED_WHEN_CONSTANT: [i32; 9] =
    [ADD, SUB, MUL, DIV, CONCATENATION, RESHAPE, SQUEEZE, STRIDED_SLICE, GATHER];

/// A folded constant: integers (the shape path) or floats, row-major.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Folded {
    pub shape: Vec<usize>,
    pub ints: Option<Vec<i64>>,
    pub floats: Option<Vec<f32>>,
}

impl Folded {
    fn ints(shape: Vec<usize>, v: Vec<i64>) -> Self {
        Self { shape, ints: Some(v), floats: None }
    }
    fn len(&self) -> usize {
        self.ints.as_ref().map_or_else(|| self.floats.as_ref().map_or(0, Vec::len), Vec::len)
    }
    fn as_ints(&self) -> Result<&[i64], ConvertError> {
        self.ints
            .as_deref()
            .ok_or_else(|| err(Kind::Unsupported, "a float value on the shape path (integers expected)"))
    }
    /// The graph constant of type `dt`.
    pub(super) fn data(&self, dt: DType) -> Option<ConstData> {
        match (dt, &self.ints, &self.floats) {
            (DType::I32, Some(v), _) => Some(ConstData::I32(v.iter().map(|&x| x as i32).collect())),
            (DType::I64, Some(v), _) => Some(ConstData::I64(v.clone())),
            (DType::I8, Some(v), _) => Some(ConstData::I8(v.iter().map(|&x| x as i8).collect())),
            (DType::I16, Some(v), _) => Some(ConstData::I16(v.iter().map(|&x| x as i16).collect())),
            (DType::F32, _, Some(v)) => Some(ConstData::F32(v.clone())),
            (DType::F32, Some(v), None) => Some(ConstData::F32(v.iter().map(|&x| x as f32).collect())),
            // float16 constants (a DENSIFY of sparse f16 weights): exact, the values came from f16.
            (DType::F16, _, Some(v)) => {
                Some(ConstData::F16(v.iter().map(|&x| crate::quant::minifloat::f32_to_f16_bits(x)).collect()))
            }
            _ => None,
        }
    }
}

fn elements(shape: &[usize]) -> Result<usize, ConvertError> {
    num_elements(shape)
        .filter(|&n| n <= 1 << 20)
        .ok_or_else(|| err(Kind::Unsupported, format!("a folded shape value of shape {shape:?} is too large")))
}

/// Elementwise integer arithmetic, one operand possibly a single value (what shape paths do).
fn arith(code: i32, a: &Folded, b: &Folded) -> Result<Folded, ConvertError> {
    let (x, y) = (a.as_ints()?, b.as_ints()?);
    let (shape, n) = match (x.len(), y.len()) {
        (p, q) if p == q && a.shape == b.shape => (a.shape.clone(), p),
        (1, q) => (b.shape.clone(), q),
        (p, 1) => (a.shape.clone(), p),
        _ => return Err(malformed(format!("operands of shapes {:?} and {:?} do not broadcast", a.shape, b.shape))),
    };
    let at = |v: &[i64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (p, q) = (at(x, i), at(y, i));
        out.push(match code {
            ADD => p.wrapping_add(q),
            SUB => p.wrapping_sub(q),
            MUL => p.wrapping_mul(q),
            FLOOR_DIV => {
                let d = p.checked_div(q).ok_or_else(|| malformed(format!("integer division {p} / {q}")))?;
                if (p % q != 0) && ((p < 0) != (q < 0)) { d - 1 } else { d }
            }
            _ => p.checked_div(q).ok_or_else(|| malformed(format!("integer division {p} / {q}")))?,
        });
    }
    Ok(Folded::ints(shape, out))
}

/// TFLite STRIDED_SLICE (begin/end/shrink-axis masks; no ellipsis or new axes).
fn strided_slice(
    x: &Folded,
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    masks: (i32, i32, i32),
) -> Result<Folded, ConvertError> {
    let (begin_mask, end_mask, shrink) = masks;
    let v = x.as_ints()?;
    let r = x.shape.len();
    if begin.len() > r || end.len() != begin.len() || strides.len() != begin.len() {
        return Err(malformed(format!("STRIDED_SLICE of rank {r} with {} begin values", begin.len())));
    }
    let mut starts = vec![0i64; r];
    let mut steps = vec![1i64; r];
    let mut extents = x.shape.clone();
    let mut out_shape = Vec::new();
    for a in 0..r {
        let d = x.shape[a] as i64;
        if a >= begin.len() {
            out_shape.push(x.shape[a]);
            continue;
        }
        let s = strides[a];
        if s == 0 {
            return Err(malformed("STRIDED_SLICE stride 0"));
        }
        let norm = |p: i64| if p < 0 { p + d } else { p };
        let (lo, hi) = if s > 0 { (0, d) } else { (-1, d - 1) };
        let mut b =
            if begin_mask & (1 << a) != 0 { if s > 0 { 0 } else { d - 1 } } else { norm(begin[a]).clamp(lo, hi) };
        let mut e = if end_mask & (1 << a) != 0 { if s > 0 { d } else { -1 } } else { norm(end[a]).clamp(lo, hi) };
        let mut step = s;
        if shrink & (1 << a) != 0 {
            b = norm(begin[a]);
            if !(0..d).contains(&b) {
                return Err(malformed(format!("STRIDED_SLICE index {} out of range for extent {d}", begin[a])));
            }
            e = b + 1;
            step = 1;
        }
        let len = if step > 0 { (e - b + step - 1).max(0) / step } else { (b - e - step - 1).max(0) / (-step) };
        starts[a] = b;
        steps[a] = step;
        extents[a] = len as usize;
        if shrink & (1 << a) == 0 {
            out_shape.push(len as usize);
        }
    }
    let n = elements(&extents)?;
    let strides_in = crate::layout::strides(&x.shape);
    let mut out = Vec::with_capacity(n);
    let mut mi = vec![0usize; r];
    for _ in 0..n {
        let mut off = 0i64;
        for a in 0..r {
            off += (starts[a] + steps[a] * mi[a] as i64) * strides_in[a] as i64;
        }
        out.push(v.get(off as usize).copied().ok_or_else(|| malformed("STRIDED_SLICE index out of range"))?);
        for a in (0..r).rev() {
            mi[a] += 1;
            if mi[a] < extents[a] {
                break;
            }
            mi[a] = 0;
        }
    }
    Ok(Folded::ints(out_shape, out))
}

/// Stacks `parts` (same shape) on a new `axis` (PACK), or joins them on an existing one
/// (CONCATENATION).
fn join(parts: &[&Folded], axis: i64, new_axis: bool) -> Result<Folded, ConvertError> {
    if parts.is_empty() {
        return Err(malformed("nothing to join"));
    }
    let shapes: Vec<Vec<usize>> = parts
        .iter()
        .map(|p| {
            if new_axis {
                let a = super::axis(axis, p.shape.len() + 1, "PACK").unwrap_or(0);
                let mut s = p.shape.clone();
                s.insert(a, 1);
                s
            } else {
                p.shape.clone()
            }
        })
        .collect();
    let r = shapes[0].len();
    let a = super::axis(axis, r, if new_axis { "PACK" } else { "CONCATENATION" })?;
    let mut out_shape = shapes[0].clone();
    out_shape[a] = 0;
    for s in &shapes {
        if s.len() != r || s.iter().zip(&shapes[0]).enumerate().any(|(k, (x, y))| k != a && x != y) {
            return Err(malformed(format!("cannot join shapes {:?} and {s:?} on axis {a}", shapes[0])));
        }
        out_shape[a] += s[a];
    }
    let outer: usize = out_shape[..a].iter().product();
    let mut out = Vec::with_capacity(elements(&out_shape)?);
    for o in 0..outer {
        for (p, s) in parts.iter().zip(&shapes) {
            let chunk: usize = s[a..].iter().product();
            let v = p.as_ints()?;
            out.extend_from_slice(v.get(o * chunk..(o + 1) * chunk).ok_or_else(|| malformed("join out of range"))?);
        }
    }
    Ok(Folded::ints(out_shape, out))
}

fn gather(x: &Folded, idx: &Folded, axis: i64) -> Result<Folded, ConvertError> {
    let v = x.as_ints()?;
    let a = super::axis(axis, x.shape.len(), "GATHER")?;
    let extent = x.shape[a];
    let outer: usize = x.shape[..a].iter().product();
    let inner: usize = x.shape[a + 1..].iter().product();
    let mut shape = x.shape[..a].to_vec();
    shape.extend_from_slice(&idx.shape);
    shape.extend_from_slice(&x.shape[a + 1..]);
    let mut out = Vec::with_capacity(elements(&shape)?);
    for o in 0..outer {
        for &i in idx.as_ints()? {
            let j = usize::try_from(if i < 0 { i + extent as i64 } else { i })
                .ok()
                .filter(|&j| j < extent)
                .ok_or_else(|| malformed(format!("GATHER index {i} out of range for extent {extent}")))?;
            let start = (o * extent + j) * inner;
            out.extend_from_slice(v.get(start..start + inner).ok_or_else(|| malformed("GATHER out of range"))?);
        }
    }
    Ok(Folded::ints(shape, out))
}

fn reduce_prod(x: &Folded, axes: &[i64], keep: bool) -> Result<Folded, ConvertError> {
    let v = x.as_ints()?;
    let r = x.shape.len();
    let mut red = Vec::new();
    for &a in axes {
        red.push(super::axis(a, r, "REDUCE_PROD")?);
    }
    let full: Vec<usize> = (0..r).map(|a| if red.contains(&a) { 1 } else { x.shape[a] }).collect();
    let n = elements(&full)?;
    let st = crate::layout::strides(&full);
    let mut out = vec![1i64; n];
    let mut mi = vec![0usize; r];
    for &p in v {
        let d: usize = (0..r).map(|a| if red.contains(&a) { 0 } else { mi[a] * st[a] }).sum();
        if let Some(o) = out.get_mut(d) {
            *o = o.wrapping_mul(p);
        }
        for a in (0..r).rev() {
            mi[a] += 1;
            if mi[a] < x.shape[a] {
                break;
            }
            mi[a] = 0;
        }
    }
    let shape = if keep { full } else { (0..r).filter(|a| !red.contains(a)).map(|a| x.shape[a]).collect() };
    Ok(Folded::ints(shape, out))
}

impl Importer<'_> {
    /// The constant value of TFLite tensor `i`: folded earlier, or integer/float constant data.
    pub(super) fn folded(&self, i: usize) -> Result<Option<Folded>, ConvertError> {
        if let Some(Some(k)) = self.known.get(i) {
            return Ok(Some(k.clone()));
        }
        let t = self.tensor_ref(i)?;
        if t.sparsity().fb()?.is_some() {
            // A sparse constant (DENSIFY's operand): its dense values.
            let dense = self.convert_tensor(i)?;
            let data = dense.data.ok_or_else(|| malformed("a sparse tensor without data"))?;
            return Ok(Some(match data.to_i64_vec() {
                Some(v) => Folded::ints(dense.shape, v),
                None => match data {
                    ConstData::F32(v) => Folded { shape: dense.shape, ints: None, floats: Some(v) },
                    // float16 weights (DENSIFY → DEQUANTIZE): their exact f32 values.
                    ConstData::F16(h) => Folded {
                        shape: dense.shape,
                        ints: None,
                        floats: Some(h.iter().map(|&v| crate::float::f16_to_f32(v)).collect()),
                    },
                    other => {
                        return Err(err(Kind::UnsupportedDType, format!("a sparse constant of {:?}", other.dtype())));
                    }
                },
            }));
        }
        let Some((bytes, at)) = self.buffer_bytes(i, &t)? else { return Ok(None) };
        let dt = dtype(t.type_().fb()?)?;
        let shape: Vec<usize> =
            t.shape().fb()?.map(|v| v.iter().map(|d| usize::try_from(d).unwrap_or(0)).collect()).unwrap_or_default();
        let data =
            ConstData::from_le_bytes(dt, bytes).ok_or_else(|| malformed("constant data length").at_offset(at))?;
        if let Some(v) = data.to_i64_vec() {
            return Ok(Some(Folded::ints(shape, v)));
        }
        match data {
            ConstData::F32(v) => Ok(Some(Folded { shape, ints: None, floats: Some(v) })),
            _ => Ok(None),
        }
    }

    /// Evaluates `raw` if it is a shape computation on constants: `Ok(None)` if it is not one
    /// (the op is converted to a node); an error for a fold-only operator on a run-time value.
    pub(super) fn try_fold(&self, raw: &RawOp<'_>) -> Result<Option<Folded>, ConvertError> {
        let foldable = FOLD_ONLY.contains(&raw.code) || FOLDED_WHEN_CONSTANT.contains(&raw.code);
        if !foldable {
            return Ok(None);
        }
        if raw.code == SHAPE {
            let x = raw.input(0).ok_or_else(|| malformed("SHAPE has no input"))?;
            let s: Vec<i64> = match self.folded(x)? {
                Some(k) => k.shape.iter().map(|&d| d as i64).collect(),
                None => self.shape(x)?.iter().map(|&d| d as i64).collect(),
            };
            return Ok(Some(Folded::ints(vec![s.len()], s)));
        }
        // Every operand constant?
        let mut ops = Vec::with_capacity(raw.inputs.len());
        for (k, i) in raw.inputs.iter().enumerate() {
            match i {
                None => ops.push(None),
                Some(i) => match self.folded(*i)? {
                    Some(v) => ops.push(Some(v)),
                    None if FOLD_ONLY.contains(&raw.code) => {
                        return Err(err(
                            Kind::Unsupported,
                            format!(
                                "{} is converted only when it computes a constant (a shape), but its input {k} \
                                 ({:?}) is computed at run time: a value the model only knows when it runs",
                                raw.name,
                                self.tensor_name(*i)
                            ),
                        )
                        .with_tensor(*i, self.tensor_name(*i)));
                    }
                    None => return Ok(None),
                },
            }
        }
        let x = |k: usize| {
            ops.get(k).and_then(Option::as_ref).ok_or_else(|| malformed(format!("{} has no input {k}", raw.name)))
        };
        let out = match raw.code {
            ADD | SUB | MUL | DIV | FLOOR_DIV => {
                if x(0)?.ints.is_none() {
                    return Ok(None); // float arithmetic on constants: the graph's passes fold it
                }
                arith(raw.code, x(0)?, x(1)?)?
            }
            STRIDED_SLICE => {
                let o = required_options!(raw, StridedSliceOptions);
                if o.ellipsis_mask().fb()? != 0 || o.new_axis_mask().fb()? != 0 {
                    return Err(err(Kind::Unsupported, "STRIDED_SLICE with an ellipsis or new-axis mask on constants"));
                }
                let masks = (o.begin_mask().fb()?, o.end_mask().fb()?, o.shrink_axis_mask().fb()?);
                strided_slice(x(0)?, x(1)?.as_ints()?, x(2)?.as_ints()?, x(3)?.as_ints()?, masks)?
            }
            PACK => {
                let o = required_options!(raw, PackOptions);
                let parts: Vec<&Folded> = ops.iter().flatten().collect();
                join(&parts, i64::from(o.axis().fb()?), true)?
            }
            CONCATENATION => {
                if ops.iter().flatten().any(|p| p.ints.is_none()) {
                    return Ok(None); // float data: a node
                }
                let o = required_options!(raw, ConcatenationOptions);
                let parts: Vec<&Folded> = ops.iter().flatten().collect();
                join(&parts, i64::from(o.axis().fb()?), false)?
            }
            GATHER => {
                let (a, batch) = match options!(raw, GatherOptions) {
                    Some(o) => (o.axis().fb()?, o.batch_dims().fb()?),
                    None => (0, 0),
                };
                if batch != 0 {
                    return Err(err(Kind::Unsupported, format!("GATHER with batch_dims {batch} on constants")));
                }
                gather(x(0)?, x(1)?, i64::from(a))?
            }
            REDUCE_PROD => {
                let keep = match options!(raw, ReducerOptions) {
                    Some(o) => o.keep_dims().fb()?,
                    None => false,
                };
                reduce_prod(x(0)?, x(1)?.as_ints()?, keep)?
            }
            CAST => {
                let out = raw.outputs.first().copied().ok_or_else(|| malformed("CAST has no output"))?;
                let to = dtype(self.tensor_ref(out)?.type_().fb()?)?;
                let v = x(0)?;
                match (to, &v.ints, &v.floats) {
                    (DType::F32, Some(i), _) => Folded {
                        shape: v.shape.clone(),
                        ints: None,
                        floats: Some(i.iter().map(|&p| p as f32).collect()),
                    },
                    (DType::I32 | DType::I64, _, Some(f)) => {
                        Folded::ints(v.shape.clone(), f.iter().map(|&p| p as i64).collect())
                    }
                    _ => v.clone(),
                }
            }
            DENSIFY => x(0)?.clone(),
            RESHAPE | SQUEEZE | EXPAND_DIMS => {
                let v = x(0)?;
                if v.ints.is_none() && raw.code != EXPAND_DIMS {
                    return Ok(None); // float data: a node
                }
                let out = raw.outputs.first().copied().ok_or_else(|| malformed("no output"))?;
                let shape: Vec<usize> = match raw.code {
                    RESHAPE => match ops.get(1).and_then(Option::as_ref) {
                        Some(s) => reshape_target(&v.shape, s.as_ints()?)?,
                        None => self.shape(out)?.to_vec(),
                    },
                    EXPAND_DIMS => {
                        let a = x(1)?.as_ints()?.first().copied().unwrap_or(0);
                        let mut s = v.shape.clone();
                        s.insert(super::axis(a, s.len() + 1, "EXPAND_DIMS")?, 1);
                        s
                    }
                    _ => self.shape(out)?.to_vec(),
                };
                if num_elements(&shape) != Some(v.len()) {
                    return Err(malformed(format!("cannot reshape {:?} to {shape:?}", v.shape)));
                }
                Folded { shape, ..v.clone() }
            }
            _ => return Ok(None),
        };
        elements(&out.shape)?;
        Ok(Some(out))
    }
}

/// A TFLite/TF reshape target resolved for `input` (one `-1` inferred).
pub(super) fn reshape_target(input: &[usize], target: &[i64]) -> Result<Vec<usize>, ConvertError> {
    let total = num_elements(input).ok_or_else(|| malformed(format!("shape {input:?} overflows")))?;
    let mut out = Vec::with_capacity(target.len());
    let mut infer = None;
    for (k, &d) in target.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(k);
                out.push(1);
            }
            d if d >= 0 => out.push(d as usize),
            _ => return Err(malformed(format!("reshape target {target:?} is invalid"))),
        }
    }
    let known = num_elements(&out).unwrap_or(0);
    if let Some(k) = infer {
        if known == 0 || total % known != 0 {
            return Err(malformed(format!("cannot reshape {input:?} to {target:?}")));
        }
        out[k] = total / known;
    } else if known != total {
        return Err(malformed(format!("cannot reshape {input:?} to {target:?}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_path_pieces() -> Result<(), ConvertError> {
        // tf.strided_slice([1, 8, 8, 4], [0], [1], [1], shrink_axis_mask=1) == 1
        let s = Folded::ints(vec![4], vec![1, 8, 8, 4]);
        let r = strided_slice(&s, &[0], &[1], &[1], (0, 0, 1))?;
        assert_eq!((r.shape.len(), r.ints), (0, Some(vec![1])));
        // [1:] with end_mask; [::-1]
        assert_eq!(strided_slice(&s, &[1], &[0], &[1], (0, 1, 0))?.ints, Some(vec![8, 8, 4]));
        assert_eq!(strided_slice(&s, &[0], &[0], &[-1], (1, 1, 0))?.ints, Some(vec![4, 8, 8, 1]));
        // tf.stack([1, 64, 4])
        let one = |v: i64| Folded::ints(vec![], vec![v]);
        let p = join(&[&one(1), &one(64), &one(4)], 0, true)?;
        assert_eq!((p.shape, p.ints), (vec![3], Some(vec![1, 64, 4])));
        // tf.gather([1, 64, 5], [1, 2]); tf.reduce_prod(..., 0)
        let g = gather(&Folded::ints(vec![3], vec![1, 64, 5]), &Folded::ints(vec![2], vec![1, 2]), 0)?;
        assert_eq!(g.ints, Some(vec![64, 5]));
        assert_eq!(reduce_prod(&g, &[0], false)?.ints, Some(vec![320]));
        // tf.math.floordiv(-7, 2) == -4
        assert_eq!(arith(FLOOR_DIV, &one(-7), &one(2))?.ints, Some(vec![-4]));
        assert_eq!(reshape_target(&[1, 64, 5], &[1, -1])?, [1, 320]);
        Ok(())
    }
}
