//! `microquant quantize`: a float ONNX or TFLite model and calibration samples become an int8
//! `.mq`, a per-layer report (printed, and as JSON), and optionally a QDQ ONNX model; with
//! `--mode weight-only`, an ONNX model with int8 weights and float compute (samples optional).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use microquant::compile::CompileOptions;
use microquant::graph::Graph;
use microquant::kernels::Rounding;
use microquant::onnx::{ImportOptions, IoInfo, QdqExportOptions};
use microquant::ptq::{
    ActivationType, AdaRoundOptions, CalibrationOptions, CleOptions, HybridOptions, ObserverKind, Progress, PtqOptions,
    QuantizeOptions, SampleSource, StreamError, convert_source,
};

use crate::CliError;
use crate::calib::CalibSource;
use crate::output::Stdout;

/// Arguments of `microquant quantize`.
#[derive(Args, Debug)]
pub struct QuantizeArgs {
    /// The float model: `.onnx` (opsets 11 to 21, also QDQ models quantized elsewhere, whose
    /// scales are kept) or `.tflite`.
    pub model: PathBuf,
    /// Calibration samples: float32 `.npy`, samples first, each in the model's own input layout
    /// (NCHW for PyTorch exports), e.g. `[N, 1, 28, 28]` for an input `[1, 1, 28, 28]` (or
    /// `[N, 1, 1, 28, 28]`: the whole input shape per sample). Repeatable: each PATH is a file,
    /// a directory (its `.npy` files in name order; with `--preprocess`, its images) or a glob
    /// pattern (`'calib/part_*.npy'`, sorted); several files are one sequence of samples, in
    /// the order given. The files are read a few samples at a time, so any number of samples
    /// calibrates in the same memory. A model with several inputs takes NAME= on each:
    /// `--calib x=x.npy --calib state=state.npy` (the same N per input).
    /// Required for `--mode static`; for `--mode weight-only` they are optional and only measure
    /// the model (the report).
    #[arg(long, value_name = "[NAME=]PATH")]
    pub calib: Vec<String>,
    /// How calibration images become samples (PNG, JPEG; see the keys below), e.g.
    /// `resize=224x224,layout=nchw,scale=1/255,mean=0.485/0.456/0.406,std=0.229/0.224/0.225`.
    #[arg(long, value_name = "SPEC", long_help = crate::preprocess::HELP)]
    pub preprocess: Option<crate::preprocess::Preprocess>,
    /// No progress bar (it is drawn on standard error when that is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
    /// Labels of the calibration samples (`.npy` of integers, `[N]`, one per sample of all the
    /// `--calib` files): the report adds float and int8 accuracy.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Observer of every activation: auto (the default: per tensor, candidate ranges from its
    /// statistics (min/max, min/max without outlier samples, percentiles, entropy, L2), the
    /// model's chosen by running the int8 model on the first calibration samples and measuring its
    /// output error, outlier samples left out; the report says which ranges and why), minmax,
    /// moving-average, histogram, entropy, percentile (99.999; `percentile:99.9` for another).
    #[arg(long, default_value = "auto", value_parser = parse_observer)]
    pub observer: ObserverKind,
    /// With `--observer auto`: how many calibration samples (the first ones) measure the
    /// model-level range choice, each candidate policy run in int8 on them and scored at the
    /// model's output; 0: each tensor its own least-error range.
    #[arg(long, value_name = "N", default_value_t = microquant::ptq::SELECTION_SAMPLES)]
    pub selection_samples: usize,
    /// Observer of one layer (node or tensor name), e.g. `--layer-observer conv1=entropy`;
    /// repeatable.
    #[arg(long = "layer-observer", value_name = "LAYER=OBSERVER", value_parser = parse_layer_observer)]
    pub layer_observers: Vec<(String, ObserverKind)>,
    /// One weight scale per tensor instead of per output channel.
    #[arg(long)]
    pub per_tensor: bool,
    /// Cross-layer equalization before calibration (Nagel et al. 2019): consecutive conv /
    /// depthwise / fully-connected layers joined by ReLU or no activation (pooling, zero padding
    /// and reshapes between them too) get their per-channel weight ranges evened out, the float
    /// function unchanged; helps `--per-tensor` most, on depthwise-separable models. Layers
    /// joined by a ReLU6 are left alone (see `--cle-relu6-as-relu`). The output lists the pairs
    /// equalized and each layer's weight ranges before and after.
    #[arg(long)]
    pub cle: bool,
    /// With `--cle`: equalize across ReLU6 too, by replacing it with ReLU first, as the paper
    /// and AIMET do. This changes the float model (values above 6 are no longer clipped); the
    /// report then measures the int8 model against the changed float model.
    #[arg(long, requires = "cle")]
    pub cle_relu6_as_relu: bool,
    /// Bits of the conv, depthwise and fully-connected weights: 8 or 4 (W4A8: symmetric int4 in
    /// [-7, 7] as TFLite's, packed two per byte: half the weights' flash; activations stay int8).
    /// With 4, every such layer gets 4-bit weights, the first and the last included; keep the
    /// sensitive ones in 8 bits with `--layer-weight-bits` (the first conv and the classifier
    /// are the usual choice; the report's type column says `i8/w4` and each layer's SQNR).
    /// Transposed convolutions and 16x8 layers keep 8 bits (no int4 kernel).
    #[arg(long, value_name = "BITS", default_value_t = 8, value_parser = parse_weight_bits)]
    pub weight_bits: u8,
    /// The weight bits of one layer (node or output tensor name), over `--weight-bits`, e.g.
    /// `--layer-weight-bits conv1=8`; repeatable.
    #[arg(long = "layer-weight-bits", value_name = "LAYER=BITS", value_parser = parse_layer_weight_bits)]
    pub layer_weight_bits: Vec<(String, u8)>,
    /// Layers to compute in 16x8 (int16 activations), by node name.
    #[arg(long = "int16", value_name = "LAYER", num_args = 1..)]
    pub int16: Vec<String>,
    /// Every layer in 16x8 (int16 activations).
    #[arg(long)]
    pub int16_all: bool,
    /// Quantization mode: `static` (int8 weights and activations, calibrated: a `.mq`),
    /// `weight-only` (int8 weights, float compute) or `dynamic` (int8 weights, each layer's input
    /// quantized per call, as ONNX Runtime's quantize_dynamic): those two write an ONNX model
    /// (`-o model.onnx`; no `.mq`: the device runtime computes in int8).
    #[arg(long, value_enum, default_value_t = Mode::Static)]
    pub mode: Mode,
    /// Ignore the scales a QDQ model carries and calibrate every tensor.
    #[arg(long)]
    pub ignore_qdq: bool,
    /// Keep the float biases as they are (by default each conv / fully-connected bias absorbs the
    /// mean error its weights' quantization causes on the calibration samples).
    #[arg(long)]
    pub no_bias_correction: bool,
    /// AdaRound the weights (Nagel et al., 2020): each conv, depthwise and fully-connected
    /// weight rounded up or down as best reconstructs its layer's output on the calibration
    /// samples (Adam on a relaxed rounding, layer by layer), instead of to nearest. Worth most
    /// with `--weight-bits 4`. The output lists each layer's reconstruction SQNR with
    /// round-to-nearest and with AdaRound. Deterministic given `--seed`.
    #[arg(long)]
    pub adaround: bool,
    /// AdaRound's Adam steps per layer.
    #[arg(long, value_name = "N", default_value_t = microquant::ptq::AdaRoundOptions::default().iterations, requires = "adaround")]
    pub adaround_iters: usize,
    /// AdaRound's input patches per layer, drawn from all the calibration samples' (all of them
    /// when there are fewer).
    #[arg(long, value_name = "N", default_value_t = microquant::ptq::AdaRoundOptions::default().patches, requires = "adaround")]
    pub adaround_patches: usize,
    /// Seed of AdaRound's patch draw.
    #[arg(long, value_name = "N", default_value_t = microquant::ptq::AdaRoundOptions::default().seed)]
    pub seed: u64,
    /// Start each calibration sample from the zero recurrent state. By default a model with an
    /// LSTM, which keeps its state from one invoke to the next on the device (as TFLite Micro's
    /// does), is calibrated the same way: the samples in their order form one sequence (the
    /// consecutive chunks of a stream). `microquant run --reset-state` is the same choice when
    /// running.
    #[arg(long)]
    pub calib_reset_state: bool,
    /// The shape of an ONNX input whose extents are dynamic (`dim_param`s such as `height`),
    /// in the model's axis order: `NAME=1x3x320x320`; repeatable. Static extents must be given
    /// as the model declares them; a dynamic batch is 1 unless given here. Shape computations
    /// that become constant fold away.
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = parse_input_shape)]
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// The value of an ONNX input fixed at conversion: `NAME=16000`, comma-separated values
    /// (row-major) for a tensor of several elements; repeatable. The input becomes a constant
    /// and what depends only on it folds away: the way to convert a model with a non-float
    /// input (an int64 sample rate, a bool flag).
    #[arg(long = "input-value", value_name = "NAME=V[,V...]", value_parser = parse_input_value, allow_hyphen_values = true)]
    pub input_values: Vec<(String, Vec<f64>)>,
    /// An ONNX output to keep, by name; repeatable (default: every output, in the model's
    /// order). Only what the kept outputs need is converted: the way to leave out an output
    /// computed by an op microquant does not run (a recurrent model's returned state, a
    /// label next to the probabilities).
    #[arg(long = "output-name", value_name = "NAME")]
    pub output_names: Vec<String>,
    /// Where to write the `.mq` (`--mode weight-only`: the ONNX model).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Where to write the report as JSON.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Where to write the quantized model as QDQ ONNX (opset 17; 21 with int16 layers or int4
    /// weights, as ONNX `INT4` initializers), in the
    /// model's own layout.
    /// The exact form: the int8 layers' integer arithmetic written as ONNX ops, so that ONNX
    /// Runtime gives the `.mq`'s outputs bit for bit.
    /// An int8 LSTM keeps its state between calls as the `.mq` does, through added graph inputs
    /// `<node>/h_in` (int8 hidden state, the LSTM output's scale and zero point) and
    /// `<node>/c_in` (int16 cell state), both `[batch, cell]`, and outputs `<node>/h_out`,
    /// `<node>/c_out`: feed each call's `*_out` to the next call's `*_in`. The start state (real
    /// zero: the hidden state at its zero point, the cell state 0) is each input's default (its
    /// initializer). `--qdq-portable` refuses an LSTM.
    #[arg(long)]
    pub qdq: Option<PathBuf>,
    /// Where to write the quantized model as plain QDQ ONNX (each layer `DequantizeLinear` → float
    /// op → `QuantizeLinear`): the form other QDQ tools read, and `microquant quantize` reads back
    /// keeping its scales; ONNX Runtime's results are within a step or so per layer of the `.mq`.
    #[arg(long, value_name = "PATH")]
    pub qdq_portable: Option<PathBuf>,
    /// Rounding: `double` (bit-exact with TFLite Micro, the default) or `single` (with the
    /// TFLite interpreter's reference kernels).
    #[arg(long, value_enum, default_value_t = RoundingMode::Double)]
    pub rounding: RoundingMode,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// int8 weights and activations, activation ranges from calibration.
    Static,
    /// int8 weights, activations quantized per input at run time: an ONNX model (as ONNX
    /// Runtime's quantize_dynamic writes).
    Dynamic,
    /// int8 weights, float compute: an ONNX model with int8 weights (no `.mq`: the device
    /// runtime computes in int8).
    WeightOnly,
}

