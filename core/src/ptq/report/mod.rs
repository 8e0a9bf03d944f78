//! The per-layer report: each layer's int8 output, as the int8 interpreter computes it through
//! the whole int8 pipeline, against the float graph's, on the evaluation samples.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::calibrate::Calibrator;
use super::quantize::{ActivationQuant, QParamsSource, Quantized};
use crate::compile::Compiled;
use crate::float::FloatExecutor;
use crate::graph::{ConvertError, ConvertErrorKind as Kind, DType, Graph, Op, TensorId};
use crate::interp::Interpreter;
use crate::model::AlignedBytes;

pub(crate) mod format;
pub(crate) mod measure;
mod sample;

use measure::{Acc, Top1};
use sample::{Models, SampleMeasure, measure_sample};

/// One layer (node) of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerReport {
    /// Node index (= op index in the `.mq` model).
    pub index: usize,
    /// Node name.
    pub name: String,
    /// Op name (`Conv2d`, ...).
    pub op: String,
    /// Output tensor name.
    pub output: String,
    /// Output type (`i8`, `i16`).
    pub dtype: &'static str,
    /// Output scale.
    pub scale: f32,
    /// Output zero point.
    pub zero_point: i32,
    /// How the output parameters were chosen: an observer's name, `off-ties` (its range widened
    /// by a step off rounding ties, [`QParamsSource::OffTies`]), `fixed`, `same-as-input` or `carried`.
    pub qparams: &'static str,
    /// The observer of the output (every activation is observed, also when the parameters
    /// come from elsewhere).
    pub observer: &'static str,
    /// With the `auto` observer: which candidate range it chose and why (JSON `"choice"`, e.g.
    /// `"percentile 99.99"`, and `"why"`, e.g. `"least mean squared error over 97 samples (3
    /// outlier samples left out); minmax 3.1 dB worse"`; both absent for other observers).
    pub auto: Option<super::auto::AutoChoice>,
    /// The calibrated range of the output.
    pub range: (f32, f32),
    /// Smallest and largest weight scale (weighted ops), and how many.
    pub weight_scales: Option<(f32, f32, usize)>,
    /// Where the weight scales come from (weighted ops): `minmax` (computed) or `carried`
    /// (from a QDQ model).
    pub weight_source: Option<&'static str>,
    /// Bits of the quantized weights (weighted ops): 8, or 4 with
    /// [`QuantizeOptions::weight_bits`](super::QuantizeOptions::weight_bits).
    pub weight_bits: Option<u8>,
    /// Signal-to-quantization-noise ratio of the dequantized int8 output against the float
    /// output over all evaluation samples, in dB: `10 log10(Σ f² / Σ (f - q)²)`. `None` when the
    /// outputs are identical (infinite SQNR).
    pub sqnr_db: Option<f64>,
    /// Largest `|f - q|`.
    pub max_abs_error: f32,
    /// Elements per sample.
    pub elements: usize,
}

/// Model-level figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReport {
    /// The quantization mode: `static int8` (int8 weights and activations), `static 16x8`
    /// (int16 activations), `static int8 + 16x8 layers` (some layers in 16x8), either int8 one
    /// followed by `, int4 weights` when layers have 4-bit weights, `weight-only int8`
    /// or `dynamic int8` ([`evaluate_hybrid`]: int8 weights, float activations).
    pub mode: &'static str,
    /// Evaluation samples.
    pub samples: usize,
    /// Fraction of rows (samples × leading axes of the first output) where the float and the int8
    /// outputs have the same arg-max; `None` when the first output has one element per row.
    pub top1_agreement: Option<f64>,
    /// Float accuracy against the labels, when given.
    pub float_accuracy: Option<f64>,
    /// Int8 accuracy against the labels, when given.
    pub int8_accuracy: Option<f64>,
    /// SQNR of the first graph output (dB; `None` if identical).
    pub output_sqnr_db: Option<f64>,
    /// Bytes of the float graph's constants (weights, biases).
    pub float_weight_bytes: usize,
    /// Bytes of the quantized graph's constants.
    pub int8_weight_bytes: usize,
    /// Size of the `.mq` model (constants, prepared kernel parameters, metadata).
    pub model_bytes: usize,
    /// Arena the model needs (activations and scratch).
    pub arena_bytes: usize,
    /// Multiply-accumulates per inference.
    pub macs: u64,
    /// With automatic observers: the model-level range choice and its scores (JSON
    /// `"range_choice"`: `{"chosen", "why", "samples", "scores": [{"policy", "sqnr_db", "samples"}]}`).
    pub range_choice: Option<super::auto::ModelChoice>,
}

