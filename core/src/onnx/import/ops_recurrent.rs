//! ONNX `LSTM` and `GRU`. `LSTM` (forward, default activations) → [`Op::Lstm`]: the stacked `W`, `R`, `B` split
//! into the four gates and reordered from ONNX's `i, o, f, c` to TFLite's `i, f, c, o`, the two
//! bias halves summed (`Wb + Rb`); `Y` is the op's output reshaped to ONNX's
//! `[seq, 1, batch, hidden]` (`layout = 0`) or `[batch, seq, 1, hidden]` (`layout = 1`).
//!
//! Supported: `direction = forward`, activations `Sigmoid, Tanh, Tanh`, no `clip`, no peephole
//! `P`, `input_forget = 0`, `sequence_lens` absent or all equal to the sequence length, optional
//! `initial_h` / `initial_c`; the outputs `Y_h` and `Y_c` only where nothing reads them (`Y_h` is
//! also accepted for a one-step sequence, where it is `Y` reshaped).

use super::*;

/// ONNX's gate order in `W`, `R`, `B` is `i, o, f, c`; TFLite gate `g` is ONNX block `ONNX_OF[g]`.
const ONNX_OF: [usize; 4] = [0, 2, 3, 1];

impl Builder {
    pub(super) fn lstm(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let attrs = ctx.attrs();
        let direction = ctx.a(attrs.string("direction"))?.unwrap_or_else(|| "forward".to_string());
        if direction != "forward" {
            return Err(ctx.unsupported(format!("LSTM direction {direction:?}: only forward LSTMs are supported")));
        }
        if ctx.a(attrs.float("clip"))?.is_some() {
            return Err(ctx.unsupported("LSTM with clip (of the gate inputs) is not supported"));
        }
        if ctx.a(attrs.int_or("input_forget", 0))? != 0 {
            return Err(ctx.unsupported("LSTM with input_forget = 1 (coupled gates) is not supported"));
        }
        if let Some(a) = ctx.node.attribute.iter().find(|a| a.name.as_deref() == Some("activations")) {
            let names: Vec<&[u8]> = a.strings.iter().map(|s| s.as_slice()).collect();
            if names != [&b"Sigmoid"[..], b"Tanh", b"Tanh"] {
                return Err(ctx.unsupported("LSTM activations other than Sigmoid, Tanh, Tanh are not supported"));
            }
        }
        let layout = ctx.a(attrs.int_or("layout", 0))?;
        if !(0..=1).contains(&layout) {
            return Err(ctx.err(Kind::Malformed, format!("LSTM layout {layout}")));
        }
        if ctx.node.input.get(7).is_some_and(|n| !n.is_empty()) {
            return Err(ctx.unsupported("LSTM with peephole weights (P) is not supported"));
        }
        let x = self.act_input(ctx, 0)?;
        let xs = self.onnx_shape(&x);
        let (seq, batch, n_in) = match (layout, xs.as_slice()) {
            (0, &[s, b, i]) => (s, b, i),
            (_, &[b, s, i]) => (s, b, i),
            _ => return Err(ctx.err(Kind::Malformed, format!("LSTM input of shape {xs:?}, expected rank 3"))),
        };
        let w = self.const_input(ctx, 1, "the weight W")?.ok_or_else(|| ctx.err(Kind::Malformed, "LSTM without W"))?;
        let r = self.const_input(ctx, 2, "the weight R")?.ok_or_else(|| ctx.err(Kind::Malformed, "LSTM without R"))?;
        let hidden = match w.shape.as_slice() {
            &[1, h4, i] if h4 % 4 == 0 && h4 > 0 && i == n_in => h4 / 4,
            s => {
                return Err(
                    ctx.err(Kind::Malformed, format!("LSTM W of shape {s:?}, expected [1, 4 x hidden, {n_in}]"))
                );
            }
        };
        if let Some(h) = ctx.a(attrs.int("hidden_size"))? {
            if h as usize != hidden {
                return Err(ctx.err(Kind::Malformed, format!("LSTM hidden_size {h} but W holds {hidden}")));
            }
        }
        if r.shape != [1, 4 * hidden, hidden] {
            return Err(ctx.err(Kind::Malformed, format!("LSTM R of shape {:?}", r.shape)));
        }
        let b = self.const_input(ctx, 3, "the bias B")?;
        if let Some(b) = &b {
            if b.shape != [1, 8 * hidden] {
                return Err(ctx.err(Kind::Malformed, format!("LSTM B of shape {:?}", b.shape)));
            }
        }
        if let Some(lens) = self.const_input(ctx, 4, "sequence_lens")? {
            if lens.as_i64()?.iter().any(|&l| l as usize != seq) {
                return Err(ctx.unsupported("LSTM sequence_lens shorter than the sequence are not supported"));
            }
        }
        let (wv, rv) = (w.as_f32()?, r.as_f32()?);
        let bv: Vec<f32> = match &b {
            Some(b) => b.as_f32()?.to_vec(),
            None => vec![0.0; 8 * hidden],
        };
        let name = ctx.name().to_string();
        let mut inputs: Vec<Option<TensorId>> = vec![Some(self.plain(&x, &format!("{name}/x"))?)];
        let gate_names = ["input", "forget", "cell", "output"];
        for (what, v, cols) in [("W", wv, n_in), ("R", rv, hidden)] {
            for (g, &o) in ONNX_OF.iter().enumerate() {
                let block = v.get(o * hidden * cols..(o + 1) * hidden * cols).unwrap_or(&[]).to_vec();
                let k = Konst::f32(vec![hidden, cols], block);
                inputs.push(Some(self.const_tensor(ctx, &k, &format!("{name}/{what}_{}", gate_names[g]))?));
            }
        }
        for (g, &o) in ONNX_OF.iter().enumerate() {
            let wb = bv.get(o * hidden..(o + 1) * hidden).unwrap_or(&[]);
            let rb = bv.get((4 + o) * hidden..(5 + o) * hidden).unwrap_or(&[]);
            let sum: Vec<f32> = wb.iter().zip(rb).map(|(a, b)| a + b).collect();
            let k = Konst::f32(vec![hidden], sum);
            inputs.push(Some(self.const_tensor(ctx, &k, &format!("{name}/B_{}", gate_names[g]))?));
        }
        for (k, what) in [(5, "initial_h"), (6, "initial_c")] {
            let id = match self.input(ctx, k)? {
                None => None,
                // A zero state (a model's state input fixed to zeros) is the default: dropped.
                Some(Value::Const(c)) if c.as_f32().is_ok_and(|v| v.iter().all(|&x| x == 0.0)) => None,
                Some(Value::Const(c)) => Some(self.const_tensor(ctx, &c, &format!("{name}/{what}"))?),
                Some(Value::Act(a)) => Some(self.plain(&a, &format!("{name}/{what}"))?),
            };
            if let Some(id) = id {
                let s = self.shape(id);
                let n = batch * hidden;
                // [1, batch, hidden] with layout 0, [batch, 1, hidden] with layout 1: batch-major
                // rows either way.
                if s.iter().product::<usize>() != n {
                    return Err(ctx.err(Kind::Malformed, format!("LSTM {what} of shape {s:?}")));
                }
            }
            inputs.push(id);
        }
        while inputs.last() == Some(&None) {
            inputs.pop();
        }
        self.check_unused_output(ctx, 2, "Y_c")?;
        if seq != 1 {
            self.check_unused_output(ctx, 1, "Y_h")?;
        }
        let op = Op::Lstm(crate::graph::Lstm { time_major: layout == 0, cell_clip: 0.0, cell_scale: None });
        let y = self.emit(ctx, &name, op, inputs, &format!("{name}/y"))?;
        // ONNX's Y has a num_directions axis of extent 1: a free reshape.
        let y_shape = if layout == 0 { vec![seq, 1, batch, hidden] } else { vec![batch, seq, 1, hidden] };
        let yr = self.emit(
            ctx,
            &format!("{name}/Y"),
            Op::Reshape { new_shape: y_shape.clone() },
            vec![Some(y)],
            &ctx.out_name(0),
        )?;
        self.set(ctx, 0, Value::Act(Act { id: yr, perm: layout::identity(4) }));
        if seq == 1 && ctx.node.output.get(1).is_some_and(|n| !n.is_empty()) {
            let h_shape = if layout == 0 { vec![1, batch, hidden] } else { vec![batch, 1, hidden] };
            let h = self.emit(
                ctx,
                &format!("{name}/Y_h"),
                Op::Reshape { new_shape: h_shape },
                vec![Some(y)],
                &ctx.out_name(1),
            )?;
            self.set(ctx, 1, Value::Act(Act { id: h, perm: layout::identity(3) }));
        }
        Ok(())
    }
}

