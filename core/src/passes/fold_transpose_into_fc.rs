//! [`fold_transpose_into_fc`]: transpose → flatten → fully connected reads the untransposed
//! tensor with permuted weight columns (an ONNX `Flatten` of an NCHW tensor that the importer
//! stores NHWC).

use alloc::format;
use alloc::vec::Vec;

use super::{const_f32, single_use};
use crate::graph::{ConstData, ConvertError, Graph, Op, Tensor};
use crate::layout;

/// For `Transpose(perm)` (with `perm[0] == 0`) → `Reshape([n, k])` (flattening all but the first
/// axis) → `FullyConnected` nodes with constant `[out, k]` weights (every reader of the reshape),
/// where the transpose and reshape outputs have no other reader: reshapes the transpose's input
/// directly and permutes the weight columns so that each weight meets the same element as before.
/// Returns the number of transposes removed.
///
/// # Errors
/// [`crate::graph::ConvertErrorKind::InvalidGraph`] if the graph has too many tensors.
pub fn fold_transpose_into_fc(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    'nodes: while i < g.nodes.len() {
        let Op::Transpose { perm } = &g.nodes[i].op else {
            i += 1;
            continue;
        };
        let perm = perm.clone();
        let (Some(x), Some(t)) = (g.nodes[i].input(0), g.nodes[i].output(0)) else {
            i += 1;
            continue;
        };
        let xs = g.tensor(x).map(|t| t.shape.clone()).unwrap_or_default();
        let k: usize = xs.iter().skip(1).product();
        let r = match g.consumers(t).as_slice() {
            [r] if single_use(g, t) => *r,
            _ => {
                i += 1;
                continue;
            }
        };
        let flat_ok = perm.first() == Some(&0)
            && matches!(&g.nodes[r].op, Op::Reshape { new_shape } if new_shape.as_slice() == [xs[0], k]);
        let Some(f) = g.nodes[r].output(0) else {
            i += 1;
            continue;
        };
        let fcs = g.consumers(f);
        if !flat_ok || fcs.is_empty() || g.outputs.contains(&f) {
            i += 1;
            continue;
        }
        for &c in &fcs {
            let node = &g.nodes[c];
            let ok = matches!(node.op, Op::FullyConnected(_))
                && node.input(0) == Some(f)
                && node.inputs.iter().skip(1).all(|&w| w != Some(f))
                && node.input(1).and_then(|w| const_f32(g, w)).is_some()
                && node.input(1).and_then(|w| g.tensor(w)).is_some_and(|w| w.shape.get(1) == Some(&k));
            if !ok {
                i += 1;
                continue 'nodes;
            }
        }
        // Position j of the untransposed flattening is read at position src[j]... : transposing
        // the index array gives, for each transposed position, the untransposed index.
        let idx: Vec<usize> = (0..k).collect();
        let inner_shape: Vec<usize> = xs[1..].to_vec();
        let inner_perm: Vec<usize> = perm[1..].iter().map(|&p| p - 1).collect();
        let moved = layout::transpose(&idx, &inner_shape, &inner_perm)
            .map_err(|e| ConvertError::new(crate::graph::ConvertErrorKind::InvalidGraph, format!("transpose: {e}")))?;
        for &c in &fcs {
            let Some(w) = g.nodes[c].input(1) else { continue };
            let (Some(wv), Some(wt)) = (const_f32(g, w), g.tensor(w)) else { continue };
            let rows = wt.shape[0];
            let mut nw = alloc::vec![0f32; wv.len()];
            for o in 0..rows {
                for (pos, &j) in moved.iter().enumerate() {
                    nw[o * k + j] = wv[o * k + pos];
                }
            }
            let name = format!("{}/columns_permuted", wt.name);
            let shape = wt.shape.clone();
            let id = g.add_tensor(Tensor::constant(name, shape, ConstData::F32(nw)))?;
            g.nodes[c].inputs[1] = Some(id);
        }
        g.nodes[r].inputs[0] = Some(x);
        g.nodes.remove(i);
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, ops, values};
    use super::*;
    use crate::graph::{FullyConnected, FusedActivation};
    use alloc::vec;

    #[test]
    fn nchw_flatten_into_fc() {
        let mut b = G::new();
        let x = b.input(&[1, 2, 3, 4]); // NHWC
        let t = b.node(Op::Transpose { perm: vec![0, 3, 1, 2] }, &[Some(x)]); // NCHW
        let r = b.node(Op::Reshape { new_shape: vec![1, 24] }, &[Some(t)]);
        let w = b.constant(&[5, 24], values(120, 9));
        let fc = Op::FullyConnected(FullyConnected { activation: FusedActivation::None, keep_num_dims: false });
        let y1 = b.node(fc.clone(), &[Some(r), Some(w), None]);
        let w2 = b.constant(&[5, 24], values(120, 10));
        let y2 = b.node(fc, &[Some(r), Some(w2), None]);
        let y = b.node(Op::Add { activation: FusedActivation::None }, &[Some(y1), Some(y2)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(fold_transpose_into_fc(&mut g).unwrap(), 1);
        assert_eq!(ops(&g), ["Reshape", "FullyConnected", "FullyConnected", "Add"]);
        assert_same_function(&before, &g, 1e-6); // the FC sums in another order (f32 GEMM)
    }
}
