//! Quantization of the weights alone: the weights of the convolutions and fully connected
//! layers become int8, the activations stay float. No calibration: it needs no data (samples
//! only measure it, [`evaluate_hybrid`]). Two ways to compute with such a model:
//!
//! - **weight-only** ([`quantize_weight_only`]): in float, with the weights dequantized;
//! - **dynamic** ([`quantize_dynamic`]): each such layer quantizes its input per call (uint8,
//!   from the input's range), sums in integers and scales the sums back to float, as ONNX
//!   Runtime's `quantize_dynamic` models compute ([`FloatExecutor::new_dynamic`]).
//!
//! The result is a *hybrid* graph (see [`Op`]): f32 activations, int8 weights with their
//! scales, f32 biases, and its [`HybridMode`]. [`Hybrid::executor`] runs it, and
//! [`crate::onnx::export_qdq`] writes it as ONNX: weight-only as int8 initializers read through
//! `DequantizeLinear` with float activations; dynamic (option
//! [`QdqExportOptions::dynamic`](crate::onnx::QdqExportOptions::dynamic)) as ONNX Runtime's
//! `DynamicQuantizeLinear` → `ConvInteger` / `MatMulInteger` → `Cast` → `Mul` → `Add`. Either is
//! about a quarter of the float weights' bytes. The `.mq` runtime computes int8 and 16x8 only, so
//! these models have no `.mq` form.
//!
//! The weights are quantized as ONNX Runtime's quantizer quantizes int8 weights
//! (`quantize_data(w, QInt8, symmetric=True)` per channel or per tensor): `scale = max|w| / 127`
//! (in f32; 1 for a channel of zeros), `q = rint(w / scale)` (ties to even) clamped to
//! `[-127, 127]`, zero point 0.
//!
//! [`evaluate_hybrid`]: super::evaluate_hybrid
//! [`FloatExecutor::new_dynamic`]: crate::float::FloatExecutor::new_dynamic

use alloc::vec;
use alloc::vec::Vec;

use super::quantize::channel_layout;
use crate::float::FloatExecutor;
use crate::graph::{ConstData, ConvertError, ConvertErrorKind as Kind, DType, Graph, Op, TensorQuant};

/// Options of [`quantize_weight_only`] and [`quantize_dynamic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HybridOptions {
    /// One scale per output channel (conv and fully connected: axis 0; depthwise: axis 3), or
    /// one per tensor. Default `true`.
    pub per_channel: bool,
}

impl Default for HybridOptions {
    fn default() -> Self {
        Self { per_channel: true }
    }
}

/// How a [`Hybrid`] model computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HybridMode {
    /// In float, with the int8 weights dequantized.
    WeightOnly,
    /// Each quantized layer quantizes its input per call and sums in integers.
    Dynamic,
}

impl HybridMode {
    /// `weight-only` or `dynamic`.
    pub fn name(self) -> &'static str {
        match self {
            HybridMode::WeightOnly => "weight-only",
            HybridMode::Dynamic => "dynamic",
        }
    }
}

/// A graph whose weights are quantized and whose activations are float.
#[derive(Debug, Clone)]
pub struct Hybrid {
    /// The hybrid graph: the float graph with int8 weights.
    pub graph: Graph,
    /// The nodes whose weights were quantized, by index (the same nodes as the float graph's).
    pub quantized_nodes: Vec<usize>,
    /// How it computes.
    pub mode: HybridMode,
}

impl Hybrid {
    /// The executor that computes as [`Hybrid::mode`] says.
    ///
    /// # Errors
    /// [`FloatExecutor::new`]'s and [`FloatExecutor::new_dynamic`]'s.
    pub fn executor(&self) -> Result<FloatExecutor<'_>, ConvertError> {
        match self.mode {
            HybridMode::WeightOnly => FloatExecutor::new(&self.graph),
            HybridMode::Dynamic => FloatExecutor::new_dynamic(&self.graph),
        }
    }
}

/// Symmetric int8 weights as ONNX Runtime's quantizer makes them (see the module docs): the
/// values and one scale per channel of `axis` (or one).
pub(crate) fn quantize_weights_onnx(w: &[f32], shape: &[usize], axis: Option<usize>) -> (Vec<i8>, Vec<f32>) {
    let (channels, inner) = channel_layout(shape, axis);
    let ch = |k: usize| (k / inner) % channels;
    let mut amax = vec![0f32; channels];
    for (k, &v) in w.iter().enumerate() {
        if let Some(a) = amax.get_mut(ch(k)) {
            *a = a.max(v.abs());
        }
    }
    // ORT: (2 max|w|) / 254 in f64, then f32; the same real number as max|w| / 127, rounded once.
    let scales: Vec<f32> = amax.iter().map(|&a| if a > 0.0 { a / 127.0 } else { 1.0 }).collect();
    let q = w
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let s = scales.get(ch(k)).copied().unwrap_or(1.0);
            libm::rintf(v / s).clamp(-127.0, 127.0) as i8
        })
        .collect();
    (q, scales)
}

