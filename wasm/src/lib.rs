//! JavaScript bindings of `microquant` (the npm package `microquant`).
//!
//! A thin facade: every function forwards to the `microquant` crate and turns its typed errors
//! into JS `Error`s whose message is the error's `Display` text (with the op and node, the byte
//! offset, or the expected and actual shapes), and values of the wrong kind into `TypeError`s.
//! Nothing here chooses a quantization parameter.
//!
//! | JS | Rust |
//! |---|---|
//! | `loadModel(bytes, options)` | [`load_model`]: `.mq`, int8 TFLite, float TFLite, float ONNX (`inputShapes`, `inputValues`, `outputNames`) |
//! | `modelInputs(bytes)` | [`model_inputs`]: the declared inputs, dynamic extents with their names |
//! | `FloatModel` | [`FloatModel`]: `run`, `createCalibration`, `quantize`, `calibrateAndQuantize` |
//! | `Calibration` | [`Calibration`]: `calibrate`/`observe` (Promises, progress, `AbortSignal`), `toState`/`merge` |
//! | `QuantizedModel` | [`QuantizedModel`]: `run`, sizes, `report`, `toBytes`, `toCHeader`, `toRustSource`, `toQdqOnnx` |
//! | `QTensor` | [`QTensor`]: quantized data, `dequantize()` |
//!
//! The `converter` feature (default) brings the importers and the quantizer; without it the
//! package is the runtime alone (`.mq` models, `QTensor`, exports).
#![deny(missing_docs)]
#![cfg_attr(not(feature = "converter"), allow(dead_code))]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use js_sys::{Float32Array, Object};
use microquant::quant::{QParams, QuantDType};
use wasm_bindgen::prelude::*;

#[cfg(feature = "converter")]
mod converter;
mod error;
mod export;
mod js;
mod npy;
mod runtime;
mod tensor;

#[cfg(feature = "converter")]
pub use converter::{Calibration, FloatModel, HybridModel, model_inputs};
pub use runtime::QuantizedModel;
pub use tensor::QTensor;

use error::error;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** A model input or output. Shapes are in the source model's layout (NCHW for PyTorch ONNX exports). */
export interface TensorInfo {
  name: string;
  shape: number[];
  dtype: "float32" | "int8" | "int16" | "int32" | "uint8" | "int64" | "unknown";
  /** Quantized tensors: real = scale * (q - zeroPoint). */
  scale?: number;
  zeroPoint?: number;
}

/** Sizes of a quantized model. */
export interface ModelSizes {
  /** The .mq file: what goes into flash with the runtime. */
  modelBytes: number;
  /** Constants in it (weights, biases, multipliers, tables). */
  weightBytes: number;
  /** RAM for activations and scratch. */
  arenaBytes: number;
  /** Multiply-accumulates per inference. */
  macs: number;
  /** Float weights of the source model (models quantized here). */
  floatWeightBytes?: number;
}

/** One op of a .mq model. */
export interface OpInfo {
  index: number;
  op: string;
  name: string;
  macs: number;
  scratchBytes: number;
  inputs: number[];
  outputs: number[];
}

/** One layer of a float model after preparation (what gets quantized). */
export interface LayerInfo {
  index: number;
  name: string;
  op: string;
  output: string;
  shape: number[];
  macs: number;
}

/** The calibrated range of an activation. */
export interface ActivationRange {
  tensor: number;
  name: string;
  observer: string;
  min: number;
  max: number;
}

export type ObserverName = "auto" | "minmax" | "moving-average" | "histogram" | "entropy" | "percentile";

/**
 * Calibration samples, in the model's own layout: the bytes of an .npy file (float32 [N, ...input shape]),
 * a Float32Array holding one or more samples back to back, an array of Float32Arrays (one per sample),
 * or, for models with several inputs, an array of samples each an array of Float32Arrays.
 */
export type Samples = Uint8Array | ArrayBuffer | Float32Array | Float32Array[] | Float32Array[][];

/**
 * Calibration samples as a stream of batches (each batch any form of `Samples`), read one batch at a time so that
 * memory does not grow with the data: an async iterable that starts over when asked again for its iterator, or a
 * function that returns a new async iterable for each pass. An async generator object serves one pass only: enough
 * for min/max, not for the two-pass histogram observers (they reject it with an `Error` saying so).
 */
