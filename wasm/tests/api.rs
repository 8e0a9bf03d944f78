//! The JS API of the npm package, in Node and (with `WASM_BINDGEN_USE_BROWSER=1`) headless
//! Chromium: loading, calibration (chunked, progress, cancellation, split and merged), the
//! quantized model (sizes, run, exports), quantized tensors, and the error messages for bad
//! input.
//!
//! The expected `.mq`, report and QDQ ONNX bytes of the bundled digits example are the CLI's
//! (`microquant quantize`, `wasm/tests/data/gen_cli_expected.sh`): the package must give the
//! same bytes for the same model, samples and options. The only option passed on top is the
//! CLI's producer string (`cli_producer.txt`), which names the front end in the metadata.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Float32Array, Function, Int8Array, Object, Promise, Reflect, Uint8Array};
use microquant_tests::kernels::Oracle;
use microquant_tests::models::mlperf_tiny;
use microquant_wasm::{Calibration, FloatModel, HybridModel, QTensor, QuantizedModel, load_model, parse_npy};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

const DIGITS: &[u8] = include_bytes!("../../web-demo/examples/digits_cnn.onnx");
const CALIB: &[u8] = include_bytes!("../../web-demo/examples/digits_calib.npy");
const LABELS: &[u8] = include_bytes!("../../web-demo/examples/digits_labels.npy");
const CLI_PRODUCER: &str = include_str!("data/cli_producer.txt");
const KWS_INT8: &[u8] = include_bytes!("../../models/mlperf-tiny/kws_ref_model_int8.tflite");
const IC_INT8: &[u8] = include_bytes!("../../models/mlperf-tiny/ic_resnet8_int8.tflite");
const VWW_INT8: &[u8] = include_bytes!("../../models/mlperf-tiny/vww_96_int8.tflite");
const AD_INT8: &[u8] = include_bytes!("../../models/mlperf-tiny/ad01_int8.tflite");
const UNSUPPORTED_OP: &[u8] = include_bytes!("../../tests/golden/onnx/errors/unsupported_op.onnx");

// ---- helpers ----

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

fn message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_else(|| format!("{e:?}"))
}

fn is_type_error(e: &JsValue) -> bool {
    e.dyn_ref::<js_sys::TypeError>().is_some()
}

fn digits() -> FloatModel {
    let v = load_model(bytes(DIGITS), Some(obj(&[("name", "digits_cnn.onnx".into())]))).unwrap();
    FloatModel::try_from_js_value(v).unwrap()
}

fn labels() -> Vec<usize> {
    let a = parse_npy(bytes(LABELS)).unwrap();
    Float32Array::from(Reflect::get(&a, &"data".into()).unwrap()).to_vec().iter().map(|&v| v as usize).collect()
}

fn label_array() -> JsValue {
    labels().iter().map(|&l| JsValue::from_f64(l as f64)).collect::<Array>().into()
}

/// The calibration images as 100 `Float32Array`s of 64 values (NCHW [1, 1, 8, 8]).
fn images() -> Vec<Vec<f32>> {
    let a = parse_npy(bytes(CALIB)).unwrap();
    Float32Array::from(Reflect::get(&a, &"data".into()).unwrap()).to_vec().chunks(64).map(<[f32]>::to_vec).collect()
}

fn sample_array(images: &[Vec<f32>]) -> JsValue {
    images.iter().map(|v| JsValue::from(Float32Array::from(v.as_slice()))).collect::<Array>().into()
}

async fn quantized(p: Promise) -> Result<QuantizedModel, JsValue> {
    let v = JsFuture::from(p).await?;
    Ok(QuantizedModel::try_from_js_value(v).unwrap())
}

fn cli_options(extra: &[(&str, JsValue)]) -> JsValue {
    let meta = obj(&[("producer", CLI_PRODUCER.trim().into())]);
    let mut e: Vec<(&str, JsValue)> = vec![("labels", label_array()), ("metadata", meta)];
    e.extend(extra.iter().cloned());
    obj(&e)
}

fn assert_same_bytes(what: &str, expected: &[u8], actual: &[u8]) {
    assert_eq!(expected.len(), actual.len(), "{what}: length");
    if let Some(i) = expected.iter().zip(actual).position(|(a, b)| a != b) {
        panic!("{what}: first difference at byte {i}: expected {:#04x}, got {:#04x}", expected[i], actual[i]);
    }
}

// ---- the same bytes as the CLI ----

async fn check_cli_case(name: &str, mq: &[u8], report: &str, qdq: &[u8], extra: &[(&str, JsValue)]) {
    let m = digits();
    let q = quantized(m.calibrate_and_quantize(bytes(CALIB), Some(cli_options(extra)))).await.unwrap();
    assert_same_bytes(&format!("{name}.mq"), mq, &q.to_bytes().to_vec());
    assert_eq!(q.report_json().unwrap(), report, "{name}: report JSON");
    assert_same_bytes(&format!("{name}.qdq.onnx"), qdq, &q.to_qdq_onnx(None).unwrap().to_vec());
}

#[wasm_bindgen_test]
async fn same_bytes_as_the_cli_default() {
    check_cli_case(
        "digits_default",
        include_bytes!("data/digits_default.mq"),
        include_str!("data/digits_default.report.json"),
        include_bytes!("data/digits_default.qdq.onnx"),
        &[],
    )
    .await;
}

#[wasm_bindgen_test]
async fn same_bytes_as_the_cli_entropy_per_tensor() {
    check_cli_case(
        "digits_entropy_per_tensor",
        include_bytes!("data/digits_entropy_per_tensor.mq"),
        include_str!("data/digits_entropy_per_tensor.report.json"),
        include_bytes!("data/digits_entropy_per_tensor.qdq.onnx"),
        &[("observer", "entropy".into()), ("perChannel", false.into())],
    )
    .await;
}

