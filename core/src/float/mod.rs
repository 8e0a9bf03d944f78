//! Float execution of a [`Graph`] (`alloc` only): plain f32 kernels that drive calibration and
//! give the reference the int8 model is compared with.
//!
//! [`FloatExecutor::new`] checks the graph once ([`Graph::validate`], every activation `F32`,
//! every op one of those below) and converts every constant to f32 (int8 weights of hybrid ops
//! and `Dequantize` inputs are dequantized, f16 constants widened). [`FloatExecutor::run`] then
//! runs the nodes in order; [`FloatExecutor::run_observed`] also hands every activation to a
//! callback as soon as it is computed (the calibration feeds its observers from there), and
//! [`FloatExecutor::run_all`] keeps them all.
//!
//! Ops: Conv2d, DepthwiseConv2d, FullyConnected, MaxPool2d, AvgPool2d, Add, Sub, Mul, Div,
//! Softmax, Logistic, Tanh, HardSwish, HardSigmoid, Relu, Relu6, LeakyRelu, Concatenation, Pad,
//! Mean, Reshape, Transpose, Squeeze, Dequantize (of constants), Resize, Sum, ReduceMax. Not Quantize: a quantized graph
//! runs in the interpreter.
//!
//! # Accuracy
//! Dot products, sums and means accumulate in f64 and round once; exp, tanh and the sigmoids are
//! evaluated in f64 (libm). Results are therefore the correctly rounded value or within an ulp or
//! two of it, and differ from ONNX Runtime's f32 kernels by ONNX Runtime's own rounding (the
//! tests bound it: `tests/host/float_exec.rs`).

pub(crate) mod conv;
mod dynamic;
mod elementwise;
mod fully_connected;
mod movement;
mod pool;
mod recurrent;
mod reduce;
mod resize;
pub(crate) mod shape;
mod softmax;

use alloc::borrow::Cow;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::{OnceCell, RefCell};

use crate::graph::{
    ConstData, ConvertError, ConvertErrorKind as Kind, DType, FusedActivation, Graph, Node, Op, Tensor, TensorId,
    UnaryFn,
};
use crate::kernels::arch::gemm::PackedRhs;

pub(crate) use elementwise::BinaryOp;

/// The largest tensor (elements) the executor allocates, 2^26 (256 MiB of f32): a larger one in a
/// graph is an error at [`FloatExecutor::new`], not an allocation failure while running.
pub const MAX_TENSOR_ELEMENTS: usize = 1 << 26;

/// A kernel's complaint about its arguments (turned into a [`ConvertError`] with the node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KernelError(pub &'static str);

/// Applies a fused activation's clamp.
pub(crate) fn clamp_activation(v: f32, a: FusedActivation) -> f32 {
    match a.float_range() {
        None => v,
        Some((lo, hi)) => v.max(lo).min(hi),
    }
}

/// `f` applied to every value (generic, so the loop inlines `f` and vectorizes when it can).
#[inline(always)]
fn map(x: &[f32], f: impl Fn(f32) -> f32 + Sync) -> Vec<f32> {
    // Rows of 4096 values, about 8 operations each (the polynomial exp is more, ReLU less).
    const ROW: usize = 4096;
    let mut out = vec![0f32; x.len()];
    in_row_bands(&mut out, ROW, 8 * ROW, |first, band| {
        for (o, &v) in band.iter_mut().zip(&x[first * ROW..]) {
            *o = f(v);
        }
    });
    out
}

/// Runs `f(first_row, band)` over `out` cut into bands of whole rows of `row_len` values, side
/// by side on threads when the `std` feature is on and the work (`work_per_row` operations a
/// row) pays for them ([`crate::parallel`]), else once over all of `out`. Each value is computed
/// by one call, as it would be alone: the same results with any number of threads.
pub(crate) fn in_row_bands<T: Send>(
    out: &mut [T],
    row_len: usize,
    work_per_row: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    #[cfg(feature = "std")]
    {
        let rows = out.len().div_ceil(row_len.max(1));
        let threads = crate::parallel::threads_for(rows.saturating_mul(work_per_row), rows);
        if threads > 1 {
            let band = rows.div_ceil(threads);
            let parts: Vec<(usize, &mut [T])> =
                out.chunks_mut(band * row_len).enumerate().map(|(i, part)| (i * band, part)).collect();
            crate::parallel::run_parts(parts, |(first, part)| f(first, part));
            return;
        }
    }
    let _ = (row_len, work_per_row); // without std: one call over everything
    f(0, out);
}

