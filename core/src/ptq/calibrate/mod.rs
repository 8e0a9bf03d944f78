//! Calibration: samples through the float graph into one observer per activation.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;

use super::auto::{AutoChoice, RangePolicy};
use super::observer::{AnyObserver, ObserverKind};
use super::source::{CHUNK_SAMPLES, SampleSource, SliceSource, SourceError, SourceErrorKind, StreamError};
use crate::float::FloatExecutor;
use crate::graph::{ConvertError, ConvertErrorKind as Kind, Graph, Op, TensorId};

mod replay;
mod state_bytes;

pub use replay::{REPLAY_BYTES, ReplaySamples};

/// Which observer each activation gets.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationOptions {
    /// The observer of every activation not named in `overrides`.
    pub observer: ObserverKind,
    /// Per-layer choices: `(name, kind)` where `name` is a node name (its output) or a tensor
    /// name (e.g. a graph input).
    pub overrides: Vec<(String, ObserverKind)>,
    /// Histogram-based observers make two passes over the data (a range pass, then the
    /// histogram with the peer tools' exact binning); with `false` they stream in one pass
    /// (bins up to twice as wide, aligned to powers of two). Min/max observers always take one
    /// pass.
    pub two_pass: bool,
    /// A graph with an LSTM keeps its hidden and cell states from one invoke to the next in the
    /// int8 runtime (as TFLite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM does), so by default the
    /// samples are calibrated the same way: in the order given, as one sequence, each starting
    /// from the state the previous one left (the chunks of a stream, as a voice-activity
    /// detector is fed). With `true`, each sample starts from the graph's initial state
    /// (independent sequences, each run after [`crate::interp::Interpreter::reset_state`]).
    /// Graphs without an LSTM ignore it.
    pub reset_state: bool,
    /// With [`ObserverKind::Auto`]: how many samples (the first ones) the calibrator keeps,
    /// with their float outputs, to choose the model's ranges by their error at the model's
    /// output ([`super::auto`]). Default [`SELECTION_SAMPLES`]; 0 leaves the choice per tensor.
    pub selection_samples: usize,
}

/// Default [`CalibrationOptions::selection_samples`].
pub const SELECTION_SAMPLES: usize = 16;

impl Default for CalibrationOptions {
    /// The automatic observer for every activation ([`ObserverKind::Auto`]: candidate ranges per
    /// tensor, the model's chosen by the int8 output error on the first
    /// [`SELECTION_SAMPLES`] samples), two-pass histograms when chosen, recurrent state carried.
    fn default() -> Self {
        Self {
            observer: ObserverKind::Auto,
            overrides: Vec::new(),
            two_pass: true,
            reset_state: false,
            selection_samples: SELECTION_SAMPLES,
        }
    }
}

/// Where a calibration run is ([`Calibrator::calibrate`]'s callback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Current pass (0-based).
    pub pass: u32,
    /// Passes in all.
    pub passes: u32,
    /// Samples done in this pass.
    pub done: usize,
    /// Samples per pass.
    pub total: usize,
}

/// One observer per activation of a float graph (graph inputs and node outputs), fed by running
/// samples through the [`FloatExecutor`].
///
/// Calibration can be split: several calibrators over the same graph with the same options each
/// observe a chunk of the samples, then [`merge`](Self::merge) into one. With one-pass observers
/// that is all; with two-pass histograms, merge at the end of the first pass, call
/// [`end_pass`](Self::end_pass) on the merged calibrator, clone it for the chunks of the second
/// pass (the first pass only fixed the histogram ranges) and merge the second-pass results into
/// a fresh clone of it.
#[derive(Debug, Clone)]
pub struct Calibrator<'g> {
    executor: FloatExecutor<'g>,
    observers: Vec<Option<AnyObserver>>,
    kinds: Vec<Option<ObserverKind>>,
    pass: u32,
    passes: u32,
    samples: usize,
    /// Per weighted-layer input: the sum of every element over the first pass's samples (for
    /// bias correction), and how many samples.
    sums: Vec<Option<Vec<f64>>>,
    summed: usize,
    /// Per node: the largest `|cell state|` of an LSTM in statistics merged or loaded from other
    /// calibrators (this one's own runs are the executor's).
    cell_peaks: Vec<f32>,
    /// The first samples of the first pass and their float outputs (with automatic observers:
    /// what the model-level range choice measures), at most `keep`.
    kept: Vec<KeptSample>,
    keep: usize,
    /// Every sample's activations from the first pass, when kept for the report
    /// ([`KEPT_ACTIVATION_BYTES`]).
    #[cfg(feature = "std")]
    activations: Option<Vec<Activations>>,
    /// The weights [`quantize`](super::quantize) computed from this calibration (quantized
    /// once for the model-level range choice's several quantizations).
    memo: RefCell<WeightMemo>,
    /// Weights rounded elsewhere (AdaRound), by the [`WeightMemo`] key: what
    /// [`memo_weights`](Self::memo_weights) returns for them.
    rounded: BTreeMap<(usize, bool, u8), QuantizedWeights>,
}

