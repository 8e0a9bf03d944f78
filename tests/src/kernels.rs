//! Single-op kernel goldens (`tests/golden/kernels/`): one-operator int8 / 16x8 TFLite models run
//! through TFLite Micro and through the TFLite interpreter's reference kernels
//! (`OpResolverType.BUILTIN_REF`), written by `tests/gen/kernels/gen_all.py`.
//!
//! Every case stores its inputs, constant tensors, quantization parameters (float32 scales, exact),
//! options and both oracles' outputs: `expected_tflm` (the strict reference, double rounding) and
//! `expected_tflite_ref` (single rounding where the interpreter's kernel rounds once, e.g. fully
//! connected). The format of each family is documented in `tests/golden/kernels/README.md`.
//!
//! ```
//! let cases = microquant_tests::kernels::conv_2d_cases();
//! assert!(!cases.is_empty());
//! let c = &cases[0];
//! assert_eq!(c.input.len(), c.input.shape.iter().product::<usize>());
//! ```

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::golden::Tensor;

pub use crate::oracle::{Activation, Oracle, Padding};

/// An operator configuration one oracle refused (dropped from the cases).
#[derive(Debug, Clone, Deserialize)]
pub struct Rejected {
    /// The case name it would have had.
    pub name: String,
    /// The oracle's error message.
    pub reason: String,
}

/// How often the two oracles disagree in one file.
#[derive(Debug, Clone, Deserialize)]
pub struct OracleStats {
    /// Number of cases in the file.
    pub cases: usize,
    /// Cases where `expected_tflm != expected_tflite_ref` somewhere.
    pub cases_differing: usize,
    /// Output elements in the file.
    pub elements: usize,
    /// Output elements that differ between the oracles.
    pub elements_differing: usize,
    /// Largest absolute difference between the oracles.
    pub max_abs_diff: i64,
}

/// One golden file: metadata and its cases.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelFile<C> {
    /// TFLite builtin operator name (`CONV_2D`, ...).
    pub op: String,
    /// The script that wrote the file.
    pub generator: String,
    /// Versions of the tools that produced it.
    pub tools: std::collections::BTreeMap<String, String>,
    /// What the file covers.
    pub note: String,
    /// Oracle agreement statistics.
    pub stats: OracleStats,
    /// Configurations an oracle refused (not in `cases`).
    pub rejected: Vec<Rejected>,
    /// The cases.
    pub cases: Vec<C>,
}

/// Access shared by every case type.
pub trait KernelCase {
    /// Descriptive case name, for failure messages.
    fn name(&self) -> &str;
    /// The output of one oracle.
    fn expected(&self, oracle: Oracle) -> &Tensor;
}

macro_rules! kernel_case {
    ($($t:ty),* $(,)?) => {$(
        impl KernelCase for $t {
            fn name(&self) -> &str {
                &self.name
            }
            fn expected(&self, oracle: Oracle) -> &Tensor {
                match oracle {
                    Oracle::Tflm => &self.expected_tflm,
                    Oracle::TfliteRef => &self.expected_tflite_ref,
                }
            }
        }
    )*};
}

