//! The model-level range choice of the automatic observers: which candidate ranges the
//! activations get is decided by the error at the **model's output**, measured with the int8
//! model itself.
//!
//! A range that is best for one tensor alone (the least squared error of quantizing it) is not
//! always best for the model: clipping a tensor's tail may cost more downstream than the finer
//! steps gain, or less. So [`quantize`](crate::ptq::quantize) quantizes the model under each
//! [`RangePolicy`] of [`ORDER`] — every automatic tensor with the same candidate (min/max, min/max
//! without outlier samples, percentile 99.99 or 99.999, the L2 search), or each with its own
//! least-error candidate — compiles it and runs the int8 model on the calibration samples the
//! calibrator kept ([`CalibrationOptions::selection_samples`](crate::ptq::CalibrationOptions::selection_samples),
//! the first ones), against the float outputs kept with them.
//!
//! **Score**: per graph output, the SQNR pooled over the samples (`10 log10(Σ f² / Σ (f - q)²)`,
//! dB, capped to [-30, 100]), averaged over the outputs. Samples that are outliers at a graph
//! input (by the fences of the input's automatic observer: a sensor spike) do not count: a
//! range that leaves them out is not judged by the samples it leaves out.
//!
//! **Two rounds**: every policy runs on the first [`FIRST_ROUND`] kept samples; min/max and the
//! best other policy (ties: the earlier in [`ORDER`]) go on to all of them, and the other is
//! taken only if it scores at least [`MARGIN_DB`] above min/max: on a few samples a smaller
//! difference is noise, and min/max is the range that clips nothing. Policies whose ranges equal
//! an earlier one's are not run again. The cost is some int8 runs of the model: `FIRST_ROUND` per
//! policy, plus the rest of the kept samples for the two finalists.
//!
//! The int8 model is compiled with the default [`CompileOptions`] (TFLite Micro's rounding)
//! whatever the caller compiles with later; the choice is the same on every target: integer
//! kernels, and sums in f64 in sample order.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::CANDIDATE_NAMES;
use crate::compile::{CompileOptions, compile};
use crate::graph::{ConvertError, ConvertErrorKind as Kind, Graph, TensorId};
use crate::interp::Interpreter;
use crate::model::AlignedBytes;
use crate::ptq::calibrate::{Calibrator, KeptSample};
use crate::ptq::quantize::{QuantizeOptions, Quantized, quantize_with};
use crate::ptq::report::{read_dequantized, write_quantized};

/// How the automatic observers' ranges are set across the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangePolicy {
    /// Each tensor its own least-error candidate ([`super::AutoChoice::chosen`]).
    PerTensor,
    /// Every automatic tensor the candidate of this index in [`CANDIDATE_NAMES`].
    Every(usize),
}

impl RangePolicy {
    /// `per tensor`, or the candidate's name (`minmax`, `entropy`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            RangePolicy::PerTensor => "per tensor",
            RangePolicy::Every(c) => CANDIDATE_NAMES.get(*c).copied().unwrap_or("minmax"),
        }
    }
}

/// The policies in the order they are tried (ties go to the earlier). The per-tensor
/// candidates `percentile 99.9` and `entropy` are not model-level policies: clipping every tensor
/// that hard never won at the output of a zoo model (BENCHMARKS.md), and each policy costs int8
/// runs.
pub const ORDER: [RangePolicy; 6] = [
    RangePolicy::Every(0),
    RangePolicy::PerTensor,
    RangePolicy::Every(1),
    RangePolicy::Every(3),
    RangePolicy::Every(4),
    RangePolicy::Every(6),
];

/// Kept samples of the first round: every policy is measured on them, and the best one other
/// than min/max goes on with min/max to all the kept samples.
pub const FIRST_ROUND: usize = 4;

/// How much better (dB) than min/max, on all the kept samples, another policy must score to be
/// taken.
pub const MARGIN_DB: f64 = 0.5;

/// One policy's figure ([`ModelChoice::scores`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyScore {
    /// The policy.
    pub policy: RangePolicy,
    /// Its score (dB, see the [module docs](self)); `None` for a policy whose ranges are an
    /// earlier one's (not run again) or that the int8 runtime could not compile.
    pub sqnr_db: Option<f64>,
    /// The kept samples it was measured on: all of them for the finalists, the first round's
    /// for the others.
    pub samples: usize,
}

