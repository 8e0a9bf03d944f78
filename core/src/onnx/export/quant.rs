//! Quantize/dequantize pairs: scales and zero points, activations, constants and weights as
//! initializers + `DequantizeLinear`.

use super::*;

impl<'g> Exporter<'g> {
    /// A zero-point initializer of `code` with `n` zeros (shape `[]` when per-tensor).
    pub(super) fn zero_points(&mut self, base: &str, code: i32, zps: &[i32], per_axis: bool) -> String {
        let name = self.fresh(&format!("{base}/zero_point"));
        let raw: Vec<u8> = match code {
            dt::INT8 => zps.iter().map(|&z| z as i8 as u8).collect(),
            dt::INT16 => zps.iter().flat_map(|&z| (z as i16).to_le_bytes()).collect(),
            dt::INT4 => int4_raw(&zps.iter().map(|&z| z as i8).collect::<Vec<i8>>()),
            _ => le32(zps),
        };
        let shape = if per_axis { vec![zps.len()] } else { vec![] };
        self.inits.push(tensor_proto(&name, &shape, code, raw));
        name
    }

    pub(super) fn scales(&mut self, base: &str, scales: &[f32], per_axis: bool) -> String {
        let name = self.fresh(&format!("{base}/scale"));
        let shape = if per_axis { vec![scales.len()] } else { vec![] };
        self.inits.push(tensor_proto(&name, &shape, dt::FLOAT, le_f32(scales)));
        name
    }

    pub(super) fn code_of(&self, d: DType) -> Result<i32, ConvertError> {
        match d {
            DType::I8 => Ok(dt::INT8),
            DType::I16 if self.opts.opset >= 21 => Ok(dt::INT16),
            DType::I16 => {
                Err(err(String::from("int16 activations need QuantizeLinear of opset 21: export with opset 21")))
            }
            other => Err(err(format!("{other} activations cannot be written as QDQ"))),
        }
    }

    /// `float` → QuantizeLinear → DequantizeLinear with activation `id`'s parameters; returns
    /// the dequantized value's name (`out` if given).
    pub(super) fn qdq(&mut self, id: TensorId, float: &str, out: Option<&str>) -> Result<String, ConvertError> {
        let t = self.tensor(id)?;
        if t.dtype == DType::F32 && t.quant.is_none() && out.is_none() {
            // A float activation (a weight-only graph): no Q/DQ.
            return Ok(float.to_string());
        }
        let (s, z) = t.quant.as_ref().and_then(|q| q.per_tensor_params()).ok_or_else(|| {
            err(format!("activation '{}' is not quantized per tensor: the graph must be quantized", t.name))
        })?;
        let code = self.code_of(t.dtype)?;
        let base = self.names[id.index()].clone();
        let sn = self.scales(&base, &[s], false);
        let zn = self.zero_points(&base, code, &[z], false);
        let qn = self.fresh(&format!("{base}/quantized"));
        let dn = match out {
            Some(o) => o.to_string(),
            None => self.fresh(&format!("{base}/dequantized")),
        };
        self.node(
            "QuantizeLinear",
            &qn.clone(),
            vec![float.to_string(), sn.clone(), zn.clone()],
            vec![qn.clone()],
            vec![],
        );
        self.node("DequantizeLinear", &dn.clone(), vec![qn, sn, zn], vec![dn.clone()], vec![]);
        Ok(dn)
    }

    /// The dequantized value of activation `id`.
    pub(super) fn act(&self, id: TensorId) -> Result<Val, ConvertError> {
        self.deq.get(&id.0).cloned().ok_or_else(|| {
            ConvertError::new(
                Kind::InvalidGraph,
                format!("tensor '{}' is read before it is written", self.names[id.index()]),
            )
        })
    }

