//! `loadModel(bytes, { inputShapes, inputValues })` and `modelInputs(bytes)`: ONNX models with
//! dynamic axes and a non-float side input (`tests/golden/onnx/shapes/`, written by
//! `tests/gen/gen_onnx_shapes.py`) load once their shapes and values are given, and their float
//! outputs match ONNX Runtime's (the golden cases); without them the error names the input.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Float32Array, Object, Reflect, Uint8Array};
use microquant_tests::golden::Tensor;
use microquant_wasm::{FloatModel, load_model, model_inputs};
use wasm_bindgen::JsCast;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

const DYN_CONV: &[u8] = include_bytes!("../../tests/golden/onnx/shapes/dyn_conv_opset18.onnx");
const AUDIO: &[u8] = include_bytes!("../../tests/golden/onnx/shapes/audio_sr.onnx");
const IF_FLAG: &[u8] = include_bytes!("../../tests/golden/onnx/shapes/if_flag.onnx");
const CASES: &str = include_str!("../../tests/golden/onnx/shapes/cases.json");
const KWS_INT8: &[u8] = include_bytes!("../../models/mlperf-tiny/kws_ref_model_int8.tflite");

fn obj(entries: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in entries {
        Reflect::set(&o, &JsValue::from_str(k), v).unwrap();
    }
    o.into()
}

fn bytes(b: &[u8]) -> JsValue {
    Uint8Array::from(b).into()
}

fn get(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(k)).unwrap()
}

fn message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_else(|| format!("{e:?}"))
}

fn numbers(v: &[f64]) -> JsValue {
    v.iter().map(|&x| JsValue::from_f64(x)).collect::<Array>().into()
}

/// `{name: [numbers]}` from a golden case's map.
fn record(map: &serde_json::Value) -> JsValue {
    let o = Object::new();
    for (k, v) in map.as_object().unwrap() {
        let list: Vec<f64> = v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        Reflect::set(&o, &JsValue::from_str(k), &numbers(&list)).unwrap();
    }
    o.into()
}

/// Loads `model` with each golden case's shapes and values, runs it, compares with ONNX Runtime.
fn check_cases(name: &str, model: &[u8]) -> usize {
    let doc: serde_json::Value = serde_json::from_str(CASES).unwrap();
    let m = doc["models"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap();
    let mut n = 0;
    for case in m["cases"].as_array().unwrap() {
        let options =
            obj(&[("inputShapes", record(&case["input_shapes"])), ("inputValues", record(&case["input_values"]))]);
        let fm = FloatModel::try_from_js_value(load_model(bytes(model), Some(options)).unwrap()).unwrap();
        let inputs: Array = case["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let t: Tensor = serde_json::from_value(t.clone()).unwrap();
                JsValue::from(Float32Array::from(t.f32().as_slice()))
            })
            .collect();
        let outs = fm.run(inputs.into()).unwrap();
        for (k, expected) in case["outputs"].as_array().unwrap().iter().enumerate() {
            let expected: Tensor = serde_json::from_value(expected.clone()).unwrap();
            let got = Float32Array::from(outs.get(k as u32)).to_vec();
            let want = expected.f32();
            assert_eq!(got.len(), want.len(), "{name}");
            let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-5 * w.abs().max(1e-3 * scale), "{name} element {i}: {g} vs ORT {w}");
            }
        }
        n += 1;
    }
    n
}

#[wasm_bindgen_test]
fn dynamic_axes_load_with_input_shapes_and_match_onnx_runtime() {
    assert_eq!(check_cases("dyn_conv_opset18", DYN_CONV), 3);
    assert_eq!(check_cases("audio_sr", AUDIO), 2);
    assert_eq!(check_cases("if_flag", IF_FLAG), 2);
}

