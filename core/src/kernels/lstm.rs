//! Unidirectional sequence LSTM (TFLite `UNIDIRECTIONAL_SEQUENCE_LSTM`) with TFLite Micro's
//! integer cell: int8 activations and weights with an int16 cell state (8x8→16, int32 biases),
//! and 16x8 (int16 activations, int8 weights, int16 cell state, int64 biases).
//!
//! The standard LSTM of Keras' layer, gates in TFLite's order input `i`, forget `f`, cell `g`,
//! output `o`; per time step, for every batch row, with `x` the step's input and `h`, `c` the
//! state:
//!
//! ```text
//! i = σ(W_i x + R_i h + b_i)    f = σ(W_f x + R_f h + b_f)
//! g = tanh(W_g x + R_g h + b_g) o = σ(W_o x + R_o h + b_o)
//! c ← clip(f · c + i · g)        h ← o · tanh(c)            output[t] = h
//! ```
//!
//! The integer arithmetic is TFLite Micro's (`lstm_eval.h`, `lstm_eval_common.cc`), step by
//! step:
//!
//! | stage | integers |
//! |---|---|
//! | gate pre-activation | two fully connected products to int16 at the fixed scale 2^-12 (Q3.12): `W x` with the bias and the input zero point, `R h` with the hidden zero point and no bias; each requantized (double rounding, or the 64-bit overload for 16x8) and clamped to int16, then added with int16 saturation |
//! | σ, tanh of a gate | TFLite's int16 `Logistic` / `Tanh` (`reference_integer_ops`): the 256-entry table of `sigmoid(k/24)` in Q0.16 with linear interpolation, output Q0.15 |
//! | `f · c`, `i · g` | int16 × int16 products requantized to the cell scale (multipliers `2^-15` and `2^-30 / s_c`), each clamped to int16, summed with int16 saturation |
//! | cell clip | when `cell_clip > 0`: `c` clamped to `±(int16)(cell_clip / s_c)` |
//! | `tanh(c)` | the same int16 tanh, its input rescaled from the cell's power-of-two scale `2^p` to Q3.12 (`3 · 2^(12+p)` as multiplier and shift) |
//! | `o · tanh(c)` | requantized to the hidden state's scale (`2^-30 / s_h`) plus its zero point, clamped to the activation type |
//!
//! Multipliers are computed in `f64` from the `f32` scales, as TFLite Micro's Prepare does. The
//! cell state's scale must be a power of two (the converter writes one; TFLite Micro takes the
//! rounded `log2` of whatever it gets, this kernel refuses anything else). Weights are
//! per-tensor (TFLite Micro's LSTM reads one multiplier per fully connected product).
//!
//! State: `hidden [batch, n_cell]` and `cell [batch, n_cell]` are read and updated in place, so a
//! sequence can be fed in consecutive slices (streaming): the state after one call is the state
//! the next call starts from, as TFLite Micro's variable tensors between invokes.
//! [`lstm_reset_state`] sets the state TFLite Micro starts from (hidden at its zero point, cell 0).
#![forbid(unsafe_code)]

use super::common::{Accumulator, ActivationElement};
use super::tensor::PerTensorQuant;
use crate::Error;
use crate::requant::{QuantizedMultiplier, multiply_by_quantized_multiplier, quantize_multiplier};

/// Number of gates, in TFLite's order: input, forget, cell, output.
pub const LSTM_GATES: usize = 4;

/// The scale of a gate's pre-activation (Q3.12), fixed by TFLite Micro's integer LSTM.
pub const LSTM_GATE_INPUT_SCALE: f32 = 1.0 / 4096.0;
/// The scale of a gate's activation output (Q0.15).
pub const LSTM_GATE_OUTPUT_SCALE: f32 = 1.0 / 32768.0;

/// TFLite's table of `sigmoid(k / 24)` in Q0.16, `k = 0..256`, shared by its int16 logistic and
/// tanh (`tanh(x) = 2 · sigmoid(2x) − 1`). The values are TFLite's (`internal/common.h`); a few
/// differ by one from a rounding of the float function, so they are data, not computed.
const SIGMOID_TABLE_Q16: [u16; 256] = [
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
];

