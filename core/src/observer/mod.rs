//! Observers: calibration statistics that turn into quantization parameters.
//!
//! Every observer has `observe` (record a batch), `merge` (fold in another observer's
//! statistics, so calibration can be split over threads or Web Workers), `range` (the
//! calibrated real range) and `qparams` (a [`QParams`] chosen from that range with the
//! configured [`QScheme`], data type and [`Convention`]). Nothing here allocates: histograms
//! are const-generic arrays.
//!
//! | observer | statistic | peer | merge |
//! |---|---|---|---|
//! | [`MinMaxObserver`] | running min and max | PyTorch `MinMaxObserver`, ORT `MinMaxCalibrater` | exact |
//! | [`MovingAverageMinMaxObserver`] | `min += c · (batch_min - min)` (c = 0.01) | PyTorch `MovingAverageMinMaxObserver` | the other's state counts as one more batch |
//! | [`PerChannelMinMaxObserver`] | min and max per channel, any axis | PyTorch `PerChannelMinMaxObserver` | exact |
//! | [`MovingAveragePerChannelMinMaxObserver`] | moving averages per channel | PyTorch `MovingAveragePerChannelMinMaxObserver` | as the per-tensor one |
//! | [`HistogramObserver`] | 2048-bin histogram, L2-error search for the range | PyTorch `HistogramObserver` | exact |
//! | [`EntropyObserver`] | histogram, KL-divergence threshold (TensorRT) | ORT `EntropyCalibrater` | exact |
//! | [`PercentileObserver`] | histogram of `|x|` (or `x`), percentile 99.999 | ORT `PercentileCalibrater` | exact |
//! | [`FixedQParamsObserver`] | none: fixed parameters (sigmoid/softmax `(1/256, -128)`, tanh `(1/128, 0)`) | PyTorch `FixedQParamsObserver` | equal parameters only |
//!
//! The converter's `auto` observer (`ptq::ObserverKind::Auto`, `--observer auto`, in the `alloc`
//! part: `ptq/auto.rs`) builds on these: it keeps the histograms of the L2, entropy and
//! percentile observers and every sample's min and max, and picks per tensor the candidate
//! range with the least int8 error over the samples, outlier samples left out.
//!
//! # Exact merging and two passes
//! Min/max statistics merge exactly. Histograms merge exactly too, in either of two modes:
//! - **two-pass** (`two_pass`): a first pass over the data records its range; [`Observer::end_pass`]
//!   fixes the histogram's range from it; the second pass fills the bins exactly as the peer
//!   tool fills its histogram (`torch.histc` for [`HistogramObserver`], `np.histogram` for the
//!   ONNX Runtime ones). Splitting either pass and merging gives the counts of one pass over
//!   all the data, which are the peer's counts for that data in one batch.
//! - **streaming** (`new`): one pass, power-of-two bin widths that coarsen exactly as the data
//!   grows (see [`Histogram`]); split-then-merge equals one pass. The search is the peer's,
//!   run on these bins, which are up to twice as wide as the peer's and aligned differently, so
//!   results differ from the peer's by how much its search depends on the binning: the
//!   percentile by less than two of the peer's bins; the L2 search (which stops at the first
//!   step that does not lower its error estimate) by up to a few int8 steps; the entropy
//!   threshold, which moves with the bin width, by up to about a factor of two (on real
//!   tensors: `tests/host/observers_real.rs`).
//!
//! PyTorch's own multi-batch histogram re-bins by interpolation, so its result depends on how
//! the data was split; microquant's does not.
//!
//! # Bad data
//! An observer that has seen no data returns [`Error::NoData`] (PyTorch warns and returns
//! scale 1.0). NaN and ±Inf are an error ([`Error::NonFinite`], the batch is not recorded) by
//! default, or skipped with [`NonFinitePolicy::Ignore`].
//!
//! ```
//! use microquant::observer::{HistogramObserver, MinMaxObserver, Observer, ObserverConfig};
//! use microquant::quant::{QScheme, QuantDType};
//! let cfg = ObserverConfig::new(QuantDType::Int8, QScheme::Affine);
//! let batches: [&[f32]; 2] = [&[0.5, -1.0, 2.0], &[3.0, 0.25, 1.0]];
//! // Split over two workers, then merged: same qparams as one pass.
//! let (mut a, mut b) = (MinMaxObserver::new(cfg), MinMaxObserver::new(cfg));
//! a.observe(batches[0]).unwrap();
//! b.observe(batches[1]).unwrap();
//! a.merge(&b).unwrap();
//! assert_eq!(a.range().unwrap(), (-1.0, 3.0));
//! // A two-pass histogram observer: range pass, then histogram pass.
//! let mut h = HistogramObserver::<256>::two_pass(cfg);
//! for pass in 0..h.passes() {
//!     for b in batches { h.observe(b).unwrap(); }
//!     h.end_pass().unwrap();
//! #   let _ = pass;
//! }
//! let p = h.qparams().unwrap();
//! assert!(p.scale() > 0.0);
//! ```

