//! The quantization core in wasm (Node and, with `WASM_BINDGEN_USE_BROWSER=1`, headless
//! Chromium): the same golden cases as the host tests, bit for bit: every ONNX backend node
//! test, TFLite's QUANTIZE kernel (quantize and requantize), the requantization sample in both
//! roundings, PyTorch fake quantization, and observers against PyTorch and ONNX Runtime.
#![cfg(target_arch = "wasm32")]

#[path = "../../tests/host/quant_common.rs"]
mod common;

use microquant::observer::{
    EntropyObserver, HistogramObserver, MinMaxObserver, Observer, ObserverConfig, PercentileObserver,
};
use microquant::quant::{self, Convention, QParams, QScheme, QuantDType, Tensor};
use microquant_tests::quant as golden;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn onnx_backend_node_tests() {
    let cases = golden::onnx_node_cases();
    let failures: Vec<String> = cases.iter().filter_map(|c| common::run_onnx_case(c).err()).collect();
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert_eq!(cases.len(), 33);
}

#[wasm_bindgen_test]
fn tflite_quantize_and_requantize() {
    for c in golden::tflite_quantize_cases() {
        common::run_tflite_case(&c).unwrap();
    }
}

#[wasm_bindgen_test]
fn requant_sample_both_roundings() {
    let cases = golden::requant_cases();
    assert!(cases.len() >= 1024);
    for c in &cases {
        common::run_requant_case(c).unwrap();
    }
}

#[wasm_bindgen_test]
fn pytorch_fake_quantize_per_tensor() {
    let g = golden::torch_golden();
    for c in g.quantize.iter().filter(|c| c.kind == "per_tensor") {
        let x = golden::b64_f32(&c.x);
        let want = golden::b64_f32(&c.fake);
        let dt = if c.dtype == "int8" { QuantDType::Int8 } else { QuantDType::UInt8 };
        let p = QParams::new(c.scale.unwrap(), c.zero_point.unwrap(), dt)
            .unwrap()
            .with_range(c.qmin, c.qmax)
            .unwrap()
            .with_convention(Convention::PyTorch);
        let mut out = vec![0f32; x.len()];
        quant::fake_quantize(&Tensor::from_slice(&x), &p.into(), &mut out, None).unwrap();
        for i in 0..x.len() {
            assert_eq!(out[i].to_bits(), want[i].to_bits(), "{}: fake[{i}]", c.dataset);
        }
    }
}

fn run<O: Observer>(o: &mut O, data: &[Vec<f32>]) {
    for _ in 0..o.passes() {
        for b in data {
            o.observe(b).unwrap();
        }
        o.end_pass().unwrap();
    }
}

#[wasm_bindgen_test]
fn observers_match_pytorch_and_onnxruntime() {
    // PyTorch MinMax and HistogramObserver (two-pass) on one data set.
    let g = golden::torch_golden();
    let data = golden::dataset("heavy");
    let row = g.per_tensor.iter().find(|r| r.dataset == "heavy" && r.config == "quint8_affine").unwrap();
    let cfg = ObserverConfig::new(QuantDType::UInt8, QScheme::Affine);
    let mut mm = MinMaxObserver::new(cfg);
    run(&mut mm, &data);
    let p = mm.qparams().unwrap();
    assert_eq!((p.scale(), p.zero_point()), (row.minmax[2] as f32, row.minmax[3] as i32));
    let mut h = HistogramObserver::<2048>::two_pass(cfg);
    run(&mut h, &data);
    let want = row.histogram_one_batch.unwrap();
    assert_eq!(h.range().unwrap(), (want[0] as f32, want[1] as f32));
    // ONNX Runtime entropy (2048 bins) and percentile (default) ranges.
    let o = golden::ort_golden();
    let cfg = cfg.with_convention(Convention::OnnxRuntime);
    let e = o.calibrators.iter().find(|c| c.dataset == "heavy" && c.config == "entropy_2048_128").unwrap();
    let mut eo = EntropyObserver::<2048>::two_pass(cfg, 128).unwrap();
    run(&mut eo, &data);
    assert_eq!(eo.range().unwrap(), (e.range[0], e.range[1]));
    let pc = o.calibrators.iter().find(|c| c.dataset == "heavy" && c.config == "percentile_default").unwrap();
    let mut po = PercentileObserver::<2048>::two_pass(cfg, 99.999, true).unwrap();
    run(&mut po, &data);
    assert_eq!(po.range().unwrap(), (pc.range[0], pc.range[1]));
}
