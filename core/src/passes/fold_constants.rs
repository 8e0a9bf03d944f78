//! [`fold_constants`]: nodes computed from constants only become constants.

use alloc::format;
use alloc::vec::Vec;

use crate::float::{TensorRef, eval_op};
use crate::graph::{ConstData, ConvertError, Graph, Op};

/// Replaces every node whose inputs are all f32 constants (and whose output is not a graph
/// output) by a constant holding its result, computed by the float executor's kernels, and every
/// `Dequantize` of a constant (quantized integers, or f16: TFLite's float16 weights) by its f32
/// values. Returns the number of nodes folded.
///
/// # Errors
/// A kernel error for an inconsistent node (a validated graph has none).
pub fn fold_constants(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let node = &g.nodes[i];
        let Some(y) = node.output(0) else {
            i += 1;
            continue;
        };
        // Dequantize of a constant (int8 weights with their scales, f16 weights): f32 data.
        if let (Op::Dequantize, Some(x)) = (&node.op, node.input(0)) {
            let values = g.tensor(x).filter(|t| t.is_constant()).and_then(|t| match &t.data {
                Some(ConstData::F16(h)) => Some(h.iter().map(|&v| crate::float::f16_to_f32(v)).collect()),
                _ => t.dequantized_data(),
            });
            if let (Some(v), false) = (values, g.outputs.contains(&y)) {
                if let Some(t) = g.tensor_mut(y) {
                    t.data = Some(ConstData::F32(v));
                }
                g.nodes.remove(i);
                n += 1;
                continue;
            }
        }
        let foldable = !matches!(node.op, Op::Quantize | Op::Dequantize)
            && !g.outputs.contains(&y)
            && node
                .inputs
                .iter()
                .flatten()
                .all(|t| g.tensor(*t).is_some_and(|t| matches!(t.data, Some(ConstData::F32(_)))));
        if !foldable {
            i += 1;
            continue;
        }
        let refs: Vec<Option<TensorRef<'_>>> = node
            .inputs
            .iter()
            .map(|t| {
                t.and_then(|t| g.tensor(t)).and_then(|t| {
                    t.data.as_ref().and_then(ConstData::as_f32).map(|data| TensorRef { data, shape: &t.shape })
                })
            })
            .collect();
        let out_shape = g.tensor(y).map(|t| t.shape.clone()).unwrap_or_default();
        let v = eval_op(&node.op, &refs, &out_shape)
            .map_err(|e| e.or_at_node(i, node.op.name()).with_node_name(node.name.as_str()))?;
        if let Some(t) = g.tensor_mut(y) {
            if t.name.is_empty() {
                t.name = format!("folded{i}");
            }
            t.data = Some(ConstData::F32(v));
        }
        g.nodes.remove(i);
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
    fn constant_subgraph_folds() {
        let mut b = G::new();
        let x = b.input(&[2, 3]);
        let w = b.constant(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let wt = b.node(Op::Transpose { perm: vec![1, 0] }, &[Some(w)]); // [2, 3]
        let s = b.constant(&[1], vec![0.5]);
        let ws = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(wt), Some(s)]);
        let y = b.node(Op::Add { activation: FusedActivation::None }, &[Some(x), Some(ws)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(fold_constants(&mut g).unwrap(), 2);
        assert_eq!(ops(&g), ["Add"]);
        // numpy: np.array([[1,2],[3,4],[5,6]]).T * 0.5
        assert_eq!(g.tensors[ws.index()].data, Some(ConstData::F32(vec![0.5, 1.5, 2.5, 1.0, 2.0, 3.0])));
        assert_same_function(&before, &g, 0.0);
    }

    #[test]
    fn dequantize_of_constants_folds() {
        use crate::graph::{DType, TensorQuant};
        let mut b = G::new();
        let x = b.input(&[1, 2]);
        let q = b.0.add_tensor(
            crate::graph::Tensor::constant("q", vec![2], ConstData::I8(vec![-4, 10]))
                .with_quant(TensorQuant::per_tensor(0.5, 2)),
        );
        let h = b.0.add_tensor(crate::graph::Tensor::constant("h", vec![2], ConstData::F16(vec![0x3c00, 0xc000])));
        let dq = b.node(Op::Dequantize, &[Some(q.unwrap())]);
        let dh = b.node(Op::Dequantize, &[Some(h.unwrap())]);
        let a = b.node(Op::Add { activation: FusedActivation::None }, &[Some(x), Some(dq)]);
        let y = b.node(Op::Mul { activation: FusedActivation::None }, &[Some(a), Some(dh)]);
        let before = b.output(y);
        let mut g = before.clone();
        assert_eq!(fold_constants(&mut g).unwrap(), 2);
        assert_eq!(ops(&g), ["Add", "Mul"]);
        // 0.5 * (-4 - 2), 0.5 * (10 - 2); f16 1.0 and -2.0.
        assert_eq!(g.tensors[dq.index()].data, Some(ConstData::F32(vec![-3.0, 4.0])));
        assert_eq!(g.tensors[dh.index()].data, Some(ConstData::F32(vec![1.0, -2.0])));
        assert_eq!(g.tensors[dh.index()].dtype, DType::F32);
        assert_same_function(&before, &g, 0.0);
    }
}
