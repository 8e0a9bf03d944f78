//! The operators of the graph and their attributes (see [`Op`]).

use alloc::vec::Vec;
use core::fmt;

pub use crate::kernels::common::FusedActivation;
/// How a convolution or pooling window is padded: the kernels' type (`Explicit` in elements, e.g.
/// ONNX `pads`).
pub use crate::kernels::params::{Padding, PaddingValues};
/// Nearest-neighbour or bilinear interpolation of [`Op::Resize`].
pub use crate::kernels::resize::ResizeMethod;

/// Output extent and padding along one spatial axis, from [`Padding::resolve_h`] or
/// [`Padding::resolve_w`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AxisWindow {
    /// Output extent.
    pub output: usize,
    /// Padding before the first input element (top or left).
    pub pad_before: usize,
    /// Padding after the last input element (bottom or right).
    pub pad_after: usize,
}

impl Padding {
    /// Resolves the padding along the height axis (uses `top`/`bottom` of `Explicit`).
    ///
    /// Returns `None` if `stride`, `dilation` or `filter` is 0, if the window does not fit the
    /// padded input (the output would be empty), or on arithmetic overflow.
    pub fn resolve_h(&self, input: usize, filter: usize, stride: usize, dilation: usize) -> Option<AxisWindow> {
        let explicit = match *self {
            Padding::Explicit(PaddingValues { top, bottom, .. }) => Some((top, bottom)),
            _ => None,
        };
        self.resolve(explicit, input, filter, stride, dilation)
    }

    /// Resolves the padding along the width axis (uses `left`/`right` of `Explicit`).
    ///
    /// Returns `None` in the same cases as [`Padding::resolve_h`].
    pub fn resolve_w(&self, input: usize, filter: usize, stride: usize, dilation: usize) -> Option<AxisWindow> {
        let explicit = match *self {
            Padding::Explicit(PaddingValues { left, right, .. }) => Some((left, right)),
            _ => None,
        };
        self.resolve(explicit, input, filter, stride, dilation)
    }

    fn resolve(
        &self,
        explicit: Option<(usize, usize)>,
        input: usize,
        filter: usize,
        stride: usize,
        dilation: usize,
    ) -> Option<AxisWindow> {
        if stride == 0 || dilation == 0 || filter == 0 || input == 0 {
            return None;
        }
        let effective = (filter - 1).checked_mul(dilation)?.checked_add(1)?;
        let (output, pad_before, pad_after) = match (self, explicit) {
            (Padding::Same, _) => {
                let output = input.div_ceil(stride);
                let needed = (output - 1).checked_mul(stride)?.checked_add(effective)?;
                let total = needed.saturating_sub(input);
                (output, total / 2, total - total / 2)
            }
            (Padding::Valid, _) => {
                let span = input.checked_sub(effective)?;
                (span / stride + 1, 0, 0)
            }
            (Padding::Explicit(_), Some((before, after))) => {
                let padded = input.checked_add(before)?.checked_add(after)?;
                let span = padded.checked_sub(effective)?;
                (span / stride + 1, before, after)
            }
            (Padding::Explicit(_), None) => return None,
        };
        Some(AxisWindow { output, pad_before, pad_after })
    }
}

impl fmt::Display for Padding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Padding::Same => f.write_str("same"),
            Padding::Valid => f.write_str("valid"),
            Padding::Explicit(PaddingValues { top, bottom, left, right }) => {
                write!(f, "explicit(t{top} b{bottom} l{left} r{right})")
            }
        }
    }
}

impl fmt::Display for FusedActivation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FusedActivation::None => "none",
            FusedActivation::Relu => "relu",
            FusedActivation::Relu6 => "relu6",
            FusedActivation::ReluN1To1 => "relu_n1_to_1",
        })
    }
}

/// Attributes of [`Op::Conv2d`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Conv2d {
    /// Vertical stride (>= 1).
    pub stride_h: usize,
    /// Horizontal stride (>= 1).
    pub stride_w: usize,
    /// Vertical dilation (>= 1; 1 = none).
    pub dilation_h: usize,
    /// Horizontal dilation (>= 1; 1 = none).
    pub dilation_w: usize,
    /// Padding.
    pub padding: Padding,
    /// Fused activation.
    pub activation: FusedActivation,
}

