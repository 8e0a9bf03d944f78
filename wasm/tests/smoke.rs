//! Foundation smoke test in wasm: the same ONNX QuantizeLinear golden cases as the host test.
//! Runs under `wasm-pack test --node`, and in headless Chromium with `WASM_BINDGEN_USE_BROWSER=1`.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn quantize_linear_matches_onnx_reference() {
    let mut checked = 0usize;
    for c in microquant_tests::smoke_cases() {
        let q = microquant_wasm::quantize_linear(&c.x, c.scale, c.zero_point).unwrap();
        let dq = microquant_wasm::dequantize_linear(&q, c.scale, c.zero_point).unwrap();
        for i in 0..c.x.len() {
            assert_eq!(q[i], c.q[i], "{}: q[{i}]", c.name);
            assert_eq!(dq[i].to_bits(), c.dq[i].to_bits(), "{}: dq[{i}]", c.name);
            checked += 1;
        }
    }
    assert!(checked > 100);
}

#[wasm_bindgen_test]
fn bad_scale_is_an_error() {
    assert!(microquant_wasm::quantize_linear(&[1.0], 0.0, 0).is_err());
    assert!(microquant_wasm::quantize_linear(&[f32::NAN], 1.0, 0).is_err());
}