/// Quantizes the weights of every Conv2d, DepthwiseConv2d and FullyConnected node of `float`
/// (a float graph, e.g. after [`prepare`](super::prepare)) whose input is f32 and whose weights
/// are an f32 constant that only such nodes read as weights. Everything else is unchanged.
///
/// # Errors
/// [`Graph::validate`]'s errors, before and after; `InvalidGraph` if no layer has weights to
/// quantize.
pub fn quantize_weight_only(float: &Graph, options: &HybridOptions) -> Result<Hybrid, ConvertError> {
    quantize_weights(float, options, HybridMode::WeightOnly)
}

/// The same weights as [`quantize_weight_only`], computed with dynamic quantization (see the
/// module docs).
///
/// # Errors
/// As [`quantize_weight_only`].
pub fn quantize_dynamic(float: &Graph, options: &HybridOptions) -> Result<Hybrid, ConvertError> {
    let h = quantize_weights(float, options, HybridMode::Dynamic)?;
    h.executor()?;
    Ok(h)
}

fn quantize_weights(float: &Graph, options: &HybridOptions, mode: HybridMode) -> Result<Hybrid, ConvertError> {
    float.validate()?;
    let mut g = float.clone();
    let consumers = g.consumer_map();
    let is_layer = |g: &Graph, n: usize| -> bool {
        let Some(node) = g.nodes.get(n) else { return false };
        let weighted = matches!(node.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_));
        weighted && node.input(0).and_then(|x| g.tensor(x)).is_some_and(|t| t.dtype == DType::F32 && !t.is_constant())
    };
    let mut quantized_nodes = Vec::new();
    for (index, readers) in consumers.iter().enumerate() {
        let Some(t) = g.tensors.get(index) else { continue };
        let Some(ConstData::F32(w)) = t.data.as_ref() else { continue };
        if t.quant.is_some() || readers.is_empty() {
            continue;
        }
        let as_weights = |n: &usize| {
            is_layer(&g, *n) && g.nodes.get(*n).and_then(|node| node.input(1)).is_some_and(|w| w.index() == index)
        };
        if !readers.iter().all(as_weights) {
            continue;
        }
        let axis = match readers.first().and_then(|&n| g.nodes.get(n)).map(|n| &n.op) {
            Some(Op::DepthwiseConv2d(_)) => 3,
            _ => 0,
        };
        if readers.iter().any(|&n| g.nodes.get(n).map(|n| matches!(n.op, Op::DepthwiseConv2d(_))) != Some(axis == 3)) {
            continue; // read as depthwise and as regular weights: different channel axes
        }
        let per = options.per_channel.then_some(axis);
        let (q, scales) = quantize_weights_onnx(w, &t.shape, per);
        let quant = match per {
            Some(a) => TensorQuant::per_channel(scales.clone(), vec![0; scales.len()], a),
            None => TensorQuant::per_tensor(scales.first().copied().unwrap_or(1.0), 0),
        };
        if let Some(t) = g.tensors.get_mut(index) {
            t.dtype = DType::I8;
            t.data = Some(ConstData::I8(q));
            t.quant = Some(quant);
        }
        quantized_nodes.extend_from_slice(readers);
    }
    if quantized_nodes.is_empty() {
        return Err(ConvertError::new(
            Kind::InvalidGraph,
            "quantizing the weights: the model has no conv, depthwise conv or fully connected layer with float weights",
        ));
    }
    quantized_nodes.sort_unstable();
    quantized_nodes.dedup();
    g.validate()?;
    Ok(Hybrid { graph: g, quantized_nodes, mode })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_even_and_zero_channels_get_scale_one() {
        // Channel 0: max 127 → scale 1, 2.5 → 2 (even), -3.5 → -4; channel 1: zeros.
        let (q, s) = quantize_weights_onnx(&[127.0, 2.5, -3.5, 0.0, 0.0, 0.0], &[2, 3], Some(0));
        assert_eq!(s, vec![1.0, 1.0]);
        assert_eq!(q, vec![127, 2, -4, 0, 0, 0]);
        let (q, s) = quantize_weights_onnx(&[1.0, -2.0], &[2], None);
        assert_eq!(s, vec![2.0 / 127.0]);
        assert_eq!(q, vec![64, -127]); // 63.5 → 64 (even)
    }
}
