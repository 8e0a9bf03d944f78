//! The prepared parameter types of the convolution, depthwise convolution, fully connected,
//! pooling and add kernels, and the small shape and quantization types they are made of.
//!
//! They live below both the op modules (which re-export them: `kernels::conv::ConvParams` and
//! so on) and the fast paths under [`arch`](crate::kernels::arch), so the fast paths import
//! only downward. Their constructors and methods are with the ops that prepare them (e.g.
//! `AddParams::prepare_s8` in [`add`](crate::kernels::add),
//! [`ActivationRange::from_fused`] in [`common`](crate::kernels::common)).

use crate::kernels::Rounding;
use crate::kernels::tensor::Broadcast;
use crate::requant::QuantizedMultiplier;

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

/// A height and a width: strides, dilations, filter and image sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Hw {
    /// Height (rows).
    pub h: usize,
    /// Width (columns).
    pub w: usize,
}

impl Hw {
    /// A pair from its height and width.
    pub const fn new(h: usize, w: usize) -> Self {
        Self { h, w }
    }
    /// The same value for both.
    pub const fn square(n: usize) -> Self {
        Self { h: n, w: n }
    }
}

/// Padding of a windowed op as an operator attribute (the graph's too: `graph::Padding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Padding {
    /// TFLite `SAME`: output size `ceil(in / stride)`; the total padding is split with the odd
    /// row/column at the bottom/right.
    Same,
    /// TFLite `VALID`: no padding, output size `floor((in - dilated_filter) / stride) + 1`.
    Valid,
    /// Given padding on each side (what TensorFlow's `EXPLICIT` padding, or a `PAD` by the input
    /// zero point folded into the op, amounts to).
    Explicit(PaddingValues),
}

/// Resolved padding, in input pixels, on each side of the image. Padded pixels contribute
/// nothing to a convolution (they stand for the input zero point) and are not counted by a
/// pooling window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PaddingValues {
    /// Rows above the image.
    pub top: usize,
    /// Rows below the image.
    pub bottom: usize,
    /// Columns left of the image.
    pub left: usize,
    /// Columns right of the image.
    pub right: usize,
}

/// Everything a 2-D convolution call needs besides its data, prepared once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConvParams {
    /// Input shape `[n, h, w, in_c]`.
    pub input: Dims4,
    /// Filter shape `[out_c, kh, kw, filter_in_c]` (`n` = output channels).
    pub filter: Dims4,
    /// Output shape `[n, oh, ow, out_c]`; `oh`, `ow` as
    /// [`compute_window`](crate::kernels::common::compute_window) gives them.
    pub output: Dims4,
    /// Strides (>= 1).
    pub stride: Hw,
    /// Dilations (>= 1).
    pub dilation: Hw,
    /// Resolved padding.
    pub padding: PaddingValues,
    /// `-input_zero_point`: in [-127, 128] for int8; 0 for 16x8.
    pub input_offset: i32,
    /// `output_zero_point`: in [-128, 127] for int8; 0 for 16x8.
    pub output_offset: i32,
    /// Output clamp.
    pub activation: ActivationRange,
    /// Rounding mode; both give the same result for conv ([`conv`](crate::kernels::conv) docs).
    pub rounding: Rounding,
}

/// Everything a depthwise convolution call needs besides its data, prepared once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DepthwiseConvParams {
    /// Input shape `[n, h, w, in_c]`.
    pub input: Dims4,
    /// Filter height and width.
    pub filter: Hw,
    /// Output shape `[n, oh, ow, in_c * depth_multiplier]`.
    pub output: Dims4,
    /// Output channels per input channel (>= 1).
    pub depth_multiplier: usize,
    /// Strides (>= 1).
    pub stride: Hw,
    /// Dilations (>= 1).
    pub dilation: Hw,
    /// Resolved padding.
    pub padding: PaddingValues,
    /// `-input_zero_point`: in [-127, 128] for int8; 0 for 16x8.
    pub input_offset: i32,
    /// `output_zero_point`: in [-128, 127] for int8; 0 for 16x8.
    pub output_offset: i32,
    /// Output clamp.
    pub activation: ActivationRange,
    /// Rounding mode; both give the same result for depthwise conv
    /// ([`depthwise_conv`](crate::kernels::depthwise_conv) docs).
    pub rounding: Rounding,
}

/// Shapes, offsets, clamp and rounding of a fully connected layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FullyConnectedParams {
    /// Rows of the input and output (the input's leading dimensions flattened).
    pub batches: usize,
    /// Input values per row (the filter's last dimension), >= 1.
    pub input_depth: usize,
    /// Outputs per row (the filter's first dimension), >= 1.
    pub output_depth: usize,
    /// `-input_zero_point`: in [-127, 128] for int8; 0 for 16x8.
    pub input_offset: i32,
    /// `output_zero_point`: in [-128, 127] for int8; 0 for 16x8.
    pub output_offset: i32,
    /// Output clamp (from the fused activation, [`ActivationRange::from_fused`]).
    pub activation: ActivationRange,
    /// Which oracle to reproduce (see the [`fully_connected`](crate::kernels::fully_connected) docs).
    pub rounding: Rounding,
}

/// Everything a pooling call needs besides its data, prepared once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PoolParams {
    /// Input shape `[n, h, w, c]`.
    pub input: Dims4,
    /// Output shape `[n, oh, ow, c]`.
    pub output: Dims4,
    /// Window height and width (>= 1).
    pub filter: Hw,
    /// Strides (>= 1).
    pub stride: Hw,
    /// Resolved padding.
    pub padding: PaddingValues,
    /// Output clamp.
    pub activation: ActivationRange,
}

/// Prepared parameters of [`add_s8`](crate::kernels::add::add_s8) /
/// [`add_s16`](crate::kernels::add::add_s16) (TFLite's `OpDataAdd` plus the broadcast).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AddParams {
    /// `-zero_point` of input 1.
    pub input1_offset: i32,
    /// `-zero_point` of input 2.
    pub input2_offset: i32,
    /// Zero point of the output.
    pub output_offset: i32,
    /// Headroom shift applied to both inputs (20 for int8, 15 for int16).
    pub left_shift: i32,
    /// Multiplier of input 1 (shift ≤ 0).
    pub input1_multiplier: QuantizedMultiplier,
    /// Multiplier of input 2 (shift ≤ 0).
    pub input2_multiplier: QuantizedMultiplier,
    /// Multiplier of the sum (shift ≤ 0).
    pub output_multiplier: QuantizedMultiplier,
    /// Output clamp (fused activation intersected with the type's range).
    pub activation: ActivationRange,
    /// The broadcast of the two input shapes.
    pub broadcast: Broadcast,
    /// The rounding mode the parameters were prepared for (both modes compute the same).
    pub rounding: Rounding,
}
