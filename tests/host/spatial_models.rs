//! Resize through the whole converter, against real runtimes (`tests/golden/spatial/`, written by
//! `tests/gen/gen_spatial_models.py`):
//! - ONNX `Resize` models (every mode combination TFLite can express, opsets 11, 13 and 18):
//!   imported and run by the float executor, against ONNX Runtime (see [`assert_close_interp`]
//!   for the tolerance); the combinations TFLite cannot express are errors naming the
//!   node and the attribute;
//! - a Conv → Resize (linear) → Conv → Resize (nearest) ONNX network quantized end to end (our
//!   PTQ, `.mq`, interpreter) and compared with ONNX Runtime's float output; its QDQ export
//!   reads back with the same resize ops;
//! - a Keras model converted by TensorFlow's TFLiteConverter (RESIZE_BILINEAR with
//!   half_pixel_centers and with align_corners, RESIZE_NEAREST_NEIGHBOR): the float model against
//!   the TFLite interpreter, the int8 model imported, compiled and run bit-exact with TFLite Micro
//!   and the interpreter's reference kernels;
//! - ONNX `Softmax` over axes 0, 1, 2 and -1 (opsets 11, 13, 18: before 13 over the flattened
//!   trailing axes), run by the float executor against ONNX Runtime, and a Conv → Softmax(axis 1)
//!   network quantized end to end (the importer moves the axis last with a transpose where the
//!   graph's layout does not already have it there; the int8 softmax runs on the last axis,
//!   bit-exact with TFLite Micro as before);
//! - ONNX `ReduceSum` / `ReduceMax` models and a Conv → ReduceMax → Conv → ReduceSum network, as
//!   the resize ones; a Keras model with `tf.reduce_max` / `tf.reduce_sum` converted to int8 (SUM,
//!   REDUCE_MAX), bit-exact with TFLite Micro.

use std::path::PathBuf;

use microquant::compile::{CompileOptions, compile};
use microquant::float::FloatExecutor;
use microquant::graph::{Op, ResizeMethod};
use microquant::interp::Interpreter;
use microquant::kernels::Rounding;
use microquant::model::{AlignedBytes, Quant};
use microquant::onnx::{QdqExportOptions, export_qdq, export_qdq_portable};
use microquant::ptq::{PtqOptions, convert};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use serde::Deserialize;

use crate::onnx_golden;

#[derive(Debug, Deserialize)]
struct OnnxSample {
    input: Tensor,
    output: Tensor,
}

#[derive(Debug, Deserialize)]
struct OnnxModel {
    name: String,
    file: String,
    samples: Vec<OnnxSample>,
}

#[derive(Debug, Deserialize)]
struct OnnxError {
    name: String,
    file: String,
    message_contains: String,
}

#[derive(Debug, Deserialize)]
struct OnnxFile {
    models: Vec<OnnxModel>,
    errors: Vec<OnnxError>,
}

#[derive(Debug, Deserialize)]
struct TfliteSample {
    float_input: Tensor,
    float_output: Tensor,
    int8_input: Tensor,
    int8_tflm: Tensor,
    int8_tflite_ref: Tensor,
}

#[derive(Debug, Deserialize)]
struct TfliteFile {
    float_model: String,
    int8_model: String,
    int8_ops: Vec<String>,
    samples: Vec<TfliteSample>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join("spatial")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(onnx_golden::repo_dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The tolerance of an interpolation against an f32 reference: `|ours - ref| <= max(1e-5 |ref|,
/// 1e-6 max|ref|)` element by element. Bilinear weights neighbours of either sign, so an output
/// can be much smaller than its inputs; ONNX Runtime's and TFLite's f32 kernels round each of
/// their four products to about an ulp of the largest input (~6e-8 of it), which is what the
/// absolute term allows (with margin), while [`onnx_golden::assert_close`] would hold such an
/// output to 1e-5 of itself. Returns the largest error relative to the bound.
fn assert_close_interp(case: &str, reference: &[f32], ours: &[f32]) -> f64 {
    assert_eq!(reference.len(), ours.len(), "{case}: length");
    let big = reference.iter().fold(0f64, |m, &v| m.max(f64::from(v).abs()));
    let mut worst = 0f64;
    for (i, (&r, &o)) in reference.iter().zip(ours).enumerate() {
        let bound = (1e-5 * f64::from(r).abs()).max(1e-6 * big).max(f64::MIN_POSITIVE);
        let e = (f64::from(o) - f64::from(r)).abs() / bound;
        assert!(e <= 1.0, "{case}: element {i}: ours {o}, reference {r} (bound {bound:.3e})");
        worst = worst.max(e);
    }
    worst
}

fn onnx_file() -> OnnxFile {
    serde_json::from_str(&std::fs::read_to_string(dir().join("onnx.json")).unwrap()).unwrap()
}

fn tflite_file() -> TfliteFile {
    serde_json::from_str(&std::fs::read_to_string(dir().join("tflite.json")).unwrap()).unwrap()
}

#[test]
fn onnx_resize_models_match_onnx_runtime() {
    let f = onnx_file();
    assert_eq!(f.models.len(), 78);
    let mut worst = 0f64;
    for m in &f.models {
        let imported = microquant::onnx::import(&read(&m.file)).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let g = &imported.graph;
        let resizes: Vec<&Op> = g.nodes.iter().map(|n| &n.op).filter(|op| matches!(op, Op::Resize { .. })).collect();
        let others = g
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Sum { .. } | Op::ReduceMax { .. } | Op::Softmax { .. }))
            .count();
        assert!(!resizes.is_empty() || others > 0, "{}: no Resize, Sum, ReduceMax or Softmax in\n{g}", m.name);
        // The mode names the kernel: linear is bilinear, nearest is nearest.
        if m.name.starts_with("linear") || m.name.starts_with("nearest") {
            let want =
                if m.name.starts_with("linear") { ResizeMethod::Bilinear } else { ResizeMethod::NearestNeighbor };
            assert!(matches!(resizes[0], Op::Resize { method, .. } if *method == want), "{}: {}", m.name, resizes[0]);
        }
        let ex = FloatExecutor::new(g).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        for (k, s) in m.samples.iter().enumerate() {
            let x = imported.inputs[0].to_graph_layout(&s.input.f32()).unwrap();
            let y = ex.run(&[&x]).unwrap_or_else(|e| panic!("{}: {e}", m.name));
            let y = imported.outputs[0].to_model_layout(&y[0]).unwrap();
            worst = worst.max(assert_close_interp(&format!("{} sample {k}", m.name), &s.output.f32(), &y));
        }
    }
    println!("{} models, worst error {worst:.2} of the bound", f.models.len());
}

