//! embedded-hal 1.0 implementations for QEMU, where there is no sensor and no LED: a
//! [`PlaybackSensor`] plays back recorded samples over the [`I2c`] protocol of
//! [`crate::sensor`], a [`RecordingPin`] records the classes signalled on it, and a
//! [`VirtualDelay`] advances a [`VirtualClock`] that both share (so the sensor's FIFO fills as
//! the application waits, as a real one would).
//!
//! The recording is the golden test set: window `s` holds the seeded input of sample `s`
//! ([`GoldenSamples`]), so what the application signals can be checked against TFLite Micro.

use core::cell::Cell;
use core::convert::Infallible;

use embedded_hal::delay::DelayNs;
use embedded_hal::digital::{ErrorType, OutputPin};
use embedded_hal::i2c::{self, I2c, NoAcknowledgeSource, Operation, SevenBitAddress};

use crate::SplitMix64;
use crate::indicator::GAP_PULSES;
use crate::sensor::{CTRL_START, FIFO_DEPTH, REG_CTRL, REG_FIFO_DATA, REG_FIFO_LEVEL, REG_WHO_AM_I, WHO_AM_I_VALUE};

/// Virtual time in nanoseconds, advanced only by [`VirtualDelay`].
#[derive(Default)]
pub struct VirtualClock(Cell<u64>);

impl VirtualClock {
    /// Time zero.
    pub const fn new() -> Self {
        Self(Cell::new(0))
    }
    /// The current time.
    pub fn now_ns(&self) -> u64 {
        self.0.get()
    }
    fn advance(&self, ns: u64) {
        self.0.set(self.0.get().saturating_add(ns));
    }
}

/// [`DelayNs`] on the virtual clock: returns at once, having moved the clock forward.
pub struct VirtualDelay<'c>(pub &'c VirtualClock);

impl DelayNs for VirtualDelay<'_> {
    fn delay_ns(&mut self, ns: u32) {
        self.0.advance(u64::from(ns));
    }
}

/// Where played-back samples come from.
pub trait SampleSource {
    /// The next sample.
    fn next_sample(&mut self) -> i8;
}

/// The golden inputs as one stream: window `s` (of `window` samples) is sample `s` of the
/// golden set, `SplitMix64::new(seed_base + s)`.
pub struct GoldenSamples {
    seed_base: u64,
    window: usize,
    sample: u64,
    pos: usize,
    rng: SplitMix64,
}

impl GoldenSamples {
    /// The stream of windows of `window` samples starting at `SplitMix64::new(seed_base)`.
    pub fn new(seed_base: u64, window: usize) -> Self {
        Self { seed_base, window: window.max(1), sample: 0, pos: 0, rng: SplitMix64::new(seed_base) }
    }
}

impl SampleSource for GoldenSamples {
    fn next_sample(&mut self) -> i8 {
        if self.pos == self.window {
            self.sample += 1;
            self.pos = 0;
            self.rng = SplitMix64::new(self.seed_base + self.sample);
        }
        self.pos += 1;
        let mut v = [0i8];
        self.rng.fill_i8(&mut v);
        v[0]
    }
}

/// A FIFO sensor on an I2C bus, played back: answers the register protocol of
/// [`crate::sensor`] at `address`, producing one sample of `source` per `period_ns` of virtual
/// time once started.
pub struct PlaybackSensor<'c, S> {
    clock: &'c VirtualClock,
    source: S,
    address: SevenBitAddress,
    period_ns: u64,
    who_am_i: u8,
    /// When the next sample is taken (None until started).
    next_due: Option<u64>,
    fifo: [i8; FIFO_DEPTH],
    head: usize,
    level: usize,
    stalled: u64,
    transactions: u32,
}

/// The error of [`PlaybackSensor`]: always a NACK (wrong address, unknown register).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaybackError(pub i2c::ErrorKind);

impl i2c::Error for PlaybackError {
    fn kind(&self) -> i2c::ErrorKind {
        self.0
    }
}

impl<'c, S: SampleSource> PlaybackSensor<'c, S> {
    /// A device at `address` playing `source` back, one sample per `period_ns`.
    pub fn new(clock: &'c VirtualClock, address: SevenBitAddress, period_ns: u32, source: S) -> Self {
        Self {
            clock,
            source,
            address,
            period_ns: u64::from(period_ns.max(1)),
            who_am_i: WHO_AM_I_VALUE,
            next_due: None,
            fifo: [0; FIFO_DEPTH],
            head: 0,
            level: 0,
            stalled: 0,
            transactions: 0,
        }
    }

    /// Makes the device answer WHO_AM_I with `v` (to test the driver's identity check).
    pub fn with_who_am_i(mut self, v: u8) -> Self {
        self.who_am_i = v;
        self
    }

    /// Sampling periods skipped because the FIFO was full (no sample is lost: sampling pauses).
    pub fn stalled_periods(&self) -> u64 {
        self.stalled
    }

    /// Bus transactions served.
    pub fn transactions(&self) -> u32 {
        self.transactions
    }