/// A model input's or output's quantization (what a caller uses to quantize inputs and
/// dequantize outputs).
#[derive(Debug, Clone, PartialEq)]
pub struct IoQuant {
    /// Tensor name.
    pub name: String,
    /// Shape in the graph.
    pub shape: Vec<usize>,
    /// `i8` or `i16`.
    pub dtype: &'static str,
    /// Scale.
    pub scale: f32,
    /// Zero point.
    pub zero_point: i32,
    /// With the `auto` observer: the range it chose and why (as [`LayerReport::auto`]; JSON
    /// `"choice"` and `"why"`, absent otherwise).
    pub auto: Option<super::auto::AutoChoice>,
}

/// The quantization report ([`evaluate`]). [`Report::to_json`] writes it as JSON (no serde in
/// core).
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Model-level figures.
    pub model: ModelReport,
    /// Graph inputs.
    pub inputs: Vec<IoQuant>,
    /// Graph outputs.
    pub outputs: Vec<IoQuant>,
    /// One entry per node, in order.
    pub layers: Vec<LayerReport>,
}

/// Smallest and largest weight scale, and how many.
fn scale_range(q: &crate::graph::TensorQuant) -> (f32, f32, usize) {
    let lo = q.scales.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = q.scales.iter().copied().fold(0f32, f32::max);
    (lo, hi, q.scales.len())
}
fn source_name(a: &ActivationQuant) -> &'static str {
    a.source.name()
}

fn observer_name(a: &ActivationQuant, kind: Option<super::ObserverKind>) -> &'static str {
    match (a.source, kind) {
        (QParamsSource::Observed(k) | QParamsSource::OffTies(k), _) | (_, Some(k)) => k.name(),
        _ => "none",
    }
}

fn interp_err(e: crate::Error) -> ConvertError {
    ConvertError::new(Kind::Unsupported, format!("int8 interpreter: {e}"))
}

/// Runs `samples` through the float graph (the calibrator's) and through the compiled int8
/// model op by op ([`Interpreter::run_op`], reading each op's output with
/// [`Interpreter::tensor_bytes`]) and measures every layer. `labels` (one class per row of the
/// first output) adds both accuracies. [`Evaluator`] does the same fed chunk by chunk.
///
/// # Errors
/// The executor's and interpreter's errors; `InvalidGraph` if the compiled model does not have
/// one op per node, or `labels` does not have one label per row.
pub fn evaluate<S, V>(
    calibrator: &Calibrator<'_>,
    quantized: &Quantized,
    compiled: &Compiled,
    samples: &[S],
    labels: Option<&[usize]>,
) -> Result<Report, ConvertError>
where
    S: AsRef<[V]> + Sync,
    V: AsRef<[f32]>,
{
    evaluate_with_progress(calibrator, quantized, compiled, samples, labels, &mut |_| {})
}

/// [`evaluate`], calling `progress` with the number of samples done after each sample.
///
/// # Errors
/// As [`evaluate`].
pub fn evaluate_with_progress<S, V>(
    calibrator: &Calibrator<'_>,
    quantized: &Quantized,
    compiled: &Compiled,
    samples: &[S],
    labels: Option<&[usize]>,
    progress: &mut dyn FnMut(usize),
) -> Result<Report, ConvertError>
where
    S: AsRef<[V]> + Sync,
    V: AsRef<[f32]>,
{
    let mut ev = Evaluator::new(calibrator, quantized, compiled, labels)?;
    let mut done = 0;
    for chunk in samples.chunks(super::CHUNK_SAMPLES) {
        ev.add_samples(chunk, &mut |_| {
            done += 1;
            progress(done);
        })?;
    }
    ev.finish()
}

