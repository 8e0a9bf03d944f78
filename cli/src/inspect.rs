//! `microquant inspect`: what a `.mq` model holds and what it needs.

use microquant::model::{AlignedBytes, Model, OpInfo, Quant, Storage, TensorInfo};
use serde_json::{Value, json};

use crate::CliError;
use crate::output::Stdout;

fn dims(t: &TensorInfo) -> String {
    let d: Vec<String> = t.dims().iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(","))
}

fn quant_text(q: &Quant) -> String {
    match q {
        Quant::None => "-".into(),
        Quant::PerTensor { scale, zero_point } => format!("scale {scale:e} zp {zero_point}"),
        Quant::PerChannel { scales, axis, .. } => {
            let (lo, hi) = scales.iter().fold((f32::MAX, f32::MIN), |(l, h), &s| (l.min(s), h.max(s)));
            format!("per-channel axis {axis} ({} scales {lo:e}..{hi:e})", scales.len())
        }
        Quant::PerChannelStripped { channels, axis } => format!("per-channel axis {axis} ({channels}, stripped)"),
    }
}

fn quant_json(q: &Quant) -> Value {
    match q {
        Quant::None => Value::Null,
        Quant::PerTensor { scale, zero_point } => json!({"scale": scale, "zero_point": zero_point}),
        Quant::PerChannel { scales, zero_points, axis } => {
            json!({"axis": axis, "scales": scales, "zero_points": zero_points})
        }
        Quant::PerChannelStripped { channels, axis } => json!({"axis": axis, "channels": channels, "stripped": true}),
    }
}

/// A tensor's name, or `t<index>` when the model has none (a stripped model).
fn tensor_name(t: &TensorInfo) -> String {
    if t.name().is_empty() { format!("t{}", t.index) } else { t.name().to_string() }
}

/// An op's name, or `op<index>` when the model has none (a stripped model).
fn op_name(op: &OpInfo) -> String {
    if op.name().is_empty() { format!("op{}", op.index) } else { op.name().to_string() }
}

/// Summary figures of a model.
pub struct Summary {
    pub file_len: usize,
    pub const_bytes: usize,
    pub arena_len: usize,
    pub macs: u64,
}

pub fn summary(m: &Model) -> Result<Summary, CliError> {
    let mut macs = 0u64;
    for i in 0..m.num_ops() as u32 {
        macs += m.op_macs(i)?;
    }
    Ok(Summary { file_len: m.bytes().len(), const_bytes: m.const_bytes(), arena_len: m.arena_len(), macs })
}