/// Attributes of [`Op::DepthwiseConv2d`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DepthwiseConv2d {
    /// Vertical stride (>= 1).
    pub stride_h: usize,
    /// Horizontal stride (>= 1).
    pub stride_w: usize,
    /// Vertical dilation (>= 1).
    pub dilation_h: usize,
    /// Horizontal dilation (>= 1).
    pub dilation_w: usize,
    /// Output channels per input channel: `filter channels = input channels * depth_multiplier`.
    pub depth_multiplier: usize,
    /// Padding.
    pub padding: Padding,
    /// Fused activation.
    pub activation: FusedActivation,
}

/// Attributes of [`Op::FullyConnected`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FullyConnected {
    /// Fused activation.
    pub activation: FusedActivation,
    /// TFLite `keep_num_dims`: if true the output keeps the input's leading dimensions
    /// (`[..., out]`); if false it is 2-D `[input elements / in, out]`.
    pub keep_num_dims: bool,
}

/// Attributes of [`Op::MaxPool2d`] and [`Op::AvgPool2d`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pool2d {
    /// Window height.
    pub filter_h: usize,
    /// Window width.
    pub filter_w: usize,
    /// Vertical stride (>= 1).
    pub stride_h: usize,
    /// Horizontal stride (>= 1).
    pub stride_w: usize,
    /// Padding (average pooling divides by the number of *unpadded* elements in the window, as
    /// TFLite does).
    pub padding: Padding,
    /// Fused activation.
    pub activation: FusedActivation,
}

/// Attributes of [`Op::Lstm`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lstm {
    /// Input and output laid out `[time, batch, ·]` (else `[batch, time, ·]`).
    pub time_major: bool,
    /// Cell state clip (real value), 0 for none.
    pub cell_clip: f32,
    /// The int16 cell state's scale (a power of two) of a quantized LSTM (TFLite's cell state
    /// tensor); `None` in float graphs.
    pub cell_scale: Option<f32>,
}

/// Attributes of [`Op::TransposeConv2d`]: the op scatters every input pixel `(y, x)` times the
/// filter onto the output rows `y * stride_h - pad_top + fy` and columns `x * stride_w - pad_left +
/// fx` that exist (TFLite's TRANSPOSE_CONV with its padding resolved; ONNX ConvTranspose with
/// `pads` begin values and the output size after `output_padding` / `output_shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransposeConv2d {
    /// Vertical stride (>= 1).
    pub stride_h: usize,
    /// Horizontal stride (>= 1).
    pub stride_w: usize,
    /// Rows dropped at the top of the full (unpadded) output.
    pub pad_top: usize,
    /// Columns dropped at the left of the full output.
    pub pad_left: usize,
    /// Output height.
    pub output_h: usize,
    /// Output width.
    pub output_w: usize,
    /// Fused activation.
    pub activation: FusedActivation,
}

/// Attributes of [`Op::Gru`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gru {
    /// Input and output laid out `[time, batch, ·]` (else `[batch, time, ·]`).
    pub time_major: bool,
    /// ONNX's `linear_before_reset`: the reset gate scales `R_h h + Rb_h` (true) or multiplies
    /// `h` before `R_h` (false).
    pub linear_before_reset: bool,
}

