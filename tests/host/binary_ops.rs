//! The two-input elementwise ops end to end against ONNX Runtime: the models of
//! `tests/golden/onnx/binary_models.json` (`tests/gen/gen_onnx_binary.py`: Sub of two computed
//! activations, Min / Max of two and three operands, a per-channel NCHW constant, a constant
//! minus an activation; PRelu with a per-channel `[C, 1, 1]` and a shared slope; Div of two activations and
//! of a constant by an activation) are imported and run by the float executor (ONNX Runtime's outputs within
//! 1e-5 of the output's largest magnitude), then quantized (calibrated on 64 standard-normal samples), compiled
//! to `.mq` (SUB, MINIMUM, MAXIMUM, PRELU, DIV ops) and run by the int8 interpreter on the golden inputs,
//! whose dequantized outputs are compared with ONNX Runtime's float outputs.

use crate::onnx_golden;

use microquant::float::FloatExecutor;
use microquant::interp::Interpreter;
use microquant::model::{OpKind, Quant};
use microquant::ptq::{PtqOptions, convert};
use serde::Deserialize;

#[derive(Deserialize)]
struct Models {
    models: Vec<onnx_golden::Model>,
}

fn binary_models() -> Vec<onnx_golden::Model> {
    let text = std::fs::read_to_string(onnx_golden::golden_dir().join("binary_models.json")).unwrap();
    serde_json::from_str::<Models>(&text).unwrap().models
}