/// The model-level choice ([`Quantized::range_choice`], the report's `range_choice`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChoice {
    /// The policy taken.
    pub chosen: RangePolicy,
    /// Every policy of [`ORDER`] with its score.
    pub scores: Vec<PolicyScore>,
    /// Kept samples (the finalists' scores are over all of them).
    pub samples: usize,
}

impl ModelChoice {
    /// In words: `percentile 99.99 for every tensor: output SQNR 31.2 dB on 16 calibration
    /// samples (per tensor 30.1; on the first 4: minmax 28.4, mse 27.0)`.
    pub fn why(&self) -> String {
        let mut s = match self.chosen {
            RangePolicy::PerTensor => String::from("each tensor its own least-error range"),
            p => format!("{} for every tensor", p.name()),
        };
        let chosen = self.scores.iter().find(|x| x.policy == self.chosen);
        s.push_str(&format!(
            ": output SQNR {:.1} dB on {} calibration sample{}",
            chosen.and_then(|x| x.sqnr_db).unwrap_or(f64::NAN),
            self.samples,
            if self.samples == 1 { "" } else { "s" }
        ));
        let list = |full: bool| -> Vec<String> {
            self.scores
                .iter()
                .filter(|x| x.policy != self.chosen && (x.samples == self.samples) == full)
                .filter_map(|x| x.sqnr_db.map(|v| format!("{} {v:.1}", x.policy.name())))
                .collect()
        };
        let (finalists, first) = (list(true), list(false));
        let mut parts = finalists;
        if !first.is_empty() {
            let n = self.scores.iter().filter(|x| x.samples < self.samples).map(|x| x.samples).max().unwrap_or(0);
            parts.push(format!("on the first {n}: {}", first.join(", ")));
        }
        if !parts.is_empty() {
            s.push_str(&format!(" ({})", parts.join("; ")));
        }
        let own = chosen.and_then(|x| x.sqnr_db).unwrap_or(f64::NAN);
        let higher = self.scores.iter().any(|x| x.samples == self.samples && x.sqnr_db.is_some_and(|v| v > own));
        if self.chosen == RangePolicy::Every(0) && higher {
            s.push_str(&format!("; another policy is taken only {MARGIN_DB} dB above minmax"));
        }
        s
    }
}

/// Kept samples to run, with what [`Contender::run`] needs of the calibrator (which is not
/// shared between threads).
struct Samples<'a> {
    graph: &'a Graph,
    carries_state: bool,
    kept: &'a [KeptSample],
    /// Per kept sample: an outlier at a graph input ([`Calibrator::is_input_outlier`]).
    outlier: &'a [bool],
}

impl<'a> Samples<'a> {
    /// The samples of `range`.
    fn part(&self, range: core::ops::Range<usize>) -> Samples<'a> {
        let kept = self.kept.get(range.clone()).unwrap_or(&[]);
        let outlier = self.outlier.get(range).unwrap_or(&[]);
        Samples { graph: self.graph, carries_state: self.carries_state, kept, outlier }
    }
}

/// [`Contender::run`] on each contender, one after the other, or on the host one thread per
/// contender (each contender's runs are its own: the same sums either way).
fn run_all(contenders: Vec<&mut Contender>, samples: &Samples<'_>) -> Vec<Result<(), ConvertError>> {
    #[cfg(feature = "std")]
    {
        let threads = contenders.len();
        crate::parallel::map_split(contenders, threads, |c| c.run(samples))
    }
    #[cfg(not(feature = "std"))]
    {
        contenders.into_iter().map(|c| c.run(samples)).collect()
    }
}

fn bits(r: (f32, f32)) -> (u32, u32) {
    (r.0.to_bits(), r.1.to_bits())
}

/// One policy under measurement: its quantized graph, its compiled model and arena (the int8
/// runs continue where the first round stopped: a recurrent model's state too), its sums.
struct Contender {
    policy: RangePolicy,
    quantized: Quantized,
    bytes: AlignedBytes,
    arena: Vec<u8>,
    /// Per graph output: `Σ f²` and `Σ (f - q)²` over the samples measured.
    sums: Vec<(f64, f64)>,
    measured: usize,
}

impl Contender {
    fn new(cal: &Calibrator<'_>, options: &QuantizeOptions, policy: RangePolicy) -> Result<Self, ConvertError> {
        let quantized = quantize_with(cal, options, Some(policy))?;
        let compiled = compile(&quantized.graph, &CompileOptions::default())?;
        let arena = vec![0u8; compiled.arena_len + crate::interp::ARENA_ALIGN];
        let outputs = cal.graph().outputs.len();
        Ok(Self {
            policy,
            quantized,
            bytes: AlignedBytes::new(&compiled.bytes),
            arena,
            sums: vec![(0.0, 0.0); outputs],
            measured: 0,
        })
    }

