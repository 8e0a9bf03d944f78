//! The per-layer report: each layer's int8 output, as the int8 interpreter computes it through
//! the whole int8 pipeline, against the float graph's, on the evaluation samples.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write as _;

use super::calibrate::Calibrator;
use super::quantize::{ActivationQuant, QParamsSource, Quantized};
use crate::compile::Compiled;
use crate::float::FloatExecutor;
use crate::graph::{ConvertError, ConvertErrorKind as Kind, DType, Graph, Op, TensorId};
use crate::interp::Interpreter;
use crate::model::AlignedBytes;

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
    /// How the output parameters were chosen: an observer's name, `fixed` or `same-as-input`.
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
    /// (int16 activations), `static int8 + 16x8 layers` (some layers in 16x8), `weight-only int8`
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

/// Interleaved partial sums of [`Acc::add`].
const ACC_LANES: usize = 8;

#[derive(Clone, Copy, Default)]
struct Acc {
    signal: f64,
    noise: f64,
    max_abs: f32,
}

impl Acc {
    /// Adds one output's squares. The sums run in [`ACC_LANES`] interleaved f64 partial sums
    /// (element `i` into lane `i % ACC_LANES`), folded in lane order at the end: a fixed order,
    /// the same on every target, that the compiler can vectorize (a single running sum cannot be).
    fn add(&mut self, f: &[f32], q: &[f32]) {
        let n = f.len().min(q.len());
        let (f, q) = (&f[..n], &q[..n]);
        let mut signal = [0f64; ACC_LANES];
        let mut noise = [0f64; ACC_LANES];
        let mut max_abs = [0f32; ACC_LANES];
        let whole = n - n % ACC_LANES;
        for (fc, qc) in f[..whole].chunks_exact(ACC_LANES).zip(q[..whole].chunks_exact(ACC_LANES)) {
            for l in 0..ACC_LANES {
                let (a, b) = (fc[l], qc[l]);
                let d = f64::from(a) - f64::from(b);
                signal[l] += f64::from(a) * f64::from(a);
                noise[l] += d * d;
                max_abs[l] = max_abs[l].max((a - b).abs());
            }
        }
        for (l, (&a, &b)) in f[whole..].iter().zip(&q[whole..]).enumerate() {
            let d = f64::from(a) - f64::from(b);
            signal[l] += f64::from(a) * f64::from(a);
            noise[l] += d * d;
            max_abs[l] = max_abs[l].max((a - b).abs());
        }
        self.signal += signal.iter().sum::<f64>();
        self.noise += noise.iter().sum::<f64>();
        self.max_abs = max_abs.iter().fold(self.max_abs, |m, &v| m.max(v));
    }
    fn sqnr(&self) -> Option<f64> {
        if self.noise == 0.0 {
            None
        } else if self.signal == 0.0 {
            Some(f64::NEG_INFINITY)
        } else {
            Some(10.0 * libm::log10(self.signal / self.noise))
        }
    }
}

/// Smallest and largest weight scale, and how many.
fn scale_range(q: &crate::graph::TensorQuant) -> (f32, f32, usize) {
    let lo = q.scales.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = q.scales.iter().copied().fold(0f32, f32::max);
    (lo, hi, q.scales.len())
}

/// Top-1 agreement and accuracies over the rows (leading axes) of the first graph output.
#[derive(Default)]
struct Top1 {
    rows: usize,
    agree: usize,
    float_correct: usize,
    quantized_correct: usize,
}

impl Top1 {
    /// One sample's first output `o`: float `f`, quantized model `q` (the same length).
    fn add(
        &mut self,
        float: &Graph,
        o: TensorId,
        f: &[f32],
        q: &[f32],
        labels: Option<&[usize]>,
    ) -> Result<(), ConvertError> {
        let depth = float.tensor(o).and_then(|t| t.shape.last().copied()).unwrap_or(1).max(1);
        if depth == 1 {
            return Ok(());
        }
        for (fr, qr) in f.chunks_exact(depth).zip(q.chunks_exact(depth)) {
            let (fa, qa) = (argmax(fr), argmax(qr));
            self.agree += usize::from(fa == qa);
            if let Some(l) = labels {
                let label = *l.get(self.rows).ok_or_else(|| {
                    ConvertError::new(Kind::InvalidGraph, format!("{} labels for more rows", l.len()))
                })?;
                self.float_correct += usize::from(fa == label);
                self.quantized_correct += usize::from(qa == label);
            }
            self.rows += 1;
        }
        Ok(())
    }