impl Builder {
    /// ONNX `GRU` (forward, activations `Sigmoid, Tanh`, both `linear_before_reset` values) →
    /// [`Op::Gru`], gates kept in ONNX's order `z, r, h`; `Y` and `Y_h` as for `LSTM`.
    pub(super) fn gru(&mut self, ctx: &Ctx) -> Result<(), ConvertError> {
        let attrs = ctx.attrs();
        let direction = ctx.a(attrs.string("direction"))?.unwrap_or_else(|| "forward".to_string());
        if direction != "forward" {
            return Err(ctx.unsupported(format!("GRU direction {direction:?}: only forward GRUs are supported")));
        }
        if ctx.a(attrs.float("clip"))?.is_some() {
            return Err(ctx.unsupported("GRU with clip (of the gate inputs) is not supported"));
        }
        if let Some(a) = ctx.node.attribute.iter().find(|a| a.name.as_deref() == Some("activations")) {
            let names: Vec<&[u8]> = a.strings.iter().map(|s| s.as_slice()).collect();
            if names != [&b"Sigmoid"[..], b"Tanh"] {
                return Err(ctx.unsupported("GRU activations other than Sigmoid, Tanh are not supported"));
            }
        }
        let layout = ctx.a(attrs.int_or("layout", 0))?;
        if !(0..=1).contains(&layout) {
            return Err(ctx.err(Kind::Malformed, format!("GRU layout {layout}")));
        }
        let linear_before_reset = ctx.a(attrs.int_or("linear_before_reset", 0))? != 0;
        let x = self.act_input(ctx, 0)?;
        let xs = self.onnx_shape(&x);
        let (seq, batch, n_in) = match (layout, xs.as_slice()) {
            (0, &[s, b, i]) => (s, b, i),
            (_, &[b, s, i]) => (s, b, i),
            _ => return Err(ctx.err(Kind::Malformed, format!("GRU input of shape {xs:?}, expected rank 3"))),
        };
        let w = self.const_input(ctx, 1, "the weight W")?.ok_or_else(|| ctx.err(Kind::Malformed, "GRU without W"))?;
        let r = self.const_input(ctx, 2, "the weight R")?.ok_or_else(|| ctx.err(Kind::Malformed, "GRU without R"))?;
        let hidden = match w.shape.as_slice() {
            &[1, h3, i] if h3 % 3 == 0 && h3 > 0 && i == n_in => h3 / 3,
            s => {
                return Err(ctx.err(Kind::Malformed, format!("GRU W of shape {s:?}, expected [1, 3 x hidden, {n_in}]")));
            }
        };
        if r.shape != [1, 3 * hidden, hidden] {
            return Err(ctx.err(Kind::Malformed, format!("GRU R of shape {:?}", r.shape)));
        }
        let b = self.const_input(ctx, 3, "the bias B")?;
        if let Some(b) = &b {
            if b.shape != [1, 6 * hidden] {
                return Err(ctx.err(Kind::Malformed, format!("GRU B of shape {:?}", b.shape)));
            }
        }
        if let Some(lens) = self.const_input(ctx, 4, "sequence_lens")? {
            if lens.as_i64()?.iter().any(|&l| l as usize != seq) {
                return Err(ctx.unsupported("GRU sequence_lens shorter than the sequence are not supported"));
            }
        }
        let (wv, rv) = (w.as_f32()?, r.as_f32()?);
        let bv: Vec<f32> = match &b {
            Some(b) => b.as_f32()?.to_vec(),
            None => vec![0.0; 6 * hidden],
        };
        let name = ctx.name().to_string();
        let mut inputs: Vec<Option<TensorId>> = vec![Some(self.plain(&x, &format!("{name}/x"))?)];
        let gates = ["z", "r", "h"];
        for (what, v, cols) in [("W", wv, n_in), ("R", rv, hidden)] {
            for (g, gate) in gates.iter().enumerate() {
                let block = v.get(g * hidden * cols..(g + 1) * hidden * cols).unwrap_or(&[]).to_vec();
                let k = Konst::f32(vec![hidden, cols], block);
                inputs.push(Some(self.const_tensor(ctx, &k, &format!("{name}/{what}_{gate}"))?));
            }
        }
        for (half, what) in [(0, "Wb"), (1, "Rb")] {
            for (g, gate) in gates.iter().enumerate() {
                let o = 3 * half + g;
                let k = Konst::f32(vec![hidden], bv.get(o * hidden..(o + 1) * hidden).unwrap_or(&[]).to_vec());
                inputs.push(Some(self.const_tensor(ctx, &k, &format!("{name}/{what}_{gate}"))?));
            }
        }
        let h0 = match self.input(ctx, 5)? {
            None => None,
            Some(Value::Const(c)) if c.as_f32().is_ok_and(|v| v.iter().all(|&x| x == 0.0)) => None,
            Some(Value::Const(c)) => Some(self.const_tensor(ctx, &c, &format!("{name}/initial_h"))?),
            Some(Value::Act(a)) => Some(self.plain(&a, &format!("{name}/initial_h"))?),
        };
        if let Some(id) = h0 {
            let s = self.shape(id);
            if s.iter().product::<usize>() != batch * hidden {
                return Err(ctx.err(Kind::Malformed, format!("GRU initial_h of shape {s:?}")));
            }
            inputs.push(Some(id));
        }
        if seq != 1 {
            self.check_unused_output(ctx, 1, "Y_h")?;
        }
        let op = Op::Gru(crate::graph::Gru { time_major: layout == 0, linear_before_reset });
        let y = self.emit(ctx, &name, op, inputs, &format!("{name}/y"))?;
        let y_shape = if layout == 0 { vec![seq, 1, batch, hidden] } else { vec![batch, seq, 1, hidden] };
        let yr =
            self.emit(ctx, &format!("{name}/Y"), Op::Reshape { new_shape: y_shape }, vec![Some(y)], &ctx.out_name(0))?;
        self.set(ctx, 0, Value::Act(Act { id: yr, perm: layout::identity(4) }));
        if seq == 1 && ctx.node.output.get(1).is_some_and(|n| !n.is_empty()) {
            let h_shape = if layout == 0 { vec![1, batch, hidden] } else { vec![batch, 1, hidden] };
            let h = self.emit(
                ctx,
                &format!("{name}/Y_h"),
                Op::Reshape { new_shape: h_shape },
                vec![Some(y)],
                &ctx.out_name(1),
            )?;
            self.set(ctx, 1, Value::Act(Act { id: h, perm: layout::identity(3) }));
        }
        Ok(())
    }
}
