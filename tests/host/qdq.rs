//! QDQ ONNX out and in, against ONNX Runtime (`tests/golden/qdq/`, written by
//! `tests/gen/gen_qdq.py`).
//!
//! Out: `export/<name>.onnx` were written by `microquant quantize --qdq` (this code, when the
//! generator ran) and checked by `onnx.checker`; ONNX Runtime's outputs on every calibration
//! sample are committed. Here the same quantization is redone with the current code: the QDQ
//! bytes must be identical, and our int8 runtime must be within 1 quantization step of ONNX
//! Runtime on every output element.
//!
//! In: `import/<name>.onnx` were quantized by ONNX Runtime's `quantize_static` (QDQ,
//! per-channel) or exported from a PyTorch QAT model; they become `.mq` models with the scales
//! they carry (every activation with a QuantizeLinear/DequantizeLinear pair and every weight
//! keeps its parameters: checked), and our int8 runtime must again be within 1 step of ONNX
//! Runtime.
//!
//! "Within 1 step": |ours − ORT| ≤ 1.0001 × the output scale, with ONNX Runtime run both ways
//! (its fused int8 kernels, and the float ops between Q and DQ as the ONNX spec defines them).
//! The inputs are quantized as ONNX `QuantizeLinear` does (round half to even), so both sides
//! start from the same int8 input.

use crate::peers_common;

use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::onnx::{QdqExportOptions, export_qdq, export_qdq_portable};
use microquant::ptq::{CalibrationOptions, ObserverKind, PtqOptions, PtqOutput, QParamsSource, WeightSource, convert};
use microquant_tests::golden::Tensor;
use peers_common::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Entry {
    name: String,
    kind: String,
    file: String,
    calib: String,
    observer: Option<String>,
    ort: Tensor,
    ort_noopt: Option<Tensor>,
    layers: Option<std::collections::BTreeMap<String, Tensor>>,
}

/// Calibration samples whose outputs ONNX Runtime's are committed for.
const SAMPLES: usize = 100;

#[derive(Deserialize)]
struct File {
    models: Vec<Entry>,
}

