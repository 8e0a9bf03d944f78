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

pub(crate) mod errors;
pub mod model;
mod state_bytes;

pub use errors::ERROR_ELEMENTS;
pub(in crate::ptq) use model::quantize_auto;
pub use model::{FIRST_ROUND, MARGIN_DB, ModelChoice, ORDER, PolicyScore, RangePolicy};

use crate::Error;
use crate::observer::{EntropyObserver, HistogramObserver, Observer, ObserverConfig, PercentileObserver};

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

/// The kept samples of one automatic observer's statistics pass
/// ([`AutoObserver::take_kept`]), for the error pass of another observer of the same tensor
/// ([`AutoObserver::set_replay`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct KeptSamples(Vec<KeptElements>);

impl KeptSamples {
    /// Samples kept.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Bytes of the kept values.
    pub(crate) fn bytes(&self) -> usize {
        self.0.iter().map(|k| 4 * k.values.len()).sum()
    }

    /// `other`'s samples after these (observed after them).
    pub(crate) fn append(&mut self, other: KeptSamples) {
        self.0.extend(other.0);
    }
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
    pub(crate) fn keep_for_replay(&mut self, keep: bool) {
        if let Phase::Stats(s) = &mut self.phase {
            s.kept = keep.then(Vec::new);
        }
    }

    /// In the statistics pass: what was kept of the samples observed since
    /// [`keep_for_replay`](Self::keep_for_replay), taken out (keeping stops); `None` if nothing
    /// was being kept.
    pub(crate) fn take_kept(&mut self) -> Option<KeptSamples> {
        match &mut self.phase {
            Phase::Stats(s) => s.kept.take().map(KeptSamples),
            Phase::Errors(_) => None,
        }
    }

    /// In the error pass, before any sample: `kept` (of [`take_kept`](Self::take_kept)) to be
    /// measured by [`replay`](Self::replay). `false` (nothing done) in another phase or once a
    /// sample was measured.
    pub(crate) fn set_replay(&mut self, kept: KeptSamples) -> bool {
        match &mut self.phase {
            Phase::Errors(e) if e.errors.is_empty() && e.outliers == 0 => {
                e.replay = Some(kept.0);
                true
            }
            _ => false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{Convention, QScheme, QuantDType};
    use alloc::vec;

    pub(super) const CFG: ObserverConfig =
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
    pub(super) fn samples() -> Vec<Vec<f32>> {
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
    fn replay_equals_a_second_pass() -> Result<(), Error> {
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
        let mut a = AutoObserver::new(CFG)?;
        a.keep_for_replay(true);
        for x in &s {
            a.observe(x)?;
        }
        let mut b = a.clone();
        b.keep_for_replay(false);
        a.end_pass()?;
        b.end_pass()?;
        assert!(a.can_replay() && !b.can_replay());
        a.replay()?;
        assert!(!a.can_replay());
        for x in &s {
            b.observe(x)?;
        }
        let state = |o: &AutoObserver| -> Result<Vec<u8>, Error> {
            let mut buf = vec![0u8; o.state_len()];
            o.write_state(&mut buf)?;
            Ok(buf)
        };
        assert_eq!(state(&a)?, state(&b)?);
        assert_eq!(a.choice()?, b.choice()?);
        Ok(())
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

    impl AutoChoice {
        fn range_hi(&self) -> f32 {
            self.ranges[self.chosen].1
        }
    }
}
