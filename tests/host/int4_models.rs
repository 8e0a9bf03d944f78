//! A W4A8 TFLite model (INT4 weights packed two per byte, int8 activations) imported, compiled
//! to `.mq` (weights kept packed: dtype int4) and run by the interpreter on the host, bit-exact
//! with TFLite Micro (`Rounding::Double`) and with the TFLite interpreter's reference kernels
//! (`Rounding::Single`) on 8 inputs: `tests/golden/int4_models/` (written by
//! `tests/gen/gen_int4_models.py`; tflite-micro 0.dev20261023182759, ai-edge-litert 2.3.0).

use microquant::compile::{CompileOptions, compile};
use microquant::graph::DType;
use microquant::interp::{Interpreter, OpKinds, OpSet};
use microquant::kernels::{Rounding, int4};
use microquant::model::{AlignedBytes, ElementType, Model, OpKind};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use serde::Deserialize;

#[derive(Deserialize)]
struct Sample {
    seed: u64,
    input: Tensor,
    expected_tflm: Tensor,
    expected_tflite_ref: Tensor,
}

#[derive(Deserialize)]
struct ModelCase {
    file: String,
    samples: Vec<Sample>,
}

#[derive(Deserialize)]
struct Golden {
    models: Vec<ModelCase>,
}

fn golden() -> Golden {
    serde_json::from_str(include_str!("../golden/int4_models/w4a8_models.json")).expect("w4a8_models.json parses")
}

fn tflite(file: &str) -> Vec<u8> {
    std::fs::read(format!("{}/golden/int4_models/{file}", env!("CARGO_MANIFEST_DIR"))).expect("model file")
}

fn run(model: &ModelCase, rounding: Rounding) -> (usize, Vec<u8>) {
    let graph = microquant::tflite::import(&tflite(&model.file)).expect("import");
    let compiled = compile(&graph, &CompileOptions { rounding, ..Default::default() }).expect("compile");
    let bytes = AlignedBytes::new(&compiled.bytes);
    let mut arena = vec![0u8; compiled.arena_len + 16];
    let mut interp = Interpreter::new(&bytes, &mut arena).expect("interpreter");
    let plan: Vec<_> = (0..interp.model().num_ops()).map(|i| interp.prepare_op(i).expect("prepare")).collect();
    let mut checked = 0;
    for s in &model.samples {
        let want = match rounding {
            Rounding::Double => s.expected_tflm.i8(),
            Rounding::Single => s.expected_tflite_ref.i8(),
        };
        for prepared in [false, true] {
            interp.input_i8(0).unwrap().copy_from_slice(&s.input.i8());
            if prepared {
                interp.invoke_prepared(&plan).expect("invoke_prepared");
            } else {
                interp.invoke().expect("invoke");
            }
            let what = format!("{} seed {} {rounding:?} prepared={prepared}", model.file, s.seed);
            checked += assert_bit_exact(&what, &want, interp.output_i8(0).unwrap());
        }
    }
    (checked, compiled.bytes)
}

#[test]
fn w4a8_cnn_runs_bit_exact_with_tflite_micro_and_the_interpreter() {
    let g = golden();
    let m = &g.models[0];
    let tflm = g.models[0].samples.iter().map(|s| s.expected_tflm.b64.clone());
    let differ = tflm.zip(&m.samples).filter(|(a, s)| *a != s.expected_tflite_ref.b64).count();
    assert!(differ > 0, "the oracles agree on every sample: the rounding modes are not told apart");
    let (double, _) = run(m, Rounding::Double);
    let (single, _) = run(m, Rounding::Single);
    assert_eq!(double, m.samples.len() * 2 * 10);
    assert_eq!(single, double);
    println!(
        "{}: {} samples bit-exact in both roundings ({differ} differ between the oracles)",
        m.file,
        m.samples.len()
    );
}

#[test]
fn int4_weights_are_imported_as_int4_and_stored_packed() {
    let g = golden();
    let m = &g.models[0];
    let graph = microquant::tflite::import(&tflite(&m.file)).expect("import");
    let weights: Vec<_> = graph.tensors.iter().filter(|t| t.dtype == DType::I4).collect();
    assert_eq!(weights.len(), 3, "conv, depthwise and fully connected weights");
    for w in &weights {
        let data = w.data.as_ref().expect("constant");
        let values = data.to_i64_vec().unwrap();
        assert!(values.iter().all(|v| (-8..=7).contains(v)), "{}: values outside int4", w.name);
    }
    let (_, bytes) = run(m, Rounding::Double);
    let bytes = AlignedBytes::new(&bytes);
    let model = Model::parse(&bytes).expect("parse");
    let mut packed = 0;
    for i in 0..model.num_tensors() as u32 {
        let t = model.tensor(i).unwrap();
        if t.dtype == ElementType::I4 {
            let raw = t.const_bytes().expect("constant");
            assert_eq!(raw.len(), int4::packed_len(t.len()), "{}: packed length", t.name());
            // The same bytes as the .tflite buffer holds: the graph's values packed back.
            let w = weights.iter().find(|w| w.name == t.name()).expect("graph tensor of the same name");
            assert_eq!(Some(raw.to_vec()), w.data.as_ref().unwrap().to_packed_i4(), "{}", t.name());
            assert!(t.const_data::<i8>().is_err(), "packed int4 must not be read as int8 values");
            packed += raw.len();
        }
    }
    // 216 + 72 + 2000 weights.
    assert_eq!(packed, 108 + 36 + 1000);
    // Stripping keeps the packed weights and the outputs.
    let stripped = AlignedBytes::new(&microquant::model::strip(&bytes).expect("strip"));
    let s = &m.samples[0];
    let mut arena = vec![0u8; 1 << 16];
    let mut it = Interpreter::new(&stripped, &mut arena).expect("stripped interpreter");
    it.input_i8(0).unwrap().copy_from_slice(&s.input.i8());
    it.invoke().unwrap();
    assert_bit_exact("stripped", &s.expected_tflm.i8(), it.output_i8(0).unwrap());
}

struct Int8Only;
impl OpSet for Int8Only {
    const KINDS: OpKinds = OpKinds::of(&[OpKind::Conv2d, OpKind::DepthwiseConv2d, OpKind::FullyConnected]);
}

struct WithInt4;
impl OpSet for WithInt4 {
    const KINDS: OpKinds = Int8Only::KINDS.with_int4();
}

#[test]
fn an_op_set_without_int4_refuses_int4_weights_at_load() {
    let g = golden();
    let m = &g.models[0];
    let graph = microquant::tflite::import(&tflite(&m.file)).expect("import");
    let compiled = compile(&graph, &CompileOptions::default()).expect("compile");
    let bytes = AlignedBytes::new(&compiled.bytes);
    let mut arena = vec![0u8; compiled.arena_len + 16];
    let e = Interpreter::<Int8Only>::with_op_set(&bytes, &mut arena).err();
    assert!(matches!(e, Some(microquant::Error::Int4NotInSet { index: 0 })), "{e:?}");
    let mut it = Interpreter::<WithInt4>::with_op_set(&bytes, &mut arena).expect("with int4");
    it.input_i8(0).unwrap().copy_from_slice(&m.samples[1].input.i8());
    it.invoke().unwrap();
    assert_bit_exact("op set with int4", &m.samples[1].expected_tflm.i8(), it.output_i8(0).unwrap());
}