/// An operator. Inputs and outputs are listed per variant (`?` marks an optional input, `None` in
/// the node when absent). Unless stated, the output has the data type of input 0.
///
/// Layout conventions (the same as TFLite, CMSIS-NN and our kernels):
/// - 4-D activations are **NHWC**.
/// - Conv filters are **OHWI** `[out_c, kh, kw, in_c]`; depthwise filters `[1, kh, kw, in_c *
///   depth_multiplier]`; fully-connected weights `[out, in]`.
/// - A bias is a 1-D tensor `[out_c]` and is optional.
///
/// Attributes that TFLite or ONNX give as constant *input tensors* (reshape's shape, pad's
/// paddings, mean's axes, transpose's permutation) are resolved by the importer into plain
/// attributes of the op, with negative axes normalised; such inputs do not appear in the node,
/// so a planner knows every shape without reading tensor data.
///
/// Conv2d, DepthwiseConv2d and FullyConnected come in three data-type flavours: float (f32
/// everything), quantized (i8 or i16 activations, i8 weights, i32 or i64 bias) and *hybrid*
/// (f32 activations and bias, quantized i8 weights: TFLite's dynamic-range models, e.g. the
/// convolutions of MLPerf Tiny's `kws_ref_model_float32.tflite`).
/// [`Graph::dequantize_hybrid_weights`](super::Graph::dequantize_hybrid_weights) turns the
/// last into the first.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// 2-D convolution. Inputs: `x [n, h, w, in_c]`, `filter [out_c, kh, kw, in_c]` (OHWI),
    /// `bias? [out_c]`. Output: `[n, oh, ow, out_c]`.
    Conv2d(Conv2d),
    /// Depthwise 2-D convolution. Inputs: `x [n, h, w, c]`, `filter [1, kh, kw, c * m]`,
    /// `bias? [c * m]`. Output: `[n, oh, ow, c * m]`.
    DepthwiseConv2d(DepthwiseConv2d),
    /// Fully connected (dense). Inputs: `x [..., in]` (any shape whose element count is a
    /// multiple of `in`), `weights [out, in]`, `bias? [out]`. Output: see
    /// [`FullyConnected::keep_num_dims`].
    FullyConnected(FullyConnected),
    /// Max pooling. Input `x [n, h, w, c]`, output `[n, oh, ow, c]`.
    MaxPool2d(Pool2d),
    /// Average pooling. Input `x [n, h, w, c]`, output `[n, oh, ow, c]`.
    AvgPool2d(Pool2d),
    /// Elementwise `a + b` with NumPy broadcasting. Inputs `a`, `b`; output the broadcast shape.
    Add {
        /// Fused activation.
        activation: FusedActivation,
    },
    /// Elementwise `a - b` with NumPy broadcasting.
    Sub {
        /// Fused activation.
        activation: FusedActivation,
    },
    /// Elementwise `a * b` with NumPy broadcasting.
    Mul {
        /// Fused activation.
        activation: FusedActivation,
    },
    /// Elementwise `a / b` with NumPy broadcasting (float graphs: ONNX `Div`; a division by a
    /// constant becomes a [`Op::Mul`] by its reciprocal in `passes`).
    Div {
        /// Fused activation.
        activation: FusedActivation,
    },
    /// Softmax over the last axis: `exp(beta * x) / sum(exp(beta * x))`. Input `x`, output same
    /// shape.
    Softmax {
        /// Input multiplier (1.0 for a plain softmax).
        beta: f32,
    },
    /// Logistic sigmoid `1 / (1 + exp(-x))`, same shape.
    Logistic,
    /// Hyperbolic tangent, same shape.
    Tanh,
    /// Hard swish `x * relu6(x + 3) / 6`, same shape.
    HardSwish,
    /// Hard sigmoid `max(0, min(1, alpha * x + beta))`, same shape (float graphs: ONNX
    /// `HardSigmoid`; PyTorch's `Hardsigmoid` is alpha 1/6, beta 0.5).
    HardSigmoid {
        /// Slope.
        alpha: f32,
        /// Offset.
        beta: f32,
    },
    /// max(x, 0) as a separate op, same shape.
    Relu,
    /// min(max(x, 0), 6) as a separate op, same shape.
    Relu6,
    /// `|x|`, same shape (ONNX `Abs`, TFLite `ABS`); int8 / int16 as `.mq` kind `ABS`.
    Abs,
    /// `−x`, same shape (TFLite `NEG`; ONNX `Neg` is [`Op::Unary`]); int8 / int16 as `.mq` kind
    /// `NEG`.
    Neg,
    /// `1 / √x`, same shape (TFLite `RSQRT`); int8 as `.mq` kind `RSQRT` (TFLite's integer
    /// arithmetic).
    Rsqrt,
    /// `x ≥ 0 ? x : alpha · (e^x − 1)`, same shape (ONNX `Elu`, TFLite `ELU` with alpha 1); int8
    /// as `.mq` kind `ELU` (a 256-entry table, as TFLite Micro).
    Elu {
        /// Scale of the negative part.
        alpha: f32,
    },
    /// `min(max(x, min), max)`, same shape (ONNX `Clip` with other bounds than ReLU's and
    /// ReLU6's, TFLite `RELU_N1_TO_1` and `RELU_0_TO_1`); int8 / int16 as `.mq` kind `RELU`.
    Clip {
        /// Lower bound (may be `-inf`).
        min: f32,
        /// Upper bound (may be `+inf`).
        max: f32,
    },
    /// `x` if `x >= 0` else `alpha * x`, same shape.
    LeakyRelu {
        /// Slope for negative inputs.
        alpha: f32,
    },
    /// A float function of each element ([`UnaryFn`](super::UnaryFn): exp, sqrt, erf, GELU,
    /// SiLU, ...), same shape; int8 as a 256-entry table (`.mq` kind `LUT`).
    Unary(super::UnaryFn),
    /// Concatenation of all inputs (at least one) along `axis`; all other extents must agree.
    Concatenation {
        /// The axis, in `0..rank` (negative source axes are normalised by the importer).
        axis: usize,
        /// Fused activation.
        activation: FusedActivation,
    },
    /// Constant padding. Inputs: `x`, `constant_value?` (a one-element tensor of x's data type
    /// and quantization, TFLite `PADV2`). Without it the pad value is 0.0 for float tensors
    /// and the output zero point for quantized ones (TFLite `PAD`). Output extent `i` is
    /// `x[i] + paddings[i][0] + paddings[i][1]`.
    ///
    /// The paddings are an attribute (the importer resolves TFLite's/ONNX's constant paddings
    /// input), so a planner knows every shape without reading tensor data.
    Pad {
        /// `[before, after]` per axis of `x`, `paddings.len() == rank`.
        paddings: Vec<[usize; 2]>,
    },
    /// Mean over `axes`. Input `x`; output `x` with those axes removed, or kept as 1 if
    /// `keep_dims`.
    Mean {
        /// Axes reduced: sorted, unique, each `< rank`.
        axes: Vec<usize>,
        /// Keep the reduced axes as extent 1.
        keep_dims: bool,
    },
    /// Reshape (no data movement). Input `x`; output shape `new_shape`, fully static (the
    /// importer resolves `-1` and the dynamic batch), same element count.
    Reshape {
        /// The output shape.
        new_shape: Vec<usize>,
    },
    /// Axis permutation: output extent `i` is `x[perm[i]]`.
    Transpose {
        /// A permutation of `0..rank`.
        perm: Vec<usize>,
    },
    /// Removes the listed axes, each of extent 1.
    Squeeze {
        /// Axes removed: sorted, unique, each `< rank` (the importer makes TFLite's "empty =
        /// every axis of extent 1" explicit).
        axes: Vec<usize>,
    },
    /// Strided slice of `x` (ONNX `Slice`, each output of a `Split`; TFLite `SLICE`,
    /// `STRIDED_SLICE`, `SPLIT`, `SPLIT_V`): see [`StridedSlice`](super::StridedSlice).
    StridedSlice(super::StridedSlice),
    /// Depth to space of an NHWC `x`: output `[n, h·b, w·b, c / b²]`, output pixel
    /// `(h·b + i, w·b + j)` taking channel group `(i, j)` (TFLite and ONNX `DCR`: channel
    /// `(i·b + j)·C + c`; ONNX `CRD`: channel `c·b² + i·b + j`).
    DepthToSpace {
        /// Block size `b`.
        block: usize,
        /// ONNX's `CRD` channel order.
        crd: bool,
    },
    /// Space to depth of an NHWC `x`: output `[n, h / b, w / b, c·b²]` (the inverse of
    /// [`Op::DepthToSpace`] in `DCR` order).
    SpaceToDepth {
        /// Block size `b`.
        block: usize,
    },
    /// Mirror or edge padding (TFLite `MIRROR_PAD`, ONNX `Pad` in `reflect` / `edge` mode):
    /// output extent `i` is `x[i] + paddings[i][0] + paddings[i][1]`, the padding read from `x`
    /// as [`MirrorPadMode`](crate::kernels::mirror_pad::MirrorPadMode) says.
    MirrorPad {
        /// `[before, after]` per axis of `x`.
        paddings: Vec<[usize; 2]>,
        /// Reflect, symmetric or edge.
        mode: crate::kernels::mirror_pad::MirrorPadMode,
    },
    /// Gather of `x` along `axis` by constant indices (TFLite `GATHER`, ONNX `Gather`): the
    /// output is `x`'s shape with `axis` replaced by `indices_shape`.
    Gather {
        /// The gathered axis, `< rank`.
        axis: usize,
        /// The indices, each `< x[axis]`, row-major.
        indices: Vec<usize>,
        /// Their shape (`[]` for one index: the axis goes).
        indices_shape: Vec<usize>,
    },
    /// Tiling / broadcasting of `x` to `shape` (TFLite `TILE`, `BROADCAST_TO`; ONNX `Tile`,
    /// `Expand`): `x`'s shape right-aligned to `shape`, each extent of `shape` a multiple of
    /// `x`'s; output index `o` reads `o mod x[d]`.
    Tile {
        /// The output shape.
        shape: Vec<usize>,
    },
    /// Quantizes `x` (float) to the output's integer type and quantization, or requantizes an
    /// integer tensor to other parameters or another integer type. Same shape.
    Quantize,
    /// Dequantizes `x` (integer with quantization, or f16) to f32. Same shape.
    Dequantize,
    /// Sum over `axes`. Input `x`; output `x` with those axes removed, or kept as 1 if
    /// `keep_dims` (as [`Op::Mean`]).
    Sum {
        /// Axes reduced: sorted, unique, each `< rank`.
        axes: Vec<usize>,
        /// Keep the reduced axes as extent 1.
        keep_dims: bool,
    },
    /// Max over `axes` (as [`Op::Mean`]).
    ReduceMax {
        /// Axes reduced: sorted, unique, each `< rank`.
        axes: Vec<usize>,
        /// Keep the reduced axes as extent 1.
        keep_dims: bool,
    },
    /// Spatial resize of `x [n, h, w, c]` to `[n, size[0], size[1], c]` with TFLite's
    /// coordinate rules (`RESIZE_NEAREST_NEIGHBOR` / `RESIZE_BILINEAR`, see
    /// [`crate::kernels::resize`]); ONNX `Resize` / `Upsample` map onto them where they agree.
    Resize {
        /// Nearest neighbour or bilinear.
        method: ResizeMethod,
        /// Output height and width.
        size: [usize; 2],
        /// TFLite's `align_corners`.
        align_corners: bool,
        /// TFLite's `half_pixel_centers`.
        half_pixel_centers: bool,
    },
    /// Elementwise `min(a, b)` with NumPy broadcasting (ONNX `Min` of two inputs, TFLite
    /// `MINIMUM`). Quantized, both inputs and the output share one quantization.
    Minimum,
    /// Elementwise `max(a, b)` with NumPy broadcasting (ONNX `Max` of two inputs, TFLite
    /// `MAXIMUM`). Quantized, both inputs and the output share one quantization.
    Maximum,
    /// Parametric ReLU: `x` if `x >= 0` else `alpha * x`, `alpha` broadcast NumPy-style against
    /// `x` (a per-channel constant `[c]` in ONNX `PRelu` and TFLite `PRELU`). Inputs `x`,
    /// `alpha`; output `x`'s shape. Quantized: `alpha` int8 per tensor.
    Prelu,
    /// Elementwise `(a - b)²` with NumPy broadcasting (TFLite `SQUARED_DIFFERENCE`).
    SquaredDifference,
    /// Unidirectional LSTM over a sequence (TFLite `UNIDIRECTIONAL_SEQUENCE_LSTM`, ONNX `LSTM`
    /// forward), gates in TFLite's order input, forget, cell, output. Inputs: `x [batch, time,
    /// in]` (or `[time, batch, in]`), the four input weights `[cell, in]`, the four recurrent
    /// weights `[cell, cell]`, the four biases `[cell]`, then `initial_h? [batch, cell]`,
    /// `initial_c? [batch, cell]` (zero when absent). Output `y [batch, time, cell]` (or
    /// time-major): the hidden state at every step. A quantized LSTM's hidden state has the
    /// output's quantization.
    Lstm(Lstm),
    /// Unidirectional GRU over a sequence (ONNX `GRU` forward), gates in ONNX's order update
    /// `z`, reset `r`, hidden `h`. Inputs: `x [batch, time, in]` (or `[time, batch, in]`), the
    /// three input weights `[hidden, in]`, the three recurrent weights `[hidden, hidden]`, the
    /// three input biases and the three recurrent biases `[hidden]`, then `initial_h? [batch,
    /// hidden]`. Output `y [batch, time, hidden]` (or time-major). Float graphs only (no integer
    /// kernel yet).
    Gru(Gru),
    /// Transposed 2-D convolution ("deconvolution"). Inputs: `x [n, h, w, in_c]`, `filter
    /// [out_c, kh, kw, in_c]` (OHWI), `bias? [out_c]`. Output: `[n, output_h, output_w, out_c]`
    /// (see [`TransposeConv2d`]).
    TransposeConv2d(TransposeConv2d),
    /// Batched matrix product of two tensors (TFLite `BATCH_MATMUL`, ONNX `MatMul` of two
    /// activations): inputs `a [.., m, k]`, `b [.., k, n]` (each read transposed in its last two
    /// dimensions when `adj_x` / `adj_y`), ranks 2 to 5, batch dimensions broadcast NumPy-style;
    /// output `[broadcast batch.., m, n]`. Quantized: int8 per tensor, any zero points.
    BatchMatMul {
        /// Read `a` transposed in its last two dimensions.
        adj_x: bool,
        /// Read `b` transposed in its last two dimensions.
        adj_y: bool,
    },
}