export type SampleBatches = AsyncIterable<Samples> | (() => AsyncIterable<Samples>);

/** Where a long operation is. */
export interface Progress {
  stage: "calibrate" | "adaround" | "evaluate";
  /** 0-based pass of the calibration (two-pass histograms make 2). */
  pass: number;
  passes: number;
  done: number;
  total: number;
}

/** What AdaRound did (QuantizedModel.adaround): per layer, its output's reconstruction SQNR over the sampled patches with round-to-nearest and with AdaRound. */
export interface AdaRoundReport {
  layers: { name: string; bits: number; patches: number; nearestSqnrDb: number; adaroundSqnrDb: number; flipped: number; weights: number; keptNearest: boolean }[];
  skipped: { name: string; reason: string }[];
}

/** Progress and cancellation of long operations. */
export interface ProgressOptions {
  onProgress?: (p: Progress) => void;
  /** Cancels: the promise rejects with the signal's reason and nothing is changed. */
  signal?: AbortSignal;
  /** Milliseconds of work between yields to the event loop (default 40). */
  chunkMs?: number;
}

export interface ObserveOptions extends ProgressOptions {
  /** In the first pass: keep what the "auto" observers' error pass needs of these samples (at most 256 MB in all), for `replayPass()` (default false). */
  keepForReplay?: boolean;
}

export interface CalibrationOptions extends ProgressOptions {
  /** Observer of every activation (default "auto": per tensor, candidate ranges (min/max, percentiles, entropy, L2) from its statistics, and the model's ranges chosen by the int8 model's output error on the first calibration samples, outlier samples left out; or "minmax", "moving-average", "histogram", "entropy", "percentile"). */
  observer?: ObserverName;
  /** With "auto": how many of the first calibration samples measure the model-level range choice (default 16; 0: each tensor its own least-error range). */
  selectionSamples?: number;
  /** For "percentile" (default 99.999). */
  percentile?: number;
  /** Observer per layer: {layerOrTensorName: observer}. */
  overrides?: Record<string, ObserverName>;
  /** Histogram observers: exact binning over two passes (default true). */
  twoPass?: boolean;
  /** A model with an LSTM keeps its state between runs: by default the samples calibrate in
   * their order as one sequence (consecutive chunks of a stream); true starts each from the
   * zero state. */
  resetState?: boolean;
}

export interface QuantizeOptions extends ProgressOptions {
  /** Weight scales per output channel (default true) or per tensor. */
  perChannel?: boolean;
  /** Activation type of the whole model (default "int8"). */
  activations?: "int8" | "int16";
  /** Layers computed in 16x8 (int16 activations) in an int8 model. */
  int16Layers?: string[];
  /**
   * Bits of the conv, depthwise and fully-connected weights: 8 (default) or 4 (W4A8: symmetric
   * int4 in [-7, 7] as TFLite's, packed two per byte: half the weights' flash). With 4 every such
   * layer gets 4-bit weights, the first and the last included (transposed convs and 16x8 layers
   * keep 8); another value throws a RangeError.
   */
  weightBits?: 8 | 4;
  /** Per-layer weight bits over weightBits, e.g. { conv1: 8 } keeps a first conv in 8 bits. */
  layerWeightBits?: Record<string, 8 | 4>;
  /**
   * "static" (default). "weight-only" and "dynamic" make another kind of model (float
   * activations, no .mq): they throw with a pointer to quantizeWeightOnly() / quantizeDynamic().
   */
  mode?: "static" | "dynamic" | "weight-only";
  /** "double": bit-exact with TFLite Micro (default); "single": with the TFLite interpreter. */
  rounding?: "double" | "single";
  /** Data for the per-layer report (calibrateAndQuantize defaults to the calibration samples). */
  evalSamples?: Samples;
  /** One class index per sample (first output's arg-max): adds float and int8 accuracy. */
  labels?: number[] | Int32Array | Uint8Array;
  /** Ignore the scales a QDQ model carries and calibrate every tensor. */
  ignoreQdq?: boolean;
  /** Correct each layer's bias for the mean error its quantized weights add (default true). */
  biasCorrection?: boolean;
  /**
   * Cross-layer equalization before calibration (as the CLI's --cle; calibrateAndQuantize only:
   * quantize() throws, its calibration being done already; or call equalize() and calibrate the
   * copy): true, or { relu6AsRelu: true } to equalize across ReLU6 by replacing it with ReLU,
   * which changes the float model.
   */
  cle?: boolean | { relu6AsRelu?: boolean };
  /**
   * AdaRound the weights (Nagel et al., 2020): each conv, depthwise and fully-connected weight
   * rounded up or down as best reconstructs its layer's output on the calibration samples,
   * instead of to nearest; worth most with weightBits 4. true for the defaults (1000 Adam steps
   * per layer, up to 4096 input patches per layer, seed 0), or some of them. Deterministic given
   * the seed. Progress: stage "adaround", pass 0 the samples, pass 1 the optimization steps.
   */
  adaround?: boolean | { iterations?: number; patches?: number; seed?: number };
  /** The calibration samples for adaround in quantize() (calibrateAndQuantize uses its own). */
  adaroundSamples?: Samples;
  /** Name for the exports (default: the model's). */
  name?: string;
  /** Entries added to (or replacing) the .mq metadata. */
  metadata?: Record<string, string>;
}

