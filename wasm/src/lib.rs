//! JavaScript bindings of `microquant` (the npm package `microquant`).
//!
//! A thin facade: every function forwards to the `microquant` crate and turns its typed errors
//! into JS `Error`s whose message is the error's `Display` text.
#![deny(missing_docs)]

use microquant::quant::{AffineQuant, QuantDType};
use wasm_bindgen::prelude::*;

fn int8_params(scale: f32, zero_point: i32) -> Result<AffineQuant, JsError> {
    AffineQuant::new(scale, zero_point, QuantDType::Int8).map_err(|e| JsError::new(&e.to_string()))
}

/// Quantizes float values to int8 as ONNX `QuantizeLinear` does:
/// `saturate(round_half_even(x / scale) + zeroPoint)`.
///
/// Throws if `scale` is not finite and positive, `zeroPoint` is outside [-128, 127], or `x`
/// holds NaN or ±Infinity.
#[wasm_bindgen(js_name = quantizeLinear)]
pub fn quantize_linear(x: &[f32], scale: f32, zero_point: i32) -> Result<Vec<i8>, JsError> {
    let p = int8_params(scale, zero_point)?;
    let mut q = vec![0i8; x.len()];
    p.quantize_i8(x, &mut q).map_err(|e| JsError::new(&e.to_string()))?;
    Ok(q)
}

/// Dequantizes int8 values: `(q - zeroPoint) * scale`.
#[wasm_bindgen(js_name = dequantizeLinear)]
pub fn dequantize_linear(q: &[i8], scale: f32, zero_point: i32) -> Result<Vec<f32>, JsError> {
    let p = int8_params(scale, zero_point)?;
    let mut out = vec![0f32; q.len()];
    p.dequantize_i8(q, &mut out).map_err(|e| JsError::new(&e.to_string()))?;
    Ok(out)
}
