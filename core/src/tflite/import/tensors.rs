//! Pass 2: TFLite tensors → graph tensors (shape, type, quantization, constant data), and the
//! tensor lookups the op conversion uses.

use super::*;

impl<'a> Importer<'a> {
    pub(super) fn tensor_ref(&self, i: usize) -> Result<fb::TensorRef<'a>, ConvertError> {
        self.tensors.get(i).ok_or_else(|| malformed(format!("tensor {i} out of range")))?.fb()
    }

    pub(super) fn tensor_name(&self, i: usize) -> String {
        self.tensor_ref(i).ok().and_then(|t| t.name().ok().flatten()).unwrap_or("").to_string()
    }

    /// The constant bytes of tensor `i` and their offset in the file, if it has any.
    pub(super) fn buffer_bytes(
        &self,
        i: usize,
        t: &fb::TensorRef<'a>,
    ) -> Result<Option<(&'a [u8], usize)>, ConvertError> {
        let index = t.buffer().fb()? as usize;
        let Some(buffers) = self.buffers else {
            return if index == 0 {
                Ok(None)
            } else {
                Err(malformed(format!("buffer {index} but the model has no buffers")))
            };
        };
        let b = buffers
            .get(index)
            .ok_or_else(|| malformed(format!("buffer {index} out of range ({} buffers)", buffers.len())))?
            .fb()?;
        let (offset, size) = (b.offset().fb()?, b.size().fb()?);
        // Schema 3c: data stored after the flatbuffer; offsets 0 and 1 mean "not used".
        if offset > 1 {
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            let end = usize::try_from(size).ok().and_then(|s| start.checked_add(s));
            return match end.and_then(|end| self.bytes.get(start..end)) {
                Some(d) => Ok(Some((d, start))),
                None => Err(err(
                    Kind::Truncated,
                    format!(
                        "buffer {index} of tensor {i} is {size} bytes at offset {offset}, past the end of the {}-byte file",
                        self.bytes.len()
                    ),
                )
                .at_offset(start.min(self.bytes.len()))),
            };
        }
        match b.data().fb()? {
            Some(d) if !d.is_empty() => {
                let at = (d.as_ptr() as usize).wrapping_sub(self.bytes.as_ptr() as usize);
                Ok(Some((d, at)))
            }
            _ => Ok(None),
        }
    }

    /// True if tensor `i` declares a dynamic extent (the batch axis included: an operator's
    /// output batch need not be the model's, e.g. a fully-connected layer on reshaped rows).
    pub(super) fn has_dynamic_extent(&self, i: usize) -> Result<bool, ConvertError> {
        let t = self.tensor_ref(i)?;
        let dims: Vec<i32> = t.shape().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let signature: Vec<i32> = t.shape_signature().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        Ok(dims
            .iter()
            .enumerate()
            .any(|(a, &d)| d < 0 || (signature.len() == dims.len() && signature.get(a).is_some_and(|&s| s < 0))))
    }

    pub(super) fn convert_tensor(&self, i: usize) -> Result<Tensor, ConvertError> {
        let name = self.tensor_name(i);
        self.convert_tensor_inner(i, &name)
            .map_err(|e| if e.tensor_index().is_some() { e } else { e.with_tensor(i, name) })
    }

    pub(super) fn convert_tensor_inner(&self, i: usize, name: &str) -> Result<Tensor, ConvertError> {
        let t = self.tensor_ref(i)?;
        let dims: Vec<i32> = t.shape().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let signature: Vec<i32> = t.shape_signature().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let mut shape = Vec::with_capacity(dims.len());
        for (a, &d) in dims.iter().enumerate() {
            let dynamic = d < 0 || (signature.len() == dims.len() && signature.get(a).is_some_and(|&s| s < 0));
            if dynamic {
                if self.produced.get(i).copied().unwrap_or(false) {
                    // Written by an operator: the extent is inferred in pass 3 (`fold`).
                    shape.push(usize::try_from(d).ok().filter(|&d| d > 0).unwrap_or(1));
                } else if a == 0 {
                    shape.push(1); // dynamic batch
                } else if self.produced.get(i).copied().unwrap_or(false) {
                    // Written by an operator: the extent is inferred in pass 3 (`fold`).
                    shape.push(usize::try_from(d).ok().filter(|&d| d > 0).unwrap_or(1));
                } else {
                    return Err(err(
                        Kind::Unsupported,
                        format!(
                            "axis {a} of shape {dims:?} (signature {signature:?}) is dynamic; only the batch axis may be"
                        ),
                    ));
                }
            } else {
                shape.push(d as usize);
            }
        }
        if num_elements(&shape).is_none() {
            return Err(malformed(format!("shape {shape:?} overflows")));
        }
        // Refused before anything is allocated for it (a constant's data must also match, below).
        if num_elements(&shape).is_some_and(|n| n > crate::float::MAX_TENSOR_ELEMENTS) {
            return Err(err(
                Kind::Unsupported,
                format!("shape {shape:?} has more than 2^26 elements (the largest tensor supported)"),
            ));
        }
        let dt = match t.type_() {
            Ok(ty) => dtype(ty)?,
            Err(planus::Error { error_kind: planus::errors::ErrorKind::UnknownEnumTag { source }, .. }) => {
                return Err(err(Kind::UnsupportedDType, format!("tensor type {} is unknown to schema 3", source.tag)));
            }
            Err(e) => return Err(fb_error(e)),
        };
        let sparsity = t.sparsity().fb()?;
        let quant = self.convert_quant(&t, &shape)?;
        let dense; // a sparse constant's bytes, densified
        let data = match self.buffer_bytes(i, &t)? {
            None if sparsity.is_some() => {
                return Err(err(Kind::Unsupported, "a sparse tensor without constant data"));
            }
            None => None,
            Some((bytes, at)) if dt == DType::I4 => {
                if sparsity.is_some() {
                    return Err(err(Kind::Unsupported, "a sparse int4 tensor"));
                }
                let count = num_elements(&shape).unwrap_or(0);
                let data = ConstData::from_packed_i4(bytes, count).ok_or_else(|| {
                    malformed(format!(
                        "int4 constant data is {} bytes, shape {shape:?} packed two per byte needs {}",
                        bytes.len(),
                        crate::kernels::int4::packed_len(count)
                    ))
                    .at_offset(at)
                })?;
                Some(data)
            }
            Some((bytes, at)) => {
                let bytes = match &sparsity {
                    Some(sp) => {
                        dense = super::sparse::densify(sp, &shape, dt.size(), bytes).map_err(|e| e.at_offset(at))?;
                        dense.as_slice()
                    }
                    None => bytes,
                };
                let needed = num_elements(&shape).and_then(|n| n.checked_mul(dt.size()));
                if needed != Some(bytes.len()) {
                    return Err(malformed(format!(
                        "constant data is {} bytes, shape {shape:?} of {dt} needs {}",
                        bytes.len(),
                        needed.map_or(String::from("more than usize::MAX"), |n| n.to_string())
                    ))
                    .at_offset(at));
                }
                Some(
                    ConstData::from_le_bytes(dt, bytes)
                        .ok_or_else(|| malformed("constant data length").at_offset(at))?,
                )
            }
        };
        Ok(Tensor { name: name.to_string(), shape, dtype: dt, quant, data })
    }

    pub(super) fn convert_quant(
        &self,
        t: &fb::TensorRef<'a>,
        shape: &[usize],
    ) -> Result<Option<TensorQuant>, ConvertError> {
        let Some(q) = t.quantization().fb()? else { return Ok(None) };
        let scales: Vec<f32> = q.scale().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        let zps: Vec<i64> = q.zero_point().fb()?.map(|v| v.iter().collect()).unwrap_or_default();
        if q.details().fb()?.is_some() {
            return Err(err(Kind::UnsupportedQuantization, "custom quantization details are not supported"));
        }
        if scales.is_empty() {
            // Float tensors often carry an empty table (or only min/max): no quantization.
            return Ok(None);
        }
        if zps.len() != scales.len() {
            return Err(err(
                Kind::UnsupportedQuantization,
                format!("{} scales but {} zero points", scales.len(), zps.len()),
            ));
        }
        if let Some((k, s)) = scales.iter().enumerate().find(|(_, s)| !(s.is_finite() && **s > 0.0)) {
            return Err(err(Kind::UnsupportedQuantization, format!("scale {k} is {s}, must be finite and > 0")));
        }
        let mut zero_points = Vec::with_capacity(zps.len());
        for (k, &z) in zps.iter().enumerate() {
            zero_points.push(
                i32::try_from(z)
                    .map_err(|_| err(Kind::UnsupportedQuantization, format!("zero point {k} is {z}, outside i32")))?,
            );
        }
        if scales.len() == 1 {
            return Ok(Some(TensorQuant { scales, zero_points, axis: None }));
        }
        let dim = q.quantized_dimension().fb()?;
        match usize::try_from(dim).ok().and_then(|d| shape.get(d).map(|&e| (d, e))) {
            Some((d, extent)) if extent == scales.len() => Ok(Some(TensorQuant { scales, zero_points, axis: Some(d) })),
            _ => Err(err(
                Kind::UnsupportedQuantization,
                format!("{} per-channel scales on quantized_dimension {dim} of shape {shape:?}", scales.len()),
            )),
        }
    }

    /// The integer values of a constant operand that the graph takes as an attribute.
    pub(super) fn const_ints(&self, i: usize, what: &str) -> Result<Vec<i64>, ConvertError> {
        if let Some(Some(k)) = self.known.get(i) {
            if let Some(v) = &k.ints {
                return Ok(v.clone());
            }
        }
        let name = self.tensor_name(i);
        let t = self.tensor_ref(i)?;
        let bytes = self.buffer_bytes(i, &t)?;
        let dt = dtype(t.type_().fb()?)?;
        let values = match bytes {
            Some((b, at)) => ConstData::from_le_bytes(dt, b)
                .and_then(|d| d.to_i64_vec())
                .ok_or_else(|| malformed(format!("{what} must be integer constant data")).at_offset(at))?,
            None => {
                return Err(err(
                    Kind::Unsupported,
                    format!("{what} must be a constant tensor (dynamic {what} is not supported)"),
                )
                .with_tensor(i, name));
            }
        };
        Ok(values)
    }

    pub(super) fn id(&self, i: usize) -> Result<TensorId, ConvertError> {
        self.map.get(i).copied().flatten().ok_or_else(|| malformed(format!("tensor {i} was not converted")))
    }

    pub(super) fn shape(&self, i: usize) -> Result<&[usize], ConvertError> {
        let id = self.id(i)?;
        self.graph.tensor(id).map(|t| t.shape.as_slice()).ok_or_else(|| malformed(format!("tensor {i} missing")))
    }

    pub(super) fn input_rank(&self, raw: &RawOp<'_>) -> Result<usize, ConvertError> {
        let x = raw.input(0).ok_or_else(|| malformed(format!("{} has no input 0", raw.name)))?;
        Ok(self.shape(x)?.len())
    }

    /// Records the folded value of `raw`'s output; a graph tensor made for it becomes that
    /// constant.
    pub(super) fn set_folded(&mut self, raw: &RawOp<'_>, k: fold::Folded) -> Result<(), ConvertError> {
        let o = raw.outputs.first().copied().ok_or_else(|| malformed(format!("{} has no output", raw.name)))?;
        if let Some(id) = self.map.get(o).copied().flatten() {
            let t = self.graph.tensor_mut(id).ok_or_else(|| malformed(format!("tensor {o} missing")))?;
            t.data = Some(k.data(t.dtype).ok_or_else(|| {
                err(Kind::UnsupportedDType, format!("a folded value of {} stored as {}", raw.name, t.dtype))
            })?);
            t.shape = k.shape.clone();
        }
        if let Some(slot) = self.known.get_mut(o) {
            *slot = Some(k);
        }
        Ok(())
    }

    /// A RESHAPE whose output extents are dynamic and whose shape operand was folded: the
    /// output tensor takes the folded target.
    pub(super) fn fix_reshape_output(&mut self, raw: &RawOp<'_>) -> Result<(), ConvertError> {
        let (Some(&out), Some(s), Some(x)) = (raw.outputs.first(), raw.input(1), raw.input(0)) else { return Ok(()) };
        if raw.code != RESHAPE || !self.dynamic.get(out).copied().unwrap_or(false) {
            return Ok(());
        }
        let Some(target) = self.folded(s)? else {
            return Err(err(
                Kind::Unsupported,
                format!(
                    "the shape operand {:?} of RESHAPE is computed at run time and the output {:?} has dynamic extents",
                    self.tensor_name(s),
                    self.tensor_name(out)
                ),
            )
            .with_tensor(s, self.tensor_name(s)));
        };
        let shape = fold::reshape_target(self.shape(x)?, target.ints.as_deref().unwrap_or(&[]))?;
        let id = self.id(out)?;
        if let Some(t) = self.graph.tensor_mut(id) {
            t.shape = shape;
        }
        Ok(())
    }

    /// Outputs of `node` declared with dynamic extents take the shapes the graph infers.
    pub(super) fn fix_dynamic_outputs(&mut self, raw: &RawOp<'_>, node: &Node) -> Result<(), ConvertError> {
        if !raw.outputs.iter().any(|&o| self.dynamic.get(o).copied().unwrap_or(false)) {
            return Ok(());
        }
        let shapes = self.graph.infer_output_shapes(node)?;
        // By graph id: a split's nodes each write one of the operator's outputs.
        for (&id, shape) in node.outputs.iter().zip(shapes) {
            let dynamic = raw
                .outputs
                .iter()
                .any(|&o| self.dynamic.get(o).copied().unwrap_or(false) && self.id(o).ok() == Some(id));
            if dynamic {
                if let Some(t) = self.graph.tensor_mut(id) {
                    t.shape = shape;
                }
            }
        }
        Ok(())
    }
}
