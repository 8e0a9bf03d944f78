//! The weights' bit width of each layer: [`QuantizeOptions::weight_bits`] and its per-layer
//! overrides [`QuantizeOptions::layer_weight_bits`].

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::{QuantizeOptions, err};
use crate::graph::{ConvertError, ConvertErrorKind as Kind, DType, Graph, Op};

/// The weight widths the runtime has kernels for.
pub(super) const WEIGHT_BITS: [u8; 2] = [8, 4];

/// The nodes a layer name designates: the nodes of that name, or else the node whose first
/// output has that name; an `InvalidGraph` error naming `what` (and the graph's first node
/// names) when there is none.
pub(super) fn find_layer(g: &Graph, name: &str, what: &str) -> Result<Vec<usize>, ConvertError> {
    let by_node: Vec<usize> = g.nodes.iter().enumerate().filter(|(_, n)| n.name == name).map(|(i, _)| i).collect();
    let found: Vec<usize> = if by_node.is_empty() {
        g.nodes
            .iter()
            .position(|n| n.output(0).and_then(|t| g.tensor(t)).is_some_and(|t| t.name == name))
            .into_iter()
            .collect()
    } else {
        by_node
    };
    if found.is_empty() {
        let mut names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
        names.truncate(40);
        return Err(err(
            Kind::InvalidGraph,
            format!("{what} {name:?}: no node or node output of that name (nodes: {names:?})"),
        ));
    }
    Ok(found)
}

fn check_bits(bits: u8, what: &str) -> Result<(), ConvertError> {
    if WEIGHT_BITS.contains(&bits) {
        Ok(())
    } else {
        Err(err(
            Kind::UnsupportedQuantization,
            format!("{what}: {bits} weight bits; the runtime's kernels take 8-bit or 4-bit weights"),
        ))
    }
}

/// Whether the runtime has an int4-weight kernel for `op` (W4A8: conv, depthwise conv, fully
/// connected).
fn has_int4_kernel(op: &Op) -> bool {
    matches!(op, Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_))
}

/// The weight bits of every node (0 for a node without quantized weights), from
/// `options.weight_bits` and the per-layer overrides (the last one naming a layer wins).
///
/// With `weight_bits` 4, the layers without an int4 kernel keep 8-bit weights: transposed
/// convolutions, 16x8 layers (`layer_types[i] == I16`: the int4 kernels take int8 inputs) and
/// the weights of recurrent ops; an override asking 4 bits of one of those is an error.
///
/// # Errors
/// `UnsupportedQuantization` for a width other than 8 or 4 (naming it); `InvalidGraph` for an
/// override naming no layer; `Unsupported` for an override on a node without weights or 4 bits
/// on a layer with no int4 kernel.
pub(super) fn weight_bits(
    g: &Graph,
    options: &QuantizeOptions,
    layer_types: &[DType],
) -> Result<Vec<u8>, ConvertError> {
    check_bits(options.weight_bits, "weight bits")?;
    let weighted = |op: &Op| has_int4_kernel(op) || matches!(op, Op::TransposeConv2d(_));
    let int4_ok = |i: usize| has_int4_kernel(&g.nodes[i].op) && layer_types.get(i) != Some(&DType::I16);
    let mut bits = vec![0u8; g.nodes.len()];
    for (i, node) in g.nodes.iter().enumerate() {
        if weighted(&node.op) {
            bits[i] = if options.weight_bits == 4 && int4_ok(i) { 4 } else { 8 };
        }
    }
    for (name, b) in &options.layer_weight_bits {
        check_bits(*b, &format!("layer {name:?}"))?;
        for i in find_layer(g, name, "weight bits of layer")? {
            let node = &g.nodes[i];
            let at = |e: ConvertError| e.at_node(i, node.op.name()).with_node_name(node.name.as_str());
            if !weighted(&node.op) {
                return Err(at(err(
                    Kind::Unsupported,
                    format!(
                        "weight bits of layer {name:?}: a {} has no weights to quantize (conv, depthwise conv, \
                         fully connected and transposed conv have)",
                        node.op.name()
                    ),
                )));
            }
            if *b == 4 && !int4_ok(i) {
                let why = if layer_types.get(i) == Some(&DType::I16) {
                    "it is a 16x8 layer, and the int4-weight kernels take int8 inputs"
                } else {
                    "the runtime has int4-weight kernels for conv, depthwise conv and fully connected only"
                };
                return Err(at(err(Kind::Unsupported, format!("4-bit weights for layer {name:?}: {why}"))));
            }
            bits[i] = *b;
        }
    }
    Ok(bits)
}
