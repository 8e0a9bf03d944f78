//! The automatic range choice ([`ObserverKind::Auto`](super::ObserverKind::Auto), the default,
//! `--observer auto`), in two steps:
//!
//! - **per tensor** (this module): candidate ranges from the tensor's statistics, and the one
//!   with the least quantization error of the tensor over the calibration samples;
//! - **per model** ([`model`]): the policy — every tensor the same candidate, or each its own
//!   least-error one — whose int8 model has the least error at the model's output on the first
//!   calibration samples. A range best for one tensor alone is not always best for the model
//!   (on some zoo models each tensor's own choice loses to min/max at the output); measuring
//!   the output settles it (BENCHMARKS.md, "Calibration engine").
//!
//! **Pass 1** records, per activation, streaming histograms (those of the L2, entropy and
//! percentile observers, [`crate::observer`]; of at most [`ERROR_ELEMENTS`] evenly strided
//! elements per sample) and every sample's min and max (of every element). Its end fixes the
//! candidate ranges:
//!
//! | candidate | range |
//! |---|---|
//! | `minmax` | min and max of all the samples |
//! | `robust minmax` | min and max of the samples that are not outliers (below) |
//! | `percentile 99.9`, `99.99`, `99.999` | ONNX Runtime's symmetric percentile of `\|x\|`, clipped to the data |
//! | `entropy` | KL-divergence threshold (TensorRT, ONNX Runtime's entropy calibrator) |
//! | `mse` | the L2-error search on the histogram (PyTorch's `HistogramObserver`) |
//!
//! and which samples are outliers: a sample whose own max lies above `Q3 + max(3·IQR, 3·E)` of
//! the per-sample maxes (Tukey's far-out fence, and at least three typical extents `E` beyond
//! the typical max; `E = max(|Q3 of the maxes|, |Q1 of the mins|)`), or whose own min lies
//! below the mirror fence of the per-sample mins; at most one sample in ten on each side (the
//! most extreme ones).
//!
//! **Pass 2** quantizes every sample (at most [`ERROR_ELEMENTS`] strided elements of it) with
//! every candidate exactly as the int8 model will (int8
//! affine, TFLite's scale and zero point, rounding half away from zero, clamped) and sums the
//! squared error per sample. The range chosen is the candidate with the least mean error over
//! the samples that are not outliers: a handful of spiky samples cannot widen the range of every
//! other sample, and a heavy tail is clipped only where clipping lowers the error. Ties go to the
//! earlier candidate in the table (`minmax` first).
//!
//! Merging is exact: the pass-1 statistics merge exactly (histograms, lists of per-sample
//! ranges), pass 2 keeps each sample's errors, and the means sum them in sorted order, so any
//! split of the samples, merged in any order, chooses the same range from the same numbers.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

pub mod model;

pub(in crate::ptq) use model::quantize_auto;
pub use model::{FIRST_ROUND, MARGIN_DB, ModelChoice, ORDER, PolicyScore, RangePolicy};

use crate::Error;
use crate::observer::state::{self, Reader, Writer};
use crate::observer::{
    EntropyObserver, HistogramObserver, Observer, ObserverConfig, ObserverState, PercentileObserver,
};

/// Number of candidate ranges.
pub const CANDIDATES: usize = 7;

/// The candidates' names, in the order ties are broken.
pub const CANDIDATE_NAMES: [&str; CANDIDATES] =
    ["minmax", "robust minmax", "percentile 99.9", "percentile 99.99", "percentile 99.999", "entropy", "mse"];

const PERCENTILES: [f64; 3] = [99.9, 99.99, 99.999];

/// Why a tensor got its range ([`Calibrator::auto_choice`](super::Calibrator::auto_choice)).
#[derive(Debug, Clone, PartialEq)]
pub struct AutoChoice {
    /// Index of the chosen candidate in [`CANDIDATE_NAMES`].
    pub chosen: usize,
    /// Every candidate's range.
    pub ranges: [(f32, f32); CANDIDATES],
    /// Every candidate's mean squared error per sample over the samples kept.
    pub errors: [f64; CANDIDATES],
    /// Samples the errors are averaged over.
    pub samples: usize,
    /// Outlier samples left out of the averages.
    pub outliers: usize,
    /// The model-level choice that set this tensor's range ([`ModelChoice`]): every automatic
    /// tensor took the same candidate, or its own `chosen` one ([`RangePolicy::PerTensor`]).
    /// `None` when no model-level choice was made.
    pub model: Option<RangePolicy>,
}

impl AutoChoice {
    /// The candidate whose range the tensor got: the model-level choice's, or its own.
    pub fn taken(&self) -> usize {
        match self.model {
            Some(RangePolicy::Every(c)) => c,
            _ => self.chosen,
        }
    }