pub(crate) mod entropy;
mod histogram;
mod l2;
mod per_channel;
mod percentile;
#[cfg(test)]
mod proptests;
pub mod state;

pub use entropy::EntropyObserver;
#[doc(hidden)]
pub use entropy::{kl_search_dispatched, kl_search_portable, logf_lanes_dispatched};
pub use histogram::{Anchor, Binning, Histogram};
pub use l2::HistogramObserver;
pub use per_channel::{ChannelObserver, MovingAveragePerChannelMinMaxObserver, PerChannelMinMaxObserver};
pub use percentile::PercentileObserver;
pub use state::ObserverState;

use crate::Error;
use crate::quant::qparams_unchecked;
use crate::quant::{
    ChooseOptions, Convention, QParams, QScheme, QuantDType, Tensor, choose_qparams_with, fake_quantize,
};

/// What an observer does with NaN and ±Inf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NonFinitePolicy {
    /// Reject the batch with [`Error::NonFinite`] (nothing of it is recorded). The default.
    #[default]
    Error,
    /// Skip non-finite values (the caller has decided they carry no range information).
    Ignore,
}

/// What observers turn their statistics into: data type, scheme and formula.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ObserverConfig {
    /// The quantized data type.
    pub dtype: QuantDType,
    /// Scheme, convention (formula), `reduce_range`, eps, custom range.
    pub choose: ChooseOptions,
    /// What to do with NaN and ±Inf.
    pub non_finite: NonFinitePolicy,
}

impl ObserverConfig {
    /// `dtype` with `scheme`, PyTorch's formulas, non-finite values rejected.
    pub const fn new(dtype: QuantDType, scheme: QScheme) -> Self {
        Self { dtype, choose: ChooseOptions::new(scheme), non_finite: NonFinitePolicy::Error }
    }
    /// The same with another convention (formula for the parameters, rounding for quantizing).
    pub const fn with_convention(mut self, convention: Convention) -> Self {
        self.choose.convention = convention;
        self
    }
    /// The same with PyTorch's `reduce_range`.
    pub const fn with_reduce_range(mut self, reduce_range: bool) -> Self {
        self.choose.reduce_range = reduce_range;
        self
    }
    /// The same with a custom quantized range (PyTorch `quant_min`/`quant_max`).
    pub const fn with_qrange(mut self, qmin: i32, qmax: i32) -> Self {
        self.choose.qrange = Some((qmin, qmax));
        self
    }
    /// The same with another non-finite policy.
    pub const fn with_non_finite(mut self, policy: NonFinitePolicy) -> Self {
        self.non_finite = policy;
        self
    }
    /// Parameters for the real range `[lo, hi]` ([`choose_qparams_with`]).
    ///
    /// # Errors
    /// As [`choose_qparams_with`].
    pub fn qparams_for(&self, lo: f32, hi: f32) -> Result<QParams, Error> {
        choose_qparams_with(lo, hi, self.dtype, &self.choose)
    }
}

/// A per-tensor observer.
pub trait Observer {
    /// Records a batch of values (all or nothing: on error the batch is not recorded).
    ///
    /// # Errors
    /// [`Error::NonFinite`] under [`NonFinitePolicy::Error`]; observer-specific errors.
    fn observe(&mut self, x: &[f32]) -> Result<(), Error>;

