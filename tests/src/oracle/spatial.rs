//! Spatial ops: RESIZE_NEAREST_NEIGHBOR (int8, int16), RESIZE_BILINEAR (int8), and the
//! reductions SUM (int8, int16) and REDUCE_MAX (int8) against TFLite
//! Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/resize_{nearest_neighbor,nearest_neighbor_16x8,bilinear}.json`), in
//! both rounding modes: `Rounding::Double` against TFLite Micro, `Rounding::Single` against the
//! interpreter (they compute the same: see `kernels::resize`).
//!
//! The TFLite int8 quantization spec: "RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR: ... restriction:
//! input and outputs must all have same scale/zero_point": the kernels do not requantize.

use microquant::kernels::reduce::{MeanParams, ReduceMaxParams, mean_s8, mean_s16, reduce_max_s8, reduce_max_s16};
use microquant::kernels::resize::{ResizeMethod, ResizeParams, resize_s8, resize_s16};
use microquant::kernels::tensor::PerTensorQuant;

use super::{At, Expected, Failure, MODES, Oracle, Tally, Values, Workspace, compare_values, kernel, take};

/// A resize case.
#[derive(Debug, Clone, Copy)]
pub struct ResizeCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Nearest neighbour or bilinear.
    pub method: ResizeMethod,
    /// Input (NHWC).
    pub input: Values<'a>,
    /// Its shape.
    pub input_shape: &'a [usize],
    /// Output height and width.
    pub size: [usize; 2],
    /// TFLite's `align_corners`.
    pub align_corners: bool,
    /// TFLite's `half_pixel_centers`.
    pub half_pixel_centers: bool,
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// Runs one resize case in both rounding modes.
pub fn check_resize<'a>(c: &'a ResizeCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let input = match *c.input_shape {
        [n, h, w, ch] => [n, h, w, ch],
        _ => return Err(Failure::BadCase { case: c.name, reason: "4-D input expected" }),
    };
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let p = kernel(
        c.name,
        "prepare",
        ResizeParams::prepare(c.method, input, c.size, c.align_corners, c.half_pixel_centers),
    )?;
    if p.output_shape()[..] != *c.expected.shape {
        return Err(Failure::Shape { case: c.name });
    }
    // No rounding parameter: both modes run the same kernel, compared with each oracle.
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let e = c.expected.get(oracle);
        let at = At { case: c.name, rounding, oracle, path: "dispatched" };
        tally.elements[i] += match c.input {
            Values::I8(x) => {
                let out = take(c.name, "int8 output", ws.out_i8, e.len())?;
                kernel(c.name, "resize_s8", resize_s8(&p, x, out))?;
                compare_values(at, e, Values::I8(out))?
            }
            Values::I16(x) => {
                let out = take(c.name, "int16 output", ws.out_i16, e.len())?;
                kernel(c.name, "resize_s16", resize_s16(&p, x, out))?;
                compare_values(at, e, Values::I16(out))?
            }
        };
    }
    Ok(tally)
}

/// Which reduction a [`ReduceCase`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// TFLite `SUM` (requantizing).
    Sum,
    /// TFLite `REDUCE_MAX` (input and output share quantization).
    Max,
}

/// A SUM or REDUCE_MAX case.
#[derive(Debug, Clone, Copy)]
pub struct ReduceCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// The reduction.
    pub op: ReduceOp,
    /// Input (int8 or int16).
    pub input: Values<'a>,
    /// Its shape.
    pub input_shape: &'a [usize],
    /// Reduced axes as stored in the model (negative counts from the end; any order).
    pub axis: &'a [i32],
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

/// Runs one SUM / REDUCE_MAX case in both rounding modes. A SUM is compared with TFLite Micro in
/// both: the interpreter's reference `SUM` (ai-edge-litert 2.3.0) does not compute the sum its
/// parameters describe (e.g. `sum_1x4x4x3_axis3_keep`: the exact sums, in output steps -124.6
/// and 69.75, come out as 70 and 70; TFLite Micro gives -125 and 70), so it is recorded in the
/// golden file but not used as an oracle.
pub fn check_reduce<'a>(c: &'a ReduceCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let (iq, oq) = (
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let oracle = if c.op == ReduceOp::Sum { Oracle::Tflm } else { oracle };
        let e = c.expected.get(oracle);
        let at = At { case: c.name, rounding, oracle, path: "dispatched" };
        let n = e.len();
        tally.elements[i] += match (c.op, c.input) {
            (ReduceOp::Max, Values::I8(x)) => {
                let p = kernel(c.name, "prepare", ReduceMaxParams::new(c.input_shape, c.axis))?;
                let out = take(c.name, "int8 output", ws.out_i8, n)?;
                kernel(c.name, "reduce_max_s8", reduce_max_s8(&p, x, out))?;
                compare_values(at, e, Values::I8(out))?
            }
            (ReduceOp::Max, Values::I16(x)) => {
                let p = kernel(c.name, "prepare", ReduceMaxParams::new(c.input_shape, c.axis))?;
                let out = take(c.name, "int16 output", ws.out_i16, n)?;
                kernel(c.name, "reduce_max_s16", reduce_max_s16(&p, x, out))?;
                compare_values(at, e, Values::I16(out))?
            }
            (ReduceOp::Sum, Values::I8(x)) => {
                let p = MeanParams::prepare_sum_s8(c.input_shape, c.axis, iq, oq, rounding);
                let p = kernel(c.name, "prepare", p)?;
                let (out, acc) = (take(c.name, "int8 output", ws.out_i8, n)?, take(c.name, "accumulators", ws.acc, n)?);
                kernel(c.name, "sum (mean_s8)", mean_s8(&p, x, out, acc))?;
                compare_values(at, e, Values::I8(out))?
            }
            (ReduceOp::Sum, Values::I16(x)) => {
                let p = MeanParams::prepare_sum_s16(c.input_shape, c.axis, iq, oq, rounding);
                let p = kernel(c.name, "prepare", p)?;
                let (out, acc) =
                    (take(c.name, "int16 output", ws.out_i16, n)?, take(c.name, "accumulators", ws.acc, n)?);
                kernel(c.name, "sum (mean_s16)", mean_s16(&p, x, out, acc))?;
                compare_values(at, e, Values::I16(out))?
            }
        };
    }
    Ok(tally)
}

/// The resize golden tests for one target, in module `$m`:
/// `resize_nearest_neighbor_s8_matches_both_oracles`,
/// `resize_nearest_neighbor_s16_matches_both_oracles` and
/// `resize_bilinear_s8_matches_both_oracles`, and the SUM / REDUCE_MAX tests
/// `reduce_sum_s8_matches_both_oracles`, `reduce_sum_s16_matches_both_oracles`,
/// `reduce_max_s8_matches_both_oracles`. Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! spatial_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            resize_nearest_neighbor_s8_matches_both_oracles =>
                (resize_nearest_neighbor, $crate::oracle::spatial::check_resize),
            resize_nearest_neighbor_s16_matches_both_oracles =>
                (resize_nearest_neighbor_16x8, $crate::oracle::spatial::check_resize),
            resize_bilinear_s8_matches_both_oracles => (resize_bilinear, $crate::oracle::spatial::check_resize),
            reduce_sum_s8_matches_both_oracles => (reduce_sum, $crate::oracle::spatial::check_reduce),
            reduce_sum_s16_matches_both_oracles => (reduce_sum_16x8, $crate::oracle::spatial::check_reduce),
            reduce_max_s8_matches_both_oracles => (reduce_max, $crate::oracle::spatial::check_reduce),
        );
    };
}
