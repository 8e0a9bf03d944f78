//! `microquant run`: a `.mq` model over a batch of inputs, on the host.

use std::path::Path;

use microquant::interp::Interpreter;
use microquant::model::{AlignedBytes, ElementType, Model, TensorInfo};
use microquant::onnx::IoInfo;

use crate::CliError;
use crate::npy::{self, Batch};
use crate::output::{Stdout, note};

/// The layout the source model gave input or output `index` (`kind` "input" / "output"), when
/// the `.mq` stores it in another (an NCHW ONNX tensor kept NHWC): from the metadata the
/// converter writes ([`IoInfo::layout_metadata`]).
fn source_layout(model: &Model, kind: &str, index: usize) -> Option<IoInfo> {
    IoInfo::from_metadata(kind, index, |k| model.meta_value(k))
}

/// The model's input samples as int8 rows (quantizing float input with the model's input qparams),
/// in the `.mq`'s layout. Samples first; each sample has the `.mq` input's shape, or the source
/// model's (e.g. NCHW for a PyTorch export: transposed), or is a flat row.
pub fn input_rows(model: &Model, x: &npy::Array) -> Result<(usize, Vec<i8>), CliError> {
    let t = model.tensor(model.input_index(0)?)?;
    if t.dtype != ElementType::I8 {
        return Err(CliError::Invalid("the model's input is not int8".into()));
    }
    let per = t.len();
    let n: usize = x.shape.first().copied().unwrap_or(1);
    let sample: &[usize] = x.shape.get(1..).unwrap_or(&[]);
    let dims: Vec<usize> = t.dims().iter().map(|&d| d as usize).collect();
    let source = source_layout(model, "input", 0);
    let batchless = |s: &[usize]| -> Vec<usize> { if s.len() > 1 && s[0] == 1 { s[1..].to_vec() } else { s.to_vec() } };
    let as_mq = sample == dims.as_slice() || sample == batchless(&dims).as_slice() || sample == [per];
    let as_source = source
        .as_ref()
        .filter(|s| !as_mq && (sample == s.model_shape.as_slice() || sample == batchless(&s.model_shape).as_slice()));
    if x.shape.is_empty() || (!as_mq && as_source.is_none()) {
        let mut expected = format!("[N, {}]", shape_text(&batchless(&dims)));
        if let Some(s) = &source {
            expected = format!(
                "[N, {}] (the source model's layout) or {expected} (the .mq's)",
                shape_text(&batchless(&s.model_shape))
            );
        }
        return Err(CliError::Invalid(format!(
            "input shape {:?} does not match the model: expected {expected}, or [N, {per}] (samples first; the .mq input is {:?})",
            x.shape,
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
    let Some(layout) = as_source else { return Ok((n, rows)) };
    let mut graph = Vec::with_capacity(rows.len());
    for row in rows.chunks(per) {
        graph.extend(layout.to_graph_layout(row).map_err(|e| CliError::Invalid(format!("input: {e}")))?);
    }
    note!(
        "input samples in the source model's layout {}, transposed to the .mq's {}",
        shape_text(&layout.model_shape),
        shape_text(&dims)
    );
    Ok((n, graph))
}

/// The source model's layout of output 0, when the `.mq` stores it in another.
pub fn output_layout(model: &Model) -> Option<IoInfo> {
    source_layout(model, "output", 0)
}

fn shape_text(s: &[usize]) -> String {
    s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x")
}

/// Writes the stacked outputs (`n` samples) as `.npy` (int8, or float32 with `dequantize`) and
/// prints each sample's top class and its dequantized score (the first 8 samples).
pub fn write_outputs(
    out_t: &TensorInfo,
    n: usize,
    ys: &[i8],
    output: &Path,
    dequantize: bool,
    source: Option<&IoInfo>,
    out: &mut Stdout,
) -> Result<(), CliError> {
    let mut shape = vec![n];
    let per = out_t.len().max(1);
    let reordered: Vec<i8>;
    let ys = match source {
        // The output in the source model's layout (e.g. NCHW for a PyTorch export).
        Some(layout) => {
            shape.extend(&layout.model_shape);
            let mut v = Vec::with_capacity(ys.len());
            for row in ys.chunks(per) {
                v.extend(layout.to_model_layout(row).map_err(|e| CliError::Invalid(format!("output: {e}")))?);
            }
            reordered = v;
            note!("outputs written in the source model's layout {}", shape_text(&layout.model_shape));
            &reordered
        }
        None => {
            shape.extend(out_t.dims().iter().map(|&d| d as usize));
            ys
        }
    };
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
    write_outputs(&out_t, n, &ys, output, dequantize, output_layout(&model).as_ref(), out)?;
    note!(
        "ran {n} samples on the host in {:.3} ms ({:.1} us per inference) -> {}",
        dt.as_secs_f64() * 1e3,
        dt.as_secs_f64() * 1e6 / n.max(1) as f64,
        output.display()
    );
    Ok(())
}
