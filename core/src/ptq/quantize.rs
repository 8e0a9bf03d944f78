//! Quantization: a calibrated float graph becomes the quantized graph the compiler takes.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::calibrate::Calibrator;
use super::observer::ObserverKind;
use crate::graph::{ConstData, ConvertError, ConvertErrorKind as Kind, DType, Graph, Op, TensorId, TensorQuant};
use crate::quant::{ChooseOptions, Convention, QScheme, QuantDType, choose_qparams_with};

/// The integer type of the activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ActivationType {
    /// int8, asymmetric per tensor (TFLite's int8 scheme). The default.
    #[default]
    Int8,
    /// int16, symmetric per tensor (zero point 0) with int8 weights and int64 biases (TFLite's
    /// 16x8 scheme), for the whole model: the runtime has no op converting between int8 and
    /// int16 activations, so it cannot mix them, and its logistic, tanh, hard-swish and
    /// concatenation kernels are int8 only (the compiler names the op it cannot lower).
    Int16,
}

/// Options of [`quantize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantizeOptions {
    /// Weights per output channel (conv and fully connected: axis 0; depthwise: axis 3) or one
    /// scale per tensor. Symmetric int8 in [-127, 127] either way.
    pub per_channel: bool,
    /// Activation type.
    pub activations: ActivationType,
}

impl Default for QuantizeOptions {
    /// Per-channel weights, int8 activations.
    fn default() -> Self {
        Self { per_channel: true, activations: ActivationType::Int8 }
    }
}

/// How an activation's quantization parameters were chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QParamsSource {
    /// From the calibrated range of this observer.
    Observed(ObserverKind),
    /// Fixed by the op, as TFLite fixes them: softmax and logistic `(1/256, -128)`, tanh
    /// `(1/128, 0)`.
    Fixed,
    /// The same as the op's input (pooling, padding, reshape, squeeze, transpose: the int8
    /// kernels move values without requantizing).
    SameAsInput,
}

/// The quantization of one activation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActivationQuant {
    /// Scale.
    pub scale: f32,
    /// Zero point.
    pub zero_point: i32,
    /// Its integer type.
    pub dtype: DType,
    /// How the parameters were chosen.
    pub source: QParamsSource,
    /// The calibrated range (every activation is observed, whatever the source).
    pub range: (f32, f32),
}

/// A quantized graph and how it was made.
#[derive(Debug, Clone)]
pub struct Quantized {
    /// The quantized graph ([`crate::compile::compile`] takes it).
    pub graph: Graph,
    /// For each tensor of the float graph, its id in the quantized graph (`None` for constants
    /// that are gone, e.g. float biases replaced by int32 ones). Activations keep their ids.
    pub tensor_map: Vec<Option<TensorId>>,
    /// For each tensor of the float graph (by id): its quantization if it is an activation.
    pub activations: Vec<Option<ActivationQuant>>,
}

fn err(kind: Kind, msg: String) -> ConvertError {
    ConvertError::new(kind, msg)
}

fn tflite(scheme: QScheme) -> ChooseOptions {
    ChooseOptions::new(scheme).convention(Convention::TfLite)
}

/// Parameters for a real range.
fn params_for(lo: f32, hi: f32, dtype: DType) -> Result<(f32, i32), ConvertError> {
    let p = match dtype {
        DType::I16 => choose_qparams_with(lo, hi, QuantDType::Int16, &tflite(QScheme::SymmetricRestricted)),
        _ => choose_qparams_with(lo, hi, QuantDType::Int8, &tflite(QScheme::Affine)),
    }
    .map_err(|e| err(Kind::UnsupportedQuantization, format!("range [{lo}, {hi}]: {e}")))?;
    Ok((p.scale(), p.zero_point()))
}

/// Quantizes `v` with `(scale, zero_point)`, rounding half away from zero (TFLite), clamped to
/// `[lo, hi]`.
fn quantize_values(v: &[f32], scale: f32, zero_point: i32, lo: i64, hi: i64) -> Vec<i64> {
    v.iter()
        .map(|&x| {
            let q = libm::round(f64::from(x) / f64::from(scale)) as i64 + i64::from(zero_point);
            q.max(lo).min(hi)
        })
        .collect()
}

