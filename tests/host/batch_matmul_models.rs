//! MatMul of two activations end to end (tests/golden/batch_matmul/, written by
//! tests/gen/gen_batch_matmul_models.py): ONNX attention blocks (single head, and four heads in
//! rank 4 as PyTorch's nn.MultiheadAttention exports them: Q·Kᵀ through a Transpose, Softmax, ·V),
//! two-input MatMuls with broadcast batch dimensions and a transposed operand, run by ONNX Runtime;
//! TFLite float models with BATCH_MATMUL (adj_y, and an attention), run by the TFLite interpreter.
//! Each imports into `Op::BatchMatMul`, runs in float within 1e-5 of its runtime (relative to the
//! output's largest magnitude), quantizes through PTQ to int8 (BATCH_MATMUL ops in the `.mq`) and
//! runs on the interpreter with an SQNR above 25 dB against the runtime's float output.

use microquant::compile::{CompileOptions, compile};
use microquant::float::FloatExecutor;
use microquant::graph::{Graph, Op};
use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::ptq::*;
use microquant_tests::golden::Tensor;
use serde::Deserialize;

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/batch_matmul")
}

#[derive(Deserialize)]
struct Case {
    name: String,
    file: String,
    format: String,
    inputs: Vec<Tensor>,
    expected: Tensor,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Case>,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(dir().join("cases.json")).unwrap();
    serde_json::from_str::<File>(&text).unwrap().models
}

use microquant::onnx::IoInfo;

/// The output back in the model's layout.
type ToModel = Box<dyn Fn(&[f32]) -> Vec<f32>>;

/// The graph and the inputs in its layout; the output back in the model's layout.
struct Loaded {
    graph: Graph,
    /// The ONNX importer's input and output layouts (none for TFLite).
    io: Option<(Vec<IoInfo>, Vec<IoInfo>)>,
    inputs: Vec<Vec<f32>>,
    to_model: ToModel,
}

fn load(c: &Case) -> Loaded {
    let bytes = std::fs::read(dir().join(&c.file)).unwrap();
    let xs: Vec<Vec<f32>> = c.inputs.iter().map(Tensor::f32).collect();
    if c.format == "onnx" {
        let imported = microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let inputs = xs.iter().zip(&imported.inputs).map(|(x, info)| info.to_graph_layout(x).unwrap()).collect();
        let out = imported.outputs[0].clone();
        Loaded {
            graph: imported.graph,
            io: Some((imported.inputs.clone(), imported.outputs.clone())),
            inputs,
            to_model: Box::new(move |y| out.to_model_layout(y).unwrap()),
        }
    } else {
        let graph = microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        Loaded { graph, io: None, inputs: xs, to_model: Box::new(|y| y.to_vec()) }
    }
}

/// `|ours - ref| <= 1e-5 · max|ref|` element by element (the runtimes accumulate in f32, we in
/// f64: where a dot product cancels to near zero, the error relative to that element is larger,
/// relative to the tensor it is not); returns the worst error relative to `max|ref|`.
fn assert_close_to_scale(case: &str, reference: &[f32], ours: &[f32]) -> f64 {
    assert_eq!(reference.len(), ours.len(), "{case}: length");
    let scale = reference.iter().fold(0f64, |m, &v| m.max(f64::from(v).abs())).max(f64::MIN_POSITIVE);
    let worst =
        reference.iter().zip(ours).map(|(&r, &o)| (f64::from(o) - f64::from(r)).abs() / scale).fold(0f64, f64::max);
    assert!(worst <= 1e-5, "{case}: error {worst:e} of max |reference| {scale}");
    worst
}

