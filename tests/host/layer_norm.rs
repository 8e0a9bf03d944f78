//! Layer normalization (tests/golden/layer_norm/, written by tests/gen/gen_layer_norm.py with
//! ONNX Runtime): the ONNX `LayerNormalization` op (opset 17: last axis, an inner axis of a 4-D
//! tensor, no bias, in a transformer's post-norm feed-forward block) and the pieces PyTorch writes
//! below opset 17 (matched as one by the quantizer: rewritten into the op's form). Float
//! execution within 1e-5 of ONNX Runtime; quantized to int8 (each piece
//! an int8 kernel: MEAN, SUB, MUL, ADD, a LUT for (var + ε)^-½) and run by the interpreter, close to
//! ONNX Runtime's float output.

use crate::onnx_golden::assert_close;
use microquant::compile::{CompileOptions, compile};
use microquant::float::FloatExecutor;
use microquant::graph::Op;
use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::ptq::*;
use microquant_tests::golden::Tensor;
use serde::Deserialize;

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/layer_norm")
}

#[derive(Deserialize)]
struct Case {
    name: String,
    file: String,
    input: Tensor,
    ort: Tensor,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Case>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(dir().join("cases.json")).unwrap();
    serde_json::from_str::<File>(&text).unwrap().models
}

fn import(c: &Case) -> microquant::onnx::Imported {
    let bytes = std::fs::read(dir().join(&c.file)).unwrap();
    microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name))
}

#[test]
fn layer_normalization_imports_and_runs_as_onnx_runtime() {
    let all = cases();
    assert_eq!(all.len(), 5);
    for c in &all {
        let imported = import(c);
        let mut g = imported.graph.clone();
        if !c.name.contains("decomposed") {
            // The ONNX op becomes TFLite's pieces, each node named after it.
            let means = g.nodes.iter().filter(|n| matches!(n.op, Op::Mean { .. })).count();
            assert_eq!(means, 2, "{}", c.name);
            assert!(g.nodes.iter().any(|n| n.name == "ln/rstd"), "{}", c.name);
        }
        microquant::passes::optimize(&mut g).unwrap();
        let x = imported.inputs[0].to_graph_layout(&c.input.f32()).unwrap();
        let y = FloatExecutor::new(&g).unwrap().run(&[&x]).unwrap();
        let y = imported.outputs[0].to_model_layout(&y[0]).unwrap();
        let e = assert_close(&c.name, &c.ort.f32(), &y);
        println!("{}: {} nodes, worst relative error {e:.1e}", c.name, g.nodes.len());
    }
}

#[test]
fn layer_normalization_quantizes_and_runs_int8_close_to_onnx_runtime() {
    for c in cases() {
        let imported = import(&c);
        let mut g = imported.graph.clone();
        let prepared = prepare(&mut g).unwrap();
        if c.name.contains("decomposed") {
            // PyTorch's pieces are matched as one layer norm: the ONNX op's form, the square a
            // product and 1/√(var + ε) one function.
            assert_eq!(prepared.layer_norms_fused, 1, "{}", c.name);
            let names: Vec<&str> = g.nodes.iter().map(|n| n.op.name()).collect();
            assert_eq!(&names[..8], ["Mean", "Sub", "Mul", "Mean", "Add", "Pow", "Mul", "Mul"], "{}", c.name);
        }
        let x = imported.inputs[0].to_graph_layout(&c.input.f32()).unwrap();
        let mut cal = Calibrator::new(&g, &CalibrationOptions::default()).unwrap();
        cal.calibrate(&[vec![x.clone()]], &mut |_| {}).unwrap();
        let q = quantize(&cal, &QuantizeOptions::default()).unwrap();
        let compiled = compile(&q.graph, &CompileOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let bytes = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        let kinds: Vec<&str> =
            (0..it.model().num_ops() as u32).map(|i| it.model().op(i).unwrap().kind.name()).collect();
        assert!(kinds.iter().filter(|&&k| k == "MEAN").count() == 2, "{}: {kinds:?}", c.name);
        // Every form runs the same kernels: no square-root table, no int8 division.
        assert!(!kinds.contains(&"DIV"), "{}: {kinds:?}", c.name);
        assert_eq!(kinds.iter().filter(|&&k| k == "LUT").count(), 1, "{}: {kinds:?}", c.name);
        let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
        let (os, oz) = it.output_info(0).unwrap().per_tensor().unwrap();
        for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&x) {
            *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
        }
        it.invoke().unwrap();
        let ours: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| (q as i32 - oz) as f32 * os).collect();
        let ours = imported.outputs[0].to_model_layout(&ours).unwrap();
        let ort = c.ort.f32();
        let (mut signal, mut noise) = (0f64, 0f64);
        for (&a, &b) in ort.iter().zip(&ours) {
            signal += f64::from(a) * f64::from(a);
            noise += f64::from(a - b) * f64::from(a - b);
        }
        let sqnr = 10.0 * (signal / noise.max(1e-30)).log10();
        println!("{}: int8 ({} ops: {kinds:?}) vs ONNX Runtime float: SQNR {sqnr:.1} dB", c.name, kinds.len());
        assert!(sqnr >= 30.0, "{}: SQNR {sqnr:.1} dB", c.name);
    }
}
