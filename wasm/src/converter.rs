//! The converter in JS: `FloatModel` (a float ONNX or TFLite model), `Calibration` (observer
//! statistics, chunked and cancellable, mergeable across workers) and quantization into a
//! `QuantizedModel` with its per-layer report. Every step is `microquant::ptq` /
//! `microquant::compile`: nothing here chooses a number.

use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;

use js_sys::{Array, Float32Array, Function, Object, Promise, Uint8Array};
use microquant::compile::{CompileOptions, compile};
use microquant::float::FloatExecutor;
use microquant::graph::{DType as GDType, Graph};
use microquant::kernels::Rounding;
use microquant::ptq::{
    ActivationType, CalibrationOptions, Calibrator, HybridMode, ObserverKind, QuantizeOptions, Report,
    evaluate_with_progress, prepare, quantize,
};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::error::{Context, abort_error, error, range_error, type_error};
use crate::js::{self, describe, get, set, shape_text, usize_array};
use crate::runtime::{Compiled, Extras, Io, QuantizedModel, inverse, transpose};
use crate::tensor::float_array;

// ---- the event loop ----

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, timeout: i32) -> JsValue;
}

/// `future_to_promise` of `f`, boxed: one copy of the executor glue for every promise-returning
/// method (instead of one per future type).
fn promise(f: impl core::future::Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    let f: core::pin::Pin<alloc::boxed::Box<dyn core::future::Future<Output = Result<JsValue, JsValue>>>> =
        alloc::boxed::Box::pin(f);
    future_to_promise(f)
}

/// Lets the event loop run (a `setTimeout(0)` macrotask): pending messages, clicks and
/// `AbortSignal` events are handled before the next chunk of work.
pub(crate) async fn yield_now() {
    let p = Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, 0);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

pub(crate) fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Progress callback, abort signal and chunk length of a long operation.
pub(crate) struct Control {
    progress: Option<Function>,
    signal: JsValue,
    chunk_ms: f64,
    last_yield: f64,
}

impl Control {
    pub(crate) fn from_options(options: &JsValue) -> Result<Self, JsValue> {
        let progress = js::opt_function(options, "onProgress")?;
        let signal = get(options, "signal");
        if !(signal.is_undefined() || signal.is_null()) && get(&signal, "aborted").as_bool().is_none() {
            return Err(type_error(format!("options.signal must be an AbortSignal, got {}", describe(&signal))));
        }
        let chunk_ms = js::opt_number(options, "chunkMs")?.unwrap_or(40.0);
        if chunk_ms < 0.0 {
            return Err(range_error(format!("options.chunkMs must be >= 0, got {chunk_ms}")));
        }
        Ok(Self { progress, signal, chunk_ms, last_yield: now_ms() })
    }

    /// The chunk length (`options.chunkMs`).
    pub(crate) fn chunk_ms(&self) -> f64 {
        self.chunk_ms
    }

    /// Rejects with the signal's reason (or an `AbortError`) once it is aborted.
    pub(crate) fn check_abort(&self) -> Result<(), JsValue> {
        if get(&self.signal, "aborted").as_bool() == Some(true) {
            let reason = get(&self.signal, "reason");
            return Err(if reason.is_undefined() { abort_error() } else { reason });
        }
        Ok(())
    }

    /// Calls `onProgress({stage, pass, passes, done, total})`.
    pub(crate) fn report(&self, stage: &str, pass: u32, passes: u32, done: usize, total: usize) -> Result<(), JsValue> {
        if let Some(f) = &self.progress {
            let o = Object::new();
            set(&o, "stage", stage);
            set(&o, "pass", pass);
            set(&o, "passes", passes);
            set(&o, "done", done as f64);
            set(&o, "total", total as f64);
            f.call1(&JsValue::NULL, &o)?;
        }
        Ok(())
    }

    /// After a unit of work: if the chunk time is up (or `force`), report progress, yield to the
    /// event loop and check the signal.
    pub(crate) async fn tick(
        &mut self,
        force: bool,
        stage: &str,
        pass: u32,
        passes: u32,
        done: usize,
        total: usize,
    ) -> Result<(), JsValue> {
        if force || now_ms() - self.last_yield >= self.chunk_ms {
            self.report(stage, pass, passes, done, total)?;
            yield_now().await;
            self.check_abort()?;
            self.last_yield = now_ms();
        }
        Ok(())
    }
}

// ---- float models ----

/// A float model and how callers lay out its data.
pub(crate) struct FloatGraph {
    /// The prepared float graph (optimized, ready for calibration).
    pub(crate) graph: Graph,
    pub(crate) inputs: Vec<Io>,
    pub(crate) outputs: Vec<Io>,
    pub(crate) format: &'static str,
    pub(crate) name: String,
    /// Bytes of float constants before preparation.
    pub(crate) source_weight_bytes: usize,
}

/// A float model (ONNX or TFLite) ready to calibrate, quantize and run in float.
#[wasm_bindgen]
pub struct FloatModel {
    pub(crate) inner: Rc<FloatGraph>,
}

fn identity_io(g: &Graph, ids: &[microquant::graph::TensorId]) -> Vec<Io> {
    ids.iter()
        .map(|&t| {
            let tensor = g.tensor(t);
            let shape = tensor.map(|t| t.shape.clone()).unwrap_or_default();
            Io { name: tensor.map(|t| t.name.clone()).unwrap_or_default(), perm: (0..shape.len()).collect(), shape }
        })
        .collect()
}

/// `Io`s as the ONNX importer's `IoInfo`s.
pub(crate) fn io_infos(io: &[Io]) -> Vec<microquant::onnx::IoInfo> {
    io.iter()
        .map(|i| microquant::onnx::IoInfo { name: i.name.clone(), model_shape: i.shape.clone(), perm: i.perm.clone() })
        .collect()
}

pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(bytes)
}