/** Options of FloatModel.quantizeWeightOnly and quantizeDynamic (int8 weights, no calibration). */
export interface HybridOptions extends ProgressOptions {
  /** Weight scales per output channel (default true) or per tensor. */
  perChannel?: boolean;
  /** Data for the per-layer report against the float model (none: no report). */
  evalSamples?: Samples;
  /** One class index per sample (first output's arg-max): adds float and quantized accuracy. */
  labels?: number[] | Int32Array | Uint8Array;
}

export interface QdqExportOptions {
  /**
   * false (default): the exact form, the int8 layers' integer arithmetic as ONNX ops, so that
   * ONNX Runtime gives this model's outputs bit for bit (`microquant quantize --qdq`). true: plain
   * QDQ (each layer DequantizeLinear -> float op -> QuantizeLinear), the form other QDQ tools and
   * loadModel read back with its scales (`--qdq-portable`).
   */
  portable?: boolean;
}

export interface LoadOptions {
  /** "auto" (default) detects .mq, TFLite and ONNX from the bytes. */
  format?: "auto" | "onnx" | "tflite" | "mq";
  /**
   * ONNX: the shapes of inputs with dynamic extents, in the model's axis order, e.g.
   * `{ images: [1, 3, 320, 320] }` (see modelInputs). Static extents must be given as declared;
   * a dynamic batch is 1 unless given. Shape computations that become constant fold away.
   * Without it, a dynamic extent other than the batch throws an Error whose `input` property
   * names the input.
   */
  inputShapes?: Record<string, number[]>;
  /**
   * ONNX: values of inputs fixed at conversion, e.g. `{ sr: 16000 }` or `{ mask: [1, 0, 1] }`
   * (row-major; booleans as true/false or 1/0): the input becomes a constant and what depends on
   * it folds away. Needed for every non-float input (an Error whose `input` names it otherwise).
   */
  inputValues?: Record<string, number | boolean | number[] | ArrayLike<number>>;
  /**
   * ONNX: the outputs to keep, by name (default: all, in the model's order). Only what they need
   * is converted: the way to leave out an output computed by an op microquant does not run (a
   * recurrent model's returned state: the int8 model keeps that state itself, see
   * `Model.resetState`).
   */
  outputNames?: string[];
  /** The file name: the .mq metadata's source_file and the exports' identifier. */
  name?: string;
  /** When an int8 TFLite model is compiled (default "double"). */
  rounding?: "double" | "single";
}

export interface IoQuant {
  name: string;
  shape: number[];
  dtype: string;
  /** null for the float inputs and outputs of a weight-only or dynamic model. */
  scale: number | null;
  zeroPoint: number;
  /** With the "auto" observer: the candidate range chosen for this tensor (as LayerReport.choice). */
  choice?: string;
  /** With the "auto" observer: why (as LayerReport.why). */
  why?: string;
}

