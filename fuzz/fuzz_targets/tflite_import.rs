#![no_main]
//! `tflite_import`: see `microquant_fuzz::tflite_import`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| microquant_fuzz::tflite_import(data));
