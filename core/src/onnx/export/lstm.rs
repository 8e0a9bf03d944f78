//! The int8 LSTM ([`Op::Lstm`], TFLite Micro's integer LSTM: `kernels/lstm.rs`) written exactly:
//! every time step unrolled into ONNX ops that compute the kernel's integers, with the state
//! carried between calls through graph inputs and outputs.
//!
//! Per time step, for all batch rows at once (`[batch, 1, ·]` tensors of exact integers in
//! `double`):
//!
//! | stage | ONNX |
//! |---|---|
//! | input products `W x + b` of every step | one `MatMul` of the integers `x − zp` by the int8 weights `[in, 4·cell]` plus the int32 bias, before the first step; step `t` reads its row with `Gather` |
//! | recurrent product `R (h − zp_h)` | `MatMul` by the int8 weights `[cell, 4·cell]` |
//! | requantization to Q3.12 | `MultiplyByQuantizedMultiplier` per gate with the doubling high product in `int64` (`acc · m + 2^30`, then `Mod` / `Div` by `2^31`: a floor, exact where a `double` product of a 31-bit multiplier by a 31-bit accumulator is not), the rounding shift in `double` as `exact.rs` does it, `Clip` to int16 |
//! | σ / tanh of the gates | `Gather` from the kernel's functions tabulated on all 65536 int16 inputs ([`sigmoid_s16`], [`tanh_s16`]; the cell gate's index offset into the tanh half of one table) |
//! | `f · c`, `i · g`, `o · tanh(c)` | `Mul` of the integers, requantized as above, clamped; `tanh(c)` read from the kernel's table for the cell state's scale |
//! | cell clip | `Clip` to `±clip` (when the LSTM has one) |
//!
//! The output (every step's int8 hidden state) is the `Concat` of the steps along the time axis.
//!
//! # State between calls
//! The `.mq` keeps each LSTM's hidden and cell state between invokes (TFLite Micro's variable
//! tensors): a stream is fed in consecutive calls. The export carries it through four tensors
//! per LSTM node, named after the node (its name, else its output's):
//! - inputs `<node>/h_in` (int8, the hidden state's int8 values: its scale and zero point are the
//!   LSTM output's) and `<node>/c_in` (int16, the cell state at its power-of-two scale), both
//!   `[batch, cell]`;
//! - outputs `<node>/h_out`, `<node>/c_out`, the state after the call's last step, after the
//!   model's own outputs.
//!
//! A caller feeds the `*_out` of one call to the `*_in` of the next. The state the `.mq` starts
//! from (and [`Interpreter::reset_state`](crate::interp::Interpreter::reset_state) returns to)
//! is real zero: the hidden state at its zero point, the cell state 0. Each state input has an
//! initializer of its name holding that start state (ONNX's default value of an input): a call
//! that does not feed them starts from it.

use super::*;
use crate::kernels::lstm::{LSTM_GATES, LstmDims, LstmParams, LstmQuant, TableInputScaling, sigmoid_s16, tanh_s16};
use crate::requant::QuantizedMultiplier;

const I16_RANGE: (f64, f64) = (i16::MIN as f64, i16::MAX as f64);

