//! [`fold_scale`]: a per-channel multiplication after a conv / depthwise / fully connected goes
//! into its weights and bias (the scale half of BatchNormalization).

use alloc::format;
use alloc::vec::Vec;

use super::{const_f32, is_weighted, per_channel, single_use};
use crate::graph::{ConstData, ConvertError, FusedActivation, Graph, Op, Tensor, TensorId};

/// Sets the fused activation of a weighted op.
pub(crate) fn set_activation(op: &mut Op, a: FusedActivation) {
    match op {
        Op::Conv2d(c) => c.activation = a,
        Op::DepthwiseConv2d(c) => c.activation = a,
        Op::FullyConnected(c) => c.activation = a,
        _ => {}
    }
}

/// The elementwise op `node` applies to the output of a weighted node with no activation: returns
/// (weighted node index, its output, the constant, the activation of the elementwise op).
pub(crate) fn after_weighted(
    g: &Graph,
    i: usize,
    want_mul: bool,
) -> Option<(usize, TensorId, TensorId, FusedActivation)> {
    let node = g.nodes.get(i)?;
    let activation = match (&node.op, want_mul) {
        (Op::Mul { activation }, true) | (Op::Add { activation }, false) => *activation,
        _ => return None,
    };
    let (a, b) = (node.input(0)?, node.input(1)?);
    let (x, c) = if const_f32(g, b).is_some() { (a, b) } else { (b, a) };
    const_f32(g, c)?;
    let p = g.producer(x)?;
    let prev = g.nodes.get(p)?;
    if !is_weighted(&prev.op) || prev.op.activation() != Some(FusedActivation::None) || !single_use(g, x) {
        return None;
    }
    // The result must have the weighted output's shape (no broadcasting to a larger tensor).
    let xs = &g.tensor(x)?.shape;
    if g.tensor(node.output(0)?)?.shape != *xs {
        return None;
    }
    Some((p, x, c, activation))
}

/// Index of the output channel of weight element `k` of a weighted op.
pub(crate) fn out_channel(op: &Op, shape: &[usize], k: usize) -> usize {
    match op {
        // OHWI and [out, in]: channel is the outermost axis.
        Op::Conv2d(_) | Op::FullyConnected(_) => k / shape.iter().skip(1).product::<usize>().max(1),
        // [1, kh, kw, c·m]: channel is the innermost axis.
        _ => k % shape.last().copied().unwrap_or(1).max(1),
    }
}