#[wasm_bindgen_test]
fn model_inputs_gives_the_dims_and_what_loading_needs() {
    let inputs = model_inputs(bytes(DYN_CONV)).unwrap();
    assert_eq!(inputs.length(), 1);
    let x = inputs.get(0);
    assert_eq!(get(&x, "name").as_string().as_deref(), Some("x"));
    assert_eq!(get(&x, "dtype").as_string().as_deref(), Some("float32"));
    let dims: Vec<JsValue> = Array::from(&get(&x, "dims")).iter().collect();
    assert_eq!(dims[0].as_string().as_deref(), Some("batch"));
    assert_eq!(dims[1].as_f64(), Some(3.0));
    assert_eq!(dims[2].as_string().as_deref(), Some("height"));
    assert_eq!(dims[3].as_string().as_deref(), Some("width"));
    assert_eq!(get(&x, "needsShape").as_bool(), Some(true));
    assert_eq!(get(&x, "needsValue").as_bool(), Some(false));
    let a = model_inputs(bytes(AUDIO)).unwrap();
    let sr = a.get(1);
    assert_eq!(get(&sr, "dtype").as_string().as_deref(), Some("int64"));
    assert_eq!(get(&sr, "needsValue").as_bool(), Some(true));
    assert_eq!(Array::from(&get(&sr, "dims")).length(), 0);
    // A TFLite model: static shapes, nothing needed.
    let t = model_inputs(bytes(KWS_INT8)).unwrap();
    assert_eq!(get(&t.get(0), "needsShape").as_bool(), Some(false));
    assert!(model_inputs(bytes(b"not a model at all")).is_err());
}

#[wasm_bindgen_test]
fn what_is_missing_is_named_with_the_input() {
    let e = load_model(bytes(DYN_CONV), None).unwrap_err();
    assert_eq!(get(&e, "input").as_string().as_deref(), Some("x"), "{}", message(&e));
    assert!(message(&e).contains("\"height\"") && message(&e).contains("inputShapes"), "{}", message(&e));
    // A shape that contradicts the model.
    let o = obj(&[("inputShapes", obj(&[("x", numbers(&[1.0, 4.0, 8.0, 8.0]))]))]);
    let e = load_model(bytes(DYN_CONV), Some(o)).unwrap_err();
    assert!(message(&e).contains("static extent 3 on axis 1"), "{}", message(&e));
    // A non-float input without a value; then with one given as a plain number.
    let shapes = obj(&[("x", numbers(&[1.0, 160.0]))]);
    let e = load_model(bytes(AUDIO), Some(obj(&[("inputShapes", shapes.clone())]))).unwrap_err();
    assert_eq!(get(&e, "input").as_string().as_deref(), Some("sr"), "{}", message(&e));
    assert!(message(&e).contains("inputValues"), "{}", message(&e));
    let values = obj(&[("sr", JsValue::from_f64(16000.0)), ("gain", JsValue::from_f64(0.5))]);
    let fm = load_model(bytes(AUDIO), Some(obj(&[("inputShapes", shapes), ("inputValues", values)]))).unwrap();
    assert!(FloatModel::try_from_js_value(fm).is_ok());
    // A bool given as a boolean.
    let o = obj(&[("inputValues", obj(&[("flag", JsValue::TRUE)]))]);
    assert!(load_model(bytes(IF_FLAG), Some(o)).is_ok());
    // Options of the wrong kind, and for a TFLite model.
    let o = obj(&[("inputShapes", numbers(&[1.0]))]);
    assert!(load_model(bytes(DYN_CONV), Some(o)).unwrap_err().is_instance_of::<js_sys::TypeError>());
    let o = obj(&[("inputShapes", obj(&[("x", JsValue::from_str("1x3x8x8"))]))]);
    let e = load_model(bytes(DYN_CONV), Some(o)).unwrap_err();
    assert!(message(&e).contains("options.inputShapes[\"x\"]"), "{}", message(&e));
    let o = obj(&[("inputValues", obj(&[("sr", JsValue::from_str("16k"))]))]);
    assert!(message(&load_model(bytes(AUDIO), Some(o)).unwrap_err()).contains("options.inputValues[\"sr\"]"));
    let o = obj(&[("inputShapes", obj(&[("x", numbers(&[1.0]))]))]);
    assert!(message(&load_model(bytes(KWS_INT8), Some(o)).unwrap_err()).contains("applies to ONNX models"));
}

