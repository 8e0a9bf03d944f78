//! Quantization: a calibrated float graph becomes the quantized graph the compiler takes.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::auto::RangePolicy;
use super::calibrate::Calibrator;
use super::observer::ObserverKind;
use crate::graph::{
    ConstData, ConvertError, ConvertErrorKind as Kind, DType, Graph, Node, Op, Tensor, TensorId, TensorQuant,
};
use crate::quant::{ChooseOptions, Convention, QScheme, QuantDType, choose_qparams_with};
use crate::vecmap::VecMap;

mod bits;
mod ties;
mod weights;

use ties::{const_operand, ties_share};
use weights::weight_error;
pub(in crate::ptq) use weights::{
    channel_layout, quantize_values, quantize_weights, quantize_weights_bits, quantize_weights_carried, weight_axis,
};

/// The integer type of the activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ActivationType {
    /// int8, asymmetric per tensor (TFLite's int8 scheme). The default.
    #[default]
    Int8,
    /// int16, symmetric per tensor (zero point 0) with int8 weights and int64 biases (TFLite's
    /// 16x8 scheme), for the whole model. The runtime's logistic, tanh, hard-swish and
    /// concatenation kernels are int8 only (the compiler names the op it cannot lower). To
    /// compute only some layers in 16x8, see [`QuantizeOptions::int16_layers`].
    Int16,
}

/// Options of [`quantize`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantizeOptions {
    /// Weights per output channel (conv and fully connected: axis 0; depthwise: axis 3) or one
    /// scale per tensor. Symmetric int8 in [-127, 127] (int4: [-7, 7]) either way.
    pub per_channel: bool,
    /// Bits of the weights of conv, depthwise conv and fully-connected layers: 8 (the default)
    /// or 4 (W4A8: symmetric int4 in [-7, 7], TFLite's int4 range, stored packed two per byte as
    /// TFLite stores them, so the weights take half the flash; activations stay int8). Every such
    /// layer gets 4-bit weights, the first and the last included: keeping some in 8 bits (the
    /// first conv and the classifier are the usual candidates, being the most sensitive and
    /// often among the smallest) is [`QuantizeOptions::layer_weight_bits`]'s job, and the report
    /// says each layer's width and SQNR. Layers with no int4 kernel keep 8 bits: transposed
    /// convolutions, 16x8 layers and recurrent ops. Any other value is an error.
    pub weight_bits: u8,
    /// Per-layer weight bits (8 or 4), by node name (or output tensor name), over
    /// [`QuantizeOptions::weight_bits`]: e.g. `("conv1", 8)` keeps a first conv in 8 bits in a
    /// 4-bit model. The last entry naming a layer wins.
    pub layer_weight_bits: Vec<(String, u8)>,
    /// FusedActivation type of the whole model.
    pub activations: ActivationType,
    /// Layers computed in 16x8 (int16 activations, int8 weights, int64 bias) in an int8 model,
    /// by node name (or output tensor name). Their inputs are requantized from int8 to int16,
    /// and their outputs back to int8 where an int8 layer reads them, by `Quantize` nodes (the
    /// runtime's `QUANTIZE` op, TFLite's `Requantize`). Allowed ops: conv, depthwise conv,
    /// fully connected, add, mul, max/average pooling, pad, mean, reshape, squeeze, transpose.
    pub int16_layers: Vec<String>,
    /// Use the quantization parameters a model carries (an `f32` tensor with
    /// [`Tensor::quant`], as the ONNX importer sets them from a QDQ model's
    /// QuantizeLinear/DequantizeLinear pairs) instead of the calibrated ranges. Default `true`.
    pub use_carried: bool,
    /// Bias correction (Nagel et al., "Data-Free Quantization", 2019, empirical form): the
    /// expected error the weight quantization adds to each output channel, `E[(W - Ŵ) x]` over
    /// the calibration samples, is added to the bias, so the int8 layer's outputs are unbiased.
    /// Layers with carried weights (QDQ models) keep their bias. Default `true`.
    pub bias_correction: bool,
}

