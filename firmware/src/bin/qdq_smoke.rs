//! Smoke demo (`cargo run-an386 --bin qdq_smoke`): quantize a small tensor to int8 on the device and print it, so it can be set
//! beside the host's result (scripts/demo.sh does exactly that).
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use microquant::quant::{QParams, QuantDType};
use microquant_firmware as fw;

/// The demo tensor; scripts/demo.sh passes the same values to the host CLI.
const X: [f32; 8] = [-1.0, -0.125, 0.0, 0.025, 0.3, 0.725, 2.5, 100.0];
const SCALE: f32 = 0.05;
const ZERO_POINT: i32 = -3;

#[entry]
fn main() -> ! {
    defmt::info!("microquant smoke demo on {=str}", fw::BOARD);
    let p = match QParams::new(SCALE, ZERO_POINT, QuantDType::Int8) {
        Ok(p) => p,
        Err(e) => {
            defmt::error!("bad parameters: {}", e);
            fw::exit(1)
        }
    };
    let mut q = [0i8; X.len()];
    let mut dq = [0f32; X.len()];
    if let Err(e) = p.quantize_i8(&X, &mut q).and_then(|()| p.dequantize_i8(&q, &mut dq)) {
        defmt::error!("quantization failed: {}", e);
        fw::exit(1)
    }
    defmt::info!("x  = {=[?]}", X);
    defmt::info!("q  = {=[?]}", q);
    defmt::info!("dq = {=[?]}", dq);
    fw::exit(0)
}
