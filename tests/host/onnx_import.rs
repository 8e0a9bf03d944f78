//! The ONNX importer against ONNX Runtime: every model of `tests/golden/onnx/float_models.json`
//! (PyTorch exports at opsets 11, 13, 17, 21, onnx.helper models at the same opsets, skl2onnx
//! MLPs; written by `tests/gen/gen_onnx_float.py`) is imported, run by the float executor and
//! compared with ONNX Runtime's outputs on 3 seeded inputs, before and after the graph passes,
//! with the tolerance rule of `onnx_golden::assert_close` (1e-5 relative). Then the models the
//! importer must reject, and truncated / corrupted bytes (no panic).

use crate::onnx_golden;

use microquant::float::FloatExecutor;
use microquant::graph::{ConvertErrorKind, Graph, Op};
use microquant::onnx::{ImportOptions, Imported};
use onnx_golden::{assert_close, float_models, golden_dir};

/// Runs `graph` on every sample of `m` and compares with ONNX Runtime; returns the worst error.
fn check_against_ort(m: &onnx_golden::Model, imported: &Imported, graph: &Graph, what: &str) -> f64 {
    let ex = FloatExecutor::new(graph).unwrap_or_else(|e| panic!("{} ({what}): executor: {e}", m.name));
    let mut worst = 0f64;
    for (s, sample) in m.samples.iter().enumerate() {
        let inputs: Vec<Vec<f32>> = sample
            .inputs
            .iter()
            .zip(&imported.inputs)
            .map(|(t, info)| {
                assert_eq!(t.shape, info.model_shape, "{}: input {} shape", m.name, info.name);
                info.to_graph_layout(&t.f32()).unwrap()
            })
            .collect();
        let refs: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
        let outs = ex.run(&refs).unwrap_or_else(|e| panic!("{} ({what}): run: {e}", m.name));
        assert_eq!(outs.len(), sample.outputs.len(), "{}: output count", m.name);
        for ((o, expected), info) in outs.iter().zip(&sample.outputs).zip(&imported.outputs) {
            assert_eq!(expected.shape, info.model_shape, "{}: output {} shape", m.name, info.name);
            let ours = info.to_model_layout(o).unwrap();
            let e =
                assert_close(&format!("{} ({what}) sample {s} output {}", m.name, info.name), &expected.f32(), &ours);
            worst = worst.max(e);
        }
    }
    worst
}

#[test]
fn every_model_matches_onnx_runtime() {
    let models = float_models();
    assert!(models.len() >= 39, "{} models", models.len());
    let mut worst = 0f64;
    let mut opsets = std::collections::BTreeSet::new();
    for m in &models {
        let imported = m.import();
        opsets.insert(m.opset);
        let e = check_against_ort(m, &imported, &imported.graph, "imported");
        let mut opt = imported.graph.clone();
        let stats = microquant::passes::optimize(&mut opt).unwrap_or_else(|e| panic!("{}: optimize: {e}", m.name));
        let e2 = check_against_ort(m, &imported, &opt, "optimized");
        worst = worst.max(e).max(e2);
        let kinds: Vec<&str> = opt.nodes.iter().map(|n| n.op.name()).collect();
        println!(
            "{:26} opset {:2} {:3} nodes -> {:3} after {:2} rewrites  max rel err {e:.1e} / {e2:.1e}  {kinds:?}",
            m.name,
            m.opset,
            imported.graph.nodes.len(),
            opt.nodes.len(),
            stats.total()
        );
    }
    assert!(opsets.is_superset(&[11, 13, 17, 21].into_iter().collect()), "{opsets:?}");
    println!("{} models, worst error {worst:.2e} (bound {:.0e})", models.len(), onnx_golden::RTOL);
}

