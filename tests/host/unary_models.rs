//! The clamp and sign ops end to end (tests/golden/unary_models/, written by
//! tests/gen/gen_unary_models.py): ONNX models with Clip (fused into a fully connected op as
//! RELU_N1_TO_1, [0.5, 3], only a max), Abs, Elu, Neg, Reciprocal, hard swish written in pieces
//! as Paddle2ONNX does (fused into one HARD_SWISH), 1/√x as PyTorch exports rsqrt (fused into
//! one RSQRT), run by ONNX Runtime; TFLite
//! models with ABS, NEG, RSQRT, ELU, RELU_N1_TO_1, SQRT, run by the TFLite interpreter. Float
//! execution within 1e-5 of the runtime; quantized to int8, compiled to `.mq` with the op's own
//! kind (RELU, ABS, NEG, RSQRT, ELU) and run by the interpreter, close to the runtime's float
//! output (SQNR); both QDQ export forms written, the portable one read back.

use crate::onnx_golden::assert_close;
use microquant::compile::{CompileOptions, compile};
use microquant::float::FloatExecutor;
use microquant::graph::{Graph, Op};
use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::onnx::{QdqExportOptions, export_qdq, export_qdq_portable};
use microquant::ptq::*;
use microquant_tests::golden::Tensor;
use serde::Deserialize;

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/unary_models")
}

#[derive(Deserialize)]
struct Case {
    name: String,
    file: String,
    input: Tensor,
    expected: Tensor,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Case>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(dir().join("cases.json")).unwrap();
    serde_json::from_str::<File>(&text).unwrap().models
}

/// The float graph (3-D models: the layouts are the source's).
fn import(c: &Case) -> Graph {
    let bytes = std::fs::read(dir().join(&c.file)).unwrap();
    if c.file.ends_with(".onnx") {
        microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name)).graph
    } else {
        microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name))
    }
}

/// The graph op each model must hold after import, and the `.mq` kind it must lower to.
fn expected_ops(name: &str) -> (fn(&Op) -> bool, &'static str) {
    match name {
        "onnx_fc_clip_n1_1" => {
            (|o| matches!(o, Op::Clip { min, max } if *min == -1.0 && *max == 1.0), "FULLY_CONNECTED")
        }
        "onnx_clip_0p5_3" => (|o| matches!(o, Op::Clip { min, max } if *min == 0.5 && *max == 3.0), "RELU"),
        "onnx_clip_max_only" => (|o| matches!(o, Op::Clip { min, .. } if *min == f32::NEG_INFINITY), "RELU"),
        "tflite_relu_n1_to_1" => (|o| matches!(o, Op::Clip { .. }), "RELU"),
        "onnx_abs" | "tflite_abs" => (|o| matches!(o, Op::Abs), "ABS"),
        "onnx_elu" | "onnx_elu_alpha0p5" | "tflite_elu" => (|o| matches!(o, Op::Elu { .. }), "ELU"),
        "tflite_neg" => (|o| matches!(o, Op::Neg), "NEG"),
        "tflite_rsqrt" => (|o| matches!(o, Op::Rsqrt), "RSQRT"),
        "onnx_neg" | "onnx_reciprocal" | "tflite_sqrt" => (|o| matches!(o, Op::Unary(_)), "LUT"),
        // Fused by `passes::optimize`, not at import.
        "onnx_hardswish_paddle" | "onnx_hardswish_gate" => (|o| matches!(o, Op::HardSwish), "HARD_SWISH"),
        "onnx_rsqrt_reciprocal" | "onnx_rsqrt_div" => (|o| matches!(o, Op::Rsqrt), "RSQRT"),
        other => panic!("no expectation for {other}"),
    }
}

#[test]
fn unary_models_import_and_run_as_the_runtimes() {
    let all = cases();
    assert_eq!(all.len(), 18);
    for c in &all {
        let mut g = import(c);
        let (is_op, _) = expected_ops(&c.name);
        let fused_later = c.name.starts_with("onnx_hardswish") || c.name.starts_with("onnx_rsqrt");
        let holds = |g: &Graph| g.nodes.iter().any(|n| is_op(&n.op));
        let names = |g: &Graph| g.nodes.iter().map(|n| n.op.name()).collect::<Vec<_>>();
        assert!(fused_later || holds(&g), "{}: {:?}", c.name, names(&g));
        microquant::passes::optimize(&mut g).unwrap();
        if c.name.starts_with("onnx_hardswish") {
            // One HardSwish instead of the add, clip, product and division.
            assert_eq!(names(&g), ["FullyConnected", "HardSwish"], "{}", c.name);
        } else if fused_later {
            // One RSQRT instead of the square root and the reciprocal.
            assert_eq!(names(&g), ["Abs", "Add", "Rsqrt"], "{}", c.name);
        }
        let y = FloatExecutor::new(&g).unwrap().run(&[&c.input.f32()]).unwrap();
        let e = assert_close(&c.name, &c.expected.f32(), &y[0]);
        println!("{}: {} nodes, worst relative error {e:.1e}", c.name, g.nodes.len());
    }
}

#[test]
fn unary_models_quantize_and_run_int8_close_to_the_runtimes() {
    for c in cases() {
        let mut g = import(&c);
        prepare(&mut g).unwrap();
        let x = c.input.f32();
        let mut cal = Calibrator::new(&g, &CalibrationOptions::default()).unwrap();
        cal.calibrate(&[vec![x.clone()]], &mut |_| {}).unwrap();
        let q = quantize(&cal, &QuantizeOptions::default()).unwrap();
        // Both QDQ export forms write the op (the exact one as the kernel's table), and the
        // portable one reads back (table functions, `Op::Unary`, have no QDQ form).
        if expected_ops(&c.name).1 != "LUT" {
            let o = QdqExportOptions::default();
            export_qdq(&q.graph, &o).unwrap_or_else(|e| panic!("{}: exact export: {e}", c.name));
            let portable = export_qdq_portable(&q.graph, &o).unwrap();
            microquant::onnx::import(&portable).unwrap_or_else(|e| panic!("{}: portable QDQ re-import: {e}", c.name));
        }
        let compiled = compile(&q.graph, &CompileOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let bytes = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        let kinds: Vec<&str> =
            (0..it.model().num_ops() as u32).map(|i| it.model().op(i).unwrap().kind.name()).collect();
        let (_, kind) = expected_ops(&c.name);
        assert!(kinds.contains(&kind), "{}: {kinds:?}", c.name);
        if c.name == "onnx_fc_clip_n1_1" {
            assert!(!kinds.contains(&"RELU"), "{}: the clamp is fused: {kinds:?}", c.name);
        }
        let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
        let (os, oz) = it.output_info(0).unwrap().per_tensor().unwrap();
        for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&x) {
            *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
        }
        it.invoke().unwrap();
        let ours: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| (q as i32 - oz) as f32 * os).collect();
        let want = c.expected.f32();
        let (mut signal, mut noise) = (0f64, 0f64);
        for (&a, &b) in want.iter().zip(&ours) {
            signal += f64::from(a) * f64::from(a);
            noise += f64::from(a - b) * f64::from(a - b);
        }
        let sqnr = 10.0 * (signal / noise.max(1e-30)).log10();
        println!("{}: int8 {kinds:?} vs the runtime's float output: SQNR {sqnr:.1} dB", c.name);
        assert!(sqnr >= 30.0, "{}: SQNR {sqnr:.1} dB", c.name);
    }
}
