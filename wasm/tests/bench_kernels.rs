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