/// Quantized weights and their scales.
type QuantizedWeights = (Vec<i8>, Vec<f32>);

/// A node's quantized weights, and its bias correction once computed (`None` inside: none
/// applies).
type MemoEntry = (QuantizedWeights, Option<Option<Vec<f32>>>);

/// Per weighted node, weight layout (`true`: per channel) and weight bits: its [`MemoEntry`].
#[derive(Debug, Clone, Default)]
struct WeightMemo(BTreeMap<(usize, bool, u8), MemoEntry>);

/// A calibration sample kept for the model-level range choice: its inputs and the float
/// graph's outputs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeptSample {
    pub(crate) inputs: Vec<Vec<f32>>,
    pub(crate) outputs: Vec<Vec<f32>>,
}

/// Ends the pass of every observer (the automatic observers' candidate searches, the
/// histograms' ranges): [`for_each_observer`].
fn end_observer_passes(observers: &mut [Option<AnyObserver>]) -> Result<(), ConvertError> {
    for_each_observer(observers, "ending pass", AnyObserver::end_pass)
}

/// The most bytes of float activations the first calibration pass keeps for the per-layer
/// report of [`convert_source`](crate::ptq::convert_source), which then measures the int8
/// model against them instead of running the float graph again (the same values: the same
/// report bit for bit): every activation of every sample, 4 bytes per value (32 samples of a
/// ResNet-18 at 224x224: some 420 MB). More samples than fit, or a graph that carries state
/// from one sample to the next, run the float graph again in the report.
#[cfg(feature = "std")]
pub const KEPT_ACTIVATION_BYTES: usize = 512 << 20;

/// One sample's float activations, indexed by [`TensorId`] (`None` where not kept).
pub(crate) type Activations = Vec<Option<Vec<f32>>>;

/// `f` on every observer: on threads with `std` (each observer alone, so the same results with
/// any number), the first error in tensor order (`what` names the step in it).
fn for_each_observer(
    observers: &mut [Option<AnyObserver>],
    what: &str,
    f: impl Fn(&mut AnyObserver) -> Result<(), crate::Error> + Sync,
) -> Result<(), ConvertError> {
    let end = |first: usize, part: &mut [Option<AnyObserver>]| -> Result<(), ConvertError> {
        for (i, o) in part.iter_mut().enumerate() {
            if let Some(o) = o {
                f(o).map_err(|e| obs_err(e, format!("{what} of tensor {}", first + i)))?;
            }
        }
        Ok(())
    };
    #[cfg(feature = "std")]
    {
        let threads = crate::parallel::max_threads().min(observers.len());
        if threads > 1 {
            // Interleaved would balance better; contiguous parts keep "first error" simple.
            let size = observers.len().div_ceil(threads);
            type Part<'a> = (usize, &'a mut [Option<AnyObserver>], Result<(), ConvertError>);
            let mut parts: Vec<Part<'_>> =
                observers.chunks_mut(size).enumerate().map(|(p, part)| (p * size, part, Ok(()))).collect();
            crate::parallel::run_parts(parts.iter_mut().collect(), |(first, part, result)| {
                *result = end(*first, part);
            });
            return parts.into_iter().try_for_each(|(_, _, r)| r);
        }
    }
    end(0, observers)
}

fn obs_err(e: crate::Error, what: String) -> ConvertError {
    ConvertError::new(Kind::InvalidGraph, format!("{what}: {e}"))
}

