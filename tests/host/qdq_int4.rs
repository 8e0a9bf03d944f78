//! QDQ ONNX export of W4A8 models (`--weight-bits 4`): int4 weights as ONNX `INT4` initializers
//! (data type 22, packed two per byte, low nibble first) read by `DequantizeLinear` of opset 21,
//! against ONNX Runtime (`tests/golden/qdq/qdq_int4.json` and `export/*_w4_*.onnx`, written by
//! `tests/gen/gen_qdq.py --int4-only`: our CLI's `--weight-bits 4 --qdq`, checked by
//! `onnx.checker`, run by ONNX Runtime 1.32.0 with its default graph optimizations and with none;
//! CI needs no ONNX Runtime).
//!
//! As for the int8 exports (`qdq_exact.rs`): the same quantization is redone with the current
//! code, the exported bytes must equal the committed ones, and our int8 interpreter running the
//! `.mq` (packed int4 weights, the `_s4` kernels) must be within one quantization step of ONNX
//! Runtime on at least 99 % of the output elements and on none further (the export writes the
//! layers so that ONNX Runtime computes our integers: every element is expected equal).

use crate::peers_common::*;

use microquant::graph::DType;
use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::onnx::{QdqExportOptions, export_qdq, export_qdq_portable};
use microquant::ptq::{CalibrationOptions, ObserverKind, PtqOptions, QuantizeOptions, convert};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Entry {
    name: String,
    file: String,
    float_model: String,
    calib: String,
    observer: String,
    ort: Tensor,
    ort_noopt: Option<Tensor>,
}

#[derive(Deserialize)]
struct File {
    weight_bits: u8,
    models: Vec<Entry>,
}

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// The ONNX `TensorProto.data_type` of every initializer (ModelProto.graph = 7,
/// GraphProto.initializer = 5, TensorProto.data_type = 2, name = 8), by a minimal protobuf walk.
fn initializer_types(model: &[u8]) -> Vec<(String, u64)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0;
        for shift in (0..64).step_by(7) {
            let x = b[0];
            *b = &b[1..];
            v |= u64::from(x & 0x7F) << shift;
            if x & 0x80 == 0 {
                break;
            }
        }
        v
    }
    fn fields(mut b: &[u8]) -> Vec<(u64, u64, &[u8])> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let (field, wire) = (key >> 3, key & 7);
            match wire {
                0 => out.push((field, varint(&mut b), &[][..])),
                2 => {
                    let n = varint(&mut b) as usize;
                    out.push((field, 0, &b[..n]));
                    b = &b[n..];
                }
                5 => b = &b[4..],
                1 => b = &b[8..],
                _ => panic!("wire type {wire}"),
            }
        }
        out
    }
    let graph = fields(model).into_iter().find(|f| f.0 == 7).expect("graph").2;
    fields(graph)
        .into_iter()
        .filter(|f| f.0 == 5)
        .map(|(_, _, t)| {
            let tf = fields(t);
            let name =
                tf.iter().find(|f| f.0 == 8).map(|f| String::from_utf8_lossy(f.2).into_owned()).unwrap_or_default();
            (name, tf.iter().find(|f| f.0 == 2).map_or(0, |f| f.1))
        })
        .collect()
}

#[test]
fn onnx_runtime_runs_the_int4_qdq_export_as_the_mq_computes() {
    let text = std::fs::read_to_string(qdq_dir().join("qdq_int4.json")).unwrap();
    let file: File = serde_json::from_str(&text).unwrap();
    assert_eq!(file.weight_bits, 4);
    assert_eq!(file.models.len(), 2);
    let mut failures = Vec::new();
    for e in &file.models {
        let imported = import(&repo(&e.float_model));
        let all = samples(&imported, &read_npy(&repo(&e.calib)));
        let options = PtqOptions {
            calibration: CalibrationOptions {
                observer: ObserverKind::from_name(&e.observer).unwrap(),
                ..Default::default()
            },
            quantize: QuantizeOptions { weight_bits: 4, ..Default::default() },
            ..Default::default()
        };
        let out = convert(&imported.graph, &all, None, &options, &mut |_| {}).unwrap();
        let int4 = out.quantized.graph.tensors.iter().filter(|t| t.dtype == DType::I4).count();
        assert!(int4 >= 3, "{}: {int4} int4 weight tensors", e.name);
        // What the CLI writes: opset 21 (int4 DequantizeLinear), the model's own layout.
        let stem = std::path::Path::new(&e.float_model).file_stem().unwrap().to_string_lossy().into_owned();
        let opts = QdqExportOptions {
            opset: 21,
            inputs: imported.inputs.clone(),
            outputs: imported.outputs.clone(),
            graph_name: stem,
        };
        let qdq = export_qdq(&out.quantized.graph, &opts).unwrap();
        if qdq != std::fs::read(repo(&e.file)).unwrap() {
            failures.push(format!("{}: the exported QDQ model differs from the committed one", e.name));
        }
        // The weights are INT4 initializers (with INT4 zero points), one pair per int4 tensor.
        let types = initializer_types(&qdq);
        let int4_inits = types.iter().filter(|(_, t)| *t == 22).count();
        assert_eq!(int4_inits, 2 * int4, "{}: {types:?}", e.name);
        // Below opset 21 the export says why it cannot.
        let e17 = export_qdq(&out.quantized.graph, &QdqExportOptions { opset: 17, ..opts.clone() }).unwrap_err();
        assert!(e17.to_string().contains("opset 21"), "{e17}");
        // The plain QDQ form writes int4 too (per-axis DequantizeLinear of INT4 weights).
        let portable = export_qdq_portable(&out.quantized.graph, &opts).unwrap();
        assert!(initializer_types(&portable).iter().any(|(_, t)| *t == 22), "{}: portable without INT4", e.name);

        let bytes = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u8; out.compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
        let (os, oz) = it.output_info(0).unwrap().per_tensor().unwrap();
        let n = e.ort.f32().len() / it.output_info(0).unwrap().len();
        let mut ours = Vec::new();
        for s in &all[..n] {
            for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&s[0]) {
                *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
            }
            it.invoke().unwrap();
            let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| (q as i32 - oz) as f32 * os).collect();
            ours.extend(imported.outputs[0].to_model_layout(&y).unwrap());
        }
        for (what, t) in [("default", Some(&e.ort)), ("ORT_DISABLE_ALL", e.ort_noopt.as_ref())] {
            let Some(t) = t else { continue };
            let theirs = t.f32();
            assert_eq!(ours.len(), theirs.len());
            let steps: Vec<f32> = ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs() / os).collect();
            let within = steps.iter().filter(|&&d| d <= 1.0001).count() as f64 / steps.len() as f64;
            let (worst, differ) =
                (steps.iter().copied().fold(0f32, f32::max), steps.iter().filter(|&&d| d > 0.5).count());
            println!(
                "{} (int4 weights): ONNX Runtime ({what}) vs .mq: {:.2} % within one step, max {worst:.0} steps, \
                 {differ} of {} differ ({n} samples)",
                e.name,
                within * 100.0,
                steps.len()
            );
            if within < 0.99 || worst > 1.0001 {
                failures.push(format!(
                    "{} ({what}): {:.2} % within one step, max {worst} steps",
                    e.name,
                    within * 100.0
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
