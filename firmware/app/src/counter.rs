//! Counting with SysTick: core clock cycles on hardware, instructions under QEMU.
//!
//! SysTick is clocked by the core clock, so on a board [`now`] counts cycles. Under
//! `qemu-system-arm -icount shift=0` virtual time advances 1 ns per guest instruction, so
//! `instructions = ticks * 1e9 / SYSCLK` ([`ticks_to_ns`]; `../shared/TOOLCHAIN.md` §4; DWT's
//! cycle counter reads 0 in QEMU). Under QEMU without `-icount` the counts follow the host's
//! speed and mean nothing.
//!
//! The 24-bit counter wraps every 2^24 ticks (671 M instructions on a 25 MHz board); the images
//! that count install [`count_systick_wraps!`](crate::count_systick_wraps), whose SysTick
//! handler counts the wraps, so [`now`] is a 64-bit tick count.

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::{SCB, SYST, syst::SystClkSource};

/// Wraps of the 24-bit counter; only the SysTick handler writes it.
static WRAPS: AtomicU32 = AtomicU32::new(0);

const RELOAD: u32 = 0x00FF_FFFF;

/// Called by the SysTick handler of [`count_systick_wraps!`](crate::count_systick_wraps).
#[doc(hidden)]
pub fn on_systick() {
    WRAPS.store(WRAPS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// Defines the SysTick exception handler that extends the counter to 64 bits. Put it once in a
/// binary or test that uses [`start`].
#[macro_export]
macro_rules! count_systick_wraps {
    () => {
        #[cortex_m_rt::exception]
        fn SysTick() {
            $crate::counter::on_systick();
        }
    };
}

/// Starts SysTick from the core clock, counting down from 2^24 - 1, with its wrap interrupt.
pub fn start(syst: &mut SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(RELOAD);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// Ticks since [`start`] (64-bit, counting the wraps the handler has seen and one that is
/// pending but not yet handled).
pub fn now() -> u64 {
    loop {
        let w0 = WRAPS.load(Ordering::Relaxed);
        let cur = SYST::get_current() & RELOAD;
        let pending = SCB::is_pendst_pending();
        let w1 = WRAPS.load(Ordering::Relaxed);
        if w0 != w1 {
            continue; // the handler ran in between: read again
        }
        // A wrap that is pending (not yet counted) shows as a counter that has just reloaded.
        let extra = u64::from(pending && cur > RELOAD / 2);
        let wraps = u64::from(w0) + extra;
        return wraps * (u64::from(RELOAD) + 1) + u64::from(RELOAD - cur);
    }
}

/// Nanoseconds of `ticks` SysTick ticks at a core clock of `sysclk_hz`: under QEMU with
/// `-icount shift=0`, instructions.
pub fn ticks_to_ns(ticks: u64, sysclk_hz: u32) -> u64 {
    ticks.saturating_mul(1_000_000_000) / u64::from(sysclk_hz.max(1))
}