#[wasm_bindgen_test]
async fn same_bytes_as_the_cli_percentile_overrides_single_rounding() {
    check_cli_case(
        "digits_percentile_single",
        include_bytes!("data/digits_percentile_single.mq"),
        include_str!("data/digits_percentile_single.report.json"),
        include_bytes!("data/digits_percentile_single.qdq.onnx"),
        &[
            ("observer", "percentile".into()),
            ("percentile", 99.9.into()),
            ("overrides", obj(&[("/fc2/Gemm", "histogram".into())])),
            ("rounding", "single".into()),
        ],
    )
    .await;
}

/// Some layers in 16x8 (int16 activations, int8 weights) in an int8 model (`int16Layers`, the
/// CLI's `--int16`), with the two-pass histogram observer.
#[wasm_bindgen_test]
async fn same_bytes_as_the_cli_int16_layers() {
    let layers: Array = ["/pw/Conv", "/fc1/Gemm"].iter().map(|&l| JsValue::from(l)).collect();
    check_cli_case(
        "digits_int16_layers",
        include_bytes!("data/digits_int16_layers.mq"),
        include_str!("data/digits_int16_layers.report.json"),
        include_bytes!("data/digits_int16_layers.qdq.onnx"),
        &[("observer", "histogram".into()), ("int16Layers", layers.into())],
    )
    .await;
}

/// 4-bit weights rounded by AdaRound (`weightBits: 4, adaround: true`, the CLI's `--weight-bits 4
/// --adaround`): the optimization (Grams through the float GEMM, Adam) gives the CLI's weights
/// bit for bit, so the same `.mq`, report and INT4 QDQ ONNX.
#[wasm_bindgen_test]
async fn same_bytes_as_the_cli_w4_adaround() {
    check_cli_case(
        "digits_w4_adaround",
        include_bytes!("data/digits_w4_adaround.mq"),
        include_str!("data/digits_w4_adaround.report.json"),
        include_bytes!("data/digits_w4_adaround.qdq.onnx"),
        &[("weightBits", 4.into()), ("adaround", true.into())],
    )
    .await;
}

/// A QDQ ONNX model (the CLI's portable export of the default case, `--qdq-portable`, which
/// `toQdqOnnx({ portable: true })` reproduces byte for byte) loads as a float model that carries
/// its quantization: quantizing it keeps every scale and zero point (those of the model it was
/// exported from) and gives the CLI's bytes for the same input.
#[wasm_bindgen_test]
async fn qdq_onnx_input_keeps_its_scales_and_gives_the_cli_bytes() {
    let qdq: &[u8] = include_bytes!("data/portable/digits_default.qdq.onnx");
    let default = quantized(digits().calibrate_and_quantize(bytes(CALIB), Some(cli_options(&[])))).await.unwrap();
    let portable = default.to_qdq_onnx(Some(obj(&[("portable", true.into())]))).unwrap();
    assert_same_bytes("portable/digits_default.qdq.onnx", qdq, &portable.to_vec());
    let e = default.to_qdq_onnx(Some(obj(&[("portable", "yes".into())]))).unwrap_err();
    assert!(message(&e).contains("options.portable must be a boolean"), "{}", message(&e));
    let v = load_model(bytes(qdq), Some(obj(&[("name", "digits_default.qdq.onnx".into())]))).unwrap();
    let m = FloatModel::try_from_js_value(v).unwrap();
    assert!(m.carries_quantization());
    assert!(!digits().carries_quantization());
    let q = quantized(m.calibrate_and_quantize(bytes(CALIB), Some(cli_options(&[])))).await.unwrap();
    assert_same_bytes("digits_qdq_input.mq", include_bytes!("data/digits_qdq_input.mq"), &q.to_bytes().to_vec());
    assert_eq!(q.report_json().unwrap(), include_str!("data/digits_qdq_input.report.json"));
    let layers = |r: JsValue| -> Vec<(f64, f64, String)> {
        Array::from(&Reflect::get(&r, &"layers".into()).unwrap())
            .iter()
            .map(|l| {
                let f = |k: &str| Reflect::get(&l, &k.into()).unwrap();
                (f("scale").as_f64().unwrap(), f("zeroPoint").as_f64().unwrap(), f("qparams").as_string().unwrap())
            })
            .collect()
    };
    let carried = layers(q.report());
    let original = quantized(digits().calibrate_and_quantize(bytes(CALIB), None)).await.unwrap();
    let from_float = layers(original.report());
    assert_eq!(carried.len(), from_float.len());
    for (i, (c, f)) in carried.iter().zip(&from_float).enumerate() {
        assert_eq!((c.0, c.1), (f.0, f.1), "layer {i}: the scale and zero point the QDQ file carries");
        if f.2 == "minmax" {
            assert_eq!(c.2, "carried", "layer {i}");
        }
    }
}

/// Calibration split over two "workers" (two Calibrations, each a share of the samples, their
/// states shipped as bytes and merged, pass by pass) gives the same `.mq` as one calibration.
#[wasm_bindgen_test]
async fn split_calibration_merges_to_the_same_bytes() {
    let imgs = images();
    for observer in ["auto", "minmax", "entropy", "histogram"] {
        let m = digits();
        let opts = obj(&[("observer", observer.into())]);
        let whole = m.create_calibration(Some(opts.clone())).unwrap();
        JsFuture::from(whole.calibrate(sample_array(&imgs), None)).await.unwrap();
        let merged = m.create_calibration(Some(opts.clone())).unwrap();
        while !merged.complete() {
            let state = merged.to_state().unwrap();
            let (a, b) = imgs.split_at(37);
            let w1 = m.create_calibration(Some(opts.clone())).unwrap();
            let w2 = m.create_calibration(Some(opts.clone())).unwrap();
            w1.load_state(state.clone().into()).unwrap();
            w2.load_state(state.into()).unwrap();
            JsFuture::from(w1.observe(sample_array(a), None)).await.unwrap();
            JsFuture::from(w2.observe(sample_array(b), None)).await.unwrap();
            // The main thread: a fresh copy of the pass's start, plus both workers' statistics.
            merged.merge(w1.to_state().unwrap().into()).unwrap();
            merged.merge(w2.to_state().unwrap().into()).unwrap();
            assert_eq!(merged.samples(), imgs.len());
            merged.end_pass().unwrap();
        }
        assert_eq!(merged.passes(), if observer == "minmax" { 1 } else { 2 });
        let qa = quantized(m.quantize(&whole, None)).await.unwrap();
        let qb = quantized(m.quantize(&merged, None)).await.unwrap();
        assert_same_bytes(observer, &qa.to_bytes().to_vec(), &qb.to_bytes().to_vec());
    }
}

