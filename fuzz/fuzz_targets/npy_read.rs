#![no_main]
//! `npy_read`: both `.npy` readers on the same bytes, compiled from their own source files:
//! core's (`microquant::npy`, which the CLI reads its files with) and the npm package's
//! (`wasm/src/npy.rs`).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    microquant_fuzz::npy_read(data);
});
