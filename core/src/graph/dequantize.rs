//! Dequantization of constant data, and the pass that makes hybrid graphs purely float.

use alloc::vec::Vec;

use super::{ConstData, DType, Graph, Op, Tensor};

impl Tensor {
    /// The constant data as real values: `F32` data as is, integer data with quantization as
    /// `scale[c] * (q - zero_point[c])`, computed in f64 and rounded to f32 once, as TFLite's
    /// reference Dequantize does (`c` is the index along the quantized axis).
    ///
    /// `None` for activations, for integer data without quantization, for `F16`/`Bool` data, and
    /// for quantization parameters that do not fit the shape (see [`Graph::validate`]).
    pub fn dequantized_data(&self) -> Option<Vec<f32>> {
        let data = self.data.as_ref()?;
        if let ConstData::F32(v) = data {
            return Some(v.clone());
        }
        let q = self.quant.as_ref()?;
        let values = data.to_i64_vec()?;
        if q.scales.len() != q.zero_points.len() || q.scales.is_empty() {
            return None;
        }
        // Element i belongs to channel (i / inner) % channels.
        let (channels, inner) = match q.axis {
            None => (1, 1),
            Some(axis) => {
                let channels = *self.shape.get(axis)?;
                let inner = super::num_elements(self.shape.get(axis + 1..)?)?;
                (channels, inner)
            }
        };
        if channels != q.scales.len() || inner == 0 {
            return None;
        }
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = (i / inner) % channels;
                let (s, z) = (q.scales.get(c)?, q.zero_points.get(c)?);
                Some((v.wrapping_sub(i64::from(*z)) as f64 * f64::from(*s)) as f32)
            })
            .collect()
    }
}

impl Graph {
    /// Replaces the quantized int8 weights of hybrid ops (Conv2d, DepthwiseConv2d and
    /// FullyConnected with an f32 input, see [`Op`]) by their f32 values
    /// ([`Tensor::dequantized_data`]), so the graph is purely float, as a float model exported
    /// without weight quantization would be. A weight tensor is converted only if every node
    /// that reads it is such a hybrid op. Returns how many tensors were converted.
    pub fn dequantize_hybrid_weights(&mut self) -> usize {
        let consumers = self.consumer_map();
        let is_hybrid = |g: &Graph, n: usize| -> bool {
            let Some(node) = g.nodes.get(n) else { return false };
            let weighted = matches!(node.op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_));
            let x_f32 = node.input(0).and_then(|x| g.tensor(x)).is_some_and(|t| t.dtype == DType::F32);
            weighted && x_f32
        };
        let mut converted = 0;
        for (index, readers) in consumers.iter().enumerate() {
            let Some(t) = self.tensors.get(index) else { continue };
            if t.dtype != DType::I8 || t.data.is_none() || t.quant.is_none() || readers.is_empty() {
                continue;
            }
            let only_as_hybrid_weights = readers.iter().all(|&n| {
                is_hybrid(self, n)
                    && self.nodes.get(n).and_then(|node| node.input(1)).is_some_and(|w| w.index() == index)
            });
            if !only_as_hybrid_weights {
                continue;
            }
            let Some(values) = t.dequantized_data() else { continue };
            if let Some(t) = self.tensors.get_mut(index) {
                t.dtype = DType::F32;
                t.quant = None;
                t.data = Some(ConstData::F32(values));
                converted += 1;
            }
        }
        converted
    }
}
