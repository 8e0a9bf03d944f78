//! The model runner behind `microquant run --target qemu-*`: runs any `.mq` on inputs from the
//! host, with no rebuild per model.
//!
//! Through semihosting file I/O (relative to QEMU's working directory) it reads `model.mq` and
//! `input.bin` (int8 samples, each the model input's size, back to back), runs every sample and
//! writes the outputs back to back to `output.bin`, logging the instructions of each inference
//! (SysTick; exact under `-icount shift=0`) and a final line
//! `result: samples=N instructions_total=T instructions_min=A instructions_max=B`.
//!
//! Memory: the model and its arena share one static buffer of `RUNNER_POOL_LEN` bytes (the
//! board's RAM minus a quarter of it, at least 6 KB and at most 64 KB, for the stack and statics:
//! 4,128,768 bytes on the mps2 boards, 458,752 on the mps3-an547, 10,240 on the micro:bit). A model whose file plus
//! arena exceeds it is refused with both numbers. Exit status 0 on success, 1 on any error (one
//! `ERROR` line says which).
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use microquant::interp::{Interpreter, OpKinds, OpSet};
use microquant::model::Model;
use microquant_firmware::models::Arena;
use microquant_firmware::models::runner::RUNNER_POOL_LEN;
use microquant_firmware::{self as fw, counter, stack};
use semihosting::fs::File;
use semihosting::io::{Read, Write};

fw::count_systick_wraps!();

/// What the runner runs: every op kind, int4 weights included (they run the int8 kernels on the
/// filter unpacked into the op's scratch, so they add only the unpacking code, also on the
/// micro:bit's 256 KB of flash).
struct RunnerOps;

impl OpSet for RunnerOps {
    const KINDS: OpKinds = OpKinds::ALL;
}

/// Why the runner stopped.
enum RunError {
    /// A file could not be opened, read or written.
    Io(&'static str, &'static str),
    /// The model does not fit the buffer.
    TooBig { model: usize, arena: usize, pool: usize },
    /// `input.bin` is not a whole number of samples.
    Ragged { bytes: usize, per_sample: usize },
    /// The interpreter refused the model.
    Model(microquant::Error),
}

impl defmt::Format for RunError {
    fn format(&self, f: defmt::Formatter) {
        match self {
            RunError::Io(file, what) => defmt::write!(f, "{=str}: {=str}", file, what),
            RunError::TooBig { model, arena: 0, pool } => defmt::write!(
                f,
                "model.mq ({=usize} B) does not fit the runner's {=usize} B buffer for model and arena on {=str}",
                model,
                pool,
                fw::BOARD
            ),
            RunError::TooBig { model, arena, pool } => defmt::write!(
                f,
                "model.mq ({=usize} B) and its arena ({=usize} B) do not fit the runner's {=usize} B buffer on {=str}",
                model,
                arena,
                pool,
                fw::BOARD
            ),
            RunError::Ragged { bytes, per_sample } => defmt::write!(
                f,
                "input.bin has {=usize} B, not a whole number of {=usize} B samples (the model's input)",
                bytes,
                per_sample
            ),
            RunError::Model(e) => defmt::write!(f, "model.mq: {}", e),
        }
    }
}

impl From<microquant::Error> for RunError {
    fn from(e: microquant::Error) -> Self {
        RunError::Model(e)
    }
}

#[entry]
fn main() -> ! {
    static mut POOL: Arena<RUNNER_POOL_LEN> = Arena::new();
    stack::paint();
    let Some(mut cp) = cortex_m::Peripherals::take() else { fw::exit(1) };
    counter::start(&mut cp.SYST);
    match run(&mut POOL.0) {
        Ok(()) => fw::exit(0),
        Err(e) => {
            defmt::error!("{}", e);
            fw::exit(1)
        }
    }
}

/// Reads up to `buf.len()` bytes (fewer only at the end of the file).
fn read_full(f: &mut File, buf: &mut [u8], what: &'static str) -> Result<usize, RunError> {
    let mut n = 0;
    while let Some(rest) = buf.get_mut(n..).filter(|r| !r.is_empty()) {
        match f.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(_) => return Err(RunError::Io(what, "read failed")),
        }
    }
    Ok(n)
}

fn run(pool: &mut [u8]) -> Result<(), RunError> {
    let mut mf = File::open(c"model.mq").map_err(|_| RunError::Io("model.mq", "cannot open"))?;
    let model_len = mf.metadata().map_err(|_| RunError::Io("model.mq", "cannot get its size"))?.len() as usize;
    if model_len > pool.len() {
        return Err(RunError::TooBig { model: model_len, arena: 0, pool: pool.len() });
    }
    // The model first (16-byte aligned: the pool is), the arena after it, 16-byte aligned.
    let split = model_len.div_ceil(16) * 16;
    let (model_buf, arena) = pool.split_at_mut(split.min(pool.len()));
    let model_bytes = model_buf.get_mut(..model_len).ok_or(RunError::Io("model.mq", "size"))?;
    if read_full(&mut mf, model_bytes, "model.mq")? != model_len {
        return Err(RunError::Io("model.mq", "shorter than its size"));
    }
    drop(mf);
    let model_bytes: &[u8] = model_bytes;
    let needed = Model::parse(model_bytes)?.arena_len();
    if needed > arena.len() {
        return Err(RunError::TooBig { model: model_len, arena: needed, pool: RUNNER_POOL_LEN });
    }
    let mut it = Interpreter::<RunnerOps>::with_op_set(model_bytes, arena)?;
    let per_in = it.input_i8(0)?.len();
    let per_out = it.output_i8(0)?.len();

    let mut inf = File::open(c"input.bin").map_err(|_| RunError::Io("input.bin", "cannot open"))?;
    let in_len = inf.metadata().map_err(|_| RunError::Io("input.bin", "cannot get its size"))?.len() as usize;
    if per_in == 0 || !in_len.is_multiple_of(per_in) {
        return Err(RunError::Ragged { bytes: in_len, per_sample: per_in });
    }
    let samples = in_len / per_in;
    let mut outf = File::create(c"output.bin").map_err(|_| RunError::Io("output.bin", "cannot create"))?;
    defmt::info!(
        "runner on {=str}: model {=usize} B, arena {=usize} B (buffer {=usize} B), {=usize} samples of {=usize} -> {=usize} values",
        fw::BOARD,
        model_len,
        needed,
        RUNNER_POOL_LEN,
        samples,
        per_in,
        per_out
    );
    let (mut total, mut min, mut max) = (0u64, u64::MAX, 0u64);
    for s in 0..samples {
        let input: &mut [u8] = bytemuck::cast_slice_mut(it.input_i8(0)?);
        if read_full(&mut inf, input, "input.bin")? != per_in {
            return Err(RunError::Io("input.bin", "ended early"));
        }
        let t0 = counter::now();
        it.invoke()?;
        let insns = counter::instructions(counter::now().wrapping_sub(t0));
        let out: &[u8] = bytemuck::cast_slice(it.output_i8(0)?);
        outf.write_all(out).map_err(|_| RunError::Io("output.bin", "write failed"))?;
        defmt::info!("sample {=usize}: {=u64} instructions", s, insns);
        total += insns;
        min = min.min(insns);
        max = max.max(insns);
    }
    if samples == 0 {
        min = 0;
    }
    defmt::info!("peak stack {=usize} B of {=usize} B", stack::peak(), stack::room());
    defmt::info!(
        "result: samples={=usize} instructions_total={=u64} instructions_min={=u64} instructions_max={=u64}",
        samples,
        total,
        min,
        max
    );
    Ok(())
}