#[test]
fn io_layout_is_recorded_or_kept() {
    let m = float_models().into_iter().find(|m| m.name == "conv_bn_opset11").unwrap();
    // Default: the NCHW input becomes an NHWC graph input; IoInfo says how to reorder.
    let imported = m.import();
    assert_eq!(imported.inputs[0].model_shape, [1, 3, 8, 8]);
    assert_eq!(imported.inputs[0].perm, [0, 2, 3, 1]);
    assert_eq!(imported.graph.tensor(imported.graph.inputs[0]).unwrap().shape, [1, 8, 8, 3]);
    assert!(
        !imported
            .graph
            .nodes
            .iter()
            .any(|n| matches!(n.op, Op::Transpose { .. }) && n.input(0) == Some(imported.graph.inputs[0]))
    );
    // keep_io_layout: the graph takes NCHW itself (a transpose inside the graph).
    let options = ImportOptions { keep_io_layout: true, ..Default::default() };
    let kept = microquant::onnx::import_with_options(&m.bytes(), &options).unwrap();
    assert!(kept.inputs[0].is_identity());
    assert_eq!(kept.graph.tensor(kept.graph.inputs[0]).unwrap().shape, [1, 3, 8, 8]);
    assert!(check_against_ort(&m, &kept, &kept.graph, "keep_io_layout") <= onnx_golden::RTOL);
    // A tf2onnx-style model (NHWC input, Transpose to NCHW inside) needs no reordering at all.
    let m = float_models().into_iter().find(|m| m.name == "nhwc_opset13").unwrap();
    let imported = m.import();
    assert!(imported.inputs[0].is_identity());
    assert!(!imported.graph.nodes.iter().any(|n| matches!(n.op, Op::Transpose { .. })), "{}", imported.graph);
}

fn import_error(file: &str) -> microquant::graph::ConvertError {
    let bytes = std::fs::read(golden_dir().join("errors").join(file)).unwrap();
    match microquant::onnx::import(&bytes) {
        Ok(_) => panic!("{file}: imported, expected an error"),
        Err(e) => {
            println!("{file}: {e}");
            e
        }
    }
}

#[test]
fn unsupported_models_are_named_errors() {
    let e = import_error("unsupported_op.onnx");
    assert_eq!(e.kind(), ConvertErrorKind::UnsupportedOp);
    assert_eq!((e.op(), e.node_name(), e.node_index()), (Some("Hardmax"), Some("my_hardmax"), Some(1)));
    assert!(e.message().contains("opset 13"), "{e}");

    let e = import_error("dynamic_dims.onnx");
    assert_eq!(e.kind(), ConvertErrorKind::Unsupported);
    assert!(
        e.message().contains("input \"x\"") && e.message().contains("axis 2") && e.message().contains("height"),
        "{e}"
    );

    let e = import_error("grouped_conv.onnx");
    assert_eq!((e.kind(), e.node_name()), (ConvertErrorKind::Unsupported, Some("grouped")));
    assert!(e.message().contains("group 2"), "{e}");

    // Written as an error model when only ReLU's and ReLU6's ranges were supported; a Clip to
    // [-1, 2] now imports as a clamp (`.mq` kind RELU with the bounds).
    let bytes = std::fs::read(golden_dir().join("errors").join("clip_range.onnx")).unwrap();
    let g = microquant::onnx::import(&bytes).unwrap().graph;
    assert!(g.nodes.iter().any(|n| matches!(n.op, Op::Clip { min, max } if min == -1.0 && max == 2.0)), "{g}");

    let e = import_error("old_opset.onnx");
    assert_eq!(e.kind(), ConvertErrorKind::Unsupported);
    assert!(e.message().contains("opset 9"), "{e}");

    let e = import_error("ml_domain.onnx");
    assert_eq!((e.kind(), e.op()), (ConvertErrorKind::UnsupportedOp, Some("Normalizer")));
    assert!(e.message().contains("ai.onnx.ml") && e.message().contains("opset 3"), "{e}");

    let e = import_error("external_data.onnx");
    assert_eq!(e.kind(), ConvertErrorKind::Unsupported);
    assert!(e.message().contains("external"), "{e}");

    let e = import_error("int_input.onnx");
    assert_eq!(e.kind(), ConvertErrorKind::UnsupportedDType);
    assert!(e.message().contains("INT64"), "{e}");

    // A MatMul of two activations (an error before BATCH_MATMUL) imports as one.
    let bytes = std::fs::read(golden_dir().join("errors").join("matmul_two_activations.onnx")).unwrap();
    let g = microquant::onnx::import(&bytes).unwrap().graph;
    assert!(g.nodes.iter().any(|n| matches!(n.op, Op::BatchMatMul { adj_x: false, adj_y: false })), "{g}");

    // skl2onnx classifier: the label output needs ArgMax; selecting the probabilities avoids it.
    let m = float_models().into_iter().find(|m| m.name == "mlp_classifier_opset13").unwrap();
    let e = microquant::onnx::import(&m.bytes()).unwrap_err();
    assert_eq!((e.kind(), e.op()), (ConvertErrorKind::UnsupportedOp, Some("ArgMax")), "{e}");
    let options = ImportOptions { outputs: Some(vec!["nope".into()]), ..Default::default() };
    let e = microquant::onnx::import_with_options(&m.bytes(), &options).unwrap_err();
    assert_eq!(e.kind(), ConvertErrorKind::Malformed);
    assert!(e.message().contains("\"probabilities\""), "{e}");
}