/// `--rounding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RoundingMode {
    /// TFLite Micro (double rounding).
    Double,
    /// The TFLite interpreter's reference kernels (single rounding).
    Single,
}

fn parse_observer(s: &str) -> Result<ObserverKind, String> {
    if let Some(p) = s.strip_prefix("percentile:") {
        let v: f64 = p.parse().map_err(|_| format!("bad percentile {p:?}"))?;
        if !(50.0..=100.0).contains(&v) {
            return Err(format!("percentile {v} outside [50, 100]"));
        }
        return Ok(ObserverKind::Percentile(v));
    }
    ObserverKind::from_name(s).ok_or_else(|| {
        format!("unknown observer {s:?} (auto, minmax, moving-average, histogram, entropy, percentile, percentile:<p>)")
    })
}

/// `8` or `4`.
fn parse_weight_bits(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(b @ (8 | 4)) => Ok(b),
        _ => Err(format!("weight bits {s:?}: expected 8 or 4 (the runtime's kernels take 8-bit or 4-bit weights)")),
    }
}

/// `LAYER=8` or `LAYER=4`.
fn parse_layer_weight_bits(s: &str) -> Result<(String, u8), String> {
    let (layer, bits) = s.rsplit_once('=').ok_or_else(|| format!("{s:?}: expected LAYER=BITS, e.g. conv1=8"))?;
    if layer.is_empty() {
        return Err(format!("{s:?}: the layer name is empty"));
    }
    Ok((layer.to_string(), parse_weight_bits(bits).map_err(|e| format!("{s:?}: {e}"))?))
}