    /// Folds `other`'s statistics into this observer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the two cannot be combined (different configurations,
    /// passes or histogram ranges).
    fn merge(&mut self, other: &Self) -> Result<(), Error>
    where
        Self: Sized;

    /// The calibrated real range `(lo, hi)`, before it is widened to contain 0.
    ///
    /// # Errors
    /// [`Error::NoData`] if nothing was observed.
    fn range(&self) -> Result<(f32, f32), Error>;

    /// Quantization parameters for the calibrated range.
    ///
    /// # Errors
    /// [`Error::NoData`] if nothing was observed; errors of [`choose_qparams_with`].
    fn qparams(&self) -> Result<QParams, Error>;

    /// Forgets everything observed.
    fn reset(&mut self);

    /// Passes over the calibration data this observer needs (2 for histogram observers in
    /// two-pass mode, 1 otherwise).
    fn passes(&self) -> u32 {
        1
    }

    /// Ends the current pass (a histogram observer in two-pass mode fixes its range here);
    /// does nothing after the last pass.
    ///
    /// # Errors
    /// [`Error::NoData`] if a range pass saw nothing.
    fn end_pass(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// Smallest and largest finite `map(x)`, or `None` if there is none.
pub(crate) fn batch_range(
    x: &[f32],
    map: fn(f32) -> f32,
    policy: NonFinitePolicy,
) -> Result<Option<(f32, f32)>, Error> {
    let mut lo = f32::INFINITY;
    let mut hi = f32::NEG_INFINITY;
    let mut any = false;
    for (i, &v) in x.iter().enumerate() {
        if !v.is_finite() {
            match policy {
                NonFinitePolicy::Error => return Err(Error::NonFinite { index: i }),
                NonFinitePolicy::Ignore => continue,
            }
        }
        let m = map(v);
        if !any || m < lo {
            lo = m;
        }
        if !any || m > hi {
            hi = m;
        }
        any = true;
    }
    Ok(if any { Some((lo, hi)) } else { None })
}

pub(crate) fn identity(v: f32) -> f32 {
    v
}

/// Running minimum and maximum (PyTorch `MinMaxObserver`; ONNX Runtime `MinMaxCalibrater`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinMaxObserver {
    cfg: ObserverConfig,
    range: Option<(f32, f32)>,
}

impl MinMaxObserver {
    /// An observer that has seen nothing.
    pub const fn new(cfg: ObserverConfig) -> Self {
        Self { cfg, range: None }
    }
    /// The configuration.
    pub fn config(&self) -> &ObserverConfig {
        &self.cfg
    }
}

fn union(a: Option<(f32, f32)>, b: Option<(f32, f32)>) -> Option<(f32, f32)> {
    match (a, b) {
        (Some((l1, h1)), Some((l2, h2))) => Some((if l2 < l1 { l2 } else { l1 }, if h2 > h1 { h2 } else { h1 })),
        (x, None) | (None, x) => x,
    }
}

impl Observer for MinMaxObserver {
    fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        let b = batch_range(x, identity, self.cfg.non_finite)?;
        self.range = union(self.range, b);
        Ok(())
    }
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        self.range = union(self.range, other.range);
        Ok(())
    }
    fn range(&self) -> Result<(f32, f32), Error> {
        self.range.ok_or(Error::NoData)
    }
    fn qparams(&self) -> Result<QParams, Error> {
        let (lo, hi) = self.range()?;
        self.cfg.qparams_for(lo, hi)
    }
    fn reset(&mut self) {
        self.range = None;
    }
}

/// Moving averages of the batch minimum and maximum (PyTorch `MovingAverageMinMaxObserver`):
/// the first batch sets them, then `min = min + c · (batch_min - min)` (same for max) in `f32`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MovingAverageMinMaxObserver {
    cfg: ObserverConfig,
    averaging_constant: f32,
    range: Option<(f32, f32)>,
}

