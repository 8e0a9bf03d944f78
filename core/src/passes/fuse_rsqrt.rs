//! [`fuse_rsqrt`]: `1 / √x` written as two ops → `Rsqrt(x)`.

use alloc::vec;

use super::{is_scalar, single_use};
use crate::graph::{ConvertError, FusedActivation, Graph, Op, UnaryFn};

/// Rewrites `Reciprocal(Sqrt(x))` (the reciprocal `Unary(Pow(−1))`, how the ONNX importer reads
/// `Reciprocal`) and `Div(1, Sqrt(x))` — how PyTorch exports `torch.rsqrt` — into `Rsqrt(x)`
/// (TFLite's RSQRT: one int8 kernel, bit-exact with TFLite Micro, instead of two tables) when the
/// square root has no other reader. The same function in float (`1 / √x`, both correctly
/// rounded). Returns the number of fusions.
///
/// # Errors
/// None today (the passes' common signature).
pub fn fuse_rsqrt(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let node = &g.nodes[i];
        let s = match (&node.op, node.input(0), node.input(1)) {
            (Op::Unary(UnaryFn::Pow(e)), Some(s), _) if *e == -1.0 => s,
            (Op::Div { activation: FusedActivation::None }, Some(one), Some(s)) if is_scalar(g, one, 1.0, 0.0) => s,
            _ => {
                i += 1;
                continue;
            }
        };
        let Some(p) = g.producer(s) else {
            i += 1;
            continue;
        };
        let (Op::Unary(UnaryFn::Sqrt), Some(x)) = (&g.nodes[p].op, g.nodes[p].input(0)) else {
            i += 1;
            continue;
        };
        if !single_use(g, s) {
            i += 1;
            continue;
        }
        g.nodes[i].op = Op::Rsqrt;
        g.nodes[i].inputs = vec![Some(x)];
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
    fn reciprocal_of_sqrt_and_one_over_sqrt() {
        for div in [false, true] {
            let mut b = G::new();
            let x = b.input(&[2, 8]);
            // |x|: the test inputs include negatives.
            let a = b.node(Op::Abs, &[Some(x)]);
            let s = b.node(Op::Unary(UnaryFn::Sqrt), &[Some(a)]);
            let y = if div {
                let one = b.constant(&[], vec![1.0]);
                b.node(Op::Div { activation: FusedActivation::None }, &[Some(one), Some(s)])
            } else {
                b.node(Op::Unary(UnaryFn::Pow(-1.0)), &[Some(s)])
            };
            let before = b.output(y);
            let mut g = before.clone();
            assert_eq!(fuse_rsqrt(&mut g).unwrap(), 1, "div {div}");
            assert_eq!(ops(&g), ["Abs", "Rsqrt"]);
            assert_eq!(g.outputs, before.outputs);
            assert_same_function(&before, &g, 1e-6);
        }
        // The square root read elsewhere too: left alone.
        let mut b = G::new();
        let x = b.input(&[2, 8]);
        let s = b.node(Op::Unary(UnaryFn::Sqrt), &[Some(x)]);
        let r = b.node(Op::Unary(UnaryFn::Pow(-1.0)), &[Some(s)]);
        let y = b.node(Op::Add { activation: FusedActivation::None }, &[Some(r), Some(s)]);
        let mut g = b.output(y);
        assert_eq!(fuse_rsqrt(&mut g).unwrap(), 0);
    }
}
