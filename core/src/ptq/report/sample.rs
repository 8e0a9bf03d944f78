//! One evaluation sample through both models ([`measure_sample`]): the float graph's every
//! output and the int8 model's, op by op, measured layer by layer. On the host the samples of
//! a chunk run on threads ([`measure_split`]); their measurements are folded in sample order,
//! so the report is the same bit for bit with any number of threads.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use super::measure::Acc;
use super::{interp_err, read_dequantized, write_quantized};
use crate::float::FloatExecutor;
use crate::graph::{ConvertError, ConvertErrorKind as Kind, Graph, TensorId};
use crate::interp::Interpreter;
#[cfg(feature = "std")]
use crate::ptq::calibrate::Activations;
use crate::ptq::quantize::Quantized;

/// What every sample's measurement reads: the float graph, the quantized graph and which float
/// node each quantized node computes.
#[derive(Clone, Copy)]
pub(super) struct Models<'a> {
    pub(super) float: &'a Graph,
    pub(super) quantized: &'a Quantized,
    /// Quantized node -> the float node it computes (None for int8/int16 conversions).
    pub(super) float_of: &'a [Option<usize>],
}

/// One sample's measurements.
pub(super) struct SampleMeasure {
    /// Per float node: the sums of its output on this sample (`None`: not measured).
    pub(super) layers: Vec<Option<Acc>>,
    /// The first graph output, float and dequantized int8 (the output SQNR and top-1).
    pub(super) first_output: Option<(Vec<f32>, Vec<f32>)>,
}

/// Whether `kept` (a sample's activations from the first calibration pass) is this sample's
/// and holds every activation the measurement reads: the inputs bit for bit the same, every
/// measured node's output and the first graph output present.
fn kept_serves(m: &Models<'_>, kept: &[Option<Vec<f32>>], inputs: &[&[f32]]) -> bool {
    let float = m.float;
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let has = |t: TensorId| kept.get(t.index()).is_some_and(Option::is_some);
    float.inputs.len() == inputs.len()
        && float
            .inputs
            .iter()
            .zip(inputs)
            .all(|(t, x)| kept.get(t.index()).and_then(|v| v.as_deref()).is_some_and(|v| bits(v) == bits(x)))
        && m.float_of.iter().flatten().all(|&i| float.nodes.get(i).and_then(|n| n.output(0)).is_none_or(has))
        && float.outputs.first().is_none_or(|&o| has(o))
}

/// Runs one sample (one slice per graph input, in the graph's layout) through `ex` and through
/// the int8 model of `it` op by op, and measures every layer. `kept`: the sample's float
/// activations from calibration, used instead of running `ex` when they are this sample's
/// ([`kept_serves`]; the same values, so the same measurements).
///
/// # Errors
/// The executor's and interpreter's; `InvalidGraph` for an unquantized input or output.
pub(super) fn measure_sample(
    m: Models<'_>,
    ex: &FloatExecutor<'_>,
    it: &mut Interpreter<'_, '_>,
    inputs: &[&[f32]],
    kept: Option<&[Option<Vec<f32>>]>,
) -> Result<SampleMeasure, ConvertError> {
    let (float, quantized) = (m.float, m.quantized);
    let aq = |t: TensorId| quantized.activations.get(t.index()).copied().flatten();
    let model = *it.model();
    let computed;
    let all: &[Option<Vec<f32>>] = match kept {
        Some(k) if kept_serves(&m, k, inputs) => k,
        _ => {
            computed = ex.run_all(inputs)?;
            &computed
        }
    };
    for (k, (&fid, x)) in float.inputs.iter().zip(inputs).enumerate() {
        let a = aq(fid).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("input {k} is not quantized")))?;
        let buf = it.input_bytes(k).map_err(interp_err)?;
        write_quantized(buf, x, &a);
    }
    let mut layers: Vec<Option<Acc>> = vec![None; float.nodes.len()];
    let mut last_out: Vec<f32> = Vec::new();
    for (j, fi) in m.float_of.iter().enumerate() {
        it.run_op(j).map_err(interp_err)?;
        let Some(i) = *fi else { continue };
        let Some(fy) = float.nodes.get(i).and_then(|n| n.output(0)) else { continue };
        let a =
            aq(fy).ok_or_else(|| ConvertError::new(Kind::InvalidGraph, format!("node {i} output is not quantized")))?;
        let t = model.op(j as u32).and_then(|op| op.output(0)).map_err(interp_err)?;
        let raw = it.tensor_bytes(t).map_err(interp_err)?;
        let deq = read_dequantized(raw, &a);
        let f = all.get(fy.index()).and_then(|v| v.as_deref()).unwrap_or(&[]);
        let mut acc = Acc::default();
        acc.add(f, &deq);
        if let Some(slot) = layers.get_mut(i) {
            *slot = Some(acc);
        }
        if float.outputs.first() == Some(&fy) {
            last_out = deq;
        }
    }
    // First graph output: the output SQNR and top-1 per row of its last axis.
    let first_output = float.outputs.first().map(|&o| {
        let f = all.get(o.index()).and_then(|v| v.as_deref()).unwrap_or(&[]);
        if last_out.len() != f.len() {
            // The output is a graph input (no node writes it): dequantize the input.
            last_out = f.to_vec();
        }
        (f.to_vec(), last_out)
    });
    Ok(SampleMeasure { layers, first_output })
}

/// One part of a chunk split over threads: its executor, its arena, its samples.
#[cfg(feature = "std")]
pub(super) struct Part<'p, 'g, S> {
    pub(super) ex: &'p mut FloatExecutor<'g>,
    pub(super) arena: &'p mut [u8],
    pub(super) samples: &'p [S],
    /// The samples' float activations from calibration, one per sample, when kept.
    pub(super) kept: Option<&'p [Activations]>,
}

/// [`measure_sample`] on every sample of every part, each part on a thread of its own (a fresh
/// interpreter per part, each sample from the initial state: for graphs without carried
/// state); the measurements in sample order.
///
/// # Errors
/// The first part's error in sample order.
#[cfg(feature = "std")]
pub(super) fn measure_split<S, V>(
    m: Models<'_>,
    model: &[u8],
    parts: Vec<Part<'_, '_, S>>,
) -> Result<Vec<SampleMeasure>, ConvertError>
where
    S: AsRef<[V]> + Sync,
    V: AsRef<[f32]>,
{
    let threads = parts.len();
    let measured = crate::parallel::map_split(parts, threads, |part| -> Result<Vec<SampleMeasure>, ConvertError> {
        let mut it = Interpreter::new(model, part.arena).map_err(interp_err)?;
        part.samples
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let inputs: Vec<&[f32]> = s.as_ref().iter().map(AsRef::as_ref).collect();
                it.reset_state().map_err(interp_err)?;
                let kept = part.kept.and_then(|a| a.get(k)).map(Vec::as_slice);
                measure_sample(m, &*part.ex, &mut it, &inputs, kept)
            })
            .collect()
    });
    let mut out = Vec::new();
    for part in measured {
        out.extend(part?);
    }
    Ok(out)
}
