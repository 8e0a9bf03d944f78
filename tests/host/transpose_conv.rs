//! Transposed convolution end to end (tests/golden/transpose_conv/, written by
//! tests/gen/gen_transpose_conv_models.py): ONNX `ConvTranspose` models (ONNX Runtime's outputs),
//! Keras `Conv2DTranspose` converted to TFLite `TRANSPOSE_CONV` (the TFLite interpreter's
//! outputs) and MediaPipe's custom `Convolution2DTransposeBias`. Imported and run in float within
//! 1e-5 of the reference (see [`assert_close`]); quantized (PTQ, int8 per-channel weights) and run by the interpreter
//! with SQNR above 30 dB against the reference; the portable QDQ export reads back.

use microquant::graph::{Graph, Op};
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, Quant};
use microquant::onnx::{QdqExportOptions, export_qdq, export_qdq_portable};
use microquant::ptq::{PtqOptions, convert};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/transpose_conv")
}

#[derive(Deserialize)]
struct Case {
    name: String,
    file: String,
    format: String,
    input: Tensor,
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

/// The model's graph and its input/output layout changes (identity for TFLite).
struct Loaded {
    graph: Graph,
    onnx: Option<microquant::onnx::Imported>,
}

impl Loaded {
    fn to_graph(&self, x: &[f32]) -> Vec<f32> {
        match &self.onnx {
            Some(i) => i.inputs[0].to_graph_layout(x).unwrap(),
            None => x.to_vec(),
        }
    }
    fn to_model(&self, y: &[f32]) -> Vec<f32> {
        match &self.onnx {
            Some(i) => i.outputs[0].to_model_layout(y).unwrap(),
            None => y.to_vec(),
        }
    }
}

fn load(c: &Case) -> Loaded {
    let bytes = std::fs::read(dir().join(&c.file)).unwrap();
    if c.format == "onnx" {
        let i = microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        Loaded { graph: i.graph.clone(), onnx: Some(i) }
    } else {
        Loaded { graph: microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name)), onnx: None }
    }
}

/// Every element within 1e-5 of the reference, relative to itself or, for the elements 100
/// times smaller than the largest (sums that cancel), to a hundredth of the largest: the
/// reference runtimes add in f32 (ONNX Runtime's `ConvTranspose` is a GEMM then col2im), whose
/// rounding at a cancelling sum is about 1e-7 of the largest magnitude; we add in f64 and round
/// once. Returns the worst relative error.
fn assert_close(case: &str, reference: &[f32], ours: &[f32]) -> f64 {
    assert_eq!(reference.len(), ours.len(), "{case}: length");
    let scale = reference.iter().fold(0f64, |m, &v| m.max(f64::from(v).abs()));
    let mut worst = 0f64;
    for (i, (&r, &o)) in reference.iter().zip(ours).enumerate() {
        let e = (f64::from(o) - f64::from(r)).abs() / f64::from(r).abs().max(1e-2 * scale).max(f64::MIN_POSITIVE);
        assert!(e <= 1e-5, "{case}: element {i}: ours {o}, reference {r} (relative {e:.1e})");
        worst = worst.max(e);
    }
    worst
}

fn transpose_convs(g: &Graph) -> usize {
    g.nodes.iter().filter(|n| matches!(n.op, Op::TransposeConv2d(_))).count()
}

#[test]
fn transpose_conv_models_import_and_run_as_their_reference_in_float() {
    let all = cases();
    assert_eq!(all.len(), 17);
    for c in &all {
        let l = load(c);
        let want = if c.name == "onnx_decoder" { 2 } else { 1 };
        assert_eq!(transpose_convs(&l.graph), want, "{}: {}", c.name, l.graph);
        let mut g = l.graph.clone();
        microquant::passes::optimize(&mut g).unwrap();
        let y = microquant::float::FloatExecutor::new(&g).unwrap().run(&[&l.to_graph(&c.input.f32())]).unwrap();
        let y = l.to_model(&y[0]);
        assert_eq!(c.expected.shape.iter().product::<usize>(), y.len(), "{}", c.name);
        let e = assert_close(&c.name, &c.expected.f32(), &y);
        let ops: Vec<String> = g.nodes.iter().map(|n| n.op.to_string()).collect();
        println!("{}: worst relative error {e:.1e}; {ops:?}", c.name);
    }
}

fn sqnr(reference: &[f32], ours: &[f32]) -> f64 {
    let (s, n) = reference
        .iter()
        .zip(ours)
        .fold((0f64, 0f64), |(s, n), (&a, &b)| (s + f64::from(a).powi(2), n + f64::from(a - b).powi(2)));
    10.0 * (s / n.max(1e-30)).log10()
}