fn parse_layer_observer(s: &str) -> Result<(String, ObserverKind), String> {
    let (layer, kind) = s.rsplit_once('=').ok_or_else(|| format!("{s:?}: expected LAYER=OBSERVER"))?;
    Ok((layer.to_string(), parse_observer(kind)?))
}

/// `NAME=1x3x320x320` (the name may itself contain `=`: the last one splits).
fn parse_input_shape(s: &str) -> Result<(String, Vec<usize>), String> {
    let (name, dims) = s.rsplit_once('=').ok_or_else(|| format!("{s:?}: expected NAME=DIMS, e.g. x=1x3x320x320"))?;
    let dims = dims
        .split(['x', 'X', ','])
        .map(|d| match d.trim().parse::<usize>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!("{s:?}: extent {d:?} is not a positive integer (expected NAME=DIMS, e.g. x=1x3x320x320)")),
        })
        .collect::<Result<Vec<usize>, String>>()?;
    if name.is_empty() {
        return Err(format!("{s:?}: the input name is empty"));
    }
    Ok((name.to_string(), dims))
}

/// `NAME=16000` or `NAME=1,2,3`.
fn parse_input_value(s: &str) -> Result<(String, Vec<f64>), String> {
    let (name, values) = s.rsplit_once('=').ok_or_else(|| format!("{s:?}: expected NAME=VALUE, e.g. sr=16000"))?;
    let values = values
        .split(',')
        .map(|v| match v.trim() {
            "true" => Ok(1.0),
            "false" => Ok(0.0),
            t => t.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| format!("{s:?}: {t:?} is not a number")),
        })
        .collect::<Result<Vec<f64>, String>>()?;
    if name.is_empty() {
        return Err(format!("{s:?}: the input name is empty"));
    }
    Ok((name.to_string(), values))
}

