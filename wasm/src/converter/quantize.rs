//! Static quantization: a calibrated float model quantized, compiled into a `QuantizedModel` and
//! evaluated (the per-layer report); the converter's methods of `QuantizedModel` (report, QDQ
//! ONNX export).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use js_sys::Uint8Array;
use microquant::compile::{CompileOptions, compile};
use microquant::graph::DType;
use microquant::ptq::{CalibrationOptions, Report, evaluate_with_progress, quantize};
use wasm_bindgen::prelude::*;

use super::adaround::{adaround_option, adaround_task};
use super::calibration::calibrator;
use super::control::{Control, now_ms};
use super::float_graph::FloatGraph;
use super::metadata::{metadata, producer};
use super::options::{labels, quantize_options, rounding_option};
use super::report::report_object;
use crate::error::{Context, error};
use crate::js::{self, get};
use crate::runtime::{Compiled, Extras, QuantizedModel};

pub(super) async fn quantize_task(
    model: &FloatGraph,
    cal_opts: &CalibrationOptions,
    state: Option<&[u8]>,
    options: &JsValue,
    ctl: &mut Control,
) -> Result<QuantizedModel, JsValue> {
    quantize_with_data(model, cal_opts, state, options, ctl, None).await
}

/// Quantizes, compiles and evaluates. `calib` (the calibration samples, when at hand) overrides
/// `options.adaroundSamples` and, without `options.evalSamples`, is what the report evaluates.
pub(super) async fn quantize_with_data(
    model: &FloatGraph,
    cal_opts: &CalibrationOptions,
    state: Option<&[u8]>,
    options: &JsValue,
    ctl: &mut Control,
    calib: Option<&[Vec<Vec<f32>>]>,
) -> Result<QuantizedModel, JsValue> {
    let q_opts = quantize_options(options)?;
    let rounding = rounding_option(options)?;
    let adaround = adaround_option(options)?;
    let name = js::opt_string(options, "name")?.unwrap_or_else(|| model.name.clone());
    let given = get(options, "evalSamples");
    let own_eval;
    let eval: &[Vec<Vec<f32>>] = match calib {
        Some(c) if given.is_undefined() || given.is_null() => c,
        _ => {
            own_eval = if given.is_undefined() || given.is_null() {
                Vec::new()
            } else {
                model.samples(&given, "options.evalSamples")?
            };
            &own_eval
        }
    };
    let labels = labels(options)?;
    ctl.check_abort()?;
    let mut cal = calibrator(&model.graph, cal_opts, state)?;
    let mut adarounding = None;
    if let Some(ada_opts) = &adaround {
        let own_samples;
        let samples = match calib {
            Some(c) => c,
            None => {
                let s = get(options, "adaroundSamples");
                if s.is_undefined() || s.is_null() {
                    return Err(crate::error::type_error(
                        "options.adaround needs samples: options.adaroundSamples (the calibration samples; calibrateAndQuantize() uses its own)",
                    ));
                }
                own_samples = model.samples(&s, "options.adaroundSamples")?;
                &own_samples
            }
        };
        let rounding = adaround_task(&model.graph, &q_opts, ada_opts, samples, ctl).await?;
        cal.use_adaround(&rounding);
        adarounding = Some(rounding);
    }
    let samples = js::opt_number(options, "calibrationSamples")?.map_or(cal.samples(), |n| n as usize);
    let meta = metadata(
        options,
        vec![
            producer("quantize"),
            (String::from("source_file"), model.name.clone()),
            (String::from("observer"), String::from(cal_opts.observer.name())),
            (String::from("calibration_samples"), format!("{samples}")),
        ]
        .into_iter()
        .chain(microquant::onnx::IoInfo::layout_metadata(&model.io_infos(false), &model.io_infos(true)))
        .collect(),
    )?;
    let q = quantize(&cal, &q_opts).ctx("quantizing")?;
    let compiled =
        compile(&q.graph, &CompileOptions { rounding, metadata: meta, ..Default::default() }).ctx("compiling")?;
    let total = eval.len();
    ctl.tick(true, "evaluate", 0, 1, 0, total).await?;
    // The evaluation is one call: progress is reported from inside it (a worker's messages
    // reach the page meanwhile), the signal is checked after it.
    let mut failed: Option<JsValue> = None;
    let mut last = now_ms();
    let report = evaluate_with_progress(&cal, &q, &compiled, eval, labels.as_deref(), &mut |done| {
        if failed.is_none() && (done == total || now_ms() - last >= ctl.chunk_ms()) {
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
        adaround: adarounding,
    });
    Ok(QuantizedModel { inner: c })
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

    /// The model as QDQ ONNX (opset 17, or 21 with int16 activations or int4 weights): float ops
    /// between `QuantizeLinear`/`DequantizeLinear` pairs carrying every scale and zero point, int8
    /// (or `INT4`) weights, int32 biases, inputs and outputs in the source model's layout; ONNX Runtime
    /// runs it. By default the int8 layers are written in the exact form (their integer
    /// arithmetic as ONNX ops: ONNX Runtime gives this model's outputs bit for bit, as
    /// `microquant quantize --qdq`); `{ portable: true }` writes the plain QDQ form that other QDQ
    /// tools and `loadModel` read back (`--qdq-portable`). Throws for a model loaded from a `.mq`
    /// (it does not keep the graph).
    #[wasm_bindgen(js_name = toQdqOnnx)]
    pub fn to_qdq_onnx(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "QdqExportOptions")] options: Option<JsValue>,
    ) -> Result<Uint8Array, JsValue> {
        let options = crate::js::options(&options.unwrap_or(JsValue::UNDEFINED), "toQdqOnnx options")?;
        let portable = crate::js::opt_bool(&options, "portable", false)?;
        let e = self.inner.extras.as_ref().ok_or_else(|| {
            error("toQdqOnnx() needs the quantized graph: a model loaded from a .mq file does not keep it (quantize the float model, or load the int8 TFLite model)")
        })?;
        let int16 = e.graph.tensors.iter().any(|t| !t.is_constant() && t.dtype == DType::I16);
        let int4 = e.graph.tensors.iter().any(|t| t.dtype == DType::I4);
        let name = self.inner.name.rsplit_once('.').map_or(self.inner.name.as_str(), |(stem, _)| stem);
        let export = if portable { microquant::onnx::export_qdq_portable } else { microquant::onnx::export_qdq };
        let bytes = export(
            &e.graph,
            &microquant::onnx::QdqExportOptions {
                opset: if int16 || int4 { 21 } else { 17 },
                inputs: e.inputs.clone(),
                outputs: e.outputs.clone(),
                graph_name: String::from(name),
            },
        )
        .ctx("QDQ export")?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// What AdaRound did (the `adaround` option; `null` without it): per layer `{name, bits,
    /// patches, nearestSqnrDb, adaroundSqnrDb, flipped, weights, keptNearest}` (the layer's
    /// output reconstruction SQNR over the sampled patches, with round-to-nearest and with the
    /// weights AdaRound chose), and the layers it `skipped` (`{name, reason}`).
    #[wasm_bindgen(getter, unchecked_return_type = "AdaRoundReport | null")]
    pub fn adaround(&self) -> JsValue {
        let Some(r) = self.inner.extras.as_ref().and_then(|e| e.adaround.as_ref()) else { return JsValue::NULL };
        let layers = js_sys::Array::new();
        for l in &r.layers {
            let (near, ada) = l.sqnr_db();
            let o = js_sys::Object::new();
            crate::js::set(&o, "name", l.name.as_str());
            crate::js::set(&o, "bits", u32::from(l.bits));
            crate::js::set(&o, "patches", l.patches as f64);
            crate::js::set(&o, "nearestSqnrDb", near);
            crate::js::set(&o, "adaroundSqnrDb", ada);
            crate::js::set(&o, "flipped", l.flipped as f64);
            crate::js::set(&o, "weights", l.weights.len() as f64);
            crate::js::set(&o, "keptNearest", l.kept_nearest);
            layers.push(&o);
        }
        let skipped = js_sys::Array::new();
        for s in &r.skipped {
            let o = js_sys::Object::new();
            crate::js::set(&o, "name", s.name.as_str());
            crate::js::set(&o, "reason", s.reason.as_str());
            skipped.push(&o);
        }
        let o = js_sys::Object::new();
        crate::js::set(&o, "layers", layers);
        crate::js::set(&o, "skipped", skipped);
        o.into()
    }

    /// The report as JSON, exactly as `microquant quantize --report` writes it (snake_case), or
    /// `null`.
    #[wasm_bindgen(js_name = reportJson)]
    pub fn report_json(&self) -> Option<String> {
        self.inner.extras.as_ref().and_then(|e| e.report.as_ref()).map(Report::to_json)
    }
}