impl FloatGraph {
    /// A float graph from the ONNX importer (IO layouts from its `IoInfo`) or the TFLite one.
    pub(crate) fn new(
        mut graph: Graph,
        io: Option<(Vec<Io>, Vec<Io>)>,
        format: &'static str,
        name: String,
    ) -> Result<Self, JsValue> {
        let source_weight_bytes = graph.constant_totals().bytes;
        let (inputs, outputs) =
            io.unwrap_or_else(|| (identity_io(&graph, &graph.inputs), identity_io(&graph, &graph.outputs)));
        prepare(&mut graph).ctx("preparing the model for quantization")?;
        FloatExecutor::new(&graph).ctx("the float model cannot run")?;
        Ok(Self { graph, inputs, outputs, format, name, source_weight_bytes })
    }

    /// Runs `ex` (this model's float executor, or a hybrid form's): `inputs` is a
    /// `Float32Array` (one input) or an array of them, in the model's layout; one
    /// `Float32Array` per output. A `QTensor` is a `TypeError` (call `dequantize()` first).
    pub(crate) fn run_with(&self, ex: &FloatExecutor<'_>, inputs: &JsValue) -> Result<Array, JsValue> {
        let g = self;
        let list = crate::runtime::input_list(inputs, g.inputs.len())?;
        let mut data = Vec::with_capacity(list.len());
        for (k, v) in list.iter().enumerate() {
            let io = &g.inputs[k];
            let x = float_array(v, &format!("input {k} '{}'", io.name))?;
            let n: usize = io.shape.iter().product();
            if x.len() != n {
                return Err(error(format!(
                    "input {k} '{}' has shape {} ({n} values), got {} values",
                    io.name,
                    shape_text(&io.shape),
                    x.len()
                )));
            }
            data.push(g.to_graph(k, x));
        }
        let refs: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
        let outs = ex.run(&refs).ctx("running the float model")?;
        Ok(outs
            .into_iter()
            .zip(&g.outputs)
            .map(|(y, io)| {
                let y = if io.perm.iter().enumerate().all(|(i, &p)| i == p) {
                    y
                } else {
                    let graph_shape: Vec<usize> =
                        io.perm.iter().map(|&p| io.shape.get(p).copied().unwrap_or(1)).collect();
                    transpose(&y, &graph_shape, &inverse(&io.perm))
                };
                JsValue::from(Float32Array::from(y.as_slice()))
            })
            .collect())
    }

    /// The importer's `IoInfo`s (what the QDQ export lays out its inputs and outputs by).
    pub(crate) fn io_infos(&self, outputs: bool) -> Vec<microquant::onnx::IoInfo> {
        io_infos(if outputs { &self.outputs } else { &self.inputs })
    }

    fn per_sample(&self) -> Vec<usize> {
        self.inputs.iter().map(|io| io.shape.iter().product()).collect()
    }

    /// One input's data in the graph's layout.
    fn to_graph(&self, k: usize, data: Vec<f32>) -> Vec<f32> {
        match self.inputs.get(k) {
            Some(io) if !io.perm.iter().enumerate().all(|(i, &p)| i == p) => transpose(&data, &io.shape, &io.perm),
            _ => data,
        }
    }

    /// Samples from JS: `.npy` bytes, a `Float32Array` holding one or more samples back to back,
    /// an array of `Float32Array`s (one sample each), or for several inputs an array of arrays.
    /// Data is in the source model's layout; the result is in the graph's.
    pub(crate) fn samples(&self, v: &JsValue, what: &str) -> Result<Vec<Vec<Vec<f32>>>, JsValue> {
        let per = self.per_sample();
        let n_in = per.len();
        let first = self.inputs.first().map(|io| (io.name.clone(), io.shape.clone())).unwrap_or_default();
        let split = |data: Vec<f32>, origin: &str| -> Result<Vec<Vec<Vec<f32>>>, JsValue> {
            if n_in != 1 {
                return Err(type_error(format!(
                    "{what}: the model has {n_in} inputs; pass an array of samples, each an array of {n_in} Float32Arrays"
                )));
            }
            let p = per[0];
            if p == 0 || !data.len().is_multiple_of(p) || data.is_empty() {
                return Err(error(format!(
                    "{what}: {origin} has {} values, not a whole number of samples of input '{}' (shape {}, {p} values each)",
                    data.len(),
                    first.0,
                    shape_text(&first.1)
                )));
            }
            Ok(data.chunks_exact(p).map(|c| vec![self.to_graph(0, c.to_vec())]).collect())
        };
        if let Some(b) = v.dyn_ref::<Uint8Array>() {
            let bytes = b.to_vec();
            if !crate::npy::is_npy(&bytes) {
                return Err(type_error(format!(
                    "{what}: a Uint8Array must hold an .npy file (it does not start with \\x93NUMPY); pass float samples as Float32Array"
                )));
            }
            let a = crate::npy::parse(&bytes, "samples .npy").map_err(error)?;
            let p = per.first().copied().unwrap_or(0);
            let tail: usize = a.shape.iter().skip(1).product();
            let whole: usize = a.shape.iter().product();
            if n_in == 1 && !(tail == p || whole == p) {
                return Err(error(format!(
                    "{what}: the .npy has shape {} ({}), input '{}' has shape {}: expected [N, ...] with {p} values per sample",
                    shape_text(&a.shape),
                    a.descr,
                    first.0,
                    shape_text(&first.1)
                )));
            }
            return split(a.data, "the .npy");
        }
        if v.dyn_ref::<js_sys::ArrayBuffer>().is_some() {
            return self.samples(&Uint8Array::new(v).into(), what);
        }
        if Array::is_array(v) {
            let arr = Array::from(v);
            if arr.length() == 0 {
                return Err(error(format!("{what}: no samples")));
            }
            let mut out = Vec::with_capacity(arr.length() as usize);
            for (i, s) in arr.iter().enumerate() {
                let inputs: Vec<JsValue> = if n_in > 1 {
                    if !Array::is_array(&s) {
                        return Err(type_error(format!(
                            "{what}[{i}] must be an array of {n_in} Float32Arrays (one per input), got {}",
                            describe(&s)
                        )));
                    }
                    Array::from(&s).iter().collect()
                } else if Array::is_array(&s) && Array::from(&s).iter().all(|x| x.is_object()) {
                    Array::from(&s).iter().collect()
                } else {
                    vec![s]
                };
                if inputs.len() != n_in {
                    return Err(error(format!("{what}[{i}] has {} inputs, the model has {n_in}", inputs.len())));
                }
                let mut sample = Vec::with_capacity(n_in);
                for (k, x) in inputs.iter().enumerate() {
                    let data = float_array(x, &format!("{what}[{i}]"))?;
                    let io = &self.inputs[k];
                    if data.len() != per[k] {
                        return Err(error(format!(
                            "{what}[{i}]: input {k} '{}' has shape {} ({} values), got {} values",
                            io.name,
                            shape_text(&io.shape),
                            per[k],
                            data.len()
                        )));
                    }
                    sample.push(self.to_graph(k, data));
                }
                out.push(sample);
            }
            return Ok(out);
        }
        let data = float_array(v, what)?;
        split(data, "the Float32Array")
    }
}

