//! Kernel benchmark on the host: every conv / depthwise / fully connected layer shape of the
//! MLPerf Tiny models (`firmware/bench/layers.rs`) through the reference kernel and through the
//! dispatched kernel (on x86-64 and AArch64: the portable paths, which the compiler vectorizes),
//! timed with `std::time::Instant` in the same run. Not a test; `scripts/bench-kernels.sh` runs
//! it (`cargo run --release -p microquant --example bench_kernels`) and puts the ratios in
//! BENCHMARKS.md.

#[path = "../../firmware/bench/layers.rs"]
#[allow(dead_code)]
mod layers;
#[path = "../../tests/src/rng.rs"]
#[allow(dead_code)]
mod rng;
#[path = "../../firmware/bench/run.rs"]
mod run;

use std::time::Instant;

/// Seconds per call of `f`, repeated for at least `budget` seconds (at least 3 calls, after one
/// warm-up call).
fn per_call(f: &mut dyn FnMut(), budget: f64) -> f64 {
    f();
    let (t0, mut n) = (Instant::now(), 0u32);
    loop {
        f();
        n += 1;
        let dt = t0.elapsed().as_secs_f64();
        if n >= 3 && dt >= budget {
            return dt / n as f64;
        }
    }
}

fn main() {
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
    println!("bench_kernels host {}", std::env::consts::ARCH);
    let mut all_same = true;
    for (i, l) in layers::LAYERS.iter().enumerate() {
        let (t_ref, t_fast, same) =
            run(l, &mut b, 1000 + i as u64, |f| per_call(f, 0.03)).expect("buffers fit every layer");
        all_same &= same;
        let kind = match l.kind {
            layers::Kind::Conv => "conv",
            layers::Kind::Depthwise => "depthwise",
            layers::Kind::FullyConnected => "fc",
        };
        println!(
            "layer={i} model={} kind={kind} macs={} ref_us={:.2} fast_us={:.2} same={same}",
            l.model,
            l.macs(),
            t_ref * 1e6,
            t_fast * 1e6
        );
    }
    if !all_same {
        eprintln!("a fast path differs from the reference");
        std::process::exit(1);
    }
}
