//! The models `build.rs` embeds (`build_model.rs`): the application's model (chosen by
//! `MQ_MODEL`, see [`app`]) and the models of the on-target tests ([`tests`]), each placed in
//! flash 16-byte aligned with [`include_model!`](crate::include_model) and run in an [`Arena`]
//! whose size is the model's planned arena, known at compile time; and the golden checks.

pub use microquant_app::model::{Arena, arena_len};

/// TFLite Micro's outputs of a golden model on its seeded inputs (`tests/golden/models/`).
#[derive(Clone, Copy)]
pub struct Golden {
    /// Short name (`kws`, `ic`, `vww`, `ad`, `tiny`).
    pub name: &'static str,
    /// Sample `s`'s input is `SplitMix64::new(seed_base + s)` filling the input tensor.
    pub seed_base: u64,
    /// Number of samples.
    pub samples: usize,
    /// The expected int8 outputs of every sample, back to back (as bytes).
    pub expected: &'static [u8],
}

impl Golden {
    /// Fills `input` with sample `s`'s input (the generator the golden files were made with).
    pub fn input(&self, s: usize, input: &mut [i8]) {
        crate::SplitMix64::new(self.seed_base + s as u64).fill_i8(input);
    }

    /// The expected output of sample `s` (`output_len` values), empty if out of range.
    pub fn expected(&self, s: usize, output_len: usize) -> &'static [i8] {
        let b = self.expected.get(s * output_len..(s + 1) * output_len).unwrap_or(&[]);
        bytemuck::cast_slice(b)
    }
}

/// A model of the on-target tests with its golden outputs.
#[derive(Clone, Copy)]
pub struct TestModel {
    /// Inputs and expected outputs.
    pub golden: Golden,
    /// The `.mq` bytes (converted by `build.rs` with TFLite Micro's rounding), in flash.
    pub bytes: &'static [u8],
    /// int8 values per input.
    pub input_len: usize,
    /// int8 values per output.
    pub output_len: usize,
}

/// The application's model: `MQ_MODEL` at build time (a `.tflite`, converted by `build.rs`, or
/// a `.mq`; a relative path is relative to `firmware/`), else the MLPerf Tiny KWS model (the
/// tiny M0 model on the micro:bit).
pub mod app {
    include!(concat!(env!("OUT_DIR"), "/app_model.rs"));
}

/// The models of `tests/model_*.rs`: each `Ok` with its golden data when it fits this board,
/// else `Err` with the numbers.
pub mod tests {
    include!(concat!(env!("OUT_DIR"), "/model_tests.rs"));
}

/// Sizes of the runner image (`src/bin/runner.rs`).
pub mod runner {
    include!(concat!(env!("OUT_DIR"), "/runner.rs"));
}

/// The first output value that differs from the golden one.
#[derive(Clone, Copy, Debug, defmt::Format)]
pub struct Mismatch {
    /// Sample number.
    pub sample: usize,
    /// Position in the output.
    pub index: usize,
    /// TFLite Micro's value.
    pub expected: i8,
    /// Ours.
    pub actual: i8,
    /// Values of this sample that differ.
    pub count: usize,
}

/// Why [`check_golden`] failed.
#[derive(Clone, Copy, Debug, defmt::Format)]
pub enum CheckError {
    /// The interpreter refused the model or a call.
    Model(microquant::Error),
    /// An output differs from TFLite Micro's.
    Mismatch(Mismatch),
}

impl From<microquant::Error> for CheckError {
    fn from(e: microquant::Error) -> Self {
        CheckError::Model(e)
    }
}

/// What [`check_golden`] checked.
#[derive(Clone, Copy, Debug, defmt::Format)]
pub struct GoldenReport {
    /// Samples run.
    pub samples: usize,
    /// Output values compared (all equal).
    pub values: usize,
    /// SysTick ticks of all the inferences (see [`crate::counter`]).
    pub ticks: u64,
    /// The most stack one `invoke` took below its caller's stack pointer, in bytes
    /// ([`crate::stack::measure`]).
    pub stack: usize,
}

/// Runs `m` in `arena` on its first `samples` golden inputs (regenerated with SplitMix64) and
/// compares every output value with TFLite Micro's.
pub fn check_golden(m: &TestModel, arena: &mut [u8], samples: usize) -> Result<GoldenReport, CheckError> {
    let mut it = microquant::interp::Interpreter::new(m.bytes, arena)?;
    let mut report = GoldenReport { samples: 0, values: 0, ticks: 0, stack: 0 };
    for s in 0..samples.min(m.golden.samples) {
        m.golden.input(s, it.input_i8(0)?);
        let ((r, ticks), stack) = crate::stack::measure(|| {
            let t0 = crate::counter::now();
            let r = it.invoke();
            (r, crate::counter::now().wrapping_sub(t0))
        });
        r?;
        report.ticks += ticks;
        report.stack = report.stack.max(stack);
        let out = it.output_i8(0)?;
        let want = m.golden.expected(s, m.output_len);
        let mut first = None;
        let mut count = 0;
        for (i, (&a, &e)) in out.iter().zip(want).enumerate() {
            if a != e {
                count += 1;
                first.get_or_insert((i, e, a));
            }
        }
        if out.len() != want.len() {
            return Err(CheckError::Mismatch(Mismatch {
                sample: s,
                index: want.len().min(out.len()),
                expected: 0,
                actual: 0,
                count: 1,
            }));
        }
        if let Some((index, expected, actual)) = first {
            return Err(CheckError::Mismatch(Mismatch { sample: s, index, expected, actual, count }));
        }
        report.samples += 1;
        report.values += out.len();
    }
    Ok(report)
}