/// The float inputs or outputs of a model as `TensorInfo`s.
pub(crate) fn io_info_list(ios: &[Io]) -> Array {
    ios.iter().map(|io| JsValue::from(io_info(io, "float32"))).collect()
}

fn io_info(io: &Io, dtype: &str) -> Object {
    let o = Object::new();
    set(&o, "name", io.name.as_str());
    set(&o, "shape", usize_array(&io.shape));
    set(&o, "dtype", dtype);
    o
}

#[wasm_bindgen]
impl FloatModel {
    /// `"onnx"` or `"tflite"`.
    #[wasm_bindgen(getter)]
    pub fn format(&self) -> String {
        String::from(self.inner.format)
    }

    /// The model's name (used for exports).
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.inner.name.clone()
    }

    /// Inputs: `{name, shape, dtype: "float32"}` each, in the model's own layout.
    #[wasm_bindgen(getter, unchecked_return_type = "TensorInfo[]")]
    pub fn inputs(&self) -> Array {
        io_info_list(&self.inner.inputs)
    }

    /// Outputs, as `inputs`.
    #[wasm_bindgen(getter, unchecked_return_type = "TensorInfo[]")]
    pub fn outputs(&self) -> Array {
        io_info_list(&self.inner.outputs)
    }

    /// Multiply-accumulates per inference.
    #[wasm_bindgen(getter)]
    pub fn macs(&self) -> f64 {
        self.inner.graph.total_macs() as f64
    }

    /// True if the model carries quantization parameters (a QDQ ONNX model quantized
    /// elsewhere): `quantize` keeps them (option `ignoreQdq: true` calibrates every tensor).
    #[wasm_bindgen(getter, js_name = carriesQuantization)]
    pub fn carries_quantization(&self) -> bool {
        self.inner.graph.tensors.iter().any(|t| t.quant.is_some() && t.dtype == GDType::F32)
    }

    /// Bytes of float weights (constants) in the source model.
    #[wasm_bindgen(getter, js_name = weightBytes)]
    pub fn weight_bytes(&self) -> usize {
        self.inner.source_weight_bytes
    }

    /// The layers after preparation (what gets quantized): `{index, name, op, output, shape}`.
    #[wasm_bindgen(getter, unchecked_return_type = "LayerInfo[]")]
    pub fn layers(&self) -> Array {
        let g = &self.inner.graph;
        g.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let o = Object::new();
                set(&o, "index", i as u32);
                set(&o, "name", n.name.as_str());
                set(&o, "op", n.op.name());
                let out = n.output(0).and_then(|t| g.tensor(t));
                set(&o, "output", out.map(|t| t.name.as_str()).unwrap_or(""));
                set(&o, "shape", usize_array(&out.map(|t| t.shape.clone()).unwrap_or_default()));
                set(&o, "macs", g.node_macs(i) as f64);
                JsValue::from(o)
            })
            .collect()
    }

    /// Runs the float model: `inputs` is a `Float32Array` (one input) or an array of them, in
    /// the model's layout; returns one `Float32Array` per output. A `QTensor` is a `TypeError`
    /// (call `dequantize()` first).
    #[wasm_bindgen(unchecked_return_type = "Float32Array[]")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | Float32Array[]")] inputs: JsValue,
    ) -> Result<Array, JsValue> {
        let ex = FloatExecutor::new(&self.inner.graph).ctx("the float model cannot run")?;
        self.inner.run_with(&ex, &inputs)
    }

    /// A calibration (one observer per activation) with `options`: `observer` (`"minmax"`
    /// (default), `"moving-average"`, `"histogram"`, `"entropy"`, `"percentile"`), `percentile`
    /// (default 99.999), `overrides` (`{layerName: observer}`: observer per layer), `twoPass`
    /// (histogram observers: exact binning in two passes, default true).
    #[wasm_bindgen(js_name = createCalibration)]
    pub fn create_calibration(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "CalibrationOptions")] options: Option<JsValue>,
    ) -> Result<Calibration, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let options = js::options(&options, "calibration options")?;
        let opts = calibration_options(&options)?;
        let cal = Calibrator::new(&self.inner.graph, &opts).ctx("calibration options")?;
        let state = CalState { bytes: None, pass: 0, passes: cal.passes(), samples: 0, busy: false };
        Ok(Calibration { model: self.inner.clone(), options: opts, state: Rc::new(RefCell::new(state)) })
    }

    /// Quantizes with a complete calibration: a `Promise` of a `QuantizedModel`. `options`:
    /// `perChannel` (default true), `activations` (`"int8"` default, `"int16"` for the whole
    /// model), `int16Layers` (layer names computed in 16x8), `mode` (`"static"`; `"weight-only"`
    /// is `quantizeWeightOnly()`, `"dynamic"` is `quantizeDynamic()`: other kinds of model),
    /// `rounding`
    /// (`"double"`: TFLite Micro, default; `"single"`: the TFLite interpreter), `evalSamples`
    /// and `labels` (the per-layer report's data; without them the report has parameters but
    /// no errors), `name`, `metadata` (`{key: value}` added to the `.mq`), `onProgress`,
    /// `signal`.
    #[wasm_bindgen(unchecked_return_type = "Promise<QuantizedModel>")]
    pub fn quantize(
        &self,
        calibration: &Calibration,
        #[wasm_bindgen(unchecked_optional_param_type = "QuantizeOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let model = self.inner.clone();
        let cal_opts = calibration.options.clone();
        let state = calibration.state.clone();
        let same = Rc::ptr_eq(&self.inner, &calibration.model);
        promise(async move {
            if !same {
                return Err(error("this calibration belongs to another model"));
            }
            let options = js::options(&options, "quantize options")?;
            let mut ctl = Control::from_options(&options)?;
            let bytes = {
                let s = state.borrow();
                if s.busy {
                    return Err(error("the calibration is still running"));
                }
                if s.pass < s.passes {
                    return Err(error(format!(
                        "the calibration is not complete (pass {} of {}): run calibrate() first",
                        s.pass + 1,
                        s.passes
                    )));
                }
                s.bytes.clone()
            };
            let q = quantize_task(&model, &cal_opts, bytes.as_deref(), &options, &mut ctl).await?;
            Ok(JsValue::from(q))
        })
    }

    /// Weight-only quantization: int8 weights (symmetric, per channel unless `perChannel: false`,
    /// as ONNX Runtime's quantizer makes them), float compute, no calibration. A `Promise` of a
    /// `HybridModel` (`mode` `"weight-only"`), which runs in float and exports as ONNX (no `.mq`:
    /// the device runtime computes in int8). `options`: `perChannel`, `evalSamples` and `labels`
    /// (the per-layer report against the float model), `onProgress`, `signal`.
    #[wasm_bindgen(js_name = quantizeWeightOnly, unchecked_return_type = "Promise<HybridModel>")]
    pub fn quantize_weight_only(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "HybridOptions")] options: Option<JsValue>,
    ) -> Promise {
        self.hybrid(HybridMode::WeightOnly, options)
    }

    /// Dynamic quantization, as ONNX Runtime's `quantize_dynamic`: the weights of
    /// `quantizeWeightOnly()`, and each quantized layer quantizes its input per call (uint8,
    /// `DynamicQuantizeLinear`) and sums in integers; no calibration. A `Promise` of a
    /// `HybridModel` (`mode` `"dynamic"`), exported as ONNX (no `.mq`). Options as
    /// `quantizeWeightOnly()`.
    #[wasm_bindgen(js_name = quantizeDynamic, unchecked_return_type = "Promise<HybridModel>")]
    pub fn quantize_dynamic(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "HybridOptions")] options: Option<JsValue>,
    ) -> Promise {
        self.hybrid(HybridMode::Dynamic, options)
    }

    /// Calibrates on `samples` (every pass), then quantizes: a `Promise` of a `QuantizedModel`.
    /// `options` are those of `createCalibration` and `quantize`; the report evaluates on
    /// `evalSamples` if given, else on the calibration samples. `onProgress` receives
    /// `{stage: "calibrate" | "evaluate", pass, passes, done, total}`.
    #[wasm_bindgen(js_name = calibrateAndQuantize, unchecked_return_type = "Promise<QuantizedModel>")]
    pub fn calibrate_and_quantize(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Samples")] samples: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CalibrationOptions & QuantizeOptions")] options: Option<
            JsValue,
        >,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let model = self.inner.clone();
        promise(async move {
            let options = js::options(&options, "options")?;
            let opts = calibration_options(&options)?;
            let mut ctl = Control::from_options(&options)?;
            let data = model.samples(&samples, "samples")?;
            let state = calibrate_task(&model, &opts, None, &data, true, &mut ctl).await?;
            let eval = get(&options, "evalSamples");
            let eval_data = if eval.is_undefined() || eval.is_null() { Some(data) } else { None };
            let q = quantize_with_data(&model, &opts, Some(&state.bytes), &options, &mut ctl, eval_data).await?;
            Ok(JsValue::from(q))
        })
    }
}

