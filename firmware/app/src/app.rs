//! The application, independent of the board: read a window of samples from the sensor into the
//! model's input, run the model, signal the class. Everything it touches is an embedded-hal 1.0
//! trait ([`I2c`] through [`FifoSensor`], [`OutputPin`] through [`ClassIndicator`], [`DelayNs`]),
//! so the same code runs under QEMU (with [`crate::playback`]) and on a board with its HAL
//! (`firmware/README.md`).

use embedded_hal::delay::DelayNs;
use embedded_hal::digital::OutputPin;
use embedded_hal::i2c::I2c;
use microquant::interp::{Interpreter, OpSet, Profiler};

use crate::indicator::ClassIndicator;
use crate::sensor::{FifoSensor, SensorError};
use crate::{counter, stack};

/// The I2C address of the sensor.
pub const SENSOR_ADDRESS: u8 = 0x19;
/// Sampling period of the sensor: 62.5 us (16 kHz).
pub const SAMPLE_PERIOD_NS: u32 = 62_500;
/// Length of one pulse of the class indicator: 1 ms.
pub const PULSE_NS: u32 = 1_000_000;

/// What the application found in one window.
#[derive(Clone, Copy, Debug, defmt::Format)]
pub struct Classification {
    /// The class with the highest score (the first one on a tie).
    pub class: usize,
    /// Its quantized score.
    pub score: i8,
    /// SysTick ticks the inference took (see [`counter`]).
    pub ticks: u64,
    /// Bytes of stack the inference took below the caller's stack pointer ([`stack::measure`]).
    pub stack: usize,
}

/// What can go wrong in [`classify_window`].
#[derive(Clone, Copy, Debug)]
pub enum AppError {
    /// Reading the sensor failed.
    Sensor(SensorError),
    /// The class pin could not be driven.
    Pin,
    /// The interpreter refused (it validated the model at load, so this means a wrong tensor
    /// type or an internal error).
    Model(microquant::Error),
}

impl defmt::Format for AppError {
    fn format(&self, f: defmt::Formatter) {
        match self {
            AppError::Sensor(e) => defmt::write!(f, "sensor: {}", e),
            AppError::Pin => defmt::write!(f, "the class pin failed"),
            AppError::Model(e) => defmt::write!(f, "model: {}", e),
        }
    }
}

impl From<microquant::Error> for AppError {
    fn from(e: microquant::Error) -> Self {
        AppError::Model(e)
    }
}

/// The index of the largest value (the first on a tie; 0 for an empty slice).
pub fn argmax(x: &[i8]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if x.get(best).is_some_and(|&b| v > b) {
            best = i;
        }
    }
    best
}

/// One round of the application: fills the model input with a window from `sensor`, runs the
/// model (telling `profiler` about each op), signals the class on `indicator`.
pub fn classify_window<I, P, D, R, S>(
    sensor: &mut FifoSensor<I>,
    indicator: &mut ClassIndicator<P>,
    delay: &mut D,
    interp: &mut Interpreter<'_, '_, S>,
    profiler: &mut R,
) -> Result<Classification, AppError>
where
    I: I2c,
    P: OutputPin,
    D: DelayNs,
    R: Profiler,
    S: OpSet,
{
    sensor.read_window(delay, interp.input_i8(0)?).map_err(AppError::Sensor)?;
    let (r, stack) = stack::measure(|| {
        let t0 = counter::now();
        let r = interp.invoke_profiled(profiler);
        (r, counter::now().wrapping_sub(t0))
    });
    let ticks = r.1;
    r.0?;
    let out = interp.output_i8(0)?;
    let class = argmax(out);
    let score = out.get(class).copied().unwrap_or(i8::MIN);
    indicator.signal(class, delay).map_err(|_| AppError::Pin)?;
    Ok(Classification { class, score, ticks, stack })
}