impl MovingAverageMinMaxObserver {
    /// PyTorch's default averaging constant.
    pub const DEFAULT_AVERAGING_CONSTANT: f32 = 0.01;

    /// An observer with averaging constant 0.01.
    pub const fn new(cfg: ObserverConfig) -> Self {
        Self { cfg, averaging_constant: Self::DEFAULT_AVERAGING_CONSTANT, range: None }
    }
    /// An observer with averaging constant `c` in `[0, 1]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `c` is outside `[0, 1]`.
    pub fn with_averaging_constant(cfg: ObserverConfig, c: f32) -> Result<Self, Error> {
        if !(0.0..=1.0).contains(&c) {
            return Err(Error::InvalidArgument { reason: "averaging constant must be in [0, 1]" });
        }
        Ok(Self { cfg, averaging_constant: c, range: None })
    }

    fn fold(&mut self, b: Option<(f32, f32)>) {
        let c = self.averaging_constant;
        self.range = match (self.range, b) {
            (None, b) => b,
            (r, None) => r,
            (Some((lo, hi)), Some((bl, bh))) => Some((lo + c * (bl - lo), hi + c * (bh - hi))),
        };
    }
}

impl Observer for MovingAverageMinMaxObserver {
    fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        let b = batch_range(x, identity, self.cfg.non_finite)?;
        self.fold(b);
        Ok(())
    }
    /// The other observer's averages count as one more batch (moving averages depend on
    /// order, so no merge can be exact).
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        self.fold(other.range);
        Ok(())
    }
    fn range(&self) -> Result<(f32, f32), Error> {
        self.range.ok_or(Error::NoData)
    }
    fn qparams(&self) -> Result<QParams, Error> {
        let (lo, hi) = self.range()?;
        self.cfg.qparams_for(lo, hi)
    }
    fn reset(&mut self) {
        self.range = None;
    }
}

/// Fixed parameters for outputs whose range is known (PyTorch `FixedQParamsObserver`): it
/// observes nothing (it still checks the data for NaN/Inf under the default policy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedQParamsObserver {
    qparams: QParams,
    non_finite: NonFinitePolicy,
}

impl FixedQParamsObserver {
    /// Always `qparams`.
    pub const fn new(qparams: QParams) -> Self {
        Self { qparams, non_finite: NonFinitePolicy::Error }
    }
    /// Known-valid constants only (scale > 0, zero point in range): no checks needed.
    const fn fixed(scale: f32, zero_point: i32, dtype: QuantDType) -> Self {
        Self::new(qparams_unchecked(scale, zero_point, dtype, dtype.min(), dtype.max(), Convention::Onnx))
    }
    /// int8 sigmoid/logistic output, range [0, 1): scale 1/256, zero point -128 (TFLite).
    pub const fn sigmoid_s8() -> Self {
        Self::fixed(1.0 / 256.0, -128, QuantDType::Int8)
    }
    /// int8 softmax output (as sigmoid): scale 1/256, zero point -128 (TFLite).
    pub const fn softmax_s8() -> Self {
        Self::sigmoid_s8()
    }
    /// int8 tanh output, range [-1, 1): scale 1/128, zero point 0 (TFLite).
    pub const fn tanh_s8() -> Self {
        Self::fixed(1.0 / 128.0, 0, QuantDType::Int8)
    }
    /// uint8 sigmoid output: scale 1/256, zero point 0 (PyTorch `default_fixed_qparams_range_0to1`).
    pub const fn sigmoid_u8() -> Self {
        Self::fixed(1.0 / 256.0, 0, QuantDType::UInt8)
    }
    /// uint8 tanh output: scale 2/256, zero point 128 (PyTorch `default_fixed_qparams_range_neg1to1`).
    pub const fn tanh_u8() -> Self {
        Self::fixed(2.0 / 256.0, 128, QuantDType::UInt8)
    }
    /// The same observer with another non-finite policy.
    pub fn with_non_finite(self, policy: NonFinitePolicy) -> Self {
        Self { non_finite: policy, ..self }
    }
}

