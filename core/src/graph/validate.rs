//! [`Graph::validate`]: every structural invariant the consumers of a graph rely on.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::error::{ConvertError, ConvertErrorKind};
use super::{DType, Graph, Node, Op, Tensor, TensorId, TensorQuant, num_elements};

fn invalid(message: String) -> ConvertError {
    ConvertError::new(ConvertErrorKind::InvalidGraph, message)
}

impl Graph {
    /// Checks the graph, returning the first problem found.
    ///
    /// After `Ok(())`:
    /// - every [`TensorId`] in nodes, inputs and outputs is in range, and every shape's element
    ///   and byte counts fit `usize`;
    /// - constants have data of the tensor's dtype with exactly as many elements as the shape;
    ///   graph inputs and node outputs are not constants; each tensor is produced at most once;
    /// - nodes are in topological order: each input is a graph input, a constant or the output
    ///   of an earlier node, and every graph output is available at the end;
    /// - each node has the inputs and outputs its [`Op`] documents (arity, optional inputs), and
    ///   its declared output shapes equal the shapes inferred from its inputs and attributes
    ///   ([`Op::infer_shapes`]);
    /// - data types agree: outputs have input 0's type except for Quantize (float or integer
    ///   to integer) and Dequantize (integer or f16 to f32); conv, depthwise and fully
    ///   connected take f32 weights and bias with f32 input (or quantized i8 weights: a hybrid
    ///   op), and i8 weights with i8 or i16 input (bias i32 for i8, i32 or i64 for i16); other
    ///   inputs share input 0's type;
    /// - quantization parameters are well formed: as many zero points as scales, scales finite
    ///   and > 0, zero points within the dtype's range, per-channel axis in range with one scale
    ///   per index of that axis.
    ///
    /// # Errors
    /// [`ConvertErrorKind::InvalidGraph`] with the node index, op and node name, the tensor id and
    /// name, and the mismatch (e.g. `output 0 has shape [1, 5, 5, 8], inferred [1, 4, 4, 8]`).
    pub fn validate(&self) -> Result<(), ConvertError> {
        let n_tensors = self.tensors.len();
        for (i, t) in self.tensors.iter().enumerate() {
            validate_tensor(t).map_err(|e| e.with_tensor(i, t.name.as_str()))?;
        }

        let mut available = vec![false; n_tensors];
        let mut produced = vec![false; n_tensors];
        let mut is_input = vec![false; n_tensors];
        for (i, t) in self.tensors.iter().enumerate() {
            if t.is_constant() {
                if let Some(a) = available.get_mut(i) {
                    *a = true;
                }
            }
        }
        for (k, &id) in self.inputs.iter().enumerate() {
            let t = self
                .tensor(id)
                .ok_or_else(|| invalid(format!("graph input {k} is {id}, out of range ({n_tensors} tensors)")))?;
            if t.is_constant() {
                return Err(invalid(format!("graph input {k} is a constant")).with_tensor(id.index(), t.name.as_str()));
            }
            if let Some(a) = available.get_mut(id.index()) {
                *a = true;
            }
            if let Some(a) = is_input.get_mut(id.index()) {
                *a = true;
            }
        }

        for (index, node) in self.nodes.iter().enumerate() {
            self.validate_node(node, &mut available, &mut produced, &is_input)
                .map_err(|e| e.or_at_node(index, node.op.name()).with_node_name(node.name.as_str()))?;
        }

        for (k, &id) in self.outputs.iter().enumerate() {
            if !available.get(id.index()).copied().unwrap_or(false) {
                let name = self.tensor(id).map(|t| t.name.as_str()).unwrap_or("");
                return Err(invalid(format!(
                    "graph output {k} ({id}) is neither a graph input, a constant nor produced by a node"
                ))
                .with_tensor(id.index(), name));
            }
        }
        Ok(())
    }