    /// The name of the candidate taken (`minmax`, `percentile 99.99`, ...).
    pub fn name(&self) -> &'static str {
        CANDIDATE_NAMES.get(self.taken()).copied().unwrap_or("minmax")
    }

    /// The range taken.
    pub fn range(&self) -> (f32, f32) {
        let [first, ..] = self.ranges;
        self.ranges.get(self.taken()).copied().unwrap_or(first)
    }

    /// The reason, in words: `least mean squared error over 97 samples (3 outlier samples left
    /// out); minmax 3.1 dB worse` (or, when `minmax` won, how much worse the runner-up was).
    pub fn why(&self) -> String {
        let own = self.own_why();
        match self.model {
            Some(RangePolicy::Every(c)) if c != self.chosen => format!(
                "the model-level choice ({} for every tensor: the least error at the model's output); \
                 this tensor alone: {} would have the {own}",
                CANDIDATE_NAMES.get(c).copied().unwrap_or("minmax"),
                self.own_name()
            ),
            Some(RangePolicy::Every(_)) => {
                format!("the model-level choice, and this tensor's own: {own}")
            }
            Some(RangePolicy::PerTensor) => format!("the model-level choice (each tensor its own): {own}"),
            None => own,
        }
    }

    fn own_name(&self) -> &'static str {
        CANDIDATE_NAMES.get(self.chosen).copied().unwrap_or("minmax")
    }

    /// The reason of the tensor's own choice.
    fn own_why(&self) -> String {
        let best = self.errors.get(self.chosen).copied().unwrap_or(0.0);
        let db = |e: f64| {
            if best > 0.0 {
                format!("{:.1} dB worse", 10.0 * libm::log10(e / best))
            } else if e > 0.0 {
                String::from("worse (this one is exact)")
            } else {
                String::from("as good")
            }
        };
        let mut s = format!("least mean squared error over {} samples", self.samples);
        if self.outliers > 0 {
            s.push_str(&format!(
                " ({} outlier sample{} left out)",
                self.outliers,
                if self.outliers == 1 { "" } else { "s" }
            ));
        }
        if self.chosen != 0 {
            s.push_str(&format!("; minmax {}", db(self.errors[0])));
        } else {
            // The best candidate whose range differs from minmax's.
            let other = (1..CANDIDATES)
                .filter(|&i| self.ranges[i] != self.ranges[0])
                .min_by(|&a, &b| self.errors[a].total_cmp(&self.errors[b]));
            match other {
                Some(i) => s.push_str(&format!("; next best {} {}", CANDIDATE_NAMES[i], db(self.errors[i]))),
                None => s.push_str("; every candidate is the data's min and max"),
            }
        }
        s
    }
}

/// Pass-1 statistics.
#[derive(Debug, Clone)]
struct Stats {
    mse: HistogramObserver<2048>,
    entropy: EntropyObserver<2048>,
    percentile: PercentileObserver<2048>,
    /// Per sample: min and max.
    samples: Vec<(f32, f32)>,
    /// With [`AutoObserver::keep_for_replay`]: every sample's scan and measured elements, for
    /// the error pass ([`AutoObserver::replay`]).
    kept: Option<Vec<KeptElements>>,
}

/// What the error pass takes of a sample ([`AutoObserver::replay`]): its range (of every
/// element) and the elements its errors are measured on (every `k`-th, [`ERROR_ELEMENTS`]).
#[derive(Debug, Clone)]
struct KeptElements {
    range: Option<(f32, f32)>,
    values: Vec<f32>,
}

/// Pass-2 statistics: the candidates, the outlier fences and the per-sample errors.
#[derive(Debug, Clone)]
struct Errors {
    ranges: [(f32, f32); CANDIDATES],
    /// A sample is an outlier if its min is below `fences.0` or its max above `fences.1`.
    fences: (f32, f32),
    /// Per sample kept: each candidate's sum of squared errors.
    errors: Vec<[f64; CANDIDATES]>,
    outliers: u64,
    /// The statistics pass's kept samples, until [`AutoObserver::replay`] measures them (or a
    /// sample observed in this pass drops them).
    replay: Option<Vec<KeptElements>>,
}

#[derive(Debug, Clone)]
enum Phase {
    Stats(Box<Stats>),
    Errors(Box<Errors>),
}

/// The automatic range choice of one activation (see the [module docs](self)). Always two
/// passes.
#[derive(Debug, Clone)]
pub(crate) struct AutoObserver {
    cfg: ObserverConfig,
    phase: Phase,
}

/// One sample's scan: its range over the finite values, and whether every value is finite.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SampleScan {
    range: Option<(f32, f32)>,
    all_finite: bool,
}

/// Lanes of [`scan_sample`]'s running minimums and maximums (the compiler keeps them in vector
/// registers: `minps` / `maxps` and an OR of the exponent tests, 16 values per step).
const SCAN_LANES: usize = 16;

