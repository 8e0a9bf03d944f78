//! Post-training quantization end to end: float model → prepare → calibrate → quantize → compile
//! → int8 interpreter, with the per-layer report.
//!
//! Calibration and evaluation data are SYNTHETIC (no dataset ships with the repository):
//! - MLPerf Tiny float models: SplitMix64 int8 values mapped through the published int8 model's
//!   input scale and zero point, i.e. uniform noise over each model's real input range (as in
//!   `tests/golden/onnx/tflite_float_mlperf.json`); 32 samples calibrate, 16 others evaluate.
//! - ONNX models: standard normal inputs (Box-Muller over SplitMix64), as the golden inputs.
//!
//! The float side is the float executor, itself checked against ONNX Runtime and TFLite
//! (`onnx_import.rs`, `float_exec.rs`); the int8 side is the interpreter, bit-exact with TFLite
//! Micro (`mlperf.rs`). The figures (SQNR per model and layer) are printed; the assertions are
//! floors well below them, to catch a broken quantizer, not to pin the numbers.

use crate::onnx_golden;

use microquant::compile::{CompileOptions, compile};
use microquant::graph::Graph;
use microquant::ptq::*;
use microquant_tests::rng::SplitMix64;

fn uniform_samples(shape: &[usize], scale: f32, zero_point: i32, seed: u64, n: usize) -> Vec<Vec<Vec<f32>>> {
    let len: usize = shape.iter().product();
    (0..n as u64)
        .map(|s| {
            let mut q = vec![0i8; len];
            SplitMix64::new(seed + s).fill_i8(&mut q);
            vec![q.iter().map(|&v| (v as f32 - zero_point as f32) * scale).collect()]
        })
        .collect()
}

fn normal_samples(len: usize, seed: u64, n: usize) -> Vec<Vec<Vec<f32>>> {
    let mut r = SplitMix64::new(seed);
    let mut u = || ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            vec![
                (0..len)
                    .map(|_| ((-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos()) as f32)
                    .collect(),
            ]
        })
        .collect()
}

struct Outcome {
    report: Report,
    json: String,
}

fn run(
    mut g: Graph,
    calib: &[Vec<Vec<f32>>],
    eval: &[Vec<Vec<f32>>],
    cal_opts: &CalibrationOptions,
    q_opts: &QuantizeOptions,
) -> Outcome {
    prepare(&mut g).expect("prepare");
    let mut cal = Calibrator::new(&g, cal_opts).expect("calibrator");
    let mut calls = 0;
    let mut last = None;
    cal.calibrate(calib, &mut |p| {
        calls += 1;
        last = Some(p);
    })
    .expect("calibrate");
    assert_eq!(calls, calib.len() * cal.passes() as usize, "one progress call per sample and pass");
    assert_eq!(
        last,
        Some(Progress { pass: cal.passes() - 1, passes: cal.passes(), done: calib.len(), total: calib.len() })
    );
    let q = quantize(&cal, q_opts).expect("quantize");
    let compiled = compile(&q.graph, &CompileOptions::default()).expect("compile");
    let report = evaluate(&cal, &q, &compiled, eval, None).expect("evaluate");
    let json = report.to_json();
    Outcome { report, json }
}

fn print(name: &str, r: &Report) {
    let m = &r.model;
    println!(
        "{name}: {} | output SQNR {:.1} dB | top-1 agreement {} | weights {} -> {} B | .mq {} B | arena {} B | {} MACs",
        m.mode,
        m.output_sqnr_db.unwrap_or(f64::INFINITY),
        m.top1_agreement.map_or("-".into(), |a| format!("{:.3}", a)),
        m.float_weight_bytes,
        m.int8_weight_bytes,
        m.model_bytes,
        m.arena_bytes,
        m.macs
    );
    for l in &r.layers {
        println!(
            "    #{:<2} {:16} {:>7} SQNR {:>6.1} dB  max|err| {:<10.4e} scale {:<11.5e} zp {:>4} {:14} range [{:.3}, {:.3}]",
            l.index,
            l.op,
            l.elements,
            l.sqnr_db.unwrap_or(f64::INFINITY),
            l.max_abs_error,
            l.scale,
            l.zero_point,
            l.qparams,
            l.range.0,
            l.range.1
        );
    }
}

#[derive(serde::Deserialize)]
struct MlperfModel {
    name: String,
    file: String,
    input_shape: Vec<usize>,
    input_scale: f32,
    input_zero_point: i32,
}

#[derive(serde::Deserialize)]
struct MlperfFile {
    models: Vec<MlperfModel>,
}