/// One input of [`eval_op`]: data and shape.
#[derive(Debug, Clone, Copy)]
pub struct TensorRef<'a> {
    /// Row-major values.
    pub data: &'a [f32],
    /// Shape.
    pub shape: &'a [usize],
}

/// Evaluates one op on f32 inputs (`None` for an absent optional input); `out_shape` is the
/// output's shape ([`Op::infer_shapes`]).
///
/// # Errors
/// [`Kind::UnsupportedOp`] for ops the float executor does not run (Quantize), and
/// [`Kind::InvalidGraph`] if data and shapes do not fit the op.
pub fn eval_op(op: &Op, inputs: &[Option<TensorRef<'_>>], out_shape: &[usize]) -> Result<Vec<f32>, ConvertError> {
    eval_op_packed(op, inputs, out_shape, None)
}

/// [`eval_op`] with a conv's or fully connected layer's weights already packed for the GEMM
/// (the executor packs each constant weight once for every run).
fn eval_op_packed(
    op: &Op,
    inputs: &[Option<TensorRef<'_>>],
    out_shape: &[usize],
    packed: Option<&PackedRhs>,
) -> Result<Vec<f32>, ConvertError> {
    let kerr = |e: KernelError| ConvertError::new(Kind::InvalidGraph, e.0);
    let input = |i: usize| -> Result<TensorRef<'_>, ConvertError> {
        inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("{} input {i} is missing", op.name())))
    };
    let opt = |i: usize| inputs.get(i).copied().flatten();
    let x = input(0)?;
    let nhwc = |s: &[usize]| -> Result<[usize; 4], ConvertError> {
        match *s {
            [n, h, w, c] => Ok([n, h, w, c]),
            _ => Err(ConvertError::new(Kind::InvalidGraph, format!("{} needs a 4-D NHWC input, got {s:?}", op.name()))),
        }
    };
    let y = match op {
        Op::Conv2d(c) => {
            let w = input(1)?;
            let ws = nhwc(w.shape)?;
            let geo = conv::ConvGeometry {
                input: nhwc(x.shape)?,
                kernel: [ws[1], ws[2]],
                stride: [c.stride_h, c.stride_w],
                dilation: [c.dilation_h, c.dilation_w],
                padding: c.padding,
            };
            conv::conv2d_f32_packed(x.data, w.data, packed, opt(2).map(|b| b.data), &geo, ws[0], c.activation)
                .map_err(kerr)?
        }
        Op::DepthwiseConv2d(c) => {
            let w = input(1)?;
            let ws = nhwc(w.shape)?;
            let geo = conv::ConvGeometry {
                input: nhwc(x.shape)?,
                kernel: [ws[1], ws[2]],
                stride: [c.stride_h, c.stride_w],
                dilation: [c.dilation_h, c.dilation_w],
                padding: c.padding,
            };
            conv::depthwise_conv2d_f32(x.data, w.data, opt(2).map(|b| b.data), &geo, c.depth_multiplier, c.activation)
                .map_err(kerr)?
        }
        Op::FullyConnected(f) => {
            let w = input(1)?;
            let (outputs, ins) = match *w.shape {
                [o, i] => (o, i),
                _ => return Err(ConvertError::new(Kind::InvalidGraph, "fully connected weights must be [out, in]")),
            };
            let b = opt(2).map(|b| b.data);
            fully_connected::fully_connected_f32_packed(x.data, w.data, packed, b, ins, outputs, f.activation)
                .map_err(kerr)?
        }
        Op::MaxPool2d(p) => pool::pool2d_f32(x.data, nhwc(x.shape)?, p, true).map_err(kerr)?,
        Op::AvgPool2d(p) => pool::pool2d_f32(x.data, nhwc(x.shape)?, p, false).map_err(kerr)?,
        Op::Add { activation } | Op::Sub { activation } | Op::Mul { activation } | Op::Div { activation } => {
            let b = input(1)?;
            let bop = match op {
                Op::Add { .. } => BinaryOp::Add,
                Op::Sub { .. } => BinaryOp::Sub,
                Op::Mul { .. } => BinaryOp::Mul,
                _ => BinaryOp::Div,
            };
            let mut y = elementwise::binary_f32(bop, x.data, x.shape, b.data, b.shape).map_err(kerr)?;
            if *activation != FusedActivation::None {
                y.iter_mut().for_each(|v| *v = clamp_activation(*v, *activation));
            }
            y
        }
        Op::Minimum | Op::Maximum | Op::Prelu | Op::SquaredDifference => {
            let bop = match op {
                Op::Minimum => BinaryOp::Min,
                Op::Maximum => BinaryOp::Max,
                Op::SquaredDifference => BinaryOp::SquaredDifference,
                _ => BinaryOp::Prelu,
            };
            let b = input(1)?;
            elementwise::binary_f32(bop, x.data, x.shape, b.data, b.shape).map_err(kerr)?
        }
        Op::Softmax { beta } => {
            softmax::softmax_f32(x.data, x.shape.last().copied().unwrap_or(1), *beta).map_err(kerr)?
        }
        Op::Lstm(l) => eval_lstm(l, inputs, None, None)?,
        Op::TransposeConv2d(c) => {
            let w = input(1)?;
            let ws = nhwc(w.shape)?;
            let geo = conv::TransposeConvGeometry {
                input: nhwc(x.shape)?,
                kernel: [ws[1], ws[2]],
                stride: [c.stride_h, c.stride_w],
                pad: [c.pad_top, c.pad_left],
                output: [c.output_h, c.output_w],
            };
            conv::transpose_conv2d_f32(x.data, w.data, opt(2).map(|b| b.data), &geo, ws[0], c.activation)
                .map_err(kerr)?
        }
        Op::BatchMatMul { adj_x, adj_y } => {
            let b = input(1)?;
            fully_connected::batch_matmul_f32(x.data, x.shape, b.data, b.shape, *adj_x, *adj_y).map_err(kerr)?
        }
        Op::Gru(gru) => {
            let xs: [usize; 3] =
                x.shape.try_into().map_err(|_| ConvertError::new(Kind::InvalidGraph, "gru input must be 3-D"))?;
            let data = |k: usize| input(k).map(|t| t.data);
            let operands = recurrent::GruOperands {
                weights: [data(1)?, data(2)?, data(3)?],
                recurrent: [data(4)?, data(5)?, data(6)?],
                input_bias: [data(7)?, data(8)?, data(9)?],
                recurrent_bias: [data(10)?, data(11)?, data(12)?],
                initial_h: opt(13).map(|t| t.data),
            };
            recurrent::gru_f32(x.data, xs, gru.time_major, gru.linear_before_reset, &operands).map_err(kerr)?
        }
        Op::Logistic => map(x.data, elementwise::logistic),
        Op::Tanh => map(x.data, elementwise::tanh),
        Op::HardSwish => map(x.data, elementwise::hard_swish),
        Op::HardSigmoid { alpha, beta } => map(x.data, |v| elementwise::hard_sigmoid(v, *alpha, *beta)),
        Op::Relu => map(x.data, |v| v.max(0.0)),
        Op::Relu6 => map(x.data, |v| v.clamp(0.0, 6.0)),
        // max then min, as ONNX Runtime (NaN bounds were refused at import).
        Op::Clip { min, max } => map(x.data, |v| v.max(*min).min(*max)),
        Op::Abs => map(x.data, |v| v.abs()),
        Op::Neg => map(x.data, |v| -v),
        Op::Rsqrt => map(x.data, |v| 1.0 / libm::sqrtf(v)),
        Op::Elu { alpha } => map(x.data, |v| if v < 0.0 { *alpha * (libm::expf(v) - 1.0) } else { v }),
        Op::LeakyRelu { alpha } => map(x.data, |v| elementwise::leaky_relu(v, *alpha)),
        Op::Unary(UnaryFn::Silu) => map(x.data, elementwise::silu),
        Op::Unary(UnaryFn::Exp) => map(x.data, elementwise::exp_f32),
        Op::Unary(f) => map(x.data, |v| f.eval(v)),
        Op::Concatenation { axis, activation } => {
            let parts: Vec<(&[f32], &[usize])> = inputs.iter().flatten().map(|t| (t.data, t.shape)).collect();
            let mut y = shape::concat(&parts, *axis).map_err(kerr)?;
            y.iter_mut().for_each(|v| *v = clamp_activation(*v, *activation));
            y
        }
        Op::Pad { paddings } => {
            let value = opt(1).and_then(|t| t.data.first().copied()).unwrap_or(0.0);
            shape::pad(x.data, x.shape, paddings, value).map_err(kerr)?
        }
        Op::Mean { axes, .. } => shape::mean(x.data, x.shape, axes).map_err(kerr)?,
        Op::Reshape { .. } | Op::Squeeze { .. } | Op::Dequantize => x.data.to_vec(),
        Op::Transpose { perm } => shape::transpose(x.data, x.shape, perm).map_err(kerr)?,
        Op::Sum { axes, .. } => reduce::reduce(x.data, x.shape, axes, false).map_err(kerr)?,
        Op::ReduceMax { axes, .. } => reduce::reduce(x.data, x.shape, axes, true).map_err(kerr)?,
        Op::Resize { method, size, align_corners, half_pixel_centers } => {
            resize::resize_f32(x.data, nhwc(x.shape)?, *size, *method, *align_corners, *half_pixel_centers)
                .map_err(kerr)?
        }
        Op::StridedSlice(s) => movement::strided_slice(x.data, x.shape, s).map_err(kerr)?,
        Op::DepthToSpace { .. } | Op::SpaceToDepth { .. } => {
            movement::space_depth(x.data, x.shape, op).map_err(kerr)?
        }
        Op::MirrorPad { paddings, mode } => movement::mirror_pad(x.data, x.shape, paddings, *mode).map_err(kerr)?,
        Op::Gather { axis, indices, .. } => movement::gather(x.data, x.shape, *axis, indices).map_err(kerr)?,
        Op::Tile { shape } => movement::tile(x.data, x.shape, shape).map_err(kerr)?,
        other => {
            return Err(ConvertError::new(
                Kind::UnsupportedOp,
                format!("{} is not run by the float executor", other.name()),
            ));
        }
    };
    if Some(y.len()) != crate::graph::num_elements(out_shape) {
        return Err(ConvertError::new(
            Kind::InvalidGraph,
            format!("{} produced {} values for output shape {out_shape:?}", op.name(), y.len()),
        ));
    }
    Ok(y)
}