const STREAM_MODEL: &[u8] = include_bytes!("../../tests/golden/onnx_streaming/lstm_stream.onnx");
const STREAM_CALIB: &[u8] = include_bytes!("../../tests/golden/onnx_streaming/calibration.npy");
const STREAM: &[u8] = include_bytes!("../../tests/golden/onnx_streaming/stream.npy");
const STREAMED: &[u8] = include_bytes!("../../tests/golden/onnx_streaming/expected_streamed.npy");
const STATELESS: &[u8] = include_bytes!("../../tests/golden/onnx_streaming/expected_stateless.npy");

fn npy_f32(b: &[u8]) -> Vec<f32> {
    microquant::npy::Npy::parse(b).unwrap().to_f32()
}

fn sqnr(want: &[f32], got: &[f32]) -> f64 {
    let (mut s, mut n) = (0f64, 0f64);
    for (&a, &b) in want.iter().zip(got) {
        s += f64::from(a) * f64::from(a);
        n += f64::from(a - b) * f64::from(a - b);
    }
    10.0 * (s / n.max(1e-30)).log10()
}

/// A streaming LSTM (tests/golden/onnx_streaming/, written by tests/gen/gen_onnx_streaming.py:
/// the state as graph inputs and outputs, as Silero VAD's) loaded with its initial state fixed
/// (`inputValues`) and only its probability kept (`outputNames`), calibrated on a stream (the
/// default: the samples in order as one sequence), run over a stream of frames: it follows ONNX
/// Runtime's stream (the state fed back), and after `resetState()` starts over; with
/// `resetState()` before each frame it follows ONNX Runtime's zero-state runs.
#[wasm_bindgen_test]
async fn a_streaming_lstm_keeps_its_state_between_runs() {
    let zeros = numbers(&[0.0; 16]);
    let options = obj(&[
        ("inputValues", obj(&[("h0", zeros.clone()), ("c0", zeros)])),
        ("outputNames", ["y"].iter().map(|s| JsValue::from_str(s)).collect::<Array>().into()),
    ]);
    let fm = FloatModel::try_from_js_value(load_model(bytes(STREAM_MODEL), Some(options)).unwrap()).unwrap();
    let v = wasm_bindgen_futures::JsFuture::from(fm.calibrate_and_quantize(bytes(STREAM_CALIB), None)).await.unwrap();
    let q = microquant_wasm::QuantizedModel::try_from_js_value(v).unwrap();
    let frames = npy_f32(STREAM);
    let run = |reset: bool| -> Vec<f32> {
        frames
            .chunks(12)
            .map(|f| {
                if reset {
                    q.reset_state().unwrap();
                }
                Float32Array::from(q.run_float(Float32Array::from(f).into()).unwrap().get(0)).to_vec()[0]
            })
            .collect()
    };
    let streamed = run(false);
    let s = sqnr(&npy_f32(STREAMED), &streamed);
    assert!(s >= 25.0, "stream: {s:.1} dB");
    q.reset_state().unwrap();
    assert_eq!(run(false), streamed, "resetState starts the stream over");
    let s0 = sqnr(&npy_f32(STATELESS), &run(true));
    assert!(s0 >= 20.0, "zero-state frames: {s0:.1} dB");
    // outputNames on a TFLite model: named as ONNX-only.
    let o = obj(&[("outputNames", Array::new().into())]);
    let e = load_model(bytes(KWS_INT8), Some(o)).unwrap_err();
    assert!(message(&e).contains("options.outputNames applies to ONNX models"), "{}", message(&e));
}