#[test]
fn onnx_resize_modes_tflite_cannot_express_are_errors_naming_node_and_attribute() {
    let f = onnx_file();
    assert_eq!(f.errors.len(), 5);
    for e in &f.errors {
        match microquant::onnx::import(&read(&e.file)) {
            Ok(_) => panic!("{}: imported, expected an error", e.name),
            Err(err) => {
                let text = err.to_string();
                println!("{}: {text}", e.name);
                assert!(text.contains("resize"), "{}: the node is not named: {text}", e.name);
                assert!(text.contains(&e.message_contains), "{}: {text} lacks {:?}", e.name, e.message_contains);
            }
        }
    }
}

/// SQNR (dB) of `ours` against `reference`.
fn sqnr(reference: &[f32], ours: &[f32]) -> f64 {
    let s: f64 = reference.iter().map(|&v| f64::from(v).powi(2)).sum();
    let n: f64 = reference.iter().zip(ours).map(|(&r, &o)| (f64::from(r) - f64::from(o)).powi(2)).sum();
    10.0 * (s / n.max(1e-30)).log10()
}

#[test]
fn onnx_conv_resize_reduce_and_softmax_networks_quantize_close_to_onnx_runtime() {
    let f = onnx_file();
    for m in f.models.iter().filter(|m| m.name.starts_with("conv_")) {
        let imported = microquant::onnx::import(&read(&m.file)).unwrap();
        let (xin, yout) = (&imported.inputs[0], &imported.outputs[0]);
        // Calibrate on seeded normal inputs (as the golden inputs are drawn).
        let n = xin.model_shape.iter().product::<usize>();
        let mut r = microquant_tests::rng::SplitMix64::new(17);
        let mut u = || ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let calib: Vec<Vec<Vec<f32>>> = (0..48)
            .map(|_| {
                let x: Vec<f32> = (0..n)
                    .map(|_| ((-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos()) as f32)
                    .collect();
                vec![xin.to_graph_layout(&x).unwrap()]
            })
            .collect();
        let out = convert(&imported.graph, &calib, None, &PtqOptions::default(), &mut |_| {}).unwrap();
        let q = &out.quantized.graph;
        let resizes = |g: &microquant::graph::Graph| -> Vec<String> {
            g.nodes
                .iter()
                .filter(|n| {
                    matches!(n.op, Op::Resize { .. } | Op::Sum { .. } | Op::ReduceMax { .. } | Op::Softmax { .. })
                })
                .map(|n| n.op.to_string())
                .collect()
        };
        let want = if m.name.starts_with("conv_softmax") { 1 } else { 2 };
        assert_eq!(resizes(q).len(), want, "{}", m.name);
        // The portable QDQ export writes them as ONNX Resize nodes that read back as the same ops;
        // the exact export (integer arithmetic for ONNX Runtime) writes them too.
        let options = QdqExportOptions {
            opset: 17,
            inputs: imported.inputs.clone(),
            outputs: imported.outputs.clone(),
            graph_name: m.name.clone(),
        };
        export_qdq(q, &options).unwrap_or_else(|e| panic!("{}: exact export: {e}", m.name));
        let qdq = export_qdq_portable(q, &options).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let back = microquant::onnx::import(&qdq).unwrap_or_else(|e| panic!("{}: QDQ re-import: {e}", m.name));
        assert_eq!(resizes(&back.graph), resizes(q), "{}", m.name);
        let bytes = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u8; out.compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        let (iq, oq) = match (it.input_info(0).unwrap().quant, it.output_info(0).unwrap().quant) {
            (Quant::PerTensor { scale: a, zero_point: b }, Quant::PerTensor { scale: c, zero_point: d }) => {
                ((a, b), (c, d))
            }
            _ => panic!("{}: int8 input and output expected", m.name),
        };
        for (k, s) in m.samples.iter().enumerate() {
            let x = xin.to_graph_layout(&s.input.f32()).unwrap();
            for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&x) {
                *d = ((v / iq.0).round() as i32 + iq.1).clamp(-128, 127) as i8;
            }
            it.invoke().unwrap();
            let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&v| (v as i32 - oq.1) as f32 * oq.0).collect();
            let y = yout.to_model_layout(&y).unwrap();
            let db = sqnr(&s.output.f32(), &y);
            println!("{} sample {k}: int8 vs ONNX Runtime SQNR {db:.1} dB", m.name);
            // Opset 11's softmax spreads over C·H·W = 240 values: outputs near 1/240, a few steps
            // of int8 softmax's fixed 1/256 output scale, hence the lower floor.
            let floor = if m.name == "conv_softmax_opset11" { 20.0 } else { 25.0 };
            assert!(db >= floor, "{} sample {k}: SQNR {db:.1} dB against ONNX Runtime", m.name);
        }
    }
}

