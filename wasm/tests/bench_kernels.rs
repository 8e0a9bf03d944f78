//! Kernel benchmark in wasm (not a test: `#[ignore]`d, so `wasm-pack test` skips it): every
//! conv / depthwise / fully connected layer shape of the MLPerf Tiny models
//! (`firmware/bench/layers.rs`) through the reference kernel and the dispatched kernel (the
//! simd128 fast path), timed with `performance.now()` in the same run, many repetitions each;
//! prints one line per layer. `scripts/bench-kernels.sh` runs it under Node, in release mode:
//!
//! ```sh
//! wasm-pack test --node --release wasm --test bench_kernels -- --include-ignored --nocapture
//! ```
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::{console_log, wasm_bindgen_test};

#[path = "../../firmware/bench/layers.rs"]
#[allow(dead_code)]
mod layers;
#[path = "../../tests/src/rng.rs"]
#[allow(dead_code)]
mod rng;
#[path = "../../firmware/bench/run.rs"]
mod run;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance)]
    fn now() -> f64;
}

/// Milliseconds per call of `f`: the calls are timed in rounds of at least 2 ms (and 2 calls),
/// until `budget_ms` have passed (at least 5 rounds; one warm-up call first, not counted), and
/// the fastest round's time per call is returned: the machine may be shared, and load from
/// other processes only ever makes a round slower.
fn per_call_ms(f: &mut dyn FnMut(), budget_ms: f64) -> f64 {
    f();
    let (start, mut rounds, mut best) = (now(), 0u32, f64::INFINITY);
    while rounds < 5 || now() - start < budget_ms {
        let (t0, mut n) = (now(), 0u32);
        loop {
            f();
            n += 1;
            let dt = now() - t0;
            if n >= 2 && dt >= 2.0 {
                best = best.min(dt / n as f64);
                break;
            }
        }
        rounds += 1;
    }
    best
}

#[wasm_bindgen_test]
#[ignore = "benchmark: run with --include-ignored (scripts/bench-kernels.sh)"]
fn bench_kernels() {
    use run::*;
    let (mut x, mut w) = (vec![0i8; MAX_IN], vec![0i8; MAX_FILTER]);
    let (mut bias, mut m, mut s) = (vec![0i32; MAX_CH], vec![0i32; MAX_CH], vec![0i32; MAX_CH]);
    let (mut want, mut got, mut scratch) = (vec![0i8; MAX_OUT], vec![0i8; MAX_OUT], vec![0u8; MAX_SCRATCH]);
    let mut b = Bufs {
        x: &mut x,
        w: &mut w,
        bias: &mut bias,
        m: &mut m,
        s: &mut s,
        want: &mut want,
        got: &mut got,
        scratch: &mut scratch,
    };
    console_log!("bench_kernels wasm simd128={}", cfg!(target_feature = "simd128"));
    for (i, l) in layers::LAYERS.iter().enumerate() {
        let (t_ref, t_fast, same) =
            run(l, &mut b, 1000 + i as u64, |f| per_call_ms(f, 30.0)).expect("buffers fit every layer");
        let kind = match l.kind {
            layers::Kind::Conv => "conv",
            layers::Kind::Depthwise => "depthwise",
            layers::Kind::FullyConnected => "fc",
        };
        console_log!(
            "layer={} model={} kind={} macs={} ref_us={:.2} simd_us={:.2} same={}",
            i,
            l.model,
            kind,
            l.macs(),
            t_ref * 1000.0,
            t_fast * 1000.0,
            same
        );
        assert!(same, "layer {i}: fast path output differs from the reference");
    }
}