impl Observer for FixedQParamsObserver {
    fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        batch_range(x, identity, self.non_finite).map(|_| ())
    }
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        if self.qparams == other.qparams {
            Ok(())
        } else {
            Err(Error::InvalidArgument { reason: "cannot merge fixed-qparams observers with different parameters" })
        }
    }
    fn range(&self) -> Result<(f32, f32), Error> {
        Ok(self.qparams.real_range())
    }
    fn qparams(&self) -> Result<QParams, Error> {
        Ok(self.qparams)
    }
    fn reset(&mut self) {}
}

/// An observer with PyTorch `FakeQuantize`'s switches: `observer_enabled` (statistics are
/// recorded) and `fake_quant_enabled` (the forward pass quantizes). Freezing the parameters
/// for the end of quantization-aware training is `enable_observer(false)`.
#[derive(Debug, Clone)]
pub struct FakeQuantize<O: Observer> {
    observer: O,
    observer_enabled: bool,
    fake_quant_enabled: bool,
}

impl<O: Observer> FakeQuantize<O> {
    /// Both switches on.
    pub fn new(observer: O) -> Self {
        Self { observer, observer_enabled: true, fake_quant_enabled: true }
    }
    /// Turns statistics recording on or off.
    pub fn enable_observer(&mut self, on: bool) {
        self.observer_enabled = on;
    }
    /// Turns fake quantization on or off (off: `forward` copies its input).
    pub fn enable_fake_quant(&mut self, on: bool) {
        self.fake_quant_enabled = on;
    }
    /// Whether statistics are recorded.
    pub fn observer_enabled(&self) -> bool {
        self.observer_enabled
    }
    /// Whether `forward` fake-quantizes.
    pub fn fake_quant_enabled(&self) -> bool {
        self.fake_quant_enabled
    }
    /// The wrapped observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }
    /// The wrapped observer, mutably.
    pub fn observer_mut(&mut self) -> &mut O {
        &mut self.observer
    }

    /// One training step's forward pass: observes `x` if enabled, then writes
    /// `fake_quantize(x)` (or `x` itself when fake quantization is off) to `out`, and, if
    /// given, the straight-through mask (all `true` when off).
    ///
    /// # Errors
    /// Errors of `observe`, `qparams` and [`fake_quantize`]; [`Error::LengthMismatch`].
    pub fn forward(&mut self, x: &[f32], out: &mut [f32], mask: Option<&mut [bool]>) -> Result<(), Error> {
        if x.len() != out.len() {
            return Err(Error::LengthMismatch { expected: x.len(), actual: out.len() });
        }
        if self.observer_enabled {
            self.observer.observe(x)?;
        }
        if self.fake_quant_enabled {
            let p = self.observer.qparams()?;
            fake_quantize(&Tensor::from_slice(x), &p.into(), out, mask)
        } else {
            out.copy_from_slice(x);
            if let Some(m) = mask {
                m.fill(true);
            }
            Ok(())
        }
    }
}

impl<O: Observer> Observer for FakeQuantize<O> {
    fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        if self.observer_enabled { self.observer.observe(x) } else { Ok(()) }
    }
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        self.observer.merge(&other.observer)
    }
    fn range(&self) -> Result<(f32, f32), Error> {
        self.observer.range()
    }
    fn qparams(&self) -> Result<QParams, Error> {
        self.observer.qparams()
    }
    fn reset(&mut self) {
        self.observer.reset();
    }
    fn passes(&self) -> u32 {
        self.observer.passes()
    }
    fn end_pass(&mut self) -> Result<(), Error> {
        self.observer.end_pass()
    }
}

/// Statistics of a range pass: min and max of `x` and of `|x|`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RangeStats {
    pub(crate) x: Option<(f32, f32)>,
    pub(crate) abs: Option<(f32, f32)>,
}

impl RangeStats {
    pub(crate) const EMPTY: Self = Self { x: None, abs: None };
    pub(crate) fn add(&mut self, x: &[f32], policy: NonFinitePolicy) -> Result<(), Error> {
        let b = batch_range(x, identity, policy)?;
        let a = batch_range(x, f32::abs, policy)?;
        self.x = union(self.x, b);
        self.abs = union(self.abs, a);
        Ok(())
    }
    pub(crate) fn merge(&mut self, o: &Self) {
        self.x = union(self.x, o.x);
        self.abs = union(self.abs, o.abs);
    }
}

