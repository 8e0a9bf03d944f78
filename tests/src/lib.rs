//! Loaders for the golden data in `tests/golden/`, written by the generator scripts in
//! `tests/gen/` from real tools (ONNX's reference evaluator, ONNX Runtime, TFLite, TFLite Micro).
//!
//! The JSON text is embedded with `include_str!`, so the same loaders work on the host, in wasm
//! tests and in the firmware's build script (which turns the data into Rust constants).
//!
//! [`oracle`] holds the kernel golden tests themselves, written once and `no_std`: the host, wasm
//! and firmware tests instantiate its macros. Without the default `std` feature only [`oracle`]
//! (without its JSON loader) and [`rng`] are built: the firmware's tests use it so.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

#[cfg(feature = "std")]
use serde::Deserialize;

#[cfg(feature = "std")]
pub mod golden;
#[cfg(feature = "std")]
pub mod kernels;
#[cfg(feature = "std")]
pub mod models;
pub mod oracle;
#[cfg(feature = "std")]
pub mod quant;
pub mod rng;

/// One QuantizeLinear -> DequantizeLinear case (int8, per-tensor).
#[cfg(feature = "std")]
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

#[cfg(feature = "std")]
#[derive(Deserialize)]
struct QdqFile {
    cases: Vec<QdqCase>,
}

/// The raw text of `golden/smoke/quantize_linear.json`.
#[cfg(feature = "std")]
pub const SMOKE_JSON: &str = include_str!("../golden/smoke/quantize_linear.json");

/// The foundation smoke cases: ONNX QuantizeLinear/DequantizeLinear from `onnx`'s reference
/// evaluator (cross-checked with ONNX Runtime by the generator).
#[cfg(feature = "std")]
pub fn smoke_cases() -> Vec<QdqCase> {
    let f: QdqFile = serde_json::from_str(SMOKE_JSON).expect("committed golden file parses");
    f.cases
}
