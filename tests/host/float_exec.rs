//! The float executor on the four MLPerf Tiny float TFLite models against the TFLite
//! interpreter's float outputs (reference kernels; `tests/golden/onnx/tflite_float_mlperf.json`,
//! written by `tests/gen/gen_onnx_float.py`), with the tolerance rule of
//! `onnx_golden::assert_close` (1e-5 relative); and the executor's API contract (observed
//! activations, all activations, bad inputs). KWS float is a hybrid model (int8 convolution
//! weights): it runs as is and after `dequantize_hybrid_weights`, with the same result.

use crate::onnx_golden;

use microquant::float::FloatExecutor;
use microquant::graph::{ConvertErrorKind, Graph, TensorId};
use microquant_tests::golden::Tensor;
use microquant_tests::rng::SplitMix64;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Sample {
    seed: u64,
    output: Tensor,
}

#[derive(Debug, Deserialize)]
struct Model {
    name: String,
    file: String,
    input_shape: Vec<usize>,
    input_scale: f32,
    input_zero_point: i32,
    samples: Vec<Sample>,
}

#[derive(Debug, Deserialize)]
struct File {
    models: Vec<Model>,
}

fn models() -> Vec<Model> {
    let text = std::fs::read_to_string(onnx_golden::golden_dir().join("tflite_float_mlperf.json")).unwrap();
    serde_json::from_str::<File>(&text).unwrap().models
}

/// The generator's input: SplitMix64 int8 values mapped with the int8 model's input qparams.
fn input(m: &Model, seed: u64) -> Vec<f32> {
    let n: usize = m.input_shape.iter().product();
    let mut q = vec![0i8; n];
    SplitMix64::new(seed).fill_i8(&mut q);
    q.iter().map(|&v| (v as f32 - m.input_zero_point as f32) * m.input_scale).collect()
}

fn graph_of(m: &Model) -> Graph {
    let bytes = std::fs::read(onnx_golden::repo_dir().join(&m.file)).unwrap();
    microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", m.name))
}

fn check(m: &Model, g: &Graph, what: &str) -> f64 {
    let ex = FloatExecutor::new(g).unwrap_or_else(|e| panic!("{} {what}: {e}", m.name));
    let mut worst = 0f64;
    for s in &m.samples {
        let x = input(m, s.seed);
        let y = ex.run(&[&x]).unwrap();
        let e = onnx_golden::assert_close(&format!("{} {what} seed {}", m.name, s.seed), &s.output.f32(), &y[0]);
        worst = worst.max(e);
    }
    worst
}

#[test]
fn mlperf_float_models_match_tflite() {
    let ms = models();
    assert_eq!(ms.len(), 4);
    for m in &ms {
        let g = graph_of(m);
        let e = check(m, &g, "as imported");
        let mut plain = g.clone();
        let converted = plain.dequantize_hybrid_weights();
        if m.name == "kws" {
            assert!(converted > 0, "KWS float has int8 (hybrid) weights");
        }
        let e2 = check(m, &plain, "dequantized");
        let mut opt = plain.clone();
        let stats = microquant::passes::optimize(&mut opt).unwrap();
        let e3 = check(m, &opt, "optimized");
        println!(
            "{}: {} nodes ({} after passes, {} rewrites), max rel err vs TFLite {e:.1e} / {e2:.1e} / {e3:.1e}",
            m.name,
            g.nodes.len(),
            opt.nodes.len(),
            stats.total()
        );
    }
}

#[test]
fn observed_and_all_activations() {
    let m = models().into_iter().find(|m| m.name == "ic").unwrap();
    let g = graph_of(&m);
    let ex = FloatExecutor::new(&g).unwrap();
    let x = input(&m, m.samples[0].seed);
    let mut seen: Vec<(TensorId, usize)> = Vec::new();
    let outs = ex
        .run_observed(&[&x], |t, v| {
            seen.push((t, v.len()));
            Ok(())
        })
        .unwrap();
    // Every graph input and node output, in execution order, with its full size.
    let expected: Vec<TensorId> = g.inputs.iter().copied().chain(g.nodes.iter().map(|n| n.outputs[0])).collect();
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), expected);
    for (t, n) in &seen {
        assert_eq!(Some(*n), g.tensor(*t).unwrap().num_elements());
    }
    let all = ex.run_all(&[&x]).unwrap();
    assert_eq!(all[g.outputs[0].index()].as_ref().unwrap(), &outs[0]);
    assert!(g.nodes.iter().all(|n| all[n.outputs[0].index()].is_some()));
    // A callback error stops the run and comes back with the node.
    let e = ex.run_observed(&[&x], |t, _| {
        if t == g.nodes[2].outputs[0] {
            Err(microquant::graph::ConvertError::new(ConvertErrorKind::Unsupported, "stop"))
        } else {
            Ok(())
        }
    });
    assert_eq!(e.unwrap_err().node_index(), Some(2));
}

#[test]
fn bad_inputs_are_errors() {
    let m = models().into_iter().find(|m| m.name == "ad").unwrap();
    let g = graph_of(&m);
    let ex = FloatExecutor::new(&g).unwrap();
    let e = ex.run(&[&[0.0; 639]]).unwrap_err();
    assert_eq!(e.kind(), ConvertErrorKind::InvalidGraph);
    assert!(e.message().contains("639"), "{e}");
    assert!(ex.run(&[]).is_err());
    // The int8 model is not a float graph.
    let int8 = std::fs::read(onnx_golden::repo_dir().join("models/mlperf-tiny/ad01_int8.tflite")).unwrap();
    let q = microquant::tflite::import(&int8).unwrap();
    let e = FloatExecutor::new(&q).unwrap_err();
    assert_eq!(e.kind(), ConvertErrorKind::UnsupportedDType, "{e}");
}