/// The imported model: its float graph and the layout of its inputs and outputs.
struct Source {
    graph: Graph,
    inputs: Vec<IoInfo>,
    outputs: Vec<IoInfo>,
    kind: &'static str,
}

fn load(path: &Path, a: &QuantizeArgs) -> Result<Source, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::io(path, e))?;
    let at = |e| CliError::convert(path, e);
    if bytes.get(4..8) == Some(b"TFL3") {
        if !a.input_shapes.is_empty() || !a.input_values.is_empty() || !a.output_names.is_empty() {
            return Err(CliError::Invalid(format!(
                "{}: --input-shape, --input-value and --output-name apply to ONNX models; a TFLite model's shapes are static",
                path.display()
            )));
        }
        let graph = microquant::tflite::import(&bytes).map_err(at)?;
        let (inputs, outputs) = (IoInfo::of_graph(&graph, &graph.inputs), IoInfo::of_graph(&graph, &graph.outputs));
        Ok(Source { graph, inputs, outputs, kind: "TFLite" })
    } else {
        let options = ImportOptions {
            input_shapes: a.input_shapes.clone(),
            input_values: a.input_values.clone(),
            outputs: (!a.output_names.is_empty()).then(|| a.output_names.clone()),
            ..Default::default()
        };
        let imported = microquant::onnx::import_with_options(&bytes, &options).map_err(at)?;
        Ok(Source { graph: imported.graph, inputs: imported.inputs, outputs: imported.outputs, kind: "ONNX" })
    }
}

