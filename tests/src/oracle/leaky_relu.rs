//! LEAKY_RELU (int8 and 16x8) against TFLite Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/leaky_relu{,_16x8}.json`), in both rounding modes: `Rounding::Double`
//! against TFLite Micro, `Rounding::Single` against the interpreter (both requantize with
//! gemmlowp's double-rounding `MultiplyByQuantizedMultiplier`; they prepare the multipliers
//! differently, see [`microquant::kernels::leaky_relu`]).
//!
//! The int8 cases hold every int8 value once, so each checks the whole function for its
//! quantization; the int16 ones random values with the extremes (TFLite requires zero points 0).

use microquant::kernels::leaky_relu::{LeakyReluParams, leaky_relu_s8, leaky_relu_s16};
use microquant::kernels::tensor::PerTensorQuant;

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// A LEAKY_RELU case.
#[derive(Debug, Clone, Copy)]
pub struct LeakyReluCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input (int8 or int16).
    pub input: Values<'a>,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// The slope below zero.
    pub alpha: f32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// Runs one case in both modes, each against its oracle.
pub fn check<'a>(c: &'a LeakyReluCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let (i_q, o_q) = (
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let expected = c.expected.get(oracle);
        let at = At { case: c.name, rounding, oracle, path: "reference" };
        tally.elements[i] += match c.input {
            Values::I8(x) => {
                let p = kernel(c.name, "prepare", LeakyReluParams::prepare_s8(i_q, o_q, c.alpha, rounding))?;
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "leaky_relu_s8", leaky_relu_s8(&p, x, out))?;
                compare_values(at, expected, Values::I8(out))?
            }
            Values::I16(x) => {
                let p = kernel(c.name, "prepare", LeakyReluParams::prepare_s16(i_q, o_q, c.alpha, rounding))?;
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                kernel(c.name, "leaky_relu_s16", leaky_relu_s16(&p, x, out))?;
                compare_values(at, expected, Values::I16(out))?
            }
        };
    }
    Ok(tally)
}

/// The LEAKY_RELU golden tests for one target, in module `$m`: `leaky_relu_s8_matches_both_oracles`
/// and `leaky_relu_s16_matches_both_oracles`. Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! leaky_relu_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            leaky_relu_s8_matches_both_oracles => (leaky_relu, $crate::oracle::leaky_relu::check),
            leaky_relu_s16_matches_both_oracles => (leaky_relu_16x8, $crate::oracle::leaky_relu::check),
        );
    };
}
