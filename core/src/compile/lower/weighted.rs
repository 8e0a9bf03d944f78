//! Lowering of the ops with weights, multipliers and shifts: CONV_2D and DEPTHWISE_CONV_2D
//! (int8 or int4 weights; int4 convolutions reserve their unpacked filter at the front of the
//! scratch), TRANSPOSE_CONV and FULLY_CONNECTED (int4 weights read packed). Each takes the
//! inputs `[input, weights, bias (optional), multipliers, shifts]` ([`weighted_inputs`]).

use alloc::format;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::{K, Lowering, NodeCtx, dims4, unreachable_op, window};
use crate::graph::{self, ConvertError, FullyConnected, Op, TensorId, TransposeConv2d};
use crate::kernels::Rounding;
use crate::kernels::common::{Hw, per_channel_multipliers};
use crate::kernels::conv::{ConvParams, conv_s8_scratch_len};
use crate::kernels::depthwise_conv::{DepthwiseConvParams, depthwise_conv_s8_scratch_len};
use crate::kernels::fully_connected::{
    ExactMultiplier, FullyConnectedParams, fully_connected_multiplier, fully_connected_per_channel_multipliers,
    fully_connected_s8_scratch_len,
};
use crate::kernels::int4;
use crate::kernels::transpose_conv::{
    TransposeConvParams, transpose_conv_s8_scratch_len, transpose_conv_s16_scratch_len,
};
use crate::model::words::{ConvWords, DepthwiseWords, FullyConnectedWords, TransposeConvWords};
use crate::model::{ElementType, ModelBuilder, OpKind, OpSpec, TensorSpec};

/// The op's inputs: its input and weights, the bias if the node has one, then the per-channel
/// multipliers and shifts as constants named after the op.
fn weighted_inputs(
    l: &mut Lowering,
    c: &NodeCtx,
    b: &mut ModelBuilder,
    (xid, wid): (TensorId, TensorId),
    (m, s): (&[i32], &[i32]),
) -> Result<Vec<Option<u32>>, ConvertError> {
    let name = if c.node.name.is_empty() { format!("op{}", c.index) } else { c.node.name.clone() };
    let bias = match c.node.input(2) {
        Some(bid) => Some(l.model_tensor(c, b, bid)?),
        None => None,
    };
    let xi = l.model_tensor(c, b, xid)?;
    let wi = l.model_tensor(c, b, wid)?;
    let mi = Lowering::const_i32(b, format!("{name}/multiplier"), m);
    let si = Lowering::const_i32(b, format!("{name}/shift"), s);
    Ok(vec![Some(xi), Some(wi), bias, Some(mi), Some(si)])
}