fn normal_samples(lens: &[usize], seed: u64, n: usize) -> Vec<Vec<Vec<f32>>> {
    let mut r = microquant_tests::rng::SplitMix64::new(seed);
    let mut u = || ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            lens.iter()
                .map(|&len| {
                    (0..len)
                        .map(|_| ((-2.0 * u().ln()).sqrt() * (2.0 * std::f64::consts::PI * u()).cos()) as f32)
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn per_tensor(q: Quant) -> (f32, i32) {
    match q {
        Quant::PerTensor { scale, zero_point } => (scale, zero_point),
        other => panic!("not per tensor: {other:?}"),
    }
}

#[test]
fn binary_op_models_quantize_and_match_onnx_runtime() {
    let models = binary_models();
    assert!(!models.is_empty());
    for m in &models {
        let imported = m.import();
        let g = &imported.graph;
        // Float: the executor against ONNX Runtime.
        let ex = FloatExecutor::new(g).unwrap();
        for (s, sample) in m.samples.iter().enumerate() {
            let ins: Vec<Vec<f32>> =
                sample.inputs.iter().zip(&imported.inputs).map(|(t, i)| i.to_graph_layout(&t.f32()).unwrap()).collect();
            let refs: Vec<&[f32]> = ins.iter().map(|v| v.as_slice()).collect();
            let outs = ex.run(&refs).unwrap();
            let ours = imported.outputs[0].to_model_layout(&outs[0]).unwrap();
            // A difference (`1 - m`) cancels: the conv's float rounding (summation order) is held
            // to 1e-5 of the tensor's largest magnitude rather than of each element.
            let want = sample.outputs[0].f32();
            let top = want.iter().fold(0f32, |a, &v| a.max(v.abs()));
            for (i, (&o, &r)) in ours.iter().zip(&want).enumerate() {
                assert!((o - r).abs() <= 1e-5 * top.max(r.abs()), "{} sample {s} [{i}]: {o} vs {r}", m.name);
            }
        }
        // Quantized: SUB, MINIMUM and MAXIMUM in the .mq, int8 outputs near ONNX Runtime's.
        let lens: Vec<usize> = g.inputs.iter().map(|&i| g.tensor(i).unwrap().num_elements().unwrap()).collect();
        let calib = normal_samples(&lens, 11, 64);
        let out =
            convert(g, &calib, None, &PtqOptions::default(), &mut |_| {}).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let bytes = &out.compiled.bytes;
        let mut arena = vec![0u8; out.compiled.arena_len];
        let mut it = Interpreter::new(bytes, &mut arena).unwrap();
        let kinds: Vec<OpKind> = (0..it.model().num_ops()).map(|i| it.model().op(i as u32).unwrap().kind).collect();
        for (onnx_op, k) in [
            ("Sub", OpKind::Sub),
            ("Min", OpKind::Minimum),
            ("Max", OpKind::Maximum),
            ("PRelu", OpKind::Prelu),
            ("Div", OpKind::Div),
        ] {
            if m.ops.iter().any(|o| o == onnx_op) {
                assert!(kinds.contains(&k), "{}: no {} in {kinds:?}", m.name, k.name());
            }
        }
        let (mut signal, mut noise, mut worst_steps) = (0f64, 0f64, 0f64);
        for sample in &m.samples {
            for (k, (t, info)) in sample.inputs.iter().zip(&imported.inputs).enumerate() {
                let x = info.to_graph_layout(&t.f32()).unwrap();
                let (s, z) = per_tensor(it.input_info(k).unwrap().quant);
                for (q, &v) in it.input_i8(k).unwrap().iter_mut().zip(&x) {
                    *q = ((v / s).round() as i32 + z).clamp(-128, 127) as i8;
                }
            }
            it.invoke().unwrap();
            let (s, z) = per_tensor(it.output_info(0).unwrap().quant);
            let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| (q as i32 - z) as f32 * s).collect();
            let ours = imported.outputs[0].to_model_layout(&y).unwrap();
            for (&o, &r) in ours.iter().zip(&sample.outputs[0].f32()) {
                signal += f64::from(r) * f64::from(r);
                noise += f64::from(o - r) * f64::from(o - r);
                worst_steps = worst_steps.max(f64::from((o - r).abs() / s));
            }
        }
        let sqnr = 10.0 * (signal / noise.max(1e-30)).log10();
        println!("{}: int8 vs ONNX Runtime: SQNR {sqnr:.1} dB, worst {worst_steps:.1} output steps", m.name);
        assert!(sqnr >= 25.0, "{}: SQNR {sqnr:.1} dB", m.name);
    }
}

#[derive(Deserialize)]
struct TfliteCase {
    name: String,
    model: microquant_tests::golden::Tensor,
    inputs: Vec<microquant_tests::golden::Tensor>,
    expected_tflm: microquant_tests::golden::Tensor,
}

#[derive(Deserialize)]
struct TfliteCases {
    models: Vec<TfliteCase>,
}

/// Quantized TFLite models with one SUB / MINIMUM / MAXIMUM / PRELU / DIV / SQUARED_DIFFERENCE (int8 and
/// int16, written by
/// `tests/gen/kernels/gen_binary.py models`): imported, compiled and run by the interpreter,
/// bit-exact with TFLite Micro's outputs.
#[test]
fn tflite_binary_op_models_run_bit_exact_with_tflite_micro() {
    let path = onnx_golden::repo_dir().join("tests/golden/tflite_import/binary_ops.json");
    let cases: TfliteCases = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(cases.models.len(), 8);
    for c in &cases.models {
        let g = microquant::tflite::import(&c.model.u8()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let op = g.nodes[0].op.name();
        assert!(["Sub", "Minimum", "Maximum", "Prelu", "Div", "SquaredDifference"].contains(&op), "{}: {op}", c.name);
        let compiled = microquant::compile::compile(&g, &Default::default()).unwrap();
        let bytes = microquant::model::AlignedBytes::new(&compiled.bytes);
        let mut arena = vec![0u8; compiled.arena_len];
        let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
        for (k, x) in c.inputs.iter().enumerate() {
            let raw: Vec<u8> = if x.dtype == "int8" {
                x.i8().iter().map(|&v| v as u8).collect()
            } else {
                x.i16().iter().flat_map(|v| v.to_le_bytes()).collect()
            };
            it.input_bytes(k).unwrap().copy_from_slice(&raw);
        }
        it.invoke().unwrap();
        let out = it.output_bytes(0).unwrap();
        let n = if c.expected_tflm.dtype == "int8" {
            let got: Vec<i8> = out.iter().map(|&b| b as i8).collect();
            microquant_tests::golden::assert_bit_exact(&c.name, &c.expected_tflm.i8(), &got)
        } else {
            let got: Vec<i16> = out.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
            microquant_tests::golden::assert_bit_exact(&c.name, &c.expected_tflm.i16(), &got)
        };
        println!("{}: {op}, {n} elements bit-exact", c.name);
    }
}
