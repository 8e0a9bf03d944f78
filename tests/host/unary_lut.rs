//! The elementwise functions that run as a 256-entry int8 table (`.mq` kind LUT, `Op::Unary`,
//! `kernels/unary_lut.rs`), against ONNX Runtime (`tests/golden/unary/`, written by
//! `tests/gen/gen_unary_lut.py`):
//!
//! - the table against ONNX Runtime running `DequantizeLinear → f → QuantizeLinear` on every
//!   int8 input, graph optimizations off (the ONNX spec) and on: every entry within one output
//!   step, and the number of exact entries printed (the function's last bits differ between
//!   `libm` and ONNX Runtime's own math where a value lies next to a rounding midpoint);
//! - the ONNX import and the float executor against ONNX Runtime's float outputs
//!   (`onnx_golden::assert_close`: 1e-5 relative);
//! - end to end: each float model calibrated on its input, quantized, compiled to `.mq` (one LUT
//!   op) and run by the interpreter, its output at least 30 dB SQNR from ONNX Runtime's float
//!   output (the int8 input's rounding, times the function's slope, dominates the error).

use crate::onnx_golden::assert_close;

use microquant::compile::{CompileOptions, compile};
use microquant::float::FloatExecutor;
use microquant::graph::{Op, UnaryFn};
use microquant::interp::Interpreter;
use microquant::kernels::tensor::PerTensorQuant;
use microquant::kernels::unary_lut::table_s8;
use microquant::model::AlignedBytes;
use microquant::ptq::*;
use microquant_tests::golden::Tensor;
use serde::Deserialize;

fn dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden/unary")
}

#[derive(Deserialize)]
struct QdqCase {
    name: String,
    function: String,
    parameters: Vec<f32>,
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
    ort: Tensor,
    ort_optimized: Tensor,
}

#[derive(Deserialize)]
struct QdqFile {
    cases: Vec<QdqCase>,
}

#[derive(Deserialize)]
struct FloatCase {
    name: String,
    file: String,
    input: Tensor,
    ort: Tensor,
}

#[derive(Deserialize)]
struct FloatFile {
    models: Vec<FloatCase>,
}

/// The float function of a case: a [`UnaryFn`], or HardSigmoid (lowered to the same table).
fn function(c: &QdqCase) -> Box<dyn Fn(f32) -> f32> {
    let f = match (c.function.as_str(), c.parameters.as_slice()) {
        ("Exp", []) => UnaryFn::Exp,
        ("Sqrt", []) => UnaryFn::Sqrt,
        ("Erf", []) => UnaryFn::Erf,
        ("Neg", []) => UnaryFn::Neg,
        ("Softplus", []) => UnaryFn::Softplus,
        ("Sin", []) => UnaryFn::Sin,
        ("Cos", []) => UnaryFn::Cos,
        ("Gelu", []) => UnaryFn::Gelu,
        ("GeluTanh", []) => UnaryFn::GeluTanh,
        ("Silu", []) => UnaryFn::Silu,
        ("Pow", [e]) => UnaryFn::Pow(*e),
        ("HardSigmoid", &[alpha, beta]) => return Box::new(move |x: f32| (alpha * x + beta).clamp(0.0, 1.0)),
        _ => panic!("{}: unknown function {} {:?}", c.name, c.function, c.parameters),
    };
    Box::new(move |x| f.eval(x))
}

#[test]
fn tables_match_onnx_runtime_qdq_within_one_step() {
    let text = std::fs::read_to_string(dir().join("qdq.json")).unwrap();
    let file: QdqFile = serde_json::from_str(&text).unwrap();
    assert!(file.cases.len() >= 30);
    let (mut total, mut exact) = (0, [0, 0]);
    for c in &file.cases {
        let t = table_s8(
            PerTensorQuant::new(c.input_scale, c.input_zero_point),
            PerTensorQuant::new(c.output_scale, c.output_zero_point),
            function(c),
        )
        .unwrap();
        for (k, ort) in [&c.ort, &c.ort_optimized].into_iter().enumerate() {
            let want = ort.i8();
            assert_eq!(want.len(), 256, "{}", c.name);
            for (i, &w) in want.iter().enumerate() {
                let q = i as i32 - 128;
                let ours = t[q as i8 as u8 as usize];
                let d = (i32::from(ours) - i32::from(w)).abs();
                assert!(d <= 1, "{} ({}): input {q}: ORT {w}, ours {ours}", c.name, ["spec", "optimized"][k]);
                exact[k] += usize::from(d == 0);
            }
        }
        total += 256;
    }
    println!(
        "{} tables, {total} entries: {} equal to ONNX Runtime (spec), {} to ONNX Runtime (optimized), the rest one step apart",
        file.cases.len(),
        exact[0],
        exact[1]
    );
    // Differences are rare: the function's last bits only.
    assert!(exact[0] * 1000 >= total * 995, "{} of {total}", exact[0]);
}