/// How many inputs and outputs an op takes (checked by [`Graph::validate`](super::Graph::validate)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arity {
    /// Fewest inputs (counting optional ones as absent at the end).
    pub min_inputs: usize,
    /// Most inputs (`usize::MAX` for variadic ops).
    pub max_inputs: usize,
    /// Number of outputs.
    pub outputs: usize,
    /// Inputs at this index and after may be absent (`None`); those before must be present.
    /// `usize::MAX` when no input is optional.
    pub optional_from: usize,
}

impl Op {
    /// The op's name in our graph (`"Conv2d"`, `"FullyConnected"`, ...): the variant's name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Conv2d(_) => "Conv2d",
            Op::DepthwiseConv2d(_) => "DepthwiseConv2d",
            Op::FullyConnected(_) => "FullyConnected",
            Op::MaxPool2d(_) => "MaxPool2d",
            Op::AvgPool2d(_) => "AvgPool2d",
            Op::Add { .. } => "Add",
            Op::Sub { .. } => "Sub",
            Op::Mul { .. } => "Mul",
            Op::Div { .. } => "Div",
            Op::Softmax { .. } => "Softmax",
            Op::Logistic => "Logistic",
            Op::Tanh => "Tanh",
            Op::HardSwish => "HardSwish",
            Op::HardSigmoid { .. } => "HardSigmoid",
            Op::Relu => "Relu",
            Op::Relu6 => "Relu6",
            Op::Clip { .. } => "Clip",
            Op::Abs => "Abs",
            Op::Neg => "Neg",
            Op::Rsqrt => "Rsqrt",
            Op::Elu { .. } => "Elu",
            Op::LeakyRelu { .. } => "LeakyRelu",
            Op::Unary(f) => f.name(),
            Op::Concatenation { .. } => "Concatenation",
            Op::Pad { .. } => "Pad",
            Op::Mean { .. } => "Mean",
            Op::Reshape { .. } => "Reshape",
            Op::Transpose { .. } => "Transpose",
            Op::Squeeze { .. } => "Squeeze",
            Op::StridedSlice(_) => "StridedSlice",
            Op::DepthToSpace { .. } => "DepthToSpace",
            Op::SpaceToDepth { .. } => "SpaceToDepth",
            Op::MirrorPad { .. } => "MirrorPad",
            Op::Gather { .. } => "Gather",
            Op::Tile { .. } => "Tile",
            Op::Quantize => "Quantize",
            Op::Dequantize => "Dequantize",
            Op::Resize { .. } => "Resize",
            Op::Minimum => "Minimum",
            Op::Maximum => "Maximum",
            Op::Prelu => "Prelu",
            Op::SquaredDifference => "SquaredDifference",
            Op::Sum { .. } => "Sum",
            Op::ReduceMax { .. } => "ReduceMax",
            Op::Lstm(_) => "Lstm",
            Op::Gru(_) => "Gru",
            Op::TransposeConv2d(_) => "TransposeConv2d",
            Op::BatchMatMul { .. } => "BatchMatMul",
        }
    }

    /// The number of inputs and outputs the op takes.
    pub fn arity(&self) -> Arity {
        let (min_inputs, max_inputs, optional_from) = match self {
            Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) => (2, 3, 2),
            Op::Add { .. } | Op::Sub { .. } | Op::Mul { .. } | Op::Div { .. } => (2, 2, usize::MAX),
            Op::Minimum | Op::Maximum | Op::Prelu | Op::SquaredDifference => (2, 2, usize::MAX),
            Op::Concatenation { .. } => (1, usize::MAX, usize::MAX),
            Op::Pad { .. } => (1, 2, 1),
            Op::Lstm(_) => (13, 15, 13),
            Op::Gru(_) => (13, 14, 13),
            Op::TransposeConv2d(_) => (2, 3, 2),
            Op::BatchMatMul { .. } => (2, 2, usize::MAX),
            _ => (1, 1, usize::MAX),
        };
        Arity { min_inputs, max_inputs, outputs: 1, optional_from }
    }

    /// The fused activation, for ops that have one.
    pub fn activation(&self) -> Option<FusedActivation> {
        match self {
            Op::Conv2d(c) => Some(c.activation),
            Op::DepthwiseConv2d(c) => Some(c.activation),
            Op::FullyConnected(c) => Some(c.activation),
            Op::MaxPool2d(p) | Op::AvgPool2d(p) => Some(p.activation),
            Op::Add { activation } | Op::Sub { activation } | Op::Mul { activation } | Op::Div { activation } => {
                Some(*activation)
            }
            Op::Concatenation { activation, .. } => Some(*activation),
            Op::TransposeConv2d(c) => Some(c.activation),
            _ => None,
        }
    }

    /// True for ops whose output is their input's bytes unchanged (reshape, squeeze): a planner
    /// can alias the output to the input.
    pub fn is_view(&self) -> bool {
        matches!(self, Op::Reshape { .. } | Op::Squeeze { .. })
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, v: &[usize]) -> fmt::Result {
    f.write_str("[")?;
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{x}")?;
    }
    f.write_str("]")
}

