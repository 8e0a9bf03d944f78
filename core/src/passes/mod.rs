//! Graph passes (`alloc` only): rewrites of a float [`Graph`] that keep its function and make it
//! smaller, faster and quantizable. Each pass is a function `fn(&mut Graph) -> Result<usize,
//! ConvertError>` returning how many rewrites it made, in its own file with tests on tiny graphs.
//!
//! | pass | rewrite |
//! |---|---|
//! | [`remove_noops`] | drops identity reshapes (the importer's `Identity`/`Dropout`), identity transposes, empty squeezes; merges reshape chains and transpose chains; a transpose that only moves extent-1 axes becomes a reshape |
//! | [`fold_constants`] | evaluates nodes whose inputs are all constant (float executor) |
//! | [`sub_div_to_add_mul`] | `x - c` → `x + (-c)`, `x / c` → `x · (1/c)` for constant `c` |
//! | [`fold_scale`] | a per-channel constant `Mul` after a conv / depthwise / fully connected scales its weights and bias (BatchNormalization's scale) |
//! | [`fold_bias`] | a per-channel constant `Add` after a conv / depthwise / fully connected goes into its bias (MatMul + Add → FullyConnected with bias; BatchNormalization's shift) |
//! | [`fuse_activation`] | a `Relu` / `Relu6` (ONNX `Relu`, `Clip(0, 6)`) becomes the fused activation of its producer |
//! | [`fuse_hard_swish`] | `x · HardSigmoid(x)` with alpha 1/6, beta 1/2 (PyTorch's HardSwish before opset 14) and `x · relu6(x + 3) / 6` in either grouping (Paddle2ONNX) → `HardSwish` |
//! | [`fuse_gelu`] | `0.5 · x · (1 + Erf(x / √2))` (GELU before opset 20) → `Unary(Gelu)` |
//! | [`fuse_layer_norm`] | layer normalization in pieces (`ReduceMean`, `Sub`, `Pow 2`, `ReduceMean`, `Add ε`, `Sqrt`, `Div`: PyTorch below opset 17) → the `LayerNormalization` import's form: `d · d` and `d · (var + ε)^−½` (not part of [`optimize`]: the float graph keeps ONNX Runtime's rounding; the quantizer runs it) |
//! | [`fuse_rsqrt`] | `Reciprocal(Sqrt(x))` and `Div(1, Sqrt(x))` (PyTorch's `rsqrt`) → `Rsqrt` |
//! | [`fuse_silu`] | `x · Sigmoid(x)` (PyTorch's SiLU, Keras swish) → `Unary(Silu)` (a table in int8) |
//! | [`fold_transpose_into_fc`] | transpose → flatten → fully connected: the weights' columns are permuted instead (Flatten of an NCHW tensor stored NHWC) |
//! | [`hard_sigmoid_to_relu6`] | `HardSigmoid(alpha, beta)` → `Mul(6·alpha)`, `Add(6·beta)` with ReLU6, `Mul(1/6)`: ops the int8 runtime has (not part of [`optimize`]; the quantizer runs it) |
//! | [`unroll_gru`] | `Gru` → per time step: fully connected, add, logistic, tanh, mul, sub (ops with int8 kernels; the quantizer runs it, not [`optimize`]) |
//!
//! `Gemm` with `transB` (and without) becomes a fully connected layer in the ONNX importer, which
//! transposes the weights to `[out, in]` and scales them by alpha (there is no Gemm op in the
//! graph to rewrite later).
//!
//! A rewrite never changes what a graph output computes, and never removes a tensor that is a
//! graph output (the surviving node takes over that output tensor).

mod fold_bias;
mod fold_constants;
mod fold_scale;
mod fold_transpose_into_fc;
mod fuse_activation;
mod fuse_gelu;
mod fuse_hard_swish;
mod fuse_layer_norm;
mod fuse_rsqrt;
mod fuse_silu;
mod hard_sigmoid_to_relu6;
mod remove_noops;
mod sub_div_to_add_mul;
#[cfg(test)]
mod testutil;
mod unroll_gru;

use alloc::vec::Vec;

use crate::graph::{ConstData, ConvertError, FusedActivation, Graph, Op, TensorId};

