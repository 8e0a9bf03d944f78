//! PyTorch's `HistogramObserver`: a histogram, then the range that minimizes an estimate of
//! the L2 quantization error (`_non_linear_param_search`, from caffe2's
//! `NormMinimization::NonlinearQuantizationParamsSearch`).

use super::histogram::{Anchor, Binning, Histogram};
use super::{HistState, Observer, ObserverConfig, RangeStats, identity};
use crate::Error;
use crate::quant::QParams;

/// PyTorch `HistogramObserver` (2048 bins by default): the range is searched on the histogram
/// to minimize the L2 error of quantizing with `2^bits` levels (256 for 8-bit types).
///
/// In two-pass mode the histogram is `torch.histc(x, N, min, max)` over all the data, and the
/// search reproduces PyTorch's arithmetic (`f32` tensors, `f64` Python scalars; only the final
/// sum of the error terms is done in `f64` instead of torch's `f32` reduction order), so the
/// range is PyTorch's for the same data fed in one batch. Streaming mode searches the
/// power-of-two grid and clamps the result to the data's min and max.
#[derive(Debug, Clone)]
pub struct HistogramObserver<const N: usize = 2048> {
    cfg: ObserverConfig,
    state: HistState<N>,
    stats: RangeStats,
    two_pass: bool,
}

impl<const N: usize> HistogramObserver<N> {
    /// A one-pass (streaming) observer.
    pub fn new(cfg: ObserverConfig) -> Self {
        Self {
            cfg,
            state: HistState::Bins(Histogram::streaming(Anchor::Free)),
            stats: RangeStats::EMPTY,
            two_pass: false,
        }
    }
    /// A two-pass observer (range pass, then a `torch.histc` histogram pass).
    pub fn two_pass(cfg: ObserverConfig) -> Self {
        Self { cfg, state: HistState::Range(RangeStats::EMPTY), stats: RangeStats::EMPTY, two_pass: true }
    }
    /// The histogram, once binning has started.
    pub fn histogram(&self) -> Option<&Histogram<N>> {
        match &self.state {
            HistState::Bins(h) => Some(h),
            HistState::Range(_) => None,
        }
    }
    /// The configuration.
    pub fn config(&self) -> &ObserverConfig {
        &self.cfg
    }
}

impl<const N: usize> super::ObserverState for HistogramObserver<N> {
    fn state_len(&self) -> usize {
        // head, the two-pass flag, the range statistics, the histogram
        super::state::HEAD_LEN + 1 + self.stats.state_len() + self.state.state_len()
    }
    fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut w = super::state::Writer::new(out);
        w.head(super::state::tag::HISTOGRAM)?;
        w.u8(u8::from(self.two_pass))?;

        super::write_hist_body(&mut w, &self.stats, &self.state)?;
        Ok(w.pos())
    }
    fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        let mut r = super::state::Reader::new(bytes);
        r.head(super::state::tag::HISTOGRAM)?;
        if r.bool()? != self.two_pass {
            return Err(super::state::SETTINGS);
        }

        let stats = RangeStats::read_state(&mut r)?;
        let state = HistState::read_state(&mut r, self.two_pass, Anchor::Free)?;
        self.stats = stats;
        self.state = state;
        Ok(r.pos())
    }
}

