//! Float LSTM (the float executor's [`Op::Lstm`](crate::graph::Op::Lstm)): ONNX `LSTM` forward
//! with the default activations (σ, tanh, tanh), TFLite's cell clip, gates in TFLite's order
//! input, forget, cell, output. Sums in `f64`, state in `f32`.

use alloc::vec;
use alloc::vec::Vec;

use super::KernelError;
use super::elementwise::{logistic, tanh};

/// The operands of [`lstm_f32`]: `weights[g]` `[cell, in]`, `recurrent[g]` `[cell, cell]`,
/// `bias[g]` `[cell]` (ONNX's `Wb + Rb`), initial states `[batch, cell]` (zero when `None`).
pub(crate) struct LstmOperands<'a> {
    pub weights: [&'a [f32]; 4],
    pub recurrent: [&'a [f32]; 4],
    pub bias: [&'a [f32]; 4],
    pub initial_h: Option<&'a [f32]>,
    pub initial_c: Option<&'a [f32]>,
}

/// An LSTM's hidden and cell states after its last step, `[batch, cell]` each, and the largest
/// `|c|` of any step.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LstmState {
    pub h: Vec<f32>,
    pub c: Vec<f32>,
    pub peak_c: f32,
}

/// `x` `[batch, time, in]` (or `[time, batch, in]` when `time_major`); returns the hidden state
/// at every step in the same layout with `cell` last. With `last`, also writes the states after
/// the last step there.
pub(crate) fn lstm_f32(
    x: &[f32],
    [outer, inner, n_in]: [usize; 3],
    time_major: bool,
    cell_clip: f32,
    o: &LstmOperands<'_>,
    mut last: Option<&mut LstmState>,
) -> Result<Vec<f32>, KernelError> {
    let n_cell = o.bias[0].len();
    let (batch, time) = if time_major { (inner, outer) } else { (outer, inner) };
    let sizes_ok = x.len() == outer * inner * n_in
        && n_cell > 0
        && (0..4).all(|g| {
            o.weights[g].len() == n_cell * n_in && o.recurrent[g].len() == n_cell * n_cell && o.bias[g].len() == n_cell
        })
        && o.initial_h.is_none_or(|h| h.len() == batch * n_cell)
        && o.initial_c.is_none_or(|c| c.len() == batch * n_cell);
    if !sizes_ok {
        return Err(KernelError("lstm tensor sizes do not match the shapes"));
    }
    let mut y = vec![0f32; outer * inner * n_cell];
    let mut gates = [vec![0f32; n_cell], vec![0f32; n_cell], vec![0f32; n_cell], vec![0f32; n_cell]];
    let mut peak_c = 0f32;
    if let Some(l) = last.as_deref_mut() {
        l.h = vec![0.0; batch * n_cell];
        l.c = vec![0.0; batch * n_cell];
    }
    for b in 0..batch {
        let mut h: Vec<f32> = o.initial_h.map_or_else(|| vec![0.0; n_cell], |s| s[b * n_cell..][..n_cell].to_vec());
        let mut c: Vec<f32> = o.initial_c.map_or_else(|| vec![0.0; n_cell], |s| s[b * n_cell..][..n_cell].to_vec());
        for t in 0..time {
            let row = if time_major { t * batch + b } else { b * time + t };
            let xr = &x[row * n_in..][..n_in];
            for (g, gate) in gates.iter_mut().enumerate() {
                for (j, v) in gate.iter_mut().enumerate() {
                    let wx: f64 =
                        o.weights[g][j * n_in..][..n_in].iter().zip(xr).map(|(&w, &x)| f64::from(w * x)).sum();
                    let rh: f64 =
                        o.recurrent[g][j * n_cell..][..n_cell].iter().zip(&h).map(|(&w, &h)| f64::from(w * h)).sum();
                    let pre = (wx + rh + f64::from(o.bias[g][j])) as f32;
                    *v = if g == 2 { tanh(pre) } else { logistic(pre) };
                }
            }
            let out = &mut y[row * n_cell..][..n_cell];
            for j in 0..n_cell {
                let mut cj = gates[1][j] * c[j] + gates[0][j] * gates[2][j];
                if cell_clip > 0.0 {
                    cj = cj.clamp(-cell_clip, cell_clip);
                }
                c[j] = cj;
                peak_c = peak_c.max(cj.abs());
                h[j] = gates[3][j] * tanh(cj);
                out[j] = h[j];
            }
        }
        if let Some(l) = last.as_deref_mut() {
            l.h[b * n_cell..][..n_cell].copy_from_slice(&h);
            l.c[b * n_cell..][..n_cell].copy_from_slice(&c);
            l.peak_c = peak_c;
        }
    }
    Ok(y)
}

/// The operands of [`gru_f32`], gates in ONNX's order `z, r, h`: `weights[g]` `[hidden, in]`,
/// `recurrent[g]` `[hidden, hidden]`, `input_bias[g]` and `recurrent_bias[g]` `[hidden]`, the
/// initial state `[batch, hidden]` (zero when `None`).
pub(crate) struct GruOperands<'a> {
    pub weights: [&'a [f32]; 3],
    pub recurrent: [&'a [f32]; 3],
    pub input_bias: [&'a [f32]; 3],
    pub recurrent_bias: [&'a [f32]; 3],
    pub initial_h: Option<&'a [f32]>,
}

/// ONNX `GRU` forward with the default activations (σ, tanh): `x` `[batch, time, in]` (or
/// time-major); returns the hidden state at every step in the same layout.
pub(crate) fn gru_f32(
    x: &[f32],
    [outer, inner, n_in]: [usize; 3],
    time_major: bool,
    linear_before_reset: bool,
    o: &GruOperands<'_>,
) -> Result<Vec<f32>, KernelError> {
    let n = o.input_bias[0].len();
    let (batch, time) = if time_major { (inner, outer) } else { (outer, inner) };
    let sizes_ok = x.len() == outer * inner * n_in
        && n > 0
        && (0..3).all(|g| {
            o.weights[g].len() == n * n_in
                && o.recurrent[g].len() == n * n
                && o.input_bias[g].len() == n
                && o.recurrent_bias[g].len() == n
        })
        && o.initial_h.is_none_or(|h| h.len() == batch * n);
    if !sizes_ok {
        return Err(KernelError("gru tensor sizes do not match the shapes"));
    }
    let dot = |w: &[f32], v: &[f32]| -> f64 { w.iter().zip(v).map(|(&a, &b)| f64::from(a * b)).sum() };
    let mut y = vec![0f32; outer * inner * n];
    let (mut z, mut r, mut rh) = (vec![0f32; n], vec![0f32; n], vec![0f32; n]);
    for b in 0..batch {
        let mut h: Vec<f32> = o.initial_h.map_or_else(|| vec![0.0; n], |s| s[b * n..][..n].to_vec());
        for t in 0..time {
            let row = if time_major { t * batch + b } else { b * time + t };
            let xr = &x[row * n_in..][..n_in];
            for j in 0..n {
                let pre = |g: usize| {
                    dot(&o.weights[g][j * n_in..][..n_in], xr)
                        + dot(&o.recurrent[g][j * n..][..n], &h)
                        + f64::from(o.input_bias[g][j])
                        + f64::from(o.recurrent_bias[g][j])
                };
                z[j] = logistic(pre(0) as f32);
                r[j] = logistic(pre(1) as f32);
            }
            for j in 0..n {
                rh[j] = r[j] * h[j];
            }
            let out = &mut y[row * n..][..n];
            for j in 0..n {
                let wx = dot(&o.weights[2][j * n_in..][..n_in], xr) + f64::from(o.input_bias[2][j]);
                let rec = &o.recurrent[2][j * n..][..n];
                let pre = if linear_before_reset {
                    wx + f64::from(r[j]) * (dot(rec, &h) + f64::from(o.recurrent_bias[2][j]))
                } else {
                    wx + dot(rec, &rh) + f64::from(o.recurrent_bias[2][j])
                };
                let cand = tanh(pre as f32);
                out[j] = (1.0 - z[j]) * cand + z[j] * h[j];
            }
            h.copy_from_slice(out);
        }
    }
    Ok(y)
}