/// Table entries `k` and `k + 1` (`k < 255`).
#[inline(always)]
fn table_pair(k: u32) -> (u32, u32) {
    let k = k as usize;
    match (SIGMOID_TABLE_Q16.get(k), SIGMOID_TABLE_Q16.get(k + 1)) {
        (Some(&a), Some(&b)) => (a as u32, b as u32),
        // Unreachable for k < 255; the saturated value keeps this panic-free.
        _ => (65535, 65535),
    }
}

/// The rescaling of an int16 value into the table's input, as TFLite's int16 `Tanh` /
/// `Logistic` take it: `(x · multiplier + round) >> shift`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TableInputScaling {
    /// Multiplier of the int16 input.
    pub multiplier: i32,
    /// Arithmetic right shift after the rounding term, in [0, 31].
    pub shift: i32,
}

impl TableInputScaling {
    /// A Q3.12 input (the gates): multiplier 3, no shift (the table covers ±10.7 in steps of
    /// 1/24 after the factor 3/4 TFLite applies).
    pub const Q3_12: Self = Self { multiplier: 3, shift: 0 };

    /// TFLite Micro's `lstm_internal::Tanh` for a cell state of scale `2^power`: its shift
    /// `15 + power − 3`; a non-negative one becomes the multiplier `3 << shift`, a negative one
    /// the multiplier 3 and a right shift. `None` where the integers would overflow
    /// (`power` outside [-43, 1]).
    pub fn for_power_of_two(power: i32) -> Option<Self> {
        if !(-43..=1).contains(&power) {
            return None;
        }
        let left = 15 + power - 3;
        Some(if left >= 0 { Self { multiplier: 3 << left, shift: 0 } } else { Self { multiplier: 3, shift: -left } })
    }

    #[inline(always)]
    fn apply(self, x: i16) -> i32 {
        let round = if self.shift > 0 { 1i32 << (self.shift - 1) } else { 0 };
        (x as i32 * self.multiplier + round) >> self.shift
    }
}

/// TFLite's int16 logistic (`reference_integer_ops::Logistic`, int16 overload): Q3.12 input
/// (multiplier 3), Q0.15 output in [0, 32767].
#[inline]
pub fn sigmoid_s16(x: i16) -> i16 {
    let input = TableInputScaling::Q3_12.apply(x);
    let abs = input.unsigned_abs();
    let k = abs >> 9;
    let r = if k >= 255 {
        0x7FFFu32 << 10
    } else {
        let (a, b) = table_pair(k);
        (a << 9) + (abs & 0x1FF) * (b - a)
    };
    let r = if input >= 0 { r + (1 << 9) } else { (1u32 << 25) - r + (1 << 9) - 1 };
    (r >> 10) as i16
}

/// TFLite's int16 tanh (`reference_integer_ops::Tanh`, int16 overload) with the input rescaled
/// by `scaling`; Q0.15 output.
#[inline]
pub fn tanh_s16(scaling: TableInputScaling, x: i16) -> i16 {
    let input = scaling.apply(x);
    let abs = input.unsigned_abs();
    let k = abs >> 8;
    let r = if k >= 255 {
        0xFFFFu32 << 8
    } else {
        let (a, b) = table_pair(k);
        (a << 8) + (abs & 0xFF) * (b - a)
    } as i32;
    let r = if input >= 0 { r - (1 << 23) + (1 << 7) } else { -r + (1 << 23) + (1 << 7) - 1 };
    (r >> 8) as i16
}

/// Sizes of an LSTM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LstmDims {
    /// Batch rows (each with its own state).
    pub batch: usize,
    /// Time steps of one call.
    pub time: usize,
    /// Input features per step.
    pub input: usize,
    /// Cells (the hidden state's and the output's depth).
    pub cell: usize,
    /// Input and output laid out `[time, batch, ·]` (else `[batch, time, ·]`).
    pub time_major: bool,
}