/// IEEE 754 binary16 bits → f32 (exact).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m * 2^-24.
            let v = m as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// f32 values of a constant tensor: f32 as is, quantized integers dequantized, f16 widened,
/// plain integers converted. `None` for bool data.
fn constant_f32(t: &Tensor) -> Option<Cow<'_, [f32]>> {
    let d = t.data.as_ref()?;
    Some(match d {
        ConstData::F32(v) => Cow::Borrowed(v.as_slice()),
        ConstData::F16(v) => Cow::Owned(v.iter().map(|&h| f16_to_f32(h)).collect()),
        _ if t.quant.is_some() => Cow::Owned(t.dequantized_data()?),
        ConstData::Bool(_) => return None,
        other => Cow::Owned(other.to_i64_vec()?.into_iter().map(|v| v as f32).collect()),
    })
}

/// The callback of [`FloatExecutor::run_observed`].
type Visit<'a> = dyn FnMut(TensorId, &[f32]) -> Result<(), ConvertError> + 'a;

/// Runs a float graph. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct FloatExecutor<'g> {
    graph: &'g Graph,
    constants: Vec<Option<Cow<'g, [f32]>>>,
    /// Per node: the weight scales of a hybrid layer run with dynamic quantization
    /// ([`FloatExecutor::new_dynamic`]); empty otherwise.
    dynamic: Vec<Option<Vec<f32>>>,
    /// Index of the last node reading each tensor (`usize::MAX`: keep to the end).
    last_use: Vec<usize>,
    /// With [`FloatExecutor::carry_state`]: per node, the state an LSTM left at the end of the
    /// last run.
    carried: Option<RefCell<Vec<Option<recurrent::LstmState>>>>,
    /// Per node: the largest `|cell state|` an LSTM reached in any run so far (0 for other
    /// nodes): what the int16 cell state's scale must hold.
    cell_peaks: RefCell<Vec<f32>>,
    /// Per node: a conv's or fully connected layer's constant weights packed for the GEMM, at
    /// its first run (`None` inside: not packable), kept for every later run.
    packed: Vec<OnceCell<Option<PackedRhs>>>,
}