// ---- calibration ----

fn observer_kind(name: &str, percentile: Option<f64>, what: &str) -> Result<ObserverKind, JsValue> {
    match ObserverKind::from_name(name) {
        Some(ObserverKind::Percentile(p)) => Ok(ObserverKind::Percentile(percentile.unwrap_or(p))),
        Some(k) => Ok(k),
        None => Err(range_error(format!(
            "{what} must be \"minmax\", \"moving-average\", \"histogram\", \"entropy\" or \"percentile\", got {name:?}"
        ))),
    }
}

pub(crate) fn calibration_options(options: &JsValue) -> Result<CalibrationOptions, JsValue> {
    let percentile = js::opt_number(options, "percentile")?;
    if let Some(p) = percentile
        && !(0.0..=100.0).contains(&p)
    {
        return Err(range_error(format!("options.percentile must be in [0, 100], got {p}")));
    }
    let observer = match js::opt_string(options, "observer")? {
        Some(name) => observer_kind(&name, percentile, "options.observer")?,
        None => ObserverKind::MinMax,
    };
    let mut overrides = Vec::new();
    let o = get(options, "overrides");
    if !(o.is_undefined() || o.is_null()) {
        if !o.is_object() || Array::is_array(&o) {
            return Err(type_error(format!(
                "options.overrides must be an object {{layerName: observer}}, got {}",
                describe(&o)
            )));
        }
        for entry in Object::entries(&Object::from(o)).iter() {
            let pair = Array::from(&entry);
            let key = pair.get(0).as_string().unwrap_or_default();
            let value = pair.get(1);
            let name = value.as_string().ok_or_else(|| {
                type_error(format!("options.overrides[{key:?}] must be an observer name, got {}", describe(&value)))
            })?;
            overrides.push((key.clone(), observer_kind(&name, percentile, &format!("options.overrides[{key:?}]"))?));
        }
    }
    Ok(CalibrationOptions { observer, overrides, two_pass: js::opt_bool(options, "twoPass", true)? })
}