/// The measurements summed over the samples so far, in sample order.
#[derive(Default)]
struct Totals {
    /// Per float node.
    accs: Vec<Acc>,
    top1: Top1,
    out_acc: Acc,
    samples: usize,
}

impl Totals {
    /// Adds the next sample's measurements.
    fn add(&mut self, float: &Graph, s: SampleMeasure, labels: Option<&[usize]>) -> Result<(), ConvertError> {
        for (acc, layer) in self.accs.iter_mut().zip(&s.layers) {
            if let Some(layer) = layer {
                acc.fold(layer);
            }
        }
        if let (Some(&o), Some((f, q))) = (float.outputs.first(), &s.first_output) {
            self.out_acc.add(f, q);
            self.top1.add(float, o, f, q, labels)?;
        }
        self.samples += 1;
        Ok(())
    }
}

/// The report's measurements fed chunk by chunk ([`evaluate`] streamed): create it, give it
/// the samples in order with [`add_chunk`](Self::add_chunk) (chunks of any size: the result
/// is the same bit for bit), then [`finish`](Self::finish). A recurrent graph whose
/// calibration carried its state ([`Calibrator::carries_state`]) carries it across chunks too.
///
/// ```
/// # fn demo(cal: &microquant::ptq::Calibrator<'_>, q: &microquant::ptq::Quantized,
/// #         c: &microquant::compile::Compiled, samples: &[Vec<Vec<f32>>]) -> Result<(), microquant::graph::ConvertError> {
/// use microquant::ptq::{Evaluator, evaluate};
/// let mut ev = Evaluator::new(cal, q, c, None)?;
/// for chunk in samples.chunks(16) {
///     ev.add_chunk(chunk)?;
/// }
/// assert_eq!(ev.finish()?, evaluate(cal, q, c, samples, None)?);
/// # Ok(()) }
/// ```
pub struct Evaluator<'a> {
    calibrator: &'a Calibrator<'a>,
    quantized: &'a Quantized,
    labels: Option<&'a [usize]>,
    ex: FloatExecutor<'a>,
    sequence: bool,
    bytes: AlignedBytes,
    arena: Vec<u8>,
    /// True once an interpreter has run on the arena (its state is then the sequence's).
    started: bool,
    /// Quantized node -> the float node it computes (None for int8/int16 conversions).
    float_of: Vec<Option<usize>>,
    /// More executors and arenas, for the threads of [`sample::measure_split`] (made at the
    /// first chunk that splits, kept for the next).
    #[cfg(feature = "std")]
    workers: Vec<(FloatExecutor<'a>, Vec<u8>)>,
    totals: Totals,
    model_bytes: usize,
    arena_bytes: usize,
    /// The samples to come are the calibration's, in its order, from its first sample
    /// ([`reuse_calibration_activations`](Self::reuse_calibration_activations)).
    reuse: bool,
}

impl core::fmt::Debug for Evaluator<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Evaluator").field("samples", &self.totals.samples).finish_non_exhaustive()
    }
}