/** One layer of the report: its int8 output against the float one, on the evaluation samples. */
export interface LayerReport {
  index: number;
  name: string;
  op: string;
  output: string;
  /** "f32" in a weight-only or dynamic model (float activations, no scale). */
  dtype: "i8" | "i16" | "f32";
  scale: number | null;
  zeroPoint: number;
  /** How the output parameters were chosen: an observer, "off-ties" (the observer's range widened by a step off rounding ties), "fixed", "same-as-input", "carried" or "float". */
  qparams: string;
  observer: string;
  /** With the "auto" observer: the candidate range chosen ("minmax", "robust minmax", "percentile 99.9", ..., "entropy", "mse"). */
  choice?: string;
  /** With the "auto" observer: why, e.g. "least mean squared error over 97 samples (3 outlier samples left out); minmax 3.1 dB worse". */
  why?: string;
  range: [number, number];
  weightScales: { min: number; max: number; count: number } | null;
  /** Bits of the layer's quantized weights (8, or 4 with QuantizeOptions.weightBits); null without weights. */
  weightBits: number | null;
  /** 10 log10(sum f^2 / sum (f - q)^2); null when identical. */
  sqnrDb: number | null;
  maxAbsError: number;
  elements: number;
}

/** The per-layer quantization report (the same fields as `microquant quantize --report`, camelCase). */
export interface Report {
  model: {
    mode: string;
    samples: number;
    top1Agreement: number | null;
    floatAccuracy: number | null;
    int8Accuracy: number | null;
    outputSqnrDb: number | null;
    floatWeightBytes: number;
    int8WeightBytes: number;
    modelBytes: number;
    arenaBytes: number;
    macs: number;
    /** With the "auto" observer: the model-level range choice (each policy's output SQNR on the
     * kept calibration samples; the winner's ranges were taken). */
    rangeChoice?: {
      chosen: string;
      why: string;
      samples: number;
      scores: { policy: string; sqnrDb: number | null; samples: number }[];
    };
  };
  inputs: IoQuant[];
  outputs: IoQuant[];
  layers: LayerReport[];
}
"#;

fn int8_params(scale: f32, zero_point: i32) -> Result<QParams, JsError> {
    QParams::new(scale, zero_point, QuantDType::Int8).map_err(|e| JsError::new(&e.to_string()))
}

/// Quantizes float values to int8 as ONNX `QuantizeLinear` does:
/// `saturate(round_half_even(x / scale) + zeroPoint)`.
///
/// Errors if `scale` is not finite and positive, `zero_point` is outside [-128, 127], or `x`
/// holds NaN or ±Infinity. (The JS export, `quantizeLinear`, also checks that `x` is float
/// data.)
pub fn quantize_linear(x: &[f32], scale: f32, zero_point: i32) -> Result<Vec<i8>, JsError> {
    let p = int8_params(scale, zero_point)?;
    let mut q = vec![0i8; x.len()];
    p.quantize_i8(x, &mut q).map_err(|e| JsError::new(&e.to_string()))?;
    Ok(q)
}

/// Dequantizes int8 values: `(q - zeroPoint) * scale`.
#[wasm_bindgen(js_name = dequantizeLinear)]
pub fn dequantize_linear(q: &[i8], scale: f32, zero_point: i32) -> Result<Vec<f32>, JsError> {
    let p = int8_params(scale, zero_point)?;
    let mut out = vec![0f32; q.len()];
    p.dequantize_i8(q, &mut out).map_err(|e| JsError::new(&e.to_string()))?;
    Ok(out)
}

/// `quantizeLinear(x, scale, zeroPoint)`: ONNX `QuantizeLinear` to int8 (`Int8Array`). `x` must
/// be float data: a `QTensor` or an integer array is a `TypeError`.
#[wasm_bindgen(js_name = quantizeLinear)]
pub fn quantize_linear_js(
    #[wasm_bindgen(unchecked_param_type = "Float32Array | number[]")] x: JsValue,
    scale: f32,
    #[wasm_bindgen(js_name = zeroPoint)] zero_point: i32,
) -> Result<js_sys::Int8Array, JsValue> {
    let values = tensor::float_array(&x, "x")?;
    let q = quantize_linear(&values, scale, zero_point).map_err(JsValue::from)?;
    Ok(js_sys::Int8Array::from(q.as_slice()))
}

/// The package version (the crate version).
#[wasm_bindgen]
pub fn version() -> String {
    String::from(env!("CARGO_PKG_VERSION"))
}