struct CalState {
    /// `Calibrator::to_state` bytes (`None`: nothing observed yet).
    bytes: Option<Vec<u8>>,
    pass: u32,
    passes: u32,
    samples: usize,
    busy: bool,
}

/// The result of a calibration run.
struct Calibrated {
    bytes: Vec<u8>,
    pass: u32,
    passes: u32,
    samples: usize,
}

fn calibrator<'g>(g: &'g Graph, opts: &CalibrationOptions, state: Option<&[u8]>) -> Result<Calibrator<'g>, JsValue> {
    let mut cal = Calibrator::new(g, opts).ctx("calibration options")?;
    if let Some(s) = state {
        cal.load_state(s).ctx("")?;
    }
    Ok(cal)
}

/// Runs `data` through the calibrator: the current pass only, or every remaining pass.
async fn calibrate_task(
    model: &FloatGraph,
    opts: &CalibrationOptions,
    state: Option<&[u8]>,
    data: &[Vec<Vec<f32>>],
    all_passes: bool,
    ctl: &mut Control,
) -> Result<Calibrated, JsValue> {
    ctl.check_abort()?;
    let mut cal = calibrator(&model.graph, opts, state)?;
    if cal.pass() >= cal.passes() {
        return Err(error("the calibration is complete: no pass left to observe"));
    }
    let n = data.len();
    loop {
        let (pass, passes) = (cal.pass(), cal.passes());
        for (i, s) in data.iter().enumerate() {
            let inputs: Vec<&[f32]> = s.iter().map(Vec::as_slice).collect();
            cal.observe(&inputs).ctx(&format!("calibration sample {i}"))?;
            ctl.tick(i + 1 == n, "calibrate", pass, passes, i + 1, n).await?;
        }
        if !all_passes {
            break;
        }
        cal.end_pass().ctx("ending the calibration pass")?;
        if cal.pass() >= cal.passes() {
            break;
        }
    }
    Ok(Calibrated { bytes: cal.to_state(), pass: cal.pass(), passes: cal.passes(), samples: cal.samples() })
}

/// Calibration statistics: one observer per activation of a `FloatModel`. Feed it samples with
/// `calibrate` (every pass) or `observe` + `endPass` (pass by pass); split the data over Web
/// Workers and combine their `toState()` bytes with `merge`.
#[wasm_bindgen]
pub struct Calibration {
    model: Rc<FloatGraph>,
    options: CalibrationOptions,
    state: Rc<RefCell<CalState>>,
}

impl core::fmt::Debug for Calibration {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = self.state.borrow();
        write!(
            f,
            "Calibration({}, pass {} of {}, {} samples)",
            self.options.observer.name(),
            s.pass,
            s.passes,
            s.samples
        )
    }
}

impl core::fmt::Debug for FloatModel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "FloatModel({} {:?}, {} nodes)", self.inner.format, self.inner.name, self.inner.graph.nodes.len())
    }
}

impl FloatModel {
    /// `quantizeWeightOnly()` and `quantizeDynamic()`: a `Promise` of a `HybridModel`.
    fn hybrid(&self, mode: HybridMode, options: Option<JsValue>) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let model = self.inner.clone();
        promise(async move {
            let options = js::options(&options, "options")?;
            let mut ctl = Control::from_options(&options)?;
            let q = crate::hybrid::hybrid_task(model, mode, &options, &mut ctl).await?;
            Ok(JsValue::from(q))
        })
    }
}

impl Calibration {
    fn run(&self, samples: JsValue, options: JsValue, all_passes: bool) -> Promise {
        let model = self.model.clone();
        let opts = self.options.clone();
        let state = self.state.clone();
        promise(async move {
            let bytes = {
                let mut s = state.borrow_mut();
                if s.busy {
                    return Err(error("a calibration is already running on this object"));
                }
                s.busy = true;
                s.bytes.clone()
            };
            let r = async {
                let options = js::options(&options, "options")?;
                let mut ctl = Control::from_options(&options)?;
                let data = model.samples(&samples, "samples")?;
                calibrate_task(&model, &opts, bytes.as_deref(), &data, all_passes, &mut ctl).await
            }
            .await;
            let mut s = state.borrow_mut();
            s.busy = false;
            let c = r?;
            s.bytes = Some(c.bytes);
            s.pass = c.pass;
            s.passes = c.passes;
            s.samples = c.samples;
            Ok(JsValue::UNDEFINED)
        })
    }

    fn with_calibrator<R>(&self, f: impl FnOnce(&mut Calibrator<'_>) -> Result<R, JsValue>) -> Result<R, JsValue> {
        let s = self.state.try_borrow().map_err(|_| error("the calibration is busy"))?;
        if s.busy {
            return Err(error("a calibration is running on this object"));
        }
        let mut cal = calibrator(&self.model.graph, &self.options, s.bytes.as_deref())?;
        drop(s);
        f(&mut cal)
    }

    fn commit(&self, cal: &Calibrator<'_>) {
        let mut s = self.state.borrow_mut();
        s.bytes = Some(cal.to_state());
        s.pass = cal.pass();
        s.passes = cal.passes();
        s.samples = cal.samples();
    }
}

#[wasm_bindgen]
impl Calibration {
    /// The current pass (0-based; `passes` once complete).
    #[wasm_bindgen(getter)]
    pub fn pass(&self) -> u32 {
        self.state.borrow().pass
    }

    /// Passes over the data the observers need (1, or 2 for two-pass histograms).
    #[wasm_bindgen(getter)]
    pub fn passes(&self) -> u32 {
        self.state.borrow().passes
    }

    /// Samples observed in the current pass.
    #[wasm_bindgen(getter)]
    pub fn samples(&self) -> usize {
        self.state.borrow().samples
    }

    /// True once every pass has ended (ready for `FloatModel.quantize`).
    #[wasm_bindgen(getter)]
    pub fn complete(&self) -> bool {
        let s = self.state.borrow();
        s.pass >= s.passes
    }

    /// The default observer's name.
    #[wasm_bindgen(getter)]
    pub fn observer(&self) -> String {
        String::from(self.options.observer.name())
    }

