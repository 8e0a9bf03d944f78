//! The parameter words of each op kind: the layout of an op's parameter block in a `.mq` file
//! (little-endian 32-bit words, see `docs/FORMAT.md`), written by the converter
//! (`compile/lower.rs`, with `to_words`) and read by the interpreter (`interp/ops/<op>.rs`, with
//! a `WordReader`), so the two sides share one definition.
//!
//! Kinds without a type here: LOGISTIC, TANH, HARD_SWISH and RESHAPE have no words;
//! CONCATENATION has `[axis]` then one [`ConcatInputWords`] per input; PAD has `[rank, before_0,
//! after_0, ...]`; TRANSPOSE `[rank, perm_0, ...]`; MEAN, SUM and REDUCE_MAX `[n_axes, axis_0, ...]`; QUANTIZE
//! `[multiplier, shift]`.
//!
//! STRIDED_SLICE has `[rank, start_0, step_0, count_0, ...]` (the step an `i32`); DEPTH_TO_SPACE
//! `[block_size, mode]` (0: DCR, 1: CRD); SPACE_TO_DEPTH `[block_size]`; MIRROR_PAD `[mode, rank,
//! before_0, after_0, ...]` (0: reflect, 1: symmetric, 2: edge); GATHER `[axis]` (its indices are a
//! constant int32 input); TILE has none (its output's shape says it all).

use crate::Error;

/// Parameter words of a convolution window (shared by conv and depthwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvWords {
    /// Strides (height, width).
    pub stride: [u32; 2],
    /// Dilations (height, width).
    pub dilation: [u32; 2],
    /// Padding: top, bottom, left, right.
    pub padding: [u32; 4],
    /// `-input_zero_point`.
    pub input_offset: i32,
    /// `output_zero_point`.
    pub output_offset: i32,
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl ConvWords {
    /// Number of words.
    pub const LEN: usize = 12;

    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [sh, sw] = self.stride;
        let [dh, dw] = self.dilation;
        let [t, b, l, r] = self.padding;
        let [lo, hi] = self.activation;
        [sh, sw, dh, dw, t, b, l, r, self.input_offset as u32, self.output_offset as u32, lo as u32, hi as u32]
    }
}

/// Parameter words of a depthwise convolution: the window, then the depth multiplier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DepthwiseWords {
    /// The window and offsets.
    pub conv: ConvWords,
    /// Output channels per input channel.
    pub depth_multiplier: u32,
}

impl DepthwiseWords {
    /// Number of words.
    pub const LEN: usize = ConvWords::LEN + 1;

    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let mut w = [0u32; Self::LEN];
        for (o, i) in w.iter_mut().zip(self.conv.to_words()) {
            *o = i;
        }
        w[ConvWords::LEN] = self.depth_multiplier;
        w
    }
}

/// Parameter words of a fully connected layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullyConnectedWords {
    /// `-input_zero_point`.
    pub input_offset: i32,
    /// `output_zero_point`.
    pub output_offset: i32,
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl FullyConnectedWords {
    /// Number of words.
    pub const LEN: usize = 4;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [lo, hi] = self.activation;
        [self.input_offset as u32, self.output_offset as u32, lo as u32, hi as u32]
    }
}

/// Parameter words of a pooling op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolWords {
    /// Window (height, width).
    pub filter: [u32; 2],
    /// Strides (height, width).
    pub stride: [u32; 2],
    /// Padding: top, bottom, left, right.
    pub padding: [u32; 4],
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl PoolWords {
    /// Number of words.
    pub const LEN: usize = 10;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [fh, fw] = self.filter;
        let [sh, sw] = self.stride;
        let [t, b, l, r] = self.padding;
        let [lo, hi] = self.activation;
        [fh, fw, sh, sw, t, b, l, r, lo as u32, hi as u32]
    }
}

/// Parameter words of ADD: offsets, left shift, the three multipliers, the clamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddWords {
    /// `-zero_point` of input 1 and 2, then `output_zero_point`.
    pub offsets: [i32; 3],
    /// Left shift applied to both inputs (20 for int8, 15 for int16).
    pub left_shift: i32,
    /// (multiplier, shift) of input 1, input 2 and the output.
    pub multipliers: [[i32; 2]; 3],
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl AddWords {
    /// Number of words.
    pub const LEN: usize = 12;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [o1, o2, oo] = self.offsets;
        let [[m1, s1], [m2, s2], [mo, so]] = self.multipliers;
        let [lo, hi] = self.activation;
        [o1, o2, oo, self.left_shift, m1, s1, m2, s2, mo, so, lo, hi].map(|v| v as u32)
    }
}

/// Parameter words of MUL: offsets, the output multiplier, the clamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MulWords {
    /// `-zero_point` of input 1 and 2, then `output_zero_point`.
    pub offsets: [i32; 3],
    /// (multiplier, shift) of `s1 · s2 / s_out`.
    pub multiplier: [i32; 2],
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl MulWords {
    /// Number of words.
    pub const LEN: usize = 7;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [o1, o2, oo] = self.offsets;
        let [m, s] = self.multiplier;
        let [lo, hi] = self.activation;
        [o1, o2, oo, m, s, lo, hi].map(|v| v as u32)
    }
}

