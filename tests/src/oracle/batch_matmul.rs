//! BATCH_MATMUL (int8 and 16x16) against TFLite Micro and the TFLite interpreter's reference
//! kernels (`tests/golden/kernels/batch_matmul{,_16x8}.json`): both operands activations, adj_x /
//! adj_y, ranks 2 to 5 with broadcast batch dimensions. The kernel has one requantization (the
//! oracles agree on every case), so each case runs once and is compared with both oracles.

use microquant::kernels::batch_matmul::{BatchMatMulParams, batch_matmul_s8, batch_matmul_s16};
use microquant::kernels::tensor::PerTensorQuant;

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// A BATCH_MATMUL case.
#[derive(Debug, Clone, Copy)]
pub struct BatchMatMulCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Left operand (int8 or int16).
    pub lhs: Values<'a>,
    /// Its shape.
    pub lhs_shape: &'a [usize],
    /// Its scale.
    pub lhs_scale: f32,
    /// Its zero point.
    pub lhs_zero_point: i32,
    /// Right operand.
    pub rhs: Values<'a>,
    /// Its shape.
    pub rhs_shape: &'a [usize],
    /// Its scale.
    pub rhs_scale: f32,
    /// Its zero point.
    pub rhs_zero_point: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// lhs read transposed in its last two dimensions.
    pub adj_x: bool,
    /// rhs read transposed in its last two dimensions.
    pub adj_y: bool,
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// Runs one case against both oracles (the kernel has a single rounding mode).
pub fn check<'a>(c: &'a BatchMatMulCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let (l, r, o) = (
        PerTensorQuant::new(c.lhs_scale, c.lhs_zero_point),
        PerTensorQuant::new(c.rhs_scale, c.rhs_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    let shapes = (c.lhs_shape, c.rhs_shape, c.adj_x, c.adj_y);
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let expected = c.expected.get(oracle);
        let at = At { case: c.name, rounding, oracle, path: "reference" };
        tally.elements[i] += match (c.lhs, c.rhs) {
            (Values::I8(x), Values::I8(y)) => {
                let p = kernel(
                    c.name,
                    "prepare",
                    BatchMatMulParams::prepare_s8(l, r, o, shapes.0, shapes.1, shapes.2, shapes.3),
                )?;
                kernel(c.name, "output shape", check_shape(p.shape.output_shape(), c.expected.shape))?;
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                kernel(c.name, "batch_matmul_s8", batch_matmul_s8(&p, x, y, out))?;
                compare_values(at, expected, Values::I8(out))?
            }
            (Values::I16(x), Values::I16(y)) => {
                let p = kernel(
                    c.name,
                    "prepare",
                    BatchMatMulParams::prepare_s16(l, r, o, shapes.0, shapes.1, shapes.2, shapes.3),
                )?;
                kernel(c.name, "output shape", check_shape(p.shape.output_shape(), c.expected.shape))?;
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                kernel(c.name, "batch_matmul_s16", batch_matmul_s16(&p, x, y, out))?;
                compare_values(at, expected, Values::I16(out))?
            }
            _ => kernel(
                c.name,
                "operand types",
                Err(microquant::Error::BadKernelArgument {
                    kernel: "batch_matmul",
                    reason: "operands of different types",
                }),
            )?,
        };
    }
    Ok(tally)
}

fn check_shape(got: &[usize], want: &[usize]) -> Result<(), microquant::Error> {
    if got == want {
        Ok(())
    } else {
        Err(microquant::Error::BadKernelArgument {
            kernel: "batch_matmul",
            reason: "output shape differs from the oracle's",
        })
    }
}

/// The BATCH_MATMUL golden tests for one target, in module `$m`: `batch_matmul_s8_matches_both_oracles`
/// and `batch_matmul_s16_matches_both_oracles`. Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! batch_matmul_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            batch_matmul_s8_matches_both_oracles => (batch_matmul, $crate::oracle::batch_matmul::check),
            batch_matmul_s16_matches_both_oracles => (batch_matmul_16x8, $crate::oracle::batch_matmul::check),
        );
    };
}