/// The automatic observers' error pass measured from what the first pass kept (`calibrate`
/// over every pass; `observe` with `keepForReplay` then `replayPass` in split "workers") gives
/// the same statistics bit for bit as running the samples again (`observe` + `endPass` pass by
/// pass: no replay), hence the same `.mq`.
#[wasm_bindgen_test]
async fn replayed_error_pass_gives_the_same_state_and_bytes() {
    let imgs = images();
    let m = digits();
    let keep = || obj(&[("keepForReplay", true.into())]);
    // No replay: each pass runs the samples.
    let again = m.create_calibration(None).unwrap();
    while !again.complete() {
        JsFuture::from(again.observe(sample_array(&imgs), None)).await.unwrap();
        again.end_pass().unwrap();
    }
    // One object, every pass: replayed inside `calibrate`.
    let whole = m.create_calibration(None).unwrap();
    JsFuture::from(whole.calibrate(sample_array(&imgs), None)).await.unwrap();
    assert_eq!(whole.to_state().unwrap().to_vec(), again.to_state().unwrap().to_vec(), "calibrate");
    // Split: each "worker" keeps its share in the first pass and replays it in the second.
    let (a, b) = imgs.split_at(37);
    let merged = m.create_calibration(None).unwrap();
    let start = merged.to_state().unwrap();
    let (w1, w2) = (m.create_calibration(None).unwrap(), m.create_calibration(None).unwrap());
    w1.load_state(start.clone().into()).unwrap();
    w2.load_state(start.into()).unwrap();
    // The first worker's share in two calls: the kept samples are appended.
    JsFuture::from(w1.observe(sample_array(&a[..20]), Some(keep()))).await.unwrap();
    JsFuture::from(w1.observe(sample_array(&a[20..]), Some(keep()))).await.unwrap();
    JsFuture::from(w2.observe(sample_array(b), Some(keep()))).await.unwrap();
    merged.merge(w1.to_state().unwrap().into()).unwrap();
    merged.merge(w2.to_state().unwrap().into()).unwrap();
    merged.end_pass().unwrap();
    assert_eq!(merged.pass(), 1);
    let start = merged.to_state().unwrap();
    for w in [&w1, &w2] {
        w.load_state(start.clone().into()).unwrap();
        assert!(w.replay_pass().unwrap(), "the worker kept its samples");
        assert!(!w.replay_pass().unwrap(), "the kept samples are used once");
    }
    assert_eq!((w1.samples(), w2.samples()), (a.len(), b.len()));
    merged.merge(w1.to_state().unwrap().into()).unwrap();
    merged.merge(w2.to_state().unwrap().into()).unwrap();
    merged.end_pass().unwrap();
    assert!(merged.complete());
    // Nothing kept (no option): nothing to replay.
    let plain = m.create_calibration(None).unwrap();
    JsFuture::from(plain.observe(sample_array(&imgs), None)).await.unwrap();
    plain.end_pass().unwrap();
    assert!(!plain.replay_pass().unwrap());
    let qa = quantized(m.quantize(&again, None)).await.unwrap().to_bytes().to_vec();
    for (what, cal) in [("calibrate", &whole), ("workers", &merged)] {
        let q = quantized(m.quantize(cal, None)).await.unwrap();
        assert_same_bytes(what, &qa, &q.to_bytes().to_vec());
    }
}

/// `images` as batches of `size` Float32Arrays back to back, in a JS array.
fn batches(images: &[Vec<f32>], size: usize) -> JsValue {
    images.chunks(size).map(|b| JsValue::from(Float32Array::from(b.concat().as_slice()))).collect::<Array>().into()
}

/// Calibration from a stream of batches (an async iterable that starts over, a function
/// returning one per pass, a one-shot async generator) holds the same statistics as from the
/// whole buffer; a one-shot generator cannot feed two passes, and a bad batch is named.
#[wasm_bindgen_test]
async fn async_iterable_batches_calibrate_as_the_whole_buffer() {
    let imgs = images();
    // A re-iterable object, a factory, and an async generator object (one pass only).
    let reiterable =
        Function::new_with_args("b", "return { async *[Symbol.asyncIterator]() { for (const x of b) yield x; } };");
    let factory = Function::new_with_args("b", "return () => (async function* () { for (const x of b) yield x; })();");
    let one_shot = Function::new_with_args("b", "return (async function* () { for (const x of b) yield x; })();");
    for observer in ["minmax", "entropy"] {
        let m = digits();
        let opts = obj(&[("observer", observer.into())]);
        let whole = m.create_calibration(Some(opts.clone())).unwrap();
        JsFuture::from(whole.calibrate(bytes(CALIB), None)).await.unwrap();
        let want = whole.to_state().unwrap().to_vec();
        for (kind, make) in [("re-iterable", &reiterable), ("factory", &factory), ("one-shot", &one_shot)] {
            let source = make.call1(&JsValue::UNDEFINED, &batches(&imgs, 13)).unwrap();
            let cal = m.create_calibration(Some(opts.clone())).unwrap();
            let r = JsFuture::from(cal.calibrate(source, None)).await;
            if kind == "one-shot" && observer != "minmax" {
                let e = r.unwrap_err();
                assert!(message(&e).contains("cannot start over for pass 2"), "{}", message(&e));
                continue;
            }
            r.unwrap_or_else(|e| panic!("{observer} {kind}: {}", message(&e)));
            assert!(cal.complete());
            assert_eq!(cal.to_state().unwrap().to_vec(), want, "{observer} {kind}: the statistics differ");
        }
    }
    // A batch that is not a whole number of samples, an iterator that throws.
    let m = digits();
    let mut bad = images();
    bad[20].truncate(10);
    let source = reiterable.call1(&JsValue::UNDEFINED, &batches(&bad, 13)).unwrap();
    let e = JsFuture::from(m.create_calibration(None).unwrap().calibrate(source, None)).await.unwrap_err();
    assert!(message(&e).contains("batch 1"), "{}", message(&e));
    let throws = Function::new_no_args(
        "return { [Symbol.asyncIterator]() { return { next() { return Promise.reject(new Error('disk gone')); } }; } };",
    )
    .call0(&JsValue::UNDEFINED)
    .unwrap();
    let e = JsFuture::from(m.create_calibration(None).unwrap().calibrate(throws, None)).await.unwrap_err();
    assert!(message(&e).contains("batch 0: disk gone"), "{}", message(&e));
}