impl LstmDims {
    /// Elements of the input: `batch · time · input`.
    pub fn input_len(&self) -> usize {
        self.batch * self.time * self.input
    }
    /// Elements of the output: `batch · time · cell`.
    pub fn output_len(&self) -> usize {
        self.batch * self.time * self.cell
    }
    /// Elements of each state tensor: `batch · cell`.
    pub fn state_len(&self) -> usize {
        self.batch * self.cell
    }
    /// Bytes of the state as the interpreter keeps it (its scratch region): the int16 cell
    /// state, then the hidden state of `activation_bytes` per value (1 for int8, 2 for 16x8).
    pub fn state_bytes(&self, activation_bytes: usize) -> usize {
        self.state_len() * (2 + activation_bytes)
    }
    /// Elements of the input weights `[4, cell, input]`.
    pub fn input_weights_len(&self) -> usize {
        LSTM_GATES * self.cell * self.input
    }
    /// Elements of the recurrent weights `[4, cell, cell]`.
    pub fn recurrent_weights_len(&self) -> usize {
        LSTM_GATES * self.cell * self.cell
    }
    /// Elements of the biases `[4, cell]`.
    pub fn bias_len(&self) -> usize {
        LSTM_GATES * self.cell
    }
}

/// The quantization of an LSTM's tensors (what [`LstmParams::prepare_s8`] reads).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LstmQuant {
    /// The input.
    pub input: PerTensorQuant,
    /// Scales of the input-to-gate weights, gates in the order input, forget, cell, output.
    pub input_weight_scales: [f32; LSTM_GATES],
    /// Scales of the recurrent (hidden-to-gate) weights, same order.
    pub recurrent_weight_scales: [f32; LSTM_GATES],
    /// The hidden state (and the output, which is a copy of it at every step).
    pub hidden: PerTensorQuant,
    /// The cell state's scale: a power of two.
    pub cell_scale: f32,
    /// Cell clip (real value); 0 for none.
    pub cell_clip: f32,
}

/// Prepared parameters of [`lstm_s8`] / [`lstm_s16`] (TFLite Micro's `OpDataLSTM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LstmParams {
    /// Sizes.
    pub dims: LstmDims,
    /// `-zero_point` of the input.
    pub input_offset: i32,
    /// `-zero_point` of the hidden state (the recurrent product's input).
    pub hidden_offset: i32,
    /// Zero point of the hidden state (the output of `o · tanh(c)`).
    pub hidden_zero_point: i32,
    /// `s_x · s_W / 2^-12` per gate.
    pub input_fc: [QuantizedMultiplier; LSTM_GATES],
    /// `s_h · s_R / 2^-12` per gate.
    pub recurrent_fc: [QuantizedMultiplier; LSTM_GATES],
    /// `f · c → c`: `2^-15`.
    pub forget_mul: QuantizedMultiplier,
    /// `i · g → c`: `2^-30 / s_c`.
    pub input_mul: QuantizedMultiplier,
    /// `o · tanh(c) → h`: `2^-30 / s_h`.
    pub hidden_mul: QuantizedMultiplier,
    /// The rescaling of the cell state into tanh's input.
    pub cell_tanh: TableInputScaling,
    /// The quantized cell clip, when the real one is positive.
    pub cell_clip: Option<i16>,
}

fn checked_multiplier(kernel: &'static str, real: f64) -> Result<QuantizedMultiplier, Error> {
    if !(real.is_finite() && real >= 0.0) {
        return Err(Error::InvalidScale);
    }
    let m = quantize_multiplier(real);
    if !(-31..=30).contains(&m.shift) {
        return Err(Error::BadKernelArgument { kernel, reason: "an effective scale is above 2^30" });
    }
    Ok(m)
}