fn mlperf() -> Vec<MlperfModel> {
    let text = std::fs::read_to_string(onnx_golden::golden_dir().join("tflite_float_mlperf.json")).unwrap();
    serde_json::from_str::<MlperfFile>(&text).unwrap().models
}

fn mlperf_case(name: &str, observer: ObserverKind, floor_db: f64) {
    let m = mlperf().into_iter().find(|m| m.name == name).unwrap();
    let g = microquant::tflite::import(&std::fs::read(onnx_golden::repo_dir().join(&m.file)).unwrap()).unwrap();
    let calib = uniform_samples(&m.input_shape, m.input_scale, m.input_zero_point, 90_000, 32);
    let eval = uniform_samples(&m.input_shape, m.input_scale, m.input_zero_point, 91_000, 16);
    let out = run(
        g.clone(),
        &calib,
        &eval,
        &CalibrationOptions { observer, ..Default::default() },
        &QuantizeOptions::default(),
    );
    print(&format!("{name} ({}, synthetic calibration)", observer.name()), &out.report);
    let sqnr = out.report.model.output_sqnr_db.unwrap_or(f64::INFINITY);
    // For scale: the published int8 model (TFLite converter, real calibration data) on the same
    // evaluation inputs, against the same float outputs.
    let official = official_int8_sqnr(&m, &g, &eval);
    println!(
        "{name}: ours {sqnr:.1} dB, published int8 model {official:.1} dB (output SQNR vs float on the synthetic inputs)"
    );
    assert!(sqnr >= floor_db, "{name}: output SQNR {sqnr:.1} dB below {floor_db} dB");
    assert!(out.report.layers.iter().all(|l| l.sqnr_db.is_none_or(|s| s > 0.0)), "{name}: a layer with SQNR <= 0");
    // The report is valid JSON with one entry per layer.
    let v: serde_json::Value = serde_json::from_str(&out.json).expect("report JSON parses");
    assert_eq!(v["layers"].as_array().unwrap().len(), out.report.layers.len());
    assert_eq!(v["model"]["samples"], 16);
}

/// Output SQNR of the published MLPerf Tiny int8 model (compiled and run by our interpreter,
/// bit-exact with TFLite Micro) against the float graph `g`.
fn official_int8_sqnr(m: &MlperfModel, g: &Graph, eval: &[Vec<Vec<f32>>]) -> f64 {
    let file = m.file.replace("_float32.tflite", "_int8.tflite");
    let q = microquant::tflite::import(&std::fs::read(onnx_golden::repo_dir().join(file)).unwrap()).unwrap();
    let compiled = compile(&q, &CompileOptions::default()).unwrap();
    let bytes = microquant::model::AlignedBytes::new(&compiled.bytes);
    let mut arena = vec![0u8; compiled.arena_len + 16];
    let mut it = microquant::interp::Interpreter::new(&bytes, &mut arena).unwrap();
    let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
    let (os, oz) = it.output_info(0).unwrap().per_tensor().unwrap();
    let mut plain = g.clone();
    plain.dequantize_hybrid_weights();
    let ex = microquant::float::FloatExecutor::new(&plain).unwrap();
    let (mut signal, mut noise) = (0f64, 0f64);
    for s in eval {
        let f = ex.run(&[&s[0]]).unwrap().remove(0);
        for (d, &x) in it.input_i8(0).unwrap().iter_mut().zip(&s[0]) {
            *d = ((x / is).round() as i32 + iz).clamp(-128, 127) as i8;
        }
        it.invoke().unwrap();
        for (&qv, &fv) in it.output_i8(0).unwrap().iter().zip(&f) {
            let deq = (qv as i32 - oz) as f32 * os;
            signal += (fv as f64).powi(2);
            noise += ((fv - deq) as f64).powi(2);
        }
    }
    10.0 * (signal / noise).log10()
}

#[test]
fn mlperf_kws() {
    mlperf_case("kws", ObserverKind::MinMax, 15.0);
}

#[test]
fn mlperf_ic() {
    mlperf_case("ic", ObserverKind::MinMax, 15.0);
}

#[test]
fn mlperf_vww() {
    mlperf_case("vww", ObserverKind::Histogram, 15.0);
}

#[test]
fn mlperf_ad() {
    mlperf_case("ad", ObserverKind::MinMax, 15.0);
}