// ---- progress and cancellation ----

#[wasm_bindgen_test]
async fn progress_is_reported_and_abort_cancels() {
    let m = digits();
    let cal = m.create_calibration(Some(obj(&[("observer", "histogram".into())]))).unwrap();
    let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::<(u32, f64)>::new()));
    let c2 = calls.clone();
    let cb = Closure::<dyn FnMut(JsValue)>::new(move |p: JsValue| {
        let pass = Reflect::get(&p, &"pass".into()).unwrap().as_f64().unwrap() as u32;
        let done = Reflect::get(&p, &"done".into()).unwrap().as_f64().unwrap();
        c2.borrow_mut().push((pass, done));
    });
    // chunkMs 0: yield and report after every sample.
    let opts = obj(&[("onProgress", cb.as_ref().clone()), ("chunkMs", 0.into())]);
    JsFuture::from(cal.calibrate(bytes(CALIB), Some(opts))).await.unwrap();
    assert!(cal.complete());
    {
        let calls = calls.borrow();
        assert_eq!(calls.len(), 200, "one report per sample and pass");
        assert_eq!(calls[0], (0, 1.0));
        assert_eq!(calls[199], (1, 100.0));
    }

    // Abort from the progress callback after 3 samples: the promise rejects with the signal's
    // reason and the calibration is left as it was.
    let ctor: Function = Reflect::get(&js_sys::global(), &"AbortController".into()).unwrap().into();
    let controller = Reflect::construct(&ctor, &Array::new()).unwrap();
    let abort: Function = Reflect::get(&controller, &"abort".into()).unwrap().into();
    let signal = Reflect::get(&controller, &"signal".into()).unwrap();
    let ctl2 = controller.clone();
    let cb = Closure::<dyn FnMut(JsValue)>::new(move |p: JsValue| {
        if Reflect::get(&p, &"done".into()).unwrap().as_f64() == Some(3.0) {
            abort.call0(&ctl2).unwrap();
        }
    });
    let cal = m.create_calibration(None).unwrap();
    let opts = obj(&[("onProgress", cb.as_ref().clone()), ("signal", signal.clone()), ("chunkMs", 0.into())]);
    let err = JsFuture::from(cal.calibrate(bytes(CALIB), Some(opts))).await.unwrap_err();
    let name = Reflect::get(&err, &"name".into()).unwrap().as_string().unwrap_or_default();
    assert_eq!(name, "AbortError", "{err:?}");
    assert_eq!((cal.pass(), cal.samples(), cal.complete()), (0, 0, false));
    // An already aborted signal rejects at once; so does quantize with it.
    let opts = obj(&[("signal", signal)]);
    assert!(JsFuture::from(cal.calibrate(bytes(CALIB), Some(opts.clone()))).await.is_err());
    assert!(JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(opts))).await.is_err());
    // Not complete: quantize says so.
    let e = JsFuture::from(m.quantize(&cal, None)).await.unwrap_err();
    assert!(message(&e).contains("not complete"), "{}", message(&e));
}

// ---- weight-only and dynamic (hybrid models) ----

/// Awaits `quantized` (`quantizeWeightOnly` or `quantizeDynamic` on the digits model with the
/// example's samples and labels) and checks it is the CLI's: `mode`, the ONNX bytes, the report
/// JSON, the 5 quantized layers.
async fn hybrid_as_the_cli(quantized: js_sys::Promise, mode: &str, onnx: &[u8], report: &str) -> HybridModel {
    let h = HybridModel::try_from_js_value(JsFuture::from(quantized).await.unwrap()).unwrap();
    assert_eq!(h.mode(), mode);
    assert_same_bytes(&format!("digits {mode} ONNX"), onnx, &h.to_qdq_onnx().unwrap().to_vec());
    assert_eq!(h.report_json().unwrap(), report, "{mode} report JSON");
    assert_eq!(h.quantized_layers().length(), 5);
    h
}