/// `log2(scale)` of an exact power-of-two `f32` (normal), else `None`.
pub fn power_of_two_exponent(scale: f32) -> Option<i32> {
    let bits = scale.to_bits();
    let exponent = ((bits >> 23) & 0xFF) as i32;
    if scale > 0.0 && bits & 0x007F_FFFF == 0 && exponent != 0 && exponent != 0xFF {
        Some(exponent - 127)
    } else {
        None
    }
}

impl LstmParams {
    fn prepare(kernel: &'static str, (qmin, qmax): (i32, i32), dims: LstmDims, q: &LstmQuant) -> Result<Self, Error> {
        q.input.check(qmin, qmax)?;
        q.hidden.check(qmin, qmax)?;
        if dims.batch == 0 || dims.time == 0 || dims.input == 0 || dims.cell == 0 {
            return Err(Error::BadKernelArgument { kernel, reason: "an extent is 0" });
        }
        let too_big = [dims.input_len(), dims.output_len(), dims.input_weights_len(), dims.recurrent_weights_len()];
        if dims.batch.checked_mul(dims.time).and_then(|n| n.checked_mul(dims.input.max(dims.cell))).is_none()
            || dims.cell.checked_mul(dims.cell.max(dims.input)).and_then(|n| n.checked_mul(LSTM_GATES)).is_none()
            || too_big.iter().any(|&n| n > isize::MAX as usize)
        {
            return Err(Error::BadKernelArgument { kernel, reason: "extents overflow" });
        }
        let gate = LSTM_GATE_INPUT_SCALE as f64;
        let mut input_fc = [QuantizedMultiplier { multiplier: 0, shift: 0 }; LSTM_GATES];
        let mut recurrent_fc = input_fc;
        for g in 0..LSTM_GATES {
            let (ws, rs) = (q.input_weight_scales[g], q.recurrent_weight_scales[g]);
            if !(ws.is_finite() && ws > 0.0 && rs.is_finite() && rs > 0.0) {
                return Err(Error::InvalidScale);
            }
            input_fc[g] = checked_multiplier(kernel, q.input.scale as f64 * ws as f64 / gate)?;
            recurrent_fc[g] = checked_multiplier(kernel, q.hidden.scale as f64 * rs as f64 / gate)?;
        }
        let power = power_of_two_exponent(q.cell_scale)
            .ok_or(Error::BadKernelArgument { kernel, reason: "the cell state scale must be a power of two" })?;
        let cell_tanh = TableInputScaling::for_power_of_two(power)
            .ok_or(Error::BadKernelArgument { kernel, reason: "the cell state scale must be in [2^-43, 2]" })?;
        let gate_out = LSTM_GATE_OUTPUT_SCALE as f64;
        let cell = q.cell_scale as f64;
        let forget_mul = checked_multiplier(kernel, gate_out * cell / cell)?;
        let input_mul = checked_multiplier(kernel, gate_out * gate_out / cell)?;
        let hidden_mul = checked_multiplier(kernel, gate_out * gate_out / q.hidden.scale as f64)?;
        if !q.cell_clip.is_finite() || q.cell_clip < 0.0 {
            return Err(Error::BadKernelArgument { kernel, reason: "cell clip must be finite and >= 0" });
        }
        // TFLite Micro: (int16) min(max(clip / scale, -32768), 32767), a truncating cast.
        let cell_clip = (q.cell_clip > 0.0).then(|| (q.cell_clip as f64 / cell).clamp(-32768.0, 32767.0) as i16);
        Ok(Self {
            dims,
            input_offset: -q.input.zero_point,
            hidden_offset: -q.hidden.zero_point,
            hidden_zero_point: q.hidden.zero_point,
            input_fc,
            recurrent_fc,
            forget_mul,
            input_mul,
            hidden_mul,
            cell_tanh,
            cell_clip,
        })
    }

    /// Prepares an int8 LSTM (8x8→16: int8 input and hidden state, int16 cell state, int32
    /// biases), as TFLite Micro's `UnidirectionalSequenceLstmPrepare`.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization,
    /// [`Error::BadKernelArgument`] for a zero extent, a cell scale that is not a power of two,
    /// a negative cell clip or an effective scale above 2^30.
    pub fn prepare_s8(dims: LstmDims, quant: &LstmQuant) -> Result<Self, Error> {
        Self::prepare("lstm_s8", (-128, 127), dims, quant)
    }

