//! The host's threads change no result: the report's samples split over threads
//! ([`Evaluator`]), the observers fed on a second thread while the float graph runs on
//! ([`Calibrator::observe`]), the model-level range choice's candidate models run side by side
//! ([`quantize`]) give the `.mq` bytes, the calibration state and the report of one thread, bit
//! for bit, and the same error for the same bad sample. (One thread is also what the npm package
//! runs in a browser tab: the wasm tests check its bytes against the CLI's.)

use microquant::graph::Graph;
use microquant::parallel::set_max_threads;
use microquant::ptq::*;
use microquant_tests::rng::SplitMix64;

/// `n` samples of `len` values, normal, with a few large ones (the auto observers' outlier
/// handling and the range choice have something to choose).
fn samples(len: usize, seed: u64, n: usize) -> Vec<Sample> {
    let mut r = SplitMix64::new(seed);
    let mut u = || ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..n)
        .map(|i| {
            let scale = if i % 11 == 7 { 6.0 } else { 1.0 };
            vec![
                (0..len)
                    .map(|_| (scale * (-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos()) as f32)
                    .collect(),
            ]
        })
        .collect()
}

fn model(name: &str) -> (Graph, usize) {
    let m = crate::onnx_golden::float_models().into_iter().find(|m| m.name == name).unwrap();
    let g = m.import().graph;
    let len = g.tensor(g.inputs[0]).unwrap().num_elements().unwrap();
    (g, len)
}

/// Everything a conversion makes, with `threads` threads.
fn convert_with(threads: usize, g: &Graph, samples: &[Sample]) -> (Vec<u8>, String, Vec<u8>) {
    set_max_threads(threads);
    let out = convert(g, samples, None, &PtqOptions::default(), &mut |_| {});
    let mut cal = Calibrator::new(&out.as_ref().unwrap().float, &CalibrationOptions::default()).unwrap();
    cal.calibrate(samples, &mut |_| {}).unwrap();
    let state = cal.to_state();
    set_max_threads(0);
    let out = out.unwrap();
    (out.compiled.bytes, out.report.to_json(), state)
}

#[test]
fn threads_give_the_bytes_and_report_of_one_thread() {
    for (name, n) in [("conv_bn_opset13", 37), ("keras_cnn_opset13", 21), ("token_mlp_opset13", 19)] {
        let (g, len) = model(name);
        let s = samples(len, 5 + n as u64, n);
        let one = convert_with(1, &g, &s);
        // The default auto observers made a model-level choice (the candidate models ran).
        assert!(one.1.contains("\"range_choice\""), "{name}: the report has the range choice");
        for threads in [2, 3] {
            let many = convert_with(threads, &g, &s);
            assert!(many.0 == one.0, "{name}: .mq bytes with {threads} threads");
            assert_eq!(many.1, one.1, "{name}: report with {threads} threads");
            assert!(many.2 == one.2, "{name}: calibration state with {threads} threads");
        }
    }
}

#[test]
fn threads_give_the_error_of_one_thread() {
    let (g, len) = model("conv_bn_opset13");
    let mut s = samples(len, 3, 9);
    s[4][0][len / 2] = f32::NAN;
    let error = |threads: usize| {
        set_max_threads(threads);
        let e = convert(&g, &s, None, &PtqOptions::default(), &mut |_| {}).map(|_| ()).unwrap_err();
        set_max_threads(0);
        e.to_string()
    };
    let one = error(1);
    assert!(one.contains("NaN") || one.contains("nan") || one.contains("finite"), "{one}");
    assert_eq!(error(2), one);
}

/// The report of a conversion measures the int8 model against the float activations its
/// calibration kept (no second float pass): the same report, bit for bit, as an evaluation that
/// runs the float graph again, with one thread and with two.
#[test]
fn the_report_from_kept_activations_is_the_report_of_a_float_pass() {
    for (name, n) in [("conv_bn_opset13", 23), ("token_mlp_opset13", 9)] {
        let (g, len) = model(name);
        let s = samples(len, 17 + n as u64, n);
        for threads in [1, 2] {
            set_max_threads(threads);
            let out = convert(&g, &s, None, &PtqOptions::default(), &mut |_| {}).unwrap();
            let mut cal = Calibrator::new(&out.float, &CalibrationOptions::default()).unwrap();
            cal.calibrate(&s, &mut |_| {}).unwrap();
            let again = out.evaluate(&s, None).unwrap();
            set_max_threads(0);
            assert_eq!(cal.kept_activation_samples(), n, "{name}: every sample's activations kept");
            assert_eq!(out.report.to_json(), again.to_json(), "{name}, {threads} threads");
        }
    }
}
