//! The TFLite importer against TFLite's own view of each model.
//!
//! `tests/gen/gen_tflite_import.py` records, for the eight MLPerf Tiny models (`models/`) and the
//! small models it builds (`tests/golden/tflite_import/*.tflite`), what the TFLite interpreter
//! (ai-edge-litert 2.3.0, reference kernels) sees: every operator's name and input/output tensor
//! indices, every tensor's name, shape, dtype, scales, zero points and quantized dimension, the
//! CRC-32 of every constant's bytes, and each operator's builtin options (from TFLite's own
//! generated flatbuffer reader). These tests import the same files and compare everything.
//! The error models and the corrupted files check that bad input is a typed error, never a
//! panic.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use microquant::graph::{ConstData, ConvertErrorKind, DType, FusedActivation, Graph, Node, Op, Padding, TensorId};
use microquant::tflite::{Imported, import, import_with_tensor_map};
use microquant_tests::rng::SplitMix64;
use serde::Deserialize;

const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

const MLPERF: [&str; 8] = [
    "kws_ref_model_int8",
    "kws_ref_model_float32",
    "ic_resnet8_int8",
    "ic_resnet8_float32",
    "vww_96_int8",
    "vww_96_float32",
    "ad01_int8",
    "ad01_float32",
];
const BUILT: [&str; 6] =
    ["ops_float", "ops_int8", "ops_16x8", "buffer_offset", "deprecated_code_only", "builtin_code_only"];

#[derive(Debug, Deserialize)]
struct Golden {
    model: String,
    file_bytes: usize,
    file_crc32: u32,
    buffers_with_offset: usize,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    tensors: Vec<GTensor>,
    ops: Vec<GOp>,
}

#[derive(Debug, Deserialize)]
struct GTensor {
    index: usize,
    name: String,
    shape: Vec<i64>,
    shape_signature: Vec<i64>,
    dtype: String,
    quant: Option<GQuant>,
    #[serde(rename = "const")]
    constant: Option<Digest>,
    dequantized: Option<Digest>,
}

#[derive(Debug, Deserialize)]
struct GQuant {
    scales: Digest,
    zero_points: Digest,
    quantized_dimension: usize,
}

