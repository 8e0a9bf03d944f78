//! A sensor driver over embedded-hal 1.0 [`I2c`]: reads a window of int8 samples from a sensor
//! with a sample FIFO (an accelerometer or a microphone front end that delivers one int8 sample
//! per sampling period), waiting with [`DelayNs`] while the FIFO fills.
//!
//! Register map (the common shape of FIFO sensors such as the LIS3DH or the ADXL345):
//!
//! | register | access | meaning |
//! |---|---|---|
//! | `0x0F` WHO_AM_I | read | [`WHO_AM_I_VALUE`] |
//! | `0x20` CTRL | write | bit 0: start sampling (one sample per period) |
//! | `0x3A` FIFO_LEVEL | read | samples waiting (0..=[`FIFO_DEPTH`]) |
//! | `0x3B` FIFO_DATA | read (burst) | pops samples, oldest first, one int8 per byte |
//!
//! The driver works with any HAL's I2C (`stm32f4xx-hal`, `nrf52840-hal`, ...; see
//! `firmware/README.md`) and with [`crate::playback::PlaybackSensor`] under QEMU.

use embedded_hal::delay::DelayNs;
use embedded_hal::i2c::{Error as _, ErrorKind, I2c};

/// WHO_AM_I register.
pub const REG_WHO_AM_I: u8 = 0x0F;
/// CTRL register.
pub const REG_CTRL: u8 = 0x20;
/// FIFO level register.
pub const REG_FIFO_LEVEL: u8 = 0x3A;
/// FIFO data register (burst read).
pub const REG_FIFO_DATA: u8 = 0x3B;
/// The WHO_AM_I value of the device.
pub const WHO_AM_I_VALUE: u8 = 0x6A;
/// CTRL bit 0: sampling on.
pub const CTRL_START: u8 = 0x01;
/// Samples the FIFO holds.
pub const FIFO_DEPTH: usize = 32;
/// Samples read per burst: the driver waits until this many (or the rest of the window) are
/// waiting, so a window costs `len / BURST` bus transactions, not `len`.
pub const BURST: usize = 16;

/// What can go wrong reading the sensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SensorError {
    /// The bus reported an error (NACK, arbitration loss, ...).
    Bus(ErrorKind),
    /// WHO_AM_I returned this instead of [`WHO_AM_I_VALUE`].
    WrongDevice(u8),
    /// The FIFO stayed empty for this many sampling periods.
    Timeout(u32),
}

impl defmt::Format for SensorError {
    fn format(&self, f: defmt::Formatter) {
        match self {
            SensorError::Bus(k) => defmt::write!(f, "I2C error: {=str}", error_kind_name(*k)),
            SensorError::WrongDevice(v) => {
                defmt::write!(f, "WHO_AM_I is {=u8:#04x}, expected {=u8:#04x}", v, WHO_AM_I_VALUE)
            }
            SensorError::Timeout(p) => defmt::write!(f, "no sample for {=u32} sampling periods", p),
        }
    }
}

/// A short name of an embedded-hal I2C error kind.
pub fn error_kind_name(k: ErrorKind) -> &'static str {
    use embedded_hal::i2c::NoAcknowledgeSource as N;
    match k {
        ErrorKind::Bus => "bus error",
        ErrorKind::ArbitrationLoss => "arbitration lost",
        ErrorKind::NoAcknowledge(N::Address) => "no acknowledge (address)",
        ErrorKind::NoAcknowledge(N::Data) => "no acknowledge (data)",
        ErrorKind::NoAcknowledge(_) => "no acknowledge",
        ErrorKind::Overrun => "overrun",
        _ => "other",
    }
}

/// The driver: owns the bus (or a shared-bus device) and knows the sampling period.
pub struct FifoSensor<I> {
    i2c: I,
    address: u8,
    period_ns: u32,
}

impl<I: I2c> FifoSensor<I> {
    /// A driver for the device at `address` sampling every `period_ns` nanoseconds.
    pub fn new(i2c: I, address: u8, period_ns: u32) -> Self {
        Self { i2c, address, period_ns }
    }

    /// The sampling period.
    pub fn period_ns(&self) -> u32 {
        self.period_ns
    }

    fn bus<T>(r: Result<T, I::Error>) -> Result<T, SensorError> {
        r.map_err(|e| SensorError::Bus(e.kind()))
    }

    /// Checks the device's identity and starts sampling.
    pub fn start(&mut self) -> Result<(), SensorError> {
        let mut id = [0u8];
        Self::bus(self.i2c.write_read(self.address, &[REG_WHO_AM_I], &mut id))?;
        if id[0] != WHO_AM_I_VALUE {
            return Err(SensorError::WrongDevice(id[0]));
        }
        Self::bus(self.i2c.write(self.address, &[REG_CTRL, CTRL_START]))
    }

    /// Fills `window` with the next `window.len()` samples, oldest first: polls the FIFO level and,
    /// while fewer than a burst ([`BURST`] or the rest of the window) are waiting, sleeps (with
    /// `delay`) for the sampling periods still missing; then reads what is waiting in one burst.
    pub fn read_window<D: DelayNs>(&mut self, delay: &mut D, window: &mut [i8]) -> Result<(), SensorError> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(window);
        let mut filled = 0;
        let mut idle: u32 = 0;
        let limit = 4 * (BURST as u32) + 16;
        while let Some(rest) = bytes.get_mut(filled..).filter(|r| !r.is_empty()) {
            let want = rest.len().min(BURST);
            let mut level = [0u8];
            Self::bus(self.i2c.write_read(self.address, &[REG_FIFO_LEVEL], &mut level))?;
            let level = usize::from(level[0]).min(FIFO_DEPTH);
            if level < want {
                // Wait for the missing samples of the burst.
                let missing = (want - level) as u32;
                idle = idle.saturating_add(missing);
                if idle > limit {
                    return Err(SensorError::Timeout(idle));
                }
                delay.delay_ns(self.period_ns.saturating_mul(missing));
                continue;
            }
            idle = 0;
            let n = level.min(rest.len());
            if let Some(dst) = rest.get_mut(..n) {
                Self::bus(self.i2c.write_read(self.address, &[REG_FIFO_DATA], dst))?;
            }
            filled += n;
        }
        Ok(())
    }

    /// Gives the bus back.
    pub fn release(self) -> I {
        self.i2c
    }
}