/// Symmetric int8 weights in [-127, 127]: per channel along `axis`, or one scale. A channel of
/// zeros gets scale 1.
fn quantize_weights(w: &[f32], shape: &[usize], axis: Option<usize>) -> (Vec<i8>, Vec<f32>) {
    let (channels, inner) = match axis {
        Some(a) => (shape.get(a).copied().unwrap_or(1).max(1), shape.iter().skip(a + 1).product::<usize>().max(1)),
        None => (1, 1),
    };
    let ch = |k: usize| (k / inner) % channels;
    let mut amax = vec![0f32; channels];
    for (k, &v) in w.iter().enumerate() {
        let a = &mut amax[ch(k)];
        *a = a.max(v.abs());
    }
    let scales: Vec<f32> = amax.iter().map(|&a| if a > 0.0 { a / 127.0 } else { 1.0 }).collect();
    let q = w
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let s = scales[ch(k)];
            (libm::roundf(v / s) as i32).clamp(-127, 127) as i8
        })
        .collect();
    (q, scales)
}

/// The output-channel axis of a weighted op's filter.
fn weight_axis(op: &Op) -> usize {
    if matches!(op, Op::DepthwiseConv2d(_)) { 3 } else { 0 }
}

/// Quantizes the calibrator's graph with its calibrated ranges.
///
/// Activations: per tensor, from their observer's range (asymmetric int8 with TFLite's formula,
/// or symmetric int16), except the outputs of softmax / logistic (1/256, -128) and tanh (1/128,
/// 0) in int8, and of pooling, pad, reshape, squeeze and transpose (their input's). Weights of
/// conv / depthwise / fully connected: symmetric int8 in [-127, 127], per channel or per tensor.
/// Biases: int32 (int64 with int16 activations) with scale `input_scale · weight_scale[c]` and
/// zero point 0. Other constant operands (of add, mul, concatenation): per-tensor asymmetric int8
/// from their min and max.
///
/// # Errors
/// `InvalidGraph` if calibration is not complete; `UnsupportedQuantization` for ranges no scale
/// represents; `Unsupported` for a pad with a non-zero constant value, or a constant used both as
/// weights and as data; [`Graph::validate`]'s errors on the result.
pub fn quantize(cal: &Calibrator<'_>, options: &QuantizeOptions) -> Result<Quantized, ConvertError> {
    let g = cal.graph();
    if cal.pass() < cal.passes() {
        return Err(err(Kind::InvalidGraph, format!("calibration is at pass {} of {}", cal.pass(), cal.passes())));
    }
    let act_dtype = match options.activations {
        ActivationType::Int8 => DType::I8,
        ActivationType::Int16 => DType::I16,
    };
    let n = g.tensors.len();
    let mut acts: Vec<Option<ActivationQuant>> = vec![None; n];
    let observed = |t: TensorId| -> Result<ActivationQuant, ConvertError> {
        let range = cal.range(t)?;
        let (scale, zero_point) = params_for(range.0, range.1, act_dtype)
            .map_err(|e| e.with_tensor(t.index(), g.tensor(t).map(|t| t.name.as_str()).unwrap_or("")))?;
        let kind = cal.kind(t).unwrap_or(ObserverKind::MinMax);
        Ok(ActivationQuant { scale, zero_point, dtype: act_dtype, source: QParamsSource::Observed(kind), range })
    };
    for &i in &g.inputs {
        acts[i.index()] = Some(observed(i)?);
    }
    for (index, node) in g.nodes.iter().enumerate() {
        let Some(y) = node.output(0) else { continue };
        let int8 = act_dtype == DType::I8;
        let fixed = match node.op {
            Op::Softmax { .. } | Op::Logistic if int8 => Some((1.0 / 256.0, -128)),
            Op::Tanh if int8 => Some((1.0 / 128.0, 0)),
            _ => None,
        };
        let same = matches!(
            node.op,
            Op::MaxPool2d(_)
                | Op::AvgPool2d(_)
                | Op::Pad { .. }
                | Op::Reshape { .. }
                | Op::Squeeze { .. }
                | Op::Transpose { .. }
        );
        let aq = if let Some((scale, zero_point)) = fixed {
            ActivationQuant { scale, zero_point, dtype: act_dtype, source: QParamsSource::Fixed, range: cal.range(y)? }
        } else if same {
            let x = node.input(0).and_then(|x| acts.get(x.index()).copied().flatten()).ok_or_else(|| {
                err(Kind::InvalidGraph, String::from("input 0 has no quantization")).at_node(index, node.op.name())
            })?;
            ActivationQuant { source: QParamsSource::SameAsInput, range: cal.range(y)?, ..x }
        } else {
            observed(y).map_err(|e| e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str()))?
        };
        acts[y.index()] = Some(aq);
    }

    let mut q = g.clone();
    // Activations.
    for (i, a) in acts.iter().enumerate() {
        if let (Some(a), Some(t)) = (a, q.tensors.get_mut(i)) {
            t.dtype = a.dtype;
            t.quant = Some(TensorQuant::per_tensor(a.scale, a.zero_point));
        }
    }
    // Weights, biases and constant operands.
    let mut role: Vec<Option<&'static str>> = vec![None; n];
    for index in 0..g.nodes.len() {
        let node = &g.nodes[index];
        let at = |e: ConvertError| e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str());
        if matches!(node.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_)) {
            let (Some(x), Some(w)) = (node.input(0), node.input(1)) else { continue };
            let xs = acts[x.index()]
                .map(|a| a.scale)
                .ok_or_else(|| at(err(Kind::InvalidGraph, "input 0 has no quantization".into())))?;
            let axis = weight_axis(&node.op);
            let wt = g.tensor(w).ok_or_else(|| at(err(Kind::InvalidGraph, "weights out of range".into())))?;
            let wv = wt.data.as_ref().and_then(ConstData::as_f32).ok_or_else(|| {
                at(err(Kind::UnsupportedQuantization, format!("weights '{}' are not f32 constants", wt.name)))
            })?;
            let (wq, scales) = quantize_weights(wv, &wt.shape, options.per_channel.then_some(axis));
            match role[w.index()] {
                None | Some("weights") => role[w.index()] = Some("weights"),
                Some(other) => {
                    return Err(at(err(
                        Kind::Unsupported,
                        format!("constant '{}' is used as weights and as {other}", wt.name),
                    )));
                }
            }
            let quant = if options.per_channel {
                TensorQuant::per_channel(scales.clone(), vec![0; scales.len()], axis)
            } else {
                TensorQuant::per_tensor(scales[0], 0)
            };
            if let Some(t) = q.tensors.get_mut(w.index()) {
                t.dtype = DType::I8;
                t.data = Some(ConstData::I8(wq));
                t.quant = Some(quant);
            }
            if let Some(b) = node.input(2) {
                let bt = g.tensor(b).ok_or_else(|| at(err(Kind::InvalidGraph, "bias out of range".into())))?;
                let bv = bt.data.as_ref().and_then(ConstData::as_f32).ok_or_else(|| {
                    at(err(Kind::UnsupportedQuantization, format!("bias '{}' is not an f32 constant", bt.name)))
                })?;
                let bscales: Vec<f32> =
                    if options.per_channel { scales.iter().map(|&s| xs * s).collect() } else { vec![xs * scales[0]] };
                let int = bv
                    .iter()
                    .enumerate()
                    .map(|(c, &v)| {
                        let s = bscales.get(c).or(bscales.first()).copied().unwrap_or(1.0);
                        libm::round(f64::from(v) / f64::from(s))
                    })
                    .collect::<Vec<f64>>();
                let (data, dtype) = if act_dtype == DType::I16 {
                    (ConstData::I64(int.iter().map(|&v| v as i64).collect()), DType::I64)
                } else {
                    (
                        ConstData::I32(
                            int.iter().map(|&v| v.max(i32::MIN as f64).min(i32::MAX as f64) as i32).collect(),
                        ),
                        DType::I32,
                    )
                };
                let bquant = if options.per_channel {
                    TensorQuant::per_channel(bscales.clone(), vec![0; bscales.len()], 0)
                } else {
                    TensorQuant::per_tensor(bscales[0], 0)
                };
                let mut t = crate::graph::Tensor::constant(format!("{}/int_bias", node.name), bt.shape.clone(), data)
                    .with_quant(bquant);
                t.dtype = dtype;
                let id = q.add_tensor(t)?;
                q.nodes[index].inputs[2] = Some(id);
            }
            continue;
        }
        if let Op::Pad { .. } = node.op {
            if let Some(v) = node.input(1) {
                let value = g
                    .tensor(v)
                    .and_then(|t| t.data.as_ref())
                    .and_then(ConstData::as_f32)
                    .and_then(|d| d.first().copied());
                if value != Some(0.0) {
                    return Err(at(err(
                        Kind::Unsupported,
                        format!(
                            "pad with constant value {value:?}: the int8 pad fills with the zero point (value 0.0) only"
                        ),
                    )));
                }
                q.nodes[index].inputs.truncate(1);
            }
            continue;
        }
        for (k, t) in node.inputs.iter().enumerate() {
            let Some(t) = *t else { continue };
            let Some(ct) = g.tensor(t).filter(|t| t.is_constant()) else { continue };
            let v = ct.data.as_ref().and_then(ConstData::as_f32).ok_or_else(|| {
                at(err(Kind::UnsupportedQuantization, format!("constant input {k} '{}' is not f32", ct.name)))
            })?;
            match role[t.index()] {
                None | Some("data") => role[t.index()] = Some("data"),
                Some(other) => {
                    return Err(at(err(
                        Kind::Unsupported,
                        format!("constant '{}' is used as data and as {other}", ct.name),
                    )));
                }
            }
            let lo = v.iter().copied().fold(0f32, f32::min);
            let hi = v.iter().copied().fold(0f32, f32::max);
            let (scale, zp) = params_for(lo, hi, act_dtype).map_err(at)?;
            let (qlo, qhi) = act_dtype.int_range().unwrap_or((-128, 127));
            let ints = quantize_values(v, scale, zp, qlo, qhi);
            if let Some(qt) = q.tensors.get_mut(t.index()) {
                qt.dtype = act_dtype;
                qt.data = Some(if act_dtype == DType::I16 {
                    ConstData::I16(ints.iter().map(|&x| x as i16).collect())
                } else {
                    ConstData::I8(ints.iter().map(|&x| x as i8).collect())
                });
                qt.quant = Some(TensorQuant::per_tensor(scale, zp));
            }
        }
    }
    let tensor_map = q.prune_unused_tensors();
    q.metadata.producer = format!("microquant {} post-training quantization", env!("CARGO_PKG_VERSION"));
    q.validate()?;
    Ok(Quantized { graph: q, tensor_map, activations: acts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_symmetric_narrow() {
        // Two channels along axis 0: amax 2.54 and 0 (scale 1, all zeros).
        let (q, s) = quantize_weights(&[2.54, -1.27, 0.0, 0.0], &[2, 2], Some(0));
        assert_eq!(s, [2.54 / 127.0, 1.0]);
        assert_eq!(q, [127, -64, 0, 0]); // -1.27 / 0.02 = -63.5 rounds away from zero
        // Per tensor.
        let (q, s) = quantize_weights(&[1.0, -4.0], &[1, 2], None);
        assert_eq!((q, s), (vec![32, -127], vec![4.0 / 127.0]));
        // Depthwise: channel is the last axis.
        let (_, s) = quantize_weights(&[1.0, 2.0, -3.0, 0.5], &[1, 2, 1, 2], Some(3));
        assert_eq!(s, [3.0 / 127.0, 2.0 / 127.0]);
    }
}