    /// Prepares a 16x8 LSTM (int16 input and hidden state with zero points 0, int8 weights,
    /// int16 cell state, int64 biases).
    ///
    /// # Errors
    /// As [`LstmParams::prepare_s8`], and [`Error::BadKernelArgument`] for a nonzero zero point.
    pub fn prepare_s16(dims: LstmDims, quant: &LstmQuant) -> Result<Self, Error> {
        if quant.input.zero_point != 0 || quant.hidden.zero_point != 0 {
            return Err(Error::BadKernelArgument { kernel: "lstm_s16", reason: "int16 zero points must be 0" });
        }
        Self::prepare("lstm_s16", (-32768, 32767), dims, quant)
    }
}

/// The constant tensors of an LSTM, gates in the order input, forget, cell, output.
#[derive(Debug, Clone, Copy)]
pub struct LstmWeights<'a, B> {
    /// Input-to-gate weights `[4, cell, input]`, int8 symmetric.
    pub input: &'a [i8],
    /// Recurrent weights `[4, cell, cell]`, int8 symmetric.
    pub recurrent: &'a [i8],
    /// Gate biases `[4, cell]` (scale `s_x · s_W` of each gate), `i32` for int8, `i64` for 16x8.
    pub bias: &'a [B],
}

/// Sets the state TFLite Micro starts from (its reset of the variable tensors): every hidden
/// value at the hidden state's zero point, every cell value 0.
///
/// # Errors
/// [`Error::LengthMismatch`] if a state is not `batch · cell` long.
pub fn lstm_reset_state<X: ActivationElement>(
    params: &LstmParams,
    hidden: &mut [X],
    cell: &mut [i16],
) -> Result<(), Error> {
    let n = params.dims.state_len();
    for len in [hidden.len(), cell.len()] {
        if len != n {
            return Err(Error::LengthMismatch { expected: n, actual: len });
        }
    }
    hidden.fill(X::from_clamped(params.hidden_zero_point));
    cell.fill(0);
    Ok(())
}

const INDEX: Error = Error::BadKernelArgument { kernel: "lstm", reason: "index outside a checked buffer" };

/// `sum_k w[k] · (x[k] + offset) (+ bias)` requantized to Q3.12 and clamped to int16
/// (`reference_integer_ops::FullyConnected` with an int16 output).
#[inline]
fn gate_product<X: ActivationElement, A: Accumulator>(
    w: &[i8],
    x: &[X],
    offset: i32,
    bias: Option<A>,
    m: QuantizedMultiplier,
) -> i32 {
    let mut acc = A::ZERO;
    for (&w, &x) in w.iter().zip(x) {
        acc = acc.add_product(w as i32 * (x.to_i32() + offset));
    }
    if let Some(b) = bias {
        acc = acc.add_bias(b);
    }
    acc.requantize(m.multiplier, m.shift).clamp(i16::MIN as i32, i16::MAX as i32)
}

#[inline(always)]
fn sat16(x: i32) -> i16 {
    x.clamp(i16::MIN as i32, i16::MAX as i32) as i16
}

/// `a · b` (int16 × int16, zero points 0) requantized by `m`, plus `offset`, clamped to
/// `[min, max]` (`reference_integer_ops::MulElementwise`).
#[inline(always)]
fn mul16(a: i16, b: i16, m: QuantizedMultiplier, offset: i32, (min, max): (i32, i32)) -> i32 {
    (offset + multiply_by_quantized_multiplier(a as i32 * b as i32, m.multiplier, m.shift)).clamp(min, max)
}