    fn validate_node(
        &self,
        node: &Node,
        available: &mut [bool],
        produced: &mut [bool],
        is_input: &[bool],
    ) -> Result<(), ConvertError> {
        let arity = node.op.arity();
        if node.outputs.len() != arity.outputs {
            return Err(invalid(format!(
                "{} has {} outputs, expected {}",
                node.op.name(),
                node.outputs.len(),
                arity.outputs
            )));
        }
        // Inputs: in range and already available.
        let mut inputs: Vec<Option<&Tensor>> = Vec::with_capacity(node.inputs.len());
        for (k, t) in node.inputs.iter().enumerate() {
            match t {
                None => inputs.push(None),
                Some(id) => {
                    let tensor = self.tensor(*id).ok_or_else(|| {
                        invalid(format!("input {k} is {id}, out of range ({} tensors)", self.tensors.len()))
                    })?;
                    if !available.get(id.index()).copied().unwrap_or(false) {
                        return Err(invalid(format!(
                            "input {k} ({id}) is not available yet: not a graph input, not a constant, not the output of an earlier node"
                        ))
                        .with_tensor(id.index(), tensor.name.as_str()));
                    }
                    inputs.push(Some(tensor));
                }
            }
        }
        // Outputs: in range, not constant, produced once.
        let mut outputs: Vec<&Tensor> = Vec::with_capacity(node.outputs.len());
        for (k, &id) in node.outputs.iter().enumerate() {
            let tensor = self
                .tensor(id)
                .ok_or_else(|| invalid(format!("output {k} is {id}, out of range ({} tensors)", self.tensors.len())))?;
            let err = |m: String| invalid(m).with_tensor(id.index(), tensor.name.as_str());
            if tensor.is_constant() {
                return Err(err(format!("output {k} ({id}) is a constant")));
            }
            if is_input.get(id.index()).copied().unwrap_or(false) {
                return Err(err(format!("output {k} ({id}) is a graph input")));
            }
            match produced.get_mut(id.index()) {
                Some(p) if !*p => *p = true,
                _ => return Err(err(format!("output {k} ({id}) is produced twice"))),
            }
            outputs.push(tensor);
        }

        // Shapes (also checks the arity and the optional inputs).
        let shapes: Vec<Option<&[usize]>> = inputs.iter().map(|t| t.map(|t| t.shape.as_slice())).collect();
        let inferred = node.op.infer_shapes(&shapes)?;
        for (k, (t, s)) in outputs.iter().zip(inferred.iter()).enumerate() {
            if t.shape != *s {
                let id = node.outputs.get(k).copied().unwrap_or(TensorId(0));
                return Err(invalid(format!("output {k} has shape {:?}, inferred {:?} from the inputs", t.shape, s))
                    .with_tensor(id.index(), t.name.as_str()));
            }
        }

        check_dtypes(node, &inputs, &outputs)?;

        for &id in &node.outputs {
            if let Some(a) = available.get_mut(id.index()) {
                *a = true;
            }
        }
        Ok(())
    }
}

fn validate_tensor(t: &Tensor) -> Result<(), ConvertError> {
    let n = num_elements(&t.shape).ok_or_else(|| invalid(format!("shape {:?} overflows", t.shape)))?;
    if n.checked_mul(t.dtype.size()).is_none() {
        return Err(invalid(format!("shape {:?} of {} overflows in bytes", t.shape, t.dtype)));
    }
    if let Some(d) = &t.data {
        if d.dtype() != t.dtype {
            return Err(invalid(format!("constant data is {}, tensor is {}", d.dtype(), t.dtype)));
        }
        if d.len() != n {
            return Err(invalid(format!("constant has {} elements, shape {:?} needs {n}", d.len(), t.shape)));
        }
    }
    if let Some(q) = &t.quant {
        validate_quant(q, t)?;
    }
    Ok(())
}

fn validate_quant(q: &TensorQuant, t: &Tensor) -> Result<(), ConvertError> {
    if q.scales.is_empty() || q.scales.len() != q.zero_points.len() {
        return Err(invalid(format!(
            "quantization has {} scales and {} zero points",
            q.scales.len(),
            q.zero_points.len()
        )));
    }
    if let Some((k, s)) = q.scales.iter().enumerate().find(|(_, s)| !(s.is_finite() && **s > 0.0)) {
        return Err(invalid(format!("scale {k} is {s}, must be finite and > 0")));
    }
    if let Some((lo, hi)) = t.dtype.int_range() {
        if let Some((k, z)) = q.zero_points.iter().enumerate().find(|(_, z)| i64::from(**z) < lo || i64::from(**z) > hi)
        {
            return Err(invalid(format!("zero point {k} is {z}, outside {} range [{lo}, {hi}]", t.dtype)));
        }
    }
    match q.axis {
        None if q.scales.len() != 1 => Err(invalid(format!("{} scales without a quantized axis", q.scales.len()))),
        Some(axis) => match t.shape.get(axis) {
            Some(&d) if d == q.scales.len() => Ok(()),
            Some(&d) => Err(invalid(format!(
                "{} per-channel scales on axis {axis}, which has extent {d} in shape {:?}",
                q.scales.len(),
                t.shape
            ))),
            None => Err(invalid(format!("quantized axis {axis} out of range for shape {:?}", t.shape))),
        },
        None => Ok(()),
    }
}

