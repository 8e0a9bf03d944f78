//! No-panic proof for the device path.
//!
//! This image calls microquant's device-side entry points on opaque inputs (`black_box`, so the
//! optimizer cannot specialise them) and installs a panic handler that calls a function that
//! does not exist. If any panic is reachable after optimization (a bounds check, an `unwrap`, a
//! division by a variable, `clamp` with unproven bounds), the link fails with
//! `undefined symbol: microquant_panic_is_reachable`, and rust-lld names the function that
//! referenced it. Build: `cargo build --release -p nopanic-check` (from `firmware/`), for each
//! target; scripts/test.sh does it for thumbv6m and thumbv7em. When it fails,
//! `nopanic-check/find-panics.sh <target>` lists every function calling into panic code. The
//! interpreter (load, validate, invoke, profiled invoke) runs a real model here (`interpreter`).
#![no_std]
#![no_main]

use core::hint::black_box;
use cortex_m_rt::entry;
use defmt as _;
use microquant::quant::{QParams, QuantDType};

mod interpreter;
mod nn_kernels;
mod quant_core;

use interpreter::interpreter;
use nn_kernels::{
    batch_matmul_kernels, binary_kernels, conv_fc_pool_kernels, elementwise_activation_shape_kernels, movement_kernels,
    recurrent_kernels, spatial_kernels, transpose_conv_kernels, unary_activation_kernels,
};
use quant_core::quant_core;

#[entry]
fn main() -> ! {
    let x: &[f32] = black_box(&[0.5, -1.0, 2.0, 3.5]);
    let mut q = [0i8; 4];
    let mut dq = [0f32; 4];
    if let Ok(p) = QParams::new(black_box(0.1), black_box(-3), QuantDType::Int8) {
        let _ = black_box(p.quantize_i8(x, black_box(&mut q[..])));
        let _ = black_box(p.dequantize_i8(black_box(&q[..]), black_box(&mut dq[..])));
    }
    let m = microquant::requant::quantize_multiplier(black_box(0.0123));
    black_box(microquant::requant::multiply_by_quantized_multiplier(black_box(12345), m.multiplier, m.shift));
    black_box(microquant::requant::multiply_by_quantized_multiplier_single(black_box(12345), m.multiplier, m.shift));
    black_box(microquant::requant::multiply_by_quantized_multiplier_i64(
        black_box(1 << 40),
        m.multiplier,
        black_box(-5),
    ));
    conv_fc_pool_kernels();
    elementwise_activation_shape_kernels();
    spatial_kernels();
    movement_kernels();
    binary_kernels();
    unary_activation_kernels();
    recurrent_kernels();
    transpose_conv_kernels();
    batch_matmul_kernels();
    quant_core();
    interpreter();
    loop {
        cortex_m::asm::wfi();
    }
}

/// `x`, opaque to the optimizer.
fn bb(x: usize) -> usize {
    black_box(x)
}

#[cfg(not(feature = "locate"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe extern "C" {
        /// Deliberately undefined: referencing it fails the link.
        fn microquant_panic_is_reachable() -> !;
    }
    // SAFETY: never runs; the image links only if this handler is unreachable and removed.
    unsafe { microquant_panic_is_reachable() }
}

/// With `--features locate` the image links even with a reachable panic, so `find-panics.sh`
/// can list the functions that call into panic code.
#[cfg(feature = "locate")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}

#[cortex_m_rt::exception]
// SAFETY: cortex-m-rt requires the HardFault handler to be an `unsafe fn`; this one only
// waits (the image is linked, never run).
unsafe fn HardFault(_: &cortex_m_rt::ExceptionFrame) -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}
