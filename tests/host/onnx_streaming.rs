//! A streaming ONNX model (an LSTM step whose state is a graph input and output, as Silero VAD's)
//! converted with its initial state fixed at zero, against ONNX Runtime running it as a stream,
//! each step fed the state the last one returned (`tests/golden/onnx_streaming/`, written by
//! `tests/gen/gen_onnx_streaming.py`):
//! - the float executor carrying the LSTM's state from run to run gives ONNX Runtime's stream;
//!   without carrying it, its zero-state runs;
//! - quantized with the default options (calibration on a stream, the state carried from sample
//!   to sample, as the `.mq` carries it from invoke to invoke), compiled and run by the
//!   interpreter over the stream, it follows ONNX Runtime's stream; after
//!   [`Interpreter::reset_state`] the stream starts over bit for bit;
//! - calibrated with `reset_state` (each sample from the zero state), it no longer sees the
//!   stream's ranges.

use microquant::compile::Compiled;
use microquant::float::FloatExecutor;
use microquant::graph::Graph;
use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::onnx::{ImportOptions, import_with_options};
use microquant::ptq::{CalibrationOptions, Calibrator, PtqOptions, convert};
use serde::Deserialize;

/// `cases.json`: the model and the `.npy` files.
#[derive(Deserialize)]
struct Files {
    file: String,
    stream: String,
    calibration: String,
    expected_streamed: String,
    expected_stateless: String,
}

pub(crate) struct Case {
    stream: Vec<f32>,
    pub(crate) calibration: Vec<f32>,
    expected_streamed: Vec<f32>,
    expected_stateless: Vec<f32>,
}

pub(crate) fn case() -> (Case, Graph) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/onnx_streaming");
    let f: Files = serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let npy = |name: &str| microquant::npy::Npy::parse(&std::fs::read(dir.join(name)).unwrap()).unwrap().to_f32();
    let c = Case {
        stream: npy(&f.stream),
        calibration: npy(&f.calibration),
        expected_streamed: npy(&f.expected_streamed),
        expected_stateless: npy(&f.expected_stateless),
    };
    let bytes = std::fs::read(dir.join(&f.file)).unwrap();
    let zeros = vec![0.0; 16];
    let options = ImportOptions {
        input_values: vec![("h0".into(), zeros.clone()), ("c0".into(), zeros)],
        outputs: Some(vec!["y".into()]),
        ..Default::default()
    };
    let g = import_with_options(&bytes, &options).unwrap().graph;
    assert_eq!(g.inputs.len(), 1, "the state inputs are constants now");
    (c, g)
}

/// The rows of a `[n, 12]` array, one sample each.
pub(crate) fn frames(v: &[f32]) -> Vec<Vec<f32>> {
    v.chunks(12).map(<[f32]>::to_vec).collect()
}

fn sqnr(want: &[f32], got: &[f32]) -> f64 {
    let (mut s, mut n) = (0f64, 0f64);
    for (&a, &b) in want.iter().zip(got) {
        s += f64::from(a) * f64::from(a);
        n += f64::from(a - b) * f64::from(a - b);
    }
    10.0 * (s / n.max(1e-30)).log10()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn float_executor_carries_the_lstm_state_as_onnx_runtime_streams() {
    let (c, g) = case();
    let stream = frames(&c.stream);
    let mut ex = FloatExecutor::new(&g).unwrap();
    let run = |ex: &FloatExecutor<'_>| -> Vec<f32> { stream.iter().map(|f| ex.run(&[f]).unwrap()[0][0]).collect() };
    assert!(!ex.carries_state());
    let stateless = run(&ex);
    ex.carry_state(true);
    let streamed = run(&ex);
    let (want_streamed, want_stateless) = (c.expected_streamed.clone(), c.expected_stateless.clone());
    assert!(max_diff(&want_streamed, &streamed) < 1e-5, "{}", max_diff(&want_streamed, &streamed));
    assert!(max_diff(&want_stateless, &stateless) < 1e-5, "{}", max_diff(&want_stateless, &stateless));
    // The state matters in this model: the two runs are far apart.
    assert!(max_diff(&want_streamed, &want_stateless) > 0.2);
    // reset_state starts the stream over.
    ex.reset_state();
    assert_eq!(run(&ex), streamed);
}

/// Runs the `.mq` over the stream, the state carried between invokes.
fn run_stream(compiled: &Compiled, stream: &[Vec<f32>]) -> (Vec<f32>, Vec<i8>) {
    let bytes = AlignedBytes::new(&compiled.bytes);
    let mut arena = vec![0u8; compiled.arena_len + 16];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
    let (os, oz) = it.output_info(0).unwrap().per_tensor().unwrap();
    let once = |it: &mut Interpreter<'_, '_>| -> Vec<i8> {
        stream
            .iter()
            .map(|f| {
                for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(f) {
                    *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
                }
                it.invoke().unwrap();
                it.output_i8(0).unwrap()[0]
            })
            .collect()
    };
    let first = once(&mut it);
    it.reset_state().unwrap();
    assert_eq!(once(&mut it), first, "after reset_state the stream starts over bit for bit");
    (first.iter().map(|&q| (i32::from(q) - oz) as f32 * os).collect(), first)
}

#[test]
fn quantized_stream_follows_onnx_runtime_with_the_default_calibration() {
    let (c, g) = case();
    let stream = frames(&c.stream);
    let calib: Vec<Vec<Vec<f32>>> = frames(&c.calibration).into_iter().map(|f| vec![f]).collect();
    let want = c.expected_streamed.clone();

    let out = convert(&g, &calib, None, &PtqOptions::default(), &mut |_| {}).unwrap();
    let (ours, _) = run_stream(&out.compiled, &stream);
    let carried = sqnr(&want, &ours);
    println!("int8 stream vs ONNX Runtime's stream: SQNR {carried:.1} dB, max |diff| {:.4}", max_diff(&want, &ours));
    assert!(carried >= 25.0, "SQNR {carried:.1} dB");

    // Calibrated as independent samples: each from the zero state. The calibrator says so.
    let mut opts = PtqOptions::default();
    opts.calibration.reset_state = true;
    let mut prepared = g.clone();
    microquant::ptq::prepare(&mut prepared).unwrap();
    assert!(Calibrator::new(&prepared, &CalibrationOptions::default()).unwrap().carries_state());
    assert!(!Calibrator::new(&prepared, &opts.calibration).unwrap().carries_state());
    // The cell state's peak travels with the calibration state (Web Workers merge those).
    let mut cal = Calibrator::new(&prepared, &CalibrationOptions::default()).unwrap();
    cal.calibrate(&calib, &mut |_| {}).unwrap();
    let lstm = prepared.nodes.iter().position(|n| matches!(n.op, microquant::graph::Op::Lstm(_))).unwrap();
    let peak = cal.lstm_cell_peak(lstm).unwrap();
    assert!(peak > 10.0, "{peak}");
    let mut fresh = Calibrator::new(&prepared, &CalibrationOptions::default()).unwrap();
    fresh.load_state(&cal.to_state()).unwrap();
    assert_eq!(fresh.lstm_cell_peak(lstm), Some(peak));
    let independent = convert(&g, &calib, None, &opts, &mut |_| {}).unwrap();
    let (other, _) = run_stream(&independent.compiled, &stream);
    println!("calibrated on zero-state samples: SQNR {:.1} dB", sqnr(&want, &other));
    assert!(sqnr(&want, &other) < carried - 10.0, "zero-state calibration misses the stream's ranges");
}