/// One activation of one sample into its observer, and into its sum in the first pass.
fn observe_tensor(
    graph: &Graph,
    observers: &mut [Option<AnyObserver>],
    sums: &mut [Option<Vec<f64>>],
    first: bool,
    t: TensorId,
    v: &[f32],
) -> Result<(), ConvertError> {
    if first {
        if let Some(Some(acc)) = sums.get_mut(t.index()) {
            acc.iter_mut().zip(v).for_each(|(a, &x)| *a += f64::from(x));
        }
    }
    match observers.get_mut(t.index()).and_then(Option::as_mut) {
        Some(o) => o.observe(v).map_err(|e| {
            obs_err(e, String::from("observer"))
                .with_tensor(t.index(), graph.tensor(t).map(|t| t.name.as_str()).unwrap_or(""))
        }),
        None => Ok(()),
    }
}

/// Runs one sample through `executor`, each activation into its observer as it is computed.
fn observe_in_line(
    executor: &FloatExecutor<'_>,
    observers: &mut [Option<AnyObserver>],
    sums: &mut [Option<Vec<f64>>],
    first: bool,
    inputs: &[&[f32]],
    mut keep: Option<&mut Activations>,
) -> Result<Vec<Vec<f32>>, ConvertError> {
    let graph = executor.graph();
    executor.run_observed(inputs, |t, v| {
        observe_tensor(graph, observers, sums, first, t, v)?;
        if let Some(slot) = keep.as_deref_mut().and_then(|k| k.get_mut(t.index())) {
            *slot = Some(v.to_vec());
        }
        Ok(())
    })
}

/// [`observe_in_line`] with the observers on a second thread: the float graph runs on, each
/// activation it computes is handed over (a copy) and observed there, in the order computed:
/// every observer and sum sees the same values in the same order, the same results bit for bit.
/// An observer's error is the one returned (it comes from an activation computed before any
/// later error of the graph), with the node as [`FloatExecutor::run_observed`] adds it.
#[cfg(feature = "std")]
fn observe_pipelined(
    executor: &FloatExecutor<'_>,
    observers: &mut [Option<AnyObserver>],
    sums: &mut [Option<Vec<f64>>],
    first: bool,
    inputs: &[&[f32]],
    keep: Option<&mut Activations>,
) -> Result<Vec<Vec<f32>>, ConvertError> {
    /// Activations on their way to the observer thread at most (a bound on the copies alive).
    const IN_FLIGHT: usize = 8;
    let graph = executor.graph();
    // The activations the observer thread needs: those with an observer or a sum to take.
    let watched: Vec<bool> = (0..observers.len().max(sums.len()))
        .map(|i| observers.get(i).is_some_and(Option::is_some) || (first && sums.get(i).is_some_and(Option::is_some)))
        .collect();
    let (send, receive) = std::sync::mpsc::sync_channel::<(TensorId, Vec<f32>)>(IN_FLIGHT);
    std::thread::scope(|scope| {
        let observer = scope.spawn(move || -> Result<(), ConvertError> {
            let mut keep = keep;
            for (t, v) in receive {
                observe_tensor(graph, observers, sums, first, t, &v).map_err(|e| {
                    match graph.nodes.iter().enumerate().find(|(_, n)| n.output(0) == Some(t)) {
                        Some((index, node)) => e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str()),
                        None => e,
                    }
                })?;
                if let Some(slot) = keep.as_deref_mut().and_then(|k| k.get_mut(t.index())) {
                    *slot = Some(v);
                }
            }
            Ok(())
        });
        let run = executor.run_observed(inputs, |t, v| {
            if watched.get(t.index()).copied().unwrap_or(false) {
                // A closed channel: the observer thread stopped at an error, returned below.
                let _ = send.send((t, v.to_vec()));
            }
            Ok(())
        });
        drop(send);
        let observed = observer
            .join()
            .unwrap_or_else(|_| Err(ConvertError::new(Kind::InvalidGraph, "the observer thread stopped unexpectedly")));
        observed?;
        run
    })
}