/// The least and greatest finite value of `x`, and whether all of `x` is finite, in one pass.
/// Minimum and maximum are exact whatever the order they are taken in; a zero result is returned
/// as `+0.0` (lanes may meet `-0.0` and `+0.0` in any order).
fn scan_sample(x: &[f32]) -> SampleScan {
    const EXP: u32 = 0x7f80_0000;
    let mut lo = [f32::INFINITY; SCAN_LANES];
    let mut hi = [f32::NEG_INFINITY; SCAN_LANES];
    let mut bad = [false; SCAN_LANES];
    let chunks = x.chunks_exact(SCAN_LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        let Ok(chunk) = <&[f32; SCAN_LANES]>::try_from(chunk) else { continue }; // always whole
        for j in 0..SCAN_LANES {
            let v = chunk[j];
            lo[j] = if v < lo[j] { v } else { lo[j] };
            hi[j] = if v > hi[j] { v } else { hi[j] };
            bad[j] |= v.to_bits() & EXP == EXP;
        }
    }
    let all_finite = !bad.iter().any(|&b| b) && tail.iter().all(|v| v.is_finite());
    let (mut lo, mut hi) = if all_finite {
        let fold = |acc: (f32, f32), v: (f32, f32)| {
            (if v.0 < acc.0 { v.0 } else { acc.0 }, if v.1 > acc.1 { v.1 } else { acc.1 })
        };
        let lanes = lo.iter().zip(&hi).map(|(&a, &b)| (a, b));
        lanes.chain(tail.iter().map(|&v| (v, v))).fold((f32::INFINITY, f32::NEG_INFINITY), fold)
    } else {
        // Some value is NaN or infinite (the lanes' extremes may hold it): the finite ones alone.
        x.iter().filter(|v| v.is_finite()).fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)))
    };
    let plus_zero = |v: f32| if v == 0.0 { 0.0 } else { v };
    (lo, hi) = (plus_zero(lo), plus_zero(hi));
    SampleScan { range: (lo <= hi).then_some((lo, hi)), all_finite }
}

/// The least and greatest finite value of `x` ([`scan_sample`]).
fn sample_range(x: &[f32]) -> Option<(f32, f32)> {
    scan_sample(x).range
}

/// `v` sorted, element at quantile `q` (nearest rank below).
fn quantile(sorted: &[f32], q: f64) -> f32 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * q) as usize;
    sorted.get(i).copied().unwrap_or(0.0)
}

/// Quartiles of `v`, sorted in place.
fn quartiles(v: &mut [f32]) -> (f32, f32) {
    v.sort_by(f32::total_cmp);
    (quantile(v, 0.25), quantile(v, 0.75))
}

/// The upper fence of `v` (per-sample maxes, sorted): `Q3 + max(3·IQR, 3·extent)`, raised so that
/// at most `cap` values lie above it.
fn upper_fence(v: &[f32], (q1, q3): (f32, f32), extent: f32, cap: usize) -> f32 {
    let mut fence = q3 + (3.0 * (q3 - q1)).max(3.0 * extent);
    let above = v.iter().filter(|&&x| x > fence).count();
    if above > cap {
        // The (cap + 1)-th largest: exactly the `cap` largest (or fewer, with ties) lie above.
        fence = v.get(v.len() - 1 - cap).copied().unwrap_or(fence);
    }
    fence
}

impl AutoObserver {
    pub(crate) fn new(cfg: ObserverConfig) -> Result<Self, Error> {
        Ok(Self {
            cfg,
            phase: Phase::Stats(Box::new(Stats {
                mse: HistogramObserver::new(cfg),
                entropy: EntropyObserver::new(cfg, EntropyObserver::<2048>::DEFAULT_QUANTIZED_BINS)?,
                percentile: PercentileObserver::new(cfg, PercentileObserver::<2048>::DEFAULT_PERCENTILE, true)?,
                samples: Vec::new(),
                kept: None,
            })),
        })
    }

    /// Always two: statistics, then errors.
    pub(crate) fn passes(&self) -> u32 {
        2
    }

    /// One call is one sample.
    pub(crate) fn observe(&mut self, x: &[f32]) -> Result<(), Error> {
        match &mut self.phase {
            Phase::Stats(s) => {
                // The histograms see every `k`-th element of a large tensor (as pass 2 measures
                // errors, see ERROR_ELEMENTS); the sample's min and max are of every element. A
                // non-finite value anywhere goes to the histograms whole, for their error.
                let step = x.len().div_ceil(ERROR_ELEMENTS).max(1);
                let scan = scan_sample(x);
                let sub: Option<Vec<f32>> =
                    (step > 1 && scan.all_finite).then(|| x.iter().step_by(step).copied().collect());
                let seen = sub.as_deref().unwrap_or(x);
                // All three check non-finite values the same way: the first failing leaves
                // nothing recorded.
                s.mse.observe(seen)?;
                s.entropy.observe(seen)?;
                s.percentile.observe(seen)?;
                if let Some(r) = scan.range {
                    s.samples.push(r);
                }
                if let Some(kept) = &mut s.kept {
                    // The elements `sample_errors` measures, in its order.
                    let values = sub.unwrap_or_else(|| x.iter().step_by(step).copied().collect());
                    kept.push(KeptElements { range: scan.range, values });
                }
                Ok(())
            }
            Phase::Errors(e) => {
                // Measured here: the statistics pass's kept samples are not needed.
                e.replay = None;
                let step = x.len().div_ceil(ERROR_ELEMENTS).max(1);
                e.add_sample(sample_range(x), x, step, &self.cfg)
            }
        }
    }

