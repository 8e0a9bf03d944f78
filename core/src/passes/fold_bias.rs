//! [`fold_bias`]: a per-channel addition after a conv / depthwise / fully connected goes into its
//! bias (MatMul + Add → fully connected with bias; the shift half of BatchNormalization).

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::fold_scale::{after_weighted, set_activation};
use super::{const_f32, per_channel};
use crate::graph::{ConstData, ConvertError, Graph, Tensor};

/// Folds `Add(y, c)` into the conv / depthwise / fully-connected node producing `y` when `c` is
/// one value or varies along the channel (last) axis only, `y` has no fused activation and no
/// other reader: `b[o] += c[o]` (a new bias tensor, created if the node had none). The Add's
/// fused activation moves to the weighted node. Returns the number of folds.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fold_bias(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let Some((p, x, c, activation)) = after_weighted(g, i, false) else {
            i += 1;
            continue;
        };
        let xs = g.tensor(x).map(|t| t.shape.clone()).unwrap_or_default();
        let Some(add) = per_channel(g, c, &xs) else {
            i += 1;
            continue;
        };
        let bias: Vec<f32> = match g.nodes[p].input(2) {
            Some(b) => match const_f32(g, b) {
                Some(bv) if bv.len() == add.len() => bv.iter().zip(&add).map(|(u, v)| u + v).collect(),
                _ => {
                    i += 1;
                    continue;
                }
            },
            None => add,
        };
        let len = bias.len();
        let bid =
            g.add_tensor(Tensor::constant(format!("{}/bias", g.nodes[p].name), vec![len], ConstData::F32(bias)))?;
        let node = &mut g.nodes[p];
        if node.inputs.len() < 3 {
            node.inputs.resize(3, None);
        }
        node.inputs[2] = Some(bid);
        set_activation(&mut node.op, activation);
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
    use crate::graph::{FullyConnected, FusedActivation, Op};

    #[test]
    fn matmul_add_becomes_fc_with_bias() {
        // MatMul (FC without bias, keep_num_dims on a 3-D input) + Add([out]) + Add(scalar).
        let mut b = G::new();
        let x = b.input(&[1, 5, 4]);
        let w = b.constant(&[3, 4], values(12, 1));
        let f = b.node(
            Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: true }),
            &[Some(x), Some(w)],
        );
        let c = b.constant(&[3], vec![1.0, 2.0, 3.0]);
        let a = b.node(Op::Add { activation: FusedActivation::None }, &[Some(c), Some(f)]);
        let y = b.node(Op::Relu, &[Some(a)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(fold_bias(&mut g).unwrap(), 1);
        assert_eq!(ops(&g), ["FullyConnected", "Relu"]);
        assert_eq!(g.tensor(g.nodes[0].input(2).unwrap()).unwrap().data, Some(ConstData::F32(vec![1.0, 2.0, 3.0])));
        assert_same_function(&before, &g, 1e-6);
    }

    #[test]
    fn add_of_two_activations_stays() {
        let mut b = G::new();
        let x = b.input(&[1, 4]);
        let w = b.constant(&[4, 4], values(16, 2));
        let f = b.node(
            Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false }),
            &[Some(x), Some(w)],
        );
        let y = b.node(Op::Add { activation: FusedActivation::None }, &[Some(f), Some(x)]);
        let mut g = b.output(y);
        assert_eq!(fold_bias(&mut g).unwrap(), 0);
    }
}