impl<'g> Calibrator<'g> {
    /// Observers for every activation of `graph` (a float graph the [`FloatExecutor`] runs).
    ///
    /// # Errors
    /// [`FloatExecutor::new`]'s errors; `InvalidGraph` for an override naming no node or tensor.
    pub fn new(graph: &'g Graph, options: &CalibrationOptions) -> Result<Self, ConvertError> {
        let mut executor = FloatExecutor::new(graph)?;
        executor.carry_state(!options.reset_state && crate::float::has_recurrent_state(graph));
        let mut kinds: Vec<Option<ObserverKind>> = vec![None; graph.tensors.len()];
        let mut activations: Vec<TensorId> = graph.inputs.clone();
        activations.extend(graph.nodes.iter().flat_map(|n| n.outputs.iter().copied()));
        for &t in &activations {
            if let Some(k) = kinds.get_mut(t.index()) {
                *k = Some(options.observer);
            }
        }
        for (name, kind) in &options.overrides {
            let by_node = graph.nodes.iter().find(|n| &n.name == name).and_then(|n| n.output(0));
            let by_tensor = activations.iter().copied().find(|t| graph.tensor(*t).is_some_and(|t| &t.name == name));
            let t = by_node.or(by_tensor).ok_or_else(|| {
                ConvertError::new(
                    Kind::InvalidGraph,
                    format!("observer override {name:?}: no node or activation of that name"),
                )
            })?;
            if let Some(k) = kinds.get_mut(t.index()) {
                *k = Some(*kind);
            }
        }
        let mut observers = Vec::with_capacity(kinds.len());
        for (i, k) in kinds.iter().enumerate() {
            observers.push(match k {
                Some(k) => Some(
                    AnyObserver::new(*k, options.two_pass)
                        .map_err(|e| obs_err(e, format!("observer of tensor {i}")))?,
                ),
                None => None,
            });
        }
        let passes = observers.iter().flatten().map(AnyObserver::passes).max().unwrap_or(1);
        let mut sums: Vec<Option<Vec<f64>>> = vec![None; graph.tensors.len()];
        for n in &graph.nodes {
            if matches!(n.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) | Op::TransposeConv2d(_)) {
                if let Some(x) = n.input(0) {
                    let len = graph.tensor(x).and_then(|t| t.num_elements()).unwrap_or(0);
                    if let Some(slot) = sums.get_mut(x.index()) {
                        *slot = Some(vec![0.0; len]);
                    }
                }
            }
        }
        let keep = if kinds.contains(&Some(ObserverKind::Auto)) { options.selection_samples } else { 0 };
        Ok(Self {
            executor,
            observers,
            kinds,
            pass: 0,
            passes,
            samples: 0,
            sums,
            summed: 0,
            cell_peaks: vec![0.0; graph.nodes.len()],
            kept: Vec::new(),
            #[cfg(feature = "std")]
            activations: None,
            keep,
            memo: RefCell::default(),
            rounded: BTreeMap::new(),
        })
    }

    /// The graph being calibrated.
    pub fn graph(&self) -> &'g Graph {
        self.executor.graph()
    }

    /// Passes over the data the observers need (1, or 2 with two-pass histograms).
    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// The current pass (0-based; `passes()` once calibration is complete).
    pub fn pass(&self) -> u32 {
        self.pass
    }

    /// Samples observed in the current pass (all passes see the same samples).
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// True if the samples run as one sequence, the recurrent state carried from one to the
    /// next ([`CalibrationOptions::reset_state`]).
    pub fn carries_state(&self) -> bool {
        self.executor.carries_state()
    }

    /// The largest `|cell state|` LSTM node `node` reached over the calibration samples (`None`
    /// for other nodes, or before any sample): the range the int16 cell state's scale covers.
    pub fn lstm_cell_peak(&self, node: usize) -> Option<f32> {
        let merged = self.cell_peaks.get(node).copied().unwrap_or(0.0);
        let own = self.executor.lstm_cell_peak(node).unwrap_or(0.0);
        let p = merged.max(own);
        (p > 0.0 && self.graph().nodes.get(node).is_some_and(|n| matches!(n.op, crate::graph::Op::Lstm(_))))
            .then_some(p)
    }

    /// The observer kind of a tensor (`None` for constants).
    pub fn kind(&self, t: TensorId) -> Option<ObserverKind> {
        self.kinds.get(t.index()).copied().flatten()
    }

    /// Which candidate range the automatic observer chose for activation `t`, and why (`None`
    /// for other observers, constants, or before calibration is complete).
    pub fn auto_choice(&self, t: TensorId) -> Option<AutoChoice> {
        self.observers.get(t.index()).and_then(Option::as_ref).and_then(AnyObserver::auto_choice)
    }

    /// The calibrated range of an activation.
    ///
    /// # Errors
    /// `InvalidGraph` if `t` is not an observed activation or its observer has no data (no
    /// samples, or calibration not finished).
    pub fn range(&self, t: TensorId) -> Result<(f32, f32), ConvertError> {
        let o = self.observers.get(t.index()).and_then(Option::as_ref).ok_or_else(|| {
            ConvertError::new(Kind::InvalidGraph, format!("tensor {t} is not an observed activation"))
        })?;
        o.range().map_err(|e| obs_err(e, format!("range of tensor {t}")).with_tensor(t.index(), self.tensor_name(t)))
    }

    /// The range of activation `t` under a model-level policy: for an automatic observer, the
    /// policy's candidate ([`RangePolicy::Every`]) or its own choice; other observers' range.
    ///
    /// # Errors
    /// As [`range`](Self::range).
    pub(crate) fn range_with(&self, t: TensorId, policy: RangePolicy) -> Result<(f32, f32), ConvertError> {
        if let RangePolicy::Every(c) = policy {
            if let Some(r) = self.observers.get(t.index()).and_then(Option::as_ref).and_then(|o| o.auto_candidate(c)) {
                return Ok(r);
            }
        }
        self.range(t)
    }

    /// [`auto_choice`](Self::auto_choice) with the model-level policy that applied.
    pub(crate) fn auto_choice_with(&self, t: TensorId, policy: Option<RangePolicy>) -> Option<AutoChoice> {
        self.auto_choice(t).map(|c| AutoChoice { model: policy, ..c })
    }

    /// The activations with an automatic observer.
    pub(crate) fn auto_tensors(&self) -> Vec<TensorId> {
        self.kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| **k == Some(ObserverKind::Auto))
            .map(|(i, _)| TensorId(i as u32))
            .collect()
    }

    fn tensor_name(&self, t: TensorId) -> String {
        self.graph().tensor(t).map(|t| t.name.clone()).unwrap_or_default()
    }

    /// The mean of every element of activation `t` over the first pass's samples, for the inputs
    /// of conv / depthwise / fully-connected layers (`None` for other tensors or no samples).
    pub fn input_mean(&self, t: TensorId) -> Option<Vec<f32>> {
        if self.summed == 0 {
            return None;
        }
        let n = self.summed as f64;
        self.sums.get(t.index())?.as_ref().map(|v| v.iter().map(|&x| (x / n) as f32).collect())
    }

    /// Runs one sample (one slice per graph input) through the graph into the observers.
    ///
    /// # Errors
    /// The executor's errors (wrong input sizes); an observer's (NaN or ±Inf in an activation),
    /// with the node.
    pub fn observe(&mut self, inputs: &[&[f32]]) -> Result<(), ConvertError> {
        if self.pass >= self.passes {
            return Err(ConvertError::new(Kind::InvalidGraph, "calibration is complete: no pass left to observe"));
        }
        let first = self.pass == 0;
        #[cfg(feature = "std")]
        let outputs = {
            let mut store: Option<Activations> =
                self.activations.as_ref().filter(|_| first).map(|_| vec![None; self.executor.graph().tensors.len()]);
            let outputs = if crate::parallel::max_threads() > 1 {
                observe_pipelined(&self.executor, &mut self.observers, &mut self.sums, first, inputs, store.as_mut())?
            } else {
                observe_in_line(&self.executor, &mut self.observers, &mut self.sums, first, inputs, store.as_mut())?
            };
            if let (Some(all), Some(store)) = (self.activations.as_mut(), store) {
                all.push(store);
            }
            outputs
        };
        #[cfg(not(feature = "std"))]
        let outputs = observe_in_line(&self.executor, &mut self.observers, &mut self.sums, first, inputs, None)?;
        if first {
            self.summed += 1;
            if self.kept.len() < self.keep {
                self.kept.push(KeptSample { inputs: inputs.iter().map(|x| x.to_vec()).collect(), outputs });
            }
        }
        self.samples += 1;
        Ok(())
    }

    /// Node `node`'s weights quantized (per channel or not): `quantize` the first time, then
    /// what it returned (the weights and the calibration do not change in between: merging and
    /// loading statistics forget them).
    pub(crate) fn memo_weights(
        &self,
        node: usize,
        per_channel: bool,
        bits: u8,
        quantize: impl FnOnce() -> QuantizedWeights,
    ) -> QuantizedWeights {
        if let Some((w, _)) = self.memo.borrow().0.get(&(node, per_channel, bits)) {
            return w.clone();
        }
        let w = match self.rounded.get(&(node, per_channel, bits)) {
            Some(w) => w.clone(),
            None => quantize(),
        };
        self.memo.borrow_mut().0.insert((node, per_channel, bits), (w.clone(), None));
        w
    }

    /// Node `node`'s weights (per channel or not, `bits` wide) as rounded elsewhere (AdaRound):
    /// [`memo_weights`](Self::memo_weights) returns them from now on.
    pub(crate) fn set_rounded_weights(&mut self, node: usize, per_channel: bool, bits: u8, w: QuantizedWeights) {
        self.memo.get_mut().0.remove(&(node, per_channel, bits));
        self.rounded.insert((node, per_channel, bits), w);
    }

    /// Node `node`'s bias correction for the weights of [`memo_weights`](Self::memo_weights):
    /// `correction` the first time, then what it returned.
    pub(crate) fn memo_bias_correction(
        &self,
        node: usize,
        per_channel: bool,
        bits: u8,
        correction: impl FnOnce() -> Option<Vec<f32>>,
    ) -> Option<Vec<f32>> {
        if let Some((_, Some(d))) = self.memo.borrow().0.get(&(node, per_channel, bits)) {
            return d.clone();
        }
        let d = correction();
        if let Some((_, slot)) = self.memo.borrow_mut().0.get_mut(&(node, per_channel, bits)) {
            *slot = Some(d.clone());
        }
        d
    }

    /// The samples kept for the model-level range choice (the first of the first pass).
    pub(crate) fn kept(&self) -> &[KeptSample] {
        &self.kept
    }

    /// True if a kept sample is an outlier at a graph input (by the fences of the input's
    /// automatic observer).
    pub(crate) fn is_input_outlier(&self, s: &KeptSample) -> bool {
        let g = self.graph();
        g.inputs
            .iter()
            .zip(&s.inputs)
            .any(|(t, x)| self.observers.get(t.index()).and_then(Option::as_ref).is_some_and(|o| o.auto_outlier(x)))
    }

    /// Ends the current pass (two-pass histograms fix their ranges).
    ///
    /// # Errors
    /// `InvalidGraph` if no sample was observed in this pass.
    pub fn end_pass(&mut self) -> Result<(), ConvertError> {
        if self.samples == 0 {
            return Err(ConvertError::new(Kind::InvalidGraph, "no calibration sample in this pass"));
        }
        end_observer_passes(&mut self.observers)?;
        self.memo.get_mut().0.clear();
        self.pass += 1;
        if self.pass < self.passes {
            self.samples = 0;
        }
        // Each pass replays the sequence from its start.
        self.executor.reset_state();
        Ok(())
    }

    /// Before the first sample: keeps every sample's activations in the first pass for the
    /// report if `total` samples fit in [`KEPT_ACTIVATION_BYTES`] and no state is carried from
    /// one sample to the next.
    #[cfg(feature = "std")]
    fn keep_activations(&mut self, total: usize) {
        let graph = self.executor.graph();
        let per_sample = graph
            .inputs
            .iter()
            .chain(graph.nodes.iter().filter_map(|n| n.output(0)).collect::<Vec<_>>().iter())
            .map(|t| graph.tensor(*t).and_then(|t| t.num_elements()).unwrap_or(0))
            .fold(0usize, |a, n| a.saturating_add(n.saturating_mul(4)));
        let fits = per_sample.saturating_mul(total) <= KEPT_ACTIVATION_BYTES;
        self.activations = (fits && !self.carries_state()).then(|| Vec::with_capacity(total));
    }

    /// How many samples' float activations the first pass kept for the report of
    /// [`convert_source`](crate::ptq::convert_source) (0 when they did not fit in
    /// [`KEPT_ACTIVATION_BYTES`], for a graph that carries state, or before
    /// [`calibrate_source`](Self::calibrate_source)).
    #[cfg(feature = "std")]
    pub fn kept_activation_samples(&self) -> usize {
        self.kept_activations().map_or(0, <[_]>::len)
    }

    /// Every sample's float activations from the first pass, in sample order, when they were
    /// kept ([`KEPT_ACTIVATION_BYTES`]) and that pass is over; `None` otherwise.
    #[cfg(feature = "std")]
    pub(crate) fn kept_activations(&self) -> Option<&[Activations]> {
        self.activations.as_deref().filter(|a| self.pass > 0 && a.len() == self.summed)
    }

    /// Folds `other`'s statistics in (same graph, options and pass).
    ///
    /// # Errors
    /// `InvalidGraph` if the calibrators differ in graph size, pass or observer kinds.
    pub fn merge(&mut self, other: &Calibrator<'_>) -> Result<(), ConvertError> {
        if self.observers.len() != other.observers.len() || self.pass != other.pass || self.kinds != other.kinds {
            return Err(ConvertError::new(
                Kind::InvalidGraph,
                "cannot merge calibrators of different graphs, options or passes",
            ));
        }
        self.memo.get_mut().0.clear();
        for (i, (a, b)) in self.observers.iter_mut().zip(&other.observers).enumerate() {
            if let (Some(a), Some(b)) = (a, b) {
                a.merge(b).map_err(|e| obs_err(e, format!("merging the observers of tensor {i}")))?;
            }
        }
        // Input sums are taken in the first pass only (clones made for the second pass carry
        // the merged first-pass sums already).
        if self.pass == 0 {
            for (a, b) in self.sums.iter_mut().zip(&other.sums) {
                if let (Some(a), Some(b)) = (a, b) {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                }
            }
            self.summed += other.summed;
            let room = self.keep.saturating_sub(self.kept.len());
            self.kept.extend(other.kept.iter().take(room).cloned());
        }
        for (i, p) in self.cell_peaks.iter_mut().enumerate() {
            *p = p.max(other.lstm_cell_peak(i).unwrap_or(0.0));
        }
        self.samples += other.samples;
        Ok(())
    }

    /// Runs every pass over `samples` (each a list of input slices, one per graph input), calling
    /// `progress` after each sample: [`calibrate_source`](Self::calibrate_source) over a
    /// [`SliceSource`] (the same results bit for bit).
    ///
    /// # Errors
    /// As [`observe`](Self::observe) and [`end_pass`](Self::end_pass).
    pub fn calibrate<S, V>(&mut self, samples: &[S], progress: &mut dyn FnMut(Progress)) -> Result<(), ConvertError>
    where
        S: AsRef<[V]>,
        V: AsRef<[f32]>,
    {
        self.calibrate_source(&mut SliceSource::new(samples), progress).map_err(StreamError::into_convert)
    }

    /// Runs every pass over the samples of `source`, [`CHUNK_SAMPLES`] at a time (rewinding it
    /// before each pass), calling `progress` after each sample: the memory it takes does not
    /// grow with the number of samples. With a recurrent graph whose state is carried
    /// ([`carries_state`](Self::carries_state)) the samples of each pass form one sequence, as
    /// with [`calibrate`](Self::calibrate).
    ///
    /// ```
    /// # fn demo(g: &microquant::graph::Graph, samples: &[Vec<Vec<f32>>]) -> Result<(), microquant::ptq::StreamError> {
    /// use microquant::ptq::{CalibrationOptions, Calibrator, ObserverKind, SliceSource};
    /// let options = CalibrationOptions { observer: ObserverKind::Histogram, ..Default::default() };
    /// let mut cal = Calibrator::new(g, &options)?;
    /// cal.calibrate_source(&mut SliceSource::new(samples), &mut |p| eprintln!("{}/{}", p.done, p.total))?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The source's errors ([`StreamError::Source`]); as [`observe`](Self::observe) and
    /// [`end_pass`](Self::end_pass) ([`StreamError::Convert`]); a source that gives another
    /// number of samples than its [`sample_count`](SampleSource::sample_count) is a
    /// [`SourceErrorKind::Count`] error.
    pub fn calibrate_source(
        &mut self,
        source: &mut dyn SampleSource,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), StreamError> {
        let total = source.sample_count();
        if self.pass == 0 && self.samples == 0 {
            self.keep_for_replay(total, REPLAY_BYTES);
            #[cfg(feature = "std")]
            self.keep_activations(total);
        }
        while self.pass < self.passes {
            if self.replay_error_pass()? {
                for done in 1..=total {
                    progress(Progress { pass: self.pass - 1, passes: self.passes, done, total });
                }
                continue;
            }
            source.rewind()?;
            let mut done = 0;
            loop {
                let chunk = source.next_chunk(CHUNK_SAMPLES)?;
                if chunk.is_empty() {
                    break;
                }
                for s in chunk {
                    let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
                    self.observe(&inputs)?;
                    done += 1;
                    progress(Progress { pass: self.pass, passes: self.passes, done, total });
                }
            }
            if done != total {
                return Err(SourceError::new(
                    SourceErrorKind::Count,
                    format!("the source gave {done} samples in pass {}, it announced {total}", self.pass + 1),
                )
                .into());
            }
            self.end_pass()?;
        }
        Ok(())
    }
}