    /// Keeps (`true`) each sample of the statistics pass, from now on, for
    /// [`replay`](Self::replay): its range and at most [`ERROR_ELEMENTS`] values (4 bytes each)
    /// per sample; `false` drops what was kept. Nothing in the error pass.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // the replay is the host's (std)
    pub(crate) fn keep_for_replay(&mut self, keep: bool) {
        if let Phase::Stats(s) = &mut self.phase {
            s.kept = keep.then(Vec::new);
        }
    }

    /// True in the error pass, before any sample, when every sample of the statistics pass was
    /// kept ([`keep_for_replay`](Self::keep_for_replay)).
    pub(crate) fn can_replay(&self) -> bool {
        matches!(&self.phase, Phase::Errors(e) if e.replay.is_some())
    }

    /// The error pass from the kept samples ([`can_replay`](Self::can_replay)): each sample's
    /// errors as [`observe`](Self::observe) measures them in the error pass (the same values
    /// in the same order: the same sums bit for bit), without running the samples again.
    pub(crate) fn replay(&mut self) -> Result<(), Error> {
        let Phase::Errors(e) = &mut self.phase else { return Ok(()) };
        let Some(kept) = e.replay.take() else { return Ok(()) };
        for k in &kept {
            e.add_sample(k.range, &k.values, 1, &self.cfg)?;
        }
        Ok(())
    }

    pub(crate) fn end_pass(&mut self) -> Result<(), Error> {
        let Phase::Stats(s) = &mut self.phase else { return Ok(()) };
        let replay = s.kept.take();
        if s.samples.is_empty() {
            return Err(Error::NoData);
        }
        let n = s.samples.len();
        let cap = (n + 5) / 10;
        let mut maxes: Vec<f32> = s.samples.iter().map(|r| r.1).collect();
        let mut mins: Vec<f32> = s.samples.iter().map(|r| -r.0).collect();
        let (qa, qb) = (quartiles(&mut maxes), quartiles(&mut mins));
        // The typical extent of the tensor: a sample is an outlier only far beyond it.
        let extent = qa.1.abs().max(qb.1.abs());
        let hi_fence = upper_fence(&maxes, qa, extent, cap);
        let lo_fence = -upper_fence(&mins, qb, extent, cap);
        let mut min = f32::INFINITY;
        let mut max = f32::NEG_INFINITY;
        let mut rmin = f32::INFINITY;
        let mut rmax = f32::NEG_INFINITY;
        for &(lo, hi) in &s.samples {
            min = min.min(lo);
            max = max.max(hi);
            if lo >= lo_fence && hi <= hi_fence {
                rmin = rmin.min(lo);
                rmax = rmax.max(hi);
            }
        }
        if rmin > rmax {
            (rmin, rmax) = (min, max);
        }
        let clip = |r: Result<(f32, f32), Error>| -> (f32, f32) {
            match r {
                Ok((a, b)) if a.is_finite() && b.is_finite() => {
                    let a = a.clamp(min, max);
                    (a, b.clamp(a, max))
                }
                _ => (min, max),
            }
        };
        let ranges = [
            (min, max),
            (rmin, rmax),
            clip(s.percentile.range_at(PERCENTILES[0])),
            clip(s.percentile.range_at(PERCENTILES[1])),
            clip(s.percentile.range_at(PERCENTILES[2])),
            clip(s.entropy.range()),
            clip(s.mse.range()),
        ];
        self.phase = Phase::Errors(Box::new(Errors {
            ranges,
            fences: (lo_fence, hi_fence),
            errors: Vec::new(),
            outliers: 0,
            replay,
        }));
        Ok(())
    }

    /// The choice and its figures (after pass 2).
    pub(crate) fn choice(&self) -> Result<AutoChoice, Error> {
        let e = match &self.phase {
            Phase::Errors(e) => e,
            Phase::Stats(_) => {
                return Err(Error::InvalidArgument {
                    reason: "the statistics pass is not finished: call end_pass() and run the error pass",
                });
            }
        };
        if e.errors.is_empty() {
            return Err(Error::NoData);
        }
        let mut means = [0f64; CANDIDATES];
        let mut col: Vec<f64> = Vec::with_capacity(e.errors.len());
        for (c, m) in means.iter_mut().enumerate() {
            col.clear();
            col.extend(e.errors.iter().map(|r| r[c]));
            col.sort_by(f64::total_cmp);
            *m = col.iter().sum::<f64>() / col.len() as f64;
        }
        let mut chosen = 0;
        for c in 1..CANDIDATES {
            if means[c] < means[chosen] {
                chosen = c;
            }
        }
        Ok(AutoChoice {
            chosen,
            ranges: e.ranges,
            errors: means,
            samples: e.errors.len(),
            outliers: e.outliers as usize,
            model: None,
        })
    }

    pub(crate) fn range(&self) -> Result<(f32, f32), Error> {
        let c = self.choice()?;
        Ok(c.ranges[c.chosen])
    }

    /// True if the sample `x` is an outlier by the fences of the statistics pass (`false`
    /// before it has ended).
    pub(crate) fn is_outlier(&self, x: &[f32]) -> bool {
        match (&self.phase, sample_range(x)) {
            (Phase::Errors(e), Some((lo, hi))) => lo < e.fences.0 || hi > e.fences.1,
            _ => false,
        }
    }