#[test]
fn every_observer_on_ic() {
    let m = mlperf().into_iter().find(|m| m.name == "ic").unwrap();
    let g = microquant::tflite::import(&std::fs::read(onnx_golden::repo_dir().join(&m.file)).unwrap()).unwrap();
    let calib = uniform_samples(&m.input_shape, m.input_scale, m.input_zero_point, 92_000, 12);
    let eval = uniform_samples(&m.input_shape, m.input_scale, m.input_zero_point, 93_000, 6);
    for kind in [
        ObserverKind::MinMax,
        ObserverKind::MovingAverage,
        ObserverKind::Histogram,
        ObserverKind::Entropy,
        ObserverKind::Percentile(99.999),
    ] {
        for two_pass in [true, false] {
            let out = run(
                g.clone(),
                &calib,
                &eval,
                &CalibrationOptions { observer: kind, overrides: vec![], two_pass, ..Default::default() },
                &QuantizeOptions::default(),
            );
            let s = out.report.model.output_sqnr_db.unwrap_or(f64::INFINITY);
            println!("ic {:15} two_pass {two_pass:5}: output SQNR {s:.1} dB", kind.name());
            assert!(s > 10.0, "{} {two_pass}: {s}", kind.name());
            assert!(out.report.layers.iter().any(|l| l.observer == kind.name()));
        }
    }
}

fn onnx_case(name: &str) -> (Graph, usize) {
    let m = onnx_golden::float_models().into_iter().find(|m| m.name == name).unwrap();
    let imported = m.import();
    let len = imported.graph.tensor(imported.graph.inputs[0]).unwrap().num_elements().unwrap();
    (imported.graph, len)
}

#[test]
fn small_onnx_models_stay_close_to_float() {
    for (name, floor) in [
        ("conv_bn_opset13", 20.0),
        ("concat_pad_opset21", 20.0),
        ("hard_opset13", 20.0),
        ("token_mlp_opset21", 20.0),
        ("mlp_classifier_opset17", 15.0),
        ("mlp_regressor_opset17", 20.0),
    ] {
        let (g, len) = onnx_case(name);
        let calib = normal_samples(len, 7, 64);
        let eval = normal_samples(len, 8, 32);
        let out = run(g, &calib, &eval, &CalibrationOptions::default(), &QuantizeOptions::default());
        print(name, &out.report);
        let s = out.report.model.output_sqnr_db.unwrap_or(f64::INFINITY);
        assert!(s >= floor, "{name}: output SQNR {s:.1} dB below {floor}");
        if let Some(a) = out.report.model.top1_agreement {
            assert!(a >= 0.85, "{name}: top-1 agreement {a}");
        }
    }
}

#[test]
fn labels_give_both_accuracies() {
    // Labels = the float model's own predictions: float accuracy 1, int8 accuracy = agreement.
    let (mut g, len) = onnx_case("mlp_classifier_opset17");
    prepare(&mut g).unwrap();
    let calib = normal_samples(len, 31, 32);
    let eval = normal_samples(len, 32, 40);
    let ex = microquant::float::FloatExecutor::new(&g).unwrap();
    let labels: Vec<usize> = eval
        .iter()
        .map(|s| {
            let y = ex.run(&[&s[0]]).unwrap().remove(0);
            (0..y.len()).max_by(|&a, &b| y[a].total_cmp(&y[b])).unwrap()
        })
        .collect();
    let mut cal = Calibrator::new(&g, &CalibrationOptions::default()).unwrap();
    cal.calibrate(&calib, &mut |_| {}).unwrap();
    let q = quantize(&cal, &QuantizeOptions::default()).unwrap();
    let compiled = compile(&q.graph, &CompileOptions::default()).unwrap();
    let r = evaluate(&cal, &q, &compiled, &eval, Some(&labels)).unwrap();
    assert_eq!(r.model.float_accuracy, Some(1.0));
    assert_eq!(r.model.int8_accuracy, r.model.top1_agreement);
    println!("mlp_classifier: int8 accuracy vs float labels {:?}", r.model.int8_accuracy);
    assert!(evaluate(&cal, &q, &compiled, &eval, Some(&labels[1..])).is_err());
}

#[test]
fn per_tensor_weights_and_observer_overrides() {
    let (mut g, len) = onnx_case("conv_bn_opset17");
    let calib = normal_samples(len, 11, 16);
    let eval = normal_samples(len, 12, 8);
    prepare(&mut g).unwrap();
    let first = g.nodes[0].name.clone();
    let opts = CalibrationOptions {
        observer: ObserverKind::MinMax,
        overrides: vec![(first.clone(), ObserverKind::Entropy)],
        two_pass: true,
        ..Default::default()
    };
    let out = run(g.clone(), &calib, &eval, &opts, &QuantizeOptions { per_channel: false, ..Default::default() });
    print("conv_bn_opset17 per-tensor", &out.report);
    assert_eq!(out.report.layers[0].observer, "entropy");
    assert_eq!(out.report.layers[1].observer, "minmax");
    assert!(out.report.layers.iter().filter_map(|l| l.weight_scales).all(|(_, _, n)| n == 1));
    let bad =
        CalibrationOptions { overrides: vec![("no such layer".into(), ObserverKind::MinMax)], ..Default::default() };
    assert!(Calibrator::new(&g, &bad).is_err());
}