    fn check_labels(&self, labels: Option<&[usize]>) -> Result<(), ConvertError> {
        match labels {
            Some(l) if l.len() != self.rows => {
                Err(ConvertError::new(Kind::InvalidGraph, format!("{} labels for {} output rows", l.len(), self.rows)))
            }
            _ => Ok(()),
        }
    }

    fn frac(&self, n: usize) -> Option<f64> {
        (self.rows > 0).then(|| n as f64 / self.rows as f64)
    }
}

fn source_name(a: &ActivationQuant) -> &'static str {
    a.source.name()
}

fn observer_name(a: &ActivationQuant, kind: Option<super::ObserverKind>) -> &'static str {
    match (a.source, kind) {
        (QParamsSource::Observed(k), _) | (_, Some(k)) => k.name(),
        _ => "none",
    }
}

fn argmax(v: &[f32]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
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
    S: AsRef<[V]>,
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
    S: AsRef<[V]>,
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
    accs: Vec<Acc>,
    top1: Top1,
    out_acc: Acc,
    samples: usize,
    model_bytes: usize,
    arena_bytes: usize,
}

impl core::fmt::Debug for Evaluator<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Evaluator").field("samples", &self.samples).finish_non_exhaustive()
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
            accs: vec![Acc::default(); q.nodes.len()],
            top1: Top1::default(),
            out_acc: Acc::default(),
            samples: 0,
            model_bytes: compiled.bytes.len(),
            arena_bytes: compiled.arena_len,
        })
    }

    /// Samples evaluated so far.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Runs the next samples (each a list of input slices, one per graph input, in the
    /// graph's layout) through both models and adds their measurements.
    ///
    /// # Errors
    /// As [`evaluate`]; labels running out before the rows do.
    pub fn add_chunk<S, V>(&mut self, samples: &[S]) -> Result<(), ConvertError>
    where
        S: AsRef<[V]>,
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
        S: AsRef<[V]>,
        V: AsRef<[f32]>,
    {
        if samples.is_empty() {
            return Ok(());
        }
        let float: &Graph = self.calibrator.graph();
        let quantized = self.quantized;
        let aq = |t: TensorId| quantized.activations.get(t.index()).copied().flatten();
        // One interpreter per chunk over the same arena: after the first, it keeps the state
        // the previous chunk's left.
        let mut it = if self.started {
            Interpreter::resume(&self.bytes, &mut self.arena)
        } else {
            Interpreter::new(&self.bytes, &mut self.arena)
        }
        .map_err(interp_err)?;
        self.started = true;
        let model = *it.model();
        for (k, s) in samples.iter().enumerate() {
            let inputs: Vec<&[f32]> = s.as_ref().iter().map(AsRef::as_ref).collect();
            if !self.sequence {
                it.reset_state().map_err(interp_err)?;
            }
            let all = self.ex.run_all(&inputs)?;
            for (k, (&fid, x)) in float.inputs.iter().zip(&inputs).enumerate() {
                let a = aq(fid)
                    .ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("input {k} is not quantized")))?;
                let buf = it.input_bytes(k).map_err(interp_err)?;
                write_quantized(buf, x, &a);
            }
            let mut last_out: Vec<f32> = Vec::new();
            for (j, fi) in self.float_of.iter().enumerate() {
                it.run_op(j).map_err(interp_err)?;
                let Some(i) = *fi else { continue };
                let Some(fy) = float.nodes[i].output(0) else { continue };
                let a = aq(fy).ok_or_else(|| {
                    ConvertError::new(Kind::InvalidGraph, format!("node {i} output is not quantized"))
                })?;
                let t = model.op(j as u32).and_then(|op| op.output(0)).map_err(interp_err)?;
                let raw = it.tensor_bytes(t).map_err(interp_err)?;
                let deq = read_dequantized(raw, &a);
                let f = all.get(fy.index()).and_then(|v| v.as_deref()).unwrap_or(&[]);
                self.accs[i].add(f, &deq);
                if float.outputs.first() == Some(&fy) {
                    last_out = deq;
                }
            }
            // First graph output: top-1 per row of its last axis.
            if let Some(&o) = float.outputs.first() {
                let f = all.get(o.index()).and_then(|v| v.as_deref()).unwrap_or(&[]);
                if last_out.len() != f.len() {
                    // The output is a graph input (no node writes it): dequantize the input.
                    last_out = f.to_vec();
                }
                self.out_acc.add(f, &last_out);
                self.top1.add(float, o, f, &last_out, self.labels)?;
            }
            self.samples += 1;
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
        let (accs, top1, out_acc) = (&self.accs, &self.top1, &self.out_acc);
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
        let mode = match (act_types(DType::I8), act_types(DType::I16)) {
            (true, true) => "static int8 + 16x8 layers",
            (false, true) => "static 16x8",
            _ => "static int8",
        };
        Ok(Report {
            model: ModelReport {
                mode,
                samples: self.samples,
                top1_agreement: top1.frac(top1.agree),
                float_accuracy: labels.and(top1.frac(top1.float_correct)),
                int8_accuracy: labels.and(top1.frac(top1.quantized_correct)),
                output_sqnr_db: out_acc.sqnr(),
                float_weight_bytes: float.constant_totals().bytes,
                int8_weight_bytes: q.constant_totals().bytes,
                model_bytes: self.model_bytes,
                arena_bytes: self.arena_bytes,
                macs: float.total_macs(),
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
        },
        inputs: io(&float.inputs),
        outputs: io(&float.outputs),
        layers,
    })
}