impl<'a> Evaluator<'a> {
    /// An evaluator of `quantized` (compiled as `compiled`) against the calibrator's float
    /// graph; `labels`: one class per row of the first output, over all the samples to come.
    ///
    /// # Errors
    /// The executor's and interpreter's errors; `InvalidGraph` if the compiled model does not
    /// have one op per node.
    pub fn new(
        calibrator: &'a Calibrator<'a>,
        quantized: &'a Quantized,
        compiled: &Compiled,
        labels: Option<&'a [usize]>,
    ) -> Result<Self, ConvertError> {
        let float: &Graph = calibrator.graph();
        let q = &quantized.graph;
        // The samples run as calibration ran them: one sequence (the LSTMs' state carried, in
        // float as in the interpreter), or each from the initial state.
        let mut ex = FloatExecutor::new(float)?;
        let sequence = calibrator.carries_state();
        ex.carry_state(sequence);
        let bytes = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + crate::interp::ARENA_ALIGN];
        let it = Interpreter::new(&bytes, &mut arena).map_err(interp_err)?;
        let ops = it.model().num_ops();
        if ops != q.nodes.len() || quantized.node_map.len() != float.nodes.len() {
            return Err(ConvertError::new(
                Kind::InvalidGraph,
                format!("the model has {ops} ops for {} nodes", q.nodes.len()),
            ));
        }
        let mut float_of: Vec<Option<usize>> = vec![None; q.nodes.len()];
        for (i, &j) in quantized.node_map.iter().enumerate() {
            match float_of.get_mut(j) {
                Some(slot) => *slot = Some(i),
                None => {
                    return Err(ConvertError::new(
                        Kind::InvalidGraph,
                        format!("node {i} maps to node {j} of {}", q.nodes.len()),
                    ));
                }
            }
        }
        Ok(Self {
            calibrator,
            quantized,
            labels,
            ex,
            sequence,
            bytes,
            arena,
            started: false,
            float_of,
            #[cfg(feature = "std")]
            workers: Vec::new(),
            totals: Totals { accs: vec![Acc::default(); q.nodes.len()], ..Totals::default() },
            model_bytes: compiled.bytes.len(),
            arena_bytes: compiled.arena_len,
            reuse: false,
        })
    }

    /// Tells the evaluator that the samples to come are the calibrator's own, in its order:
    /// each is then measured against the float activations calibration kept of it (where it
    /// kept them: [`KEPT_ACTIVATION_BYTES`](crate::ptq::KEPT_ACTIVATION_BYTES)) instead of
    /// running the float graph again. Each kept sample's inputs are compared with the sample's,
    /// bit for bit, before its activations are used: the report is the same either way.
    pub(crate) fn reuse_calibration_activations(&mut self) {
        self.reuse = true;
    }

    /// The kept float activations of the next `n` samples, when reused.
    fn kept(&self, n: usize) -> Option<&'a [crate::ptq::calibrate::Activations]> {
        if !self.reuse || self.sequence {
            return None;
        }
        #[cfg(feature = "std")]
        {
            let calibrator: &'a Calibrator<'a> = self.calibrator;
            let all = calibrator.kept_activations()?;
            all.get(self.totals.samples..self.totals.samples.checked_add(n)?)
        }
        #[cfg(not(feature = "std"))]
        {
            let _ = n;
            None
        }
    }

    /// Samples evaluated so far.
    pub fn samples(&self) -> usize {
        self.totals.samples
    }

    /// Runs the next samples (each a list of input slices, one per graph input, in the
    /// graph's layout) through both models and adds their measurements.
    ///
    /// # Errors
    /// As [`evaluate`]; labels running out before the rows do.
    pub fn add_chunk<S, V>(&mut self, samples: &[S]) -> Result<(), ConvertError>
    where
        S: AsRef<[V]> + Sync,
        V: AsRef<[f32]>,
    {
        self.add_samples(samples, &mut |_| {})
    }

    /// [`add_chunk`](Self::add_chunk), calling `progress` with the sample's index in the
    /// chunk after each one.
    pub(crate) fn add_samples<S, V>(
        &mut self,
        samples: &[S],
        progress: &mut dyn FnMut(usize),
    ) -> Result<(), ConvertError>
    where
        S: AsRef<[V]> + Sync,
        V: AsRef<[f32]>,
    {
        if samples.is_empty() {
            return Ok(());
        }
        let float: &Graph = self.calibrator.graph();
        let m = Models { float, quantized: self.quantized, float_of: &self.float_of };
        let labels = self.labels;
        let kept = self.kept(samples.len());
        // Samples that each start from the initial state run on threads on the host, a part of
        // the chunk per thread, and are folded in order.
        #[cfg(feature = "std")]
        {
            let threads = if self.sequence || std::env::var_os("MQ_EVAL_SEQ").is_some() {
                1
            } else {
                crate::parallel::max_threads().min(samples.len())
            };
            if threads > 1 {
                while self.workers.len() + 1 < threads {
                    self.workers.push((FloatExecutor::new(float)?, vec![0u8; self.arena.len()]));
                }
                let mut execs: Vec<(&mut FloatExecutor<'a>, &mut [u8])> = vec![(&mut self.ex, &mut self.arena[..])];
                execs.extend(self.workers.iter_mut().map(|(ex, arena)| (ex, &mut arena[..])));
                let parts = execs
                    .into_iter()
                    .take(threads)
                    .enumerate()
                    .map(|(t, (ex, arena))| {
                        let range = t * samples.len() / threads..(t + 1) * samples.len() / threads;
                        let kept = kept.and_then(|k| k.get(range.clone()));
                        sample::Part { ex, arena, samples: &samples[range], kept }
                    })
                    .collect();
                let measured = sample::measure_split(m, &self.bytes, parts)?;
                self.started = true;
                for (k, s) in measured.into_iter().enumerate() {
                    self.totals.add(float, s, labels)?;
                    progress(k);
                }
                return Ok(());
            }
        }
        // One interpreter per chunk over the same arena: after the first, it keeps the state
        // the previous chunk's left.
        let mut it = if self.started {
            Interpreter::resume(&self.bytes, &mut self.arena)
        } else {
            Interpreter::new(&self.bytes, &mut self.arena)
        }
        .map_err(interp_err)?;
        self.started = true;
        for (k, s) in samples.iter().enumerate() {
            let inputs: Vec<&[f32]> = s.as_ref().iter().map(AsRef::as_ref).collect();
            if !self.sequence {
                it.reset_state().map_err(interp_err)?;
            }
            let kept = kept.and_then(|a| a.get(k)).map(Vec::as_slice);
            let measured = measure_sample(m, &self.ex, &mut it, &inputs, kept)?;
            self.totals.add(float, measured, labels)?;
            progress(k);
        }
        Ok(())
    }

    /// The report over every sample added.
    ///
    /// # Errors
    /// `InvalidGraph` if `labels` does not have one label per row.
    pub fn finish(self) -> Result<Report, ConvertError> {
        let calibrator = self.calibrator;
        let float: &Graph = calibrator.graph();
        let observer_of = |t: TensorId| calibrator.kind(t);
        let quantized = self.quantized;
        let q = &quantized.graph;
        let labels = self.labels;
        let Totals { accs, top1, out_acc, samples } = &self.totals;
        let aq = |t: TensorId| quantized.activations.get(t.index()).copied().flatten();
        top1.check_labels(labels)?;
        let layers = float
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, node)| {
                let y = node.output(0)?;
                let a = aq(y)?;
                let weight_scales = match node.op {
                    Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) | Op::TransposeConv2d(_) => q
                        .nodes
                        .get(quantized.node_map.get(i).copied().unwrap_or(usize::MAX))
                        .and_then(|n| n.input(1))
                        .and_then(|w| q.tensor(w))
                        .and_then(|w| w.quant.as_ref())
                        .map(scale_range),
                    _ => None,
                };
                Some(LayerReport {
                    index: i,
                    name: node.name.clone(),
                    op: String::from(node.op.name()),
                    output: float.tensor(y).map(|t| t.name.clone()).unwrap_or_default(),
                    dtype: a.dtype.name(),
                    scale: a.scale,
                    zero_point: a.zero_point,
                    qparams: source_name(&a),
                    observer: observer_name(&a, observer_of(y)),
                    auto: quantized.auto_choices.get(y.index()).cloned().flatten(),
                    range: a.range,
                    weight_scales,
                    weight_source: quantized.weight_sources.get(i).copied().flatten().map(|w| w.name()),
                    weight_bits: quantized.weight_bits.get(i).copied().flatten(),
                    sqnr_db: accs[i].sqnr(),
                    max_abs_error: accs[i].max_abs,
                    elements: float.tensor(y).and_then(|t| t.num_elements()).unwrap_or(0),
                })
            })
            .collect();
        let io = |ids: &[crate::graph::TensorId]| -> Vec<IoQuant> {
            ids.iter()
                .filter_map(|&t| {
                    let a = aq(t)?;
                    let ft = float.tensor(t)?;
                    Some(IoQuant {
                        name: ft.name.clone(),
                        shape: ft.shape.clone(),
                        dtype: a.dtype.name(),
                        scale: a.scale,
                        zero_point: a.zero_point,
                        auto: quantized.auto_choices.get(t.index()).cloned().flatten(),
                    })
                })
                .collect()
        };
        let act_types = |d: DType| q.tensors.iter().any(|t| t.dtype == d && !t.is_constant());
        let int4 = quantized.weight_bits.contains(&Some(4));
        let mode = match (act_types(DType::I8), act_types(DType::I16), int4) {
            (true, true, false) => "static int8 + 16x8 layers",
            (true, true, true) => "static int8 + 16x8 layers, int4 weights",
            (false, true, _) => "static 16x8",
            (_, _, true) => "static int8, int4 weights",
            _ => "static int8",
        };
        Ok(Report {
            model: ModelReport {
                mode,
                samples: *samples,
                top1_agreement: top1.frac(top1.agree),
                float_accuracy: labels.and(top1.frac(top1.float_correct)),
                int8_accuracy: labels.and(top1.frac(top1.quantized_correct)),
                output_sqnr_db: out_acc.sqnr(),
                float_weight_bytes: float.constant_totals().bytes,
                int8_weight_bytes: q.constant_totals().bytes,
                model_bytes: self.model_bytes,
                arena_bytes: self.arena_bytes,
                macs: float.total_macs(),
                range_choice: quantized.range_choice.clone(),
            },
            inputs: io(&float.inputs),
            outputs: io(&float.outputs),
            layers,
        })
    }
}

