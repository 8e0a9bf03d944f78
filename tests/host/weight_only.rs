//! Weight-only quantization (int8 weights, float compute) against ONNX Runtime
//! (`tests/golden/weight_only/`, written by `tests/gen/gen_weight_only.py`).
//!
//! `<name>.onnx` were written by `microquant quantize --mode weight-only` (this code, when the
//! generator ran), checked by `onnx.checker`, and their int8 weights and scales checked equal,
//! bit for bit, to ONNX Runtime's own weight quantizer (`quantize_data`, symmetric int8) on the
//! float model's weights (after ONNX Runtime's own folding of batch norms and constant scales).
//! Here the same quantization is redone with the current code: the bytes must be identical, and
//! our float executor running the weight-only graph must give ONNX Runtime's outputs on the
//! export (float arithmetic in another order: within 1e-4 of the output's largest magnitude),
//! much closer to them than the float model's outputs are.

use crate::peers_common::*;

use microquant::float::FloatExecutor;
use microquant::onnx::{QdqExportOptions, export_qdq};
use microquant::ptq::{WeightOnlyOptions, evaluate_weight_only, prepare, quantize_weight_only};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Entry {
    name: String,
    float_model: String,
    samples: String,
    per_channel: bool,
    ort_float: Tensor,
    ort_weight_only: Tensor,
}

#[derive(Deserialize)]
struct File {
    samples: usize,
    models: Vec<Entry>,
}

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn weight_only_export_is_reproduced_and_runs_as_onnx_runtime_runs_it() {
    let dir = repo("tests/golden/weight_only");
    let file: File = serde_json::from_str(&std::fs::read_to_string(dir.join("weight_only.json")).unwrap()).unwrap();
    assert_eq!(file.models.len(), 5);
    for e in &file.models {
        let imported = import(&repo(&e.float_model));
        let mut float = imported.graph.clone();
        prepare(&mut float).unwrap();
        let wo = quantize_weight_only(&float, &WeightOnlyOptions { per_channel: e.per_channel })
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        // What the CLI writes: the model's own layout, opset 17, the file stem as graph name.
        let stem = std::path::Path::new(&e.float_model).file_stem().unwrap().to_string_lossy().into_owned();
        let options = QdqExportOptions {
            opset: 17,
            inputs: imported.inputs.clone(),
            outputs: imported.outputs.clone(),
            graph_name: stem,
        };
        let onnx = export_qdq(&wo.graph, &options).unwrap();
        let committed = std::fs::read(dir.join(format!("{}.onnx", e.name))).unwrap();
        assert!(onnx == committed, "{}: the weight-only export differs from the committed one", e.name);

        // Our float executor on the weight-only graph against ONNX Runtime on the export.
        let x = read_npy(&repo(&e.samples));
        let all = samples(&imported, &x);
        let all = &all[..file.samples.min(all.len())];
        let ex = FloatExecutor::new(&wo.graph).unwrap();
        let mut ours = Vec::new();
        for s in all {
            let y = ex.run(&[&s[0]]).unwrap();
            ours.extend(imported.outputs[0].to_model_layout(&y[0]).unwrap());
        }
        let (theirs, float_out) = (e.ort_weight_only.f32(), e.ort_float.f32());
        let peak = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
        let (d, quantization) = (max_abs_diff(&ours, &theirs), max_abs_diff(&theirs, &float_out));
        println!("{}: max |ours - ORT| {d:.3e}, max |weight-only - float| {quantization:.3e}, peak {peak:.3}", e.name);
        assert!(d <= 1e-4 * peak, "{}: {d} from ONNX Runtime (peak {peak})", e.name);
        assert!(d * 50.0 < quantization, "{}: the weights were not quantized ({d} vs {quantization})", e.name);

        // The report measures the same thing.
        let report = evaluate_weight_only(&float, &wo, all, None, &mut |_| {}).unwrap();
        assert_eq!(report.model.mode, "weight-only int8");
        assert_eq!(report.layers.len(), float.nodes.len());
        assert!(report.model.int8_weight_bytes * 3 < report.model.float_weight_bytes, "{}", e.name);
        let quantized = report.layers.iter().filter(|l| l.weight_scales.is_some()).count();
        assert_eq!(quantized, wo.quantized_nodes.len(), "{}", e.name);
        assert!(report.model.output_sqnr_db.is_some_and(|s| s > 25.0), "{}: {:?}", e.name, report.model.output_sqnr_db);
    }
}

#[test]
fn weight_only_needs_a_layer_with_float_weights() {
    // An int8 TFLite model has no float weights left to quantize.
    let tfl = std::fs::read(microquant_tests::models::mlperf_tiny_dir().join("ad01_int8.tflite")).unwrap();
    let g = microquant::tflite::import(&tfl).unwrap();
    let err = quantize_weight_only(&g, &WeightOnlyOptions::default()).unwrap_err();
    assert!(err.to_string().contains("no conv, depthwise conv or fully connected layer with float weights"), "{err}");
}
