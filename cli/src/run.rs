//! `microquant run`: a `.mq` model over a batch of inputs, on the host.

use std::path::Path;

use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, ElementType, Model, TensorInfo};

use crate::CliError;
use crate::npy::{self, Batch};
use crate::output::{Stdout, note};

/// The model's input samples as int8 rows (quantizing float input with the model's input qparams).
pub fn input_rows(model: &Model, x: &npy::Array) -> Result<(usize, Vec<i8>), CliError> {
    let t = model.tensor(model.input_index(0)?)?;
    if t.dtype != ElementType::I8 {
        return Err(CliError::Invalid("the model's input is not int8".into()));
    }
    let per = t.len();
    let n: usize = x.shape.first().copied().unwrap_or(1);
    let rest: usize = x.shape.iter().skip(1).product();
    if x.shape.is_empty() || rest != per {
        return Err(CliError::Invalid(format!(
            "input shape {:?} does not match the model: expected [N, {}] (samples first; the model input is {:?})",
            x.shape,
            t.dims().iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
            t.dims()
        )));
    }
    let rows = match &x.data {
        Batch::I8(v) => v.clone(),
        Batch::F32(v) => {
            let (scale, zp) = t
                .per_tensor()
                .ok_or_else(|| CliError::Invalid("the model input has no per-tensor quantization".into()))?;
            let q = microquant::quant::QParams::new(scale, zp, microquant::quant::QuantDType::Int8)?;
            let mut out = vec![0i8; v.len()];
            q.quantize_i8(v, &mut out).map_err(|e| CliError::Invalid(format!("input: {e}")))?;
            out
        }
    };
    Ok((n, rows))
}

/// Writes the stacked outputs (`n` samples) as `.npy` (int8, or float32 with `dequantize`) and
/// prints each sample's top class and its dequantized score (the first 8 samples).
pub fn write_outputs(
    out_t: &TensorInfo,
    n: usize,
    ys: &[i8],
    output: &Path,
    dequantize: bool,
    out: &mut Stdout,
) -> Result<(), CliError> {
    let mut shape = vec![n];
    shape.extend(out_t.dims().iter().map(|&d| d as usize));
    let (scale, zp) = out_t
        .per_tensor()
        .ok_or_else(|| CliError::Invalid("the model output has no per-tensor quantization".into()))?;
    let deq = |q: i8| (q as i32 - zp) as f32 * scale;
    if dequantize {
        let f: Vec<f32> = ys.iter().map(|&q| deq(q)).collect();
        npy::write_f32(output, &shape, &f)?;
    } else {
        npy::write_i8(output, &shape, ys)?;
    }
    let per = out_t.len().max(1);
    for (s, row) in ys.chunks(per).take(8).enumerate() {
        if let Some((c, &q)) = row.iter().enumerate().max_by_key(|&(i, &v)| (v, std::cmp::Reverse(i))) {
            writeln!(out, "sample {s}: class {c} (score {:.4}, int8 {q})", deq(q))?;
        }
    }
    if n > 8 {
        writeln!(out, "... {} more samples in {}", n - 8, output.display())?;
    }
    Ok(())
}

pub fn run(model_path: &Path, input: &Path, output: &Path, dequantize: bool, out: &mut Stdout) -> Result<(), CliError> {
    let raw = std::fs::read(model_path).map_err(|e| CliError::io(model_path, e))?;
    let bytes = AlignedBytes::new(&raw);
    let model = Model::parse(&bytes).map_err(|e| CliError::model(model_path, e))?;
    let x = npy::read(input)?;
    let (n, rows) = input_rows(&model, &x)?;
    // Fallible: the arena size comes from the file.
    let mut arena: Vec<u8> = Vec::new();
    arena
        .try_reserve_exact(model.arena_len() + 16)
        .map_err(|_| CliError::Arena { path: model_path.to_path_buf(), bytes: model.arena_len() })?;
    arena.resize(model.arena_len() + 16, 0);
    let mut it = Interpreter::new(&bytes, &mut arena).map_err(|e| CliError::model(model_path, e))?;
    let out_t = it.output_info(0)?;
    let (per_in, per_out) = (rows.len() / n.max(1), out_t.len());
    let mut ys: Vec<i8> = Vec::with_capacity(n * per_out);
    let t0 = std::time::Instant::now();
    for s in 0..n {
        it.input_i8(0)?.copy_from_slice(&rows[s * per_in..(s + 1) * per_in]);
        it.invoke()?;
        ys.extend_from_slice(it.output_i8(0)?);
    }
    let dt = t0.elapsed();
    write_outputs(&out_t, n, &ys, output, dequantize, out)?;
    note!(
        "ran {n} samples on the host in {:.3} ms ({:.1} us per inference) -> {}",
        dt.as_secs_f64() * 1e3,
        dt.as_secs_f64() * 1e6 / n.max(1) as f64,
        output.display()
    );
    Ok(())
}
