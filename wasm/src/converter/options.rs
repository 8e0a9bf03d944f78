//! The converter's options objects read from JS: calibration (observers), quantization (mode,
//! activation type, weight bits, rounding) and class labels.

use alloc::format;
use alloc::vec::Vec;

use js_sys::{Array, Object, Uint8Array};
use microquant::kernels::Rounding;
use microquant::ptq::{
    ActivationType, CalibrationOptions, CleOptions, ObserverKind, QuantizeOptions, SELECTION_SAMPLES,
};
use wasm_bindgen::prelude::*;

use crate::error::{error, range_error, type_error};
use crate::js::{self, describe, get};

fn observer_kind(name: &str, percentile: Option<f64>, what: &str) -> Result<ObserverKind, JsValue> {
    match ObserverKind::from_name(name) {
        Some(ObserverKind::Percentile(p)) => Ok(ObserverKind::Percentile(percentile.unwrap_or(p))),
        Some(k) => Ok(k),
        None => Err(range_error(format!(
            "{what} must be \"auto\", \"minmax\", \"moving-average\", \"histogram\", \"entropy\" or \"percentile\", got {name:?}"
        ))),
    }
}

pub(super) fn calibration_options(options: &JsValue) -> Result<CalibrationOptions, JsValue> {
    let percentile = js::opt_number(options, "percentile")?;
    if let Some(p) = percentile
        && !(0.0..=100.0).contains(&p)
    {
        return Err(range_error(format!("options.percentile must be in [0, 100], got {p}")));
    }
    let observer = match js::opt_string(options, "observer")? {
        Some(name) => observer_kind(&name, percentile, "options.observer")?,
        None => ObserverKind::Auto,
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
    Ok(CalibrationOptions {
        observer,
        overrides,
        two_pass: js::opt_bool(options, "twoPass", true)?,
        reset_state: js::opt_bool(options, "resetState", false)?,
        selection_samples: match js::opt_number(options, "selectionSamples")? {
            None => SELECTION_SAMPLES,
            Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 1e6 => n as usize,
            Some(n) => {
                return Err(range_error(format!(
                    "options.selectionSamples must be a whole number of samples (0 or more), got {n}"
                )));
            }
        },
    })
}

/// `options.cle`: absent or `false` (none), `true` (cross-layer equalization with the default
/// options) or `{relu6AsRelu: boolean}`.
pub(super) fn cle_option(options: &JsValue) -> Result<Option<CleOptions>, JsValue> {
    let v = get(options, "cle");
    if v.is_undefined() || v.is_null() || v.as_bool() == Some(false) {
        return Ok(None);
    }
    if v.as_bool() == Some(true) {
        return Ok(Some(CleOptions::default()));
    }
    if !v.is_object() || Array::is_array(&v) {
        return Err(type_error(format!(
            "options.cle must be a boolean or {{relu6AsRelu: boolean}}, got {}",
            describe(&v)
        )));
    }
    Ok(Some(CleOptions { relu6_as_relu: js::opt_bool(&v, "relu6AsRelu", false)?, ..CleOptions::default() }))
}

pub(super) fn rounding_option(options: &JsValue) -> Result<Rounding, JsValue> {
    match js::opt_string(options, "rounding")?.as_deref() {
        None | Some("double") => Ok(Rounding::Double),
        Some("single") => Ok(Rounding::Single),
        Some(other) => Err(range_error(format!("options.rounding must be \"double\" or \"single\", got {other:?}"))),
    }
}

/// A weight width from JS: 8 or 4, else a `RangeError` naming the value.
fn bits_value(b: f64, what: &str) -> Result<u8, JsValue> {
    if b == 8.0 || b == 4.0 {
        Ok(b as u8)
    } else {
        Err(range_error(format!("{what} must be 8 or 4 (the runtime's kernels take 8-bit or 4-bit weights), got {b}")))
    }
}

pub(super) fn quantize_options(options: &JsValue) -> Result<QuantizeOptions, JsValue> {
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
    let weight_bits = match js::opt_number(options, "weightBits")? {
        None => 8,
        Some(b) => bits_value(b, "options.weightBits")?,
    };
    let mut layer_weight_bits = Vec::new();
    let o = get(options, "layerWeightBits");
    if !(o.is_undefined() || o.is_null()) {
        if !o.is_object() || Array::is_array(&o) {
            return Err(type_error(format!(
                "options.layerWeightBits must be an object {{layerName: 8 | 4}}, got {}",
                describe(&o)
            )));
        }
        for entry in Object::entries(&Object::from(o)).iter() {
            let pair = Array::from(&entry);
            let key = pair.get(0).as_string().unwrap_or_default();
            let value = pair.get(1);
            let what = format!("options.layerWeightBits[{key:?}]");
            let b =
                value.as_f64().ok_or_else(|| type_error(format!("{what} must be 8 or 4, got {}", describe(&value))))?;
            layer_weight_bits.push((key, bits_value(b, &what)?));
        }
    }
    Ok(QuantizeOptions {
        per_channel: js::opt_bool(options, "perChannel", true)?,
        weight_bits,
        layer_weight_bits,
        activations,
        int16_layers: js::opt_strings(options, "int16Layers")?,
        use_carried: !js::opt_bool(options, "ignoreQdq", false)?,
        bias_correction: js::opt_bool(options, "biasCorrection", true)?,
    })
}

pub(super) fn labels(options: &JsValue) -> Result<Option<Vec<usize>>, JsValue> {
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

/// `options.inputShapes` (`{name: [extents]}`), `options.inputValues` (`{name: number |
/// boolean | number[]}`) and `options.outputNames` (`[names]`) of `loadModel`: ONNX inputs with
/// dynamic extents fixed, non-float (or any) inputs fixed at conversion, the outputs kept.
pub(crate) fn onnx_import_options(options: &JsValue) -> Result<microquant::onnx::ImportOptions, JsValue> {
    let mut out = microquant::onnx::ImportOptions::default();
    let names = js::opt_strings(options, "outputNames")?;
    if !names.is_empty() {
        out.outputs = Some(names);
    }
    for (name, v) in js_record(options, "inputShapes", "{inputName: [1, 3, 320, 320]}")? {
        out.input_shapes.push((name.clone(), js::shape(&v, &format!("options.inputShapes[{name:?}]"))?));
    }
    for (name, v) in js_record(options, "inputValues", "{inputName: 16000 or [values]}")? {
        let what = format!("options.inputValues[{name:?}]");
        let one = |x: &JsValue, what: &str| -> Result<f64, JsValue> {
            if let Some(b) = x.as_bool() {
                return Ok(if b { 1.0 } else { 0.0 });
            }
            match x.as_f64() {
                Some(f) if f.is_finite() => Ok(f),
                Some(f) => Err(range_error(format!("{what} must be finite, got {f}"))),
                None => Err(type_error(format!("{what} must be a number, got {}", describe(x)))),
            }
        };
        // An array or a typed array (Float32Array, Int32Array...), or one value.
        let values =
            if Array::is_array(&v) || (js_sys::ArrayBuffer::is_view(&v) && !v.is_instance_of::<js_sys::DataView>()) {
                Array::from(&v)
                    .iter()
                    .enumerate()
                    .map(|(i, x)| one(&x, &format!("{what}[{i}]")))
                    .collect::<Result<_, _>>()?
            } else {
                alloc::vec![one(&v, &what)?]
            };
        out.input_values.push((name, values));
    }
    Ok(out)
}

/// The entries of the object `options[key]` (none when absent).
fn js_record(options: &JsValue, key: &str, example: &str) -> Result<Vec<(alloc::string::String, JsValue)>, JsValue> {
    let o = get(options, key);
    if o.is_undefined() || o.is_null() {
        return Ok(Vec::new());
    }
    if !o.is_object() || Array::is_array(&o) {
        return Err(type_error(format!("options.{key} must be an object {example}, got {}", describe(&o))));
    }
    Ok(Object::entries(&Object::from(o))
        .iter()
        .map(|entry| {
            let pair = Array::from(&entry);
            (pair.get(0).as_string().unwrap_or_default(), pair.get(1))
        })
        .collect())
}