impl Default for QuantizeOptions {
    /// Per-channel 8-bit weights, int8 activations, no 16x8 layer, carried parameters used, bias
    /// correction.
    fn default() -> Self {
        Self {
            per_channel: true,
            weight_bits: 8,
            layer_weight_bits: Vec::new(),
            activations: ActivationType::Int8,
            int16_layers: Vec::new(),
            use_carried: true,
            bias_correction: true,
        }
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
    /// Carried by the source model (a QDQ model's QuantizeLinear scale and zero point).
    Carried,
    /// From the calibrated range of this observer, widened by one step: an Add, Sub or Mul
    /// of an int8 tensor and a constant whose exact results would, for most of the input's
    /// codes, fall on a rounding tie of the range's own grid (a model's built-in input scaling
    /// `x / 127.5 - 1` on 8-bit pixels: every output half a step off, each rounded away from
    /// zero, an error of half a step everywhere and a bias that the next layers carry). One
    /// step wider, the codes fall all along the grid instead.
    OffTies(ObserverKind),
}

impl QParamsSource {
    /// The name used in reports: the observer's name, `fixed`, `same-as-input`, `carried` or
    /// `off-ties`.
    pub fn name(&self) -> &'static str {
        match self {
            QParamsSource::Observed(k) => k.name(),
            QParamsSource::Fixed => "fixed",
            QParamsSource::SameAsInput => "same-as-input",
            QParamsSource::Carried => "carried",
            QParamsSource::OffTies(_) => "off-ties",
        }
    }
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

/// Where the weights' scales of a conv / depthwise / fully-connected layer come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightSource {
    /// Computed here: symmetric, `max |w| / 127` per channel (or per tensor).
    MinMax,
    /// Carried by the source model (a QDQ model's DequantizeLinear scales), which represent
    /// the float weights exactly.
    Carried,
}

impl WeightSource {
    /// `minmax` or `carried`.
    pub fn name(&self) -> &'static str {
        match self {
            WeightSource::MinMax => "minmax",
            WeightSource::Carried => "carried",
        }
    }
}

/// A quantized graph and how it was made.
#[derive(Debug, Clone)]
pub struct Quantized {
    /// The quantized graph ([`crate::compile::compile`] takes it).
    pub graph: Graph,
    /// For each tensor of the float graph, its id in the quantized graph (`None` for constants
    /// that are gone, e.g. float biases replaced by int32 ones).
    pub tensor_map: Vec<Option<TensorId>>,
    /// For each tensor of the float graph (by id): its quantization if it is an activation (in
    /// the type of the layer that writes it).
    pub activations: Vec<Option<ActivationQuant>>,
    /// For each node of the float graph, the index of the node computing it in the quantized
    /// graph (the quantized graph also has the `Quantize` nodes converting between int8 and
    /// int16 layers).
    pub node_map: Vec<usize>,
    /// For each node of the float graph: where its weights' scales come from (weighted layers).
    pub weight_sources: Vec<Option<WeightSource>>,
    /// For each node of the float graph: the bits of its quantized weights (8 or 4; weighted
    /// layers).
    pub weight_bits: Vec<Option<u8>>,
    /// For each tensor of the float graph (by id): the automatic observer's choice of range and
    /// its reasons ([`super::ObserverKind::Auto`]; `None` for other observers).
    pub auto_choices: Vec<Option<super::auto::AutoChoice>>,
    /// The model-level range choice of the automatic observers (`None` without them, or when
    /// the calibrator kept no samples).
    pub range_choice: Option<super::auto::ModelChoice>,
}