#[test]
fn tflite_resize_float_model_matches_the_tflite_interpreter() {
    let f = tflite_file();
    let g = microquant::tflite::import(&read(&f.float_model)).unwrap();
    let kinds: Vec<String> =
        g.nodes.iter().filter(|n| matches!(n.op, Op::Resize { .. })).map(|n| n.op.to_string()).collect();
    assert_eq!(kinds.len(), 3, "{g}");
    assert!(kinds.iter().any(|k| k.contains("bilinear") && k.contains("half_pixel_centers")), "{kinds:?}");
    assert!(kinds.iter().any(|k| k.contains("bilinear") && k.contains("align_corners")), "{kinds:?}");
    assert!(kinds.iter().any(|k| k.contains("nearest")), "{kinds:?}");
    let ex = FloatExecutor::new(&g).unwrap();
    for (k, s) in f.samples.iter().enumerate() {
        let y = ex.run(&[&s.float_input.f32()]).unwrap();
        let e = assert_close_interp(&format!("float sample {k}"), &s.float_output.f32(), &y[0]);
        println!("float sample {k}: worst error {e:.2} of the bound");
    }
}

#[test]
fn tflite_resize_int8_model_runs_bit_exact_with_tflite_micro_and_the_interpreter() {
    let f = tflite_file();
    assert_eq!(f.int8_ops, ["CONV_2D", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"]);
    let g = microquant::tflite::import(&read(&f.int8_model)).unwrap();
    for rounding in [Rounding::Double, Rounding::Single] {
        let compiled = compile(&g, &CompileOptions { rounding, ..Default::default() }).unwrap();
        let bytes = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        for (k, s) in f.samples.iter().enumerate() {
            it.input_i8(0).unwrap().copy_from_slice(&s.int8_input.i8());
            it.invoke().unwrap();
            let want = if rounding == Rounding::Double { &s.int8_tflm } else { &s.int8_tflite_ref };
            let n = assert_bit_exact(&format!("{rounding:?} sample {k}"), &want.i8(), it.output_i8(0).unwrap());
            println!("{rounding:?} sample {k}: {n} outputs bit-exact");
        }
    }
}

#[derive(Debug, Deserialize)]
struct ReduceSample {
    int8_input: Tensor,
    int8_tflm: Tensor,
}

#[derive(Debug, Deserialize)]
struct TfliteReduceFile {
    int8_model: String,
    int8_ops: Vec<String>,
    samples: Vec<ReduceSample>,
}

#[test]
fn tflite_sum_and_reduce_max_int8_model_runs_bit_exact_with_tflite_micro() {
    let f: TfliteReduceFile =
        serde_json::from_str(&std::fs::read_to_string(dir().join("tflite_reduce.json")).unwrap()).unwrap();
    assert_eq!(f.int8_ops, ["CONV_2D", "REDUCE_MAX", "SUM"]);
    let g = microquant::tflite::import(&read(&f.int8_model)).unwrap();
    assert!(g.nodes.iter().any(|n| matches!(n.op, Op::Sum { .. })), "{g}");
    assert!(g.nodes.iter().any(|n| matches!(n.op, Op::ReduceMax { .. })), "{g}");
    let compiled = compile(&g, &CompileOptions::default()).unwrap();
    let bytes = AlignedBytes::new(&compiled.bytes);
    let mut arena = vec![0u8; compiled.arena_len + 16];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    for (k, s) in f.samples.iter().enumerate() {
        it.input_i8(0).unwrap().copy_from_slice(&s.int8_input.i8());
        it.invoke().unwrap();
        assert_bit_exact(&format!("sample {k}"), &s.int8_tflm.i8(), it.output_i8(0).unwrap());
    }
}
