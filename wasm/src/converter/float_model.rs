//! `FloatModel`, the JS class of a float ONNX or TFLite model: its description, float runs, and
//! the entry points of calibration and quantization (static, weight-only, dynamic).

use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use core::cell::RefCell;

use js_sys::{Array, Object, Promise};
use microquant::float::FloatExecutor;
use microquant::graph::DType;
use microquant::ptq::{Calibrator, HybridMode};
use wasm_bindgen::prelude::*;

use super::calibration::{CalState, Calibration, calibrate_task};
use super::control::{Control, promise};
use super::float_graph::{FloatGraph, io_info_list};
use super::hybrid::hybrid_task;
use super::options::{calibration_options, cle_option};
use super::quantize::{quantize_task, quantize_with_data};
use crate::error::{Context, error};
use crate::js::{self, set, usize_array};

/// A float model (ONNX or TFLite) ready to calibrate, quantize and run in float.
#[wasm_bindgen]
pub struct FloatModel {
    pub(crate) inner: Rc<FloatGraph>,
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
        self.inner.graph.tensors.iter().any(|t| t.quant.is_some() && t.dtype == DType::F32)
    }

    /// Bytes of float weights (constants) in the source model.
    #[wasm_bindgen(getter, js_name = weightBytes)]
    pub fn weight_bytes(&self) -> usize {
        self.inner.source_weight_bytes
    }

    /// A copy of this model with cross-layer equalization (Nagel et al. 2019) applied: the
    /// per-channel weight ranges of consecutive layers joined by ReLU or no activation evened
    /// out, the float function unchanged, so that per-tensor weights (`perChannel: false`)
    /// lose less. Calibrate and quantize the copy. `options.relu6AsRelu` (default false) also
    /// equalizes across ReLU6 by replacing it with ReLU, which changes the float model.
    /// `cleReport` on the copy says what was done.
    pub fn equalize(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ relu6AsRelu?: boolean }")] options: Option<JsValue>,
    ) -> Result<FloatModel, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let options = js::options(&options, "equalize options")?;
        let cle = microquant::ptq::CleOptions {
            relu6_as_relu: js::opt_bool(&options, "relu6AsRelu", false)?,
            ..Default::default()
        };
        Ok(FloatModel { inner: Rc::new(self.inner.equalized(&cle)?) })
    }

    /// For a model made by `equalize()` (or quantized with `cle`): the pairs of layers
    /// equalized (`first`, `second`, `channels`, `through`, `scale_min`, `scale_max`), each
    /// layer's weight ranges before and after (`precision_before`, `precision_after`: the mean
    /// channel range over the largest; `max_before`, `max_after`), the pairs `skipped` for a
    /// ReLU6 between them, `relu6_replaced`, `sweeps`, `converged`. `undefined` otherwise.
    #[wasm_bindgen(getter, js_name = cleReport)]
    pub fn cle_report(&self) -> Result<JsValue, JsValue> {
        match &self.inner.cle {
            Some(r) => js_sys::JSON::parse(&r.to_json()),
            None => Ok(JsValue::UNDEFINED),
        }
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
    /// (histogram observers: exact binning in two passes, default true), `resetState` (a model
    /// with an LSTM: each sample from the zero state instead of the samples in order as one
    /// sequence, default false).
    #[wasm_bindgen(js_name = createCalibration)]
    pub fn create_calibration(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "CalibrationOptions")] options: Option<JsValue>,
    ) -> Result<Calibration, JsValue> {
        let options = options.unwrap_or(JsValue::UNDEFINED);
        let options = js::options(&options, "calibration options")?;
        let opts = calibration_options(&options)?;
        let cal = Calibrator::new(&self.inner.graph, &opts).ctx("calibration options")?;
        let state = CalState { bytes: None, pass: 0, passes: cal.passes(), samples: 0, busy: false, replay: None };
        Ok(Calibration { model: self.inner.clone(), options: opts, state: Rc::new(RefCell::new(state)) })
    }

    /// Quantizes with a complete calibration: a `Promise` of a `QuantizedModel`. `options`:
    /// `perChannel` (default true), `activations` (`"int8"` default, `"int16"` for the whole
    /// model), `int16Layers` (layer names computed in 16x8), `weightBits` (8, default, or 4:
    /// int4 weights) and `layerWeightBits` (`{layer: 8 | 4}`), `mode` (`"static"`; `"weight-only"`
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
            if cle_option(&options)?.is_some() {
                return Err(error(
                    "options.cle changes the model before calibration: quantize the model equalize() returns (calibrated itself), or call calibrateAndQuantize(samples, { cle: true })",
                ));
            }
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
    /// `options` are those of `createCalibration` and `quantize`, and `cle` (`true` or
    /// `{relu6AsRelu: true}`: calibrate and quantize the model `equalize()` makes, as the CLI's
    /// `--cle`); the report evaluates on
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
            let model = match cle_option(&options)? {
                Some(cle) => Rc::new(model.equalized(&cle)?),
                None => model,
            };
            let mut ctl = Control::from_options(&options)?;
            let data = model.samples(&samples, "samples")?;
            let state = calibrate_task(&model, &opts, None, &data, true, None, &mut ctl).await?;
            let q = quantize_with_data(&model, &opts, Some(&state.bytes), &options, &mut ctl, Some(&data)).await?;
            Ok(JsValue::from(q))
        })
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
            let q = hybrid_task(model, mode, &options, &mut ctl).await?;
            Ok(JsValue::from(q))
        })
    }
}
