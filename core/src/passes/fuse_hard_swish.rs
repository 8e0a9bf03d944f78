//! [`fuse_hard_swish`]: `x · HardSigmoid(x)` → `HardSwish(x)`.

use super::single_use;
use crate::graph::{ConvertError, FusedActivation, Graph, Op};

/// Rewrites `Mul(x, HardSigmoid(x))` (either operand order, no fused activation) with alpha 1/6
/// and beta 1/2 — how PyTorch exports `Hardswish` before opset 14 — into `HardSwish(x)` when the
/// HardSigmoid output has no other reader. Returns the number of fusions.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fuse_hard_swish(g: &mut Graph) -> Result<usize, ConvertError> {
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
        let found = [(a, b), (b, a)].into_iter().find_map(|(x, h)| {
            let p = g.producer(h)?;
            let hs = g.nodes.get(p)?;
            match hs.op {
                Op::HardSigmoid { alpha, beta }
                    if (alpha - 1.0 / 6.0).abs() <= 1e-6
                        && beta == 0.5
                        && hs.input(0) == Some(x)
                        && single_use(g, h) =>
                {
                    Some((x, p))
                }
                _ => None,
            }
        });
        let Some((x, p)) = found else {
            i += 1;
            continue;
        };
        g.nodes[i].op = Op::HardSwish;
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
    fn pytorch_opset13_hardswish() {
        let mut b = G::new();
        let x = b.input(&[2, 8]);
        let h = b.node(Op::HardSigmoid { alpha: 1.0 / 6.0, beta: 0.5 }, &[Some(x)]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(x), Some(h)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(fuse_hard_swish(&mut g).unwrap(), 1);
        assert_eq!(ops(&g), ["HardSwish"]);
        assert_same_function(&before, &g, 1e-6);
        // Other alpha/beta: a gate, not a HardSwish.
        let mut b = G::new();
        let x = b.input(&[2, 8]);
        let h = b.node(Op::HardSigmoid { alpha: 0.2, beta: 0.5 }, &[Some(x)]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(h), Some(x)]);
        let mut g = b.output(y);
        assert_eq!(fuse_hard_swish(&mut g).unwrap(), 0);
    }
}