/// FULLY_CONNECTED: `output[b, o] = act(requant(sum_i (input[b, i] - input_zp) * filter[o, i] + bias[o]))`.
/// The input is flattened to `[len / filter.shape[1], filter.shape[1]]`.
#[derive(Debug, Clone, Deserialize)]
pub struct FullyConnectedCase {
    /// Case name.
    pub name: String,
    /// Input (int8, or int16 for 16x8), any rank; the last dimension is the input depth.
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point (0 for 16x8).
    pub input_zero_point: i32,
    /// Weights `[out, in]`, int8, symmetric (zero point 0).
    pub filter: Tensor,
    /// Weight scales: one (per-tensor) or `out` (per-channel, dimension 0).
    pub filter_scales: Vec<f32>,
    /// The weights as the model stores them when they are INT4 (`*_int4.json` files): packed
    /// two per byte (uint8, TFLite's layout); `filter` then holds the same values as int8.
    #[serde(default)]
    pub filter_packed: Option<Tensor>,
    /// Bias `[out]` (int32; int64 for 16x8) with scale `input_scale * filter_scale`, or none.
    pub bias: Option<Tensor>,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Fused activation.
    pub activation: Activation,
    /// When true the output keeps the input's leading dimensions (`[.., out]`), else `[batch, out]`.
    pub keep_num_dims: bool,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// CONV_2D (NHWC input, OHWI filter).
#[derive(Debug, Clone, Deserialize)]
pub struct ConvCase {
    /// Case name.
    pub name: String,
    /// Input `[n, h, w, in_c]` (int8, or int16 for 16x8).
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point (0 for 16x8).
    pub input_zero_point: i32,
    /// Filter `[out_c, kh, kw, in_c]`, int8, symmetric.
    pub filter: Tensor,
    /// Filter scales: `out_c` (per-channel, dimension 0) or one (per-tensor).
    pub filter_scales: Vec<f32>,
    /// The weights as the model stores them when they are INT4 (`*_int4.json` files): packed
    /// two per byte (uint8, TFLite's layout); `filter` then holds the same values as int8.
    #[serde(default)]
    pub filter_packed: Option<Tensor>,
    /// Bias `[out_c]` (int32; int64 for 16x8). Always present (the interpreter requires it).
    pub bias: Option<Tensor>,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Padding mode.
    pub padding: Padding,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Vertical dilation.
    pub dilation_h: usize,
    /// Horizontal dilation.
    pub dilation_w: usize,
    /// Fused activation.
    pub activation: Activation,
    /// TFLite Micro's output `[n, oh, ow, out_c]`.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// DEPTHWISE_CONV_2D (NHWC input, filter `[1, kh, kw, in_c * depth_multiplier]`).
#[derive(Debug, Clone, Deserialize)]
pub struct DepthwiseConvCase {
    /// Case name.
    pub name: String,
    /// Input `[n, h, w, in_c]` (int8, or int16 for 16x8).
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point (0 for 16x8).
    pub input_zero_point: i32,
    /// Filter `[1, kh, kw, out_c]` with `out_c = in_c * depth_multiplier`, int8, symmetric.
    pub filter: Tensor,
    /// Filter scales: `out_c` (per-channel, dimension 3).
    pub filter_scales: Vec<f32>,
    /// The weights as the model stores them when they are INT4 (`*_int4.json` files): packed
    /// two per byte (uint8, TFLite's layout); `filter` then holds the same values as int8.
    #[serde(default)]
    pub filter_packed: Option<Tensor>,
    /// Bias `[out_c]` (int32; int64 for 16x8), or none (cases named `*_nobias`).
    pub bias: Option<Tensor>,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Padding mode.
    pub padding: Padding,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Vertical dilation.
    pub dilation_h: usize,
    /// Horizontal dilation.
    pub dilation_w: usize,
    /// Output channels per input channel.
    pub depth_multiplier: usize,
    /// Fused activation.
    pub activation: Activation,
    /// TFLite Micro's output `[n, oh, ow, out_c]`.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// MAX_POOL_2D / AVERAGE_POOL_2D (NHWC). Padded positions are left out: the average divides by
/// the number of valid positions under the window.
#[derive(Debug, Clone, Deserialize)]
pub struct PoolCase {
    /// Case name.
    pub name: String,
    /// Input `[n, h, w, c]`, int8.
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale (equal to the input's).
    pub output_scale: f32,
    /// Output zero point (equal to the input's).
    pub output_zero_point: i32,
    /// Padding mode.
    pub padding: Padding,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Window height.
    pub filter_h: usize,
    /// Window width.
    pub filter_w: usize,
    /// Fused activation.
    pub activation: Activation,
    /// TFLite Micro's output `[n, oh, ow, c]`.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// ADD / MUL with per-input quantization and NumPy-style broadcasting (ranks up to 4; the output
/// shape is the broadcast shape).
#[derive(Debug, Clone, Deserialize)]
pub struct BinaryCase {
    /// Case name.
    pub name: String,
    /// First input (int8, or int16 for 16x8).
    pub input1: Tensor,
    /// First input's scale.
    pub input1_scale: f32,
    /// First input's zero point.
    pub input1_zero_point: i32,
    /// Second input.
    pub input2: Tensor,
    /// Second input's scale.
    pub input2_scale: f32,
    /// Second input's zero point.
    pub input2_zero_point: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Fused activation.
    pub activation: Activation,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// SOFTMAX over the last dimension.
#[derive(Debug, Clone, Deserialize)]
pub struct SoftmaxCase {
    /// Case name.
    pub name: String,
    /// Input (int8, or int16 with zero point 0 for 16x8).
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// The softmax's beta.
    pub beta: f32,
    /// Output scale (1/256 for int8, 1/32768 for int16).
    pub output_scale: f32,
    /// Output zero point (-128 for int8, 0 for int16).
    pub output_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// An elementwise op with one input (LOGISTIC, TANH, HARD_SWISH); the input holds each of the 256
/// int8 values once (shuffled), so one case covers the whole function for its quantization.
#[derive(Debug, Clone, Deserialize)]
pub struct UnaryCase {
    /// Case name.
    pub name: String,
    /// Input, int8.
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale (LOGISTIC 1/256, TANH 1/128; free for HARD_SWISH).
    pub output_scale: f32,
    /// Output zero point (LOGISTIC -128, TANH 0; free for HARD_SWISH).
    pub output_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// LEAKY_RELU: `x ≥ 0 ? x : alpha · x` (int8 inputs hold each value once; int16 inputs are
/// random with the extremes, zero points 0).
#[derive(Debug, Clone, Deserialize)]
pub struct LeakyReluCase {
    /// Case name.
    pub name: String,
    /// Input, int8 or int16.
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// The slope below zero (TFLite's `LeakyReluOptions.alpha`).
    pub alpha: f32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// A requantizing elementwise op with one input (RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, ABS,
/// NEG, RSQRT, ELU; `tests/gen/kernels/gen_unary.py`): int8 inputs hold each value once (RSQRT:
/// each value from the zero point up), int16 inputs are random with the extremes.
#[derive(Debug, Clone, Deserialize)]
pub struct ElementwiseUnaryCase {
    /// Case name.
    pub name: String,
    /// The TFLite builtin's name.
    pub op: String,
    /// Input, int8 or int16.
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// TFLite Micro's output (a copy of the interpreter's where TFLite Micro lacks the op).
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output (a copy of TFLite Micro's where the
    /// interpreter lacks the op).
    pub expected_tflite_ref: Tensor,
}

/// CONCATENATION along `axis` (all inputs and the output share quantization here: TFLite Micro
/// refuses anything else).
#[derive(Debug, Clone, Deserialize)]
pub struct ConcatCase {
    /// Case name.
    pub name: String,
    /// The inputs, int8, equal ranks, equal extents except along `axis`.
    pub inputs: Vec<Tensor>,
    /// Their scales.
    pub input_scales: Vec<f32>,
    /// Their zero points.
    pub input_zero_points: Vec<i32>,
    /// Axis as stored in the model (negative counts from the end).
    pub axis: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Fused activation (always `NONE` here).
    pub activation: Activation,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// PAD with the zero point (TFLite's PAD on int8: padded elements are the output zero point).
#[derive(Debug, Clone, Deserialize)]
pub struct PadCase {
    /// Case name.
    pub name: String,
    /// Input, int8, rank 1 to 4.
    pub input: Tensor,
    /// `[before, after]` per dimension.
    pub paddings: Vec<[i32; 2]>,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale (equal to the input's).
    pub output_scale: f32,
    /// Output zero point (equal to the input's).
    pub output_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// MEAN over `axis` (a requantizing mean when the output's quantization differs).
#[derive(Debug, Clone, Deserialize)]
pub struct MeanCase {
    /// Case name.
    pub name: String,
    /// Input, int8.
    pub input: Tensor,
    /// Reduced axes as stored in the model (negative counts from the end; any order).
    pub axis: Vec<i32>,
    /// Keep reduced dimensions as extent 1.
    pub keep_dims: bool,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// RESHAPE: the data unchanged, a new shape (`new_shape` may hold one -1).
#[derive(Debug, Clone, Deserialize)]
pub struct ReshapeCase {
    /// Case name.
    pub name: String,
    /// Input, int8.
    pub input: Tensor,
    /// The shape operand as given to the op.
    pub new_shape: Vec<i32>,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale (equal).
    pub output_scale: f32,
    /// Output zero point (equal).
    pub output_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// TRANSPOSE: `output.shape[k] = input.shape[perm[k]]` (ranks 1 to 5).
#[derive(Debug, Clone, Deserialize)]
pub struct TransposeCase {
    /// Case name.
    pub name: String,
    /// Input, int8.
    pub input: Tensor,
    /// The permutation.
    pub perm: Vec<i32>,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output scale (equal).
    pub output_scale: f32,
    /// Output zero point (equal).
    pub output_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR of an NHWC input to `size` (`[out_h, out_w]`);
/// input and output share scale and zero point.
#[derive(Debug, Clone, Deserialize)]
pub struct ResizeCase {
    /// Case name.
    pub name: String,
    /// Input, int8 or int16, NHWC.
    pub input: Tensor,
    /// Output height and width.
    pub size: [usize; 2],
    /// TFLite's `align_corners`.
    pub align_corners: bool,
    /// TFLite's `half_pixel_centers`.
    pub half_pixel_centers: bool,
    /// Scale of input and output.
    pub scale: f32,
    /// Zero point of input and output.
    pub zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}
/// A data-movement op (SLICE, STRIDED_SLICE, DEPTH_TO_SPACE, ...): one input, the output with
/// the input's quantization, the op's integer operands flattened in `params` (the order each
/// file's note gives).
#[derive(Debug, Clone, Deserialize)]
pub struct MovementCase {
    /// Case name.
    pub name: String,
    /// Input, int8 or int16.
    pub input: Tensor,
    /// The op's integer operands and options, flattened.
    pub params: Vec<i32>,
    /// Input (= output) scale.
    pub input_scale: f32,
    /// Input (= output) zero point.
    pub input_zero_point: i32,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}
/// UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite Micro's integer kernel), run as `chunks` consecutive
/// invokes on equal time slices with the state carried between them.
#[derive(Debug, Clone, Deserialize)]
pub struct LstmCase {
    /// Case name.
    pub name: String,
    /// Batch rows.
    pub batch: usize,
    /// Time steps of the whole sequence.
    pub time: usize,
    /// Input features.
    pub n_input: usize,
    /// Cells.
    pub n_cell: usize,
    /// `[time, batch, ·]` layout (else `[batch, time, ·]`).
    pub time_major: bool,
    /// Invokes (time slices of `time / chunks` steps each).
    pub chunks: usize,
    /// The slices' inputs one after the other (int8, or int16 for 16x8).
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Input-to-gate weights `[4, n_cell, n_input]` (gates input, forget, cell, output).
    pub input_weights: Tensor,
    /// Their scales, one per gate.
    pub input_weight_scales: Vec<f32>,
    /// Recurrent weights `[4, n_cell, n_cell]`.
    pub recurrent_weights: Tensor,
    /// Their scales, one per gate.
    pub recurrent_weight_scales: Vec<f32>,
    /// Gate biases `[4, n_cell]` (int32, or int64 for 16x8).
    pub bias: Tensor,
    /// Hidden state (and output) scale.
    pub hidden_scale: f32,
    /// Hidden state (and output) zero point.
    pub hidden_zero_point: i32,
    /// Cell state scale (a power of two).
    pub cell_scale: f32,
    /// Cell clip (0: none).
    pub cell_clip: f32,
    /// TFLite Micro's outputs of the slices, one after the other.
    pub expected_tflm: Tensor,
    /// A copy of `expected_tflm` (the TFLite interpreter does not run these models).
    pub expected_tflite_ref: Tensor,
}

/// TRANSPOSE_CONV (NHWC input, OHWI filter, the output shape given).
#[derive(Debug, Clone, Deserialize)]
pub struct TransposeConvCase {
    /// Case name.
    pub name: String,
    /// Input `[n, h, w, in_c]` (int8, or int16 for 16x8).
    pub input: Tensor,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point (0 for 16x8).
    pub input_zero_point: i32,
    /// Filter `[out_c, kh, kw, in_c]`, int8, symmetric.
    pub filter: Tensor,
    /// Filter scales: `out_c` (per-channel, dimension 0) or one (per-tensor).
    pub filter_scales: Vec<f32>,
    /// Bias `[out_c]` (int32; int64 for 16x8), or none.
    pub bias: Option<Tensor>,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// The op's `output_shape` input `[n, oh, ow, out_c]`.
    pub output_shape: Vec<usize>,
    /// Padding mode.
    pub padding: Padding,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Fused activation.
    pub activation: Activation,
    /// TFLite Micro's output `[n, oh, ow, out_c]`.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

kernel_case!(
    ResizeCase,
    MovementCase,
    LstmCase,
    FullyConnectedCase,
    ConvCase,
    DepthwiseConvCase,
    PoolCase,
    BinaryCase,
    SoftmaxCase,
    UnaryCase,
    LeakyReluCase,
    ElementwiseUnaryCase,
    ConcatCase,
    PadCase,
    MeanCase,
    ReshapeCase,
    TransposeCase,
    TransposeConvCase,
    BatchMatMulCase,
);

/// BATCH_MATMUL of two activations: `output[.., i, j] = requant(sum_k (lhs[.., i, k] - lhs_zp) *
/// (rhs[.., k, j] - rhs_zp))`, `adj_x` / `adj_y` transposing the last two dimensions of an operand,
/// batch dimensions broadcast.
#[derive(Debug, Clone, Deserialize)]
pub struct BatchMatMulCase {
    /// Case name.
    pub name: String,
    /// Left operand (int8, or int16), rank 2 to 5.
    pub lhs: Tensor,
    /// Its scale.
    pub lhs_scale: f32,
    /// Its zero point.
    pub lhs_zero_point: i32,
    /// Right operand.
    pub rhs: Tensor,
    /// Its scale.
    pub rhs_scale: f32,
    /// Its zero point.
    pub rhs_zero_point: i32,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// lhs transposed in its last two dimensions.
    pub adj_x: bool,
    /// rhs transposed in its last two dimensions.
    pub adj_y: bool,
    /// TFLite Micro's output.
    pub expected_tflm: Tensor,
    /// TFLite interpreter (reference kernels) output.
    pub expected_tflite_ref: Tensor,
}

/// Parses one embedded kernel golden file.
pub fn load<C: DeserializeOwned>(json: &str) -> KernelFile<C> {
    serde_json::from_str(json).expect("committed kernel golden file parses")
}

macro_rules! golden_file {
    ($(($const:ident, $file_fn:ident, $cases_fn:ident, $case:ty, $path:literal)),* $(,)?) => {$(
        #[doc = concat!("The raw text of `golden/kernels/", $path, "`.")]
        pub const $const: &str = include_str!(concat!("../golden/kernels/", $path));
        #[doc = concat!("`golden/kernels/", $path, "` with its metadata.")]
        pub fn $file_fn() -> KernelFile<$case> {
            load($const)
        }
        #[doc = concat!("The cases of `golden/kernels/", $path, "`.")]
        pub fn $cases_fn() -> Vec<$case> {
            $file_fn().cases
        }
    )*};
}

golden_file!(
    (FULLY_CONNECTED_JSON, fully_connected_file, fully_connected_cases, FullyConnectedCase, "fully_connected.json"),
    (
        FULLY_CONNECTED_16X8_JSON,
        fully_connected_16x8_file,
        fully_connected_16x8_cases,
        FullyConnectedCase,
        "fully_connected_16x8.json"
    ),
    (
        FULLY_CONNECTED_INT4_JSON,
        fully_connected_int4_file,
        fully_connected_int4_cases,
        FullyConnectedCase,
        "fully_connected_int4.json"
    ),
    (CONV_2D_JSON, conv_2d_file, conv_2d_cases, ConvCase, "conv_2d.json"),
    (CONV_2D_INT4_JSON, conv_2d_int4_file, conv_2d_int4_cases, ConvCase, "conv_2d_int4.json"),
    (
        DEPTHWISE_CONV_2D_INT4_JSON,
        depthwise_conv_2d_int4_file,
        depthwise_conv_2d_int4_cases,
        DepthwiseConvCase,
        "depthwise_conv_2d_int4.json"
    ),
    (CONV_2D_16X8_JSON, conv_2d_16x8_file, conv_2d_16x8_cases, ConvCase, "conv_2d_16x8.json"),
    (
        DEPTHWISE_CONV_2D_JSON,
        depthwise_conv_2d_file,
        depthwise_conv_2d_cases,
        DepthwiseConvCase,
        "depthwise_conv_2d.json"
    ),
    (
        DEPTHWISE_CONV_2D_16X8_JSON,
        depthwise_conv_2d_16x8_file,
        depthwise_conv_2d_16x8_cases,
        DepthwiseConvCase,
        "depthwise_conv_2d_16x8.json"
    ),
    (MAX_POOL_2D_JSON, max_pool_2d_file, max_pool_2d_cases, PoolCase, "max_pool_2d.json"),
    (AVERAGE_POOL_2D_JSON, average_pool_2d_file, average_pool_2d_cases, PoolCase, "average_pool_2d.json"),
    (ADD_JSON, add_file, add_cases, BinaryCase, "add.json"),
    (ADD_16X8_JSON, add_16x8_file, add_16x8_cases, BinaryCase, "add_16x8.json"),
    (MUL_JSON, mul_file, mul_cases, BinaryCase, "mul.json"),
    (SUB_JSON, sub_file, sub_cases, BinaryCase, "sub.json"),
    (SUB_16X8_JSON, sub_16x8_file, sub_16x8_cases, BinaryCase, "sub_16x8.json"),
    (MINIMUM_JSON, minimum_file, minimum_cases, BinaryCase, "minimum.json"),
    (MAXIMUM_JSON, maximum_file, maximum_cases, BinaryCase, "maximum.json"),
    (PRELU_JSON, prelu_file, prelu_cases, BinaryCase, "prelu.json"),
    (PRELU_16X8_JSON, prelu_16x8_file, prelu_16x8_cases, BinaryCase, "prelu_16x8.json"),
    (DIV_JSON, div_file, div_cases, BinaryCase, "div.json"),
    (SQUARED_DIFFERENCE_JSON, squared_difference_file, squared_difference_cases, BinaryCase, "squared_difference.json"),
    (SOFTMAX_JSON, softmax_file, softmax_cases, SoftmaxCase, "softmax.json"),
    (SOFTMAX_16X8_JSON, softmax_16x8_file, softmax_16x8_cases, SoftmaxCase, "softmax_16x8.json"),
    (LOGISTIC_JSON, logistic_file, logistic_cases, UnaryCase, "logistic.json"),
    (TANH_JSON, tanh_file, tanh_cases, UnaryCase, "tanh.json"),
    (HARD_SWISH_JSON, hard_swish_file, hard_swish_cases, UnaryCase, "hard_swish.json"),
    (LEAKY_RELU_JSON, leaky_relu_file, leaky_relu_cases, LeakyReluCase, "leaky_relu.json"),
    (LEAKY_RELU_16X8_JSON, leaky_relu_16x8_file, leaky_relu_16x8_cases, LeakyReluCase, "leaky_relu_16x8.json"),
    (RELU_JSON, relu_file, relu_cases, ElementwiseUnaryCase, "relu.json"),
    (RELU_16X8_JSON, relu_16x8_file, relu_16x8_cases, ElementwiseUnaryCase, "relu_16x8.json"),
    (ABS_JSON, abs_file, abs_cases, ElementwiseUnaryCase, "abs.json"),
    (ABS_16X8_JSON, abs_16x8_file, abs_16x8_cases, ElementwiseUnaryCase, "abs_16x8.json"),
    (NEG_JSON, neg_file, neg_cases, ElementwiseUnaryCase, "neg.json"),
    (RSQRT_JSON, rsqrt_file, rsqrt_cases, ElementwiseUnaryCase, "rsqrt.json"),
    (ELU_JSON, elu_file, elu_cases, ElementwiseUnaryCase, "elu.json"),
    (CONCATENATION_JSON, concatenation_file, concatenation_cases, ConcatCase, "concatenation.json"),
    (PAD_JSON, pad_file, pad_cases, PadCase, "pad.json"),
    (MEAN_JSON, mean_file, mean_cases, MeanCase, "mean.json"),
    (RESHAPE_JSON, reshape_file, reshape_cases, ReshapeCase, "reshape.json"),
    (TRANSPOSE_JSON, transpose_file, transpose_cases, TransposeCase, "transpose.json"),
    (
        RESIZE_NEAREST_NEIGHBOR_JSON,
        resize_nearest_neighbor_file,
        resize_nearest_neighbor_cases,
        ResizeCase,
        "resize_nearest_neighbor.json"
    ),
    (
        RESIZE_NEAREST_NEIGHBOR_16X8_JSON,
        resize_nearest_neighbor_16x8_file,
        resize_nearest_neighbor_16x8_cases,
        ResizeCase,
        "resize_nearest_neighbor_16x8.json"
    ),
    (RESIZE_BILINEAR_JSON, resize_bilinear_file, resize_bilinear_cases, ResizeCase, "resize_bilinear.json"),
    (SLICE_JSON, slice_file, slice_cases, MovementCase, "slice.json"),
    (SLICE_16_JSON, slice_16_file, slice_16_cases, MovementCase, "slice_16.json"),
    (STRIDED_SLICE_JSON, strided_slice_file, strided_slice_cases, MovementCase, "strided_slice.json"),
    (STRIDED_SLICE_16_JSON, strided_slice_16_file, strided_slice_16_cases, MovementCase, "strided_slice_16.json"),
    (DEPTH_TO_SPACE_JSON, depth_to_space_file, depth_to_space_cases, MovementCase, "depth_to_space.json"),
    (SPACE_TO_DEPTH_JSON, space_to_depth_file, space_to_depth_cases, MovementCase, "space_to_depth.json"),
    (MIRROR_PAD_JSON, mirror_pad_file, mirror_pad_cases, MovementCase, "mirror_pad.json"),
    (GATHER_JSON, gather_file, gather_cases, MovementCase, "gather.json"),
    (BROADCAST_TO_JSON, broadcast_to_file, broadcast_to_cases, MovementCase, "broadcast_to.json"),
    (BROADCAST_TO_16_JSON, broadcast_to_16_file, broadcast_to_16_cases, MovementCase, "broadcast_to_16.json"),
    (REDUCE_SUM_JSON, reduce_sum_file, reduce_sum_cases, MeanCase, "reduce_sum.json"),
    (REDUCE_SUM_16X8_JSON, reduce_sum_16x8_file, reduce_sum_16x8_cases, MeanCase, "reduce_sum_16x8.json"),
    (REDUCE_MAX_JSON, reduce_max_file, reduce_max_cases, MeanCase, "reduce_max.json"),
    (LSTM_JSON, lstm_file, lstm_cases, LstmCase, "lstm.json"),
    (LSTM_16X8_JSON, lstm_16x8_file, lstm_16x8_cases, LstmCase, "lstm_16x8.json"),
    (TRANSPOSE_CONV_JSON, transpose_conv_file, transpose_conv_cases, TransposeConvCase, "transpose_conv.json"),
    (
        TRANSPOSE_CONV_16X8_JSON,
        transpose_conv_16x8_file,
        transpose_conv_16x8_cases,
        TransposeConvCase,
        "transpose_conv_16x8.json"
    ),
    (BATCH_MATMUL_JSON, batch_matmul_file, batch_matmul_cases, BatchMatMulCase, "batch_matmul.json"),
    (
        BATCH_MATMUL_16X8_JSON,
        batch_matmul_16x8_file,
        batch_matmul_16x8_cases,
        BatchMatMulCase,
        "batch_matmul_16x8.json"
    ),
);
