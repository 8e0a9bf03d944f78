//! AdaRound (Nagel et al., "Up or Down? Adaptive Rounding for Post-Training Quantization",
//! ICML 2020): each weight of a conv, depthwise or fully-connected layer rounded up or down as
//! best reconstructs the layer's output on the calibration samples, instead of to the nearest
//! integer. Matters most for 4-bit weights, where a step is a seventh of a channel's range.
//!
//! For each layer, with the per-channel scales `s` the quantizer chooses (symmetric, integers
//! in `[-127, 127]`, or `[-7, 7]` for 4-bit weights), a continuous `V` of the weights' shape
//! gives the weights `W̃ = s · clip(⌊W / s⌋ + h(V), -q, q)`, `h(V) = clip(σ(V)(ζ - γ) + γ, 0, 1)`
//! (`ζ = 1.1`, `γ = -0.1`), and Adam minimizes
//!
//! ```text
//! mean over input patches x of ‖W x - W̃ x‖²  +  λ Σ (1 - |2 h(V) - 1|^β)
//! ```
//!
//! with `λ = 0.01` and `β` annealed from 20 to 2 after a warm-up of a fifth of the iterations
//! (the regularizer off). `V` starts where `h(V)` is the fractional part of `W / s`; at the end
//! each weight rounds up where `h(V) >= 0.5`, down elsewhere. The patches `x` are the layer's
//! float inputs (its own input with the float model before it, as the paper's basic form) at
//! up to [`AdaRoundOptions::patches`] positions drawn with a seeded generator from all the
//! samples' (all of them if fewer), so the result depends on the seed and the samples alone.
//!
//! The reconstruction term is `Σ_rows (w - w̃)ᵀ G (w - w̃)` with `G` the mean of the patches'
//! `x xᵀ`: every step sees every chosen patch at a cost of `rows × k²`, not
//! `rows × k × patches`, and the steps are deterministic. Layers whose Gram matrices would take
//! more than [`MAX_GRAM_VALUES`] values keep round-to-nearest (listed as skipped).
//!
//! [`adaround_source`] runs it over a [`SampleSource`]; [`crate::ptq::convert`] does with
//! [`crate::ptq::PtqOptions::adaround`], between calibration and quantization: the calibrator
//! takes the rounded weights ([`Calibrator::use_adaround`]), [`crate::ptq::quantize`] uses them
//! (the bias correction then corrects what error is left). [`AdaRound`] is the same, step by
//! step (the npm package yields to the event loop between steps).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::calibrate::{Calibrator, Progress};
use super::quantize::QuantizeOptions;
use super::source::{CHUNK_SAMPLES, SampleSource, SourceError, SourceErrorKind, StreamError};
use crate::graph::{ConvertError, ConvertErrorKind as Kind, Graph};

mod glue;
mod optimizer;
mod patches;
mod problem;
#[cfg(test)]
mod tests;

pub use glue::AdaRound;

/// The most Gram-matrix values (4 bytes each) a layer may take (its groups' `k × k`, `k` the
/// inputs per output): 16 M, 64 MB, a `k` of 4096 (a 3×3 conv of 455 input channels).
pub const MAX_GRAM_VALUES: usize = 1 << 24;

/// Options of AdaRound.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaRoundOptions {
    /// Adam steps per layer (default 1000).
    pub iterations: usize,
    /// Input patches per layer, drawn from all the samples' (default 4096; all of them when the
    /// samples have fewer).
    pub patches: usize,
    /// Seed of the patch draw (default 0): the same seed, samples and options give the same
    /// weights.
    pub seed: u64,
    /// Adam's learning rate on `V` (default 0.01).
    pub learning_rate: f32,
}

impl Default for AdaRoundOptions {
    fn default() -> Self {
        Self { iterations: 1000, patches: 4096, seed: 0, learning_rate: 0.01 }
    }
}

impl AdaRoundOptions {
    fn check(&self) -> Result<(), ConvertError> {
        if self.iterations == 0 || self.patches == 0 || !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return Err(ConvertError::new(
                Kind::InvalidGraph,
                format!(
                    "adaround options: iterations ({}) and patches ({}) must be at least 1, the learning rate ({}) positive",
                    self.iterations, self.patches, self.learning_rate
                ),
            ));
        }
        Ok(())
    }
}