    /// A constant (int8/int16 with per-tensor quantization, or int32/int64 bias) as an
    /// initializer + DequantizeLinear; `perm` reorders its axes (ONNX axis j = our axis perm[j]),
    /// `axis` is the per-channel axis in the written layout.
    pub(super) fn const_dq(
        &mut self,
        id: TensorId,
        perm: &[usize],
        axis: Option<usize>,
    ) -> Result<String, ConvertError> {
        let key = (id.0, perm.to_vec());
        if let Some(n) = self.constants.get(&key) {
            return Ok(n.clone());
        }
        let t = self.tensor(id)?;
        let data = t.data.as_ref().ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "not a constant"))?;
        let shape = Self::shape_in(&t.shape, perm);
        let base = self.names[id.index()].clone();
        if let (ConstData::F32(v), None) = (data, &t.quant) {
            // A float constant (the bias of a weight-only layer): a float initializer.
            let name = if self.constants.keys().any(|(c, _)| *c == id.0) { self.fresh(&base) } else { base };
            self.inits.push(tensor_proto(&name, &shape, dt::FLOAT, le_f32(&permute(v, &t.shape, perm)?)));
            self.constants.insert(key, name.clone());
            return Ok(name);
        }
        let q = t.quant.as_ref().ok_or_else(|| err(format!("constant '{}' is not quantized", t.name)))?;
        let (code, raw) = match data {
            ConstData::I8(v) => (dt::INT8, permute(v, &t.shape, perm)?.iter().map(|&x| x as u8).collect::<Vec<u8>>()),
            ConstData::I4(v) => (self.int4_code(&t.name)?, int4_raw(&permute(v, &t.shape, perm)?)),
            ConstData::I16(v) => {
                if self.opts.opset < 21 {
                    return Err(err(format!("int16 constant '{}' needs opset 21", t.name)));
                }
                (dt::INT16, le16(&permute(v, &t.shape, perm)?))
            }
            ConstData::I32(v) => (dt::INT32, le32(&permute(v, &t.shape, perm)?)),
            ConstData::I64(v) => {
                let narrow: Option<Vec<i32>> = v.iter().map(|&x| i32::try_from(x).ok()).collect();
                let narrow = narrow.ok_or_else(|| err(format!("int64 bias '{}' does not fit int32", t.name)))?;
                (dt::INT32, le32(&permute(&narrow, &t.shape, perm)?))
            }
            other => return Err(err(format!("constant '{}' of {} cannot be written as QDQ", t.name, other.dtype()))),
        };
        let qname = self.fresh(&format!("{base}/quantized"));
        self.inits.push(tensor_proto(&qname, &shape, code, raw));
        let per_axis = axis.is_some() && q.scales.len() > 1;
        let sn = self.scales(&base, &q.scales, per_axis);
        let zn = self.zero_points(&base, code, &q.zero_points, per_axis);
        // The constant's own (unique, reserved) name the first time.
        let dn = if self.constants.keys().any(|(c, _)| *c == id.0) { self.fresh(&base) } else { base };
        let mut attrs = Vec::new();
        if per_axis {
            attrs.push(attr_int("axis", axis.unwrap_or(0) as i64));
        }
        self.node("DequantizeLinear", &dn.clone(), vec![qname, sn, zn], vec![dn.clone()], attrs);
        self.constants.insert(key, dn.clone());
        Ok(dn)
    }

    /// An int64 initializer (shapes, pads).
    pub(super) fn i64s(&mut self, base: &str, v: &[i64]) -> String {
        let name = self.fresh(base);
        self.inits.push(tensor_proto(&name, &[v.len()], dt::INT64, le64(v)));
        name
    }

    pub(super) fn f32_scalar(&mut self, base: &str, v: f32) -> String {
        let name = self.fresh(base);
        self.inits.push(tensor_proto(&name, &[], dt::FLOAT, v.to_le_bytes().to_vec()));
        name
    }

    /// An operand of an elementwise op whose output has `rank` and axis order `target`: an
    /// activation (reshaped to `rank` if lower) or a constant (int8 initializer + DQ).
    pub(super) fn operand(
        &mut self,
        id: TensorId,
        rank: usize,
        target: &[usize],
        base: &str,
    ) -> Result<String, ConvertError> {
        let t = self.tensor(id)?;
        let r = t.shape.len();
        if t.is_constant() {
            // Broadcast shape in our order: leading 1s to `rank`, then reorder like the output.
            let mut s = vec![1usize; rank.saturating_sub(r)];
            s.extend_from_slice(&t.shape);
            if layout::is_identity(target) || rank != s.len() {
                return self.const_dq(id, &layout::identity(r), None);
            }
            // Reorder the constant's data as a rank-`rank` tensor.
            let data = t.data.as_ref().ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "not a constant"))?;
            let cbase = self.names[id.index()].clone();
            if let (ConstData::F32(v), None) = (data, &t.quant) {
                let name = self.fresh(&format!("{cbase}/reordered"));
                self.inits.push(tensor_proto(
                    &name,
                    &Self::shape_in(&s, target),
                    dt::FLOAT,
                    le_f32(&permute(v, &s, target)?),
                ));
                return Ok(name);
            }
            let q = t.quant.as_ref().ok_or_else(|| err(format!("constant '{}' is not quantized", t.name)))?;
            let (code, raw) = match data {
                ConstData::I8(v) => (dt::INT8, permute(v, &s, target)?.iter().map(|&x| x as u8).collect::<Vec<u8>>()),
                ConstData::I16(v) if self.opts.opset >= 21 => (dt::INT16, le16(&permute(v, &s, target)?)),
                other => return Err(err(format!("constant operand '{}' of {}", t.name, other.dtype()))),
            };
            let qname = self.fresh(&format!("{cbase}/quantized"));
            self.inits.push(tensor_proto(&qname, &Self::shape_in(&s, target), code, raw));
            let (sc, zp) = q.per_tensor_params().ok_or_else(|| err(format!("constant '{}' is per-channel", t.name)))?;
            let sn = self.scales(&cbase, &[sc], false);
            let zn = self.zero_points(&cbase, code, &[zp], false);
            let dn = self.fresh(&cbase);
            self.node("DequantizeLinear", &dn.clone(), vec![qname, sn, zn], vec![dn.clone()], vec![]);
            return Ok(dn);
        }
        let v = self.act(id)?;
        if r == rank {
            return Ok(self.in_order(&v, target).name);
        }
        // Lower rank: in our order, leading 1s, then the output's order.
        let v = self.in_order(&v, &layout::identity(r));
        let mut s: Vec<i64> = vec![1; rank.saturating_sub(r)];
        s.extend(t.shape.iter().map(|&d| d as i64));
        let sn = self.i64s(&format!("{base}/operand_shape"), &s);
        let rn = self.fresh(&format!("{}/expanded", v.name));
        self.node("Reshape", &rn.clone(), vec![v.name, sn], vec![rn.clone()], vec![]);
        Ok(self.in_order(&Val { name: rn, perm: layout::identity(rank) }, target).name)
    }

    /// Weights (int8, symmetric, channel axis 0 of ours) → initializer in `perm` order + DQ with
    /// the channel on the written axis 0.
    pub(super) fn weight_dq(&mut self, id: TensorId, perm: &[usize]) -> Result<String, ConvertError> {
        self.weight_dq_axis(id, perm, 0)
    }

    pub(super) fn weight_dq_axis(&mut self, id: TensorId, perm: &[usize], axis: usize) -> Result<String, ConvertError> {
        let t = self.tensor(id)?;
        if !matches!(t.dtype, DType::I8 | DType::I4) {
            return Err(err(format!("weights '{}' are {}, not int8 or int4", t.name, t.dtype)));
        }
        self.const_dq(id, perm, Some(axis))
    }

    /// ONNX's `INT4` for the 4-bit weights `name`: `DequantizeLinear` reads it from opset 21.
    pub(super) fn int4_code(&self, name: &str) -> Result<i32, ConvertError> {
        if self.opts.opset >= 21 {
            Ok(dt::INT4)
        } else {
            Err(err(format!("int4 weights '{name}' need DequantizeLinear of opset 21: export with opset 21")))
        }
    }
}

/// int4 values as ONNX stores an `INT4` tensor's `raw_data`: packed two per byte, element `2i`
/// in the low nibble of byte `i` and `2i + 1` in the high one (an odd count leaves the last
/// high nibble 0), the layout TFLite uses too ([`crate::kernels::int4`]).
pub(super) fn int4_raw(v: &[i8]) -> Vec<u8> {
    v.chunks(2).map(|p| (p[0] as u8 & 0x0F) | (p.get(1).map_or(0, |&h| h as u8) << 4)).collect()
}
