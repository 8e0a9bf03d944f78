//! [`fuse_activation`]: a separate `Relu` / `Relu6` / `Clip(-1, 1)` becomes its producer's fused
//! activation.

use super::single_use;
use crate::graph::{ConvertError, FusedActivation, Graph, Op};

/// The activation of `op` composed with a following ReLU/ReLU6 (`None` if the op cannot hold it).
fn compose(op: &Op, then: FusedActivation) -> Option<FusedActivation> {
    let fusable = matches!(
        op,
        Op::Conv2d(_)
            | Op::DepthwiseConv2d(_)
            | Op::FullyConnected(_)
            | Op::TransposeConv2d(_)
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::Add { .. }
            | Op::Sub { .. }
            | Op::Mul { .. }
    );
    if !fusable {
        return None;
    }
    Some(match (op.activation()?, then) {
        (FusedActivation::None, a) => a,
        (FusedActivation::Relu, FusedActivation::Relu) => FusedActivation::Relu,
        (FusedActivation::Relu | FusedActivation::Relu6, FusedActivation::Relu6)
        | (FusedActivation::Relu6, FusedActivation::Relu) => FusedActivation::Relu6,
        _ => return None,
    })
}

fn set(op: &mut Op, a: FusedActivation) {
    match op {
        Op::Conv2d(c) => c.activation = a,
        Op::DepthwiseConv2d(c) => c.activation = a,
        Op::FullyConnected(c) => c.activation = a,
        Op::TransposeConv2d(c) => c.activation = a,
        Op::MaxPool2d(p) | Op::AvgPool2d(p) => p.activation = a,
        Op::Add { activation } | Op::Sub { activation } | Op::Mul { activation } => *activation = a,
        _ => {}
    }
}

/// Fuses each `Relu` / `Relu6` node into the node producing its input when that node is a conv,
/// depthwise, fully connected, pooling, add, sub or mul whose output nothing else reads (and is not
/// a graph output): the producer gets the clamp and writes the activation's output tensor.
/// Returns the number of fusions.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fuse_activation(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let then = match g.nodes[i].op {
            Op::Relu => FusedActivation::Relu,
            Op::Relu6 => FusedActivation::Relu6,
            // A clamp to [-1, 1] (TFLite RELU_N1_TO_1, ONNX Clip(-1, 1)) is a fused activation
            // too; other clamps run as their own op.
            Op::Clip { min, max } if min == -1.0 && max == 1.0 => FusedActivation::ReluN1To1,
            _ => {
                i += 1;
                continue;
            }
        };
        let (Some(x), Some(y)) = (g.nodes[i].input(0), g.nodes[i].output(0)) else {
            i += 1;
            continue;
        };
        let Some(p) = g.producer(x).filter(|_| single_use(g, x)) else {
            i += 1;
            continue;
        };
        let Some(a) = compose(&g.nodes[p].op, then) else {
            i += 1;
            continue;
        };
        set(&mut g.nodes[p].op, a);
        if let Some(slot) = g.nodes[p].outputs.get_mut(0) {
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
    use crate::graph::FullyConnected;

    #[test]
    fn relu_and_relu6_fuse() {
        let mut b = G::new();
        let x = b.input(&[1, 4]);
        let w = b.constant(&[4, 4], values(16, 7));
        let f = b.node(
            Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false }),
            &[Some(x), Some(w)],
        );
        let r = b.node(Op::Relu6, &[Some(f)]);
        let a = b.node(Op::Add { activation: FusedActivation::None }, &[Some(r), Some(x)]);
        let r2 = b.node(Op::Relu, &[Some(a)]);
        let r3 = b.node(Op::Relu6, &[Some(r2)]); // relu then relu6 = relu6
        let before = b.output(r3);
        let mut g = before.clone();
        assert_eq!(fuse_activation(&mut g).unwrap(), 3);
        assert_eq!(ops(&g), ["FullyConnected", "Add"]);
        assert_eq!(g.nodes[1].op, Op::Add { activation: FusedActivation::Relu6 });
        assert_same_function(&before, &g, 0.0);
    }

    #[test]
    fn clip_n1_1_fuses_and_other_clips_stay() {
        let mut b = G::new();
        let x = b.input(&[1, 4]);
        let w = b.constant(&[4, 4], values(16, 7));
        let f = b.node(
            Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false }),
            &[Some(x), Some(w)],
        );
        let c = b.node(Op::Clip { min: -1.0, max: 1.0 }, &[Some(f)]);
        let a = b.node(Op::Add { activation: FusedActivation::None }, &[Some(c), Some(x)]);
        let c2 = b.node(Op::Clip { min: 0.5, max: 3.0 }, &[Some(a)]);
        let before = b.output(c2);
        let mut g = before.clone();
        assert_eq!(fuse_activation(&mut g).unwrap(), 1);
        assert_eq!(ops(&g), ["FullyConnected", "Add", "Clip"]);
        assert_eq!(g.nodes[0].op.activation(), Some(FusedActivation::ReluN1To1));
        assert_same_function(&before, &g, 0.0);
    }

    #[test]
    fn shared_producer_keeps_its_relu() {
        let mut b = G::new();
        let x = b.input(&[1, 4]);
        let a = b.node(Op::Add { activation: FusedActivation::None }, &[Some(x), Some(x)]);
        let r = b.node(Op::Relu, &[Some(a)]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(r), Some(a)]);
        let mut g = b.output(y);
        assert_eq!(fuse_activation(&mut g).unwrap(), 0);
        // A Relu after Concatenation stays too (no fused clamp in the int8 concatenation).
        let mut b = G::new();
        let x = b.input(&[1, 4]);
        let c = b.node(Op::Concatenation { axis: 1, activation: FusedActivation::None }, &[Some(x), Some(x)]);
        let y = b.node(Op::Relu, &[Some(c)]);
        let mut g = b.output(y);
        assert_eq!(fuse_activation(&mut g).unwrap(), 0);
    }
}