/// One time step of one batch row: reads the row's input `x` and state `h` (old), updates `c`
/// in place, writes the new hidden state into `out`.
#[allow(clippy::too_many_arguments)]
fn step<X: ActivationElement, A: Accumulator>(
    p: &LstmParams,
    w: &LstmWeights<'_, A>,
    x: &[X],
    h: &[X],
    c: &mut [i16],
    out: &mut [X],
) -> Result<(), Error> {
    let (n_in, n_cell) = (p.dims.input, p.dims.cell);
    let range = (X::RANGE.min, X::RANGE.max);
    for (j, (c, out)) in c.iter_mut().zip(out.iter_mut()).enumerate() {
        let mut gates = [0i16; LSTM_GATES];
        for (g, gate) in gates.iter_mut().enumerate() {
            let row = g * n_cell + j;
            let wi = w.input.get(row * n_in..(row + 1) * n_in).ok_or(INDEX)?;
            let wr = w.recurrent.get(row * n_cell..(row + 1) * n_cell).ok_or(INDEX)?;
            let bias = *w.bias.get(row).ok_or(INDEX)?;
            let fx = gate_product(wi, x, p.input_offset, Some(bias), p.input_fc[g]);
            let fh = gate_product::<X, A>(wr, h, p.hidden_offset, None, p.recurrent_fc[g]);
            let pre = sat16(fx + fh);
            *gate = if g == 2 { tanh_s16(TableInputScaling::Q3_12, pre) } else { sigmoid_s16(pre) };
        }
        let [i, f, g, o] = gates;
        let cell16 = (i16::MIN as i32, i16::MAX as i32);
        let kept = mul16(f, *c, p.forget_mul, 0, cell16);
        let added = mul16(i, g, p.input_mul, 0, cell16);
        let mut new_c = sat16(kept + added);
        if let Some(clip) = p.cell_clip {
            // TFLite Micro: max(min(clip, c), (int16)-clip).
            new_c = new_c.min(clip).max(clip.wrapping_neg());
        }
        *c = new_c;
        let t = tanh_s16(p.cell_tanh, new_c);
        *out = X::from_clamped(mul16(t, o, p.hidden_mul, p.hidden_zero_point, range));
    }
    Ok(())
}

fn lstm<X: ActivationElement, A: Accumulator>(
    kernel: &'static str,
    p: &LstmParams,
    w: &LstmWeights<'_, A>,
    input: &[X],
    hidden: &mut [X],
    cell: &mut [i16],
    output: &mut [X],
) -> Result<(), Error> {
    let d = p.dims;
    for (len, expected) in [
        (input.len(), d.input_len()),
        (output.len(), d.output_len()),
        (hidden.len(), d.state_len()),
        (cell.len(), d.state_len()),
        (w.input.len(), d.input_weights_len()),
        (w.recurrent.len(), d.recurrent_weights_len()),
        (w.bias.len(), d.bias_len()),
    ] {
        if len != expected {
            return Err(Error::LengthMismatch { expected, actual: len });
        }
    }
    if d.cell == 0 || d.input == 0 {
        return Err(Error::BadKernelArgument { kernel, reason: "an extent is 0" });
    }
    // Batch rows are independent: each runs its time steps in order, whatever the layout.
    for (b, (h, c)) in hidden.chunks_exact_mut(d.cell).zip(cell.chunks_exact_mut(d.cell)).enumerate() {
        for t in 0..d.time {
            let row = if d.time_major { t * d.batch + b } else { b * d.time + t };
            let x = input.get(row * d.input..(row + 1) * d.input).ok_or(INDEX)?;
            let out = output.get_mut(row * d.cell..(row + 1) * d.cell).ok_or(INDEX)?;
            step(p, w, x, h, c, out)?;
            for (h, &o) in h.iter_mut().zip(out.iter()) {
                *h = o;
            }
        }
    }
    Ok(())
}

