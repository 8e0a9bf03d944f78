//! Post-training quantization (`alloc` only): a float [`Graph`] (from the ONNX or TFLite
//! importer) and calibration samples become a quantized graph, a `.mq` model and a per-layer
//! report.
//!
//! ```text
//! float graph ──prepare──▶ prepared float graph ──Calibrator (observer per activation)──▶ ranges
//!                                  │                                                     │
//!                                  └──────────────────── quantize ◀──────────────────────┘
//!                                                           │
//!                      quantized graph ──compile──▶ .mq ──evaluate (float vs int8, per layer)──▶ Report
//! ```
//!
//! 1. [`prepare`] optimizes the graph ([`crate::passes`]) and rewrites ops the int8 runtime
//!    lacks with ops it has (HardSigmoid → ReLU6 arithmetic; a ReLU that cannot be fused → a
//!    1×1 max pool with the clamp).
//! 2. [`Calibrator`] runs samples through the float graph ([`crate::float`]) into one observer
//!    per activation ([`ObserverKind`]: [`auto`] (the default: per tensor, candidate ranges from
//!    min/max, percentile, entropy and L2 statistics, the model's chosen by the int8 model's
//!    output error, see [`auto`]), min/max, moving average, histogram (L2), entropy (KL),
//!    percentile; per model or per layer), with a progress callback; calibrators over chunks of
//!    the samples merge ([`Calibrator::merge`], the observers' exact `merge`). The samples may
//!    stream from a [`SampleSource`] ([`Calibrator::calibrate_source`], [`convert_source`]): a
//!    few at a time ([`CHUNK_SAMPLES`]), each pass rewinding it, in memory independent of their
//!    number.
//! 3. [`quantize`] chooses every parameter: activations per tensor (asymmetric int8, TFLite's
//!    formula; or symmetric int16 for the whole model), weights symmetric int8 in [-127, 127]
//!    per channel (or per tensor), int32 biases with scale `input_scale · weight_scale`, the
//!    fixed output parameters TFLite uses for softmax, logistic and tanh — exactly what
//!    [`crate::compile`] expects.
//! 4. [`evaluate`] runs float and int8 side by side and writes the [`Report`]: per layer, the
//!    SQNR and largest error of the int8 output (through the whole int8 pipeline, read with
//!    [`crate::interp::Interpreter::run_op`]) against the float output, the parameters and the
//!    observer; per model, top-1 agreement, accuracies when labels are given, sizes, arena. As
//!    JSON with [`Report::to_json`]. [`Evaluator`] takes the samples chunk by chunk.
//!
//! ```no_run
//! # fn demo(onnx: &[u8], samples: &[Vec<Vec<f32>>]) -> Result<(), microquant::graph::ConvertError> {
//! use microquant::ptq::*;
//! let imported = microquant::onnx::import(onnx)?;
//! let mut g = imported.graph;
//! prepare(&mut g)?;
//! let mut cal = Calibrator::new(&g, &CalibrationOptions { observer: ObserverKind::Entropy, ..Default::default() })?;
//! cal.calibrate(samples, &mut |p| eprintln!("pass {}/{}: {}/{}", p.pass + 1, p.passes, p.done, p.total))?;
//! let q = quantize(&cal, &QuantizeOptions::default())?;
//! let compiled = microquant::compile::compile(&q.graph, &Default::default())?;
//! let report = evaluate(&cal, &q, &compiled, samples, None)?;
//! println!("{}", report.to_json());
//! # Ok(()) }
//! ```
//!
//! Three modes: **static** (above: int8 weights and activations, calibrated, compiled to
//! `.mq`), and two that quantize the weights alone, with no calibration ([`Hybrid`]):
//! **weight-only** ([`quantize_weight_only`]: float compute with the weights dequantized) and
//! **dynamic** ([`quantize_dynamic`]: each layer quantizes its input per call and sums in
//! integers, as ONNX Runtime's `quantize_dynamic` models do). The float executor runs those,
//! [`crate::onnx::export_qdq`] writes them as ONNX and [`evaluate_hybrid`] measures them. The
//! `.mq` runtime has int8 and 16x8 kernels only, so they have no `.mq` form.

pub mod adaround;
pub mod auto;
mod calibrate;
mod cle;
mod hybrid;
mod observer;
mod pipeline;
mod prepare;
mod quantize;
mod quantize_recurrent;
pub(crate) mod report;
mod shared_quant;
mod source;

pub use adaround::{AdaRoundOptions, AdaRounding};
#[cfg(feature = "std")]
pub use calibrate::KEPT_ACTIVATION_BYTES;
pub use calibrate::{CalibrationOptions, Calibrator, Progress, REPLAY_BYTES, ReplaySamples, SELECTION_SAMPLES};
pub use cle::{CleOptions, CleReport, EqualizedPair, LayerRanges, SkippedPair, equalize};
pub use hybrid::{Hybrid, HybridMode, HybridOptions, quantize_dynamic, quantize_weight_only};
pub use observer::ObserverKind;
pub use pipeline::{PtqOptions, PtqOutput, convert, convert_source};
pub use prepare::{Prepared, prepare};
pub use quantize::{
    ActivationQuant, ActivationType, QParamsSource, QuantizeOptions, Quantized, WeightSource, quantize,
};
pub use report::{
    Evaluator, IoQuant, LayerReport, ModelReport, Report, evaluate, evaluate_hybrid, evaluate_with_progress,
};
pub use source::{CHUNK_SAMPLES, Sample, SampleSource, SliceSource, SourceError, SourceErrorKind, StreamError};

#[cfg(doc)]
use crate::graph::Graph;