#[test]
fn transpose_conv_models_quantize_and_run_int8_close_to_their_reference() {
    for c in cases() {
        let l = load(&c);
        let x = l.to_graph(&c.input.f32());
        // Calibration: the case's input and seeded normal samples like it.
        let mut r = microquant_tests::rng::SplitMix64::new(61);
        let mut u = || ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let mut calib = vec![vec![x.clone()]];
        for _ in 0..15 {
            let s: Vec<f32> = (0..x.len())
                .map(|_| ((-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos()) as f32)
                .collect();
            calib.push(vec![l.to_graph(&s)]);
        }
        let out = convert(&l.graph, &calib, None, &PtqOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let bytes = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u8; out.compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let kinds: Vec<&str> =
            (0..it.model().num_ops() as u32).map(|i| it.model().op(i).unwrap().kind.name()).collect();
        assert!(kinds.contains(&"TRANSPOSE_CONV"), "{}: {kinds:?}", c.name);
        let (iq, oq) = match (it.input_info(0).unwrap().quant, it.output_info(0).unwrap().quant) {
            (Quant::PerTensor { scale: a, zero_point: b }, Quant::PerTensor { scale: s, zero_point: z }) => {
                ((a, b), (s, z))
            }
            _ => panic!("{}: int8 input and output expected", c.name),
        };
        for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&x) {
            *d = ((v / iq.0).round_ties_even() as i32 + iq.1).clamp(-128, 127) as i8;
        }
        it.invoke().unwrap();
        let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| (q as i32 - oq.1) as f32 * oq.0).collect();
        let db = sqnr(&c.expected.f32(), &l.to_model(&y));
        println!("{}: int8 ({kinds:?}) vs reference float: SQNR {db:.1} dB", c.name);
        assert!(db > 30.0, "{}: SQNR {db:.1} dB", c.name);

        // QDQ export: the portable form (ConvTranspose between DequantizeLinear nodes) reads back
        // with its transposed convolutions; the exact form (ConvTranspose of the integers) is
        // written.
        if let Some(i) = &l.onnx {
            let opts = QdqExportOptions {
                opset: 17,
                inputs: i.inputs.clone(),
                outputs: i.outputs.clone(),
                graph_name: c.name.clone(),
            };
            let q = &out.quantized.graph;
            let qdq = export_qdq_portable(q, &opts).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            let back = microquant::onnx::import(&qdq).unwrap_or_else(|e| panic!("{}: QDQ re-import: {e}", c.name));
            assert_eq!(transpose_convs(&back.graph), transpose_convs(q), "{}", c.name);
            // The exact form (ONNX Runtime bit-exact with the .mq: gen_qdq.py's transpose conv
            // export) is written too.
            export_qdq(q, &opts).unwrap_or_else(|e| panic!("{}: exact export: {e}", c.name));
        }
    }
}

/// What the ONNX importer refuses (group 2, dilations 2), with an error naming the node.
#[test]
fn onnx_conv_transpose_limits_are_errors_naming_the_node() {
    for (file, want) in [("onnx_bad_group.onnx", "group 2"), ("onnx_bad_dilation.onnx", "dilations")] {
        let bytes = std::fs::read(dir().join(file)).unwrap();
        let e = microquant::onnx::import(&bytes).expect_err("refused");
        let s = e.to_string();
        assert!(s.contains("deconv") && s.contains(want), "{file}: {s}");
    }
}

/// The whole model in 16x8 (int16 activations, int8 weights, int64 bias): the interpreter runs
/// TRANSPOSE_CONV with its i64 accumulators; the int8 weights bound the SQNR (above 40 dB).
#[test]
fn transpose_conv_models_quantize_16x8_and_run_close_to_their_reference() {
    use microquant::ptq::{ActivationType, QuantizeOptions};
    for c in cases() {
        let l = load(&c);
        let x = l.to_graph(&c.input.f32());
        let options = PtqOptions {
            quantize: QuantizeOptions { activations: ActivationType::Int16, ..Default::default() },
            ..Default::default()
        };
        let out = convert(&l.graph, &[vec![x.clone()]], None, &options, &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let bytes = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u8; out.compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let (is, os) = match (it.input_info(0).unwrap().quant, it.output_info(0).unwrap().quant) {
            (Quant::PerTensor { scale: a, zero_point: 0 }, Quant::PerTensor { scale: s, zero_point: 0 }) => (a, s),
            _ => panic!("{}: int16 input and output expected", c.name),
        };
        for (d, &v) in it.input_bytes(0).unwrap().chunks_exact_mut(2).zip(&x) {
            let q = ((v / is).round_ties_even() as i32).clamp(-32768, 32767) as i16;
            d.copy_from_slice(&q.to_le_bytes());
        }
        it.invoke().unwrap();
        let y: Vec<f32> = it
            .output_bytes(0)
            .unwrap()
            .chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) * os)
            .collect();
        let db = sqnr(&c.expected.f32(), &l.to_model(&y));
        println!("{}: 16x8 vs reference float: SQNR {db:.1} dB", c.name);
        assert!(db > 40.0, "{}: SQNR {db:.1} dB", c.name);
    }
}