fn node_err(index: usize, node: &Node, e: ConvertError) -> ConvertError {
    e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str())
}

impl<'g> FloatExecutor<'g> {
    /// Checks `graph` and prepares its constants.
    ///
    /// # Errors
    /// [`Graph::validate`]'s errors; [`Kind::UnsupportedDType`] for an activation that is not
    /// f32 or a bool constant; [`Kind::UnsupportedOp`] for an op the executor does not run;
    /// [`Kind::Unsupported`] for an activation larger than [`MAX_TENSOR_ELEMENTS`].
    pub fn new(graph: &'g Graph) -> Result<Self, ConvertError> {
        Self::build(graph, false)
    }

    /// Like [`new`](Self::new), but the hybrid layers (Conv2d, DepthwiseConv2d and
    /// FullyConnected with an f32 input and int8 weights) quantize their input per call and sum
    /// in integers, as ONNX Runtime's `quantize_dynamic` models compute (see
    /// [`crate::ptq::quantize_dynamic`]), instead of computing in float with the weights
    /// dequantized.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Kind::Unsupported`] for int8 weights that a hybrid layer and
    /// another node both read.
    pub fn new_dynamic(graph: &'g Graph) -> Result<Self, ConvertError> {
        Self::build(graph, true)
    }

    fn build(graph: &'g Graph, dynamic: bool) -> Result<Self, ConvertError> {
        graph.validate()?;
        // Hybrid layers of a dynamic run: their weights stay integers (as f32 values).
        let mut dynamic_nodes: Vec<Option<Vec<f32>>> = vec![None; if dynamic { graph.nodes.len() } else { 0 }];
        let mut raw_weights = vec![false; graph.tensors.len()];
        for (i, n) in graph.nodes.iter().enumerate().filter(|_| dynamic) {
            let weighted = matches!(n.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_));
            let x_f32 = n.input(0).and_then(|x| graph.tensor(x)).is_some_and(|t| t.dtype == DType::F32);
            let w = n.input(1).and_then(|w| graph.tensor(w).map(|t| (w, t)));
            if let (true, true, Some((w, t))) = (weighted, x_f32, w) {
                if let (DType::I8, Some(q)) = (t.dtype, t.quant.as_ref()) {
                    if let (Some(d), Some(r)) = (dynamic_nodes.get_mut(i), raw_weights.get_mut(w.index())) {
                        *d = Some(q.scales.clone());
                        *r = true;
                    }
                }
            }
        }
        for (i, n) in graph.nodes.iter().enumerate() {
            let shared = n.inputs.iter().enumerate().any(|(k, t)| {
                t.is_some_and(|t| raw_weights.get(t.index()) == Some(&true))
                    && (k != 1 || dynamic_nodes.get(i).is_none_or(Option::is_none))
            });
            if shared {
                return Err(ConvertError::new(
                    Kind::Unsupported,
                    "dynamic quantization: int8 weights read by a hybrid layer and by another node",
                )
                .at_node(i, n.op.name())
                .with_node_name(n.name.as_str()));
            }
        }
        let mut constants = Vec::with_capacity(graph.tensors.len());
        for (i, t) in graph.tensors.iter().enumerate() {
            if raw_weights.get(i) == Some(&true) {
                let raw = t.data.as_ref().and_then(|d| d.to_i64_vec()).unwrap_or_default();
                constants.push(Some(Cow::Owned(raw.into_iter().map(|v| v as f32).collect())));
            } else if t.is_constant() {
                let v = constant_f32(t).ok_or_else(|| {
                    ConvertError::new(Kind::UnsupportedDType, format!("constant of {} cannot be read as f32", t.dtype))
                        .with_tensor(i, t.name.as_str())
                })?;
                constants.push(Some(v));
            } else {
                if t.num_elements().is_none_or(|n| n > MAX_TENSOR_ELEMENTS) {
                    return Err(ConvertError::new(
                        Kind::Unsupported,
                        format!("activation of shape {:?} has more than {MAX_TENSOR_ELEMENTS} elements", t.shape),
                    )
                    .with_tensor(i, t.name.as_str()));
                }
                if t.dtype != DType::F32 {
                    return Err(ConvertError::new(
                        Kind::UnsupportedDType,
                        format!("activation is {}: the float executor runs f32 graphs", t.dtype),
                    )
                    .with_tensor(i, t.name.as_str()));
                }
                constants.push(None);
            }
        }
        let mut last_use = vec![0usize; graph.tensors.len()];
        for (i, n) in graph.nodes.iter().enumerate() {
            if matches!(n.op, Op::Quantize) || !is_supported(&n.op) {
                return Err(ConvertError::new(
                    Kind::UnsupportedOp,
                    format!("{} is not run by the float executor", n.op.name()),
                )
                .at_node(i, n.op.name())
                .with_node_name(n.name.as_str()));
            }
            for t in n.inputs.iter().flatten() {
                if let Some(l) = last_use.get_mut(t.index()) {
                    *l = i;
                }
            }
        }
        for o in &graph.outputs {
            if let Some(l) = last_use.get_mut(o.index()) {
                *l = usize::MAX;
            }
        }
        let cell_peaks = RefCell::new(vec![0.0; graph.nodes.len()]);
        let packed = vec![OnceCell::new(); graph.nodes.len()];
        Ok(Self { graph, constants, dynamic: dynamic_nodes, last_use, carried: None, cell_peaks, packed })
    }

    /// With `true`, each LSTM starts a run from the hidden and cell states it ended the last run
    /// with, as the int8 interpreter does from one invoke to the next: samples run in order then
    /// form one sequence (chunks of streaming audio). The first run after this call (and after
    /// [`reset_state`](Self::reset_state)) starts from the graph's initial states. With `false`
    /// (the default), every run starts from them.
    pub fn carry_state(&mut self, on: bool) {
        self.carried = on.then(|| RefCell::new(vec![None; self.graph.nodes.len()]));
    }

    /// True if runs carry the recurrent state ([`carry_state`](Self::carry_state)).
    pub fn carries_state(&self) -> bool {
        self.carried.is_some()
    }

    /// The largest `|cell state|` LSTM node `node` reached in the runs so far (`None` for other
    /// nodes, or before a run).
    pub fn lstm_cell_peak(&self, node: usize) -> Option<f32> {
        let is_lstm = self.graph.nodes.get(node).is_some_and(|n| matches!(n.op, Op::Lstm(_)));
        let p = self.cell_peaks.borrow().get(node).copied()?;
        (is_lstm && p > 0.0).then_some(p)
    }

    /// Forgets the carried state: the next run starts a new sequence.
    pub fn reset_state(&self) {
        if let Some(c) = &self.carried {
            c.borrow_mut().iter_mut().for_each(|s| *s = None);
        }
    }

    /// The graph.
    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// Runs the graph on `inputs` (one slice per graph input, row-major in the graph's shape)
    /// and returns the graph outputs.
    ///
    /// # Errors
    /// [`Kind::InvalidGraph`] if the number or sizes of `inputs` are wrong; kernel errors with
    /// the node.
    pub fn run(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>, ConvertError> {
        self.run_observed(inputs, |_, _| Ok(()))
    }

    /// Like [`run`](Self::run), calling `visit(tensor, values)` for every graph input and every
    /// node output, in execution order, as soon as it is computed.
    ///
    /// # Errors
    /// As [`run`](Self::run), and any error `visit` returns.
    pub fn run_observed<F>(&self, inputs: &[&[f32]], mut visit: F) -> Result<Vec<Vec<f32>>, ConvertError>
    where
        F: FnMut(TensorId, &[f32]) -> Result<(), ConvertError>,
    {
        let mut values = self.execute(inputs, false, &mut visit)?;
        let mut outs = Vec::with_capacity(self.graph.outputs.len());
        for &o in &self.graph.outputs {
            let v = match self.constants.get(o.index()).and_then(|c| c.as_ref()) {
                Some(c) => c.to_vec(),
                None => values.get_mut(o.index()).and_then(Option::take).unwrap_or_default(),
            };
            outs.push(v);
        }
        Ok(outs)
    }

    /// Runs the graph and returns every activation (graph inputs and node outputs), indexed by
    /// [`TensorId`] (`None` for constants).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_all(&self, inputs: &[&[f32]]) -> Result<Vec<Option<Vec<f32>>>, ConvertError> {
        self.execute(inputs, true, &mut |_, _| Ok(()))
    }

    fn execute(
        &self,
        inputs: &[&[f32]],
        keep_all: bool,
        visit: &mut Visit<'_>,
    ) -> Result<Vec<Option<Vec<f32>>>, ConvertError> {
        let g = self.graph;
        if inputs.len() != g.inputs.len() {
            return Err(ConvertError::new(
                Kind::InvalidGraph,
                format!("the graph has {} inputs, {} given", g.inputs.len(), inputs.len()),
            ));
        }
        let mut values: Vec<Option<Vec<f32>>> = vec![None; g.tensors.len()];
        for (k, (&id, &data)) in g.inputs.iter().zip(inputs).enumerate() {
            let t = g.tensor(id).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "input out of range"))?;
            if t.num_elements() != Some(data.len()) {
                return Err(ConvertError::new(
                    Kind::InvalidGraph,
                    format!(
                        "input {k} has {} values, its shape {:?} needs {}",
                        data.len(),
                        t.shape,
                        t.num_elements().unwrap_or(0)
                    ),
                )
                .with_tensor(id.index(), t.name.as_str()));
            }
            visit(id, data)?;
            values[id.index()] = Some(data.to_vec());
        }
        for (index, node) in g.nodes.iter().enumerate() {
            let y = {
                let mut refs = Vec::with_capacity(node.inputs.len());
                for t in &node.inputs {
                    refs.push(match t {
                        None => None,
                        Some(id) => {
                            let shape = g.tensor(*id).map(|t| t.shape.as_slice()).unwrap_or(&[]);
                            let data = match self.constants.get(id.index()).and_then(|c| c.as_deref()) {
                                Some(c) => c,
                                None => values.get(id.index()).and_then(|v| v.as_deref()).ok_or_else(|| {
                                    node_err(
                                        index,
                                        node,
                                        ConvertError::new(Kind::InvalidGraph, format!("input {id} has no value")),
                                    )
                                })?,
                            };
                            Some(TensorRef { data, shape })
                        }
                    });
                }
                let out = node.output(0).and_then(|o| g.tensor(o)).map(|t| t.shape.as_slice()).unwrap_or(&[]);
                match (self.dynamic.get(index).and_then(Option::as_deref), &node.op, &self.carried) {
                    (Some(scales), _, _) => dynamic::eval_dynamic(&node.op, &refs, out, scales),
                    (None, Op::Lstm(l), carried) => {
                        let mut peaks = self.cell_peaks.borrow_mut();
                        match carried {
                            Some(c) => eval_lstm(l, &refs, c.borrow_mut().get_mut(index), peaks.get_mut(index)),
                            None => eval_lstm(l, &refs, None, peaks.get_mut(index)),
                        }
                    }
                    (None, op @ (Op::Conv2d(_) | Op::FullyConnected(_)), _) => {
                        eval_op_packed(op, &refs, out, self.packed_weights(index, node))
                    }
                    _ => eval_op(&node.op, &refs, out),
                }
                .map_err(|e| node_err(index, node, e))?
            };
            if let Some(o) = node.output(0) {
                visit(o, &y).map_err(|e| node_err(index, node, e))?;
                values[o.index()] = Some(y);
            }
            if !keep_all {
                for t in node.inputs.iter().flatten() {
                    if self.last_use.get(t.index()) == Some(&index) {
                        if let Some(v) = values.get_mut(t.index()) {
                            *v = None;
                        }
                    }
                }
            }
        }
        Ok(values)
    }

    /// Node `index`'s constant weights packed for the GEMM (conv `[oc, kh, kw, ic]`, fully
    /// connected `[out, in]`: `oc` rows of `k` values), at the first call; `None` for weights
    /// computed by the graph or of an unexpected size (the kernel then packs them per call).
    fn packed_weights(&self, index: usize, node: &Node) -> Option<&PackedRhs> {
        let cell = self.packed.get(index)?;
        cell.get_or_init(|| {
            let w = node.inputs.get(1).copied().flatten()?;
            let data = self.constants.get(w.index()).and_then(|c| c.as_deref())?;
            let rows = *self.graph.tensor(w)?.shape.first()?;
            let k = data.len().checked_div(rows)?;
            PackedRhs::weights(data, k, rows).ok()
        })
        .as_ref()
    }
}

