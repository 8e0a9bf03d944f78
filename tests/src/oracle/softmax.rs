//! SOFTMAX (int8 and 16x8) against TFLite Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/{softmax,softmax_16x8}.json`), in both rounding modes:
//! `Rounding::Double` against TFLite Micro, `Rounding::Single` against the interpreter.
//!
//! The TFLite int8 quantization spec, as these cases follow it: "SOFTMAX: Input 0: data type
//! int8, range [-128, 127], granularity per-tensor; Output 0: data type int8, range [-128, 127],
//! granularity per-tensor, restriction (scale, zero_point) = (1.0 / 256.0, -128)". In 16x8 mode
//! the output is `(1/32768, 0)`.
//!
//! The int16 softmax uses two tables TFLite generates with float math at prepare time: TFLite
//! Micro in `f32` (with the C library's `expf`), the interpreter in `f64`; microquant builds both
//! (`SoftmaxS16Luts`), and each mode runs on its own.

use microquant::kernels::Rounding;
use microquant::kernels::softmax::{SoftmaxParams, SoftmaxS16Luts, SoftmaxS16Params, softmax_s8, softmax_s16};
use microquant::kernels::tensor::PerTensorQuant;

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// A SOFTMAX case (over the last dimension).
#[derive(Debug, Clone, Copy)]
pub struct SoftmaxCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input (int8, or int16 with zero point 0 for 16x8).
    pub input: Values<'a>,
    /// The last dimension of the input.
    pub depth: usize,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// The softmax's beta.
    pub beta: f32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// Runs one case in both modes, each against its oracle.
pub fn check<'a>(c: &'a SoftmaxCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let input = PerTensorQuant::new(c.input_scale, c.input_zero_point);
    let output = PerTensorQuant::new(c.output_scale, c.output_zero_point);
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let at = At { case: c.name, rounding, oracle, path: "dispatched" };
        let expected = c.expected.get(oracle);
        let out = match c.input {
            Values::I8(x) => {
                let p = SoftmaxParams::prepare_s8(input, output, c.beta, c.depth, rounding);
                let p = kernel(c.name, "prepare", p)?;
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "softmax_s8", softmax_s8(&p, x, out))?;
                Values::I8(out)
            }
            Values::I16(x) => {
                let luts = luts(rounding);
                let p = SoftmaxS16Params::prepare(input, output, c.beta, c.depth, rounding, &luts);
                let p = kernel(c.name, "prepare", p)?;
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                kernel(c.name, "softmax_s16", softmax_s16(&p, x, out))?;
                Values::I16(out)
            }
        };
        tally.elements[i] += compare_values(at, expected, out)?;
    }
    Ok(tally)
}

/// The int16 tables of `rounding`'s oracle.
fn luts(rounding: Rounding) -> SoftmaxS16Luts {
    SoftmaxS16Luts::new(rounding)
}

/// The SOFTMAX golden tests for one target, in module `$m`: `softmax_s8_matches_both_oracles`
/// (`softmax.json`) and `softmax_s16_matches_both_oracles` (`softmax_16x8.json`). Same
/// arguments as [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! softmax_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            softmax_s8_matches_both_oracles => (softmax, $crate::oracle::softmax::check),
            softmax_s16_matches_both_oracles => (softmax_16x8, $crate::oracle::softmax::check),
        );
    };
}
