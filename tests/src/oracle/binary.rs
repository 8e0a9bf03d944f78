//! ADD (int8 and 16x8), MUL (int8), SUB (int8 and 16x8), MINIMUM and MAXIMUM (int8, int16), PRELU
//! (int8 and 16x8), DIV and SQUARED_DIFFERENCE (int8)
//! against TFLite Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/{add,add_16x8,mul,sub,sub_16x8,minimum,maximum,prelu,prelu_16x8,div,squared_difference}.json`), in both rounding modes:
//! `Rounding::Double` against TFLite Micro, `Rounding::Single` against the interpreter.
//!
//! The TFLite int8 quantization spec, as these cases follow it: "ADD / MUL: Input 0 and Input 1:
//! data type int8, range [-128, 127], granularity per-tensor; Output 0: data type int8, range
//! [-128, 127], granularity per-tensor." In 16x8 mode activations are int16 with zero point 0.
//!
//! Every case runs through microquant's prepare (multipliers from the float scales, the
//! activation clamp, the broadcast) and kernel (the dispatched one: only int8 ADD of equal shapes
//! has a fast path).

use microquant::kernels::ActivationRange;
use microquant::kernels::add::{AddParams, add_s8, add_s16};
use microquant::kernels::div::{DivParams, div_s8};
use microquant::kernels::minimum_maximum::{MinMaxOp, MinMaxParams, min_max_s8, min_max_s16};
use microquant::kernels::mul::{MulParams, mul_s8};
use microquant::kernels::prelu::{PreluParams, prelu_s8, prelu_s16};
use microquant::kernels::squared_difference::{SquaredDifferenceParams, squared_difference_s8};
use microquant::kernels::sub::{SubParams, sub_s8, sub_s16};
use microquant::kernels::tensor::PerTensorQuant;

use super::{Activation, At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// Which operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// ADD.
    Add,
    /// MUL.
    Mul,
    /// SUB.
    Sub,
    /// MINIMUM.
    Minimum,
    /// MAXIMUM.
    Maximum,
    /// PRELU (input 2 is alpha, int8 in both modes).
    Prelu,
    /// DIV (int8).
    Div,
    /// SQUARED_DIFFERENCE (int8).
    SquaredDifference,
}

/// An ADD / MUL case with per-input quantization and NumPy-style broadcasting.
#[derive(Debug, Clone, Copy)]
pub struct BinaryCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Which operator.
    pub op: BinaryOp,
    /// First input (int8, or int16 for 16x8).
    pub input1: Values<'a>,
    /// Its shape.
    pub input1_shape: &'a [usize],
    /// Its scale.
    pub input1_scale: f32,
    /// Its zero point.
    pub input1_zero_point: i32,
    /// Second input.
    pub input2: Values<'a>,
    /// Its shape.
    pub input2_shape: &'a [usize],
    /// Its scale.
    pub input2_scale: f32,
    /// Its zero point.
    pub input2_zero_point: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Fused activation.
    pub activation: Activation,
    /// The oracles' outputs (shape: the broadcast shape).
    pub expected: Expected<'a>,
}

