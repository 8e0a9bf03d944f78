//! `microquant run`: a `.mq` model over a batch of inputs, on the host.

use std::path::{Path, PathBuf};

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

/// Which file is which model input (or output): `files` is either one plain path (a model with
/// one such tensor) or `NAME=PATH` per tensor, every name once (`what`: "input" / "output").
/// Returns the paths in the model's order.
pub fn named_files(files: &[String], names: &[&str], what: &str) -> Result<Vec<PathBuf>, CliError> {
    let listed = names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ");
    fn split<'f>(f: &'f str, names: &[&str]) -> Option<(String, &'f str)> {
        f.split_once('=').filter(|(n, _)| names.contains(n)).map(|(n, p)| (n.to_string(), p))
    }
    if let ([only], 1) = (files, names.len()) {
        let path = split(only, names).map_or(only.as_str(), |(_, p)| p);
        return Ok(vec![PathBuf::from(path)]);
    }
    let mut paths: Vec<Option<PathBuf>> = vec![None; names.len()];
    for f in files {
        let Some((name, path)) = split(f, names) else {
            return Err(CliError::Invalid(format!(
                "{what} {f:?}: the model has {} {what}s ({listed}): give each as NAME=FILE.npy",
                names.len()
            )));
        };
        let k = names.iter().position(|n| *n == name).unwrap_or(0);
        if paths[k].replace(PathBuf::from(path)).is_some() {
            return Err(CliError::Invalid(format!("{what} {name:?} is given twice")));
        }
    }
    if let (true, Some(k)) = (what == "input", paths.iter().position(Option::is_none)) {
        return Err(CliError::Invalid(format!(
            "no file for the model {what} {:?} (the model's {what}s: {listed}; give each as NAME=FILE.npy)",
            names[k]
        )));
    }
    Ok(paths.into_iter().map(Option::unwrap_or_default).collect())
}

/// The model's input `index` samples as int8 rows (quantizing float input with the model's input
/// qparams), in the `.mq`'s layout. Samples first; each sample has the `.mq` input's shape, or the
/// source model's (e.g. NCHW for a PyTorch export: transposed), or is a flat row.
pub fn input_rows(model: &Model, index: usize, x: &npy::Array) -> Result<(usize, Vec<i8>), CliError> {
    let t = model.tensor(model.input_index(index)?)?;
    if t.dtype != ElementType::I8 {
        return Err(CliError::Invalid(format!("the model's input {:?} is not int8", t.name())));
    }
    let per = t.len();
    let n: usize = x.shape.first().copied().unwrap_or(1);
    let sample: &[usize] = x.shape.get(1..).unwrap_or(&[]);
    let dims: Vec<usize> = t.dims().iter().map(|&d| d as usize).collect();
    let source = source_layout(model, "input", index);
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
            "input {:?}: shape {:?} does not match the model: expected {expected}, or [N, {per}] (samples first; the .mq input is {:?})",
            t.name(),
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

/// The source model's layout of output `index`, when the `.mq` stores it in another.
pub fn output_layout(model: &Model, index: usize) -> Option<IoInfo> {
    source_layout(model, "output", index)
}

/// The names of the model's inputs (`kind` "input") or outputs: `t<index>` for a tensor
/// without one (a stripped model, `microquant strip`).
pub fn io_names(model: &Model, kind: &str) -> Result<Vec<String>, CliError> {
    let n = if kind == "input" { model.num_inputs() } else { model.num_outputs() };
    (0..n)
        .map(|k| {
            let i = if kind == "input" { model.input_index(k)? } else { model.output_index(k)? };
            let name = model.tensor(i)?.name();
            Ok(if name.is_empty() { format!("t{i}") } else { name.to_string() })
        })
        .collect()
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

/// Runs the model over the samples of `inputs` (one file per model input, see [`named_files`]),
/// in order as one sequence (or each from the zero state with `reset_state`), and writes its
/// outputs (`outputs`: one path per output written, in the model's order or as
/// `NAME=PATH`; outputs not named are not written).
pub fn run(
    model_path: &Path,
    inputs: &[String],
    outputs: &[String],
    dequantize: bool,
    reset_state: bool,
    out: &mut Stdout,
) -> Result<(), CliError> {
    let raw = std::fs::read(model_path).map_err(|e| CliError::io(model_path, e))?;
    let bytes = AlignedBytes::new(&raw);
    let model = Model::parse(&bytes).map_err(|e| CliError::model(model_path, e))?;
    let in_names = io_names(&model, "input")?;
    let in_paths = named_files(inputs, &in_names.iter().map(String::as_str).collect::<Vec<_>>(), "input")?;
    let out_names = io_names(&model, "output")?;
    let out_names: Vec<&str> = out_names.iter().map(String::as_str).collect();
    let out_paths: Vec<PathBuf> = if outputs.iter().all(|o| !o.contains('=')) && outputs.len() <= out_names.len() {
        outputs.iter().map(PathBuf::from).collect()
    } else {
        named_files(outputs, &out_names, "output")?
    };
    let mut batches = Vec::with_capacity(in_paths.len());
    for (k, p) in in_paths.iter().enumerate() {
        let x = npy::read(p)?;
        batches.push(input_rows(&model, k, &x)?);
    }
    let n = batches.first().map_or(0, |b| b.0);
    if let Some((k, b)) = batches.iter().enumerate().find(|(_, b)| b.0 != n) {
        return Err(CliError::Invalid(format!(
            "{}: {} samples, {} has {n}: every input needs the same number",
            in_paths[k].display(),
            b.0,
            in_paths[0].display()
        )));
    }
    // Fallible: the arena size comes from the file.
    let mut arena: Vec<u8> = Vec::new();
    arena
        .try_reserve_exact(model.arena_len() + 16)
        .map_err(|_| CliError::Arena { path: model_path.to_path_buf(), bytes: model.arena_len() })?;
    arena.resize(model.arena_len() + 16, 0);
    let mut it = Interpreter::new(&bytes, &mut arena).map_err(|e| CliError::model(model_path, e))?;
    let written = out_paths.iter().filter(|p| !p.as_os_str().is_empty()).count();
    let mut ys: Vec<Vec<i8>> = vec![Vec::new(); out_paths.len()];
    let t0 = std::time::Instant::now();
    for s in 0..n {
        if reset_state {
            it.reset_state()?;
        }
        for (k, (_, rows)) in batches.iter().enumerate() {
            let per = rows.len() / n.max(1);
            it.input_i8(k)?.copy_from_slice(&rows[s * per..(s + 1) * per]);
        }
        it.invoke()?;
        for (k, y) in ys.iter_mut().enumerate() {
            y.extend_from_slice(it.output_i8(k)?);
        }
    }
    let dt = t0.elapsed();
    for (k, (y, path)) in ys.iter().zip(&out_paths).enumerate() {
        if path.as_os_str().is_empty() {
            continue;
        }
        if written > 1 {
            writeln!(out, "output {:?} -> {}", out_names[k], path.display())?;
        }
        write_outputs(&it.output_info(k)?, n, y, path, dequantize, output_layout(&model, k).as_ref(), out)?;
    }
    if out_names.len() > written {
        note!(
            "{} of the model's {} outputs written ({}): give one -o per output, or -o NAME=FILE.npy",
            written,
            out_names.len(),
            out_names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
        );
    }
    note!(
        "ran {n} samples on the host in {:.3} ms ({:.1} us per inference)",
        dt.as_secs_f64() * 1e3,
        dt.as_secs_f64() * 1e6 / n.max(1) as f64,
    );
    Ok(())
}
