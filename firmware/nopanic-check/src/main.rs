//! No-panic proof for the device path.
//!
//! This image calls microquant's device-side entry points on opaque inputs (`black_box`, so the
//! optimizer cannot specialise them) and installs a panic handler that calls a function that
//! does not exist. If any panic is reachable after optimization (a bounds check, an `unwrap`, a
//! division by a variable, `clamp` with unproven bounds), the link fails with
//! `undefined symbol: microquant_panic_is_reachable`, and rust-lld names the function that
//! referenced it. Build: `cargo build --release -p nopanic-check` (from `firmware/`), for each
//! target; scripts/test.sh does it for thumbv6m and thumbv7em.
#![no_std]
#![no_main]

use core::hint::black_box;
use cortex_m_rt::entry;
use defmt as _;
use microquant::quant::{AffineQuant, QuantDType};

#[entry]
fn main() -> ! {
    let x: &[f32] = black_box(&[0.5, -1.0, 2.0, 3.5]);
    let mut q = [0i8; 4];
    let mut dq = [0f32; 4];
    if let Ok(p) = AffineQuant::new(black_box(0.1), black_box(-3), QuantDType::Int8) {
        let _ = black_box(p.quantize_i8(x, black_box(&mut q[..])));
        let _ = black_box(p.dequantize_i8(black_box(&q[..]), black_box(&mut dq[..])));
    }
    let m = microquant::requant::quantize_multiplier(black_box(0.0123));
    black_box(microquant::requant::multiply_by_quantized_multiplier(black_box(12345), m.multiplier, m.shift));
    black_box(microquant::requant::multiply_by_quantized_multiplier_single(black_box(12345), m.multiplier, m.shift));
    black_box(microquant::requant::multiply_by_quantized_multiplier_i64(black_box(1 << 40), m.multiplier, black_box(-5)));
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe extern "C" {
        /// Deliberately undefined: referencing it fails the link.
        fn microquant_panic_is_reachable() -> !;
    }
    // SAFETY: never runs; the image links only if this handler is unreachable and removed.
    unsafe { microquant_panic_is_reachable() }
}

#[cortex_m_rt::exception]
unsafe fn HardFault(_: &cortex_m_rt::ExceptionFrame) -> ! {
    loop {}
}