pub fn run(path: &std::path::Path, as_json: bool, out: &mut Stdout) -> Result<(), CliError> {
    let raw = std::fs::read(path).map_err(|e| CliError::io(path, e))?;
    let bytes = AlignedBytes::new(&raw);
    let m = Model::parse(&bytes).map_err(|e| CliError::model(path, e))?;
    let s = summary(&m)?;
    if as_json {
        let mut tensors = Vec::new();
        for i in 0..m.num_tensors() as u32 {
            let t = m.tensor(i)?;
            let (storage, offset) = match t.storage {
                Storage::Arena(o) => ("arena", o),
                Storage::Const(o) => ("const", o),
            };
            tensors.push(
                json!({"index": i, "name": tensor_name(&t), "dtype": format!("{:?}", t.dtype), "shape": t.dims(),
                "storage": storage, "offset": offset, "bytes": t.byte_len, "quant": quant_json(&t.quant)}),
            );
        }
        let mut ops = Vec::new();
        for i in 0..m.num_ops() as u32 {
            let op = m.op(i)?;
            let ins: Vec<Value> = (0..op.num_inputs())
                .map(|k| op.input(k).map(|t| if t == microquant::model::ABSENT { Value::Null } else { json!(t) }))
                .collect::<Result<_, _>>()?;
            let outs: Vec<u32> = (0..op.num_outputs()).map(|k| op.output(k)).collect::<Result<_, _>>()?;
            ops.push(json!({"index": i, "op": op.kind.name(), "name": op_name(&op), "inputs": ins, "outputs": outs,
                "in_place": op.in_place(), "chunk_rows": op.chunk_rows(), "scratch_bytes": op.scratch_len, "macs": m.op_macs(i)?}));
        }
        let io = |n: usize, f: &dyn Fn(usize) -> Result<u32, microquant::Error>| -> Result<Vec<u32>, CliError> {
            (0..n).map(|i| f(i).map_err(CliError::from)).collect()
        };
        let meta: serde_json::Map<String, Value> = (0..m.num_meta() as u32)
            .filter_map(|i| m.meta(i).ok())
            .map(|e| (e.key.to_string(), json!(e.value)))
            .collect();
        let doc = json!({
            "file_bytes": s.file_len, "const_bytes": s.const_bytes, "arena_bytes": s.arena_len, "macs": s.macs,
            "single_rounding": m.single_rounding(), "stripped": m.is_stripped(), "crc32": format!("{:08x}", m.crc()),
            "inputs": io(m.num_inputs(), &|i| m.input_index(i))?,
            "outputs": io(m.num_outputs(), &|i| m.output_index(i))?,
            "metadata": meta, "tensors": tensors, "ops": ops,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc).unwrap_or_default())?;
        return Ok(());
    }
    writeln!(out, "model      {}", path.display())?;
    for i in 0..m.num_meta() as u32 {
        if let Ok(e) = m.meta(i) {
            writeln!(out, "{:<10} {}", e.key, e.value)?;
        }
    }
    writeln!(
        out,
        "rounding   {}",
        if m.single_rounding() { "single (TFLite interpreter)" } else { "double (TFLite Micro)" }
    )?;
    writeln!(
        out,
        "file       {} bytes ({} bytes of weights and tables){}",
        s.file_len,
        s.const_bytes,
        if m.is_stripped() { "; stripped: no names or metadata" } else { "" }
    )?;
    // Convolutions that run over their input by chunks of rows (their scratch holds the rows).
    let by_chunks = (0..m.num_ops() as u32).filter(|&i| m.op(i).is_ok_and(|op| op.chunk_rows() > 0)).count();
    let in_place =
        if by_chunks > 0 { format!("; {by_chunks} convolutions in place by row chunks") } else { String::new() };
    writeln!(out, "arena      {} bytes (RAM for activations and scratch{in_place})", s.arena_len)?;
    writeln!(out, "MACs       {}", s.macs)?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>3}  {:<18} {:<24} {:>12}  {:>8}  {:>10}",
        "#", "op", "inputs -> outputs", "MACs", "scratch", "name"
    )?;
    for i in 0..m.num_ops() as u32 {
        let op = m.op(i)?;
        let ins: Vec<String> = (0..op.num_inputs())
            .map(|k| op.input(k).map(|t| if t == microquant::model::ABSENT { "-".to_string() } else { t.to_string() }))
            .collect::<Result<_, _>>()?;
        let outs: Vec<String> =
            (0..op.num_outputs()).map(|k| op.output(k).map(|t| t.to_string())).collect::<Result<_, _>>()?;
        writeln!(
            out,
            "{:>3}  {:<18} {:<24} {:>12}  {:>8}  {}",
            i,
            op.kind.name(),
            format!("{} -> {}", ins.join(","), outs.join(",")),
            m.op_macs(i)?,
            op.scratch_len,
            op_name(&op)
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:>3}  {:<6} {:<18} {:<14} {:>8}  {:<36} name",
        "#", "dtype", "shape", "storage", "bytes", "quantization"
    )?;
    for i in 0..m.num_tensors() as u32 {
        let t = m.tensor(i)?;
        let st = match t.storage {
            Storage::Arena(o) => format!("arena@{o}"),
            Storage::Const(_) => "const".into(),
        };
        writeln!(
            out,
            "{:>3}  {:<6} {:<18} {:<14} {:>8}  {:<36} {}",
            i,
            format!("{:?}", t.dtype),
            dims(&t),
            st,
            t.byte_len,
            quant_text(&t.quant),
            tensor_name(&t)
        )?;
    }
    Ok(())
}