fn write_act(f: &mut fmt::Formatter<'_>, a: FusedActivation) -> fmt::Result {
    if a == FusedActivation::None { Ok(()) } else { write!(f, ", {a}") }
}

/// One compact line: the op name and its attributes, e.g.
/// `Conv2d(stride 2x2, dilation 1x1, padding same, relu)`.
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            Op::Conv2d(c) => {
                write!(
                    f,
                    "(stride {}x{}, dilation {}x{}, padding {}",
                    c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.padding
                )?;
                write_act(f, c.activation)?;
                f.write_str(")")
            }
            Op::DepthwiseConv2d(c) => {
                write!(
                    f,
                    "(stride {}x{}, dilation {}x{}, multiplier {}, padding {}",
                    c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.depth_multiplier, c.padding
                )?;
                write_act(f, c.activation)?;
                f.write_str(")")
            }
            Op::FullyConnected(c) => match (c.keep_num_dims, c.activation) {
                (false, FusedActivation::None) => Ok(()),
                (false, a) => write!(f, "({a})"),
                (true, FusedActivation::None) => f.write_str("(keep_num_dims)"),
                (true, a) => write!(f, "(keep_num_dims, {a})"),
            },
            Op::MaxPool2d(p) | Op::AvgPool2d(p) => {
                write!(
                    f,
                    "(filter {}x{}, stride {}x{}, padding {}",
                    p.filter_h, p.filter_w, p.stride_h, p.stride_w, p.padding
                )?;
                write_act(f, p.activation)?;
                f.write_str(")")
            }
            Op::Add { activation } | Op::Sub { activation } | Op::Mul { activation } | Op::Div { activation } => {
                if *activation != FusedActivation::None {
                    write!(f, "({activation})")?;
                }
                Ok(())
            }
            Op::Softmax { beta } => write!(f, "(beta {beta})"),
            Op::LeakyRelu { alpha } => write!(f, "(alpha {alpha})"),
            Op::Clip { min, max } => write!(f, "(min {min}, max {max})"),
            Op::Elu { alpha } => write!(f, "(alpha {alpha})"),
            Op::Abs | Op::Neg | Op::Rsqrt => Ok(()),
            Op::Unary(super::UnaryFn::Pow(e)) => write!(f, "(exponent {e})"),
            Op::Unary(_) => Ok(()),
            Op::HardSigmoid { alpha, beta } => write!(f, "(alpha {alpha}, beta {beta})"),
            Op::Concatenation { axis, activation } => {
                write!(f, "(axis {axis}")?;
                write_act(f, *activation)?;
                f.write_str(")")
            }
            Op::Pad { paddings } => {
                f.write_str("(")?;
                for (i, [b, a]) in paddings.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{b}+{a}")?;
                }
                f.write_str(")")
            }
            Op::Mean { axes, keep_dims } | Op::Sum { axes, keep_dims } | Op::ReduceMax { axes, keep_dims } => {
                f.write_str("(axes ")?;
                write_list(f, axes)?;
                f.write_str(if *keep_dims { ", keep_dims)" } else { ")" })
            }
            Op::Reshape { new_shape } => {
                f.write_str("(")?;
                write_list(f, new_shape)?;
                f.write_str(")")
            }
            Op::Transpose { perm } => {
                f.write_str("(perm ")?;
                write_list(f, perm)?;
                f.write_str(")")
            }
            Op::Squeeze { axes } => {
                f.write_str("(axes ")?;
                write_list(f, axes)?;
                f.write_str(")")
            }
            Op::StridedSlice(_)
            | Op::DepthToSpace { .. }
            | Op::SpaceToDepth { .. }
            | Op::MirrorPad { .. }
            | Op::Gather { .. }
            | Op::Tile { .. } => super::movement::fmt_attrs(self, f),
            Op::Logistic | Op::Tanh | Op::HardSwish | Op::Relu | Op::Relu6 | Op::Quantize | Op::Dequantize => Ok(()),
            Op::Resize { method, size, align_corners, half_pixel_centers } => {
                let m = if *method == ResizeMethod::Bilinear { "bilinear" } else { "nearest" };
                write!(f, "({m}, size {}x{}", size[0], size[1])?;
                if *align_corners {
                    f.write_str(", align_corners")?;
                }
                if *half_pixel_centers {
                    f.write_str(", half_pixel_centers")?;
                }
                f.write_str(")")
            }
            Op::Minimum | Op::Maximum | Op::Prelu | Op::SquaredDifference => Ok(()),
            Op::Lstm(l) => {
                f.write_str(if l.time_major { "(time_major" } else { "(batch_major" })?;
                if l.cell_clip > 0.0 {
                    write!(f, ", cell_clip {}", l.cell_clip)?;
                }
                if let Some(s) = l.cell_scale {
                    write!(f, ", cell_scale {s}")?;
                }
                f.write_str(")")
            }
            Op::Gru(g) => write!(
                f,
                "({}, linear_before_reset {})",
                if g.time_major { "time_major" } else { "batch_major" },
                u8::from(g.linear_before_reset)
            ),
            Op::TransposeConv2d(c) => {
                write!(
                    f,
                    "(stride {}x{}, pad {}x{}, output {}x{}",
                    c.stride_h, c.stride_w, c.pad_top, c.pad_left, c.output_h, c.output_w
                )?;
                write_act(f, c.activation)?;
                f.write_str(")")
            }
            Op::BatchMatMul { adj_x, adj_y } => match (adj_x, adj_y) {
                (false, false) => Ok(()),
                _ => write!(f, "(adj_x {}, adj_y {})", u8::from(*adj_x), u8::from(*adj_y)),
            },
        }
    }
}