/// CONV_2D or DEPTHWISE_CONV_2D.
pub(super) fn lower_conv(
    l: &mut Lowering,
    c: &NodeCtx,
    b: &mut ModelBuilder,
    spec: &mut OpSpec,
) -> Result<(), ConvertError> {
    let (_, y) = l.output(c)?;
    let rounding = l.rounding;
    let (xid, x) = l.input(c, 0)?;
    let (wid, w) = l.input(c, 1)?;
    let xq = l.q(c, x)?;
    let yq = l.q(c, y)?;
    let (in_d, out_d) = (dims4(c, x)?, dims4(c, y)?);
    let wd = dims4(c, w)?;
    let depthwise = matches!(c.node.op, Op::DepthwiseConv2d(_));
    let oc = out_d.c;
    let scales = l.weight_scales(c, w, if depthwise { 3 } else { 0 })?;
    let (mut m, mut s) = (vec![0i32; oc], vec![0i32; oc]);
    per_channel_multipliers(xq.scale, &scales, yq.scale, &mut m, &mut s).map_err(|e| c.kernel(e))?;
    let (stride, dilation, padding, act, dm) = match &c.node.op {
        Op::Conv2d(a) => ((a.stride_h, a.stride_w), (a.dilation_h, a.dilation_w), a.padding, a.activation, 0),
        Op::DepthwiseConv2d(a) => {
            ((a.stride_h, a.stride_w), (a.dilation_h, a.dilation_w), a.padding, a.activation, a.depth_multiplier)
        }
        _ => unreachable_op(c)?,
    };
    let pad = window(c, padding, (in_d.h, in_d.w), (wd.h, wd.w), stride, dilation)?;
    let activation = l.activation_range(c, act, y)?;
    let words = ConvWords {
        stride: [stride.0 as u32, stride.1 as u32],
        dilation: [dilation.0 as u32, dilation.1 as u32],
        padding: [pad.top as u32, pad.bottom as u32, pad.left as u32, pad.right as u32],
        input_offset: -xq.zero_point,
        output_offset: yq.zero_point,
        activation: [activation.min, activation.max],
    };
    if w.dtype == graph::DType::I4 && x.dtype != graph::DType::I8 {
        return Err(c.err(K::UnsupportedDType, format!("int4 weights '{}' need int8 activations", w.name)));
    }
    // int4 weights run the int8 kernels on the filter unpacked into the front of the
    // scratch (`kernels::int4`), int8 activations only.
    let int8 = x.dtype == graph::DType::I8;
    let unpacked = if w.dtype == graph::DType::I4 {
        int4::unpacked_scratch_len(wd.checked_len().unwrap_or(usize::MAX))
    } else {
        0
    };
    if depthwise {
        spec.kind = OpKind::DepthwiseConv2d;
        spec.params = DepthwiseWords { conv: words, depth_multiplier: dm as u32 }.to_words().to_vec();
        let p = DepthwiseConvParams {
            input: in_d,
            filter: Hw::new(wd.h, wd.w),
            output: out_d,
            depth_multiplier: dm,
            stride: Hw::new(stride.0, stride.1),
            dilation: Hw::new(dilation.0, dilation.1),
            padding: pad,
            input_offset: -xq.zero_point,
            output_offset: yq.zero_point,
            activation,
            rounding,
        };
        spec.scratch_len =
            if int8 { c.scratch_len(unpacked.saturating_add(depthwise_conv_s8_scratch_len(&p)))? } else { 0 };
    } else {
        spec.kind = OpKind::Conv2d;
        spec.params = words.to_words().to_vec();
        let p = ConvParams {
            input: in_d,
            filter: wd,
            output: out_d,
            stride: Hw::new(stride.0, stride.1),
            dilation: Hw::new(dilation.0, dilation.1),
            padding: pad,
            input_offset: -xq.zero_point,
            output_offset: yq.zero_point,
            activation,
            rounding,
        };
        spec.scratch_len = if int8 { c.scratch_len(unpacked.saturating_add(conv_s8_scratch_len(&p)))? } else { 0 };
    }
    spec.inputs = weighted_inputs(l, c, b, (xid, wid), (&m, &s))?;
    Ok(())
}

/// TRANSPOSE_CONV (int8 or 16x8; int4 weights refused).
pub(super) fn lower_transpose_conv(
    l: &mut Lowering,
    c: &NodeCtx,
    b: &mut ModelBuilder,
    a: &TransposeConv2d,
    spec: &mut OpSpec,
) -> Result<(), ConvertError> {
    let (_, y) = l.output(c)?;
    let rounding = l.rounding;
    let (xid, x) = l.input(c, 0)?;
    let (wid, w) = l.input(c, 1)?;
    let xq = l.q(c, x)?;
    let yq = l.q(c, y)?;
    let (in_d, out_d, wd) = (dims4(c, x)?, dims4(c, y)?, dims4(c, w)?);
    if w.dtype == graph::DType::I4 {
        return Err(c.err(K::UnsupportedDType, format!("transpose conv weights '{}' are int4", w.name)));
    }
    let scales = l.weight_scales(c, w, 0)?;
    let (mut m, mut s) = (vec![0i32; out_d.c], vec![0i32; out_d.c]);
    per_channel_multipliers(xq.scale, &scales, yq.scale, &mut m, &mut s).map_err(|e| c.kernel(e))?;
    let activation = l.activation_range(c, a.activation, y)?;
    let p = TransposeConvParams {
        input: in_d,
        filter: wd,
        output: out_d,
        stride: Hw::new(a.stride_h, a.stride_w),
        padding: Hw::new(a.pad_top, a.pad_left),
        input_offset: -xq.zero_point,
        output_offset: yq.zero_point,
        activation,
        rounding,
    };
    let int8 = x.dtype == graph::DType::I8;
    let scratch = if int8 { transpose_conv_s8_scratch_len(&p) } else { transpose_conv_s16_scratch_len(&p) };
    spec.scratch_len = u32::try_from(scratch)
        .map_err(|_| c.err(K::Unsupported, "transpose conv accumulators above 4 GiB".to_string()))?;
    spec.kind = OpKind::TransposeConv;
    spec.params = TransposeConvWords {
        stride: [a.stride_h as u32, a.stride_w as u32],
        padding: [a.pad_top as u32, a.pad_left as u32],
        output: [out_d.h as u32, out_d.w as u32],
        input_offset: -xq.zero_point,
        output_offset: yq.zero_point,
        activation: [activation.min, activation.max],
    }
    .to_words()
    .to_vec();
    spec.inputs = weighted_inputs(l, c, b, (xid, wid), (&m, &s))?;
    Ok(())
}

