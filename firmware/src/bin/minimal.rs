//! The smallest image a user would ship: the model the build embeds (`MQ_MODEL`), the kernels of
//! its op kinds only (`AppOps`, written by `build_model.rs` from the model), and one defmt line
//! per inference with the class. Its input stands in for a sensor: the golden input windows
//! (seeded, as TFLite Micro's outputs in `tests/golden/models/` were made), so its classes are
//! the application's.
//!
//! ```sh
//! cd firmware && MQ_MODEL=../models/mlperf-tiny/kws_ref_model_int8.tflite cargo run --release --bin minimal
//! ```
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use microquant::Error;
use microquant::interp::Interpreter;
use microquant_firmware::app::argmax;
use microquant_firmware::models::Arena;
use microquant_firmware::models::app::*;
use microquant_firmware::playback::{GoldenSamples, SampleSource};
use microquant_firmware::{self as fw};

/// Inferences to run: 3, or `MQ_MINIMAL_RUNS` at build time (`scripts/bench-cycles.sh` traces
/// two builds and subtracts, leaving the inferences' instructions alone).
const RUNS: usize = match option_env!("MQ_MINIMAL_RUNS") {
    Some(v) => parse_usize(v),
    None => 3,
};

/// A decimal number (a build-time setting; a non-digit stops the build).
const fn parse_usize(s: &str) -> usize {
    let b = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "MQ_MINIMAL_RUNS: not a number");
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    n
}

#[entry]
fn main() -> ! {
    static mut ARENA: Arena<APP_ARENA_LEN> = Arena::new();
    match run(&mut ARENA.0) {
        Ok(()) => fw::exit(0),
        Err(e) => {
            defmt::error!("{}", e);
            fw::exit(1)
        }
    }
}

fn run(arena: &mut [u8]) -> Result<(), Error> {
    let mut interp = Interpreter::<AppOps>::with_op_set(APP_MODEL, arena)?;
    let mut sensor = GoldenSamples::new(APP_GOLDEN.map_or(0, |g| g.seed_base), APP_INPUT_LEN);
    // `black_box`: the same code whatever RUNS is (scripts/bench-cycles.sh subtracts two builds' traces).
    for n in 0..core::hint::black_box(RUNS) {
        // `MQ_MINIMAL_SAME_INPUT=1` (scripts/bench-cycles.sh): the first window only, so that the
        // difference of two builds' traces holds inferences alone, not the input's generation.
        if n == 0 || option_env!("MQ_MINIMAL_SAME_INPUT").is_none() {
            for x in interp.input_i8(0)? {
                *x = sensor.next_sample();
            }
        }
        interp.invoke()?;
        let out = interp.output_i8(0)?;
        defmt::info!("inference {=usize}: class {=usize}", n, argmax(out));
        // Tests only (`MQ_MINIMAL_CHECK=1` at build time): the outputs against TFLite Micro's.
        if let (true, Some(g)) = (option_env!("MQ_MINIMAL_CHECK").is_some(), APP_GOLDEN) {
            if g.expected(n, APP_OUTPUT_LEN) != out {
                defmt::error!("inference {=usize}: output differs from TFLite Micro's", n);
                fw::exit(1);
            }
            defmt::info!("inference {=usize}: bit-identical with TFLite Micro", n);
        }
    }
    Ok(())
}