pub(super) fn err(kind: Kind, msg: String) -> ConvertError {
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

/// Ops the runtime runs in 16x8 (int16 activations).
fn runs_int16(op: &Op) -> bool {
    matches!(
        op,
        Op::Conv2d(_)
            | Op::DepthwiseConv2d(_)
            | Op::FullyConnected(_)
            | Op::TransposeConv2d(_)
            | Op::Add { .. }
            | Op::Sub { .. }
            | Op::Mul { .. }
            | Op::Minimum
            | Op::Maximum
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::Pad { .. }
            | Op::Mean { .. }
            | Op::Reshape { .. }
            | Op::Squeeze { .. }
            | Op::Transpose { .. }
            | Op::Resize { method: crate::graph::ResizeMethod::NearestNeighbor, .. }
            | Op::StridedSlice(_)
            | Op::DepthToSpace { .. }
            | Op::SpaceToDepth { .. }
            | Op::MirrorPad { .. }
            | Op::Gather { .. }
            | Op::Tile { .. }
            | Op::Sum { .. }
            | Op::BatchMatMul { .. }
            | Op::Clip { .. }
            | Op::Abs
            | Op::Neg
    )
}

/// Ops whose output has their input's parameters.
fn same_as_input(op: &Op) -> bool {
    matches!(
        op,
        Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::Pad { .. }
            | Op::Reshape { .. }
            | Op::Squeeze { .. }
            | Op::Transpose { .. }
            | Op::Resize { .. }
            | Op::StridedSlice(_)
            | Op::DepthToSpace { .. }
            | Op::SpaceToDepth { .. }
            | Op::MirrorPad { .. }
            | Op::Gather { .. }
            | Op::Tile { .. }
            | Op::ReduceMax { .. }
    )
}

/// The layer type of every node: `I16` for the 16x8 ones.
fn layer_types(g: &Graph, options: &QuantizeOptions) -> Result<Vec<DType>, ConvertError> {
    let whole = if options.activations == ActivationType::Int16 { DType::I16 } else { DType::I8 };
    let mut types = vec![whole; g.nodes.len()];
    for name in &options.int16_layers {
        let found = bits::find_layer(g, name, "int16 layer")?;
        for i in found {
            let node = &g.nodes[i];
            if !runs_int16(&node.op) {
                return Err(err(
                    Kind::Unsupported,
                    format!(
                        "int16 layer {name:?} is a {}: the runtime runs conv, depthwise, fully connected, add, mul, \
                         pooling, pad, mean, reshape, squeeze and transpose in 16x8",
                        node.op.name()
                    ),
                )
                .at_node(i, node.op.name())
                .with_node_name(node.name.as_str()));
            }
            types[i] = DType::I16;
        }
    }
    Ok(types)
}

/// The weight bits of every node of `g` under `options` (0 for nodes without weights), as
/// [`quantize`] chooses them.
///
/// # Errors
/// As [`quantize`]'s for the int16 layers and weight bits options.
pub(in crate::ptq) fn node_weight_bits(g: &Graph, options: &QuantizeOptions) -> Result<Vec<u8>, ConvertError> {
    let layer = layer_types(g, options)?;
    bits::weight_bits(g, options, &layer)
}

/// The carried per-tensor parameters of an f32 activation, if any.
fn carried(t: &Tensor) -> Option<(f32, i32)> {
    if t.dtype != DType::F32 || t.is_constant() {
        return None;
    }
    t.quant.as_ref().and_then(TensorQuant::per_tensor_params)
}

/// Quantizes the calibrator's graph with its calibrated ranges.
///
/// Activations: per tensor, from their observer's range (asymmetric int8 with TFLite's formula,
/// or symmetric int16), except the outputs of softmax / logistic (1/256, -128) and tanh (1/128,
/// 0) in int8, and of pooling, pad, reshape, squeeze and transpose (their input's); parameters
/// the model carries (an f32 activation with [`Tensor::quant`]: an imported QDQ model) are used
/// as they are when [`QuantizeOptions::use_carried`]. Weights of conv / depthwise / fully
/// connected: symmetric int8 in [-127, 127], per channel or per tensor (carried weight scales
/// are used when they represent the weights exactly). Biases: int32 (int64 in 16x8 layers) with
/// scale `input_scale · weight_scale[c]` and zero point 0. Other constant operands (of add,
/// mul, concatenation): per-tensor asymmetric int8 from their min and max. 16x8 layers
/// ([`QuantizeOptions::int16_layers`]) get `Quantize` nodes converting their inputs and outputs.
///
/// # Errors
/// `InvalidGraph` if calibration is not complete or an int16 layer does not exist;
/// `UnsupportedQuantization` for ranges no scale represents; `Unsupported` for a pad with a
/// non-zero constant value, a constant used both as weights and as data, or an int16 layer the
/// runtime cannot run in 16x8; [`Graph::validate`]'s errors on the result.
///
/// Activations with the automatic observer ([`ObserverKind::Auto`]) get the model-level range
/// choice ([`super::auto::ModelChoice`]): the model is quantized with each candidate policy and
/// run on the samples the calibrator kept, and the one with the least error at the model's
/// output is returned ([`Quantized::range_choice`] says which and why).
pub fn quantize(cal: &Calibrator<'_>, options: &QuantizeOptions) -> Result<Quantized, ConvertError> {
    super::auto::quantize_auto(cal, options)
}

/// [`quantize`] with the automatic observers' ranges set by `policy` (`None`: each tensor's own
/// choice, and no model-level choice made).
pub(in crate::ptq) fn quantize_with(
    cal: &Calibrator<'_>,
    options: &QuantizeOptions,
    policy: Option<RangePolicy>,
) -> Result<Quantized, ConvertError> {
    let g = cal.graph();
    let range_of = |t: TensorId| cal.range_with(t, policy.unwrap_or(RangePolicy::PerTensor));
    if cal.pass() < cal.passes() {
        return Err(err(Kind::InvalidGraph, format!("calibration is at pass {} of {}", cal.pass(), cal.passes())));
    }
    let layer = layer_types(g, options)?;
    let wbits = bits::weight_bits(g, options, &layer)?;
    let n = g.tensors.len();
    // The smallest int8 scale a consumer takes: TFLite's int8 softmax needs beta · input scale
    // above 2^-26 (its input multiplier is at least 1). A softmax over nearly equal logits (an
    // untrained or saturated head) calibrates a range below that; widening it changes nothing
    // the softmax can resolve.
    let mut min_scale = vec![0f32; n];
    for node in &g.nodes {
        if let (Op::Softmax { beta }, Some(x)) = (&node.op, node.input(0)) {
            if *beta > 0.0 {
                let floor = (1.0 / f64::from(1u32 << 26) / f64::from(*beta)) as f32;
                // Up through ops whose output takes their input's parameters (reshapes...).
                let mut t = Some(x);
                while let Some(x) = t {
                    if let Some(m) = min_scale.get_mut(x.index()) {
                        *m = m.max(floor);
                    }
                    t = g
                        .producer(x)
                        .and_then(|p| g.nodes.get(p))
                        .filter(|p| same_as_input(&p.op))
                        .and_then(|p| p.input(0));
                }
            }
        }
    }
    let tname = |t: TensorId| g.tensor(t).map(|t| t.name.as_str()).unwrap_or("");
    // Parameters of an activation in a given type, from its carried parameters or its range.
    let observed = |t: TensorId, dtype: DType| -> Result<ActivationQuant, ConvertError> {
        let range = range_of(t)?;
        if options.use_carried && dtype == DType::I8 {
            if let Some((scale, zero_point)) = g.tensor(t).and_then(carried) {
                return Ok(ActivationQuant { scale, zero_point, dtype, source: QParamsSource::Carried, range });
            }
        }
        let (mut scale, mut zero_point) =
            params_for(range.0, range.1, dtype).map_err(|e| e.with_tensor(t.index(), tname(t)))?;
        let floor = min_scale.get(t.index()).copied().unwrap_or(0.0);
        if dtype == DType::I8 && scale < floor {
            // Widened about its middle to the smallest scale the consumer's kernel takes.
            let (mid, half) = ((range.0 + range.1) / 2.0, 255.0 * floor * 1.001 / 2.0);
            (scale, zero_point) = params_for(range.0.min(mid - half), range.1.max(mid + half), dtype)
                .map_err(|e| e.with_tensor(t.index(), tname(t)))?;
        }
        let kind = cal.kind(t).unwrap_or(ObserverKind::MinMax);
        Ok(ActivationQuant { scale, zero_point, dtype, source: QParamsSource::Observed(kind), range })
    };

    // Every activation in the type of its producer (graph inputs: int8 unless the whole model
    // is int16).
    let mut acts: Vec<Option<ActivationQuant>> = vec![None; n];
    let input_type = if options.activations == ActivationType::Int16 { DType::I16 } else { DType::I8 };
    for &i in &g.inputs {
        acts[i.index()] = Some(observed(i, input_type)?);
    }
    // Conversions: (float tensor, type) → parameters, for activations read in the other type.
    let mut converted: VecMap<(u32, bool), ActivationQuant> = VecMap::new();
    let mut param_in =
        |t: TensorId, dtype: DType, acts: &[Option<ActivationQuant>]| -> Result<ActivationQuant, ConvertError> {
            let a = acts.get(t.index()).copied().flatten().ok_or_else(|| {
                err(Kind::InvalidGraph, String::from("an input has no quantization")).with_tensor(t.index(), tname(t))
            })?;
            if a.dtype == dtype {
                return Ok(a);
            }
            let key = (t.0, dtype == DType::I16);
            if let Some(c) = converted.get(&key) {
                return Ok(*c);
            }
            let c = observed(t, dtype)?;
            converted.insert(key, c);
            Ok(c)
        };
    for (index, node) in g.nodes.iter().enumerate() {
        let Some(y) = node.output(0) else { continue };
        let dtype = layer[index];
        let at = |e: ConvertError| e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str());
        // Register the conversions of activation inputs read in the other type.
        for t in node.inputs.iter().flatten() {
            if g.tensor(*t).is_some_and(|t| !t.is_constant()) {
                param_in(*t, dtype, &acts).map_err(at)?;
            }
        }
        let fixed = match node.op {
            Op::Softmax { .. } | Op::Logistic if dtype == DType::I8 => Some((1.0 / 256.0, -128)),
            Op::Tanh if dtype == DType::I8 => Some((1.0 / 128.0, 0)),
            _ => None,
        };
        let aq = if let Some((scale, zero_point)) = fixed {
            ActivationQuant { scale, zero_point, dtype, source: QParamsSource::Fixed, range: range_of(y)? }
        } else if same_as_input(&node.op) {
            let x = node.input(0).ok_or_else(|| at(err(Kind::InvalidGraph, String::from("input 0 is missing"))))?;
            let xq = param_in(x, dtype, &acts).map_err(at)?;
            ActivationQuant { source: QParamsSource::SameAsInput, range: range_of(y)?, ..xq }
        } else {
            let aq = observed(y, dtype).map_err(at)?;
            match (dtype, aq.source, const_operand(g, node)) {
                (DType::I8, QParamsSource::Observed(kind), Some((x, c, x_first))) => {
                    let xq = param_in(x, dtype, &acts).map_err(at)?;
                    if ties_share(&node.op, x_first, (xq.scale, xq.zero_point), c, (aq.scale, aq.zero_point)) > 0.5 {
                        let half = aq.scale / 2.0;
                        let (scale, zero_point) =
                            params_for(aq.range.0.min(0.0) - half, aq.range.1.max(0.0) + half, dtype).map_err(at)?;
                        ActivationQuant { scale, zero_point, source: QParamsSource::OffTies(kind), ..aq }
                    } else {
                        aq
                    }
                }
                _ => aq,
            }
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
    let mut weight_sources: Vec<Option<WeightSource>> = vec![None; g.nodes.len()];
    let mut weight_bits: Vec<Option<u8>> = vec![None; g.nodes.len()];
    let mut role: Vec<Option<&'static str>> = vec![None; n];
    for index in 0..g.nodes.len() {
        let node = &g.nodes[index];
        let dtype = layer[index];
        let at = |e: ConvertError| e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str());
        if matches!(node.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) | Op::TransposeConv2d(_)) {
            let (Some(x), Some(w)) = (node.input(0), node.input(1)) else { continue };
            let xs = param_in(x, dtype, &acts).map_err(at)?.scale;
            let axis = weight_axis(&node.op);
            let wt = g.tensor(w).ok_or_else(|| at(err(Kind::InvalidGraph, "weights out of range".into())))?;
            let wv = wt.data.as_ref().and_then(ConstData::as_f32).ok_or_else(|| {
                at(err(Kind::UnsupportedQuantization, format!("weights '{}' are not f32 constants", wt.name)))
            })?;
            let bits = wbits.get(index).copied().unwrap_or(8);
            // 4-bit layers are quantized here: carried scales are int8 steps.
            let carried_w = if options.use_carried && bits == 8 {
                wt.quant.as_ref().and_then(|cq| quantize_weights_carried(wv, &wt.shape, cq).map(|v| (v, cq.clone())))
            } else {
                None
            };
            let (wq, quant, scales) = match carried_w {
                Some((v, cq)) => {
                    weight_sources[index] = Some(WeightSource::Carried);
                    let s = cq.scales.clone();
                    let quant = if cq.axis.is_some() {
                        TensorQuant::per_channel(cq.scales, vec![0; s.len()], axis)
                    } else {
                        TensorQuant::per_tensor(s[0], 0)
                    };
                    (v, quant, s)
                }
                None => {
                    weight_sources[index] = Some(WeightSource::MinMax);
                    let (v, s) = cal.memo_weights(index, options.per_channel, bits, || {
                        quantize_weights_bits(wv, &wt.shape, options.per_channel.then_some(axis), bits)
                    });
                    let quant = if options.per_channel {
                        TensorQuant::per_channel(s.clone(), vec![0; s.len()], axis)
                    } else {
                        TensorQuant::per_tensor(s[0], 0)
                    };
                    (v, quant, s)
                }
            };
            match role[w.index()] {
                None | Some("weights") => role[w.index()] = Some("weights"),
                Some(other) => {
                    return Err(at(err(
                        Kind::Unsupported,
                        format!("constant '{}' is used as weights and as {other}", wt.name),
                    )));
                }
            }
            let per_channel = quant.axis.is_some();
            weight_bits[index] = Some(bits);
            if let Some(t) = q.tensors.get_mut(w.index()) {
                (t.dtype, t.data) = if bits == 4 {
                    (DType::I4, Some(ConstData::I4(wq.clone())))
                } else {
                    (DType::I8, Some(ConstData::I8(wq.clone())))
                };
                t.quant = Some(quant);
            }
            // The float bias, corrected for the weights' quantization error.
            let bias_t = node.input(2).and_then(|b| g.tensor(b));
            let mut bias: Option<Vec<f32>> = match bias_t {
                Some(bt) => Some(
                    bt.data
                        .as_ref()
                        .and_then(ConstData::as_f32)
                        .ok_or_else(|| {
                            at(err(Kind::UnsupportedQuantization, format!("bias '{}' is not an f32 constant", bt.name)))
                        })?
                        .to_vec(),
                ),
                None => None,
            };
            let carried_weights = weight_sources[index] == Some(WeightSource::Carried);
            if options.bias_correction && !carried_weights {
                let delta = cal.memo_bias_correction(index, options.per_channel, bits, || {
                    match (cal.input_mean(x), g.tensor(x), node.output(0).and_then(|y| g.tensor(y))) {
                        (Some(mean), Some(xt), Some(yt)) => {
                            weight_error(&node.op, &mean, &xt.shape, wv, &wq, &wt.shape, &scales, axis, &yt.shape)
                        }
                        _ => None,
                    }
                });
                if let Some(d) = delta {
                    bias = Some(match bias {
                        Some(b) if b.len() == d.len() => b.iter().zip(&d).map(|(u, v)| u + v).collect(),
                        Some(b) => b,
                        None => d,
                    });
                }
            }
            if let Some(bv) = bias {
                let bscales: Vec<f32> =
                    if per_channel { scales.iter().map(|&s| xs * s).collect() } else { vec![xs * scales[0]] };
                let int = bv
                    .iter()
                    .enumerate()
                    .map(|(c, &v)| {
                        let s = bscales.get(c).or(bscales.first()).copied().unwrap_or(1.0);
                        libm::round(f64::from(v) / f64::from(s))
                    })
                    .collect::<Vec<f64>>();
                let (data, bdtype) = if dtype == DType::I16 {
                    (ConstData::I64(int.iter().map(|&v| v as i64).collect()), DType::I64)
                } else {
                    (
                        ConstData::I32(
                            int.iter().map(|&v| v.max(i32::MIN as f64).min(i32::MAX as f64) as i32).collect(),
                        ),
                        DType::I32,
                    )
                };
                let bquant = if per_channel {
                    TensorQuant::per_channel(bscales.clone(), vec![0; bscales.len()], 0)
                } else {
                    TensorQuant::per_tensor(bscales[0], 0)
                };
                let shape = bias_t.map_or_else(|| vec![bv.len()], |bt| bt.shape.clone());
                let mut t = Tensor::constant(format!("{}/int_bias", node.name), shape, data).with_quant(bquant);
                t.dtype = bdtype;
                let id = q.add_tensor(t)?;
                let qn = &mut q.nodes[index];
                if qn.inputs.len() < 3 {
                    qn.inputs.resize(3, None);
                }
                qn.inputs[2] = Some(id);
            }
            continue;
        }
        if let Op::Lstm(_) = node.op {
            let x = node.input(0).ok_or_else(|| at(err(Kind::InvalidGraph, String::from("input 0 is missing"))))?;
            let xs = param_in(x, dtype, &acts).map_err(at)?.scale;
            let cell_peak = cal.lstm_cell_peak(index);
            super::quantize_recurrent::quantize_lstm(g, &mut q, index, xs, dtype, cell_peak).map_err(at)?;
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
            let want = if dtype == DType::I16 { "data16" } else { "data" };
            match role[t.index()] {
                None => role[t.index()] = Some(want),
                Some(r) if r == want => {}
                Some(other) => {
                    return Err(at(err(
                        Kind::Unsupported,
                        format!("constant '{}' is used as {want} and as {other}", ct.name),
                    )));
                }
            }
            let lo = v.iter().copied().fold(0f32, f32::min);
            let hi = v.iter().copied().fold(0f32, f32::max);
            let (scale, zp) = params_for(lo, hi, dtype).map_err(at)?;
            let (qlo, qhi) = dtype.int_range().unwrap_or((-128, 127));
            let ints = quantize_values(v, scale, zp, qlo, qhi);
            if let Some(qt) = q.tensors.get_mut(t.index()) {
                qt.dtype = dtype;
                qt.data = Some(if dtype == DType::I16 {
                    ConstData::I16(ints.iter().map(|&x| x as i16).collect())
                } else {
                    ConstData::I8(ints.iter().map(|&x| x as i8).collect())
                });
                qt.quant = Some(TensorQuant::per_tensor(scale, zp));
            }
        }
    }

    // Conversions between int8 and int16 layers.
    let mut node_map: Vec<usize> = (0..g.nodes.len()).collect();
    if !converted.is_empty() {
        insert_conversions(g, &mut q, &layer, &converted, &mut node_map)?;
    }
    super::shared_quant::tie_inputs_to_output(g, &mut q, &mut node_map)?;

    let tensor_map = q.prune_unused_tensors();
    q.metadata.producer = format!("microquant {} post-training quantization", env!("CARGO_PKG_VERSION"));
    q.validate()?;
    let auto_choices = (0..g.tensors.len()).map(|i| cal.auto_choice_with(TensorId(i as u32), policy)).collect();
    Ok(Quantized {
        graph: q,
        tensor_map,
        activations: acts,
        node_map,
        weight_sources,
        weight_bits,
        auto_choices,
        range_choice: None,
    })
}