fn check_dtypes(node: &Node, inputs: &[Option<&Tensor>], outputs: &[&Tensor]) -> Result<(), ConvertError> {
    let x = inputs.first().copied().flatten().map(|t| t.dtype);
    let y = outputs.first().map(|t| t.dtype);
    let (Some(x), Some(y)) = (x, y) else { return Ok(()) };
    let dtype_of = |i: usize| inputs.get(i).copied().flatten().map(|t| t.dtype);
    let fail = |what: String| Err(invalid(format!("{}: {what}", node.op.name())));
    match &node.op {
        Op::Quantize => {
            if !matches!(x, DType::F32 | DType::I8 | DType::U8 | DType::I16)
                || !matches!(y, DType::I8 | DType::U8 | DType::I16)
            {
                return fail(format!("quantizes f32/i8/u8/i16 to i8/u8/i16, got {x} -> {y}"));
            }
        }
        Op::Dequantize => {
            if !matches!(x, DType::I8 | DType::U8 | DType::I16 | DType::F16) || y != DType::F32 {
                return fail(format!("dequantizes i8/u8/i16/f16 to f32, got {x} -> {y}"));
            }
        }
        Op::Conv2d(_) | Op::DepthwiseConv2d(_) | Op::FullyConnected(_) | Op::TransposeConv2d(_) => {
            let (w, b) = (dtype_of(1), dtype_of(2));
            let hybrid_weights_quantized = inputs.get(1).copied().flatten().is_some_and(|w| w.quant.is_some());
            let ok = match x {
                DType::F32 => {
                    (w == Some(DType::F32) || (w == Some(DType::I8) && hybrid_weights_quantized))
                        && matches!(b, None | Some(DType::F32))
                }
                DType::I8 => {
                    // W4A8: int4 weights with int8 activations (no int4 transpose conv).
                    let int4 = w == Some(DType::I4) && !matches!(node.op, Op::TransposeConv2d(_));
                    (w == Some(DType::I8) || int4) && matches!(b, None | Some(DType::I32))
                }
                DType::I16 => w == Some(DType::I8) && matches!(b, None | Some(DType::I32) | Some(DType::I64)),
                _ => false,
            };
            if !ok || y != x {
                let b = b.map_or(String::from("none"), |b| String::from(b.name()));
                let w = w.map_or("none", |w| w.name());
                return fail(format!(
                    "input {x}, weights {w}, bias {b}, output {y}: expected f32/f32/f32, f32/i8 (quantized)/f32, i8/i8/i32, i8/i4/i32 or i16/i8/i64|i32 with output = input"
                ));
            }
        }
        Op::Prelu if x == DType::I16 => {
            if y != x || dtype_of(1) != Some(DType::I8) {
                return fail(format!("a 16x8 prelu has an i16 input and output and an i8 slope, got output {y}"));
            }
        }
        Op::Lstm(_) => {
            let all = |r: core::ops::Range<usize>, d: DType| r.into_iter().all(|k| dtype_of(k).is_none_or(|t| t == d));
            let ok = match x {
                DType::F32 => all(1..15, DType::F32),
                DType::I8 => all(1..9, DType::I8) && all(9..13, DType::I32) && all(13..15, DType::I8),
                DType::I16 => {
                    all(1..9, DType::I8)
                        && (all(9..13, DType::I64) || all(9..13, DType::I32))
                        && all(13..15, DType::I16)
                }
                _ => false,
            };
            if !ok || y != x {
                return fail(format!(
                    "input {x}, output {y}: expected f32 throughout, i8 with i8 weights and i32 biases, or i16 with i8 weights and i64|i32 biases, output = input"
                ));
            }
        }
        _ => {
            if y != x {
                return fail(format!("output is {y}, input 0 is {x}"));
            }
            for (k, t) in inputs.iter().enumerate().skip(1) {
                if let Some(t) = t {
                    if t.dtype != x {
                        return fail(format!("input {k} is {}, input 0 is {x}", t.dtype));
                    }
                }
            }
        }
    }
    Ok(())
}
