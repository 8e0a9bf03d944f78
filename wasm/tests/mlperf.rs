//! The four MLPerf Tiny int8 models in wasm (Node and headless Chromium): TFLite import,
//! compilation and the interpreter give outputs bit-identical to TFLite Micro (double rounding)
//! and to the TFLite interpreter's reference kernels (single rounding), as on the host.
#![cfg(target_arch = "wasm32")]

use microquant::compile::{CompileOptions, compile};
use microquant::interp::Interpreter;
use microquant::kernels::Rounding;
use microquant::model::AlignedBytes;
use microquant_tests::golden::assert_bit_exact;
use microquant_tests::kernels::Oracle;
use microquant_tests::models::mlperf_tiny;
use wasm_bindgen_test::wasm_bindgen_test;

const KWS: &[u8] = include_bytes!("../../models/mlperf-tiny/kws_ref_model_int8.tflite");
const IC: &[u8] = include_bytes!("../../models/mlperf-tiny/ic_resnet8_int8.tflite");
const VWW: &[u8] = include_bytes!("../../models/mlperf-tiny/vww_96_int8.tflite");
const AD: &[u8] = include_bytes!("../../models/mlperf-tiny/ad01_int8.tflite");

fn run(name: &str, tflite: &[u8], samples: usize) {
    let golden = mlperf_tiny();
    let m = golden.models.iter().find(|m| m.name == name).unwrap();
    let graph = microquant::tflite::import(tflite).unwrap();
    for (rounding, oracle) in [(Rounding::Double, Oracle::Tflm), (Rounding::Single, Oracle::TfliteRef)] {
        let compiled = compile(&graph, &CompileOptions { rounding, ..Default::default() }).unwrap();
        let bytes = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        for s in m.samples.iter().take(samples) {
            it.input_i8(0).unwrap().copy_from_slice(&m.input(s.sample));
            it.invoke().unwrap();
            let y = it.output_i8(0).unwrap().to_vec();
            assert_bit_exact(&format!("{name} sample {} {oracle:?}", s.sample), &s.expected(oracle).i8(), &y);
        }
    }
}

#[wasm_bindgen_test]
fn kws_bit_exact() {
    run("kws", KWS, 20);
}

#[wasm_bindgen_test]
fn ic_bit_exact() {
    run("ic", IC, 20);
}

#[wasm_bindgen_test]
fn vww_bit_exact() {
    run("vww", VWW, 20);
}

#[wasm_bindgen_test]
fn ad_bit_exact() {
    run("ad", AD, 20);
}
