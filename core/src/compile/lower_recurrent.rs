//! Lowering of [`Op::Lstm`](crate::graph::Op::Lstm) to the `.mq` UNIDIRECTIONAL_SEQUENCE_LSTM:
//! the four gates' weights and biases stacked into one constant each (`[4, cell, in]`,
//! `[4, cell, cell]`, `[4, cell]`), TFLite Micro's prepared integers
//! ([`LstmParams`]) as the op's words, and the state (int16 cell, then hidden) as its scratch,
//! which the planner keeps for the whole run.

use alloc::format;
use alloc::vec::Vec;

use super::{K, Lowering, NodeCtx};
use crate::graph::{self, ConstData, ConvertError, Lstm};
use crate::kernels::lstm::{LSTM_GATES, LstmDims, LstmParams, LstmQuant};
use crate::model::words::LstmWords;
use crate::model::{ElementType, ModelBuilder, OpKind, OpSpec, TensorSpec};

pub(super) fn lower_lstm(
    l: &mut Lowering,
    c: &NodeCtx,
    b: &mut ModelBuilder,
    a: &Lstm,
    spec: &mut OpSpec,
) -> Result<(), ConvertError> {
    let (xid, x) = l.input(c, 0)?;
    let (_, y) = l.output(c)?;
    if c.node.input(13).is_some() || c.node.input(14).is_some() {
        return Err(c.err(
            K::Unsupported,
            "an integer LSTM starts from the zero state: initial hidden or cell states are not supported",
        ));
    }
    let cell_scale = a.cell_scale.ok_or_else(|| {
        c.err(K::UnsupportedQuantization, "the LSTM has no cell state scale (a float LSTM left unquantized)")
    })?;
    let sixteen = match (x.dtype, y.dtype) {
        (graph::DType::I8, graph::DType::I8) => false,
        (graph::DType::I16, graph::DType::I16) => true,
        (xd, yd) => {
            return Err(c.err(K::UnsupportedDType, format!("LSTM with {xd} input and {yd} output (int8 or 16x8)")));
        }
    };
    let (xq, yq) = (l.q(c, x)?, l.q(c, y)?);
    let mut scales = [[0f32; LSTM_GATES]; 2];
    let mut stacked: [Vec<i8>; 2] = [Vec::new(), Vec::new()];
    for (kind, base) in [(0, 1), (1, 5)] {
        for (g, scale) in scales[kind].iter_mut().enumerate() {
            let (_, w) = l.input(c, base + g)?;
            if w.dtype == graph::DType::I4 {
                return Err(c.err(K::UnsupportedDType, format!("LSTM weights '{}' are int4", w.name)));
            }
            let ws = l.weight_scales(c, w, 0)?;
            let [s] = ws[..] else {
                return Err(c.err(
                    K::UnsupportedQuantization,
                    format!("LSTM weights '{}' must be quantized per tensor (TFLite Micro's LSTM)", w.name),
                ));
            };
            *scale = s;
            match &w.data {
                Some(ConstData::I8(v)) => stacked[kind].extend_from_slice(v),
                _ => return Err(c.err(K::UnsupportedQuantization, format!("weights '{}' must be int8", w.name))),
            }
        }
    }
    let mut bias32: Vec<i32> = Vec::new();
    let mut bias64: Vec<i64> = Vec::new();
    for g in 0..LSTM_GATES {
        let (_, t) = l.input(c, 9 + g)?;
        match (&t.data, sixteen) {
            (Some(ConstData::I32(v)), false) => bias32.extend_from_slice(v),
            (Some(ConstData::I64(v)), true) => bias64.extend_from_slice(v),
            (Some(ConstData::I32(v)), true) => bias64.extend(v.iter().map(|&v| i64::from(v))),
            _ => {
                return Err(c.err(
                    K::UnsupportedQuantization,
                    format!("LSTM bias '{}' must be constant int32 (int8) or int64 (16x8)", t.name),
                ));
            }
        }
    }
    let (n_cell, n_in) = match l.input(c, 1)?.1.shape.as_slice() {
        &[cell, i] => (cell, i),
        _ => return Err(c.err(K::InvalidGraph, "LSTM input weights must be [cell, in]")),
    };
    let (outer, inner) = match x.shape.as_slice() {
        &[o, i, _] => (o, i),
        _ => return Err(c.err(K::InvalidGraph, "LSTM input must be 3-D")),
    };
    let (batch, time) = if a.time_major { (inner, outer) } else { (outer, inner) };
    let dims = LstmDims { batch, time, input: n_in, cell: n_cell, time_major: a.time_major };
    let quant = LstmQuant {
        input: xq,
        input_weight_scales: scales[0],
        recurrent_weight_scales: scales[1],
        hidden: yq,
        cell_scale,
        cell_clip: a.cell_clip,
    };
    let p = if sixteen { LstmParams::prepare_s16(dims, &quant) } else { LstmParams::prepare_s8(dims, &quant) }
        .map_err(|e| c.kernel(e))?;
    let name = spec.name.clone();
    let [n4, cell, inp] = [LSTM_GATES as u32, n_cell as u32, n_in as u32];
    let [wi, wr] = stacked;
    let wi = b.add_tensor(TensorSpec::const_i8(&format!("{name}/input_weights"), &[n4, cell, inp], &wi));
    let wr = b.add_tensor(TensorSpec::const_i8(&format!("{name}/recurrent_weights"), &[n4, cell, cell], &wr));
    let bias = if sixteen {
        let bytes = bias64.iter().flat_map(|v| v.to_le_bytes()).collect();
        TensorSpec::constant(&format!("{name}/bias"), ElementType::I64, &[n4, cell], bytes)
    } else {
        TensorSpec::const_i32(&format!("{name}/bias"), &[n4, cell], &bias32)
    };
    let bias = b.add_tensor(bias);
    spec.kind = OpKind::Lstm;
    spec.params = LstmWords::from_params(&p).to_words().to_vec();
    spec.inputs = alloc::vec![Some(l.model_tensor(c, b, xid)?), Some(wi), Some(wr), Some(bias)];
    spec.scratch_len = dims.state_bytes(if sixteen { 2 } else { 1 }) as u32;
    Ok(())
}
