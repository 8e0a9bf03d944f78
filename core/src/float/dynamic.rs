//! Dynamic quantization of a hybrid layer (Conv2d, DepthwiseConv2d or FullyConnected with an
//! f32 input and int8 weights), as ONNX Runtime's `quantize_dynamic` graphs compute it: the
//! input is quantized per call by ONNX `DynamicQuantizeLinear` (uint8, one scale and zero point
//! from the input's range widened to 0), the layer sums `(x_q - zero_point) · w_q` in integers
//! (`ConvInteger` / `MatMulInteger`: padded taps add nothing), and the sums become float:
//! `f32(sum) · (x_scale · w_scale[c]) + bias[c]` (`Cast`, `Mul`, `Mul`, `Add`), then the fused
//! activation.
//!
//! The integer sums are computed by the float kernels on integer-valued inputs: they accumulate
//! in f64, where every product (at most 255 · 127) and every partial sum (below 2^53) is exact,
//! and round once to f32, which is exactly `Cast(int32 → float)` of the int32 sum.

use alloc::format;
use alloc::vec::Vec;

use super::{TensorRef, clamp_activation, eval_op};
use crate::graph::{
    Conv2d, ConvertError, ConvertErrorKind as Kind, DepthwiseConv2d, FullyConnected, FusedActivation, Op,
};
use crate::quant::dynamic_quantize_linear;

/// The layer `op` (its weights `inputs[1]` holding the int8 values, `w_scales` their scales, one
/// per output channel or one) on the f32 input `inputs[0]`, with the f32 bias `inputs[2]`.
pub(crate) fn eval_dynamic(
    op: &Op,
    inputs: &[Option<TensorRef<'_>>],
    out_shape: &[usize],
    w_scales: &[f32],
) -> Result<Vec<f32>, ConvertError> {
    let (plain, activation) = match op {
        Op::Conv2d(c) => (Op::Conv2d(Conv2d { activation: FusedActivation::None, ..*c }), c.activation),
        Op::DepthwiseConv2d(c) => {
            (Op::DepthwiseConv2d(DepthwiseConv2d { activation: FusedActivation::None, ..*c }), c.activation)
        }
        Op::FullyConnected(f) => {
            (Op::FullyConnected(FullyConnected { activation: FusedActivation::None, ..*f }), f.activation)
        }
        other => {
            return Err(ConvertError::new(Kind::InvalidGraph, format!("{} has no dynamic form", other.name())));
        }
    };
    let (Some(Some(x)), Some(w)) = (inputs.first(), inputs.get(1)) else {
        return Err(ConvertError::new(Kind::InvalidGraph, "a dynamic layer needs an input and weights"));
    };
    let mut xq = alloc::vec![0u8; x.data.len()];
    let p = dynamic_quantize_linear(x.data, &mut xq)
        .map_err(|e| ConvertError::new(Kind::InvalidGraph, format!("quantizing the input at run time: {e}")))?;
    let zp = p.zero_point();
    let xi: Vec<f32> = xq.iter().map(|&q| (i32::from(q) - zp) as f32).collect();
    let sums = eval_op(&plain, &[Some(TensorRef { data: &xi, shape: x.shape }), *w, None], out_shape)?;
    let bias = inputs.get(2).copied().flatten().map(|b| b.data);
    let channels = out_shape.last().copied().unwrap_or(1).max(1);
    let scale_of = |c: usize| w_scales.get(if w_scales.len() == 1 { 0 } else { c }).copied();
    sums.iter()
        .enumerate()
        .map(|(k, &s)| {
            let c = k % channels;
            let ws = scale_of(c).ok_or_else(|| {
                ConvertError::new(
                    Kind::InvalidGraph,
                    format!("{} weight scales for {channels} channels", w_scales.len()),
                )
            })?;
            let y = s * (p.scale() * ws);
            let y = match bias {
                Some(b) => y + b.get(c).copied().unwrap_or(0.0),
                None => y,
            };
            Ok(clamp_activation(y, activation))
        })
        .collect()
}