/// Per-op time of whole models in the interpreter (the MLPerf Tiny int8 models compiled for
/// TFLite Micro's rounding, and the digits CNN's `.mq`), each op timed with `performance.now()`
/// around it over many invocations of the prepared plan the npm package runs
/// ([`Interpreter::invoke_prepared_profiled`]), plus the time of a whole run both ways: reading
/// the op records at every run ([`Interpreter::invoke`], the device's way) and from the plan
/// ([`Interpreter::invoke_prepared`]). Prints one line per op (kind, output shape, MACs, microseconds,
/// GMAC/s) and one per model. Ignored like `bench_kernels`:
///
/// ```sh
/// wasm-pack test --node --release wasm --test bench_kernels -- --include-ignored --nocapture bench_models
/// ```
#[wasm_bindgen_test]
#[ignore = "benchmark: run with --include-ignored"]
fn bench_models() {
    use microquant::compile::{CompileOptions, compile};
    use microquant::interp::{Interpreter, Profiler};
    use microquant::model::{AlignedBytes, Model, OpKind};

    struct PerOp {
        t0: f64,
        total: Vec<f64>,
    }
    impl Profiler for PerOp {
        fn op_start(&mut self, _: u32, _: OpKind) {
            self.t0 = now();
        }
        fn op_end(&mut self, i: u32, _: OpKind) {
            if let Some(t) = self.total.get_mut(i as usize) {
                *t += now() - self.t0;
            }
        }
    }

    let models: [(&str, &[u8]); 4] = [
        ("kws", include_bytes!("../../models/mlperf-tiny/kws_ref_model_int8.tflite")),
        ("ic", include_bytes!("../../models/mlperf-tiny/ic_resnet8_int8.tflite")),
        ("vww", include_bytes!("../../models/mlperf-tiny/vww_96_int8.tflite")),
        ("ad", include_bytes!("../../models/mlperf-tiny/ad01_int8.tflite")),
    ];
    let mut mqs: Vec<(&str, Vec<u8>)> = models
        .iter()
        .map(|(name, tflite)| {
            let graph = microquant::tflite::import(tflite).expect("import");
            (*name, compile(&graph, &CompileOptions::default()).expect("compile").bytes)
        })
        .collect();
    mqs.push(("digits", include_bytes!("data/digits_default.mq").to_vec()));
    for (name, mq) in &mqs {
        let bytes = AlignedBytes::new(mq);
        let model = Model::parse(&bytes).expect("parse");
        let mut arena = vec![0u8; model.arena_len() + 16];
        let mut it = Interpreter::new(&bytes, &mut arena).expect("interpreter");
        let mut r = rng::SplitMix64::new(7);
        if let Ok(x) = it.input_i8(0) {
            r.fill_i8(x); // (a float input, digits', stays zeros)
        }
        let plan: Vec<_> = (0..model.num_ops()).map(|i| it.prepare_op(i).expect("prepare")).collect();
        // Record-reading and prepared runs alternate, so load from other processes falls on both.
        let (mut whole, mut prepared) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..5 {
            whole = whole.min(per_call_ms(&mut || it.invoke().expect("invoke"), 100.0));
            prepared = prepared.min(per_call_ms(&mut || it.invoke_prepared(&plan).expect("invoke"), 100.0));
        }
        let n = model.num_ops();
        let mut prof = PerOp { t0: 0.0, total: vec![0.0; n] };
        let runs = ((200.0 / whole.max(1e-3)) as usize).clamp(20, 20_000);
        for _ in 0..runs {
            it.invoke_prepared_profiled(&plan, &mut prof).expect("invoke");
        }
        let nt = model.num_tensors() as u32;
        let lookup = per_call_ms(
            &mut || {
                for t in 0..nt {
                    core::hint::black_box(model.tensor(t).map(|t| t.byte_len).unwrap_or(0));
                }
            },
            50.0,
        ) / nt.max(1) as f64;
        let mut ops_glue = 0u32;
        let glue = per_call_ms(
            &mut || {
                for i in 0..n as u32 {
                    ops_glue += core::hint::black_box(model.op(i).map(|o| o.num_inputs() as u32).unwrap_or(0));
                }
            },
            50.0,
        ) / n.max(1) as f64;
        console_log!(
            "model={name} invoke_us={:.2} invoke_prepared_us={:.2} ops={n} profiled_runs={runs} tensor_lookup_us={:.3} op_lookup_us={:.3}",
            whole * 1000.0,
            prepared * 1000.0,
            lookup * 1000.0,
            glue * 1000.0
        );
        for i in 0..n {
            let op = model.op(i as u32).expect("op");
            let out = model.tensor(op.output(0).expect("output")).expect("tensor");
            let macs = model.op_macs(i as u32).unwrap_or(0);
            let us = prof.total[i] / runs as f64 * 1000.0;
            let gmacs = if us > 0.0 { macs as f64 / us / 1000.0 } else { 0.0 };
            console_log!("  op={i} kind={:?} out={:?} macs={macs} us={us:.2} gmac_s={gmacs:.2}", op.kind, out.dims());
        }
    }
}
