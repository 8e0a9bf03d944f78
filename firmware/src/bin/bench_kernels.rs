//! Kernel benchmark: every distinct conv, depthwise and fully connected layer shape of the four
//! MLPerf Tiny int8 models (`firmware/bench/layers.rs`), run with random data through the
//! reference kernel and through the dispatched kernel (the fast path of this target), timed
//! with SysTick. Under QEMU with `-icount shift=N` SysTick counts guest instructions, so the
//! numbers are instruction counts: deterministic, but not cycles (no pipeline or memory model).
//! A calibration (blocks of 1000 and 3000 `NOP`s) turns ticks into instructions whatever the
//! board clock and shift; a SysTick interrupt counts wraps of the 24-bit counter, so no shift
//! is too fine. Also checks that both paths give the same output. `scripts/bench-kernels.sh`
//! runs it on mps2-an386 and writes the table in BENCHMARKS.md. `MQ_BENCH_LAYERS="3,12"` at build
//! time runs only those layers (indices into `LAYERS`), e.g. to profile one kernel.
//!
//! One line per layer (parsed by the script): `layer=<i> model=<m> ops=<n> kind=<conv|depthwise|fc>
//! in=<h>x<w>x<c> out=<h>x<w>x<c> k=<kh>x<kw> s=<stride> macs=<n> ref=<insns> fast=<insns> same=<bool>`
//! (fully connected: `in=1x1x<depth>`, `k` the weight matrix `<out>x<in>`).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::{SYST, syst::SystClkSource};
use cortex_m_rt::{entry, exception};
use microquant_firmware as fw;

#[path = "../../bench/layers.rs"]
#[allow(dead_code)]
mod layers;
#[path = "../../../tests/src/rng.rs"]
#[allow(dead_code)]
mod rng;
#[path = "../../bench/run.rs"]
mod run;

use layers::{Kind, LAYERS};
use run::{Bufs, MAX_CH, MAX_FILTER, MAX_IN, MAX_OUT, MAX_SCRATCH};

/// Wraps of SysTick's 24-bit counter (only the SysTick handler writes it).
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.store(WRAPS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// Ticks since the counter started (SysTick counts down from 0xFF_FFFF and reloads).
#[inline(never)]
fn now() -> u64 {
    loop {
        let w0 = WRAPS.load(Ordering::Relaxed);
        let v = SYST::get_current();
        if WRAPS.load(Ordering::Relaxed) == w0 {
            return (w0 as u64) << 24 | (0x00FF_FFFF - v) as u64;
        }
    }
}

/// Ticks taken by `f`.
#[inline(never)]
fn ticks(f: &mut dyn FnMut()) -> u64 {
    let t0 = now();
    f();
    now() - t0
}

/// `(overhead, ticks per instruction)` from blocks of 1000 and 3000 NOPs.
fn calibrate() -> (f32, f32) {
    let t1 = ticks(&mut || {
        // SAFETY: NOPs only: no memory, no registers, no flags.
        unsafe { core::arch::asm!(".rept 1000", "nop", ".endr", options(nomem, nostack, preserves_flags)) }
    });
    let t3 = ticks(&mut || {
        // SAFETY: as above.
        unsafe { core::arch::asm!(".rept 3000", "nop", ".endr", options(nomem, nostack, preserves_flags)) }
    });
    let per = (t3 - t1) as f32 / 2000.0;
    (t1 as f32 - 1000.0 * per, per)
}

#[entry]
fn main() -> ! {
    let Some(mut cp) = cortex_m::Peripherals::take() else { fw::exit(2) };
    cp.SYST.set_clock_source(SystClkSource::Core);
    cp.SYST.set_reload(0x00FF_FFFF);
    cp.SYST.clear_current();
    cp.SYST.enable_interrupt();
    cp.SYST.enable_counter();

    let (overhead, per_insn) = calibrate();
    let insns = |t: u64| ((t as f32 - overhead) / per_insn) as u64;
    defmt::info!(
        "bench_kernels on {=str}: {=f32} ticks per instruction, {=f32} ticks overhead (target {=str})",
        fw::BOARD,
        per_insn,
        overhead,
        if cfg!(target_arch = "arm") { "arm" } else { "?" }
    );
    // The buffers live on the stack (about 150 KB: mps2 boards have megabytes of RAM).
    let (mut x, mut w) = ([0i8; MAX_IN], [0i8; MAX_FILTER]);
    let (mut bias, mut m, mut s) = ([0i32; MAX_CH], [0i32; MAX_CH], [0i32; MAX_CH]);
    let (mut want, mut got, mut scratch) = ([0i8; MAX_OUT], [0i8; MAX_OUT], [0u8; MAX_SCRATCH]);
    let mut b = Bufs {
        x: &mut x,
        w: &mut w,
        bias: &mut bias,
        m: &mut m,
        s: &mut s,
        want: &mut want,
        got: &mut got,
        scratch: &mut scratch,
    };
    let mut all_same = true;
    // MQ_BENCH_LAYERS="3,12" at build time runs only those layers (for profiling one kernel).
    let only = option_env!("MQ_BENCH_LAYERS");
    let selected = |i: usize| only.is_none_or(|l| l.split(',').any(|x| x.trim().parse() == Ok(i)));
    for (i, l) in LAYERS.iter().enumerate().filter(|(i, _)| selected(*i)) {
        let Some((t_ref, t_fast, same)) = run::run(l, &mut b, 1000 + i as u64, |f| ticks(f)) else {
            defmt::error!("layer {=usize}: buffers too small or bad shape", i);
            fw::exit(2)
        };
        all_same &= same;
        let kind = match l.kind {
            Kind::Conv => "conv",
            Kind::Depthwise => "depthwise",
            Kind::FullyConnected => "fc",
        };
        let (i4, o4, f4) = (l.input, l.output, l.filter);
        let k2 = if l.kind == Kind::FullyConnected { (f4[0], f4[1]) } else { (f4[1], f4[2]) };
        defmt::info!(
            "layer={=usize} model={=str} ops={=usize} kind={=str} in={=usize}x{=usize}x{=usize} out={=usize}x{=usize}x{=usize} k={=usize}x{=usize} s={=usize} macs={=usize} ref={=u64} fast={=u64} same={=bool}",
            i,
            l.model,
            l.ops.len(),
            kind,
            i4[1],
            i4[2],
            i4[3],
            o4[1],
            o4[2],
            o4[3],
            k2.0,
            k2.1,
            l.stride[0],
            l.macs(),
            insns(t_ref),
            insns(t_fast),
            same
        );
    }
    fw::exit(if all_same { 0 } else { 1 })
}
