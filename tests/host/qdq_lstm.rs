//! The int8 LSTM in the exact QDQ export: ONNX Runtime 1.32.0 running our `--qdq` export over a
//! stream of calls, its LSTM state fed from each call's `<node>/h_out`, `<node>/c_out` to the
//! next call's `<node>/h_in`, `<node>/c_in`, computes the integers our interpreter computes over
//! the same stream with the state it keeps between invokes (`tests/golden/qdq_lstm/`, written by
//! `tests/gen/gen_qdq_lstm.py`; CI needs no ONNX Runtime).
//!
//! For each model (a streaming model with one LSTM step per call between fully connected layers,
//! and three LSTMs of 20, 5 and 4 steps, batch 1 to 3, time- and batch-major): the export is
//! re-written with the current code and must equal the committed bytes; the `.mq` (quantized
//! as the CLI quantizes) runs the stream, inputs quantized as ONNX `QuantizeLinear` does; every
//! int8 output element of every call must equal ONNX Runtime's (with its default graph
//! optimizations and without). Where the model's output is the LSTM's own (the recurrent
//! models), ONNX Runtime's `h_out` must also be the last step of each call's output.

use crate::peers_common::{read_npy, samples};

use microquant::interp::Interpreter;
use microquant::model::AlignedBytes;
use microquant::onnx::{ImportOptions, QdqExportOptions, export_qdq, export_qdq_portable, import_with_options};
use microquant::ptq::{PtqOptions, convert};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use serde::Deserialize;

#[derive(Deserialize)]
struct Run {
    y: Tensor,
    h_out: Tensor,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    file: String,
    float_model: String,
    args: Vec<String>,
    calib: String,
    stream: String,
    ort: Run,
    ort_noopt: Option<Run>,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Entry>,
}

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// The CLI arguments the generator passed (`--input-value NAME=V,..`, `--output-name NAME`) as
/// import options.
fn import_options(args: &[String]) -> ImportOptions {
    let mut o = ImportOptions::default();
    for pair in args.chunks(2) {
        match pair {
            [flag, v] if flag == "--input-value" => {
                let (name, values) = v.split_once('=').unwrap();
                o.input_values.push((name.into(), values.split(',').map(|x| x.parse().unwrap()).collect()));
            }
            [flag, v] if flag == "--output-name" => o.outputs.get_or_insert_with(Vec::new).push(v.clone()),
            other => panic!("unexpected arguments {other:?}"),
        }
    }
    o
}

#[test]
fn onnx_runtime_streams_our_lstm_export_as_the_mq() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/qdq_lstm");
    let text = std::fs::read_to_string(dir.join("qdq_lstm.json")).unwrap();
    let list = serde_json::from_str::<File>(&text).unwrap().models;
    assert_eq!(list.len(), 4);
    let mut total = 0;
    for e in &list {
        let model = repo(&e.float_model);
        let bytes = std::fs::read(&model).unwrap();
        let imported = import_with_options(&bytes, &import_options(&e.args)).unwrap();
        let calib = samples(&imported, &read_npy(&repo(&e.calib)));
        let stream = samples(&imported, &read_npy(&repo(&e.stream)));
        let out = convert(&imported.graph, &calib, None, &PtqOptions::default(), &mut |_| {})
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        // What the CLI writes: the model's own layout, opset 17, the file stem as graph name.
        let opts = QdqExportOptions {
            opset: 17,
            inputs: imported.inputs.clone(),
            outputs: imported.outputs.clone(),
            graph_name: model.file_stem().unwrap().to_string_lossy().into_owned(),
        };
        let qdq = export_qdq(&out.quantized.graph, &opts).unwrap();
        assert!(qdq == std::fs::read(repo(&e.file)).unwrap(), "{}: the export differs from the committed one", e.name);
        // The portable form has no LSTM: it says so.
        let refused = export_qdq_portable(&out.quantized.graph, &opts).unwrap_err().to_string();
        assert!(refused.contains("only the exact form"), "{}: {refused}", e.name);

        // The .mq over the stream, its state carried from invoke to invoke.
        let mq = AlignedBytes::new(&out.compiled.bytes);
        let mut arena = vec![0u8; out.compiled.arena_len + 16];
        let mut it = Interpreter::new(&mq, &mut arena).unwrap();
        let (is, iz) = it.input_info(0).unwrap().per_tensor().unwrap();
        let mut ours: Vec<i8> = Vec::new();
        let mut first = Vec::new();
        for (k, s) in stream.iter().enumerate() {
            for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&s[0]) {
                *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
            }
            it.invoke().unwrap();
            let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| f32::from(q)).collect();
            let y: Vec<i8> = imported.outputs[0].to_model_layout(&y).unwrap().iter().map(|&q| q as i8).collect();
            if k == 0 {
                first = y.clone();
            }
            ours.extend(y);
        }
        for (what, run) in [("default", Some(&e.ort)), ("ORT_DISABLE_ALL", e.ort_noopt.as_ref())] {
            let Some(run) = run else { continue };
            let n = assert_bit_exact(&format!("{} (ONNX Runtime, {what})", e.name), &run.y.i8(), &ours);
            println!("{}: ONNX Runtime ({what}) = .mq on all {n} int8 outputs of {} calls", e.name, stream.len());
            total += n;
        }
        if e.args.is_empty() {
            // The recurrent models' output is the LSTM's Y: h_out is each call's last step.
            let shape = &imported.outputs[0].model_shape;
            let time_major = !e.float_model.contains("lstm_l1");
            let (seq, batch, cell) =
                if time_major { (shape[0], shape[2], shape[3]) } else { (shape[1], shape[0], shape[3]) };
            let per = ours.len() / stream.len();
            let mut last = Vec::new();
            for call in ours.chunks(per) {
                for b in 0..batch {
                    let row = if time_major { (seq - 1) * batch + b } else { b * seq + seq - 1 };
                    last.extend_from_slice(&call[row * cell..(row + 1) * cell]);
                }
            }
            assert_bit_exact(&format!("{}: ONNX Runtime's h_out", e.name), &e.ort.h_out.i8(), &last);
        }
        // reset_state starts the stream over, as the export's start state does.
        it.reset_state().unwrap();
        for (d, &v) in it.input_i8(0).unwrap().iter_mut().zip(&stream[0][0]) {
            *d = ((v / is).round_ties_even() as i32 + iz).clamp(-128, 127) as i8;
        }
        it.invoke().unwrap();
        let y: Vec<f32> = it.output_i8(0).unwrap().iter().map(|&q| f32::from(q)).collect();
        let y: Vec<i8> = imported.outputs[0].to_model_layout(&y).unwrap().iter().map(|&q| q as i8).collect();
        assert_eq!(y, first, "{}: after reset_state", e.name);
    }
    println!("{total} int8 outputs equal");
    assert!(total > 1000, "{total}");
}
