//! Ops whose inputs and output must share one quantization: MINIMUM and MAXIMUM (TFLite compares
//! the stored integers, `maximum_minimum.cc`, so the result is the real-valued min / max only
//! when all three tensors have one scale and zero point).
//!
//! The output keeps the parameters observed on it (its calibrated range); each input with other
//! parameters is brought to them: an activation through a `Quantize` node (the runtime's
//! requantizing `QUANTIZE`), a constant by quantizing its float values with the output's
//! parameters. Clamping an input to the output's range changes nothing the calibration saw: an
//! input below the minimum of `max(a, b)` is never the maximum (and the same for `min`).

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::quantize::quantize_values;
use crate::graph::{ConstData, ConvertError, ConvertErrorKind as Kind, DType, Graph, Node, Op, Tensor, TensorQuant};

/// Whether `op`'s inputs must have its output's quantization.
pub(super) fn shares_output_quant(op: &Op) -> bool {
    matches!(op, Op::Minimum | Op::Maximum)
}

/// Gives every input of the nodes of `q` that [`shares_output_quant`] the output's
/// quantization (see the module docs). `g` is the float graph (the constants' float values, by
/// the same tensor ids); `node_map` (float node → quantized node) follows the inserted nodes.
pub(super) fn tie_inputs_to_output(g: &Graph, q: &mut Graph, node_map: &mut [usize]) -> Result<(), ConvertError> {
    if !q.nodes.iter().any(|n| shares_output_quant(&n.op)) {
        return Ok(());
    }
    let old = core::mem::take(&mut q.nodes);
    let mut remap = Vec::with_capacity(old.len());
    let mut nodes: Vec<Node> = Vec::with_capacity(old.len() + 2);
    for (index, mut node) in old.into_iter().enumerate() {
        if shares_output_quant(&node.op) {
            let at = |e: ConvertError| e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str());
            let y = node
                .output(0)
                .and_then(|y| q.tensor(y))
                .ok_or_else(|| at(ConvertError::new(Kind::InvalidGraph, "the output is missing")))?;
            let (ydtype, yq) = (y.dtype, y.quant.clone());
            let Some((scale, zp)) = yq.as_ref().and_then(TensorQuant::per_tensor_params) else {
                return Err(at(ConvertError::new(Kind::InvalidGraph, "the output has no per-tensor quantization")));
            };
            for k in 0..node.inputs.len() {
                let Some(t) = node.inputs.get(k).copied().flatten() else { continue };
                let tt = q.tensor(t).ok_or_else(|| at(ConvertError::new(Kind::InvalidGraph, "an input is missing")))?;
                if tt.dtype == ydtype && tt.quant == yq {
                    continue;
                }
                let name = format!("{}/{}_input{k}", tt.name, node.name);
                let id = if tt.is_constant() {
                    let v = g.tensor(t).and_then(|f| f.data.as_ref()).and_then(ConstData::as_f32).ok_or_else(|| {
                        at(ConvertError::new(
                            Kind::UnsupportedQuantization,
                            format!("constant input {k} '{}' is not f32", tt.name),
                        ))
                    })?;
                    let (lo, hi) = ydtype.int_range().unwrap_or((-128, 127));
                    let ints = quantize_values(v, scale, zp, lo, hi);
                    let data = if ydtype == DType::I16 {
                        ConstData::I16(ints.iter().map(|&x| x as i16).collect())
                    } else {
                        ConstData::I8(ints.iter().map(|&x| x as i8).collect())
                    };
                    let mut c =
                        Tensor::constant(name, tt.shape.clone(), data).with_quant(TensorQuant::per_tensor(scale, zp));
                    c.dtype = ydtype;
                    q.add_tensor(c)?
                } else {
                    let mut nt = Tensor::new(name.clone(), tt.shape.clone(), ydtype);
                    nt.quant = Some(TensorQuant::per_tensor(scale, zp));
                    let id = q.add_tensor(nt)?;
                    nodes.push(Node::new(name, Op::Quantize, vec![Some(t)], vec![id]));
                    id
                };
                if let Some(slot) = node.inputs.get_mut(k) {
                    *slot = Some(id);
                }
            }
        }
        remap.push(nodes.len());
        nodes.push(node);
    }
    for m in node_map.iter_mut() {
        *m = remap.get(*m).copied().unwrap_or(*m);
    }
    q.nodes = nodes;
    Ok(())
}