    /// Candidate `c`'s range, once the statistics pass has ended.
    pub(crate) fn candidate(&self, c: usize) -> Option<(f32, f32)> {
        match &self.phase {
            Phase::Errors(e) => e.ranges.get(c).copied(),
            Phase::Stats(_) => None,
        }
    }

    pub(crate) fn merge(&mut self, other: &Self) -> Result<(), Error> {
        match (&mut self.phase, &other.phase) {
            (Phase::Stats(a), Phase::Stats(b)) => {
                // The kept samples are this observer's alone: the merged statistics need a pass.
                a.kept = None;
                a.mse.merge(&b.mse)?;
                a.entropy.merge(&b.entropy)?;
                a.percentile.merge(&b.percentile)?;
                a.samples.extend_from_slice(&b.samples);
                Ok(())
            }
            (Phase::Errors(a), Phase::Errors(b)) => {
                let same = a.ranges.iter().zip(&b.ranges).all(|(x, y)| bits(*x) == bits(*y))
                    && bits(a.fences) == bits(b.fences);
                if !same {
                    return Err(Error::InvalidArgument {
                        reason: "cannot merge automatic observers whose candidates differ (merge the statistics pass first)",
                    });
                }
                a.replay = None;
                a.errors.extend_from_slice(&b.errors);
                a.outliers += b.outliers;
                Ok(())
            }
            _ => Err(Error::InvalidArgument { reason: "cannot merge observers in different passes" }),
        }
    }
}

fn bits(r: (f32, f32)) -> (u32, u32) {
    (r.0.to_bits(), r.1.to_bits())
}

impl Errors {
    /// One sample of the error pass: `range` is the sample's ([`sample_range`]), `x` its values
    /// of which every `step`-th is measured. An outlier is counted, a sample without finite
    /// values skipped.
    fn add_sample(
        &mut self,
        range: Option<(f32, f32)>,
        x: &[f32],
        step: usize,
        cfg: &ObserverConfig,
    ) -> Result<(), Error> {
        let Some((lo, hi)) = range else { return Ok(()) };
        if lo < self.fences.0 || hi > self.fences.1 {
            self.outliers += 1;
            return Ok(());
        }
        let row = sample_errors(x, step, &self.ranges, cfg)?;
        self.errors.push(row);
        Ok(())
    }
}

/// Elements of one sample that the statistics of pass 1 (the histograms; not the min and max)
/// and the errors of pass 2 take, at most: a larger tensor is measured on every `k`-th element
/// (`k = ceil(len / ERROR_ELEMENTS)`), an unbiased sample of its values at a fraction of the cost
/// (three histograms and seven candidates' errors of a 112×112×96 activation on every element
/// cost more than running the layer).
pub const ERROR_ELEMENTS: usize = 8192;

/// Each candidate's sum of squared errors of quantizing `x` (every `step`-th element: `k`, see
/// [`ERROR_ELEMENTS`], or 1 for values kept already strided) as the int8 model does (`quantize::quantize_values`: `round(x / scale)`
/// half away from zero, plus the zero point, clamped to int8; then `(q - zero_point) · scale`).
fn sample_errors(
    x: &[f32],
    step: usize,
    ranges: &[(f32, f32); CANDIDATES],
    cfg: &ObserverConfig,
) -> Result<[f64; CANDIDATES], Error> {
    // Per candidate: scale, zero point, qmin, qmax. Candidates with the range of an earlier one
    // have its parameters, so its error.
    let mut scale = [1f64; CANDIDATES];
    let mut zp = [0f64; CANDIDATES];
    let mut qmin = [0f64; CANDIDATES];
    let mut qmax = [0f64; CANDIDATES];
    for c in 0..CANDIDATES {
        if let Some(d) = (0..c).find(|&d| bits(ranges[d]) == bits(ranges[c])) {
            (scale[c], zp[c], qmin[c], qmax[c]) = (scale[d], zp[d], qmin[d], qmax[d]);
            continue;
        }
        let p = cfg.qparams_for(ranges[c].0, ranges[c].1)?;
        (scale[c], zp[c]) = (f64::from(p.scale()), f64::from(p.zero_point()));
        (qmin[c], qmax[c]) = (f64::from(p.qmin()), f64::from(p.qmax()));
    }
    // The squared error of `v` under candidate `c` (`max` then `min`: the clamp of a number).
    let term = |v: f64, c: usize| {
        let q = (round_half_away(v / scale[c]) + zp[c]).max(qmin[c]).min(qmax[c]);
        let d = v - (q - zp[c]) * scale[c];
        d * d
    };
    // Every candidate's sum in one pass over the values: each sum still adds its terms in the
    // values' order (the same sums bit for bit), and the seven chains of additions overlap
    // (seven accumulators, kept in registers).
    let (mut e0, mut e1, mut e2, mut e3, mut e4, mut e5, mut e6) = (0f64, 0f64, 0f64, 0f64, 0f64, 0f64, 0f64);
    for &v in x.iter().step_by(step) {
        if !v.is_finite() {
            continue;
        }
        let v = f64::from(v);
        e0 += term(v, 0);
        e1 += term(v, 1);
        e2 += term(v, 2);
        e3 += term(v, 3);
        e4 += term(v, 4);
        e5 += term(v, 5);
        e6 += term(v, 6);
    }
    Ok([e0, e1, e2, e3, e4, e5, e6])
}