/// Quantizes `x` into `buf` (int8 or little-endian int16), rounding half away from zero.
fn write_quantized(buf: &mut [u8], x: &[f32], a: &ActivationQuant) {
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

fn read_dequantized(raw: &[u8], a: &ActivationQuant) -> Vec<f32> {
    let d = |q: i32| ((q - a.zero_point) as f64 * f64::from(a.scale)) as f32;
    if a.dtype == DType::I16 {
        raw.chunks_exact(2).map(|c| d(i32::from(i16::from_le_bytes([c[0], c[1]])))).collect()
    } else {
        raw.iter().map(|&b| d(i32::from(b as i8))).collect()
    }
}

// ---- JSON ----

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_f64(out: &mut String, v: Option<f64>) {
    match v {
        Some(v) if v.is_finite() => {
            let _ = write!(out, "{v}");
        }
        _ => out.push_str("null"),
    }
}

fn json_f32(out: &mut String, v: f32) {
    // f32 Display is the shortest string that reads back to the same f32.
    if v.is_finite() {
        let _ = write!(out, "{v}");
    } else {
        out.push_str("null");
    }
}

fn json_io(out: &mut String, io: &[IoQuant]) {
    out.push('[');
    for (i, t) in io.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        json_str(out, &t.name);
        let _ = write!(out, ",\"shape\":{:?},\"dtype\":\"{}\",\"scale\":", t.shape, t.dtype);
        json_f32(out, t.scale);
        let _ = write!(out, ",\"zero_point\":{}", t.zero_point);
        if let Some(c) = &t.auto {
            out.push_str(",\"choice\":");
            json_str(out, c.name());
            out.push_str(",\"why\":");
            json_str(out, &c.why());
        }
        out.push('}');
    }
    out.push(']');
}

impl Report {
    /// The report as compact JSON: `{"model": {...}, "inputs": [...], "outputs": [...],
    /// "layers": [...]}` with the fields of [`ModelReport`], [`IoQuant`] and [`LayerReport`]
    /// (snake_case; ranges as `[lo, hi]`; weight scales as `{"min", "max", "count"}` or null;
    /// infinite or undefined numbers as null).
    pub fn to_json(&self) -> String {
        let mut o = String::new();
        let m = &self.model;
        o.push_str("{\"model\":{\"mode\":");
        json_str(&mut o, m.mode);
        let _ = write!(o, ",\"samples\":{},\"top1_agreement\":", m.samples);
        json_f64(&mut o, m.top1_agreement);
        o.push_str(",\"float_accuracy\":");
        json_f64(&mut o, m.float_accuracy);
        o.push_str(",\"int8_accuracy\":");
        json_f64(&mut o, m.int8_accuracy);
        o.push_str(",\"output_sqnr_db\":");
        json_f64(&mut o, m.output_sqnr_db);
        let _ = write!(
            o,
            ",\"float_weight_bytes\":{},\"int8_weight_bytes\":{},\"model_bytes\":{},\"arena_bytes\":{},\"macs\":{}}}",
            m.float_weight_bytes, m.int8_weight_bytes, m.model_bytes, m.arena_bytes, m.macs
        );
        o.push_str(",\"inputs\":");
        json_io(&mut o, &self.inputs);
        o.push_str(",\"outputs\":");
        json_io(&mut o, &self.outputs);
        o.push_str(",\"layers\":[");
        for (i, l) in self.layers.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(o, "{{\"index\":{},\"name\":", l.index);
            json_str(&mut o, &l.name);
            o.push_str(",\"op\":");
            json_str(&mut o, &l.op);
            o.push_str(",\"output\":");
            json_str(&mut o, &l.output);
            let _ = write!(o, ",\"dtype\":\"{}\",\"scale\":", l.dtype);
            json_f32(&mut o, l.scale);
            let _ = write!(
                o,
                ",\"zero_point\":{},\"qparams\":\"{}\",\"observer\":\"{}\"",
                l.zero_point, l.qparams, l.observer
            );
            if let Some(c) = &l.auto {
                o.push_str(",\"choice\":");
                json_str(&mut o, c.name());
                o.push_str(",\"why\":");
                json_str(&mut o, &c.why());
            }
            o.push_str(",\"range\":[");
            json_f32(&mut o, l.range.0);
            o.push(',');
            json_f32(&mut o, l.range.1);
            o.push_str("],\"weight_scales\":");
            match l.weight_scales {
                Some((lo, hi, n)) => {
                    o.push_str("{\"min\":");
                    json_f32(&mut o, lo);
                    o.push_str(",\"max\":");
                    json_f32(&mut o, hi);
                    let _ = write!(o, ",\"count\":{n}}}");
                }
                None => o.push_str("null"),
            }
            o.push_str(",\"weight_source\":");
            match l.weight_source {
                Some(w) => json_str(&mut o, w),
                None => o.push_str("null"),
            }
            o.push_str(",\"sqnr_db\":");
            json_f64(&mut o, l.sqnr_db);
            o.push_str(",\"max_abs_error\":");
            json_f32(&mut o, l.max_abs_error);
            let _ = write!(o, ",\"elements\":{}}}", l.elements);
        }
        o.push_str("]}");
        o
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| String::from("-"), |v| format!("{:.2}%", v * 100.0))
}