/// int8 LSTM (8x8→16) over `dims.time` steps: `input` and `output` in the layout of
/// `dims.time_major`; `hidden` (int8) and `cell` (int16) `[batch, cell]` are the state, read and
/// updated.
///
/// # Errors
/// [`Error::LengthMismatch`] if a buffer does not have the length `params.dims` gives it.
///
/// ```
/// use microquant::kernels::lstm::{LstmDims, LstmParams, LstmQuant, LstmWeights, lstm_reset_state, lstm_s8};
/// use microquant::kernels::tensor::PerTensorQuant;
///
/// let dims = LstmDims { batch: 1, time: 2, input: 1, cell: 1, time_major: false };
/// let quant = LstmQuant {
///     input: PerTensorQuant { scale: 0.05, zero_point: 0 },
///     input_weight_scales: [0.01; 4],
///     recurrent_weight_scales: [0.01; 4],
///     hidden: PerTensorQuant { scale: 1.0 / 128.0, zero_point: 0 },
///     cell_scale: 1.0 / 2048.0,
///     cell_clip: 0.0,
/// };
/// let p = LstmParams::prepare_s8(dims, &quant)?;
/// let w = LstmWeights { input: &[100, 100, 100, 100], recurrent: &[0, 0, 0, 0], bias: &[0i32; 4] };
/// let (mut hidden, mut cell, mut out) = ([0i8], [0i16], [0i8; 2]);
/// lstm_reset_state(&p, &mut hidden, &mut cell)?;
/// lstm_s8(&p, &w, &[40, 40], &mut hidden, &mut cell, &mut out)?;
/// // x = 2.0, every gate's input 2.0: the hidden state grows from one step to the next.
/// assert!(out[0] > 0 && out[1] > out[0]);
/// # Ok::<(), microquant::Error>(())
/// ```
pub fn lstm_s8(
    params: &LstmParams,
    weights: &LstmWeights<'_, i32>,
    input: &[i8],
    hidden: &mut [i8],
    cell: &mut [i16],
    output: &mut [i8],
) -> Result<(), Error> {
    lstm("lstm_s8", params, weights, input, hidden, cell, output)
}