/// Weight-only quantization gives the CLI's ONNX model (`tests/golden/hybrid/digits.onnx`,
/// whose weights are checked against ONNX Runtime's quantizer) and report; it runs in float, and
/// has no `.mq`.
#[wasm_bindgen_test]
async fn weight_only_gives_the_cli_onnx_and_report() {
    let m = digits();
    let options = obj(&[("evalSamples", bytes(CALIB)), ("labels", label_array())]);
    let w = hybrid_as_the_cli(
        m.quantize_weight_only(Some(options)),
        "weight-only",
        include_bytes!("../../tests/golden/hybrid/digits.onnx"),
        include_str!("data/digits_weight_only.report.json"),
    )
    .await;
    let report = w.report();
    let layer0 = Reflect::get(&Reflect::get(&report, &"layers".into()).unwrap(), &0.into()).unwrap();
    assert!(Reflect::get(&layer0, &"scale".into()).unwrap().is_null());
    let sizes = w.sizes();
    let size = |k: &str| Reflect::get(&sizes, &k.into()).unwrap().as_f64().unwrap();
    assert_eq!((size("floatWeightBytes"), size("weightBytes")), (10856.0, 2936.0));
    // Float compute with int8 weights: close to the float model, not equal to it.
    let x = Float32Array::from(images()[3].as_slice());
    let (yw, yf) = (
        Float32Array::from(w.run(x.clone().into()).unwrap().get(0)).to_vec(),
        Float32Array::from(m.run(x.into()).unwrap().get(0)).to_vec(),
    );
    let d = yw.iter().zip(&yf).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(d > 0.0 && d < 0.05, "weight-only vs float: {d}");
    // No .mq form; options of the static mode are named.
    for e in [w.to_bytes().unwrap_err(), w.to_c_header(None).unwrap_err(), w.to_rust_source(None).unwrap_err()] {
        assert!(message(&e).contains("no .mq form") && message(&e).contains("toQdqOnnx()"), "{}", message(&e));
    }
    let e =
        JsFuture::from(m.quantize_weight_only(Some(obj(&[("int16Layers", Array::new().into())])))).await.unwrap_err();
    assert!(message(&e).contains("options.int16Layers"), "{}", message(&e));
    // Without samples: the model, no report.
    let v = JsFuture::from(m.quantize_weight_only(None)).await.unwrap();
    let w = HybridModel::try_from_js_value(v).unwrap();
    assert!(w.report().is_null());
    assert_same_bytes(
        "digits weight-only ONNX (no samples)",
        include_bytes!("../../tests/golden/hybrid/digits.onnx"),
        &w.to_qdq_onnx().unwrap().to_vec(),
    );
}

/// Dynamic quantization gives the CLI's ONNX model (`tests/golden/hybrid/dynamic_digits.onnx`,
/// which ONNX Runtime runs as its own `quantize_dynamic` model) and report: every layer's error
/// in the report comes from the dynamic run, so equal reports mean the wasm and host runs agree.
#[wasm_bindgen_test]
async fn dynamic_gives_the_cli_onnx_and_report() {
    let m = digits();
    let options = obj(&[("evalSamples", bytes(CALIB)), ("labels", label_array())]);
    let d = hybrid_as_the_cli(
        m.quantize_dynamic(Some(options)),
        "dynamic",
        include_bytes!("../../tests/golden/hybrid/dynamic_digits.onnx"),
        include_str!("data/digits_dynamic.report.json"),
    )
    .await;
    // The dynamic run is neither the float run nor the weight-only one (its inputs are rounded
    // to uint8 too), and close to both.
    let w = HybridModel::try_from_js_value(JsFuture::from(m.quantize_weight_only(None)).await.unwrap()).unwrap();
    let x = Float32Array::from(images()[3].as_slice());
    let run = |y: Array| Float32Array::from(y.get(0)).to_vec();
    let (yd, yw, yf) =
        (run(d.run(x.clone().into()).unwrap()), run(w.run(x.clone().into()).unwrap()), run(m.run(x.into()).unwrap()));
    for (other, what) in [(&yw, "weight-only"), (&yf, "float")] {
        let diff = yd.iter().zip(other).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(diff > 0.0 && diff < 0.1, "dynamic vs {what}: {diff}");
    }
    for e in [d.to_bytes().unwrap_err(), d.to_c_header(None).unwrap_err()] {
        assert!(message(&e).contains("a dynamic model") && message(&e).contains("no .mq form"), "{}", message(&e));
    }
    let e = JsFuture::from(m.quantize_dynamic(Some(obj(&[("rounding", "single".into())])))).await.unwrap_err();
    assert!(message(&e).contains("options.rounding") && message(&e).contains("a dynamic model"), "{}", message(&e));
    let e = JsFuture::from(m.quantize_dynamic(Some(obj(&[("labels", label_array())])))).await.unwrap_err();
    assert!(message(&e).contains("options.evalSamples"), "{}", message(&e));
}

// ---- float model, quantized model, tensors ----