/// Ends a model test that cannot run on this board: prints
/// `SKIPPED: <model> does not fit <board> (<why>)`, which `scripts/test.sh` counts as a skip
/// (not as a pass), and exits with success before any test runs.
pub fn skip(model: &str, why: &str) -> ! {
    defmt::println!("SKIPPED: {=str} does not fit {=str} ({=str})", model, crate::BOARD, why);
    crate::exit(0)
}

/// The on-target test of one golden model (`tests/model_<name>.rs` is this macro and its doc):
/// the model of [`tests`] (`$model`, its arena `$arena_len`) runs on every golden input and each
/// output must be bit-identical with TFLite Micro's; the log gives the instructions per
/// inference and the stack one inference takes (`invoke`'s own, below its caller's stack
/// pointer). On a board without room for the model the test binary prints a `SKIPPED:` line
/// (see [`skip`]) instead of passing.
///
/// ```ignore
/// microquant_firmware::model_test!(kws: KWS, KWS_ARENA_LEN);
/// // and the inference's stack must stay under 2048 bytes on the boards named (asserted when the
/// // image is built with MQ_CHECK_INFERENCE_STACK set, as shipped: fat LTO; logged always):
/// microquant_firmware::model_test!(kws: KWS, KWS_ARENA_LEN, inference_stack < 2048 on ["mps2-an386"]);
/// ```
///
/// The test is named `bit_exact_with_tflite_micro` in every binary: defmt-test ties its own
/// counter to the test's name, so the name must come from this macro, not from its caller.
#[macro_export]
macro_rules! model_test {
    ($name:ident: $model:ident, $arena_len:ident) => {
        $crate::model_test!(@with $name: $model, $arena_len, usize::MAX, []);
    };
    ($name:ident: $model:ident, $arena_len:ident, inference_stack < $limit:literal on [$($board:literal),* $(,)?]) => {
        $crate::model_test!(@with $name: $model, $arena_len, $limit, [$($board),*]);
    };
    (@with $name:ident: $model:ident, $arena_len:ident, $limit:expr, [$($board:literal),*]) => {
        $crate::count_systick_wraps!();

        #[defmt_test::tests]
        mod tests {
            use $crate::models::tests::{$arena_len, $model};
            use $crate::models::{Arena, check_golden, skip};
            use $crate::{BOARD, counter};

            #[init]
            fn init() -> &'static mut [u8] {
                if let Err(why) = &$model {
                    skip(stringify!($name), why);
                }
                let Some(mut cp) = cortex_m::Peripherals::take() else { defmt::panic!("peripherals taken") };
                counter::start(&mut cp.SYST);
                match cortex_m::singleton!(: Arena<$arena_len> = Arena::new()) {
                    Some(a) => &mut a.0,
                    None => defmt::panic!("arena taken"),
                }
            }

            #[test]
            fn bit_exact_with_tflite_micro(arena: &mut &'static mut [u8]) {
                let Ok(m) = &$model else { defmt::panic!("{=str}: no model", stringify!($name)) };
                match check_golden(m, arena, m.golden.samples) {
                    Ok(r) => {
                        defmt::info!(
                            "{=str} on {=str}: {=usize} samples, {=usize} output values bit-identical with TFLite Micro; {=u64} instructions per inference (under -icount shift=0); inference stack {=usize} B",
                            stringify!($name),
                            BOARD,
                            r.samples,
                            r.values,
                            counter::instructions(r.ticks) / r.samples.max(1) as u64,
                            r.stack
                        );
                        defmt::assert_eq!(r.samples, m.golden.samples);
                        // Asserted in images built as shipped (fat LTO) with MQ_CHECK_INFERENCE_STACK set
                        // (`scripts/test.sh`): without LTO the generic dispatch, instantiated in this crate,
                        // calls core's prepare functions out of line, which is not the shipped figure.
                        let limited: &[&str] = &[$($board),*];
                        if limited.contains(&BOARD) && option_env!("MQ_CHECK_INFERENCE_STACK").is_some() {
                            defmt::assert!(
                                r.stack < $limit,
                                "{=str} on {=str}: the inference took {=usize} B of stack, the limit is {=usize} B",
                                stringify!($name),
                                BOARD,
                                r.stack,
                                $limit
                            );
                        }
                    }
                    Err(e) => defmt::panic!("{=str} on {=str}: {}", stringify!($name), BOARD, e),
                }
            }
        }
    };
}
