//! Hybrid models in JS: int8 weights, float activations. `FloatModel.quantizeWeightOnly` computes
//! in float with the weights dequantized; `FloatModel.quantizeDynamic` quantizes each layer's
//! input per call and sums in integers (as ONNX Runtime's `quantize_dynamic` models do).
//! `microquant::ptq::quantize_weight_only` / `quantize_dynamic` choose every number; the model runs
//! with the float executor and leaves as ONNX (`toQdqOnnx()`): the `.mq` runtime computes in int8
//! with calibrated activations, so there is no `.mq` form.

use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;

use js_sys::{Array, Object, Uint8Array};
use microquant::ptq::{
    Hybrid, HybridMode, HybridOptions, Report, evaluate_hybrid, quantize_dynamic, quantize_weight_only,
};
use wasm_bindgen::prelude::*;

use super::control::{Control, now_ms};
use super::float_graph::{FloatGraph, io_info_list};
use super::options::labels;
use super::report::report_object;
use crate::error::{Context, error, range_error};
use crate::js::{self, get, set};

/// A hybrid model: the float model with int8 weights (symmetric, per channel or per tensor, as
/// ONNX Runtime's quantizer makes them) and float activations; `mode` says how it computes.
#[wasm_bindgen]
pub struct HybridModel {
    model: Rc<FloatGraph>,
    hybrid: Hybrid,
    report: Option<Report>,
}

/// The JS name of a hybrid mode (the `mode` option of `calibrateAndQuantize` and the CLI's
/// `--mode`).
fn mode_name(mode: HybridMode) -> &'static str {
    match mode {
        HybridMode::WeightOnly => "weight-only",
        HybridMode::Dynamic => "dynamic",
    }
}