#[wasm_bindgen_test]
async fn float_and_int8_inference_and_sizes() {
    let m = digits();
    assert_eq!(m.format(), "onnx");
    let inputs = m.inputs();
    let shape = Array::from(&Reflect::get(&inputs.get(0), &"shape".into()).unwrap());
    assert_eq!(shape.to_vec().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>(), [1.0, 1.0, 8.0, 8.0]);
    assert_eq!(m.macs(), 13632.0);
    // Float accuracy on the 100 images: ONNX Runtime's (web-demo/examples/digits.json: 0.97).
    let imgs = images();
    let labels = labels();
    let argmax = |v: &[f32]| (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
    let mut hits = 0;
    for (x, &l) in imgs.iter().zip(&labels) {
        let y = Float32Array::from(m.run(Float32Array::from(x.as_slice()).into()).unwrap().get(0)).to_vec();
        assert!((y.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        hits += usize::from(argmax(&y) == l);
    }
    assert_eq!(hits, 97);

    let q = quantized(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("labels", label_array())])))).await.unwrap();
    assert_eq!(q.source(), "quantized");
    assert_eq!((q.model_bytes(), q.arena_bytes(), q.macs()), (8360, 1024, 13632.0));
    let report = q.report();
    let model = Reflect::get(&report, &"model".into()).unwrap();
    assert_eq!(Reflect::get(&model, &"int8Accuracy".into()).unwrap().as_f64(), Some(0.97));
    let layers = Array::from(&Reflect::get(&report, &"layers".into()).unwrap());
    assert_eq!(layers.length(), 8);
    assert!(Reflect::get(&layers.get(0), &"sqnrDb".into()).unwrap().as_f64().unwrap() > 30.0);

    // int8 inference: the input's qparams quantize the floats; outputs are QTensors.
    let mut qhits = 0;
    for (x, &l) in imgs.iter().zip(&labels) {
        let out = q.run(Float32Array::from(x.as_slice()).into()).unwrap().get(0);
        let t = QTensor::try_from_js_value(out).unwrap();
        assert_eq!((t.scale(), t.zero_point(), t.dtype()), (1.0 / 256.0, -128, "int8".to_string()));
        qhits += usize::from(argmax(&t.dequantize().to_vec()) == l);
    }
    assert_eq!(qhits, 97, "the report's int8 accuracy");
    // A QTensor with the input's parameters runs the same; with others, a message says which.
    let info = q.inputs().get(0);
    let scale = Reflect::get(&info, &"scale".into()).unwrap().as_f64().unwrap();
    let zp = Reflect::get(&info, &"zeroPoint".into()).unwrap().as_f64().unwrap();
    let shape = Reflect::get(&info, &"shape".into()).unwrap();
    let t = QTensor::from_float(Float32Array::from(imgs[0].as_slice()).into(), shape.clone(), scale, zp, None).unwrap();
    let a = QTensor::try_from_js_value(q.run(t.into()).unwrap().get(0)).unwrap();
    let b = QTensor::try_from_js_value(q.run(Float32Array::from(imgs[0].as_slice()).into()).unwrap().get(0)).unwrap();
    assert_eq!(Int8Array::from(a.data()).to_vec(), Int8Array::from(b.data()).to_vec());
    let t = QTensor::from_float(Float32Array::from(imgs[0].as_slice()).into(), shape, 0.5, 0.0, None).unwrap();
    let e = q.run(t.into()).unwrap_err();
    assert!(message(&e).contains("scale 0.5"), "{}", message(&e));
    // Wrong sizes name the input and its shape.
    let e = q.run(Float32Array::new_with_length(63).into()).unwrap_err();
    assert_eq!(message(&e), "input 0 'x' has shape [1, 1, 8, 8] (64 values), got 63 values");
    let e = m.run(Float32Array::new_with_length(65).into()).unwrap_err();
    assert_eq!(message(&e), "input 0 'x' has shape [1, 1, 8, 8] (64 values), got 65 values");

    // The .mq round trip: loaded back, it runs the same.
    let back = QuantizedModel::try_from_js_value(load_model(q.to_bytes().into(), None).unwrap()).unwrap();
    assert_eq!(back.source(), "mq");
    let c =
        QTensor::try_from_js_value(back.run(Float32Array::from(imgs[0].as_slice()).into()).unwrap().get(0)).unwrap();
    assert_eq!(Int8Array::from(c.data()).to_vec(), Int8Array::from(b.data()).to_vec());
    let e = back.to_qdq_onnx(None).unwrap_err();
    assert!(message(&e).contains("does not keep"), "{}", message(&e));
}

/// The four MLPerf Tiny int8 TFLite models through the JS API (`loadModel`, `QTensor` inputs,
/// `run`): outputs bit-identical to TFLite Micro's on the golden inputs, as the host runtime's.
#[wasm_bindgen_test]
fn int8_tflite_through_the_api_is_bit_exact_with_tflite_micro() {
    let golden = mlperf_tiny();
    for (name, file) in [("kws", KWS_INT8), ("ic", IC_INT8), ("vww", VWW_INT8), ("ad", AD_INT8)] {
        let g = golden.models.iter().find(|m| m.name == name).unwrap();
        let q = QuantizedModel::try_from_js_value(load_model(bytes(file), None).unwrap()).unwrap();
        assert_eq!(q.source(), "tflite");
        if name == "kws" {
            assert_eq!(q.arena_bytes(), 13392);
        }
        let info = q.inputs().get(0);
        let scale = Reflect::get(&info, &"scale".into()).unwrap().as_f64().unwrap();
        let zp = Reflect::get(&info, &"zeroPoint".into()).unwrap().as_f64().unwrap();
        for s in g.samples.iter().take(5) {
            let x = Int8Array::from(g.input(s.sample).as_slice());
            let t = QTensor::new(x.into(), Reflect::get(&info, &"shape".into()).unwrap(), scale, zp).unwrap();
            let y = QTensor::try_from_js_value(q.run(t.into()).unwrap().get(0)).unwrap();
            assert_eq!(Int8Array::from(y.data()).to_vec(), s.expected(Oracle::Tflm).i8(), "{name} sample {}", s.sample);
        }
        // It exports as QDQ ONNX too.
        assert!(q.to_qdq_onnx(None).unwrap().length() > 1000, "{name}");
    }
}

#[wasm_bindgen_test]
fn quantized_tensors_are_their_own_type() {
    let t = QTensor::from_float(
        Float32Array::from(&[0.0f32, 0.25, -1.0, 100.0][..]).into(),
        [4].iter().map(|&d| JsValue::from(d)).collect::<Array>().into(),
        0.5,
        -3.0,
        None,
    )
    .unwrap();
    // round(x / 0.5) + (-3), half away from zero, saturated.
    assert_eq!(Int8Array::from(t.data()).to_vec(), [-3, -2, -5, 127]);
    assert_eq!(t.dequantize().to_vec(), [0.0, 0.5, -1.0, 65.0]);
    assert_eq!(t.to_string_js(), "QTensor(int8 [4], scale 0.5, zeroPoint -3)");
    // A QTensor where floats are expected: a TypeError saying what to do.
    let e = microquant_wasm::quantize_linear_js(t.clone().into(), 0.1, 0).unwrap_err();
    assert!(is_type_error(&e));
    assert!(message(&e).contains("call .dequantize()"), "{}", message(&e));
    let m = digits();
    let e = m.run(t.clone().into()).unwrap_err();
    assert!(is_type_error(&e) && message(&e).contains("got a QTensor"), "{}", message(&e));
    // Bad construction.
    let shape: JsValue = [2].iter().map(|&d| JsValue::from(d)).collect::<Array>().into();
    let e = QTensor::new(Float32Array::new_with_length(2).into(), shape.clone(), 1.0, 0.0).unwrap_err();
    assert!(is_type_error(&e) && message(&e).contains("Float32Array"), "{}", message(&e));
    let e = QTensor::new(Int8Array::new_with_length(3).into(), shape.clone(), 1.0, 0.0).unwrap_err();
    assert_eq!(message(&e), "shape [2] has 2 elements but the data has 3");
    let e = QTensor::new(Int8Array::new_with_length(2).into(), shape.clone(), 0.0, 0.0).unwrap_err();
    assert!(message(&e).contains("scale"), "{}", message(&e));
    let e = QTensor::new(Int8Array::new_with_length(2).into(), shape, 1.0, 200.0).unwrap_err();
    assert!(message(&e).contains("zero point 200"), "{}", message(&e));
}