/// Parameter words of PRELU: offsets and the two multipliers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreluWords {
    /// `-zero_point` of the input and of alpha, then `output_zero_point`.
    pub offsets: [i32; 3],
    /// (multiplier, shift) of `s_in / s_out` (identity branch) and of `s_in · s_a / s_out`.
    pub multipliers: [[i32; 2]; 2],
}

impl PreluWords {
    /// Number of words.
    pub const LEN: usize = 7;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [o1, o2, oo] = self.offsets;
        let [[m1, s1], [m2, s2]] = self.multipliers;
        [o1, o2, oo, m1, s1, m2, s2].map(|v| v as u32)
    }
}

/// Parameter words of SOFTMAX (int8 input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftmaxWords {
    /// Q31 multiplier of `beta · s_in · 2^26`.
    pub input_multiplier: i32,
    /// Its left shift.
    pub input_left_shift: i32,
    /// Differences to the row maximum below this contribute 0.
    pub diff_min: i32,
}

impl SoftmaxWords {
    /// Number of words.
    pub const LEN: usize = 3;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        [self.input_multiplier as u32, self.input_left_shift as u32, self.diff_min as u32]
    }
}

/// Parameter words of LEAKY_RELU (int8 or int16 input and output of the same type; the zero
/// points are the tensors'): the quantized `s_in / s_out` and `s_in · alpha / s_out`
/// ([`crate::kernels::leaky_relu::LeakyReluParams`], prepared for the file's rounding mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeakyReluWords {
    /// (multiplier, shift) for inputs at or above the zero point.
    pub identity: [i32; 2],
    /// (multiplier, shift) for inputs below it; the multiplier is negative for a negative alpha.
    pub alpha: [i32; 2],
}

impl LeakyReluWords {
    /// Number of words.
    pub const LEN: usize = 4;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let ([im, is], [am, ashift]) = (self.identity, self.alpha);
        [im as u32, is as u32, am as u32, ashift as u32]
    }
}

/// Parameter words of BATCH_MATMUL: TFLite's two options (each 0 or 1) and the quantized
/// `lhs_scale · rhs_scale / output_scale` (the zero points are the tensors', the shapes too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMatMulWords {
    /// TFLite's `adj_x`: the lhs is read transposed in its last two dimensions.
    pub adj_x: bool,
    /// TFLite's `adj_y`: the rhs is read transposed in its last two dimensions.
    pub adj_y: bool,
    /// (multiplier, shift).
    pub multiplier: [i32; 2],
}

impl BatchMatMulWords {
    /// Number of words.
    pub const LEN: usize = 4;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [m, s] = self.multiplier;
        [self.adj_x as u32, self.adj_y as u32, m as u32, s as u32]
    }
}

/// Parameter words of RELU (a clamp with requantization, int8 or int16 input and output of the
/// same type; the zero points are the tensors'): the quantized `s_in / s_out` and the quantized
/// bounds ([`crate::kernels::relu::ReluParams`], prepared for the file's rounding mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReluWords {
    /// (multiplier, shift) of `s_in / s_out`.
    pub multiplier: [i32; 2],
    /// The quantized lower and upper bounds, within the output type.
    pub bounds: [i32; 2],
}

impl ReluWords {
    /// Number of words.
    pub const LEN: usize = 4;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let ([m, s], [lo, hi]) = (self.multiplier, self.bounds);
        [m as u32, s as u32, lo as u32, hi as u32]
    }
}

/// Parameter words of ABS and NEG (int8 or int16 input and output of the same type; the zero
/// points are the tensors'): whether the scales differ, and the quantized `s_in / s_out`
/// ([`crate::kernels::abs::SignParams`], prepared for the file's rounding mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignWords {
    /// 1 if the values are rescaled (the scales differ), else 0 (multiplier and shift unused).
    pub rescale: u32,
    /// (multiplier, shift) of `s_in / s_out`.
    pub multiplier: [i32; 2],
}

impl SignWords {
    /// Number of words.
    pub const LEN: usize = 3;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [m, s] = self.multiplier;
        [self.rescale, m as u32, s as u32]
    }
}

/// Parameter words of RSQRT (int8; the zero points are the tensors'): the quantized
/// `1 / (√s_in · s_out)` ([`crate::kernels::rsqrt::RsqrtParams`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RsqrtWords {
    /// (multiplier, shift).
    pub multiplier: [i32; 2],
}

impl RsqrtWords {
    /// Number of words.
    pub const LEN: usize = 2;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [m, s] = self.multiplier;
        [m as u32, s as u32]
    }
}

/// Most inputs a CONCATENATION may have.
pub const MAX_CONCAT_INPUTS: usize = 16;

/// Parameter words of one CONCATENATION input: whether it is requantized, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcatInputWords {
    /// 1 if the input's quantization differs from the output's.
    pub requantize: u32,
    /// Input zero point, output zero point.
    pub zero_points: [i32; 2],
    /// (multiplier, shift) of `s_in / s_out`.
    pub multiplier: [i32; 2],
}