/// Runs `microquant quantize`.
pub fn run(a: &QuantizeArgs, o: &mut Stdout) -> Result<(), CliError> {
    match a.mode {
        Mode::Static => {}
        Mode::WeightOnly | Mode::Dynamic if a.cle => {
            return Err(CliError::Invalid(
                "--cle applies to --mode static (it rewrites the graph before calibration)".into(),
            ));
        }
        Mode::WeightOnly | Mode::Dynamic => return run_hybrid(a, o),
    }
    if a.calib.is_empty() {
        return Err(CliError::Invalid("--mode static needs calibration samples: --calib samples.npy".into()));
    }
    let src = load(&a.model, a)?;
    let mut samples = CalibSource::open(&a.calib, &src.inputs, a.preprocess.as_ref())?;
    let count = samples.sample_count();
    let labels = read_labels(a.labels.as_deref(), count)?;
    let name = a.model.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let options = PtqOptions {
        calibration: CalibrationOptions {
            observer: a.observer,
            overrides: a.layer_observers.clone(),
            reset_state: a.calib_reset_state,
            selection_samples: a.selection_samples,
            ..Default::default()
        },
        quantize: QuantizeOptions {
            per_channel: !a.per_tensor,
            weight_bits: a.weight_bits,
            layer_weight_bits: a.layer_weight_bits.clone(),
            activations: if a.int16_all { ActivationType::Int16 } else { ActivationType::Int8 },
            int16_layers: a.int16.clone(),
            use_carried: !a.ignore_qdq,
            bias_correction: !a.no_bias_correction,
        },
        compile: CompileOptions {
            rounding: if a.rounding == RoundingMode::Single { Rounding::Single } else { Rounding::Double },
            metadata: [
                ("producer".into(), format!("microquant-cli {} quantize", env!("CARGO_PKG_VERSION"))),
                ("source_file".into(), name),
                ("observer".into(), a.observer.name().into()),
                ("calibration_samples".into(), count.to_string()),
            ]
            .into_iter()
            .chain(microquant::onnx::IoInfo::layout_metadata(&src.inputs, &src.outputs))
            .collect(),
            ..Default::default()
        },
        cle: a.cle.then(|| CleOptions { relu6_as_relu: a.cle_relu6_as_relu, ..Default::default() }),
        adaround: a.adaround.then(|| AdaRoundOptions {
            iterations: a.adaround_iters,
            patches: a.adaround_patches,
            seed: a.seed,
            ..Default::default()
        }),
    };
    let bar = progress_bar(a.quiet)?;
    let mut last_pass = u32::MAX;
    // AdaRound's two passes (its run of the samples, its optimization) come before the evaluation.
    let extra = if a.adaround { 2 } else { 0 };
    let out = convert_source(&src.graph, &mut samples, labels.as_deref(), &options, &mut |p: Progress| {
        if p.pass != last_pass {
            // One bar over every pass (calibration, then evaluation): its rate and time left
            // are the whole run's.
            last_pass = p.pass;
            bar.set_length((p.total * p.passes as usize) as u64);
            bar.set_message(if p.pass + 1 == p.passes {
                String::from("evaluation")
            } else if a.adaround && p.pass + 3 == p.passes {
                String::from("adaround inputs")
            } else if a.adaround && p.pass + 2 == p.passes {
                String::from("adaround")
            } else {
                format!("calibration {}/{}", p.pass + 1, p.passes - 1 - extra)
            });
        }
        bar.set_position((p.pass as usize * p.total + p.done) as u64);
    })
    .map_err(|e| match e {
        StreamError::Source(e) => CliError::Source(e),
        StreamError::Convert(e) => CliError::convert(&a.model, e),
    })?;
    bar.finish_and_clear();

    std::fs::write(&a.output, &out.compiled.bytes).map_err(|e| CliError::io(&a.output, e))?;
    if let Some(p) = &a.report {
        let mut json = out.report.to_json();
        // `--cle`: what the equalization did, as the report's last key.
        if let (Some(cle), Some(body)) = (&out.cle, json.strip_suffix('}')) {
            json = format!("{body},\"cle\":{}}}", cle.to_json());
        }
        std::fs::write(p, json).map_err(|e| CliError::io(p, e))?;
    }
    let qdq_targets = [(&a.qdq, true), (&a.qdq_portable, false)];
    for (p, exact) in qdq_targets.iter().filter_map(|(p, e)| p.as_ref().map(|p| (p, *e))) {
        // int16 QuantizeLinear and int4 DequantizeLinear are opset 21.
        let int16 = a.int16_all || !a.int16.is_empty();
        let int4 = out.quantized.weight_bits.contains(&Some(4));
        let options = QdqExportOptions {
            opset: if int16 || int4 { 21 } else { 17 },
            inputs: src.inputs.clone(),
            outputs: src.outputs.clone(),
            graph_name: a.model.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        };
        let export = if exact { microquant::onnx::export_qdq } else { microquant::onnx::export_qdq_portable };
        let qdq =
            export(&out.quantized.graph, &options).map_err(|source| CliError::Export { what: "QDQ export", source })?;
        std::fs::write(p, qdq).map_err(|e| CliError::io(p, e))?;
    }
    writeln!(
        o,
        "{} ({}, {} nodes) -> {}: {} samples, observer {}, {} weights{}",
        a.model.display(),
        src.kind,
        src.graph.nodes.len(),
        a.output.display(),
        count,
        a.observer.name(),
        if a.per_tensor { "per-tensor" } else { "per-channel" },
        match out.quantized.weight_bits.iter().flatten().filter(|&&b| b == 4).count() {
            0 => String::new(),
            n => format!(" ({n} of {} layers with 4-bit weights)", out.quantized.weight_bits.iter().flatten().count()),
        }
    )?;
    if let Some(cle) = &out.cle {
        write!(o, "{cle}")?;
    }
    write!(o, "{}", out.report)?;
    if let Some(r) = &out.adaround {
        write!(o, "{r}")?;
    }
    if let Some(p) = &a.report {
        writeln!(o, "report: {}", p.display())?;
    }
    if let Some(p) = &a.qdq {
        writeln!(o, "QDQ ONNX: {}", p.display())?;
    }
    if let Some(p) = &a.qdq_portable {
        writeln!(o, "QDQ ONNX (portable): {}", p.display())?;
    }
    Ok(())
}

