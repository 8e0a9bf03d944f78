//! [`unroll_gru`]: a GRU in ops the int8 runtime has, one group of ops per time step.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::graph::{
    ConstData, ConvertError, ConvertErrorKind as Kind, DType, FullyConnected, FusedActivation, Graph, Gru, Node, Op,
    StridedSlice, Tensor, TensorId,
};

/// The most inputs of one int8 concatenation.
const MAX_CONCAT_INPUTS: usize = 16;

/// Rewrites each [`Op::Gru`] node as the ops that compute it, unrolled over its time steps, so
/// that every piece runs on an int8 kernel that is bit-exact with TFLite Micro's and every
/// intermediate gets its own calibrated quantization (as TFLite's converter lowers a Keras GRU):
///
/// ```text
/// x_g  = FC(x, W_g, Wb_g [+ Rb_g for z, r])        for the gates g = z, r, n, over all steps
/// z    = σ(x_z[t] + FC(h, R_z))
/// r    = σ(x_r[t] + FC(h, R_r))
/// n    = tanh(x_n[t] + r · FC(h, R_n, Rb_n))        linear_before_reset = 1 (PyTorch, Keras)
///      = tanh(x_n[t] + FC(r · h, R_n, Rb_n))        linear_before_reset = 0
/// h    = n + z · (h − n)                            (= (1 − z) · n + z · h)
/// y    = the h of every step, concatenated
/// ```
///
/// `h` starts from the node's initial state (a graph input carries the state between calls, as
/// in ONNX Runtime), or zeros: then the first step drops the terms that vanish (`FC(0, R)`,
/// `z · (0 − n)` becomes `n − z · n`), which would otherwise be constant zeros with no range to
/// quantize. Returns the number of GRU nodes rewritten. (Not part of
/// [`super::optimize`]: a float graph keeps the single op; the quantizer runs this first.)
///
/// # Errors
/// `InvalidGraph` for a GRU node whose operands do not have the shapes of [`Op::Gru`].
pub fn unroll_gru(g: &mut Graph) -> Result<usize, ConvertError> {
    let mut n = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        let Op::Gru(gru) = g.nodes[i].op else {
            i += 1;
            continue;
        };
        let nodes = unrolled(g, i, gru)?;
        let k = nodes.len();
        g.nodes.splice(i..=i, nodes);
        i += k;
        n += 1;
    }
    Ok(n)
}

