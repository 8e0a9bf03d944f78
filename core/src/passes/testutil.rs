//! Tiny graphs for the pass tests, and the check that a pass kept the graph's function.

use alloc::string::String;
use alloc::vec::Vec;

use crate::float::FloatExecutor;
use crate::graph::{ConstData, DType, Graph, GraphMetadata, Node, Op, Tensor, TensorId};

/// A graph being built.
pub(crate) struct G(pub Graph);

impl G {
    pub fn new() -> Self {
        Self(Graph::new(GraphMetadata::new("test", "pass test")))
    }
    pub fn input(&mut self, shape: &[usize]) -> TensorId {
        let id = self.0.add_tensor(Tensor::new("x", shape.to_vec(), DType::F32)).unwrap();
        self.0.inputs.push(id);
        id
    }
    pub fn constant(&mut self, shape: &[usize], v: Vec<f32>) -> TensorId {
        self.0.add_tensor(Tensor::constant("c", shape.to_vec(), ConstData::F32(v))).unwrap()
    }
    /// Adds a node; the output shape is inferred.
    pub fn node(&mut self, op: Op, inputs: &[Option<TensorId>]) -> TensorId {
        let mut n = Node::new(String::from(op.name()), op, inputs.to_vec(), Vec::new());
        let shape = self.0.infer_output_shapes(&n).unwrap().remove(0);
        let id = self.0.add_tensor(Tensor::new("y", shape, DType::F32)).unwrap();
        n.outputs.push(id);
        self.0.add_node(n);
        id
    }
    pub fn output(mut self, t: TensorId) -> Graph {
        self.0.outputs.push(t);
        self.0.validate().unwrap();
        self.0
    }
}

/// Deterministic pseudo-random values in [-2, 2).
pub(crate) fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// Runs both graphs on the same seeded inputs; outputs must agree within `tol` relative
/// (`|a - b| <= tol · max(1, |a|)`).
pub(crate) fn assert_same_function(before: &Graph, after: &Graph, tol: f32) {
    after.validate().unwrap();
    let a = FloatExecutor::new(before).unwrap();
    let b = FloatExecutor::new(after).unwrap();
    for seed in 0..3u64 {
        let inputs: Vec<Vec<f32>> = before
            .inputs
            .iter()
            .enumerate()
            .map(|(k, &i)| values(before.tensor(i).unwrap().num_elements().unwrap(), seed * 10 + k as u64))
            .collect();
        let refs: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
        let (ya, yb) = (a.run(&refs).unwrap(), b.run(&refs).unwrap());
        assert_eq!(ya.len(), yb.len());
        for (p, q) in ya.iter().zip(&yb) {
            assert_eq!(p.len(), q.len());
            for (u, v) in p.iter().zip(q) {
                assert!((u - v).abs() <= tol * u.abs().max(1.0), "{u} vs {v}");
            }
        }
    }
}

/// The op names of the graph's nodes.
pub(crate) fn ops(g: &Graph) -> Vec<&'static str> {
    g.nodes.iter().map(|n| n.op.name()).collect()
}
