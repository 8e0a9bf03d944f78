//! [`hard_sigmoid_to_relu6`]: HardSigmoid in ops the int8 runtime has.

use alloc::format;
use alloc::vec;

use crate::graph::{ConstData, ConvertError, DType, FusedActivation, Graph, Node, Op, Tensor};

/// Rewrites each `HardSigmoid(alpha, beta)` node as `Mul(x, 6·alpha)` → `Add(·, 6·beta)` with a
/// fused ReLU6 → `Mul(·, 1/6)`: `max(0, min(1, alpha·x + beta)) = relu6(6·alpha·x + 6·beta) / 6`.
/// Returns the number of nodes rewritten. (Not part of [`super::optimize`]: a float graph keeps
/// the single op; the quantizer runs this first.)
///
/// # Errors
/// [`crate::graph::ConvertErrorKind::InvalidGraph`] if the graph has too many tensors.
pub fn hard_sigmoid_to_relu6(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let Op::HardSigmoid { alpha, beta } = g.nodes[i].op else {
            i += 1;
            continue;
        };
        let (Some(x), Some(y)) = (g.nodes[i].input(0), g.nodes[i].output(0)) else {
            i += 1;
            continue;
        };
        let name = g.nodes[i].name.clone();
        let shape = g.tensor(y).map(|t| t.shape.clone()).unwrap_or_default();
        let c = |g: &mut Graph, what: &str, v: f32| {
            g.add_tensor(Tensor::constant(format!("{name}/{what}"), vec![1], ConstData::F32(vec![v])))
        };
        let k1 = c(g, "six_alpha", 6.0 * alpha)?;
        let k2 = c(g, "six_beta", 6.0 * beta)?;
        let k3 = c(g, "one_sixth", 1.0 / 6.0)?;
        let t1 = g.add_tensor(Tensor::new(format!("{name}/scaled"), shape.clone(), DType::F32))?;
        let t2 = g.add_tensor(Tensor::new(format!("{name}/relu6"), shape, DType::F32))?;
        let none = FusedActivation::None;
        let nodes = [
            Node::new(format!("{name}/mul"), Op::Mul { activation: none }, vec![Some(x), Some(k1)], vec![t1]),
            Node::new(
                format!("{name}/add"),
                Op::Add { activation: FusedActivation::Relu6 },
                vec![Some(t1), Some(k2)],
                vec![t2],
            ),
            Node::new(format!("{name}/div6"), Op::Mul { activation: none }, vec![Some(t2), Some(k3)], vec![y]),
        ];
        g.nodes.splice(i..=i, nodes);
        i += 3;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops};
    use super::*;

    #[test]
    fn same_function() {
        let mut b = G::new();
        let x = b.input(&[3, 5]);
        let y = b.node(Op::HardSigmoid { alpha: 0.3, beta: 0.4 }, &[Some(x)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(hard_sigmoid_to_relu6(&mut g).unwrap(), 1);
        assert_eq!(ops(&g), ["Mul", "Add", "Mul"]);
        assert_same_function(&before, &g, 1e-6);
    }
}
