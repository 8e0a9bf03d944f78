//! [`fuse_layer_norm`]: layer normalization written in pieces (PyTorch below ONNX opset 17:
//! `ReduceMean`, `Sub`, `Pow 2`, `ReduceMean`, `Add ε`, `Sqrt`, `Div`) → the form the ONNX
//! `LayerNormalization` op imports as (TFLite's converter's): the square a product `d · d` and
//! `1 / √(var + ε)` one table, multiplied in.

use alloc::vec;

use super::{const_f32, readers, single_use};
use crate::graph::{ConvertError, FusedActivation, Graph, Op, TensorId, UnaryFn};

/// What [`find`] matched: the nodes to rewrite.
struct Match {
    /// `d²` as `Pow(d, 2)` (rewritten to `d · d`), or `None` when it is a product already.
    square: Option<usize>,
    /// `√(var + ε)` (rewritten to `(var + ε)^−½`).
    sqrt: usize,
    /// `d / √(…)`, or `d · (1 / √(…))` with the reciprocal's node: rewritten to `d · rstd`.
    divide: usize,
    reciprocal: Option<usize>,
    /// `d`.
    centered: TensorId,
}

/// The `Mean` node producing `t` with `keep_dims`: its input and axes.
fn mean_of(g: &Graph, t: TensorId) -> Option<(TensorId, &[usize])> {
    let n = g.nodes.get(g.producer(t)?)?;
    match &n.op {
        Op::Mean { axes, keep_dims: true } => Some((n.input(0)?, axes.as_slice())),
        _ => None,
    }
}

/// Matches the pattern whose last node (the division, or the product with the reciprocal) is
/// node `i`.
fn find(g: &Graph, i: usize) -> Option<Match> {
    let node = g.nodes.get(i)?;
    let none = FusedActivation::None;
    // d / s, or d · r with r = 1 / s.
    let (d, s, reciprocal) = match (&node.op, node.input(0), node.input(1)) {
        (Op::Div { activation }, Some(d), Some(s)) if *activation == none => (d, s, None),
        (Op::Mul { activation }, Some(a), Some(b)) if *activation == none => {
            let recip = |t: TensorId| {
                let p = g.producer(t)?;
                matches!(g.nodes.get(p)?.op, Op::Unary(UnaryFn::Pow(e)) if e == -1.0).then_some(p)
            };
            let (d, r, p) = match (recip(b), recip(a)) {
                (Some(p), _) => (a, b, p),
                (None, Some(p)) => (b, a, p),
                (None, None) => return None,
            };
            if !single_use(g, r) {
                return None;
            }
            (d, g.nodes.get(p)?.input(0)?, Some(p))
        }
        _ => return None,
    };
    // s = √(var + ε)
    let sqrt = g.producer(s)?;
    let sn = g.nodes.get(sqrt)?;
    if !matches!(sn.op, Op::Unary(UnaryFn::Sqrt)) || !single_use(g, s) {
        return None;
    }
    let ve = sn.input(0)?;
    let add = g.nodes.get(g.producer(ve)?)?;
    let (Op::Add { activation }, Some(a0), Some(a1)) = (&add.op, add.input(0), add.input(1)) else { return None };
    let is_eps = |t: TensorId| matches!(const_f32(g, t), Some([e]) if e.is_finite() && *e >= 0.0);
    let v = match (is_eps(a0), is_eps(a1)) {
        (false, true) => a0,
        (true, false) => a1,
        _ => return None,
    };
    if *activation != none || !single_use(g, ve) || !single_use(g, v) {
        return None;
    }
    // var = Mean(d², axes)
    let (sq, var_axes) = mean_of(g, v)?;
    if !single_use(g, sq) {
        return None;
    }
    let sq_node = g.producer(sq)?;
    let square = match (&g.nodes.get(sq_node)?.op, g.nodes[sq_node].input(0), g.nodes[sq_node].input(1)) {
        (Op::Unary(UnaryFn::Pow(e)), Some(x), _) if *e == 2.0 && x == d => Some(sq_node),
        (Op::Mul { activation }, Some(a), Some(b)) if *activation == none && a == d && b == d => None,
        _ => return None,
    };
    // d = x − Mean(x, axes), the same axes.
    let sub = g.nodes.get(g.producer(d)?)?;
    let (Op::Sub { activation }, Some(x), Some(m)) = (&sub.op, sub.input(0), sub.input(1)) else { return None };
    let (mx, mean_axes) = mean_of(g, m)?;
    if *activation != none || mx != x || mean_axes != var_axes || !single_use(g, m) {
        return None;
    }
    // d feeds the square and the division only.
    let mut want = vec![i, sq_node];
    want.sort_unstable();
    want.dedup();
    let mut got = readers(g, d);
    got.dedup();
    if got != want || g.outputs.contains(&d) {
        return None;
    }
    Some(Match { square, sqrt, divide: i, reciprocal, centered: d })
}