    /// Observes `samples` in every remaining pass (a `Promise`). `samples`: `.npy` bytes, a
    /// `Float32Array` of one or more samples back to back, or an array of samples, in the
    /// model's layout. `options`: `onProgress({stage, pass, passes, done, total})`, `signal`
    /// (an `AbortSignal`: the promise rejects with its reason and the calibration is left as it
    /// was), `chunkMs` (work between yields to the event loop, default 40).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn calibrate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Samples")] samples: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ProgressOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        self.run(samples, options, true)
    }

    /// Observes `samples` in the current pass only (a `Promise`), as `calibrate`; call
    /// `endPass()` when every sample of the pass has been seen (here or in merged states).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn observe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Samples")] samples: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ProgressOptions")] options: Option<JsValue>,
    ) -> Promise {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        self.run(samples, options, false)
    }

    /// Ends the current pass (two-pass histograms fix their ranges from the first pass).
    #[wasm_bindgen(js_name = endPass)]
    pub fn end_pass(&self) -> Result<(), JsValue> {
        self.with_calibrator(|cal| {
            cal.end_pass().ctx("ending the calibration pass")?;
            self.commit(cal);
            Ok(())
        })
    }

    /// The statistics as bytes (transferable to and from workers): pass, sample count and every
    /// observer's state.
    #[wasm_bindgen(js_name = toState)]
    pub fn to_state(&self) -> Result<Uint8Array, JsValue> {
        self.with_calibrator(|cal| Ok(Uint8Array::from(cal.to_state().as_slice())))
    }

    /// Replaces the statistics with `toState()` bytes of a calibration of the same model with
    /// the same options (an `Error` with the byte offset otherwise).
    #[wasm_bindgen(js_name = loadState)]
    pub fn load_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] state: JsValue,
    ) -> Result<(), JsValue> {
        let bytes = js::bytes(&state, "state")?;
        self.with_calibrator(|cal| {
            cal.load_state(&bytes).ctx("")?;
            self.commit(cal);
            Ok(())
        })
    }

    /// Folds in another calibration's statistics (a `Calibration` of the same model and options,
    /// or its `toState()` bytes), e.g. from workers that each observed a share of the samples in
    /// the same pass. Exact: the merged ranges are those of one calibration over all the data.
    pub fn merge(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Calibration | Uint8Array")] other: JsValue,
    ) -> Result<(), JsValue> {
        let bytes = if other.dyn_ref::<Uint8Array>().is_some() || other.dyn_ref::<js_sys::ArrayBuffer>().is_some() {
            js::bytes(&other, "other")?
        } else {
            let f = get(&other, "toState");
            let f = f.dyn_ref::<Function>().ok_or_else(|| {
                type_error(format!("merge() takes a Calibration or its toState() bytes, got {}", describe(&other)))
            })?;
            js::bytes(&f.call0(&other)?, "other.toState()")?
        };
        self.with_calibrator(|cal| {
            let mut theirs = calibrator(&self.model.graph, &self.options, None)?;
            theirs.load_state(&bytes).ctx("")?;
            cal.merge(&theirs).ctx("merging calibrations")?;
            self.commit(cal);
            Ok(())
        })
    }

    /// A copy (same model, options and statistics).
    #[wasm_bindgen(js_name = clone)]
    pub fn clone_js(&self) -> Calibration {
        let s = self.state.borrow();
        let state =
            CalState { bytes: s.bytes.clone(), pass: s.pass, passes: s.passes, samples: s.samples, busy: false };
        Calibration { model: self.model.clone(), options: self.options.clone(), state: Rc::new(RefCell::new(state)) }
    }

    /// The calibrated range of every activation: `{tensor, name, observer, min, max}` (activations
    /// whose observer has no data yet are left out).
    #[wasm_bindgen(unchecked_return_type = "ActivationRange[]")]
    pub fn ranges(&self) -> Result<Array, JsValue> {
        self.with_calibrator(|cal| {
            let g = &self.model.graph;
            let mut ids: Vec<_> = g.inputs.clone();
            ids.extend(g.nodes.iter().filter_map(|n| n.output(0)));
            Ok(ids
                .into_iter()
                .filter_map(|t| {
                    let (lo, hi) = cal.range(t).ok()?;
                    let o = Object::new();
                    set(&o, "tensor", t.0);
                    set(&o, "name", g.tensor(t).map(|t| t.name.as_str()).unwrap_or(""));
                    set(&o, "observer", cal.kind(t).map(|k| k.name()).unwrap_or(""));
                    set(&o, "min", lo);
                    set(&o, "max", hi);
                    Some(JsValue::from(o))
                })
                .collect())
        })
    }
}

// ---- quantization ----

fn rounding_option(options: &JsValue) -> Result<Rounding, JsValue> {
    match js::opt_string(options, "rounding")?.as_deref() {
        None | Some("double") => Ok(Rounding::Double),
        Some("single") => Ok(Rounding::Single),
        Some(other) => Err(range_error(format!("options.rounding must be \"double\" or \"single\", got {other:?}"))),
    }
}

/// The `.mq` metadata entries the converter adds, the same keys in the same order as
/// `microquant quantize` (producer, source file, observer, calibration samples), so that the
/// same model, samples and options give the same bytes here and in the CLI. `options.metadata`
/// (`{key: value}`) replaces values or adds entries.
pub(crate) fn metadata(options: &JsValue, base: Vec<(String, String)>) -> Result<Vec<(String, String)>, JsValue> {
    let mut meta = base;
    let m = get(options, "metadata");
    if !(m.is_undefined() || m.is_null()) {
        if !m.is_object() || Array::is_array(&m) {
            return Err(type_error(format!("options.metadata must be an object of strings, got {}", describe(&m))));
        }
        for entry in Object::entries(&Object::from(m)).iter() {
            let pair = Array::from(&entry);
            let key = pair.get(0).as_string().unwrap_or_default();
            let value = pair.get(1).as_string().ok_or_else(|| {
                type_error(format!("options.metadata[{key:?}] must be a string, got {}", describe(&pair.get(1))))
            })?;
            match meta.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => meta.push((key, value)),
            }
        }
    }
    Ok(meta)
}

