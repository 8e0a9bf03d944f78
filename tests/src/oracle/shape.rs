//! Data movement and reduction: CONCATENATION, PAD, MEAN, RESHAPE and TRANSPOSE (int8) against
//! TFLite Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/{concatenation,pad,mean,reshape,transpose}.json`), in both rounding
//! modes: `Rounding::Double` against TFLite Micro, `Rounding::Single` against the interpreter.
//!
//! The TFLite int8 quantization spec, as these cases follow it: "CONCATENATION: ... restriction
//! input and outputs must all have same scale/zero_point"; "PAD / RESHAPE / TRANSPOSE: ...
//! restriction input and outputs must all have same scale/zero_point"; "MEAN: Input 0: int8,
//! per-tensor; Output 0: int8, per-tensor" (MEAN requantizes).

use microquant::kernels::concat::{ConcatInput, ConcatParams, concat_s8};
use microquant::kernels::pad::{PadParams, pad_s8};
use microquant::kernels::reduce::{MeanParams, mean_s8, mean_scratch_len};
use microquant::kernels::reshape::{reshape_output_shape, reshape_s8};
use microquant::kernels::tensor::PerTensorQuant;
use microquant::kernels::transpose::{TransposeParams, transpose_s8};

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

/// Most inputs a [`ConcatCase`] may have.
pub const MAX_CONCAT_INPUTS: usize = 8;

/// A CONCATENATION case.
#[derive(Debug, Clone, Copy)]
pub struct ConcatCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// The inputs: equal ranks, equal extents except along `axis`.
    pub inputs: &'a [&'a [i8]],
    /// Their shapes.
    pub input_shapes: &'a [&'a [usize]],
    /// Their scales.
    pub input_scales: &'a [f32],
    /// Their zero points.
    pub input_zero_points: &'a [i32],
    /// Axis as stored in the model (negative counts from the end).
    pub axis: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// A PAD case (padded elements are the output zero point).
#[derive(Debug, Clone, Copy)]
pub struct PadCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input, rank 1 to 4.
    pub input: &'a [i8],
    /// Its shape.
    pub input_shape: &'a [usize],
    /// `[before, after]` per dimension.
    pub paddings: &'a [[i32; 2]],
    /// Output scale (the input's).
    pub output_scale: f32,
    /// Output zero point (the input's).
    pub output_zero_point: i32,
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// A MEAN case (a requantizing mean when the output's quantization differs).
#[derive(Debug, Clone, Copy)]
pub struct MeanCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input.
    pub input: &'a [i8],
    /// Its shape.
    pub input_shape: &'a [usize],
    /// Reduced axes as stored in the model.
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

/// A RESHAPE case: the data unchanged, a new shape (`new_shape` may hold one -1).
#[derive(Debug, Clone, Copy)]
pub struct ReshapeCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input.
    pub input: &'a [i8],
    /// The shape operand as given to the op.
    pub new_shape: &'a [i32],
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// A TRANSPOSE case: `output.shape[k] = input.shape[perm[k]]`.
#[derive(Debug, Clone, Copy)]
pub struct TransposeCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input.
    pub input: &'a [i8],
    /// Its shape.
    pub input_shape: &'a [usize],
    /// The permutation.
    pub perm: &'a [i32],
    /// The oracles' outputs.
    pub expected: Expected<'a>,
}

/// Runs `run` (which writes the int8 output) in both modes and compares each with its oracle.
fn both_modes<'a>(
    name: &'a str,
    expected: &Expected<'a>,
    ws: &mut Workspace<'_>,
    mut run: impl FnMut(microquant::kernels::Rounding, &mut [i8], &mut [i32]) -> Result<(), Failure<'a>>,
) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    for (i, (rounding, oracle)) in MODES.into_iter().enumerate() {
        let e = expected.get(oracle);
        let out = take(name, "int8 output", ws.out_i8, e.len())?;
        run(rounding, out, ws.acc)?;
        tally.elements[i] +=
            compare_values(At { case: name, rounding, oracle, path: "dispatched" }, e, Values::I8(out))?;
    }
    Ok(tally)
}

