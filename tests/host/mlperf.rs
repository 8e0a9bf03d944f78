//! The four MLPerf Tiny int8 models, imported from TFLite, compiled to `.mq` and run by the
//! interpreter on the host: outputs bit-identical to TFLite Micro (double rounding) and to the
//! TFLite interpreter's reference kernels (single rounding) on 20 seeded inputs each, run both
//! ways: reading the op records at every run (`invoke`, the device's way) and from a prepared
//! plan (`invoke_prepared`, the npm package's way).

use microquant::compile::{CompileOptions, compile};
use microquant::interp::Interpreter;
use microquant::kernels::Rounding;
use microquant::model::AlignedBytes;
use microquant_tests::golden::assert_bit_exact;
use microquant_tests::kernels::Oracle;
use microquant_tests::models::mlperf_tiny;

/// Our planned arena for each model when the planner last changed (bytes). A regression test,
/// as TFLite Micro's `memory_arena_threshold_test`: the arena may not grow by more than 1 %.
const ARENA_BASELINE: &[(&str, usize)] = &[("kws", 13392), ("ic", 49152), ("vww", 46480), ("ad", 2064)];

fn check_arena(name: &str, arena: usize) {
    let tflm: serde_json::Value =
        serde_json::from_str(include_str!("../golden/models/tflm_arena.json")).expect("tflm_arena.json parses");
    let theirs = tflm["cortex_m4_arena_used_bytes"][name].as_u64().expect("figure for the model") as usize;
    let base = ARENA_BASELINE.iter().find(|(n, _)| *n == name).map(|(_, b)| *b).expect("baseline");
    println!(
        "{name}: arena {arena} B, TFLite Micro on Cortex-M4 {theirs} B ({:.1} % of it)",
        100.0 * arena as f64 / theirs as f64
    );
    assert!(arena <= theirs, "{name}: our arena {arena} B exceeds TFLite Micro's {theirs} B");
    assert!(arena * 100 <= base * 101, "{name}: arena grew from {base} B to {arena} B (more than 1 %)");
}

fn run_model(name: &str, rounding: Rounding, oracle: Oracle) -> usize {
    let golden = mlperf_tiny();
    let m = golden.models.iter().find(|m| m.name == name).expect("model in golden file");
    let tflite = std::fs::read(m.path()).expect("model file");
    let graph = microquant::tflite::import(&tflite).expect("import");
    let compiled = compile(&graph, &CompileOptions { rounding, ..Default::default() }).expect("compile");
    let bytes = AlignedBytes::new(&compiled.bytes);
    check_arena(name, compiled.arena_len);
    let mut arena = vec![0u8; compiled.arena_len + 16];
    let mut interp = Interpreter::new(&bytes, &mut arena).expect("interpreter");
    let plan: Vec<_> = (0..interp.model().num_ops()).map(|i| interp.prepare_op(i).expect("prepare")).collect();
    let mut checked = 0;
    for s in &m.samples {
        let x = m.input(s.sample);
        for prepared in [false, true] {
            interp.input_i8(0).unwrap().copy_from_slice(&x);
            if prepared {
                interp.invoke_prepared(&plan).expect("invoke_prepared");
            } else {
                interp.invoke().expect("invoke");
            }
            let y = interp.output_i8(0).unwrap().to_vec();
            let what =
                format!("{name} sample {} ({oracle:?}, {})", s.sample, if prepared { "prepared" } else { "records" });
            checked += assert_bit_exact(&what, &s.expected(oracle).i8(), &y);
        }
    }
    println!(
        "{name} {rounding:?}: {} samples, {checked} outputs bit-exact with {oracle:?}; arena {} B (greedy-by-size {} B, {}), model {} B",
        m.samples.len(),
        compiled.arena_len,
        compiled.arena_len_greedy_by_size,
        compiled.plan_strategy,
        compiled.bytes.len()
    );
    checked
}

macro_rules! model_tests {
    ($($test:ident: $name:expr,)*) => {$(
        #[test]
        fn $test() {
            assert!(run_model($name, Rounding::Double, Oracle::Tflm) > 0);
            assert!(run_model($name, Rounding::Single, Oracle::TfliteRef) > 0);
        }
    )*};
}

model_tests! {
    kws: "kws",
    ic: "ic",
    vww: "vww",
    ad: "ad",
}