#[wasm_bindgen_test]
async fn samples_of_the_wrong_kind_or_size_are_named() {
    let m = digits();
    let t = QTensor::from_float(
        Float32Array::new_with_length(64).into(),
        [64].iter().map(|&d| JsValue::from(d)).collect::<Array>().into(),
        1.0,
        0.0,
        None,
    )
    .unwrap();
    let e = JsFuture::from(m.calibrate_and_quantize(Array::of1(&t.into()).into(), None)).await.unwrap_err();
    assert!(is_type_error(&e) && message(&e).contains("got a QTensor"), "{}", message(&e));
    let e =
        JsFuture::from(m.calibrate_and_quantize(Float32Array::new_with_length(100).into(), None)).await.unwrap_err();
    assert!(
        message(&e)
            .contains("100 values, not a whole number of samples of input 'x' (shape [1, 1, 8, 8], 64 values each)"),
        "{}",
        message(&e)
    );
    let e = JsFuture::from(m.calibrate_and_quantize(Int8Array::new_with_length(64).into(), None)).await.unwrap_err();
    assert!(is_type_error(&e) && message(&e).contains("Int8Array"), "{}", message(&e));
    // A NaN names the sample and the tensor.
    let mut x = images()[0].clone();
    x[5] = f32::NAN;
    let e = JsFuture::from(m.calibrate_and_quantize(Float32Array::from(x.as_slice()).into(), None)).await.unwrap_err();
    assert!(message(&e).starts_with("calibration sample 0:") && message(&e).contains("non-finite"), "{}", message(&e));
    // Options of the wrong kind.
    let e = m.create_calibration(Some(obj(&[("observer", "max".into())]))).unwrap_err();
    assert!(message(&e).contains("\"minmax\", \"moving-average\""), "{}", message(&e));
    let e = m.create_calibration(Some(obj(&[("overrides", obj(&[("no such layer", "minmax".into())]))]))).unwrap_err();
    assert!(message(&e).contains("no such layer"), "{}", message(&e));
    let e = JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("perChannel", "yes".into())]))))
        .await
        .unwrap_err();
    assert!(is_type_error(&e) && message(&e).contains("options.perChannel must be a boolean"), "{}", message(&e));
    // Weight bits: 8 or 4; another value is a RangeError naming it.
    let e = JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("weightBits", 3.into())]))))
        .await
        .unwrap_err();
    assert!(e.dyn_ref::<js_sys::RangeError>().is_some(), "{}", message(&e));
    assert!(
        message(&e).contains("options.weightBits must be 8 or 4") && message(&e).contains("got 3"),
        "{}",
        message(&e)
    );
    let e = JsFuture::from(
        m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("layerWeightBits", obj(&[("/fc2/Gemm", 2.into())]))]))),
    )
    .await
    .unwrap_err();
    assert!(message(&e).contains("options.layerWeightBits[\"/fc2/Gemm\"] must be 8 or 4"), "{}", message(&e));
    let q = quantized(m.calibrate_and_quantize(
        bytes(CALIB),
        Some(obj(&[("weightBits", 4.into()), ("layerWeightBits", obj(&[("/fc2/Gemm", 8.into())]))])),
    ))
    .await
    .unwrap();
    let report = q.report_json().unwrap();
    assert!(report.contains("\"mode\":\"static int8, int4 weights\""), "{report}");
    assert!(report.contains("\"name\":\"/fc2/Gemm\"") && report.contains("\"weight_bits\":4"), "{report}");
    for (mode, says) in [("dynamic", "quantizeDynamic("), ("weight-only", "quantizeWeightOnly(")] {
        let e = JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("mode", mode.into())]))))
            .await
            .unwrap_err();
        assert!(message(&e).contains(says), "{}", message(&e));
    }
    // 16x8 for the whole model: the compiler names the op it cannot lower.
    let e = JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("activations", "int16".into())]))))
        .await
        .unwrap_err();
    assert!(message(&e).contains("Softmax"), "{}", message(&e));
    // Labels must match the samples.
    let e =
        JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("labels", Array::of1(&1.into()).into())]))))
            .await
            .unwrap_err();
    assert!(message(&e).contains("labels"), "{}", message(&e));
}

// ---- bad files ----

#[wasm_bindgen_test]
fn bad_model_files_are_named() {
    let e = load_model(bytes(UNSUPPORTED_OP), None).unwrap_err();
    let msg = message(&e);
    assert!(msg.contains("ONNX op \"Hardmax\"") && msg.contains("operator 1 Hardmax \"my_hardmax\""), "{msg}");
    assert!(!msg.contains("TFL3"), "{msg}");
    // A corrupted .mq: the CRC says so; a truncated one gives both lengths.
    let mq = include_bytes!("data/digits_default.mq");
    let mut bad = mq.to_vec();
    bad[100] ^= 0x55;
    let msg = message(&load_model(bytes(&bad), None).unwrap_err());
    assert!(msg.contains("CRC-32"), "{msg}");
    let msg = message(&load_model(bytes(&mq[..500]), None).unwrap_err());
    assert!(msg.contains("500 bytes, expected 8360"), "{msg}");
    // A TFLite file cut short: the flatbuffer offset that does not fit.
    let msg = message(&load_model(bytes(&KWS_INT8[..1000]), None).unwrap_err());
    assert!(msg.contains("byte offset"), "{msg}");
    // Random bytes: not ONNX either, and the message says what was tried.
    let msg = message(&load_model(bytes(&[7u8; 64]), None).unwrap_err());
    assert!(msg.contains("neither the .mq magic") && msg.contains("TFL3"), "{msg}");
    assert_eq!(message(&load_model(bytes(&[]), None).unwrap_err()), "the model file is empty");
    assert!(message(&load_model(bytes(CALIB), None).unwrap_err()).contains(".npy file"));
    let e = load_model("model.onnx".into(), None).unwrap_err();
    assert!(is_type_error(&e) && message(&e).contains("got a string"), "{}", message(&e));
}