impl<const N: usize> Observer for HistogramObserver<N> {
    fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        match &mut self.state {
            HistState::Range(s) => s.add(x, self.cfg.non_finite)?,
            HistState::Bins(h) => h.add(x, identity, self.cfg.non_finite)?,
        }
        self.stats.add(x, self.cfg.non_finite)
    }
    fn merge(&mut self, other: &Self) -> Result<(), Error> {
        if self.two_pass != other.two_pass {
            return Err(Error::InvalidArgument { reason: "cannot merge a two-pass observer with a streaming one" });
        }
        self.state.merge(&other.state)?;
        self.stats.merge(&other.stats);
        Ok(())
    }
    fn range(&self) -> Result<(f32, f32), Error> {
        let h = self.state.bins()?;
        let (dmin, dmax) = h.data_range().ok_or(Error::NoData)?;
        let dst_nbins = (1u64 << self.cfg.dtype.bits().min(32)) as f64;
        if self.two_pass {
            Ok(l2_search(h.counts(), dmin, dmax, dst_nbins))
        } else {
            let (lo, hi) = h.bounds().ok_or(Error::NoData)?;
            let (a, b) = l2_search(h.counts(), lo, hi, dst_nbins);
            let a = if a < dmin {
                dmin
            } else if a > dmax {
                dmax
            } else {
                a
            };
            let b = if b > dmax {
                dmax
            } else if b < a {
                a
            } else {
                b
            };
            Ok((a, b))
        }
    }
    fn qparams(&self) -> Result<QParams, Error> {
        let (lo, hi) = self.range()?;
        self.cfg.qparams_for(lo, hi)
    }
    fn reset(&mut self) {
        *self = if self.two_pass { Self::two_pass(self.cfg) } else { Self::new(self.cfg) };
    }
    fn passes(&self) -> u32 {
        if self.two_pass { 2 } else { 1 }
    }
    fn end_pass(&mut self) -> Result<(), Error> {
        if let HistState::Range(s) = &self.state {
            let (lo, hi) = s.x.ok_or(Error::NoData)?;
            self.state = HistState::Bins(Histogram::fixed(lo, hi, Binning::TorchHistc)?);
        }
        Ok(())
    }
}

/// `fmod(a, b)` (exact, the remainder of truncating division, with the sign of `a`) for
/// `|a / b| < 2^24`, which holds in the L2 search (`|a / b| <= bins · 2^bits`). Computed in
/// `f64`, where `trunc(a / b) · b` and the difference are exact; a quotient rounded up to the
/// next integer is corrected. (libm's `fmodf` keeps panicking branches on Cortex-M.)
#[inline(always)]
fn fmod_small(a: f32, b: f32) -> f32 {
    let (a, b) = (a as f64, b as f64);
    let mut q = libm::trunc(a / b);
    let mut r = a - q * b;
    if r != 0.0 && (r < 0.0) != (a < 0.0) {
        // The quotient was rounded away from zero past an integer: step back by one.
        q -= if (a < 0.0) == (b < 0.0) { 1.0 } else { -1.0 };
        r = a - q * b;
    }
    // A zero remainder keeps the sign of `a`, as fmod's does.
    if r == 0.0 { libm::copysign(0.0, a) as f32 } else { r as f32 }
}

/// c10's `div_floor_floating` (what `torch.div(a, b, rounding_mode="floor")` computes).
#[inline(always)]
fn div_floor(a: f32, b: f32) -> f32 {
    if b == 0.0 {
        return a / b;
    }
    let m = fmod_small(a, b);
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut fd = libm::floorf(div);
        if div - fd > 0.5 {
            fd += 1.0;
        }
        fd
    } else {
        libm::copysignf(0.0, a / b)
    }
}

#[inline(always)]
fn clampf(x: f32, lo: f32, hi: f32) -> f32 {
    let y = if x < lo { lo } else { x };
    if y > hi { hi } else { y }
}

