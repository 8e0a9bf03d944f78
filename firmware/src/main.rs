//! The application: a model from flash classifies windows of sensor samples and signals the class
//! on a pin, reporting class, scores, instructions per inference and each op's share with defmt.
//!
//! The model is chosen at build time (`MQ_MODEL=path/to/model.tflite|.mq`, default the MLPerf
//! Tiny KWS model; the tiny M0 model on the micro:bit) and its arena is a static of exactly the
//! planned size. Under QEMU the sensor, the pin and the delays are the embedded-hal playback
//! implementations of `microquant_firmware::playback`: the sensor plays back the golden test
//! set, and when the model is a golden one every output is checked against TFLite Micro's.
//!
//! `cargo run-an386` (or `run-an500`, `run-an505`, `run-an547`, `run-microbit`); add
//! `QEMU_EXTRA="-icount shift=0"` for exact instruction counts.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use microquant::interp::Interpreter;
use microquant_firmware::app::{self, AppError, PULSE_NS, SAMPLE_PERIOD_NS, SENSOR_ADDRESS};
use microquant_firmware::indicator::ClassIndicator;
use microquant_firmware::models::Arena;
use microquant_firmware::models::app::*;
use microquant_firmware::playback::{GoldenSamples, PlaybackSensor, RecordingPin, VirtualClock, VirtualDelay};
use microquant_firmware::profile::{OpProfile, log_profile};
use microquant_firmware::sensor::FifoSensor;
use microquant_firmware::{self as fw, counter, stack};

fw::count_systick_wraps!();

/// Windows classified: every golden sample, or 3 windows of the seeded stream for other models.
const WINDOWS: usize = match APP_GOLDEN {
    Some(g) => g.samples,
    None => 3,
};
/// Scores printed per window (the AD model has 640 outputs).
const SHOWN: usize = if APP_OUTPUT_LEN < 12 { APP_OUTPUT_LEN } else { 12 };

#[entry]
fn main() -> ! {
    static mut ARENA: Arena<APP_ARENA_LEN> = Arena::new();
    stack::paint();
    let Some(mut cp) = cortex_m::Peripherals::take() else { fw::exit(1) };
    counter::start(&mut cp.SYST);
    match run(&mut ARENA.0) {
        Ok(()) => fw::exit(0),
        Err(e) => {
            defmt::error!("{}", e);
            fw::exit(1)
        }
    }
}

fn run(arena: &mut [u8]) -> Result<(), AppError> {
    defmt::info!(
        "microquant on {=str}: model {=str} ({=usize} B of flash, {=usize} ops), arena {=usize} B (a static sized by the build from the model's plan)",
        fw::BOARD,
        APP_MODEL_NAME,
        APP_MODEL_LEN,
        APP_NUM_OPS,
        APP_ARENA_LEN
    );
    defmt::info!("op set (the kernels linked): {=str}", APP_OP_NAMES);
    // The build validated the whole model (build_model.rs); at boot its header and the CRC of
    // every byte are checked against that model's (MQ_BOOT_VALIDATION=full: everything again).
    let t0 = counter::now();
    let mut interp = if APP_BOOT_FULL_VALIDATION {
        Interpreter::<AppOps>::with_op_set(APP_MODEL, arena)?
    } else {
        Interpreter::<AppOps>::new_prevalidated(APP_MODEL, arena, APP_MODEL_CRC)?
    };
    let load = counter::now().wrapping_sub(t0);
    defmt::info!(
        "model checked in {=u64} instructions ({=str}; {=str} model)",
        counter::instructions(load),
        if APP_BOOT_FULL_VALIDATION {
            "full validation at boot"
        } else {
            "header and CRC-32 of every byte; validated at build time"
        },
        if APP_MODEL_STRIPPED { "stripped" } else { "full" }
    );

    // The embedded-hal world of the application; under QEMU, playback implementations.
    let clock = VirtualClock::new();
    let seed_base = APP_GOLDEN.map_or(0, |g| g.seed_base);
    let i2c =
        PlaybackSensor::new(&clock, SENSOR_ADDRESS, SAMPLE_PERIOD_NS, GoldenSamples::new(seed_base, APP_INPUT_LEN));
    let mut sensor = FifoSensor::new(i2c, SENSOR_ADDRESS, SAMPLE_PERIOD_NS);
    let mut delay = VirtualDelay(&clock);
    let pin = RecordingPin::<'_, WINDOWS>::new(&clock, PULSE_NS);
    let mut indicator = ClassIndicator::new(pin, PULSE_NS).map_err(|_| AppError::Pin)?;
    sensor.start().map_err(AppError::Sensor)?;

    let mut profile = OpProfile::<APP_NUM_OPS>::new();
    let mut classes = [0usize; WINDOWS];
    let (mut ticks, mut checked, mut inference_stack) = (0u64, 0usize, 0usize);
    for (w, class) in classes.iter_mut().enumerate() {
        let c = app::classify_window(&mut sensor, &mut indicator, &mut delay, &mut interp, &mut profile)?;
        *class = c.class;
        ticks += c.ticks;
        inference_stack = inference_stack.max(c.stack);
        let out = interp.output_i8(0)?;
        let (scale, zp) = APP_OUTPUT_QUANT;
        let mut scores = [0f32; SHOWN];
        for (s, &q) in scores.iter_mut().zip(out) {
            *s = (i32::from(q) - zp) as f32 * scale;
        }
        defmt::info!(
            "window {=usize}: class {=usize} (score {=f32}), {=u64} instructions; scores {=[?]}",
            w,
            c.class,
            scores.get(c.class).copied().unwrap_or(f32::NAN),
            counter::instructions(c.ticks),
            &scores[..]
        );
        if let Some(g) = APP_GOLDEN {
            let want = g.expected(w, APP_OUTPUT_LEN);
            if want != out {
                defmt::error!("window {=usize}: output differs from TFLite Micro's: {=[?]} vs {=[?]}", w, out, want);
                fw::exit(1);
            }
            checked += out.len();
        }
    }
    let n = WINDOWS as u64;
    defmt::info!("per-op share over {=u64} inferences:", n);
    log_profile(&profile, n, true);

    // What the application signalled on the pin, decoded by the recording pin.
    let mut pin = indicator.release();
    let signalled = pin.classes();
    let same = signalled.len() == WINDOWS && signalled.iter().zip(&classes).all(|(&a, &b)| usize::from(a) == b);
    defmt::info!("pin signalled {=[?]}", signalled);
    if !same {
        defmt::error!("the pin signalled other classes than the model found: {=[?]}", &classes[..]);
        fw::exit(1);
    }
    if APP_GOLDEN.is_some() {
        defmt::info!("all {=usize} outputs of {=usize} windows bit-identical with TFLite Micro", checked, WINDOWS);
    }
    let peak = stack::peak();
    defmt::info!(
        "summary: board={=str} model={=str} model_bytes={=usize} arena_bytes={=usize} golden_bytes={=usize} stack_peak_bytes={=usize} inference_stack_bytes={=usize} instructions_per_inference={=u64} boot_check_instructions={=u64}",
        fw::BOARD,
        APP_MODEL_NAME,
        APP_MODEL_LEN,
        APP_ARENA_LEN,
        APP_GOLDEN.map_or(0, |g| g.expected.len()),
        peak,
        inference_stack,
        counter::instructions(ticks) / n,
        counter::instructions(load)
    );
    Ok(())
}
