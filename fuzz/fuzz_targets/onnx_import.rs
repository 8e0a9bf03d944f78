#![no_main]
//! `onnx_import`: see `microquant_fuzz::onnx_import`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| microquant_fuzz::onnx_import(data));
