//! The `adaround` option of the npm package (Node, or headless Chromium with
//! `WASM_BINDGEN_USE_BROWSER=1`): on the bundled digits example with 4-bit weights, progress in
//! two passes (`stage: "adaround"`), cancellation through the `AbortSignal` while it runs, the
//! same model for the same seed, and the per-layer figures of `QuantizedModel.adaround`.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use microquant_wasm::{FloatModel, QuantizedModel, load_model};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

const DIGITS: &[u8] = include_bytes!("../../web-demo/examples/digits_cnn.onnx");
const CALIB: &[u8] = include_bytes!("../../web-demo/examples/digits_calib.npy");

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

fn digits() -> FloatModel {
    let v = load_model(bytes(DIGITS), None).unwrap();
    FloatModel::try_from_js_value(v).unwrap()
}

fn field(o: &JsValue, key: &str) -> JsValue {
    Reflect::get(o, &key.into()).unwrap()
}

fn ada(iterations: u32) -> JsValue {
    obj(&[("iterations", iterations.into()), ("seed", 3.into())])
}

async fn quantize(m: &FloatModel, extra: &[(&str, JsValue)]) -> Result<QuantizedModel, JsValue> {
    let mut e: Vec<(&str, JsValue)> = vec![("weightBits", 4.into()), ("observer", "minmax".into())];
    e.extend(extra.iter().cloned());
    let v = JsFuture::from(m.calibrate_and_quantize(bytes(CALIB), Some(obj(&e)))).await?;
    Ok(QuantizedModel::try_from_js_value(v).unwrap())
}

#[wasm_bindgen_test]
async fn adaround_reports_progress_is_deterministic_and_improves_every_layer() {
    let m = digits();
    let stages = std::rc::Rc::new(std::cell::RefCell::new(Vec::<(String, u32, f64, f64)>::new()));
    let s2 = stages.clone();
    let cb = Closure::<dyn FnMut(JsValue)>::new(move |p: JsValue| {
        let stage = field(&p, "stage").as_string().unwrap();
        let pass = field(&p, "pass").as_f64().unwrap() as u32;
        s2.borrow_mut().push((stage, pass, field(&p, "done").as_f64().unwrap(), field(&p, "total").as_f64().unwrap()));
    });
    let q = quantize(&m, &[("adaround", ada(300)), ("onProgress", cb.as_ref().clone()), ("chunkMs", 0.into())])
        .await
        .unwrap();
    {
        let stages = stages.borrow();
        let ada: Vec<_> = stages.iter().filter(|s| s.0 == "adaround").collect();
        // Pass 0: one report per sample (100), from 0; pass 1: the steps, up to all of them.
        assert_eq!(ada.iter().rfind(|s| s.1 == 0).map(|s| (s.2, s.3)), Some((100.0, 100.0)));
        let last = ada.last().unwrap();
        assert_eq!((last.1, last.2), (1, last.3));
        assert!(ada.iter().filter(|s| s.1 == 1).count() > 10, "progress during the optimization");
        // After calibration, before the evaluation.
        let first = stages.iter().position(|s| s.0 == "adaround").unwrap();
        assert!(stages[..first].iter().all(|s| s.0 == "calibrate"));
        assert!(stages[first..].iter().all(|s| s.0 != "calibrate"));
    }
    let report = q.adaround();
    let layers = Array::from(&field(&report, "layers"));
    assert!(layers.length() >= 3, "{} layers", layers.length());
    for l in layers.iter() {
        let (near, ada) = (field(&l, "nearestSqnrDb").as_f64().unwrap(), field(&l, "adaroundSqnrDb").as_f64().unwrap());
        assert!(ada > near, "{:?}: {ada} dB vs {near} dB", field(&l, "name"));
        assert_eq!(field(&l, "bits").as_f64(), Some(4.0));
    }
    // The same seed: the same bytes; without adaround: other weights, and no AdaRound report.
    let again = quantize(&m, &[("adaround", ada(300))]).await.unwrap();
    assert_eq!(again.to_bytes().to_vec(), q.to_bytes().to_vec());
    let plain = quantize(&m, &[]).await.unwrap();
    assert_ne!(plain.to_bytes().to_vec(), q.to_bytes().to_vec());
    assert!(plain.adaround().is_null());
}

#[wasm_bindgen_test]
async fn adaround_is_cancelled_by_the_signal_and_checks_its_options() {
    let m = digits();
    let ctor: Function = Reflect::get(&js_sys::global(), &"AbortController".into()).unwrap().into();
    let controller = Reflect::construct(&ctor, &Array::new()).unwrap();
    let abort: Function = field(&controller, "abort").into();
    let signal = field(&controller, "signal");
    let ctl2 = controller.clone();
    // Abort in the middle of the optimization pass.
    let cb = Closure::<dyn FnMut(JsValue)>::new(move |p: JsValue| {
        let total = field(&p, "total").as_f64().unwrap();
        if field(&p, "stage").as_string().as_deref() == Some("adaround")
            && field(&p, "pass").as_f64() == Some(1.0)
            && field(&p, "done").as_f64().unwrap() >= total / 2.0
        {
            abort.call0(&ctl2).unwrap();
        }
    });
    let e = quantize(
        &m,
        &[("adaround", ada(2000)), ("onProgress", cb.as_ref().clone()), ("signal", signal), ("chunkMs", 0.into())],
    )
    .await
    .unwrap_err();
    assert_eq!(field(&e, "name").as_string().as_deref(), Some("AbortError"), "{e:?}");

    // Bad options are RangeError / TypeError; quantize() needs the samples given.
    let e = quantize(&m, &[("adaround", obj(&[("iterations", 0.into())]))]).await.unwrap_err();
    assert!(e.is_instance_of::<js_sys::RangeError>(), "{e:?}");
    let e = quantize(&m, &[("adaround", "yes".into())]).await.unwrap_err();
    assert!(e.is_instance_of::<js_sys::TypeError>(), "{e:?}");
    let cal = m.create_calibration(None).unwrap();
    JsFuture::from(cal.calibrate(bytes(CALIB), None)).await.unwrap();
    let e = JsFuture::from(m.quantize(&cal, Some(obj(&[("adaround", true.into())])))).await.unwrap_err();
    let msg = e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_default();
    assert!(msg.contains("adaroundSamples"), "{msg}");
    let v =
        JsFuture::from(m.quantize(&cal, Some(obj(&[("adaround", true.into()), ("adaroundSamples", bytes(CALIB))]))))
            .await
            .unwrap();
    assert!(!QuantizedModel::try_from_js_value(v).unwrap().adaround().is_null());
}
