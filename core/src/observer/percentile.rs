//! ONNX Runtime's `PercentileCalibrater`.

use super::histogram::{Anchor, Binning, Histogram};
use super::{HistState, Observer, ObserverConfig, RangeStats, identity};
use crate::Error;
use crate::quant::QParams;

/// Percentile calibration (ONNX Runtime's `PercentileCalibrater`, percentile 99.999 by
/// default): a histogram, its cumulative distribution (`np.cumsum(hist / total)` in `f64`), and
/// the bin edge where it reaches the percentile.
///
/// - symmetric (ORT's default through `create_calibrator`): histogram of `|x|` over
///   `[min |x|, max |x|]`; range `(-t, t)` with `t` the edge at `percentile / 100`;
/// - asymmetric: histogram of `x` over `[-amax, amax]`, cutting `(100 - percentile) / 200` on
///   each side.
///
/// The range is then clipped to the data's min and max. Two-pass mode reproduces ORT's
/// histogram (`np.histogram` in `f32`) and result bit for bit.
#[derive(Debug, Clone)]
pub struct PercentileObserver<const N: usize = 2048> {
    cfg: ObserverConfig,
    percentile: f64,
    symmetric: bool,
    state: HistState<N>,
    stats: RangeStats,
    two_pass: bool,
}

impl<const N: usize> PercentileObserver<N> {
    /// ONNX Runtime's default percentile.
    pub const DEFAULT_PERCENTILE: f64 = 99.999;

    fn anchor(symmetric: bool) -> Anchor {
        if symmetric { Anchor::Zero } else { Anchor::Centered }
    }
    fn check(percentile: f64) -> Result<(), Error> {
        if !(0.0..=100.0).contains(&percentile) {
            return Err(Error::InvalidArgument { reason: "percentile must be in [0, 100]" });
        }
        Ok(())
    }
    /// A one-pass (streaming) observer.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `0 <= percentile <= 100`.
    pub fn new(cfg: ObserverConfig, percentile: f64, symmetric: bool) -> Result<Self, Error> {
        Self::check(percentile)?;
        Ok(Self {
            cfg,
            percentile,
            symmetric,
            state: HistState::Bins(Histogram::streaming(Self::anchor(symmetric))),
            stats: RangeStats::EMPTY,
            two_pass: false,
        })
    }
    /// A two-pass observer (range pass, then ORT's histogram).
    ///
    /// # Errors
    /// As [`PercentileObserver::new`].
    pub fn two_pass(cfg: ObserverConfig, percentile: f64, symmetric: bool) -> Result<Self, Error> {
        Self::check(percentile)?;
        Ok(Self {
            cfg,
            percentile,
            symmetric,
            state: HistState::Range(RangeStats::EMPTY),
            stats: RangeStats::EMPTY,
            two_pass: true,
        })
    }
    /// The histogram, once binning has started.
    pub fn histogram(&self) -> Option<&Histogram<N>> {
        match &self.state {
            HistState::Bins(h) => Some(h),
            HistState::Range(_) => None,
        }
    }
    fn map(&self) -> fn(f32) -> f32 {
        if self.symmetric { f32::abs } else { identity }
    }
}

impl<const N: usize> super::ObserverState for PercentileObserver<N> {
    fn state_len(&self) -> usize {
        super::state::HEAD_LEN + 1 + 9 + self.stats.state_len() + self.state.state_len()
    }
    fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut w = super::state::Writer::new(out);
        w.head(super::state::tag::PERCENTILE)?;
        w.u8(u8::from(self.two_pass))?;
        w.f64(self.percentile)?;
        w.u8(u8::from(self.symmetric))?;
        super::write_hist_body(&mut w, &self.stats, &self.state)?;
        Ok(w.pos())
    }
    fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        let mut r = super::state::Reader::new(bytes);
        r.head(super::state::tag::PERCENTILE)?;
        if r.bool()? != self.two_pass {
            return Err(super::state::SETTINGS);
        }
        if r.f64()?.to_bits() != self.percentile.to_bits() || r.bool()? != self.symmetric {
            return Err(super::state::SETTINGS);
        }
        let stats = RangeStats::read_state(&mut r)?;
        let state = HistState::read_state(&mut r, self.two_pass, Self::anchor(self.symmetric))?;
        self.stats = stats;
        self.state = state;
        Ok(r.pos())
    }
}

impl<const N: usize> Observer for PercentileObserver<N> {
    fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        let map = self.map();
        match &mut self.state {
            HistState::Range(s) => s.add(x, self.cfg.non_finite)?,
            HistState::Bins(h) => h.add(x, map, self.cfg.non_finite)?,
        }
        self.stats.add(x, self.cfg.non_finite)
    }
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        if self.two_pass != other.two_pass || self.symmetric != other.symmetric || self.percentile != other.percentile {
            return Err(Error::InvalidArgument { reason: "cannot merge percentile observers with different settings" });
        }
        self.state.merge(&other.state)?;
        self.stats.merge(&other.stats);
        Ok(())
    }
    fn range(&self) -> Result<(f32, f32), Error> {
        self.range_at(self.percentile)
    }
    fn qparams(&self) -> Result<QParams, Error> {
        let (lo, hi) = self.range()?;
        self.cfg.qparams_for(lo, hi)
    }
    fn reset(&mut self) {
        self.state = if self.two_pass {
            HistState::Range(RangeStats::EMPTY)
        } else {
            HistState::Bins(Histogram::streaming(Self::anchor(self.symmetric)))
        };
        self.stats = RangeStats::EMPTY;
    }
    fn passes(&self) -> u32 {
        if self.two_pass { 2 } else { 1 }
    }
    fn end_pass(&mut self) -> Result<(), Error> {
        if let HistState::Range(s) = &self.state {
            let (amin, amax) = s.abs.ok_or(Error::NoData)?;
            let h = if self.symmetric {
                Histogram::fixed(amin, amax, Binning::Numpy)?
            } else {
                Histogram::fixed(-amax, amax, Binning::Numpy)?
            };
            self.state = HistState::Bins(h);
        }
        Ok(())
    }
}

impl<const N: usize> PercentileObserver<N> {
    /// The range at another percentile of the same histogram (`range()` is `range_at` of the
    /// observer's own percentile).
    ///
    /// # Errors
    /// As [`Observer::range`].
    pub fn range_at(&self, percentile: f64) -> Result<(f32, f32), Error> {
        let h = self.state.bins()?;
        let (dmin, dmax) = self.stats.x.ok_or(Error::NoData)?;
        let total = h.total();
        if total == 0 {
            return Err(Error::NoData);
        }
        // np.searchsorted(cdf, v) (left) with cdf = np.cumsum(hist / total).
        let search = |v: f64| -> usize {
            let mut cdf = 0f64;
            for (i, &c) in h.counts().iter().enumerate() {
                cdf += c as f64 / total as f64;
                if cdf >= v {
                    return i;
                }
            }
            N
        };
        let (lo, hi) = if self.symmetric {
            let t = h.edge(search(percentile / 100.0));
            (-t, t)
        } else {
            let cut = (100.0 - percentile) / 200.0;
            (h.edge(search(cut)), h.edge(search(1.0 - cut)))
        };
        Ok((if lo < dmin { dmin } else { lo }, if hi > dmax { dmax } else { hi }))
    }
}
