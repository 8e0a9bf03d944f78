//! ONNX `LSTM` (forward; layout 0 and 1; with and without `B`, `initial_h` / `initial_c` as
//! constants and as graph inputs; `Y_h` of a one-step sequence) imported into [`Op::Lstm`] and run
//! by the float executor, against ONNX Runtime (layout 0) and the onnx reference evaluator
//! (layout 1, which ONNX Runtime's CPU LSTM refuses): `tests/golden/onnx_recurrent/`, written by
//! `tests/gen/gen_onnx_recurrent.py`. Tolerance: 2e-6 absolute on outputs in (-1, 1) (the
//! executor sums in f64, ONNX Runtime in f32), after the optimization passes too.

use microquant::float::FloatExecutor;
use microquant::graph::Op;
use microquant_tests::golden::Tensor;
use serde::Deserialize;

#[derive(Deserialize)]
struct Model {
    name: String,
    file: String,
    oracle: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Model>,
}

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/onnx_recurrent")
}

const TOLERANCE: f32 = 2e-6;

#[test]
fn onnx_lstm_float_execution_matches_onnx_runtime() {
    let file: File = serde_json::from_str(&std::fs::read_to_string(dir().join("recurrent.json")).unwrap()).unwrap();
    assert_eq!(file.models.len(), 8);
    for m in &file.models {
        let bytes = std::fs::read(dir().join(&m.file)).unwrap();
        let mut imported = microquant::onnx::import(&bytes).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        assert!(imported.graph.nodes.iter().any(|n| matches!(n.op, Op::Lstm(_))), "{}", m.name);
        for optimized in [false, true] {
            if optimized {
                microquant::passes::optimize(&mut imported.graph).unwrap_or_else(|e| panic!("{}: {e}", m.name));
            }
            let ex = FloatExecutor::new(&imported.graph).unwrap_or_else(|e| panic!("{}: {e}", m.name));
            let inputs: Vec<Vec<f32>> = m
                .inputs
                .iter()
                .zip(&imported.inputs)
                .map(|(t, info)| info.to_graph_layout(&t.f32()).unwrap())
                .collect();
            let refs: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
            let outs = ex.run(&refs).unwrap_or_else(|e| panic!("{}: {e}", m.name));
            assert_eq!(outs.len(), m.outputs.len(), "{}", m.name);
            for ((o, expected), info) in outs.iter().zip(&m.outputs).zip(&imported.outputs) {
                assert_eq!(expected.shape, info.model_shape, "{}: {}", m.name, info.name);
                let ours = info.to_model_layout(o).unwrap();
                let worst = expected.f32().iter().zip(&ours).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(
                    worst <= TOLERANCE,
                    "{} ({}, optimized {optimized}) {}: max |diff| {worst}",
                    m.name,
                    m.oracle,
                    info.name
                );
            }
        }
    }
}

#[test]
fn unsupported_lstm_forms_are_named() {
    for (tag, needle) in [("bidirectional", "direction"), ("clip", "clip"), ("yc_used", "Y_c")] {
        let bytes = std::fs::read(dir().join("errors").join(format!("lstm_{tag}.onnx"))).unwrap();
        let e = microquant::onnx::import(&bytes).err().unwrap_or_else(|| panic!("{tag} imported"));
        assert!(e.to_string().contains(needle), "{tag}: {e}");
    }
}
