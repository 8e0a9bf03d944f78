//! The whole post-training quantization in one call ([`convert`]): what the CLI and the npm
//! package run.

use alloc::format;

use super::adaround::{AdaRoundOptions, AdaRounding, adaround_source};
use super::calibrate::{CalibrationOptions, Calibrator, Progress};
use super::cle::{CleOptions, CleReport, equalize};
use super::prepare::{Prepared, prepare};
use super::quantize::{QuantizeOptions, Quantized, quantize};
use super::report::{Evaluator, Report};
use super::source::{CHUNK_SAMPLES, SampleSource, SliceSource, SourceError, SourceErrorKind, StreamError};
use crate::compile::{CompileOptions, Compiled, compile};
use crate::graph::{ConvertError, ConvertErrorKind as Kind, Graph};

/// Options of [`convert`]: calibration, quantization and compilation.
#[derive(Debug, Clone, Default)]
pub struct PtqOptions {
    /// Observers (per model and per layer), one or two passes.
    pub calibration: CalibrationOptions,
    /// Weights per channel or per tensor, activation types, 16x8 layers, carried parameters.
    pub quantize: QuantizeOptions,
    /// Rounding (TFLite Micro's double rounding by default) and `.mq` metadata.
    pub compile: CompileOptions,
    /// Cross-layer equalization of the prepared float graph before calibration
    /// ([`equalize`]); `None` (the default): none.
    pub cle: Option<CleOptions>,
    /// AdaRound the weights ([`super::adaround`]) between calibration and quantization
    /// (`None`, the default: round to nearest).
    pub adaround: Option<AdaRoundOptions>,
}

/// Everything [`convert`] made.
#[derive(Debug, Clone)]
pub struct PtqOutput {
    /// The float graph after [`prepare`] (and [`equalize`] with [`PtqOptions::cle`]): what was
    /// calibrated, and the reference of the report.
    pub float: Graph,
    /// What [`prepare`] rewrote.
    pub prepared: Prepared,
    /// What cross-layer equalization did ([`PtqOptions::cle`]).
    pub cle: Option<CleReport>,
    /// The quantized graph (also what [`crate::onnx::export_qdq`] writes).
    pub quantized: Quantized,
    /// The `.mq` model.
    pub compiled: Compiled,
    /// The per-layer report, on the calibration samples.
    pub report: Report,
    /// The calibration options used (the observer names of [`PtqOutput::evaluate`]'s report).
    pub calibration: CalibrationOptions,
    /// What AdaRound chose, with [`PtqOptions::adaround`].
    pub adaround: Option<AdaRounding>,
}

impl PtqOutput {
    /// The report on other samples (e.g. a test set; same conventions as [`convert`]'s).
    ///
    /// # Errors
    /// As [`evaluate`](super::evaluate).
    pub fn evaluate<S, V>(&self, samples: &[S], labels: Option<&[usize]>) -> Result<Report, ConvertError>
    where
        S: AsRef<[V]> + Sync,
        V: AsRef<[f32]>,
    {
        let cal = Calibrator::new(&self.float, &self.calibration)?;
        super::report::evaluate(&cal, &self.quantized, &self.compiled, samples, labels)
    }
}

/// Prepares `graph`, calibrates it on `samples`, quantizes, compiles and evaluates it (the
/// report compares float and int8 on the same samples; `labels`, one class per sample row of
/// the first output, add accuracies): [`convert_source`] over a [`SliceSource`] (the same
/// results bit for bit).
///
/// `samples`: one entry per sample, each a list of input slices in the **graph's** layout (for
/// an ONNX model in NCHW, convert with [`crate::onnx::IoInfo::to_graph_layout`]).
///
/// `progress` is called after each sample of each calibration pass and of the evaluation; the
/// evaluation is the last pass (`pass == passes - 1`). With [`PtqOptions::adaround`], two passes
/// come before it: AdaRound's run of the samples, then its optimization (reported in samples'
/// worth of its iterations).
///
/// # Errors
/// The errors of [`prepare`], [`Calibrator`], [`quantize`], [`compile`] and
/// [`evaluate`](super::evaluate);
/// `InvalidGraph` for no samples.
pub fn convert<S, V>(
    graph: &Graph,
    samples: &[S],
    labels: Option<&[usize]>,
    options: &PtqOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<PtqOutput, ConvertError>
where
    S: AsRef<[V]>,
    V: AsRef<[f32]>,
{
    convert_source(graph, &mut SliceSource::new(samples), labels, options, progress).map_err(StreamError::into_convert)
}

/// [`convert`] with the samples streamed from `source`, [`CHUNK_SAMPLES`] at a time: every
/// calibration pass and the evaluation rewind it and read it through, so the memory taken does
/// not grow with the number of samples (10,000 images calibrate as 100 do).
///
/// ```no_run
/// # fn demo(g: &microquant::graph::Graph, samples: &[Vec<Vec<f32>>]) -> Result<(), microquant::ptq::StreamError> {
/// use microquant::ptq::{PtqOptions, SliceSource, convert_source};
/// let out = convert_source(g, &mut SliceSource::new(samples), None, &PtqOptions::default(), &mut |_| {})?;
/// println!("{}", out.report);
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`convert`] ([`StreamError::Convert`]), and the source's ([`StreamError::Source`]).
pub fn convert_source(
    graph: &Graph,
    source: &mut dyn SampleSource,
    labels: Option<&[usize]>,
    options: &PtqOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<PtqOutput, StreamError> {
    let total = source.sample_count();
    if total == 0 {
        return Err(ConvertError::new(Kind::InvalidGraph, "no calibration samples").into());
    }
    let mut float = graph.clone();
    let prepared = prepare(&mut float)?;
    let cle = options.cle.as_ref().map(|o| equalize(&mut float, o)).transpose()?;
    let (quantized, compiled, report, adaround) = {
        let mut cal = Calibrator::new(&float, &options.calibration)?;
        let passes = cal.passes() + 1 + if options.adaround.is_some() { 2 } else { 0 };
        cal.calibrate_source(source, &mut |p| progress(Progress { passes, ..p }))?;
        let adaround = match &options.adaround {
            Some(o) => {
                let r = adaround_source(&float, source, &options.quantize, o, (cal.passes(), passes), progress)?;
                cal.use_adaround(&r);
                Some(r)
            }
            None => None,
        };
        let quantized = quantize(&cal, &options.quantize)?;
        let compiled = compile(&quantized.graph, &options.compile)?;
        let mut ev = Evaluator::new(&cal, &quantized, &compiled, labels)?;
        // The same samples again, from the first: measured against the activations calibration
        // kept of them, where it kept them.
        ev.reuse_calibration_activations();
        source.rewind()?;
        let mut done = 0;
        loop {
            let chunk = source.next_chunk(CHUNK_SAMPLES)?;
            if chunk.is_empty() {
                break;
            }
            ev.add_samples(chunk, &mut |_| {
                done += 1;
                progress(Progress { pass: passes - 1, passes, done, total });
            })?;
        }
        if done != total {
            return Err(SourceError::new(
                SourceErrorKind::Count,
                format!("the source gave {done} samples for the evaluation, it announced {total}"),
            )
            .into());
        }
        let report = ev.finish()?;
        (quantized, compiled, report, adaround)
    };
    Ok(PtqOutput {
        float,
        prepared,
        cle,
        quantized,
        compiled,
        report,
        calibration: options.calibration.clone(),
        adaround,
    })
}