/// Inserts a `Quantize` node before every layer that reads an activation in the other type
/// (int8 ↔ int16), one per (tensor, type), right before its first reader.
fn insert_conversions(
    g: &Graph,
    q: &mut Graph,
    layer: &[DType],
    converted: &VecMap<(u32, bool), ActivationQuant>,
    node_map: &mut [usize],
) -> Result<(), ConvertError> {
    let mut made: VecMap<(u32, bool), TensorId> = VecMap::new();
    let mut nodes: Vec<Node> = Vec::with_capacity(q.nodes.len() + converted.len());
    for (index, node) in q.nodes.clone().into_iter().enumerate() {
        let mut node = node;
        let dtype = layer[index];
        let weighted =
            matches!(node.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) | Op::TransposeConv2d(_));
        for (k, slot) in node.inputs.iter_mut().enumerate() {
            let Some(t) = *slot else { continue };
            if weighted && k > 0 {
                continue;
            }
            let Some(src) = g.tensor(t) else { continue };
            if src.is_constant() {
                continue;
            }
            let Some(cur) = q.tensor(t) else { continue };
            if cur.dtype == dtype {
                continue;
            }
            let key = (t.0, dtype == DType::I16);
            let id = match made.get(&key) {
                Some(&id) => id,
                None => {
                    let a = converted.get(&key).ok_or_else(|| {
                        err(Kind::InvalidGraph, format!("no {} parameters for '{}'", dtype.name(), src.name))
                    })?;
                    let name = format!("{}/{}", src.name, dtype.name());
                    let mut nt = Tensor::new(name.clone(), src.shape.clone(), dtype);
                    nt.quant = Some(TensorQuant::per_tensor(a.scale, a.zero_point));
                    let id = q.add_tensor(nt)?;
                    nodes.push(Node::new(name, Op::Quantize, vec![Some(t)], vec![id]));
                    made.insert(key, id);
                    id
                }
            };
            *slot = Some(id);
        }
        if let Some(m) = node_map.get_mut(index) {
            *m = nodes.len();
        }
        nodes.push(node);
    }
    q.nodes = nodes;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A softmax over nearly equal logits (an untrained head: weights of 1e-9) calibrates an
    /// input range far below what TFLite's int8 softmax takes (beta · scale ≥ 2^-26): the
    /// quantizer widens it (through the reshape between), the model compiles and its int8 output
    /// is the uniform distribution the float model gives.
    #[test]
    fn softmax_input_of_a_tiny_range_is_widened() {
        use crate::graph::{ConstData, FullyConnected, FusedActivation, GraphMetadata};
        let mut g = Graph::new(GraphMetadata::new("test", "softmax range"));
        let x = g.add_tensor(Tensor::new("x", vec![1, 8], DType::F32)).unwrap();
        let w: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) * 1e-9).collect();
        let w = g.add_tensor(Tensor::constant("w", vec![4, 8], ConstData::F32(w))).unwrap();
        let (logits, flat, y) = (
            g.add_tensor(Tensor::new("logits", vec![1, 4], DType::F32)).unwrap(),
            g.add_tensor(Tensor::new("flat", vec![4], DType::F32)).unwrap(),
            g.add_tensor(Tensor::new("y", vec![4], DType::F32)).unwrap(),
        );
        let fc = Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false });
        g.add_node(Node::new("fc", fc, vec![Some(x), Some(w)], vec![logits]));
        g.add_node(Node::new("flat", Op::Reshape { new_shape: vec![4] }, vec![Some(logits)], vec![flat]));
        g.add_node(Node::new("softmax", Op::Softmax { beta: 1.0 }, vec![Some(flat)], vec![y]));
        g.inputs.push(x);
        g.outputs.push(y);
        let samples: Vec<Vec<Vec<f32>>> =
            (0..8).map(|s| vec![(0..8).map(|i| ((s * 8 + i) % 5) as f32 - 2.0).collect()]).collect();
        let out = crate::ptq::convert(&g, &samples, None, &crate::ptq::PtqOptions::default(), &mut |_| {}).unwrap();
        let model = crate::model::AlignedBytes::new(&out.compiled.bytes);
        let mut arena = alloc::vec![0u8; out.compiled.arena_len + 16];
        let mut it = crate::interp::Interpreter::new(&model, &mut arena).unwrap();
        it.input_i8(0).unwrap().copy_from_slice(&[10, -20, 30, 0, 5, 7, -9, 1]);
        it.invoke().unwrap();
        // 0.25 at (1/256, -128): -64 (a step of either side from rounding).
        for &v in it.output_i8(0).unwrap() {
            assert!((-65..=-63).contains(&v), "{v}");
        }
        let r = out.report.layers.iter().find(|l| l.op == "FullyConnected").unwrap();
        assert!(r.scale >= 1.0 / (1u32 << 26) as f32, "{}", r.scale);
    }
}