fn entries(kind: &str) -> Vec<Entry> {
    let text = std::fs::read_to_string(qdq_dir().join("qdq.json")).unwrap();
    serde_json::from_str::<File>(&text).unwrap().models.into_iter().filter(|e| e.kind == kind).collect()
}

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn float_model(e: &Entry) -> String {
    let text = std::fs::read_to_string(qdq_dir().join("qdq.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["models"].as_array().unwrap().iter().find(|m| m["name"] == e.name.as_str()).unwrap()["float_model"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Runs the compiled model on every sample (graph layout), inputs quantized like ONNX
/// QuantizeLinear; returns the dequantized outputs in the model's layout and the output scale.
fn run_ours(out: &PtqOutput, imported: &microquant::onnx::Imported, samples: &[Vec<Vec<f32>>]) -> (Vec<f32>, f32) {
    let bytes = AlignedBytes::new(&out.compiled.bytes);
    let mut arena = vec![0u8; out.compiled.arena_len + 16];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
    let (os, oz) = it.output_info(0).unwrap().per_tensor().unwrap();
    let mut ys = Vec::new();
    for s in samples {
        for (d, &x) in it.input_i8(0).unwrap().iter_mut().zip(&s[0]) {
            *d = ((x / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
        }
        it.invoke().unwrap();
        let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| (q as i32 - oz) as f32 * os).collect();
        ys.extend(imported.outputs[0].to_model_layout(&y).unwrap());
    }
    (ys, os)
}

/// Largest |ours − theirs| in output steps, and how many elements differ at all.
fn compare(name: &str, what: &str, ours: &[f32], theirs: &[f32], scale: f32) -> (f32, usize) {
    assert_eq!(ours.len(), theirs.len(), "{name}: {what}: output sizes");
    let mut worst = 0f32;
    let mut differ = 0;
    for (&a, &b) in ours.iter().zip(theirs) {
        let d = (a - b).abs() / scale;
        worst = worst.max(d);
        differ += usize::from(d > 0.5);
    }
    println!("{name}: vs {what}: max {worst:.3} steps, {differ} of {} elements differ", ours.len());
    (worst, differ)
}

/// End to end: every output element within the model's bound of ONNX Runtime's, both ways.
fn check_end_to_end(e: &Entry, ours: &[f32], scale: f32, failures: &mut Vec<String>) {
    let bound = end_to_end_bound(&e.name);
    assert!(bound >= 1.0);
    let runs = [("ONNX Runtime", Some(&e.ort)), ("ONNX Runtime without graph optimizations", e.ort_noopt.as_ref())];
    for (what, t) in runs {
        let Some(t) = t else { continue };
        let (worst, _) = compare(&e.name, what, ours, &t.f32(), scale);
        if worst > bound + 1e-4 {
            failures.push(format!("{}: {worst:.3} steps from {what} (bound {bound})", e.name));
        }
    }
}

fn options(observer: Option<&str>) -> PtqOptions {
    let kind = observer.map_or(ObserverKind::MinMax, |o| ObserverKind::from_name(o).unwrap());
    PtqOptions { calibration: CalibrationOptions { observer: kind, ..Default::default() }, ..Default::default() }
}

#[test]
fn export_is_reproduced_and_matches_onnx_runtime() {
    let list = entries("export");
    assert_eq!(list.len(), 15);
    let mut failures = Vec::new();
    for e in &list {
        let fm = float_model(e);
        let imported = import(&repo(&fm));
        let x = read_npy(&repo(&e.calib));
        let all = samples(&imported, &x);
        let out = convert(&imported.graph, &all, None, &options(e.observer.as_deref()), &mut |_| {})
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        // What the CLI writes: the model's own layout, opset 17, the file stem as graph name.
        let stem = std::path::Path::new(&fm).file_stem().unwrap().to_string_lossy().into_owned();
        let opts = QdqExportOptions {
            opset: 17,
            inputs: imported.inputs.clone(),
            outputs: imported.outputs.clone(),
            graph_name: stem,
        };
        let qdq = export_qdq(&out.quantized.graph, &opts).unwrap();
        let committed = std::fs::read(repo(&e.file)).unwrap();
        if qdq != committed {
            failures.push(format!("{}: the exported QDQ model differs from the committed one", e.name));
        }
        // The plain QDQ form reads back (our own QDQ import), with every parameter carried.
        let back = microquant::onnx::import(&export_qdq_portable(&out.quantized.graph, &opts).unwrap()).unwrap();
        let acts = back.graph.tensors.iter().filter(|t| !t.is_constant() && t.quant.is_some()).count();
        assert!(acts >= out.quantized.graph.nodes.len(), "{}: {acts} activations carry parameters", e.name);

        let n = SAMPLES.min(all.len());
        let (ours, scale) = run_ours(&out, &imported, &all[..n]);
        check_end_to_end(e, &ours, scale, &mut failures);
        if e.name == "ort_dscnn_nhwc" {
            // Both against the original float model: folding the batch norms loses less.
            let fm = import(&repo(&float_model(e)));
            let ex = microquant::float::FloatExecutor::new(&fm.graph).unwrap();
            let mut float = Vec::new();
            for s in &samples(&fm, &x)[..n] {
                float.extend(fm.outputs[0].to_model_layout(&ex.run(&[&s[0]]).unwrap()[0]).unwrap());
            }
            let sqnr = |q: &[f32]| {
                let (sig, noise) = float
                    .iter()
                    .zip(q)
                    .fold((0f64, 0f64), |(a, b), (&f, &v)| (a + (f as f64).powi(2), b + ((f - v) as f64).powi(2)));
                10.0 * (sig / noise).log10()
            };
            let (o, t) = (sqnr(&ours), sqnr(&e.ort.f32()));
            println!("{}: SQNR against the float model: ours {o:.1} dB, ONNX Runtime {t:.1} dB", e.name);
            assert!(o > t, "{}: ours {o:.1} dB, ONNX Runtime {t:.1} dB", e.name);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn onnx_runtime_and_pytorch_qdq_models_run_within_one_step() {
    let list = entries("import");
    assert_eq!(list.len(), 6);
    let mut failures = Vec::new();
    for e in &list {
        let imported = import(&repo(&e.file));
        let x = read_npy(&repo(&e.calib));
        let all = samples(&imported, &x);
        let carried_acts = imported.graph.tensors.iter().filter(|t| !t.is_constant() && t.quant.is_some()).count();
        let carried_weights = imported.graph.tensors.iter().filter(|t| t.is_constant() && t.quant.is_some()).count();
        assert!(carried_acts > 0 && carried_weights > 0, "{}: nothing carried", e.name);
        let out = convert(&imported.graph, &all, None, &options(None), &mut |_| {})
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        // Every weighted layer uses the carried weight scales; every activation that had a Q/DQ
        // pair uses its scale and zero point.
        let q = &out.quantized;
        let recomputed = q.weight_sources.iter().filter(|w| **w == Some(WeightSource::MinMax)).count();
        // tf2onnx keeps the batch norms after the depthwise convolutions as Mul and Add, which
        // ONNX Runtime quantizes as separate ops; our passes fold them into the depthwise
        // weights and bias, and such changed weights get new scales (the carried ones do not
        // represent them any more).
        let expected = if e.name == "ort_dscnn_nhwc" { 2 } else { 0 };
        assert_eq!(recomputed, expected, "{}: layers whose weights were not carried", e.name);
        let mut carried = 0;
        for (t, a) in out.float.tensors.iter().zip(&q.activations) {
            let (Some(a), Some(tq)) = (a, &t.quant) else { continue };
            let (s, z) = tq.per_tensor_params().unwrap();
            let fixed_by_op = matches!(a.source, QParamsSource::SameAsInput | QParamsSource::Fixed);
            if !fixed_by_op {
                assert_eq!(a.source, QParamsSource::Carried, "{}: '{}'", e.name, t.name);
                assert_eq!((a.scale, a.zero_point), (s, z), "{}: '{}'", e.name, t.name);
                carried += 1;
            }
        }
        println!("{}: {carried} activations and {carried_weights} weights/biases with carried parameters", e.name);
        let n = SAMPLES.min(all.len());
        let (ours, scale) = run_ours(&out, &imported, &all[..n]);
        check_end_to_end(e, &ours, scale, &mut failures);
        if e.name == "ort_dscnn_nhwc" {
            // Both against the original float model: folding the batch norms loses less.
            let fm = import(&repo(&float_model(e)));
            let ex = microquant::float::FloatExecutor::new(&fm.graph).unwrap();
            let mut float = Vec::new();
            for s in &samples(&fm, &x)[..n] {
                float.extend(fm.outputs[0].to_model_layout(&ex.run(&[&s[0]]).unwrap()[0]).unwrap());
            }
            let sqnr = |q: &[f32]| {
                let (sig, noise) = float
                    .iter()
                    .zip(q)
                    .fold((0f64, 0f64), |(a, b), (&f, &v)| (a + (f as f64).powi(2), b + ((f - v) as f64).powi(2)));
                10.0 * (sig / noise).log10()
            };
            let (o, t) = (sqnr(&ours), sqnr(&e.ort.f32()));
            println!("{}: SQNR against the float model: ours {o:.1} dB, ONNX Runtime {t:.1} dB", e.name);
            assert!(o > t, "{}: ours {o:.1} dB, ONNX Runtime {t:.1} dB", e.name);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// How many output steps our int8 runtime may be from ONNX Runtime end to end. One step, except
/// where measured otherwise and explained: each layer is within one step of ONNX Runtime given
/// the same int8 inputs (`every_exported_layer_is_within_one_step_of_onnx_runtime`), but the
/// two round differently (TFLite's fixed-point requantization, round half away from zero, vs
/// ONNX's float `QuantizeLinear`, round half to even), and a one-step difference in a layer
/// with a coarse scale is several steps of a finer scale downstream.
fn end_to_end_bound(name: &str) -> f32 {
    match name {
        // Not rounding: structure. tf2onnx left the batch norms after the depthwise convs as Mul
        // and Add, which ONNX Runtime quantizes as two more int8 ops each; our passes fold them
        // into the depthwise conv (one requantization instead of three), so ours is closer to
        // the float model than ONNX Runtime is (checked below).
        "ort_dscnn_nhwc" => 4.0,
        _ => 1.0,
    }
}

/// The layout ONNX Runtime's value of a graph tensor has in our exported models: 4-D
/// activations NCHW, everything else as ours. Returns the values in our layout.
fn to_ours(v: &[i8], shape: &[usize]) -> Vec<i8> {
    match *shape {
        [n, h, w, c] => {
            let mut out = vec![0i8; v.len()];
            for b in 0..n {
                for y in 0..h {
                    for x in 0..w {
                        for ch in 0..c {
                            out[((b * h + y) * w + x) * c + ch] = v[((b * c + ch) * h + y) * w + x];
                        }
                    }
                }
            }
            out
        }
        _ => v.to_vec(),
    }
}

/// Layer by layer: each op of the quantized graph, compiled alone and fed ONNX Runtime's int8
/// inputs of that layer (from the exported QDQ model), gives ONNX Runtime's int8 output within
/// one step, on 4 samples.
#[test]
fn every_exported_layer_is_within_one_step_of_onnx_runtime() {
    use microquant::graph::{Graph, GraphMetadata, Node};
    let mut failures = Vec::new();
    let mut layers_checked = 0;
    for e in entries("export") {
        let ort_layers = e.layers.as_ref().expect("per-layer values");
        let imported = import(&repo(&float_model(&e)));
        let all = samples(&imported, &read_npy(&repo(&e.calib)));
        let out = convert(&imported.graph, &all, None, &options(e.observer.as_deref()), &mut |_| {}).unwrap();
        let q = &out.quantized.graph;
        let mut worst_model = 0;
        for (j, node) in q.nodes.iter().enumerate() {
            let y = node.output(0).unwrap();
            let yt = q.tensor(y).unwrap();
            let expected =
                ort_layers.get(&yt.name).unwrap_or_else(|| panic!("{}: no ORT value for {}", e.name, yt.name));
            let mut g = Graph::new(GraphMetadata::new("layer test", ""));
            let mut inputs = Vec::new();
            let mut feeds = Vec::new();
            for t in &node.inputs {
                let id = match t {
                    Some(t) => {
                        let src = q.tensor(*t).unwrap();
                        let id = g.add_tensor(src.clone()).unwrap();
                        if !src.is_constant() {
                            g.inputs.push(id);
                            let v = ort_layers
                                .get(&src.name)
                                .unwrap_or_else(|| panic!("{}: no ORT value for {}", e.name, src.name));
                            // A model input is written in the model's layout, before any transpose.
                            let io = q.inputs.iter().position(|i| i == t).map(|k| imported.inputs[k].clone());
                            feeds.push((v.i8(), src.shape.clone(), io));
                        }
                        Some(id)
                    }
                    None => None,
                };
                inputs.push(id);
            }
            let yid = g.add_tensor(yt.clone()).unwrap();
            g.outputs.push(yid);
            g.add_node(Node::new(node.name.clone(), node.op.clone(), inputs, vec![yid]));
            let compiled = microquant::compile::compile(&g, &Default::default())
                .unwrap_or_else(|err| panic!("{} layer {j}: {err}", e.name));
            let bytes = AlignedBytes::new(&compiled.bytes);
            let mut arena = vec![0u8; compiled.arena_len + 16];
            let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
            let want = expected.i8();
            let per_out = want.len() / 4;
            for s in 0..4 {
                for (k, (v, shape, io)) in feeds.iter().enumerate() {
                    let per = v.len() / 4;
                    let x = match io {
                        Some(io) => io.to_graph_layout(&v[s * per..(s + 1) * per]).unwrap(),
                        None => to_ours(&v[s * per..(s + 1) * per], shape),
                    };
                    it.input_bytes(k).unwrap().copy_from_slice(bytemuck::cast_slice(&x));
                }
                it.invoke().unwrap();
                let got = it.output_i8(0).unwrap();
                let want_s = to_ours(&want[s * per_out..(s + 1) * per_out], &yt.shape);
                let worst = got.iter().zip(&want_s).map(|(&a, &b)| (a as i32 - b as i32).abs()).max().unwrap_or(0);
                worst_model = worst_model.max(worst);
                if worst > 1 {
                    failures.push(format!(
                        "{} layer {j} ({} {}): {worst} steps from ONNX Runtime",
                        e.name,
                        node.op.name(),
                        node.name
                    ));
                }
            }
            layers_checked += 1;
        }
        println!(
            "{}: {} layers, at most {worst_model} step(s) from ONNX Runtime given its inputs",
            e.name,
            q.nodes.len()
        );
    }
    assert!(layers_checked >= 40, "{layers_checked} layers checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The fields `field` (length-delimited) of a protobuf message, in order.
fn proto_fields(mut b: &[u8], field: u64) -> Vec<&[u8]> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = b.split_first().expect("truncated varint");
            *b = rest;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        match key & 7 {
            0 => {
                varint(&mut b);
            }
            1 => b = &b[8..],
            5 => b = &b[4..],
            2 => {
                let n = varint(&mut b) as usize;
                let (v, rest) = b.split_at(n);
                if key >> 3 == field {
                    out.push(v);
                }
                b = rest;
            }
            w => panic!("wire type {w}"),
        }
    }
    out
}

/// An int8 TFLite model exported as QDQ ONNX has unique node names (ONNX Runtime refuses a
/// file with two nodes of one name; the TFLite importer may name a node like the model output,
/// whose `Identity` the exporter writes).
#[test]
fn exported_node_names_are_unique_for_the_mlperf_int8_models() {
    for m in ["kws_ref_model_int8", "ic_resnet8_int8", "vww_96_int8", "ad01_int8"] {
        let bytes = std::fs::read(repo(&format!("models/mlperf-tiny/{m}.tflite"))).unwrap();
        let graph = microquant::tflite::import(&bytes).unwrap();
        let onnx = export_qdq(&graph, &QdqExportOptions { graph_name: m.into(), ..Default::default() }).unwrap();
        let g = proto_fields(&onnx, 7);
        assert_eq!(g.len(), 1, "{m}: one graph");
        let names: Vec<String> = proto_fields(g[0], 1)
            .into_iter()
            .map(|node| String::from_utf8(proto_fields(node, 3).first().copied().unwrap_or_default().to_vec()).unwrap())
            .collect();
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert!(names.len() > 10, "{m}: {} nodes", names.len());
        assert_eq!(unique.len(), names.len(), "{m}: duplicate node names among {names:?}");
    }
}
