//! TFLite models converted with a dynamic batch whose reshapes compute their shapes at run time
//! (`tests/golden/tflite_import/shapes/`, written by `tests/gen/gen_tflite_shapes.py`): the
//! importer folds SHAPE / STRIDED_SLICE / PACK / GATHER / REDUCE_PROD / CONCATENATION into
//! constants, gives the reshapes static shapes, and the float graph matches the TFLite
//! interpreter's outputs (reference kernels): each element within `max(1e-5 |ref|, 1e-6 max|ref|)`
//! (`close`, as `spatial_models`: the dense layers sum products of both signs in f32, as the
//! interpreter does in its own order, so their smallest outputs differ by about one f32 step of
//! the tensor's largest value, ~3e-7 here: 1e-5 of the largest values but 1e-4 of themselves).

use std::path::PathBuf;

use microquant::float::FloatExecutor;
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Sample {
    input: Tensor,
    output: Tensor,
}

#[derive(Debug, Deserialize)]
struct Model {
    name: String,
    file: String,
    ops: Vec<String>,
    input_signature: Vec<i64>,
    samples: Vec<Sample>,
}

#[derive(Debug, Deserialize)]
struct Cases {
    models: Vec<Model>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden/tflite_import/shapes")
}

fn close(case: &str, reference: &[f32], ours: &[f32]) {
    assert_eq!(reference.len(), ours.len(), "{case}");
    let max = reference.iter().fold(0f32, |m, v| m.max(v.abs()));
    for (i, (&r, &o)) in reference.iter().zip(ours).enumerate() {
        let bound = (1e-5 * r.abs()).max(1e-6 * max);
        assert!((o - r).abs() <= bound, "{case}: element {i}: {o} vs TFLite {r} (bound {bound:e})");
    }
}

fn models() -> Vec<Model> {
    let cases: Cases =
        serde_json::from_str(&std::fs::read_to_string(dir().join("cases.json")).unwrap()).expect("cases.json");
    cases.models
}

/// Runs `graph` on the model's samples and compares with the interpreter's outputs.
fn check_samples(m: &Model, graph: &microquant::graph::Graph, what: &str) {
    let ex = FloatExecutor::new(graph).unwrap_or_else(|e| panic!("{} ({what}): {e}", m.name));
    for (s, sample) in m.samples.iter().enumerate() {
        let x = sample.input.f32();
        let y = ex.run(&[x.as_slice()]).unwrap_or_else(|e| panic!("{} ({what}): run: {e}", m.name));
        close(&format!("{} ({what}) sample {s}", m.name), &sample.output.f32(), &y[0]);
    }
}

#[test]
fn sparse_weights_behind_densify_are_densified() {
    let m = models().into_iter().find(|m| m.name == "sparse_weights").unwrap();
    assert!(m.ops.iter().any(|o| o == "DENSIFY"), "{:?}", m.ops);
    let bytes = std::fs::read(dir().join(&m.file)).unwrap();
    let g = microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("import: {e}"));
    let kinds: Vec<&str> = g.nodes.iter().map(|n| n.op.name()).collect();
    assert_eq!(kinds, ["Conv2d", "Reshape", "FullyConnected"]);
    // The weights: dense, about 80 % zeros (the generator kept each with probability 0.2).
    for n in &g.nodes {
        if let Some(w) = n.input(1).and_then(|t| g.tensor(t)).filter(|t| t.data.is_some()) {
            let v = w.data.as_ref().unwrap().as_f32().unwrap();
            let zeros = v.iter().filter(|&&x| x == 0.0).count() as f64 / v.len() as f64;
            assert!((0.7..0.9).contains(&zeros), "{}: {zeros} zeros", w.name);
        }
    }
    check_samples(&m, &g, "imported");
    let mut opt = g.clone();
    microquant::passes::optimize(&mut opt).unwrap();
    check_samples(&m, &opt, "optimized");
}