fn float_models() -> Vec<FloatCase> {
    let text = std::fs::read_to_string(dir().join("float.json")).unwrap();
    serde_json::from_str::<FloatFile>(&text).unwrap().models
}

fn import(m: &FloatCase) -> microquant::graph::Graph {
    let bytes = std::fs::read(dir().join(&m.file)).unwrap();
    microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", m.name)).graph
}

#[test]
fn float_execution_matches_onnx_runtime() {
    let models = float_models();
    assert!(models.len() >= 14);
    for m in &models {
        let mut g = import(m);
        microquant::passes::optimize(&mut g).unwrap();
        assert_eq!(g.nodes.len(), 1, "{}: one node after the passes (SiLU fused)", m.name);
        assert!(matches!(g.nodes[0].op, Op::Unary(_) | Op::HardSigmoid { .. }), "{}: {}", m.name, g.nodes[0].op);
        let x = m.input.f32();
        let y = FloatExecutor::new(&g).unwrap().run(&[&x]).unwrap();
        let ort = m.ort.f32();
        if m.name.starts_with("gelu") {
            // ONNX Runtime computes 1 + erf(x / √2) (1 + tanh(...)) in f32, which cancels for negative x: at
            // x = -2.8844 it gives -0.0056555304 where the exact value is -0.0056556039 (ours,
            // computed in f64, is -0.005655604). Held to 1e-5 of the tensor's largest magnitude.
            let top = ort.iter().fold(0f32, |a, v| a.max(v.abs()));
            let worst = ort.iter().zip(&y[0]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(worst <= 1e-5 * top, "{}: {worst} vs {top}", m.name);
            println!("{}: {} (worst error {:.1e} of the largest value)", m.name, g.nodes[0].op, worst / top);
            continue;
        }
        let e = assert_close(&m.name, &ort, &y[0]);
        println!("{}: {} (worst relative error {e:.1e})", m.name, g.nodes[0].op);
    }
}

#[test]
fn quantized_tables_run_end_to_end_close_to_onnx_runtime() {
    for m in float_models() {
        let mut g = import(&m);
        prepare(&mut g).unwrap();
        let x = m.input.f32();
        let mut cal = Calibrator::new(&g, &CalibrationOptions::default()).unwrap();
        cal.calibrate(&[vec![x.clone()]], &mut |_| {}).unwrap();
        let q = quantize(&cal, &QuantizeOptions::default()).unwrap();
        let compiled = compile(&q.graph, &CompileOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let bytes = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        let kinds: Vec<&str> =
            (0..it.model().num_ops() as u32).map(|i| it.model().op(i).unwrap().kind.name()).collect();
        // The quantizer's passes turn HardSigmoid into Mul, Add with ReLU6, Mul (ops the runtime has).
        let want: &[&str] = if m.name.starts_with("hardsigmoid") { &["MUL", "ADD", "MUL"] } else { &["LUT"] };
        assert_eq!(kinds, want, "{}", m.name);
        let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
        let (os, oz) = it.output_info(0).unwrap().per_tensor().unwrap();
        for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&x) {
            *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
        }
        it.invoke().unwrap();
        let ours: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| (q as i32 - oz) as f32 * os).collect();
        let ort = m.ort.f32();
        let (mut signal, mut noise, mut worst) = (0f64, 0f64, 0f32);
        for (&a, &b) in ort.iter().zip(&ours) {
            signal += f64::from(a) * f64::from(a);
            noise += f64::from(a - b) * f64::from(a - b);
            worst = worst.max((a - b).abs());
        }
        let sqnr = 10.0 * (signal / noise.max(1e-30)).log10();
        println!("{}: int8 vs ONNX Runtime float: SQNR {sqnr:.1} dB, worst {:.2} output steps", m.name, worst / os);
        // Input rounding (half an input step times the slope) plus output rounding.
        assert!(sqnr >= 30.0, "{}: SQNR {sqnr:.1} dB", m.name);
    }
}
