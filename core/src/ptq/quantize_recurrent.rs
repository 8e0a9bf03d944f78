//! Post-training quantization of [`Op::Lstm`](crate::graph::Op::Lstm) into TFLite Micro's
//! integer LSTM (`kernels/lstm.rs`): the eight weight tensors symmetric int8 **per tensor** (the
//! kernel has one multiplier per product), each gate's bias `round(b / (s_x · s_W))` in int32
//! (int64 for 16x8), the hidden state quantized as the op's output (observed like any
//! activation), and the int16 cell state at a power-of-two scale (the kernel's requirement, as
//! TFLite's converter writes it) chosen from the largest `|c|` the calibration reached
//! ([`cell_scale`]): the smallest `2^p` with `2 · |c| <= 32767 · 2^p` (a bit of headroom: a
//! stream's cell state drifts past what calibration saw), at least 2^-15. Without
//! calibration data for it, [`CELL_SCALE`] = 2^-11 (`|c| < 16`, a step of 4.9e-4). An LSTM with
//! an initial state is refused (the integer LSTM starts from zero).

use alloc::format;
use alloc::vec::Vec;

use super::quantize::{err, quantize_weights};
use crate::graph::{ConstData, ConvertError, ConvertErrorKind as Kind, DType, Graph, Op, Tensor, TensorQuant};

/// The int16 cell state's scale of a quantized LSTM whose calibration gave no cell range.
pub const CELL_SCALE: f32 = 1.0 / 2048.0;

/// The int16 cell state's scale for a largest `|c|` of `peak`: the smallest power of two `2^p`,
/// `-15 <= p <= 1`, with `2 · peak <= 32767 · 2^p`: twice the calibrated peak fits (a cell state
/// beyond `2^16` saturates).
pub fn cell_scale(peak: Option<f32>) -> f32 {
    match peak {
        Some(p) if p.is_finite() && p > 0.0 => {
            let power = libm::ceil(libm::log2(2.0 * f64::from(p) / 32767.0)).clamp(-15.0, 1.0) as i32;
            libm::exp2(f64::from(power)) as f32
        }
        _ => CELL_SCALE,
    }
}

/// Quantizes the constants of LSTM node `index` of `g` into `q` (a copy of `g` being quantized):
/// `xs` is the input's scale, `dtype` the layer's activation type, `cell_peak` the largest `|c|`
/// of the calibration.
pub(super) fn quantize_lstm(
    g: &Graph,
    q: &mut Graph,
    index: usize,
    xs: f32,
    dtype: DType,
    cell_peak: Option<f32>,
) -> Result<(), ConvertError> {
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
    q.nodes[index].op = Op::Lstm(crate::graph::Lstm { cell_scale: Some(cell_scale(cell_peak)), ..attrs });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_scale_holds_the_peak_in_int16() {
        assert_eq!(cell_scale(None), CELL_SCALE);
        assert_eq!(cell_scale(Some(0.0)), CELL_SCALE);
        assert_eq!(cell_scale(Some(f32::NAN)), CELL_SCALE);
        for peak in [0.01f32, 0.9, 1.0, 3.7, 15.99, 16.0, 38.9, 1000.0] {
            let s = cell_scale(Some(peak));
            assert!(2.0 * peak <= 32767.0 * s || s == 2.0, "{peak}: {s}");
            assert!(s == 1.0 / 32768.0 || 2.0 * peak > 32767.0 * s / 2.0, "{peak}: {s} is not the smallest");
            assert_eq!(s.to_bits() & 0x007f_ffff, 0, "a power of two");
        }
        assert_eq!(cell_scale(Some(7.9)), 1.0 / 2048.0);
        assert_eq!(cell_scale(Some(15.9)), 1.0 / 1024.0);
        assert_eq!(cell_scale(Some(38.9)), 1.0 / 256.0);
    }
}
