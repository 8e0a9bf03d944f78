//! TFLite UNIDIRECTIONAL_SEQUENCE_LSTM models (int8 8x8→16 and 16x8), imported, compiled to
//! `.mq` and run: bit-exact with TFLite Micro on the same `.tflite` file, invoke by invoke with the
//! state carried between invokes (`tests/golden/lstm_models/*.tflite`, written with the goldens
//! of `tests/golden/kernels/lstm*.json` by `tests/gen/kernels/gen_lstm.py`).

use microquant::compile::{CompileOptions, compile};
use microquant::graph::Op;
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, OpKind};
use microquant_tests::kernels::{LstmCase, lstm_16x8_cases, lstm_cases};

fn raw(t: &microquant_tests::golden::Tensor) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(&t.b64).unwrap()
}

fn tflite(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/lstm_models").join(format!("{name}.tflite"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn check(c: &LstmCase) {
    let imported = microquant::tflite::import(&tflite(&c.name)).unwrap();
    assert!(imported.nodes.iter().any(|n| matches!(n.op, Op::Lstm(_))), "{}", c.name);
    let compiled = compile(&imported, &CompileOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let bytes = AlignedBytes::new(&compiled.bytes);
    let m = microquant::model::Model::parse(&bytes).unwrap();
    assert_eq!(m.op(0).unwrap().kind, OpKind::Lstm);
    let mut arena = vec![0u128; compiled.arena_len / 16 + 1];
    let mut it = Interpreter::new(&bytes, bytemuck::cast_slice_mut(&mut arena)).unwrap();
    let input = raw(&c.input);
    let n = input.len() / c.chunks;
    let mut out = Vec::new();
    for k in 0..c.chunks {
        it.input_bytes(0).unwrap().copy_from_slice(&input[k * n..(k + 1) * n]);
        it.invoke().unwrap();
        out.extend_from_slice(it.output_bytes(0).unwrap());
    }
    assert_eq!(out, raw(&c.expected_tflm), "{}: .mq from the .tflite vs TFLite Micro", c.name);
}

#[test]
fn int8_lstm_tflite_models_run_bit_exact_with_tflite_micro() {
    let cases = lstm_cases();
    assert_eq!(cases.len(), 20);
    cases.iter().for_each(check);
}

#[test]
fn lstm_16x8_tflite_models_run_bit_exact_with_tflite_micro() {
    let cases = lstm_16x8_cases();
    assert_eq!(cases.len(), 15);
    cases.iter().for_each(check);
}