/// Runs a `.mq` on float inputs (int8, quantized with the input's parameters); the dequantized
/// output (int8 or int16) and the op kinds.
fn run_int8(name: &str, model: &[u8], arena_len: usize, inputs: &[Vec<f32>]) -> (Vec<f32>, Vec<&'static str>) {
    let bytes = AlignedBytes::new(model);
    let mut arena = vec![0u8; arena_len + 16];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap_or_else(|e| panic!("{name}: {e}"));
    let kinds = (0..it.model().num_ops() as u32).map(|i| it.model().op(i).unwrap().kind.name()).collect();
    for (k, x) in inputs.iter().enumerate() {
        let (s, z) = it.input_info(k).unwrap().per_tensor().unwrap();
        for (d, &v) in it.input_i8(k).unwrap().iter_mut().zip(x) {
            *d = ((v / s).round_ties_even() as i32 + z).clamp(-128, 127) as i8;
        }
    }
    it.invoke().unwrap();
    let info = it.output_info(0).unwrap();
    let (os, oz) = info.per_tensor().unwrap();
    let values: Vec<i32> = if info.dtype == microquant::model::ElementType::I16 {
        it.output_bytes(0).unwrap().chunks_exact(2).map(|b| i32::from(i16::from_le_bytes([b[0], b[1]]))).collect()
    } else {
        it.output_i8(0).unwrap().iter().map(|&q| i32::from(q)).collect()
    };
    (values.iter().map(|&q| (q - oz) as f32 * os).collect(), kinds)
}

fn batch_matmuls(g: &Graph) -> Vec<(bool, bool)> {
    g.nodes
        .iter()
        .filter_map(|n| match n.op {
            Op::BatchMatMul { adj_x, adj_y } => Some((adj_x, adj_y)),
            _ => None,
        })
        .collect()
}

#[test]
fn two_activation_matmuls_import_and_run_as_their_runtimes() {
    let all = cases();
    assert_eq!(all.len(), 6);
    for c in &all {
        let l = load(c);
        let mut g = l.graph.clone();
        let bmm = batch_matmuls(&g);
        let want = match c.name.as_str() {
            // Q·Kᵀ reads K in place (adj_y) instead of transposing it; attn·V as it is.
            "attn_single_head" => vec![(false, true), (false, false)],
            "matmul_transposed" | "tfl_bmm_adj_y" => vec![(false, true)],
            "tfl_attention" => vec![(false, true), (false, false)],
            // K's heads as [0, 2, 3, 1] is not a swap of the last two axes: transposed.
            "attn_multi_head" => vec![(false, false), (false, false)],
            "matmul_broadcast" => vec![(false, false)],
            other => panic!("unexpected model {other}"),
        };
        assert_eq!(bmm, want, "{}", c.name);
        assert!(!bmm.is_empty(), "{}: no BatchMatMul", c.name);
        microquant::passes::optimize(&mut g).unwrap();
        let refs: Vec<&[f32]> = l.inputs.iter().map(Vec::as_slice).collect();
        let y = FloatExecutor::new(&g).unwrap().run(&refs).unwrap();
        let y = (l.to_model)(&y[0]);
        let e = assert_close_to_scale(&c.name, &c.expected.f32(), &y);
        println!("{}: {} nodes, BatchMatMul {bmm:?}, worst error / max |reference| {e:.1e}", c.name, g.nodes.len());
    }
}

