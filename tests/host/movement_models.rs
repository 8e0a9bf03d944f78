//! Data-movement ops end to end (`tests/golden/movement/`, written by
//! `tests/gen/gen_movement_models.py`):
//!
//! - float ONNX models (Slice with negative steps and clamped ends, Split by sizes, by attribute
//!   and by `num_outputs`, DepthToSpace in DCR and CRD modes, SpaceToDepth, Pad in reflect and
//!   edge modes (opset 18 with axes), Gather by constant indices (scalar, 1-D with negative
//!   entries, 2-D), Tile, Expand (same rank and one more axis), Concat on every axis, Unsqueeze,
//!   Squeeze and Flatten, on NCHW inputs the importer keeps NHWC): the float executor against
//!   ONNX Runtime, then the whole PTQ path (calibrate on the samples, quantize, compile) and the
//!   int8 interpreter against ONNX Runtime's float outputs: pure data movement keeps the input's
//!   scale, so every output value is within half a step of ONNX Runtime's (the input's rounding);
//! - int8 TFLite models (STRIDED_SLICE with an ellipsis, a new axis and a shrunk axis; SLICE;
//!   SPLIT; SPLIT_V with an inferred size; DEPTH_TO_SPACE and SPACE_TO_DEPTH; MIRROR_PAD in
//!   REFLECT and SYMMETRIC modes; GATHER by 1-D and 2-D positions; TILE, which TFLite Micro does
//!   not have; BROADCAST_TO): imported, compiled and run, bit-exact with the TFLite
//!   interpreter.

use microquant::compile::{CompileOptions, compile};
use microquant::float::FloatExecutor;
use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::ptq::{CalibrationOptions, ObserverKind, PtqOptions, convert};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Sample {
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    file: String,
    format: String,
    samples: Vec<Sample>,
}

#[derive(Deserialize)]
struct Doc {
    models: Vec<Entry>,
}

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/movement")
}

fn entries(format: &str) -> Vec<Entry> {
    let doc: Doc = serde_json::from_str(&std::fs::read_to_string(dir().join("models.json")).unwrap()).unwrap();
    let v: Vec<Entry> = doc.models.into_iter().filter(|m| m.format == format).collect();
    assert!(!v.is_empty());
    v
}

#[test]
fn onnx_slice_and_split_run_as_onnx_runtime_in_float_and_int8() {
    for e in entries("onnx") {
        let bytes = std::fs::read(dir().join(&e.file)).unwrap();
        let imported = microquant::onnx::import(&bytes).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(imported.outputs.len(), e.samples[0].outputs.len(), "{}", e.name);
        // Float: the executor moves exactly ONNX Runtime's elements.
        let ex = FloatExecutor::new(&imported.graph).unwrap();
        let samples: Vec<Vec<Vec<f32>>> =
            e.samples.iter().map(|s| vec![imported.inputs[0].to_graph_layout(&s.inputs[0].f32()).unwrap()]).collect();
        for (s, x) in e.samples.iter().zip(&samples) {
            let ys = ex.run(&[&x[0]]).unwrap();
            for (k, (y, want)) in ys.iter().zip(&s.outputs).enumerate() {
                let y = imported.outputs[k].to_model_layout(y).unwrap();
                assert_eq!(y, want.f32(), "{}: float output {k}", e.name);
            }
        }
        // int8: calibrate on the samples (min/max: every sample within the input's range, so
        // each output is the input's rounding), quantize, compile, run.
        let options = PtqOptions {
            calibration: CalibrationOptions { observer: ObserverKind::MinMax, ..Default::default() },
            ..Default::default()
        };
        let out = convert(&imported.graph, &samples, None, &options, &mut |_| {})
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let model = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u8; out.compiled.arena_len + 16];
        let mut it = Interpreter::new(&model, &mut arena).unwrap();
        let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
        for (s, x) in e.samples.iter().zip(&samples) {
            for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&x[0]) {
                *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
            }
            it.invoke().unwrap();
            for (k, want) in s.outputs.iter().enumerate() {
                let (os, oz) = it.output_info(k).unwrap().per_tensor().unwrap();
                let y: Vec<f32> = it.output_i8(k).unwrap().iter().map(|&q| (q as i32 - oz) as f32 * os).collect();
                let y = imported.outputs[k].to_model_layout(&y).unwrap();
                let want = want.f32();
                assert_eq!(y.len(), want.len(), "{}: output {k} size", e.name);
                for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                    // The input's rounding: half a step (every output has the input's scale).
                    assert_eq!((os, is), (is, os), "{}: output {k} is not quantized as the input", e.name);
                    assert!((a - b).abs() <= 0.5 * os + 1e-6, "{}: output {k}[{i}]: {a} vs {b} (step {os})", e.name);
                }
            }
        }
    }
}

#[test]
fn tflite_slices_and_splits_are_bit_exact_with_tflite() {
    for e in entries("tflite") {
        let bytes = std::fs::read(dir().join(&e.file)).unwrap();
        let graph = microquant::tflite::import(&bytes).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let compiled = compile(&graph, &CompileOptions::default()).unwrap();
        let model = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + 16];
        let mut it = Interpreter::new(&model, &mut arena).unwrap();
        for s in &e.samples {
            it.input_i8(0).unwrap().copy_from_slice(&s.inputs[0].i8());
            it.invoke().unwrap();
            for (k, want) in s.outputs.iter().enumerate() {
                assert_eq!(it.output_info(k).unwrap().dims().len(), want.shape.len(), "{}: output {k} rank", e.name);
                assert_eq!(it.output_i8(k).unwrap(), want.i8().as_slice(), "{}: output {k}", e.name);
            }
        }
    }
}