/// `quantizeWeightOnly`'s and `quantizeDynamic`'s work: quantizes the weights, then measures the
/// model against the float one on `options.evalSamples` if there are samples.
pub(super) async fn hybrid_task(
    model: Rc<FloatGraph>,
    mode: HybridMode,
    options: &JsValue,
    ctl: &mut Control,
) -> Result<HybridModel, JsValue> {
    let name = mode_name(mode);
    for (key, what) in
        [("int16Layers", "int16 layers"), ("activations", "an activation type"), ("rounding", "a rounding")]
    {
        if !get(options, key).is_undefined() {
            return Err(range_error(format!(
                "options.{key}: a {name} model has float activations and no {what}; it applies to quantize() and calibrateAndQuantize()"
            )));
        }
    }
    for key in ["weightBits", "layerWeightBits"] {
        if !get(options, key).is_undefined() {
            return Err(range_error(format!(
                "options.{key}: a {name} model has int8 weights; 4-bit weights apply to quantize() and calibrateAndQuantize()"
            )));
        }
    }
    let per_channel = js::opt_bool(options, "perChannel", true)?;
    let e = get(options, "evalSamples");
    let eval = if e.is_undefined() || e.is_null() { Vec::new() } else { model.samples(&e, "options.evalSamples")? };
    let labels = labels(options)?;
    if labels.is_some() && eval.is_empty() {
        return Err(error("options.labels need samples to measure the model on: options.evalSamples"));
    }
    ctl.check_abort()?;
    let opts = HybridOptions { per_channel };
    let hybrid = match mode {
        HybridMode::WeightOnly => quantize_weight_only(&model.graph, &opts),
        HybridMode::Dynamic => quantize_dynamic(&model.graph, &opts),
    }
    .ctx(&format!("{name} quantization"))?;
    let report = if eval.is_empty() {
        None
    } else {
        let total = eval.len();
        ctl.tick(true, "evaluate", 0, 1, 0, total).await?;
        let mut failed: Option<JsValue> = None;
        let mut last = now_ms();
        let chunk_ms = ctl.chunk_ms();
        let r = evaluate_hybrid(&model.graph, &hybrid, &eval, labels.as_deref(), &mut |done| {
            if failed.is_none() && (done == total || now_ms() - last >= chunk_ms) {
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
        Some(r)
    };
    Ok(HybridModel { model, hybrid, report })
}

impl HybridModel {
    /// Why a hybrid model has no `.mq` (and so no C or Rust array).
    fn no_mq(&self, what: &str) -> JsValue {
        error(format!(
            "{what}: a {} model has float activations and no .mq form (the .mq runtime computes in int8 with calibrated activations): \
             export it with toQdqOnnx(), or quantize with calibrateAndQuantize() for a .mq",
            mode_name(self.hybrid.mode)
        ))
    }
}

#[wasm_bindgen]
impl HybridModel {
    /// `"weight-only"` (float compute, the weights dequantized) or `"dynamic"` (each quantized
    /// layer quantizes its input per call to uint8 and sums in integers).
    #[wasm_bindgen(getter, unchecked_return_type = "\"weight-only\" | \"dynamic\"")]
    pub fn mode(&self) -> String {
        String::from(mode_name(self.hybrid.mode))
    }

    /// The model's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.model.name.clone()
    }

    /// Inputs: `{name, shape, dtype: "float32"}` each, in the model's own layout.
    #[wasm_bindgen(getter, unchecked_return_type = "TensorInfo[]")]
    pub fn inputs(&self) -> Array {
        io_info_list(&self.model.inputs)
    }

    /// Outputs, as `inputs`.
    #[wasm_bindgen(getter, unchecked_return_type = "TensorInfo[]")]
    pub fn outputs(&self) -> Array {
        io_info_list(&self.model.outputs)
    }

    /// Names of the layers whose weights are int8.
    #[wasm_bindgen(getter, js_name = quantizedLayers, unchecked_return_type = "string[]")]
    pub fn quantized_layers(&self) -> Array {
        let g = &self.hybrid.graph;
        self.hybrid
            .quantized_nodes
            .iter()
            .filter_map(|&i| g.nodes.get(i))
            .map(|n| JsValue::from(n.name.as_str()))
            .collect()
    }

    /// `{floatWeightBytes, weightBytes, macs}`: the float model's constants, this model's
    /// (int8 weights, float biases), multiply-accumulates per inference.
    #[wasm_bindgen(getter)]
    pub fn sizes(&self) -> Object {
        let o = Object::new();
        set(&o, "floatWeightBytes", self.model.graph.constant_totals().bytes as f64);
        set(&o, "weightBytes", self.hybrid.graph.constant_totals().bytes as f64);
        set(&o, "macs", self.model.graph.total_macs() as f64);
        o
    }

    /// The per-layer report on `evalSamples` (the same shape as `QuantizedModel.report`, mode
    /// `"weight-only int8"` or `"dynamic int8"`, float layers with `scale: null`), or `null` without samples.
    #[wasm_bindgen(getter, unchecked_return_type = "Report | null")]
    pub fn report(&self) -> JsValue {
        self.report.as_ref().map_or(JsValue::NULL, |r| report_object(r).into())
    }

    /// The report as JSON, as `microquant quantize --mode weight-only|dynamic --report` writes it, or
    /// `null`.
    #[wasm_bindgen(js_name = reportJson)]
    pub fn report_json(&self) -> Option<String> {
        self.report.as_ref().map(Report::to_json)
    }

    /// Runs the model as its `mode` says (in float with the weights dequantized, or with each
    /// quantized layer's input quantized per call): inputs and outputs as `FloatModel.run`.
    #[wasm_bindgen(unchecked_return_type = "Float32Array[]")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | Float32Array[]")] inputs: JsValue,
    ) -> Result<Array, JsValue> {
        let ex = self.hybrid.executor().ctx("the model cannot run")?;
        self.model.run_with(&ex, &inputs)
    }

    /// The model as ONNX (opset 17), inputs and outputs in the source model's layout; ONNX Runtime
    /// runs it. Weight-only: int8 weight initializers read through `DequantizeLinear`, float
    /// activations and biases. Dynamic: `DynamicQuantizeLinear` → `ConvInteger` / `MatMulInteger`
    /// → `Cast` → `Mul` → `Add`, as ONNX Runtime's `quantize_dynamic` writes. The same bytes as
    /// `microquant quantize --mode weight-only|dynamic`.
    #[wasm_bindgen(js_name = toQdqOnnx)]
    pub fn to_qdq_onnx(&self) -> Result<Uint8Array, JsValue> {
        let name = self.model.name.rsplit_once('.').map_or(self.model.name.as_str(), |(stem, _)| stem);
        let bytes = microquant::onnx::export_hybrid(
            &self.hybrid,
            &microquant::onnx::QdqExportOptions {
                opset: 17,
                inputs: self.model.io_infos(false),
                outputs: self.model.io_infos(true),
                graph_name: String::from(name),
            },
        )
        .ctx("ONNX export")?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// Throws: a hybrid model has no `.mq` form (see `toQdqOnnx()`).
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> Result<Uint8Array, JsValue> {
        Err(self.no_mq("toBytes()"))
    }

    /// Throws: the C array holds a `.mq`, which a hybrid model does not have.
    #[wasm_bindgen(js_name = toCHeader)]
    pub fn to_c_header(&self, _name: Option<String>) -> Result<String, JsValue> {
        Err(self.no_mq("toCHeader()"))
    }

    /// Throws: the Rust array holds a `.mq`, which a hybrid model does not have.
    #[wasm_bindgen(js_name = toRustSource)]
    pub fn to_rust_source(&self, _name: Option<String>) -> Result<String, JsValue> {
        Err(self.no_mq("toRustSource()"))
    }
}