#[test]
fn two_activation_matmuls_quantize_and_run_int8_close_to_their_runtimes() {
    for c in cases() {
        let l = load(&c);
        let mut g = l.graph.clone();
        prepare(&mut g).unwrap();
        let mut cal = Calibrator::new(&g, &CalibrationOptions::default()).unwrap();
        cal.calibrate(std::slice::from_ref(&l.inputs), &mut |_| {}).unwrap();
        let q = quantize(&cal, &QuantizeOptions::default()).unwrap();
        let compiled = compile(&q.graph, &CompileOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let (ours, kinds) = run_int8(&c.name, &compiled.bytes, compiled.arena_len, &l.inputs);
        assert!(kinds.contains(&"BATCH_MATMUL"), "{}: {kinds:?}", c.name);
        let ours = (l.to_model)(&ours);
        let reference = c.expected.f32();
        assert_eq!(ours.len(), reference.len(), "{}", c.name);
        let (mut signal, mut noise) = (0f64, 0f64);
        for (&a, &b) in reference.iter().zip(&ours) {
            signal += f64::from(a) * f64::from(a);
            noise += f64::from(a - b) * f64::from(a - b);
        }
        let sqnr = 10.0 * (signal / noise.max(1e-30)).log10();
        println!("{}: int8 ({} ops: {kinds:?}) vs float: SQNR {sqnr:.1} dB", c.name, kinds.len());
        assert!(sqnr > 25.0, "{}: SQNR {sqnr:.1} dB", c.name);
    }
}

/// The quantized ONNX models written as plain QDQ ONNX (`export_qdq_portable`: MatMul between
/// QDQ pairs, a Transpose for an adjoint operand) read back into BatchMatMul nodes, and the `.mq`
/// converted from that file computes what the `.mq` converted from the float model computes
/// (not always the same integers: the importer does not carry the parameters of a graph output,
/// of any op, nor of a rank-4 MatMul output the exporter wrote in NCHW before a Transpose, so
/// those are calibrated again on the dequantized weights).
#[test]
fn quantized_matmuls_export_as_qdq_and_read_back() {
    for c in cases().into_iter().filter(|c| c.format == "onnx") {
        let l = load(&c);
        let samples = [l.inputs.clone()];
        let out = convert(&l.graph, &samples, None, &PtqOptions::default(), &mut |_| {}).unwrap();
        let (inputs, outputs) = l.io.clone().unwrap();
        let opts = microquant::onnx::QdqExportOptions { inputs, outputs, ..Default::default() };
        let qdq = microquant::onnx::export_qdq_portable(&out.quantized.graph, &opts).unwrap();
        let back = microquant::onnx::import(&qdq).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(batch_matmuls(&back.graph).len(), batch_matmuls(&l.graph).len(), "{}", c.name);
        let xs: Vec<Vec<f32>> = c.inputs.iter().map(Tensor::f32).collect();
        let back_inputs: Vec<Vec<f32>> =
            xs.iter().zip(&back.inputs).map(|(x, info)| info.to_graph_layout(x).unwrap()).collect();
        let again = convert(&back.graph, std::slice::from_ref(&back_inputs), None, &PtqOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let (a, _) = run_int8(&c.name, &out.compiled.bytes, out.compiled.arena_len, &l.inputs);
        let (b, kinds) = run_int8(&c.name, &again.compiled.bytes, again.compiled.arena_len, &back_inputs);
        assert!(kinds.contains(&"BATCH_MATMUL"), "{}: {kinds:?}", c.name);
        let b = back.outputs[0].to_model_layout(&b).unwrap();
        let a = (l.to_model)(&a);
        let (mut signal, mut noise) = (0f64, 0f64);
        for (&x, &y) in a.iter().zip(&b) {
            signal += f64::from(x) * f64::from(x);
            noise += f64::from(x - y) * f64::from(x - y);
        }
        let sqnr = 10.0 * (signal / noise.max(1e-30)).log10();
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        println!(
            "{}: QDQ ONNX ({} bytes) read back, {} ops, {same}/{} outputs equal, SQNR {sqnr:.1} dB against the first .mq",
            c.name,
            qdq.len(),
            kinds.len(),
            a.len()
        );
        assert!(sqnr > 35.0, "{}: the re-imported QDQ model: SQNR {sqnr:.1} dB", c.name);
    }
}

/// The two matmuls of the single-head attention as 16x16 layers (`QuantizeOptions::int16_layers`:
/// int16 operands and output, zero points 0, the int16 BATCH_MATMUL kernel), the rest int8.
#[test]
fn attention_matmuls_run_as_int16_layers() {
    let c = cases().into_iter().find(|c| c.name == "attn_single_head").unwrap();
    let l = load(&c);
    let options = PtqOptions {
        quantize: QuantizeOptions { int16_layers: vec!["s".into(), "y".into()], ..Default::default() },
        ..Default::default()
    };
    let out = convert(&l.graph, std::slice::from_ref(&l.inputs), None, &options, &mut |_| {}).unwrap();
    let g = &out.quantized.graph;
    let int16 = g
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::BatchMatMul { .. }))
        .filter(|n| g.tensor(n.output(0).unwrap()).unwrap().dtype == microquant::graph::DType::I16)
        .count();
    assert_eq!(int16, 2, "{g}");
    let (ours, kinds) = run_int8(&c.name, &out.compiled.bytes, out.compiled.arena_len, &l.inputs);
    let ours = (l.to_model)(&ours);
    let reference = c.expected.f32();
    let (mut signal, mut noise) = (0f64, 0f64);
    for (&a, &b) in reference.iter().zip(&ours) {
        signal += f64::from(a) * f64::from(a);
        noise += f64::from(a - b) * f64::from(a - b);
    }
    let sqnr = 10.0 * (signal / noise.max(1e-30)).log10();
    println!("{}: matmuls in 16x16 ({} ops: {kinds:?}): SQNR {sqnr:.1} dB", c.name, kinds.len());
    assert!(sqnr > 25.0, "{}: SQNR {sqnr:.1} dB", c.name);
}