#[wasm_bindgen_test]
fn npy_files_are_read_and_their_damage_located() {
    let a = parse_npy(bytes(CALIB)).unwrap();
    let shape = Array::from(&Reflect::get(&a, &"shape".into()).unwrap());
    assert_eq!(shape.to_vec().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>(), [100.0, 1.0, 8.0, 8.0]);
    assert_eq!(Reflect::get(&a, &"dtype".into()).unwrap().as_string().unwrap(), "<f4");
    let l = parse_npy(bytes(LABELS)).unwrap();
    assert_eq!(Reflect::get(&l, &"dtype".into()).unwrap().as_string().unwrap(), "<i8");
    let msg = message(&parse_npy(bytes(&CALIB[..CALIB.len() - 4])).unwrap_err());
    assert!(msg.contains("needs 25600 bytes of data from byte 128, the file has 25596"), "{msg}");
    let msg = message(&parse_npy(bytes(&CALIB[..20])).unwrap_err());
    assert!(msg.contains("runs past the end"), "{msg}");
    let msg = message(&parse_npy(bytes(b"PK\x03\x04 not npy")).unwrap_err());
    assert!(msg.contains("magic"), "{msg}");
}

// ---- exports ----

fn hex_bytes(text: &str) -> Vec<u8> {
    text.split(|c: char| !c.is_ascii_hexdigit() && c != 'x')
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|h| u8::from_str_radix(h, 16).ok())
        .collect()
}

#[wasm_bindgen_test]
fn c_and_rust_arrays_hold_the_model() {
    let mq = include_bytes!("data/digits_default.mq");
    let q = QuantizedModel::from_bytes(bytes(mq), Some("digits-cnn".into())).unwrap();
    let h = q.to_c_header(None);
    assert!(h.contains("#define DIGITS_CNN_MQ_LEN 8360u"), "{h:.400}");
    assert!(h.contains("#define DIGITS_CNN_ARENA_LEN 1024u"));
    assert!(h.contains("static const DIGITS_CNN_ALIGN16 uint8_t digits_cnn_mq[DIGITS_CNN_MQ_LEN] = {"));
    let body = &h[h.find("= {").unwrap()..h.find("};").unwrap()];
    assert_eq!(hex_bytes(body), mq.to_vec());
    let r = q.to_rust_source(Some("7 segments".into()));
    assert!(r.contains("pub const MODEL_7_SEGMENTS_ARENA_LEN: usize = 1024;"), "{r:.600}");
    assert!(r.contains("#[repr(C, align(16))]"));
    assert!(r.contains("pub static MODEL_7_SEGMENTS: &[u8] = &MODEL_7_SEGMENTS_DATA.0;"));
    let body = &r[r.find("Aligned16([").unwrap() + 10..r.rfind("]);").unwrap()];
    assert_eq!(hex_bytes(body), mq.to_vec());
}

#[wasm_bindgen_test]
fn a_calibration_for_another_model_or_with_other_options_is_refused() {
    let a = digits();
    let b = digits();
    let cal = a.create_calibration(None).unwrap();
    let other: Calibration = b.create_calibration(Some(obj(&[("observer", "entropy".into())]))).unwrap();
    let e = other.load_state(cal.to_state().unwrap().into()).unwrap_err();
    assert!(message(&e).contains("calibration state"), "{}", message(&e));
    let e = cal.load_state(bytes(b"MQCS\x09")).unwrap_err();
    assert!(message(&e).contains("byte offset 4"), "{}", message(&e));
    let e = cal.merge("nope".into()).unwrap_err();
    assert!(is_type_error(&e), "{}", message(&e));
}

/// `cle` (the CLI's `--cle`): `calibrateAndQuantize` with it gives the bytes of the model
/// `equalize()` returns, quantized without it; that copy's `cleReport` says what was done (the
/// loaded model has none); `quantize()`, whose calibration is done already, refuses it; a `cle`
/// of the wrong kind is a `TypeError`.
#[wasm_bindgen_test]
async fn cle_quantizes_the_equalized_model() {
    let m = digits();
    assert!(m.cle_report().unwrap().is_undefined());
    let with_cle = obj(&[("perChannel", false.into()), ("cle", true.into())]);
    let a = quantized(m.calibrate_and_quantize(bytes(CALIB), Some(with_cle))).await.unwrap();
    let e = m.equalize(None).unwrap();
    let report = e.cle_report().unwrap();
    assert_eq!(Reflect::get(&report, &"converged".into()).unwrap().as_bool(), Some(true));
    let pairs = Array::from(&Reflect::get(&report, &"pairs".into()).unwrap());
    let layers = Array::from(&Reflect::get(&report, &"layers".into()).unwrap());
    assert_eq!(layers.length() > 0, pairs.length() > 0);
    let b =
        quantized(e.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("perChannel", false.into())])))).await.unwrap();
    assert_same_bytes("cle.mq", &b.to_bytes().to_vec(), &a.to_bytes().to_vec());
    let cal = m.create_calibration(None).unwrap();
    let err = JsFuture::from(m.quantize(&cal, Some(obj(&[("cle", true.into())])))).await.unwrap_err();
    assert!(message(&err).contains("options.cle"), "{}", message(&err));
    let err =
        JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&[("cle", "yes".into())])))).await.unwrap_err();
    assert!(is_type_error(&err) && message(&err).contains("options.cle"), "{}", message(&err));
}
