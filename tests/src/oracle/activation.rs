//! LOGISTIC, TANH and HARD_SWISH (int8) against TFLite Micro and the TFLite interpreter's
//! reference kernels (`tests/golden/kernels/{logistic,tanh,hard_swish}.json`), in both rounding
//! modes: `Rounding::Double` against TFLite Micro (gemmlowp fixed point), `Rounding::Single`
//! against the interpreter (tables generated with `f32` math and the C library's
//! `expf`/`tanhf` for LOGISTIC and TANH).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "LOGISTIC: Output 0: ...
//! restriction (scale, zero_point) = (1.0 / 256.0, -128)"; "TANH: Output 0: ... restriction
//! (scale, zero_point) = (1.0 / 128.0, 0)". Each golden case holds every int8 input value once,
//! so it checks the whole function for its quantization.

use microquant::kernels::hard_swish::{HardSwishParams, hard_swish_s8};
use microquant::kernels::logistic::{LogisticParams, logistic_s8};
use microquant::kernels::tanh::{TanhParams, tanh_s8};
use microquant::kernels::tensor::PerTensorQuant;

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// LOGISTIC.
    Logistic,
    /// TANH.
    Tanh,
    /// HARD_SWISH.
    HardSwish,
}

/// A one-input elementwise case: the input holds each of the 256 int8 values once (shuffled).
#[derive(Debug, Clone, Copy)]
pub struct UnaryCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Which function.
    pub op: UnaryOp,
    /// Input.
    pub input: &'a [i8],
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// Runs one case in both modes, each against its oracle; the input must be exhaustive.
pub fn check<'a>(c: &'a UnaryCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let mut seen = [0u16; 256];
    for &x in c.input {
        seen[(x as i32 + 128) as usize] += 1;
    }
    if seen.iter().any(|&n| n != 1) {
        return Err(Failure::BadCase { case: c.name, reason: "input is not every int8 value once" });
    }
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let (i_q, o_q) = (
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let expected = c.expected.get(oracle);
        let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
        let r = match c.op {
            UnaryOp::Logistic => {
                LogisticParams::prepare_s8(i_q, o_q, rounding).and_then(|p| logistic_s8(&p, c.input, out))
            }
            UnaryOp::Tanh => TanhParams::prepare_s8(i_q, o_q, rounding).and_then(|p| tanh_s8(&p, c.input, out)),
            UnaryOp::HardSwish => {
                HardSwishParams::prepare_s8(i_q, o_q, rounding).and_then(|p| hard_swish_s8(&p, c.input, out))
            }
        };
        kernel(c.name, "prepare and run", r)?;
        let at = At { case: c.name, rounding, oracle, path: "dispatched" };
        tally.elements[i] += compare_values(at, expected, Values::I8(out))?;
    }
    Ok(tally)
}

/// The LOGISTIC, TANH and HARD_SWISH golden tests for one target, in module `$m`:
/// `logistic_s8_matches_both_oracles`, `tanh_s8_matches_both_oracles` and
/// `hard_swish_s8_matches_both_oracles`. Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! activation_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            logistic_s8_matches_both_oracles => (logistic, $crate::oracle::activation::check),
            tanh_s8_matches_both_oracles => (tanh, $crate::oracle::activation::check),
            hard_swish_s8_matches_both_oracles => (hard_swish, $crate::oracle::activation::check),
        );
    };
}