/// True if this build has the converter (importers, calibration, quantization); false for the
/// runtime-only build.
#[wasm_bindgen(js_name = hasConverter)]
pub fn has_converter() -> bool {
    cfg!(feature = "converter")
}

/// Reads an `.npy` file: `{shape, dtype, data}` with `data` as a `Float32Array` (float32,
/// float64 and integer arrays are converted). Throws an `Error` with the byte offset of what is
/// wrong.
#[wasm_bindgen(js_name = parseNpy, unchecked_return_type = "{ shape: number[]; dtype: string; data: Float32Array }")]
pub fn parse_npy(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
) -> Result<Object, JsValue> {
    let b = js::bytes(&bytes, "bytes")?;
    let a = npy::parse(&b, ".npy").map_err(error)?;
    let o = Object::new();
    js::set(&o, "shape", js::usize_array(&a.shape));
    js::set(&o, "dtype", a.descr.as_str());
    js::set(&o, "data", Float32Array::from(a.data.as_slice()));
    Ok(o)
}

/// What a file is, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Mq,
    Tflite,
    Onnx,
}

fn detect(bytes: &[u8], requested: Option<&str>) -> Result<Format, JsValue> {
    match requested {
        Some("mq") => return Ok(Format::Mq),
        Some("tflite") => return Ok(Format::Tflite),
        Some("onnx") => return Ok(Format::Onnx),
        None | Some("auto") => {}
        Some(other) => {
            return Err(error::range_error(format!(
                "options.format must be \"auto\", \"onnx\", \"tflite\" or \"mq\", got {other:?}"
            )));
        }
    }
    if bytes.starts_with(&microquant::model::MAGIC) {
        return Ok(Format::Mq);
    }
    if bytes.get(4..8) == Some(b"TFL3".as_slice()) {
        return Ok(Format::Tflite);
    }
    if npy::is_npy(bytes) {
        return Err(error("this is an .npy file (data), not a model"));
    }
    if bytes.is_empty() {
        return Err(error("the model file is empty"));
    }
    Ok(Format::Onnx)
}

/// Loads a model from its bytes: a `.mq` file or an int8 TFLite model (a `QuantizedModel`), or
/// a float ONNX or TFLite model (a `FloatModel`). A QDQ ONNX model (quantized elsewhere) is a
/// `FloatModel` whose `carriesQuantization` is true: `quantize` keeps the scales and zero points
/// it carries (and calibrates only the tensors without them). `options`: `format`
/// (`"auto"` default, `"onnx"`, `"tflite"`, `"mq"`), `name` (for exports), `rounding`
/// (`"double"` default or `"single"`, when an int8 TFLite model is compiled). Throws an
/// `Error` that names the problem: the unsupported op with its node, the byte offset of
/// damage, the shape that does not fit. ONNX models: `inputShapes` (`{name: [extents]}`) fixes
/// dynamic input extents, `inputValues` (`{name: value or [values]}`) fixes inputs at
/// conversion (every non-float input needs one), `outputNames` (`[names]`) keeps those outputs
/// only; an error about an input (a dynamic extent
/// left unspecified, a missing value) carries its name in `error.input` (see `modelInputs`).
#[wasm_bindgen(js_name = loadModel, unchecked_return_type = "FloatModel | QuantizedModel")]
pub fn load_model(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "LoadOptions")] options: Option<JsValue>,
) -> Result<JsValue, JsValue> {
    let options = options.unwrap_or(JsValue::UNDEFINED);
    let options = js::options(&options, "options")?;
    let b = js::bytes(&bytes, "the model")?;
    let name = js::opt_string(&options, "name")?.unwrap_or_else(|| String::from("model"));
    let format = detect(&b, js::opt_string(&options, "format")?.as_deref())?;
    match format {
        Format::Mq => Ok(QuantizedModel { inner: runtime::Compiled::new(b, "mq", name, None)? }.into()),
        #[cfg(feature = "converter")]
        Format::Tflite | Format::Onnx => loaders::load(b, format, name, &options),
        #[cfg(not(feature = "converter"))]
        Format::Tflite | Format::Onnx => Err(error(format!(
            "this is the runtime-only build of microquant: it loads .mq models only (this file looks like {})",
            if format == Format::Tflite { "a TFLite model" } else { "an ONNX model" }
        ))),
    }
}