impl ConcatInputWords {
    /// Number of words.
    pub const LEN: usize = 5;
    /// The words, in file order (after the op's first word, the axis).
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [zi, zo] = self.zero_points;
        let [m, s] = self.multiplier;
        [self.requantize, zi as u32, zo as u32, m as u32, s as u32]
    }
}

/// Parameter words of RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: TFLite's two options, each 0
/// or 1 (the output size is the output tensor's height and width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResizeWords {
    /// TFLite's `align_corners`.
    pub align_corners: bool,
    /// TFLite's `half_pixel_centers`.
    pub half_pixel_centers: bool,
}

impl ResizeWords {
    /// Number of words.
    pub const LEN: usize = 2;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        [u32::from(self.align_corners), u32::from(self.half_pixel_centers)]
    }
}
/// Parameter words of UNIDIRECTIONAL_SEQUENCE_LSTM: the prepared integers of
/// [`LstmParams`](crate::kernels::lstm::LstmParams) (gates in the order input, forget, cell,
/// output; multipliers as `(multiplier, shift)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LstmWords {
    /// 1 for `[time, batch, ·]` input and output, 0 for `[batch, time, ·]`.
    pub time_major: u32,
    /// `-input_zero_point`, `-hidden_zero_point`, `hidden_zero_point`.
    pub offsets: [i32; 3],
    /// `s_x · s_W / 2^-12` per gate.
    pub input_fc: [[i32; 2]; 4],
    /// `s_h · s_R / 2^-12` per gate.
    pub recurrent_fc: [[i32; 2]; 4],
    /// `f · c`, `i · g` and `o · tanh(c)` multipliers.
    pub muls: [[i32; 2]; 3],
    /// The cell state's rescaling into tanh's input: multiplier, right shift.
    pub cell_tanh: [i32; 2],
    /// The quantized cell clip, or -1 for none.
    pub cell_clip: i32,
}

impl LstmWords {
    /// Number of words.
    pub const LEN: usize = 29;

    /// The words of prepared parameters (what the converter writes).
    pub fn from_params(p: &crate::kernels::lstm::LstmParams) -> Self {
        let m = |q: crate::requant::QuantizedMultiplier| [q.multiplier, q.shift];
        Self {
            time_major: u32::from(p.dims.time_major),
            offsets: [p.input_offset, p.hidden_offset, p.hidden_zero_point],
            input_fc: p.input_fc.map(m),
            recurrent_fc: p.recurrent_fc.map(m),
            muls: [m(p.forget_mul), m(p.input_mul), m(p.hidden_mul)],
            cell_tanh: [p.cell_tanh.multiplier, p.cell_tanh.shift],
            cell_clip: p.cell_clip.map_or(-1, i32::from),
        }
    }
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let mut w = [0u32; Self::LEN];
        let flat = self
            .offsets
            .iter()
            .chain(self.input_fc.iter().flatten())
            .chain(self.recurrent_fc.iter().flatten())
            .chain(self.muls.iter().flatten())
            .chain(self.cell_tanh.iter())
            .chain(core::iter::once(&self.cell_clip));
        w[0] = self.time_major;
        for (o, &v) in w[1..].iter_mut().zip(flat) {
            *o = v as u32;
        }
        w
    }
}

/// Parameter words of a transposed convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransposeConvWords {
    /// Strides (height, width).
    pub stride: [u32; 2],
    /// Leading padding the scatter drops: rows above, columns left of the output.
    pub padding: [u32; 2],
    /// Output height and width (the output tensor's; checked against it).
    pub output: [u32; 2],
    /// `-input_zero_point`.
    pub input_offset: i32,
    /// `output_zero_point`.
    pub output_offset: i32,
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl TransposeConvWords {
    /// Number of words.
    pub const LEN: usize = 10;

    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [sh, sw] = self.stride;
        let [t, l] = self.padding;
        let [oh, ow] = self.output;
        let [lo, hi] = self.activation;
        [sh, sw, t, l, oh, ow, self.input_offset as u32, self.output_offset as u32, lo as u32, hi as u32]
    }
}

/// A cursor over an op's parameter words.
pub(crate) struct WordReader<'a> {
    bytes: &'a [u8],
    op: u32,
}

impl<'a> WordReader<'a> {
    pub(crate) fn new(bytes: &'a [u8], op: u32) -> Self {
        Self { bytes, op }
    }

    fn err(&self) -> Error {
        Error::BadOp { index: self.op, reason: "parameter block too short" }
    }

    /// The next word.
    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        let (w, rest) = self.bytes.split_first_chunk::<4>().ok_or(self.err())?;
        self.bytes = rest;
        Ok(u32::from_le_bytes(*w))
    }

    /// The next word as i32.
    pub(crate) fn i32(&mut self) -> Result<i32, Error> {
        self.u32().map(|v| v as i32)
    }

    /// The next word as a usize bounded by `max` (sizes, strides, indices).
    pub(crate) fn usize_max(&mut self, max: usize, reason: &'static str) -> Result<usize, Error> {
        let v = self.u32()? as usize;
        if v > max {
            return Err(Error::BadOp { index: self.op, reason });
        }
        Ok(v)
    }
}