/// One layer's AdaRound.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerRounding {
    /// Node index (in the prepared float graph, [`crate::ptq::PtqOutput::float`]).
    pub node: usize,
    /// Node name.
    pub name: String,
    /// Weight bits (8 or 4).
    pub bits: u8,
    /// Per-channel scales (else one per tensor).
    pub per_channel: bool,
    /// Input patches the problem was built from.
    pub patches: usize,
    /// The layer's output energy over the patches, `mean ‖W x‖²` (without bias).
    pub signal: f64,
    /// `mean ‖W x - W̃ x‖²` with the weights rounded to nearest.
    pub error_nearest: f64,
    /// The same with the weights AdaRound chose.
    pub error_adaround: f64,
    /// AdaRound reconstructed worse than round-to-nearest: the layer keeps round-to-nearest.
    pub kept_nearest: bool,
    /// Weights rounded the other way than to nearest.
    pub flipped: usize,
    /// The integers, in the weight tensor's order.
    pub weights: Vec<i8>,
    /// The scales (the quantizer's).
    pub scales: Vec<f32>,
}

impl LayerRounding {
    /// The reconstruction's SQNR in dB, `10 log10(signal / error)`, with round-to-nearest and
    /// with AdaRound (infinite for no error).
    pub fn sqnr_db(&self) -> (f64, f64) {
        let db = |e: f64| if e > 0.0 { 10.0 * libm::log10(self.signal / e) } else { f64::INFINITY };
        (db(self.error_nearest), db(self.error_adaround))
    }
}

/// A layer AdaRound left to round-to-nearest, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Node index.
    pub node: usize,
    /// Node name.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// What AdaRound chose: per layer, the weights and the errors before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaRounding {
    /// The options used.
    pub options: AdaRoundOptions,
    /// The AdaRounded layers, in graph order.
    pub layers: Vec<LayerRounding>,
    /// The layers with weights that kept round-to-nearest.
    pub skipped: Vec<Skipped>,
}

impl fmt::Display for AdaRounding {
    /// A table: per layer, the reconstruction SQNR with round-to-nearest and with AdaRound.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        writeln!(
            f,
            "AdaRound: {} layers ({} iterations, up to {} patches, seed {}); layer output SQNR, nearest -> adaround:",
            self.layers.len(),
            o.iterations,
            o.patches,
            o.seed
        )?;
        for l in &self.layers {
            let (a, b) = l.sqnr_db();
            writeln!(
                f,
                "  {:<32} w{} {:>7.2} dB -> {:>7.2} dB  ({} of {} weights flipped, {} patches){}",
                l.name,
                l.bits,
                a,
                b,
                l.flipped,
                l.weights.len(),
                l.patches,
                if l.kept_nearest { ", kept nearest" } else { "" }
            )?;
        }
        for s in &self.skipped {
            writeln!(f, "  {:<32} not AdaRounded: {}", s.name, s.reason)?;
        }
        Ok(())
    }
}

/// Runs AdaRound on `graph` (the prepared float graph) over every sample of `source` (rewound
/// first), calling `progress` with `pass` and `passes` as given: after each sample in pass
/// `pass`, then during the optimization in pass `pass + 1` (`done` of `total` scaled from the
/// iterations run).
///
/// # Errors
/// As [`AdaRound::new`], [`AdaRound::add_sample`] and [`AdaRound::finish`]; the source's; a
/// source that gives another number of samples than announced is a [`SourceErrorKind::Count`]
/// error.
pub fn adaround_source(
    graph: &Graph,
    source: &mut dyn SampleSource,
    quantize: &QuantizeOptions,
    options: &AdaRoundOptions,
    (pass, passes): (u32, u32),
    progress: &mut dyn FnMut(Progress),
) -> Result<AdaRounding, StreamError> {
    let total = source.sample_count();
    let mut ada = AdaRound::new(graph, quantize, options, total)?;
    source.rewind()?;
    let mut done = 0;
    loop {
        let chunk = source.next_chunk(CHUNK_SAMPLES)?;
        if chunk.is_empty() {
            break;
        }
        for s in chunk {
            if done == total {
                done += 1;
                break;
            }
            let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
            ada.add_sample(&inputs)?;
            done += 1;
            progress(Progress { pass, passes, done, total });
        }
    }
    if done != total {
        return Err(SourceError::new(
            SourceErrorKind::Count,
            format!("the source gave {done} samples for AdaRound, it announced {total}"),
        )
        .into());
    }
    ada.optimize_all(OPTIMIZE_CHUNK, &mut |d, t| {
        let scaled = if t == 0 { total } else { (d as u128 * total as u128 / t as u128) as usize };
        progress(Progress { pass: pass + 1, passes, done: scaled, total });
    })?;
    Ok(ada.finish()?)
}

/// Steps per layer between progress reports of [`adaround_source`].
const OPTIMIZE_CHUNK: usize = 50;

impl Calibrator<'_> {
    /// Makes [`crate::ptq::quantize`] use AdaRound's weights for its layers (for the same weight
    /// layout and bits; other options quantize to nearest as usual).
    pub fn use_adaround(&mut self, rounding: &AdaRounding) {
        for l in &rounding.layers {
            self.set_rounded_weights(l.node, l.per_channel, l.bits, (l.weights.clone(), l.scales.clone()));
        }
    }
}
