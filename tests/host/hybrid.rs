//! Weight-only and dynamic quantization (int8 weights, float activations) against ONNX Runtime
//! (`tests/golden/hybrid/`, written by `tests/gen/gen_hybrid.py`).
//!
//! `<name>.onnx` were written by `microquant quantize --mode weight-only|dynamic` (this code,
//! when the generator ran) and checked by `onnx.checker`; the weight-only ones' int8 weights and
//! scales were checked equal, bit for bit, to ONNX Runtime's own weight quantizer
//! (`quantize_data`, symmetric int8), and the dynamic per-tensor ones to run as ONNX Runtime's
//! own `quantize_dynamic` models, bit for bit. Here the same quantization is redone with the
//! current code: the bytes must be identical, and our float executor running the hybrid graph
//! must give ONNX Runtime's outputs on the export: weight-only within 1e-4 of the output's
//! largest magnitude (float sums in another order), much closer than the float model is;
//! dynamic bit for bit (integer sums, then the same float operations in the same order), and so
//! equal to ONNX Runtime's own `quantize_dynamic` model where it is stored, when the other float
//! ops round as ONNX Runtime's do (without a mean, average pooling, softmax or sigmoid; with
//! them, within 1e-6 of the output's largest magnitude). The `ic` models start from the float
//! TFLite model (inputs and outputs NHWC); their float outputs are the TFLite interpreter's.

use crate::peers_common::*;

use microquant::onnx::{Imported, IoInfo, QdqExportOptions, export_hybrid};
use microquant::ptq::{HybridOptions, evaluate_hybrid, prepare, quantize_dynamic, quantize_weight_only};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Entry {
    name: String,
    mode: String,
    float_model: String,
    samples: String,
    per_channel: bool,
    ort_float: Tensor,
    ort_export: Tensor,
    ort_reference: Option<Tensor>,
}

#[derive(Deserialize)]
struct File {
    samples: usize,
    models: Vec<Entry>,
}

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// The float model, ONNX or TFLite (whose inputs and outputs keep the graph's layout), as the
/// CLI reads it.
fn import_source(path: &std::path::Path) -> Imported {
    if path.extension().is_some_and(|e| e == "tflite") {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let graph = microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("{}: import: {e}", path.display()));
        let (inputs, outputs) = (IoInfo::of_graph(&graph, &graph.inputs), IoInfo::of_graph(&graph, &graph.outputs));
        return Imported { graph, inputs, outputs, opset: 0 };
    }
    import(path)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn hybrid_exports_are_reproduced_and_run_as_onnx_runtime_runs_them() {
    let dir = repo("tests/golden/hybrid");
    let file: File = serde_json::from_str(&std::fs::read_to_string(dir.join("hybrid.json")).unwrap()).unwrap();
    assert_eq!(file.models.len(), 12);
    assert_eq!(file.models.iter().filter(|e| e.ort_reference.is_some()).count(), 3);
    for e in &file.models {
        let imported = import_source(&repo(&e.float_model));
        let mut float = imported.graph.clone();
        prepare(&mut float).unwrap();
        let options = HybridOptions { per_channel: e.per_channel };
        let dynamic = e.mode == "dynamic";
        let wo = if dynamic { quantize_dynamic(&float, &options) } else { quantize_weight_only(&float, &options) }
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        // What the CLI writes: the model's own layout, opset 17, the file stem as graph name.
        let stem = std::path::Path::new(&e.float_model).file_stem().unwrap().to_string_lossy().into_owned();
        let options = QdqExportOptions {
            opset: 17,
            inputs: imported.inputs.clone(),
            outputs: imported.outputs.clone(),
            graph_name: stem,
        };
        let onnx = export_hybrid(&wo, &options).unwrap();
        let committed = std::fs::read(dir.join(format!("{}.onnx", e.name))).unwrap();
        assert!(onnx == committed, "{}: the export differs from the committed one", e.name);

        // Our float executor on the weight-only graph against ONNX Runtime on the export.
        let x = read_npy(&repo(&e.samples));
        let all = samples(&imported, &x);
        let all = &all[..file.samples.min(all.len())];
        let ex = wo.executor().unwrap();
        let mut ours = Vec::new();
        for s in all {
            let y = ex.run(&[&s[0]]).unwrap();
            ours.extend(imported.outputs[0].to_model_layout(&y[0]).unwrap());
        }
        let (theirs, float_out) = (e.ort_export.f32(), e.ort_float.f32());
        let peak = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
        let (d, quantization) = (max_abs_diff(&ours, &theirs), max_abs_diff(&theirs, &float_out));
        println!("{}: max |ours - ORT| {d:.3e}, max |quantized - float| {quantization:.3e}, peak {peak:.3}", e.name);
        // The float ops whose f32 result ONNX Runtime rounds differently (f64 sums or libm here).
        let rounds_apart = float.nodes.iter().any(|n| {
            use microquant::graph::Op;
            matches!(
                n.op,
                Op::Mean { .. } | Op::AvgPool2d(_) | Op::Softmax { .. } | Op::Logistic | Op::Tanh | Op::HardSwish
            )
        });
        if dynamic && !rounds_apart {
            let differ = ours.iter().zip(&theirs).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            assert_eq!(differ, 0, "{}: {differ} outputs differ from ONNX Runtime's (max {d})", e.name);
            if let Some(r) = &e.ort_reference {
                assert!(
                    r.f32().iter().zip(&ours).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{}: vs ORT's own model",
                    e.name
                );
            }
        } else if dynamic {
            // An ulp of a mean moves the next layer's input quantization by as little.
            assert!(d <= 1e-6 * peak, "{}: {d} from ONNX Runtime (peak {peak})", e.name);
        } else {
            assert!(d <= 1e-4 * peak, "{}: {d} from ONNX Runtime (peak {peak})", e.name);
        }
        assert!(d * 50.0 < quantization, "{}: the weights were not quantized ({d} vs {quantization})", e.name);

        // The report measures the same thing.
        let report = evaluate_hybrid(&float, &wo, all, None, &mut |_| {}).unwrap();
        assert_eq!(report.model.mode, if dynamic { "dynamic int8" } else { "weight-only int8" });
        assert_eq!(report.layers.len(), float.nodes.len());
        assert!(report.model.int8_weight_bytes * 3 < report.model.float_weight_bytes, "{}", e.name);
        let quantized = report.layers.iter().filter(|l| l.weight_scales.is_some()).count();
        assert_eq!(quantized, wo.quantized_nodes.len(), "{}", e.name);
        // A sanity bound (the outputs themselves are compared with ONNX Runtime's above): at
        // least 25 dB on the small models' real data, 20 dB on ic's 8 synthetic inputs.
        let floor = if e.name.ends_with("ic") { 18.0 } else { 25.0 };
        assert!(
            report.model.output_sqnr_db.is_some_and(|s| s > floor),
            "{}: {:?}",
            e.name,
            report.model.output_sqnr_db
        );
    }
}

#[test]
fn weight_only_needs_a_layer_with_float_weights() {
    // An int8 TFLite model has no float weights left to quantize.
    let tfl = std::fs::read(microquant_tests::models::mlperf_tiny_dir().join("ad01_int8.tflite")).unwrap();
    let g = microquant::tflite::import(&tfl).unwrap();
    let err = quantize_weight_only(&g, &HybridOptions::default()).unwrap_err();
    assert!(err.to_string().contains("no conv, depthwise conv or fully connected layer with float weights"), "{err}");
}
