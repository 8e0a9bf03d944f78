//! Calibration: samples through the float graph into one observer per activation.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::observer::{AnyObserver, ObserverKind};
use crate::float::FloatExecutor;
use crate::graph::{ConvertError, ConvertErrorKind as Kind, Graph, TensorId};

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
}

impl Default for CalibrationOptions {
    /// Min/max for every activation, two-pass histograms when chosen.
    fn default() -> Self {
        Self { observer: ObserverKind::MinMax, overrides: Vec::new(), two_pass: true }
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
}

fn obs_err(e: crate::Error, what: String) -> ConvertError {
    ConvertError::new(Kind::InvalidGraph, format!("{what}: {e}"))
}

impl<'g> Calibrator<'g> {
    /// Observers for every activation of `graph` (a float graph the [`FloatExecutor`] runs).
    ///
    /// # Errors
    /// [`FloatExecutor::new`]'s errors; `InvalidGraph` for an override naming no node or tensor.
    pub fn new(graph: &'g Graph, options: &CalibrationOptions) -> Result<Self, ConvertError> {
        let executor = FloatExecutor::new(graph)?;
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
        Ok(Self { executor, observers, kinds, pass: 0, passes, samples: 0 })
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

    /// The observer kind of a tensor (`None` for constants).
    pub fn kind(&self, t: TensorId) -> Option<ObserverKind> {
        self.kinds.get(t.index()).copied().flatten()
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

    fn tensor_name(&self, t: TensorId) -> String {
        self.graph().tensor(t).map(|t| t.name.clone()).unwrap_or_default()
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
        let observers = &mut self.observers;
        let graph = self.executor.graph();
        self.executor.run_observed(inputs, |t, v| match observers.get_mut(t.index()).and_then(Option::as_mut) {
            Some(o) => o.observe(v).map_err(|e| {
                obs_err(e, String::from("observer"))
                    .with_tensor(t.index(), graph.tensor(t).map(|t| t.name.as_str()).unwrap_or(""))
            }),
            None => Ok(()),
        })?;
        self.samples += 1;
        Ok(())
    }

    /// Ends the current pass (two-pass histograms fix their ranges).
    ///
    /// # Errors
    /// `InvalidGraph` if no sample was observed in this pass.
    pub fn end_pass(&mut self) -> Result<(), ConvertError> {
        if self.samples == 0 {
            return Err(ConvertError::new(Kind::InvalidGraph, "no calibration sample in this pass"));
        }
        for (i, o) in self.observers.iter_mut().enumerate() {
            if let Some(o) = o {
                o.end_pass().map_err(|e| obs_err(e, format!("ending pass of tensor {i}")))?;
            }
        }
        self.pass += 1;
        if self.pass < self.passes {
            self.samples = 0;
        }
        Ok(())
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
        for (i, (a, b)) in self.observers.iter_mut().zip(&other.observers).enumerate() {
            if let (Some(a), Some(b)) = (a, b) {
                a.merge(b).map_err(|e| obs_err(e, format!("merging the observers of tensor {i}")))?;
            }
        }
        self.samples += other.samples;
        Ok(())
    }

    /// Runs every pass over `samples` (each a list of input slices, one per graph input), calling
    /// `progress` after each sample.
    ///
    /// # Errors
    /// As [`observe`](Self::observe) and [`end_pass`](Self::end_pass).
    pub fn calibrate<S, V>(&mut self, samples: &[S], progress: &mut dyn FnMut(Progress)) -> Result<(), ConvertError>
    where
        S: AsRef<[V]>,
        V: AsRef<[f32]>,
    {
        while self.pass < self.passes {
            for (done, s) in samples.iter().enumerate() {
                let inputs: Vec<&[f32]> = s.as_ref().iter().map(AsRef::as_ref).collect();
                self.observe(&inputs)?;
                progress(Progress { pass: self.pass, passes: self.passes, done: done + 1, total: samples.len() });
            }
            self.end_pass()?;
        }
        Ok(())
    }
}
