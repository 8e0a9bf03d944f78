//! Post-training quantization of [`Op::Lstm`](crate::graph::Op::Lstm) into TFLite Micro's
//! integer LSTM (`kernels/lstm.rs`): the eight weight tensors symmetric int8 **per tensor** (the
//! kernel has one multiplier per product), each gate's bias `round(b / (s_x · s_W))` in int32
//! (int64 for 16x8), the hidden state quantized as the op's output (observed like any
//! activation), and the int16 cell state at the fixed scale [`CELL_SCALE`] = 2^-11: the cell
//! state is not a tensor the calibration observes, and 2^-11 holds `|c| < 16` (a cell value
//! beyond saturates) with a step of 4.9e-4, about a quarter of an int8 hidden step's influence.
//! An LSTM with an initial state is refused (the integer LSTM starts from zero).

use alloc::format;
use alloc::vec::Vec;

use super::quantize::{err, quantize_weights};
use crate::graph::{ConstData, ConvertError, ConvertErrorKind as Kind, DType, Graph, Op, Tensor, TensorQuant};

/// The int16 cell state's scale of a quantized LSTM.
pub const CELL_SCALE: f32 = 1.0 / 2048.0;

/// Quantizes the constants of LSTM node `index` of `g` into `q` (a copy of `g` being quantized):
/// `xs` is the input's scale, `dtype` the layer's activation type.
pub(super) fn quantize_lstm(g: &Graph, q: &mut Graph, index: usize, xs: f32, dtype: DType) -> Result<(), ConvertError> {
    let node = &g.nodes[index];
    let Op::Lstm(attrs) = node.op else { return Ok(()) };
    if node.input(13).is_some() || node.input(14).is_some() {
        return Err(err(
            Kind::Unsupported,
            "an LSTM with an initial hidden or cell state cannot be quantized: the integer LSTM starts from zero"
                .into(),
        ));
    }
    let f32_of = |k: usize| -> Result<(&Tensor, &[f32]), ConvertError> {
        let t = node
            .input(k)
            .and_then(|t| g.tensor(t))
            .ok_or_else(|| err(Kind::InvalidGraph, format!("LSTM operand {k} is missing")))?;
        let v = t.data.as_ref().and_then(ConstData::as_f32).ok_or_else(|| {
            err(Kind::UnsupportedQuantization, format!("LSTM operand '{}' is not an f32 constant", t.name))
        })?;
        Ok((t, v))
    };
    let mut input_scales = [0f32; 4];
    for k in 1..=8 {
        let (t, v) = f32_of(k)?;
        let (wq, s) = quantize_weights(v, &t.shape, None);
        if k <= 4 {
            input_scales[k - 1] = s[0];
        }
        let id = node.input(k).map(|t| t.index()).unwrap_or(usize::MAX);
        if let Some(qt) = q.tensors.get_mut(id) {
            qt.dtype = DType::I8;
            qt.data = Some(ConstData::I8(wq));
            qt.quant = Some(TensorQuant::per_tensor(s[0], 0));
        }
    }
    for (g_i, &ws) in input_scales.iter().enumerate() {
        let k = 9 + g_i;
        let (t, v) = f32_of(k)?;
        let bs = xs * ws;
        let ints: Vec<f64> = v.iter().map(|&b| libm::round(f64::from(b) / f64::from(bs))).collect();
        let (data, bdtype) = if dtype == DType::I16 {
            (ConstData::I64(ints.iter().map(|&v| v as i64).collect()), DType::I64)
        } else {
            (
                ConstData::I32(ints.iter().map(|&v| v.clamp(i32::MIN as f64, i32::MAX as f64) as i32).collect()),
                DType::I32,
            )
        };
        let mut nt = Tensor::constant(format!("{}/int_bias_{g_i}", node.name), t.shape.clone(), data)
            .with_quant(TensorQuant::per_tensor(bs, 0));
        nt.dtype = bdtype;
        let id = q.add_tensor(nt)?;
        if let Some(slot) = q.nodes[index].inputs.get_mut(k) {
            *slot = Some(id);
        }
    }
    q.nodes[index].op = Op::Lstm(crate::graph::Lstm { cell_scale: Some(CELL_SCALE), ..attrs });
    Ok(())
}