    /// Moves the samples due by now into the FIFO. A full FIFO stops sampling (the "FIFO mode" of
    /// sensors such as the LIS3DH): no recorded sample is lost, the recording resumes when there
    /// is room, so window `s` read by a driver is exactly sample `s` of the recording.
    fn catch_up(&mut self) {
        let Some(next) = self.next_due else { return };
        let now = self.clock.now_ns();
        let mut next = next;
        while next <= now {
            if self.level == FIFO_DEPTH {
                let periods = (now - next) / self.period_ns + 1;
                self.stalled = self.stalled.saturating_add(periods);
                next += periods * self.period_ns;
                break;
            }
            let v = self.source.next_sample();
            let tail = (self.head + self.level) % FIFO_DEPTH;
            if let Some(slot) = self.fifo.get_mut(tail) {
                *slot = v;
            }
            self.level += 1;
            next += self.period_ns;
        }
        self.next_due = Some(next);
    }

    fn read_register(&mut self, reg: u8, buf: &mut [u8]) -> Result<(), PlaybackError> {
        match reg {
            REG_WHO_AM_I => buf.fill(self.who_am_i),
            REG_FIFO_LEVEL => {
                self.catch_up();
                buf.fill(self.level as u8);
            }
            REG_FIFO_DATA => {
                self.catch_up();
                for b in buf {
                    // Reading an empty FIFO returns 0, as typical devices do.
                    *b = if self.level > 0 {
                        let v = self.fifo.get(self.head).copied().unwrap_or(0);
                        self.head = (self.head + 1) % FIFO_DEPTH;
                        self.level -= 1;
                        v as u8
                    } else {
                        0
                    };
                }
            }
            _ => return Err(PlaybackError(i2c::ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data))),
        }
        Ok(())
    }
}

impl<S> i2c::ErrorType for PlaybackSensor<'_, S> {
    type Error = PlaybackError;
}

impl<S: SampleSource> I2c for PlaybackSensor<'_, S> {
    fn transaction(&mut self, address: SevenBitAddress, operations: &mut [Operation<'_>]) -> Result<(), Self::Error> {
        self.transactions += 1;
        if address != self.address {
            return Err(PlaybackError(i2c::ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)));
        }
        let mut reg = None;
        for op in operations {
            match op {
                Operation::Write(bytes) => match bytes {
                    [r] => reg = Some(*r),
                    [REG_CTRL, v] => {
                        if *v & CTRL_START != 0 && self.next_due.is_none() {
                            self.next_due = Some(self.clock.now_ns() + self.period_ns);
                        }
                    }
                    _ => return Err(PlaybackError(i2c::ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data))),
                },
                Operation::Read(buf) => match reg {
                    Some(r) => self.read_register(r, buf)?,
                    None => return Err(PlaybackError(i2c::ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data))),
                },
            }
        }
        Ok(())
    }
}

/// An [`OutputPin`] that decodes the pulse trains of [`crate::indicator::ClassIndicator`] as
/// they happen and keeps the classes (up to `N`).
pub struct RecordingPin<'c, const N: usize> {
    clock: &'c VirtualClock,
    pulse_ns: u64,
    high: bool,
    last_fall: u64,
    pulses: usize,
    classes: [u16; N],
    len: usize,
    dropped: usize,
}

impl<'c, const N: usize> RecordingPin<'c, N> {
    /// A pin expecting pulses of `pulse_ns`.
    pub fn new(clock: &'c VirtualClock, pulse_ns: u32) -> Self {
        Self {
            clock,
            pulse_ns: u64::from(pulse_ns),
            high: false,
            last_fall: 0,
            pulses: 0,
            classes: [0; N],
            len: 0,
            dropped: 0,
        }
    }

    fn close_group(&mut self) {
        if self.pulses > 0 {
            match self.classes.get_mut(self.len) {
                Some(c) => {
                    *c = (self.pulses - 1).min(u16::MAX as usize) as u16;
                    self.len += 1;
                }
                None => self.dropped += 1,
            }
            self.pulses = 0;
        }
    }

    /// The classes signalled so far (a pulse train counts once its gap has passed).
    pub fn classes(&mut self) -> &[u16] {
        if !self.high && self.pulses > 0 && self.clock.now_ns() - self.last_fall >= self.gap() {
            self.close_group();
        }
        self.classes.get(..self.len).unwrap_or(&[])
    }

    /// Classes that did not fit in `N`.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    fn gap(&self) -> u64 {
        self.pulse_ns * u64::from(GAP_PULSES)
    }
}

impl<const N: usize> ErrorType for RecordingPin<'_, N> {
    type Error = Infallible;
}

impl<const N: usize> OutputPin for RecordingPin<'_, N> {
    fn set_high(&mut self) -> Result<(), Infallible> {
        if !self.high {
            let now = self.clock.now_ns();
            if self.pulses > 0 && now - self.last_fall >= self.gap() {
                self.close_group();
            }
            self.pulses += 1;
            self.high = true;
        }
        Ok(())
    }

    fn set_low(&mut self) -> Result<(), Infallible> {
        if self.high {
            self.high = false;
            self.last_fall = self.clock.now_ns();
        }
        Ok(())
    }
}