/// Folds `Mul(y, c)` into the conv / depthwise / fully-connected node producing `y` when `c` is
/// one value or varies along the channel (last) axis only, `y` has no fused activation and no
/// other reader: `w[o, ...] *= c[o]`, `b[o] *= c[o]` (new constant tensors). The Mul's fused
/// activation moves to the weighted node. Returns the number of folds.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fold_scale(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let Some((p, x, c, activation)) = after_weighted(g, i, true) else {
            i += 1;
            continue;
        };
        let xs = g.tensor(x).map(|t| t.shape.clone()).unwrap_or_default();
        let (Some(scale), Some(wid)) = (per_channel(g, c, &xs), g.nodes[p].input(1)) else {
            i += 1;
            continue;
        };
        let (Some(w), Some(wt)) = (const_f32(g, wid), g.tensor(wid)) else {
            i += 1;
            continue;
        };
        let op = g.nodes[p].op.clone();
        let nw: Vec<f32> = w.iter().enumerate().map(|(k, &v)| v * scale[out_channel(&op, &wt.shape, k)]).collect();
        let wname = format!("{}/scaled", wt.name);
        let wshape = wt.shape.clone();
        let new_bias = match g.nodes[p].input(2) {
            Some(b) => match const_f32(g, b) {
                Some(bv) => Some(bv.iter().zip(&scale).map(|(v, s)| v * s).collect::<Vec<f32>>()),
                None => {
                    i += 1;
                    continue;
                }
            },
            None => None,
        };
        let nwid = g.add_tensor(Tensor::constant(wname, wshape, ConstData::F32(nw)))?;
        g.nodes[p].inputs[1] = Some(nwid);
        if let Some(bv) = new_bias {
            let len = bv.len();
            let bid = g.add_tensor(Tensor::constant(
                format!("{}/bias_scaled", g.nodes[p].name),
                alloc::vec![len],
                ConstData::F32(bv),
            ))?;
            g.nodes[p].inputs[2] = Some(bid);
        }
        set_activation(&mut g.nodes[p].op, activation);
        // The weighted node writes the Mul's output directly.
        let y = g.nodes[i].output(0);
        if let (Some(y), Some(slot)) = (y, g.nodes[p].outputs.get_mut(0)) {
            *slot = y;
        }
        g.nodes.remove(i);
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops, values};
    use super::*;
    use crate::graph::{Conv2d, DepthwiseConv2d, FullyConnected, Padding};
    use alloc::vec;

    #[test]
    fn conv_depthwise_fc_absorb_scales() {
        let mut b = G::new();
        let x = b.input(&[1, 4, 4, 2]);
        let w = b.constant(&[3, 3, 3, 2], values(54, 1));
        let bias = b.constant(&[3], vec![0.1, -0.2, 0.3]);
        let conv = Op::Conv2d(Conv2d {
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            padding: Padding::Same,
            activation: FusedActivation::None,
        });
        let c = b.node(conv, &[Some(x), Some(w), Some(bias)]);
        let s = b.constant(&[3], vec![2.0, -0.5, 0.25]);
        let m = b.node(Op::Mul { activation: FusedActivation::Relu }, &[Some(c), Some(s)]);
        let dw = b.constant(&[1, 2, 2, 6], values(24, 2));
        let dwop = Op::DepthwiseConv2d(DepthwiseConv2d {
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            depth_multiplier: 2,
            padding: Padding::Valid,
            activation: FusedActivation::None,
        });
        let d = b.node(dwop, &[Some(m), Some(dw), None]);
        let s2 = b.constant(&[1, 1, 1, 6], values(6, 3));
        let m2 = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(s2), Some(d)]);
        let r = b.node(Op::Reshape { new_shape: vec![1, 54] }, &[Some(m2)]);
        let fw = b.constant(&[2, 54], values(108, 4));
        let f = b.node(
            Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false }),
            &[Some(r), Some(fw), None],
        );
        let s3 = b.constant(&[], vec![3.0]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(f), Some(s3)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(fold_scale(&mut g).unwrap(), 3);
        assert_eq!(ops(&g), ["Conv2d", "DepthwiseConv2d", "Reshape", "FullyConnected"]);
        assert_eq!(g.nodes[0].op.activation(), Some(FusedActivation::Relu));
        assert_eq!(g.outputs, [y]);
        assert_same_function(&before, &g, 1e-5);
    }

    #[test]
    fn not_folded_when_shared_or_activated() {
        let mut b = G::new();
        let x = b.input(&[1, 3]);
        let w = b.constant(&[3, 3], values(9, 5));
        let fc = Op::FullyConnected(FullyConnected { activation: FusedActivation::Relu, keep_num_dims: false });
        let f = b.node(fc, &[Some(x), Some(w), None]);
        let s = b.constant(&[3], vec![1.0, 2.0, 3.0]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(f), Some(s)]);
        let mut g = b.output(y);
        assert_eq!(fold_scale(&mut g).unwrap(), 0, "relu then scale is not a weight scale");
        // A scale varying along a non-channel axis does not fold.
        let mut b = G::new();
        let x = b.input(&[2, 3]);
        let w = b.constant(&[3, 3], values(9, 6));
        let f = b.node(
            Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false }),
            &[Some(x), Some(w), None],
        );
        let s = b.constant(&[2, 1], vec![1.0, 2.0]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(f), Some(s)]);
        let mut g = b.output(y);
        assert_eq!(fold_scale(&mut g).unwrap(), 0);
    }
}
