//! int8 (and 16x8) kernels, bit-exact with TensorFlow Lite Micro's reference kernels.
//!
//! # Conventions
//! - Layout NHWC, as TFLite and CMSIS-NN. Filters: conv `[out_c, kh, kw, in_c]` (OHWI), depthwise
//!   `[1, kh, kw, in_c * depth_multiplier]`, fully connected `[out, in]`.
//! - Quantization as the TFLite int8 spec: activations asymmetric int8 (`zero_point` in
//!   [-128, 127]), weights symmetric int8 (zero point 0), per-channel for conv/depthwise/FC, bias
//!   int32 with scale `input_scale * weight_scale` and zero point 0. Kernels take *offsets*
//!   (TFLite's `input_offset = -input_zero_point`, `output_offset = output_zero_point`).
//! - Parameters are prepared once (shapes, strides, padding, offsets, per-channel multipliers and
//!   shifts, activation clamp) into a parameter struct; the call does integer work only, on
//!   caller-provided slices, and never allocates.
//! - Every kernel checks its slice lengths against its parameters first (O(1)) and returns
//!   [`Error::BadKernelArgument`](crate::Error::BadKernelArgument) instead of panicking. Inner
//!   loops are written so no panic survives optimization in release (no unchecked indexing the
//!   compiler cannot prove, no `unwrap`, no `clamp`, no division by a variable): the firmware's
//!   `nopanic-check` image proves it at link time.
//! - A kernel that needs scratch memory documents `<kernel>_scratch_len(..)`, a pure function of
//!   its shapes, so a planner can reserve it ahead of time.
//! - The reference kernel of each op is always complete; optimized variants (Arm DSP, wasm
//!   SIMD) live under `arch/`, fall back to the reference when their preconditions fail, and are
//!   tested bit-exact against it.

pub use crate::requant::Rounding;

pub mod arch;
pub mod common;
pub mod conv;
pub mod depthwise_conv;
pub mod fully_connected;
pub mod pooling;
// Elementwise, activation and data-movement kernels.
pub mod add;
pub mod concat;
pub mod fixedpoint;
pub mod hard_swish;
pub mod logistic;
pub mod lut;
pub mod mul;
pub mod pad;
pub mod reduce;
pub mod requantize;
pub mod reshape;
pub mod softmax;
pub mod tanh;
pub mod tensor;
pub mod transpose;

/// Shape of a 4-D NHWC tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Dims4 {
    /// Batch.
    pub n: usize,
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
    /// Channels.
    pub c: usize,
}

impl Dims4 {
    /// A shape from its four extents.
    pub const fn new(n: usize, h: usize, w: usize, c: usize) -> Self {
        Self { n, h, w, c }
    }
    /// Number of elements, or `None` if it overflows `usize`.
    pub const fn checked_len(&self) -> Option<usize> {
        match self.n.checked_mul(self.h) {
            Some(a) => match a.checked_mul(self.w) {
                Some(b) => b.checked_mul(self.c),
                None => None,
            },
            None => None,
        }
    }
}

/// A fused activation (none, ReLU, ReLU6, ReLU-N1-to-1) as a clamp of the quantized output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ActivationRange {
    /// Smallest output value.
    pub min: i32,
    /// Largest output value.
    pub max: i32,
}

impl ActivationRange {
    /// No clamp beyond int8's own range.
    pub const INT8: Self = Self { min: i8::MIN as i32, max: i8::MAX as i32 };
    /// No clamp beyond int16's own range.
    pub const INT16: Self = Self { min: i16::MIN as i32, max: i16::MAX as i32 };

    /// Clamps `x` to the range (no panic even if `min > max`).
    #[inline(always)]
    pub fn apply(&self, x: i32) -> i32 {
        crate::requant::clamp_i32(x, self.min, self.max)
    }
}

/// Per-output-channel requantization: a Q31 multiplier and a shift per channel (see
/// [`crate::requant`]).
#[derive(Debug, Clone, Copy)]
pub struct PerChannelQuant<'a> {
    /// Q31 multipliers, one per output channel.
    pub multiplier: &'a [i32],
    /// Shifts (positive = left), one per output channel.
    pub shift: &'a [i32],
}
