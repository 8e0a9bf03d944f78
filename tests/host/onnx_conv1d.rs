//! ONNX `Conv` over `[N, C, W]` (PyTorch's Conv1d; the STFT front end of audio models) imported as
//! a 2-D convolution over `[N, 1, W, C]` between two reshapes (no transpose): strides,
//! dilations, explicit pads, `auto_pad` SAME_UPPER, depthwise, two layers with a ReLU. Float
//! execution against ONNX Runtime (`tests/golden/onnx_conv1d/`, written by
//! `tests/gen/gen_onnx_conv1d.py`) within 1e-5 of the largest output, then quantized on the 8
//! samples and run by the int8 interpreter: SQNR against ONNX Runtime at least 30 dB.

use microquant::float::FloatExecutor;
use microquant::graph::Op;
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, Quant};
use microquant::ptq::{PtqOptions, convert};
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Model {
    name: String,
    file: String,
    inputs: Tensor,
    outputs: Tensor,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Model>,
}

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/onnx_conv1d")
}

#[test]
fn onnx_conv1d_runs_as_onnx_runtime_in_float_and_int8() {
    let file: File = serde_json::from_str(&std::fs::read_to_string(dir().join("conv1d.json")).unwrap()).unwrap();
    assert_eq!(file.models.len(), 6);
    for m in &file.models {
        let bytes = std::fs::read(dir().join(&m.file)).unwrap();
        let imported = microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let g = &imported.graph;
        assert!(g.nodes.iter().any(|n| matches!(n.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_))), "{}", m.name);
        assert!(!g.nodes.iter().any(|n| matches!(n.op, Op::Transpose { .. })), "{}: a transpose", m.name);
        let (xin, yin) = (&imported.inputs[0], &imported.outputs[0]);
        let (xs, ys) = (m.inputs.f32(), m.outputs.f32());
        let n = m.inputs.shape[0];
        let (per_x, per_y) = (xs.len() / n, ys.len() / n);
        let samples: Vec<Vec<Vec<f32>>> = xs.chunks(per_x).map(|s| vec![xin.to_graph_layout(s).unwrap()]).collect();
        // Float.
        let ex = FloatExecutor::new(g).unwrap();
        let peak = ys.iter().fold(0f32, |a, v| a.max(v.abs()));
        for (s, want) in samples.iter().zip(ys.chunks(per_y)) {
            let refs: Vec<&[f32]> = s.iter().map(|v| v.as_slice()).collect();
            let got = yin.to_model_layout(&ex.run(&refs).unwrap()[0]).unwrap();
            let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(worst <= 1e-5 * peak.max(1.0), "{}: float max |diff| {worst}", m.name);
        }
        // int8.
        let out = convert(g, &samples, None, &PtqOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let model = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u8; out.compiled.arena_len + 16];
        let mut it = Interpreter::new(&model, &mut arena).unwrap();
        let q = |info: microquant::model::TensorInfo| match info.quant {
            Quant::PerTensor { scale, zero_point } => (scale, zero_point),
            _ => panic!("not per tensor"),
        };
        let ((xs_, xz), (ys_, yz)) = (q(it.input_info(0).unwrap()), q(it.output_info(0).unwrap()));
        let (mut sig, mut noise) = (0f64, 0f64);
        for (s, want) in samples.iter().zip(ys.chunks(per_y)) {
            let x: Vec<i8> = s[0].iter().map(|&v| ((v / xs_).round() as i32 + xz).clamp(-128, 127) as i8).collect();
            it.input_i8(0).unwrap().copy_from_slice(&x);
            it.invoke().unwrap();
            let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&v| (i32::from(v) - yz) as f32 * ys_).collect();
            let got = yin.to_model_layout(&y).unwrap();
            for (a, b) in got.iter().zip(want) {
                sig += f64::from(*b).powi(2);
                noise += f64::from(a - b).powi(2);
            }
        }
        let sqnr = 10.0 * (sig / noise.max(1e-30)).log10();
        println!("{}: int8 SQNR {sqnr:.1} dB against ONNX Runtime", m.name);
        assert!(sqnr >= 30.0, "{}: int8 SQNR {sqnr:.1} dB", m.name);
    }
}