/// FULLY_CONNECTED (per-tensor or per-channel; with single rounding, the exact multipliers as a
/// sixth input).
pub(super) fn lower_fully_connected(
    l: &mut Lowering,
    c: &NodeCtx,
    b: &mut ModelBuilder,
    a: &FullyConnected,
    spec: &mut OpSpec,
) -> Result<(), ConvertError> {
    let (_, y) = l.output(c)?;
    let rounding = l.rounding;
    let (xid, x) = l.input(c, 0)?;
    let (wid, w) = l.input(c, 1)?;
    let (xq, yq) = (l.q(c, x)?, l.q(c, y)?);
    let scales = l.weight_scales(c, w, 0)?;
    let (out, inp) = match w.shape.as_slice() {
        &[o, i] => (o, i),
        _ => return Err(c.err(K::InvalidGraph, format!("weights '{}' must be [out, in]", w.name))),
    };
    let (m, s, exact): (Vec<i32>, Vec<i32>, Vec<ExactMultiplier>) = if scales.len() == 1 {
        let q = fully_connected_multiplier(xq.scale, scales[0], yq.scale).map_err(|e| c.kernel(e))?;
        (vec![q.fixed.multiplier], vec![q.fixed.shift], vec![q.exact])
    } else {
        let (mut m, mut s, mut e) = (vec![0; out], vec![0; out], vec![ExactMultiplier::default(); out]);
        fully_connected_per_channel_multipliers(xq.scale, &scales, yq.scale, &mut m, &mut s, &mut e)
            .map_err(|e| c.kernel(e))?;
        (m, s, e)
    };
    let activation = l.activation_range(c, a.activation, y)?;
    spec.kind = OpKind::FullyConnected;
    spec.params = FullyConnectedWords {
        input_offset: -xq.zero_point,
        output_offset: yq.zero_point,
        activation: [activation.min, activation.max],
    }
    .to_words()
    .to_vec();
    let batches = x.num_elements().unwrap_or(0) / inp.max(1);
    if w.dtype == graph::DType::I4 && x.dtype != graph::DType::I8 {
        return Err(c.err(K::UnsupportedDType, format!("int4 weights '{}' need int8 activations", w.name)));
    }
    // int4 weights are read packed (`kernels::fully_connected_s4`), with the int8
    // kernels' scratch (the input row expanded).
    if x.dtype == graph::DType::I8 {
        let p = FullyConnectedParams {
            batches,
            input_depth: inp,
            output_depth: out,
            input_offset: -xq.zero_point,
            output_offset: yq.zero_point,
            activation,
            rounding,
        };
        spec.scratch_len = c.scratch_len(fully_connected_s8_scratch_len(&p))?;
    }
    spec.inputs = weighted_inputs(l, c, b, (xid, wid), (&m, &s))?;
    if rounding == Rounding::Single {
        let words: Vec<i64> = exact.iter().flat_map(|e| [e.mantissa as i64, e.exponent]).collect();
        let bytes = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        let ei = b.add_tensor(TensorSpec::constant(
            &format!("{}/exact", spec.name),
            ElementType::I64,
            &[exact.len() as u32, 2],
            bytes,
        ));
        spec.inputs.push(Some(ei));
    }
    Ok(())
}
