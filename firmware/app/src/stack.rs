//! Peak stack use, measured by painting the free stack with a pattern and finding the lowest
//! overwritten word later: the application's peak since start-up ([`paint`], [`peak`]; the RAM
//! figures of `BENCHMARKS.md`) and the stack one call takes below its caller's stack pointer
//! ([`measure`], the inference's own stack).

use core::ptr::{addr_of, read_volatile, write_volatile};
use core::sync::atomic::{AtomicUsize, Ordering};

const PAINT: u32 = 0xC0DE_57AC;
/// Bytes below the current stack pointer left unpainted (the painting function's own frame).
const MARGIN: usize = 64;
/// How far below the stack pointer [`measure`] paints (a call that goes deeper reports this).
const MEASURE_WINDOW: usize = 32 * 1024;

/// The deepest stack (bytes from the top of RAM) seen before a [`measure`] repainted the area
/// below the stack pointer, which wipes the traces [`peak`] reads.
static DEEPEST: AtomicUsize = AtomicUsize::new(0);

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

/// The lowest address in `[from, hi)` (4-aligned) above which the pattern is no longer intact.
fn lowest_touched(from: usize, hi: usize) -> usize {
    let mut p = (from + 3) & !3;
    while p + 4 <= hi {
        // SAFETY: reads 4-aligned RAM inside the stack region declared by the linker script.
        if unsafe { read_volatile(p as *const u32) } != PAINT {
            break;
        }
        p += 4;
    }
    p
}

/// The deepest the stack has been since [`paint`], in bytes from the top of RAM.
pub fn peak() -> usize {
    let (lo, hi) = bounds();
    (hi - lowest_touched(lo, hi)).max(DEEPEST.load(Ordering::Relaxed))
}

/// Runs `f` and returns its result with the stack it took: the deepest point below this
/// function's stack pointer that `f` (its frame, its callees' and any interrupt taken meanwhile)
/// reached, in bytes. Up to 32 KB below the stack pointer (bounded by the stack's end) is
/// painted first; a call that goes deeper reports the painted depth.
#[inline(never)]
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let (lo, hi) = bounds();
    // What `peak` would have found so far; repainting below the stack pointer erases it.
    let before = hi - lowest_touched(lo, hi);
    DEEPEST.store(before.max(DEEPEST.load(Ordering::Relaxed)), Ordering::Relaxed);
    let sp = cortex_m::register::msp::read() as usize;
    let bottom = lo.max(sp.saturating_sub(MEASURE_WINDOW));
    let mut p = (bottom + 3) & !3;
    // The loop runs in this function's frame (no call), so everything below `sp` is unused.
    while p + 4 <= sp {
        // SAFETY: [bottom, sp) lies inside the stack region cortex-m-rt's link.x reserves, below
        // every live frame (the stack grows down and currently ends at `sp`, and the painting
        // loop calls nothing); the address is 4-aligned.
        unsafe { write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
    let r = f();
    (r, sp - lowest_touched(bottom, sp))
}