    /// Runs `samples` (the kept samples after those already run, in order) and adds their
    /// errors.
    fn run(&mut self, samples: &Samples<'_>) -> Result<(), ConvertError> {
        let g = samples.graph;
        let q = &self.quantized;
        let mut it = if self.measured == 0 {
            Interpreter::new(&self.bytes, &mut self.arena)
        } else {
            Interpreter::resume(&self.bytes, &mut self.arena)
        }
        .map_err(interp_err)?;
        let quant = |t: TensorId| {
            q.activations
                .get(t.index())
                .copied()
                .flatten()
                .ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("tensor {t} is not quantized")))
        };
        for (s, &outlier) in samples.kept.iter().zip(samples.outlier) {
            if !samples.carries_state {
                it.reset_state().map_err(interp_err)?;
            }
            for (k, (&t, x)) in g.inputs.iter().zip(&s.inputs).enumerate() {
                let a = quant(t)?;
                write_quantized(it.input_bytes(k).map_err(interp_err)?, x, &a);
            }
            it.invoke().map_err(interp_err)?;
            self.measured += 1;
            // A sample that is an outlier at a graph input (a sensor spike) does not count.
            if outlier {
                continue;
            }
            for (k, (&t, f)) in g.outputs.iter().zip(&s.outputs).enumerate() {
                let a = quant(t)?;
                let y = read_dequantized(it.output_bytes(k).map_err(interp_err)?, &a);
                if y.len() != f.len() {
                    return Err(ConvertError::new(
                        Kind::InvalidGraph,
                        format!("output {k} of the int8 model has {} values, the float graph's {}", y.len(), f.len()),
                    ));
                }
                let (sig, noise) = energies(f, &y);
                if let Some(acc) = self.sums.get_mut(k) {
                    acc.0 += sig;
                    acc.1 += noise;
                }
            }
        }
        Ok(())
    }

    /// The score so far.
    fn score(&self) -> f64 {
        self.sums.iter().map(|&(sig, noise)| sqnr(sig, noise)).sum::<f64>() / self.sums.len().max(1) as f64
    }
}

/// [`crate::ptq::quantize`]: the model-level choice when there are automatic observers and
/// kept samples, else [`quantize_with`] and no choice.
pub(in crate::ptq) fn quantize_auto(
    cal: &Calibrator<'_>,
    options: &QuantizeOptions,
) -> Result<Quantized, ConvertError> {
    let autos = cal.auto_tensors();
    let kept = cal.kept();
    if autos.is_empty() || kept.is_empty() {
        return quantize_with(cal, options, None);
    }
    let outlier: Vec<bool> = kept.iter().map(|s| cal.is_input_outlier(s)).collect();
    let all = Samples { graph: cal.graph(), carries_state: cal.carries_state(), kept, outlier: &outlier };
    let split = FIRST_ROUND.min(kept.len());
    let (first, rest) = (all.part(0..split), all.part(split..kept.len()));
    let mut seen: Vec<Vec<(u32, u32)>> = Vec::new();
    let mut scores: Vec<PolicyScore> = Vec::with_capacity(ORDER.len());
    let mut contenders: Vec<Contender> = Vec::new();
    let mut made: Vec<usize> = Vec::new(); // index in ORDER of each contender
    for (i, &policy) in ORDER.iter().enumerate() {
        let ranges = autos.iter().map(|&t| cal.range_with(t, policy).map(bits)).collect::<Result<Vec<_>, _>>()?;
        scores.push(PolicyScore { policy, sqnr_db: None, samples: 0 });
        if seen.contains(&ranges) {
            continue;
        }
        seen.push(ranges);
        // The first policy (min/max) is what quantizing without a choice would give: its errors
        // are the model's. A later policy that fails is left out.
        match Contender::new(cal, options, policy) {
            Ok(c) => {
                contenders.push(c);
                made.push(i);
            }
            Err(e) if i == 0 => return Err(e),
            Err(_) => {}
        }
    }
    // The first round, every contender on its own thread on the host.
    let results = run_all(contenders.iter_mut().collect(), &first);
    let mut kept_contenders = Vec::with_capacity(contenders.len());
    for ((c, r), &i) in contenders.into_iter().zip(results).zip(&made) {
        match r {
            Ok(()) => kept_contenders.push(c),
            Err(e) if i == 0 => return Err(e),
            Err(_) => {}
        }
    }
    let mut contenders = kept_contenders;
    // The finalists: min/max (the first contender) and the best other policy of the first round
    // (ties: the earlier), on every sample. The other wins only by MARGIN_DB: a difference the
    // few kept samples cannot tell from noise keeps the plain ranges.
    let no_policy = || ConvertError::new(Kind::InvalidGraph, "no range policy could be measured");
    let (plain, others) = contenders.split_first_mut().ok_or_else(no_policy)?;
    let mut challenger: Option<(usize, f64)> = None;
    for (i, c) in others.iter().enumerate() {
        let s = c.score();
        if challenger.is_none_or(|(_, b)| s > b) {
            challenger = Some((i, s));
        }
    }
    let challenger = challenger.and_then(|(i, _)| others.get_mut(i).map(|c| (i, c)));
    // Both finalists on the rest of the samples, each on its own thread on the host.
    let mut finalists: Vec<&mut Contender> = vec![plain];
    let challenger_index = challenger.map(|(i, c)| {
        finalists.push(c);
        i
    });
    for r in run_all(finalists, &rest) {
        r?;
    }
    // Index into `contenders` of the winner: 0 (min/max) unless the challenger clears the margin.
    let mut best = 0;
    if let Some(i) = challenger_index {
        let plain_score = contenders.first().map_or(f64::NEG_INFINITY, Contender::score);
        if contenders.get(i + 1).is_some_and(|c| c.score() >= plain_score + MARGIN_DB) {
            best = i + 1;
        }
    }
    for c in &contenders {
        if let Some(s) = scores.iter_mut().find(|s| s.policy == c.policy) {
            s.sqnr_db = Some(c.score());
            s.samples = c.measured;
        }
    }
    let winner = contenders.into_iter().nth(best).ok_or_else(no_policy)?;
    let mut q = winner.quantized;
    q.range_choice = Some(ModelChoice { chosen: winner.policy, scores, samples: kept.len() });
    Ok(q)
}