/// State of a histogram observer: a range pass (two-pass mode) or bins.
#[derive(Debug, Clone)]
pub(crate) enum HistState<const N: usize> {
    Range(RangeStats),
    Bins(Histogram<N>),
}

impl<const N: usize> HistState<N> {
    pub(crate) fn merge(&mut self, other: &Self) -> Result<(), Error> {
        match (self, other) {
            (HistState::Range(a), HistState::Range(b)) => {
                a.merge(b);
                Ok(())
            }
            (HistState::Bins(a), HistState::Bins(b)) => a.merge(b),
            _ => Err(Error::InvalidArgument { reason: "cannot merge observers in different passes" }),
        }
    }
    pub(crate) fn bins(&self) -> Result<&Histogram<N>, Error> {
        match self {
            HistState::Bins(h) if h.total() > 0 => Ok(h),
            HistState::Bins(_) => Err(Error::NoData),
            HistState::Range(_) => Err(Error::InvalidArgument {
                reason: "the range pass is not finished: call end_pass() and run the histogram pass",
            }),
        }
    }
}

// ---- state (de)serialization (see `state`) ----

impl RangeStats {
    pub(crate) const fn state_len(&self) -> usize {
        state::range_len(self.x) + state::range_len(self.abs)
    }
    pub(crate) fn write_state(&self, w: &mut state::Writer<'_>) -> Result<(), Error> {
        w.range(self.x)?;
        w.range(self.abs)
    }
    pub(crate) fn read_state(r: &mut state::Reader<'_>) -> Result<Self, Error> {
        Ok(Self { x: r.range()?, abs: r.range()? })
    }
}

impl<const N: usize> HistState<N> {
    pub(crate) fn state_len(&self) -> usize {
        1 + match self {
            HistState::Range(s) => s.state_len(),
            HistState::Bins(h) => h.state_len(),
        }
    }
    pub(crate) fn write_state(&self, w: &mut state::Writer<'_>) -> Result<(), Error> {
        match self {
            HistState::Range(s) => {
                w.u8(0)?;
                s.write_state(w)
            }
            HistState::Bins(h) => {
                w.u8(1)?;
                h.write_state(w)
            }
        }
    }
    /// Reads a state; `two_pass` observers start in the range pass, streaming ones in bins
    /// anchored at `anchor`.
    pub(crate) fn read_state(r: &mut state::Reader<'_>, two_pass: bool, anchor: Anchor) -> Result<Self, Error> {
        match r.u8()? {
            0 if two_pass => Ok(HistState::Range(RangeStats::read_state(r)?)),
            1 => {
                let h = Histogram::read_state(r, anchor)?;
                // A streaming observer never has a fixed range, a two-pass one only has one.
                if two_pass != h.bounds().is_some_and(|_| h.dyadic_width().is_none()) {
                    return Err(state::INVALID);
                }
                Ok(HistState::Bins(h))
            }
            _ => Err(state::INVALID),
        }
    }
}

/// The body every histogram observer writes after its settings: range statistics, then the
/// pass state.
pub(crate) fn write_hist_body<const N: usize>(
    w: &mut state::Writer<'_>,
    stats: &RangeStats,
    st: &HistState<N>,
) -> Result<(), Error> {
    stats.write_state(w)?;
    st.write_state(w)
}

impl ObserverState for MinMaxObserver {
    fn state_len(&self) -> usize {
        state::HEAD_LEN + state::range_len(self.range)
    }
    fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut w = state::Writer::new(out);
        w.head(state::tag::MIN_MAX)?;
        w.range(self.range)?;
        Ok(w.pos())
    }
    fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        let mut r = state::Reader::new(bytes);
        r.head(state::tag::MIN_MAX)?;
        self.range = r.range()?;
        Ok(r.pos())
    }
}