/// The producer entry: `microquant <version> quantize` (the same in the CLI and here).
pub(crate) fn producer(what: &str) -> (String, String) {
    (String::from("producer"), format!("microquant {} {what}", env!("CARGO_PKG_VERSION")))
}

fn quantize_options(options: &JsValue) -> Result<QuantizeOptions, JsValue> {
    match js::opt_string(options, "mode")?.as_deref() {
        None | Some("static") => {}
        Some("weight-only") => {
            return Err(error(
                "mode \"weight-only\" makes another kind of model (int8 weights, float compute, no calibration, no .mq): call model.quantizeWeightOnly({ evalSamples, labels })",
            ));
        }
        Some("dynamic") => {
            return Err(error(
                "mode \"dynamic\" makes another kind of model (int8 weights, activations quantized at run time, no calibration, no .mq: the .mq runtime cannot quantize activations at run time): call model.quantizeDynamic({ evalSamples, labels })",
            ));
        }
        Some(other) => {
            return Err(range_error(format!(
                "options.mode must be \"static\", \"dynamic\" or \"weight-only\", got {other:?}"
            )));
        }
    }
    let activations = match js::opt_string(options, "activations")?.as_deref() {
        None | Some("int8") => ActivationType::Int8,
        Some("int16") => ActivationType::Int16,
        Some(other) => {
            return Err(range_error(format!("options.activations must be \"int8\" or \"int16\", got {other:?}")));
        }
    };
    Ok(QuantizeOptions {
        per_channel: js::opt_bool(options, "perChannel", true)?,
        activations,
        int16_layers: js::opt_strings(options, "int16Layers")?,
        use_carried: !js::opt_bool(options, "ignoreQdq", false)?,
        bias_correction: js::opt_bool(options, "biasCorrection", true)?,
    })
}