#[derive(Debug, Deserialize)]
struct Digest {
    n: usize,
    crc32: u32,
    values: Option<Vec<f64>>,
    bytes: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct GOp {
    index: usize,
    op: String,
    inputs: Vec<i64>,
    outputs: Vec<usize>,
    options: serde_json::Map<String, serde_json::Value>,
    macs: u64,
}

#[derive(Debug, Deserialize)]
struct ErrorCase {
    file: String,
    kind: String,
    op_index: Option<usize>,
    op: Option<String>,
    fragment: String,
}

#[derive(Debug, Deserialize)]
struct ErrorFile {
    cases: Vec<ErrorCase>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn golden(name: &str) -> Golden {
    let path = repo().join(format!("tests/golden/tflite_import/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn model_bytes(g: &Golden) -> Vec<u8> {
    let bytes = std::fs::read(repo().join(&g.model)).unwrap();
    assert_eq!(bytes.len(), g.file_bytes, "{}: file size differs from the golden data's", g.model);
    assert_eq!(
        CRC32.checksum(&bytes),
        g.file_crc32,
        "{}: file differs from the one the golden data describes",
        g.model
    );
    bytes
}

fn crc_of(bytes: &[u8]) -> u32 {
    CRC32.checksum(bytes)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Our op name for a TFLite builtin.
fn expected_op(tflite: &str) -> &'static str {
    match tflite {
        "CONV_2D" => "Conv2d",
        "DEPTHWISE_CONV_2D" => "DepthwiseConv2d",
        "FULLY_CONNECTED" => "FullyConnected",
        "MAX_POOL_2D" => "MaxPool2d",
        "AVERAGE_POOL_2D" => "AvgPool2d",
        "ADD" => "Add",
        "SUB" => "Sub",
        "MUL" => "Mul",
        "SOFTMAX" => "Softmax",
        "LOGISTIC" => "Logistic",
        "TANH" => "Tanh",
        "HARD_SWISH" => "HardSwish",
        "RELU" => "Relu",
        "RELU6" => "Relu6",
        "LEAKY_RELU" => "LeakyRelu",
        "CONCATENATION" => "Concatenation",
        "PAD" | "PADV2" => "Pad",
        "MEAN" => "Mean",
        "RESHAPE" => "Reshape",
        "TRANSPOSE" => "Transpose",
        "SQUEEZE" => "Squeeze",
        "QUANTIZE" => "Quantize",
        "DEQUANTIZE" => "Dequantize",
        other => panic!("golden op {other} is not one the importer converts"),
    }
}

/// Operand positions that are graph edges; the others are attributes (the op docs of
/// `microquant::graph::Op` say which).
fn data_positions(tflite: &str, n: usize) -> Vec<usize> {
    match tflite {
        "RESHAPE" | "PAD" | "MEAN" | "TRANSPOSE" => vec![0],
        "PADV2" => vec![0, 2],
        _ => (0..n).collect(),
    }
}

fn opt_i64(op: &GOp, key: &str) -> i64 {
    op.options
        .get(key)
        .and_then(|v| v.as_i64())
        .unwrap_or_else(|| panic!("op {} {}: option {key} missing", op.index, op.op))
}

fn opt_str<'a>(op: &'a GOp, key: &str) -> &'a str {
    op.options
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("op {} {}: option {key} missing", op.index, op.op))
}

fn activation_of(op: &GOp) -> FusedActivation {
    match opt_str(op, "fusedActivationFunction") {
        "NONE" => FusedActivation::None,
        "RELU" => FusedActivation::Relu,
        "RELU6" => FusedActivation::Relu6,
        "RELU_N1_TO_1" => FusedActivation::ReluN1To1,
        other => panic!("op {}: fused activation {other} in a model the importer accepts", op.index),
    }
}

fn padding_of(op: &GOp) -> Padding {
    match opt_str(op, "padding") {
        "SAME" => Padding::Same,
        "VALID" => Padding::Valid,
        other => panic!("padding {other}"),
    }
}

/// The small integer constant (axes, perm, paddings) of operand `k` of `op`.
fn const_values(g: &Golden, op: &GOp, k: usize) -> Vec<i64> {
    let t = &g.tensors[op.inputs[k] as usize];
    let c = t.constant.as_ref().unwrap_or_else(|| panic!("op {} operand {k} is not constant", op.index));
    c.values.as_ref().expect("small constant inlined").iter().map(|&v| v as i64).collect()
}

fn norm_axis(a: i64, rank: usize) -> usize {
    (if a < 0 { a + rank as i64 } else { a }) as usize
}

fn check_attributes(g: &Golden, op: &GOp, node: &Node, ctx: &str) {
    let shape = |i: i64| -> Vec<usize> { g.tensors[i as usize].shape.iter().map(|&d| d as usize).collect() };
    match &node.op {
        Op::Conv2d(c) => {
            assert_eq!(
                (c.stride_h, c.stride_w, c.dilation_h, c.dilation_w),
                (
                    opt_i64(op, "strideH") as usize,
                    opt_i64(op, "strideW") as usize,
                    opt_i64(op, "dilationHFactor") as usize,
                    opt_i64(op, "dilationWFactor") as usize
                ),
                "{ctx}"
            );
            assert_eq!(c.padding, padding_of(op), "{ctx}");
            assert_eq!(c.activation, activation_of(op), "{ctx}");
        }
        Op::DepthwiseConv2d(c) => {
            assert_eq!(
                (c.stride_h, c.stride_w, c.dilation_h, c.dilation_w),
                (
                    opt_i64(op, "strideH") as usize,
                    opt_i64(op, "strideW") as usize,
                    opt_i64(op, "dilationHFactor") as usize,
                    opt_i64(op, "dilationWFactor") as usize
                ),
                "{ctx}"
            );
            assert_eq!(c.padding, padding_of(op), "{ctx}");
            assert_eq!(c.activation, activation_of(op), "{ctx}");
            // TFLite's kernels use filter channels / input channels; the files agree with it.
            let (x, f) = (shape(op.inputs[0]), shape(op.inputs[1]));
            assert_eq!(c.depth_multiplier, f[3] / x[3], "{ctx}");
            assert_eq!(c.depth_multiplier as i64, opt_i64(op, "depthMultiplier"), "{ctx}: option");
        }
        Op::FullyConnected(c) => {
            assert_eq!(c.activation, activation_of(op), "{ctx}");
            assert_eq!(c.keep_num_dims, op.options["keepNumDims"].as_bool().unwrap(), "{ctx}");
            assert_eq!(opt_i64(op, "weightsFormat"), 0, "{ctx}");
        }
        Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
            assert_eq!(
                (p.filter_h, p.filter_w, p.stride_h, p.stride_w),
                (
                    opt_i64(op, "filterHeight") as usize,
                    opt_i64(op, "filterWidth") as usize,
                    opt_i64(op, "strideH") as usize,
                    opt_i64(op, "strideW") as usize
                ),
                "{ctx}"
            );
            assert_eq!(p.padding, padding_of(op), "{ctx}");
            assert_eq!(p.activation, activation_of(op), "{ctx}");
        }
        Op::Add { activation } | Op::Sub { activation } | Op::Mul { activation } => {
            assert_eq!(*activation, activation_of(op), "{ctx}");
        }
        Op::Softmax { beta } => assert_eq!(*beta, op.options["beta"].as_f64().unwrap() as f32, "{ctx}"),
        Op::LeakyRelu { alpha } => assert_eq!(*alpha, op.options["alpha"].as_f64().unwrap() as f32, "{ctx}"),
        Op::Concatenation { axis, activation } => {
            let rank = shape(op.outputs[0] as i64).len();
            assert_eq!(*axis, norm_axis(opt_i64(op, "axis"), rank), "{ctx}");
            assert_eq!(*activation, activation_of(op), "{ctx}");
        }
        Op::Pad { paddings } => {
            let v = const_values(g, op, 1);
            let expected: Vec<[usize; 2]> = v.chunks(2).map(|p| [p[0] as usize, p[1] as usize]).collect();
            assert_eq!(*paddings, expected, "{ctx}");
            if op.op == "PADV2" {
                assert!(node.input(1).is_some(), "{ctx}: PADV2 keeps its constant value as input 1");
            }
        }
        Op::Mean { axes, keep_dims } => {
            let rank = shape(op.inputs[0]).len();
            let expected: BTreeSet<usize> = const_values(g, op, 1).into_iter().map(|a| norm_axis(a, rank)).collect();
            assert_eq!(*axes, expected.into_iter().collect::<Vec<_>>(), "{ctx}");
            assert_eq!(*keep_dims, op.options["keepDims"].as_bool().unwrap(), "{ctx}");
        }
        Op::Reshape { new_shape } => assert_eq!(*new_shape, shape(op.outputs[0] as i64), "{ctx}"),
        Op::Transpose { perm } => {
            let expected: Vec<usize> = const_values(g, op, 1).into_iter().map(|a| a as usize).collect();
            assert_eq!(*perm, expected, "{ctx}");
        }
        Op::Squeeze { axes } => {
            let x = shape(op.inputs[0]);
            let dims: Vec<i64> =
                op.options["squeezeDims"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
            let expected: BTreeSet<usize> = if dims.is_empty() {
                (0..x.len()).filter(|&a| x[a] == 1).collect()
            } else {
                dims.into_iter().map(|a| norm_axis(a, x.len())).collect()
            };
            assert_eq!(*axes, expected.into_iter().collect::<Vec<_>>(), "{ctx}");
        }
        Op::Logistic | Op::Tanh | Op::HardSwish | Op::Relu | Op::Relu6 | Op::Quantize | Op::Dequantize => {}
        other => panic!("{ctx}: unexpected op {other}"),
    }
}

fn check_digest_f32(d: &Digest, v: &[f32], ctx: &str) {
    assert_eq!(d.n, v.len(), "{ctx}: count");
    if let Some(vals) = &d.values {
        let expected: Vec<f32> = vals.iter().map(|&x| x as f32).collect();
        assert_eq!(expected, v, "{ctx}");
    }
    assert_eq!(d.crc32, crc_of(&f32_bytes(v)), "{ctx}: crc32 of the f32 values");
}

/// Compares an imported model with the golden description; returns the graph.
fn check_model(name: &str) -> (Golden, Imported) {
    let g = golden(name);
    let bytes = model_bytes(&g);
    let imported = import_with_tensor_map(&bytes).unwrap_or_else(|e| panic!("{name}: import failed: {e}"));
    let (graph, map) = (&imported.graph, &imported.tensor_map);
    assert_eq!(map.len(), g.tensors.len(), "{name}: tensor count");
    assert_eq!(graph.nodes.len(), g.ops.len(), "{name}: one node per TFLite operator");
    let id = |i: usize| -> TensorId { map[i].unwrap_or_else(|| panic!("{name}: tensor {i} not in the graph")) };

    // Tensors used as graph edges, and the rest.
    let mut data_tensors = BTreeSet::new();
    data_tensors.extend(g.inputs.iter().copied());
    data_tensors.extend(g.outputs.iter().copied());

    for (op, node) in g.ops.iter().zip(&graph.nodes) {
        let ctx = format!("{name}: operator {} {}", op.index, op.op);
        assert_eq!(node.op.name(), expected_op(&op.op), "{ctx}");
        let mut expected_inputs: Vec<Option<TensorId>> = data_positions(&op.op, op.inputs.len())
            .into_iter()
            .filter_map(|k| op.inputs.get(k))
            .map(|&i| if i < 0 { None } else { Some(id(i as usize)) })
            .collect();
        while expected_inputs.last() == Some(&None) {
            expected_inputs.pop();
        }
        assert_eq!(node.inputs, expected_inputs, "{ctx}: inputs");
        let expected_outputs: Vec<TensorId> = op.outputs.iter().map(|&o| id(o)).collect();
        assert_eq!(node.outputs, expected_outputs, "{ctx}: outputs");
        for t in node.inputs.iter().flatten().chain(node.outputs.iter()) {
            data_tensors.insert(map.iter().position(|m| *m == Some(*t)).unwrap());
        }
        check_attributes(&g, op, node, &ctx);
        let i = op.index;
        assert_eq!(graph.node_macs(i), op.macs, "{ctx}: MACs");
        assert_eq!(node.name, g.tensors[op.outputs[0]].name, "{ctx}: node name = first output's name");
    }

    for t in &g.tensors {
        let ctx = format!("{name}: tensor {} {:?}", t.index, t.name);
        let Some(tid) = map[t.index] else {
            assert!(!data_tensors.contains(&t.index), "{ctx}: a graph edge missing from the graph");
            continue;
        };
        assert!(data_tensors.contains(&t.index), "{ctx}: in the graph but no edge uses it");
        let ours = graph.tensor(tid).unwrap();
        assert_eq!(ours.name, t.name, "{ctx}");
        let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
        assert_eq!(ours.shape, shape, "{ctx}: shape (signature {:?})", t.shape_signature);
        assert_eq!(ours.dtype.name(), t.dtype, "{ctx}: dtype");
        match (&t.quant, &ours.quant) {
            (None, None) => {}
            (Some(gq), Some(q)) => {
                check_digest_f32(&gq.scales, &q.scales, &format!("{ctx}: scales"));
                assert_eq!(gq.zero_points.n, q.zero_points.len(), "{ctx}: zero point count");
                assert_eq!(gq.zero_points.crc32, crc_of(&i32_bytes(&q.zero_points)), "{ctx}: zero points crc32");
                let expected_axis = if gq.scales.n > 1 { Some(gq.quantized_dimension) } else { None };
                assert_eq!(q.axis, expected_axis, "{ctx}: quantized axis");
            }
            (g, o) => panic!("{ctx}: quantization golden {g:?}, ours {o:?}"),
        }
        match (&t.constant, &ours.data) {
            (None, None) => {}
            (Some(c), Some(d)) => {
                let b = d.to_le_bytes();
                assert_eq!(Some(b.len()), c.bytes, "{ctx}: constant bytes");
                assert_eq!(c.n, d.len(), "{ctx}: constant elements");
                assert_eq!(c.crc32, crc_of(&b), "{ctx}: constant crc32");
            }
            (c, d) => panic!("{ctx}: constant golden {:?}, ours {:?}", c.is_some(), d.is_some()),
        }
    }
    assert_eq!(graph.inputs, g.inputs.iter().map(|&i| id(i)).collect::<Vec<_>>(), "{name}: graph inputs");
    assert_eq!(graph.outputs, g.outputs.iter().map(|&i| id(i)).collect::<Vec<_>>(), "{name}: graph outputs");
    graph.validate().unwrap();
    (g, imported)
}

#[test]
fn mlperf_tiny_models_import_as_tflite_sees_them() {
    for name in MLPERF {
        let (g, imported) = check_model(name);
        let graph = &imported.graph;
        let total: u64 = g.ops.iter().map(|o| o.macs).sum();
        assert_eq!(graph.total_macs(), total, "{name}");
        println!(
            "{name}: {} nodes, {} tensors, {} MACs, {} constant bytes",
            graph.nodes.len(),
            graph.tensors.len(),
            total,
            graph.constant_totals().bytes
        );
    }
}

#[test]
fn mlperf_tiny_int8_models_are_fully_int8() {
    for name in MLPERF.iter().filter(|n| n.ends_with("int8")) {
        let g = import(&model_bytes(&golden(name))).unwrap();
        for (i, node) in g.nodes.iter().enumerate() {
            for t in node.inputs.iter().flatten().chain(node.outputs.iter()) {
                let t = g.tensor(*t).unwrap();
                assert!(matches!(t.dtype, DType::I8 | DType::I32), "{name} node {i}: {} tensor {:?}", t.dtype, t.name);
                assert!(t.quant.is_some(), "{name} node {i}: tensor {:?} without quantization", t.name);
            }
        }
    }
}

#[test]
fn the_kws_float_model_has_hybrid_convolutions_that_dequantize_as_tflite_does() {
    let name = "kws_ref_model_float32";
    let (g, mut imported) = check_model(name);
    let expected: Vec<&GTensor> = g.tensors.iter().filter(|t| t.dequantized.is_some()).collect();
    assert_eq!(expected.len(), 5, "the five 2-D convolutions store int8 weights");
    let graph = &mut imported.graph;
    assert_eq!(graph.dequantize_hybrid_weights(), expected.len());
    graph.validate().unwrap();
    for t in &g.tensors {
        if let Some(tid) = imported.tensor_map[t.index] {
            let ours = graph.tensor(tid).unwrap();
            assert!(matches!(ours.dtype, DType::F32 | DType::I32), "{} is {}", t.name, ours.dtype);
        }
    }
    for t in expected {
        let ours = graph.tensor(imported.tensor_map[t.index].unwrap()).unwrap();
        assert!(ours.quant.is_none());
        check_digest_f32(t.dequantized.as_ref().unwrap(), ours.data.as_ref().unwrap().as_f32().unwrap(), &t.name);
    }
    // Nothing left to convert.
    assert_eq!(graph.dequantize_hybrid_weights(), 0);
}

#[test]
fn small_models_cover_every_supported_op_in_float_int8_and_16x8() {
    let mut seen = BTreeSet::new();
    for name in BUILT {
        let (g, imported) = check_model(name);
        for op in &g.ops {
            seen.insert(op.op.clone());
        }
        let dtypes: BTreeSet<&str> = imported.graph.tensors.iter().map(|t| t.dtype.name()).collect();
        println!("{name}: {} nodes, dtypes {dtypes:?}", imported.graph.nodes.len());
    }
    let all = [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "FULLY_CONNECTED",
        "MAX_POOL_2D",
        "AVERAGE_POOL_2D",
        "ADD",
        "SUB",
        "MUL",
        "SOFTMAX",
        "LOGISTIC",
        "TANH",
        "HARD_SWISH",
        "RELU",
        "RELU6",
        "LEAKY_RELU",
        "CONCATENATION",
        "PAD",
        "PADV2",
        "MEAN",
        "RESHAPE",
        "TRANSPOSE",
        "SQUEEZE",
        "QUANTIZE",
        "DEQUANTIZE",
    ];
    let missing: Vec<&str> = all.iter().copied().filter(|o| !seen.contains(*o)).collect();
    assert!(missing.is_empty(), "ops without a test model: {missing:?}");
}

#[test]
fn the_16x8_model_has_int16_activations_int8_weights_int64_biases() {
    let g = import(&model_bytes(&golden("ops_16x8"))).unwrap();
    let conv = g.nodes.iter().find(|n| matches!(n.op, Op::Conv2d(_))).unwrap();
    let dt = |i: usize| g.tensor(conv.input(i).unwrap()).unwrap().dtype;
    assert_eq!((dt(0), dt(1), dt(2)), (DType::I16, DType::I8, DType::I64));
    for t in &g.tensors {
        if t.dtype == DType::I16 {
            assert_eq!(t.quant.as_ref().unwrap().per_tensor_params().unwrap().1, 0, "{}: symmetric int16", t.name);
        }
    }
}

#[test]
fn constants_stored_after_the_flatbuffer_are_read_from_their_offsets() {
    let g = golden("buffer_offset");
    assert!(g.buffers_with_offset > 0, "the test model must keep buffers outside the flatbuffer");
    // check_model compares every constant's CRC with TFLite's, which only holds if the
    // importer read Buffer.offset/size.
    let (_, imported) = check_model("buffer_offset");
    assert!(imported.graph.constant_totals().tensors > 0);
}

#[test]
fn both_operator_code_fields_are_read() {
    // Same model, codes only in `deprecated_builtin_code` / only in `builtin_code`.
    let a = import(&model_bytes(&golden("deprecated_code_only"))).unwrap();
    let b = import(&model_bytes(&golden("builtin_code_only"))).unwrap();
    let c = import(&model_bytes(&golden("ops_int8"))).unwrap();
    let ops = |g: &Graph| g.nodes.iter().map(|n| n.op.clone()).collect::<Vec<_>>();
    assert_eq!(ops(&a), ops(&c));
    assert_eq!(ops(&b), ops(&c));
}

#[test]
fn error_models_give_the_expected_typed_errors() {
    let path = repo().join("tests/golden/tflite_import/errors.json");
    let cases: ErrorFile = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(cases.cases.len() >= 8);
    for case in &cases.cases {
        let bytes = std::fs::read(repo().join(&case.file)).unwrap();
        let e = import(&bytes).expect_err(&case.file);
        let msg = e.to_string();
        println!("{}: {msg}", case.file);
        assert_eq!(format!("{:?}", e.kind()), case.kind, "{}: {msg}", case.file);
        // An error about an operator names it; the others may or may not (a truncated constant
        // is reported with the operator that reads it, if any).
        if case.op_index.is_some() {
            assert_eq!(e.node_index(), case.op_index, "{}: {msg}", case.file);
            assert_eq!(e.op(), case.op.as_deref(), "{}: {msg}", case.file);
        }
        assert!(msg.contains(&case.fragment), "{}: {msg:?} lacks {:?}", case.file, case.fragment);
        if let Some(i) = case.op_index {
            assert!(msg.contains(&format!("operator {i}")), "{msg}");
        }
    }
}

#[test]
fn quantization_errors_name_the_tensor() {
    let bytes = std::fs::read(repo().join("tests/golden/tflite_import/errors/asymmetric_weights.tflite")).unwrap();
    let e = import(&bytes).unwrap_err();
    assert_eq!(e.kind(), ConvertErrorKind::UnsupportedQuantization);
    assert!(e.tensor_name().is_some() && e.tensor_index().is_some(), "{e}");
    assert!(e.to_string().contains("zero point 3"), "{e}");
}

#[test]
fn truncated_files_are_errors_at_every_length() {
    // Every prefix of a small model, and a stride through each MLPerf int8 model.
    let mut cases: Vec<(String, Vec<u8>, usize)> = Vec::new();
    for name in ["ops_int8", "buffer_offset"] {
        cases.push((name.into(), model_bytes(&golden(name)), 1));
    }
    for name in MLPERF.iter().filter(|n| n.ends_with("int8")) {
        cases.push(((*name).into(), model_bytes(&golden(name)), 61));
    }
    for (name, bytes, step) in cases {
        let full = import(&bytes).unwrap();
        let (mut errors, mut ok) = (0usize, 0usize);
        let mut kinds = BTreeSet::new();
        for len in (0..bytes.len()).step_by(step) {
            match import(&bytes[..len]) {
                Err(e) => {
                    errors += 1;
                    kinds.insert(format!("{:?}", e.kind()));
                    if len < 8 {
                        assert_eq!(e.kind(), ConvertErrorKind::Truncated, "{name}[..{len}]: {e}");
                        assert_eq!(e.byte_offset(), Some(len), "{name}[..{len}]: {e}");
                    }
                }
                // Cutting only trailing bytes no table refers to leaves the same model.
                Ok(g) => {
                    let same = g.tensors == full.tensors
                        && g.nodes == full.nodes
                        && g.inputs == full.inputs
                        && g.outputs == full.outputs;
                    assert!(same, "{name}[..{len}] imported to a different graph");
                    ok += 1;
                }
            }
        }
        println!("{name}: {errors} truncations rejected ({kinds:?}), {ok} equal to the full model");
        assert!(errors > 0);
    }
}

#[test]
fn a_wrong_file_identifier_is_rejected() {
    let bytes = model_bytes(&golden("kws_ref_model_int8"));
    for i in 4..8 {
        let mut b = bytes.clone();
        b[i] ^= 0x20;
        let e = import(&b).unwrap_err();
        assert_eq!(e.kind(), ConvertErrorKind::WrongFileIdentifier, "{e}");
        assert_eq!(e.byte_offset(), Some(4));
        assert!(e.to_string().contains("TFL3"), "{e}");
    }
    let e = import(b"definitely not a model").unwrap_err();
    assert_eq!(e.kind(), ConvertErrorKind::WrongFileIdentifier, "{e}");
    let e = import(&[]).unwrap_err();
    assert_eq!(e.kind(), ConvertErrorKind::Truncated, "{e}");
}

#[test]
fn a_root_offset_past_the_end_is_truncation() {
    let mut b = model_bytes(&golden("ops_int8"));
    let len = b.len() as u32;
    b[0..4].copy_from_slice(&(len + 100).to_le_bytes());
    let e = import(&b).unwrap_err();
    assert_eq!(e.kind(), ConvertErrorKind::Truncated, "{e}");
    assert_eq!(e.byte_offset(), Some(0));
}

#[test]
fn random_corruption_never_panics() {
    // Deterministic byte mutations (SplitMix64); any outcome but a panic is acceptable, and an
    // accepted file must give a graph that validates. MQ_FUZZ_ITERS=N runs N mutations per
    // model instead of 1500 (e.g. for a longer local run).
    let iters: usize = std::env::var("MQ_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    for (seed, name) in ["ops_int8", "ops_16x8", "buffer_offset", "kws_ref_model_int8"].iter().enumerate() {
        let bytes = model_bytes(&golden(name));
        let mut rng = SplitMix64::new(0x7f1e_17e0 + seed as u64);
        let (mut ok, mut err) = (0, 0);
        let mut kinds = BTreeSet::new();
        for _ in 0..iters {
            let mut b = bytes.clone();
            let flips = 1 + (rng.next_u64() % 8) as usize;
            for _ in 0..flips {
                let at = 8 + (rng.next_u64() as usize) % (b.len() - 8);
                b[at] = (rng.next_u64() >> 56) as u8;
            }
            match import(&b) {
                Ok(g) => {
                    g.validate().unwrap();
                    let _ = g.to_string();
                    ok += 1;
                }
                Err(e) => {
                    kinds.insert(format!("{:?}", e.kind()));
                    let _ = e.to_string();
                    err += 1;
                }
            }
        }
        println!("corrupted {name}: {ok} still import, {err} rejected ({kinds:?})");
        assert!(err > 0);
    }
}

#[test]
fn graph_display_lists_one_line_per_node() {
    let g = import(&model_bytes(&golden("kws_ref_model_int8"))).unwrap();
    let text = g.to_string();
    let node_lines: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(node_lines.len(), g.nodes.len());
    assert!(
        node_lines[0].starts_with("#0 Conv2d(stride 2x2, dilation 1x1, padding same, relu) t0:i8[1, 49, 10, 1], "),
        "{}",
        node_lines[0]
    );
    assert!(node_lines[9].starts_with("#9 AvgPool2d(filter 25x5, stride 25x5, padding valid)"), "{}", node_lines[9]);
    assert!(text.lines().next().unwrap().contains("13 nodes"));
    // The alternate form adds the tensor table.
    let alt = format!("{g:#}");
    assert!(alt.lines().any(|l| l.starts_with("t0 i8[1, 49, 10, 1] \"input_1\" scale 0.5847029 zp 83")), "{alt}");
}

#[test]
fn constant_data_round_trips_through_bytes() {
    let g = import(&model_bytes(&golden("ops_16x8"))).unwrap();
    let mut n = 0;
    for t in &g.tensors {
        if let Some(d) = &t.data {
            let b = d.to_le_bytes();
            assert_eq!(ConstData::from_le_bytes(d.dtype(), &b).as_ref(), Some(d));
            n += 1;
        }
    }
    assert!(n > 5);
}
