//! [`remove_noops`]: nodes that move no data, or whose work a neighbour already does.

use alloc::vec::Vec;

use super::{bypass_node, single_use};
use crate::graph::{ConvertError, Graph, Op, TensorId};
use crate::layout;

fn shape(g: &Graph, t: Option<TensorId>) -> Option<&[usize]> {
    t.and_then(|t| g.tensor(t)).map(|t| t.shape.as_slice())
}

/// Applies one rewrite if some node allows it.
fn rewrite_once(g: &mut Graph) -> bool {
    for i in 0..g.nodes.len() {
        let node = &g.nodes[i];
        let (Some(x), Some(y)) = (node.input(0), node.output(0)) else { continue };
        // Dead node: nothing reads its output.
        if g.consumers(y).is_empty() && !g.outputs.contains(&y) {
            g.nodes.remove(i);
            return true;
        }
        let same_shape = shape(g, Some(x)) == shape(g, Some(y));
        let identity = match &node.op {
            Op::Reshape { .. } | Op::Squeeze { .. } => same_shape,
            Op::Transpose { perm } => layout::is_identity(perm),
            _ => false,
        };
        if identity && bypass_node(g, i, x, y) {
            return true;
        }
        let node = &g.nodes[i];
        match &node.op {
            Op::Transpose { perm }
                if !identity && shape(g, Some(x)).is_some_and(|s| layout::is_data_preserving(s, perm)) =>
            {
                let new_shape = shape(g, Some(y)).unwrap_or(&[]).to_vec();
                g.nodes[i].op = Op::Reshape { new_shape };
                return true;
            }
            _ => {}
        }
        // Chains: reshape of a reshape, transpose of a transpose.
        let Some(p) = g.producer(x) else { continue };
        if !single_use(g, x) {
            continue;
        }
        let (prev, node) = (&g.nodes[p], &g.nodes[i]);
        let Some(src) = prev.input(0) else { continue };
        let merged = match (&prev.op, &node.op) {
            (Op::Reshape { .. } | Op::Squeeze { .. }, Op::Reshape { .. } | Op::Squeeze { .. }) => {
                Some(Op::Reshape { new_shape: shape(g, Some(y)).unwrap_or(&[]).to_vec() })
            }
            (Op::Transpose { perm: p1 }, Op::Transpose { perm: p2 }) => {
                let perm: Vec<usize> = p2.iter().map(|&k| p1.get(k).copied().unwrap_or(0)).collect();
                Some(Op::Transpose { perm })
            }
            _ => None,
        };
        if let Some(op) = merged {
            g.nodes[i].op = op;
            g.nodes[i].inputs[0] = Some(src);
            g.nodes.remove(p);
            return true;
        }
    }
    false
}

/// Removes identity reshapes/squeezes/transposes (the ONNX importer's `Identity` and `Dropout`
/// are identity reshapes) and nodes whose output nothing reads; merges reshape→reshape and
/// transpose→transpose chains; turns a transpose that moves only extent-1 axes into a reshape.
/// Returns the number of rewrites.
///
/// # Errors
/// None today (the signature is the passes' common one).
pub fn remove_noops(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    while rewrite_once(g) {
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops};
    use super::*;
    use alloc::vec;

    #[test]
    fn identities_and_chains_go() {
        let mut b = G::new();
        let x = b.input(&[1, 2, 3, 4]);
        let a = b.node(Op::Reshape { new_shape: vec![1, 2, 3, 4] }, &[Some(x)]); // identity
        let t1 = b.node(Op::Transpose { perm: vec![0, 2, 3, 1] }, &[Some(a)]);
        let t2 = b.node(Op::Transpose { perm: vec![0, 3, 1, 2] }, &[Some(t1)]); // undoes t1
        let r1 = b.node(Op::Reshape { new_shape: vec![1, 24] }, &[Some(t2)]);
        let r2 = b.node(Op::Reshape { new_shape: vec![2, 12] }, &[Some(r1)]);
        let y = b.node(Op::Relu, &[Some(r2)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert!(remove_noops(&mut g).unwrap() >= 4);
        assert_eq!(ops(&g), ["Reshape", "Relu"]);
        assert_same_function(&before, &g, 0.0);
    }

    #[test]
    fn output_tensor_survives_and_unit_transpose_is_a_reshape() {
        let mut b = G::new();
        let x = b.input(&[1, 3, 1, 1]);
        let r = b.node(Op::Relu, &[Some(x)]);
        let t = b.node(Op::Transpose { perm: vec![0, 2, 3, 1] }, &[Some(r)]);
        let y = b.node(Op::Reshape { new_shape: vec![1, 1, 1, 3] }, &[Some(t)]);
        let before = b.output(y);
        let mut g = before.clone();
        remove_noops(&mut g).unwrap();
        assert_eq!(ops(&g), ["Relu", "Reshape"]);
        assert_eq!(g.outputs, [y]);
        assert_same_function(&before, &g, 0.0);
        // An identity node right after the input that is also the output stays (nothing else
        // could produce the output tensor).
        let mut b = G::new();
        let x = b.input(&[2]);
        let y = b.node(Op::Reshape { new_shape: vec![2] }, &[Some(x)]);
        let mut g = b.output(y);
        assert_eq!(remove_noops(&mut g).unwrap(), 0);
    }
}