#[test]
fn truncated_and_corrupt_bytes_never_panic() {
    let m = float_models().into_iter().find(|m| m.name == "conv_bn_opset11").unwrap();
    let bytes = m.bytes();
    // Every strict prefix is an error (a protobuf prefix can parse, but then the graph lacks
    // its outputs, opset or nodes' inputs).
    let mut kinds = std::collections::BTreeMap::new();
    for len in 0..bytes.len() {
        match microquant::onnx::import(&bytes[..len]) {
            Ok(_) => panic!("prefix of {len} bytes imported"),
            Err(e) => *kinds.entry(format!("{:?}", e.kind())).or_insert(0) += 1,
        }
    }
    println!("{} prefixes: {kinds:?}", bytes.len());
    // Seeded corruption: overwrite 1 to 4 bytes; the result must be an error or a valid graph.
    let mut rng = microquant_tests::rng::SplitMix64::new(42);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3000 {
        let mut b = bytes.clone();
        let n = 1 + (rng.next_u64() % 4) as usize;
        for _ in 0..n {
            let at = (rng.next_u64() % b.len() as u64) as usize;
            b[at] = (rng.next_u64() >> 56) as u8;
        }
        match microquant::onnx::import(&b) {
            Ok(i) => {
                i.graph.validate().unwrap();
                ok += 1;
            }
            Err(_) => err += 1,
        }
    }
    println!("corrupted: {ok} imported (valid graphs), {err} errors");
    assert!(err > 0);
    // Every model: corrupted bytes that still import must also survive the passes and a run
    // of the float executor (errors allowed, panics not).
    let mut ran = 0;
    for m in float_models() {
        let bytes = m.bytes();
        for _ in 0..150 {
            let mut b = bytes.clone();
            for _ in 0..1 + (rng.next_u64() % 3) {
                let at = (rng.next_u64() % b.len() as u64) as usize;
                b[at] = (rng.next_u64() >> 56) as u8;
            }
            let Ok(mut i) = microquant::onnx::import(&b) else { continue };
            if microquant::passes::optimize(&mut i.graph).is_err() {
                continue;
            }
            // (Keep this test's memory small: corrupted extents can make legal but huge tensors,
            // up to the executor's limit.)
            if i.graph.total_macs() > 100_000_000
                || i.graph.tensors.iter().any(|t| t.num_elements().is_none_or(|n| n > 1 << 18))
            {
                continue;
            }
            let Ok(ex) = FloatExecutor::new(&i.graph) else { continue };
            let inputs: Vec<Vec<f32>> = i
                .graph
                .inputs
                .iter()
                .map(|&t| vec![0.5; i.graph.tensor(t).unwrap().num_elements().unwrap().min(1 << 20)])
                .collect();
            let refs: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
            if ex.run(&refs).is_ok() {
                ran += 1;
            }
        }
    }
    println!("corrupted models that imported, optimized and ran: {ran}");
    // Not a protobuf at all.
    for junk in
        [&b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"[..], b"TFL3 is not onnx", &[0x0a, 0xff, 0xff, 0xff, 0x0f]]
    {
        assert!(microquant::onnx::import(junk).is_err());
    }
}
