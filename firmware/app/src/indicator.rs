//! Signals a class on an embedded-hal 1.0 [`OutputPin`] (an LED, or a GPIO a logic analyser or
//! another MCU watches): class `c` is `c + 1` pulses of `pulse_ns` high and `pulse_ns` low, then
//! a gap of [`GAP_PULSES`] pulse lengths.

use embedded_hal::delay::DelayNs;
use embedded_hal::digital::OutputPin;

/// Low time after the last pulse of a class, in pulse lengths: a low time this long ends a class.
pub const GAP_PULSES: u32 = 4;

/// A pin that shows the detected class as a pulse train.
pub struct ClassIndicator<P> {
    pin: P,
    pulse_ns: u32,
}

impl<P: OutputPin> ClassIndicator<P> {
    /// Drives `pin` low and uses pulses of `pulse_ns`.
    pub fn new(mut pin: P, pulse_ns: u32) -> Result<Self, P::Error> {
        pin.set_low()?;
        Ok(Self { pin, pulse_ns })
    }

    /// The pulse length.
    pub fn pulse_ns(&self) -> u32 {
        self.pulse_ns
    }

    /// Sends `class + 1` pulses, then the gap.
    pub fn signal<D: DelayNs>(&mut self, class: usize, delay: &mut D) -> Result<(), P::Error> {
        for _ in 0..=class {
            self.pin.set_high()?;
            delay.delay_ns(self.pulse_ns);
            self.pin.set_low()?;
            delay.delay_ns(self.pulse_ns);
        }
        delay.delay_ns(self.pulse_ns.saturating_mul(GAP_PULSES));
        Ok(())
    }

    /// Gives the pin back.
    pub fn release(self) -> P {
        self.pin
    }
}
