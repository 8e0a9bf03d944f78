//! ONNX `LSTM` and `GRU` (forward; layout 0 and 1; with and without `B`, initial states as
//! constants and as graph inputs; `Y_h` of a one-step sequence; GRU with `linear_before_reset` 0
//! and 1) imported into [`Op::Lstm`] / [`Op::Gru`] and run
//! by the float executor, against ONNX Runtime (layout 0) and the onnx reference evaluator
//! (layout 1, which ONNX Runtime's CPU LSTM refuses): `tests/golden/onnx_recurrent/`, written by
//! `tests/gen/gen_onnx_recurrent.py`. Tolerance: 2e-6 absolute on outputs in (-1, 1) (the
//! executor sums in f64, ONNX Runtime in f32), after the optimization passes too.

use microquant::float::FloatExecutor;
use microquant::graph::Op;
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Model {
    name: String,
    file: String,
    oracle: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Model>,
}

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/onnx_recurrent")
}

const TOLERANCE: f32 = 2e-6;

#[test]
fn onnx_lstm_float_execution_matches_onnx_runtime() {
    let file: File = serde_json::from_str(&std::fs::read_to_string(dir().join("recurrent.json")).unwrap()).unwrap();
    assert_eq!(file.models.len(), 16);
    for m in &file.models {
        let bytes = std::fs::read(dir().join(&m.file)).unwrap();
        let mut imported = microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let recurrent = imported.graph.nodes.iter().any(|n| matches!(n.op, Op::Lstm(_) | Op::Gru(_)));
        assert!(recurrent, "{}", m.name);
        for optimized in [false, true] {
            if optimized {
                microquant::passes::optimize(&mut imported.graph).unwrap_or_else(|e| panic!("{}: {e}", m.name));
            }
            let ex = FloatExecutor::new(&imported.graph).unwrap_or_else(|e| panic!("{}: {e}", m.name));
            let inputs: Vec<Vec<f32>> = m
                .inputs
                .iter()
                .zip(&imported.inputs)
                .map(|(t, info)| info.to_graph_layout(&t.f32()).unwrap())
                .collect();
            let refs: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
            let outs = ex.run(&refs).unwrap_or_else(|e| panic!("{}: {e}", m.name));
            assert_eq!(outs.len(), m.outputs.len(), "{}", m.name);
            for ((o, expected), info) in outs.iter().zip(&m.outputs).zip(&imported.outputs) {
                assert_eq!(expected.shape, info.model_shape, "{}: {}", m.name, info.name);
                let ours = info.to_model_layout(o).unwrap();
                let worst = expected.f32().iter().zip(&ours).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(
                    worst <= TOLERANCE,
                    "{} ({}, optimized {optimized}) {}: max |diff| {worst}",
                    m.name,
                    m.oracle,
                    info.name
                );
            }
        }
    }
}

/// An ONNX LSTM quantized by our PTQ into TFLite Micro's integer LSTM, compiled and run by the
/// interpreter, against ONNX Runtime's float outputs on the golden input (not a calibration
/// sample). Tolerance: output SQNR at least 30 dB and no element more than 3 output steps off
/// (measured: 37.8 to 40.6 dB, at most 2 steps, on 20-step sequences too). Calibration: 32 seeded standard-normal
/// sequences (the golden inputs' distribution).
#[test]
fn quantized_onnx_lstm_runs_int8_close_to_onnx_runtime() {
    let seen = quantized_runs_close_to_oracle(
        |m| m.name.starts_with("lstm") && m.oracle == "onnxruntime" && !m.name.contains("init"),
        32,
        30.0,
        3.0,
    );
    assert_eq!(seen, 4);
}

/// An ONNX GRU quantized by our PTQ (unrolled into int8 fully connected, logistic, tanh, add,
/// sub and mul ops, each bit-exact with TFLite Micro's kernel), compiled and run by the
/// interpreter, against ONNX Runtime's (layout 1: the onnx reference evaluator's) float outputs,
/// every form: both `linear_before_reset`, both layouts, initial state as a constant and as a
/// graph input, 1 to 20 steps (the 20 outputs concatenated in two levels). Calibration: 256
/// seeded standard-normal samples. Tolerance: SQNR at least 28 dB, no element more than 6
/// output steps off (measured: 28.4 dB on the model whose initial state is a standard-normal
/// graph input, 31.8 to 35.7 dB on the others; at most 5.5 steps, on the 20-step sequence, at
/// most 3.2 on the shorter ones).
#[test]
fn quantized_onnx_gru_runs_int8_close_to_onnx_runtime() {
    let seen = quantized_runs_close_to_oracle(|m| m.name.starts_with("gru"), 256, 28.0, 6.0);
    assert_eq!(seen, 8);
}