#[cfg(feature = "converter")]
mod loaders {
    use super::*;
    use crate::converter::{FloatGraph, FloatModel, crc32, is_quantized, metadata};
    use crate::error::Context;
    use crate::runtime::{Compiled, Io};
    use alloc::rc::Rc;
    use microquant::compile::{CompileOptions, compile};
    use microquant::kernels::Rounding;

    fn rounding(options: &JsValue) -> Result<Rounding, JsValue> {
        match js::opt_string(options, "rounding")?.as_deref() {
            None | Some("double") => Ok(Rounding::Double),
            Some("single") => Ok(Rounding::Single),
            Some(other) => {
                Err(error::range_error(format!("options.rounding must be \"double\" or \"single\", got {other:?}")))
            }
        }
    }

    /// A quantized graph (int8 TFLite, QDQ ONNX) compiled into a `QuantizedModel`.
    fn compiled(
        graph: microquant::graph::Graph,
        source: &'static str,
        name: String,
        bytes: &[u8],
        options: &JsValue,
        layouts: Option<(Vec<Io>, Vec<Io>)>,
    ) -> Result<JsValue, JsValue> {
        let meta = metadata(
            options,
            vec![
                crate::converter::producer("import"),
                (String::from("source_file"), name.clone()),
                (String::from("source_crc32"), format!("{:08x}", crc32(bytes))),
            ],
        )?;
        let c = compile(&graph, &CompileOptions { rounding: rounding(options)?, metadata: meta, ..Default::default() })
            .ctx("compiling the quantized model")?;
        let mut m = Compiled::new(c.bytes, source, name, layouts)?;
        let (inputs, outputs) = (crate::converter::io_infos(&m.inputs), crate::converter::io_infos(&m.outputs));
        m.extras = Some(crate::runtime::Extras { graph, report: None, inputs, outputs, adaround: None });
        Ok(QuantizedModel { inner: m }.into())
    }

    fn io_of(infos: &[microquant::onnx::IoInfo]) -> Vec<Io> {
        infos.iter().map(|i| Io { name: i.name.clone(), shape: i.model_shape.clone(), perm: i.perm.clone() }).collect()
    }

    pub(super) fn load(b: Vec<u8>, format: Format, name: String, options: &JsValue) -> Result<JsValue, JsValue> {
        match format {
            Format::Tflite => {
                for key in ["inputShapes", "inputValues", "outputNames"] {
                    let v = js::get(options, key);
                    if !(v.is_undefined() || v.is_null()) {
                        return Err(error(format!(
                            "options.{key} applies to ONNX models (a TFLite model's inputs and outputs are static)"
                        )));
                    }
                }
                let g = microquant::tflite::import(&b).ctx("reading the TFLite model")?;
                if is_quantized(&g) {
                    return compiled(g, "tflite", name, &b, options, None);
                }
                let fg = FloatGraph::new(g, None, "tflite", name)?;
                Ok(FloatModel { inner: Rc::new(fg) }.into())
            }
            _ => {
                let import_options = crate::converter::onnx_import_options(options)?;
                let imported = microquant::onnx::import_with_options(&b, &import_options).map_err(|e| {
                    // Bytes that do not decode as ONNX may be another format altogether.
                    let hint = if microquant::onnx::model_inputs(&b).is_err() {
                        " (microquant reads .mq, TFLite and ONNX models: this file has neither the .mq magic MQNT nor TFLite's TFL3 at byte 4, and is not a valid ONNX file)"
                    } else {
                        ""
                    };
                    let err = js_sys::Error::new(&format!("reading the ONNX model: {e}{hint}"));
                    // An error about a model input (a dynamic extent without a shape, a
                    // non-float input without a value): `error.input` names it.
                    if let Some(input) = e.tensor_name() {
                        js::set(&err, "input", input);
                    }
                    JsValue::from(err)
                })?;
                let io = (io_of(&imported.inputs), io_of(&imported.outputs));
                let fg = FloatGraph::new(imported.graph, Some(io), "onnx", name)?;
                Ok(FloatModel { inner: Rc::new(fg) }.into())
            }
        }
    }
}
