//! Developer tool (ignored by default): compares every layer of an MLPerf model, run by our
//! interpreter, with a dump of the TFLite interpreter's intermediate tensors.
//! `MQ_DUMP=kws1.json MQ_MODEL=kws MQ_SAMPLE=1 cargo test -p microquant-tests --test host layer_debug:: -- --ignored --nocapture`

use base64::Engine as _;
use microquant::compile::{CompileOptions, compile};
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, Model};
use microquant_tests::models::mlperf_tiny;

#[test]
#[ignore]
fn compare_layers() {
    let dump: std::collections::HashMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(std::env::var("MQ_DUMP").unwrap()).unwrap()).unwrap();
    let name = std::env::var("MQ_MODEL").unwrap();
    let sample: u64 = std::env::var("MQ_SAMPLE").unwrap().parse().unwrap();
    let golden = mlperf_tiny();
    let m = golden.models.iter().find(|m| m.name == name).unwrap();
    let graph = microquant::tflite::import(&std::fs::read(m.path()).unwrap()).unwrap();
    let compiled = compile(&graph, &CompileOptions::default()).unwrap();
    let bytes = AlignedBytes::new(&compiled.bytes);
    let model = Model::parse(&bytes).unwrap();
    let mut arena = vec![0u8; compiled.arena_len + 16];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    if std::env::var("MQ_WARMUP").is_ok() {
        it.input_i8(0).unwrap().copy_from_slice(&m.input(0));
        it.invoke().unwrap();
    }
    it.input_i8(0).unwrap().copy_from_slice(&m.input(sample));
    for i in 0..model.num_ops() {
        it.run_op(i).unwrap();
        let op = model.op(i as u32).unwrap();
        let t = model.tensor(op.output(0).unwrap()).unwrap();
        let ours = it.tensor_bytes(t.index).unwrap();
        match dump.get(t.name()) {
            Some(b64) => {
                let theirs = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
                let diff: Vec<usize> = (0..ours.len().min(theirs.len())).filter(|&k| ours[k] != theirs[k]).collect();
                println!(
                    "op {i} {:?} '{}': {} of {} differ; first {:?}",
                    op.kind,
                    t.name(),
                    diff.len(),
                    ours.len(),
                    diff.iter().take(5).map(|&k| (k, ours[k] as i8, theirs[k] as i8)).collect::<Vec<_>>()
                );
            }
            None => println!("op {i} {:?} '{}': not in dump", op.kind, t.name()),
        }
    }
}