/// Quantizes each golden model `pick` takes (calibration: 32 seeded standard-normal samples of
/// every input), runs the `.mq` on the golden inputs and compares output 0 with the oracle's.
/// Returns the number of models checked.
fn quantized_runs_close_to_oracle(
    pick: impl Fn(&Model) -> bool,
    n_samples: usize,
    min_sqnr: f64,
    max_steps: f32,
) -> usize {
    use microquant::interp::Interpreter;
    use microquant::model::{AlignedBytes, Quant};
    use microquant::ptq::{CalibrationOptions, ObserverKind, PtqOptions, convert};
    let file: File = serde_json::from_str(&std::fs::read_to_string(dir().join("recurrent.json")).unwrap()).unwrap();
    let mut seen = 0;
    for m in file.models.iter().filter(|m| pick(m)) {
        let bytes = std::fs::read(dir().join(&m.file)).unwrap();
        let imported = microquant::onnx::import(&bytes).unwrap();
        let mut rng = microquant_tests::rng::SplitMix64::new(0x6c73746d);
        let normal = |rng: &mut microquant_tests::rng::SplitMix64| -> f32 {
            // Box-Muller from two uniforms in (0, 1].
            let u =
                |r: &mut microquant_tests::rng::SplitMix64| ((r.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            let (a, b) = (u(rng), u(rng));
            ((-2.0 * a.ln()).sqrt() * (2.0 * core::f64::consts::PI * b).cos()) as f32
        };
        let samples: Vec<Vec<Vec<f32>>> = (0..n_samples)
            .map(|_| m.inputs.iter().map(|t| (0..t.len()).map(|_| normal(&mut rng)).collect()).collect())
            .collect();
        // Min/max ranges: the golden inputs are not the calibration samples, and the bound on the
        // largest difference (in output steps) is about the kernels, not about clipping.
        let options = PtqOptions {
            calibration: CalibrationOptions { observer: ObserverKind::MinMax, ..Default::default() },
            ..Default::default()
        };
        let out = convert(&imported.graph, &samples, None, &options, &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let model = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u128; out.compiled.arena_len / 16 + 1];
        let mut it = Interpreter::new(&model, bytemuck::cast_slice_mut(&mut arena)).unwrap();
        let q = |info: microquant::model::TensorInfo| match info.quant {
            Quant::PerTensor { scale, zero_point } => (scale, zero_point),
            _ => panic!("{}: not per tensor", m.name),
        };
        for (k, (t, info)) in m.inputs.iter().zip(&imported.inputs).enumerate() {
            let (xs, xz) = q(it.input_info(k).unwrap());
            let x: Vec<i8> = info
                .to_graph_layout(&t.f32())
                .unwrap()
                .iter()
                .map(|&v| ((v / xs).round() as i32 + xz).clamp(-128, 127) as i8)
                .collect();
            it.input_i8(k).unwrap().copy_from_slice(&x);
        }
        it.invoke().unwrap();
        let (ys, yz) = q(it.output_info(0).unwrap());
        let ours: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&v| (v as i32 - yz) as f32 * ys).collect();
        let ours = imported.outputs[0].to_model_layout(&ours).unwrap();
        let reference = m.outputs[0].f32();
        assert_eq!(reference.len(), ours.len(), "{}", m.name);
        let (mut err2, mut sig2, mut worst) = (0f64, 0f64, 0f32);
        for (&r, &o) in reference.iter().zip(&ours) {
            err2 += f64::from(r - o).powi(2);
            sig2 += f64::from(r).powi(2);
            worst = worst.max((r - o).abs());
        }
        let sqnr = 10.0 * (sig2 / err2.max(1e-30)).log10();
        println!(
            "{} ({}): int8 vs float: SQNR {sqnr:.1} dB, max |diff| {worst:.4} ({:.1} output steps), {} ops",
            m.name,
            m.oracle,
            worst / ys,
            out.quantized.graph.nodes.len()
        );
        assert!(
            sqnr >= min_sqnr && worst <= max_steps * ys,
            "{}: SQNR {sqnr:.1} dB, max |diff| {worst} ({:.1} steps)",
            m.name,
            worst / ys
        );
        seen += 1;
    }
    seen
}

#[test]
fn unsupported_lstm_forms_are_named() {
    for (tag, needle) in [("bidirectional", "direction"), ("clip", "clip"), ("yc_used", "Y_c")] {
        let bytes = std::fs::read(dir().join("errors").join(format!("lstm_{tag}.onnx"))).unwrap();
        let e = microquant::onnx::import(&bytes).err().unwrap_or_else(|| panic!("{tag} imported"));
        assert!(e.to_string().contains(needle), "{tag}: {e}");
    }
}