/// 16x8 LSTM: as [`lstm_s8`] with int16 activations and int64 biases.
///
/// # Errors
/// As [`lstm_s8`].
pub fn lstm_s16(
    params: &LstmParams,
    weights: &LstmWeights<'_, i64>,
    input: &[i16],
    hidden: &mut [i16],
    cell: &mut [i16],
    output: &mut [i16],
) -> Result<(), Error> {
    lstm("lstm_s16", params, weights, input, hidden, cell, output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quant() -> LstmQuant {
        LstmQuant {
            input: PerTensorQuant { scale: 0.05, zero_point: 3 },
            input_weight_scales: [0.01; 4],
            recurrent_weight_scales: [0.02; 4],
            hidden: PerTensorQuant { scale: 1.0 / 128.0, zero_point: -2 },
            cell_scale: 1.0 / 2048.0,
            cell_clip: 0.0,
        }
    }
    const DIMS: LstmDims = LstmDims { batch: 1, time: 2, input: 2, cell: 3, time_major: false };

    #[test]
    fn table_functions_at_their_ends() {
        assert_eq!(sigmoid_s16(0), 16384);
        // Q3.12 ends at ±8: inside the table (it covers ±10.7).
        assert_eq!(sigmoid_s16(i16::MAX), (32768.0 / (1.0 + (-8.0f64).exp())).round() as i16);
        assert_eq!(tanh_s16(TableInputScaling::Q3_12, 0), 0);
        assert_eq!(tanh_s16(TableInputScaling::Q3_12, i16::MAX), 32767);
        assert_eq!(tanh_s16(TableInputScaling::Q3_12, i16::MIN), -32767);
    }

    #[test]
    fn sigmoid_and_tanh_follow_the_float_functions() {
        for x in (i16::MIN..=i16::MAX).step_by(97) {
            let r = x as f64 / 4096.0;
            let s = sigmoid_s16(x) as f64 / 32768.0;
            let t = tanh_s16(TableInputScaling::Q3_12, x) as f64 / 32768.0;
            assert!((s - 1.0 / (1.0 + (-r).exp())).abs() < 2e-3, "sigmoid({r}) = {s}");
            assert!((t - r.tanh()).abs() < 4e-3, "tanh({r}) = {t}");
        }
    }

    #[test]
    fn tanh_scaling_of_the_cell_state() {
        assert_eq!(TableInputScaling::for_power_of_two(-12), Some(TableInputScaling::Q3_12));
        assert_eq!(TableInputScaling::for_power_of_two(-11), Some(TableInputScaling { multiplier: 6, shift: 0 }));
        assert_eq!(TableInputScaling::for_power_of_two(-15), Some(TableInputScaling { multiplier: 3, shift: 3 }));
        assert_eq!(TableInputScaling::for_power_of_two(2), None);
        assert_eq!(TableInputScaling::for_power_of_two(-44), None);
    }

    #[test]
    fn prepare_refuses_bad_quantization() {
        let mut q = quant();
        q.cell_scale = 0.0003;
        assert!(matches!(LstmParams::prepare_s8(DIMS, &q), Err(Error::BadKernelArgument { .. })));
        let mut q = quant();
        q.input_weight_scales[2] = 0.0;
        assert_eq!(LstmParams::prepare_s8(DIMS, &q), Err(Error::InvalidScale));
        let mut q = quant();
        q.cell_clip = -1.0;
        assert!(matches!(LstmParams::prepare_s8(DIMS, &q), Err(Error::BadKernelArgument { .. })));
        assert!(matches!(LstmParams::prepare_s16(DIMS, &quant()), Err(Error::BadKernelArgument { .. })));
        let zero = LstmDims { cell: 0, ..DIMS };
        assert!(matches!(LstmParams::prepare_s8(zero, &quant()), Err(Error::BadKernelArgument { .. })));
        let mut q = quant();
        q.hidden.zero_point = 300;
        assert!(matches!(LstmParams::prepare_s8(DIMS, &q), Err(Error::ZeroPointOutOfRange { .. })));
    }

    #[test]
    fn kernel_checks_lengths() {
        let p = LstmParams::prepare_s8(DIMS, &quant()).unwrap();
        let w = LstmWeights { input: &[1i8; 24], recurrent: &[1i8; 36], bias: &[0i32; 12] };
        let (mut h, mut c, mut out) = ([0i8; 3], [0i16; 3], [0i8; 6]);
        assert!(lstm_s8(&p, &w, &[0i8; 4], &mut h, &mut c, &mut out).is_ok());
        assert_eq!(
            lstm_s8(&p, &w, &[0i8; 5], &mut h, &mut c, &mut out),
            Err(Error::LengthMismatch { expected: 4, actual: 5 })
        );
        let short = LstmWeights { recurrent: &[1i8; 35], ..w };
        assert_eq!(
            lstm_s8(&p, &short, &[0i8; 4], &mut h, &mut c, &mut out),
            Err(Error::LengthMismatch { expected: 36, actual: 35 })
        );
        assert_eq!(
            lstm_s8(&p, &w, &[0i8; 4], &mut h, &mut c[..2], &mut out),
            Err(Error::LengthMismatch { expected: 3, actual: 2 })
        );
    }

    #[test]
    fn reset_state_sets_the_zero_points() {
        let p = LstmParams::prepare_s8(DIMS, &quant()).unwrap();
        let (mut h, mut c) = ([5i8; 3], [7i16; 3]);
        lstm_reset_state(&p, &mut h, &mut c).unwrap();
        assert_eq!((h, c), ([-2; 3], [0; 3]));
        assert!(lstm_reset_state(&p, &mut h[..1], &mut c).is_err());
    }

    #[test]
    fn cell_clip_is_quantized_by_truncation() {
        let q = LstmQuant { cell_clip: 0.50003, ..quant() };
        let p = LstmParams::prepare_s8(DIMS, &q).unwrap();
        assert_eq!(p.cell_clip, Some(1024));
        assert_eq!(LstmParams::prepare_s8(DIMS, &quant()).unwrap().cell_clip, None);
    }
}