fn db(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.1}"),
        Some(_) => String::from("-inf"),
        None => String::from("inf"),
    }
}

/// A readable table: the model figures, then one line per layer (index, name, op, type, SQNR,
/// largest error, scale, zero point, how the parameters were chosen, calibrated range), the
/// layers with the lowest SQNR marked `<`.
impl core::fmt::Display for Report {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let m = &self.model;
        writeln!(
            f,
            "mode {} | {} samples | output SQNR {} dB | top-1 agreement {}",
            m.mode,
            m.samples,
            db(m.output_sqnr_db),
            pct(m.top1_agreement)
        )?;
        if m.float_accuracy.is_some() {
            writeln!(f, "accuracy: float {} | int8 {}", pct(m.float_accuracy), pct(m.int8_accuracy))?;
        }
        writeln!(
            f,
            "weights {} B -> {} B | .mq {} B | arena {} B | {} MACs",
            m.float_weight_bytes, m.int8_weight_bytes, m.model_bytes, m.arena_bytes, m.macs
        )?;
        let name_w = self.layers.iter().map(|l| l.name.chars().count()).max().unwrap_or(5).clamp(5, 32);
        let op_w = self.layers.iter().map(|l| l.op.len()).max().unwrap_or(2).max(2);
        // The three worst layers (by SQNR) get a marker.
        let mut order: Vec<(usize, f64)> =
            self.layers.iter().enumerate().filter_map(|(i, l)| l.sqnr_db.map(|s| (i, s))).collect();
        order.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(core::cmp::Ordering::Equal));
        let worst: Vec<usize> = order.iter().take(3).map(|&(i, _)| i).collect();
        writeln!(
            f,
            "{:>3}  {:name_w$}  {:op_w$}  {:5} {:>8} {:>10} {:>11} {:>6}  {:14} range",
            "#", "layer", "op", "type", "SQNR dB", "max|err|", "scale", "zp", "qparams"
        )?;
        for (k, l) in self.layers.iter().enumerate() {
            let mut name: String = l.name.chars().take(name_w).collect();
            if l.name.chars().count() > name_w {
                name.pop();
                name.push('~');
            }
            writeln!(
                f,
                "{:>3}  {:name_w$}  {:op_w$}  {:5} {:>8} {:>10.3e} {:>11} {:>6}  {:14} [{:.4}, {:.4}]{}",
                l.index,
                name,
                l.op,
                l.dtype,
                db(l.sqnr_db),
                l.max_abs_error,
                if l.scale.is_nan() { String::from("-") } else { format!("{:.4e}", l.scale) },
                l.zero_point,
                l.qparams,
                l.range.0,
                l.range.1,
                if worst.contains(&k) { " <" } else { "" }
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqnr_and_json_escapes() {
        let mut a = Acc::default();
        a.add(&[1.0, -1.0], &[1.1, -0.9]);
        // 10 log10(2 / 0.02) = 20 dB.
        assert!((a.sqnr().unwrap() - 20.0).abs() < 1e-4);
        assert_eq!(Acc::default().sqnr(), None);
        let mut s = String::new();
        json_str(&mut s, "a\"b\\c\n\u{1}");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\"");
        let mut s = String::new();
        json_f64(&mut s, Some(f64::INFINITY));
        json_f32(&mut s, 0.1);
        assert_eq!(s, "null0.1");
    }
}
