//! TFLite's int8/16x8 quantization spec, checked on every converted node.

use super::*;

/// TFLite's int8/16x8 quantization spec, as far as our kernels need it.
pub(super) fn check_quantization(graph: &Graph, node: &Node, code: i32) -> Result<(), ConvertError> {
    let tensor = |id: Option<TensorId>| id.and_then(|id| graph.tensor(id).map(|t| (id, t)));
    let uq = |id: TensorId, t: &Tensor, m: String| {
        err(Kind::UnsupportedQuantization, m).with_tensor(id.index(), t.name.as_str())
    };

    // Every integer activation (data edge that is not a weight or bias) is per-tensor quantized.
    let activation_check = |id: TensorId, t: &Tensor, role: &str| -> Result<(), ConvertError> {
        match t.dtype {
            DType::I8 | DType::I16 | DType::U8 => {}
            _ => return Ok(()),
        }
        if t.dtype == DType::U8 && !matches!(code, QUANTIZE | DEQUANTIZE) {
            return Err(uq(
                id,
                t,
                format!("{role} is uint8: the legacy uint8 quantization scheme is not supported, only int8 and 16x8"),
            ));
        }
        let Some(q) = &t.quant else {
            return Err(uq(id, t, format!("{role} is {} without quantization scales", t.dtype)));
        };
        let Some((_, zp)) = q.per_tensor_params() else {
            return Err(uq(
                id,
                t,
                format!("{role} has {} per-channel scales; activations must be quantized per tensor", q.scales.len()),
            ));
        };
        if t.dtype == DType::I16 && zp != 0 {
            return Err(uq(
                id,
                t,
                format!("{role} is int16 with zero point {zp}; 16x8 activations must be symmetric (zero point 0)"),
            ));
        }
        Ok(())
    };

    // TRANSPOSE_CONV's node inputs are already [input, weights, bias] (OHWI, channels on axis 0).
    let is_weighted = matches!(code, CONV_2D | DEPTHWISE_CONV_2D | FULLY_CONNECTED | TRANSPOSE_CONV);
    for (k, input) in node.inputs.iter().enumerate() {
        if is_weighted && k > 0 {
            continue;
        }
        if let Some((id, t)) = tensor(*input) {
            // PADV2's constant value and other constant operands follow the activation's scheme.
            activation_check(id, t, &format!("input {k}"))?;
        }
    }
    for (k, &o) in node.outputs.iter().enumerate() {
        if let Some((id, t)) = tensor(Some(o)) {
            activation_check(id, t, &format!("output {k}"))?;
        }
    }
    if !is_weighted {
        return Ok(());
    }

    let (Some((_, x)), Some((wid, w))) = (tensor(node.input(0)), tensor(node.input(1))) else { return Ok(()) };
    let (channel_axis, out_channels) = match (code, w.shape.as_slice()) {
        (DEPTHWISE_CONV_2D, [.., c]) => (3, *c),
        (_, [o, ..]) => (0, *o),
        _ => (0, 0),
    };
    match (x.dtype, w.dtype) {
        (DType::F32, DType::F32) => return Ok(()),
        // Hybrid (dynamic-range) op: float activations, int8 weights; same weight rules.
        (DType::F32 | DType::I8 | DType::I16, DType::I8) => {}
        // W4A8: int4 weights (packed in the file), int8 activations; same weight rules. TRANSPOSE_CONV
        // has no int4 kernel (TFLite runs none either).
        (DType::I8, DType::I4) if code != TRANSPOSE_CONV => {}
        (xd, wd) => {
            return Err(uq(
                wid,
                w,
                format!(
                    "{xd} input with {wd} weights is not supported (f32 or int8 weights, or int4 weights with int8 input, expected)"
                ),
            ));
        }
    }
    // "Weights: symmetric per-channel int8, zero point 0" (TFLite quantization spec).
    let Some(q) = &w.quant else {
        return Err(uq(wid, w, "int8 weights without quantization scales".into()));
    };
    if let Some((c, z)) = q.zero_points.iter().enumerate().find(|(_, z)| **z != 0) {
        return Err(uq(
            wid,
            w,
            format!(
                "int8 weights must be symmetric (zero point 0), found zero point {z} at channel {c}: asymmetric weights are not supported"
            ),
        ));
    }
    if let Some(a) = q.axis {
        if a != channel_axis {
            return Err(uq(
                wid,
                w,
                format!(
                    "per-channel weight scales on axis {a}; this op needs them on its output-channel axis {channel_axis}"
                ),
            ));
        }
    }
    if q.scales.len() != 1 && q.scales.len() != out_channels {
        return Err(uq(wid, w, format!("{} weight scales for {out_channels} output channels", q.scales.len())));
    }
    if let Some((bid, b)) = tensor(node.input(2)) {
        let ok = matches!(
            (x.dtype, b.dtype),
            (DType::F32, DType::F32) | (DType::I8, DType::I32) | (DType::I16, DType::I32 | DType::I64)
        );
        if !ok {
            return Err(uq(
                bid,
                b,
                format!(
                    "{} bias with {} input (int8: int32 bias; 16x8: int64 or int32; hybrid: f32)",
                    b.dtype, x.dtype
                ),
            ));
        }
        if let Some(bq) = &b.quant {
            if bq.zero_points.iter().any(|&z| z != 0) {
                return Err(uq(bid, b, "bias zero points must be 0".into()));
            }
        }
    }
    Ok(())
}