#[derive(Deserialize)]
struct ExactCase {
    name: String,
    ort: Tensor,
}

#[derive(Deserialize)]
struct ExactFile {
    models: Vec<ExactCase>,
}

/// The quantized ONNX models in the exact QDQ form (`export_qdq`: the integer matmul in double,
/// TFLite's requantization) are the committed `<name>.qdq.onnx` (`MQ_BLESS=1` rewrites them),
/// and ONNX Runtime's outputs on them (`qdq_exact.json`, written by
/// `gen_batch_matmul_models.py qdq`, graph optimizations on and off) equal the `.mq`'s, bit for bit.
#[test]
fn exact_qdq_export_runs_bit_exact_in_onnx_runtime() {
    let bless = std::env::var_os("MQ_BLESS").is_some();
    let expected: Vec<ExactCase> = if bless {
        Vec::new() // rewriting the exports: ONNX Runtime's outputs on them come after
    } else {
        let text = std::fs::read_to_string(dir().join("qdq_exact.json")).unwrap();
        serde_json::from_str::<ExactFile>(&text).unwrap().models
    };
    let mut checked = 0;
    for c in cases().into_iter().filter(|c| c.format == "onnx") {
        let l = load(&c);
        let out =
            convert(&l.graph, std::slice::from_ref(&l.inputs), None, &PtqOptions::default(), &mut |_| {}).unwrap();
        let (inputs, outputs) = l.io.clone().unwrap();
        let opts =
            microquant::onnx::QdqExportOptions { inputs, outputs, graph_name: c.name.clone(), ..Default::default() };
        let qdq = microquant::onnx::export_qdq(&out.quantized.graph, &opts).unwrap();
        let path = dir().join(format!("{}.qdq.onnx", c.name));
        if bless {
            std::fs::write(&path, &qdq).unwrap();
            continue;
        }
        assert!(
            std::fs::read(&path).unwrap() == qdq,
            "{}: the exact QDQ export differs from the committed one",
            c.name
        );
        let (ours, _) = run_int8(&c.name, &out.compiled.bytes, out.compiled.arena_len, &l.inputs);
        let ours = (l.to_model)(&ours);
        let e = expected.iter().find(|e| e.name == c.name).unwrap_or_else(|| panic!("{}: no ORT output", c.name));
        assert_eq!(e.ort.f32(), ours, "{}: ONNX Runtime on the exact QDQ export vs the .mq", c.name);
        println!(
            "{}: exact QDQ export ({} bytes): ONNX Runtime = .mq on all {} outputs",
            c.name,
            qdq.len(),
            ours.len()
        );
        checked += 1;
    }
    assert!(bless || checked == 4, "{checked} models checked");
}
