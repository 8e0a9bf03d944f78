//! The observer of one activation, chosen per model or per layer ([`ObserverKind`]).

use alloc::boxed::Box;

use super::auto::{AutoChoice, AutoObserver, KeptSamples};
use crate::Error;
use crate::observer::{
    EntropyObserver, HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver, Observer, ObserverConfig,
    ObserverState, PercentileObserver,
};
use crate::quant::{Convention, QScheme, QuantDType};

/// Which calibration statistic sets an activation's range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ObserverKind {
    /// Running min and max ([`MinMaxObserver`]).
    MinMax,
    /// Moving averages of each sample's min and max, constant 0.01
    /// ([`MovingAverageMinMaxObserver`]).
    MovingAverage,
    /// 2048-bin histogram, range minimizing the L2 quantization error (PyTorch's
    /// `HistogramObserver`, [`HistogramObserver`]).
    Histogram,
    /// 2048-bin histogram, KL-divergence threshold with 128 quantized bins (ONNX Runtime's
    /// entropy calibrator, [`EntropyObserver`]).
    Entropy,
    /// 2048-bin histogram of `|x|`, the given percentile of the magnitudes as the range
    /// `(-t, t)` clipped to the data's min and max (ONNX Runtime's percentile calibrator with its
    /// defaults: symmetric, 99.999; [`PercentileObserver`]).
    Percentile(f64),
    /// The default: per tensor, candidate ranges (min/max, min/max without outlier samples,
    /// percentiles 99.9/99.99/99.999, entropy, L2 search) and the one with the least int8
    /// quantization error over the calibration samples, outlier samples left out (two passes);
    /// then, at quantization, the ranges of the model chosen by the int8 model's output error on
    /// the first calibration samples (see [`super::auto`]).
    Auto,
}

impl ObserverKind {
    /// The name used in reports and on the command line: `auto`, `minmax`, `moving-average`,
    /// `histogram`, `entropy`, `percentile`.
    pub fn name(&self) -> &'static str {
        match self {
            ObserverKind::MinMax => "minmax",
            ObserverKind::MovingAverage => "moving-average",
            ObserverKind::Histogram => "histogram",
            ObserverKind::Entropy => "entropy",
            ObserverKind::Percentile(_) => "percentile",
            ObserverKind::Auto => "auto",
        }
    }

    /// Parses [`ObserverKind::name`] (`percentile` gets 99.999).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "minmax" => ObserverKind::MinMax,
            "moving-average" => ObserverKind::MovingAverage,
            "histogram" => ObserverKind::Histogram,
            "entropy" => ObserverKind::Entropy,
            "percentile" => ObserverKind::Percentile(99.999),
            "auto" => ObserverKind::Auto,
            _ => return None,
        })
    }
}

/// One of the observers, boxed when large (histograms are 16 KiB).
#[derive(Debug, Clone)]
pub(crate) enum AnyObserver {
    MinMax(MinMaxObserver),
    MovingAverage(MovingAverageMinMaxObserver),
    Histogram(Box<HistogramObserver<2048>>),
    Entropy(Box<EntropyObserver<2048>>),
    Percentile(Box<PercentileObserver<2048>>),
    Auto(AutoObserver),
}

/// int8 affine with TFLite's formula: the configuration every observer gets (the quantizer
/// reads only their ranges).
const CONFIG: ObserverConfig =
    ObserverConfig::new(QuantDType::Int8, QScheme::Affine).with_convention(Convention::TfLite);

macro_rules! each {
    ($self:expr, $o:ident => $e:expr) => {
        match $self {
            AnyObserver::MinMax($o) => $e,
            AnyObserver::MovingAverage($o) => $e,
            AnyObserver::Histogram($o) => $e,
            AnyObserver::Entropy($o) => $e,
            AnyObserver::Percentile($o) => $e,
            AnyObserver::Auto($o) => $e,
        }
    };
}

impl AnyObserver {
    /// A fresh observer of `kind` (histogram ones in two-pass mode if `two_pass`).
    pub(crate) fn new(kind: ObserverKind, two_pass: bool) -> Result<Self, Error> {
        let nq = EntropyObserver::<2048>::DEFAULT_QUANTIZED_BINS;
        Ok(match kind {
            ObserverKind::MinMax => AnyObserver::MinMax(MinMaxObserver::new(CONFIG)),
            ObserverKind::MovingAverage => AnyObserver::MovingAverage(MovingAverageMinMaxObserver::new(CONFIG)),
            ObserverKind::Histogram if two_pass => {
                AnyObserver::Histogram(Box::new(HistogramObserver::two_pass(CONFIG)))
            }
            ObserverKind::Histogram => AnyObserver::Histogram(Box::new(HistogramObserver::new(CONFIG))),
            ObserverKind::Entropy if two_pass => AnyObserver::Entropy(Box::new(EntropyObserver::two_pass(CONFIG, nq)?)),
            ObserverKind::Entropy => AnyObserver::Entropy(Box::new(EntropyObserver::new(CONFIG, nq)?)),
            ObserverKind::Percentile(p) if two_pass => {
                AnyObserver::Percentile(Box::new(PercentileObserver::two_pass(CONFIG, p, true)?))
            }
            ObserverKind::Percentile(p) => AnyObserver::Percentile(Box::new(PercentileObserver::new(CONFIG, p, true)?)),
            ObserverKind::Auto => AnyObserver::Auto(AutoObserver::new(CONFIG)?),
        })
    }