/// The progress bar of the calibration passes and the evaluation, on standard error (drawn
/// only when that is a terminal; hidden with `--quiet`): samples done of all passes, their rate
/// and the time left.
fn progress_bar(quiet: bool) -> Result<ProgressBar, CliError> {
    if quiet {
        return Ok(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg:>16} [{bar:30}] {human_pos}/{human_len} samples  {rate}  {elapsed} elapsed, ETA {eta}",
        )
        .map_err(CliError::ProgressBar)?
        .with_key("rate", |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.1} samples/s", s.per_sec());
        })
        .progress_chars("=> "),
    );
    bar.set_message("calibration");
    Ok(bar)
}

/// The labels at `path` (if any), one per sample.
fn read_labels(path: Option<&Path>, samples: usize) -> Result<Option<Vec<usize>>, CliError> {
    let Some(p) = path else { return Ok(None) };
    let l = crate::npy::read_labels(p)?;
    if l.len() != samples {
        return Err(CliError::data(p, format!("{} labels for {samples} calibration samples", l.len())));
    }
    Ok(Some(l))
}

/// `--mode weight-only` / `dynamic`: int8 weights, float activations, written as ONNX; measured
/// on `--calib` when given.
fn run_hybrid(a: &QuantizeArgs, o: &mut Stdout) -> Result<(), CliError> {
    let mode = if a.mode == Mode::Dynamic { "dynamic" } else { "weight-only" };
    let static_only = [
        (a.int16_all || !a.int16.is_empty(), "--int16 / --int16-all"),
        (!a.layer_observers.is_empty(), "--layer-observer"),
        (a.qdq.is_some(), "--qdq (the ONNX model is the output: -o model.onnx)"),
        (a.qdq_portable.is_some(), "--qdq-portable (the ONNX model is the output: -o model.onnx)"),
        (a.rounding != RoundingMode::Double, "--rounding"),
        (a.no_bias_correction, "--no-bias-correction"),
        (a.weight_bits != 8 || !a.layer_weight_bits.is_empty(), "--weight-bits / --layer-weight-bits"),
        (a.calib_reset_state, "--calib-reset-state"),
        (a.adaround, "--adaround"),
    ];
    if let Some((_, flag)) = static_only.iter().find(|(given, _)| *given) {
        return Err(CliError::Invalid(format!("{flag} applies to --mode static only, not --mode {mode}")));
    }
    if a.output.extension().and_then(|e| e.to_str()) != Some("onnx") {
        return Err(CliError::Invalid(format!(
            "{}: --mode {mode} writes an ONNX model (int8 weights, float activations), which has no .mq form \
             (the device runtime computes in int8): name the output *.onnx",
            a.output.display()
        )));
    }
    let src = load(&a.model, a)?;
    let mut float = src.graph.clone();
    let at = |e| CliError::convert(&a.model, e);
    microquant::ptq::prepare(&mut float).map_err(at)?;
    let options = HybridOptions { per_channel: !a.per_tensor };
    let wo = if a.mode == Mode::Dynamic {
        microquant::ptq::quantize_dynamic(&float, &options)
    } else {
        microquant::ptq::quantize_weight_only(&float, &options)
    }
    .map_err(at)?;
    let onnx = microquant::onnx::export_hybrid(
        &wo,
        &QdqExportOptions {
            opset: 17,
            inputs: src.inputs.clone(),
            outputs: src.outputs.clone(),
            graph_name: a.model.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        },
    )
    .map_err(|source| CliError::Export { what: "ONNX export", source })?;
    std::fs::write(&a.output, &onnx).map_err(|e| CliError::io(&a.output, e))?;
    let report = match &a.calib[..] {
        [_, ..] => {
            let samples = CalibSource::open(&a.calib, &src.inputs, a.preprocess.as_ref())?
                .read_all()
                .map_err(CliError::Source)?;
            let labels = read_labels(a.labels.as_deref(), samples.len())?;
            Some(microquant::ptq::evaluate_hybrid(&float, &wo, &samples, labels.as_deref(), &mut |_| {}).map_err(at)?)
        }
        [] if a.labels.is_some() || a.report.is_some() => {
            return Err(CliError::Invalid(
                "--labels and --report need samples to measure the model on: --calib samples.npy".into(),
            ));
        }
        [] => None,
    };
    if let (Some(p), Some(r)) = (&a.report, &report) {
        std::fs::write(p, r.to_json()).map_err(|e| CliError::io(p, e))?;
    }
    let (fb, qb) = (float.constant_totals().bytes, wo.graph.constant_totals().bytes);
    writeln!(
        o,
        "{} ({}, {} nodes) -> {}: {mode} int8, {} layers, {} weights; weights {fb} B -> {qb} B, ONNX {} B",
        a.model.display(),
        src.kind,
        src.graph.nodes.len(),
        a.output.display(),
        wo.quantized_nodes.len(),
        if a.per_tensor { "per-tensor" } else { "per-channel" },
        onnx.len()
    )?;
    if let Some(r) = &report {
        write!(o, "{r}")?;
    }
    if let Some(p) = &a.report {
        writeln!(o, "report: {}", p.display())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observer_names() {
        assert_eq!(parse_observer("entropy"), Ok(ObserverKind::Entropy));
        assert_eq!(parse_observer("percentile:99.9"), Ok(ObserverKind::Percentile(99.9)));
        assert!(parse_observer("percentile:10").is_err());
        assert!(parse_observer("max").is_err());
        assert_eq!(parse_layer_observer("a=b=minmax"), Ok(("a=b".into(), ObserverKind::MinMax)));
    }

    #[test]
    fn input_shapes_and_values() {
        assert_eq!(parse_input_shape("x=1x3x320x320"), Ok(("x".into(), vec![1, 3, 320, 320])));
        assert_eq!(parse_input_shape("a=b=2,5"), Ok(("a=b".into(), vec![2, 5])));
        assert!(parse_input_shape("x=1x0").is_err());
        assert!(parse_input_shape("x=1xh").unwrap_err().contains("\"h\""));
        assert!(parse_input_shape("1x3").is_err());
        assert_eq!(parse_input_value("sr=16000"), Ok(("sr".into(), vec![16000.0])));
        assert_eq!(parse_input_value("v=-1,2.5,true"), Ok(("v".into(), vec![-1.0, 2.5, 1.0])));
        assert!(parse_input_value("sr=abc").is_err());
        assert!(parse_input_value("=1").is_err());
    }
}