/// Runs one CONCATENATION case (no rounding: both modes run the same kernel).
pub fn check_concat<'a>(c: &'a ConcatCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let rank = c.expected.shape.len() as i32;
    let axis = if c.axis < 0 { c.axis + rank } else { c.axis } as usize;
    let mut metas = [ConcatInput::copy(0); MAX_CONCAT_INPUTS];
    if c.inputs.len() > MAX_CONCAT_INPUTS || c.input_shapes.len() != c.inputs.len() {
        return Err(Failure::BadCase { case: c.name, reason: "more inputs than MAX_CONCAT_INPUTS" });
    }
    let out_q = PerTensorQuant::new(c.output_scale, c.output_zero_point);
    for (k, meta) in metas.iter_mut().enumerate().take(c.inputs.len()) {
        let len = c.input_shapes[k].get(axis).copied().unwrap_or(0);
        let q = PerTensorQuant::new(c.input_scales[k], c.input_zero_points[k]);
        *meta = kernel(c.name, "prepare input", ConcatInput::prepare_s8(len, q, out_q))?;
    }
    let p = kernel(c.name, "prepare", ConcatParams::new(c.expected.shape, c.axis, &metas[..c.inputs.len()]))?;
    both_modes(c.name, &c.expected, ws, |_, out, _| kernel(c.name, "concat_s8", concat_s8(&p, c.inputs, out)))
}

/// Runs one PAD case.
pub fn check_pad<'a>(c: &'a PadCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let q = PerTensorQuant::new(c.output_scale, c.output_zero_point);
    let p = kernel(c.name, "prepare", PadParams::prepare_s8(c.input_shape, c.paddings, q, None))?;
    if p.output_shape().dims() != c.expected.shape {
        return Err(Failure::Shape { case: c.name });
    }
    both_modes(c.name, &c.expected, ws, |_, out, _| kernel(c.name, "pad_s8", pad_s8(&p, c.input, out)))
}

/// Runs one MEAN case.
pub fn check_mean<'a>(c: &'a MeanCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let (iq, oq) = (
        PerTensorQuant::new(c.input_scale, c.input_zero_point),
        PerTensorQuant::new(c.output_scale, c.output_zero_point),
    );
    let scratch_len = kernel(c.name, "scratch length", mean_scratch_len(c.input_shape, c.axis))?;
    if scratch_len != c.expected.len() {
        return Err(Failure::BadCase { case: c.name, reason: "not one accumulator per output" });
    }
    both_modes(c.name, &c.expected, ws, |rounding, out, acc| {
        let p = kernel(c.name, "prepare", MeanParams::prepare_s8(c.input_shape, c.axis, iq, oq, rounding))?;
        let acc = take(c.name, "accumulators", acc, scratch_len)?;
        kernel(c.name, "mean_s8", mean_s8(&p, c.input, out, acc))
    })
}

/// Runs one RESHAPE case.
pub fn check_reshape<'a>(c: &'a ReshapeCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let shape = kernel(c.name, "output shape", reshape_output_shape(c.input.len(), c.new_shape))?;
    if shape.dims() != c.expected.shape {
        return Err(Failure::Shape { case: c.name });
    }
    both_modes(c.name, &c.expected, ws, |_, out, _| kernel(c.name, "reshape_s8", reshape_s8(c.input, out)))
}

/// Runs one TRANSPOSE case.
pub fn check_transpose<'a>(c: &'a TransposeCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let p = kernel(c.name, "prepare", TransposeParams::new(c.input_shape, c.perm))?;
    if p.output_shape().dims() != c.expected.shape {
        return Err(Failure::Shape { case: c.name });
    }
    both_modes(c.name, &c.expected, ws, |_, out, _| kernel(c.name, "transpose_s8", transpose_s8(&p, c.input, out)))
}

/// The CONCATENATION, PAD, MEAN, RESHAPE and TRANSPOSE golden tests for one target, in module
/// `$m`: `concatenation_s8_matches_both_oracles`, `pad_s8_matches_both_oracles`,
/// `mean_s8_matches_both_oracles`, `reshape_s8_matches_both_oracles` and
/// `transpose_s8_matches_both_oracles`. Same arguments as
/// [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! shape_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            concatenation_s8_matches_both_oracles => (concatenation, $crate::oracle::shape::check_concat),
            pad_s8_matches_both_oracles => (pad, $crate::oracle::shape::check_pad),
            mean_s8_matches_both_oracles => (mean, $crate::oracle::shape::check_mean),
            reshape_s8_matches_both_oracles => (reshape, $crate::oracle::shape::check_reshape),
            transpose_s8_matches_both_oracles => (transpose, $crate::oracle::shape::check_transpose),
        );
    };
}