/// Runs one case in both modes, each against its oracle.
pub fn check<'a>(c: &'a BinaryCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let q1 = PerTensorQuant::new(c.input1_scale, c.input1_zero_point);
    let q2 = PerTensorQuant::new(c.input2_scale, c.input2_zero_point);
    let qo = PerTensorQuant::new(c.output_scale, c.output_zero_point);
    let (s1, s2) = (c.input1_shape, c.input2_shape);
    let dtype = if matches!(c.input1, Values::I8(_)) { ActivationRange::INT8 } else { ActivationRange::INT16 };
    let act = kernel(
        c.name,
        "activation range",
        ActivationRange::from_fused(c.activation.fused(), c.output_scale, c.output_zero_point, dtype),
    )?;
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let at = At { case: c.name, rounding, oracle, path: "dispatched" };
        let expected = c.expected.get(oracle);
        let out = match (c.op, c.input1, c.input2) {
            (BinaryOp::Add, Values::I8(x1), Values::I8(x2)) => {
                let p = kernel(c.name, "prepare", AddParams::prepare_s8(q1, q2, qo, act, s1, s2, rounding))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "add_s8", add_s8(&p, x1, x2, out))?;
                Values::I8(out)
            }
            (BinaryOp::Add, Values::I16(x1), Values::I16(x2)) => {
                let p = kernel(c.name, "prepare", AddParams::prepare_s16(q1, q2, qo, act, s1, s2, rounding))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                kernel(c.name, "add_s16", add_s16(&p, x1, x2, out))?;
                Values::I16(out)
            }
            (BinaryOp::Mul, Values::I8(x1), Values::I8(x2)) => {
                let p = kernel(c.name, "prepare", MulParams::prepare_s8(q1, q2, qo, act, s1, s2, rounding))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "mul_s8", mul_s8(&p, x1, x2, out))?;
                Values::I8(out)
            }
            (BinaryOp::Sub, Values::I8(x1), Values::I8(x2)) => {
                let p = kernel(c.name, "prepare", SubParams::prepare_s8(q1, q2, qo, act, s1, s2, rounding))?;
                if p.0.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "sub_s8", sub_s8(&p, x1, x2, out))?;
                Values::I8(out)
            }
            (BinaryOp::Sub, Values::I16(x1), Values::I16(x2)) => {
                let p = kernel(c.name, "prepare", SubParams::prepare_s16(q1, q2, qo, act, s1, s2, rounding))?;
                if p.0.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                kernel(c.name, "sub_s16", sub_s16(&p, x1, x2, out))?;
                Values::I16(out)
            }
            (BinaryOp::SquaredDifference, Values::I8(x1), Values::I8(x2)) => {
                let p = kernel(c.name, "prepare", SquaredDifferenceParams::prepare_s8(q1, q2, qo, s1, s2, rounding))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "squared_difference_s8", squared_difference_s8(&p, x1, x2, out))?;
                Values::I8(out)
            }
            (BinaryOp::Div, Values::I8(x1), Values::I8(x2)) => {
                let p = kernel(c.name, "prepare", DivParams::prepare_s8(q1, q2, qo, act, s1, s2, rounding))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "div_s8", div_s8(&p, x1, x2, out))?;
                Values::I8(out)
            }
            (BinaryOp::Prelu, Values::I8(x1), Values::I8(x2)) => {
                let p = kernel(c.name, "prepare", PreluParams::prepare_s8(q1, q2, qo, s1, s2, rounding))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "prelu_s8", prelu_s8(&p, x1, x2, out))?;
                Values::I8(out)
            }
            (BinaryOp::Prelu, Values::I16(x1), Values::I8(x2)) => {
                let p = kernel(c.name, "prepare", PreluParams::prepare_s16(q1, q2, qo, s1, s2, rounding))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                kernel(c.name, "prelu_s16", prelu_s16(&p, x1, x2, out))?;
                Values::I16(out)
            }
            (BinaryOp::Minimum | BinaryOp::Maximum, x1, x2) => {
                let op = if c.op == BinaryOp::Minimum { MinMaxOp::Minimum } else { MinMaxOp::Maximum };
                let p = kernel(c.name, "prepare", MinMaxParams::prepare(op, q1, q2, qo, s1, s2))?;
                if p.broadcast.output_shape().dims() != c.expected.shape {
                    return Err(Failure::Shape { case: c.name });
                }
                match (x1, x2) {
                    (Values::I8(x1), Values::I8(x2)) => {
                        let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                        kernel(c.name, "min_max_s8", min_max_s8(&p, x1, x2, out))?;
                        Values::I8(out)
                    }
                    (Values::I16(x1), Values::I16(x2)) => {
                        let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                        kernel(c.name, "min_max_s16", min_max_s16(&p, x1, x2, out))?;
                        Values::I16(out)
                    }
                    _ => return Err(Failure::BadCase { case: c.name, reason: "input types not supported" }),
                }
            }
            _ => return Err(Failure::BadCase { case: c.name, reason: "input types not supported" }),
        };
        tally.elements[i] += compare_values(at, expected, out)?;
    }
    Ok(tally)
}

/// The ADD, MUL, SUB, MINIMUM and MAXIMUM golden tests for one target, in module `$m`:
/// `add_s8_matches_both_oracles` (`add.json`), `add_s16_matches_both_oracles` (`add_16x8.json`),
/// `mul_s8_matches_both_oracles` (`mul.json`), `sub_s8_...` / `sub_s16_...` (`sub.json`,
/// `sub_16x8.json`), `minimum_...` / `maximum_matches_both_oracles` (`minimum.json`,
/// `maximum.json`, int8 and int16 cases), `prelu_s8_...` / `prelu_s16_matches_both_oracles`
/// (`prelu.json`, `prelu_16x8.json`), `div_s8_matches_both_oracles` (`div.json`),
/// `squared_difference_s8_matches_both_oracles` (`squared_difference.json`). Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! binary_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            add_s8_matches_both_oracles => (add, $crate::oracle::binary::check),
            add_s16_matches_both_oracles => (add_16x8, $crate::oracle::binary::check),
            mul_s8_matches_both_oracles => (mul, $crate::oracle::binary::check),
            sub_s8_matches_both_oracles => (sub, $crate::oracle::binary::check),
            sub_s16_matches_both_oracles => (sub_16x8, $crate::oracle::binary::check),
            minimum_matches_both_oracles => (minimum, $crate::oracle::binary::check),
            maximum_matches_both_oracles => (maximum, $crate::oracle::binary::check),
            prelu_s8_matches_both_oracles => (prelu, $crate::oracle::binary::check),
            prelu_s16_matches_both_oracles => (prelu_16x8, $crate::oracle::binary::check),
            div_s8_matches_both_oracles => (div, $crate::oracle::binary::check),
            squared_difference_s8_matches_both_oracles => (squared_difference, $crate::oracle::binary::check),
        );
    };
}
