//! [`fuse_gelu`]: `0.5 · x · (1 + Erf(x / √2))`, as exporters spell GELU before ONNX opset 20,
//! → `Unary(Gelu)(x)` (one table in int8 instead of four ops and three requantizations).

use alloc::vec;
use alloc::vec::Vec;

use super::{is_scalar, mul_inputs, other, single_use, sole_reader};
use crate::graph::{ConvertError, FusedActivation, Graph, Op, TensorId, UnaryFn};

/// Matches the pattern around the Erf node `e`: `(x, the node computing the result, the nodes to
/// remove)`.
fn matches(g: &Graph, e: usize) -> Option<(TensorId, usize, Vec<usize>)> {
    let erf = g.nodes.get(e)?;
    let (t1, te) = (erf.input(0)?, erf.output(0)?);
    // x / √2, after sub_div_to_add_mul: x · (1/√2).
    let p1 = g.producer(t1)?;
    let (a, b) = mul_inputs(g, p1)?;
    let half_sqrt2 = core::f32::consts::FRAC_1_SQRT_2;
    let x = if is_scalar(g, b, half_sqrt2, 1e-4) {
        a
    } else if is_scalar(g, a, half_sqrt2, 1e-4) {
        b
    } else {
        return None;
    };
    if !single_use(g, t1) {
        return None;
    }
    // 1 + erf.
    let add = sole_reader(g, te)?;
    let n = g.nodes.get(add)?;
    let (Op::Add { activation: FusedActivation::None }, Some(a0), Some(a1)) = (&n.op, n.input(0), n.input(1)) else {
        return None;
    };
    if !is_scalar(g, other((a0, a1), te)?, 1.0, 1e-6) {
        return None;
    }
    let t3 = n.output(0)?;
    // The product with x and 0.5, in any of the three orders exporters write.
    let m1 = sole_reader(g, t3)?;
    let w = other(mul_inputs(g, m1)?, t3)?;
    let t4 = g.nodes.get(m1)?.output(0)?;
    if w == x {
        // (x · (1 + erf)) · 0.5
        let m2 = sole_reader(g, t4)?;
        is_scalar(g, other(mul_inputs(g, m2)?, t4)?, 0.5, 1e-6).then(|| (x, m2, vec![p1, e, add, m1]))
    } else if is_scalar(g, w, 0.5, 1e-6) {
        // ((1 + erf) · 0.5) · x
        let m2 = sole_reader(g, t4)?;
        (other(mul_inputs(g, m2)?, t4)? == x).then(|| (x, m2, vec![p1, e, add, m1]))
    } else {
        // (x · 0.5) · (1 + erf)
        let h = g.producer(w)?;
        let hw = other(mul_inputs(g, h)?, x)?;
        (is_scalar(g, hw, 0.5, 1e-6) && single_use(g, w)).then(|| (x, m1, vec![p1, e, add, h]))
    }
}

/// Rewrites the exact (erf) GELU written in pieces — `Mul(x, 1/√2)` (or `Div(x, √2)`, which
/// `sub_div_to_add_mul` turns into that), `Erf`, `Add 1`, and the products with `x` and `0.5` in
/// any order — into `Unary(Gelu)(x)` when no intermediate result has another reader. Returns
/// the number of fusions.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fuse_gelu(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    loop {
        let found = (0..g.nodes.len())
            .filter(|&i| matches!(g.nodes[i].op, Op::Unary(UnaryFn::Erf)))
            .find_map(|i| matches(g, i));
        let Some((x, y, mut remove)) = found else { break };
        g.nodes[y].op = Op::Unary(UnaryFn::Gelu);
        g.nodes[y].inputs = vec![Some(x)];
        remove.sort_unstable_by(|a, b| b.cmp(a));
        for i in remove {
            g.nodes.remove(i);
        }
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops};
    use super::*;

    #[test]
    fn gelu_in_pieces_every_order() {
        for order in 0..3 {
            let mut b = G::new();
            let x = b.input(&[2, 8]);
            let mul = Op::Mul { activation: FusedActivation::None };
            let r2 = b.constant(&[1], vec![core::f32::consts::FRAC_1_SQRT_2]);
            let t1 = b.node(mul.clone(), &[Some(x), Some(r2)]);
            let e = b.node(Op::Unary(UnaryFn::Erf), &[Some(t1)]);
            let one = b.constant(&[1], vec![1.0]);
            let t3 = b.node(Op::Add { activation: FusedActivation::None }, &[Some(one), Some(e)]);
            let half = b.constant(&[1], vec![0.5]);
            let y = match order {
                0 => {
                    let t4 = b.node(mul.clone(), &[Some(x), Some(t3)]);
                    b.node(mul.clone(), &[Some(t4), Some(half)])
                }
                1 => {
                    let t4 = b.node(mul.clone(), &[Some(t3), Some(half)]);
                    b.node(mul.clone(), &[Some(x), Some(t4)])
                }
                _ => {
                    let h = b.node(mul.clone(), &[Some(half), Some(x)]);
                    b.node(mul.clone(), &[Some(h), Some(t3)])
                }
            };
            let before = b.output(y);
            let mut g = before.clone();
            assert_eq!(fuse_gelu(&mut g).unwrap(), 1, "order {order}");
            assert_eq!(ops(&g), ["Gelu"], "order {order}");
            assert_same_function(&before, &g, 1e-5);
        }
        // 0.4 instead of 0.5: not a GELU.
        let mut b = G::new();
        let x = b.input(&[2, 8]);
        let mul = Op::Mul { activation: FusedActivation::None };
        let r2 = b.constant(&[1], vec![core::f32::consts::FRAC_1_SQRT_2]);
        let t1 = b.node(mul.clone(), &[Some(x), Some(r2)]);
        let e = b.node(Op::Unary(UnaryFn::Erf), &[Some(t1)]);
        let one = b.constant(&[1], vec![1.0]);
        let t3 = b.node(Op::Add { activation: FusedActivation::None }, &[Some(e), Some(one)]);
        let t4 = b.node(mul.clone(), &[Some(x), Some(t3)]);
        let c = b.constant(&[1], vec![0.4]);
        let y = b.node(mul, &[Some(t4), Some(c)]);
        let mut g = b.output(y);
        assert_eq!(fuse_gelu(&mut g).unwrap(), 0);
    }
}