pub use fold_bias::fold_bias;
pub use fold_constants::fold_constants;
pub use fold_scale::fold_scale;
pub use fold_transpose_into_fc::fold_transpose_into_fc;
pub use fuse_activation::fuse_activation;
pub use fuse_gelu::fuse_gelu;
pub use fuse_hard_swish::fuse_hard_swish;
pub use fuse_layer_norm::fuse_layer_norm;
pub use fuse_rsqrt::fuse_rsqrt;
pub use fuse_silu::fuse_silu;
pub use hard_sigmoid_to_relu6::hard_sigmoid_to_relu6;
pub use remove_noops::remove_noops;
pub use sub_div_to_add_mul::sub_div_to_add_mul;
pub use unroll_gru::unroll_gru;

/// How many rewrites each pass of [`optimize`] made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassStats {
    /// [`remove_noops`].
    pub noops_removed: usize,
    /// [`fold_constants`].
    pub constants_folded: usize,
    /// [`sub_div_to_add_mul`].
    pub sub_div_rewritten: usize,
    /// [`fold_scale`].
    pub scales_folded: usize,
    /// [`fold_bias`].
    pub biases_folded: usize,
    /// [`fuse_activation`].
    pub activations_fused: usize,
    /// [`fuse_hard_swish`].
    pub hard_swish_fused: usize,
    /// [`fold_transpose_into_fc`].
    pub transposes_folded: usize,
    /// [`fuse_silu`].
    pub silu_fused: usize,
    /// [`fuse_gelu`].
    pub gelu_fused: usize,
    /// [`fuse_rsqrt`].
    pub rsqrt_fused: usize,
}

impl core::ops::AddAssign for PassStats {
    fn add_assign(&mut self, o: Self) {
        self.noops_removed += o.noops_removed;
        self.constants_folded += o.constants_folded;
        self.sub_div_rewritten += o.sub_div_rewritten;
        self.scales_folded += o.scales_folded;
        self.biases_folded += o.biases_folded;
        self.activations_fused += o.activations_fused;
        self.hard_swish_fused += o.hard_swish_fused;
        self.transposes_folded += o.transposes_folded;
        self.silu_fused += o.silu_fused;
        self.gelu_fused += o.gelu_fused;
        self.rsqrt_fused += o.rsqrt_fused;
    }
}

impl PassStats {
    /// Total rewrites.
    pub fn total(&self) -> usize {
        self.noops_removed
            + self.constants_folded
            + self.sub_div_rewritten
            + self.scales_folded
            + self.biases_folded
            + self.activations_fused
            + self.hard_swish_fused
            + self.transposes_folded
            + self.silu_fused
            + self.gelu_fused
            + self.rsqrt_fused
    }
}

/// Runs every pass above (except [`hard_sigmoid_to_relu6`]) until none applies, removes the
/// tensors left unused and validates the result.
///
/// # Errors
/// [`Graph::validate`]'s errors (before and after), and a pass's errors (constant folding of an
/// op the float executor rejects).
pub fn optimize(g: &mut Graph) -> Result<PassStats, ConvertError> {
    g.validate()?;
    let mut s = PassStats::default();
    // Each round strictly shrinks the graph or the number of unfused patterns; the bound only
    // guards against a bug looping forever.
    for _ in 0..64 {
        let before = s.total();
        s.noops_removed += remove_noops(g)?;
        s.constants_folded += fold_constants(g)?;
        s.sub_div_rewritten += sub_div_to_add_mul(g)?;
        s.scales_folded += fold_scale(g)?;
        s.biases_folded += fold_bias(g)?;
        s.hard_swish_fused += fuse_hard_swish(g)?;
        s.silu_fused += fuse_silu(g)?;
        s.gelu_fused += fuse_gelu(g)?;
        s.rsqrt_fused += fuse_rsqrt(g)?;
        s.activations_fused += fuse_activation(g)?;
        s.transposes_folded += fold_transpose_into_fc(g)?;
        if s.total() == before {
            break;
        }
    }
    g.prune_unused_tensors();
    g.validate()?;
    Ok(s)
}

// ---- helpers shared by the passes ----