/// The ops of GRU node `index`, in order; the last one writes the node's output tensor.
fn unrolled(g: &mut Graph, index: usize, gru: Gru) -> Result<Vec<Node>, ConvertError> {
    let node = g.nodes[index].clone();
    let bad = |what: &str| ConvertError::new(Kind::InvalidGraph, format!("GRU {:?}: {what}", node.name));
    let operand = |k: usize| node.input(k).ok_or_else(|| bad(&format!("operand {k} is missing")));
    let (x, y) = (operand(0)?, node.output(0).ok_or_else(|| bad("no output"))?);
    let shape_of = |g: &Graph, t: TensorId| g.tensor(t).map(|t| t.shape.clone()).unwrap_or_default();
    let f32_of = |g: &Graph, t: TensorId| -> Result<Vec<f32>, ConvertError> {
        g.tensor(t).and_then(|t| t.data.as_ref()).and_then(ConstData::as_f32).map(<[f32]>::to_vec).ok_or_else(|| {
            ConvertError::new(
                Kind::InvalidGraph,
                format!("GRU {:?}: a weight or bias is not an f32 constant", node.name),
            )
        })
    };
    let [outer, inner, _] = <[usize; 3]>::try_from(shape_of(g, x)).map_err(|_| bad("the input is not 3-D"))?;
    let hidden = shape_of(g, operand(1)?).first().copied().ok_or_else(|| bad("W_z is not 2-D"))?;
    let (batch, time) = if gru.time_major { (inner, outer) } else { (outer, inner) };
    let name = node.name.clone();
    let none = FusedActivation::None;
    let mut out: Vec<Node> = Vec::new();
    let act = |g: &mut Graph, what: String, shape: Vec<usize>| {
        g.add_tensor(Tensor::new(format!("{name}/{what}"), shape, DType::F32))
    };

    // The input side of the three gates over all steps, with the biases that add to it.
    let mut x_gate = [x; 3];
    for gate in 0..3 {
        let mut bias = f32_of(g, operand(7 + gate)?)?;
        if gate < 2 {
            for (b, r) in bias.iter_mut().zip(f32_of(g, operand(10 + gate)?)?) {
                *b += r;
            }
        }
        let gname = ["z", "r", "n"][gate];
        let b = g.add_tensor(Tensor::constant(format!("{name}/x_{gname}/bias"), vec![hidden], ConstData::F32(bias)))?;
        let t = act(g, format!("x_{gname}"), vec![outer, inner, hidden])?;
        let fc = Op::FullyConnected(FullyConnected { activation: none, keep_num_dims: true });
        out.push(Node::new(format!("{name}/x_{gname}"), fc, vec![Some(x), Some(operand(1 + gate)?), Some(b)], vec![t]));
        x_gate[gate] = t;
    }

    // The initial state, [batch, hidden].
    // The initial state, [batch, hidden]; `None`: zeros (the first step is simpler).
    let mut h = match node.input(13) {
        Some(h0) if shape_of(g, h0) == [batch, hidden] => Some(h0),
        Some(h0) => {
            let t = act(g, String::from("h0"), vec![batch, hidden])?;
            out.push(Node::new(
                format!("{name}/h0"),
                Op::Reshape { new_shape: vec![batch, hidden] },
                vec![Some(h0)],
                vec![t],
            ));
            Some(t)
        }
        None => None,
    };
    let rb_n = operand(12)?;
    let rb_n_is_zero = f32_of(g, rb_n)?.iter().all(|&v| v == 0.0);
    let fc2 = |bias: Option<TensorId>, x: TensorId, w: TensorId, y: TensorId, what: String| {
        let mut inputs = vec![Some(x), Some(w)];
        if bias.is_some() {
            inputs.push(bias);
        }
        Node::new(what, Op::FullyConnected(FullyConnected { activation: none, keep_num_dims: false }), inputs, vec![y])
    };
    let bin = |op: Op, a: TensorId, b: TensorId, y: TensorId, what: String| {
        Node::new(what, op, vec![Some(a), Some(b)], vec![y])
    };
    let (add, sub, mul) = (Op::Add { activation: none }, Op::Sub { activation: none }, Op::Mul { activation: none });
    let bh = vec![batch, hidden];
    let mut states = Vec::with_capacity(time);
    for t in 0..time {
        let p = format!("{name}/t{t}");
        let step = |g: &mut Graph, what: &str| {
            g.add_tensor(Tensor::new(format!("{p}/{what}"), vec![batch, hidden], DType::F32))
        };
        // x_g[t]: [batch, hidden].
        let mut xt = [x; 3];
        for gate in 0..3 {
            let s = step(g, ["x_z", "x_r", "x_n"][gate])?;
            let (starts, counts) = if gru.time_major {
                (vec![t, 0, 0], vec![1, batch, hidden])
            } else {
                (vec![0, t, 0], vec![batch, 1, hidden])
            };
            let mut slice = StridedSlice::new(starts, vec![1, 1, 1], counts);
            slice.shape = bh.clone();
            out.push(Node::new(
                format!("{p}/x_{}", ["z", "r", "n"][gate]),
                Op::StridedSlice(slice),
                vec![Some(x_gate[gate])],
                vec![s],
            ));
            xt[gate] = s;
        }
        let sigmoid_gate = |g: &mut Graph, out: &mut Vec<Node>, gate: usize| -> Result<TensorId, ConvertError> {
            let gname = ["z", "r"][gate];
            let v = step(g, gname)?;
            let pre = match h {
                Some(h) => {
                    let (rh, pre) = (step(g, &format!("h_{gname}"))?, step(g, &format!("pre_{gname}"))?);
                    out.push(fc2(None, h, operand(4 + gate)?, rh, format!("{p}/h_{gname}")));
                    out.push(bin(add.clone(), xt[gate], rh, pre, format!("{p}/pre_{gname}")));
                    pre
                }
                None => xt[gate],
            };
            out.push(Node::new(format!("{p}/{gname}"), Op::Logistic, vec![Some(pre)], vec![v]));
            Ok(v)
        };
        let z = sigmoid_gate(g, &mut out, 0)?;
        let r = sigmoid_gate(g, &mut out, 1)?;
        let n = step(g, "n")?;
        // The recurrent part of the candidate's pre-activation (none from a zero state without
        // R's bias: a constant zero would have no quantization range).
        let gated = match h {
            Some(h) => {
                let (hn, gated) = (step(g, "h_n")?, step(g, "gated_n")?);
                if gru.linear_before_reset {
                    out.push(fc2(Some(rb_n), h, operand(6)?, hn, format!("{p}/h_n")));
                    out.push(bin(mul.clone(), r, hn, gated, format!("{p}/gated_n")));
                } else {
                    out.push(bin(mul.clone(), r, h, hn, format!("{p}/r_h")));
                    out.push(fc2(Some(rb_n), hn, operand(6)?, gated, format!("{p}/gated_n")));
                }
                Some(gated)
            }
            None if rb_n_is_zero => None,
            None if gru.linear_before_reset => {
                let gated = step(g, "gated_n")?;
                out.push(bin(mul.clone(), r, rb_n, gated, format!("{p}/gated_n")));
                Some(gated)
            }
            None => Some(rb_n),
        };
        let pre = match gated {
            Some(gated) => {
                let pre = step(g, "pre_n")?;
                out.push(bin(add.clone(), xt[2], gated, pre, format!("{p}/pre_n")));
                pre
            }
            None => xt[2],
        };
        out.push(Node::new(format!("{p}/n"), Op::Tanh, vec![Some(pre)], vec![n]));
        let h_new = step(g, "h")?;
        match h {
            Some(h) => {
                let (d, e) = (step(g, "h_minus_n")?, step(g, "z_h_minus_n")?);
                out.push(bin(sub.clone(), h, n, d, format!("{p}/h_minus_n")));
                out.push(bin(mul.clone(), z, d, e, format!("{p}/z_h_minus_n")));
                out.push(bin(add.clone(), n, e, h_new, format!("{p}/h")));
            }
            None => {
                // (1 - z) · n = n - z · n.
                let e = step(g, "z_n")?;
                out.push(bin(mul.clone(), z, n, e, format!("{p}/z_n")));
                out.push(bin(sub.clone(), n, e, h_new, format!("{p}/h")));
            }
        }
        h = Some(h_new);
        states.push(h_new);
    }

    // y: the states in the input's layout.
    let y_shape = vec![outer, inner, hidden];
    // Concatenated in groups of at most 16 (the int8 kernel's limit), level by level: each
    // piece holds `span` steps.
    let axis = if gru.time_major { 0 } else { 1 };
    let piece_shape =
        |steps: usize| if gru.time_major { vec![steps * batch, hidden] } else { vec![batch, steps * hidden] };
    let (mut pieces, mut span, mut level) = (states, 1, 0);
    while pieces.len() > 1 {
        let mut next = Vec::with_capacity(pieces.len().div_ceil(MAX_CONCAT_INPUTS));
        for (k, group) in pieces.chunks(MAX_CONCAT_INPUTS).enumerate() {
            if let [only] = group {
                next.push(*only);
                continue;
            }
            let steps = (group.len() * span).min(time - k * MAX_CONCAT_INPUTS * span);
            let what =
                if pieces.len() <= MAX_CONCAT_INPUTS { String::from("states") } else { format!("states_{level}_{k}") };
            let t = act(g, what.clone(), piece_shape(steps))?;
            let inputs = group.iter().map(|&p| Some(p)).collect();
            out.push(Node::new(
                format!("{name}/{what}"),
                Op::Concatenation { axis, activation: none },
                inputs,
                vec![t],
            ));
            next.push(t);
        }
        pieces = next;
        span *= MAX_CONCAT_INPUTS;
        level += 1;
    }
    let joined = pieces.first().copied().ok_or_else(|| bad("an empty sequence"))?;
    out.push(Node::new(format!("{name}/y"), Op::Reshape { new_shape: y_shape }, vec![Some(joined)], vec![y]));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{G, assert_same_function, values};
    use super::*;

    /// A GRU node with seeded operands (weights scaled to keep the gates away from saturation).
    fn gru_graph(time_major: bool, linear_before_reset: bool, initial: bool, [outer, inner]: [usize; 2]) -> Graph {
        let (hidden, n_in) = (5, 3);
        let batch = if time_major { inner } else { outer };
        let mut b = G::new();
        let x = b.input(&[outer, inner, n_in]);
        let h0 = initial.then(|| b.input(&[1, batch, hidden]));
        let mut inputs = vec![Some(x)];
        let mut seed = 100;
        let mut c = |b: &mut G, shape: &[usize]| {
            seed += 1;
            let v = values(shape.iter().product(), seed).iter().map(|v| v * 0.4).collect();
            Some(b.constant(shape, v))
        };
        for _ in 0..3 {
            inputs.push(c(&mut b, &[hidden, n_in]));
        }
        for _ in 0..3 {
            inputs.push(c(&mut b, &[hidden, hidden]));
        }
        for _ in 0..6 {
            inputs.push(c(&mut b, &[hidden]));
        }
        if let Some(h0) = h0 {
            inputs.push(Some(h0));
        }
        let y = b.node(Op::Gru(Gru { time_major, linear_before_reset }), &inputs);
        b.output(y)
    }

    #[test]
    fn same_function_in_every_form() {
        for time_major in [false, true] {
            for linear_before_reset in [false, true] {
                for initial in [false, true] {
                    for dims in [[2, 4], [3, 1], [1, 2], [1, 17], [35, 1]] {
                        for zero_rb_n in [false, true] {
                            let mut before = gru_graph(time_major, linear_before_reset, initial, dims);
                            if zero_rb_n {
                                let rb_n = before.nodes[0].input(12).unwrap();
                                before.tensor_mut(rb_n).unwrap().data = Some(ConstData::F32(vec![0.0; 5]));
                            }
                            let mut g = before.clone();
                            assert_eq!(unroll_gru(&mut g).unwrap(), 1);
                            assert!(g.nodes.iter().all(|n| !matches!(n.op, Op::Gru(_))));
                            assert_same_function(&before, &g, 1e-5);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn counts_the_ops_of_a_step() {
        let mut g = gru_graph(false, true, false, [1, 4]);
        unroll_gru(&mut g).unwrap();
        let count = |name: &str| g.nodes.iter().filter(|n| n.op.name() == name).count();
        // 3 input-side FCs, and per step: 3 slices, 3 recurrent FCs (none in the first step
        // from a zero state), 2 σ, 1 tanh.
        assert_eq!(count("FullyConnected"), 3 + 3 * 3);
        assert_eq!(count("StridedSlice"), 4 * 3);
        assert_eq!(count("Logistic"), 4 * 2);
        assert_eq!(count("Tanh"), 4);
        assert_eq!(count("Concatenation"), 1);
    }
}
