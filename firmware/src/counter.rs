//! Instruction counts under QEMU: SysTick ticks (see [`microquant_app::counter`]) converted with
//! the clock QEMU gives SysTick on the board this image was built for.

pub use microquant_app::counter::{now, on_systick, start, ticks_to_ns};

/// The core clock QEMU gives SysTick on each board (Hz). mps2-an386/an500: 25 MHz; an505:
/// 20 MHz; an547: 32 MHz; micro:bit (nRF51): 16 MHz.
pub const fn sysclk_hz(board: &str) -> u32 {
    match board.as_bytes() {
        b"mps2-an505" => 20_000_000,
        b"mps3-an547" => 32_000_000,
        b"microbit" => 16_000_000,
        _ => 25_000_000,
    }
}

/// The clock of the board this image was built for.
pub const SYSCLK_HZ: u32 = sysclk_hz(crate::BOARD);

/// Instructions under `-icount shift=0` for `ticks` SysTick ticks.
pub fn instructions(ticks: u64) -> u64 {
    ticks_to_ns(ticks, SYSCLK_HZ)
}