    pub(crate) fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        each!(self, o => o.observe(x))
    }

    pub(crate) fn range(&self) -> Result<(f32, f32), Error> {
        each!(self, o => o.range())
    }

    pub(crate) fn passes(&self) -> u32 {
        each!(self, o => o.passes())
    }

    /// The automatic observer's choice (`None` for the others or before the end).
    pub(crate) fn auto_choice(&self) -> Option<AutoChoice> {
        match self {
            AnyObserver::Auto(a) => a.choice().ok(),
            _ => None,
        }
    }

    /// The automatic observer's candidate `c` (`None` for the others or before its
    /// statistics pass has ended).
    pub(crate) fn auto_candidate(&self, c: usize) -> Option<(f32, f32)> {
        match self {
            AnyObserver::Auto(a) => a.candidate(c),
            _ => None,
        }
    }

    /// True if the automatic observer's fences make `x` an outlier sample (`false` for the
    /// others).
    pub(crate) fn auto_outlier(&self, x: &[f32]) -> bool {
        match self {
            AnyObserver::Auto(a) => a.is_outlier(x),
            _ => false,
        }
    }

    pub(crate) fn end_pass(&mut self) -> Result<(), Error> {
        each!(self, o => o.end_pass())
    }

    /// The automatic observer's [`keep_for_replay`](AutoObserver::keep_for_replay) (nothing for
    /// the others).
    pub(crate) fn keep_for_replay(&mut self, keep: bool) {
        if let AnyObserver::Auto(a) = self {
            a.keep_for_replay(keep);
        }
    }

    /// The automatic observer's [`take_kept`](AutoObserver::take_kept) (`None` for the others).
    pub(crate) fn take_kept(&mut self) -> Option<KeptSamples> {
        match self {
            AnyObserver::Auto(a) => a.take_kept(),
            _ => None,
        }
    }

    /// The automatic observer's [`set_replay`](AutoObserver::set_replay) (`false` for the
    /// others).
    pub(crate) fn set_replay(&mut self, kept: KeptSamples) -> bool {
        match self {
            AnyObserver::Auto(a) => a.set_replay(kept),
            _ => false,
        }
    }

    /// True for an automatic observer that can [`replay`](Self::replay) its error pass.
    pub(crate) fn can_replay(&self) -> bool {
        matches!(self, AnyObserver::Auto(a) if a.can_replay())
    }

    /// The automatic observer's error pass from its kept samples ([`AutoObserver::replay`]).
    pub(crate) fn replay(&mut self) -> Result<(), Error> {
        match self {
            AnyObserver::Auto(a) => a.replay(),
            _ => Ok(()),
        }
    }

    /// Bytes of [`write_state`](Self::write_state).
    pub(crate) fn state_len(&self) -> usize {
        each!(self, o => o.state_len())
    }

    /// The observer's statistics as bytes ([`ObserverState`]).
    pub(crate) fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        each!(self, o => o.write_state(out))
    }

    /// Replaces the statistics with bytes of [`write_state`](Self::write_state).
    pub(crate) fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        each!(self, o => o.read_state(bytes))
    }

    pub(crate) fn merge(&mut self, other: &Self) -> Result<(), Error> {
        match (self, other) {
            (AnyObserver::MinMax(a), AnyObserver::MinMax(b)) => a.merge(b),
            (AnyObserver::MovingAverage(a), AnyObserver::MovingAverage(b)) => a.merge(b),
            (AnyObserver::Histogram(a), AnyObserver::Histogram(b)) => a.merge(b),
            (AnyObserver::Entropy(a), AnyObserver::Entropy(b)) => a.merge(b),
            (AnyObserver::Percentile(a), AnyObserver::Percentile(b)) => a.merge(b),
            (AnyObserver::Auto(a), AnyObserver::Auto(b)) => a.merge(b),
            _ => Err(Error::InvalidArgument { reason: "cannot merge observers of different kinds" }),
        }
    }
}
