//! QDQ export fidelity: ONNX Runtime running our `--qdq` export computes what our `.mq`
//! computes (`tests/golden/qdq/`, written by `tests/gen/gen_qdq.py`; CI needs no ONNX Runtime).
//!
//! For every exported model (among them `mobile_minmax`, a small mobile CNN: hard-swish,
//! depthwise conv, squeeze-and-excitation multiply, residual add, average pooling, concatenation
//! with requantization, global average pooling), the committed outputs of ONNX Runtime 1.32.0
//! on the first 100 calibration samples, with its default graph optimizations and with none,
//! are compared with our int8 interpreter on the same samples (inputs quantized as ONNX
//! `QuantizeLinear` does): at least 99 % of the output elements within one quantization step and
//! none further (the export writes the int8 layers so that ONNX Runtime computes our integers:
//! `core/src/onnx/export/exact.rs`; today every element is equal).

use crate::peers_common::*;

use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::ptq::{CalibrationOptions, ObserverKind, PtqOptions, convert};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Entry {
    name: String,
    kind: String,
    float_model: Option<String>,
    calib: String,
    observer: Option<String>,
    ort: Tensor,
    ort_noopt: Option<Tensor>,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Entry>,
}

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// (share of elements within one step, largest difference in steps, elements that differ).
fn agreement(ours: &[f32], theirs: &[f32], scale: f32) -> (f64, f32, usize) {
    assert_eq!(ours.len(), theirs.len());
    let (mut within, mut worst, mut differ) = (0usize, 0f32, 0usize);
    for (&a, &b) in ours.iter().zip(theirs) {
        let d = (a - b).abs() / scale;
        within += usize::from(d <= 1.0001);
        differ += usize::from(d > 0.5);
        worst = worst.max(d);
    }
    (within as f64 / ours.len().max(1) as f64, worst, differ)
}

#[test]
fn onnx_runtime_on_our_qdq_export_agrees_with_the_mq() {
    let text = std::fs::read_to_string(qdq_dir().join("qdq.json")).unwrap();
    let list: Vec<Entry> = serde_json::from_str::<File>(&text).unwrap().models;
    let list: Vec<Entry> = list.into_iter().filter(|e| e.kind == "export").collect();
    assert!(list.iter().any(|e| e.name == "mobile_minmax"), "the mobile CNN case is missing");
    let mut failures = Vec::new();
    for e in &list {
        let imported = import(&repo(e.float_model.as_deref().unwrap()));
        let x = read_npy(&repo(&e.calib));
        let all = samples(&imported, &x);
        let kind = e.observer.as_deref().map_or(ObserverKind::MinMax, |o| ObserverKind::from_name(o).unwrap());
        let options = PtqOptions {
            calibration: CalibrationOptions { observer: kind, ..Default::default() },
            ..Default::default()
        };
        let out = convert(&imported.graph, &all, None, &options, &mut |_| {}).unwrap();
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
        let runs = [("default", Some(&e.ort)), ("ORT_DISABLE_ALL", e.ort_noopt.as_ref())];
        for (what, t) in runs {
            let Some(t) = t else { continue };
            let (within, worst, differ) = agreement(&ours, &t.f32(), os);
            println!(
                "{}: ONNX Runtime ({what}) vs .mq: {:.2} % within one step, max {worst:.0} steps, {differ} of {} differ",
                e.name,
                within * 100.0,
                ours.len()
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
