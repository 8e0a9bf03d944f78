//! [`sub_div_to_add_mul`]: subtraction and division by a constant become addition and
//! multiplication (ops the int8 runtime has).

use alloc::format;
use alloc::vec::Vec;

use super::const_f32;
use crate::graph::{ConstData, ConvertError, Graph, Op, Tensor};

/// `Sub(x, c)` → `Add(x, -c)` and `Div(x, c)` → `Mul(x, 1/c)` for a constant `c` (a new constant
/// tensor; `c` may be shared). Returns the number of nodes rewritten.
///
/// `x · (1/c)` can differ from `x / c` in the last bit (the product rounds twice).
///
/// # Errors
/// None today (the passes' common signature).
pub fn sub_div_to_add_mul(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    for i in 0..g.nodes.len() {
        let (op, c) = match (&g.nodes[i].op, g.nodes[i].input(1)) {
            (Op::Sub { activation }, Some(c)) => (Op::Add { activation: *activation }, c),
            (Op::Div { activation }, Some(c)) => (Op::Mul { activation: *activation }, c),
            _ => continue,
        };
        let Some(v) = const_f32(g, c) else { continue };
        let is_sub = matches!(op, Op::Add { .. });
        let nv: Vec<f32> = v.iter().map(|&x| if is_sub { -x } else { 1.0 / x }).collect();
        let t = g.tensor(c).map(|t| t.shape.clone()).unwrap_or_default();
        let name = format!("{}/{}", g.nodes[i].name, if is_sub { "negated" } else { "reciprocal" });
        let id = g.add_tensor(Tensor::constant(name, t, ConstData::F32(nv)))?;
        g.nodes[i].op = op;
        g.nodes[i].inputs[1] = Some(id);
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops};
    use super::*;
    use crate::graph::FusedActivation;
    use alloc::vec;

    #[test]
    fn sub_and_div_by_constants() {
        let mut b = G::new();
        let x = b.input(&[2, 3]);
        let c = b.constant(&[3], vec![1.0, -2.0, 0.5]);
        let d = b.constant(&[], vec![4.0]);
        let s = b.node(Op::Sub { activation: FusedActivation::None }, &[Some(x), Some(c)]);
        let q = b.node(Op::Div { activation: FusedActivation::Relu }, &[Some(s), Some(d)]);
        let y = b.node(Op::Sub { activation: FusedActivation::None }, &[Some(c), Some(q)]); // c - x stays
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(sub_div_to_add_mul(&mut g).unwrap(), 2);
        assert_eq!(ops(&g), ["Add", "Mul", "Sub"]);
        assert_eq!(g.nodes[1].op, Op::Mul { activation: FusedActivation::Relu });
        assert_same_function(&before, &g, 0.0);
    }
}