pub(crate) fn labels(options: &JsValue) -> Result<Option<Vec<usize>>, JsValue> {
    let v = get(options, "labels");
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let values: Vec<f64> = if let Some(a) = v.dyn_ref::<js_sys::Int32Array>() {
        a.to_vec().into_iter().map(f64::from).collect()
    } else if let Some(a) = v.dyn_ref::<Uint8Array>() {
        if crate::npy::is_npy(&a.to_vec()) {
            crate::npy::parse(&a.to_vec(), "labels .npy").map_err(error)?.data.into_iter().map(f64::from).collect()
        } else {
            a.to_vec().into_iter().map(f64::from).collect()
        }
    } else if Array::is_array(&v) {
        Array::from(&v)
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .ok_or_else(|| type_error(format!("options.labels[{i}] must be a number, got {}", describe(&x))))
            })
            .collect::<Result<_, _>>()?
    } else {
        return Err(type_error(format!("options.labels must be an array of class indices, got {}", describe(&v))));
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            if x >= 0.0 && x.fract() == 0.0 && x < 1e9 {
                Ok(x as usize)
            } else {
                Err(range_error(format!("options.labels[{i}] must be a class index (a non-negative integer), got {x}")))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

async fn quantize_task(
    model: &FloatGraph,
    cal_opts: &CalibrationOptions,
    state: Option<&[u8]>,
    options: &JsValue,
    ctl: &mut Control,
) -> Result<QuantizedModel, JsValue> {
    quantize_with_data(model, cal_opts, state, options, ctl, None).await
}

/// Quantizes, compiles and evaluates. `eval` overrides `options.evalSamples`.
async fn quantize_with_data(
    model: &FloatGraph,
    cal_opts: &CalibrationOptions,
    state: Option<&[u8]>,
    options: &JsValue,
    ctl: &mut Control,
    eval: Option<Vec<Vec<Vec<f32>>>>,
) -> Result<QuantizedModel, JsValue> {
    let q_opts = quantize_options(options)?;
    let rounding = rounding_option(options)?;
    let name = js::opt_string(options, "name")?.unwrap_or_else(|| model.name.clone());
    let eval = match eval {
        Some(e) => e,
        None => {
            let e = get(options, "evalSamples");
            if e.is_undefined() || e.is_null() { Vec::new() } else { model.samples(&e, "options.evalSamples")? }
        }
    };
    let labels = labels(options)?;
    ctl.check_abort()?;
    let cal = calibrator(&model.graph, cal_opts, state)?;
    let samples = js::opt_number(options, "calibrationSamples")?.map_or(cal.samples(), |n| n as usize);
    let meta = metadata(
        options,
        vec![
            producer("quantize"),
            (String::from("source_file"), model.name.clone()),
            (String::from("observer"), String::from(cal_opts.observer.name())),
            (String::from("calibration_samples"), format!("{samples}")),
        ],
    )?;
    let q = quantize(&cal, &q_opts).ctx("quantizing")?;
    let compiled = compile(&q.graph, &CompileOptions { rounding, metadata: meta }).ctx("compiling")?;
    let total = eval.len();
    ctl.tick(true, "evaluate", 0, 1, 0, total).await?;
    // The evaluation is one call: progress is reported from inside it (a worker's messages
    // reach the page meanwhile), the signal is checked after it.
    let mut failed: Option<JsValue> = None;
    let mut last = now_ms();
    let report = evaluate_with_progress(&cal, &q, &compiled, &eval, labels.as_deref(), &mut |done| {
        if failed.is_none() && (done == total || now_ms() - last >= ctl.chunk_ms) {
            last = now_ms();
            if let Err(e) = ctl.report("evaluate", 0, 1, done, total) {
                failed = Some(e);
            }
        }
    })
    .ctx("evaluating")?;
    if let Some(e) = failed {
        return Err(e);
    }
    ctl.tick(true, "evaluate", 0, 1, total, total).await?;
    let mut c = Compiled::new(compiled.bytes, "quantized", name, Some((model.inputs.clone(), model.outputs.clone())))?;
    c.extras = Some(Extras {
        graph: q.graph,
        report: Some(report),
        inputs: model.io_infos(false),
        outputs: model.io_infos(true),
    });
    Ok(QuantizedModel { inner: c })
}

// ---- the report as a plain object ----

fn opt_f64(v: Option<f64>) -> JsValue {
    match v {
        Some(x) if x.is_finite() => JsValue::from_f64(x),
        _ => JsValue::NULL,
    }
}

/// The report with camelCase keys (the same fields as `microquant::ptq::Report::to_json`).
pub(crate) fn report_object(r: &Report) -> Object {
    let m = &r.model;
    let model = Object::new();
    set(&model, "mode", m.mode);
    set(&model, "samples", m.samples as f64);
    set(&model, "top1Agreement", opt_f64(m.top1_agreement));
    set(&model, "floatAccuracy", opt_f64(m.float_accuracy));
    set(&model, "int8Accuracy", opt_f64(m.int8_accuracy));
    set(&model, "outputSqnrDb", opt_f64(m.output_sqnr_db));
    set(&model, "floatWeightBytes", m.float_weight_bytes as f64);
    set(&model, "int8WeightBytes", m.int8_weight_bytes as f64);
    set(&model, "modelBytes", m.model_bytes as f64);
    set(&model, "arenaBytes", m.arena_bytes as f64);
    set(&model, "macs", m.macs as f64);
    let io = |list: &[microquant::ptq::IoQuant]| -> Array {
        list.iter()
            .map(|t| {
                let o = Object::new();
                set(&o, "name", t.name.as_str());
                set(&o, "shape", usize_array(&t.shape));
                set(&o, "dtype", t.dtype);
                set(&o, "scale", opt_f64(Some(f64::from(t.scale))));
                set(&o, "zeroPoint", t.zero_point);
                JsValue::from(o)
            })
            .collect()
    };
    let layers: Array = r
        .layers
        .iter()
        .map(|l| {
            let o = Object::new();
            set(&o, "index", l.index as f64);
            set(&o, "name", l.name.as_str());
            set(&o, "op", l.op.as_str());
            set(&o, "output", l.output.as_str());
            set(&o, "dtype", l.dtype);
            set(&o, "scale", opt_f64(Some(f64::from(l.scale))));
            set(&o, "zeroPoint", l.zero_point);
            set(&o, "qparams", l.qparams);
            set(&o, "observer", l.observer);
            let range: Array = [l.range.0, l.range.1].iter().map(|&v| JsValue::from_f64(f64::from(v))).collect();
            set(&o, "range", range);
            match l.weight_scales {
                Some((lo, hi, n)) => {
                    let w = Object::new();
                    set(&w, "min", lo);
                    set(&w, "max", hi);
                    set(&w, "count", n as f64);
                    set(&o, "weightScales", w);
                }
                None => set(&o, "weightScales", JsValue::NULL),
            }
            set(&o, "sqnrDb", opt_f64(l.sqnr_db));
            set(&o, "maxAbsError", l.max_abs_error);
            set(&o, "elements", l.elements as f64);
            JsValue::from(o)
        })
        .collect();
    let o = Object::new();
    set(&o, "model", model);
    set(&o, "inputs", io(&r.inputs));
    set(&o, "outputs", io(&r.outputs));
    set(&o, "layers", layers);
    o
}

#[wasm_bindgen]
impl QuantizedModel {
    /// The per-layer report of a model quantized here (`null` otherwise): `{model: {mode,
    /// samples, top1Agreement, floatAccuracy, int8Accuracy, outputSqnrDb, floatWeightBytes,
    /// int8WeightBytes, modelBytes, arenaBytes, macs}, inputs, outputs, layers: [{index, name,
    /// op, output, dtype, scale, zeroPoint, qparams, observer, range, weightScales, sqnrDb,
    /// maxAbsError, elements}]}`.
    #[wasm_bindgen(getter, unchecked_return_type = "Report | null")]
    pub fn report(&self) -> JsValue {
        match self.inner.extras.as_ref().and_then(|e| e.report.as_ref()) {
            Some(r) => report_object(r).into(),
            None => JsValue::NULL,
        }
    }

    /// The model as QDQ ONNX (opset 17, or 21 with int16 activations): float ops between
    /// `QuantizeLinear`/`DequantizeLinear` pairs carrying every scale and zero point, int8
    /// weights, int32 biases, inputs and outputs in the source model's layout; ONNX Runtime
    /// runs it. Throws for a model loaded from a `.mq` (it does not keep the graph).
    #[wasm_bindgen(js_name = toQdqOnnx)]
    pub fn to_qdq_onnx(&self) -> Result<Uint8Array, JsValue> {
        let e = self.inner.extras.as_ref().ok_or_else(|| {
            error("toQdqOnnx() needs the quantized graph: a model loaded from a .mq file does not keep it (quantize the float model, or load the int8 TFLite model)")
        })?;
        let int16 = e.graph.tensors.iter().any(|t| !t.is_constant() && t.dtype == GDType::I16);
        let name = self.inner.name.rsplit_once('.').map_or(self.inner.name.as_str(), |(stem, _)| stem);
        let bytes = microquant::onnx::export_qdq(
            &e.graph,
            &microquant::onnx::QdqExportOptions {
                opset: if int16 { 21 } else { 17 },
                inputs: e.inputs.clone(),
                outputs: e.outputs.clone(),
                graph_name: String::from(name),
            },
        )
        .ctx("QDQ export")?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// The report as JSON, exactly as `microquant quantize --report` writes it (snake_case), or
    /// `null`.
    #[wasm_bindgen(js_name = reportJson)]
    pub fn report_json(&self) -> Option<String> {
        self.inner.extras.as_ref().and_then(|e| e.report.as_ref()).map(Report::to_json)
    }
}

/// A float graph is float if its activations are float (a TFLite model with int8 activations
/// is an already-quantized model).
pub(crate) fn is_quantized(g: &Graph) -> bool {
    g.tensors.iter().any(|t| !t.is_constant() && matches!(t.dtype, GDType::I8 | GDType::I16))
}