/// The int8 and 16x8 TRANSPOSE_CONV models of the kernel goldens (`tests/golden/transpose_conv_models/`,
/// written with `tests/golden/kernels/transpose_conv*.json` by `gen_transpose_conv.py`): imported,
/// compiled to `.mq` and run by the interpreter, bit-exact with TFLite Micro on the same file.
#[test]
fn quantized_tflite_transpose_conv_models_run_bit_exact_with_tflite_micro() {
    use base64::Engine;
    use microquant::compile::{CompileOptions, compile};
    use microquant_tests::kernels::{transpose_conv_16x8_cases, transpose_conv_cases};
    let raw = |t: &Tensor| base64::engine::general_purpose::STANDARD.decode(&t.b64).unwrap();
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/transpose_conv_models");
    let mut run = 0;
    for c in transpose_conv_cases().into_iter().chain(transpose_conv_16x8_cases()) {
        let Ok(bytes) = std::fs::read(models.join(format!("{}.tflite", c.name))) else { continue };
        let g = microquant::tflite::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(transpose_convs(&g), 1, "{}", c.name);
        let compiled = compile(&g, &CompileOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let bytes = AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        it.input_bytes(0).unwrap().copy_from_slice(&raw(&c.input));
        it.invoke().unwrap();
        assert_eq!(it.output_bytes(0).unwrap(), &raw(&c.expected_tflm)[..], "{}: .mq vs TFLite Micro", c.name);
        run += 1;
    }
    assert_eq!(run, 55, "models found");
}

/// A one-op `.mq` TRANSPOSE_CONV: input `[1, 2, 2, 1]`, a 2x2 filter of ones, stride 2, output
/// `[1, 4, 4, 1]` (each input value copied to its 2x2 block), multiplier 1.0; `words` and the
/// scratch length as given.
fn tconv_mq(words: [u32; 10], scratch_len: u32) -> Vec<u8> {
    use microquant::model::{ElementType, ModelBuilder, OpKind, OpSpec, TensorSpec};
    let mut b = ModelBuilder::new();
    let x = b.add_tensor(TensorSpec::activation("x", ElementType::I8, &[1, 2, 2, 1]).per_tensor(0.5, 0));
    let w = b.add_tensor(TensorSpec::const_i8("w", &[1, 2, 2, 1], &[1; 4]).per_channel(vec![1.0], vec![0], 0));
    let m = b.add_tensor(TensorSpec::const_i32("m", &[1], &[1 << 30]));
    let s = b.add_tensor(TensorSpec::const_i32("s", &[1], &[1]));
    let y = b.add_tensor(TensorSpec::activation("y", ElementType::I8, &[1, 4, 4, 1]).per_tensor(0.5, 0));
    b.add_op(OpSpec {
        kind: OpKind::TransposeConv,
        name: "deconv".into(),
        inputs: vec![Some(x), Some(w), None, Some(m), Some(s)],
        outputs: vec![y],
        params: words.to_vec(),
        in_place: false,
        scratch_len,
    });
    b.set_io(&[x], &[y]);
    b.set_arena_offsets(&[(x, 0), (y, 16)], 112);
    b.set_scratch_offset(0, 32);
    b.finish().unwrap()
}

/// The interpreter checks a TRANSPOSE_CONV at load (scratch, words against the tensors) and runs
/// a good one.
#[test]
fn mq_transpose_conv_is_checked_at_load_and_runs() {
    let act = [(-128i32) as u32, 127];
    let good = [2, 2, 0, 0, 4, 4, 0, 0, act[0], act[1]];
    let bytes = AlignedBytes::new(&tconv_mq(good, 4 * 16 + 3));
    let mut arena = vec![0u8; 128];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    it.input_i8(0).unwrap().copy_from_slice(&[1, 2, 3, 4]);
    it.invoke().unwrap();
    let want = [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4];
    assert_eq!(it.output_i8(0).unwrap(), &want);

    let bad = |words: [u32; 10], scratch: u32, why: &str| {
        let bytes = AlignedBytes::new(&tconv_mq(words, scratch));
        let mut arena = vec![0u8; 128];
        match Interpreter::new(&bytes, &mut arena) {
            Err(microquant::Error::BadOp { index: 0, reason }) => assert!(reason.contains(why), "{reason}"),
            other => panic!("{why}: expected BadOp, got {:?}", other.err()),
        }
    };
    bad(good, 4 * 16 + 2, "scratch");
    bad([2, 2, 0, 0, 4, 5, 0, 0, act[0], act[1]], 67, "output shape");
    bad([0, 2, 0, 0, 4, 4, 0, 0, act[0], act[1]], 67, "strides");
    bad([2, 2, 0, 0, 4, 4, 0, 0, 1, 0], 67, "clamp");
}