/// An LSTM node; with `carried`, it starts from the states held there (when there are any,
/// instead of its initial-state inputs) and leaves its last states there; with `peak`, raises
/// it to the largest `|cell state|` of the run.
fn eval_lstm(
    l: &crate::graph::Lstm,
    inputs: &[Option<TensorRef<'_>>],
    carried: Option<&mut Option<recurrent::LstmState>>,
    peak: Option<&mut f32>,
) -> Result<Vec<f32>, ConvertError> {
    let data = |k: usize| {
        inputs
            .get(k)
            .copied()
            .flatten()
            .map(|t| t.data)
            .ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("Lstm input {k} is missing")))
    };
    let opt = |k: usize| inputs.get(k).copied().flatten().map(|t| t.data);
    let x = inputs
        .first()
        .copied()
        .flatten()
        .ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "Lstm input 0 is missing"))?;
    let xs: [usize; 3] =
        x.shape.try_into().map_err(|_| ConvertError::new(Kind::InvalidGraph, "lstm input must be 3-D"))?;
    let mut last = recurrent::LstmState::default();
    let held = carried.as_deref().and_then(Option::as_ref);
    let operands = recurrent::LstmOperands {
        weights: [data(1)?, data(2)?, data(3)?, data(4)?],
        recurrent: [data(5)?, data(6)?, data(7)?, data(8)?],
        bias: [data(9)?, data(10)?, data(11)?, data(12)?],
        initial_h: held.map_or_else(|| opt(13), |s| Some(s.h.as_slice())),
        initial_c: held.map_or_else(|| opt(14), |s| Some(s.c.as_slice())),
    };
    let y = recurrent::lstm_f32(x.data, xs, l.time_major, l.cell_clip, &operands, Some(&mut last))
        .map_err(|e| ConvertError::new(Kind::InvalidGraph, e.0))?;
    if let Some(peak) = peak {
        *peak = peak.max(last.peak_c);
    }
    if let Some(slot) = carried {
        *slot = Some(last);
    }
    Ok(y)
}

