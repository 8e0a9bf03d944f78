//! Loaders for the golden data in `tests/golden/`, written by the generator scripts in
//! `tests/gen/` from real tools (ONNX's reference evaluator, ONNX Runtime, TFLite, TFLite Micro).
//!
//! The JSON text is embedded with `include_str!`, so the same loaders work on the host, in wasm
//! tests and in the firmware's build script (which turns the data into Rust constants).
#![deny(missing_docs)]

use serde::Deserialize;

pub mod golden;
pub mod kernels;
pub mod models;
pub mod quant;
pub mod rng;

/// One QuantizeLinear -> DequantizeLinear case (int8, per-tensor).
#[derive(Debug, Clone, Deserialize)]
pub struct QdqCase {
    /// Case name, used in failure messages.
    pub name: String,
    /// Quantization scale.
    pub scale: f32,
    /// Zero point.
    pub zero_point: i32,
    /// Float input.
    pub x: Vec<f32>,
    /// Expected QuantizeLinear output.
    pub q: Vec<i8>,
    /// Expected DequantizeLinear(QuantizeLinear(x)) output.
    pub dq: Vec<f32>,
}

#[derive(Deserialize)]
struct QdqFile {
    cases: Vec<QdqCase>,
}

/// The raw text of `golden/smoke/quantize_linear.json`.
pub const SMOKE_JSON: &str = include_str!("../golden/smoke/quantize_linear.json");

/// The foundation smoke cases: ONNX QuantizeLinear/DequantizeLinear from `onnx`'s reference
/// evaluator (cross-checked with ONNX Runtime by the generator).
pub fn smoke_cases() -> Vec<QdqCase> {
    let f: QdqFile = serde_json::from_str(SMOKE_JSON).expect("committed golden file parses");
    f.cases
}