/// Sparse float16 weights (DENSIFY of an f16 constant, then DEQUANTIZE to f32, as MediaPipe's
/// pose detector ships them): densified and widened at import, exactly (f16 → f32 is exact).
#[test]
fn sparse_f16_weights_behind_densify_and_dequantize_are_densified() {
    let m = models().into_iter().find(|m| m.name == "sparse_f16").unwrap();
    assert!(m.ops.iter().any(|o| o == "DENSIFY") && m.ops.iter().any(|o| o == "DEQUANTIZE"), "{:?}", m.ops);
    let bytes = std::fs::read(dir().join(&m.file)).unwrap();
    let g = microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("import: {e}"));
    let mut opt = g.clone();
    microquant::passes::optimize(&mut opt).unwrap();
    let kinds: Vec<&str> = opt.nodes.iter().map(|n| n.op.name()).collect();
    assert_eq!(kinds, ["Conv2d", "Reshape", "FullyConnected"]);
    check_samples(&m, &g, "imported");
    check_samples(&m, &opt, "optimized");
}

#[test]
fn int8_sparse_weights_run_bit_exact_with_the_interpreter() {
    use microquant::compile::{CompileOptions, compile};
    use microquant::interp::Interpreter;
    use microquant::kernels::Rounding;
    use microquant::model::AlignedBytes;
    let m = models().into_iter().find(|m| m.name == "sparse_int8").unwrap();
    assert!(m.ops.iter().any(|o| o == "DENSIFY"), "{:?}", m.ops);
    let bytes = std::fs::read(dir().join(&m.file)).unwrap();
    let g = microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("import: {e}"));
    assert_eq!(g.nodes.iter().map(|n| n.op.name()).collect::<Vec<_>>(), ["FullyConnected"]);
    // The interpreter's reference kernels round once (Rounding::Single).
    let c = compile(&g, &CompileOptions { rounding: Rounding::Single, ..Default::default() }).unwrap();
    let model = AlignedBytes::new(&c.bytes);
    let mut arena = vec![0u8; c.arena_len + 64];
    let mut it = Interpreter::new(&model, &mut arena).unwrap();
    for (s, sample) in m.samples.iter().enumerate() {
        it.input_i8(0).unwrap().copy_from_slice(&sample.input.i8());
        it.invoke().unwrap();
        assert_eq!(it.output_i8(0).unwrap(), sample.output.i8().as_slice(), "sample {s}");
    }
}

#[test]
fn shape_paths_fold_and_the_graph_matches_tflite() {
    for m in models().iter().filter(|m| m.name == "flatten_dynamic") {
        // The model really computes shapes at run time from a dynamic batch.
        assert_eq!(m.input_signature.first(), Some(&-1), "{}", m.name);
        for op in ["SHAPE", "STRIDED_SLICE", "PACK", "GATHER", "REDUCE_PROD"] {
            assert!(m.ops.iter().any(|o| o == op), "{}: {op} not in {:?}", m.name, m.ops);
        }
        let bytes = std::fs::read(dir().join(&m.file)).unwrap();
        let g = microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("{}: import: {e}", m.name));
        let kinds: Vec<&str> = g.nodes.iter().map(|n| n.op.name()).collect();
        assert_eq!(kinds, ["Conv2d", "Reshape", "Reshape", "FullyConnected", "Reshape", "Reshape"], "{}", m.name);
        let out = g.tensor(g.outputs[0]).unwrap();
        assert_eq!(out.shape, [1, 320], "{}", m.name);
        let mut opt = g.clone();
        microquant::passes::optimize(&mut opt).unwrap();
        assert!(m.samples.iter().all(|s| s.output.shape == [1, 320]));
        check_samples(m, &g, "imported");
        check_samples(m, &opt, "optimized");
        println!("{}: {kinds:?} -> optimized {:?}", m.name, opt.nodes.iter().map(|n| n.op.name()).collect::<Vec<_>>());
    }
}

#[test]
fn a_shape_operator_on_a_run_time_value_is_named() {
    let bytes = std::fs::read(dir().join("reduce_prod_activation.tflite")).unwrap();
    let e = microquant::tflite::import(&bytes).unwrap_err();
    println!("{e}");
    assert_eq!(e.kind(), microquant::graph::ConvertErrorKind::Unsupported, "{e}");
    assert_eq!(e.op(), Some("REDUCE_PROD"), "{e}");
    assert!(e.tensor_name().is_some_and(|n| n.contains('x')), "{e}");
    assert!(e.message().contains("computed at run time"), "{e}");
}
