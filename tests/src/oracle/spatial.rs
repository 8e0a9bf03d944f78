//! Spatial ops: RESIZE_NEAREST_NEIGHBOR (int8, int16) and RESIZE_BILINEAR (int8) against TFLite
//! Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/resize_{nearest_neighbor,nearest_neighbor_16x8,bilinear}.json`), in
//! both rounding modes: `Rounding::Double` against TFLite Micro, `Rounding::Single` against the
//! interpreter (they compute the same: see `kernels::resize`).
//!
//! The TFLite int8 quantization spec: "RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR: ... restriction:
//! input and outputs must all have same scale/zero_point": the kernels do not requantize.

use microquant::kernels::resize::{ResizeMethod, ResizeParams, resize_s8, resize_s16};

use super::{At, Expected, Failure, MODES, Tally, Values, Workspace, compare_values, kernel, take};

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

/// The resize golden tests for one target, in module `$m`:
/// `resize_nearest_neighbor_s8_matches_both_oracles`,
/// `resize_nearest_neighbor_s16_matches_both_oracles` and
/// `resize_bilinear_s8_matches_both_oracles`. Same arguments as
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
        );
    };
}
