//! The float graph made ready for int8: optimized, with ops the int8 runtime lacks expressed with
//! ops it has.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::graph::{ConvertError, DType, FusedActivation, Graph, Node, Op, Padding, Pool2d, Tensor, TensorQuant};
use crate::passes;

/// What [`prepare`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Hybrid int8 weights turned into f32 ([`Graph::dequantize_hybrid_weights`]).
    pub hybrid_weights_dequantized: usize,
    /// Rewrites of [`passes::optimize`].
    pub pass_stats: passes::PassStats,
    /// HardSigmoid nodes rewritten by [`passes::hard_sigmoid_to_relu6`].
    pub hard_sigmoids_lowered: usize,
    /// Standalone ReLU/ReLU6 nodes (not fusable into their producer) rewritten as a 1×1 max pool
    /// with the fused clamp (exact in int8: input and output share their quantization).
    pub relus_as_max_pool: usize,
    /// GRU nodes unrolled into int8-runnable ops by [`passes::unroll_gru`].
    pub grus_unrolled: usize,
    /// Layer norms written in pieces rewritten by [`passes::fuse_layer_norm`].
    pub layer_norms_fused: usize,
}

/// Makes `g` ready for calibration and quantization, in place: dequantizes hybrid weights, unrolls
/// GRUs into per-step ops ([`passes::unroll_gru`]), runs [`passes::optimize`], lowers HardSigmoid
/// to ReLU6 arithmetic, runs the passes again (the
/// lowering creates fusable patterns), matches layer norms written in pieces
/// ([`passes::fuse_layer_norm`]), and rewrites ReLU/ReLU6 nodes that could not be fused as
/// 1×1 max pools with the clamp (with reshapes around non-4-D tensors).
///
/// # Errors
/// The passes' errors.
pub fn prepare(g: &mut Graph) -> Result<Prepared, ConvertError> {
    let mut p = Prepared { hybrid_weights_dequantized: g.dequantize_hybrid_weights(), ..Prepared::default() };
    let carried = carried_weights(g);
    p.grus_unrolled = passes::unroll_gru(g)?;
    p.pass_stats = passes::optimize(g)?;
    p.hard_sigmoids_lowered = passes::hard_sigmoid_to_relu6(g)?;
    if p.hard_sigmoids_lowered > 0 {
        p.pass_stats += passes::optimize(g)?;
    }
    p.layer_norms_fused = passes::fuse_layer_norm(g)?;
    p.relus_as_max_pool = relu_as_max_pool(g)?;
    restore_carried_weights(g, &carried);
    g.validate()?;
    Ok(p)
}

/// The carried quantization of each weighted node's f32 weights (a QDQ model's), by node name.
fn carried_weights(g: &Graph) -> Vec<(String, TensorQuant)> {
    g.nodes
        .iter()
        .filter(|n| {
            matches!(n.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) | Op::TransposeConv2d(_))
        })
        .filter_map(|n| {
            let w = g.tensor(n.input(1)?)?;
            (w.dtype == DType::F32).then(|| w.quant.clone()).flatten().map(|q| (n.name.clone(), q))
        })
        .collect()
}

/// Puts carried weight quantization back on weights a pass replaced (e.g. the column
/// permutation of `fold_transpose_into_fc`, which keeps the per-output-channel scales valid).
/// The quantizer uses them only if they still represent the weights exactly (a folded batch-norm
/// scale, for one, does not).
fn restore_carried_weights(g: &mut Graph, carried: &[(String, TensorQuant)]) {
    let mut marks = Vec::new();
    for (name, q) in carried {
        let Some(node) = g.nodes.iter().find(|n| &n.name == name) else { continue };
        let Some(w) = node.input(1) else { continue };
        let Some(t) = g.tensor(w) else { continue };
        let fits = match q.axis {
            None => q.scales.len() == 1,
            Some(a) => t.shape.get(a) == Some(&q.scales.len()),
        };
        if t.quant.is_none() && t.dtype == DType::F32 && fits {
            marks.push((w, q.clone()));
        }
    }
    for (w, q) in marks {
        if let Some(t) = g.tensor_mut(w) {
            t.quant = Some(q);
        }
    }
}

/// `Relu(x)` → `MaxPool2d(1×1, relu)(x)` (4-D), or reshape to `[1, 1, n, c]`, pool, reshape back.
/// The pool shares its input's quantization, as TFLite's RELU with equal quantizations (`.mq`
/// kind RELU computes the same values then); other clamps (`Op::Clip`) lower to RELU with their
/// own output quantization.
fn relu_as_max_pool(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let activation = match g.nodes[i].op {
            Op::Relu => FusedActivation::Relu,
            Op::Relu6 => FusedActivation::Relu6,
            _ => {
                i += 1;
                continue;
            }
        };
        let (Some(x), Some(y)) = (g.nodes[i].input(0), g.nodes[i].output(0)) else {
            i += 1;
            continue;
        };
        let shape = g.tensor(x).map(|t| t.shape.clone()).unwrap_or_default();
        let pool = Op::MaxPool2d(Pool2d {
            filter_h: 1,
            filter_w: 1,
            stride_h: 1,
            stride_w: 1,
            padding: Padding::Valid,
            activation,
        });
        let name = g.nodes[i].name.clone();
        if shape.len() == 4 {
            g.nodes[i].op = pool;
            i += 1;
        } else {
            let c = shape.last().copied().unwrap_or(1).max(1);
            let total: usize = shape.iter().product();
            let s4 = vec![1, 1, total / c, c];
            let a = g.add_tensor(Tensor::new(format!("{name}/as_4d"), s4.clone(), DType::F32))?;
            let b = g.add_tensor(Tensor::new(format!("{name}/relu_4d"), s4.clone(), DType::F32))?;
            let nodes: Vec<Node> = vec![
                Node::new(format!("{name}/to_4d"), Op::Reshape { new_shape: s4 }, vec![Some(x)], vec![a]),
                Node::new(name.clone(), pool, vec![Some(a)], vec![b]),
                Node::new(format!("{name}/from_4d"), Op::Reshape { new_shape: shape }, vec![Some(b)], vec![y]),
            ];
            g.nodes.splice(i..=i, nodes);
            i += 3;
        }
        n += 1;
    }
    Ok(n)
}
