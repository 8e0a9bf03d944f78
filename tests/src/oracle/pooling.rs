//! MAX_POOL_2D / AVERAGE_POOL_2D (int8) against TFLite Micro and the TFLite interpreter's
//! reference kernels (`tests/golden/kernels/{max,average}_pool_2d.json`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "AVERAGE_POOL_2D / MAX_POOL_2D:
//! Input 0: data type int8, range [-128, 127], granularity per-tensor; Output 0: data type int8,
//! range [-128, 127], granularity per-tensor, restriction input and outputs must all have same
//! scale/zero_point."
//!
//! Pooling does not requantize: both oracles agree, and the dispatched and the reference kernels
//! must reproduce both on every element.

use microquant::kernels::common::{Hw, compute_window};
use microquant::kernels::pooling::{
    PoolParams, avg_pool_s8, avg_pool_s8_reference, max_pool_s8, max_pool_s8_reference,
};
use microquant::kernels::{ActivationRange, Dims4, Rounding};

use super::{
    Activation, At, Expected, Failure, ORACLES, Padding, Tally, Values, Workspace, compare_values, dims4, kernel, take,
};

/// Which pooling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// MAX_POOL_2D.
    Max,
    /// AVERAGE_POOL_2D (padded positions left out of the average).
    Average,
}

/// A pooling case (NHWC; the output's quantization is the input's).
#[derive(Debug, Clone, Copy)]
pub struct PoolCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Which pooling.
    pub pool: Pool,
    /// Input `[n, h, w, c]`.
    pub input: &'a [i8],
    /// Input shape.
    pub input_shape: &'a [usize],
    /// Scale (input and output).
    pub scale: f32,
    /// Zero point (input and output).
    pub zero_point: i32,
    /// Padding mode.
    pub padding: Padding,
    /// `[vertical, horizontal]` stride.
    pub stride: [usize; 2],
    /// Window `[height, width]`.
    pub filter: [usize; 2],
    /// Fused activation.
    pub activation: Activation,
    /// The oracles' outputs `[n, oh, ow, c]`.
    pub expected: Expected<'a>,
}

/// A pooling kernel.
type Kernel = fn(&PoolParams, &[i8], &mut [i8]) -> Result<(), microquant::Error>;

/// Runs one case through the dispatched and the reference kernel against both oracles (no
/// rounding: counted under both modes).
pub fn check<'a>(c: &'a PoolCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let input = dims4(c.name, c.input_shape)?;
    let (filter, stride) = (Hw::new(c.filter[0], c.filter[1]), Hw::new(c.stride[0], c.stride[1]));
    let w = kernel(
        c.name,
        "window",
        compute_window(c.padding.kernel(), Hw::new(input.h, input.w), filter, stride, Hw::square(1)),
    )?;
    let output = Dims4::new(input.n, w.output.h, w.output.w, input.c);
    if output != dims4(c.name, c.expected.shape)? {
        return Err(Failure::Shape { case: c.name });
    }
    let activation = kernel(
        c.name,
        "activation range",
        ActivationRange::from_fused(c.activation.fused(), c.scale, c.zero_point, ActivationRange::INT8),
    )?;
    let p = PoolParams { input, output, filter, stride, padding: w.padding, activation };
    let out = take(c.name, "int8 output", ws.out_i8, c.expected.len())?;
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let paths: [(&str, Kernel); 2] = match c.pool {
        Pool::Max => [("dispatched", max_pool_s8), ("reference", max_pool_s8_reference)],
        Pool::Average => [("dispatched", avg_pool_s8), ("reference", avg_pool_s8_reference)],
    };
    for (path, run) in paths {
        kernel(c.name, path, run(&p, c.input, out))?;
        for (i, rounding) in [Rounding::Double, Rounding::Single].into_iter().enumerate() {
            for oracle in ORACLES {
                let at = At { case: c.name, rounding, oracle, path };
                tally.elements[i] += compare_values(at, c.expected.get(oracle), Values::I8(out))?;
            }
        }
    }
    Ok(tally)
}

/// The pooling golden tests for one target, in module `$m`:
/// `max_pool_s8_matches_tflite_micro_and_interpreter` (`max_pool_2d.json`) and
/// `avg_pool_s8_matches_tflite_micro_and_interpreter` (`average_pool_2d.json`).
/// Same arguments as [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! pool_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            max_pool_s8_matches_tflite_micro_and_interpreter => (max_pool_2d, $crate::oracle::pooling::check),
            avg_pool_s8_matches_tflite_micro_and_interpreter => (average_pool_2d, $crate::oracle::pooling::check),
        );
    };
}