impl<'g> Exporter<'g> {
    /// Writes int8 LSTM `node` exactly (the module docs).
    pub(super) fn exact_lstm(
        &mut self,
        node: &Node,
        nname: &str,
        attrs: &crate::graph::Lstm,
    ) -> Result<(), ConvertError> {
        let missing = |k: usize| ConvertError::new(Kind::InvalidGraph, format!("LSTM input {k} is missing"));
        let xid = node.input(0).ok_or_else(|| missing(0))?;
        let y = node.output(0).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, "an LSTM without output"))?;
        if node.input(13).is_some() || node.input(14).is_some() {
            return Err(err(format!("{nname}: an integer LSTM starts from the zero state: no initial state input")));
        }
        let cell_scale = attrs
            .cell_scale
            .ok_or_else(|| err(format!("{nname}: the LSTM has no cell state scale (left unquantized)")))?;
        let (xq, yq) = (self.tq(xid)?, self.tq(y)?);
        let xs = self.tensor(xid)?.shape.clone();
        let [outer, inner, n_in] = xs[..] else {
            return Err(ConvertError::new(Kind::InvalidGraph, "LSTM input must be 3-D"));
        };
        // Weights [4, cell, ·] (gate-major) and biases [4, cell], as lower_recurrent.rs stacks them.
        let mut scales = [[0f32; LSTM_GATES]; 2];
        let mut stacked: [Vec<i8>; 2] = [Vec::new(), Vec::new()];
        for (kind, first) in [(0usize, 1usize), (1, 5)] {
            for (g, scale) in scales[kind].iter_mut().enumerate() {
                let t = self.tensor(node.input(first + g).ok_or_else(|| missing(first + g))?)?;
                *scale = match t.quant.as_ref().map(|q| q.scales.as_slice()) {
                    Some(&[s]) => s,
                    _ => return Err(err(format!("{nname}: LSTM weights '{}' must be quantized per tensor", t.name))),
                };
                match &t.data {
                    Some(ConstData::I8(v)) => stacked[kind].extend_from_slice(v),
                    _ => return Err(err(format!("{nname}: LSTM weights '{}' must be int8", t.name))),
                }
            }
        }
        let mut bias = Vec::new();
        for g in 0..LSTM_GATES {
            let t = self.tensor(node.input(9 + g).ok_or_else(|| missing(9 + g))?)?;
            match &t.data {
                Some(ConstData::I32(v)) => bias.extend(v.iter().map(|&b| f64::from(b))),
                _ => return Err(err(format!("{nname}: LSTM bias '{}' must be constant int32", t.name))),
            }
        }
        let n_cell = bias.len() / LSTM_GATES;
        let (batch, time) = if attrs.time_major { (inner, outer) } else { (outer, inner) };
        let dims = LstmDims { batch, time, input: n_in, cell: n_cell, time_major: attrs.time_major };
        let quant = LstmQuant {
            input: xq,
            input_weight_scales: scales[0],
            recurrent_weight_scales: scales[1],
            hidden: yq,
            cell_scale,
            cell_clip: attrs.cell_clip,
        };
        let p = LstmParams::prepare_s8(dims, &quant).map_err(|e| err(format!("exact export: {e:?}")))?;
        let [wi, wr] = stacked;
        if wi.len() != dims.input_weights_len() || wr.len() != dims.recurrent_weights_len() {
            return Err(ConvertError::new(Kind::InvalidGraph, "LSTM weights do not match the input and cell sizes"));
        }
        let base = self.names[y.index()].clone();
        let to_double = vec![attr_int("to", i64::from(dt::DOUBLE))];

        // The input products of every step: [outer, inner, 4, cell], requantized to Q3.12.
        let x = self.act(xid)?;
        let x = self.in_order(&x, &layout::identity(3));
        let xi = self.integers(&x.name, xq.scale, &format!("{base}/input"));
        let xd = self.op1("Cast", &format!("{base}/input_double"), vec![xi], to_double.clone());
        let w_in = self.int8_matrix(&wi, 4 * n_cell, n_in, &format!("{nname}/input_weights"));
        let w_rec = self.int8_matrix(&wr, 4 * n_cell, n_cell, &format!("{nname}/recurrent_weights"));
        let acc = self.op1("MatMul", &format!("{base}/input_product"), vec![xd, w_in], vec![]);
        let bn = self.f64s(&format!("{nname}/bias"), &[4 * n_cell], &bias);
        let acc = self.op1("Add", &format!("{base}/input_product_bias"), vec![acc, bn], vec![]);
        let gates_shape = |s: &mut Self, lead: &[usize], k: &str| {
            let v: Vec<i64> = lead.iter().map(|&d| d as i64).chain([LSTM_GATES as i64, n_cell as i64]).collect();
            s.i64s(&format!("{base}/{k}"), &v)
        };
        let shape = gates_shape(self, &[outer, inner], "input_gates_shape");
        let acc = self.op1("Reshape", &format!("{base}/input_gates"), vec![acc, shape], vec![]);
        let i64_scalar = |s: &mut Self, k: &str, v: i64| {
            let n = s.fresh(&format!("{base}/{k}"));
            s.inits.push(tensor_proto(&n, &[], dt::INT64, le64(&[v])));
            n
        };
        let nudge = i64_scalar(self, "high_mul_nudge", 1 << 30);
        let unit = i64_scalar(self, "high_mul_unit", 1 << 31);
        let half = self.f64s(&format!("{base}/half"), &[], &[0.5]);
        let lo = self.f64s(&format!("{base}/int16_min"), &[], &[I16_RANGE.0]);
        let hi = self.f64s(&format!("{base}/int16_max"), &[], &[I16_RANGE.1]);
        let c16 = Shared { nudge, unit, half, int16: (lo, hi) };
        let rq_input = self.requant_consts(&p.input_fc, &format!("{base}/input_fc"));
        let rq_recurrent = self.requant_consts(&p.recurrent_fc, &format!("{base}/recurrent_fc"));
        let rq_forget = self.requant_consts(&[p.forget_mul], &format!("{base}/forget"));
        let rq_input_gate = self.requant_consts(&[p.input_mul], &format!("{base}/input_gate"));
        let rq_hidden = self.requant_consts(&[p.hidden_mul], &format!("{base}/hidden"));
        let lo = self.f64s(&format!("{base}/hidden_min"), &[], &[-128.0]);
        let hi = self.f64s(&format!("{base}/hidden_max"), &[], &[127.0]);
        let hidden_range = (lo, hi);
        let clip = match p.cell_clip {
            Some(clip) => {
                let lo = self.f64s(&format!("{base}/cell_clip_min"), &[], &[-f64::from(clip)]);
                let hi = self.f64s(&format!("{base}/cell_clip_max"), &[], &[f64::from(clip)]);
                Some((lo, hi))
            }
            None => None,
        };
        let fx_all = self.requantize_i16(acc, &rq_input, &c16, &format!("{base}/input_fc"));

        // Tables: σ then the gates' tanh (one Gather for the four gates), and tanh of the cell.
        let mut gate_table: Vec<i16> = (i16::MIN..=i16::MAX).map(sigmoid_s16).collect();
        gate_table.extend((i16::MIN..=i16::MAX).map(|v| tanh_s16(TableInputScaling::Q3_12, v)));
        let gate_table = self.i16_table(&format!("{nname}/gate_table"), &gate_table);
        // Index of gate g's value v: v + 32768 (+ 65536 for the cell gate, in the tanh half).
        let offsets: Vec<f64> = (0..LSTM_GATES).map(|g| 32768.0 + if g == 2 { 65536.0 } else { 0.0 }).collect();
        let gate_offsets = self.f64s(&format!("{base}/gate_index_offset"), &[LSTM_GATES, 1], &offsets);
        // tanh of the cell state: the gates' tanh half when the cell state is Q3.12, else its own.
        let (cell_table, cell_offset) = if p.cell_tanh == TableInputScaling::Q3_12 {
            (gate_table.clone(), self.f64s(&format!("{base}/cell_index_offset"), &[], &[32768.0 + 65536.0]))
        } else {
            let t: Vec<i16> = (i16::MIN..=i16::MAX).map(|v| tanh_s16(p.cell_tanh, v)).collect();
            let t = self.i16_table(&format!("{nname}/cell_tanh_table"), &t);
            (t, self.f64s(&format!("{base}/cell_index_offset"), &[], &[32768.0]))
        };
        let split = self.i64s(&format!("{base}/gate_split"), &[1; LSTM_GATES]);
        let rec_shape = gates_shape(self, &[batch], "recurrent_gates_shape");

        // The state: graph inputs [batch, cell] (defaults: the start state), [batch, 1, cell] inside.
        let state_shape = [batch, n_cell];
        let zp = f64::from(p.hidden_zero_point);
        let h_in = self.state_name(nname, "h_in");
        let c_in = self.state_name(nname, "c_in");
        self.inputs.push(value_info(&h_in, dt::INT8, &state_shape));
        self.inputs.push(value_info(&c_in, dt::INT16, &state_shape));
        let n = batch * n_cell;
        self.inits.push(tensor_proto(&h_in, &state_shape, dt::INT8, vec![p.hidden_zero_point as i8 as u8; n]));
        self.inits.push(tensor_proto(&c_in, &state_shape, dt::INT16, vec![0; 2 * n]));
        let inner_state = self.i64s(&format!("{base}/state_shape"), &[batch as i64, 1, n_cell as i64]);
        let hz = self.f64s(&format!("{base}/hidden_zero_point"), &[], &[zp]);
        let h = self.op1("Cast", &format!("{base}/h_in_double"), vec![h_in], to_double.clone());
        let h = self.op1("Reshape", &format!("{base}/h_in_rows"), vec![h, inner_state.clone()], vec![]);
        let mut h_raw = h.clone();
        let mut h_int = self.op1("Sub", &format!("{base}/h_in_integers"), vec![h, hz.clone()], vec![]);
        let c = self.op1("Cast", &format!("{base}/c_in_double"), vec![c_in], to_double.clone());
        let mut c = self.op1("Reshape", &format!("{base}/c_in_rows"), vec![c, inner_state], vec![]);

        let time_axis = if attrs.time_major { 0 } else { 1 };
        let step_shape = if attrs.time_major { [1, batch, n_cell] } else { [batch, 1, n_cell] };
        let step_shape = self.i64s(&format!("{base}/step_shape"), &step_shape.map(|d| d as i64));
        let mut steps = Vec::with_capacity(time);
        for t in 0..time {
            let sb = format!("{base}/step{t}");
            let ti = self.fresh(&format!("{sb}/time"));
            self.inits.push(tensor_proto(&ti, &[], dt::INT64, le64(&[t as i64])));
            let fx = self.op1(
                "Gather",
                &format!("{sb}/input_fc"),
                vec![fx_all.clone(), ti],
                vec![attr_int("axis", time_axis)],
            );
            let acc = self.op1("MatMul", &format!("{sb}/recurrent_product"), vec![h_int, w_rec.clone()], vec![]);
            let acc = self.op1("Reshape", &format!("{sb}/recurrent_gates"), vec![acc, rec_shape.clone()], vec![]);
            let fh = self.requantize_i16(acc, &rq_recurrent, &c16, &format!("{sb}/recurrent_fc"));
            let pre = self.op1("Add", &format!("{sb}/gates_sum"), vec![fx, fh], vec![]);
            let pre = self.clip_to(pre, &c16.int16, &format!("{sb}/gates_pre"));
            let gates = self.lookup_i16(pre, &gate_table, &gate_offsets, &format!("{sb}/gates"));
            let parts: Vec<String> =
                ["i", "f", "g", "o"].iter().map(|k| self.fresh(&format!("{sb}/gate_{k}"))).collect();
            self.node(
                "Split",
                &format!("{sb}/gate_split"),
                vec![gates, split.clone()],
                parts.clone(),
                vec![attr_int("axis", 1)],
            );
            let [i, f, g, o] = [0, 1, 2, 3].map(|k| parts[k].clone());
            let fc = self.op1("Mul", &format!("{sb}/forget_product"), vec![f, c], vec![]);
            let kept = self.requantize_i16(fc, &rq_forget, &c16, &format!("{sb}/kept"));
            let ig = self.op1("Mul", &format!("{sb}/input_product"), vec![i, g], vec![]);
            let added = self.requantize_i16(ig, &rq_input_gate, &c16, &format!("{sb}/added"));
            let sum = self.op1("Add", &format!("{sb}/cell_sum"), vec![kept, added], vec![]);
            c = self.clip_to(sum, &c16.int16, &format!("{sb}/cell"));
            if let Some(bounds) = &clip {
                // TFLite Micro: max(min(clip, c), -clip).
                c = self.clip_to(c, bounds, &format!("{sb}/cell_clipped"));
            }
            let tc = self.lookup_i16(c.clone(), &cell_table, &cell_offset, &format!("{sb}/cell_tanh"));
            let ot = self.op1("Mul", &format!("{sb}/output_product"), vec![tc, o], vec![]);
            let hq = self.requantize_fixed(ot, &rq_hidden, &c16, &format!("{sb}/hidden"));
            let hq = self.op1("Add", &format!("{sb}/hidden_offset"), vec![hq, hz.clone()], vec![]);
            h_raw = self.clip_to(hq, &hidden_range, &format!("{sb}/hidden_raw"));
            h_int = self.op1("Sub", &format!("{sb}/hidden_integers"), vec![h_raw.clone(), hz.clone()], vec![]);
            let out = self.op1("Reshape", &format!("{sb}/output"), vec![h_raw.clone(), step_shape.clone()], vec![]);
            steps.push(out);
        }
        let all = self.op1("Concat", &format!("{base}/steps"), steps, vec![attr_int("axis", time_axis)]);
        let q = self.op1("Cast", &format!("{base}/quantized"), vec![all], vec![attr_int("to", i64::from(dt::INT8))]);

        // The state after the last step.
        let flat = self.i64s(&format!("{base}/state_out_shape"), &[batch as i64, n_cell as i64]);
        let h_last = self.op1("Reshape", &format!("{base}/h_last"), vec![h_raw, flat.clone()], vec![]);
        let c_last = self.op1("Reshape", &format!("{base}/c_last"), vec![c, flat], vec![]);
        for (v, k, code) in [(h_last, "h_out", dt::INT8), (c_last, "c_out", dt::INT16)] {
            let name = self.state_name(nname, k);
            self.node("Cast", &name.clone(), vec![v], vec![name.clone()], vec![attr_int("to", i64::from(code))]);
            self.state_outputs.push(value_info(&name, code, &state_shape));
        }
        self.finish_int8(y, q, layout::identity(3))
    }

    /// The name `<node>/<what>` of a state input or output (made unique if taken).
    fn state_name(&mut self, nname: &str, what: &str) -> String {
        self.fresh(&format!("{nname}/{what}"))
    }

    /// Gate-major int8 weights `[rows, cols]` as the `double` matrix `[cols, rows]` a `MatMul`
    /// multiplies by: the int8 initializer, `DequantizeLinear` with scale 1, transposed, cast.
    fn int8_matrix(&mut self, w: &[i8], rows: usize, cols: usize, base: &str) -> String {
        let qn = self.fresh(&format!("{base}/int8"));
        self.inits.push(tensor_proto(&qn, &[rows, cols], dt::INT8, w.iter().map(|&v| v as u8).collect()));
        let one = self.f32_scalar(&format!("{base}/unit_scale"), 1.0);
        let zn = self.zero_points(base, dt::INT8, &[0], false);
        let d = self.op1("DequantizeLinear", &format!("{base}/int"), vec![qn, one, zn], vec![]);
        let d = self.op1("Transpose", &format!("{base}/transposed"), vec![d], vec![attr_ints("perm", &[1, 0])]);
        self.op1("Cast", &format!("{base}/double"), vec![d], vec![attr_int("to", i64::from(dt::DOUBLE))])
    }

    /// A 1-D int16 initializer.
    fn i16_table(&mut self, base: &str, v: &[i16]) -> String {
        let name = self.fresh(base);
        self.inits.push(tensor_proto(&name, &[v.len()], dt::INT16, le16(v)));
        name
    }

    /// `table[v + offset]` of the double integers `v`, as double.
    fn lookup_i16(&mut self, v: String, table: &str, offset: &str, base: &str) -> String {
        let i = self.op1("Add", &format!("{base}/index_double"), vec![v, offset.to_string()], vec![]);
        let i = self.op1("Cast", &format!("{base}/index"), vec![i], vec![attr_int("to", i64::from(dt::INT64))]);
        let t = self.op1("Gather", &format!("{base}/table"), vec![table.to_string(), i], vec![attr_int("axis", 0)]);
        self.op1("Cast", base, vec![t], vec![attr_int("to", i64::from(dt::DOUBLE))])
    }

    /// `Clip(v, lo, hi)` of double `v`, with shared bounds.
    fn clip_to(&mut self, v: String, bounds: &(String, String), base: &str) -> String {
        self.op1("Clip", base, vec![v, bounds.0.clone(), bounds.1.clone()], vec![])
    }

    /// The constants of one requantization by `m` (one per gate broadcast as `[4, 1]`, or one):
    /// the int64 factor `m · 2^left` and the double `2^-right`.
    fn requant_consts(&mut self, m: &[QuantizedMultiplier], base: &str) -> Requant {
        let shape: &[usize] = if m.len() > 1 { &[m.len(), 1] } else { &[] };
        let k: Vec<i64> = m.iter().map(|q| i64::from(q.multiplier) << q.shift.max(0)).collect();
        let factor = self.fresh(&format!("{base}/multiplier"));
        self.inits.push(tensor_proto(&factor, shape, dt::INT64, le64(&k)));
        let right: Vec<f64> = m.iter().map(|q| libm::exp2(-f64::from((-q.shift).max(0)))).collect();
        let right = self.f64s(&format!("{base}/shift"), shape, &right);
        Requant { factor, right }
    }

    /// `MultiplyByQuantizedMultiplier(acc, m, shift)` of a double tensor of int32 integers,
    /// exactly: the doubling high product `floor((acc · 2^left · m + 2^30) / 2^31)` in int64
    /// (the floor as `(x − Mod(x, 2^31)) / 2^31`, `Mod` taking the divisor's sign), then the
    /// rounding right shift in double (half away from zero).
    fn requantize_fixed(&mut self, acc: String, r: &Requant, c: &Shared, base: &str) -> String {
        let a = self.op1("Cast", &format!("{base}/acc_int64"), vec![acc], vec![attr_int("to", i64::from(dt::INT64))]);
        let p = self.op1("Mul", &format!("{base}/product"), vec![a, r.factor.clone()], vec![]);
        let p = self.op1("Add", &format!("{base}/product_rounding"), vec![p, c.nudge.clone()], vec![]);
        let rem = self.op1("Mod", &format!("{base}/product_remainder"), vec![p.clone(), c.unit.clone()], vec![]);
        let p = self.op1("Sub", &format!("{base}/product_floor"), vec![p, rem], vec![]);
        let t = self.op1("Div", &format!("{base}/high_mul_int64"), vec![p, c.unit.clone()], vec![]);
        let t = self.op1("Cast", &format!("{base}/high_mul"), vec![t], vec![attr_int("to", i64::from(dt::DOUBLE))]);
        let a = self.op1("Abs", &format!("{base}/high_mul_abs"), vec![t.clone()], vec![]);
        let sg = self.op1("Sign", &format!("{base}/high_mul_sign"), vec![t], vec![]);
        let a = self.op1("Mul", &format!("{base}/shifted"), vec![a, r.right.clone()], vec![]);
        let a = self.op1("Add", &format!("{base}/shift_rounding"), vec![a, c.half.clone()], vec![]);
        let a = self.op1("Floor", &format!("{base}/shifted_abs"), vec![a], vec![]);
        self.op1("Mul", &format!("{base}/requantized"), vec![a, sg], vec![])
    }

    /// [`Self::requantize_fixed`] clamped to int16.
    fn requantize_i16(&mut self, acc: String, r: &Requant, c: &Shared, base: &str) -> String {
        let v = self.requantize_fixed(acc, r, c, base);
        self.clip_to(v, &c.int16, &format!("{base}/clamped"))
    }
}

/// The constants of one requantization ([`Exporter::requant_consts`]).
struct Requant {
    factor: String,
    right: String,
}

/// Constants every step shares.
struct Shared {
    /// int64 `2^30`, `2^31`.
    nudge: String,
    unit: String,
    /// double 0.5.
    half: String,
    /// double int16 bounds.
    int16: (String, String),
}