/// Rewrites layer normalization written in pieces — `d = x − Mean(x)`, `Mean(d²)` (`Pow(d, 2)` or
/// `d · d`), `+ ε`, `Sqrt`, then `d / √(…)` (or `d · Reciprocal(√(…))`) over the same axes — into
/// the form [`crate::onnx`] gives the `LayerNormalization` op: `d · d`, and
/// `d · (var + ε)^−½` with the inverse square root one function (one table in int8, instead of a
/// square root table and an int8 division, each rounding). The scale and bias that follow are
/// left as they are. Only when no intermediate result has another reader. Returns the number of
/// layer norms rewritten. (Not part of [`super::optimize`]: in float, `d / √(…)` and
/// `d · (…)^−½` round differently, and the float graph keeps ONNX Runtime's form; the quantizer
/// runs it, [`crate::ptq::prepare`].)
///
/// # Errors
/// None today (the passes' common signature).
pub fn fuse_layer_norm(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    while let Some(m) = (0..g.nodes.len()).find_map(|i| find(g, i)) {
        let d = m.centered;
        if let Some(sq) = m.square {
            g.nodes[sq].op = Op::Mul { activation: FusedActivation::None };
            g.nodes[sq].inputs = vec![Some(d), Some(d)];
        }
        g.nodes[m.sqrt].op = Op::Unary(UnaryFn::Pow(-0.5));
        let Some(rstd) = g.nodes[m.sqrt].output(0) else { break };
        g.nodes[m.divide].op = Op::Mul { activation: FusedActivation::None };
        g.nodes[m.divide].inputs = vec![Some(d), Some(rstd)];
        if let Some(r) = m.reciprocal {
            g.nodes.remove(r);
        }
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops};
    use super::*;

    /// `x − mean`, its square, the variance, ε, the square root and the division (or the product
    /// with the reciprocal), then a scale.
    fn pieces(square_as_pow: bool, reciprocal: bool, eps: f32) -> Graph {
        let none = FusedActivation::None;
        let mut b = G::new();
        let x = b.input(&[2, 3, 8]);
        let mean = Op::Mean { axes: vec![2], keep_dims: true };
        let m = b.node(mean.clone(), &[Some(x)]);
        let d = b.node(Op::Sub { activation: none }, &[Some(x), Some(m)]);
        let sq = if square_as_pow {
            b.node(Op::Unary(UnaryFn::Pow(2.0)), &[Some(d)])
        } else {
            b.node(Op::Mul { activation: none }, &[Some(d), Some(d)])
        };
        let v = b.node(mean, &[Some(sq)]);
        let e = b.constant(&[], vec![eps]);
        let ve = b.node(Op::Add { activation: none }, &[Some(v), Some(e)]);
        let s = b.node(Op::Unary(UnaryFn::Sqrt), &[Some(ve)]);
        let y = if reciprocal {
            let r = b.node(Op::Unary(UnaryFn::Pow(-1.0)), &[Some(s)]);
            b.node(Op::Mul { activation: none }, &[Some(r), Some(d)])
        } else {
            b.node(Op::Div { activation: none }, &[Some(d), Some(s)])
        };
        let scale = b.constant(&[8], (0..8).map(|i| 0.5 + i as f32 / 8.0).collect());
        let z = b.node(Op::Mul { activation: none }, &[Some(y), Some(scale)]);
        b.output(z)
    }

    #[test]
    fn pytorch_layer_norm_pieces_become_the_onnx_ops_form() {
        for (pow, recip) in [(true, false), (false, false), (true, true)] {
            let before = pieces(pow, recip, 1e-5);
            let mut g = before.clone();
            assert_eq!(fuse_layer_norm(&mut g).unwrap(), 1, "pow {pow} reciprocal {recip}");
            assert_eq!(ops(&g), ["Mean", "Sub", "Mul", "Mean", "Add", "Pow", "Mul", "Mul"]);
            assert_same_function(&before, &g, 1e-5);
        }
    }

    #[test]
    fn other_graphs_stay() {
        // Different axes for the two means.
        let mut g = pieces(true, false, 1e-5);
        if let Op::Mean { axes, .. } = &mut g.nodes[3].op {
            *axes = vec![1];
        }
        let mut h = g.clone();
        assert_eq!(fuse_layer_norm(&mut h).unwrap(), 0);
        // A negative epsilon is not a layer norm's.
        let mut g = pieces(true, false, -1.0);
        assert_eq!(fuse_layer_norm(&mut g).unwrap(), 0);
        // The centered values read elsewhere too.
        let mut g = pieces(false, false, 1e-5);
        let d = g.nodes[1].output(0).unwrap();
        g.outputs.push(d);
        assert_eq!(fuse_layer_norm(&mut g).unwrap(), 0);
    }
}
