//! Peak stack use, measured by painting the free stack with a pattern at start-up and finding
//! the lowest overwritten word later (the RAM figures of `BENCHMARKS.md`).

use core::ptr::{addr_of, read_volatile, write_volatile};

const PAINT: u32 = 0xC0DE_57AC;
/// Bytes below the current stack pointer left unpainted (the painting function's own frame).
const MARGIN: usize = 64;

unsafe extern "C" {
    /// Lowest address of the stack (end of `.bss`/`.uninit`), from cortex-m-rt's link.x.
    static _stack_end: u32;
    /// Initial stack pointer (top of RAM), from cortex-m-rt's link.x.
    static _stack_start: u32;
}

fn bounds() -> (usize, usize) {
    // Only the addresses of the linker symbols are taken, never their contents.
    (addr_of!(_stack_end) as usize, addr_of!(_stack_start) as usize)
}

/// Bytes between the end of the statics and the top of RAM (the stack's room).
pub fn room() -> usize {
    let (lo, hi) = bounds();
    hi - lo
}

/// Fills the unused stack (from the end of the statics up to just below the current stack
/// pointer) with a pattern. Call it first thing in `main`.
#[inline(never)]
pub fn paint() {
    let (lo, _) = bounds();
    let sp = cortex_m::register::msp::read() as usize;
    let mut p = (lo + 3) & !3;
    while p + 4 <= sp.saturating_sub(MARGIN) {
        // SAFETY: [lo, sp - MARGIN) is RAM that cortex-m-rt's link.x reserves for the stack and
        // that no live frame uses yet (the stack grows down from `_stack_start` and currently
        // ends at `sp`); the address is 4-aligned.
        unsafe { write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// The deepest the stack has been since [`paint`], in bytes from the top of RAM.
pub fn peak() -> usize {
    let (lo, hi) = bounds();
    let mut p = (lo + 3) & !3;
    while p + 4 <= hi {
        // SAFETY: reads 4-aligned RAM inside the stack region declared by the linker script.
        if unsafe { read_volatile(p as *const u32) } != PAINT {
            break;
        }
        p += 4;
    }
    hi - p
}