/// Beyond this `|x / scale|` every candidate's quantized value is clamped (zero points and
/// bounds are within ±2^15): [`round_half_away`] takes values clamped to it.
const ROUND_LIMIT: f64 = (1u32 << 20) as f64;

/// `libm::round(y)` (half away from zero) of `y` clamped to `±ROUND_LIMIT`: the truncation
/// through `i32` and the fraction `y − trunc(y)` are exact there, so is the result, and the
/// code has no branches (it vectorizes). Zeros come out `+0.0` where `libm::round` keeps the
/// sign; adding the zero point erases the difference.
#[inline(always)]
fn round_half_away(y: f64) -> f64 {
    let y = y.clamp(-ROUND_LIMIT, ROUND_LIMIT);
    let t = f64::from(y as i32);
    let f = y - t;
    t + if f >= 0.5 {
        1.0
    } else if f <= -0.5 {
        -1.0
    } else {
        0.0
    }
}

// ---- state (see `crate::observer::state`) ----

impl AutoObserver {
    pub(crate) fn state_len(&self) -> usize {
        state::HEAD_LEN
            + 1
            + match &self.phase {
                Phase::Stats(s) => {
                    12 + s.mse.state_len() + s.entropy.state_len() + s.percentile.state_len() + 4 + 8 * s.samples.len()
                }
                Phase::Errors(e) => 8 * CANDIDATES + 8 + 8 + 4 + 8 * CANDIDATES * e.errors.len(),
            }
    }

    pub(crate) fn write_state(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut w = Writer::new(out);
        w.head(state::tag::AUTO)?;
        match &self.phase {
            Phase::Stats(s) => {
                w.u8(0)?;
                let mut buf = Vec::new();
                for o in [&s.mse as &dyn ObserverState, &s.entropy, &s.percentile] {
                    buf.resize(o.state_len(), 0);
                    let n = o.write_state(&mut buf)?;
                    w.u32(n as u32)?;
                    w.bytes(buf.get(..n).unwrap_or(&[]))?;
                }
                w.u32(s.samples.len() as u32)?;
                for &(lo, hi) in &s.samples {
                    w.f32(lo)?;
                    w.f32(hi)?;
                }
            }
            Phase::Errors(e) => {
                w.u8(1)?;
                for &(lo, hi) in &e.ranges {
                    w.f32(lo)?;
                    w.f32(hi)?;
                }
                w.f32(e.fences.0)?;
                w.f32(e.fences.1)?;
                w.u64(e.outliers)?;
                w.u32(e.errors.len() as u32)?;
                for row in &e.errors {
                    for &v in row {
                        w.f64(v)?;
                    }
                }
            }
        }
        Ok(w.pos())
    }