#[test]
fn chunked_calibration_merges_exactly() {
    let (mut g, len) = onnx_case("token_mlp_opset21");
    prepare(&mut g).unwrap();
    let data = normal_samples(len, 21, 24);
    for (kind, two_pass) in [
        (ObserverKind::MinMax, true),
        (ObserverKind::Histogram, false),
        (ObserverKind::Entropy, true),
        (ObserverKind::Percentile(99.9), true),
    ] {
        let opts = CalibrationOptions { observer: kind, overrides: vec![], two_pass, ..Default::default() };
        let mut whole = Calibrator::new(&g, &opts).unwrap();
        whole.calibrate(&data, &mut |_| {}).unwrap();
        // Two chunks per pass, merged; two-pass: merge, end the pass, fork for the second.
        let (a, b) = data.split_at(10);
        let mut merged = Calibrator::new(&g, &opts).unwrap();
        while merged.pass() < merged.passes() {
            let mut c1 = merged.clone();
            let mut c2 = merged.clone();
            for s in a {
                c1.observe(&[&s[0]]).unwrap();
            }
            for s in b {
                c2.observe(&[&s[0]]).unwrap();
            }
            c1.merge(&c2).unwrap();
            merged = c1;
            merged.end_pass().unwrap();
        }
        for t in g.inputs.iter().copied().chain(g.nodes.iter().map(|n| n.outputs[0])) {
            assert_eq!(whole.range(t).unwrap(), merged.range(t).unwrap(), "{} tensor {t}", kind.name());
        }
    }
}

#[test]
fn int16_activations_on_the_fc_autoencoder() {
    let m = mlperf().into_iter().find(|m| m.name == "ad").unwrap();
    let g = microquant::tflite::import(&std::fs::read(onnx_golden::repo_dir().join(&m.file)).unwrap()).unwrap();
    let calib = uniform_samples(&m.input_shape, m.input_scale, m.input_zero_point, 94_000, 16);
    let eval = uniform_samples(&m.input_shape, m.input_scale, m.input_zero_point, 95_000, 8);
    let o8 = run(g.clone(), &calib, &eval, &CalibrationOptions::default(), &QuantizeOptions::default());
    let o16 = run(
        g,
        &calib,
        &eval,
        &CalibrationOptions::default(),
        &QuantizeOptions { activations: ActivationType::Int16, ..Default::default() },
    );
    let (s8, s16) = (o8.report.model.output_sqnr_db.unwrap(), o16.report.model.output_sqnr_db.unwrap());
    println!("ad: int8 {s8:.1} dB, 16x8 {s16:.1} dB");
    assert_eq!(o16.report.model.mode, "static 16x8");
    assert!(o16.report.layers.iter().all(|l| l.dtype == "i16"));
    // The int8 weights dominate the error of this model (ten FC layers, ~40 dB each), so int16
    // activations do not buy much here; they must not lose anything either.
    assert!(s16 >= s8 - 1.0, "16x8 {s16} vs int8 {s8}");
}

#[test]
fn leaky_relu_model_quantizes_compiles_and_runs() {
    // PyTorch's Linear, LeakyReLU(0.2), Linear, ReLU6, Linear, Sigmoid: LeakyRelu runs as its own
    // int8 op (LEAKY_RELU, kernels/leaky_relu.rs), in both rounding modes.
    let (mut g, len) = onnx_case("mlp_opset17");
    prepare(&mut g).unwrap();
    let mut cal = Calibrator::new(&g, &CalibrationOptions::default()).unwrap();
    cal.calibrate(&normal_samples(len, 3, 64), &mut |_| {}).unwrap();
    let q = quantize(&cal, &QuantizeOptions::default()).unwrap();
    assert!(q.graph.nodes.iter().any(|n| n.op.name() == "LeakyRelu"));
    let compiled = compile(&q.graph, &CompileOptions::default()).unwrap();
    let report = evaluate(&cal, &q, &compiled, &normal_samples(len, 4, 32), None).unwrap();
    print("mlp_opset17", &report);
    let s = report.model.output_sqnr_db.unwrap_or(f64::INFINITY);
    assert!(s >= 20.0, "output SQNR {s:.1} dB");
    // Quantizing before calibration is complete is an error.
    let cal = Calibrator::new(&g, &CalibrationOptions::default()).unwrap();
    assert!(quantize(&cal, &QuantizeOptions::default()).is_err());
}
