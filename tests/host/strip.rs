//! Stripped models (`microquant::model::strip`, what the firmware embeds): the four MLPerf Tiny
//! models run bit for bit as the full ones, through both constructors (full validation and the
//! build-validated one with its CRC), and KWS's stripped file stays within its size.

use microquant::compile::{CompileOptions, compile};
use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, Model, strip};
use microquant_tests::models::mlperf_tiny;

/// KWS's stripped `.mq` (bytes): the 28,984 B of weights and tables, the tensor and op records
/// and the parameter blocks. Names, metadata and per-channel scales are gone (55,172 B in full).
/// Issue 25's goal of 31,744 B needs more than stripping (int8 shifts, smaller records: see
/// BENCHMARKS.md, "Model file and boot validation").
const KWS_STRIPPED_MAX: usize = 33_412;

#[test]
fn stripped_models_run_bit_identically() {
    let golden = mlperf_tiny();
    for m in &golden.models {
        let tflite = std::fs::read(m.path()).expect("model file");
        let graph = microquant::tflite::import(&tflite).expect("import");
        let full = compile(&graph, &CompileOptions::default()).expect("compile").bytes;
        let lean = strip(&full).expect("strip");
        let (fb, lb) = (AlignedBytes::new(&full), AlignedBytes::new(&lean));
        let crc = Model::parse(&lb).expect("stripped model parses").crc();
        let arena_len = Model::parse(&fb).unwrap().arena_len() + 16;
        let (mut a1, mut a2, mut a3) = (vec![0u8; arena_len], vec![0u8; arena_len], vec![0u8; arena_len]);
        let mut f = Interpreter::new(&fb, &mut a1).expect("full");
        let mut l = Interpreter::new(&lb, &mut a2).expect("stripped");
        let mut p = Interpreter::new_prevalidated(&lb, &mut a3, crc).expect("prevalidated");
        for s in &m.samples {
            let x = m.input(s.sample);
            let mut outs = Vec::new();
            for it in [&mut f, &mut l, &mut p] {
                it.input_i8(0).unwrap().copy_from_slice(&x);
                it.invoke().expect("invoke");
                outs.push(it.output_i8(0).unwrap().to_vec());
            }
            assert_eq!(outs[0], outs[1], "{} sample {}: stripped differs", m.name, s.sample);
            assert_eq!(outs[0], outs[2], "{} sample {}: prevalidated differs", m.name, s.sample);
        }
        println!("{}: {} B -> {} B stripped", m.name, full.len(), lean.len());
        if m.name == "kws" {
            assert!(lean.len() <= KWS_STRIPPED_MAX, "kws stripped: {} B > {KWS_STRIPPED_MAX} B", lean.len());
        }
    }
}