impl ObserverState for MovingAverageMinMaxObserver {
    fn state_len(&self) -> usize {
        state::HEAD_LEN + 4 + state::range_len(self.range)
    }
    fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut w = state::Writer::new(out);
        w.head(state::tag::MOVING_AVERAGE)?;
        w.f32(self.averaging_constant)?;
        w.range(self.range)?;
        Ok(w.pos())
    }
    fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        let mut r = state::Reader::new(bytes);
        r.head(state::tag::MOVING_AVERAGE)?;
        if r.f32()?.to_bits() != self.averaging_constant.to_bits() {
            return Err(state::SETTINGS);
        }
        self.range = r.range()?;
        Ok(r.pos())
    }
}

/// Pairwise summation exactly as numpy sums a contiguous `float32` array (blocks of up to
/// 128 with eight accumulators, halves split at multiples of 8), so reductions over
/// histograms reproduce ONNX Runtime's numbers bit for bit.
pub(crate) fn numpy_sum_f32(a: &[f32]) -> f32 {
    let n = a.len();
    if n < 8 {
        let mut r = 0.0f32;
        for &v in a {
            r += v;
        }
        r
    } else if n <= 128 {
        let mut r = [0f32; 8];
        let mut chunks = a.chunks_exact(8);
        if let Some(head) = chunks.next() {
            r.copy_from_slice(head);
        }
        for c in chunks.by_ref() {
            for (acc, &v) in r.iter_mut().zip(c) {
                *acc += v;
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &v in chunks.remainder() {
            res += v;
        }
        res
    } else {
        let n2 = n / 2 - (n / 2) % 8;
        match (a.get(..n2), a.get(n2..)) {
            (Some(l), Some(r)) => numpy_sum_f32(l) + numpy_sum_f32(r),
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_data_and_non_finite_policies() {
        let cfg = ObserverConfig::new(QuantDType::Int8, QScheme::Affine);
        let mut o = MinMaxObserver::new(cfg);
        assert_eq!(o.qparams(), Err(Error::NoData));
        assert_eq!(o.observe(&[1.0, f32::NAN]), Err(Error::NonFinite { index: 1 }));
        assert_eq!(o.range(), Err(Error::NoData)); // the batch was not recorded
        let mut i = MinMaxObserver::new(cfg.with_non_finite(NonFinitePolicy::Ignore));
        i.observe(&[1.0, f32::NAN, -2.0, f32::INFINITY]).unwrap();
        assert_eq!(i.range(), Ok((-2.0, 1.0)));
        i.observe(&[f32::NAN]).unwrap();
        assert_eq!(i.range(), Ok((-2.0, 1.0)));
    }

    #[test]
    fn fake_quantize_switches() {
        let cfg = ObserverConfig::new(QuantDType::UInt8, QScheme::Affine);
        let mut fq = FakeQuantize::new(MinMaxObserver::new(cfg));
        let mut out = [0f32; 3];
        let mut mask = [false; 3];
        fq.forward(&[0.0, 1.0, 2.55], &mut out, Some(&mut mask)).unwrap();
        assert_eq!(mask, [true; 3]);
        fq.enable_observer(false); // freeze
        fq.forward(&[10.0, 0.0, 1.0], &mut out, Some(&mut mask)).unwrap();
        assert_eq!(fq.range(), Ok((0.0, 2.55)));
        assert_eq!(mask, [false, true, true]);
        assert_eq!(out[0], fq.qparams().unwrap().real_range().1);
        fq.enable_fake_quant(false);
        fq.forward(&[10.0, 0.0, 1.0], &mut out, None).unwrap();
        assert_eq!(out, [10.0, 0.0, 1.0]);
    }

    #[test]
    fn fixed_qparams() {
        let o = FixedQParamsObserver::sigmoid_s8();
        assert_eq!(o.qparams().map(|p| (p.scale(), p.zero_point())), Ok((1.0 / 256.0, -128)));
        assert_eq!(o.range(), Ok((0.0, 255.0 / 256.0)));
        let t = FixedQParamsObserver::tanh_s8();
        assert_eq!(t.range(), Ok((-1.0, 127.0 / 128.0)));
    }
}