/// `HistogramObserver._compute_quantization_error(next_start_bin, next_end_bin)`.
fn quantization_error(counts: &[u64], min_val: f32, max_val: f32, start: usize, end: usize, dst_nbins: f64) -> f64 {
    let n = counts.len();
    let bin_width = (max_val as f64 - min_val as f64) / n as f64;
    let dst_bin_width = bin_width * (end - start + 1) as f64 / dst_nbins;
    if dst_bin_width == 0.0 {
        return 0.0;
    }
    let bw = bin_width as f32;
    let dbw = dst_bin_width as f32;
    let half = (dst_bin_width / 2.0) as f32;
    let neg_half = (-dst_bin_width / 2.0) as f32;
    let dmax = (dst_nbins - 1.0) as f32;
    let mid = ((half * half) * half - (neg_half * neg_half) * neg_half) / 3.0;
    let mut sum = 0f64;
    for (j, &c) in counts.iter().enumerate() {
        let begin = (j as i64 - start as i64) as f32 * bw;
        let src_end = begin + bw;
        let db = clampf(div_floor(begin, dbw), 0.0, dmax);
        let db_center = (db + 0.5) * dbw;
        let de = clampf(div_floor(src_end, dbw), 0.0, dmax);
        let density = c as f32 / bw;
        let delta_begin = begin - db_center;
        let mut norm = 0f32;
        norm += density * (((half * half) * half - (delta_begin * delta_begin) * delta_begin) / 3.0);
        norm += (de - db - 1.0) * (density * mid);
        let de_center = de * dbw + half;
        let delta_end = src_end - de_center;
        norm += density * (((delta_end * delta_end) * delta_end - (neg_half * neg_half) * neg_half) / 3.0);
        sum += norm as f64;
    }
    sum
}

/// `HistogramObserver._non_linear_param_search` on `counts` over `[min_val, max_val]`.
pub(crate) fn l2_search<const N: usize>(counts: &[u64; N], min_val: f32, max_val: f32, dst_nbins: f64) -> (f32, f32) {
    if N == 0 {
        return (min_val, max_val);
    }
    let bin_width = (max_val - min_val) / N as f32;
    // torch.cumsum of the float histogram accumulates in double and stores float: the exact
    // integer prefix sums rounded to f32. torch.sum(...).item() is exact below 2^24.
    let mut cs = [0f32; N];
    let mut running = 0u64;
    for (c, &k) in cs.iter_mut().zip(counts.iter()) {
        running += k;
        *c = running as f32;
    }
    let total = running as f32 as f64;
    let stepsize = 1e-5f64;
    let (mut alpha, mut beta) = (0.0f64, 1.0f64);
    let (mut start, mut end) = (0usize, N - 1);
    let mut norm_min = f64::INFINITY;
    while alpha < beta {
        let na = alpha + stepsize;
        let nb = beta - stepsize;
        // Python compares a 0-dim float32 tensor with a Python float: in float32.
        let ta = (na * total) as f32;
        let tb = (nb * total) as f32;
        // l: first index in [start, end) whose prefix sum reaches ta, else end
        // (the prefix sums are non-decreasing, so PyTorch's linear scan is a partition point).
        let l = start + cs.get(start..end).map_or(0, |s| s.partition_point(|&v| v < ta));
        // r: last index in (start, end] whose prefix sum is <= tb, else start.
        let r = start + cs.get(start + 1..end + 1).map_or(0, |s| s.partition_point(|&v| v <= tb));
        let (mut ns, mut ne) = (start, end);
        if l - start > end - r {
            ns = l;
            alpha = na;
        } else {
            ne = r;
            beta = nb;
        }
        if ns == start && ne == end {
            continue;
        }
        let norm = quantization_error(counts, min_val, max_val, ns, ne, dst_nbins);
        if norm > norm_min {
            break;
        }
        norm_min = norm;
        start = ns;
        end = ne;
    }
    (min_val + bin_width * start as f32, min_val + bin_width * (end + 1) as f32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fmod_small_is_exact() {
        // Remainders checked against their exact definition a - trunc(a / b) · b in integers
        // (values on a 2^-20 grid).
        let vals = [0.0f32, 1.0, -1.0, 0.1, -0.1, 3.75, 7.0, -7.0, 1e-3, 123.456, -98.5, 0.3, 0.7];
        for &a in &vals {
            for &b in &[0.1f32, 0.25, 1.0, 3.0, -0.5, 7.0, 1e-3, 0.3] {
                let got = super::fmod_small(a, b);
                let want = libm::fmodf(a, b);
                assert_eq!(got.to_bits(), want.to_bits(), "fmod({a}, {b})");
            }
        }
        assert_eq!(super::div_floor(-0.25, 0.5), -1.0);
        assert_eq!(super::div_floor(0.75, 0.25), 3.0);
    }
}
