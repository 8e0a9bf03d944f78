//! [`fuse_hard_swish`]: `x · HardSigmoid(x)` and `x · relu6(x + 3) / 6` → `HardSwish(x)`.

use alloc::vec;
use alloc::vec::Vec;

use super::{is_scalar, mul_inputs, other, single_use, sole_reader};
use crate::graph::{ConvertError, FusedActivation, Graph, Op, TensorId};

/// Rewrites hard swish written in pieces into `HardSwish(x)` (one op and one requantization in
/// int8 instead of three or four, and no intermediate `x · relu6(x + 3)` whose range is six times
/// the output's):
/// - `Mul(x, HardSigmoid(x))` (either operand order, no fused activation) with alpha 1/6 and beta
///   1/2, how PyTorch exports `Hardswish` before opset 14;
/// - `x · relu6(x + 3) · (1/6)` and `x · (relu6(x + 3) · (1/6))` in either operand order, the
///   ReLU6 a `Clip(0, 6)` or fused into the `Add`, the division by 6 a `Div` (which
///   `sub_div_to_add_mul` turns into the product), how Paddle2ONNX writes `hardswish` (PP-OCR,
///   PP-LCNet).
///
/// Only when no intermediate result has another reader or is a graph output. Returns the number
/// of fusions.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fuse_hard_swish(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = fuse_hard_sigmoid_product(g);
    while let Some((x, y, mut remove)) = (0..g.nodes.len()).find_map(|i| match_relu6_form(g, i)) {
        g.nodes[y].op = Op::HardSwish;
        g.nodes[y].inputs = vec![Some(x)];
        remove.sort_unstable_by(|a, b| b.cmp(a));
        for i in remove {
            g.nodes.remove(i);
        }
        n += 1;
    }
    Ok(n)
}

/// `x + 3` (no fused activation) → `(x, the add's output)`; with `fused`, the add must carry a
/// fused ReLU6 instead.
fn plus_three(g: &Graph, i: usize, fused: bool) -> Option<(TensorId, TensorId)> {
    let n = g.nodes.get(i)?;
    let want = if fused { FusedActivation::Relu6 } else { FusedActivation::None };
    let (Op::Add { activation }, Some(a), Some(b)) = (&n.op, n.input(0), n.input(1)) else { return None };
    if *activation != want {
        return None;
    }
    let x = if is_scalar(g, b, 3.0, 1e-6) {
        a
    } else if is_scalar(g, a, 3.0, 1e-6) {
        b
    } else {
        return None;
    };
    Some((x, n.output(0)?))
}

/// Matches `relu6(x + 3)` at node `i` (a `Relu6` of an `x + 3`, or an `x + 3` with ReLU6 fused)
/// and the two products that follow: `(x, the node computing the result, the nodes to remove)`.
fn match_relu6_form(g: &Graph, i: usize) -> Option<(TensorId, usize, Vec<usize>)> {
    let node = g.nodes.get(i)?;
    let (x, r, mut remove) = match node.op {
        Op::Relu6 => {
            let t = node.input(0)?;
            let p = g.producer(t)?;
            let (x, _) = plus_three(g, p, false)?;
            if !single_use(g, t) {
                return None;
            }
            (x, node.output(0)?, vec![p, i])
        }
        Op::Add { activation: FusedActivation::Relu6 } => {
            let (x, r) = plus_three(g, i, true)?;
            (x, r, vec![i])
        }
        _ => return None,
    };
    let m1 = sole_reader(g, r)?;
    let w = other(mul_inputs(g, m1)?, r)?;
    let t = g.nodes.get(m1)?.output(0)?;
    let m2 = sole_reader(g, t)?;
    let v = other(mul_inputs(g, m2)?, t)?;
    let sixth = 1.0 / 6.0;
    // (x · relu6) · 1/6, or (relu6 · 1/6) · x.
    let ok = (w == x && is_scalar(g, v, sixth, 1e-6)) || (is_scalar(g, w, sixth, 1e-6) && v == x);
    if !ok {
        return None;
    }
    remove.push(m1);
    Some((x, m2, remove))
}

/// `Mul(x, HardSigmoid(x))` with alpha 1/6, beta 1/2 → `HardSwish(x)`.
fn fuse_hard_sigmoid_product(g: &mut Graph) -> usize {
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
    n
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

    /// Paddle2ONNX's hardswish: `x · Clip(x + 3, 0, 6) / 6` in the orders and spellings exporters
    /// write, before and after `fuse_activation` has folded the clip into the add.
    #[test]
    fn relu6_form_every_order() {
        let none = FusedActivation::None;
        for (form, fused, add_const_first, x_first) in
            (0..2).flat_map(|f| [false, true].into_iter().flat_map(move |u| [(f, u, false, false), (f, u, true, true)]))
        {
            let mut b = G::new();
            let x = b.input(&[2, 8]);
            let three = b.constant(&[1], alloc::vec![3.0]);
            let ins = if add_const_first { [Some(three), Some(x)] } else { [Some(x), Some(three)] };
            let r = if fused {
                b.node(Op::Add { activation: FusedActivation::Relu6 }, &ins)
            } else {
                let a = b.node(Op::Add { activation: none }, &ins);
                b.node(Op::Relu6, &[Some(a)])
            };
            let sixth = b.constant(&[], alloc::vec![1.0 / 6.0]);
            let mul = Op::Mul { activation: none };
            let y = if form == 0 {
                let ins = if x_first { [Some(x), Some(r)] } else { [Some(r), Some(x)] };
                let t = b.node(mul.clone(), &ins);
                b.node(mul, &[Some(t), Some(sixth)])
            } else {
                let t = b.node(mul.clone(), &[Some(sixth), Some(r)]);
                let ins = if x_first { [Some(x), Some(t)] } else { [Some(t), Some(x)] };
                b.node(mul, &ins)
            };
            let before = b.output(y);
            let mut g = before.clone();
            assert_eq!(fuse_hard_swish(&mut g).unwrap(), 1, "form {form} fused {fused}");
            assert_eq!(ops(&g), ["HardSwish"]);
            assert_eq!(g.outputs, before.outputs);
            assert_same_function(&before, &g, 1e-6);
        }
    }

    /// Near misses stay as they are: another tensor in the product, another offset or divisor,
    /// an intermediate read elsewhere.
    #[test]
    fn relu6_form_near_misses() {
        let none = FusedActivation::None;
        for case in 0..4 {
            let mut b = G::new();
            let x = b.input(&[2, 8]);
            let z = b.input(&[2, 8]);
            let three = b.constant(&[1], alloc::vec![if case == 1 { 2.0 } else { 3.0 }]);
            let a = b.node(Op::Add { activation: none }, &[Some(x), Some(three)]);
            let r = b.node(Op::Relu6, &[Some(a)]);
            let mul = Op::Mul { activation: none };
            let t = b.node(mul.clone(), &[Some(if case == 0 { z } else { x }), Some(r)]);
            let k = b.constant(&[1], alloc::vec![if case == 2 { 0.2 } else { 1.0 / 6.0 }]);
            let y = b.node(mul, &[Some(t), Some(k)]);
            let y = if case == 3 { b.node(Op::Add { activation: none }, &[Some(y), Some(r)]) } else { y };
            let mut g = b.output(y);
            assert_eq!(fuse_hard_swish(&mut g).unwrap(), 0, "case {case}");
        }
    }
}
