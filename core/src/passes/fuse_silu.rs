//! [`fuse_silu`]: `x · Sigmoid(x)` → `Unary(Silu)(x)` (SiLU / swish, one table in int8).

use super::single_use;
use crate::graph::{ConvertError, FusedActivation, Graph, Op, UnaryFn};

/// Rewrites `Mul(x, Logistic(x))` (either operand order, no fused activation) — how PyTorch
/// exports `SiLU` and Keras `swish` — into `Unary(Silu)(x)` when the sigmoid's output has no other
/// reader. Returns the number of fusions.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fuse_silu(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let node = &g.nodes[i];
        let (Op::Mul { activation: FusedActivation::None }, Some(a), Some(b)) =
            (&node.op, node.input(0), node.input(1))
        else {
            i += 1;
            continue;
        };
        let found = [(a, b), (b, a)].into_iter().find_map(|(x, s)| {
            let p = g.producer(s)?;
            let sig = g.nodes.get(p)?;
            (matches!(sig.op, Op::Logistic) && sig.input(0) == Some(x) && single_use(g, s)).then_some((x, p))
        });
        let Some((x, p)) = found else {
            i += 1;
            continue;
        };
        g.nodes[i].op = Op::Unary(UnaryFn::Silu);
        g.nodes[i].inputs = alloc::vec![Some(x)];
        g.nodes.remove(p);
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops};
    use super::*;

    #[test]
    fn pytorch_silu() {
        for sigmoid_first in [false, true] {
            let mut b = G::new();
            let x = b.input(&[2, 8]);
            let s = b.node(Op::Logistic, &[Some(x)]);
            let ins = if sigmoid_first { [Some(s), Some(x)] } else { [Some(x), Some(s)] };
            let y = b.node(Op::Mul { activation: FusedActivation::None }, &ins);
            let before = b.output(y);
            let mut g = before.clone();
            assert_eq!(fuse_silu(&mut g).unwrap(), 1);
            assert_eq!(ops(&g), ["Silu"]);
            assert_same_function(&before, &g, 1e-6);
        }
        // A gate: y · sigmoid(x) is not SiLU.
        let mut b = G::new();
        let x = b.input(&[2, 8]);
        let x2 = b.node(Op::Tanh, &[Some(x)]);
        let s = b.node(Op::Logistic, &[Some(x)]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(x2), Some(s)]);
        let mut g = b.output(y);
        assert_eq!(fuse_silu(&mut g).unwrap(), 0);
    }
}
