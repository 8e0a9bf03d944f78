//! Developer tool (ignored by default): runs a `.mq` op by op and compares every op's output with
//! ONNX Runtime's int8 value of the same tensor in the QDQ export of the same quantization (each
//! `QuantizeLinear` output, 4-D activations transposed to NHWC, as a JSON of base64 int8 bytes
//! keyed by tensor name; `tests/zoo/bench_zoo.py --dump` writes it). Both sides start from ONNX
//! Runtime's quantized input; the first layers that differ show where the two computations part.
//! `MQ_MODEL=x.mq MQ_DUMP=dump.json cargo test -p microquant-tests --test host qdq_layers:: -- --ignored --nocapture`

use base64::Engine as _;
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, Model};

#[test]
#[ignore]
fn compare_layers_with_onnx_runtime() {
    let dump: std::collections::HashMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(std::env::var("MQ_DUMP").unwrap()).unwrap()).unwrap();
    let raw = std::fs::read(std::env::var("MQ_MODEL").unwrap()).unwrap();
    let bytes = AlignedBytes::new(&raw);
    let model = Model::parse(&bytes).unwrap();
    let mut arena = vec![0u8; 64 << 20];
    let mut it = Interpreter::new(&bytes, &mut arena).unwrap();
    let decode = |s: &String| base64::engine::general_purpose::STANDARD.decode(s).unwrap();
    let input = it.input_info(0).unwrap();
    let (iname, idims) = (input.name().to_string(), input.dims().to_vec());
    let nhwc = idims.len() == 4 && idims[3] <= 4 && idims[1] > 4;
    let key = if nhwc { format!("{iname}@nhwc") } else { iname.clone() };
    let x = dump.get(&key).or_else(|| dump.values().next()).map(decode).unwrap();
    it.input_i8(0).unwrap().iter_mut().zip(&x).for_each(|(d, &s)| *d = s as i8);
    // MQ_OURS=path: also write our value of every op's output (same JSON form).
    let mut mine = std::collections::BTreeMap::new();
    for i in 0..model.num_ops() {
        it.run_op(i).unwrap();
        let op = model.op(i as u32).unwrap();
        let t = model.tensor(op.output(0).unwrap()).unwrap();
        let ours = it.tensor_bytes(t.index).unwrap();
        mine.insert(t.name().to_string(), base64::engine::general_purpose::STANDARD.encode(ours));
        let Some(theirs) = dump.get(t.name()).map(decode) else {
            println!("{i:3} {:<48} (no ONNX Runtime value)", t.name());
            continue;
        };
        if ours.len() != theirs.len() {
            println!("{i:3} {:<48} sizes differ: {} vs {}", t.name(), ours.len(), theirs.len());
            continue;
        }
        let d: Vec<i32> = ours.iter().zip(&theirs).map(|(&a, &b)| (a as i8 as i32 - b as i8 as i32).abs()).collect();
        let max = d.iter().copied().max().unwrap_or(0);
        let over1 = d.iter().filter(|&&v| v > 1).count();
        let ne = d.iter().filter(|&&v| v > 0).count();
        println!(
            "{i:3} {:<48} {:>8} elems, {:>7} differ, {:>7} by >1, max {max} (op kind {})",
            t.name(),
            d.len(),
            ne,
            over1,
            op.params().len()
        );
    }
    if let Ok(path) = std::env::var("MQ_OURS") {
        std::fs::write(path, serde_json::to_string(&mine).unwrap()).unwrap();
    }
}