/// Every read of `old` (node inputs, graph outputs) now reads `new`.
pub(crate) fn replace_uses(g: &mut Graph, old: TensorId, new: TensorId) {
    for n in &mut g.nodes {
        for t in n.inputs.iter_mut().flatten() {
            if *t == old {
                *t = new;
            }
        }
    }
    for o in &mut g.outputs {
        if *o == old {
            *o = new;
        }
    }
}

/// Removes node `index`, whose output `out` is replaced by `input` everywhere. If `out` is a
/// graph output, the producer of `input` takes `out` over instead (so graph outputs keep their
/// tensors); returns false (and changes nothing) when that is impossible (`input` is a graph
/// input or constant, or another graph output).
pub(crate) fn bypass_node(g: &mut Graph, index: usize, input: TensorId, out: TensorId) -> bool {
    if g.outputs.contains(&out) {
        if g.inputs.contains(&input) || g.outputs.contains(&input) || g.tensor(input).is_none_or(|t| t.is_constant()) {
            return false;
        }
        let Some(p) = g.producer(input) else { return false };
        // The producer writes `out` directly; other readers of `input` read `out`.
        if let Some(slot) = g.nodes.get_mut(p).and_then(|n| n.outputs.iter_mut().find(|o| **o == input)) {
            *slot = out;
        }
        g.nodes.remove(index);
        replace_uses(g, input, out);
        // The removed node's own read of `input` is gone; no other node read `out` (it was the
        // removed node's output, now produced earlier).
        return true;
    }
    g.nodes.remove(index);
    replace_uses(g, out, input);
    true
}

/// The nodes reading `t`.
pub(crate) fn readers(g: &Graph, t: TensorId) -> Vec<usize> {
    g.consumers(t)
}

/// True if `t` is read by exactly one node and is not a graph output.
pub(crate) fn single_use(g: &Graph, t: TensorId) -> bool {
    readers(g, t).len() == 1 && !g.outputs.contains(&t)
}

/// True if `t` is a one-value constant within `tol` of `want`.
pub(crate) fn is_scalar(g: &Graph, t: TensorId, want: f32, tol: f32) -> bool {
    matches!(const_f32(g, t), Some([v]) if (v - want).abs() <= tol)
}

/// `Mul` without activation: its two inputs.
pub(crate) fn mul_inputs(g: &Graph, i: usize) -> Option<(TensorId, TensorId)> {
    let n = g.nodes.get(i)?;
    match (&n.op, n.input(0), n.input(1)) {
        (Op::Mul { activation: FusedActivation::None }, Some(a), Some(b)) => Some((a, b)),
        _ => None,
    }
}

/// The input of `pair` that is not `t`, if `t` is one of them.
pub(crate) fn other(pair: (TensorId, TensorId), t: TensorId) -> Option<TensorId> {
    if pair.0 == t {
        Some(pair.1)
    } else if pair.1 == t {
        Some(pair.0)
    } else {
        None
    }
}

/// The single reader of `t` (not a graph output).
pub(crate) fn sole_reader(g: &Graph, t: TensorId) -> Option<usize> {
    if single_use(g, t) { readers(g, t).first().copied() } else { None }
}

/// The f32 data of a constant tensor.
pub(crate) fn const_f32(g: &Graph, t: TensorId) -> Option<&[f32]> {
    g.tensor(t).and_then(|t| t.data.as_ref()).and_then(ConstData::as_f32)
}

/// For a constant `c` combined elementwise with a tensor of `shape` whose last axis has `n`
/// channels: the per-channel values if `c` varies along that axis only (or is one value).
pub(crate) fn per_channel(g: &Graph, c: TensorId, shape: &[usize]) -> Option<Vec<f32>> {
    let t = g.tensor(c)?;
    let v = t.data.as_ref()?.as_f32()?;
    let n = *shape.last()?;
    if t.shape.len() > shape.len() {
        return None;
    }
    if v.len() == 1 {
        return Some(alloc::vec![v[0]; n]);
    }
    let (last, lead) = t.shape.split_last()?;
    if *last == n && lead.iter().all(|&d| d == 1) { Some(v.to_vec()) } else { None }
}

/// True for the ops with weights and a bias: conv, depthwise, fully connected.
pub(crate) fn is_weighted(op: &Op) -> bool {
    matches!(op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_))
}
