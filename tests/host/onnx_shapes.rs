//! Dynamic input axes and non-float inputs fixed at import: the models of
//! `tests/golden/onnx/shapes/` (written by `tests/gen/gen_onnx_shapes.py`) imported with
//! `ImportOptions::input_shapes` / `input_values`, run by the float executor (before and after
//! the graph passes) and compared with ONNX Runtime's outputs for the same shapes and values
//! (the tolerance rule of `onnx_golden::assert_close`); then the errors that name what to fix.

use std::collections::BTreeMap;

use crate::onnx_golden::{assert_close, golden_dir};

use microquant::float::FloatExecutor;
use microquant::graph::{ConvertError, ConvertErrorKind, Graph};
use microquant::onnx::{Dim, ImportOptions, Imported};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct NamedTensor {
    name: String,
    #[serde(flatten)]
    t: Tensor,
}

#[derive(Debug, Deserialize)]
struct Case {
    input_shapes: BTreeMap<String, Vec<usize>>,
    input_values: BTreeMap<String, Vec<f64>>,
    inputs: Vec<NamedTensor>,
    outputs: Vec<Tensor>,
}

#[derive(Debug, Deserialize)]
struct Model {
    name: String,
    file: String,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
struct Cases {
    models: Vec<Model>,
}

fn models() -> Vec<Model> {
    let text = std::fs::read_to_string(golden_dir().join("shapes").join("cases.json")).expect("shapes/cases.json");
    serde_json::from_str::<Cases>(&text).expect("cases.json parses").models
}

fn bytes(file: &str) -> Vec<u8> {
    std::fs::read(golden_dir().join("shapes").join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

impl Case {
    fn options(&self) -> ImportOptions {
        ImportOptions {
            input_shapes: self.input_shapes.clone().into_iter().collect(),
            input_values: self.input_values.clone().into_iter().collect(),
            ..Default::default()
        }
    }
}

fn run(m: &Model, c: &Case, imported: &Imported, graph: &Graph, what: &str) -> f64 {
    let ex = FloatExecutor::new(graph).unwrap_or_else(|e| panic!("{} ({what}): executor: {e}", m.name));
    assert_eq!(imported.inputs.len(), c.inputs.len(), "{}: data inputs", m.name);
    let inputs: Vec<Vec<f32>> = c
        .inputs
        .iter()
        .zip(&imported.inputs)
        .map(|(t, info)| {
            assert_eq!((&t.name, &t.t.shape), (&info.name, &info.model_shape), "{}: input", m.name);
            info.to_graph_layout(&t.t.f32()).unwrap()
        })
        .collect();
    let refs: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
    let outs = ex.run(&refs).unwrap_or_else(|e| panic!("{} ({what}): run: {e}", m.name));
    let mut worst = 0f64;
    for ((o, expected), info) in outs.iter().zip(&c.outputs).zip(&imported.outputs) {
        assert_eq!(expected.shape, info.model_shape, "{}: output {} shape", m.name, info.name);
        let ours = info.to_model_layout(o).unwrap();
        let case = format!("{} {:?} {:?} ({what})", m.name, c.input_shapes, c.input_values);
        worst = worst.max(assert_close(&case, &expected.f32(), &ours));
    }
    worst
}

#[test]
fn fixed_shapes_and_values_match_onnx_runtime() {
    let models = models();
    let mut cases = 0;
    for m in &models {
        for c in &m.cases {
            let imported = microquant::onnx::import_with_options(&bytes(&m.file), &c.options())
                .unwrap_or_else(|e| panic!("{} {:?}: import: {e}", m.name, c.input_shapes));
            let e = run(m, c, &imported, &imported.graph, "imported");
            let mut opt = imported.graph.clone();
            microquant::passes::optimize(&mut opt).unwrap_or_else(|e| panic!("{}: optimize: {e}", m.name));
            let e2 = run(m, c, &imported, &opt, "optimized");
            let kinds: Vec<&str> = opt.nodes.iter().map(|n| n.op.name()).collect();
            println!(
                "{:18} {:?} {:?}: max rel err {e:.1e} / {e2:.1e} {kinds:?}",
                m.name, c.input_shapes, c.input_values
            );
            cases += 1;
        }
    }
    assert!(cases >= 12, "{cases} cases");
}

#[test]
fn the_taken_branch_is_inlined() {
    let m = models().into_iter().find(|m| m.name == "if_shape").unwrap();
    let import = |n: usize| {
        let o = ImportOptions { input_shapes: vec![("x".into(), vec![1, n])], ..Default::default() };
        microquant::onnx::import_with_options(&bytes(&m.file), &o).unwrap()
    };
    // n > 8: then branch (Mul, Reshape, Add, then Tanh); else Sigmoid then Tanh.
    let long = import(12);
    let long: Vec<&str> = long.graph.nodes.iter().map(|n| n.op.name()).collect();
    assert!(long.contains(&"Mul") && !long.contains(&"Logistic"), "{long:?}");
    let short = import(5);
    let short: Vec<&str> = short.graph.nodes.iter().map(|n| n.op.name()).collect();
    assert!(short.contains(&"Logistic") && !short.contains(&"Mul"), "{short:?}");
}

#[test]
fn model_inputs_lists_dims_and_types() {
    let inputs = microquant::onnx::model_inputs(&bytes("dyn_conv_opset13.onnx")).unwrap();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].name, "x");
    assert_eq!(inputs[0].dtype, "FLOAT");
    assert_eq!(
        inputs[0].dims,
        Some(vec![
            Dim::Dynamic(Some("batch".into())),
            Dim::Fixed(3),
            Dim::Dynamic(Some("height".into())),
            Dim::Dynamic(Some("width".into()))
        ])
    );
    assert!(inputs[0].needs_shape() && inputs[0].is_float());
    let inputs = microquant::onnx::model_inputs(&bytes("audio_sr.onnx")).unwrap();
    let names: Vec<(&str, &str)> = inputs.iter().map(|i| (i.name.as_str(), i.dtype.as_str())).collect();
    assert_eq!(names, [("x", "FLOAT"), ("sr", "INT64"), ("gain", "FLOAT")]);
    assert_eq!(inputs[1].dims, Some(vec![]));
    assert!(!inputs[1].is_float() && !inputs[1].needs_shape());
    assert!(microquant::onnx::model_inputs(b"TFL3 is not onnx").is_err());
}

fn import_err(file: &str, options: &ImportOptions) -> ConvertError {
    match microquant::onnx::import_with_options(&bytes(file), options) {
        Ok(_) => panic!("{file}: imported, expected an error"),
        Err(e) => {
            println!("{file}: {e}");
            e
        }
    }
}

fn shapes(list: &[(&str, &[usize])]) -> ImportOptions {
    ImportOptions {
        input_shapes: list.iter().map(|(n, s)| (n.to_string(), s.to_vec())).collect(),
        ..Default::default()
    }
}

#[test]
fn what_is_missing_is_named() {
    // A dynamic spatial axis without an extent: the input, the axis, its dim_param, the option.
    let e = import_err("dyn_conv_opset13.onnx", &ImportOptions::default());
    assert_eq!((e.kind(), e.tensor_name()), (ConvertErrorKind::Unsupported, Some("x")));
    for part in ["input \"x\"", "axis 2", "\"height\"", "--input-shape x=1x3x<height>x<width>", "inputShapes"] {
        assert!(e.message().contains(part), "{part}: {e}");
    }
    // A given shape must keep the static extents and the rank.
    let e = import_err("dyn_conv_opset13.onnx", &shapes(&[("x", &[1, 4, 8, 8])]));
    assert!(e.message().contains("static extent 3 on axis 1"), "{e}");
    let e = import_err("dyn_conv_opset13.onnx", &shapes(&[("x", &[1, 3, 8])]));
    assert!(e.message().contains("rank 4"), "{e}");
    let e = import_err("dyn_conv_opset13.onnx", &shapes(&[("x", &[1, 3, 0, 8])]));
    assert!(e.message().contains("extent 0"), "{e}");
    // An unknown input name.
    let e = import_err("dyn_conv_opset13.onnx", &shapes(&[("image", &[1, 3, 8, 8])]));
    assert_eq!(e.kind(), ConvertErrorKind::Malformed);
    assert!(e.message().contains("\"image\"") && e.message().contains("[\"x\"]"), "{e}");
    // A non-float input without a value: the option that fixes it.
    let e = import_err("audio_sr.onnx", &shapes(&[("x", &[1, 160])]));
    assert_eq!((e.kind(), e.tensor_name()), (ConvertErrorKind::UnsupportedDType, Some("sr")));
    assert!(e.message().contains("INT64") && e.message().contains("--input-value sr="), "{e}");
    // Values: whole numbers for integer inputs, the count of the shape.
    let mut o = shapes(&[("x", &[1, 160])]);
    o.input_values = vec![("sr".into(), vec![16000.5]), ("gain".into(), vec![1.0])];
    assert!(import_err("audio_sr.onnx", &o).message().contains("16000.5"));
    o.input_values = vec![("sr".into(), vec![16000.0, 8000.0]), ("gain".into(), vec![1.0])];
    assert!(import_err("audio_sr.onnx", &o).message().contains("2 values"));
    // The frame length must divide the samples (150 samples, hop 16): the reshape's error.
    o.input_shapes = vec![("x".into(), vec![1, 150])];
    o.input_values = vec![("sr".into(), vec![16000.0]), ("gain".into(), vec![1.0])];
    let e = import_err("audio_sr.onnx", &o);
    assert_eq!(e.node_name(), Some("frames"), "{e}");
    // A bool input deciding an If needs its value.
    let e = import_err("if_flag.onnx", &ImportOptions::default());
    assert!(e.message().contains("BOOL") && e.message().contains("--input-value flag="), "{e}");
    // A shape computed from an activation at run time: the node and the tensor.
    let e = import_err("cast_shape.onnx", &ImportOptions::default());
    assert_eq!(e.node_name(), Some("to_int"), "{e}");
    assert!(e.message().contains("\"y\""), "{e}");
    let e = import_err("range_dynamic.onnx", &ImportOptions::default());
    assert_eq!((e.kind(), e.node_name()), (ConvertErrorKind::Unsupported, Some("range")), "{e}");
    assert!(e.message().contains("input 0 (\"x\") is computed at run time"), "{e}");
}