    pub(crate) fn read_state(&mut self, bytes: &[u8]) -> Result<usize, Error> {
        let mut r = Reader::new(bytes);
        r.head(state::tag::AUTO)?;
        let phase = match r.u8()? {
            0 => {
                let mut s = match &self.phase {
                    Phase::Stats(s) => s.clone(),
                    Phase::Errors(_) => match Self::new(self.cfg)?.phase {
                        Phase::Stats(s) => s,
                        Phase::Errors(_) => return Err(state::INVALID),
                    },
                };
                for o in [&mut s.mse as &mut dyn ObserverState, &mut s.entropy, &mut s.percentile] {
                    let n = r.u32()? as usize;
                    let body = r.rest().get(..n).ok_or(state::TRUNCATED)?;
                    if o.read_state(body)? != n {
                        return Err(state::INVALID);
                    }
                    r.skip(n)?;
                }
                let count = r.u32()? as usize;
                if count > r.rest().len() / 8 {
                    return Err(state::TRUNCATED);
                }
                s.samples.clear();
                for _ in 0..count {
                    let (lo, hi) = (r.f32()?, r.f32()?);
                    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                        return Err(state::INVALID);
                    }
                    s.samples.push((lo, hi));
                }
                s.kept = None;
                Phase::Stats(s)
            }
            1 => {
                let mut ranges = [(0f32, 0f32); CANDIDATES];
                for rg in &mut ranges {
                    let (lo, hi) = (r.f32()?, r.f32()?);
                    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                        return Err(state::INVALID);
                    }
                    *rg = (lo, hi);
                }
                let fences = (r.f32()?, r.f32()?);
                if fences.0.is_nan() || fences.1.is_nan() {
                    return Err(state::INVALID);
                }
                let outliers = r.u64()?;
                let count = r.u32()? as usize;
                if count > r.rest().len() / (8 * CANDIDATES) {
                    return Err(state::TRUNCATED);
                }
                let mut errors = Vec::with_capacity(count);
                for _ in 0..count {
                    let mut row = [0f64; CANDIDATES];
                    for v in &mut row {
                        *v = r.f64()?;
                        if !(v.is_finite() && *v >= 0.0) {
                            return Err(state::INVALID);
                        }
                    }
                    errors.push(row);
                }
                Phase::Errors(Box::new(Errors { ranges, fences, errors, outliers, replay: None }))
            }
            _ => return Err(state::INVALID),
        };
        self.phase = phase;
        Ok(r.pos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{Convention, QScheme, QuantDType};
    use alloc::vec;

    const CFG: ObserverConfig =
        ObserverConfig::new(QuantDType::Int8, QScheme::Affine).with_convention(Convention::TfLite);

    /// The one-pass scan equals the plain scalar fold: ranges of the finite values (zeros as
    /// `+0.0`), and the finiteness flag, at every length around the lane count.
    #[test]
    fn sample_scan_matches_the_scalar_fold() {
        let mut s = 99u32;
        let mut next = move || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((s >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 100.0
        };
        let plain = |x: &[f32]| {
            let (lo, hi) = x
                .iter()
                .filter(|v| v.is_finite())
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
            let z = |v: f32| if v == 0.0 { 0.0f32 } else { v };
            ((lo <= hi).then_some((z(lo), z(hi))), x.iter().all(|v| v.is_finite()))
        };
        for len in [0usize, 1, 5, 15, 16, 17, 31, 32, 33, 100, 1000] {
            let base: Vec<f32> = (0..len).map(|_| next()).collect();
            let mut cases = vec![base.clone()];
            for special in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e30, -1e30] {
                for at in [0, len / 2, len.saturating_sub(1)] {
                    if at < len {
                        let mut v = base.clone();
                        v[at] = special;
                        cases.push(v);
                    }
                }
            }
            cases.push(vec![-0.0; len]);
            cases.push((0..len).map(|i| if i % 2 == 0 { -0.0 } else { 0.0 }).collect());
            cases.push(vec![f32::NAN; len]);
            for x in &cases {
                let got = scan_sample(x);
                let (range, all_finite) = plain(x);
                assert_eq!(got.all_finite, all_finite, "len {len}");
                let bits = |r: Option<(f32, f32)>| r.map(|(a, b)| (a.to_bits(), b.to_bits()));
                assert_eq!(bits(got.range), bits(range), "len {len}: {:?} vs {:?}", got.range, range);
            }
        }
    }

    /// 40 samples of 64 values in [0, 1) (a fixed LCG), samples 7 and 23 with a spike of 40.
    fn samples() -> Vec<Vec<f32>> {
        let mut s = 12345u32;
        (0..40)
            .map(|i| {
                let mut v: Vec<f32> = (0..64)
                    .map(|_| {
                        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        (s >> 8) as f32 / (1u32 << 24) as f32
                    })
                    .collect();
                if i == 7 || i == 23 {
                    v[5] = 40.0;
                }
                v
            })
            .collect()
    }

    fn run(chunks: &[&[Vec<f32>]]) -> AutoObserver {
        // Pass 1 per chunk, merged; pass 2 per chunk on clones, merged into a fresh clone.
        let mut merged = AutoObserver::new(CFG).unwrap();
        for c in chunks.iter().rev() {
            let mut o = AutoObserver::new(CFG).unwrap();
            for s in *c {
                o.observe(s).unwrap();
            }
            merged.merge(&o).unwrap();
        }
        merged.end_pass().unwrap();
        let mut out = merged.clone();
        for c in chunks {
            let mut o = merged.clone();
            for s in *c {
                o.observe(s).unwrap();
            }
            // Shipped as bytes, as workers do.
            let mut buf = vec![0u8; o.state_len()];
            assert_eq!(o.write_state(&mut buf), Ok(buf.len()));
            let mut r = merged.clone();
            assert_eq!(r.read_state(&buf), Ok(buf.len()));
            out.merge(&r).unwrap();
        }
        out
    }

    #[test]
    fn spikes_are_left_out_and_merging_is_exact() {
        let s = samples();
        let one = run(&[&s]);
        let c = one.choice().unwrap();
        assert_eq!((c.samples, c.outliers), (38, 2));
        assert_eq!(c.ranges[0].1, 40.0);
        assert!(c.ranges[1].1 < 1.0, "{:?}", c.ranges);
        assert_ne!(c.chosen, 0, "{c:?}");
        assert!(c.range_hi() < 1.0);
        assert!(c.why().contains("(2 outlier samples left out); minmax"), "{}", c.why());
        // Split three ways, merged in another order: the same numbers, bit for bit.
        let split = run(&[&s[25..], &s[..10], &s[10..25]]);
        let d = split.choice().unwrap();
        assert_eq!(c.chosen, d.chosen);
        assert_eq!(c.errors.map(f64::to_bits), d.errors.map(f64::to_bits));
        assert_eq!(one.range(), split.range());
    }

    /// The error pass replayed from the kept samples equals the samples observed again, bit for
    /// bit (state bytes): small samples and ones larger than ERROR_ELEMENTS (strided), with
    /// spikes and a non-finite-free tail.
    #[test]
    fn replay_equals_a_second_pass() {
        let mut s = samples();
        let mut r = 5u32;
        for i in 0..6 {
            let v: Vec<f32> = (0..ERROR_ELEMENTS * 2 + 37)
                .map(|_| {
                    r = r.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (r >> 8) as f32 / (1u32 << 24) as f32 * if i == 3 { 90.0 } else { 1.0 }
                })
                .collect();
            s.push(v);
        }
        let mut a = AutoObserver::new(CFG).unwrap();
        a.keep_for_replay(true);
        for x in &s {
            a.observe(x).unwrap();
        }
        let mut b = a.clone();
        b.keep_for_replay(false);
        a.end_pass().unwrap();
        b.end_pass().unwrap();
        assert!(a.can_replay() && !b.can_replay());
        a.replay().unwrap();
        assert!(!a.can_replay());
        for x in &s {
            b.observe(x).unwrap();
        }
        let state = |o: &AutoObserver| {
            let mut buf = vec![0u8; o.state_len()];
            o.write_state(&mut buf).unwrap();
            buf
        };
        assert_eq!(state(&a), state(&b));
        assert_eq!(a.choice().unwrap(), b.choice().unwrap());
    }

    /// The one-pass errors equal the candidate-by-candidate sums bit for bit (equal ranges,
    /// non-finite values skipped, strided).
    #[test]
    fn sample_errors_match_candidate_by_candidate_sums() {
        let reference = |x: &[f32], step: usize, ranges: &[(f32, f32); CANDIDATES]| {
            let mut out = [0f64; CANDIDATES];
            for c in 0..CANDIDATES {
                let p = CFG.qparams_for(ranges[c].0, ranges[c].1).unwrap();
                let (scale, zp) = (f64::from(p.scale()), f64::from(p.zero_point()));
                let (qmin, qmax) = (f64::from(p.qmin()), f64::from(p.qmax()));
                for &v in x.iter().step_by(step).filter(|v| v.is_finite()) {
                    let v = f64::from(v);
                    let q = (libm::round(v / scale) + zp).clamp(qmin, qmax);
                    out[c] += (v - (q - zp) * scale) * (v - (q - zp) * scale);
                }
            }
            out
        };
        let mut x: Vec<f32> = samples().concat();
        x[17] = f32::NAN;
        x[99] = f32::INFINITY;
        let ranges = [(0.0, 40.0), (0.0, 1.0), (-0.5, 0.9), (0.0, 1.0), (0.1, 0.2), (-3.0, 3.0), (0.0, 40.0)];
        for step in [1, 3, 64] {
            let got = sample_errors(&x, step, &ranges, &CFG).unwrap();
            assert_eq!(got.map(f64::to_bits), reference(&x, step, &ranges).map(f64::to_bits), "step {step}");
        }
    }

    /// The branch-free rounding is `libm::round` (up to the sign of zero) below the limit, and
    /// clamps beyond it: random values of every magnitude, the halfway points and their
    /// neighbours.
    #[test]
    fn round_half_away_is_libm_round() {
        let mut s = 3u64;
        let mut values =
            vec![0.0f64, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 0.499_999_999_999_999_94, ROUND_LIMIT, -ROUND_LIMIT];
        for k in -1000i32..1000 {
            let h = f64::from(k) + 0.5;
            values.extend([h, f64::from_bits(h.to_bits() + 1), f64::from_bits(h.to_bits() - 1), f64::from(k)]);
        }
        for _ in 0..200_000 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let mag = f64::from((s >> 40) as u32 % 40) - 20.0;
            let frac = (s >> 11) as f64 / (1u64 << 53) as f64;
            let sign = if s & 1 == 0 { 1.0 } else { -1.0 };
            values.push(sign * libm::exp2(mag) * (1.0 + frac));
        }
        for &y in &values {
            let want = libm::round(y.clamp(-ROUND_LIMIT, ROUND_LIMIT));
            let got = round_half_away(y);
            assert!(got == want, "round({y:e}): {got:e} vs {want:e}");
        }
    }

    #[test]
    fn clean_data_keeps_minmax_when_it_is_best() {
        // Uniform data: nothing to clip, minmax has the least error.
        let s: Vec<Vec<f32>> =
            (0..20).map(|i| (0..256).map(|j| ((i * 256 + j) % 255) as f32 / 254.0).collect()).collect();
        let o = run(&[&s]);
        let c = o.choice().unwrap();
        assert_eq!(c.outliers, 0);
        assert_eq!(c.name(), "minmax", "{c:?}");
        assert_eq!(o.range(), Ok((0.0, 1.0)));
    }

    #[test]
    fn state_errors() {
        let mut o = AutoObserver::new(CFG).unwrap();
        assert!(o.range().is_err());
        o.observe(&[1.0, 2.0]).unwrap();
        let mut buf = vec![0u8; o.state_len()];
        o.write_state(&mut buf).unwrap();
        let mut r = AutoObserver::new(CFG).unwrap();
        assert_eq!(r.read_state(&buf[..buf.len() - 1]), Err(state::TRUNCATED));
        assert_eq!(r.read_state(&buf), Ok(buf.len()));
        // Pass 2 cannot merge with pass 1.
        let mut p2 = o.clone();
        p2.end_pass().unwrap();
        assert!(p2.merge(&o).is_err());
    }

    impl AutoChoice {
        fn range_hi(&self) -> f32 {
            self.ranges[self.chosen].1
        }
    }
}