/// The report of a model whose weights alone are quantized
/// ([`quantize_weight_only`](super::quantize_weight_only),
/// [`quantize_dynamic`](super::quantize_dynamic)): `samples` run through the float graph and
/// through the hybrid one ([`Hybrid::executor`](super::Hybrid::executor)), and every layer's
/// output is compared, as [`evaluate`] does for int8 (`labels` add both accuracies). In this
/// report the mode is `weight-only int8` or `dynamic int8`, the layers' and the inputs' and
/// outputs' type is `f32` with no scale (`NaN`, `null` in JSON) and zero point 0, their
/// parameters `float`, their range the float outputs' range over the samples; `int8_accuracy` is
/// the quantized model's; there is no `.mq` or arena (0).
///
/// # Errors
/// The executor's errors; `InvalidGraph` if the graphs do not have the same nodes, inputs and
/// outputs, or `labels` does not have one label per row.
pub fn evaluate_hybrid<S, V>(
    float: &Graph,
    hybrid: &super::Hybrid,
    samples: &[S],
    labels: Option<&[usize]>,
    progress: &mut dyn FnMut(usize),
) -> Result<Report, ConvertError>
where
    S: AsRef<[V]>,
    V: AsRef<[f32]>,
{
    let w = &hybrid.graph;
    if w.nodes.len() != float.nodes.len() || w.inputs != float.inputs || w.outputs != float.outputs {
        return Err(ConvertError::new(Kind::InvalidGraph, "the quantized graph does not have the float graph's nodes"));
    }
    let (fx, wx) = (FloatExecutor::new(float)?, hybrid.executor()?);
    let mut accs = vec![Acc::default(); float.nodes.len()];
    let mut ranges = vec![(f32::INFINITY, f32::NEG_INFINITY); float.nodes.len()];
    let (mut top1, mut out_acc) = (Top1::default(), Acc::default());
    for (done, s) in samples.iter().enumerate() {
        let inputs: Vec<&[f32]> = s.as_ref().iter().map(AsRef::as_ref).collect();
        let (fa, wa) = (fx.run_all(&inputs)?, wx.run_all(&inputs)?);
        let value = |all: &[Option<Vec<f32>>], t: TensorId| {
            all.get(t.index()).and_then(|v| v.as_deref()).unwrap_or(&[]).to_vec()
        };
        for (i, node) in float.nodes.iter().enumerate() {
            let Some(y) = node.output(0) else { continue };
            let f = value(&fa, y);
            if let (Some(acc), Some(r)) = (accs.get_mut(i), ranges.get_mut(i)) {
                acc.add(&f, &value(&wa, y));
                *r = f.iter().fold(*r, |(lo, hi), &v| (lo.min(v), hi.max(v)));
            }
        }
        if let Some(&o) = float.outputs.first() {
            let (f, q) = (value(&fa, o), value(&wa, o));
            out_acc.add(&f, &q);
            top1.add(float, o, &f, &q, labels)?;
        }
        progress(done + 1);
    }
    top1.check_labels(labels)?;
    let quantized = |i: usize| hybrid.quantized_nodes.contains(&i);
    let layers = float
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, node)| {
            let y = node.output(0)?;
            let weight_scales = w
                .nodes
                .get(i)
                .filter(|_| quantized(i))
                .and_then(|n| n.input(1))
                .and_then(|t| w.tensor(t))
                .and_then(|t| t.quant.as_ref())
                .map(scale_range);
            Some(LayerReport {
                index: i,
                name: node.name.clone(),
                op: String::from(node.op.name()),
                output: float.tensor(y).map(|t| t.name.clone()).unwrap_or_default(),
                dtype: DType::F32.name(),
                scale: f32::NAN,
                zero_point: 0,
                qparams: "float",
                observer: "none",
                auto: None,
                range: ranges.get(i).copied().filter(|r| r.0 <= r.1).unwrap_or((0.0, 0.0)),
                weight_scales,
                weight_source: weight_scales.map(|_| super::WeightSource::MinMax.name()),
                weight_bits: weight_scales.map(|_| 8),
                sqnr_db: accs[i].sqnr(),
                max_abs_error: accs[i].max_abs,
                elements: float.tensor(y).and_then(|t| t.num_elements()).unwrap_or(0),
            })
        })
        .collect();
    let io = |ids: &[TensorId]| -> Vec<IoQuant> {
        ids.iter()
            .filter_map(|&t| float.tensor(t))
            .map(|t| IoQuant {
                name: t.name.clone(),
                shape: t.shape.clone(),
                dtype: DType::F32.name(),
                scale: f32::NAN,
                zero_point: 0,
                auto: None,
            })
            .collect()
    };
    Ok(Report {
        model: ModelReport {
            mode: match hybrid.mode {
                super::HybridMode::WeightOnly => "weight-only int8",
                super::HybridMode::Dynamic => "dynamic int8",
            },
            samples: samples.len(),
            top1_agreement: top1.frac(top1.agree),
            float_accuracy: labels.and(top1.frac(top1.float_correct)),
            int8_accuracy: labels.and(top1.frac(top1.quantized_correct)),
            output_sqnr_db: out_acc.sqnr(),
            float_weight_bytes: float.constant_totals().bytes,
            int8_weight_bytes: w.constant_totals().bytes,
            model_bytes: 0,
            arena_bytes: 0,
            macs: float.total_macs(),
            range_choice: None,
        },
        inputs: io(&float.inputs),
        outputs: io(&float.outputs),
        layers,
    })
}

/// Quantizes `x` into `buf` (int8 or little-endian int16), rounding half away from zero.
pub(in crate::ptq) fn write_quantized(buf: &mut [u8], x: &[f32], a: &ActivationQuant) {
    let q = |v: f32| libm::round(f64::from(v) / f64::from(a.scale)) as i64 + i64::from(a.zero_point);
    if a.dtype == DType::I16 {
        for (c, &v) in buf.chunks_exact_mut(2).zip(x) {
            c.copy_from_slice(&(q(v).clamp(-32768, 32767) as i16).to_le_bytes());
        }
    } else {
        for (b, &v) in buf.iter_mut().zip(x) {
            *b = q(v).clamp(-128, 127) as i8 as u8;
        }
    }
}

pub(in crate::ptq) fn read_dequantized(raw: &[u8], a: &ActivationQuant) -> Vec<f32> {
    let d = |q: i32| ((q - a.zero_point) as f64 * f64::from(a.scale)) as f32;
    if a.dtype == DType::I16 {
        raw.chunks_exact(2).map(|c| d(i32::from(i16::from_le_bytes([c[0], c[1]])))).collect()
    } else {
        raw.iter().map(|&b| d(i32::from(b as i8))).collect()
    }
}