/// True if `graph` has ops that keep state from one run to the next in the int8 runtime (LSTMs:
/// their hidden and cell states, as TFLite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM keeps them), so
/// that samples run in order form one sequence ([`FloatExecutor::carry_state`]).
pub fn has_recurrent_state(graph: &Graph) -> bool {
    graph.nodes.iter().any(|n| matches!(n.op, Op::Lstm(_)))
}

fn is_supported(op: &Op) -> bool {
    matches!(
        op,
        Op::Conv2d(_)
            | Op::DepthwiseConv2d(_)
            | Op::FullyConnected(_)
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::Add { .. }
            | Op::Sub { .. }
            | Op::Mul { .. }
            | Op::Div { .. }
            | Op::Softmax { .. }
            | Op::Logistic
            | Op::Tanh
            | Op::HardSwish
            | Op::HardSigmoid { .. }
            | Op::Relu
            | Op::Relu6
            | Op::Clip { .. }
            | Op::Abs
            | Op::Neg
            | Op::Rsqrt
            | Op::Elu { .. }
            | Op::LeakyRelu { .. }
            | Op::Unary(_)
            | Op::Concatenation { .. }
            | Op::Pad { .. }
            | Op::Mean { .. }
            | Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Squeeze { .. }
            | Op::StridedSlice(_)
            | Op::DepthToSpace { .. }
            | Op::SpaceToDepth { .. }
            | Op::MirrorPad { .. }
            | Op::Gather { .. }
            | Op::Tile { .. }
            | Op::Dequantize
            | Op::Resize { .. }
            | Op::Minimum
            | Op::Maximum
            | Op::Prelu
            | Op::SquaredDifference
            | Op::Sum { .. }
            | Op::ReduceMax { .. }
            | Op::Lstm(_)
            | Op::Gru(_)
            | Op::TransposeConv2d(_)
            | Op::BatchMatMul { .. }
    )
}