/// Lower and upper caps of an SQNR (dB): an exact output, or one with no signal.
const SQNR_CAP: (f64, f64) = (-30.0, 100.0);

fn interp_err(e: crate::Error) -> ConvertError {
    ConvertError::new(Kind::Unsupported, format!("int8 interpreter: {e}"))
}

/// `Σ f²` and `Σ (f - y)²`.
fn energies(f: &[f32], y: &[f32]) -> (f64, f64) {
    let (mut signal, mut noise) = (0f64, 0f64);
    for (&a, &b) in f.iter().zip(y) {
        let (a, b) = (f64::from(a), f64::from(b));
        signal += a * a;
        noise += (a - b) * (a - b);
    }
    (signal, noise)
}

/// `10 log10(signal / noise)`, capped to [`SQNR_CAP`].
fn sqnr(signal: f64, noise: f64) -> f64 {
    if noise == 0.0 {
        return SQNR_CAP.1;
    }
    if signal == 0.0 {
        return SQNR_CAP.0;
    }
    (10.0 * libm::log10(signal / noise)).clamp(SQNR_CAP.0, SQNR_CAP.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqnr_caps() {
        let s = |f: &[f32], y: &[f32]| {
            let (a, b) = energies(f, y);
            sqnr(a, b)
        };
        assert_eq!(s(&[1.0, 2.0], &[1.0, 2.0]), SQNR_CAP.1);
        assert_eq!(s(&[0.0, 0.0], &[0.5, 0.0]), SQNR_CAP.0);
        // 10 log10(5 / 0.01) = 26.99 dB.
        assert!((s(&[1.0, 2.0], &[1.1, 2.0]) - 26.9897).abs() < 1e-3);
    }

    #[test]
    fn why_names_the_choice_and_the_others() {
        let score = |policy, sqnr_db, samples| PolicyScore { policy, sqnr_db, samples };
        let c = ModelChoice {
            chosen: RangePolicy::Every(3),
            scores: vec![
                score(RangePolicy::Every(0), Some(28.44), 4),
                score(RangePolicy::PerTensor, Some(30.12), 16),
                score(RangePolicy::Every(1), None, 0),
                score(RangePolicy::Every(3), Some(31.2), 16),
                score(RangePolicy::Every(6), Some(27.04), 4),
            ],
            samples: 16,
        };
        assert_eq!(
            c.why(),
            "percentile 99.99 for every tensor: output SQNR 31.2 dB on 16 calibration samples \
             (per tensor 30.1; on the first 4: minmax 28.4, mse 27.0)"
        );
    }
}
