//! The requantizing elementwise ops with one input against TFLite Micro and the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/{relu,relu_16x8,abs,abs_16x8,neg,rsqrt,
//! elu}.json`), in both rounding modes: `Rounding::Double` against TFLite Micro (multipliers
//! divided in `double`), `Rounding::Single` against the interpreter (divided in `float`).
//!
//! RELU, RELU_N1_TO_1 and RELU_0_TO_1 are [`microquant::kernels::relu`] with the bounds
//! `[0, inf)`, `[-1, 1]`, `[0, 1]`; RELU6 is `[0, 6]` against the interpreter and TFLite Micro's
//! own RELU6 ([`ReluParams::prepare_relu6_tflm`], no requantization) against TFLite Micro. ABS and
//! NEG are [`microquant::kernels::abs`], RSQRT [`microquant::kernels::rsqrt`], ELU
//! [`microquant::kernels::elu`]. Where a runtime lacks the op, its expected output is a copy of
//! the other's (the golden file's note).
//!
//! NEG: the interpreter negates the stored integers, wrapping `-(-128)` to -128; the kernel
//! saturates to 127. The check requires exactly that difference at the inputs -128 (and
//! equality everywhere else).

use microquant::kernels::Rounding;
use microquant::kernels::abs::{SignParams, abs_s8, abs_s16, neg_s8, neg_s16};
use microquant::kernels::elu::{EluParams, elu_s8};
use microquant::kernels::relu::{ReluParams, relu_s8, relu_s16};
use microquant::kernels::rsqrt::{RsqrtParams, rsqrt_s8};
use microquant::kernels::tensor::PerTensorQuant;

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// One case: a TFLite builtin by name, its quantization and both oracles' outputs.
#[derive(Debug, Clone, Copy)]
pub struct ElementwiseUnaryCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// The TFLite builtin (`RELU`, `RELU6`, `RELU_N1_TO_1`, `RELU_0_TO_1`, `ABS`, `NEG`, `RSQRT`,
    /// `ELU`).
    pub op: &'a str,
    /// Input (int8 or int16).
    pub input: Values<'a>,
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

fn relu_params(c: &ElementwiseUnaryCase, rounding: Rounding) -> Result<ReluParams, microquant::Error> {
    let (i_q, o_q) = (
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    let int16 = matches!(c.input, Values::I16(_));
    let (lo, hi) = match c.op {
        "RELU6" if rounding == Rounding::Double => return ReluParams::prepare_relu6_tflm(i_q, int16),
        "RELU6" => (0.0, 6.0),
        "RELU_N1_TO_1" => (-1.0, 1.0),
        "RELU_0_TO_1" => (0.0, 1.0),
        _ => (0.0, f32::INFINITY),
    };
    if int16 {
        ReluParams::prepare_s16(i_q, o_q, lo, hi, rounding)
    } else {
        ReluParams::prepare_s8(i_q, o_q, lo, hi, rounding)
    }
}

fn run_s8(c: &ElementwiseUnaryCase, rounding: Rounding, x: &[i8], out: &mut [i8]) -> Result<(), microquant::Error> {
    let (i_q, o_q) = (
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    match c.op {
        "ABS" => abs_s8(&SignParams::prepare_s8(i_q, o_q, rounding)?, x, out),
        "NEG" => neg_s8(&SignParams::prepare_s8(i_q, o_q, rounding)?, x, out),
        "RSQRT" => rsqrt_s8(&RsqrtParams::prepare_s8(i_q, o_q, rounding)?, x, out),
        "ELU" => elu_s8(&EluParams::prepare_s8(i_q, o_q)?, x, out),
        _ => relu_s8(&relu_params(c, rounding)?, x, out),
    }
}

fn run_s16(c: &ElementwiseUnaryCase, rounding: Rounding, x: &[i16], out: &mut [i16]) -> Result<(), microquant::Error> {
    let (i_q, o_q) = (
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    match c.op {
        "ABS" => abs_s16(&SignParams::prepare_s16(i_q, o_q, rounding)?, x, out),
        "NEG" => neg_s16(&SignParams::prepare_s16(i_q, o_q, rounding)?, x, out),
        _ => relu_s16(&relu_params(c, rounding)?, x, out),
    }
}

/// Runs one case in both modes, each against its oracle.
pub fn check<'a>(c: &'a ElementwiseUnaryCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let known = ["RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "ABS", "NEG", "RSQRT", "ELU"];
    if !known.contains(&c.op) || (matches!(c.input, Values::I16(_)) && matches!(c.op, "RSQRT" | "ELU")) {
        return Err(Failure::BadCase { case: c.name, reason: "unknown op or dtype" });
    }
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let expected = c.expected.get(oracle);
        let at = At { case: c.name, rounding, oracle, path: "reference" };
        tally.elements[i] += match c.input {
            Values::I8(x) => {
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "prepare and run", run_s8(c, rounding, x, out))?;
                if c.op == "NEG" {
                    // The interpreter's wrap at -128 (see the module doc): required there, then
                    // taken over so the rest compares exactly.
                    let Values::I8(e) = expected else {
                        return Err(Failure::BadCase { case: c.name, reason: "NEG expected is not int8" });
                    };
                    for ((o, &xv), &ev) in out.iter_mut().zip(x).zip(e) {
                        if xv == -128 {
                            if (*o, ev) != (127, -128) {
                                return Err(Failure::BadCase {
                                    case: c.name,
                                    reason: "NEG of -128 is not the known wrap",
                                });
                            }
                            *o = ev;
                        }
                    }
                }
                compare_values(at, expected, Values::I8(out))?
            }
            Values::I16(x) => {
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                kernel(c.name, "prepare and run", run_s16(c, rounding, x, out))?;
                compare_values(at, expected, Values::I16(out))?
            }
        };
    }
    Ok(tally)
}

/// The golden tests of this family for one target, in module `$m`. Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! elementwise_unary_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            relu_s8_matches_both_oracles => (relu, $crate::oracle::elementwise_unary::check),
            relu_s16_matches_both_oracles => (relu_16x8, $crate::oracle::elementwise_unary::check),
            abs_s8_matches_both_oracles => (abs, $crate::oracle::elementwise_unary::check),
            abs_s16_matches_both_oracles => (abs_16x8, $crate::oracle::elementwise_unary::check),
            neg_s8_matches_the_interpreter => (neg, $crate::oracle::elementwise_unary::check),
            rsqrt_s8_matches_both_oracles => (rsqrt, $crate::oracle::elementwise_unary::check),
            elu_s8_matches_tflite_micro => (elu, $crate::oracle::elementwise_unary::check),
        );
    };
}
