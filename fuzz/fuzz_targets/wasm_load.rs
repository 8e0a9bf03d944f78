#![no_main]
//! `wasm_load`: the wasm package's `loadModel` path on the host; see `microquant_fuzz::wasm_load`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| microquant_fuzz::wasm_load(data));
